-- Runs cute.gemm at one shape and configuration a few times (for profilers:
-- ncu, nsys) and prints the kernel's resource report and its SASS statistics.
--   cutelua bench/gemm_probe.lua [M N K] [bm bn bk stages wm wn]
local cute = require "cute"
local G = require "cute.lib.gemm"
local m, n, k = tonumber(arg[1]) or 4096, tonumber(arg[2]) or 4096, tonumber(arg[3]) or 4096
local config
if arg[4] then
  config = { bm = tonumber(arg[4]), bn = tonumber(arg[5]), bk = tonumber(arg[6]), stages = tonumber(arg[7]),
    wm = tonumber(arg[8]), wn = tonumber(arg[9]) }
end
local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.bf16, { k, n }, "row"):uniform(-1, 1, 2)
local C = cute.tensor(cute.bf16, { m, n }, "row")
for _ = 1, 5 do G.gemm(A, B, C, { config = config }) end
cute.synchronize()
local r = cute.bench(function() G.gemm(A, B, C, { config = config }) end, { flops = 2 * m * n * k })
print(string.format("%dx%dx%d %s: %s", m, n, k, config and table.concat({ config.bm, config.bn, config.bk,
  config.stages, config.wm, config.wn }, "/") or "default", tostring(r)))
if os.getenv("CUBLAS") then
  local rb = cute.bench(function()
    cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = m, n = n, k = k, dtype = cute.bf16, c_dtype = cute.bf16 }
  end, { flops = 2 * m * n * k })
  print(string.format("cuBLAS: %s (ratio %.3f)", tostring(rb), r.tflops / rb.tflops))
end
if os.getenv("SASS") then
  local h = G._last_kernel:compile(unpack(G._last_args))
  local sass = h:sass()
  io.open(os.getenv("SASS"), "w"):write(sass)
  print(h:report())
end
