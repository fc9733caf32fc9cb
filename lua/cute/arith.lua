--- cute.arith: the leaf arithmetic of the layout algebra.
--
-- Every operation the algebra performs on a leaf of a shape, stride or
-- coordinate goes through this module, so that one place decides between
-- folding and emitting code:
--
--   * a static leaf is a Lua number holding an integer with |x| < 2^53; two
--     static operands fold here, exactly, or raise (never round);
--   * a dynamic leaf is a value (table or cdata) whose metatable has a field
--     `__cute_int`: a table of functions {add, sub, mul, neg, div, mod, min,
--     max} (div/mod: floor division and modulo of non-negative integers; each
--     takes two operands, either of which may be a Lua number, and returns a
--     new dynamic value). Optional: bxor, band, shr, shl (needed only to
--     swizzle a dynamic offset). The kernel tracer gives its run-time integers
--     such a metatable;
--   * a ScaledBasis stride (`1@0`, see E below) is a stride whose unit is a
--     mode of a coordinate, used by identity layouts.
--
-- Folding with a static 0 or 1 on one side (x+0, x*1, x*0, x//1, x%1) never
-- calls the dynamic type, so a static layout costs nothing at run time and a
-- mixed one emits only the operations it needs.
--
-- LuaJIT has no integer division: `math.floor(a / b)` is exact here because
-- |a| < 2^53 (the nearest non-integral quotient a/b is at least 1/|b| away
-- from an integer, more than the rounding error |a/b| * 2^-53), and the
-- remainder uses math.fmod, which is always exact.
local err = require "cute._err"
local ffi = require "ffi"
local bit = require "bit"

local floor, fmod, type, getmetatable = math.floor, math.fmod, type, getmetatable

local M = {}

local LIMIT = 2 ^ 53
M.LIMIT = LIMIT

local function fmt_num(x)
  if x == floor(x) and x > -LIMIT and x < LIMIT then return string.format("%d", x) end
  return string.format("%.17g", x)
end

--- A leaf in CuTe notation: integers plainly, dynamic values through their
-- __tostring (or "?"), ScaledBasis as value@mode.
function M.show(x)
  local t = type(x)
  if t == "number" then return fmt_num(x) end
  if t == "table" then
    local mt = getmetatable(x)
    if mt and mt.__tostring then return tostring(x) end
    return "?"
  end
  if t == "cdata" then
    local ok, s = pcall(tostring, x)
    return ok and s or "?"
  end
  return tostring(x)
end

-- Dynamic operation tables of cdata types, by ctype id (false: not dynamic).
local cdata_ops = {}

local function cdata_dyn(x)
  local id = tonumber(ffi.typeof(x))
  local ops = cdata_ops[id]
  if ops == nil then
    local ok, v = pcall(function() return x.__cute_int end)
    ops = ok and type(v) == "table" and v or false
    cdata_ops[id] = ops
  end
  return ops or nil
end

--- The `__cute_int` operation table of a dynamic leaf, or nil.
local function dyn(x)
  local t = type(x)
  if t == "table" then
    local mt = getmetatable(x)
    return type(mt) == "table" and rawget(mt, "__cute_int") or nil
  elseif t == "cdata" then
    return cdata_dyn(x)
  end
  return nil
end
M.dyn = dyn

-- x == n for a literal number n, without calling a traced value's __eq (which
-- must find its caller to tell cutelua's code from the user's: a stack walk
-- that took an eighth of a GEMM's trace). Traced values are never literals.
local rawequal = rawequal
local function lit(x, n)
  if rawequal(x, n) then return true end
  if type(x) ~= "cdata" or cdata_dyn(x) then return false end
  return x == n -- 64-bit integer cdata
end
M.lit = lit

--- True for a static leaf (a Lua number).
function M.is_static(x) return type(x) == "number" end

--- True for a dynamic leaf.
function M.is_dynamic(x) return dyn(x) ~= nil end

--- True for any integer leaf: a static integer or a dynamic value.
function M.is_int(x)
  if type(x) == "number" then return x == floor(x) and x > -LIMIT and x < LIMIT end
  return dyn(x) ~= nil
end

--- Returns x if it is static; raises "<what> must be static" otherwise.
-- `what` names the operation and the role of the value, e.g.
-- "complement: stride 2 of (4,2):(1,?)".
function M.static(x, what)
  if type(x) == "number" then return x end
  err.raise("%s must be static (a Lua integer), got the dynamic value %s", what or "value", M.show(x))
end

local function overflow(a, op, b)
  err.raise("integer overflow: %s %s %s is not exact in a Lua number (|result| must stay below 2^53)",
    fmt_num(a), op, fmt_num(b))
end

local function no_op(name, a, b)
  local function kind(v)
    if type(v) == "number" or dyn(v) then return nil end
    return type(v) .. " " .. M.show(v)
  end
  local bad = kind(a) or kind(b)
  if bad then err.raise("layout arithmetic: %s is not an integer leaf (in %s)", bad, name) end
  err.raise("layout arithmetic: the dynamic integer type of %s has no '%s' operation",
    M.show(dyn(a) and a or b), name)
end

local function dispatch(name, a, b)
  local ops = dyn(a) or dyn(b)
  local f = ops and ops[name]
  if not f then no_op(name, a, b) end
  return f(a, b)
end

-- ScaledBasis ---------------------------------------------------------------
-- A stride `v@m` scales the unit vector of coordinate mode m (a path of
-- 0-based mode indices, outermost first). make_identity_layout uses them so
-- that a layout maps a coordinate to a coordinate. Sums of bases with
-- different modes only occur while evaluating a layout; they accumulate in a
-- BasisSum and become a coordinate tuple at the end (see M.basis_result).
local EMT = { __name = "ScaledBasis" }
local SUM = { __name = "BasisSum" }

local function is_basis(x) return type(x) == "table" and getmetatable(x) == EMT end
M.is_basis = is_basis

local function path_key(p) return table.concat(p, ",") end

--- The ScaledBasis value@mode; `mode` is an integer or a path table (0-based).
function M.E(mode, value)
  local p = type(mode) == "table" and { unpack(mode) } or { mode }
  return setmetatable({ v = value or 1, p = p, k = path_key(p) }, EMT)
end

EMT.__tostring = function(e)
  -- C++ order: the innermost mode first, e.g. E<0,1> prints as 1@1@0
  local parts = { M.show(e.v) }
  for i = #e.p, 1, -1 do parts[#parts + 1] = tostring(e.p[i]) end
  return table.concat(parts, "@")
end

local function scale(e, n) -- e * n (n an integer leaf)
  return setmetatable({ v = M.mul(e.v, n), p = e.p, k = e.k }, EMT)
end

local function sum_add(acc, x) -- acc (a BasisSum, number or basis) + x
  if not (type(acc) == "table" and getmetatable(acc) == SUM) then
    local s = setmetatable({ terms = {}, order = {}, base = 0 }, SUM)
    acc = sum_add(s, acc)
  end
  if is_basis(x) then
    local t = acc.terms[x.k]
    if t then
      acc.terms[x.k] = setmetatable({ v = M.add(t.v, x.v), p = t.p, k = t.k }, EMT)
    else
      acc.terms[x.k] = x
      acc.order[#acc.order + 1] = x.k
    end
  elseif type(x) == "table" and getmetatable(x) == SUM then
    acc.base = M.add(acc.base, x.base)
    for _, k in ipairs(x.order) do acc = sum_add(acc, x.terms[k]) end
  else
    acc.base = M.add(acc.base, x)
  end
  return acc
end

--- Converts the value of a layout with ScaledBasis strides (a basis, a
-- BasisSum or an integer) into a coordinate tuple: mode m of the result is
-- the sum of the terms whose basis is m. `bases` (the layout's stride
-- leaves) gives the result its shape: every mode they reach is present,
-- 0 where no term lands.
function M.basis_result(x, bases)
  local out = {}
  local function place(e, value)
    local node = out
    for d = 1, #e.p do
      local i = e.p[d] + 1
      for j = #node + 1, i - 1 do node[j] = 0 end
      if d == #e.p then
        local cur = node[i]
        if type(cur) == "table" then err.raise("identity layout: basis %s overlaps a deeper basis", tostring(e)) end
        node[i] = M.add(cur or 0, value)
      else
        if node[i] == nil or node[i] == 0 then node[i] = {} end
        node = node[i]
      end
    end
  end
  for _, e in ipairs(bases or {}) do
    if is_basis(e) then place(e, 0) end
  end
  if is_basis(x) then
    place(x, x.v)
  elseif type(x) == "table" and getmetatable(x) == SUM then
    for _, k in ipairs(x.order) do place(x.terms[k], x.terms[k].v) end
    if x.base ~= 0 then err.raise("identity layout: an integer term %s added to a coordinate", M.show(x.base)) end
  elseif x ~= 0 then
    err.raise("identity layout: an integer term %s added to a coordinate", M.show(x))
  end
  return out
end

-- Integer operations ----------------------------------------------------------

function M.add(a, b)
  if type(a) == "number" and type(b) == "number" then
    local r = a + b
    if r >= LIMIT or r <= -LIMIT then overflow(a, "+", b) end
    return r
  end
  if lit(b, 0) then return a end
  if lit(a, 0) then return b end
  if is_basis(a) or is_basis(b) or getmetatable(a) == SUM or getmetatable(b) == SUM then
    if is_basis(a) and is_basis(b) and a.k == b.k then
      return setmetatable({ v = M.add(a.v, b.v), p = a.p, k = a.k }, EMT)
    end
    return sum_add(a, b)
  end
  return dispatch("add", a, b)
end

function M.sub(a, b)
  if type(a) == "number" and type(b) == "number" then
    local r = a - b
    if r >= LIMIT or r <= -LIMIT then overflow(a, "-", b) end
    return r
  end
  if lit(b, 0) then return a end
  return dispatch("sub", a, b)
end

function M.neg(a)
  if type(a) == "number" then return -a end
  local ops = dyn(a)
  if not (ops and ops.neg) then no_op("neg", a, a) end
  return ops.neg(a)
end

function M.mul(a, b)
  if type(a) == "number" and type(b) == "number" then
    local r = a * b
    if r >= LIMIT or r <= -LIMIT then overflow(a, "*", b) end
    return r
  end
  if lit(a, 1) then return b end
  if lit(b, 1) then return a end
  if lit(a, 0) or lit(b, 0) then return 0 end
  if is_basis(a) then return scale(a, b) end
  if is_basis(b) then return scale(b, a) end
  return dispatch("mul", a, b)
end

local function divzero(a, op, b)
  err.raise("layout arithmetic: division by zero in %s %s %s", M.show(a), op, M.show(b))
end

--- Floor division.
function M.div(a, b)
  if type(a) == "number" and type(b) == "number" then
    if b == 0 then divzero(a, "div", b) end
    return floor(a / b)
  end
  if lit(b, 1) then return a end
  if lit(b, 0) then divzero(a, "div", b) end
  if lit(a, 0) then return 0 end
  return dispatch("div", a, b)
end

--- Floor modulo (the sign of b).
function M.mod(a, b)
  if type(a) == "number" and type(b) == "number" then
    if b == 0 then divzero(a, "mod", b) end
    local r = fmod(a, b)
    if r ~= 0 and (r < 0) ~= (b < 0) then r = r + b end
    return r
  end
  if lit(b, 1) then return 0 end
  if lit(b, 0) then divzero(a, "mod", b) end
  if lit(a, 0) then return 0 end
  return dispatch("mod", a, b)
end

function M.min(a, b)
  if type(a) == "number" and type(b) == "number" then return a < b and a or b end
  if rawequal(a, b) then return a end
  return dispatch("min", a, b)
end

function M.max(a, b)
  if type(a) == "number" and type(b) == "number" then return a > b and a or b end
  if rawequal(a, b) then return a end
  return dispatch("max", a, b)
end

--- ceil(a / b) for a >= 0, b > 0: folds statically, else (a + b - 1) // b.
function M.ceil_div(a, b)
  if type(a) == "number" and type(b) == "number" then
    if b == 0 then divzero(a, "ceil_div", b) end
    return -floor(-a / b)
  end
  if b == 1 then return a end
  return M.div(M.add(a, M.sub(b, 1)), b)
end

--- a == b when that is decidable: true/false for static operands (and for
-- equal ScaledBases), true for the same dynamic object, nil when unknown.
function M.equal(a, b)
  if type(a) == "number" and type(b) == "number" then return a == b end
  if rawequal(a, b) then return true end
  if is_basis(a) and is_basis(b) then
    if a.k ~= b.k then return false end
    return M.equal(a.v, b.v)
  end
  if is_basis(a) or is_basis(b) then
    -- a basis is never equal to a plain integer, except 0 * basis
    return nil
  end
  return nil
end

--- Greatest common divisor of two static non-negative integers.
function M.gcd(a, b)
  while b ~= 0 do a, b = b, fmod(a, b) end
  return a
end

-- Bit operations, for swizzles: exact on 0 <= a < 2^53 with masks and shifts
-- inside the low 32 bits (the swizzle module checks that); the bits above
-- are carried through untouched.
local TWO32 = 2 ^ 32

local function split(a) -- a = hi * 2^32 + lo
  local hi = floor(a / TWO32)
  return hi, a - hi * TWO32
end

local function u32(x) -- bit results are signed 32-bit
  return x < 0 and x + TWO32 or x
end

function M.bxor(a, b)
  if type(a) == "number" and type(b) == "number" then
    local ah, al = split(a)
    local bh, bl = split(b)
    return bit.bxor(ah, bh) * TWO32 + u32(bit.bxor(al, bl))
  end
  if lit(b, 0) then return a end
  return dispatch("bxor", a, b)
end

function M.band(a, b)
  if type(a) == "number" and type(b) == "number" then
    local ah, al = split(a)
    local bh, bl = split(b)
    return bit.band(ah, bh) * TWO32 + u32(bit.band(al, bl))
  end
  if b == 0 then return 0 end
  return dispatch("band", a, b)
end

--- a >> n (n a static non-negative shift; a non-negative).
function M.shr(a, n)
  if n == 0 then return a end
  if type(a) == "number" then return floor(a / 2 ^ n) end
  local ops = dyn(a)
  if ops and ops.shr then return ops.shr(a, n) end
  return M.div(a, 2 ^ n)
end

--- a << n (n a static non-negative shift).
function M.shl(a, n)
  if n == 0 then return a end
  if type(a) == "number" then return M.mul(a, 2 ^ n) end
  local ops = dyn(a)
  if ops and ops.shl then return ops.shl(a, n) end
  return M.mul(a, 2 ^ n)
end

return M
