-- Tutorial: grouped GEMM (after Triton's tutorial 08), the cutelua way: a
-- mixture-of-experts layer's GEMMs in one launch.
--   cutelua examples/grouped_gemm.lua
--
-- An MoE layer sends each token to one expert; sorted by expert, the tokens
-- are one matrix X (T x K) whose rows split into groups by `offsets`, and
-- expert e multiplies its rows by its own weights W[e] (stored N x K, as a
-- linear layer's). cute.lib.gemm.grouped runs every expert's GEMM in one
-- launch of the Hopper kernel: its persistent scheduler walks the experts'
-- tiles one after the other (docs/hopper.md, section 8, "Grouped GEMMs").
--
-- 1. The plan and the kernel, compiled for sm_90a (no GPU needed).
-- 2. With an H100/H200: checked against float64 on sampled entries of every
--    expert, then timed against cuBLAS called once an expert, and against
--    one plain GEMM of all the tokens (the same flops: the floor). Without one,
--    a small layer on the CPU simulator as an sm_90a device, checked.
local cute = require "cute"
local G = require "cute.lib.gemm"

local T, K, N = 4096, 1024, 4096
local split = { 1024, 768, 640, 512, 448, 384, 192, 128 } -- tokens per expert: uneven
local E = #split
local offsets = { 0 }
for e = 1, E do offsets[e + 1] = offsets[e] + split[e] end

local gpu = cute.gpu_available() and cute.device_info().compute_capability[1] == 9
local make = gpu and cute.tensor or cute.fake_tensor
local X = make(cute.bf16, { T, K }, "row")
local W = make(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })) -- W[e]: N x K, K-major
local Y = make(cute.bf16, { T, N }, "row")

-- 1. The plan
local p = G.grouped_plan(X, W, Y, offsets, gpu and {} or { arch = "sm_90a" })
local tiles = 0
for e = 1, E do tiles = tiles + math.ceil(split[e] / p.config.bm) * math.ceil(N / p.config.bn) end
print(string.format("%s: %d experts, %d tiles of %dx%d on %d CTAs, one launch", p.kernel.name, E, tiles, p.config.bm,
  p.config.bn, p.grid[1]))
print(p.kernel:compile(unpack(p.args)):report())
if not gpu then
  -- 2'. Without one: a small MoE layer (uneven experts, one without tokens) on the
  -- CPU simulator as an sm_90a device, checked on every entry, not timed
  print("== on the CPU simulator (no sm_90 GPU): sm_90a, checked, not timed")
  cute.set_device("sim", { arch = "sm_90a" })
  local ks, ns, sp = 64, 96, { 70, 0, 130, 56 }
  local off = { 0 }
  for e = 1, #sp do off[e + 1] = off[e] + sp[e] end
  local x = cute.tensor(cute.bf16, { off[#off], ks }, "row"):uniform(-1, 1, 1)
  local w = cute.tensor(cute.bf16, { ks, ns, #sp }, cute.make_layout({ ks, ns, #sp }, { 1, ks, ks * ns }))
    :uniform(-1, 1, 2)
  local y = cute.tensor(cute.bf16, { off[#off], ns }, "row"):fill(0 / 0)
  G.grouped(x, w, y, off)
  local r = cute.testing.check_grouped_gemm(x, w, y, off, { rtol = 2 ^ -8 })
  print(string.format("%d experts (%s tokens) x %d -> %d on the simulator: all %d entries within 2^-8 of float64",
    #sp, table.concat(sp, "+"), ks, ns, r.checked))
  os.exit(0, true)
end

-- 2. On the GPU
X:uniform(-1, 1, 1)
W:uniform(-1, 1, 2)
Y:fill(0 / 0)
G.grouped(X, W, Y, offsets)
cute.synchronize()
-- (bf16 output: one rounding, 2^-8, of an f32 sum of exact products)
cute.testing.check_grouped_gemm(X, W, Y, offsets, { rtol = 2 ^ -8, samples = 256 })
print("checked 256 entries across the experts against float64 (within 2^-8 of the sum of |products|)")
local flops = 2 * T * K * N
local mine = cute.bench(function() G.grouped(X, W, Y, offsets) end, { flops = flops })
local xp, wp, yp = tonumber(X:data_ptr()), tonumber(W:data_ptr()), tonumber(Y:data_ptr())
local blas = cute.bench(function()
  for e = 1, E do
    cute.cublas.gemm_rowmajor { a = xp + offsets[e] * K * 2, b = wp + (e - 1) * K * N * 2, c = yp + offsets[e] * N * 2,
      m = split[e], n = N, k = K, dtype = cute.bf16, c_dtype = cute.bf16, b_trans = true }
  end
end, { flops = flops })
local W1 = cute.tensor(cute.bf16, { K, N }, "col"):uniform(-1, 1, 3)
local plain = cute.bench(function() cute.gemm(X, W1, Y) end, { flops = flops })
print(string.format("%s: grouped %.0f TFLOP/s, cuBLAS once an expert %.0f TFLOP/s (ratio %.2f), one plain GEMM of "
  .. "all the tokens %.0f TFLOP/s", cute.device_info().name, mine.tflops, blas.tflops, mine.tflops / blas.tflops,
  plain.tflops))
