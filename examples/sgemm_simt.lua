-- sgemm_simt: C = A @ B in f32 on the CUDA cores, tiled through shared memory.
--   cutelua examples/sgemm_simt.lua [M N K]
-- A readable tiled SGEMM: each block computes a 64 x 64 tile of C with 256
-- threads, each thread a 4 x 4 block of it, stepping along K 16 at a time
-- through shared memory. Checked against float64 on the CPU; then timed
-- against cute.lib.sgemm (the fast one: 128 x 128 tiles, double buffering)
-- and cuBLAS, in the same run. Without a GPU: on the CPU simulator, small sizes, no timing.
local cute = require "cute"

local ok, why = cute.gpu_available()
local sim = not ok or cute.current_device() == "sim"
if sim and cute.current_device() ~= "sim" then
  print("sgemm_simt: no usable GPU (" .. tostring(why):match("^[^\n]*") .. "): on the CPU simulator, small sizes, "
    .. "no timing")
  cute.set_device("sim")
end

local BM, BN, BK = 64, 64, 16 -- the block's tile of C, and the step along K
local TM, TN = 4, 4 -- each thread's tile of C

-- A (M x K), B (K x N), C (M x N), all row-major. Threads form a 16 x 16
-- grid over the block tile: thread (tx, ty) owns rows ty*4 .. ty*4+3 and
-- columns tx*4 .. tx*4+3.
local sgemm = cute.kernel("sgemm_tiled", function(A, B, C)
  local M, K = A.layout.shape[1], A.layout.shape[2]
  local N = B.layout.shape[2]
  local tid = cute.thread_idx().x
  local tx, ty = tid % 16, tid / 16
  local m0, n0 = cute.block_idx().y * BM, cute.block_idx().x * BN
  local sA = cute.make_smem_tensor(cute.f32, cute.make_layout({ BM, BK }), 16) -- column-major: m contiguous
  local sB = cute.make_smem_tensor(cute.f32, cute.make_layout({ BK, BN }, { BN, 1 }), 16)
  local acc = cute.make_rmem_tensor({ TM, TN }, cute.f32)
  acc:fill(0)
  for k0 in cute.range(0, K, BK) do
    -- 256 threads load the 64 x 16 tile of A and the 16 x 64 tile of B,
    -- 4 elements each; outside the matrices, zero
    for r = 0, 3 do
      local e = tid + r * 256
      local am, ak = e / BK, e % BK -- A's tile: consecutive threads along k (coalesced in row-major A)
      local gm, gk = m0 + am, k0 + ak
      sA[{ am, ak }] = cute.where(gm < M and gk < K, A[{ cute.min(gm, M - 1), cute.min(gk, K - 1) }], 0)
      local bk, bn = e / BN, e % BN -- B's tile: consecutive threads along n
      local hk, hn = k0 + bk, n0 + bn
      sB[{ bk, bn }] = cute.where(hk < K and hn < N, B[{ cute.min(hk, K - 1), cute.min(hn, N - 1) }], 0)
    end
    cute.sync_threads()
    for kk = 0, BK - 1 do
      local a, b = {}, {}
      for i = 0, TM - 1 do a[i] = sA[{ ty * TM + i, kk }] end
      for j = 0, TN - 1 do b[j] = sB[{ kk, tx * TN + j }] end
      for i = 0, TM - 1 do
        for j = 0, TN - 1 do acc[{ i, j }] = cute.fma(a[i], b[j], acc[{ i, j }]) end
      end
    end
    cute.sync_threads()
  end
  for i = 0, TM - 1 do
    for j = 0, TN - 1 do
      local gm, gn = m0 + ty * TM + i, n0 + tx * TN + j
      if gm < M and gn < N then C[{ gm, gn }] = acc[{ i, j }] end
    end
  end
end)

local M = tonumber(arg and arg[1]) or (sim and 100 or 1000)
local N = tonumber(arg and arg[2]) or (sim and 130 or 1030)
local K = tonumber(arg and arg[3]) or (sim and 51 or 517)
local A = cute.tensor(cute.f32, { M, K }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.f32, { K, N }, "row"):uniform(-1, 1, 2)
local C = cute.tensor(cute.f32, { M, N }, "row"):fill(0 / 0) -- poisoned: every element must be written

sgemm { grid = { cute.ceil_div(N, BN), cute.ceil_div(M, BM) }, block = 256 }(A, B, C)
cute.synchronize()

-- check 2000 entries (every one of the first row and column, the rest
-- scattered) against float64, relative to the sum of |products|
local a, b, c = A:to_host():doubles(), B:to_host():doubles(), C:to_host():doubles()
local worst, checked = 0, 0
local function check(i, j)
  local ref, mag = 0, 0
  for k = 0, K - 1 do
    local p = a[i + k * M] * b[k + j * K] -- coordinate order: (i, k) is i + k * M
    ref, mag = ref + p, mag + math.abs(p)
  end
  local got = c[i + j * M]
  if got ~= got then error(string.format("C[%d, %d] was not written", i, j)) end
  worst = math.max(worst, math.abs(got - ref) / math.max(mag, 1e-30))
  checked = checked + 1
end
for i = 0, M - 1 do check(i, 0) end
for j = 0, N - 1 do check(0, j) end
for t = 1, 2000 do check((t * 7919) % M, (t * 104729) % N) end
print(string.format("sgemm_simt: %dx%dx%d, %d entries checked, worst relative error %.3g", M, N, K, checked, worst))
if worst > 1e-5 then
  print("sgemm_simt: WRONG")
  os.exit(1)
end

-- time it at 4096^3 against cute.lib.sgemm and cuBLAS (ratios, same run)
if sim then os.exit(0, true) end -- closing the Lua state first: everything traced is freed
local n = 4096
local A2 = cute.tensor(cute.f32, { n, n }, "row"):uniform(-1, 1, 3)
local B2 = cute.tensor(cute.f32, { n, n }, "row"):uniform(-1, 1, 4)
local C2 = cute.tensor(cute.f32, { n, n }, "row")
local flops = 2 * n ^ 3
local lib = require "cute.lib.sgemm"
local mine = cute.bench(function()
  sgemm { grid = { n / BN, n / BM }, block = 256 }(A2, B2, C2)
end, { flops = flops })
local fast = cute.bench(function() lib.gemm(A2, B2, C2) end, { flops = flops })
local blas = cute.bench(function()
  cute.cublas.gemm_rowmajor { a = A2, b = B2, c = C2, m = n, n = n, k = n, dtype = cute.f32 }
end, { flops = flops })
print(string.format("4096^3: this kernel %.1f TFLOP/s, cute.lib.sgemm %.1f, cuBLAS %.1f (ratios %.2f, %.2f)",
  mine.tflops, fast.tflops, blas.tflops, mine.tflops / blas.tflops, fast.tflops / blas.tflops))
