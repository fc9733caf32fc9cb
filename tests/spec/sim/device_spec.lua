-- Choosing the simulator (cute.set_device("sim"), CUTELUA_DEVICE=sim, a
-- kernel's device option) and its tensors: host memory behind the device
-- tensor API, so a script runs unchanged.
local cute = require "cute"

local function vadd()
  return cute.kernel(function(a, b, c)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(cute.size(c)), function() c[i] = a[i] + b[i] end)
  end)
end

describe("the simulator as a device", function()
  local old
  setup(function() old = cute.current_device() end)
  teardown(function() cute.set_device(old) end)

  it("set_device('sim'): tensors, fills, copies, views, synchronize, streams, events, device_info", function()
    cute.set_device("sim")
    assert.equal("sim", cute.current_device())
    local info = cute.device_info()
    assert.is_true(info.simulator)
    assert.equal(32, info.warp_size)
    local a = cute.tensor(cute.f32, 300):iota(1, 2)
    local b = cute.tensor(cute.f32, 300):fill(0.5)
    assert.equal("sim", a.buffer.device)
    local c = cute.empty_like(a)
    local s, e0, e1 = cute.stream(), cute.event(), cute.event()
    e0:record(s)
    vadd() { grid = 2, block = 256, stream = s }(a, b, c)
    e1:record(s)
    s:synchronize()
    cute.synchronize()
    assert.is_true(e0:elapsed_ms(e1) >= 0)
    local h = c:to_host()
    for i = 0, 299 do assert.equal(1 + 2 * i + 0.5, h[i]) end
    -- a device copy, a view, copy_from a table
    local d = cute.tensor(cute.f32, 300)
    d:copy_from(c)
    assert.equal(h[299], d:to_host()[299])
    local v = d:view({ 10, 30 })
    assert.equal(h[10], v:to_host()[{ 0, 1 }])
    d:copy_from((function()
      local t = {}
      for i = 1, 300 do t[i] = -i end
      return t
    end)())
    assert.equal(-300, d:to_host()[299])
    a:free(); b:free(); c:free(); d:free()
    assert.is_false(a:valid())
  end)

  it("refuses a stream that is not one, and launch sizes a GPU would refuse", function()
    cute.set_device("sim")
    local a = cute.tensor(cute.f32, 64):fill(1)
    local k = vadd()
    for _, c in ipairs { { "x", "the string \"x\"" }, { 0, "number" }, { {}, "table" } } do
      local ok, msg = pcall(function() k { grid = 1, block = 64, stream = c[1] }(a, a, a) end)
      assert.is_false(ok)
      assert.matches("on the simulator: stream must be a cute.stream%(%) made on the simulator, got " .. c[2], msg)
      assert.matches("device_spec%.lua:%d+:", msg)
    end
    -- and launch sizes a GPU would refuse (the simulator ran no block, or a fraction)
    for _, c in ipairs { { { grid = 0, block = 64 }, "grid%.x = 0 is outside 1%.%.2147483647" },
      { { grid = 1, block = 0 }, "block%.x = 0 is outside 1%.%.1024" },
      { { grid = 1, block = { 32, 1, 65 } }, "block%.z = 65 is outside 1%.%.64" },
      { { grid = 1.5, block = 64 }, "grid%.x = 1%.5 is outside" } } do
      local ok, msg = pcall(function() k(c[1])(a, a, a) end)
      assert.is_false(ok)
      assert.matches("launch: " .. c[2], msg)
    end
    k { grid = 1, block = 64, stream = cute.stream() }(a, a, a)
    assert.equal(2, a:to_host()[63])
    -- a wrapped address below the first page a process may map (the simulator crashed on it)
    local ok, msg = pcall(function() cute.tensor.from_ptr(5, cute.f32, 4) end)
    assert.is_false(ok)
    assert.matches("wrap: 5 is not a host address", msg)
    local view = cute.tensor.from_ptr(a:data_ptr() + 8, cute.f32, 4)
    assert.equal(2, view:to_host()[0])
    a:free()
  end)

  it("CUTELUA_DEVICE=sim starts a process on the simulator", function()
    local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
    local p = assert(io.popen("CUTELUA_DEVICE=sim " .. bin .. " -e 'local cute = require \"cute\"; "
      .. "print(cute.current_device(), cute.tensor(cute.i32, 4):fill(7):to_host()[3])' 2>&1"))
    local out = p:read("*a")
    p:close()
    assert.equal("sim\t7\n", out)
  end)

  it("a kernel's device option: that kernel on the simulator, and a wrong value refused", function()
    cute.set_device("sim")
    local a = cute.tensor(cute.f32, 64):fill(1)
    local c = cute.tensor(cute.f32, 64)
    cute.set_device(old)
    local k = cute.kernel(function(x, y)
      local i = cute.thread_idx().x
      y[i] = x[i] * 3
    end, { device = "sim" })
    k { grid = 1, block = 64 }(a, c)
    assert.equal(3, c:to_host()[63])
    assert.matches("option device must be \"sim\"", select(2, pcall(cute.kernel, function() end, { device = "cpu" })))
  end)

  it("refuses what it does not simulate, at the kernel's line", function()
    cute.set_device("sim")
    local k = cute.kernel(function(c)
      c[0] = cute.asm("mov.u32 $0, 7;", "=r", {}, { ret = cute.i32 })
    end)
    local ok, e = pcall(function() k { grid = 1, block = 1 }(cute.tensor(cute.i32, 1)) end)
    assert.is_false(ok)
    assert.matches("the simulator does not run inline PTX %('mov%.u32 %$0, 7;'%) yet %(at .*device_spec%.lua:%d+", e)
  end)
end)
