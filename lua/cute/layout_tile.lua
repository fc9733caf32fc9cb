--- cute.layout_tile: tiling and partitioning with layouts: tile_to_shape,
-- local_tile, local_partition and make_layout_tv (thread-value layouts).
--
-- These are compositions of the algebra in cute.layout and
-- cute.layout_algebra (divides, products, inverses) that a kernel uses to
-- give each CTA its tile and each thread its elements. On a ComposedLayout (a swizzled shared-memory
-- layout) they work on the outer layout and keep the swizzle, with any
-- offset kept inside it. Results on static operands are cached as the
-- algebra's are. Mode indices are 0-based; cute.X (= cute._) in a
-- projection skips a mode, 1 keeps it, as C++ Step<_1,X,_1>.
local it = require "cute.int_tuple"
local L = require "cute.layout"
local A = require "cute.layout_algebra"
local err = require "cute._err"

local iti, Li, Ai = it.internal, L.internal, A.internal
local is_tuple, tup, show, product, rank_of = it.is_tuple, iti.tup, iti.show, iti.product, iti.rank
local new, is_composed, check_layout = Li.new, L.is_composed_layout, Li.check_layout
local U = it._
local raise = err.raise
local cached, right_inverse, compose_layouts = Li.cached, Li.right_inverse, Li.compose_layouts
local static_int = Li.static_int
local divide, zipped, block_rake, pad = Ai.divide, Ai.zipped, Ai.block_rake, Ai.pad

local M = {}

local function rewrap(c, outer) return L.make_composed_layout(c.inner, c.offset, outer) end

local tile_to_shape -- (below)

--- tile_to_shape(block, shape[, order]): the block repeated (blocked_product)
-- to cover `shape`, the repetitions ordered by `order` (default
-- column-major); each mode of shape must be a multiple of the block's.
-- @tparam Layout block the block
-- @param shape the shape to cover
-- @param order optional: the order of the repetitions (default column-major)
-- @treturn Layout
-- @usage cute.tile_to_shape(cute.make_layout({8, 8}, {8, 1}), {64, 32})
function M.tile_to_shape(block, shape, order)
  local op = "tile_to_shape"
  if is_composed(block) then return rewrap(block, M.tile_to_shape(block.outer, shape, order)) end
  check_layout(op, block, "the block")
  iti.check(op, shape, "shape", "target shape")
  return cached(op, tile_to_shape, block, shape, order)
end

tile_to_shape = function(block, shape, order)
  local op = "tile_to_shape"
  local R = rank_of(shape)
  if rank_of(block.shape) > R then
    raise("%s: the block %s has more modes than the target shape %s", op, tostring(block), show(shape))
  end
  local padded = pad(block, R)
  local bshape, tshape = iti.product_each(padded.shape), iti.product_each(is_tuple(shape) and shape or tup { shape })
  local reps = {}
  for k = 1, R do
    local b, t = bshape[k], tshape[k]
    if type(b) ~= "number" then static_int(b, op, "the block's extent %s", show(b)) end
    if type(t) ~= "number" then static_int(t, op, "the target extent %s", show(t)) end
    if t % b ~= 0 then
      raise("%s: the block shape %s does not divide the target shape %s", op, show(bshape), show(shape))
    end
    reps[k] = t / b
  end
  reps = tup(reps)
  local arrangement = L.make_ordered_layout(reps, order)
  local bp = block_rake(padded, arrangement, op, false)
  return L.coalesce(bp, reps)
end

-- Partitioning ------------------------------------------------------------------

local function underscores(n)
  if n == 1 then return U end
  local r = {}
  for i = 1, n do r[i] = U end
  return r
end

local function zd_tile(l, tiler) return zipped(divide(l, tiler, "local_tile"), tiler, "local_tile") end
local function zd_part(l, tiler) return zipped(divide(l, tiler, "local_partition"), tiler, "local_partition") end

local function zipped_divide_any(l, tiler, op)
  if is_composed(l) then return rewrap(l, zipped_divide_any(l.outer, tiler, op)) end
  check_layout(op, l, "the layout")
  Li.check_tiler(op, tiler)
  return cached(op, op == "local_tile" and zd_tile or zd_part, l, tiler)
end

--- local_tile(L, tiler, coord[, proj]): the tile of L at coord (the tile
-- coordinate; _ in coord keeps that rest mode), and its offset. proj
-- (1 = keep, cute.X = skip) selects the modes of tiler and coord to use.
function M.local_tile(l, tiler, coord, proj)
  local op = "local_tile"
  if proj ~= nil then
    tiler = L.dice(proj, tiler)
    coord = L.dice(proj, coord)
  end
  local z = zipped_divide_any(l, tiler, op)
  local outer = is_composed(z) and z.outer or z
  local r0 = rank_of(outer.shape[1])
  return L.slice_and_offset(tup { underscores(r0), coord }, z, op)
end

--- local_partition(L, tile, index[, proj]): the elements of L that thread
-- `index` of the thread layout `tile` owns (its coordinate in every tile),
-- and the offset of its first one. proj as in local_tile, applied to tile.
function M.local_partition(l, tile, index, proj)
  local op = "local_partition"
  if proj ~= nil then tile = L.dice(proj, tile) end
  check_layout(op, tile, "the thread layout")
  local n = product(tile.shape)
  if type(index) == "number" and type(n) == "number" and (index < 0 or index >= n or index ~= math.floor(index)) then
    raise("%s: index %s is out of range for the thread layout %s (size %s)", op, show(index), tostring(tile), show(n))
  end
  local coord = tile:get_flat_coord(index)
  local tiler = iti.product_each(tile.shape)
  local z = zipped_divide_any(l, tiler, op)
  local outer = is_composed(z) and z.outer or z
  local r1 = rank_of(outer.shape[2])
  return L.slice_and_offset(tup { coord, underscores(r1) }, z, op)
end

local make_layout_tv -- (below)

--- make_layout_tv(thr_layout, val_layout): (tiler_mn, layout_tv) as CuTe
-- DSL's: the MN tile that thr_layout threads each holding a val_layout block
-- cover (raked_product), and the layout mapping (thread, value) to the
-- column-major index of its element in that tile.
-- @tparam Layout thr the threads' layout
-- @tparam Layout val each thread's block of values
-- @return the tile's shape (tiler_mn) and the (thread, value) layout
-- @usage local tiler, tv = cute.make_layout_tv(cute.make_layout({4, 8}), cute.make_layout({2, 1}))
function M.make_layout_tv(thr, val)
  local op = "make_layout_tv"
  check_layout(op, thr, "thr_layout")
  check_layout(op, val, "val_layout")
  return cached(op, make_layout_tv, thr, val)
end

make_layout_tv = function(thr, val)
  local op = "make_layout_tv"
  local mn = block_rake(thr, val, op, true)
  local tiler = iti.product_each(mn.shape)
  local inv = right_inverse(mn, op)
  local nt, nv = product(thr.shape), product(val.shape)
  if product(inv.shape) ~= nt * nv then
    raise("%s: raked_product(%s, %s) = %s is not a bijection onto [0, %s)", op, tostring(thr), tostring(val),
      tostring(mn), show(nt * nv))
  end
  local tv = compose_layouts(inv, new(tup { nt, nv }, tup { 1, nt }), op)
  return tiler, tv
end

return M
