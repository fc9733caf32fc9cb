--- cute.layout: CuTe's Layout (shape:stride) and ComposedLayout types: their
-- construction, queries, mode access, coalesce/filter, slicing, and the
-- operations their methods are: composition, complement and the inverses.
--
-- A Layout maps a coordinate to an offset: L(c) = sum of c_leaf * d_leaf over
-- the leaves of its shape, with an integer coordinate split column-major
-- (cute.int_tuple.crd2idx). Invariants: shape and stride are congruent
-- IntTuples, every static extent is >= 1, and a Layout is never modified
-- once built (results share sub-tables freely). The divides and products,
-- built on composition and complement, are cute.layout_algebra; tiling and
-- partitioning, cute.layout_tile. This module requires neither: the layout
-- modules import one way (int_tuple -> layout -> layout_algebra ->
-- layout_tile), and every method of the two types is defined here.
--
-- A ComposedLayout is inner(offset + outer(c)) with `outer` a Layout and
-- `inner` any function of an offset (a Swizzle, or a Layout): CuTe's
-- swizzled shared-memory layouts.
--
-- Functions that take "a layout or a tuple" (size, rank, get, ...) accept
-- both, as CuTe's do. Mode indices are 0-based.
local arith = require "cute.arith"
local it = require "cute.int_tuple"
local swizzle = require "cute.swizzle"
local err = require "cute._err"

local iti = it.internal
local is_tuple, tup, show, product = it.is_tuple, iti.tup, iti.show, iti.product
local flatten_into, modes_of, copy, check_tuple, guard = iti.flatten_into, iti.modes_of, iti.copy, iti.check, iti.guard
local crd2idx_op, idx2crd_op, prefix_product = iti.crd2idx, iti.idx2crd, iti.prefix_product
local mode, congruent = iti.mode, iti.congruent
local U = it._
local raise = err.raise
local type, getmetatable, setmetatable, floor = type, getmetatable, setmetatable, math.floor
local add, mul = arith.add, arith.mul

local M = {}

local Layout = { __name = "Layout" }
local methods = {}
Layout.__index = methods

local Composed = { __name = "ComposedLayout" }
local composed_methods = {}
Composed.__index = composed_methods

local function new(shape, stride) return setmetatable({ shape = shape, stride = stride }, Layout) end

--- is_layout(x): x is a Layout (shape:stride).
-- @param x any value
-- @treturn bool
-- @usage assert(cute.is_layout(cute.make_layout(4)))
local function is_layout(x) return getmetatable(x) == Layout end
--- is_composed_layout(x): x is a ComposedLayout (inner o offset o outer).
-- @param x any value
-- @treturn bool
-- @usage cute.is_composed_layout(cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, L))
local function is_composed(x) return getmetatable(x) == Composed end
M.is_layout = is_layout
--- is_composed_layout(x): x is a ComposedLayout (inner o offset o outer).
M.is_composed_layout = is_composed
local function is_any_layout(x)
  local mt = getmetatable(x)
  return mt == Layout or mt == Composed
end

Layout.__tostring = function(l) return show(l.shape) .. ":" .. show(l.stride) end
Layout.__eq = function(a, b) return iti.equal(a.shape, b.shape) and iti.equal(a.stride, b.stride) end

--- Raises unless x is a Layout (or, with allow_composed, a ComposedLayout).
local function check_layout(op, x, what, allow_composed)
  local mt = getmetatable(x)
  if mt == Layout or (allow_composed and mt == Composed) then return x end
  raise("%s: %s must be a layout, got %s", op, what or "argument", type(x) == "table" and show(x) or type(x))
end

-- Evaluation -----------------------------------------------------------------
-- Integer coordinates on a static layout take a fast path over the flattened
-- leaves, cached on first use (`_fs`, `_fd`, `_n`, `_bound`); `_fast` is
-- false for layouts with dynamic leaves or ScaledBasis strides.

local function prepare(l)
  local fs = flatten_into(l.shape, {})
  local fd = flatten_into(l.stride, {})
  local fast, bound = true, 0
  for i = 1, #fs do
    if type(fs[i]) ~= "number" or type(fd[i]) ~= "number" then fast = false end
  end
  if fast then
    for i = 1, #fs - 1 do bound = bound + (fs[i] - 1) * math.abs(fd[i]) end
    if bound >= arith.LIMIT then fast = false end
  end
  l._fs, l._fd, l._n, l._bound, l._fast = fs, fd, #fs, bound, fast
  local basis = false
  for i = 1, #fd do
    if arith.is_basis(fd[i]) then basis = true end
  end
  l._basis = basis and fd -- the strides give a coordinate result its shape
  return fast
end

local opname = iti.opname

local slice_and_offset

local function eval(l, c, op)
  local fast = rawget(l, "_fast")
  if fast == nil then fast = prepare(l) end
  if fast and type(c) == "number" then
    if c < 0 or c ~= floor(c) or c >= arith.LIMIT then
      raise("%s: coordinate %s is not a non-negative integer below 2^53", opname(op), show(c))
    end
    local fs, fd, n = l._fs, l._fd, l._n
    local acc = 0
    for k = 1, n - 1 do
      local s = fs[k]
      local q = floor(c / s)
      acc = acc + (c - q * s) * fd[k]
      c = q
    end
    local last = c * fd[n]
    if last >= arith.LIMIT - l._bound or last <= l._bound - arith.LIMIT then
      raise("%s: integer overflow: the offset of coordinate %s exceeds 2^53", opname(op), show(c))
    end
    return acc + last
  end
  local r = crd2idx_op(c, l.shape, l.stride, op, false)
  if l._basis then r = copy(arith.basis_result(r, l._basis)) end
  return r
end

--- L(c), L(i, j, ...): the offset of a coordinate (an integer, a
-- hierarchical or partial coordinate); with _ in it, the slice (a layout).
Layout.__call = function(self, ...)
  local c = ...
  if select("#", ...) > 1 then c = { ... } end
  if type(c) ~= "number" and it.has_underscore(c) then return (slice_and_offset(c, self, "slice")) end
  return eval(self, c, self)
end

-- Construction --------------------------------------------------------------

--- Markers for make_layout's second argument: column-major (the default)
-- and row-major compact strides.
M.LayoutLeft = setmetatable({}, { __name = "LayoutLeft", __tostring = function() return "LayoutLeft" end })
M.LayoutRight = setmetatable({}, { __name = "LayoutRight", __tostring = function() return "LayoutRight" end })

--- make_layout(shape[, stride]): stride a congruent tuple, LayoutLeft
-- (compact column-major, the default) or LayoutRight (compact row-major).
-- make_layout(L1, L2, ...): the layout whose k-th mode is Lk.
-- @param shape an integer or nested tuple of integers (or a Layout: the first mode of make_layout(L1, L2, ...))
-- @param stride a tuple congruent with shape, LayoutLeft or LayoutRight (default LayoutLeft)
-- @param ... further layouts (the form make_layout(L1, L2, ...))
-- @treturn Layout
-- @usage local L = cute.make_layout({4, 8}, {8, 1})  -- (4,8):(8,1)
function M.make_layout(shape, stride, ...)
  if is_layout(shape) then
    local ls = { shape, stride, ... }
    local n = select("#", ...) + (stride == nil and 1 or 2)
    local ss, ds = {}, {}
    for i = 1, n do
      check_layout("make_layout", ls[i], "argument " .. i)
      ss[i], ds[i] = ls[i].shape, ls[i].stride
    end
    return new(tup(ss), tup(ds))
  end
  check_tuple("make_layout", shape, "shape", "shape")
  shape = copy(shape)
  if stride == nil or stride == M.LayoutLeft then
    return new(shape, prefix_product(shape, 1))
  elseif stride == M.LayoutRight then
    return new(shape, iti.suffix_product(shape, 1))
  end
  check_tuple("make_layout", stride, "stride", "stride")
  if not congruent(shape, stride) then
    raise("make_layout: shape %s and stride %s are not congruent", show(shape), show(stride))
  end
  return new(shape, copy(stride))
end

--- A layout with compact strides visiting the modes in increasing `order`
-- (congruent with shape); no order: column-major.
-- @param shape an integer or nested tuple
-- @param order a tuple congruent with shape: the rank of each mode in stride order (default column-major)
-- @treturn Layout
-- @usage cute.make_ordered_layout({4, 8, 2}, {1, 0, 2})  -- (4,8,2):(8,1,32)
function M.make_ordered_layout(shape, order)
  check_tuple("make_ordered_layout", shape, "shape", "shape")
  if order == nil then return new(copy(shape), prefix_product(shape, 1)) end
  check_tuple("make_ordered_layout", order, "int", "order")
  if not congruent(shape, order) then
    raise("make_ordered_layout: shape %s and order %s are not congruent", show(shape), show(order))
  end
  return new(copy(shape), iti.compact_order(shape, order, "make_ordered_layout"))
end

-- the ScaledBasis strides of an identity layout: leaf k of a nested mode m
-- gets the unit 1@k@m of the coordinate it stands for
local function basis_like(s, path)
  if is_tuple(s) then
    local r = {}
    for i = 1, #s do
      local p = { unpack(path) }
      p[#p + 1] = i - 1
      r[i] = basis_like(s[i], p)
    end
    return tup(r)
  end
  return arith.E(path, 1)
end

--- The layout mapping each coordinate of `shape` to itself: strides are
-- ScaledBases (1@0, 1@1, ...), so L(i) is the natural coordinate of i.
-- @param shape an integer or nested tuple
-- @treturn Layout
-- @usage cute.make_identity_layout({4, 8})(5)  -- (1,1)
function M.make_identity_layout(shape)
  check_tuple("make_identity_layout", shape, "shape", "shape")
  shape = copy(shape)
  if not is_tuple(shape) then return new(shape, 1) end
  return new(shape, basis_like(shape, {}))
end
--- make_basis_like(shape): the ScaledBasis strides of make_identity_layout(shape).
-- @param shape an integer or nested tuple
-- @return a tuple of ScaledBasis, congruent with shape
-- @usage cute.make_basis_like({4, 8})  -- (1@0,1@1)
function M.make_basis_like(shape)
  check_tuple("make_basis_like", shape, "shape", "shape")
  if not is_tuple(shape) then return 1 end
  return basis_like(shape, {})
end

-- Queries -------------------------------------------------------------------

local function sub_layout(l, op, ...) -- the layout at a 0-based mode path
  local s, d = l.shape, l.stride
  for k = 1, select("#", ...) do
    local i = select(k, ...)
    s, d = mode(s, i, op), mode(d, i, op)
  end
  return s, d
end

-- the layout or tuple a query is about: a ComposedLayout answers with its
-- outer layout; anything that is not a layout or an IntTuple is an error
local function target(x, op)
  local mt = getmetatable(x)
  if mt == Composed then return x.outer end
  if mt == Layout or is_tuple(x) or arith.is_int(x) then return x end
  raise("%s: expected a layout or an IntTuple, got %s", op, x == nil and "nil" or show(x))
end

--- size(x, i, ...): the number of coordinates of a layout or tuple (of mode i, ...).
function M.size(x, ...)
  x = target(x, "size")
  if is_layout(x) then return product((sub_layout(x, "size", ...))) end
  return it.size(x, ...)
end

function M.rank(x, ...)
  x = target(x, "rank")
  if is_layout(x) then return iti.rank((sub_layout(x, "rank", ...))) end
  return it.rank(x, ...)
end

function M.depth(x, ...)
  x = target(x, "depth")
  if is_layout(x) then return iti.depth((sub_layout(x, "depth", ...))) end
  return it.depth(x, ...)
end

--- shape(x, i, ...): the shape of a layout (of mode i, ...); a tuple is its own shape.
function M.shape(x, ...)
  x = target(x, "shape")
  if is_layout(x) then return (sub_layout(x, "shape", ...)) end
  return it.get(x, ...)
end

function M.stride(x, ...)
  check_layout("stride", x)
  local _, d = sub_layout(x, "stride", ...)
  return d
end

--- get(x, i, ...): the sub-layout (or tuple element) at a 0-based mode path.
-- @param x a Layout or tuple
-- @param ... the 0-based mode indices of the path
-- @return a Layout (or tuple element)
-- @usage cute.get(cute.make_layout({4, {2, 3}}), 1, 0)  -- 2:4
function M.get(x, ...)
  if is_layout(x) then return new(sub_layout(x, "get", ...)) end
  if is_composed(x) then raise("get: mode access on a ComposedLayout (%s) is not supported", tostring(x)) end
  return it.get(x, ...)
end

--- cosize(L): L(size(L) - 1) + 1, the extent of the codomain.
function M.cosize(x, ...)
  check_layout("cosize", x)
  if select("#", ...) > 0 then x = new(sub_layout(x, "cosize", ...)) end
  local n = product(x.shape)
  local last = crd2idx_op(arith.sub(n, 1), x.shape, x.stride, "cosize", false)
  if arith.is_basis(last) or (type(last) == "table" and not arith.dyn(last)) then
    raise("cosize: %s has ScaledBasis strides (its codomain is a coordinate)", tostring(x))
  end
  return add(last, 1)
end

--- is_static(x): every extent and stride of a layout (or every element of a tuple) is a Lua number.
-- @param x a Layout or tuple
-- @treturn bool
-- @usage cute.is_static(cute.make_layout({4, 8}))  -- true
function M.is_static(x)
  if is_layout(x) then return iti.is_static(x.shape) and iti.is_static(x.stride) end
  return it.is_static(x)
end

-- Restructuring (each works on a layout by treating shape and stride alike,
-- and on a tuple as int_tuple does) --------------------------------------------

local function has_empty(t)
  if not is_tuple(t) then return false end
  if #t == 0 then return true end
  for i = 1, #t do
    if has_empty(t[i]) then return true end
  end
  return false
end

-- (IntTuples may hold empty tuples, as in CuTe; a layout's modes may not)
local function both(op, f, x, ...)
  if is_layout(x) then
    local s = f(x.shape, ...)
    if has_empty(s) then raise("%s: the result would have an empty mode (%s)", op, show(s)) end
    return new(s, f(x.stride, ...))
  end
  return f(x, ...)
end

--- flatten(L): the layout (or tuple) with its nested modes made top-level.
-- @param x a Layout or tuple
-- @return a Layout or tuple of rank the number of leaves
-- @usage cute.flatten(cute.make_layout({4, {2, 3}}))  -- (4,2,3):(1,4,8)
function M.flatten(x) return both("flatten", it.flatten, x) end
--- take(L, b, e): the modes b .. e-1 (0-based) of a layout or tuple.
-- @param x a Layout or tuple
-- @param b the first mode (0-based)
-- @param e one past the last mode
-- @return a Layout or tuple
-- @usage cute.take(cute.make_layout({4, 8, 2}), 1, 3)  -- (8,2):(4,32)
function M.take(x, b, e) return both("take", it.take, x, b, e) end
--- select(L, idx): the modes of a layout or tuple listed in idx, in that order.
-- @param x a Layout or tuple
-- @param idx a list of 0-based mode indices
-- @return a Layout or tuple
-- @usage cute.select(cute.make_layout({4, 8, 2}), {2, 0})  -- (2,4):(32,1)
function M.select(x, idx) return both("select", it.select, x, idx) end
--- group_modes(L, b, e): the modes b .. e-1 (0-based) gathered into one mode.
-- @param x a Layout or tuple
-- @param b the first mode (0-based)
-- @param e one past the last mode
-- @return a Layout or tuple
-- @usage cute.group_modes(cute.make_layout({4, 8, 2}), 0, 2)  -- ((4,8),2):((1,4),32)
function M.group_modes(x, b, e) return both("group_modes", it.group_modes, x, b, e) end

local UNIT = nil -- the layout 1:0, built below

local function cat(op, f, x, y, n)
  if not is_layout(x) then return f(x, y, n) end
  if y == nil then y = UNIT end
  check_layout(op, y, "the mode to add")
  return new(f(x.shape, y.shape, n), f(x.stride, y.stride, n))
end
--- append(L, M[, n]): L with the mode M added last (with n: repeated up to rank n; M defaults to 1:0).
-- @param x a Layout or tuple
-- @param y the mode to add (a Layout or tuple element)
-- @param n optional: the rank to pad up to
-- @return a Layout or tuple
-- @usage cute.append(cute.make_layout(4), cute.make_layout(8, 4))  -- (4,8):(1,4)
function M.append(x, y, n) return cat("append", it.append, x, y, n) end
--- prepend(L, M[, n]): L with the mode M added first (with n: repeated up to rank n; M defaults to 1:0).
-- @param x a Layout or tuple
-- @param y the mode to add (a Layout or tuple element)
-- @param n optional: the rank to pad up to
-- @return a Layout or tuple
-- @usage cute.prepend(cute.make_layout(4), cute.make_layout(8, 4))  -- (8,4):(4,1)
function M.prepend(x, y, n) return cat("prepend", it.prepend, x, y, n) end

--- dice(proj, x): the modes of x where proj is not _ (cute.X).
-- @param proj a tuple of integers and cute._ (cute.X), congruent with x
-- @param x a Layout or tuple
-- @return a Layout or tuple
-- @usage cute.dice({1, cute._}, cute.make_layout({4, 8}))  -- (4):(1)
function M.dice(proj, x) return both("dice", function(t) return it.dice(proj, t) end, x) end

-- Coalesce and filter ---------------------------------------------------------

-- s * d == target, when decidable without emitting code
local function product_is(s, d, t)
  if type(s) ~= "number" then return false end
  if type(d) == "number" then return type(t) == "number" and s * d == t end
  if arith.is_basis(d) and arith.is_basis(t) then return arith.equal(mul(d, s), t) == true end
  return false
end

-- the flat coalesced modes of (shape, stride): size-1 modes dropped, and
-- neighbours merged where the first one ends where the second starts
local function coalesce_modes(shape, stride)
  local fs, fd = flatten_into(shape, {}), flatten_into(stride, {})
  local rs, rd, n = {}, {}, 0
  for i = 1, #fs do
    local s, d = fs[i], fd[i]
    if not arith.lit(s, 1) then
      if n > 0 and product_is(rs[n], rd[n], d) then
        rs[n] = mul(rs[n], s)
      else
        n = n + 1
        rs[n], rd[n] = s, d
      end
    end
  end
  return rs, rd, n
end

local function coalesce_whole(shape, stride)
  local rs, rd, n = coalesce_modes(shape, stride)
  if n == 0 then return 1, 0 end
  if n == 1 then return rs[1], rd[1] end
  return tup(rs), tup(rd)
end

-- by mode: modes k < #profile become f(mode k, profile[k]) (recursing into
-- tuple profiles), the others are kept; the result keeps the rank
local function by_profile(shape, stride, profile, op, whole)
  if not is_tuple(profile) then return whole(shape, stride) end
  local ms, md = modes_of(shape), modes_of(stride)
  if #profile > #ms then
    raise("%s: profile %s has more modes than the layout %s:%s", op, show(profile), show(shape), show(stride))
  end
  local rs, rd = {}, {}
  for i = 1, #ms do
    if i <= #profile then
      rs[i], rd[i] = by_profile(ms[i], md[i], profile[i], op, whole)
    else
      rs[i], rd[i] = ms[i], md[i]
    end
  end
  return tup(rs), tup(rd)
end

--- coalesce(L[, profile]): the same function with the fewest modes (size-1
-- modes dropped, contiguous neighbours merged; 1:0 if nothing is left). With
-- a profile, by mode: the result keeps L's top-level modes and coalesces
-- mode k as profile[k] says (an integer: the whole mode; a tuple: recurse).
-- @tparam Layout l the layout
-- @param profile optional: a tuple saying which modes to coalesce
-- @treturn Layout
-- @usage cute.coalesce(cute.make_layout({2, 4}))  -- 8:1
function M.coalesce(l, profile)
  check_layout("coalesce", l)
  guard("coalesce", profile, "profile")
  if profile == nil then return new(coalesce_whole(l.shape, l.stride)) end
  return new(by_profile(l.shape, l.stride, profile, "coalesce", coalesce_whole))
end

local function zero_extents(s, d) -- shape with the extents of stride-0 modes set to 1
  if is_tuple(s) then
    local r = {}
    for i = 1, #s do r[i] = zero_extents(s[i], d[i]) end
    return tup(r)
  end
  if d == 0 then return 1 end
  return s
end

--- filter_zeros(L): L with the extent of every stride-0 mode set to 1.
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage cute.filter_zeros(cute.make_layout({4, 8}, {1, 0}))  -- (4,1):(1,0)
function M.filter_zeros(l)
  check_layout("filter_zeros", l)
  return new(zero_extents(l.shape, l.stride), l.stride)
end

local function filter_whole(shape, stride) return coalesce_whole(zero_extents(shape, stride), stride) end

--- filter(L[, profile]): coalesce(filter_zeros(L)): only the modes that
-- move; 1:0 if none does. With a profile, by mode as coalesce.
-- @tparam Layout l the layout
-- @param profile optional: a tuple saying which modes to filter
-- @treturn Layout
-- @usage cute.filter(cute.make_layout({4, 8}, {1, 0}))  -- 4:1
function M.filter(l, profile)
  check_layout("filter", l)
  guard("filter", profile, "profile")
  if profile == nil then return new(filter_whole(l.shape, l.stride)) end
  return new(by_profile(l.shape, l.stride, profile, "filter", filter_whole))
end

-- Slicing ---------------------------------------------------------------------

local function slice_rec(c, s, d, out_s, out_d, op)
  if rawequal(c, U) then
    out_s[#out_s + 1], out_d[#out_d + 1] = s, d
    return 0
  end
  if is_tuple(c) then
    if not is_tuple(s) or #c ~= #s then raise("%s: coordinate %s does not match shape %s", op, show(c), show(s)) end
    local off = 0
    for i = 1, #c do off = add(off, slice_rec(c[i], s[i], d[i], out_s, out_d, op)) end
    return off
  end
  return crd2idx_op(c, s, d, op, true)
end

--- slice_and_offset(coord, L): the layout of the modes where coord has _
-- (flattened, as CuTe does) and the offset of the fixed part of coord.
-- A coordinate without _ gives 1:0 and L(coord).
-- @param c a coordinate, cute._ in the modes kept
-- @tparam Layout l the layout
-- @param op optional: the operation named in errors
-- @return the sliced Layout and the offset (a number or a traced value)
-- @usage local s, off = cute.slice_and_offset({cute._, 2}, cute.make_layout({4, 8}))  -- (4):(1), 8
slice_and_offset = function(c, l, op)
  op = op or "slice_and_offset"
  if is_composed(l) then
    local sub, off = slice_and_offset(c, l.outer, op)
    return setmetatable({ inner = l.inner, offset = add(l.offset, off), outer = sub, shape = sub.shape }, Composed), 0
  end
  check_layout(op, l, "the layout")
  if c == U then return l, 0 end
  local ss, ds = {}, {}
  local off = slice_rec(c, l.shape, l.stride, ss, ds, op)
  if rawget(l, "_basis") == nil then prepare(l) end
  if l._basis then off = copy(arith.basis_result(off, l._basis)) end
  if #ss == 0 then return UNIT, off end
  return new(tup(ss), tup(ds)), off
end
M.slice_and_offset = slice_and_offset

--- slice_(L, coord): the sub-layout selected by the _ entries of coord.
-- @tparam Layout l the layout
-- @param c a coordinate, cute._ in the modes kept
-- @treturn Layout
-- @usage cute.slice_(cute.make_layout({4, 8}), {cute._, 2})  -- (4):(1)
function M.slice_(l, c) return (slice_and_offset(c, l, "slice_")) end

-- Coordinates -------------------------------------------------------------------

--- crd2idx(coord, L) or crd2idx(coord, shape[, stride]).
-- @param c a coordinate (an integer index or a tuple congruent with the shape)
-- @param s a Layout, or a shape
-- @param d the stride, with a shape (default column-major)
-- @return the offset
-- @usage cute.crd2idx({1, 2}, cute.make_layout({4, 8}))  -- 9
function M.crd2idx(c, s, d)
  if is_layout(s) then return eval(s, c, "crd2idx") end
  return it.crd2idx(c, s, d)
end

--- idx2crd(idx, shape[, stride]) or idx2crd(idx, L) (= idx2crd(idx, shape(L), stride(L))).
-- @param idx an integer index
-- @param s a Layout, or a shape
-- @param d the stride, with a shape (default column-major)
-- @return the coordinate, congruent with the shape
-- @usage cute.idx2crd(9, {4, 8})  -- (1,2)
function M.idx2crd(idx, s, d)
  if is_layout(s) then return idx2crd_op(idx, s.shape, s.stride, "idx2crd") end
  return it.idx2crd(idx, s, d)
end

-- ComposedLayout ----------------------------------------------------------------

--- make_composed_layout(inner, offset, outer): the layout c -> inner(offset + outer(c)).
-- @param inner a function of an offset: a Swizzle or a Layout
-- @param offset an integer added before inner
-- @tparam Layout outer the layout of the coordinates
-- @return a ComposedLayout
-- @usage cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout({8, 64}, {64, 1}))
function M.make_composed_layout(inner, offset, outer)
  if type(inner) ~= "function" and not (getmetatable(inner) and getmetatable(inner).__call) then
    raise("make_composed_layout: inner %s is not a function of an offset (a Swizzle or a layout)", show(inner))
  end
  if not arith.is_int(offset) then raise("make_composed_layout: offset %s is not an integer", show(offset)) end
  check_layout("make_composed_layout", outer, "outer")
  return setmetatable({ inner = inner, offset = offset, outer = outer, shape = outer.shape }, Composed)
end

Composed.__tostring = function(c)
  return tostring(c.inner) .. " o " .. show(c.offset) .. " o " .. tostring(c.outer)
end

Composed.__call = function(self, ...)
  local c = ...
  if select("#", ...) > 1 then c = { ... } end
  if type(c) ~= "number" and it.has_underscore(c) then return (slice_and_offset(c, self, "slice")) end
  return self.inner(add(self.offset, eval(self.outer, c, self)))
end

Composed.__eq = function(a, b)
  return a.inner == b.inner and arith.equal(a.offset, b.offset) == true and a.outer == b.outer
end

UNIT = new(1, 0)

-- Composition, complement and inverses ---------------------------------------------
-- (the operations the methods below are; the divides and products built on
-- them are cute.layout_algebra)

-- x, which must be static; the message (what, ...) is only built on failure
local function static_int(x, op, what, ...)
  if arith.is_basis(x) then
    raise("%s: %s must be an integer, got the ScaledBasis %s", op, string.format(what, ...), show(x))
  elseif type(x) ~= "number" then
    raise("%s: %s must be static, got the dynamic value %s", op, string.format(what, ...), show(x))
  end
  return x
end

local function rewrap(c, outer) -- a ComposedLayout with a new outer layout
  return M.make_composed_layout(c.inner, c.offset, outer)
end

-- Memoisation -----------------------------------------------------------------
-- The public operations cache their results on static operands: layouts are
-- immutable, so the same operands give the same value, and a GEMM trace
-- repeats the same partitioning for every tensor. The cache hangs off the
-- first operand (weak keys: it dies with the layout) and is keyed by a
-- string naming the operation and the other operands (numbers, _, and
-- layouts by a per-object id). Dynamic operands are never cached: their
-- values belong to one trace.
local memo = setmetatable({}, { __mode = "k" })
local next_id = 0
local memo_on = true
local MEMO_MAX = 64 -- entries per first operand; a full cache starts over

--- Turns the cache off (false) or on (true); for benchmarks and tests.
local function memoize(on)
  memo_on = on and true or false
  memo = setmetatable({}, { __mode = "k" })
end

local function static_layout(l) -- _fast: every leaf a number (see Evaluation above)
  local fast = rawget(l, "_fast")
  if fast == nil then fast = prepare(l) end
  return fast
end

-- (nil: the operands are too large or too deep to be worth a key; the
-- operation itself then validates them)
local KEY_NODES = 256

local function key_into(x, buf)
  if #buf > KEY_NODES then return false end
  if type(x) == "number" then
    buf[#buf + 1] = x
  elseif x == nil then
    buf[#buf + 1] = "~"
  elseif x == U then
    buf[#buf + 1] = "_"
  elseif is_layout(x) then
    if not static_layout(x) then return false end
    local id = rawget(x, "_id")
    if not id then
      next_id = next_id + 1
      id = next_id
      x._id = id
    end
    buf[#buf + 1] = "L" .. id
  elseif is_tuple(x) then
    buf[#buf + 1] = "("
    for i = 1, #x do
      if not key_into(x[i], buf) then return false end
      buf[#buf + 1] = ","
    end
    buf[#buf + 1] = ")"
  else
    return false
  end
  return true
end

-- f(a, b, c) through the cache when a is a static layout and b, c are keyable
local function cached(name, f, a, b, c)
  if not memo_on or not is_layout(a) or not static_layout(a) then return f(a, b, c) end
  local buf = { name }
  if not (key_into(b, buf) and key_into(c, buf)) then return f(a, b, c) end
  local key = table.concat(buf, "|")
  local m = memo[a]
  if m == nil or m.n >= MEMO_MAX then
    m = { n = 0 }
    memo[a] = m
  end
  local r = m[key]
  if r == nil then
    r = { f(a, b, c) }
    m[key] = r
    m.n = m.n + 1
  end
  return unpack(r)
end


-- One integral mode (bs:bd) of B composed with A, given as the flat arrays of
-- coalesce(A). Returns the result's shape and stride: B's extent split over
-- A's modes ((2,2) in ((2,2),3):((24,2),8)), or kept whole.
local function compose_mode(as, ad, n, bs, bd, op, A, B)
  if is_tuple(bs) then
    local rs, rd = {}, {}
    for i = 1, #bs do rs[i], rd[i] = compose_mode(as, ad, n, bs[i], bd[i], op, A, B) end
    return tup(rs), tup(rd)
  end
  if bd == 0 then return bs, 0 end
  if n == 1 then return bs, mul(bd, ad[1]) end
  if arith.is_basis(bd) then
    raise("%s: B = %s has ScaledBasis strides; composing with them is not supported", op, tostring(B))
  end
  if type(bd) ~= "number" then
    raise("%s: the stride %s of B must be static to split it over the modes of A (A = %s, B = %s)",
      op, show(bd), tostring(A), tostring(B))
  end
  local sign = bd < 0 and -1 or 1
  local rest_s, rest_d = bs, bd * sign
  local rs, rd, k = {}, {}, 0
  for i = 1, n - 1 do
    local cs = as[i]
    if rest_s == 1 then
      -- all of B is placed; keep dividing the stride as CuTe does, so a
      -- size-1 result carries the same stride
      if type(cs) ~= "number" then break end
      rest_d = -floor(-rest_d / cs)
    else
      if type(cs) ~= "number" then
        raise("%s: the extent %s of A (mode %d after coalescing) must be static to compose with %s (A = %s, B = %s)",
          op, show(cs), i - 1, show(bs) .. ":" .. show(bd), tostring(A), tostring(B))
      end
      local next_s, next_d
      if cs % rest_d == 0 then
        next_s, next_d = cs / rest_d, 1
      elseif rest_d % cs == 0 then
        next_s, next_d = 1, rest_d / cs
      else
        raise("%s: shape %s is not divisible by the stride %s (A = %s, B = %s)",
          op, show(tup(as)), show(bd), tostring(A), tostring(B))
      end
      if next_s ~= 1 then
        if type(rest_s) ~= "number" then
          raise("%s: the extent %s of B must be static to split it over the modes of A (A = %s, B = %s)",
            op, show(rest_s), tostring(A), tostring(B))
        end
        local new_s = next_s < rest_s and next_s or rest_s
        if rest_s % new_s ~= 0 then
          raise("%s: shape %s is not divisible by %s (A = %s, B = %s)",
            op, show(tup(as)), show(bs), tostring(A), tostring(B))
        end
        k = k + 1
        rs[k], rd[k] = new_s, mul(rest_d * sign, ad[i])
        rest_s = rest_s / new_s
      end
      rest_d = next_d
    end
  end
  if rest_s ~= 1 or k == 0 then
    k = k + 1
    rs[k], rd[k] = rest_s, mul(rest_d * sign, ad[n])
  end
  if k == 1 then return rs[1], rd[1] end
  return tup(rs), tup(rd)
end

-- A o B for layouts: R(i) == A(B(i)), R's shape refining B's
local function compose_layouts(a, b, op)
  local as, ad, n = coalesce_modes(a.shape, a.stride)
  if n == 0 then as, ad, n = { 1 }, { 0 }, 1 end
  return new(compose_mode(as, ad, n, b.shape, b.stride, op, a, b))
end

local function tiler_layout(t, op)
  if type(t) == "number" then
    if not (t >= 1 and t < arith.LIMIT) or t ~= floor(t) then
      raise("%s: tiler %s is not a positive integer below 2^53", op, show(t))
    end
    return new(t, 1)
  end
  if arith.dyn(t) then return new(t, 1) end
  return nil
end

local function bad_tiler(op, t)
  raise("%s: tiler %s must be a layout, an integer, _ or a tuple of those", op, show(t))
end

-- Raises unless t is a tiler: a layout, a positive integer below 2^53 (or a
-- dynamic one), _, or a non-empty tuple of tilers, nested at most
-- cute.int_tuple.MAX_DEPTH deep.
local function check_tiler(op, t, root, depth)
  if t == U or is_layout(t) or arith.dyn(t) then return end
  if type(t) == "number" then
    if t >= 1 and t < arith.LIMIT and t == floor(t) then return end
    if rawequal(t, root) then raise("%s: tiler %s is not a positive integer below 2^53", op, show(t)) end
    raise("%s: tiler %s is invalid: %s is not a positive integer below 2^53", op, show(root), show(t))
  end
  if not is_tuple(t) then
    if rawequal(t, root) then bad_tiler(op, t) end
    raise("%s: tiler %s is invalid: %s is not a layout, an integer, _ or a tuple of those", op, show(root), show(t))
  end
  if depth == 1 then guard(op, t, "tiler") end
  local n = #t
  if n == 0 then raise("%s: tiler %s contains an empty tuple", op, show(root)) end
  local keys = 0
  for _ in pairs(t) do keys = keys + 1 end
  if keys ~= n then raise("%s: tiler %s is not a proper tuple (holes or non-integer keys)", op, show(root)) end
  for i = 1, n do check_tiler(op, t[i], root, depth + 1) end
end

local function compose(a, t, op)
  if t == U then return a end
  if is_layout(t) then return compose_layouts(a, t, op) end
  local tl = tiler_layout(t, op)
  if tl then return compose_layouts(a, tl, op) end
  if is_tuple(t) then
    local r = iti.rank(a.shape)
    if #t > r then raise("%s: tiler %s has more modes than the layout %s", op, show(t), tostring(a)) end
    -- by mode; as in C++ CuTe, modes of A that the tiler does not reach are dropped
    local ss, ds = {}, {}
    for i = 1, #t do
      local m = compose(new(mode(a.shape, i - 1), mode(a.stride, i - 1)), t[i], op)
      ss[i], ds[i] = m.shape, m.stride
    end
    return new(tup(ss), tup(ds))
  end
  bad_tiler(op, t)
end

local function compose_pub(a, b) return compose(a, b, "composition") end

--- composition(A, B): the layout R with R(c) == A(B(c)); B a tiler. A may be
-- a ComposedLayout (B composes with its outer layout) or a Swizzle (the
-- result is the ComposedLayout A o 0 o B).
function M.composition(a, b)
  if swizzle.is_swizzle(a) then
    check_layout("composition", b, "B (after a swizzle)")
    return M.make_composed_layout(a, 0, b)
  end
  if is_composed(a) then return rewrap(a, M.composition(a.outer, b)) end
  check_layout("composition", a, "A")
  check_tiler("composition", b, b, 1)
  return cached("composition", compose_pub, a, b)
end



local function complement(l, cotarget, op)
  local s1, d1 = l.shape, l.stride
  if type(s1) == "number" and type(d1) == "number" and d1 > 0 and s1 > 1 then
    -- one mode s:d (the tile of most divides): the holes below d, then the rest
    local rest = arith.ceil_div(cotarget, s1 * d1)
    if d1 == 1 then return rest == 1 and UNIT or new(rest, s1) end
    if rest == 1 then return new(d1, 1) end
    return new(tup { d1, rest }, tup { 1, s1 * d1 })
  end
  local fs, fd = flatten_into(l.shape, {}), flatten_into(l.stride, {})
  local ms, md, idx = {}, {}, {}
  for i = 1, #fs do
    local s, d = fs[i], fd[i]
    if d ~= 0 and s ~= 1 then
      if type(s) ~= "number" then
        static_int(s, op, "the extent %s of %s (complement orders modes by stride)", show(s), tostring(l))
      end
      if type(d) ~= "number" then
        static_int(d, op, "the stride %s of %s (complement orders modes by stride)", show(d), tostring(l))
      end
      if d < 0 then raise("%s: complement of %s, which has the negative stride %s", op, tostring(l), show(d)) end
      idx[#idx + 1] = #idx + 1
      ms[#idx], md[#idx] = s, d
    end
  end
  -- sort by (stride, extent); insertion sort: few modes, and table.sort's
  -- Lua comparator would keep this path out of the JIT
  for i = 2, #idx do
    local v = idx[i]
    local j = i - 1
    while j >= 1 and (md[idx[j]] > md[v] or (md[idx[j]] == md[v] and ms[idx[j]] > ms[v])) do
      idx[j + 1] = idx[j]
      j = j - 1
    end
    idx[j + 1] = v
  end
  local rs, rd, cur = {}, {}, 1
  for _, i in ipairs(idx) do
    local d = md[i]
    if d < cur then
      raise("%s: %s is not injective (its modes overlap), so it has no complement", op, tostring(l))
    end
    if d % cur ~= 0 then
      raise("%s: the stride %s of %s is not a multiple of %s (the extent of the smaller modes), "
        .. "so it has no complement", op, show(d), tostring(l), show(cur))
    end
    rs[#rs + 1], rd[#rd + 1] = d / cur, cur
    cur = ms[i] * d
  end
  rs[#rs + 1], rd[#rd + 1] = arith.ceil_div(cotarget, cur), cur
  return M.coalesce(new(tup(rs), tup(rd)))
end

local function complement_pub(l, c) return complement(l, c, "complement") end

--- complement(L[, cotarget]): the layout C, sorted by stride, such that
-- (L, C) is injective and its image covers [0, cotarget) (default 1: only
-- the holes of L are filled). Stride-0 and size-1 modes of L are ignored.
-- @tparam Layout l the layout
-- @param cotarget optional: the size of the codomain to cover (default 1)
-- @treturn Layout
-- @usage cute.complement(cute.make_layout(4, 2), 16)  -- (2,2):(1,8)
function M.complement(l, cotarget)
  check_layout("complement", l)
  if cotarget == nil then
    cotarget = 1
  else
    check_tuple("complement", cotarget, "shape", "cotarget")
    cotarget = product(cotarget)
  end
  return cached("complement", complement_pub, l, cotarget)
end

-- Inverses ------------------------------------------------------------------

local function require_static(l, op)
  if not M.is_static(l) then
    raise("%s: %s must be static (every extent and stride a Lua integer)", op, tostring(l))
  end
end

local function right_inverse(l, op)
  require_static(l, op)
  local rs, rd, n = coalesce_modes(l.shape, l.stride)
  local pos, p = {}, 1
  for i = 1, n do
    if rd[i] < 0 then raise("%s: %s has the negative stride %s (not supported)", op, tostring(l), show(rd[i])) end
    pos[i] = p
    p = p * rs[i]
  end
  -- follow the chain of strides 1, s*d, ... (stride-0 modes never join it)
  local out_s, out_d, used = {}, {}, {}
  local nxt = 1
  while true do
    local found
    for i = 1, n do
      if not used[i] and rd[i] == nxt then
        found = i
        break
      end
    end
    if not found then break end
    used[found] = true
    out_s[#out_s + 1], out_d[#out_d + 1] = rs[found], pos[found]
    nxt = rs[found] * rd[found]
  end
  if #out_s == 0 then return UNIT end
  return M.coalesce(new(tup(out_s), tup(out_d)))
end

local function right_inverse_pub(l) return right_inverse(l, "right_inverse") end

--- right_inverse(L): the layout R with L(R(i)) == i for i in the largest prefix of L's image it can cover.
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage cute.right_inverse(cute.make_layout({4, 8}, {8, 1}))  -- (8,4):(4,1)
function M.right_inverse(l)
  check_layout("right_inverse", l)
  return cached("right_inverse", right_inverse_pub, l)
end

--- left_inverse(L): the layout R with R(L(i)) == i for every i < size(L)
-- (L injective); its values off the image of L are unspecified.
local function left_inverse(l)
  require_static(l, "left_inverse")
  local c = complement(l, 1, "left_inverse")
  return right_inverse(new(tup { l.shape, c.shape }, tup { l.stride, c.stride }), "left_inverse")
end

--- left_inverse(L): the layout R with R(L(c)) == c for every coordinate of an injective L.
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage cute.left_inverse(cute.make_layout({4, 8}, {8, 1}))
function M.left_inverse(l)
  check_layout("left_inverse", l)
  return cached("left_inverse", left_inverse, l)
end

-- Methods -------------------------------------------------------------------------

--- L:size(i, ...): cute.size of the layout (of mode i, ...).
-- @tparam Layout l the layout
-- @param ... an optional 0-based mode path
-- @return the number of coordinates
-- @usage L:size()
function methods.size(l, ...) return M.size(l, ...) end
--- L:rank(i, ...): cute.rank of the layout (of mode i, ...).
-- @tparam Layout l the layout
-- @param ... an optional 0-based mode path
-- @return the number of top-level modes
-- @usage L:rank()
function methods.rank(l, ...) return M.rank(l, ...) end
--- L:depth(i, ...): cute.depth of the layout (of mode i, ...).
-- @tparam Layout l the layout
-- @param ... an optional 0-based mode path
-- @return the nesting depth of the shape
-- @usage L:depth()
function methods.depth(l, ...) return M.depth(l, ...) end
--- L:cosize(i, ...): cute.cosize of the layout (of mode i, ...).
-- @tparam Layout l the layout
-- @param ... an optional 0-based mode path
-- @return L(size(L) - 1) + 1
-- @usage L:cosize()
function methods.cosize(l, ...) return M.cosize(l, ...) end
--- L:coalesce([profile]): cute.coalesce(L, profile).
-- @tparam Layout l the layout
-- @param p optional: a profile (see cute.coalesce)
-- @treturn Layout
-- @usage L:coalesce()
function methods.coalesce(l, p) return M.coalesce(l, p) end
--- L:filter([profile]): cute.filter(L, profile).
-- @tparam Layout l the layout
-- @param p optional: a profile (see cute.filter)
-- @treturn Layout
-- @usage L:filter()
function methods.filter(l, p) return M.filter(l, p) end
--- L:flatten(): cute.flatten(L).
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage L:flatten()
function methods.flatten(l) return M.flatten(l) end
--- L:get(i, ...): cute.get(L, i, ...), the sub-layout at a 0-based mode path.
-- @tparam Layout l the layout
-- @param ... the 0-based mode indices
-- @treturn Layout
-- @usage L:get(1)
function methods.get(l, ...) return M.get(l, ...) end

--- L:get_hier_coord(i): the coordinate c with L(c) == i for a compact L.
-- @tparam Layout l the layout
-- @param i an integer index
-- @return the hierarchical coordinate
-- @usage cute.make_layout({4, 8}):get_hier_coord(9)  -- (1,2)
function methods.get_hier_coord(l, i) return idx2crd_op(i, l.shape, l.stride, "get_hier_coord", true) end

--- L:get_flat_coord(i): get_hier_coord with each top-level mode's coordinate
-- made a 1-D index into that mode.
-- @tparam Layout l the layout
-- @param i an integer index
-- @return a tuple with one integer per top-level mode
-- @usage L:get_flat_coord(9)
function methods.get_flat_coord(l, i)
  local c = idx2crd_op(i, l.shape, l.stride, "get_flat_coord", true)
  if not is_tuple(l.shape) then return c end
  local r = {}
  for k = 1, #l.shape do
    r[k] = crd2idx_op(c[k], l.shape[k], prefix_product(l.shape[k], 1), "get_flat_coord")
  end
  return tup(r)
end

--- L:get_1d_coord(i): get_hier_coord as a column-major index into L's shape.
-- @tparam Layout l the layout
-- @param i an integer index
-- @return an integer
-- @usage L:get_1d_coord(9)
function methods.get_1d_coord(l, i)
  local c = idx2crd_op(i, l.shape, l.stride, "get_1d_coord", true)
  return crd2idx_op(c, l.shape, prefix_product(l.shape, 1), "get_1d_coord")
end

--- L:compose(B, ...): composition(L, B), or with several tilers, composition
-- with the by-mode tiler (B, ...).
-- @tparam Layout l the layout
-- @param b the tiler: a Layout, shape or tuple of them
-- @param ... further tilers, one per mode
-- @treturn Layout
-- @usage L:compose(cute.make_layout(4, 2))
function methods.compose(l, b, ...)
  if select("#", ...) > 0 then b = { b, ... } end
  return M.composition(l, b)
end

--- L:with_shape(shape): L reshaped, composition(L, make_layout(shape)).
-- @tparam Layout l the layout
-- @param shape the new shape (size at most size(L))
-- @treturn Layout
-- @usage cute.make_layout(32):with_shape({4, 8})  -- (4,8):(1,4)
function methods.with_shape(l, shape) return M.composition(l, M.make_layout(shape)) end

--- L:complement([cotarget]): cute.complement(L, cotarget).
-- @tparam Layout l the layout
-- @param c optional: the cotarget
-- @treturn Layout
-- @usage L:complement(64)
function methods.complement(l, c) return M.complement(l, c) end
--- L:right_inverse(): cute.right_inverse(L).
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage L:right_inverse()
function methods.right_inverse(l) return M.right_inverse(l) end
--- L:left_inverse(): cute.left_inverse(L).
-- @tparam Layout l the layout
-- @treturn Layout
-- @usage L:left_inverse()
function methods.left_inverse(l) return M.left_inverse(l) end
--- L:slice(coord): cute.slice_(L, coord), the modes where coord has cute._.
-- @tparam Layout l the layout
-- @param c a coordinate with cute._ in the modes kept
-- @treturn Layout
-- @usage L:slice({cute._, 2})
function methods.slice(l, c) return M.slice_(l, c) end

--- C:size(i, ...): cute.size of a ComposedLayout (of mode i, ...).
-- @param l the ComposedLayout
-- @param ... an optional 0-based mode path
-- @return the number of coordinates
-- @usage C:size()
function composed_methods.size(l, ...) return M.size(l, ...) end
--- C:rank(i, ...): cute.rank of a ComposedLayout (of mode i, ...).
-- @param l the ComposedLayout
-- @param ... an optional 0-based mode path
-- @return the number of top-level modes
-- @usage C:rank()
function composed_methods.rank(l, ...) return M.rank(l, ...) end
--- C:depth(i, ...): cute.depth of a ComposedLayout (of mode i, ...).
-- @param l the ComposedLayout
-- @param ... an optional 0-based mode path
-- @return the nesting depth
-- @usage C:depth()
function composed_methods.depth(l, ...) return M.depth(l, ...) end
composed_methods.compose = methods.compose
composed_methods.with_shape = methods.with_shape
composed_methods.slice = methods.slice

-- For cutelua's other modules -----------------------------------------------------

--- What cute.layout_algebra, cute.layout_tile and the tracer build on: the
-- constructor and checks, and the operations above with the name of the
-- user's operation (`op`) for their messages. Not for users: nothing here
-- validates its arguments, and it may change.
M.internal = {
  new = new, -- new(shape, stride): a Layout of a valid, congruent shape and stride (not copied)
  UNIT = UNIT, -- the layout 1:0
  is_any_layout = is_any_layout, -- a Layout or a ComposedLayout
  check_layout = check_layout, -- check_layout(op, x, what[, allow_composed]): raises unless x is a layout; returns x
  static_int = static_int, -- static_int(x, op, what, ...): raises unless x is a static integer; returns x
  cached = cached, -- cached(name, f, a, b, c): f(a, b, c) through the cache of results on static operands
  memoize = memoize, -- memoize(on): turns that cache off (false) or on (true); for benchmarks and tests
  compose_layouts = compose_layouts, -- compose_layouts(A, B, op): A o B for two layouts
  tiler_layout = tiler_layout, -- tiler_layout(t, op): the layout of an integer tiler (n:1), else nil
  bad_tiler = bad_tiler, -- bad_tiler(op, t): raises: t is not a tiler
  check_tiler = function(op, t) return check_tiler(op, t, t, 1) end, -- raises unless t is a tiler
  complement = complement, -- complement(L, cotarget, op), cotarget an integer
  right_inverse = right_inverse, -- right_inverse(L, op)
  require_static = require_static, -- require_static(L, op): raises unless L is static
}

return M
