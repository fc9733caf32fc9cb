--- cute.layout_algebra: composition, complement, inverses, divides and
-- products, with CuTe's names and semantics (the functions are also
-- cute.<name> and cute.layout.<name>). Tiling and partitioning built on
-- them (tile_to_shape, local_tile, local_partition, make_layout_tv) are
-- cute.layout_tile.
--
-- A "tiler" (second argument of composition, the divides and products) is a
-- Layout; an integer n, meaning n:1; a tuple of tilers applied mode by mode;
-- or _ (cute._), leaving a mode as it is.
--
-- Structure is decided by static values only: where a decision needs a
-- dynamic leaf (a divisibility check, the order of strides) the operation
-- raises, naming what must be static. Dynamic values flow through where
-- they only scale or extend (A's strides in a composition, the last extent
-- of A, complement's cotarget), through cute.arith.
--
-- Every function here takes the name of the user's operation (`op`) so that
-- an error inside, say, the composition of a logical_divide, says
-- "logical_divide: ...".
local arith = require "cute.arith"
local it = require "cute.int_tuple"
local L = require "cute.layout"
local swizzle = require "cute.swizzle"
local err = require "cute._err"

local is_tuple, tup, show, product = it.is_tuple, it._tup, it._show, it._product
local modes_of = it._modes_of
local new, is_layout, is_composed = L._new, L.is_layout, L._is_composed
local check_layout = L._check_layout
local U, UNIT = it._, L._UNIT
local raise = err.raise
local type, floor = type, math.floor
local mul = arith.mul

local M = {}

-- x, which must be static; the message (what, ...) is only built on failure
local function static_int(x, op, what, ...)
  if arith.is_basis(x) then
    raise("%s: %s must be an integer, got the ScaledBasis %s", op, string.format(what, ...), show(x))
  elseif type(x) ~= "number" then
    raise("%s: %s must be static, got the dynamic value %s", op, string.format(what, ...), show(x))
  end
  return x
end

-- the Layout of a by-mode sub-result list
local function from_modes(ss, ds) return new(tup(ss), tup(ds)) end

local function rewrap(c, outer) -- a ComposedLayout with a new outer layout
  return L.make_composed_layout(c.inner, c.offset, outer)
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
function M._memoize(on)
  memo_on = on and true or false
  memo = setmetatable({}, { __mode = "k" })
end

local function static_layout(l) -- _fast: every leaf a number (see cute.layout)
  local fast = rawget(l, "_fast")
  if fast == nil then fast = L._prepare(l) end
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

-- Composition ----------------------------------------------------------------

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
  local as, ad, n = L._coalesce_modes(a.shape, a.stride)
  if n == 0 then as, ad, n = { 1 }, { 0 }, 1 end
  return new(compose_mode(as, ad, n, b.shape, b.stride, op, a, b))
end
M._compose_layouts = compose_layouts

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
  if depth == 1 then it._guard(op, t, "tiler") end
  local n = #t
  if n == 0 then raise("%s: tiler %s contains an empty tuple", op, show(root)) end
  local keys = 0
  for _ in pairs(t) do keys = keys + 1 end
  if keys ~= n then raise("%s: tiler %s is not a proper tuple (holes or non-integer keys)", op, show(root)) end
  for i = 1, n do check_tiler(op, t[i], root, depth + 1) end
end
M._check_tiler = function(op, t) return check_tiler(op, t, t, 1) end

local function compose(a, t, op)
  if t == U then return a end
  if is_layout(t) then return compose_layouts(a, t, op) end
  local tl = tiler_layout(t, op)
  if tl then return compose_layouts(a, tl, op) end
  if is_tuple(t) then
    local r = it._rank_of(a.shape)
    if #t > r then raise("%s: tiler %s has more modes than the layout %s", op, show(t), tostring(a)) end
    -- by mode; as in C++ CuTe, modes of A that the tiler does not reach are dropped
    local ss, ds = {}, {}
    for i = 1, #t do
      local m = compose(new(it._mode(a.shape, i - 1), it._mode(a.stride, i - 1)), t[i], op)
      ss[i], ds[i] = m.shape, m.stride
    end
    return from_modes(ss, ds)
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
    return L.make_composed_layout(a, 0, b)
  end
  if is_composed(a) then return rewrap(a, M.composition(a.outer, b)) end
  check_layout("composition", a, "A")
  check_tiler("composition", b, b, 1)
  return cached("composition", compose_pub, a, b)
end

-- Complement ---------------------------------------------------------------

local function complement(l, cotarget, op)
  local s1, d1 = l.shape, l.stride
  if type(s1) == "number" and type(d1) == "number" and d1 > 0 and s1 > 1 then
    -- one mode s:d (the tile of most divides): the holes below d, then the rest
    local rest = arith.ceil_div(cotarget, s1 * d1)
    if d1 == 1 then return rest == 1 and UNIT or new(rest, s1) end
    if rest == 1 then return new(d1, 1) end
    return new(tup { d1, rest }, tup { 1, s1 * d1 })
  end
  local fs, fd = it._flatten_into(l.shape, {}), it._flatten_into(l.stride, {})
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
  return L.coalesce(new(tup(rs), tup(rd)))
end
M._complement_op = complement

local function complement_pub(l, c) return complement(l, c, "complement") end

--- complement(L[, cotarget]): the layout C, sorted by stride, such that
-- (L, C) is injective and its image covers [0, cotarget) (default 1: only
-- the holes of L are filled). Stride-0 and size-1 modes of L are ignored.
function M.complement(l, cotarget)
  check_layout("complement", l)
  if cotarget == nil then
    cotarget = 1
  else
    it._check("complement", cotarget, "shape", "cotarget")
    cotarget = product(cotarget)
  end
  return cached("complement", complement_pub, l, cotarget)
end

-- Inverses ------------------------------------------------------------------

local function require_static(l, op)
  if not L.is_static(l) then
    raise("%s: %s must be static (every extent and stride a Lua integer)", op, tostring(l))
  end
end

local function right_inverse(l, op)
  require_static(l, op)
  local rs, rd, n = L._coalesce_modes(l.shape, l.stride)
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
  return L.coalesce(new(tup(out_s), tup(out_d)))
end

local function right_inverse_pub(l) return right_inverse(l, "right_inverse") end

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

function M.left_inverse(l)
  check_layout("left_inverse", l)
  return cached("left_inverse", left_inverse, l)
end

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
    return new(it._mode(l.shape, 0), it._mode(l.stride, 0)), new(it._mode(l.shape, 1), it._mode(l.stride, 1))
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
    local r = it._rank_of(l.shape)
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
  local ss, ds = { it._mode(z.shape, 0) }, { it._mode(z.stride, 0) }
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
    check_tiler(name, t, t, 1)
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
M.logical_product = family("logical_product", lproduct)
--- zipped_product: ((A modes...), (product modes..., other modes)).
M.zipped_product = family("zipped_product", lproduct, as_is)
--- tiled_product: ((A modes...), product modes..., other modes).
M.tiled_product = family("tiled_product", lproduct, tiled)
--- flat_product: (A modes..., product modes..., other modes).
M.flat_product = family("flat_product", lproduct, flat)

local function pad(l, r)
  if it._rank_of(l.shape) == r and is_tuple(l.shape) then return l end
  return new(it.append(l.shape, 1, r), it.append(l.stride, 0, r))
end

local function block_rake(a, b, op, raked)
  if is_composed(a) then return rewrap(a, block_rake(a.outer, b, op, raked)) end
  check_layout(op, a, "the block")
  check_layout(op, b, "the tiler")
  local r = math.max(it._rank_of(a.shape), it._rank_of(b.shape))
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

function M.blocked_product(a, b)
  if is_composed(a) then return rewrap(a, M.blocked_product(a.outer, b)) end
  return cached("blocked_product", blocked, a, b)
end
--- raked_product(A, B): mode k is (P_k, A_k): the blocks interleaved.
function M.raked_product(a, b)
  if is_composed(a) then return rewrap(a, M.raked_product(a.outer, b)) end
  return cached("raked_product", raked, a, b)
end

-- Internals shared with cute.layout_tile -------------------------------------

M._cached, M._divide, M._zipped, M._block_rake = cached, divide, zipped, block_rake
M._right_inverse, M._pad, M._static_int = right_inverse, pad, static_int

-- Methods on layouts --------------------------------------------------------------

local methods = getmetatable(UNIT).__index

--- L:compose(B, ...): composition(L, B), or with several tilers, composition
-- with the by-mode tiler (B, ...).
function methods.compose(l, b, ...)
  if select("#", ...) > 0 then b = { b, ... } end
  return M.composition(l, b)
end

--- L:with_shape(shape): L reshaped, composition(L, make_layout(shape)).
function methods.with_shape(l, shape) return M.composition(l, L.make_layout(shape)) end

function methods.complement(l, c) return M.complement(l, c) end
function methods.right_inverse(l) return M.right_inverse(l) end
function methods.left_inverse(l) return M.left_inverse(l) end
function methods.slice(l, c) return L.slice_(l, c) end

local cmethods = getmetatable(L.make_composed_layout(swizzle.Swizzle(0, 0, 0), 0, UNIT)).__index
cmethods.compose = methods.compose
cmethods.with_shape = methods.with_shape
cmethods.slice = methods.slice

return M
