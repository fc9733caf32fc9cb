--- cute.layout: CuTe's Layout (shape:stride) and ComposedLayout types, their
-- construction, queries, mode access, coalesce/filter and slicing.
--
-- A Layout maps a coordinate to an offset: L(c) = sum of c_leaf * d_leaf over
-- the leaves of its shape, with an integer coordinate split column-major
-- (cute.int_tuple.crd2idx). Invariants: shape and stride are congruent
-- IntTuples, every static extent is >= 1, and a Layout is never modified
-- once built (results share sub-tables freely). The algebra on layouts
-- (composition, complement, divides, products, ...) is cute.layout_algebra;
-- its functions are reachable from this module too.
--
-- A ComposedLayout is inner(offset + outer(c)) with `outer` a Layout and
-- `inner` any function of an offset (a Swizzle, or a Layout): CuTe's
-- swizzled shared-memory layouts.
--
-- Functions that take "a layout or a tuple" (size, rank, get, ...) accept
-- both, as CuTe's do. Mode indices are 0-based.
local arith = require "cute.arith"
local it = require "cute.int_tuple"
local err = require "cute._err"

local is_tuple, tup, show, product = it.is_tuple, it._tup, it._show, it._product
local flatten_into, modes_of = it._flatten_into, it._modes_of
local U = it._
local raise = err.raise
local type, getmetatable, setmetatable, floor = type, getmetatable, setmetatable, math.floor
local add, mul = arith.add, arith.mul

local M = {}

local Layout = { __name = "Layout" }
local methods = {}
Layout.__index = methods
M._Layout = Layout

local Composed = { __name = "ComposedLayout" }
local composed_methods = {}
Composed.__index = composed_methods
M._ComposedLayout = Composed

local function new(shape, stride) return setmetatable({ shape = shape, stride = stride }, Layout) end
M._new = new -- internal: shape and stride already valid

local function is_layout(x) return getmetatable(x) == Layout end
local function is_composed(x) return getmetatable(x) == Composed end
M.is_layout, M._is_composed = is_layout, is_composed
function M._is_any_layout(x)
  local mt = getmetatable(x)
  return mt == Layout or mt == Composed
end

Layout.__tostring = function(l) return show(l.shape) .. ":" .. show(l.stride) end
Layout.__eq = function(a, b) return it._equal(a.shape, b.shape) and it._equal(a.stride, b.stride) end

--- Raises unless x is a Layout (or, with allow_composed, a ComposedLayout).
local function check_layout(op, x, what, allow_composed)
  local mt = getmetatable(x)
  if mt == Layout or (allow_composed and mt == Composed) then return x end
  raise("%s: %s must be a layout, got %s", op, what or "argument", type(x) == "table" and show(x) or type(x))
end
M._check_layout = check_layout

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

local opname = it._opname

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
  local r = it._crd2idx_op(c, l.shape, l.stride, op, false)
  if l._basis then r = it._copy(arith.basis_result(r, l._basis)) end
  return r
end
M._eval = eval
M._prepare = prepare

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
  it._check("make_layout", shape, "shape", "shape")
  shape = it._copy(shape)
  if stride == nil or stride == M.LayoutLeft then
    return new(shape, it._prefix_product(shape, 1))
  elseif stride == M.LayoutRight then
    return new(shape, it._suffix_product(shape, 1))
  end
  it._check("make_layout", stride, "stride", "stride")
  if not it._congruent(shape, stride) then
    raise("make_layout: shape %s and stride %s are not congruent", show(shape), show(stride))
  end
  return new(shape, it._copy(stride))
end

--- A layout with compact strides visiting the modes in increasing `order`
-- (congruent with shape); no order: column-major.
function M.make_ordered_layout(shape, order)
  it._check("make_ordered_layout", shape, "shape", "shape")
  if order == nil then return new(it._copy(shape), it._prefix_product(shape, 1)) end
  it._check("make_ordered_layout", order, "int", "order")
  if not it._congruent(shape, order) then
    raise("make_ordered_layout: shape %s and order %s are not congruent", show(shape), show(order))
  end
  return new(it._copy(shape), it._compact_order(shape, order, "make_ordered_layout"))
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
function M.make_identity_layout(shape)
  it._check("make_identity_layout", shape, "shape", "shape")
  shape = it._copy(shape)
  if not is_tuple(shape) then return new(shape, 1) end
  return new(shape, basis_like(shape, {}))
end
--- make_basis_like(shape): the ScaledBasis strides of make_identity_layout(shape).
function M.make_basis_like(shape)
  it._check("make_basis_like", shape, "shape", "shape")
  if not is_tuple(shape) then return 1 end
  return basis_like(shape, {})
end

-- Queries -------------------------------------------------------------------

local function sub_layout(l, op, ...) -- the layout at a 0-based mode path
  local s, d = l.shape, l.stride
  for k = 1, select("#", ...) do
    local i = select(k, ...)
    s, d = it._mode(s, i, op), it._mode(d, i, op)
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
  if is_layout(x) then return it._rank_of((sub_layout(x, "rank", ...))) end
  return it.rank(x, ...)
end

function M.depth(x, ...)
  x = target(x, "depth")
  if is_layout(x) then return it._depth_of((sub_layout(x, "depth", ...))) end
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
  local last = it._crd2idx_op(arith.sub(n, 1), x.shape, x.stride, "cosize", false)
  if arith.is_basis(last) or (type(last) == "table" and not arith.dyn(last)) then
    raise("cosize: %s has ScaledBasis strides (its codomain is a coordinate)", tostring(x))
  end
  return add(last, 1)
end

function M.is_static(x)
  if is_layout(x) then return it._is_static(x.shape) and it._is_static(x.stride) end
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

function M.flatten(x) return both("flatten", it.flatten, x) end
function M.take(x, b, e) return both("take", it.take, x, b, e) end
function M.select(x, idx) return both("select", it.select, x, idx) end
function M.group_modes(x, b, e) return both("group_modes", it.group_modes, x, b, e) end

local UNIT = nil -- the layout 1:0, built below

local function cat(op, f, x, y, n)
  if not is_layout(x) then return f(x, y, n) end
  if y == nil then y = UNIT end
  check_layout(op, y, "the mode to add")
  return new(f(x.shape, y.shape, n), f(x.stride, y.stride, n))
end
--- append(L, M[, n]): L with the mode M added last (with n: repeated up to rank n; M defaults to 1:0).
function M.append(x, y, n) return cat("append", it.append, x, y, n) end
function M.prepend(x, y, n) return cat("prepend", it.prepend, x, y, n) end

--- dice(proj, x): the modes of x where proj is not _ (cute.X).
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
M._coalesce_modes = coalesce_modes

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
function M.coalesce(l, profile)
  check_layout("coalesce", l)
  it._guard("coalesce", profile, "profile")
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
function M.filter_zeros(l)
  check_layout("filter_zeros", l)
  return new(zero_extents(l.shape, l.stride), l.stride)
end

local function filter_whole(shape, stride) return coalesce_whole(zero_extents(shape, stride), stride) end

--- filter(L[, profile]): coalesce(filter_zeros(L)): only the modes that
-- move; 1:0 if none does. With a profile, by mode as coalesce.
function M.filter(l, profile)
  check_layout("filter", l)
  it._guard("filter", profile, "profile")
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
  return it._crd2idx_op(c, s, d, op, true)
end

--- slice_and_offset(coord, L): the layout of the modes where coord has _
-- (flattened, as CuTe does) and the offset of the fixed part of coord.
-- A coordinate without _ gives 1:0 and L(coord).
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
  if l._basis then off = it._copy(arith.basis_result(off, l._basis)) end
  if #ss == 0 then return UNIT, off end
  return new(tup(ss), tup(ds)), off
end
M.slice_and_offset = slice_and_offset

--- slice_(L, coord): the sub-layout selected by the _ entries of coord.
function M.slice_(l, c) return (slice_and_offset(c, l, "slice_")) end

-- Coordinates -------------------------------------------------------------------

--- crd2idx(coord, L) or crd2idx(coord, shape[, stride]).
function M.crd2idx(c, s, d)
  if is_layout(s) then return eval(s, c, "crd2idx") end
  return it.crd2idx(c, s, d)
end

--- idx2crd(idx, shape[, stride]) or idx2crd(idx, L) (= idx2crd(idx, shape(L), stride(L))).
function M.idx2crd(idx, s, d)
  if is_layout(s) then return it._idx2crd_strided(idx, s.shape, s.stride, "idx2crd") end
  return it.idx2crd(idx, s, d)
end

-- Methods -------------------------------------------------------------------------

function methods.size(l, ...) return M.size(l, ...) end
function methods.rank(l, ...) return M.rank(l, ...) end
function methods.depth(l, ...) return M.depth(l, ...) end
function methods.cosize(l, ...) return M.cosize(l, ...) end
function methods.coalesce(l, p) return M.coalesce(l, p) end
function methods.filter(l, p) return M.filter(l, p) end
function methods.flatten(l) return M.flatten(l) end
function methods.get(l, ...) return M.get(l, ...) end

--- L:get_hier_coord(i): the coordinate c with L(c) == i for a compact L.
function methods.get_hier_coord(l, i) return it._idx2crd_strided(i, l.shape, l.stride, "get_hier_coord", true) end

--- L:get_flat_coord(i): get_hier_coord with each top-level mode's coordinate
-- made a 1-D index into that mode.
function methods.get_flat_coord(l, i)
  local c = it._idx2crd_strided(i, l.shape, l.stride, "get_flat_coord", true)
  if not is_tuple(l.shape) then return c end
  local r = {}
  for k = 1, #l.shape do
    r[k] = it._crd2idx_op(c[k], l.shape[k], it._prefix_product(l.shape[k], 1), "get_flat_coord")
  end
  return tup(r)
end

--- L:get_1d_coord(i): get_hier_coord as a column-major index into L's shape.
function methods.get_1d_coord(l, i)
  local c = it._idx2crd_strided(i, l.shape, l.stride, "get_1d_coord", true)
  return it._crd2idx_op(c, l.shape, it._prefix_product(l.shape, 1), "get_1d_coord")
end

-- Everything else (compose, with_shape, ...) comes from the algebra module,
-- loaded on first use of such a method.
setmetatable(methods, {
  __index = function(_, k)
    if type(k) ~= "string" or k:byte(1) == 95 then return nil end -- internal fields (_fast, ...) are never methods
    require "cute.layout_algebra"
    return rawget(methods, k)
  end,
})

-- ComposedLayout ----------------------------------------------------------------

--- make_composed_layout(inner, offset, outer): the layout c -> inner(offset + outer(c)).
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

function composed_methods.size(l, ...) return M.size(l, ...) end
function composed_methods.rank(l, ...) return M.rank(l, ...) end
function composed_methods.depth(l, ...) return M.depth(l, ...) end
setmetatable(composed_methods, {
  __index = function(_, k)
    if type(k) ~= "string" or k:byte(1) == 95 then return nil end
    require "cute.layout_algebra"
    return rawget(composed_methods, k)
  end,
})

UNIT = new(1, 0)
M._UNIT = UNIT

-- The algebra's functions are reachable as cute.layout.<name> too.
setmetatable(M, {
  __index = function(t, k)
    local v = rawget(require "cute.layout_algebra", k)
    if v == nil then v = rawget(require "cute.layout_tile", k) end
    if v ~= nil then rawset(t, k, v) end
    return v
  end,
})

return M
