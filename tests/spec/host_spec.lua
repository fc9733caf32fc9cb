-- The host: the cute namespace, the C API bridge, CUDA library discovery.
local cute = require "cute"

describe("cute namespace", function()
  it("reports the host version", function()
    assert.matches("^%d+%.%d+%.%d+$", cute.version())
  end)

  it("loads submodules on first use", function()
    assert.equal(require "cute._c", cute._c)
  end)

  it("returns nil for unknown names", function()
    assert.is_nil(cute.no_such_function_anywhere)
  end)
end)

describe("cute._c", function()
  local c = require "cute._c"

  it("casts the host table", function()
    assert.equal(1, tonumber(c.host.abi))
    assert.is_true(c.has("host"))
    assert.is_false(c.has("nope"))
  end)

  it("names a subsystem that is not built", function()
    local ok, err = pcall(function() return c.nope end)
    assert.is_false(ok)
    assert.matches("C subsystem 'nope' is not part of this build", err)
  end)

  it("has a monotonic clock", function()
    local a = c.host.now_ns()
    local b = c.host.now_ns()
    assert.is_true(b >= a)
  end)
end)

describe("cute.libraries", function()
  it("describes every CUDA library, found or not", function()
    local libs = cute.libraries()
    for _, key in ipairs { "cuda", "nvvm", "nvjitlink", "cublas", "cublaslt" } do
      local l = libs[key]
      assert.is_table(l)
      if l.ok then
        assert.matches("%.so", l.path)
      else
        assert.matches("cannot load", l.error)
        assert.matches("tried:", l.error)
      end
    end
  end)
end)
