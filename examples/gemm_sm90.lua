-- gemm_sm90: the Hopper GEMM of cute.lib.gemm_sm90 (TMA, mbarriers, wgmma,
-- warp specialisation), step by step.
--   cutelua examples/gemm_sm90.lua [M N K [DIR]]
--
-- 1. The pieces, as data (no GPU needed): the wgmma atom (64 x 256 x 16, both
--    operands read from shared memory through descriptors), the tiled MMA of
--    two consumer warpgroups, the 128-byte-swizzled shared layouts the
--    descriptors read and the TMA atoms that write exactly those layouts;
--    with DIR, pictures of the shared layouts go to DIR/gemm_sm90_*.svg.
-- 2. The plan cute.gemm makes for M x N x K (tile, stages, grid, why this
--    kernel), and the pipeline it builds from those numbers; then the plan of a
--    skinny (decode) problem, 16 x N x K, which cute.gemm computes swapped, C^T =
--    B^T A^T, so that its 16 rows are the MMA's N instead of a 64-row tile's
--    padding.
-- 3. The kernel compiled for sm_90a (on any machine): its resources, the
--    instruction mix of its PTX, and, where a disassembler is installed, of
--    its SASS (HGMMA, UTMALDG, USETMAXREG).
-- 4. With an H100/H200: C = A @ B on random bf16 inputs (A row-major, B
--    K-major: stored N x K, as a linear layer's weights), checked against
--    float64 on sampled entries with C poisoned first, then timed against
--    cuBLAS in the same run; then the same with a fused bias and GELU.
--    Without one: the kernel on the CPU simulator as an sm_90a device (256^3
--    by default), every entry checked, not timed.
-- The kernel's code is lua/cute/lib/gemm_sm90.lua: read it alongside
-- (docs/hopper.md, section 8, walks through it).
local cute = require "cute"
local G = require "cute.lib.gemm"
local S = require "cute.lib.gemm_sm90"
local wg = cute.nvgpu.warpgroup

local gpu = cute.current_device() ~= "sim" and cute.gpu_available() and cute.device_info().compute_capability[1] == 9
local M = tonumber(arg and arg[1]) or (gpu and 4096 or 256) -- the CPU simulator: small sizes
local N = tonumber(arg and arg[2]) or (gpu and 4096 or 256)
local K = tonumber(arg and arg[3]) or (gpu and 4096 or 256)
local dir = arg and arg[4]

-- 1. The pieces
print("== 1. the pieces")
local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 256, 16 }, wg.OperandSource.SMEM,
  wg.OperandMajorMode.K, wg.OperandMajorMode.K))
local mma = cute.make_tiled_mma(atom, { 2, 1, 1 }) -- two warpgroups along M: a 128 x 256 tile
print(atom)
print(mma)
-- one stage of the shared ring: A 128 x 64, B 256 x 64, K contiguous, in 8-row x
-- 128-byte atoms swizzled by S<3,3,3> on bf16 elements (Swizzle<3,4,3> on bytes:
-- the wgmma descriptors' SW128 mode)
local sw = wg.make_smem_layout_atom("K_SW128", cute.bf16)
print("the SW128 atom (8 rows x 64 bf16):", sw)
print("A's stage (128 x 64):", wg.make_smem_layout_a("K", { 128, 256, 64 }, cute.bf16))
print("B's stage (256 x 64):", wg.make_smem_layout_b("K", { 128, 256, 64 }, cute.bf16))
-- the TMA atoms: the box a load writes, checked against those layouts
local Av = cute.fake_tensor(cute.bf16, { M, K, 1 }, cute.make_layout({ M, K, 1 }, { K, 1, M * K }))
local Bv = cute.fake_tensor(cute.bf16, { N, K, 1 }, cute.make_layout({ N, K, 1 }, { K, 1, N * K }))
local ta, tb = S.tma_atoms({ a_dtype = "bf16", bm = 128, bn = 256, bk = 64 }, Av, Bv)
print(ta)
print(tb)
if dir then
  cute.print_svg(sw, dir .. "/gemm_sm90_sw128_atom.svg")
  cute.print_svg(wg.make_smem_layout_a("K", { 128, 256, 64 }, cute.bf16), dir .. "/gemm_sm90_stage_a.svg")
  print("pictures: " .. dir .. "/gemm_sm90_sw128_atom.svg (where each element of an 8 x 64 atom lives), "
    .. dir .. "/gemm_sm90_stage_a.svg (A's 128 x 64 stage)")
end

-- 2. The plan
print("== 2. the plan")
local A_f = cute.fake_tensor(cute.bf16, { M, K }, "row")
local B_f = cute.fake_tensor(cute.bf16, { K, N }, "col") -- K contiguous
local C_f = cute.fake_tensor(cute.bf16, { M, N }, "row")
local p = G.plan(A_f, B_f, C_f, { arch = "sm_90a" })
local c = p.config
print("kernel:", p.kernel.name)
print("why:", p.why)
local stage = (c.bm + c.bn) * c.bk * 2
print(string.format("CTA: %d threads = a producer warpgroup (one thread issues the TMA loads) + %d consumer "
  .. "warpgroups (wgmma)", p.block, (p.block - 128) / 128))
-- (a swapped plan's tile is one of C^T: N x M)
local rows, cols = M, N
if c.swapped then rows, cols = N, M end
print(string.format("ring: %d stages of %d KiB (A %dx%d + B %dx%d bf16), a full and an empty mbarrier each; "
  .. "%d tiles of %dx%d%s on a persistent grid of %d CTAs, grouped by %d along M", c.stages, stage / 1024, c.bm, c.bk,
  c.bn, c.bk, math.ceil(rows / c.bm) * math.ceil(cols / c.bn), c.bm, c.bn, c.swapped and " of C^T" or "", p.grid[1],
  c.group))
-- a skinny problem (a decode step: 16 tokens through a linear layer of N x K weights).
-- A 64-row tile would be three quarters padding; swapped, B's N x K view is the
-- kernel's A, A's 16 x K its B, and the tile 64 x 16 of C^T (written through C's
-- transposed view): the weights stream through the ring, each stage a 64 x 64 box
-- of them and a 16 x 64 box of the tokens.
local ps = G.plan(cute.fake_tensor(cute.bf16, { 16, K }, "row"), B_f, cute.fake_tensor(cute.bf16, { 16, N }, "row"),
  { arch = "sm_90a" })
print(string.format("16 x %d x %d: %s, %d CTAs; %s", N, K, ps.kernel.name, ps.grid[1],
  ps.config.swapped and "swapped (C^T = B^T A^T)" or "not swapped"))

-- 3. The compiled kernel
print("== 3. the compiled kernel (sm_90a)")
local h = p.kernel:compile(unpack(p.args))
print(h:report())
local ptx = h:ptx()
local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end
print(string.format("PTX: %d wgmma.mma_async, %d TMA loads (cp.async.bulk.tensor), %d mbarrier waits, "
  .. "setmaxnreg %d/%d", count(ptx, "wgmma%.mma_async"), count(ptx, "cp%.async%.bulk%.tensor"),
  count(ptx, "mbarrier%.try_wait"), count(ptx, "setmaxnreg%.dec"), count(ptx, "setmaxnreg%.inc")))
local ok, sass = pcall(h.sass, h)
if ok then
  print(string.format("SASS: %d HGMMA.64x256x16, %d UTMALDG, %d WARPGROUP.DEPBAR, USETMAXREG %s",
    count(sass, "HGMMA%.64x256x16"), count(sass, "UTMALDG"), count(sass, "WARPGROUP%.DEPBAR"),
    sass:find("USETMAXREG", 1, true) and "yes" or "no"))
else
  print("SASS: no nvdisasm or cuobjdump on this machine")
end

if not gpu then
  -- 4'. Without one: the same kernel on the CPU simulator as an sm_90a device, checked on every entry, not timed
  print("== 4. on the CPU simulator (no sm_90 GPU): sm_90a, checked, not timed")
  cute.set_device("sim", { arch = "sm_90a" })
  local A = cute.tensor(cute.bf16, { M, K }, "row"):uniform(-1, 1, 1)
  local B = cute.tensor(cute.bf16, { K, N }, "col"):uniform(-1, 1, 2)
  local C = cute.tensor(cute.bf16, { M, N }, "row"):fill(0 / 0)
  local t0 = os.clock()
  cute.gemm(A, B, C)
  local secs = os.clock() - t0
  local r = cute.testing.check_gemm(A, B, C, { rtol = 2 ^ -8, what = "C" })
  print(string.format("%dx%dx%d bf16 on the simulator in %.2f s: all %d entries within 2^-8 of float64", M, N, K,
    secs, r.checked))
  os.exit(0, true) -- closing the Lua state first: everything compiled is freed
end

-- 4. On the GPU
print("== 4. on the GPU")
local A = cute.tensor(cute.bf16, { M, K }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.bf16, { K, N }, "col"):uniform(-1, 1, 2)
local C = cute.tensor(cute.bf16, { M, N }, "row"):fill(0 / 0)
cute.gemm(A, B, C)
cute.synchronize()
-- bf16 output: one rounding (2^-8 relative) of an f32 sum of exact products
cute.testing.check_gemm(A, B, C, { samples = 512, rtol = 2 ^ -8, what = "C" })
print("checked 512 entries against float64 (within 2^-8 of the sum of |products|)")
local flops = 2 * M * N * K
local mine = cute.bench(function() cute.gemm(A, B, C) end, { flops = flops })
local blas = cute.bench(function()
  cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = M, n = N, k = K, dtype = cute.bf16, c_dtype = cute.bf16,
    b_trans = true }
end, { flops = flops })
print(string.format("%dx%dx%d bf16 (%s): cute.gemm %.0f TFLOP/s, cuBLAS %.0f TFLOP/s: ratio %.2f",
  M, N, K, cute.device_info().name, mine.tflops, blas.tflops, mine.tflops / blas.tflops))

-- a linear layer's epilogue in the same kernel: Y = gelu(X W^T + b)
local bias = cute.tensor(cute.f32, { N }):uniform(-1, 1, 3)
local fused = { bias = bias, activation = "gelu_tanh" }
local f = cute.bench(function() cute.gemm(A, B, C, fused) end, { flops = flops })
print(string.format("with bias + gelu_tanh fused: %.0f TFLOP/s (%.2f of the plain GEMM)", f.tflops,
  f.tflops / mine.tflops))
