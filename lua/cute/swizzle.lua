--- cute.swizzle: CuTe's Swizzle<B, M, S>, a bijection on offsets used to
-- spread shared-memory accesses over banks.
--
--   Swizzle(B, M, S)(x) = x XOR ((x AND yyy) >> S)
--
--   bit:  ... | B bits yyy | ... | B bits zzz | M bits kept |
--         yyy = (2^B - 1) << (M + max(0, S)),  zzz = yyy >> S
--
-- The B bits of x at yyy are XORed into the B bits at zzz; the 2^M-element
-- units are never split. S < 0 shifts left instead (yyy below zzz).
-- Invariants, checked when a Swizzle is made: B, M >= 0, |S| >= B (so the
-- two fields do not overlap) and B + M + |S| <= 32 (exact on LuaJIT's 32-bit
-- bit operations; offsets above 2^32 keep their high bits).
--
-- A swizzle composed with a layout, Swizzle o offset o L, is a
-- cute.layout ComposedLayout: composition(Swizzle(3,4,3), L) makes one.
local arith = require "cute.arith"
local err = require "cute._err"
local bit = require "bit"

local band, bxor, rshift, lshift = bit.band, bit.bxor, bit.rshift, bit.lshift
local floor, type = math.floor, type

local M = {}

local Swizzle = { __name = "Swizzle" }
Swizzle.__index = Swizzle

local TWO31, TWO32 = 2 ^ 31, 2 ^ 32

local function is_small_int(x) return type(x) == "number" and x == floor(x) and x >= -64 and x <= 64 end

--- Swizzle(B, M, S): the swizzle functor (CuTe DSL: make_swizzle(b, m, s)).
-- @param b the number of bits of the mask (BBits)
-- @param m the number of least-significant bits kept (MBase)
-- @param s the distance of the shift (SShift)
-- @return a Swizzle, callable on an offset
-- @usage cute.make_swizzle(3, 3, 3)(64)  -- 72
function M.Swizzle(b, m, s)
  local args = string.format("Swizzle(%s,%s,%s)", arith.show(b), arith.show(m), arith.show(s))
  if not (is_small_int(b) and is_small_int(m) and is_small_int(s)) then
    err.raise("Swizzle: B, M and S must be static integers, got %s", args)
  end
  if b < 0 then err.raise("Swizzle: the number of bits B = %d must not be negative in %s", b, args) end
  if m < 0 then err.raise("Swizzle: the base M = %d must not be negative in %s", m, args) end
  if math.abs(s) < b then
    err.raise("Swizzle: |S| = %d must be at least B = %d (the XORed bit fields would overlap) in %s",
      math.abs(s), b, args)
  end
  if b + m + math.abs(s) > 32 then
    err.raise("Swizzle: B + M + |S| = %d exceeds 32 bits in %s", b + m + math.abs(s), args)
  end
  local yyy = (2 ^ b - 1) * 2 ^ (m + math.max(0, s))
  local zzz = (2 ^ b - 1) * 2 ^ (m - math.min(0, s))
  return setmetatable({ bits = b, base = m, shift = s, yyy_mask = yyy, zzz_mask = zzz }, Swizzle)
end
M.make_swizzle = M.Swizzle

--- is_swizzle(x): x is a Swizzle.
-- @param x any value
-- @treturn bool
-- @usage cute.is_swizzle(cute.make_swizzle(3, 3, 3))  -- true
function M.is_swizzle(x) return getmetatable(x) == Swizzle end

Swizzle.__tostring = function(sw) return string.format("S<%d,%d,%d>", sw.bits, sw.base, sw.shift) end
Swizzle.__eq = function(a, b) return a.bits == b.bits and a.base == b.base and a.shift == b.shift end

local function to_u32(x) return x < 0 and x + TWO32 or x end

--- sw(x): the swizzled offset (x a non-negative integer, static or dynamic).
function Swizzle.__call(sw, x)
  if sw.bits == 0 then return x end
  if type(x) == "number" then
    if x < 0 or x ~= floor(x) or x >= arith.LIMIT then
      err.raise("%s: offset %s is not a non-negative integer below 2^53", tostring(sw), arith.show(x))
    end
    local s = sw.shift
    if x < TWO31 then
      local y = band(x, sw.yyy_mask)
      y = s >= 0 and rshift(y, s) or lshift(y, -s)
      return to_u32(bxor(x, y))
    end
    local hi = floor(x / TWO32)
    local lo = x - hi * TWO32
    local y = band(lo, sw.yyy_mask) -- bit operations take their operands modulo 2^32
    y = s >= 0 and rshift(y, s) or lshift(y, -s)
    return hi * TWO32 + to_u32(bxor(lo, y))
  end
  -- dynamic: the yyy field, moved to zzz, XORed in (the only operation the
  -- dynamic type must provide beyond div/mod/mul is bxor). A constant part
  -- of x that is a multiple of 2^(top bit read or written) passes through:
  -- sw(y + h) = sw(y) + h, so that it can become an address immediate.
  local ops = arith.dyn(x)
  if ops and ops.split then
    local base, c = ops.split(x)
    if c ~= 0 then
      local span = 2 ^ (sw.base + sw.bits + math.max(0, sw.shift))
      local lo_c = c % span
      local hi_c = c - lo_c
      if hi_c ~= 0 then return arith.add(sw(arith.add(base, lo_c)), hi_c) end
    end
  end
  local lo = sw.base + math.max(0, sw.shift)
  local field = arith.mod(arith.div(x, 2 ^ lo), 2 ^ sw.bits)
  return arith.bxor(x, arith.mul(field, 2 ^ (sw.base - math.min(0, sw.shift))))
end

--- sw:apply(x): the same as sw(x).
function Swizzle.apply(sw, x) return sw(x) end

return M
