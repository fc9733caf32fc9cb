--- cute.random: Philox 4x32-10 random numbers, on the GPU and on the host.
--
--   cute.philox4x32({c0, c1, c2, c3}, {k0, k1})  -- the four output words
--   local u = cute.rand(seed, offset)             -- in a kernel: f32 in [0, 1)
--   local x = cute.randint(seed, offset)          -- u32
--   local z = cute.randn(seed, offset)            -- f32, standard normal (Box-Muller)
--   local m = cute.rand_host(seed, n)             -- the same stream on the host
--
-- Philox 4x32-10 is the counter-based generator of Salmon, Moraes, Dror and
-- Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3" (SC11, 2011), as
-- Random123 implements it: a 128-bit counter and a 64-bit key give 128
-- random bits, ten rounds of two 32x32->64-bit multiplies, the key bumped by
-- the Weyl constants before rounds 2..10.
--
-- Every function here takes traced values (it then emits IR: the multiplies'
-- high halves are the IR's umulhi op) or Lua numbers (it then computes on the
-- host, exactly as the GPU does), so a kernel's random stream can be
-- reproduced on the CPU: dropout masks are testable without a GPU.
--
-- The streams: for a seed s and an offset o (non-negative integers below
-- 2^64; Lua numbers below 2^53), the counter is {o mod 2^32, o div 2^32, 0, 0}
-- and the key {s mod 2^32, s div 2^32}; one call gives four words w0..w3.
--   randint(s, o) = w0
--   rand(s, o)    = (w0 >> 8) * 2^-24: the f32 multiples of 2^-24 in [0, 1),
--                   0 included, 1 excluded (exactly representable, so the
--                   host's value is the GPU's bit for bit)
--   randn(s, o)   = sqrt(-2 ln u1) cos(2 pi u2) with u1 = ((w0 >> 8) + 1) * 2^-24
--                   in (0, 1] and u2 = (w1 >> 8) * 2^-24 (Box-Muller); the angle
--                   2 pi u2 is the same f32 on both; the GPU computes the rest in
--                   f32 (cute.log, cute.cos, cute.sqrt), the host in f64 rounded
--                   once to f32, so they agree to a few f32 ulps, not bit for bit.
--   randint4, rand4, randn4: all four words of one call (randn4: the cosine
--   and sine of both pairs (w0, w1) and (w2, w3)).
-- Traced 32-bit offsets and seeds (i32 or u32) are taken by their bits as the
-- low word (the high word 0); 64-bit ones give both words.
local bit = require "bit"
local ffi = require "ffi"
local err = require "cute._err"
local dtype = require "cute.dtype"
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"

local M = {}

-- The Philox 4x32 constants (Salmon et al. 2011; Random123's philox.h).
local M0, M1 = 0xD2511F53, 0xCD9E8D57 -- the multipliers
local W0, W1 = 0x9E3779B9, 0xBB67AE85 -- the Weyl key increments
local ROUNDS = 10
local TWO32 = 4294967296
local TWO16 = 65536
local INV24 = 2 ^ -24

local is_value, type_of, emit = core.is_value, core.type_of, core.emit

-- ---------------------------------------------------------------------------
-- The host generator (Lua numbers, exact in doubles)

-- The high and low words of the 64-bit product of two words, exactly in
-- doubles: b split into 16-bit halves keeps every partial product below 2^49.
local function mulhilo(a, b)
  local bl = b % TWO16
  local p1 = a * bl -- < 2^48
  local p2 = a * ((b - bl) / TWO16) -- < 2^48
  local p2l = p2 % TWO16
  local mid = p2l * TWO16 + p1 -- < 2^49
  local lo = mid % TWO32
  return (p2 - p2l) / TWO16 + (mid - lo) / TWO32, lo
end

local bxor = bit.bxor
local function xor3(a, b, c) return bxor(bxor(a, b), c) % TWO32 end -- bit ops give signed results

local function host_philox(c0, c1, c2, c3, k0, k1, rounds)
  for r = 1, rounds do
    if r > 1 then k0, k1 = (k0 + W0) % TWO32, (k1 + W1) % TWO32 end
    local hi0, lo0 = mulhilo(M0, c0)
    local hi1, lo1 = mulhilo(M1, c2)
    c0, c1, c2, c3 = xor3(hi1, c1, k0), lo1, xor3(hi0, c3, k1), lo0
  end
  return c0, c1, c2, c3
end

-- ---------------------------------------------------------------------------
-- The device generator (traced u32 values)

local function device_philox(c0, c1, c2, c3, k0, k1, rounds)
  local u32 = core.u32
  for r = 1, rounds do
    if r > 1 then k0, k1 = k0 + W0, k1 + W1 end -- u32 arithmetic wraps, as the host's mod 2^32
    local hi0, lo0 = emit("umulhi", u32, core.const(u32, M0), c0), c0 * M0
    local hi1, lo1 = emit("umulhi", u32, core.const(u32, M1), c2), c2 * M1
    c0, c1, c2, c3 = hi1:bxor(c1):bxor(k0), lo1, hi0:bxor(c3):bxor(k1), lo0
  end
  return c0, c1, c2, c3
end

-- ---------------------------------------------------------------------------
-- Arguments

-- A Lua number as a word (what: the argument, for errors).
local function word(x, what)
  if type(x) ~= "number" or x < 0 or x >= TWO32 or x ~= math.floor(x) then
    err.raise("%s must be a 32-bit word (an integer in 0..2^32-1), got %s", what, tostring(x))
  end
  return x
end

-- A traced integer value as (low word, high word) of u32 values.
local function value_words(v, what)
  local t = type_of(v)
  if t.kind ~= "int" and t.kind ~= "uint" then
    err.raise("%s must be an integer value (i32, u32, i64, u64), got a %s value", what, t.name)
  end
  if t.bits == 64 then
    local u = ops.to(v, dtype.u64)
    return ops.to(u, dtype.u32), ops.to(u:shr(32), dtype.u32)
  end
  return ops.to(v, dtype.u32), core.const(core.u32, 0) -- i32: its bits; narrower: converted
end

-- A seed or offset given as a Lua number, a 64-bit FFI integer or a typed
-- scalar (cute.u32(7)): (low word, high word).
local function number_words(x, what)
  if getmetatable(x) == dtype.Scalar then x = x.value end
  if type(x) == "cdata" and (ffi.istype("uint64_t", x) or ffi.istype("int64_t", x)) then
    local u = ffi.cast("uint64_t", x)
    return tonumber(u % TWO32), tonumber(u / TWO32)
  end
  if type(x) ~= "number" or x < 0 or x >= 2 ^ 53 or x ~= math.floor(x) then
    err.raise("%s must be a non-negative integer below 2^53 (or a traced integer value), got %s", what, tostring(x))
  end
  local lo = x % TWO32
  return lo, (x - lo) / TWO32
end

-- The four words of Philox for (seed, offset), on the host (numbers) or the
-- device (values), and whether on the device.
local function stream_words(seed, offset, fname)
  if not is_value(seed) and not is_value(offset) then
    local s0, s1 = number_words(seed, fname .. ": the seed")
    local o0, o1 = number_words(offset, fname .. ": the offset")
    return false, host_philox(o0, o1, 0, 0, s0, s1, ROUNDS)
  end
  local u32 = core.u32
  local s0, s1, o0, o1
  if is_value(seed) then
    s0, s1 = value_words(seed, fname .. ": the seed")
  else
    local a, b = number_words(seed, fname .. ": the seed")
    s0, s1 = core.const(u32, a), core.const(u32, b)
  end
  if is_value(offset) then
    o0, o1 = value_words(offset, fname .. ": the offset")
  else
    local a, b = number_words(offset, fname .. ": the offset")
    o0, o1 = core.const(u32, a), core.const(u32, b)
  end
  local zero = core.const(u32, 0)
  return true, device_philox(o0, o1, zero, zero, s0, s1, ROUNDS)
end

-- ---------------------------------------------------------------------------
-- Public functions

--- Philox 4x32-10 (rounds: default 10) of a counter {c0, c1, c2, c3} and a
-- key {k0, k1}: the four output words. With Lua numbers (words, 0..2^32-1)
-- it runs on the host and returns numbers; with any traced value among them
-- it emits the rounds into the kernel and returns u32 values (numbers there
-- become u32 constants).
-- @param counter a list of four 32-bit words
-- @param key a list of two 32-bit words
-- @param rounds optional: the number of rounds (default 10)
-- @return the four output words
-- @usage local x0, x1, x2, x3 = cute.philox4x32({0, 0, 0, 0}, {0, 0})
function M.philox4x32(counter, key, rounds)
  if type(counter) ~= "table" or #counter ~= 4 then
    err.raise("philox4x32: the counter must be a table of 4 words, got %s", tostring(counter))
  end
  if type(key) ~= "table" or #key ~= 2 then
    err.raise("philox4x32: the key must be a table of 2 words, got %s", tostring(key))
  end
  rounds = rounds or ROUNDS
  if type(rounds) ~= "number" or rounds < 1 or rounds > 16 or rounds ~= math.floor(rounds) then
    err.raise("philox4x32: rounds must be an integer in 1..16, got %s", tostring(rounds))
  end
  local words, traced = {}, false
  for i = 1, 6 do
    local v = i <= 4 and counter[i] or key[i - 4]
    if is_value(v) then traced = true end
    words[i] = v
  end
  local names = { "counter[1]", "counter[2]", "counter[3]", "counter[4]", "key[1]", "key[2]" }
  for i = 1, 6 do
    local v = words[i]
    if is_value(v) then
      local t = type_of(v)
      if (t.kind ~= "int" and t.kind ~= "uint") or t.bits ~= 32 then
        err.raise("philox4x32: %s must be a u32 or i32 value, got a %s value", names[i], t.name)
      end
      words[i] = ops.to(v, dtype.u32)
    else
      word(v, "philox4x32: " .. names[i])
      if traced then words[i] = core.const(core.u32, v) end
    end
  end
  local f = traced and device_philox or host_philox
  return f(words[1], words[2], words[3], words[4], words[5], words[6], rounds)
end

-- A word as a uniform f32 in [0, 1): its top 24 bits times 2^-24 (exact).
local function host_uniform(w) return math.floor(w / 256) * INV24 end
local function device_uniform(w) return ops.to(w:shr(8), dtype.f32) * INV24 end

-- Box-Muller of two words: the cosine and the sine branch. Host: in f64,
-- each rounded once to f32.
local f32cell = ffi.new("float[1]")
local function to_f32(x)
  f32cell[0] = x
  return f32cell[0]
end

-- 2 pi as the f32 constant the GPU multiplies by.
local TWO_PI_F32 = to_f32(2 * math.pi)

local function host_box_muller(a, b)
  local u1 = (math.floor(a / 256) + 1) * INV24
  local u2 = math.floor(b / 256) * INV24
  local r = math.sqrt(-2 * math.log(u1))
  local theta = to_f32(u2 * TWO_PI_F32) -- the GPU's f32 angle, bit for bit
  return to_f32(r * math.cos(theta)), to_f32(r * math.sin(theta))
end

local function device_box_muller(a, b)
  local f32 = dtype.f32
  local u1 = (ops.to(a:shr(8), f32) + 1) * INV24
  local u2 = ops.to(b:shr(8), f32) * INV24
  local r = ops.sqrt(ops.log(u1) * -2)
  local theta = u2 * TWO_PI_F32
  return r * ops.cos(theta), r * ops.sin(theta)
end

--- A uniform random u32: the first word of Philox for (seed, offset). A
-- number on the host, a u32 value in a kernel.
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return a u32
-- @usage local r = cute.randint(seed, i)
function M.randint(seed, offset)
  local _, w0 = stream_words(seed, offset, "randint")
  return w0
end

--- All four words of Philox for (seed, offset).
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return four u32 words
-- @usage local a, b, c, d = cute.randint4(seed, i)
function M.randint4(seed, offset)
  local _, w0, w1, w2, w3 = stream_words(seed, offset, "randint4")
  return w0, w1, w2, w3
end

--- A uniform random f32 in [0, 1) (0 included, 1 excluded; a multiple of
-- 2^-24), the same bits on the host and the GPU.
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return an f32 in [0, 1)
-- @usage local u = cute.rand(seed, i)
function M.rand(seed, offset)
  local dev, w0 = stream_words(seed, offset, "rand")
  if dev then return device_uniform(w0) end
  return host_uniform(w0)
end

--- Four uniform f32 in [0, 1), from the four words of one Philox call.
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return four f32 in [0, 1)
-- @usage local a, b, c, d = cute.rand4(seed, i)
function M.rand4(seed, offset)
  local dev, w0, w1, w2, w3 = stream_words(seed, offset, "rand4")
  local u = dev and device_uniform or host_uniform
  return u(w0), u(w1), u(w2), u(w3)
end

--- A standard normal f32 (Box-Muller of the first two words).
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return a standard normal f32
-- @usage local z = cute.randn(seed, i)
function M.randn(seed, offset)
  local dev, w0, w1 = stream_words(seed, offset, "randn")
  local z = (dev and device_box_muller or host_box_muller)(w0, w1)
  return z
end

--- Four standard normal f32: Box-Muller of (w0, w1) and of (w2, w3), each
-- giving its cosine and sine branch.
-- @param seed a 64-bit seed (number or value)
-- @param offset the element's offset in the stream (number or value)
-- @return four standard normal f32
-- @usage local a, b, c, d = cute.randn4(seed, i)
function M.randn4(seed, offset)
  local dev, w0, w1, w2, w3 = stream_words(seed, offset, "randn4")
  local bm = dev and device_box_muller or host_box_muller
  local z0, z1 = bm(w0, w1)
  local z2, z3 = bm(w2, w3)
  return z0, z1, z2, z3
end

local KINDS = { rand = "float", randn = "float", randint = "uint32_t" }

--- The host's stream: an FFI array of n values, element i being
-- cute.<kind>(seed, offset + i) (kind "rand" (default), "randint" or
-- "randn"; offset default 0): float[n] for rand and randn, uint32_t[n] for
-- randint. What a kernel computing cute.rand(seed, offset + i) at element i
-- writes, so its output can be checked on the CPU.
-- @param seed the seed
-- @param n the number of values
-- @param opts optional: {kind = "rand" | "randint" | "randn", offset = first offset}
-- @return an FFI array of n values
-- @usage local u = cute.rand_host(42, 1024)
function M.rand_host(seed, n, opts)
  opts = opts or {}
  if type(opts) ~= "table" then err.raise("rand_host: the options must be a table {kind =, offset =}") end
  local kind, offset = opts.kind or "rand", opts.offset or 0
  local ctype = KINDS[kind]
  if not ctype then
    err.raise("rand_host: kind must be \"rand\", \"randint\" or \"randn\", got %s", tostring(kind))
  end
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
    err.raise("rand_host: n must be a non-negative integer, got %s", tostring(n))
  end
  local s0, s1 = number_words(seed, "rand_host: the seed")
  local o_lo, o_hi = number_words(offset, "rand_host: the offset")
  offset = o_hi * TWO32 + o_lo
  if offset + n > 2 ^ 53 then err.raise("rand_host: offset + n must stay below 2^53") end
  local out = ffi.new(ctype .. "[?]", math.max(n, 1))
  for i = 0, n - 1 do
    local o = offset + i
    local o0 = o % TWO32
    local w0, w1 = host_philox(o0, (o - o0) / TWO32, 0, 0, s0, s1, ROUNDS)
    if kind == "randint" then
      out[i] = w0
    elseif kind == "rand" then
      out[i] = host_uniform(w0)
    else
      out[i] = host_box_muller(w0, w1)
    end
  end
  return out
end

return M
