--- cute.sim.num: the simulator's arithmetic, as the GPU does it.
--
-- Values of simulated kernels are Lua values: i1 a boolean; i8, i16, i32 a
-- number holding the signed value; i64 an int64_t cdata (it wraps as the GPU's
-- does); every float type, the storage floats (bf16, tf32, fp8) included, a
-- number holding its value exactly. Pointers are numbers: a host address for
-- global and generic memory, a byte offset into the block's shared memory.
-- These are the helpers the generated code (cute.sim.compile) calls; each is
-- small enough for LuaJIT to inline into the kernel's trace.
local ffi = require "ffi"
local bit = require "bit"

local tobit, band, bor, lshift, rshift, arshift = bit.tobit, bit.band, bit.bor, bit.lshift,
  bit.rshift, bit.arshift
local floor, ceil, huge = math.floor, math.ceil, math.huge

ffi.cdef [[
float fmaf(float a, float b, float c);
double fma(double a, double b, double c);
float sqrtf(float a);
double erf(double a);
double tanh(double a);
double exp2(double a);
double log2(double a);
]]

local N = {}

local fcell = ffi.new("float[1]")
--- x rounded to f32 (to nearest even): a double through a float cell.
function N.f32(x)
  fcell[0] = x
  return fcell[0]
end

-- f32 and i32 bits (bitcast)
local u32f = ffi.new("union { float f; uint32_t u; int32_t i; }")
--- The bits of an f32 value, as a signed i32.
function N.f32_bits(x)
  u32f.f = x
  return u32f.i
end
--- The f32 value of i32 bits (a NaN with a payload as the canonical NaN:
-- LuaJIT takes some NaN patterns of a double for its own tagged values).
function N.bits_f32(i)
  if band(i, 0x7f800000) == 0x7f800000 and band(i, 0x7fffff) ~= 0 then return 0 / 0 end
  u32f.i = i
  return u32f.f
end
local u64d = ffi.new("union { double d; int64_t i; }")
function N.f64_bits(x)
  u64d.d = x
  return u64d.i
end
function N.bits_f64(i)
  u64d.i = i
  local d = u64d.d
  if d ~= d or type(d) ~= "number" then return 0 / 0 end
  return d
end

-- The small float formats: decode tables (bits -> value) and correctly
-- rounded encoders (value -> bits), the same rules as the C side (ir_fold.c):
-- round to nearest even; fp8 saturates to its largest finite value.
local function encoder(ebits, mbits, ieee, away, nan, maxfin)
  local bias = 2 ^ (ebits - 1) - 1
  local emin = 1 - bias
  local signbit = 2 ^ (ebits + mbits)
  local maxbits = ieee and ((2 ^ ebits - 1) * 2 ^ mbits - 1) or maxfin
  local infbits = (2 ^ ebits - 1) * 2 ^ mbits
  return function(v)
    if v ~= v then return nan end
    local sign = 0
    if v < 0 or (v == 0 and 1 / v < 0) then sign, v = signbit, -v end
    if v == huge then return sign + (ieee and infbits or maxfin) end
    if v == 0 then return sign end
    local _, e = math.frexp(v)
    e = e - 1
    if e < emin then e = emin end
    local q = v * 2 ^ (mbits - e)
    local n
    if away then
      n = floor(q + 0.5)
    else
      n = floor(q)
      local r = q - n
      if r > 0.5 or (r == 0.5 and n % 2 == 1) then n = n + 1 end
    end
    if n >= 2 ^ (mbits + 1) then
      n = n / 2
      e = e + 1
    end
    local bits
    if n < 2 ^ mbits then bits = n else bits = (e + bias) * 2 ^ mbits + (n - 2 ^ mbits) end
    if bits > maxbits then bits = ieee and infbits or maxfin end
    return sign + bits
  end
end

local function decoder(ebits, mbits, ieee, nan_all_ones)
  local bias = 2 ^ (ebits - 1) - 1
  local n = 2 ^ (1 + ebits + mbits)
  local t = ffi.new("double[?]", n)
  for b = 0, n - 1 do
    local sign = floor(b / 2 ^ (ebits + mbits)) % 2
    local e, m = floor(b / 2 ^ mbits) % 2 ^ ebits, b % 2 ^ mbits
    local v
    if ieee and e == 2 ^ ebits - 1 then
      v = m ~= 0 and (0 / 0) or huge
    elseif nan_all_ones and e == 2 ^ ebits - 1 and m == 2 ^ mbits - 1 then
      v = 0 / 0
    elseif e == 0 then
      v = m * 2 ^ (1 - bias - mbits)
    else
      v = (m + 2 ^ mbits) * 2 ^ (e - bias - mbits)
    end
    t[b] = sign == 1 and -v or v
  end
  return t
end

N.F16 = decoder(5, 10, true)
N.BF16 = decoder(8, 7, true)
N.E4M3 = decoder(4, 3, false, true)
N.E5M2 = decoder(5, 2, true)
N.enc_f16 = encoder(5, 10, true, false, 0x7e00)
N.enc_e4m3 = encoder(4, 3, false, false, 0x7f, 0x7e)
N.enc_e5m2 = encoder(5, 2, false, false, 0x7f, 0x7b)
local enc_tf32 = encoder(8, 10, true, true, 0x7fc0 / 8)

-- bf16 from an f32 value: the top half of its bits, rounded to nearest even
-- (cvt.rn.bf16.f32), or truncated (rz).
function N.enc_bf16(v)
  if v ~= v then return 0x7fc0 end
  u32f.f = v
  local u = u32f.u
  return floor((u + 0x7fff + floor(u / 65536) % 2) / 65536) % 65536
end
function N.enc_bf16_rz(v)
  if v ~= v then return 0x7fc0 end
  u32f.f = v
  return floor(u32f.u / 65536)
end

-- value -> value of the format (a conversion)
local F16, BF16, E4M3, E5M2 = N.F16, N.BF16, N.E4M3, N.E5M2
local enc_f16, enc_bf16, enc_e4m3, enc_e5m2 = N.enc_f16, N.enc_bf16, N.enc_e4m3, N.enc_e5m2
--- v rounded to f16 (nearest even; overflow to infinity).
function N.to_f16(v) return F16[enc_f16(v)] end
--- v rounded to f32, then to bf16 (nearest even), as cvt.rn.bf16.f32.
function N.to_bf16(v) return BF16[enc_bf16(N.f32(v))] end
function N.to_bf16_rz(v) return BF16[N.enc_bf16_rz(N.f32(v))] end
function N.to_e4m3(v) return E4M3[enc_e4m3(v)] end
function N.to_e5m2(v) return E5M2[enc_e5m2(v)] end
local tf32_dec = decoder(8, 10, true)
function N.to_tf32(v) return tf32_dec[enc_tf32(v)] end
function N.tf32_bits(v) -- the f32 register of a tf32 value
  u32f.f = v
  return u32f.i
end

-- i32 arithmetic on signed values
--- The low 32 bits of a * b (signed i32 values), exactly.
function N.mul32(a, b) return tobit(a * band(b, 0xffff) + tobit(a * arshift(b, 16)) * 65536) end
function N.sdiv32(a, b)
  if b == 0 then return -1 end
  local q = a / b
  q = q >= 0 and floor(q) or ceil(q)
  return tobit(q)
end
function N.srem32(a, b)
  if b == 0 then return a end
  return math.fmod(a, b)
end
local function u32(a) return a % 4294967296 end
N.u32 = u32
function N.udiv32(a, b)
  if b == 0 then return -1 end
  return tobit(floor(u32(a) / u32(b)))
end
function N.urem32(a, b)
  if b == 0 then return a end
  return tobit(u32(a) % u32(b))
end
function N.umulhi32(a, b)
  local x, y = u32(a), u32(b)
  local xh, xl, yh, yl = floor(x / 65536), x % 65536, floor(y / 65536), y % 65536
  local mid = xh * yl + xl * yh + floor(xl * yl / 65536)
  return tobit(xh * yh + floor(mid / 65536))
end
function N.smulhi32(a, b)
  local h = N.umulhi32(a, b)
  if a < 0 then h = h - b end
  if b < 0 then h = h - a end
  return tobit(h)
end
function N.umin32(a, b) return u32(a) <= u32(b) and a or b end
function N.umax32(a, b) return u32(a) >= u32(b) and a or b end
-- narrow integers: the signed value of the low bits
function N.sext8(a) return arshift(lshift(a, 24), 24) end
function N.sext16(a) return arshift(lshift(a, 16), 16) end

-- i64 helpers (int64_t cdata)
local I64, U64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
N.I64, N.U64 = I64, U64
function N.i64(x) return I64(x) end
function N.sdiv64(a, b)
  if b == 0 then return I64(-1) end
  return a / b
end
function N.srem64(a, b)
  if b == 0 then return a end
  return a % b
end
function N.udiv64(a, b)
  if b == 0 then return I64(-1) end
  return I64(U64(a) / U64(b))
end
function N.urem64(a, b)
  if b == 0 then return a end
  return I64(U64(a) % U64(b))
end
function N.ult64(a, b) return U64(a) < U64(b) end
function N.ule64(a, b) return U64(a) <= U64(b) end
function N.umin64(a, b) return U64(a) <= U64(b) and a or b end
function N.umax64(a, b) return U64(a) >= U64(b) and a or b end
function N.lshr64(a, b) return I64(rshift(U64(a), b)) end
function N.umulhi64(a, b)
  local x, y = U64(a), U64(b)
  local M32 = 0xffffffffULL
  local xl, xh, yl, yh = band(x, M32), rshift(x, 32), band(y, M32), rshift(y, 32)
  local ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
  local mid = rshift(ll, 32) + band(lh, M32) + band(hl, M32)
  return I64(hh + rshift(lh, 32) + rshift(hl, 32) + rshift(mid, 32))
end
function N.smulhi64(a, b)
  local h = N.umulhi64(a, b)
  if a < 0 then h = h - b end
  if b < 0 then h = h - a end
  return h
end
function N.popc(a, bits)
  local n = 0
  if bits == 64 then
    local x = U64(a)
    while x ~= 0 do
      n = n + 1
      x = band(x, x - 1)
    end
    return n
  end
  local x = u32(a)
  while x ~= 0 do
    n = n + 1
    x = u32(band(x, x - 1))
  end
  return n
end
function N.clz(a, bits)
  if bits == 64 then
    local x = U64(a)
    local n = 0
    while n < 64 and band(x, lshift(1ULL, 63 - n)) == 0 do n = n + 1 end
    return n
  end
  local x = u32(a)
  if x == 0 then return 32 end
  return 31 - floor(math.log(x) / math.log(2) + 1e-9) -- corrected below for exactness
end
do -- exact clz for i32
  local function clz32(a)
    local x = u32(a)
    if x == 0 then return 32 end
    local n = 0
    while x < 2147483648 do
      x = x * 2
      n = n + 1
    end
    return n
  end
  local clz_any = N.clz
  function N.clz(a, bits) if bits == 64 then return clz_any(a, 64) end return clz32(a) end
end
function N.brev(a, bits)
  if bits == 64 then
    local x, r = U64(a), 0ULL
    for _ = 1, 64 do
      r = bor(lshift(r, 1), band(x, 1ULL))
      x = rshift(x, 1)
    end
    return I64(r)
  end
  local x, r = a, 0
  for _ = 1, 32 do
    r = bor(lshift(r, 1), band(x, 1))
    x = rshift(x, 1)
  end
  return tobit(r)
end
-- prmt.b32 (default mode): bytes of b:a picked by the low 4 nibbles of c
function N.prmt(a, b, c)
  local r = 0
  for i = 0, 3 do
    local sel = band(rshift(c, 4 * i), 0xf)
    local idx = band(sel, 7)
    local src = idx < 4 and a or b
    local byte = band(rshift(src, 8 * (idx % 4)), 0xff)
    if band(sel, 8) ~= 0 then byte = band(byte, 0x80) ~= 0 and 0xff or 0 end
    r = bor(r, lshift(byte, 8 * i))
  end
  return tobit(r)
end

-- floats
function N.fmin(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if a == b then return (a == 0 and 1 / a < 0) and a or b end
  return a < b and a or b
end
function N.fmax(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if a == b then return (a == 0 and 1 / a > 0) and a or b end
  return a > b and a or b
end
N.fmaf = ffi.C.fmaf
N.fma = ffi.C.fma
N.erf, N.tanh, N.exp2, N.log2 = ffi.C.erf, ffi.C.tanh, ffi.C.exp2, ffi.C.log2
-- round to an integer value: rn (even), rz, rm, rp
function N.rni(x)
  local f = floor(x)
  local r = x - f
  if r > 0.5 or (r == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end
function N.rzi(x) return x >= 0 and floor(x) or ceil(x) end
-- float -> integer as PTX's cvt.*i: NaN is 0, out-of-range values saturate
function N.f2i(x, lo, hi)
  if x ~= x then return 0 end
  if x < lo then return lo end
  if x > hi then return hi end
  return x
end
function N.f2i64(x, uns)
  if x ~= x then return I64(0) end
  if uns then
    if x <= 0 then return I64(0) end
    if x >= 2 ^ 64 then return I64(-1) end
    return I64(U64(x))
  end
  if x <= -2 ^ 63 then return I64(-2 ^ 63) end
  if x >= 2 ^ 63 then return 0x7fffffffffffffffLL end
  return I64(x)
end

return N
