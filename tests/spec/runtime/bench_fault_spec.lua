-- A kernel that faults in the middle of cute.bench: the benchmark raises a
-- clean error at the caller's line (no hang, no crash, no figures), the
-- device is then lost for this process and every later call says so at once;
-- and the recovery docs/runtime.md describes, a new process, launches a
-- correct kernel and gets the right answer. (The CUDA driver refuses all
-- work in a process after such a fault; resetting or recreating the context
-- does not bring it back: docs/runtime.md, "Errors and faults".) Its own spec
-- file, so its own process: the other GPU specs keep a working device.
local cute = require "cute"
local ffi = require "ffi"

local PTX = "tests/spec/runtime/kernels.ptx"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

describe("a kernel that faults inside cute.bench", function()
  it("raises a clean error; the device is lost; a new process computes the right answer #gpu", function()
    local m = cute.load_module(read(PTX), "kernels.ptx")
    local add_one, oob_write = m:kernel("add_one"), m:kernel("oob_write")
    local n = 4096
    local buf, victim = cute.alloc(n * 4), cute.alloc(1024)
    assert.is_false(cute.device_lost())
    -- the benchmark times add_one; its 40th call launches the faulting kernel instead
    local calls, t0 = 0, os.time()
    local ok, msg = pcall(cute.bench, function(i)
      calls = calls + 1
      if i == 40 then
        oob_write:launch({ grid = 1, block = 1 }, victim)
      else
        add_one:launch({ grid = n / 256, block = 256 }, buf, cute.u32(n))
      end
    end, { warmup_ms = 5, min_time_ms = 50, min_reps = 100 })
    assert.is_false(ok)
    assert.is_true(calls >= 40, "the faulting repetition ran")
    assert.is_true(os.time() - t0 < 60, "the benchmark stopped promptly")
    assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", msg)
    assert.matches("bench_fault_spec%.lua:%d+:", msg) -- at the caller's line
    assert.is_true(cute.device_lost())
    -- every later call fails at once with the reason, never crashes or hangs
    for _, f in ipairs {
      function() add_one:launch({ grid = 1, block = 32 }, buf, cute.u32(1)) end,
      function() cute.bench(function() add_one:launch({ grid = 1, block = 32 }, buf, cute.u32(1)) end) end,
      function() buf:copy_to_host(ffi.new("float[1]"), 4) end,
      function() cute.synchronize() end,
    } do
      local ok2, msg2 = pcall(f)
      assert.is_false(ok2)
      assert.matches("cannot be used again in this process", msg2)
      assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", msg2)
    end
    buf:free() -- harmless
    victim:free()

    -- the way back: a new process has a working device
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(string.format([[
local cute = require "cute"
local ffi = require "ffi"
local m = cute.load_module(io.open(%q):read("*a"))
local b = cute.alloc(4 * 1000)
local h = ffi.new("float[1000]")
for i = 0, 999 do h[i] = i end
b:copy_from_host(h, 4 * 1000)
local r = cute.bench(function() m:kernel("add_one"):launch({ grid = 4, block = 256 }, b, cute.u32(1000)) end,
  { warmup_ms = 1, min_time_ms = 5, min_reps = 10, max_reps = 10 })
b:copy_to_host(h, 4 * 1000)
-- every element went up by one per call: warm-up and timed calls together
local calls = h[0]
local bad = 0
for i = 0, 999 do if h[i] ~= i + calls then bad = bad + 1 end end
print(string.format("reps %%d calls %%d wrong %%d", r.reps, calls, bad))
]], PTX))
    f:close()
    local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
    local exists = io.open(bin)
    if exists then exists:close() else bin = "cutelua" end -- the GPU bundle puts cutelua on PATH
    local h = io.popen(bin .. " " .. script .. " 2>&1; echo \"rc=$?\"")
    local out = h:read("*a")
    h:close()
    os.remove(script)
    assert.matches("reps 10 calls %d+ wrong 0\nrc=0\n$", out)
    assert.is_true(tonumber(out:match("calls (%d+)")) >= 11, out)
  end)
end)
