-- cute.kernel: argument kinds, specialisation, compile without a GPU, options.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("cute.kernel", function()
  it("specialises on compile-time values", function()
    local k = cute.kernel("scale", function(a, s) a[0] = a[0] * s end)
    local a = H.f32()
    local h2 = k:compile(a, cute.constexpr(2))
    local h3 = k:compile(a, cute.constexpr(3))
    assert.matches("const 2.0 : f32", h2:ir())
    assert.matches("const 3.0 : f32", h3:ir())
    assert.equal(2, k.nspecs)
    k:compile(a, cute.constexpr(2))
    assert.equal(2, k.nspecs)
  end)

  it("traces with the JIT off and turns it back on, also after an error in the body", function()
    local during
    local k = cute.kernel("jit_probe", function(a)
      during = jit.status()
      a[0] = 1
    end)
    assert.is_true(jit.status())
    k:compile(H.f32())
    assert.equal(os.getenv("CUTELUA_TRACE_JIT") == "1", during) -- CUTELUA_TRACE_JIT=1 keeps it on
    assert.is_true(jit.status())
    local bad = cute.kernel("jit_probe_bad", function(a) a[0] = a.no_such_field.x end)
    assert.is_truthy(H.error_of(function() bad:compile(H.f32()) end))
    assert.is_true(jit.status())
  end)

  it("passes compile-time false and nil as themselves", function()
    local seen = {}
    local k = cute.kernel("flags", function(a, f, g)
      seen[#seen + 1] = { f, g }
      a[0] = 1
    end)
    k:compile(H.f32(), cute.constexpr(false), cute.constexpr(nil))
    k:compile(H.f32(), cute.constexpr(true), cute.constexpr(0))
    assert.equal(false, seen[1][1])
    assert.is_nil(seen[1][2])
    assert.equal(true, seen[2][1])
    assert.equal(0, seen[2][2])
  end)

  it("asks how to take a plain Lua number", function()
    local k = cute.kernel(function(a, n) a[0] = n end)
    local msg = H.error_of(function() k:compile(H.f32(), 5) end)
    assert.matches("argument 'n' %(#2%) is a Lua number", msg)
    assert.matches("cute.i32%(5%)", msg)
  end)

  it("takes parameter annotations by name", function()
    local k = cute.kernel(function(a, n, m) a[0] = (n + m):to(cute.f32) end,
      { params = { n = cute.i32, m = cute.constexpr } })
    assert.matches("const 7 : i32", k:compile(H.f32(), 3, 7):ir())
    assert.has_error(function() cute.kernel(function() end, { params = { nope = cute.i32 } }) end)
  end)

  it("makes strides 1 and 0 compile-time and others run-time", function()
    local k = cute.kernel(function(a) a[{ 1, 1 }] = 0 end)
    local row = k:compile(H.f32({ 16, 32 }, "row")) -- stride (32, 1): one run-time stride
    local col = k:compile(H.f32({ 16, 32 })) -- stride (1, 16)
    assert.matches("kernel @.*%(%%1: ptr<f32, global, 16>, %%2: i32, %%3: i32, %%4: i32%)", row:ir())
    assert.matches("kernel @.*%(%%1: ptr<f32, global, 16>, %%2: i32, %%3: i32, %%4: i32%)", col:ir())
  end)

  it("compiles for another arch without a GPU", function()
    local k = cute.kernel("arch_probe", function(a) a[0] = 1 end, { arch = "sm_80" })
    local h = k:compile(H.f32())
    assert.matches("%.target sm_80", h:ptx())
    assert.is_true(#h:cubin() > 1000)
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end)

  it("reports resources", function()
    local h = H.compile(function(a) a[cute.thread_idx().x] = 1 end, { H.f32() })
    local r = h:resources()
    assert(r[1], "no resources for " .. tostring(h) .. "; origin " .. tostring(h.origin) .. "; log:\n" .. h:log()
      .. "\nreport:\n" .. h:report())
    assert.is_true(r[1].registers > 0)
    assert.matches("^k%d+$", r[1].name)
  end)

  it("sets launch bounds from inside the kernel (cute.launch_bounds), after its options", function()
    local k = cute.kernel("bounded", function(a, threads)
      cute.launch_bounds(threads, 2)
      a[cute.thread_idx().x] = 1
    end, { max_threads = 1024 })
    local h = k:compile(H.f32({ 1024 }), cute.constexpr(384))
    assert.matches("maxntid%(384, 1, 1%)", h:ir())
    assert.matches("%.maxntid 384, 1, 1", h:ptx())
    assert.matches("%.minnctapersm 2", h:ptx())
    assert.matches("maxntid%(1024, 1, 1%)", cute.kernel("opt", function(a) a[0] = 1 end, { max_threads = 1024 })
      :compile(H.f32()):ir())
    assert.matches("only inside a kernel", H.error_of(function() cute.launch_bounds(128) end))
    local bad = cute.kernel("bad_bounds", function(a) cute.launch_bounds(2048); a[0] = 1 end)
    assert.matches("kernel_spec%.lua:%d+: cute.launch_bounds: max_threads must be .* 1..1024, got 2048",
      H.error_of(function() bad:compile(H.f32()) end))
  end)

  it("refuses arguments it cannot take", function()
    local k = cute.kernel(function(_) end)
    assert.matches("cannot take a function", H.error_of(function() k:compile(print) end))
    assert.matches("not a valid kernel name", H.error_of(function() cute.kernel("9x", function() end) end))
  end)

  it("launches as k{grid = ..., block = ...}(args) or k:launch(cfg, args)", function()
    local k = cute.kernel(function() end)
    assert.matches("call a kernel as k", H.error_of(function() k(1) end))
    assert.is_function(k { grid = 1, block = 32 })
  end)
end)
