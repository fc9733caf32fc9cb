-- Constant folding through the tracer, against exact arithmetic: random
-- integer expressions over the 8 integer dtypes (i8 ... u64), built from
-- constants with the tracer's operators (+ - * / % unary -, band bor bxor
-- bnot shl shr, min max, comparisons, conversions, operands of mixed widths
-- and Lua numbers), must fold to the constant that modular arithmetic gives,
-- computed exactly with LuaJIT's 64-bit integers. What the GPU decides
-- (division by zero, INT_MIN / -1, shifts by the width or more) must not
-- fold. Each seed is one kernel traced (not compiled); a failure prints its
-- seed and the expression. CUTELUA_FUZZ_LONG=1 runs 25 times as many seeds (6000 expressions, 150000);
-- CUTELUA_FUZZ_SEED=n runs seed n alone.
local cute = require "cute"
local core = require "cute.trace.core"
local ffi = require "ffi"
local bit = require "bit"

local LONG = os.getenv("CUTELUA_FUZZ_LONG") == "1"
local SEEDS = LONG and 1000 or 40
local PER_SEED = 150

local function rng(seed)
  local s = seed % 2147483647
  if s <= 0 then s = s + 2147483646 end
  return function(lo, hi)
    s = (s * 48271) % 2147483647
    return lo + s % (hi - lo + 1)
  end
end

local TYPES = {
  { name = "i8", bits = 8, signed = true }, { name = "u8", bits = 8, signed = false },
  { name = "i16", bits = 16, signed = true }, { name = "u16", bits = 16, signed = false },
  { name = "i32", bits = 32, signed = true }, { name = "u32", bits = 32, signed = false },
  { name = "i64", bits = 64, signed = true }, { name = "u64", bits = 64, signed = false },
}
for _, t in ipairs(TYPES) do t.dtype = cute[t.name] end

local U64, I64 = ffi.typeof("uint64_t"), ffi.typeof("int64_t")

-- The canonical form of x (any 64-bit integer) as a value of type t: its
-- low t.bits bits, sign-extended (int64_t) for signed types, zero-extended
-- (uint64_t) for unsigned ones.
local function norm(x, t)
  local u = ffi.cast(U64, x)
  if t.bits < 64 then
    local mask = bit.lshift(1ULL, t.bits) - 1
    u = bit.band(u, mask)
    if t.signed and bit.band(u, bit.lshift(1ULL, t.bits - 1)) ~= 0 then u = bit.bor(u, bit.bnot(mask)) end
  end
  if t.signed then return ffi.cast(I64, u) end
  return u
end

local function min_of(t) return t.signed and norm(bit.lshift(1ULL, t.bits - 1), t) or 0ULL end

-- A random constant of type t, biased to the edges (0, 1, -1, the extremes,
-- powers of two and their neighbours).
local function random_bits(r, t)
  local c = r(1, 8)
  local x
  if c == 1 then x = 0ULL
  elseif c == 2 then x = 1ULL
  elseif c == 3 then x = ffi.cast(U64, -1LL)
  elseif c == 4 then x = bit.lshift(1ULL, t.bits - 1) + r(-1, 0)
  elseif c == 5 then x = bit.lshift(1ULL, r(0, t.bits - 1)) + r(-1, 1)
  elseif c == 6 then x = ffi.cast(U64, r(-20, 20))
  else
    x = bit.bor(bit.lshift(ffi.cast(U64, r(0, 2 ^ 30)), 34), bit.lshift(ffi.cast(U64, r(0, 2 ^ 30)), 17),
      ffi.cast(U64, r(0, 2 ^ 17)))
  end
  return norm(x, t)
end

-- The exact result of a binary op on canonical values of type t; nil where
-- the GPU decides (not folded).
local function ref_binop(op, t, a, b)
  local ua, ub = ffi.cast(U64, a), ffi.cast(U64, b)
  if op == "+" then return norm(ua + ub, t) end
  if op == "-" then return norm(ua - ub, t) end
  if op == "*" then return norm(ua * ub, t) end
  if op == "/" or op == "%" then
    if b == 0 then return nil end
    if t.signed and a == min_of(t) and b == -1 then return nil end
    return norm(op == "/" and a / b or a % b, t) -- C's truncation and remainder, as LuaJIT's int64/uint64
  end
  if op == "band" then return norm(bit.band(ua, ub), t) end
  if op == "bor" then return norm(bit.bor(ua, ub), t) end
  if op == "bxor" then return norm(bit.bxor(ua, ub), t) end
  if op == "shl" or op == "shr" then
    if ub >= t.bits then return nil end
    local k = tonumber(ub)
    if op == "shl" then return norm(bit.lshift(ua, k), t) end
    return norm(t.signed and bit.arshift(ffi.cast(I64, a), k) or bit.rshift(ua, k), t)
  end
  if op == "min" then return (a < b) and a or b end
  if op == "max" then return (a > b) and a or b end
  error("no reference for " .. op)
end

local CMP = { lt = function(a, b) return a < b end, le = function(a, b) return a <= b end,
  gt = function(a, b) return a > b end, ge = function(a, b) return a >= b end,
  eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end }

local BINOPS = { "+", "-", "*", "/", "%", "band", "bor", "bxor", "shl", "shr", "min", "max" }

local function show(x) return tostring(x):gsub("U?LL$", "") end

-- The folded constant of a traced value as int64 bits, or nil when it is not a constant.
local iv, dv = ffi.new("int64_t[1]"), ffi.new("double[1]")
local function folded(v)
  local T = core.current()
  if core.ir().const_value(T.f, core.use(v), iv, dv) ~= 1 then return nil end
  return iv[0]
end

-- One seed: PER_SEED random expressions traced in one kernel body. Returns
-- the failures (strings) and counts of what was checked.
local function run_seed(seed)
  local r = rng(seed)
  local failures, stats = {}, { folded = 0, kept = 0, compares = 0, expressions = 0 }
  local function fail(text) failures[#failures + 1] = string.format("seed %d: %s", seed, text) end

  -- An expression of type t: {v = the traced value, x = its exact canonical value, s = its text}, or nil
  -- when an operand is left to the GPU.
  local function gen(t, depth)
    if depth <= 0 or r(1, 4) == 1 then
      local x = random_bits(r, t)
      return { v = core.const(core.scalar(t.dtype), x), x = x, s = t.name .. "(" .. show(x) .. ")" }
    end
    local c = r(1, 10)
    if c == 1 then -- a conversion from another integer type
      local from = TYPES[r(1, #TYPES)]
      local e = gen(from, depth - 1)
      if not e then return nil end
      local x = norm(e.x, t)
      return { v = e.v:to(t.dtype), x = x, s = e.s .. ":to(" .. t.name .. ")" }
    end
    if c == 2 and t.signed then
      local e = gen(t, depth - 1)
      if not e then return nil end
      return { v = -e.v, x = norm(0ULL - ffi.cast(U64, e.x), t), s = "-" .. e.s }
    end
    if c == 3 then
      local e = gen(t, depth - 1)
      if not e then return nil end
      return { v = e.v:bnot(), x = norm(bit.bnot(ffi.cast(U64, e.x)), t), s = e.s .. ":bnot()" }
    end
    local op = BINOPS[r(1, #BINOPS)]
    local a = gen(t, depth - 1)
    if not a then return nil end
    local b, bv, bs
    -- sometimes an operand of a narrower type of the same signedness
    local narrow = (op ~= "shl" and op ~= "shr") and r(1, 5) == 1
    if r(1, 4) == 1 and op ~= "/" and op ~= "%" then
      -- a Lua number (or a 64-bit literal) as the second operand, taken at a's type
      local x = random_bits(r, t)
      if op == "shl" or op == "shr" then x = norm(r(0, t.bits - 1), t) end
      b = { x = x }
      if t.bits == 64 then bv = x else bv = tonumber(x) end
      bs = show(x)
    elseif narrow and t.bits > 8 then
      local nt
      for _, u in ipairs(TYPES) do if u.signed == t.signed and u.bits == t.bits / 2 then nt = u end end
      b = gen(nt, depth - 1)
      if not b then return nil end
      b = { v = b.v, x = norm(b.x, t), s = b.s } -- promoted: extended by its own signedness
      bv, bs = b.v, b.s
    else
      b = gen(t, depth - 1)
      if not b then return nil end
      if op == "shl" or op == "shr" then -- mostly shift amounts below the width
        if r(1, 6) > 1 then
          local k = norm(r(0, t.bits - 1), t)
          b = { v = core.const(core.scalar(t.dtype), k), x = k, s = t.name .. "(" .. show(k) .. ")" }
        end
      end
      bv, bs = b.v, b.s
    end
    local text = string.format("(%s %s %s)", a.s, op, bs)
    local v
    if op == "+" then v = a.v + bv
    elseif op == "-" then v = a.v - bv
    elseif op == "*" then v = a.v * bv
    elseif op == "/" then v = a.v / bv
    elseif op == "%" then v = a.v % bv
    elseif op == "min" then v = cute.min(a.v, bv)
    elseif op == "max" then v = cute.max(a.v, bv)
    else v = a.v[op](a.v, bv) end
    local want = ref_binop(op, t, a.x, b.x)
    local got = folded(v)
    if want == nil then
      stats.kept = stats.kept + 1
      if got ~= nil then fail(string.format("%s : %s folded to %s, which the GPU decides", text, t.name, show(got))) end
      return nil
    end
    stats.folded = stats.folded + 1
    local want_bits = ffi.cast(I64, norm(want, { bits = t.bits, signed = true }))
    if got == nil then
      fail(string.format("%s : %s was not folded (want %s)", text, t.name, show(want)))
    elseif got ~= want_bits then
      fail(string.format("%s : %s folded to %s, want %s", text, t.name, show(got), show(want)))
    end
    return { v = v, x = want, s = text }
  end

  local k = cute.kernel("fold_fuzz_" .. seed, function(x)
    for _ = 1, PER_SEED do
      local t = TYPES[r(1, #TYPES)]
      local e = gen(t, r(1, 4))
      stats.expressions = stats.expressions + 1
      if e and r(1, 3) == 1 then -- a comparison with another expression of the type
        local f = gen(t, r(0, 2))
        if f then
          local name = ({ "lt", "le", "gt", "ge", "eq", "ne" })[r(1, 6)]
          local got = folded(e.v[name](e.v, f.v))
          stats.compares = stats.compares + 1
          local want = CMP[name](e.x, f.x) and 1 or 0
          if got == nil or (got ~= 0 and 1 or 0) ~= want then
            fail(string.format("%s:%s(%s) : bool gave %s, want %d", e.s, name, f.s, tostring(got), want))
          end
        end
      end
    end
    x[0] = 0
    error("fold fuzz: traced", 0) -- traced, not compiled
  end)
  local ok, e = pcall(k.compile, k, cute.fake_tensor(cute.f32, 4))
  if ok or e ~= "fold fuzz: traced" then fail("the trace failed: " .. tostring(e)) end
  return failures, stats
end

describe("constant folding, fuzzed against exact arithmetic", function()
  it("folds random integer expressions of the 8 integer dtypes exactly", function()
    local seeds = {}
    if os.getenv("CUTELUA_FUZZ_SEED") then
      seeds[1] = tonumber(os.getenv("CUTELUA_FUZZ_SEED"))
    else
      for s = 1, SEEDS do seeds[s] = s * 7907 end
    end
    local failures, total = {}, { folded = 0, kept = 0, compares = 0, expressions = 0 }
    for _, seed in ipairs(seeds) do
      local f, st = run_seed(seed)
      for _, line in ipairs(f) do failures[#failures + 1] = line end
      for key, n in pairs(st) do total[key] = total[key] + n end
    end
    assert(#failures == 0, #failures .. " mismatches (rerun one with CUTELUA_FUZZ_SEED=n):\n"
      .. table.concat(failures, "\n", 1, math.min(#failures, 20)))
    if not os.getenv("CUTELUA_FUZZ_SEED") then
      -- the generator reaches what it is meant to
      assert.is_true(total.folded > #seeds * PER_SEED, "folded " .. total.folded)
      assert.is_true(total.kept > #seeds, "left to the GPU " .. total.kept)
      assert.is_true(total.compares > #seeds * PER_SEED / 6, "compares " .. total.compares)
    end
  end)
end)
