-- cute.bench: statistics (on the CPU) and timing (on the GPU).
local cute = require "cute"

-- A benchmark whose first call spends 200 ms on the host (as a compile does)
-- before a 4 KiB copy: the copy takes microseconds, so 50 ms of them are
-- thousands of repetitions (the first call taken as the time of one would have
-- given the 10 of min_reps, with no warm-up after it).
local function slow_first_call()
  local a, b = cute.alloc(4096), cute.alloc(4096)
  local r = cute.bench(function(i)
    if i == 1 then
      local t = os.clock()
      while os.clock() - t < 0.2 do end
    end
    b:copy_from(a, 4096)
  end, { min_time_ms = 50 })
  assert.is_true(r.reps > 100, tostring(r.reps))
end

describe("cute.bench", function()
  it("summarises repetition times: median, quantiles, throughput", function()
    local r = cute.bench.summarise({ 4, 1, 3, 2, 5 }, { bytes = 2e9, flops = 4e12 })
    assert.equal(3, r.median_ms)
    assert.equal(1, r.min_ms)
    assert.equal(5, r.max_ms)
    assert.near(1.4, r.p10_ms, 1e-12)
    assert.near(4.6, r.p90_ms, 1e-12)
    assert.near(2e9 / 3e-3 / 1e9, r.gbps, 1e-9)
    assert.near(4e12 / 3e-3 / 1e12, r.tflops, 1e-9)
    assert.matches("^3 ms %(p10 1.4, p90 4.6, 5 reps%) 666.7 GB/s 1333 TFLOP/s$", tostring(r))
  end)

  it("rejects what it cannot time, and options it does not take, naming them", function()
    assert.has_error(function() cute.bench(42) end)
    local function nop() end
    for _, c in ipairs {
      { { min_time = 5 }, "bench: unknown option 'min_time' %(the options are: bytes, flops, flush_l2, " },
      { { min_time_ms = -1 }, "bench: opts%.min_time_ms must be a number from 0, got %-1" },
      { { min_reps = 0 }, "bench: opts%.min_reps must be a number from 1, got 0" },
      { { max_reps = 0 / 0 }, "bench: opts%.max_reps must be a number from 1, got nan" },
      { { flush_l2 = 1 }, "bench: opts%.flush_l2 must be a boolean, got number" },
      { { min_reps = 20, max_reps = 10 }, "bench: opts%.min_reps %(20%) is above opts%.max_reps %(10%)" },
      { { stream = "s" }, "stream must be a cute%.stream%(%)" },
    } do
      local ok, msg = pcall(function() cute.bench(nop, c[1]) end)
      assert.is_false(ok)
      assert.matches(c[2], msg)
      assert.matches("bench_spec%.lua:%d+:", msg)
    end
  end)

  it("flushes the L2 with a PTX kernel that only reads (it assembles for sm_80 and sm_90a)", function()
    local ptx = cute.bench.internal.flush_ptx
    assert.matches("ld%.global%.u32", ptx)
    -- its one store is behind a test no sum of the buffer's even words passes
    local _, stores = ptx:gsub("st%.global", "")
    assert.equal(1, stores)
    assert.matches("and%.b32 %%r2, %%r5, 1;%s+setp%.eq%.u32 %%p2, %%r2, 0;%s+@%%p2 bra END;%s+st%.global", ptx)
    for _, arch in ipairs { "sm_80", "sm_90a" } do
      local cubin = cute.compiler.ptx_to_cubin(ptx, { arch = arch })
      assert.is_true(#cubin > 0, arch)
    end
  end)

  it("times device work with events #gpu", function()
    local n = 64 * 1024 * 1024
    local a, b = cute.alloc(n * 4), cute.alloc(n * 4)
    local calls = 0
    local r = cute.bench(function(i)
      calls = calls + 1
      assert.equal(calls, i)
      b:copy_from(a, n * 4)
    end, { bytes = 2 * n * 4, min_time_ms = 50 })
    assert.is_true(r.reps >= 10)
    assert.is_true(r.median_ms > 0 and r.p10_ms <= r.median_ms and r.median_ms <= r.p90_ms)
    -- a copy of 256 MiB each way is far from free: well over 10 microseconds, under a second
    assert.is_true(r.median_ms > 0)
    assert.is_true(r.gbps > 1)
  end)

  it("leaves a slow first call (a compile) out of the estimate of the repetitions #gpu", function()
    slow_first_call()
  end)
end)

describe("cute.bench on the simulator", function()
  local sim = require("tests.spec.trace.helper").simulator()
  setup(sim.enter)
  teardown(sim.leave)
  it("leaves a slow first call (a compile) out of the estimate of the repetitions", function()
    slow_first_call()
  end)
end)
