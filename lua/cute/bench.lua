--- cute.bench: timing GPU work with CUDA events.
--
--   local r = cute.bench(function(i) kernel(grid, block)(a, b, c) end,
--                        { bytes = 3 * n * 4, flush_l2 = true })
--   print(r)               -- 0.214 ms (p10 0.212, p90 0.219, 1402 reps) 4.51 TB/s
--   r.median_ms, r.gbps, r.tflops
--
-- The function is called once per repetition with the repetition number
-- (1, 2, ...), so it can rotate among several input sets. Each repetition is
-- bracketed by a pair of events on the stream, so host work between
-- repetitions (and the optional L2 flush) is not timed. Warm-up first (a first
-- call untimed, as it may compile or plan; then warmup_ms of calls), then repetitions until `min_time_ms` of
-- GPU time, at least `min_reps`. Figures: median and spread (p10, p90, min,
-- max) of the per-repetition times.
--
-- Options: keep_times (the result's `times` lists every repetition's ms),
-- warmup_ms (25; GPU time, the GPU kept busy), min_time_ms (300; 20 when
-- CUTELUA_BENCH_QUICK=1), min_reps (10), max_reps (100000), flush_l2 (false:
-- when true, a buffer twice the L2 size is read before every repetition: the
-- L2 then holds none of the work's data and no dirty lines), stream (default
-- stream), bytes (bytes moved per repetition, for GB/s), flops (per
-- repetition, for TFLOP/s).
local ffi = require "ffi"
local runtime = require "cute.runtime"
local err = require "cute._err"

local M = {}

local Result = {}
Result.__index = Result

function Result:__tostring()
  local s = string.format("%.4g ms (p10 %.4g, p90 %.4g, %d reps)", self.median_ms, self.p10_ms, self.p90_ms, self.reps)
  if self.gbps then
    s = s .. (self.gbps >= 1000 and string.format(" %.3g TB/s", self.gbps / 1000)
      or string.format(" %.4g GB/s", self.gbps))
  end
  if self.tflops then s = s .. string.format(" %.4g TFLOP/s", self.tflops) end
  return s
end

local function quantile(sorted, q)
  local pos = 1 + (#sorted - 1) * q
  local lo = math.floor(pos)
  local hi = math.min(lo + 1, #sorted)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
end

--- Summarises a list of per-repetition milliseconds (also used by the benchmark harness).
-- @param times a list of milliseconds, one per repetition
-- @param opts optional: the options (bytes, flops, keep_times)
-- @return the result table (median_ms, p10_ms, p90_ms, gbps, tflops, ...)
-- @usage local r = cute.bench.summarise({0.21, 0.22, 0.2})
function M.summarise(times, opts)
  opts = opts or {}
  local sorted = {}
  local sum = 0
  for i, t in ipairs(times) do
    sorted[i] = t
    sum = sum + t
  end
  table.sort(sorted)
  local med = quantile(sorted, 0.5)
  local r = setmetatable({
    median_ms = med,
    mean_ms = sum / #sorted,
    min_ms = sorted[1],
    max_ms = sorted[#sorted],
    p10_ms = quantile(sorted, 0.1),
    p90_ms = quantile(sorted, 0.9),
    reps = #sorted,
  }, Result)
  r.spread = (r.p90_ms - r.p10_ms) / med
  if opts.bytes then r.gbps = opts.bytes / (med * 1e-3) / 1e9 end
  if opts.flops then r.tflops = opts.flops / (med * 1e-3) / 1e12 end
  return r
end

-- The L2 flush: a read of a buffer twice the L2's size (written once, at its
-- allocation), so that the L2 holds none of the timed work's data and no
-- dirty lines. Overwriting the buffer instead (as until 2026-11) leaves the
-- L2 full of dirty lines, whose write-back the next timed call pays for: at
-- the H200's 50 MB, a 134 MB read measured 0.70 of the copy bandwidth that
-- way (134 / (134 + 50) = 0.73). The reading kernel is PTX (JIT-compiled by
-- the driver once; this module sits below the tracer): each thread adds the
-- words of a grid-stride loop and stores the sum only if it is odd, which a
-- sum of these even words never is, so that the loads stay.
local FLUSH_PTX = [[
.version 7.0
.target sm_80
.address_size 64
.visible .entry cute_bench_flush_l2(.param .u64 buf, .param .u64 words)
{
  .reg .pred %p<3>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [buf];
  ld.param.u64 %rd2, [words];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.wide.u32 %rd3, %r1, %r2, 0;
  cvt.u64.u32 %rd4, %r3;
  add.s64 %rd3, %rd3, %rd4;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd5, %r4, %r2;
  mov.u32 %r5, 0;
LOOP:
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd6, %rd3, 2;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r1, [%rd7];
  add.u32 %r5, %r5, %r1;
  add.s64 %rd3, %rd3, %rd5;
  bra LOOP;
DONE:
  and.b32 %r2, %r5, 1;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra END;
  st.global.u32 [%rd1], %r5;
END:
  ret;
}
]]
-- what the specs read: the flush kernel's PTX
M.internal = { flush_ptx = FLUSH_PTX }
-- the buffer and the kernel a device, remade after a reset of its context
local flushers = {}

local function flush_l2(stream)
  if runtime.is_sim() then return end -- (the simulator has no L2)
  local dev = runtime.current_device()
  local gen = runtime.generation(dev)
  local f = flushers[dev]
  if not f or f.gen ~= gen then
    local info = runtime.device_info()
    local words = math.max(1024, math.floor(2 * info.l2_bytes / 4))
    f = { gen = gen, words = ffi.new("uint64_t", words), grid = info.sm_count * 8, buf = runtime.alloc(words * 4) }
    f.buf:memset(0x5a5a5a5a, 4, words, 0, stream)
    f.fn = runtime.load_module(FLUSH_PTX, "cute.bench's L2 flush"):kernel("cute_bench_flush_l2")
    flushers[dev] = f
  end
  f.fn:launch({ grid = f.grid, block = 256, stream = stream }, f.buf, f.words)
end

--- True when benchmarks should run in quick mode (CUTELUA_BENCH_QUICK=1): short
-- runs that prove the harness works, not figures to quote.
-- @return a boolean
-- @usage local reps = cute.bench.quick() and 3 or 100
function M.quick() return os.getenv("CUTELUA_BENCH_QUICK") == "1" end

-- cute.bench's options, and the least value of the numeric ones
local BENCH_OPTIONS = { keep_times = "boolean", warmup_ms = 0, min_time_ms = 0, min_reps = 1, max_reps = 1,
  flush_l2 = "boolean", stream = "stream", bytes = 0, flops = 0 }
local BENCH_OPTION_NAMES = {} -- (sorted, for messages)
for k in pairs(BENCH_OPTIONS) do BENCH_OPTION_NAMES[#BENCH_OPTION_NAMES + 1] = k end
table.sort(BENCH_OPTION_NAMES)

local function check_bench_opts(opts)
  if type(opts) ~= "table" then err.raise("bench: opts must be a table, got %s", type(opts)) end
  local names = BENCH_OPTION_NAMES
  for k, v in pairs(opts) do
    local want = BENCH_OPTIONS[k]
    if want == nil then
      err.raise("bench: unknown option '%s'%s (the options are: %s)", tostring(k),
        err.did_you_mean(tostring(k), names), table.concat(names, ", "))
    end
    if want == "stream" then
      if not (type(v) == "table" and v.sim) then runtime.internal.stream_handle(v, "bench") end -- (raises)
    elseif want == "boolean" and type(v) ~= "boolean" then
      err.raise("bench: opts.%s must be a boolean, got %s", k, type(v))
    elseif type(want) == "number" and (type(v) ~= "number" or v ~= v or v < want or v == math.huge) then
      err.raise("bench: opts.%s must be a number from %s, got %s", k, tostring(want), tostring(v))
    end
  end
  if opts.min_reps and opts.max_reps and opts.min_reps > opts.max_reps then
    err.raise("bench: opts.min_reps (%s) is above opts.max_reps (%s)", tostring(opts.min_reps), tostring(opts.max_reps))
  end
end

--- Times fn on the GPU; see the module comment for the options.
-- @param fn the work to time: function(repetition)
-- @param opts optional: the options (module comment)
-- @return the result table (median_ms, gbps, tflops, ...; prints as a line)
-- @usage print(cute.bench(function() k(cfg)(a, b) end, {bytes = 2 * n * 4}))
function M.bench(fn, opts)
  if type(fn) ~= "function" then err.raise("bench: expected a function, got %s", type(fn)) end
  opts = opts or {}
  check_bench_opts(opts)
  local stream = opts.stream
  local warmup_ms = opts.warmup_ms or 25
  local min_time = opts.min_time_ms or (M.quick() and 20 or 300)
  local min_reps = opts.min_reps or 10
  local max_reps = opts.max_reps or 100000

  -- warm-up: one call untimed (it may compile or plan: host time the events
  -- would span), then until warmup_ms of GPU time, in batches of about a
  -- tenth of it (at least 2 ms), so that the GPU stays busy: a long warm-up
  -- lets the board's clock settle where this work puts it
  local start, stop = runtime.event(), runtime.event()
  fn(1)
  stop:record(stream)
  stop:synchronize()
  start:record(stream)
  fn(2)
  stop:record(stream)
  stop:synchronize()
  local rep, warm = 2, 1 -- (calls made; calls in the measured warm-up)
  local elapsed = start:elapsed_ms(stop)
  while elapsed < warmup_ms and warm < 100000 do
    local per = math.max(elapsed / warm, 1e-4)
    local n = math.max(1, math.min(math.ceil(math.max(warmup_ms / 10, 2) / per),
      math.ceil((warmup_ms - elapsed) / per), 100000 - warm))
    for _ = 1, n do
      rep, warm = rep + 1, warm + 1
      fn(rep)
    end
    stop:record(stream)
    stop:synchronize()
    elapsed = start:elapsed_ms(stop)
  end
  local per_rep = math.max(elapsed / warm, 1e-4)
  local reps = math.max(min_reps, math.min(max_reps, math.ceil(min_time / per_rep)))

  -- timed repetitions, each between its own pair of events; events are
  -- recycled in batches so that very short kernels do not need thousands
  local batch = math.min(reps, 512)
  local evs = {}
  for i = 1, 2 * batch do evs[i] = runtime.event() end
  local times = {}
  local done = 0
  while done < reps do
    local n = math.min(batch, reps - done)
    for i = 1, n do
      if opts.flush_l2 then flush_l2(stream) end
      evs[2 * i - 1]:record(stream)
      fn(rep + done + i)
      evs[2 * i]:record(stream)
    end
    evs[2 * n]:synchronize()
    for i = 1, n do times[#times + 1] = evs[2 * i - 1]:elapsed_ms(evs[2 * i]) end
    done = done + n
  end
  for _, e in ipairs(evs) do e:free() end
  start:free()
  stop:free()
  local r = M.summarise(times, opts)
  if opts.keep_times then r.times = times end
  return r
end

-- cute.bench(fn, opts) is M.bench; cute.bench.summarise, cute.bench.quick stay reachable.
return setmetatable(M, { __call = function(_, fn, opts) return M.bench(fn, opts) end })
