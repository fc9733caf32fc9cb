--- cute.lib.transpose: out = in^T through swizzled shared memory.
--
--   cute.lib.transpose.transpose(a, b)     b (N x M) = a (M x N)^T, both row-major
--   cute.lib.transpose.transpose32(a, b)   the same with the simple 32 x 32 kernel
--
-- transpose32: a block moves a 32 x 32 tile: 32 x 8 threads read it row by row (each warp
-- one 128-byte row: coalesced) into shared memory, and write it out column by
-- column, which is again 128 contiguous bytes of b. The shared tile's layout
-- is composed with Swizzle(5, 0, 5): element (r, c) sits at r * 32 + (c xor r),
-- so neither the row-wise writes nor the column-wise reads of a warp hit one
-- bank twice (no padding needed). Edges are predicated.
--
-- The kernels are written in plain Lua (preprocess = true: cute.lib's
-- kernels are not preprocessed unless they ask): an `if` on a comparison of
-- run-time values is a branch on the GPU, a `for` over Lua numbers unrolls.
local cute = require "cute"

local M = {}

local TILE, ROWS = 32, 8

local k = cute.kernel("transpose", function(a, b)
  local Mr, Nc = a.layout.shape[1], a.layout.shape[2]
  local smem_layout = cute.make_composed_layout(cute.Swizzle(5, 0, 5), 0, cute.make_layout({ TILE, TILE }, { TILE, 1 }))
  local s = cute.make_smem_tensor(a.dtype, smem_layout, 128)
  local tx, ty = cute.thread_idx().x, cute.thread_idx().y
  local bx, by = cute.block_idx().x, cute.block_idx().y -- tile column (N), tile row (M)
  local r0, c0 = by * TILE, bx * TILE
  local full = r0 + TILE <= Mr and c0 + TILE <= Nc
  local ta = cute.local_tile(a, { TILE, TILE }, { by, bx })
  local tb = cute.local_tile(b, { TILE, TILE }, { bx, by })
  if full then
    for j = 0, TILE - 1, ROWS do s[{ ty + j, tx }] = ta[{ ty + j, tx }] end
    cute.sync_threads()
    for j = 0, TILE - 1, ROWS do tb[{ ty + j, tx }] = s[{ tx, ty + j }] end
  else
    for j = 0, TILE - 1, ROWS do
      if r0 + ty + j < Mr and c0 + tx < Nc then s[{ ty + j, tx }] = ta[{ ty + j, tx }] end
    end
    cute.sync_threads()
    for j = 0, TILE - 1, ROWS do
      if c0 + ty + j < Nc and r0 + tx < Mr then tb[{ ty + j, tx }] = s[{ tx, ty + j }] end
    end
  end
end, { trace_key = "cute.lib.transpose:transpose", preprocess = true })
M.kernel32 = k

-- The wide variant: a 64 x 64 tile, 16 x 16 threads, 16-byte accesses to
-- global memory on both sides. Thread (tx, ty) reads 4 elements of input rows
-- ty + 16 j (j = 0..3) as one vector each, and writes 4 elements of output
-- rows ty + 16 j, gathered from a column of the shared tile. The shared
-- layout is Swizzle(3, 2, 6) o (64, 64):(64, 1): groups of 4 columns stay
-- contiguous (vector writes), and the group index is XORed with bits 2..4 of
-- the row, so that the column reads of a warp spread over 16 banks.
local W, WT = 64, 16
local kw = cute.kernel("transpose64", function(a, b)
  local Mr, Nc = a.layout.shape[1], a.layout.shape[2]
  local smem_layout = cute.make_composed_layout(cute.Swizzle(3, 2, 6), 0, cute.make_layout({ W, W }, { W, 1 }))
  local s = cute.make_smem_tensor(a.dtype, smem_layout, 128)
  local tx, ty = cute.thread_idx().x, cute.thread_idx().y
  local bx, by = cute.block_idx().x, cute.block_idx().y
  local r0, c0 = by * W, bx * W
  local full = r0 + W <= Mr and c0 + W <= Nc
  local ta = cute.local_tile(a, { W, W }, { by, bx })
  local tb = cute.local_tile(b, { W, W }, { bx, by })
  if full then
    local frags = {}
    for j = 0, 3 do frags[j] = cute.local_tile(ta[{ ty + WT * j, cute._ }], { 4 }, { tx }):load() end
    for j = 0, 3 do cute.copy(frags[j], cute.local_tile(s[{ ty + WT * j, cute._ }], { 4 }, { tx })) end
    cute.sync_threads()
    for j = 0, 3 do
      local out = cute.make_rmem_tensor({ 4 }, a.dtype)
      for e = 0, 3 do out[e] = s[{ tx * 4 + e, ty + WT * j }] end
      cute.local_tile(tb[{ ty + WT * j, cute._ }], { 4 }, { tx }):store(out)
    end
  else
    for j = 0, 3 do
      for e = 0, 3 do
        local r, c = ty + WT * j, tx * 4 + e
        if r0 + r < Mr and c0 + c < Nc then s[{ r, c }] = ta[{ r, c }] end
      end
    end
    cute.sync_threads()
    for j = 0, 3 do
      for e = 0, 3 do
        local r, c = ty + WT * j, tx * 4 + e -- b's row r (a's column c0 + r), b's column c (a's row r0 + c)
        if c0 + r < Nc and r0 + c < Mr then tb[{ r, c }] = s[{ c, r }] end
      end
    end
  end
end, { trace_key = "cute.lib.transpose:transpose64", preprocess = true })
M.kernel = kw

--- b = a^T: a row-major M x N, b row-major N x M (same dtype); 64 x 64
-- tiles, 16-byte accesses (0.93 of the copy bandwidth on an H200, against
-- 0.84 for transpose32).
-- @param a a row-major device tensor (M x N)
-- @param b a row-major device tensor (N x M)
-- @usage cute.lib.transpose.transpose(a, b)
function M.transpose(a, b)
  local m, n = a.layout.shape[1], a.layout.shape[2]
  kw { grid = { math.ceil(n / W), math.ceil(m / W) }, block = { WT, WT } }(a, b)
end

--- b = a^T with 32 x 32 tiles and scalar accesses (the simple variant).
-- @param a a row-major device tensor (M x N)
-- @param b a row-major device tensor (N x M)
-- @usage cute.lib.transpose.transpose32(a, b)
function M.transpose32(a, b)
  local m, n = a.layout.shape[1], a.layout.shape[2]
  k { grid = { math.ceil(n / TILE), math.ceil(m / TILE) }, block = { TILE, ROWS } }(a, b)
end

M.TILE, M.ROWS = TILE, ROWS

return M
