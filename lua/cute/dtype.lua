--- cute.dtype: element types.
--
-- cute.f32, cute.bf16, cute.e4m3, cute.i32, ... (and CuTe DSL's names:
-- cute.Float32, cute.BFloat16, cute.Float8E4M3FN, cute.Int32, ...). The list
-- comes from the runtime's C table (src/rt/rt_dtype.h), not from here.
--
-- A dtype has: name, bits, bytes, kind ("bool", "int", "uint", "float"),
-- signed, is_float, code (the C table index), storage (the FFI type that holds
-- one element on the host: narrow floats are stored as their raw bits), ir
-- (the IR type name; signedness lives in the ops), cute_name (CuTe DSL's
-- name: Float32), tma (CUtensorMapDataType or nil); all from the C table.
-- Calling a dtype makes a typed scalar: cute.i32(5) (used where a plain
-- Lua number would be ambiguous, e.g. raw kernel arguments).
local ffi = require "ffi"

local M = {}

local KINDS = { [0] = "bool", "int", "uint", "float" } -- rt.cdef RtDtypeInfo.kind
-- The host storage, IR type and CuTe DSL name of each dtype are columns of
-- the C table (RT_DTYPES): nothing here repeats them.

local Dtype = {}
Dtype.__index = Dtype
M.Dtype = Dtype

function Dtype.__tostring(t) return t.name end

--- A typed scalar: {dtype = t, value = v}.
local Scalar = {}
Scalar.__index = Scalar
M.Scalar = Scalar
function Scalar.__tostring(s) return s.dtype.name .. "(" .. tostring(s.value) .. ")" end

-- ---------------------------------------------------------------------------
-- Which Lua values a dtype holds exactly (constants in kernels, scalar
-- arguments): an integer dtype an integral number in its range (lo <= v <
-- hi); a float dtype any number that does not round to infinity (|v| <
-- inf_at, half an ulp above the largest finite value fmax, so that
-- 3.4028235e38 is still an f32 and 1e39 is not; infinities and NaN are float
-- values, but e4m3 has no infinity); bool true, false, 0 and 1; 64-bit integer
-- literals (0x...ULL, ...LL) give their bits to the 64-bit dtypes and must fit
-- narrower ones.

local FLOAT_LIMITS = { -- largest finite value, and where round-to-nearest reaches infinity
  f16 = { 65504, 65520 },
  bf16 = { (2 - 2 ^ -7) * 2 ^ 127, (2 - 2 ^ -8) * 2 ^ 127 },
  tf32 = { (2 - 2 ^ -10) * 2 ^ 127, (2 - 2 ^ -11) * 2 ^ 127 },
  f32 = { (2 - 2 ^ -23) * 2 ^ 127, (2 - 2 ^ -24) * 2 ^ 127 },
  f64 = { 1.7976931348623157e308, math.huge },
  e4m3 = { 448, 464 },
  e5m2 = { 57344, 61440 },
}

local floor = math.floor

--- A Lua number as text that names it exactly (integers in full, not 1.0995e+12).
-- @param v a Lua number
-- @treturn string
-- @usage cute.dtype.show_number(2 ^ 40)  -- "1099511627776"
function M.show_number(v)
  if v == floor(v) and math.abs(v) < 1e21 then return string.format("%.0f", v) end
  if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
  for digits = 14, 17 do -- the shortest form that reads back exactly
    local text = string.format("%." .. digits .. "g", v)
    if tonumber(text) == v then return text end
  end
  return string.format("%.17g", v)
end
local show_number = M.show_number

--- The values an integer dtype holds, as text ("-128..127").
-- @param t an integer dtype
-- @treturn string
-- @usage cute.dtype.range_text(cute.i8)  -- "-128..127"
function M.range_text(t)
  if t.kind == "bool" then return "0 or 1" end
  if t.bits == 64 then
    return t.kind == "int" and "-9223372036854775808..9223372036854775807" or "0..18446744073709551615"
  end
  return string.format("%s..%s", show_number(t.lo), show_number(t.hi - 1))
end
local range_text = M.range_text

local function raise(...) require("cute._err").raise(...) end

local function describe(x)
  if type(x) == "number" then return "the Lua number " .. show_number(x) end
  if type(x) == "cdata" or type(x) == "table" or type(x) == "userdata" then return type(x) .. " " .. tostring(x) end
  return type(x)
end

--- Checks that x (a Lua number, boolean or 64-bit integer cdata) is a value
-- of dtype t (the rules above) and returns it as the IR's constants and the
-- FFI take it (booleans of bool as 0/1, 64-bit literals as int64 cdata);
-- raises at the user's line otherwise, naming the value, the dtype and `what`
-- (the operation: "tensor store", "cute.i32()", ...).
-- @param t the dtype
-- @param x a Lua number, boolean or 64-bit integer cdata
-- @param what the operation, for messages
-- @return the value as the IR and the FFI take it
-- @usage local v = cute.dtype.check_value(cute.i32, 7, "cute.i32()")
function M.check_value(t, x, what)
  local pre = what and (what .. ": ") or ""
  local kind = t.kind
  local tx = type(x)
  if tx == "boolean" then
    if kind == "bool" then return x and 1 or 0 end
    raise("%sthe Lua boolean %s is not a number (%s expected): write a number, or choose between two with "
      .. "cute.where(c, a, b)", pre, tostring(x), t.name)
  end
  if tx == "cdata" and kind ~= "float" and (ffi.istype("uint64_t", x) or ffi.istype("int64_t", x)) then
    if t.bits == 64 then return ffi.cast("int64_t", x) end -- its bits
    local n = tonumber(x) -- exact in the range of any narrower dtype
    if n < t.lo or n >= t.hi then
      raise("%sthe 64-bit literal %s is out of range for %s (%s)", pre, tostring(x), t.name, range_text(t))
    end
    return n
  end
  if tx ~= "number" then raise("%sexpected a Lua number for %s, got %s", pre, t.name, describe(x)) end
  if kind == "float" then
    if x ~= x then return x end
    if x == math.huge or x == -math.huge then
      if t.name == "e4m3" then
        raise("%sthe Lua number %s is out of range for e4m3: e4m3 has no infinity (the largest finite e4m3 is 448)",
          pre, tostring(x))
      end
      return x
    end
    if x >= t.inf_at or x <= -t.inf_at then
      raise("%sthe Lua number %s is out of range for %s: %s (the largest finite %s is %.9g)", pre, show_number(x),
        t.name, t.name == "e4m3" and "e4m3 has no infinity" or "it would round to infinity", t.name, t.fmax)
    end
    return x
  end
  if x ~= x then raise("%sNaN does not fit %s (integers %s)", pre, t.name, range_text(t)) end
  if x ~= floor(x) then
    raise("%sthe non-integer %s does not fit %s (integers %s): round it, or use a float type", pre, show_number(x),
      t.name, range_text(t))
  end
  if x < t.lo or x >= t.hi then
    raise("%sthe Lua number %s is out of range for %s (%s)", pre, show_number(x), t.name, range_text(t))
  end
  return x
end
local check_value = M.check_value

--- True when the Lua number x is a value of dtype t (check_value's fast path).
-- @param t the dtype
-- @param x a Lua number
-- @treturn bool
-- @usage cute.dtype.fits(cute.u8, 300)  -- false
function M.fits(t, x)
  if t.kind == "float" then return x < t.inf_at and x > -t.inf_at or x ~= x or x == math.huge or x == -math.huge end
  return x >= t.lo and x < t.hi and x == floor(x)
end

--- cute.i32(5), cute.f32(0.5), cute.bool(true): a typed scalar (a kernel
-- argument); the value must be one the dtype holds (check_value).
function Dtype.__call(t, v)
  if type(v) ~= "number" and type(v) ~= "boolean" and type(v) ~= "cdata" then
    raise("cute.%s(): expected a number, got %s", t.name, describe(v))
  end
  check_value(t, v, "cute." .. t.name .. "()")
  return setmetatable({ dtype = t, value = v }, Scalar)
end

local by_name, list = {}, {}

local function load()
  local rt = require("cute._c").rt
  local info = ffi.new("RtDtypeInfo")
  for code = 0, rt.dtype_count() - 1 do
    assert(rt.dtype_info(code, info) == 0)
    local name = ffi.string(info.name)
    local kind = KINDS[info.kind]
    local t = setmetatable({
      name = name,
      code = code,
      bytes = info.bytes,
      bits = name == "bool" and 1 or info.bytes * 8,
      kind = kind,
      signed = kind == "int" or kind == "float",
      is_float = kind == "float",
      is_integer = kind == "int" or kind == "uint",
      storage = ffi.string(info.storage),
      ir = ffi.string(info.ir),
      cute_name = ffi.string(info.cute_name),
      tma = info.tma >= 0 and info.tma or nil,
    }, Dtype)
    if kind == "int" then
      t.lo, t.hi = -2 ^ (t.bits - 1), 2 ^ (t.bits - 1)
    elseif kind == "uint" then
      t.lo, t.hi = 0, 2 ^ t.bits
    elseif kind == "bool" then
      t.lo, t.hi = 0, 2
    else
      local lim = FLOAT_LIMITS[name] or { math.huge, math.huge }
      t.fmax, t.inf_at = lim[1], lim[2]
    end
    t.storage_ptr = ffi.typeof(t.storage .. " *")
    t.storage_array = ffi.typeof(t.storage .. "[?]")
    by_name[name] = t
    list[#list + 1] = t
  end
  for _, t in ipairs(list) do by_name[t.cute_name] = t end -- CuTe DSL's names for the same types
end
load()

--- All dtypes, in the C table's order.
-- @return a list of dtypes
-- @usage for _, dt in ipairs(cute.dtype.all()) do print(dt.name) end
function M.all() return list end

--- The dtype called `name` ("f32", "BFloat16", ...) or a dtype itself; raises for unknown names.
-- @param name a dtype's name, or a dtype
-- @return the dtype
-- @usage cute.dtype.get("bf16").bits  -- 16
function M.get(name)
  if getmetatable(name) == Dtype then return name end
  local t = by_name[name]
  if not t then
    local names = {}
    for _, d in ipairs(list) do names[#names + 1] = d.name end
    require("cute._err").raise("unknown dtype %s (known: %s)", tostring(name), table.concat(names, ", "))
  end
  return t
end

--- is_dtype(x): x is a dtype (cute.f32, ...).
-- @param x any value
-- @treturn bool
-- @usage cute.dtype.is_dtype(cute.f32)  -- true
function M.is_dtype(x) return getmetatable(x) == Dtype end

-- cute.f32, cute.Float32, ... as fields of this module (lua/cute/init.lua's
-- EXPORTS makes them names of the cute namespace)
for name, t in pairs(by_name) do M[name] = t end

return M
