-- A bounded fuzzer of the layout algebra's public functions: random calls on
-- random layouts and tuples (nested shapes, compact, strided, with holes,
-- negative and zero strides), each result checked against the operation's
-- defining property (layout.helper's H.props, as properties_spec), then the
-- same calls with one argument, or one leaf inside it, replaced by a bad
-- value (nil, strings, NaN, inf, 2^60, fractions, empty, cyclic and 10^5-deep
-- tables, layouts where tuples belong, ...).
--
-- Every error must be a user error located at this file's calling line,
-- never an internal one ("attempt to index", "stack overflow", ...), and a
-- call that succeeds must return valid values (layouts with integer extents
-- and strides below 2^53), whatever its input.
--
-- A few seconds by default; CUTELUA_FUZZ_LONG=1 runs 20 times as many cases
-- (about a minute).
-- The seed is random (printed, and part of the test's name);
-- CUTELUA_FUZZ_SEED=N repeats a run.
local cute = require "cute"
local ffi = require "ffi"
local H = require "layout.helper"

local P = H.props
local FILE = "tests/spec/layout/fuzz_spec.lua"
local LONG = os.getenv("CUTELUA_FUZZ_LONG") == "1"
local SEED = tonumber(os.getenv("CUTELUA_FUZZ_SEED") or "")
  or (math.floor(os.time() * 1000 + os.clock() * 1e6) % 2147483646) + 1
local CASES = LONG and 60 or 3 -- multiplier of the case counts below
io.stdout:write(string.format("layout fuzz: seed %d (CUTELUA_FUZZ_SEED=%d repeats it)%s\n", SEED, SEED,
  LONG and ", long run" or ""))

-- The random source: Park-Miller (48271), exact in doubles, independent of
-- math.random and of anything else the process does.
local state = SEED
local function rnd(n) -- an integer in [1, n]
  state = (state * 48271) % 2147483647
  return state % n + 1
end
local function pick(t) return t[rnd(#t)] end
local function chance(p) return rnd(1000) <= p * 1000 end

-- Calling -------------------------------------------------------------------

-- Every call goes through this line: its errors must name it.
local function attempt(f, ...)
  return debug.getinfo(1, "l").currentline, pcall(f, ...)
end

local function short(v)
  local ok, s = pcall(cute.pretty_str, v)
  s = ok and s or ("<" .. type(v) .. ">")
  return #s > 200 and s:sub(1, 200) .. "..." or s
end

local function describe_call(name, args, n)
  local parts = {}
  for i = 1, n do parts[i] = short(args[i]) end
  return string.format("seed %d: cute.%s(%s)", SEED, name, table.concat(parts, ", "))
end

-- an error message is a located user error: "<this file>:<line>: ..."
local function check_error(msg, line, call)
  msg = tostring(msg)
  local prefix = FILE .. ":" .. line .. ": "
  if msg:sub(1, #prefix) ~= prefix then
    error(string.format("%s raised an error not located at %s:%d: %s", call, FILE, line, msg), 0)
  end
  local text = msg:sub(#prefix + 1)
  for _, bad in ipairs { "attempt to", "stack overflow", "internal error", "bad argument", "table index is" } do
    if text:find(bad, 1, true) then error(string.format("%s raised an internal error: %s", call, msg), 0) end
  end
end

-- a static leaf the algebra may return: an integer with |x| < 2^53
local function valid_int(x)
  return type(x) == "number" and x == math.floor(x) and x > -2 ^ 53 and x < 2 ^ 53
end

local function valid_tuple(t, leaf, depth)
  depth = depth or 0
  if depth > cute.int_tuple.MAX_DEPTH then return false end
  if type(t) == "table" and (getmetatable(t) == nil or getmetatable(t) == cute.int_tuple.internal.TUPLE) then
    if #t == 0 then return false end
    for i = 1, #t do
      if not valid_tuple(t[i], leaf, depth + 1) then return false end
    end
    return true
  end
  return leaf(t)
end

local function is_basis(x) return type(x) == "table" and (getmetatable(x) or {}).__name == "ScaledBasis" end

-- every layout inside a result is a valid one; with `numeric`, every number
-- too (a structural operation may return the user's own deep or cyclic
-- table inside its result: that is not descended into)
local function check_result(r, numeric, call, seen, depth)
  seen, depth = seen or {}, depth or 0
  if depth > cute.int_tuple.MAX_DEPTH then return end
  if type(r) == "number" then
    if numeric and not valid_int(r) then error(call .. " returned the non-integer " .. tostring(r), 0) end
  elseif cute.is_layout(r) then
    if not valid_tuple(r.shape, function(x) return valid_int(x) and x >= 1 end) then
      error(call .. " returned a layout with an invalid shape: " .. tostring(r), 0)
    end
    if not valid_tuple(r.stride, function(x) return valid_int(x) or is_basis(x) end) then
      error(call .. " returned a layout with an invalid stride: " .. tostring(r), 0)
    end
  elseif type(r) == "table" and not seen[r] and (getmetatable(r) == nil
    or getmetatable(r) == cute.int_tuple.internal.TUPLE) then
    seen[r] = true
    for i = 1, #r do check_result(r[i], numeric, call, seen, depth + 1) end
  end
end

-- Random values ----------------------------------------------------------------

local EXTENTS = { 1, 2, 2, 3, 4, 4, 6, 8 }

local function gen_shape(depth, rank)
  rank = rank or rnd(3)
  if rank == 1 and chance(0.4) then return pick(EXTENTS) end
  local s = {}
  for i = 1, rank do
    if depth > 0 and chance(0.25) then
      s[i] = gen_shape(depth - 1, rnd(2) + (chance(0.3) and 1 or 0))
    else
      s[i] = pick(EXTENTS)
    end
  end
  return s
end

-- a shape of at most `max` elements
local function small_shape(max, depth, rank)
  for _ = 1, 50 do
    local s = gen_shape(depth or 2, rank)
    if cute.size(s) <= max then return s end
  end
  if not rank or rank == 1 then return 4 end
  local s = {}
  for i = 1, rank do s[i] = 2 end
  return s
end

-- a tuple of the leaves of `shape` (same nesting), each from f(extent)
local function like(shape, f)
  if type(shape) == "table" then
    local r = {}
    for i = 1, #shape do r[i] = like(shape[i], f) end
    return r
  end
  return f(shape)
end

-- strides visiting the leaves in a random order with random gaps (injective)
local function gapped_strides(shape, gaps)
  local leaves = cute.flatten(shape)
  leaves = type(leaves) == "table" and leaves or { leaves }
  local order = {}
  for i = 1, #leaves do order[i] = i end
  for i = #order, 2, -1 do
    local j = rnd(i)
    order[i], order[j] = order[j], order[i]
  end
  local d, cur = {}, 1
  for _, i in ipairs(order) do
    local gap = gaps and pick { 1, 1, 1, 2, 3 } or 1
    d[i] = cur * gap
    cur = d[i] * leaves[i]
  end
  local k = 0
  return like(shape, function()
    k = k + 1
    return d[k]
  end)
end

-- a random layout of at most `max` elements: compact (column-major,
-- row-major, ordered), injective with holes, or any strides (zero and,
-- unless `nonneg`, negative ones included)
local function gen_layout(max, nonneg, rank)
  local shape = small_shape(max or 64, 2, rank)
  local kind = rnd(6)
  if kind == 1 then return cute.make_layout(shape) end
  if kind == 2 then return cute.make_layout(shape, cute.LayoutRight) end
  if kind == 3 then return cute.make_layout(shape, gapped_strides(shape, false)) end
  if kind == 4 then return cute.make_layout(shape, gapped_strides(shape, true)) end
  local strides = nonneg and { 0, 1, 1, 2, 3, 4, 8, 16 } or { 0, 1, 1, 2, 3, 4, 8, 16, -1, -2 }
  return cute.make_layout(shape, like(shape, function() return pick(strides) end))
end

local function compact_layout(max, rank)
  local shape = small_shape(max, 2, rank)
  local k = rnd(3)
  if k == 1 then return cute.make_layout(shape) end
  if k == 2 then return cute.make_layout(shape, cute.LayoutRight) end
  return cute.make_layout(shape, gapped_strides(shape, false))
end

-- a tiler for A: an integer, a layout, or a tuple of those and _ by mode
local function gen_tiler(a, depth)
  depth = depth or 1
  local k = rnd(4)
  if k == 1 then return pick { 1, 2, 2, 3, 4, 8 } end
  if k == 2 then return gen_layout(8, true) end
  local r = cute.rank(a)
  local t = {}
  for i = 1, rnd(r) do
    local mode = cute.get(a, i - 1)
    local c = rnd(5)
    if c == 1 then
      t[i] = cute._
    elseif c == 2 and depth > 0 and cute.rank(mode) > 1 then
      t[i] = gen_tiler(mode, depth - 1)
      if type(t[i]) ~= "table" or cute.is_layout(t[i]) then t[i] = { t[i] } end
    elseif c == 3 then
      t[i] = gen_layout(4, true)
    else
      t[i] = pick { 1, 2, 2, 4 }
    end
  end
  return t
end

-- Bad values ------------------------------------------------------------------

local NIL = setmetatable({}, { __name = "NIL" }) -- stands for nil in BAD
local cyclic = { 2 }
cyclic[2] = cyclic
local cyclic2 = {}
cyclic2[1] = { 3, cyclic2 }
local wide_cycle = {}
wide_cycle[1], wide_cycle[2], wide_cycle[3] = wide_cycle, wide_cycle, wide_cycle
local deep = 4
for _ = 1, 100000 do deep = { deep } end
local deep70 = 2
for _ = 1, 70 do deep70 = { deep70 } end

local BAD = {
  NIL, true, false, "x", "4", "", {}, { {} }, { 4, {} }, { 1, n = 2 }, { [2] = 3 }, 0, -1, -3, 2.5, -0.5, 0 / 0,
  math.huge, -math.huge, 2 ^ 53, 2 ^ 60, -2 ^ 60, 1e300, cyclic, cyclic2, wide_cycle, deep, deep70, print,
  ffi.new("int64_t", 4), ffi.new("double", 2), io.stdout, coroutine.create(function() end), cute._,
  cute.Swizzle(1, 1, 1), cute.make_layout(4), cute.make_layout({ 2, 3 }, { 3, 1 }),
  cute.composition(cute.Swizzle(1, 1, 1), cute.make_layout({ 4, 4 })), cute.make_identity_layout({ 2, 3 }),
  cute.LayoutLeft,
}

local function bad_value()
  local v = pick(BAD)
  if v == NIL then return nil end
  return v
end

-- a copy of tuple t with one random leaf replaced by a bad value
local function spoil_leaf(t, depth)
  depth = depth or 0
  if type(t) ~= "table" or getmetatable(t) ~= nil and getmetatable(t) ~= cute.int_tuple.internal.TUPLE or depth > 8 then
    return bad_value()
  end
  local r = {}
  for i = 1, #t do r[i] = t[i] end
  if #r == 0 then return bad_value() end
  local i = rnd(#r)
  r[i] = spoil_leaf(r[i], depth + 1)
  return r
end

-- Operations ------------------------------------------------------------------
-- Each: gen() -> argument list, n (the argument count); check(r, args) the
-- property of a result; numeric: numbers in its result must be integers.

local function table_of(l) return H.table_of(l) end

local function size_of(x) -- the product of the leaves, computed here
  if cute.is_layout(x) then x = x.shape end
  if type(x) ~= "table" then return x end
  local p = 1
  for i = 1, #x do p = p * size_of(x[i]) end
  return p
end

local function same_function(a, b, what)
  if not H.same(table_of(a), table_of(b)) then
    error(string.format("%s: %s and %s differ", what, tostring(a), tostring(b)), 0)
  end
end

local function expect(cond, fmt, ...)
  if not cond then error(string.format(fmt, ...), 0) end
end

local OPS = {
  {
    name = "make_layout",
    gen = function()
      local s = small_shape(64)
      return { s, like(s, function() return pick { 0, 1, 2, 5, -1 } end) }, 2
    end,
    check = function(l, a)
      for i = 0, cute.size(l) - 1 do
        expect(l(i) == cute.crd2idx(cute.idx2crd(i, a[1]), a[1], a[2]), "%s at %d", tostring(l), i)
      end
    end,
  },
  {
    name = "make_ordered_layout",
    gen = function()
      local s = small_shape(64)
      return { s, like(s, function() return rnd(5) end) }, 2
    end,
    check = function(l)
      local img = H.image(l)
      for v = 0, cute.size(l) - 1 do expect(img[v] == 1, "%s is not compact", tostring(l)) end
    end,
  },
  {
    name = "composition",
    gen = function()
      local a = gen_layout(64)
      if chance(0.5) then return { a, gen_layout(16, true) }, 2 end
      return { a, gen_tiler(a) }, 2
    end,
    check = function(r, a)
      local A, t = a[1], a[2]
      if cute.is_layout(t) then
        P.composition(A, t, r)
      elseif type(t) == "number" then
        P.composition(A, cute.make_layout(t), r)
      else
        expect(cute.rank(r) == #t, "composition by mode: %s has rank %d", tostring(r), cute.rank(r))
        for m = 1, #t do
          local am, rm = cute.get(A, m - 1), cute.get(r, m - 1)
          if t[m] == cute._ then
            same_function(am, rm, "mode " .. (m - 1))
          elseif cute.is_layout(t[m]) or type(t[m]) == "number" then
            P.composition(am, cute.is_layout(t[m]) and t[m] or cute.make_layout(t[m]), rm)
          end
        end
      end
    end,
  },
  {
    name = "complement",
    gen = function()
      local l = gen_layout(32, true)
      if chance(0.3) then return { l }, 1 end
      local cos = math.max(1, cute.cosize(l))
      return { l, chance(0.5) and cos * rnd(3) or rnd(64) }, 2
    end,
    check = function(c, a) P.complement(a[1], a[2] or 1, c) end,
  },
  {
    name = "right_inverse",
    gen = function() return { gen_layout(64) }, 1 end,
    check = function(r, a) P.right_inverse(a[1], r) end,
  },
  {
    name = "left_inverse",
    gen = function() return { gen_layout(64, true) }, 1 end,
    check = function(r, a)
      if H.injective(a[1]) then P.left_inverse(a[1], r) end
    end,
  },
  {
    name = "logical_divide",
    gen = function()
      local a = gen_layout(64)
      return { a, gen_tiler(a) }, 2
    end,
    check = function(d, a)
      local A, t = a[1], a[2]
      if t == cute._ then return end
      P.divide(A, t, d, cute.zipped_divide(A, t), cute.tiled_divide(A, t), cute.flat_divide(A, t))
    end,
  },
  {
    name = "zipped_divide",
    gen = function()
      local a = gen_layout(64)
      return { a, chance(0.1) and cute._ or gen_tiler(a) }, 2
    end,
    check = function(z, a) same_function(z, cute.flat_divide(a[1], a[2]), "zipped vs flat") end,
  },
  {
    name = "tiled_divide",
    gen = function()
      local a = gen_layout(64)
      return { a, chance(0.1) and cute._ or gen_tiler(a) }, 2
    end,
    check = function(z, a) same_function(z, cute.zipped_divide(a[1], a[2]), "tiled vs zipped") end,
  },
  {
    name = "flat_divide",
    gen = function()
      local a = gen_layout(64)
      return { a, chance(0.1) and cute._ or gen_tiler(a) }, 2
    end,
    check = function(f, a) expect(cute.size(f) >= cute.size(a[1]), "flat_divide shrank %s", tostring(a[1])) end,
  },
  {
    name = "logical_product",
    gen = function() return { gen_layout(16, true), gen_layout(8, true) }, 2 end,
    check = function(p, a) P.logical_product(a[1], a[2], p) end,
  },
  {
    name = "zipped_product",
    gen = function()
      local a = gen_layout(16, true)
      return { a, chance(0.5) and gen_layout(8, true) or gen_tiler(a) }, 2
    end,
    check = function(p, a)
      if cute.is_layout(a[2]) then same_function(p, cute.logical_product(a[1], a[2]), "zipped vs logical") end
    end,
  },
  {
    name = "tiled_product",
    gen = function()
      local a = gen_layout(16, true)
      return { a, chance(0.5) and gen_layout(8, true) or gen_tiler(a) }, 2
    end,
    check = function(p, a) same_function(p, cute.zipped_product(a[1], a[2]), "tiled vs zipped") end,
  },
  {
    name = "flat_product",
    gen = function()
      local a = gen_layout(16, true)
      return { a, gen_layout(8, true) }, 2
    end,
    check = function(p, a) same_function(p, cute.logical_product(a[1], a[2]), "flat vs logical") end,
  },
  {
    name = "blocked_product",
    gen = function() return { gen_layout(16, true, rnd(2)), gen_layout(8, true, rnd(2)) }, 2 end,
    check = function(p, a)
      expect(cute.size(p) == cute.size(a[1]) * cute.size(a[2]), "blocked_product: size of %s", tostring(p))
      local rp = cute.raked_product(a[1], a[2])
      local x, y = H.image(p), H.image(rp)
      for v, n in pairs(x) do expect(y[v] == n, "blocked %s and raked %s differ", tostring(p), tostring(rp)) end
    end,
  },
  {
    name = "coalesce",
    gen = function()
      local l = gen_layout(64)
      if chance(0.5) then return { l }, 1 end
      return { l, like(cute.take(l.shape, 0, rnd(cute.rank(l))), function() return 1 end) }, 2
    end,
    check = function(c, a)
      P.coalesce(a[1], c)
      if a[2] then expect(cute.rank(c) == cute.rank(a[1]), "coalesce by mode changed the rank: %s", tostring(c)) end
    end,
  },
  {
    name = "filter",
    gen = function()
      local l = gen_layout(64)
      if chance(0.5) then return { l }, 1 end
      return { l, like(cute.take(l.shape, 0, rnd(cute.rank(l))), function() return 1 end) }, 2
    end,
    check = function(f, a) P.filter(a[1], f) end,
  },
  {
    name = "idx2crd",
    numeric = true,
    gen = function()
      local s = small_shape(256)
      return { rnd(cute.size(s)) - 1, s }, 2
    end,
    check = function(c, a) expect(cute.crd2idx(c, a[2]) == a[1], "idx2crd(%d) = %s", a[1], short(c)) end,
  },
  {
    name = "crd2idx",
    numeric = true,
    gen = function()
      local l = gen_layout(64)
      return { cute.idx2crd(rnd(cute.size(l)) - 1, l.shape), l }, 2
    end,
    check = function(i, a) expect(i == a[2](a[1]), "crd2idx(%s, %s) = %s", short(a[1]), tostring(a[2]), short(i)) end,
  },
  {
    name = "get_hier_coord",
    method = true,
    numeric = true,
    gen = function()
      local l = compact_layout(64)
      return { l, rnd(cute.cosize(l)) - 1 }, 2
    end,
    check = function(c, a)
      local l, i = a[1], a[2]
      if H.image(l)[i] then expect(l(c) == i, "%s:get_hier_coord(%d) = %s", tostring(l), i, short(c)) end
    end,
  },
  {
    name = "slice_and_offset",
    gen = function()
      local l = gen_layout(64, false, 2)
      return { { cute._, rnd(cute.size(l, 1)) - 1 }, l }, 2
    end,
    check = function(s, a)
      local c, l = a[1], a[2]
      local _, off = cute.slice_and_offset(c, l)
      for i = 0, cute.size(s) - 1 do expect(s(i) + off == l(i, c[2]), "slice of %s at %s", tostring(l), short(c)) end
    end,
  },
  {
    name = "local_tile",
    gen = function()
      local l = compact_layout(256, 2)
      local t = {}
      local coord = {}
      for k = 1, 2 do
        local n = cute.size(l, k - 1)
        local divs = {}
        for d = 1, n do
          if n % d == 0 then divs[#divs + 1] = d end
        end
        t[k] = pick(divs)
        coord[k] = rnd(n / t[k]) - 1
      end
      return { l, t, coord }, 3
    end,
    check = function(tile, a)
      local l, t, c = a[1], a[2], a[3]
      local _, off = cute.local_tile(l, t, c)
      for i = 0, t[1] - 1 do
        for j = 0, t[2] - 1 do
          expect(l(c[1] * t[1] + i, c[2] * t[2] + j) == off + tile(i, j), "local_tile(%s) at (%d,%d)", tostring(l),
            i, j)
        end
      end
    end,
  },
  {
    name = "local_partition",
    gen = function()
      local thr = compact_layout(8, 2)
      local reps = { rnd(3), rnd(3) }
      local shape = { cute.size(thr, 0) * reps[1], cute.size(thr, 1) * reps[2] }
      local l = chance(0.5) and cute.make_layout(shape) or cute.make_layout(shape, cute.LayoutRight)
      return { l, thr, rnd(cute.size(thr)) - 1 }, 3
    end,
    check = function(part, a)
      local l, thr = a[1], a[2]
      expect(cute.size(part) * cute.size(thr) == cute.size(l), "local_partition size %s", tostring(part))
      local owner = {}
      for tid = 0, cute.size(thr) - 1 do
        local p, off = cute.local_partition(l, thr, tid)
        for i = 0, cute.size(p) - 1 do
          expect(owner[off + p(i)] == nil, "local_partition(%s, %s): offset %d owned twice", tostring(l),
            tostring(thr), off + p(i))
          owner[off + p(i)] = tid
        end
      end
    end,
  },
  {
    name = "tile_to_shape",
    gen = function()
      local block = compact_layout(8, 2)
      return { block, { cute.size(block, 0) * rnd(3), cute.size(block, 1) * rnd(3) } }, 2
    end,
    check = function(t, a)
      local block, shape = a[1], a[2]
      expect(cute.size(t) == shape[1] * shape[2], "tile_to_shape size %s", tostring(t))
      for i = 0, cute.size(block, 0) - 1 do
        for j = 0, cute.size(block, 1) - 1 do expect(block(i, j) == t(i, j), "tile_to_shape %s", tostring(t)) end
      end
    end,
  },
  {
    name = "make_layout_tv",
    gen = function() return { compact_layout(16, 2), compact_layout(4, 2) }, 2 end,
    check = function(tiler, a)
      local _, tv = cute.make_layout_tv(a[1], a[2])
      local seen = {}
      for i = 0, cute.size(tv) - 1 do
        local v = tv(i)
        expect(v >= 0 and v < cute.size(tiler) and not seen[v], "make_layout_tv: %s", tostring(tv))
        seen[v] = true
      end
    end,
  },
  {
    name = "max_common_vector",
    numeric = true,
    gen = function()
      local a = gen_layout(32, true)
      local b = chance(0.5) and cute.make_layout(a.shape) or cute.make_layout(a.shape, cute.LayoutRight)
      return { a, b }, 2
    end,
    check = function(n, a)
      local c = cute.max_common_layout(a[1], a[2])
      expect(cute.size(c) == n, "max_common_vector %d vs %s", n, tostring(c))
      for i = 0, n - 1 do expect(a[1](c(i)) == i and a[2](c(i)) == i, "max_common_layout %s", tostring(c)) end
    end,
  },
  {
    name = "Swizzle",
    gen = function()
      local b, m = rnd(3) - 1, rnd(3) - 1
      local s = b + rnd(2) - 1
      return { b, m, chance(0.3) and -s or s }, 3
    end,
    check = function(sw, a) P.swizzle(sw, a[1], a[2], a[3]) end,
  },
  {
    name = "ceil_div",
    numeric = true,
    gen = function() return { rnd(1000) - 1, rnd(50) }, 2 end,
    check = function(q, a) expect(q == math.ceil(a[1] / a[2]), "ceil_div(%d, %d) = %s", a[1], a[2], short(q)) end,
  },
  {
    name = "round_up",
    numeric = true,
    gen = function() return { rnd(1000) - 1, rnd(50) }, 2 end,
    check = function(r, a)
      expect(r % a[2] == 0 and r >= a[1] and r - a[1] < a[2], "round_up(%d, %d) = %s", a[1], a[2], short(r))
    end,
  },
  {
    name = "shape_div",
    numeric = true,
    gen = function()
      local s = small_shape(256)
      return { s, pick { 1, 2, 4, 8 } }, 2
    end,
    check = function(q, a) expect(cute.congruent(q, a[1]), "shape_div(%s) = %s", short(a[1]), short(q)) end,
  },
  {
    name = "prefix_product",
    numeric = true,
    gen = function() return { small_shape(256) }, 1 end,
    check = function(d, a) expect(H.same(d, cute.make_layout(a[1]).stride), "prefix_product = %s", short(d)) end,
  },
  {
    name = "suffix_product",
    numeric = true,
    gen = function() return { small_shape(256) }, 1 end,
    check = function(d, a)
      expect(H.same(d, cute.make_layout(a[1], cute.LayoutRight).stride), "suffix_product = %s", short(d))
    end,
  },
  {
    name = "unflatten",
    gen = function()
      local s = small_shape(256)
      return { cute.flatten(s), s }, 2
    end,
    check = function(t, a) expect(H.same(t, a[2]), "unflatten = %s", short(t)) end,
  },
  {
    name = "size",
    numeric = true,
    gen = function() return { chance(0.5) and small_shape(256) or gen_layout(64) }, 1 end,
    check = function(n, a) expect(n == size_of(a[1]), "size(%s) = %s", short(a[1]), short(n)) end,
  },
  {
    name = "cosize",
    numeric = true,
    gen = function() return { gen_layout(64, true) }, 1 end,
    check = function(n, a)
      local m = 0
      for v in pairs(H.image(a[1])) do m = math.max(m, v) end
      expect(n == m + 1, "cosize(%s) = %s", tostring(a[1]), short(n))
    end,
  },
  {
    name = "group_modes",
    gen = function()
      local l = gen_layout(64, false, rnd(3))
      local r = cute.rank(l)
      local b = rnd(r) - 1
      return { l, b, b + rnd(r - b) }, 3
    end,
    check = function(g, a) same_function(g, a[1], "group_modes") end,
  },
  {
    name = "append",
    gen = function() return { gen_layout(16), gen_layout(4) }, 2 end,
    check = function(l, a) expect(cute.size(l) == cute.size(a[1]) * cute.size(a[2]), "append %s", tostring(l)) end,
  },
  {
    name = "format_layout",
    gen = function() return { gen_layout(64, false, rnd(2)) }, 1 end,
    check = function(s, a)
      local rows = cute.rank(a[1]) == 2 and cute.size(a[1], 0) or 1
      local lines = select(2, s:gsub("\n", ""))
      expect(lines == 3 + 2 * rows, "format_layout(%s): %d lines", tostring(a[1]), lines)
      expect(s:sub(1, #tostring(a[1]) + 1) == tostring(a[1]) .. "\n", "format_layout: title")
    end,
  },
  {
    name = "svg_layout",
    gen = function() return { gen_layout(64, false, rnd(2)) }, 1 end,
    check = function(s, a)
      local cells = select(2, s:gsub('<g class="cell"', ""))
      expect(cells == cute.size(a[1]), "svg_layout(%s): %d cells", tostring(a[1]), cells)
    end,
  },
  {
    name = "format_layout_tv",
    gen = function()
      local tiler, tv = cute.make_layout_tv(compact_layout(8, 2), compact_layout(4, 2))
      return { tv, tiler }, 2
    end,
    check = function(s) expect(select(2, s:gsub("T%d+V%d+", "")) > 0, "format_layout_tv: no cells") end,
  },
}

-- Running ---------------------------------------------------------------------

local function call(op, args, n)
  local f = op.method and function(obj, ...) return obj[op.name](obj, ...) end or cute[op.name]
  local line, ok, r = attempt(f, unpack(args, 1, n))
  return line, ok, r
end

local stats = { ok = {}, refused = {}, bad_ok = 0, bad_refused = 0 }

describe(string.format("layout fuzz (seed %d)", SEED), function()
  it("random calls: results have their operation's property; errors are located", function()
    for _ = 1, 40 * CASES do
      for _, op in ipairs(OPS) do
        local args, n = op.gen()
        local what = describe_call(op.name, args, n)
        local line, ok, r = call(op, args, n)
        if ok then
          check_result(r, op.numeric, what)
          local good, why = pcall(op.check, r, args)
          if not good then error(what .. ": " .. tostring(why), 0) end
          stats.ok[op.name] = (stats.ok[op.name] or 0) + 1
        else
          check_error(r, line, what)
          stats.refused[op.name] = (stats.refused[op.name] or 0) + 1
        end
      end
    end
    -- every operation was defined on some of its random operands, so its
    -- property was checked
    for _, op in ipairs(OPS) do
      assert.is_true((stats.ok[op.name] or 0) >= 5, string.format("seed %d: %s succeeded %d times of %d", SEED,
        op.name, stats.ok[op.name] or 0, 40 * CASES))
    end
  end)

  it("bad arguments: located errors or valid results", function()
    for _ = 1, 60 * CASES do
      for _, op in ipairs(OPS) do
        local args, n = op.gen()
        -- (a method is called on a layout: only its other arguments are spoilt)
        local k = op.method and 1 + rnd(n - 1) or rnd(n)
        if chance(0.5) then
          args[k] = bad_value()
        else
          args[k] = spoil_leaf(args[k])
        end
        local what = describe_call(op.name, args, n)
        local line, ok, r = call(op, args, n)
        if ok then
          check_result(r, op.numeric, what)
          stats.bad_ok = stats.bad_ok + 1
        else
          check_error(r, line, what)
          stats.bad_refused = stats.bad_refused + 1
        end
      end
    end
    assert.is_true(stats.bad_refused > 20 * CASES * #OPS, "seed " .. SEED .. ": few bad calls were refused")
  end)

  it("every public function of the layout modules, given bad values", function()
    local names = {}
    for _, m in ipairs { "int_tuple", "layout", "layout_algebra", "layout_tile", "swizzle", "layout_print" } do
      for k, v in pairs(cute[m]) do
        if type(k) == "string" and k:sub(1, 1) ~= "_" and type(v) == "function" and not k:find("^print_") then
          names[#names + 1] = { m, k }
        end
      end
    end
    table.sort(names, function(x, y) return x[1] .. x[2] < y[1] .. y[2] end)
    local good = { cute.make_layout({ 4, 4 }), { 4, 4 }, 4, 2, 0, cute._, { 1, 1 } }
    for _ = 1, 8 * CASES do
      for _, nk in ipairs(names) do
        local f = cute[nk[1]][nk[2]]
        local args, n = {}, rnd(4) - 1
        for i = 1, n do args[i] = chance(0.5) and pick(good) or bad_value() end
        local what = string.format("seed %d: cute.%s.%s", SEED, nk[1], nk[2])
          .. describe_call("", args, n):match("%(.*$")
        local line, ok, r = attempt(f, unpack(args, 1, n))
        if ok then check_result(r, false, what) else check_error(r, line, what) end
      end
    end
    assert.is_true(#names > 80, "only " .. #names .. " public functions found")
  end)
end)
