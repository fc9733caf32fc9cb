-- The simulator's checks: each fires on a kernel made to break its rule,
-- naming what the issue asks for (the Lua lines, block, thread, address, the
-- tensor), and stays silent on the good kernel beside it.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local SRC = debug.getinfo(1, "S").short_src
local function line() return debug.getinfo(2, "l").currentline end
local function at(l) return (string.gsub(SRC .. ":" .. l, "%p", "%%%0")) end

local function raises(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, "expected the simulator to raise")
  return tostring(e)
end

describe("the simulator's checks", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("out-of-bounds global store: line, block, thread, byte offset and the tensor", function()
    local L
    local k = cute.kernel(function(a, c)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      L = line(); c[i] = a[cute.min(i, cute.size(a) - 1)] * 2 -- no guard: the last block runs past c
    end)
    local a, c = cute.tensor(cute.f32, 100):fill(1), cute.tensor(cute.f32, 100)
    local msg = raises(function() k { grid = 4, block = 32 }(a, c) end)
    assert.matches("out%-of%-bounds store of 4 bytes at " .. at(L), msg)
    assert.matches("block %(3,0,0%) thread %(4,0,0%)", msg)
    assert.matches("byte offset 400 of tensor 'c' %(argument #2%), which has 400 bytes", msg)
    -- guarded: silent, and right
    local ok = cute.kernel(function(a2, c2)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      cute.if_(i:lt(cute.size(c2)), function() c2[i] = a2[i] * 2 end)
    end)
    ok { grid = 4, block = 32 }(a, c)
    assert.equal(2, c:to_host()[99])
  end)

  it("out-of-bounds global load before the tensor", function()
    local L
    local k = cute.kernel(function(a, c)
      local i = cute.thread_idx().x
      L = line(); c[i] = a[i - 1]
    end)
    local a, c = cute.tensor(cute.i32, 32):fill(1), cute.tensor(cute.i32, 32)
    local msg = raises(function() k { grid = 1, block = 32 }(a, c) end)
    assert.matches("out%-of%-bounds load of 4 bytes at " .. at(L), msg)
    assert.matches("thread %(0,0,0%)", msg)
    assert.matches("byte offset %-4 of tensor 'a'", msg)
  end)

  it("out-of-bounds shared-memory access", function()
    local L
    local k = cute.kernel(function(c)
      local s = cute.make_smem_tensor(cute.f32, cute.make_layout(32))
      local i = cute.thread_idx().x
      L = line(); s[i] = 1
      cute.sync_threads()
      c[i] = s[cute.min(i, 31)]
    end)
    local c = cute.tensor(cute.f32, 64)
    local msg = raises(function() k { grid = 1, block = 64 }(c) end)
    assert.matches("out%-of%-bounds shared%-memory store of 4 bytes at " .. at(L), msg)
    assert.matches("thread %(32,0,0%): byte offset 128 of the block's 128 bytes of shared memory", msg)
  end)

  it("a shared-memory race (read after write, no barrier): both lines and both threads", function()
    local W, R
    local function body(sync)
      return function(c)
        local s = cute.make_smem_tensor(cute.i32, cute.make_layout(64))
        local i = cute.thread_idx().x
        W = line(); s[i] = i * 3
        if sync then cute.sync_threads() end
        R = line(); c[i] = s[(i + 1):band(63)]
      end
    end
    local c = cute.tensor(cute.i32, 64)
    local msg = raises(function() cute.kernel(body(false)) { grid = 1, block = 64 }(c) end)
    -- the threads run one after the other: thread 0 reads s[1] before thread 1 writes it
    assert.matches("shared%-memory race %(write after read%)", msg)
    assert.matches(at(W) .. " %(store%)", msg)
    assert.matches(at(R) .. " %(load%)", msg)
    assert.matches("with no barrier between", msg)
    -- with the barrier: silent, and right
    cute.kernel(body(true)) { grid = 1, block = 64 }(c)
    local h = c:to_host()
    for i = 0, 63 do assert.equal(((i + 1) % 64) * 3, h[i]) end
  end)

  it("a write-after-read race", function()
    local k = cute.kernel(function(c)
      local s = cute.make_smem_tensor(cute.i32, cute.make_layout(64))
      local i = cute.thread_idx().x
      s[i] = i
      cute.sync_threads()
      local v = s[(i + 1):band(63)]
      s[i] = v -- thread i - 1 may not have read s[i] yet
      c[i] = v
    end)
    local msg = raises(function() k { grid = 1, block = 64 }(cute.tensor(cute.i32, 64)) end)
    assert.matches("shared%-memory race %(write after read%)", msg)
  end)

  it("syncwarp orders the lanes of a warp; without it a warp's lanes race", function()
    local function body(sync)
      return function(c)
        local s = cute.make_smem_tensor(cute.i32, cute.make_layout(32))
        local i = cute.thread_idx().x
        s[i] = i
        if sync then cute.sync_warp() end
        c[i] = s[i:bxor(1)]
      end
    end
    local c = cute.tensor(cute.i32, 32)
    assert.matches("race", raises(function() cute.kernel(body(false)) { grid = 1, block = 32 }(c) end))
    cute.kernel(body(true)) { grid = 1, block = 32 }(c)
    assert.equal(0, c:to_host()[1])
  end)

  it("a read of uninitialised shared memory", function()
    local L
    local k = cute.kernel(function(c)
      local s = cute.make_smem_tensor(cute.f32, cute.make_layout(64))
      local i = cute.thread_idx().x
      cute.if_(i:lt(32), function() s[i] = 1 end)
      cute.sync_threads()
      L = line(); c[i] = s[i]
    end)
    local msg = raises(function() k { grid = 1, block = 64 }(cute.tensor(cute.f32, 64)) end)
    assert.matches("read of uninitialised shared memory at " .. at(L), msg)
    assert.matches("thread %(32,0,0%): byte offset 128 was never written", msg)
  end)

  it("barrier divergence: threads of a block at different barriers", function()
    local A, B
    local k = cute.kernel(function(c)
      local i = cute.thread_idx().x
      cute.if_(i:lt(16), function()
        A = line(); cute.sync_threads()
      end, function()
        B = line(); cute.sync_threads()
      end)
      c[i] = i
    end)
    local msg = raises(function() k { grid = 1, block = 64 }(cute.tensor(cute.i32, 64)) end)
    assert.matches("barrier divergence", msg)
    assert.matches(at(A), msg)
    assert.matches(at(B), msg)
  end)

  it("a warp-synchronous op some lanes never reach is a named error, not a hang", function()
    local k = cute.kernel(function(c)
      local i = cute.thread_idx().x
      cute.if_(i:lt(16), function() c[i] = cute.shuffle_xor(i, 1) end, function() cute.sync_threads() end)
    end)
    local msg = raises(function() k { grid = 1, block = 32 }(cute.tensor(cute.i32, 32)) end)
    assert.matches("warp divergence in block %(0,0,0%) warp 0: lane 0 waits at .*%(shfl.bfly%) and lane 16 at "
      .. ".*%(barrier%)", msg)
  end)

  it("a failed device assertion (cute.assert_ with assertions on) stops the launch at its line", function()
    local L
    local k = cute.kernel(function(c)
      local i = cute.thread_idx().x
      L = line(); cute.assert_(i:lt(40), "i below 40")
      c[i] = i
    end, { assertions = true })
    local out = {}
    local write = io.write
    io.write = function(s) out[#out + 1] = s end -- luacheck: ignore 122
    local ok, msg = pcall(function() k { grid = 1, block = 64 }(cute.tensor(cute.i32, 64)) end)
    io.write = write -- luacheck: ignore 122
    assert.is_false(ok)
    assert.matches("trap %(an abort or a failed device assertion%) at " .. at(L), msg)
    assert.matches("thread %(40,0,0%)", msg)
    assert.matches("i below 40", table.concat(out))
  end)

  it("checks can be turned off (CUTELUA_SIM_CHECKS=0 at start)", function()
    local exec = require "cute.sim.exec"
    local saved = exec.checks_default
    exec.checks_default = false
    local k = cute.kernel(function(c)
      local s = cute.make_smem_tensor(cute.i32, cute.make_layout(32))
      local i = cute.thread_idx().x
      s[i] = i
      c[i] = s[i:bxor(1)]
    end)
    local ok = pcall(function() k { grid = 1, block = 32 }(cute.tensor(cute.i32, 32)) end)
    exec.checks_default = saved
    assert.is_true(ok)
  end)
end)
