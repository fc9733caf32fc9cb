-- How the board's clock follows the work: the bf16 GEMM of cute.lib and
-- cuBLAS's in turns, each turn's repetitions timed one by one, printed as
-- the TFLOP/s of ten consecutive windows of the turn. Under sustained
-- tensor-core load the power limit sets the clock, differently for the two,
-- and a turn starts at the clock the other left; how long it takes to move
-- is how long the benchmark harness lets each turn settle before it times
-- it (bench/harness.lua, docs/benchmarks.md).
--   cutelua bench/clock_drift.lua [size (4096)] [turn ms (400)] [turns (3)]
local cute = require "cute"
local G = require "cute.lib.gemm"
local m = tonumber(arg[1]) or 4096
local turn_ms = tonumber(arg[2]) or 400
local turns = tonumber(arg[3]) or 3
local function operands(seed)
  return cute.tensor(cute.bf16, { m, m }, "row"):uniform(-1, 1, seed),
    cute.tensor(cute.bf16, { m, m }, "row"):uniform(-1, 1, seed + 1), cute.tensor(cute.bf16, { m, m }, "row")
end
local A, B, C = operands(1)
local A2, B2, C2 = operands(3)
local flops = 2 * m * m * m
local work = {
  { "cute.gemm", function() G.gemm(A, B, C) end },
  { "cuBLAS", function()
    cute.cublas.gemm_rowmajor { a = A2, b = B2, c = C2, m = m, n = m, k = m, dtype = cute.bf16, c_dtype = cute.bf16 }
  end },
}
for _, w in ipairs(work) do w[2]() end
cute.synchronize()
print(string.format("bf16 %dx%dx%d, turns of %d ms; TFLOP/s of each tenth of a turn, then the turn's median", m, m, m,
  turn_ms))
for _ = 1, turns do
  for _, w in ipairs(work) do
    local r = cute.bench(w[2], { min_time_ms = turn_ms, warmup_ms = 0, min_reps = 10, keep_times = true,
      flops = flops })
    local t, cells = r.times, {}
    local per = math.max(1, math.floor(#t / 10))
    for i = 1, #t - per + 1, per do
      local s = {}
      for j = i, i + per - 1 do s[#s + 1] = t[j] end
      table.sort(s)
      cells[#cells + 1] = string.format("%4.0f", flops / (s[math.ceil(#s / 2)] * 1e-3) / 1e12)
    end
    print(string.format("  %-10s %s | %.0f", w[1], table.concat(cells, " "), r.tflops))
  end
end
for _, x in ipairs { A, B, C, A2, B2, C2 } do x:free() end
