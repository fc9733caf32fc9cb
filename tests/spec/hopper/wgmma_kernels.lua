-- The wgmma test kernels of tests/spec/hopper/wgmma_*_spec.lua: one CTA of
-- 128 x wgs threads computes D (M x N, M = 64 wgs) = A (M x K) B^T (B is N x
-- K) [+ C] with one warpgroup tiled MMA. A and B are copied from global
-- memory into shared memory with plain thread stores at the GMMA layout's
-- offsets (swizzle included), fenced for the async proxy, and read by
-- wgmma through descriptors (SS), or A through registers (RS). The same
-- kernels are compiled on the CPU (PTX, cubin, SASS) and run on the GPU.
local cute = require "cute"
local wg = require "cute.nvgpu.warpgroup"

local K = {}

local SW_KIND = { [0] = "INTER", "SW32", "SW64", "SW128" }

-- The global dtype holding an operand type's values (tf32 data is f32).
local function gdt(name) return name == "tf32" and cute.f32 or cute[name] end
K.gdt = gdt

--- A test case's fields, with defaults: ab (f16 bf16 tf32 e4m3 e5m2 i8 u8),
-- b (B's type for fp8/int8 mixes; default ab), acc (f32 f16 i32), n, a_major
-- and b_major ("K" or "MN"), sw_a and sw_b (0 none, 1 32B, 2 64B, 3 128B;
-- default the widest that fits), rs (A from registers), wgs (warpgroups
-- along M), kblocks (wgmma K steps), accumulate (D = C + A B; else the
-- accumulator holds junk and the first k-block has scale-d = 0), rep_m and
-- rep_n (atoms a thread holds along M and N: the tiled MMA's tile is M = 64
-- wgs rep_m by ntile = n rep_n), per_k (one cute.gemm a k-block on slices of
-- the fragments, scale-d from tiled_mma:set(Field.ACCUMULATE, x)).
function K.case(c)
  c = setmetatable({}, { __index = c })
  c.b = c.b or c.ab
  c.acc = c.acc or (c.ab == "i8" or c.ab == "u8") and "i32" or "f32"
  c.n = c.n or 64
  c.a_major, c.b_major = c.a_major or "K", c.b_major or "K"
  c.wgs, c.kblocks = c.wgs or 1, c.kblocks or 2
  local bits = (c.ab == "tf32") and 32 or (c.ab == "f16" or c.ab == "bf16") and 16 or 8
  c.bits = bits
  c.kinst = 256 / bits
  c.rep_m, c.rep_n = c.rep_m or 1, c.rep_n or 1
  c.m, c.ntile, c.k = 64 * c.wgs * c.rep_m, c.n * c.rep_n, c.kinst * c.kblocks
  return c
end

function K.name(c)
  return string.format("%s%s->%s n%d A%s%s B%s%s%s wg%d k%d%s", c.ab, c.b ~= c.ab and ("x" .. c.b) or "", c.acc,
    c.n, c.rs and "(rs)" or c.a_major, c.sw_a and ("/" .. SW_KIND[c.sw_a]) or "", c.b_major,
    c.sw_b and ("/" .. SW_KIND[c.sw_b]) or "", c.accumulate and " +C" or "", c.wgs, c.kblocks,
    c.negate and " -A" or "") .. (c.per_k and " per-k" or "")
    .. ((c.rep_m > 1 or c.rep_n > 1) and (" rep" .. c.rep_m .. "x" .. c.rep_n) or "")
end

local function op_of(c)
  local src = c.rs and "RMEM" or "SMEM"
  local shape = { 64, c.n, c.kinst }
  if c.ab == "f16" or c.ab == "bf16" then
    return wg.MmaF16BF16Op(cute[c.ab], cute[c.acc], shape, src, c.a_major, c.b_major)
  elseif c.ab == "tf32" then
    return wg.MmaTF32Op(shape, src, c.a_major, c.b_major)
  elseif c.ab == "e4m3" or c.ab == "e5m2" then
    return wg.MmaF8Op(cute[c.ab], cute[c.b], cute[c.acc], shape, src, c.a_major, c.b_major)
  end
  return wg.MmaI8Op(cute[c.ab], cute[c.b], shape, src, c.a_major, c.b_major)
end
K.op_of = op_of

-- The shared layout of an operand (rows x K): the atom of the asked swizzle
-- (or the widest that fits) tiled over the tile.
local function smem_layout(dt, major, rows, kx, sw)
  local kind
  if sw then
    kind = major .. "_" .. SW_KIND[sw]
  else
    kind = wg.get_smem_layout_atom_kind(major, dt, major == "K" and kx or rows).name
  end
  return wg.tile_to_mma_shape(wg.make_smem_layout_atom(kind, dt), { rows, kx }, major)
end
K.smem_layout = smem_layout

--- The kernel of a case: (gA M x K, gB N x K, gC M x N in, gD M x N out),
-- all column-major.
function K.kernel(c, opts)
  local mma = cute.make_tiled_mma(cute.make_mma_atom(op_of(c)), { c.wgs, 1, 1 }, { c.m, c.ntile, c.kinst })
  local ta, tb = gdt(c.ab), gdt(c.b)
  local la = smem_layout(ta, c.a_major, c.m, c.k, c.sw_a)
  local lb = smem_layout(tb, c.b_major, c.ntile, c.k, c.sw_b)
  local nthr = 128 * c.wgs
  local M, N, KK = c.m, c.ntile, c.k
  local o = { arch = "sm_90a", max_threads = nthr, cache = false }
  for key, v in pairs(opts or {}) do o[key] = v end
  return cute.kernel("wgmma_" .. K.name(c):gsub("[^%w]", "_"), function(gA, gB, gC, gD)
    local sA = cute.make_smem_tensor(ta, la, 1024)
    local sB = cute.make_smem_tensor(tb, lb, 1024)
    local tid = cute.thread_idx().x
    -- plain stores at the layouts' (swizzled) offsets
    for i in cute.range(tid, M * KK, nthr) do
      local m, k = i % M, i / M
      sA[{ m, k }] = gA[{ m, k }]
    end
    for i in cute.range(tid, N * KK, nthr) do
      local n, k = i % N, i / N
      sB[{ n, k }] = gB[{ n, k }]
    end
    -- generic-proxy stores, then wgmma (async proxy) reads
    cute.asm("fence.proxy.async.shared::cta;", "", {}, { memory = true })
    cute.sync_threads()
    local thr = mma:get_slice(tid)
    local tCsA, tCsB = thr:partition_A(sA), thr:partition_B(sB)
    local tCrA = thr:make_fragment_A(tCsA)
    if c.rs then cute.copy(tCsA, tCrA) end
    local tCrB = thr:make_fragment_B(tCsB)
    local gCt = cute.local_tile(gC, { M, N }, { 0, 0 })
    local gDt = cute.local_tile(gD, { M, N }, { 0, 0 })
    local acc = thr:make_fragment_C(thr:partition_C(gCt))
    if c.accumulate then
      cute.copy(thr:partition_C(gCt), acc)
    else
      acc:fill(c.acc == "i32" and 77777 or 3.0e3) -- junk that scale-d = 0 must ignore
    end
    cute.arch.warpgroup_fence_operand(acc)
    cute.arch.warpgroup_fence()
    if c.per_k then
      -- one cute.gemm a k-block on slices of the fragments, as a mainloop does
      local _ = cute._
      mma:set(wg.Field.ACCUMULATE, c.accumulate or false)
      for k = 0, c.kblocks - 1 do
        cute.gemm(mma, acc, tCrA[{ _, _, k }], tCrB[{ _, _, k }], acc, { negate_a = c.negate })
        mma:set(wg.Field.ACCUMULATE, true)
      end
    else
      cute.gemm(mma, acc, tCrA, tCrB, acc, { accumulate = c.accumulate or false, negate_a = c.negate })
    end
    cute.arch.warpgroup_commit_group()
    cute.arch.warpgroup_wait_group(0)
    cute.arch.warpgroup_fence_operand(acc)
    cute.copy(acc, thr:partition_C(gDt))
  end, o)
end

--- Arguments for compiling a case without a GPU.
function K.fake_args(c)
  return cute.fake_tensor(gdt(c.ab), { c.m, c.k }), cute.fake_tensor(gdt(c.b), { c.ntile, c.k }),
    cute.fake_tensor(cute[c.acc], { c.m, c.ntile }), cute.fake_tensor(cute[c.acc], { c.m, c.ntile })
end

return K
