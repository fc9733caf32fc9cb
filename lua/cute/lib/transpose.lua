--- cute.lib.transpose: out = in^T through swizzled shared memory.
--
--   cute.lib.transpose.transpose(a, b)     b (N x M) = a (M x N)^T, both row-major
--
-- A block moves a 32 x 32 tile: 32 x 8 threads read it row by row (each warp
-- one 128-byte row: coalesced) into shared memory, and write it out column by
-- column, which is again 128 contiguous bytes of b. The shared tile's layout
-- is composed with Swizzle(5, 0, 5): element (r, c) sits at r * 32 + (c xor r),
-- so neither the row-wise writes nor the column-wise reads of a warp hit one
-- bank twice (no padding needed). Edges are predicated.
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
  local full = cute.and_((r0 + TILE):le(Mr), (c0 + TILE):le(Nc))
  local ta = cute.local_tile(a, { TILE, TILE }, { by, bx })
  local tb = cute.local_tile(b, { TILE, TILE }, { bx, by })
  cute.if_(full, function()
    for j = 0, TILE - 1, ROWS do s[{ ty + j, tx }] = ta[{ ty + j, tx }] end
    cute.sync_threads()
    for j = 0, TILE - 1, ROWS do tb[{ ty + j, tx }] = s[{ tx, ty + j }] end
  end, function()
    for j = 0, TILE - 1, ROWS do
      cute.if_(cute.and_((r0 + ty + j):lt(Mr), (c0 + tx):lt(Nc)), function() s[{ ty + j, tx }] = ta[{ ty + j, tx }] end)
    end
    cute.sync_threads()
    for j = 0, TILE - 1, ROWS do
      cute.if_(cute.and_((c0 + ty + j):lt(Nc), (r0 + tx):lt(Mr)), function() tb[{ ty + j, tx }] = s[{ tx, ty + j }] end)
    end
  end)
end)
M.kernel = k

--- b = a^T: a row-major M x N, b row-major N x M (same dtype).
function M.transpose(a, b)
  local m, n = a.layout.shape[1], a.layout.shape[2]
  k { grid = { math.ceil(n / TILE), math.ceil(m / TILE) }, block = { TILE, ROWS } }(a, b)
end

M.TILE, M.ROWS = TILE, ROWS

return M
