--- cute: the cutelua namespace.
--
-- `local cute = require "cute"` gives CuTe's names in one table, as the CuTe
-- DSL does: the layout algebra (cute.make_layout, cute.composition, ...),
-- kernels, tensors, atoms. Modules are loaded on first use, so requiring
-- `cute` costs nothing until something is used. Submodules are reachable as
-- fields too (cute.layout, cute.int_tuple, ...).
local ffi = require "ffi"

local cute = {}

-- cutelua's modules are loaded once per Lua state, even when package.loaded
-- is reset (busted insulates each spec file that way): they hold state that
-- must not split (the trace in progress, the device, FFI metatypes that bind
-- one instance's methods for good). A searcher ahead of the others answers
-- from the first instance of every cute module.
do
  local reg = debug.getregistry()
  if not reg.cutelua_modules then
    local cache = {}
    reg.cutelua_modules = cache
    local loaders = package.loaders
    table.insert(loaders, 1, function(name)
      if name ~= "cute" and name:sub(1, 5) ~= "cute." then return nil end
      local m = cache[name]
      if m ~= nil then return function() return m end end
      for i = 2, #loaders do
        local loader = loaders[i](name)
        if type(loader) == "function" then
          return function(...)
            local r = loader(...)
            if r == nil then r = package.loaded[name] end
            if r == nil then r = true end
            cache[name] = r
            return r
          end
        end
      end
      return nil
    end)
  end
end

-- Submodules reachable as cute.<name>; loaded on first access.
local SUBMODULES = {}

-- Modules whose public functions are also cute.<function>, searched in this
-- order the first time an unknown name is asked for.
local EXPORTS = {}

-- A module's exported names: those in its _exports list when it has one,
-- else every public field (not _-prefixed, not its `internal` table).
local function public_names(mod)
  local out = {}
  if type(mod) == "table" and type(rawget(mod, "_exports")) == "table" then
    for _, k in ipairs(mod._exports) do out[k] = mod[k] end
  elseif type(mod) == "table" then
    for k, v in pairs(mod) do
      if type(k) == "string" and k:sub(1, 1) ~= "_" and k ~= "internal" and v ~= nil then out[k] = v end
    end
  end
  return out
end

local exports_loaded = false
local function load_exports()
  if exports_loaded then return end
  exports_loaded = true
  for _, name in ipairs(EXPORTS) do
    for k, v in pairs(public_names(require("cute." .. name))) do
      if rawget(cute, k) == nil then rawset(cute, k, v) end
    end
  end
end

setmetatable(cute, {
  __index = function(t, k)
    -- cute._ (CuTe's Underscore, "keep this mode") starts with _, which the
    -- export rule treats as private
    if k == "_" then
      local u = require("cute.int_tuple")._
      rawset(t, k, u)
      return u
    end
    if SUBMODULES[k] then
      local mod = require("cute." .. k)
      rawset(t, k, mod)
      return mod
    end
    if not exports_loaded then
      load_exports()
      return rawget(t, k)
    end
    return nil
  end,
  -- for the REPL's Tab completion: the names not loaded yet
  __complete = function()
    load_exports()
    local names = {}
    for k in pairs(SUBMODULES) do names[#names + 1] = k end
    return names
  end,
})

--- The cutelua version string.
function cute.version() return ffi.string(require("cute._c").host.version()) end

--- Which CUDA libraries this process can load, and from where or why not.
-- @return a table {cuda = {ok = bool, path = ..., error = ...}, nvvm = ..., ...}
function cute.libraries()
  local host = require("cute._c").host
  local out = {}
  local path, msg = ffi.new("char[1024]"), ffi.new("char[4096]")
  for _, key in ipairs { "cuda", "nvvm", "nvjitlink", "cublas", "cublaslt" } do
    path[0], msg[0] = 0, 0
    local r = host.lib_status(key, path, 1024, msg, 4096)
    out[key] = r == 1 and { ok = true, path = ffi.string(path) } or { ok = false, error = ffi.string(msg) }
  end
  return out
end

-- Registers a submodule (cute.<name>) and, with export set, its functions as cute.<fn>.
local function provide(name, export)
  SUBMODULES[name] = true
  if export then EXPORTS[#EXPORTS + 1] = name end
end
provide("_c", false)
provide("_err", false)
-- in kernels: cute.if_, cute.range, cute.thread_idx, ... and tensor-aware
-- size/shape/local_tile/local_partition (they fall back to the layout versions)
EXPORTS[#EXPORTS + 1] = "trace.tensor"
EXPORTS[#EXPORTS + 1] = "trace.control"
EXPORTS[#EXPORTS + 1] = "trace.sync"
EXPORTS[#EXPORTS + 1] = "trace.ops"
EXPORTS[#EXPORTS + 1] = "trace.atom"
-- the layout algebra: cute.make_layout, cute.composition, ... (the first
-- module listed wins a shared name: layout's size/rank/get take layouts and tuples)
provide("layout", true)
provide("layout_algebra", true)
provide("layout_tile", true)
provide("swizzle", true)
provide("int_tuple", true)
provide("layout_print", true)
provide("arith", false)
provide("dtype", true)
provide("runtime", true)
provide("bench", false)
provide("compiler", false)
provide("cublas", false)
provide("ir", false)
-- kernels, tensors and the tracer: the tensor-aware versions of size,
-- local_tile, ... (cute.trace.tensor) come before the layout modules'
provide("atom", true)
provide("aot", true)
provide("kernel", true)
provide("func", true)
provide("tensor", true)
provide("trace", false)

debug.getregistry().cutelua_modules.cute = cute

return cute
