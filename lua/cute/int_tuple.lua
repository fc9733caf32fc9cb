--- cute.int_tuple: CuTe's IntTuple, as plain Lua values.
--
-- An IntTuple is a leaf (an integer: a Lua number, or a dynamic value of the
-- kernel tracer, see cute.arith) or a Lua array of IntTuples, nested to any
-- depth. `4` and `{4}` differ: the second is a rank-1 tuple. Tables the
-- algebra returns carry the metatable TUPLE, whose __tostring prints CuTe
-- notation `(4,(2,3))`; tables written by the user have none and are accepted
-- everywhere. Tuples are never modified once built, so results may share
-- sub-tables with their arguments.
--
-- Mode indices (get, take, select, group_modes, ...) are 0-based, as in CuTe
-- and its documentation; only raw Lua indexing (t[1]) is 1-based.
--
-- Every leaf operation goes through cute.arith, so static tuples fold and
-- dynamic ones emit code; decisions that need a value (divisibility, ranges)
-- raise when the value is dynamic.
local arith = require "cute.arith"
local err = require "cute._err"

local add, mul, div, mod = arith.add, arith.mul, arith.div, arith.mod
local type, getmetatable, setmetatable, floor = type, getmetatable, setmetatable, math.floor
local raise = err.raise

local M = {}

local TUPLE = { __name = "IntTuple" }

--- The marker for "keep this mode" in slices and "skip this mode" in
-- projections (CuTe's Underscore; C++ also spells it X).
local U = setmetatable({}, { __name = "Underscore", __tostring = function() return "_" end })
M._ = U
M.X = U

--- is_tuple(x): x is a tuple (a Lua array of integers, values and tuples; not a layout).
-- @param x any value
-- @treturn bool
-- @usage cute.is_tuple({4, 8})  -- true
local function is_tuple(x)
  if type(x) ~= "table" then return false end
  local mt = getmetatable(x)
  return mt == nil or mt == TUPLE
end
M.is_tuple = is_tuple

local function tup(t) return setmetatable(t, TUPLE) end

--- True for an integer leaf (static or dynamic).
-- @param x any value
-- @treturn bool
-- @usage cute.is_int(4)  -- true
function M.is_int(x) return not is_tuple(x) and arith.is_int(x) end

--- is_underscore(x): x is cute._ (the slice marker, also cute.X).
-- @param x any value
-- @treturn bool
-- @usage cute.is_underscore(cute._)  -- true
function M.is_underscore(x) return x == U end

--- The deepest nesting of tuples the algebra accepts (a leaf has depth 0,
-- (4,(2,3)) depth 2). Real layouts stay below 5; the limit turns a table
-- that contains itself, or one nested beyond reason, into an error that
-- names the caller's line instead of a stack overflow.
local MAX_DEPTH = 64
M.MAX_DEPTH = MAX_DEPTH

-- show(x): a table met again on its own path prints as <cycle>, and nesting
-- past MAX_DEPTH as "...", so that any value (a bad argument in an error
-- message included) prints in bounded depth
local function show_rec(x, depth, path)
  if type(x) == "number" then return arith.show(x) end
  if x == nil then return "nil" end
  if is_tuple(x) then
    if path[x] then return "<cycle>" end
    if depth >= MAX_DEPTH then return "(...)" end
    path[x] = true
    local parts = {}
    for i = 1, #x do parts[i] = show_rec(x[i], depth + 1, path) end
    path[x] = nil
    return "(" .. table.concat(parts, ",") .. ")"
  end
  return arith.show(x)
end

--- CuTe notation of any value: tuples as (a,(b,c)), leaves as integers,
-- other objects (layouts, swizzles) through tostring.
-- @param x a tuple, integer or any object with tostring
-- @treturn string
-- @usage cute.pretty_str({4, {2, 3}})  -- "(4,(2,3))"
local function show(x)
  if type(x) == "number" then return arith.show(x) end
  return show_rec(x, 0, {})
end
M.pretty_str = show
TUPLE.__tostring = show

-- Validation of user input --------------------------------------------------
-- kind: "shape" (positive extents), "stride" (integers or ScaledBases),
-- "coord" (non-negative integers or _), "int" (any integer), "profile".
local LIMIT = arith.LIMIT

local function leaf_problem(x, kind)
  if type(x) == "number" then
    if x ~= floor(x) then return "is not an integer" end
    if x >= LIMIT or x <= -LIMIT then return "is too large (|x| must stay below 2^53)" end
    if kind == "shape" and x < 1 then return "is not a positive extent" end
    if kind == "coord" and x < 0 then return "is negative" end
    return nil
  end
  if arith.dyn(x) then return nil end
  if kind == "stride" and arith.is_basis(x) then return nil end
  if (kind == "coord" or kind == "profile") and x == U then return nil end
  if type(x) == "table" and getmetatable(x) ~= nil and getmetatable(x) ~= TUPLE then
    return "is not an integer (a " .. (getmetatable(x).__name or "table") .. ")"
  end
  return "is not an integer (a " .. type(x) .. ")"
end

-- Why a table nests past MAX_DEPTH: it contains itself, or it is just deep.
local function nesting_problem(t)
  local path = {}
  local function rec(x, depth)
    if path[x] then return "contains itself (a table nested in its own element)" end
    if depth > MAX_DEPTH then return nil end
    path[x] = true
    for i = 1, #x do
      local v = x[i]
      if is_tuple(v) then
        local why = rec(v, depth + 1)
        if why then return why end
      end
    end
    path[x] = nil
    return nil
  end
  return rec(t, 1) or string.format("is nested deeper than %d levels (cute.int_tuple.MAX_DEPTH)", MAX_DEPTH)
end

local function too_deep(op, what, root)
  raise("%s: %s %s %s", op, what, show(root), nesting_problem(root))
end

local function check(op, t, kind, what, root, depth)
  if is_tuple(t) then
    if depth > MAX_DEPTH then too_deep(op, what, root) end
    local n = #t
    if n == 0 then raise("%s: %s %s contains an empty tuple", op, what, show(root)) end
    local keys = 0
    for _ in pairs(t) do keys = keys + 1 end
    if keys ~= n then raise("%s: %s %s is not a proper tuple (holes or non-integer keys)", op, what, show(root)) end
    for i = 1, n do check(op, t[i], kind, what, root, depth + 1) end
  else
    local why = leaf_problem(t, kind)
    if why then raise("%s: %s %s is invalid: %s %s", op, what, show(root), show(t), why) end
  end
end

--- Raises unless t is a valid IntTuple of the given kind (see above);
-- `op` and `what` name the operation and the argument in the message.
local function check_tuple(op, t, kind, what)
  check(op, t, kind or "int", what or "argument", t, 1)
  return t
end

-- true when every tuple inside t is at most MAX_DEPTH - depth levels deep
local function shallow(t, depth)
  if depth > MAX_DEPTH then return false end
  for i = 1, #t do
    local v = t[i]
    if type(v) == "table" and is_tuple(v) and not shallow(v, depth + 1) then return false end
  end
  return true
end

--- Raises unless the nesting of x (any value: a tuple of anything, tilers
-- and projections included) is finite and at most MAX_DEPTH deep. The
-- structural operations (rank, flatten, congruent, ...) accept any leaves
-- but recurse through the nesting; this is their only check.
local function guard(op, x, what)
  if type(x) == "table" and is_tuple(x) and not shallow(x, 1) then too_deep(op, what or "argument", x) end
  return x
end

--- A deep copy of a (validated) tuple, marked with TUPLE.
local function copy(t)
  if not is_tuple(t) then return t end
  local r = {}
  for i = 1, #t do r[i] = copy(t[i]) end
  return tup(r)
end

-- Structure -----------------------------------------------------------------

local function rank(t) return is_tuple(t) and #t or 1 end

local function depth(t)
  if not is_tuple(t) then return 0 end
  local d = 0
  for i = 1, #t do
    local di = depth(t[i])
    if di > d then d = di end
  end
  return d + 1
end

local function product(t)
  if type(t) == "number" then return t end
  if is_tuple(t) then
    local p = 1
    for i = 1, #t do p = mul(p, product(t[i])) end
    return p
  end
  return t
end

--- product(t): the product of the leaves of t.
-- @param t an integer tuple (or integer)
-- @return an integer (or a value)
-- @usage cute.product({4, {2, 3}})  -- 24
function M.product(t) return product(check_tuple("product", t, "int")) end

--- Mode i (0-based) of t: the element, or t itself for a leaf and i == 0.
local function mode(t, i, op)
  if type(i) ~= "number" then
    raise("%s: mode index %s is not an integer", op or "get", show(i))
  end
  if is_tuple(t) then
    local v = t[i + 1]
    if v == nil or i < 0 or i ~= floor(i) then
      raise("%s: mode %s is out of range for %s (rank %d)", op or "get", show(i), show(t), #t)
    end
    return v
  end
  if i ~= 0 then raise("%s: mode %s is out of range for %s (rank 1)", op or "get", show(i), show(t)) end
  return t
end

--- get(t, i, j, ...): the element at the 0-based path i, j, ...
function M.get(t, ...)
  for k = 1, select("#", ...) do t = mode(t, (select(k, ...)), "get") end
  return t
end

function M.rank(t, ...) return rank(M.get(t, ...)) end
function M.depth(t, ...) return depth(guard("depth", M.get(t, ...))) end
function M.size(t, ...) return product(check_tuple("size", M.get(t, ...), "int")) end

local function flatten_into(t, out)
  if is_tuple(t) then
    for i = 1, #t do flatten_into(t[i], out) end
  else
    out[#out + 1] = t
  end
  return out
end

--- The leaves of t as a flat tuple (a leaf stays a leaf, as in C++).
function M.flatten(t)
  if not is_tuple(t) then return t end
  return tup(flatten_into(guard("flatten", t), {}))
end

--- Rebuilds the nesting of `profile` from the flat tuple `flat`.
-- @param flat a flat tuple with as many leaves as profile
-- @param profile a tuple giving the nesting
-- @return a tuple congruent with profile
-- @usage cute.unflatten({4, 2, 3}, {1, {1, 1}})  -- (4,(2,3))
function M.unflatten(flat, profile)
  guard("unflatten", flat, "flat tuple")
  guard("unflatten", profile, "profile")
  local pos = 0
  local n = is_tuple(flat) and #flat or 1
  local function build(p)
    if is_tuple(p) then
      local r = {}
      for i = 1, #p do r[i] = build(p[i]) end
      return tup(r)
    end
    pos = pos + 1
    if pos > n then raise("unflatten: %s has fewer leaves than the profile %s", show(flat), show(profile)) end
    return is_tuple(flat) and flat[pos] or flat
  end
  local r = build(profile)
  if pos ~= n then raise("unflatten: %s has more leaves than the profile %s", show(flat), show(profile)) end
  return r
end

local function congruent(a, b)
  local ta, tb = is_tuple(a), is_tuple(b)
  if ta ~= tb then return false end
  if not ta then return true end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not congruent(a[i], b[i]) then return false end
  end
  return true
end
--- congruent(a, b): a and b have the same nesting (tuple structure).
-- @param a a tuple or integer
-- @param b a tuple or integer
-- @treturn bool
-- @usage cute.congruent({4, {2, 3}}, {1, {8, 16}})  -- true
function M.congruent(a, b) return congruent(guard("congruent", a), guard("congruent", b)) end

--- a is weakly congruent to b: a's nesting is a coarsening of b's (a leaf of
-- a may stand for a whole sub-tuple of b).
local function weakly_congruent(a, b)
  if not is_tuple(a) then return true end
  if not is_tuple(b) or #a ~= #b then return false end
  for i = 1, #a do
    if not weakly_congruent(a[i], b[i]) then return false end
  end
  return true
end
--- weakly_congruent(a, b): a's nesting is a coarsening of b's.
-- @param a a tuple or integer
-- @param b a tuple or integer
-- @treturn bool
-- @usage cute.weakly_congruent({4, 6}, {4, {2, 3}})  -- true
function M.weakly_congruent(a, b)
  return weakly_congruent(guard("weakly_congruent", a), guard("weakly_congruent", b))
end

--- Structural equality (leaves compared with arith.equal; unknown -> false).
local function equal(a, b)
  local ta, tb = is_tuple(a), is_tuple(b)
  if ta ~= tb then return false end
  if not ta then return arith.equal(a, b) == true end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not equal(a[i], b[i]) then return false end
  end
  return true
end

local function is_static(t)
  if type(t) == "number" then return true end
  if is_tuple(t) then
    for i = 1, #t do
      if not is_static(t[i]) then return false end
    end
    return true
  end
  return false
end
function M.is_static(t) return is_static(guard("is_static", t)) end

local function has_underscore(t)
  if rawequal(t, U) then return true end
  if is_tuple(t) then
    for i = 1, #t do
      if has_underscore(t[i]) then return true end
    end
  end
  return false
end
--- has_underscore(t): a coordinate contains cute._ anywhere (a slice).
-- @param t a tuple or integer
-- @treturn bool
-- @usage cute.has_underscore({1, cute._})  -- true
function M.has_underscore(t) return has_underscore(guard("has_underscore", t)) end

-- Products and divisions ------------------------------------------------------

--- Exclusive prefix product, column-major: the compact strides of shape a,
-- starting at init (default 1; a tuple init applies by mode).
local function prefix_product(a, init)
  if is_tuple(a) then
    local r = {}
    if is_tuple(init) then
      if #init ~= #a then raise("prefix_product: init %s does not match %s", show(init), show(a)) end
      for i = 1, #a do r[i] = prefix_product(a[i], init[i]) end
    else
      for i = 1, #a do
        r[i] = prefix_product(a[i], init)
        init = mul(init, product(a[i]))
      end
    end
    return tup(r)
  end
  if is_tuple(init) then raise("prefix_product: init %s is a tuple but %s is not", show(init), show(a)) end
  return init
end

--- Exclusive suffix product: the compact row-major strides of a.
local function suffix_product(a, init)
  if is_tuple(a) then
    local r = {}
    if is_tuple(init) then
      if #init ~= #a then raise("suffix_product: init %s does not match %s", show(init), show(a)) end
      for i = 1, #a do r[i] = suffix_product(a[i], init[i]) end
    else
      for i = #a, 1, -1 do
        r[i] = suffix_product(a[i], init)
        init = mul(init, product(a[i]))
      end
    end
    return tup(r)
  end
  if is_tuple(init) then raise("suffix_product: init %s is a tuple but %s is not", show(init), show(a)) end
  return init
end

-- the public form: a and init validated (init may hold ScaledBases, as strides do)
local function products(op, f, a, init)
  check_tuple(op, a, "int", "argument")
  if init == nil then return f(a, 1) end
  return f(a, check_tuple(op, init, "stride", "init"))
end
--- prefix_product(a[, init]): the exclusive prefix products of a's leaves (compact column-major strides).
-- @param a an integer tuple
-- @param init optional: the first product (default 1)
-- @return a tuple congruent with a
-- @usage cute.prefix_product({4, 8, 2})  -- (1,4,32)
function M.prefix_product(a, init) return products("prefix_product", prefix_product, a, init) end
--- suffix_product(a[, init]): the exclusive suffix products of a's leaves (compact row-major strides).
-- @param a an integer tuple
-- @param init optional: the last product (default 1)
-- @return a tuple congruent with a
-- @usage cute.suffix_product({4, 8, 2})  -- (16,2,1)
function M.suffix_product(a, init) return products("suffix_product", suffix_product, a, init) end
M.compact_col_major = M.prefix_product
M.compact_row_major = M.suffix_product

--- Compact strides that visit the leaves of `shape` in increasing `order`
-- (congruent with shape; ties go to the earlier leaf).
local function compact_order(shape, order, op)
  local s = flatten_into(shape, {})
  local o = flatten_into(order, {})
  if #o ~= #s then raise("%s: order %s does not match shape %s", op, show(order), show(shape)) end
  local idx = {}
  for i = 1, #s do
    idx[i] = i
    if type(o[i]) ~= "number" then arith.static(o[i], op .. ": order entry " .. show(o[i])) end
  end
  table.sort(idx, function(x, y)
    if o[x] ~= o[y] then return o[x] < o[y] end
    return x < y
  end)
  local d, cur = {}, 1
  for _, i in ipairs(idx) do
    d[i] = cur
    cur = mul(cur, s[i])
  end
  return M.unflatten(tup(d), shape)
end
--- compact_order(shape, order): compact strides visiting the modes of shape in increasing order.
-- @param shape an integer tuple
-- @param order a tuple congruent with shape
-- @return the strides, a tuple congruent with shape
-- @usage cute.compact_order({4, 8}, {1, 0})  -- (8,1)
function M.compact_order(shape, order)
  check_tuple("compact_order", shape, "shape", "shape")
  check_tuple("compact_order", order, "int", "order")
  return compact_order(shape, order, "compact_order")
end

local function static_pair(op, a, b)
  if type(a) ~= "number" or type(b) ~= "number" then
    raise("%s: cannot decide whether %s and %s divide each other: both must be static", op, show(a), show(b))
  end
end

--- shape_div(a, b): a "divided" by b, congruent with a. For integers the
-- exact quotient where b divides a, 1 where a divides b (and an error
-- otherwise); a tuple a is divided mode by mode from the left, carrying the
-- rest of the divisor.
local function shape_div(a, b, op)
  if is_tuple(a) then
    local r = {}
    if is_tuple(b) then
      if #a ~= #b then raise("%s: %s and %s have different ranks", op, show(a), show(b)) end
      for i = 1, #a do r[i] = shape_div(a[i], b[i], op) end
    else
      for i = 1, #a do
        r[i] = shape_div(a[i], b, op)
        b = shape_div(b, product(a[i]), op)
      end
    end
    return tup(r)
  end
  if is_tuple(b) then return shape_div(a, product(b), op) end
  if b == 1 then return a end
  if rawequal(a, b) then return 1 end
  static_pair(op, a, b)
  if b ~= 0 and arith.mod(a, b) == 0 then return div(a, b) end
  if a ~= 0 and arith.mod(b, a) == 0 then return 1 end
  raise("%s: neither of %s and %s divides the other", op, show(a), show(b))
end
--- shape_div(a, b): a divided by b mode by mode, each quotient exact (or 1 where the divisor is larger).
-- @param a an integer tuple
-- @param b an integer or tuple
-- @return a tuple congruent with a
-- @usage cute.shape_div({4, 8}, 8)  -- (1,4)
function M.shape_div(a, b)
  check_tuple("shape_div", a, "int", "dividend")
  check_tuple("shape_div", b, "shape", "divisor")
  return shape_div(a, b, "shape_div")
end

--- ceil_div(a, b): ceil(a/b) per mode (a tuple a is divided from the left,
-- as shape_div does, rounding up).
local function ceil_div(a, b)
  if is_tuple(a) then
    local r = {}
    if is_tuple(b) then
      if #a ~= #b then raise("ceil_div: %s and %s have different ranks", show(a), show(b)) end
      for i = 1, #a do r[i] = ceil_div(a[i], b[i]) end
    else
      for i = 1, #a do
        r[i] = ceil_div(a[i], b)
        b = ceil_div(b, product(a[i]))
      end
    end
    return tup(r)
  end
  if is_tuple(b) then return ceil_div(a, product(b)) end
  return arith.ceil_div(a, b)
end

-- a an integer tuple, b a tuple of positive integers (a divisor)
local function check_quotient(op, a, b)
  check_tuple(op, a, "int", "dividend")
  check_tuple(op, b, "shape", "divisor")
end

--- ceil_div(a, b): a / b rounded up, mode by mode.
-- @param a an integer tuple (or integer)
-- @param b a positive integer or tuple
-- @return the quotient, congruent with a
-- @usage cute.ceil_div(100, 16)  -- 7
function M.ceil_div(a, b)
  check_quotient("ceil_div", a, b)
  return ceil_div(a, b)
end

--- round_up(a, b): a rounded up to a multiple of b, per mode (modes of a
-- that a shorter tuple b does not reach are kept, as C++ pads b with 1).
local function round_up(a, b)
  if is_tuple(a) then
    if is_tuple(b) and #b > #a then raise("round_up: %s has more modes than %s", show(b), show(a)) end
    local r = {}
    for i = 1, #a do
      local bi = b
      if is_tuple(b) then bi = b[i] or 1 end
      r[i] = round_up(a[i], bi)
    end
    return tup(r)
  end
  if is_tuple(b) then raise("round_up: %s is a tuple but %s is not", show(b), show(a)) end
  return mul(arith.ceil_div(a, b), b)
end

--- round_up(a, b): a rounded up to a multiple of b, mode by mode.
-- @param a an integer tuple (or integer)
-- @param b a positive integer or tuple
-- @return congruent with a
-- @usage cute.round_up(100, 16)  -- 112
function M.round_up(a, b)
  check_quotient("round_up", a, b)
  return round_up(a, b)
end

--- The product of each top-level mode.
local function product_each(t)
  if not is_tuple(t) then return t end
  local r = {}
  for i = 1, #t do r[i] = product(t[i]) end
  return tup(r)
end
--- product_each(t): the product of each top-level mode.
-- @param t an integer tuple
-- @return a flat tuple (an integer for an integer)
-- @usage cute.product_each({4, {2, 3}})  -- (4,6)
function M.product_each(t) return product_each(check_tuple("product_each", t, "int")) end

local function elem_cmp(a, b, strict, op)
  if is_tuple(a) then
    if not is_tuple(b) or #a > #b then raise("%s: %s and %s do not match", op, show(a), show(b)) end
    for i = 1, #a do
      if not elem_cmp(a[i], b[i], strict, op) then return false end
    end
    return true
  end
  if is_tuple(b) then raise("%s: %s and %s do not match", op, show(a), show(b)) end
  if type(a) ~= "number" then arith.static(a, op .. ": " .. show(a)) end
  if type(b) ~= "number" then arith.static(b, op .. ": " .. show(b)) end
  if strict then return a < b end
  return a <= b
end

--- a < b in every element (a may have fewer top-level modes than b).
local function compare(op, a, b, strict)
  check_tuple(op, a, "int", "left operand")
  check_tuple(op, b, "int", "right operand")
  return elem_cmp(a, b, strict, op)
end
--- elem_less(a, b): a < b in every element (a may have fewer top-level modes than b).
-- @param a an integer tuple
-- @param b an integer tuple
-- @treturn bool
-- @usage cute.elem_less({1, 2}, {4, 8})  -- true
function M.elem_less(a, b) return compare("elem_less", a, b, true) end
--- elem_leq(a, b): a <= b in every element.
-- @param a an integer tuple
-- @param b an integer tuple
-- @treturn bool
-- @usage cute.elem_leq({4, 2}, {4, 8})  -- true
function M.elem_leq(a, b) return compare("elem_leq", a, b, false) end

-- Coordinates ----------------------------------------------------------------

--- crd2idx(coord, shape, stride): the offset of coord. A tuple coordinate
-- is congruent with the shape or has an integer where the shape has a
-- sub-tuple (a column-major index into it); an integer coordinate into a
-- tuple shape splits column-major, and its last mode is not reduced, so an
-- index >= size extends the last mode linearly (composition relies on it).
-- Entries of a tuple coordinate must lie in their mode's range.
-- the name of an operation for messages: a string, or a layout being called
local function opname(op)
  if type(op) == "string" then return op end
  return "calling " .. tostring(op)
end

local function crd2idx(c, s, d, op, strict)
  if is_tuple(c) then
    if not is_tuple(s) or #c ~= #s then
      raise("%s: coordinate %s does not match shape %s", opname(op), show(c), show(s))
    end
    local acc = 0
    for i = 1, #c do acc = add(acc, crd2idx(c[i], s[i], d[i], op, true)) end
    return acc
  end
  if type(c) == "number" then
    if c < 0 or c ~= floor(c) or c >= LIMIT then
      raise("%s: coordinate %s is not a non-negative integer below 2^53", opname(op), show(c))
    end
    if strict then
      local n = product(s)
      if type(n) == "number" and c >= n then
        raise("%s: coordinate %s is out of range for shape %s", opname(op), show(c), show(s))
      end
    end
  elseif rawequal(c, U) then
    raise("%s: coordinate contains _ (use slice_ to keep modes)", opname(op))
  elseif not arith.dyn(c) then
    raise("%s: coordinate %s is not an integer", opname(op), show(c))
  end
  if is_tuple(s) then
    local n = #s
    local acc = 0
    for i = 1, n - 1 do
      local si = s[i]
      local p = product(si)
      acc = add(acc, crd2idx(mod(c, p), si, d[i], op, false))
      c = div(c, p)
    end
    return add(acc, crd2idx(c, s[n], d[n], op, false))
  end
  return mul(c, d)
end

-- shape and (optional) stride of crd2idx/idx2crd: valid and congruent
local function check_shape_stride(op, shape, stride)
  check_tuple(op, shape, "shape", "shape")
  if stride ~= nil then
    check_tuple(op, stride, "stride", "stride")
    if not congruent(shape, stride) then
      raise("%s: shape %s and stride %s are not congruent", op, show(shape), show(stride))
    end
  end
end

--- crd2idx(coord, shape[, stride]): stride defaults to compact column-major.
function M.crd2idx(coord, shape, stride)
  check_shape_stride("crd2idx", shape, stride)
  check_tuple("crd2idx", coord, "coord", "coordinate")
  if stride == nil then stride = prefix_product(shape, 1) end
  return crd2idx(coord, shape, stride, "crd2idx", false)
end

-- natural coordinate of idx in shape (no stride): column-major split, the
-- last mode not reduced
local function idx2crd_nat(idx, s, op)
  if is_tuple(idx) then
    if not is_tuple(s) or #idx ~= #s then raise("%s: index %s does not match shape %s", op, show(idx), show(s)) end
    local r = {}
    for i = 1, #idx do r[i] = idx2crd_nat(idx[i], s[i], op) end
    return tup(r)
  end
  if is_tuple(s) then
    local r, n = {}, #s
    for i = 1, n - 1 do
      local p = product(s[i])
      r[i] = idx2crd_nat(mod(idx, p), s[i], op)
      idx = div(idx, p)
    end
    r[n] = idx2crd_nat(idx, s[n], op)
    return tup(r)
  end
  return idx
end

-- per leaf: (idx div d) mod s
local function idx2crd_strided(idx, s, d, op)
  if is_tuple(idx) then
    if not is_tuple(s) or #idx ~= #s then raise("%s: index %s does not match shape %s", op, show(idx), show(s)) end
    local r = {}
    for i = 1, #idx do r[i] = idx2crd_strided(idx[i], s[i], d[i], op) end
    return tup(r)
  end
  if is_tuple(s) then
    local r = {}
    for i = 1, #s do r[i] = idx2crd_strided(idx, s[i], d[i], op) end
    return tup(r)
  end
  if rawequal(d, 0) then
    raise("%s: a mode of extent %s has stride 0, so no offset determines its coordinate", op, show(s))
  end
  return mod(div(idx, d), s)
end

-- 1 + the largest offset of (s, d), or nil when a leaf is not a number
local function offset_bound(s, d)
  local fs, fd = flatten_into(s, {}), flatten_into(d, {})
  local bound = 1
  for i = 1, #fs do
    if type(fs[i]) ~= "number" or type(fd[i]) ~= "number" then return nil end
    bound = bound + (fs[i] - 1) * math.abs(fd[i])
  end
  return bound
end

-- idx (an offset, or a tuple of offsets per mode) is a non-negative integer;
-- with `bounded`, below the layout's largest offset + 1 (when that is static)
local function check_offset(op, idx, s, d, bounded)
  if is_tuple(idx) then
    if is_tuple(s) and #idx == #s then
      for i = 1, #idx do check_offset(op, idx[i], s[i], d[i], bounded) end
    end
    return
  end
  if type(idx) == "number" then
    if idx < 0 or idx ~= floor(idx) or idx >= LIMIT then
      raise("%s: offset %s is not a non-negative integer below 2^53", op, show(idx))
    end
    local bound = bounded and offset_bound(s, d)
    if bound and idx >= bound then
      raise("%s: offset %s is out of range for %s:%s (its offsets lie in [0, %s))", op, show(idx), show(s),
        show(d), show(bound))
    end
  elseif not arith.dyn(idx) then
    raise("%s: offset %s is not an integer", op, show(idx))
  end
end

--- (idx div d) mod s per leaf of the layout s:d (shape and stride already
-- valid), after checking idx. With `bounded`, idx must be an offset of the
-- layout (below 1 + its largest offset): the coordinate c with L(c) == idx
-- of a compact layout; without, the formula applies to any idx >= 0, as
-- C++ idx2crd(idx, shape, stride).
local function idx2crd_checked(idx, s, d, op, bounded)
  check_offset(op, idx, s, d, bounded)
  return idx2crd_strided(idx, s, d, op)
end

local function check_index(op, idx, s)
  if is_tuple(idx) then
    if is_tuple(s) and #idx == #s then
      for i = 1, #idx do check_index(op, idx[i], s[i]) end
    end
    return
  end
  if type(idx) == "number" then
    if idx < 0 or idx ~= floor(idx) or idx >= LIMIT then
      raise("%s: index %s is not a non-negative integer below 2^53", op, show(idx))
    end
    local n = product(s)
    if type(n) == "number" and idx >= n then
      raise("%s: index %s is out of range for shape %s (size %s)", op, show(idx), show(s), show(n))
    end
  elseif not arith.dyn(idx) then
    raise("%s: index %s is not an integer", op, show(idx))
  end
end

--- idx2crd(idx, shape[, stride]): without stride, the natural coordinate of
-- the index (0 <= idx < size(shape)); with a stride, (idx div d) mod s per
-- leaf (the coordinate of an offset in a compact layout).
function M.idx2crd(idx, shape, stride)
  check_shape_stride("idx2crd", shape, stride)
  guard("idx2crd", idx, "index")
  if stride == nil then
    check_index("idx2crd", idx, shape)
    return idx2crd_nat(idx, shape, "idx2crd")
  end
  return idx2crd_checked(idx, shape, stride, "idx2crd")
end

-- Mode access and restructuring ----------------------------------------------

local function modes_of(t) -- the top-level modes as a fresh Lua array
  if is_tuple(t) then
    local r = {}
    for i = 1, #t do r[i] = t[i] end
    return r
  end
  return { t }
end

local function check_range(op, t, b, e)
  local r = rank(t)
  if type(b) ~= "number" or type(e) ~= "number" or b < 0 or e > r or b > e or b ~= floor(b) or e ~= floor(e) then
    raise("%s: modes [%s,%s) are out of range for %s (rank %d)", op, show(b), show(e), show(t), r)
  end
end

--- The tuple of the modes [b, e) of t.
function M.take(t, b, e)
  e = e or rank(t)
  check_range("take", t, b, e)
  local m, r = modes_of(t), {}
  for i = b + 1, e do r[#r + 1] = m[i] end
  return tup(r)
end

--- The tuple of the modes of t at the 0-based indices in `idx`.
function M.select(t, idx)
  if idx == nil then raise("select: the mode indices are missing") end
  if not is_tuple(idx) then idx = { idx } end
  local r = {}
  for k = 1, #idx do r[k] = mode(t, idx[k], "select") end
  return tup(r)
end

--- The largest rank append and prepend pad a tuple to.
local MAX_RANK = 65536
M.MAX_RANK = MAX_RANK

local function check_rank_arg(op, t, n, have)
  if type(n) ~= "number" or n ~= floor(n) then raise("%s: rank %s is not an integer", op, show(n)) end
  if n < have then raise("%s: %s already has rank %d > %s", op, show(t), have, show(n)) end
  if n > MAX_RANK then
    raise("%s: rank %s is too large (at most %d modes, cute.int_tuple.MAX_RANK)", op, show(n), MAX_RANK)
  end
end

--- t with x appended (as one mode); with n, x repeated until rank n.
function M.append(t, x, n)
  local m = modes_of(t)
  if n == nil then
    m[#m + 1] = x
  else
    check_rank_arg("append", t, n, #m)
    for i = #m + 1, n do m[i] = x end
  end
  return tup(m)
end

--- t with x prepended; with n, x repeated in front until rank n.
function M.prepend(t, x, n)
  local m = modes_of(t)
  if n ~= nil then check_rank_arg("prepend", t, n, #m) end
  local k = n == nil and 1 or n - #m
  local r = {}
  for i = 1, k do r[i] = x end
  for i = 1, #m do r[k + i] = m[i] end
  return tup(r)
end

--- t with the modes [b, e) grouped into one nested mode.
function M.group_modes(t, b, e)
  e = e or rank(t)
  check_range("group_modes", t, b, e)
  local m, r, g = modes_of(t), {}, {}
  for i = 1, b do r[#r + 1] = m[i] end
  for i = b + 1, e do g[#g + 1] = m[i] end
  r[#r + 1] = tup(g)
  for i = e + 1, #m do r[#r + 1] = m[i] end
  return tup(r)
end

--- Keeps the modes of t where proj is not _ (X): C++ dice with Step<_1,X,...>.
local function dice(proj, t)
  if is_tuple(proj) then
    local m = modes_of(t)
    if #proj ~= #m then raise("dice: projection %s does not match %s", show(proj), show(t)) end
    local r = {}
    for i = 1, #proj do
      if proj[i] ~= U then
        if is_tuple(proj[i]) then
          local sub = dice(proj[i], m[i])
          for k = 1, #sub do r[#r + 1] = sub[k] end
        else
          r[#r + 1] = m[i]
        end
      end
    end
    return tup(r)
  end
  if proj == U then return tup({}) end
  return t
end
function M.dice(proj, t) return dice(guard("dice", proj, "projection"), t) end

-- For cutelua's other modules -------------------------------------------------

--- What the layout modules and the tracer build on: the operations above
-- without their argument checks (for arguments already checked), the checks
-- themselves, and the tuple marker. Not for users: nothing here validates
-- its arguments, and it may change.
M.internal = {
  TUPLE = TUPLE, -- the metatable of the tuples the algebra returns
  tup = tup, -- marks a Lua array as a tuple (it prints in CuTe notation)
  copy = copy, -- a deep copy, marked
  show = show, -- CuTe notation, bounded (= pretty_str)
  opname = opname, -- an operation's name for messages (a layout being called: "calling L")
  -- check(op, t, kind, what): raises unless t is a valid tuple of that kind (see above); returns t
  check = check_tuple,
  guard = guard, -- guard(op, x, what): raises unless x nests finitely, at most MAX_DEPTH deep; returns x
  rank = rank, depth = depth, product = product, product_each = product_each,
  mode = mode, -- mode(t, i, op): mode i (0-based), an error naming op when out of range
  modes_of = modes_of, -- the top-level modes as a fresh Lua array
  flatten_into = flatten_into, -- flatten_into(t, out): appends t's leaves to the array out
  congruent = congruent, equal = equal, is_static = is_static,
  prefix_product = prefix_product, suffix_product = suffix_product,
  compact_order = compact_order, -- compact_order(shape, order, op)
  crd2idx = crd2idx, -- crd2idx(c, s, d, op, strict): strict: c must lie in s (a tuple coordinate's entries do)
  idx2crd = idx2crd_checked, -- idx2crd(idx, s, d, op, bounded): (idx div d) mod s per leaf, idx checked
}

return M
