-- Kernel options, cute.range's options and a kernel's arguments are checked
-- where they are given: unknown names (with a suggestion), wrong types and
-- values out of range are errors at the user's line, never dropped,
-- truncated or left to an internal error.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local function body(x) x[0] = 1 end

describe("kernel options", function()
  it("refuses bad launch bounds and clusters", function()
    local cases = {
      { { max_threads = 0 }, "option max_threads must be a whole number of threads from 1 to 1024, got 0" },
      { { max_threads = -5 }, "option max_threads must be .*, got %-5" },
      { { max_threads = 1.5 }, "option max_threads must be .*, got 1%.5" },
      { { max_threads = 5000 }, "option max_threads must be .*, got 5000" },
      { { max_threads = "256" }, "option max_threads must be .*, got 256" },
      { { min_blocks = -1 }, "option min_blocks must be a whole number of blocks an SM from 1 to 32, got %-1" },
      { { min_blocks = 2 ^ 40 }, "option min_blocks must be .*, got 1099511627776" },
      { { cluster = { 0, 1, 1 } }, "option cluster must be a number or {x%[, y%[, z%]%]} of whole numbers from 1 to "
        .. "16, got {0, 1, 1}" },
      { { cluster = { 65536, 65536, 1 } }, "option cluster must be .*, got {65536, 65536, 1}" },
      { { cluster = { 2, 2, 2, 2 } }, "option cluster must be" },
      { { cluster = { 4, 4, 2 } }, "option cluster {4, 4, 2} has 32 blocks; a cluster has at most 16 %(8 portable%)" },
      { { cluster = 1.5 }, "option cluster must be" },
      { { assertions = 1 }, "option assertions must be true or false, got 1" },
      { { trace_key = 3 }, "option trace_key must be a string" },
      { { params = 3 }, "option params must be a table" },
      { { max_ir_ops = -1 }, "option max_ir_ops must be a whole number of IR instructions" },
      { { opt = 7 }, "compiler%.options: opt must be 0, 1, 2 or 3, got 7" },
      { { arch = "sm_91" }, "compiler%.options: unknown arch 'sm_91'" },
      { { fast_math = "yes" }, "compiler%.options: fast_math must be a boolean, got yes" },
    }
    for _, c in ipairs(cases) do
      local msg = H.error_at(function() cute.kernel("opts", body, c[1]) end)
      assert.matches(c[2], msg)
    end
  end)

  it("refuses unknown option names with a suggestion, in cute.kernel and k:with", function()
    local msg = H.error_at(function() cute.kernel("opts", body, { max_thread = 128 }) end)
    assert.matches("cute%.kernel opts: unknown option 'max_thread' %(did you mean 'max_threads'%?%) %(known: arch, "
      .. "assertions,", msg)
    msg = H.error_at(function() cute.kernel("opts", body, { archh = "sm_90a" }) end)
    assert.matches("unknown option 'archh' %(did you mean 'arch'%?%)", msg)
    msg = H.error_at(function() cute.kernel("opts", body, { zzzzzz = 1 }) end)
    assert.matches("unknown option 'zzzzzz' %(known:", msg)
    local k = cute.kernel("opts", body)
    msg = H.error_at(function() k:with { min_block = 2 } end)
    assert.matches("unknown option 'min_block' %(did you mean 'min_blocks'%?%)", msg)
    msg = H.error_at(function() k:with { max_threads = 0 } end)
    assert.matches("option max_threads must be", msg)
  end)

  it("says what k:with takes when given compiler flags", function()
    local k = cute.kernel("opts", body)
    local msg = H.error_at(function() k:with("--opt-level=3") end)
    assert.matches("opts:with: expected a table of kernel options, e%.g%. k:with{arch = \"sm_90a\", opt = 2}, got the "
      .. "string \"%-%-opt%-level=3\"; compile flags are options too: opt %(0%-3%), ptxas_options", msg)
    assert.matches("expected a table", H.error_at(function() k:with(nil) end))
    msg = H.error_at(function() cute.kernel("opts", body, "--opt-level=3") end)
    assert.matches("cute%.kernel: the options must be a table", msg)
  end)

  it("applies valid launch bounds and clusters", function()
    local ir = H.ir(body, { H.f32() }, { max_threads = 128, min_blocks = 2, cluster = { 2, 1 }, arch = "sm_90a" })
    assert.matches("maxntid%(128, 1, 1%)", ir)
    assert.matches("minctasm%(2%)", ir)
    assert.matches("cluster%(2, 1, 1%)", ir)
  end)

  it("refuses a cluster on a GPU without clusters at the call that compiles", function()
    local k = cute.kernel("opts", body, { cluster = 2, arch = "sm_80" })
    local msg = H.error_at(function() k:compile(H.f32()) end)
    assert.matches("kernel opts: option cluster {2, 1, 1} needs CLUSTER, which sm_80 lacks %(sm_90, sm_90a, sm_100, "
      .. "sm_100a, sm_103a, sm_120 and sm_120a have it%)", msg)
  end)

  it("refuses more arguments than the kernel has parameters", function()
    local k = cute.kernel("one_param", body)
    local a = H.f32()
    local msg = H.error_at(function() k:compile(a, a, a) end)
    assert.matches("kernel one_param takes 1 argument %(x%), got 3", msg)
    local k2 = cute.kernel("two_params", function(x, y) x[0] = y[0] end)
    assert.matches("takes 2 arguments %(x, y%), got 3", H.error_at(function() k2:compile(a, a, a) end))
    -- a vararg kernel takes what it is given
    local kv = cute.kernel("var_params", function(x, ...) x[0] = select("#", ...) end)
    assert.matches("const 2%.0 : f32", kv:compile(a, a, a):ir())
  end)

  it("checks cute.launch_bounds as the options", function()
    local msg = H.error_at(function() H.ir(function(x) cute.launch_bounds(128, 64); x[0] = 1 end, { H.f32() }) end)
    assert.matches("min_blocks must be a whole number of blocks an SM from 1 to 32, got 64", msg)
  end)
end)

describe("cute.range options", function()
  it("take unroll as a positive whole number or a boolean", function()
    for _, bad in ipairs { 1.5, 0, -2, "4", 2 ^ 40 } do
      local msg = H.error_at(function()
        H.ir(function(x) for i in cute.range(4, { unroll = bad }) do x[i] = 1 end end, { H.f32() })
      end, 1)
      assert.matches("cute%.range: unroll must be a whole number of iterations from 1 %(no unrolling%) to "
        .. "2147483647, true %(unroll fully%) or false %(never%), got ", msg)
    end
    local msg = H.error_at(function()
      H.ir(function(x) for i in cute.range(4, { unrol = 2 }) do x[i] = 1 end end, { H.f32() })
    end, 1)
    assert.matches("cute%.range: unknown option 'unrol' %(did you mean 'unroll'%?%)", msg)
    for _, good in ipairs { { 1, "unroll 1" }, { 4, "unroll 4" }, { true, "unroll %-1" } } do
      local ir = H.ir(function(x, n) for i in cute.range(n, { unroll = good[1] }) do x[i] = 1 end end,
        { H.f32(), cute.i32(8) })
      assert.matches(good[2], ir)
    end
  end)
end)
