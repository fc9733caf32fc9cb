-- The grouped GEMM's overhead (a probe, not a timed test): cute.lib.gemm.grouped
-- with one problem against cute.gemm on the same shape, and with 8 equal and 8
-- uneven problems against the plain GEMM of all the tokens (the same flops).
--   cutelua bench/gemm_grouped_probe.lua [T K N]
local cute = require "cute"
local G = require "cute.lib.gemm"
local T, K, N = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 1024, tonumber(arg[3]) or 4096
local flops = 2 * T * K * N
local function tf(ms) return flops / ms / 1e9 end
local A = cute.tensor(cute.bf16, { T, K }, "row"):uniform(-1, 1, 1)
local C = cute.tensor(cute.bf16, { T, N }, "row")
local B1 = cute.tensor(cute.bf16, { K, N }, "col"):uniform(-1, 1, 2)
local plain = cute.bench(function() cute.gemm(A, B1, C) end, { flops = flops })
print(string.format("%s, %dx%dx%d: cute.gemm %.0f TFLOP/s", cute.device_info().name, T, K, N, plain.tflops))
for _, split in ipairs { { T }, { T / 8, T / 8, T / 8, T / 8, T / 8, T / 8, T / 8, T / 8 },
  { 1024, 768, 640, 512, 448, 384, 192, 128 } } do
  local E = #split
  local off = { 0 }
  for e = 1, E do off[e + 1] = off[e] + split[e] end
  if off[E + 1] == T then
    local B = cute.tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })):uniform(-1, 1, 3)
    local p = G.grouped_plan(A, B, C, off)
    local r = cute.bench(function() G.grouped(A, B, C, off) end, { flops = flops })
    print(string.format("grouped, %d problems (%s): %.0f TFLOP/s (%.2f of the plain GEMM), tile 128x%d, %d stages, "
      .. "grid %d", E, table.concat(split, "+"), r.tflops, r.tflops / plain.tflops, p.config.bn, p.config.stages,
      p.grid[1]))
    B:free()
  end
end
local _ = tf
