--- cute.lib.sgemm: C = alpha * A @ B + beta * C in f32 on the CUDA cores (no
-- tensor cores), row-major A (M x K), B (K x N), C (M x N).
--
--   cute.lib.sgemm.gemm(A, B, C, alpha, beta)
--
-- A block computes a 128 x 128 tile of C with 256 threads, each an 8 x 8
-- register tile made of four 4 x 4 quarters (rows ty*4 and 64 + ty*4,
-- columns tx*4 and 64 + tx*4), so that its operands come out of shared memory
-- as 16-byte vectors. Per k-step of 8: A's tile is stored k-major (transposed)
-- and B's as is; shared memory has two stages and the next step's tile is
-- fetched into registers while this one is multiplied (one barrier a step).
-- Blocks entirely inside C with K a multiple of 8 run without predicates;
-- the others zero-fill their loads and predicate their stores.
local cute = require "cute"

local M = {}

local BM, BN, BK = 128, 128, 8
local THREADS = 256

-- plain Lua (preprocess = true): an `if` on run-time values is a branch on the GPU
local k = cute.kernel("sgemm", function(A, B, C, alpha, beta, read_c)
  local Mr, K = A.layout.shape[1], A.layout.shape[2]
  local N = B.layout.shape[2]
  local tid = cute.thread_idx().x
  local bm, bn = cute.block_idx().y, cute.block_idx().x
  local tx, ty = tid:band(15), tid:shr(4)

  -- shared memory: sA[m, k, stage] (k-major: m contiguous), sB[n, k, stage]
  local sA = cute.make_smem_tensor(cute.f32, cute.make_layout({ BM, BK, 2 }, { 1, BM, BM * BK }), 128)
  local sB = cute.make_smem_tensor(cute.f32, cute.make_layout({ BN, BK, 2 }, { 1, BN, BN * BK }), 128)

  -- this block's rows of A and columns of B, all k-steps: (BM, BK, k-tiles), (BK, BN, k-tiles)
  local gA = cute.local_tile(A, { BM, BK }, { bm, cute._ })
  local gB = cute.local_tile(B, { BK, BN }, { cute._, bn })
  local ktiles = (K + BK - 1) / BK

  -- which elements each thread fetches: A rows (tid % 128), k (tid / 128) * 4 .. + 3;
  -- B row tid / 32, columns (tid % 32) * 4 .. + 3
  local a_row, a_k = tid:band(127), tid:shr(7) * 4
  local b_row, b_col = tid:shr(5), tid:band(31) * 4

  local full = bm * BM + BM <= Mr and bn * BN + BN <= N and K:band(BK - 1) == 0

  local ra = cute.make_rmem_tensor({ 4 }, cute.f32)
  local rb = cute.make_rmem_tensor({ 4 }, cute.f32)

  local function fetch(kt)
    local ta = gA[{ a_row, cute._, kt }] -- (BK) of row a_row: 4 contiguous k from a_k
    local tb = gB[{ b_row, cute._, kt }] -- (BN) of row b_row
    local va = cute.local_tile(ta, { 4 }, { a_k / 4 })
    local vb = cute.local_tile(tb, { 4 }, { tid:band(31) })
    if full then
      cute.copy(va, ra)
      cute.copy(vb, rb)
    else
      -- edge blocks: an element outside A or B is never read (a where would
      -- still load it), it is zero
      local gm, gk = bm * BM + a_row, kt * BK + a_k
      for i = 0, 3 do
        if gm < Mr and gk + i < K then ra[i] = va[i] else ra[i] = 0 end
      end
      local gkb, gn = kt * BK + b_row, bn * BN + b_col
      for j = 0, 3 do
        if gkb < K and gn + j < N then rb[j] = vb[j] else rb[j] = 0 end
      end
    end
  end

  local function store_stage(stage)
    for i = 0, 3 do sA[{ a_row, a_k + i, stage }] = ra[i] end
    cute.copy(rb, cute.local_tile(sB[{ cute._, b_row, stage }], { 4 }, { tid:band(31) }))
  end

  local acc = cute.make_rmem_tensor({ 8, 8 }, cute.f32)
  acc:fill(0)

  fetch(0)
  store_stage(0)
  cute.sync_threads()

  for kt in cute.range(ktiles) do
    local cur = kt:band(1)
    local more = kt + 1 < ktiles
    if more then fetch(kt + 1) end
    for kk = 0, BK - 1 do
      local af = cute.make_rmem_tensor({ 8 }, cute.f32)
      local bf = cute.make_rmem_tensor({ 8 }, cute.f32)
      local col_a = sA[{ cute._, kk, cur }]
      local col_b = sB[{ cute._, kk, cur }]
      cute.copy(cute.local_tile(col_a, { 4 }, { ty }), cute.local_tile(af, { 4 }, { 0 }))
      cute.copy(cute.local_tile(col_a, { 4 }, { ty + 16 }), cute.local_tile(af, { 4 }, { 1 }))
      cute.copy(cute.local_tile(col_b, { 4 }, { tx }), cute.local_tile(bf, { 4 }, { 0 }))
      cute.copy(cute.local_tile(col_b, { 4 }, { tx + 16 }), cute.local_tile(bf, { 4 }, { 1 }))
      for i = 0, 7 do
        for j = 0, 7 do acc[{ i, j }] = cute.fma(af[i], bf[j], acc[{ i, j }]) end
      end
    end
    if more then store_stage((kt + 1):band(1)) end
    cute.sync_threads()
  end

  -- epilogue: C = alpha * acc + beta * C, 16-byte vectors along n
  for half_m = 0, 1 do
    for i = 0, 3 do
      local m = bm * BM + half_m * 64 + ty * 4 + i
      local crow = C[{ m, cute._ }]
      for half_n = 0, 1 do
        local n0 = bn * BN + half_n * 64 + tx * 4
        local cv = cute.local_tile(crow, { 4 }, { n0 / 4 })
        if full then
          local out = cute.make_rmem_tensor({ 4 }, cute.f32)
          if read_c then
            local old = cv:load()
            for j = 0, 3 do out[j] = cute.fma(alpha, acc[{ half_m * 4 + i, half_n * 4 + j }], beta * old[j]) end
          else
            for j = 0, 3 do out[j] = alpha * acc[{ half_m * 4 + i, half_n * 4 + j }] end
          end
          cv:store(out)
        else
          for j = 0, 3 do
            if m < Mr and n0 + j < N then
              local v = alpha * acc[{ half_m * 4 + i, half_n * 4 + j }]
              if read_c then v = cute.fma(beta, crow[n0 + j], v) end
              crow[n0 + j] = v
            end
          end
        end
      end
    end
  end
end, { max_threads = THREADS, trace_key = "cute.lib.sgemm", preprocess = true })

M.kernel = k

--- The grid for an M x N result.
-- @param m the rows of C
-- @param n the columns of C
-- @return the grid {x, y}
-- @usage local grid = cute.lib.sgemm.grid(1024, 1024)
function M.grid(m, n) return { math.ceil(n / BN), math.ceil(m / BM) } end

--- C = alpha * A @ B + beta * C (f32, row-major). With beta = 0 (the
-- default) C is not read, as in BLAS: whatever it held (NaN included) is
-- overwritten.
-- @param A an f32 row-major device tensor (M x K)
-- @param B an f32 row-major device tensor (K x N)
-- @param C an f32 row-major device tensor (M x N)
-- @param alpha optional: default 1
-- @param beta optional: default 0
-- @usage cute.lib.sgemm.gemm(A, B, C)
function M.gemm(A, B, C, alpha, beta)
  local m, n = A.layout.shape[1], B.layout.shape[2]
  beta = beta or 0
  k { grid = M.grid(m, n), block = THREADS }(A, B, C, cute.f32(alpha or 1), cute.f32(beta),
    cute.constexpr(beta ~= 0))
end

return M
