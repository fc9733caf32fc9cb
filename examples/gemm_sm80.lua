-- gemm_sm80: the Ampere-style tensor-core GEMM (mma.sync) of cute.lib.gemm,
-- step by step.
--   cutelua examples/gemm_sm80.lua [M N K [DIR]]
--
-- 1. The pieces, as data (no GPU needed): the MMA atom, the tiled MMA over
--    2 x 4 warps, the copies that feed it (cp.async global -> shared,
--    ldmatrix shared -> registers) and the swizzled shared layouts; with
--    DIR, their pictures go to DIR/gemm_sm80_*.svg.
-- 2. The kernel for one configuration, compiled for this machine's GPU (or
--    sm_90a without one): its resources, and the instruction mix of its
--    main loop in the PTX.
-- 3. C = A @ B on random bf16 inputs (A and B row-major, as torch has
--    them), checked against float64 on sampled entries, then timed against
--    cuBLAS in the same run (forced onto this kernel with opts.kernel =
--    "sm80": on an H100 cute.gemm would pick the Hopper one,
--    examples/gemm_sm90.lua); without a GPU on the CPU simulator (256^3, untimed).
-- The kernel's code is lua/cute/lib/gemm.lua (build()): read it alongside.
local cute = require "cute"
local G = require "cute.lib.gemm"

local M = tonumber(arg and arg[1]) or 4096
local N = tonumber(arg and arg[2]) or 4096
local K = tonumber(arg and arg[3]) or 4096

-- 1. The pieces
local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
local mma = cute.make_tiled_mma(atom, { 2, 4, 1 }, { 128, 256, 16 })
print(atom)
print(mma)
local g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp("global"), cute.bf16, { num_bits_per_copy = 128 })
local copy_a = cute.make_tiled_copy_tv(g2s, cute.make_layout({ 32, 8 }, { 8, 1 }), cute.make_layout({ 1, 8 }))
print(copy_a)
local ldsm = cute.nvgpu.warp.LdMatrix8x8x16bOp
local ldsm_a = cute.make_tiled_copy_A(cute.make_copy_atom(ldsm(false, 4), cute.bf16), mma)
local ldsm_b = cute.make_tiled_copy_B(cute.make_copy_atom(ldsm(true, 4), cute.bf16), mma)
print(ldsm_a)
print(ldsm_b)
print("A's shared tile (K-major):", G.smem_layout(128, 64, "k", 2))
print("B's shared tile (N-major):", G.smem_layout(256, 64, "mn", 2))
local dir = arg and arg[4]
if dir then
  cute.print_svg_mma(mma, dir .. "/gemm_sm80_mma.svg")
  cute.print_svg_copy(copy_a, dir .. "/gemm_sm80_copy_a.svg")
  print("pictures: " .. dir .. "/gemm_sm80_mma.svg, " .. dir .. "/gemm_sm80_copy_a.svg")
end

-- 2. The kernel for A (M x K, K-major) and B (K x N, N-major: seen as N x K, N-major)
local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8, group = 8,
  even = M % 128 == 0 and N % 256 == 0 and K % 64 == 0, beta = false }
for k, v in pairs(G.CONFIGS.large16) do cfg[k] = v end
local kern = G.kernel(cfg)
local gpu = cute.gpu_available()
local function fake(dt, r, c, stride)
  return cute.fake_tensor(dt, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
end
local h = kern:with(gpu and {} or { arch = "sm_90a" }):compile(fake(cute.bf16, M, K, { K, 1, 0 }),
  fake(cute.bf16, N, K, { 1, N, 0 }), fake(cute.bf16, M, N, { N, 1, 0 }), cute.f32(1), cute.f32(0))
print(h:report())
local counts = {}
for op in h:ptx():gmatch("\n%s+([%a%d_]+)[%.%s]") do counts[op] = (counts[op] or 0) + 1 end
print(string.format("PTX: %d mma.sync, %d ldmatrix, %d cp.async (whole kernel, main loop unrolled once)",
  counts.mma or 0, counts.ldmatrix or 0, counts.cp or 0))

-- 3. On the GPU; without one on the CPU simulator (docs/simulator.md), at 256 x 256 x 256 and untimed
local sim = not gpu
if sim then
  print("gemm_sm80: no usable GPU: C = A @ B on the CPU simulator")
  cute.set_device("sim")
  if not (arg and arg[1]) then M, N, K = 256, 256, 256 end
end
local A = cute.tensor(cute.bf16, { M, K }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.bf16, { K, N }, "row"):uniform(-1, 1, 2)
local C = cute.tensor(cute.bf16, { M, N }, "row"):fill(0 / 0)
cute.gemm(A, B, C, { kernel = "sm80" })
cute.synchronize()
local a, b, c = A:to_host():doubles(), B:to_host():doubles(), C:to_host():doubles()
local worst = 0
for t = 0, 511 do
  local i, j = (t * 7919) % M, (t * 104729) % N
  local ref, mag = 0, 0
  for k = 0, K - 1 do
    local p = a[i + k * M] * b[k + j * K]
    ref, mag = ref + p, mag + math.abs(p)
  end
  local got = c[i + j * M]
  if got ~= got then error(string.format("C[%d, %d] was not written", i, j)) end
  worst = math.max(worst, math.abs(got - ref) / mag)
end
-- bf16 output: one rounding (2^-8 relative) of an f32 sum of exact products
print(string.format("checked 512 entries: worst error %.3g of the sum of |products| (bound 2^-8)", worst))
if worst > 2 ^ -8 then
  print("gemm_sm80: WRONG")
  os.exit(1)
end
if sim then os.exit(0, true) end -- closing the Lua state first: everything compiled is freed
local flops = 2 * M * N * K
local mine = cute.bench(function() cute.gemm(A, B, C, { kernel = "sm80" }) end, { flops = flops })
local blas = cute.bench(function()
  cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = M, n = N, k = K, dtype = cute.bf16, c_dtype = cute.bf16 }
end, { flops = flops })
print(string.format("%dx%dx%d bf16: cute.gemm %.0f TFLOP/s, cuBLAS %.0f TFLOP/s: ratio %.2f", M, N, K, mine.tflops,
  blas.tflops, mine.tflops / blas.tflops))
