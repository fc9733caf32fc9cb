-- hopper_tile: the Hopper data path in one small kernel: TMA load -> wgmma ->
-- store. One CTA of 128 threads (a warpgroup) computes D (64 x 128, f32) =
-- A (64 x 64, bf16) B^T (B is 128 x 64, bf16):
--   1. one thread starts two TMA loads (A's and B's tiles, K-major, into the
--      128B-swizzled shared layouts wgmma reads) that complete on an mbarrier;
--   2. every thread waits on the mbarrier's phase 0 (the bytes have landed);
--   3. four wgmma.mma_async m64n128k16 read the tiles through shared-memory
--      descriptors and accumulate in registers;
--   4. the accumulators are stored to global memory.
-- The TMA atoms are kernel arguments (grid-constant descriptors encoded at
-- launch). Compiled for sm_90a anywhere (PTX and SASS shown); run and checked
-- against float64 on an H100/H200, elsewhere on the CPU simulator as an sm_90a device.
--   cutelua examples/hopper_tile.lua
-- docs/hopper.md: sections 5 (wgmma), 6 (TMA), 7 (mbarriers).
local cute = require "cute"
local wg, cp = cute.nvgpu.warpgroup, cute.nvgpu.cpasync

local M, N, K = 64, 128, 64

local mma = cute.make_tiled_mma(cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, N, 16 },
  wg.OperandSource.SMEM, wg.OperandMajorMode.K, wg.OperandMajorMode.K)))
local layout_a = wg.make_smem_layout_a(wg.OperandMajorMode.K, { M, N, K }, cute.bf16) -- S<3,4,3> o (64,64)
local layout_b = wg.make_smem_layout_b(wg.OperandMajorMode.K, { M, N, K }, cute.bf16)

local kernel = cute.kernel("hopper_tile", function(tma_a, tma_b, gD)
  local sA = cute.make_smem_tensor(cute.bf16, layout_a, 1024) -- the 128B swizzle's repeat
  local sB = cute.make_smem_tensor(cute.bf16, layout_b, 1024)
  local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
  local tid = cute.thread_idx().x
  -- 1. TMA: one CTA (no multicast), the whole tile at tile coordinate (0, 0)
  local pa = cp.tma_partition(tma_a, 0, cute.make_layout(1), layout_a)
  local pb = cp.tma_partition(tma_b, 0, cute.make_layout(1), layout_b)
  if tid == 0 then
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
  end
  cute.sync_threads()
  if tid == 0 then
    cute.arch.mbarrier_arrive_and_expect_tx(bar, pa.tile_bytes + pb.tile_bytes)
    cute.copy(tma_a, pa:gmem_tile({ 0, 0 }), pa:smem_tile(sA), { tma_bar_ptr = bar })
    cute.copy(tma_b, pb:gmem_tile({ 0, 0 }), pb:smem_tile(sB), { tma_bar_ptr = bar })
  end
  -- 2. the tiles are in shared memory when phase 0 completes (TMA writes
  -- through the async proxy, which wgmma reads: no proxy fence needed)
  cute.arch.mbarrier_wait(bar, 0)
  -- 3. wgmma: descriptor fragments of A and B, the accumulator of D
  local thr = mma:get_slice(tid)
  local tCrA = thr:make_fragment_A(thr:partition_A(sA))
  local tCrB = thr:make_fragment_B(thr:partition_B(sB))
  local gDt = cute.local_tile(gD, { M, N }, { 0, 0 })
  local acc = thr:make_fragment_C(thr:partition_C(gDt))
  cute.arch.warpgroup_fence_operand(acc)
  cute.arch.warpgroup_fence()
  cute.gemm(mma, acc, tCrA, tCrB, acc, { accumulate = false }) -- 4 x wgmma m64n128k16
  cute.arch.warpgroup_commit_group()
  cute.arch.warpgroup_wait_group(0)
  cute.arch.warpgroup_fence_operand(acc)
  -- 4. the accumulators to global memory
  cute.copy(acc, thr:partition_C(gDt))
end, { arch = "sm_90a", max_threads = 128 })

local info = cute.current_device() ~= "sim" and cute.gpu_available() and cute.device_info()
local gpu = info and info.compute_capability[1] == 9
if not gpu then -- the CPU simulator as an sm_90a device (docs/simulator.md)
  print("hopper_tile: no sm_90 GPU: on the CPU simulator (sm_90a)")
  cute.set_device("sim", { arch = "sm_90a" })
end
local tensor = cute.tensor
-- A and B K-major (K contiguous: row-major M x K and N x K), as TMA and wgmma read them
local A, B = tensor(cute.bf16, { M, K }, "row"), tensor(cute.bf16, { N, K }, "row")
local D = tensor(cute.f32, { M, N })
local tma_a = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), A, layout_a, { M, K })
local tma_b = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), B, layout_b, { N, K })
print(tma_a)
print(tma_b)

local h = kernel:compile(tma_a, tma_b, D)
print(h:report())
local ptx = h:ptx()
for _, pat in ipairs { "cp%.async%.bulk%.tensor[^\n]*", "mbarrier%.try_wait[^\n]*", "wgmma%.mma_async[^\n]*" } do
  local l = ptx:match(pat)
  print(l and (l:sub(1, 110) .. (#l > 110 and " ..." or "")) or ("(no " .. pat .. ")"))
end
local ok_sass, sass = pcall(h.sass, h)
if ok_sass then
  for l in sass:gmatch("[^\n]*UTMALDG[^\n]*") do print(l) end
  for l in sass:gmatch("[^\n]*HGMMA[^\n]*") do print(l) end
end

A:uniform(-1, 1, 11)
B:uniform(-1, 1, 12)
D:fill(0 / 0)
kernel { grid = 1, block = 128 }(tma_a, tma_b, D)
-- D = A B^T: as a GEMM D (M x N) = A (M x K) @ B^T (K x N)
local Bt = cute.from_ptr(B:data_ptr(), cute.bf16, { K, N }, { 1, K })
local r = cute.testing.check_gemm(A, Bt, D, { what = "D" })
print(string.format("hopper_tile: D = A B^T, %d x %d x %d, every element within bf16 tolerance (max relative error "
  .. "%.2g of the products' magnitudes): OK", M, N, K, r.max_rel))
os.exit(0, true)
