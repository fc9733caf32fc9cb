--- cute.layout_algebra: the divides and products of CuTe's layout algebra,
-- and max_common_layout/vector, with CuTe's names and semantics (the
-- functions are also cute.<name>). They are built on composition and
-- complement, which are cute.layout's (as the methods of a Layout are), and
-- reachable here too. Tiling and partitioning built on them
-- (tile_to_shape, local_tile, local_partition, make_layout_tv) are
-- cute.layout_tile.
--
-- A "tiler" (second argument of the divides and products) is a Layout; an
-- integer n, meaning n:1; a tuple of tilers applied mode by mode; or _
-- (cute._), leaving a mode as it is.
--
-- Structure is decided by static values only: where a decision needs a
-- dynamic leaf (a divisibility check, the order of strides) the operation
-- raises, naming what must be static. Dynamic values flow through where
-- they only scale or extend (A's strides, the last extent of A), through
-- cute.arith.
--
-- Every function here takes the name of the user's operation (`op`) so that
-- an error inside, say, the composition of a logical_divide, says
-- "logical_divide: ...".
local arith = require "cute.arith"
local it = require "cute.int_tuple"
local L = require "cute.layout"
local err = require "cute._err"

local iti, Li = it.internal, L.internal
local is_tuple, tup, show, product, modes_of = it.is_tuple, iti.tup, iti.show, iti.product, iti.modes_of
local new, is_layout, is_composed, check_layout = Li.new, L.is_layout, L.is_composed_layout, Li.check_layout
local cached, compose_layouts = Li.cached, Li.compose_layouts
local complement, right_inverse = Li.complement, Li.right_inverse
local tiler_layout, bad_tiler, check_tiler = Li.tiler_layout, Li.bad_tiler, Li.check_tiler
local require_static = Li.require_static
local U, UNIT = it._, Li.UNIT
local raise = err.raise
local mul = arith.mul

local M = {}

-- composition, complement and the inverses, where they were before they moved to cute.layout
M.composition, M.complement, M.right_inverse, M.left_inverse = L.composition, L.complement, L.right_inverse,
  L.left_inverse

-- the Layout of a by-mode sub-result list
local function from_modes(ss, ds) return new(tup(ss), tup(ds)) end

local function rewrap(c, outer) -- a ComposedLayout with a new outer layout
  return L.make_composed_layout(c.inner, c.offset, outer)
end

-- Max common layout ---------------------------------------------------------

-- coalesce(A o right_inverse(B)), or nil where that composition is not
-- defined (C++ CuTe rejects such operands at compile time)
local function common_of(a, b, op)
  local inv_b = right_inverse(b, op)
  local ok, c = pcall(compose_layouts, a, inv_b, op)
  if not ok then return nil, inv_b end
  c = L.coalesce(c)
  local s0 = is_tuple(c.shape) and c.shape[1] or c.shape
  local d0 = is_tuple(c.stride) and c.stride[1] or c.stride
  return (d0 == 1 and type(s0) == "number") and s0 or 1, inv_b
end

--- max_common_layout(A, B): the layout C of the largest contiguous vector
-- A and B share: A(C(i)) == B(C(i)) == i for every i < size(C). Where
-- A o right_inverse(B) is not defined, the safe answer 1:0.
-- @tparam Layout a a layout
-- @tparam Layout b a layout
-- @treturn Layout
-- @usage cute.max_common_layout(cute.make_layout({4, 8}), cute.make_layout({4, 8}))  -- 32:1
function M.max_common_layout(a, b)
  local op = "max_common_layout"
  check_layout(op, a, "A")
  check_layout(op, b, "B")
  require_static(a, op)
  local n, inv_b = common_of(a, b, op)
  if n == nil or n == 1 then return UNIT end
  return compose_layouts(inv_b, new(n, 1), op)
end

--- max_common_vector(A, B): the number of elements of that vector (size of
-- max_common_layout), 1 where nothing more is shared.
-- @tparam Layout a a layout
-- @tparam Layout b a layout
-- @return an integer
-- @usage cute.max_common_vector(cute.make_layout({4, 8}), cute.make_layout({4, 8}, {8, 1}))  -- 1
function M.max_common_vector(a, b)
  local op = "max_common_vector"
  check_layout(op, a, "A")
  check_layout(op, b, "B")
  require_static(a, op)
  return common_of(a, b, op) or 1
end

-- Divides ---------------------------------------------------------------------

local function by_mode(a, t, op, f)
  local ms, md = modes_of(a.shape), modes_of(a.stride)
  if #t > #ms then raise("%s: tiler %s has more modes than the layout %s", op, show(t), tostring(a)) end
  local ss, ds = {}, {}
  for i = 1, #ms do
    if i <= #t then
      local m = f(new(ms[i], md[i]), t[i], op)
      ss[i], ds[i] = m.shape, m.stride
    else
      ss[i], ds[i] = ms[i], md[i]
    end
  end
  return from_modes(ss, ds)
end

local function divide(a, t, op)
  if t == U then return a end
  local b = is_layout(t) and t or tiler_layout(t, op)
  if b then
    local c = complement(b, product(a.shape), op)
    return compose_layouts(a, new(tup { b.shape, c.shape }, tup { b.stride, c.stride }), op)
  end
  if is_tuple(t) then return by_mode(a, t, op, divide) end
  bad_tiler(op, t)
end

-- Splits the result of a by-mode divide or product into (tiles, rests):
-- mode k of `l` is (tile_k, rest_k) where tiler[k] is a layout or integer; a
-- nested tiler recurses; a mode whose tiler is _ is all tile; modes beyond
-- the tiler are rests.
local function unzip(l, t)
  if t == U then return l, nil end
  if not is_tuple(t) then
    return new(iti.mode(l.shape, 0), iti.mode(l.stride, 0)), new(iti.mode(l.shape, 1), iti.mode(l.stride, 1))
  end
  local ms, md = modes_of(l.shape), modes_of(l.stride)
  local ts, td, rs, rd = {}, {}, {}, {}
  for i = 1, #ms do
    if i <= #t then
      local tile, rest = unzip(new(ms[i], md[i]), t[i])
      ts[#ts + 1], td[#td + 1] = tile.shape, tile.stride
      if rest then rs[#rs + 1], rd[#rd + 1] = rest.shape, rest.stride end
    else
      rs[#rs + 1], rd[#rd + 1] = ms[i], md[i]
    end
  end
  local rest = nil
  if #rs > 0 then rest = from_modes(rs, rd) end
  return from_modes(ts, td), rest
end

local function zipped(l, t, op)
  if t == U then
    -- as C++ CuTe: dividing by _ leaves A as it is, and A is taken as its
    -- own (tile, rest) pair
    local r = iti.rank(l.shape)
    if r ~= 2 then
      raise("%s: with the tiler _ the layout %s stands for its own (tile, rest) pair, so it must have rank 2, "
        .. "not %d (a tuple tiler such as {_} keeps a mode whole)", op, tostring(l), r)
    end
    return l
  end
  if not is_tuple(t) then return l end -- already (tile, rest)
  local tile, rest = unzip(l, t)
  if not rest then rest = UNIT end
  return new(tup { tile.shape, rest.shape }, tup { tile.stride, rest.stride })
end

local function tiled(z) -- (tile, rest) -> (tile, rest modes...)
  local ss, ds = { iti.mode(z.shape, 0) }, { iti.mode(z.stride, 0) }
  local rs, rd = modes_of(z.shape[2]), modes_of(z.stride[2])
  for i = 1, #rs do ss[#ss + 1], ds[#ds + 1] = rs[i], rd[i] end
  return from_modes(ss, ds)
end

local function flat(z) -- (tile, rest) -> (tile modes..., rest modes...)
  local ss, ds = modes_of(z.shape[1]), modes_of(z.stride[1])
  local rs, rd = modes_of(z.shape[2]), modes_of(z.stride[2])
  for i = 1, #rs do ss[#ss + 1], ds[#ds + 1] = rs[i], rd[i] end
  return from_modes(ss, ds)
end

local function as_is(z) return z end

-- name(A, tiler) for the divide/product `core`; `post` reshapes the zipped
-- (tile, rest) form (nil: keep the logical form)
local function family(name, core, post)
  local function impl(a, t)
    local r = core(a, t, name)
    if post then r = post(zipped(r, t, name)) end
    return r
  end
  return function(a, t)
    if is_composed(a) then return rewrap(a, M[name](a.outer, t)) end
    check_layout(name, a, "the layout")
    check_tiler(name, t)
    return cached(name, impl, a, t)
  end
end

--- logical_divide(A, B) = composition(A, (B, complement(B, size(A)))):
-- mode 0 is the tile B selects, mode 1 the tiles' arrangement. By mode for
-- a tuple tiler (modes beyond it kept).
M.logical_divide = family("logical_divide", divide)
--- zipped_divide: ((tile modes...), (rest modes..., other modes)).
M.zipped_divide = family("zipped_divide", divide, as_is)
--- tiled_divide: ((tile modes...), rest modes..., other modes).
M.tiled_divide = family("tiled_divide", divide, tiled)
--- flat_divide: (tile modes..., rest modes..., other modes).
M.flat_divide = family("flat_divide", divide, flat)

-- Products --------------------------------------------------------------------

local function lproduct(a, t, op)
  if t == U then return a end
  local b = is_layout(t) and t or tiler_layout(t, op)
  if b then
    local cot = mul(product(a.shape), L.cosize(b))
    local p = compose_layouts(complement(a, cot, op), b, op)
    return new(tup { a.shape, p.shape }, tup { a.stride, p.stride })
  end
  if is_tuple(t) then return by_mode(a, t, op, lproduct) end
  bad_tiler(op, t)
end

--- logical_product(A, B) = (A, composition(complement(A, size(A)*cosize(B)), B)):
-- A repeated in the arrangement B. By mode for a tuple tiler.
-- @function logical_product
-- @param a a Layout (or ComposedLayout)
-- @param t the layout B (or a tiler)
-- @return a Layout
-- @usage cute.logical_product(cute.make_layout(2), cute.make_layout(3))  -- (2,3):(1,2)
M.logical_product = family("logical_product", lproduct)
--- zipped_product: ((A modes...), (product modes..., other modes)).
-- @function zipped_product
-- @param a a Layout (or ComposedLayout)
-- @param t the layout B (or a tiler)
-- @return a Layout
-- @usage cute.zipped_product(cute.make_layout({2, 2}), cute.make_layout({3, 4}))
M.zipped_product = family("zipped_product", lproduct, as_is)
--- tiled_product: ((A modes...), product modes..., other modes).
-- @function tiled_product
-- @param a a Layout (or ComposedLayout)
-- @param t the layout B (or a tiler)
-- @return a Layout
-- @usage cute.tiled_product(cute.make_layout({2, 2}), cute.make_layout({3, 4}))
M.tiled_product = family("tiled_product", lproduct, tiled)
--- flat_product: (A modes..., product modes..., other modes).
-- @function flat_product
-- @param a a Layout (or ComposedLayout)
-- @param t the layout B (or a tiler)
-- @return a Layout
-- @usage cute.flat_product(cute.make_layout({2, 2}), cute.make_layout({3, 4}))
M.flat_product = family("flat_product", lproduct, flat)

local function pad(l, r)
  if iti.rank(l.shape) == r and is_tuple(l.shape) then return l end
  return new(it.append(l.shape, 1, r), it.append(l.stride, 0, r))
end

local function block_rake(a, b, op, raked)
  if is_composed(a) then return rewrap(a, block_rake(a.outer, b, op, raked)) end
  check_layout(op, a, "the block")
  check_layout(op, b, "the tiler")
  local r = math.max(iti.rank(a.shape), iti.rank(b.shape))
  local a2, b2 = pad(a, r), pad(b, r)
  local p = lproduct(a2, b2, op) -- (A', B'') with B'' of rank r
  local ss, ds = {}, {}
  for k = 1, r do
    local as, ad = a2.shape[k], a2.stride[k]
    local ps, pd = p.shape[2][k], p.stride[2][k]
    if raked then
      ss[k], ds[k] = tup { ps, as }, tup { pd, ad }
    else
      ss[k], ds[k] = tup { as, ps }, tup { ad, pd }
    end
  end
  return from_modes(ss, ds)
end

--- blocked_product(A, B): mode k is (A_k, P_k): A's block repeated as B
-- arranges it, blocks contiguous in each mode.
local function blocked(a, b) return block_rake(a, b, "blocked_product", false) end
local function raked(a, b) return block_rake(a, b, "raked_product", true) end

--- blocked_product(A, B): mode k is (A_k, P_k): A's block repeated as B arranges it (CuTe's blocked_product).
-- @param a a Layout (or ComposedLayout): the block
-- @tparam Layout b the arrangement of the blocks
-- @treturn Layout
-- @usage cute.blocked_product(cute.make_layout({2, 2}), cute.make_layout({3, 4}))  -- ((2,3),(2,4)):((1,4),(2,12))
function M.blocked_product(a, b)
  if is_composed(a) then return rewrap(a, M.blocked_product(a.outer, b)) end
  return cached("blocked_product", blocked, a, b)
end
--- raked_product(A, B): mode k is (P_k, A_k): the blocks interleaved.
-- @param a a Layout (or ComposedLayout): the block
-- @tparam Layout b the arrangement of the blocks
-- @treturn Layout
-- @usage cute.raked_product(cute.make_layout({2, 2}), cute.make_layout({3, 4}))
function M.raked_product(a, b)
  if is_composed(a) then return rewrap(a, M.raked_product(a.outer, b)) end
  return cached("raked_product", raked, a, b)
end

-- For cute.layout_tile -----------------------------------------------------------

--- What cute.layout_tile builds on (as cute.layout's `internal`: no argument
-- checks; not for users).
M.internal = {
  divide = divide, -- divide(A, tiler, op): logical_divide
  zipped = zipped, -- zipped(R, tiler, op): a by-mode result R regrouped as (tile, rest)
  block_rake = block_rake, -- block_rake(A, B, op, raked): blocked_product (raked: raked_product)
  pad = pad, -- pad(L, r): L with modes 1:0 appended up to rank r
}

return M
