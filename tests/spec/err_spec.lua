-- cute._err: errors raised inside cutelua name the user's line.
local err = require "cute._err"

describe("cute._err", function()
  it("classifies cutelua's own chunks as internal", function()
    assert.is_true(err.is_internal("@lua/cute/layout.lua"))
    assert.is_true(err.is_internal("@/home/me/cutelua/lua/cute/layout.lua"))
    assert.is_true(err.is_internal("=[C]"))
    assert.is_false(err.is_internal("@tests/spec/err_spec.lua"))
    assert.is_false(err.is_internal("@gemm.lua"))
  end)

  it("reports the caller's line when raised from user code", function()
    local ok, msg = pcall(function()
      err.raise("bad %s #%d", "thing", 2) -- this line
    end)
    assert.is_false(ok)
    assert.matches("err_spec%.lua:%d+: bad thing #2", msg)
  end)

  it("formats non-string arguments with tostring", function()
    local obj = setmetatable({}, { __tostring = function() return "(4,8):(1,4)" end })
    local ok, msg = pcall(err.raise, "layout %s", obj)
    assert.is_false(ok)
    assert.matches("layout %(4,8%):%(1,4%)", msg)
  end)

  it("skips frames of bundled modules", function()
    -- a chunk named like a bundled module calls raise; the error names this file
    local internal = loadstring("local err = ... ; return function() err.raise('deep') end", "@lua/cute/fake.lua")(err)
    local ok, msg = pcall(function()
      internal() -- expected line
    end)
    assert.is_false(ok)
    local line = debug.getinfo(1, "l").currentline - 3
    assert.equal("tests/spec/err_spec.lua:" .. line .. ": deep", msg)
  end)
end)
