--- cute.lib.fill: filling device tensors on the device: iota, uniform and
-- normal random values. The tensor methods t:iota(), t:uniform() and
-- t:normal() use these kernels (see cute.tensor).
--
--   cute.lib.fill.launch(t, "uniform", lo, hi, seed)
--   cute.lib.fill.launch(t, "normal", mean, std, seed)
--   cute.lib.fill.launch(t, "iota", start, step)
--
-- Element i (in CuTe's coordinate order) is a pure function of (seed, i): the
-- same counter-based generator as the host's (src/rt/rt_host.c, splitmix64
-- mixing, 53-bit uniforms, Box-Muller normals) computed in f64, then
-- converted to the tensor's dtype. So a fill is reproducible whatever the
-- launch shape, and equal to the host's generator (normals up to the last
-- bits of log and cos). Integers: uniform in [lo, hi) (the value floored).
local cute = require "cute"

local M = {}

local THREADS = 256
local GOLDEN = 0x9e3779b97f4a7c15ULL
local TWO_PI = 6.283185307179586

-- splitmix64's finaliser on a u64 value.
local function mix64(z)
  z = z:bxor(z:shr(30)) * 0xbf58476d1ce4e5b9ULL
  z = z:bxor(z:shr(27)) * 0x94d049bb133111ebULL
  return z:bxor(z:shr(31))
end

-- A uniform f64 in [0, 1) with 53 random bits, for element i and lane.
local function unit(seed, i, lane)
  local r = mix64(seed * GOLDEN + mix64(i * 4 + (lane + 1)))
  return r:shr(11):to(cute.f64) * 2 ^ -53
end

--- An f64 value converted to dt with one rounding, as the host does. The IR
-- converts 16-bit and 8-bit floats from f32 only; going through an f32
-- rounded to odd (truncate, then set the last bit when inexact) keeps the
-- final rounding correct, since f32 has more than two bits beyond them.
-- @param v an f64 value
-- @param dt the dtype to convert to
-- @return a value of dtype dt
-- @usage local h = fill.from_f64(v, cute.bf16)
function M.from_f64(v, dt)
  if dt.is_integer then
    -- saturating (the largest doubles below 2^63 / 2^64 for 64 bits); t:iota and t:uniform
    -- refuse integer values the dtype does not hold before they launch this, as the host's
    -- encoding does, and t:normal refuses integer dtypes
    local lo = dt.kind == "int" and -2 ^ (dt.bits - 1) or 0
    local hi = dt.kind == "int" and 2 ^ (dt.bits - 1) - 1 or 2 ^ dt.bits - 1
    if dt.bits == 64 then hi = dt.kind == "int" and 9223372036854774784 or 18446744073709549568 end
    return cute.min(cute.max(v, lo), hi):to(dt)
  end
  if dt.kind ~= "float" or dt.name == "f32" or dt.name == "f64" then return v:to(dt) end
  local f = v:to(cute.f32, { round = "rz" })
  local inexact = f:to(cute.f64):ne(v)
  local odd = cute.bitcast(cute.bitcast(f, cute.u32):bor(1), cute.f32)
  return cute.where(inexact, odd, f):to(dt)
end

local fill_k = cute.kernel("cute_fill", function(t, mode, seed, a, b)
  local n = cute.size(t)
  local start = cute.block_idx().x * THREADS + cute.thread_idx().x
  local step = cute.grid_dim().x * THREADS
  local dt = t.dtype
  for i in cute.range(start, n, step) do
    local iu = i:to(cute.u64)
    local v
    if mode == "iota" then
      v = a + i:to(cute.f64) * b
    elseif mode == "uniform" then
      v = a + (b - a) * unit(seed, iu, 0)
      if dt.is_integer then v = cute.floor(v) end
    else
      local u1, u2 = 1 - unit(seed, iu, 0), unit(seed, iu, 1)
      v = a + b * cute.sqrt(-2 * cute.log(u1)) * cute.cos(TWO_PI * u2)
    end
    t[i] = M.from_f64(v, dt)
  end
end, { max_threads = THREADS, trace_key = "cute.lib.fill" })
M.kernel = fill_k

--- Fills device tensor t on the device. mode: "iota" (a = start, b = step),
-- "uniform" (in [a, b)), "normal" (mean a, standard deviation b); seed: an
-- integer (uniform, normal). Every dtype but bool.
-- @param t a device tensor
-- @param mode "iota", "uniform" or "normal"
-- @param a the first parameter (start, lower bound or mean)
-- @param b the second parameter (step, upper bound or standard deviation)
-- @param seed optional: an integer seed (uniform, normal)
-- @return t
-- @usage cute.lib.fill.launch(t, "uniform", 0, 1, 42)
function M.launch(t, mode, a, b, seed)
  local n = t:size()
  if n == 0 then return t end
  local blocks = math.max(1, math.min(math.ceil(n / THREADS), 132 * 32))
  fill_k { grid = blocks, block = THREADS }(t, cute.constexpr(mode), cute.u64(seed or 0), cute.f64(a), cute.f64(b))
  return t
end

return M
