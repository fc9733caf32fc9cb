--- cute.func: real device functions.
--
-- A plain Lua function called from a kernel body is inlined: it simply runs
-- during the trace. cute.func(fn) makes a device function instead: the first
-- call with a given signature (the types of its value arguments, its tensors'
-- static layouts, its compile-time arguments) traces fn into a function of
-- the kernel's module, and every call emits a `call`.
--
--   local dot3 = cute.func(function(a, b) return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] end)
--
-- Arguments: traced values, tensors with static layouts (passed as their
-- pointer; registers fragments must stay inlined), and compile-time values.
-- The result (one value or none) is inferred, or given as opts.ret (a dtype).
local ffi = require "ffi"
local core = require "cute.trace.core"
local ttensor = require "cute.trace.tensor"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"

local M = {}

local Func = {}
Func.__index = Func

local serial = 0

--- A device function. opts: name, ret (the result dtype, when not inferred),
-- preprocess (false: plain tracing; by default the body goes through cute.pre).
-- @param fn the function (traced at each call site's argument types)
-- @param opts optional: {name =, ret = dtype, preprocess = false}
-- @return a device function, callable from kernels
-- @usage local sq = cute.func(function(x) return x * x end)
function M.func(fn, opts)
  if type(fn) ~= "function" then err.raise("cute.func: expected a function, got %s", type(fn)) end
  opts = opts or {}
  serial = serial + 1
  local info = debug.getinfo(fn, "S")
  local name = opts.name or string.format("func_%d_%d", info.linedefined, serial)
  if opts.preprocess ~= nil and type(opts.preprocess) ~= "boolean" then
    err.raise("cute.func: option preprocess must be true or false, got %s", tostring(opts.preprocess))
  end
  local pre = opts.preprocess
  if pre == nil then pre = not err.is_internal(info.source) end -- cute.lib's own: the explicit form
  return setmetatable({ fn = fn, name = name, ret = opts.ret and dtype.get(opts.ret), specs = {}, pre = pre,
    pre_text = pre and require("cute.pre.source").capture(fn) or nil }, Func)
end

function Func:__tostring() return "cute.func(" .. self.name .. ")" end

-- What an argument contributes: a parameter type, or a compile-time value.
local function classify(a, i)
  if core.is_value(a) then
    local t = core.type_of(a)
    return { kind = "value", type = t, key = "V" .. t.name }
  end
  if ttensor.is_tensor(a) then
    if a.engine ~= "ptr" then err.raise("cute.func argument #%d: only tensors in memory can be passed (got %s)", i,
        tostring(a)) end
    local ok, static = pcall(L.cosize, a.layout)
    if not ok or type(static) ~= "number" then
      err.raise("cute.func argument #%d: tensors passed to device functions need a static layout (got %s)", i,
        tostring(a.layout))
    end
    local pt = core.type_of(a.ptr)
    return { kind = "tensor", type = pt, layout = a.layout, dtype = a.dtype,
      key = "T" .. pt.name .. tostring(a.layout) }
  end
  local t = type(a)
  if t == "number" or t == "boolean" or t == "string" or t == "nil" then
    return { kind = "const", value = a, key = "C" .. tostring(a) }
  end
  err.raise("cute.func argument #%d: a %s cannot be passed (values, tensors in memory, numbers, booleans, strings)",
    i, t)
end

-- Traces fn into module m as function `fname`; returns the return type (or nil).
local function trace_into(self, m, fname, specs, ret, opts)
  local ir = core.ir()
  local T = core.begin(m, fname, "device", ret, opts)
  local ok, result = xpcall(function()
    local args = {}
    for i, s in ipairs(specs) do
      if s.kind == "const" then
        args[i] = s.value
      else
        local ref = ir.param(T.f, core.irtype(s.type))
        local v = core.value(ref, s.type)
        args[i] = s.kind == "tensor" and ttensor.make_tensor(v, s.layout, s.dtype) or v
      end
    end
    local body = self.pre and require("cute.pre.source").rewrite(self.fn, self.pre_text) or self.fn
    return body(unpack(args, 1, #specs))
  end, core.on_trace_error)
  if not ok then
    core.abort()
    error(result, 0)
  end
  local rt
  if result ~= nil then
    if not core.is_value(result) then
      if type(result) == "number" and ret then
        local cok, c = pcall(core.const, ret, result, "cute.func " .. self.name .. " return value")
        if not cok then
          core.abort()
          error(c, 0)
        end
        result = c
      else
        core.abort()
        err.raise("cute.func %s: a device function returns one traced value (or nothing), not a %s", self.name,
          type(result))
      end
    end
    rt = core.type_of(result)
    if ret and rt ~= ret then
      core.abort()
      err.raise("cute.func %s returns a %s value, not the declared %s", self.name, rt.name, ret.name)
    end
    if ret then
      core.update_loc()
      if ir.ret(T.f, core.use(result)) ~= 0 then core.ir_error("return") end
    end
  end
  local index = ir.func_index(T.f)
  core.finish()
  return rt, index
end

function Func:__call(...)
  local T = core.current()
  if not T then err.raise("cute.func %s: device functions are called from kernels (while tracing)", self.name) end
  local n = select("#", ...)
  local specs, keys = {}, {}
  for i = 1, n do
    specs[i] = classify((select(i, ...)), i)
    keys[i] = specs[i].key
  end
  local key = table.concat(keys, "|")
  -- one traced function per module and signature
  local per_module = self.specs[T.m]
  if not per_module then
    per_module = setmetatable({}, { __mode = "k" })
    self.specs[T.m] = per_module
  end
  local entry = per_module[key]
  if not entry then
    local ir = core.ir()
    local ret = self.ret and core.scalar(self.ret)
    if not self.ret then
      -- infer the result type from a trace into a scratch module
      local scratch = ffi.gc(ir.module_new(), ir.module_free)
      ret = trace_into(self, scratch, self.name, specs, nil, T.opts)
    end
    local fname = string.format("%s_%d", self.name, #keys + (function()
      local c = 0
      for _ in pairs(per_module) do c = c + 1 end
      return c
    end)())
    local _, index = trace_into(self, T.m, fname, specs, ret, T.opts)
    entry = { index = index, ret = ret }
    per_module[key] = entry
  end
  local args = {}
  for i = 1, n do
    local a = select(i, ...)
    if specs[i].kind == "value" then
      args[#args + 1] = a
    elseif specs[i].kind == "tensor" then
      args[#args + 1] = a.ptr
    end
  end
  return core.emitn("call", entry.ret, args, { entry.index })
end

-- cute.func(fn, opts) is M.func
return setmetatable(M, { __call = function(_, ...) return M.func(...) end })
