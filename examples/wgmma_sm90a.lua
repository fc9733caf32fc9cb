-- wgmma_sm90a: one Hopper warpgroup MMA tile, shared memory -> wgmma -> global.
--   cutelua examples/wgmma_sm90a.lua
--
-- One CTA of 128 threads (a warpgroup) computes D (64 x 128, f32) = A (64 x
-- 64, bf16) B^T (B is 128 x 64, bf16): the threads copy A and B into shared
-- memory in the 128B-swizzled K-major layouts wgmma reads, then four
-- wgmma.mma_async m64n128k16 (one per 16-wide k-block) read them through
-- shared-memory descriptors and accumulate in registers, and the
-- accumulators go to global memory. Compiled for sm_90a (its PTX and SASS
-- shown without a GPU); run and checked against float64 on an H100/H200.
-- Where no sm_90 GPU is usable the tile runs on the CPU simulator (docs/simulator.md).
local cute = require "cute"
local wg = cute.nvgpu.warpgroup

local M, N, K = 64, 128, 64

-- The MMA: A and B from shared memory (SS), both K-major; f32 accumulators.
local op = wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, N, 16 }, wg.OperandSource.SMEM, wg.OperandMajorMode.K,
  wg.OperandMajorMode.K)
local mma = cute.make_tiled_mma(cute.make_mma_atom(op))
-- The shared layouts: 128B-swizzled K-major atoms (8 rows x 64 bf16) tiled over the operands.
local layout_a = wg.make_smem_layout_a(wg.OperandMajorMode.K, { M, N, K }, cute.bf16)
local layout_b = wg.make_smem_layout_b(wg.OperandMajorMode.K, { M, N, K }, cute.bf16)
print(mma)
print("A in shared memory:", layout_a)
print("its descriptor:", wg.make_smem_desc(layout_a, cute.bf16, wg.OperandMajorMode.K, { mn = 64 }))

local kernel = cute.kernel("wgmma_tile", function(gA, gB, gD)
  -- 1. A and B into shared memory (1024-byte aligned: the 128B swizzle's repeat)
  local sA = cute.make_smem_tensor(cute.bf16, layout_a, 1024)
  local sB = cute.make_smem_tensor(cute.bf16, layout_b, 1024)
  local tid = cute.thread_idx().x
  for i = tid, M * K - 1, 128 do sA[{ i % M, i / M }] = gA[{ i % M, i / M }] end
  for i = tid, N * K - 1, 128 do sB[{ i % N, i / N }] = gB[{ i % N, i / N }] end
  -- ordinary stores are the generic proxy; wgmma reads through the async proxy
  cute.asm("fence.proxy.async.shared::cta;", "", {}, { memory = true })
  cute.sync_threads()
  -- 2. this thread's parts: descriptor fragments of A and B, the accumulator of D
  local thr = mma:get_slice(tid)
  local tCrA = thr:make_fragment_A(thr:partition_A(sA)) -- (1 atom, 1 M block, 4 k-blocks)
  local tCrB = thr:make_fragment_B(thr:partition_B(sB))
  local gDt = cute.local_tile(gD, { M, N }, { 0, 0 })
  local acc = thr:make_fragment_C(thr:partition_C(gDt)) -- 64 f32 registers a thread
  -- 3. one batch of wgmma: fence, 4 x wgmma (the first ignores acc: scale-d 0), commit, wait
  cute.arch.warpgroup_fence_operand(acc)
  cute.arch.warpgroup_fence()
  cute.gemm(mma, acc, tCrA, tCrB, acc, { accumulate = false })
  cute.arch.warpgroup_commit_group()
  cute.arch.warpgroup_wait_group(0)
  cute.arch.warpgroup_fence_operand(acc)
  -- 4. the accumulators to global memory
  cute.copy(acc, thr:partition_C(gDt))
end, { arch = "sm_90a", max_threads = 128 })

local fake_a, fake_b = cute.fake_tensor(cute.bf16, { M, K }), cute.fake_tensor(cute.bf16, { N, K })
local h = kernel:compile(fake_a, fake_b, cute.fake_tensor(cute.f32, { M, N }))
print(h:report())
print(h:ptx():match("[^\n]*wgmma%.mma_async[^\n]*"):sub(1, 100) .. " ...")
local ok_sass, sass = pcall(h.sass, h)
if ok_sass then
  for l in sass:gmatch("[^\n]*GMMA[^\n]*") do print(l) end
end

local info = cute.current_device() ~= "sim" and cute.gpu_available() and cute.device_info()
if not info or info.compute_capability[1] ~= 9 then
  -- no sm_90 GPU: the tile runs on the CPU simulator as an sm_90a device
  print("no sm_90 GPU: on the CPU simulator (sm_90a)")
  cute.set_device("sim", { arch = "sm_90a" })
end
local A, B, D = cute.tensor(cute.bf16, { M, K }), cute.tensor(cute.bf16, { N, K }), cute.tensor(cute.f32, { M, N })
A:uniform(-1, 1)
B:uniform(-1, 1)
D:fill(0 / 0)
kernel { grid = 1, block = 128 }(A, B, D)
local a, b, d = A:to_table(), B:to_table(), D:to_table()
local worst = 0
for m = 0, M - 1 do
  for n = 0, N - 1 do
    local ref = 0
    for k = 0, K - 1 do ref = ref + a[m + M * k + 1] * b[n + N * k + 1] end
    local e = math.abs(d[m + M * n + 1] - ref)
    if e ~= e or e > worst then worst = e end -- a NaN (the poison: not written) is the worst
  end
end
print(string.format("max |D - A B^T| = %.3g (f32 accumulation of %d bf16 products)", worst, K))
if worst ~= worst or worst >= 1e-3 then
  print("WRONG")
  os.exit(1, true)
end
print("OK")
os.exit(0, true)
