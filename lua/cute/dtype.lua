--- cute.dtype: element types.
--
-- cute.f32, cute.bf16, cute.e4m3, cute.i32, ... (and CuTe DSL's names:
-- cute.Float32, cute.BFloat16, cute.Float8E4M3FN, cute.Int32, ...). The list
-- comes from the runtime's C table (src/rt/rt_dtype.h), not from here.
--
-- A dtype has: name, bits, bytes, kind ("bool", "int", "uint", "float"),
-- signed, is_float, code (the C table index), storage (the FFI type that holds
-- one element on the host: narrow floats are stored as their raw bits), ir
-- (the IR type name; signedness lives in the ops), tma (CUtensorMapDataType or
-- nil). Calling a dtype makes a typed scalar: cute.i32(5) (used where a plain
-- Lua number would be ambiguous, e.g. raw kernel arguments).
local ffi = require "ffi"

local M = {}

local KINDS = { [0] = "bool", "int", "uint", "float" }
local STORAGE = {
  bool = "uint8_t", i8 = "int8_t", u8 = "uint8_t", i16 = "int16_t", u16 = "uint16_t",
  i32 = "int32_t", u32 = "uint32_t", i64 = "int64_t", u64 = "uint64_t",
  f16 = "uint16_t", bf16 = "uint16_t", tf32 = "float", f32 = "float", f64 = "double",
  e4m3 = "uint8_t", e5m2 = "uint8_t",
}
local IR = {
  bool = "i1", i8 = "i8", u8 = "i8", i16 = "i16", u16 = "i16", i32 = "i32", u32 = "i32",
  i64 = "i64", u64 = "i64", f16 = "f16", bf16 = "bf16", tf32 = "tf32", f32 = "f32", f64 = "f64",
  e4m3 = "e4m3", e5m2 = "e5m2",
}
-- CuTe DSL's names for the same types.
local ALIASES = {
  Boolean = "bool", Int8 = "i8", Uint8 = "u8", Int16 = "i16", Uint16 = "u16", Int32 = "i32",
  Uint32 = "u32", Int64 = "i64", Uint64 = "u64", Float16 = "f16", BFloat16 = "bf16",
  TFloat32 = "tf32", Float32 = "f32", Float64 = "f64", Float8E4M3FN = "e4m3", Float8E5M2 = "e5m2",
}

local Dtype = {}
Dtype.__index = Dtype
M.Dtype = Dtype

function Dtype.__tostring(t) return t.name end

--- A typed scalar: {dtype = t, value = v}.
local Scalar = {}
Scalar.__index = Scalar
M.Scalar = Scalar
function Scalar.__tostring(s) return s.dtype.name .. "(" .. tostring(s.value) .. ")" end

function Dtype.__call(t, v)
  if type(v) ~= "number" and type(v) ~= "boolean" and type(v) ~= "cdata" then
    require("cute._err").raise("%s(): expected a number, got %s", t.name, type(v))
  end
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
      storage = STORAGE[name],
      ir = IR[name],
      tma = info.tma >= 0 and info.tma or nil,
    }, Dtype)
    t.storage_ptr = ffi.typeof(t.storage .. " *")
    t.storage_array = ffi.typeof(t.storage .. "[?]")
    by_name[name] = t
    list[#list + 1] = t
  end
  for alias, name in pairs(ALIASES) do by_name[alias] = by_name[name] end
end
load()

--- All dtypes, in the C table's order.
function M.all() return list end

--- The dtype called `name` ("f32", "BFloat16", ...) or a dtype itself; raises for unknown names.
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

function M.is_dtype(x) return getmetatable(x) == Dtype end

-- cute.f32, cute.Float32, ... as fields of this module; only these become
-- names of the cute namespace (see _exports in lua/cute/init.lua)
M._exports = {}
for name, t in pairs(by_name) do
  M[name] = t
  M._exports[#M._exports + 1] = name
end

return M
