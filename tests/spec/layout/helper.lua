-- Shared helpers of the layout specs: enumerating small layouts, checking
-- layouts point-wise, and the test-vector file.
local cute = require "cute"

local H = {}

--- Every value of a layout as a Lua array (index i+1 holds L(i)).
function H.table_of(l)
  local n = cute.size(l)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = l(i) end
  return t
end

--- Deep equality of IntTuples / numbers (plain or marked tables alike).
function H.same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not H.same(a[i], b[i]) then return false end
  end
  return true
end

--- All layouts with up to `max_rank` flat modes, extents from `extents`
-- and strides from `strides` (a deterministic sample, `limit` at most).
function H.layouts(extents, strides, max_rank, limit)
  local out = {}
  local function rec(shape, stride, r)
    if #shape > 0 then
      local s = #shape == 1 and shape[1] or { unpack(shape) }
      local d = #stride == 1 and stride[1] or { unpack(stride) }
      out[#out + 1] = cute.make_layout(s, d)
    end
    if r == max_rank then return end
    for _, e in ipairs(extents) do
      for _, d in ipairs(strides) do
        shape[#shape + 1], stride[#stride + 1] = e, d
        rec(shape, stride, r + 1)
        shape[#shape], stride[#stride] = nil, nil
      end
    end
  end
  rec({}, {}, 0)
  if limit and #out > limit then
    -- a deterministic spread over the whole list
    local picked, step = {}, #out / limit
    for i = 0, limit - 1 do picked[#picked + 1] = out[math.floor(i * step) + 1] end
    out = picked
  end
  return out
end

-- The defining properties of the algebra's operations, shared by
-- properties_spec (over families of small layouts) and fuzz_spec (over
-- random ones). Each raises an error naming the operands where its property
-- fails, and returns nothing otherwise.
local P = {}
H.props = P

local function fail(fmt, ...) error(string.format(fmt, ...), 0) end

--- The multiset of a layout's values: image[v] = how many i < size give v.
function H.image(l)
  local set = {}
  for i = 0, cute.size(l) - 1 do
    local v = l(i)
    set[v] = (set[v] or 0) + 1
  end
  return set
end

function H.injective(l)
  for _, n in pairs(H.image(l)) do
    if n > 1 then return false end
  end
  return true
end

--- True where composition(A, B) is A(B(c)) point-wise: B of one mode (one
-- leaf), or B's modes covering disjoint digit ranges (B has a complement),
-- as in CuTe; over a B whose modes overlap, C++ CuTe's by-mode result differs.
function H.distributes(b)
  return type(b.shape) == "number" or cute.rank(cute.flatten(b)) == 1 or (pcall(cute.complement, cute.filter(b)))
end

local function has_unit_mode(l)
  local s = cute.flatten(l.shape)
  for _, e in ipairs(type(s) == "table" and s or { s }) do
    if e == 1 then return true end
  end
  return false
end

--- R = composition(A, B) for a layout B: R(i) == A(B(i)) for every i (where
-- that is CuTe's contract, see distributes), size(R) == size(B), and R's
-- shape refines B's. Past the end of A (B(i) >= size(A)) a composition
-- extends coalesce(A), as C++ CuTe's does, which is A's own extension unless
-- A has a mode of extent 1: there only B(i) < size(A) is compared.
function P.composition(a, b, r)
  if cute.size(r) ~= cute.size(b) then fail("%s o %s = %s: sizes differ", tostring(a), tostring(b), tostring(r)) end
  if not cute.weakly_congruent(b.shape, r.shape) then
    fail("%s o %s = %s: the shape does not refine B's", tostring(a), tostring(b), tostring(r))
  end
  if not H.distributes(b) then return end
  local n, whole = cute.size(a), not has_unit_mode(a)
  for i = 0, cute.size(b) - 1 do
    if (whole or b(i) < n) and a(b(i)) ~= r(i) then
      fail("%s o %s = %s: R(%d) = %s, A(B(%d)) = %s", tostring(a), tostring(b), tostring(r), i, tostring(r(i)), i,
        tostring(a(b(i))))
    end
  end
end

--- C = complement(L, cot): disjoint from L, (filter(L), C) injective and
-- covering [0, cot), C sorted by stride.
function P.complement(l, cot, c)
  local what = string.format("complement(%s, %s) = %s", tostring(l), tostring(cot), tostring(c))
  local li, ci = H.image(l), H.image(c)
  for v in pairs(ci) do
    if v ~= 0 and li[v] then fail("%s: overlap at %s", what, tostring(v)) end
  end
  local whole = cute.make_layout(cute.filter(l), c)
  if not H.injective(whole) then fail("%s: (filter(L), C) = %s is not injective", what, tostring(whole)) end
  local wi = H.image(whole)
  for v = 0, cot - 1 do
    if not wi[v] then fail("%s: (filter(L), C) = %s misses %d", what, tostring(whole), v) end
  end
  local d = cute.flatten(c.stride)
  d = type(d) == "table" and d or { d }
  for k = 2, #d do
    if d[k - 1] >= d[k] then fail("%s: strides not increasing", what) end
  end
end

--- R = right_inverse(L): L(R(i)) == i for i < size(R).
function P.right_inverse(l, r)
  for i = 0, cute.size(r) - 1 do
    if l(r(i)) ~= i then
      fail("right_inverse(%s) = %s: L(R(%d)) = %s", tostring(l), tostring(r), i, tostring(l(r(i))))
    end
  end
end

--- R = left_inverse(L) of an injective L: R(L(i)) == i for i < size(L).
function P.left_inverse(l, r)
  for i = 0, cute.size(l) - 1 do
    if r(l(i)) ~= i then
      fail("left_inverse(%s) = %s: R(L(%d)) = %s", tostring(l), tostring(r), i, tostring(r(l(i))))
    end
  end
end

--- The four forms of dividing A by the tiler t (d logical, z zipped, td
-- tiled, f flat): the same function, the size kept (rounded up), and for
-- a layout or integer tiler B, d = (A o B, A o complement(B, size(A))).
function P.divide(a, t, d, z, td, f)
  local what = string.format("logical_divide(%s, %s) = %s", tostring(a), cute.pretty_str(t), tostring(d))
  if cute.size(d) < cute.size(a) then fail("%s: smaller than A", what) end
  if cute.size(z) ~= cute.size(d) or cute.rank(z) ~= 2 then fail("%s: zipped form %s", what, tostring(z)) end
  local tz = H.table_of(z)
  if not H.same(tz, H.table_of(td)) then fail("%s: tiled form %s differs from %s", what, tostring(td), tostring(z)) end
  if not H.same(tz, H.table_of(f)) then fail("%s: flat form %s differs from %s", what, tostring(f), tostring(z)) end
  if cute.is_layout(t) or type(t) == "number" then
    local b = cute.is_layout(t) and t or cute.make_layout(t)
    if not H.same(H.table_of(cute.composition(a, b)), H.table_of(cute.get(d, 0))) then
      fail("%s: mode 0 is not A o B", what)
    end
    local rest = cute.complement(b, cute.size(a))
    if cute.size(b) * cute.size(rest) ~= cute.size(d) then fail("%s: size is not size(B) * size(rest)", what) end
    if not H.same(H.table_of(cute.composition(a, rest)), H.table_of(cute.get(d, 1))) then
      fail("%s: mode 1 is not A o complement(B, size(A))", what)
    end
  end
end

--- p = logical_product(A, B) for a layout B: (A, P) with p(i, j) == A(i) + P(j),
-- size(A) * size(B) elements, injective where A and B are.
function P.logical_product(a, b, p)
  local what = string.format("logical_product(%s, %s) = %s", tostring(a), tostring(b), tostring(p))
  if cute.size(p) ~= cute.size(a) * cute.size(b) then fail("%s: wrong size", what) end
  if not H.same(H.table_of(a), H.table_of(cute.get(p, 0))) then fail("%s: mode 0 is not A", what) end
  local second = cute.get(p, 1)
  for i = 0, cute.size(a) - 1 do
    for j = 0, cute.size(b) - 1 do
      if a(i) + second(j) ~= p(i, j) then fail("%s: p(%d,%d) ~= A(%d) + P(%d)", what, i, j, i, j) end
    end
  end
  if H.injective(a) and H.injective(b) and not H.injective(p) then fail("%s: not injective", what) end
end

--- c = coalesce(L): the same function of the same size.
function P.coalesce(l, c)
  if cute.size(c) ~= cute.size(l) then fail("coalesce(%s) = %s: sizes differ", tostring(l), tostring(c)) end
  for i = 0, cute.size(l) - 1 do
    if c(i) ~= l(i) then fail("coalesce(%s) = %s differs at %d", tostring(l), tostring(c), i) end
  end
end

--- f = filter(L): the same set of values, without the repeats of stride-0 modes.
function P.filter(l, f)
  local a, b = H.image(l), H.image(f)
  for v in pairs(a) do
    if not b[v] then fail("filter(%s) = %s lacks %s", tostring(l), tostring(f), tostring(v)) end
  end
  for v in pairs(b) do
    if not a[v] then fail("filter(%s) = %s adds %s", tostring(l), tostring(f), tostring(v)) end
  end
end

--- sw = Swizzle(B, M, S): a bijection and an involution on [0, 2^(B+M+|S|)),
-- keeping the 2^M-element units and the bits above.
function P.swizzle(sw, b, m, s)
  local n = 2 ^ (b + m + math.abs(s))
  local seen = {}
  for x = 0, n - 1 do
    local y = sw(x)
    if not (y >= 0 and y < n) or seen[y] then fail("%s is not a bijection at %d", tostring(sw), x) end
    seen[y] = true
    if sw(y) ~= x then fail("%s is not an involution at %d", tostring(sw), x) end
    if x % 2 ^ m ~= y % 2 ^ m then fail("%s splits a unit at %d", tostring(sw), x) end
    if sw(x) + 7 * n ~= sw(x + 7 * n) then fail("%s changes the bits above at %d", tostring(sw), x) end
  end
end

--- The path of the test vectors: tests/data/layout/layout_vectors.json in
-- this repository (copied from the reference set; README beside it), or
-- $CUTELUA_LAYOUT_VECTORS to try another file of the same format.
function H.vectors_path()
  local env = os.getenv("CUTELUA_LAYOUT_VECTORS")
  if env and env ~= "" then return env end
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  return here .. "/../../data/layout/layout_vectors.json"
end

--- The line of the caller of the function that calls this (for checking
-- that errors point at the spec's own line).
function H.line_here() return debug.getinfo(2, "l").currentline end

--- Runs f, expects an error; returns the message.
function H.error_of(f, ...)
  local ok, msg = pcall(f, ...)
  assert(not ok, "expected an error")
  return msg
end

return H
