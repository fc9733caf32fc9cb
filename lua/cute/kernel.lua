--- cute.kernel: Lua functions become GPU kernels.
--
--   local vadd = cute.kernel(function(a, b, c)
--     local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
--     cute.if_(i:lt(cute.size(c)), function() c[i] = a[i] + b[i] end)
--   end)
--   vadd{grid = cute.ceil_div(n, 256), block = 256}(a, b, c)
--   print(vadd:compile(a, b, c):ptx())
--
-- A kernel is specialised on how it is called: each argument's kind (device
-- tensor, typed scalar, compile-time constant, TMA descriptor), dtype, the
-- structure of its layout (which strides are 0 or 1), alignment, and the
-- values of compile-time constants. The first call with a new signature
-- traces the body (running it once with proxies), compiles the IR to a cubin
-- (cached in memory and on disk) and loads it; later calls only pack the
-- arguments and launch.
--
-- Argument kinds:
--   cute.tensor(...)          a pointer plus the layout's run-time shape and
--                             strides; strides 1 and 0 are compile-time, the
--                             rest run-time (cute.static(t) makes the whole
--                             layout compile-time)
--   cute.i32(n), cute.f32(x)  run-time scalars of that dtype
--   cute.constexpr(v)         a compile-time value (any Lua value): plain Lua in the body
--   booleans, strings         compile-time values
--   a TMA descriptor          a 128-byte grid-constant parameter
--   a Lua number              ambiguous: wrap it, or annotate the parameter:
--                             cute.kernel(fn, {params = {n = cute.i32}})
local ffi = require "ffi"
local core = require "cute.trace.core"
local ttensor = require "cute.trace.tensor"
local dtype = require "cute.dtype"
local runtime = require "cute.runtime"
local err = require "cute._err"
local L = require "cute.layout"
local it = require "cute.int_tuple"
local IRC = require("cute.ir").enums -- the IR's enumerations, by name (from C)

local M = {}

-- ---------------------------------------------------------------------------
-- Markers

local Constexpr = { __name = "constexpr" }
Constexpr.__tostring = function(c) return "constexpr(" .. tostring(c.value) .. ")" end
--- A compile-time argument (or, as an annotation, "this parameter is compile-time").
M.constexpr = setmetatable({}, {
  __call = function(_, v) return setmetatable({ value = v }, Constexpr) end,
  __tostring = function() return "cute.constexpr" end,
})

local StaticMark = { __name = "static" }
--- The tensor with its whole layout compile-time (specialised on every extent and stride).
function M.static(t) return setmetatable({ tensor = t }, StaticMark) end

-- ---------------------------------------------------------------------------
-- Arguments: kind and signature key

local function param_names(fn)
  local names = {}
  local i = 1
  while true do
    local n = debug.getlocal(fn, i)
    if not n then break end
    names[i] = n
    i = i + 1
  end
  return names
end

-- A deterministic string of a compile-time value, for the signature key.
local function serialize(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "number" then return string.format("%.17g", v) end
  if t == "string" then return string.format("%q", v) end
  if t == "boolean" or t == "nil" then return tostring(v) end
  if t == "table" then
    local mt = getmetatable(v)
    if mt and mt.__tostring then return "<" .. tostring(v) .. ">" end
    if depth > 8 then err.raise("cute.constexpr: a table nested too deeply for a signature") end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = serialize(k, depth + 1) .. "=" .. serialize(v[k], depth + 1) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if t == "function" then
    -- functions are compared by identity: a new closure is a new signature
    return tostring(v)
  end
  err.raise("cute.constexpr: cannot use a %s as a compile-time value", t)
end

-- Leaves of an IntTuple in order, with a structure string where leaves are
-- replaced by what f returns.
local function map_leaves(x, f)
  if type(x) == "table" and it.is_tuple(x) then
    local parts = {}
    for i = 1, #x do parts[i] = map_leaves(x[i], f) end
    return "(" .. table.concat(parts, ",") .. ")"
  end
  return f(x)
end

local function leaves(x, out)
  out = out or {}
  if type(x) == "table" and it.is_tuple(x) then
    for i = 1, #x do leaves(x[i], out) end
  else
    out[#out + 1] = x
  end
  return out
end

-- Rebuilds a tuple of the same structure as x from a list of leaves.
local function rebuild(x, list, pos)
  if type(x) == "table" and it.is_tuple(x) then
    local out = {}
    for i = 1, #x do out[i], pos = rebuild(x[i], list, pos) end
    return out, pos
  end
  return list[pos], pos + 1
end

-- What a tensor argument contributes: the pointer, which leaves are run-time.
-- The key is cached on the tensor (tensors never change layout), so that the
-- launch path's guard compares one string per tensor.
local function tensor_spec(t, static_all)
  local layout = t.layout
  local field = static_all and "_sig_static" or "_sig"
  local cached = rawget(t, field)
  if cached then return cached end
  if not L.is_layout(layout) then
    err.raise("kernel arguments: tensors with composed (swizzled) layouts cannot be passed to kernels; pass the "
      .. "plain tensor")
  end
  local cosize = L.cosize(layout)
  local idx64 = cosize >= 2 ^ 31
  local skey = map_leaves(L.shape(layout), function(v) return static_all and tostring(v) or "?" end)
  -- run-time strides are specialised on the power of two dividing them (up to
  -- 16 elements): addresses computed from them keep a known alignment, so
  -- rows of a row-major matrix can be moved with 16-byte vectors
  local divs = {}
  local dkey = map_leaves(L.stride(layout), function(v)
    if static_all or v == 0 or v == 1 then return tostring(v) end
    local d = 0
    while d < 4 and v % (2 ^ (d + 1)) == 0 do d = d + 1 end
    divs[#divs + 1] = d
    return d > 0 and ("?" .. 2 ^ d) or "?"
  end)
  local align = t:alignment()
  local spec = {
    kind = "tensor", dtype = t.dtype, static = static_all, idx64 = idx64, align = align,
    key = string.format("T%s%s:%s:%s:a%d%s", t.dtype.name, static_all and "!" or "", skey, dkey, align,
      idx64 and ":64" or ""),
    layout = layout, stride_divs = divs,
  }
  rawset(t, field, spec)
  return spec
end

local function classify(arg, ann, name, i)
  local what = string.format("argument %s (#%d)", name and ("'" .. name .. "'") or "", i)
  local mt = type(arg) == "table" and getmetatable(arg)
  if ann == M.constexpr or mt == Constexpr then
    local v = arg -- (not `mt == Constexpr and arg.value or arg`: the value may be false)
    if mt == Constexpr then v = arg.value end
    return { kind = "const", value = v, key = "C" .. serialize(v) }
  end
  if mt == StaticMark then return tensor_spec(arg.tensor, true) end
  if mt == require("cute.tensor").DeviceTensor then return tensor_spec(arg, false) end
  if mt == dtype.Scalar then
    return { kind = "scalar", dtype = arg.dtype, key = "S" .. arg.dtype.name }
  end
  if type(arg) == "number" then
    if dtype.is_dtype(ann) then
      dtype.check_value(ann, arg, what .. " (" .. ann.name .. ")")
      return { kind = "scalar", dtype = ann, key = "S" .. ann.name, plain = true }
    end
    err.raise("%s is a Lua number: say how the kernel takes it, e.g. cute.i32(%s) or cute.f32(%s) at the call, "
      .. "cute.constexpr(%s) for a compile-time value, or annotate the parameter: cute.kernel(fn, {params = "
      .. "{%s = cute.i32}})", what, tostring(arg), tostring(arg), tostring(arg), name or "name")
  end
  if type(arg) == "boolean" or type(arg) == "string" then
    return { kind = "const", value = arg, key = "C" .. serialize(arg) }
  end
  if type(arg) == "cdata" and ffi.istype("CuteTmaDesc", arg) then return { kind = "tma", key = "M" } end
  if ann ~= nil and ann ~= M.constexpr and not dtype.is_dtype(ann) then
    err.raise("%s: unknown annotation %s (use a dtype or cute.constexpr)", what, tostring(ann))
  end
  err.raise("%s: a kernel cannot take a %s (%s); pass device tensors, typed scalars (cute.i32(n)), "
    .. "compile-time values (cute.constexpr(v)) or TMA descriptors", what, type(arg), tostring(arg))
end

-- ---------------------------------------------------------------------------
-- Tracing one specialisation

-- Makes the kernel's parameters in the IR and the trace-time arguments; fills
-- spec.params: the C type of each launch parameter, in order.
local function make_params(trace, specs, names, checked)
  local ir = core.ir()
  local args, params = {}, {}
  local tensors = {}
  for i, s in ipairs(specs) do
    if s.kind == "const" then
      args[i] = s.value
    elseif s.kind == "scalar" then
      local t = core.scalar(s.dtype)
      args[i] = core.value(ir.param(trace.f, core.irtype(t)), t)
      params[#params + 1] = { ctype = s.dtype.storage, arg = i, what = "value", dtype = s.dtype }
    elseif s.kind == "tma" then
      local ref = ir.param_blob(trace.f, 128, 64)
      args[i] = { tma = true, ptr = core.value(ref, core.ptr(core.scalar(dtype.u8), "param", 64)) }
      params[#params + 1] = { ctype = "CuteTmaDesc", arg = i, what = "tma" }
    else -- tensor
      local pt = core.ptr(core.scalar(s.dtype), "global", math.max(s.align, s.dtype.bytes))
      local p = core.value(ir.param(trace.f, core.irtype(pt)), pt)
      params[#params + 1] = { ctype = "uint64_t", arg = i, what = "ptr" }
      local layout = s.layout
      local layout_t
      if s.static then
        layout_t = layout
      else
        local it_t = s.idx64 and core.i64 or core.i32
        local ctype = s.idx64 and "int64_t" or "int32_t"
        local sl, dl = leaves(L.shape(layout)), leaves(L.stride(layout))
        local shape_v, stride_v = {}, {}
        for j = 1, #sl do
          shape_v[j] = core.value(ir.param(trace.f, core.irtype(it_t)), it_t)
          params[#params + 1] = { ctype = ctype, arg = i, what = "shape", leaf = j }
        end
        local dyn = 0
        for j = 1, #dl do
          if dl[j] == 0 or dl[j] == 1 then
            stride_v[j] = dl[j]
          else
            dyn = dyn + 1
            stride_v[j] = core.value(ir.param(trace.f, core.irtype(it_t)), it_t, s.stride_divs[dyn])
            params[#params + 1] = { ctype = ctype, arg = i, what = "stride", leaf = j }
          end
        end
        local shape = type(L.shape(layout)) == "table" and rebuild(L.shape(layout), shape_v, 1) or shape_v[1]
        local stride = type(L.stride(layout)) == "table" and rebuild(L.stride(layout), stride_v, 1) or stride_v[1]
        layout_t = L.make_layout(shape, stride)
      end
      args[i] = ttensor.make_tensor(p, layout_t, s.dtype)
      tensors[#tensors + 1] = { arg = i, ptr = p, name = names[i] or ("#" .. i) }
    end
  end
  if checked then
    for _, p in ipairs(require("cute.trace.check").setup(trace, tensors)) do params[#params + 1] = p end
  end
  return args, params
end

-- The FFI struct that holds one launch's parameters, and the void*[] into it.
local pack_serial = 0
local function make_packer(params)
  pack_serial = pack_serial + 1
  local fields = {}
  for j, p in ipairs(params) do fields[j] = string.format("%s p%d;", p.ctype, j) end
  local name = "CutePack" .. pack_serial
  ffi.cdef(string.format("typedef struct %s { %s } %s;", name, table.concat(fields, " "), name))
  local storage = ffi.new(name)
  local argv = ffi.new("void *[?]", math.max(#params, 1))
  for j = 1, #params do argv[j - 1] = ffi.cast("void *", ffi.cast("char *", storage) + ffi.offsetof(name, "p" .. j)) end
  return storage, argv
end

-- ---------------------------------------------------------------------------
-- Compiling a traced module: verify, print (the cache key's material), and
-- only on a cache miss emit NVVM IR and run libnvvm and nvJitLink

-- The compile options' names (from C, through cute.compiler).
local COMPILER_OPTIONS = {}
for _, name in ipairs(require("cute.compiler").option_names()) do COMPILER_OPTIONS[name] = true end

--- The cute.compiler options in a kernel's option table.
local function compiler_options(opts)
  local t = {}
  for k, v in pairs(opts) do
    if COMPILER_OPTIONS[k] then t[k] = v end
  end
  return require("cute.compiler").options(t)
end
M._compiler_options = compiler_options

--- Compiles a traced IR module (one C call: verify, print, key, lookup,
-- emit, compile, store, report); returns cute.compiler's module handle.
-- copts: the kernel's compiler options when already made (else from opts).
function M.compile_module(m, name, opts, copts)
  copts = copts or compiler_options(opts)
  local compiler = require "cute.compiler"
  -- the build id salts the key: the same IR may emit other NVVM IR in another build
  return compiler.compile_module(m, copts, { name = name, salt = "cutelua " .. (compiler.build_id() or "?") })
end

-- ---------------------------------------------------------------------------
-- The kernel object

local Kernel = {}
Kernel.__index = Kernel
M.Kernel = Kernel

local function options_of(k, over)
  local o = {}
  for key, v in pairs(k.opts) do o[key] = v end
  for key, v in pairs(over or {}) do o[key] = v end
  if o.assertions == nil then o.assertions = os.getenv("CUTELUA_ASSERTIONS") == "1" end
  return o
end

-- Checked kernels (cute.trace.check): the default for kernels whose checked
-- option is not set; CUTELUA_CHECKED=1 turns it on. check_epoch moves on with
-- every change, so a kernel's remembered specialisation is looked up again.
local checked_default = os.getenv("CUTELUA_CHECKED") == "1"
local check_epoch = 0

--- cute.set_checked(on): launches of kernels traced from now on check every
-- memory access and assertion (see docs/runtime.md); returns the old setting.
function M.set_checked(on)
  local old = checked_default
  checked_default = on and true or false
  if checked_default ~= old then check_epoch = check_epoch + 1 end
  return old
end


-- ---------------------------------------------------------------------------
-- Kernel options: every name is known and every value checked when the
-- kernel is made (cute.kernel, k:with), at the user's line.

local function whole(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end

local function bool_option(name)
  return function(v, kname)
    if type(v) ~= "boolean" then
      err.raise("cute.kernel %s: option %s must be true or false, got %s", kname, name, tostring(v))
    end
  end
end

-- The default limit on a module's IR instructions (docs/tracer.md): far
-- above the largest kernel of cute.lib, low enough that a trace that never
-- ends stops within seconds. CUTELUA_MAX_IR_OPS changes it (0: no limit).
local MAX_IR_OPS_DEFAULT = 500000
M.MAX_IR_OPS_DEFAULT = MAX_IR_OPS_DEFAULT

-- The limit for a kernel with options opts: its max_ir_ops, else the variable, else the default.
local function max_ir_ops(opts)
  if opts.max_ir_ops then return opts.max_ir_ops end
  local env = os.getenv("CUTELUA_MAX_IR_OPS")
  if env and env ~= "" then
    local n = tonumber(env)
    if not whole(n, 0, 2 ^ 31 - 1) then
      err.raise("CUTELUA_MAX_IR_OPS must be a whole number of IR instructions up to 2147483647 (0: no limit), got "
        .. "'%s'", env)
    end
    return n
  end
  return MAX_IR_OPS_DEFAULT
end

-- The cluster option as {x, y, z}: a number or a list of up to three
-- positive whole numbers with at most 16 blocks in all (nil: none).
local function cluster_dims(c, kname)
  if c == nil then return nil end
  local dims = type(c) == "table" and c or { c }
  local ok = (type(c) == "number" or (type(c) == "table" and not getmetatable(c))) and #dims >= 1 and #dims <= 3
  local total = 1
  for key, d in pairs(dims) do
    if type(key) ~= "number" or not whole(d, 1, 16) then ok = false else total = total * d end
  end
  if not ok then
    local shown = tostring(c)
    if type(c) == "table" then
      local parts = {}
      for key, d in pairs(c) do
        parts[#parts + 1] = (type(key) == "number" and "" or (tostring(key) .. " = ")) .. tostring(d)
      end
      shown = "{" .. table.concat(parts, ", ") .. "}"
    end
    err.raise("cute.kernel %s: option cluster must be a number or {x[, y[, z]]} of whole numbers from 1 to 16, got %s",
      kname, shown)
  end
  if total > 16 then
    err.raise("cute.kernel %s: option cluster {%s} has %d blocks; a cluster has at most 16 (8 portable)", kname,
      table.concat(dims, ", "), total)
  end
  return { dims[1] or 1, dims[2] or 1, dims[3] or 1 }
end

local KERNEL_OPTIONS = {
  name = function(v, kname)
    if type(v) ~= "string" then err.raise("cute.kernel %s: option name must be a string, got %s", kname, type(v)) end
  end,
  params = function(v, kname)
    if type(v) ~= "table" then
      err.raise("cute.kernel %s: option params must be a table of annotations (by parameter name or position), got %s",
        kname, type(v))
    end
  end,
  max_threads = function(v, kname)
    if not whole(v, 1, 1024) then
      err.raise("cute.kernel %s: option max_threads must be a whole number of threads from 1 to 1024, got %s", kname,
        tostring(v))
    end
  end,
  min_blocks = function(v, kname)
    if not whole(v, 1, 32) then
      err.raise("cute.kernel %s: option min_blocks must be a whole number of blocks an SM from 1 to 32, got %s",
        kname, tostring(v))
    end
  end,
  cluster = function(v, kname) cluster_dims(v, kname) end,
  assertions = bool_option("assertions"),
  checked = bool_option("checked"),
  trace_key = function(v, kname)
    if v ~= false and type(v) ~= "string" then
      err.raise("cute.kernel %s: option trace_key must be a string (what, with the arguments' signature and the "
        .. "options, determines the kernel's IR) or false, got a %s (%s)", kname, type(v), tostring(v))
    end
  end,
  max_ir_ops = function(v, kname)
    if not whole(v, 0, 2 ^ 31 - 1) then
      err.raise("cute.kernel %s: option max_ir_ops must be a whole number of IR instructions up to 2147483647 (0: no "
        .. "limit; the default is %d), got %s", kname, MAX_IR_OPS_DEFAULT, tostring(v))
    end
  end,
}

-- Raises at the user's line unless every option is known and valid.
local function check_options(opts, kname)
  local copts
  for key, v in pairs(opts) do
    local check = KERNEL_OPTIONS[key]
    if check then
      check(v, kname)
    elseif COMPILER_OPTIONS[key] then
      copts = copts or {}
      copts[key] = v
    else
      local names = {}
      for n in pairs(KERNEL_OPTIONS) do names[#names + 1] = n end
      for n in pairs(COMPILER_OPTIONS) do if not KERNEL_OPTIONS[n] then names[#names + 1] = n end end
      table.sort(names)
      err.raise("cute.kernel %s: unknown option '%s'%s (known: %s)", kname, tostring(key),
        require("cute.compiler")._did_you_mean(key, names), table.concat(names, ", "))
    end
  end
  if copts then require("cute.compiler")._check_options(copts) end
end
M._check_options = check_options

--- cute.kernel(fn[, opts]) or cute.kernel(name, fn[, opts]). opts: name,
-- params (annotations by parameter name or position: a dtype or
-- cute.constexpr), max_threads (launch bound), min_blocks (per SM), cluster
-- ({x, y, z}), assertions, fast_math, trace_key (a string: the author's
-- promise that it, the arguments' signature and the options determine the
-- kernel's IR, so that the compile cache is asked before tracing; see
-- docs/compiler.md), and compile options (arch, opt, lineinfo,
-- ptxas_options, max_registers, ...; see cute.compiler).
function M.kernel(a, b, c)
  local name, fn, opts
  if type(a) == "string" then
    name, fn, opts = a, b, c
  else
    fn, opts = a, b
  end
  if type(fn) ~= "function" then err.raise("cute.kernel: expected a function, got %s", type(fn)) end
  opts = opts or {}
  if type(opts) ~= "table" or getmetatable(opts) then
    err.raise("cute.kernel: the options must be a table (e.g. {max_threads = 256, arch = \"sm_90a\"}), got %s",
      type(opts) == "string" and string.format("the string %q", opts) or tostring(opts))
  end
  if opts.name ~= nil and type(opts.name) ~= "string" then
    err.raise("cute.kernel: option name must be a string, got %s", type(opts.name))
  end
  if not name then
    name = opts.name
    if not name then
      local info = debug.getinfo(fn, "S")
      name = string.format("kernel_%s_%d", (info.short_src:match("([%w_]+)%.lua$") or "lua"), info.linedefined)
    end
  end
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    err.raise("cute.kernel: '%s' is not a valid kernel name", tostring(name))
  end
  check_options(opts, name)
  local names = param_names(fn)
  local ann = {}
  for key, v in pairs(opts.params or {}) do
    if type(key) == "number" then ann[key] = v else
      local found
      for i, n in ipairs(names) do if n == key then found = i end end
      if not found then err.raise("cute.kernel: params.%s: the function has no parameter called %s", key, key) end
      ann[found] = v
    end
  end
  local cluster = cluster_dims(opts.cluster, name)
  return setmetatable({ name = name, fn = fn, opts = opts, names = names, ann = ann, specs = {}, nspecs = 0,
    cluster = cluster, vararg = debug.getinfo(fn, "u").isvararg }, Kernel)
end

function Kernel:__tostring() return "cute.kernel(" .. self.name .. ")" end

--- A view of the kernel with other options (its own specialisations).
function Kernel:with(opts)
  if type(opts) ~= "table" or getmetatable(opts) then
    err.raise("%s:with: expected a table of kernel options, e.g. k:with{arch = \"sm_90a\", opt = 2}, got %s; "
      .. "compile flags are options too: opt (0-3), ptxas_options = \"...\", max_registers, fast_math, lineinfo",
      self.name, type(opts) == "string" and string.format("the string %q", opts) or tostring(opts))
  end
  local k = M.kernel(self.name, self.fn, options_of(self, opts))
  return k
end

local function signature(k, n, ...)
  if n > #k.names and not k.vararg then
    err.raise("kernel %s takes %d argument%s (%s), got %d", k.name, #k.names, #k.names == 1 and "" or "s",
      table.concat(k.names, ", "), n)
  end
  local specs, keys = {}, {}
  for i = 1, n do
    local s = classify((select(i, ...)), k.ann[i], k.names[i], i)
    specs[i] = s
    keys[i] = s.key
  end
  return specs, table.concat(keys, "|")
end

-- Counters of this process (M.stats()).
local stats = { traces = 0, pretrace_hits = 0, pretrace_misses = 0, pretrace_fallbacks = 0 }

--- Counters of this process: traces (kernel specialisations traced, lazily
-- for :ir() included), pretrace_hits / pretrace_misses (specialisations of
-- kernels with a trace_key found / not found in the cache before tracing),
-- pretrace_fallbacks (found, but with unusable launch metadata: traced again).
function M.stats()
  local out = {}
  for k, v in pairs(stats) do out[k] = v end
  return out
end

-- CUTELUA_TRACE_JIT=1 keeps the JIT on while tracing.
local trace_jit_off = os.getenv("CUTELUA_TRACE_JIT") ~= "1"

-- Traces one specialisation into a new IR module.
local function trace(k, specs, opts, copts)
  stats.traces = stats.traces + 1
  local ir = core.ir()
  local m = ffi.gc(ir.module_new(), ir.module_free)
  -- the target: ops the arch lacks are refused as they are traced, at their line
  local arch = (copts or compiler_options(opts)):get("arch")
  if ir.module_set_target(m, arch) ~= 0 then err.raise("kernel %s: %s", k.name, ffi.string(ir.diag(m))) end
  ir.module_set(m, IRC.option.max_ops, max_ir_ops(opts))
  local T = core.begin(m, k.name, "kernel", nil, opts)
  -- a kernel of cutelua's own (cute.lib): all its ops at the user's line that
  -- launched or compiled it, found once rather than by a stack walk per op
  local src = debug.getinfo(k.fn, "S").source
  local internal = require("cute._err").is_internal(src)
  -- The trace runs in LuaJIT's interpreter: a body is run once, and compiling
  -- its paths to machine code costs more than it saves (a GEMM traces in 27 ms
  -- interpreted, 45-50 ms with the JIT in a new process; docs/tracer.md)
  local jit_was_on = trace_jit_off and jit.status()
  if jit_was_on then jit.off() end
  local ok, e = xpcall(function()
    local args, params = make_params(T, specs, k.names, opts.checked)
    if internal then core.at_user_line(k.fn, unpack(args, 1, #specs)) else k.fn(unpack(args, 1, #specs)) end
    return params
  end, core.on_trace_error)
  if jit_was_on then jit.on() end
  if not ok then
    core.abort()
    error(e, 0)
  end
  local params = e
  core.finish()
  -- kernel attributes
  local f = T.f
  local max_threads, min_blocks = T.max_threads or opts.max_threads, T.min_blocks or opts.min_blocks
  local attr = IRC.attr
  if max_threads then ir.func_attr(f, attr.maxntid, max_threads, 1, 1) end
  if min_blocks then ir.func_attr(f, attr.minctasm, min_blocks, 0, 0) end
  if opts.cluster then
    local cx = cluster_dims(opts.cluster, k.name)
    local compiler = require "cute.compiler"
    if not compiler.target_has(arch, "CLUSTER") then
      err.raise("kernel %s: option cluster {%s} %s", k.name, table.concat(cx, ", "),
        compiler.target_needs(arch, "CLUSTER"))
    end
    ir.func_attr(f, attr.cluster, cx[1], cx[2], cx[3])
  end
  if T.dyn_smem then ir.func_attr(f, attr.dynamic_smem, T.dyn_smem, 0, 0) end
  return { module = m, params = params, dyn_smem = T.dyn_smem or 0, static_smem = T.smem_bytes,
    check_sites = T.check and T.check.sites }
end

--- Traces and compiles for arguments like these (device tensors, fake
-- tensors from cute.fake_tensor, scalars) without launching or needing a GPU.
-- Returns the compiled handle: :ir(), :ll(), :ptx(), :cubin(), :sass(),
-- :resources(), :report(), :cache_key().
function Kernel:compile(...)
  local spec = self:_specialise(select("#", ...), ...)
  return spec.compiled
end

--- The IR of the specialisation for these arguments, as text.
function Kernel:ir(...)
  return self:compile(...):ir()
end

local codegen -- the launch path's code generator (defined with the launch path below)

-- ---------------------------------------------------------------------------
-- The cache keyed before tracing (docs/compiler.md, "Cache keyed before
-- tracing"). A kernel with a trace_key declares that the key, the arguments'
-- signature and the options determine its IR; then the compile cache is asked
-- first, under key material made of those (and cutelua's build id, the
-- kernel's name and its source), and a hit is launched from the metadata
-- stored with the entry, without tracing.

local PRETRACE_TAG = "cutelua-pretrace 1"
local META_TAG = "cutelua-kernel-meta 1"
local PRETRACE_SALT = "pretrace"

-- Kernel options left out of the key material: those that do not change what
-- is compiled, link (its inputs enter the C side of the key by their
-- contents' hash), and checked (always false here: checked kernels trace).
local NOT_IN_KEY = { trace_key = true, keep = true, dump_dir = true, cache = true, cache_dir = true, link = true,
  checked = true }

-- True when v is, or holds, a function: its text (an address) is not the
-- same in another process.
local function has_function(v, depth)
  if type(v) == "function" then return true end
  if type(v) ~= "table" or getmetatable(v) or (depth or 0) > 8 then return false end
  for key, x in pairs(v) do
    if has_function(key, (depth or 0) + 1) or has_function(x, (depth or 0) + 1) then return true end
  end
  return false
end

-- The options, sorted, as text; nil and why when one has no stable text.
local function options_text(opts)
  local keys = {}
  for key in pairs(opts) do
    if not NOT_IN_KEY[key] then keys[#keys + 1] = key end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for i, key in ipairs(keys) do
    if has_function(opts[key]) then
      return nil, string.format("option %s holds a function, which has no text that another process shares",
        tostring(key))
    end
    local ok, v = pcall(serialize, opts[key])
    if not ok then return nil, string.format("option %s has no stable text (%s)", tostring(key), tostring(v)) end
    parts[i] = tostring(key) .. "=" .. v
  end
  return table.concat(parts, ",")
end

-- Where the kernel's function comes from: for cutelua's own kernels the
-- bundled path (the build id covers its contents); for a user's kernel the
-- chunk and a hash of its text (the file's contents when it was loaded from
-- a file; nothing when that cannot be read).
local function source_text(fn, compiler)
  local info = debug.getinfo(fn, "S")
  local src = info.source
  if err.is_internal(src) then
    return string.format("cutelua %s:%d", src:match("(lua/cute/.*)$") or src, info.linedefined)
  end
  local body, name
  if src:sub(1, 1) == "@" then
    name = src
    local f = io.open(src:sub(2), "rb")
    if f then
      body = f:read("*a")
      f:close()
    end
  elseif src:sub(1, 1) == "=" then
    name = src
  else
    name, body = "(string)", src -- loaded from a string: the source is its text
  end
  return string.format("user %s:%d %s", name, info.linedefined, body and compiler.sha256(body) or "(unreadable)")
end

-- The user's line that a kernel of cutelua's own is traced at (all its ops
-- are located there): it reaches the cubin through line info only.
local function user_site()
  local level = 3
  while true do
    local info = debug.getinfo(level, "Sln")
    if not info then return "?" end
    if not err.is_internal(info.source) then
      return string.format("%s:%d:%s", info.source, info.currentline or 0, tostring(info.name))
    end
    level = level + 1
  end
end

-- The compiler options that change what is compiled, resolved (the C side
-- of the key hashes them again, canonically, with the link inputs' contents).
local function compiler_text(copts)
  local parts = {}
  for i, name in ipairs(require("cute.compiler").option_names { in_key = true }) do
    parts[i] = name .. "=" .. tostring(copts:get(name))
  end
  return table.concat(parts, ",")
end

-- True when a compile-time argument is, or holds, a function.
local function const_function(specs)
  for _, sp in ipairs(specs) do
    if sp.kind == "const" and has_function(sp.value) then return true end
  end
  return false
end

local pretrace_warned = {} -- reasons already warned about (once a process each)

-- The key material, or nil and why there is none.
local function pretrace_material(k, key, opts, copts, compiler)
  local id, why = compiler.build_id()
  if not id then return nil, why end
  local otext
  otext, why = options_text(opts)
  if not otext then return nil, why end
  local src = source_text(k.fn, compiler)
  local parts = { PRETRACE_TAG, "build " .. id, "kernel " .. k.name,
    "trace_key " .. string.format("%q", opts.trace_key), "signature " .. key, "options " .. otext,
    "compiler " .. compiler_text(copts), "source " .. src }
  if copts:get("lineinfo") and src:sub(1, 7) == "cutelua" then parts[#parts + 1] = "site " .. user_site() end
  return table.concat(parts, "\n")
end

-- What launching needs from a trace, as the bytes stored with the entry.
local function encode_meta(traced)
  local lines = { META_TAG, "dyn_smem " .. (traced.dyn_smem or 0), "static_smem " .. (traced.static_smem or 0) }
  for _, p in ipairs(traced.params) do
    lines[#lines + 1] = string.format("param %s %d %s %s %s", p.ctype, p.arg, p.what, p.dtype and p.dtype.name or "-",
      p.leaf and tostring(p.leaf) or "-")
  end
  return table.concat(lines, "\n") .. "\n"
end

local WHAT_OF_KIND = { tensor = { ptr = true, shape = true, stride = true }, scalar = { value = true },
  tma = { tma = true } }

-- The launch metadata back from its bytes, checked against the signature;
-- nil and why when it does not fit.
local function decode_meta(text, specs)
  if text == "" then return nil, "no metadata" end
  local it_lines = text:gmatch("([^\n]*)\n")
  if it_lines() ~= META_TAG then return nil, "not " .. META_TAG end
  local out = { params = {} }
  for line in it_lines do
    local field, num = line:match("^(%a[%w_]*) (%d+)$")
    if field == "dyn_smem" or field == "static_smem" then
      out[field] = tonumber(num)
    else
      local ctype, arg, what, dname, leaf = line:match("^param (%S+) (%d+) (%a+) (%S+) (%S+)$")
      if not ctype then return nil, string.format("bad line '%s'", line) end
      arg = tonumber(arg)
      local s = specs[arg]
      if not s then return nil, string.format("parameter of argument %d, which the signature does not have", arg) end
      if not (WHAT_OF_KIND[s.kind] or {})[what] then
        return nil, string.format("a '%s' parameter for argument %d, a %s", what, arg, s.kind)
      end
      local p = { ctype = ctype, arg = arg, what = what }
      if what == "value" then
        if dname ~= s.dtype.name or ctype ~= s.dtype.storage then
          return nil, string.format("argument %d: %s %s, where the signature has %s", arg, ctype, dname, s.dtype.name)
        end
        p.dtype = s.dtype
      elseif what == "ptr" then
        if ctype ~= "uint64_t" then return nil, "a pointer parameter of C type " .. ctype end
      elseif what == "tma" then
        if ctype ~= "CuteTmaDesc" then return nil, "a TMA parameter of C type " .. ctype end
      else
        if ctype ~= (s.idx64 and "int64_t" or "int32_t") then
          return nil, string.format("a %s parameter of C type %s", what, ctype)
        end
        p.leaf = tonumber(leaf)
        if not p.leaf or p.leaf < 1 then return nil, string.format("a %s parameter without a leaf", what) end
      end
      out.params[#out.params + 1] = p
    end
  end
  if not out.dyn_smem or not out.static_smem then return nil, "no shared memory sizes" end
  for i, s in ipairs(specs) do
    if s.kind ~= "const" then
      local found = false
      for _, p in ipairs(out.params) do found = found or p.arg == i end
      if not found then return nil, string.format("no parameter for argument %d", i) end
    end
  end
  return out
end

-- Compiles through the cache keyed before tracing. Returns the compiled
-- module, the traced result (on a hit: rebuilt from the entry's metadata),
-- whether it was a hit, and the trace's milliseconds; nil when the kernel
-- cannot use that cache (no build id, options without a stable text).
local function pretrace_compile(k, specs, key, opts, copts)
  local compiler = require "cute.compiler"
  local material, why = pretrace_material(k, key, opts, copts, compiler)
  if not material then
    if not pretrace_warned[why] then
      pretrace_warned[why] = true
      compiler.warn(string.format("kernel %s: trace_key not used, the kernel is traced first: %s", k.name, why))
    end
    return nil
  end
  local now = require("cute._c").host.now_ns
  local traced, trace_ms
  -- traced at most once: on a miss, or on a hit when the IR or NVVM IR is asked for
  local function ensure()
    if not traced then
      local t0 = now()
      traced = trace(k, specs, opts, copts)
      trace_ms = tonumber(now() - t0) / 1e6
    end
    return traced
  end
  local info = {
    name = k.name, key_text = material, salt = PRETRACE_SALT,
    trace = function() return ensure().module end,
    meta = function() return encode_meta(ensure()) end,
  }
  local compiled = compiler.compile_module(nil, copts, info)
  if compiled.origin == "compiled" then
    stats.pretrace_misses = stats.pretrace_misses + 1
    return compiled, traced, false, trace_ms
  end
  stats.pretrace_hits = stats.pretrace_hits + 1
  if traced then return compiled, traced, false, trace_ms end -- a hit, traced for an "ir" dump (keep)
  local meta
  meta, why = decode_meta(compiled:meta(), specs)
  if meta then
    return compiled, { params = meta.params, dyn_smem = meta.dyn_smem, static_smem = meta.static_smem }, true, 0
  end
  stats.pretrace_hits = stats.pretrace_hits - 1
  stats.pretrace_fallbacks = stats.pretrace_fallbacks + 1
  compiler.warn(string.format("kernel %s: the cache entry %s (trace_key %q) has unusable launch metadata (%s): "
    .. "tracing and compiling it again", k.name, compiled:cache_key(), opts.trace_key, why))
  info.refresh = true
  compiled = compiler.compile_module(nil, copts, info)
  return compiled, traced, false, trace_ms
end

-- The key material and salt of the cache entry that a specialisation for
-- these arguments is looked up under before tracing (for tests); nil and why
-- when the kernel has none.
function Kernel:_pretrace_material(...)
  local _, key = signature(self, select("#", ...), ...)
  local opts = options_of(self)
  if not opts.trace_key then return nil, "the kernel has no trace_key" end
  local material, why = pretrace_material(self, key, opts, compiler_options(opts), require "cute.compiler")
  return material, material and PRETRACE_SALT or why
end

function Kernel:_specialise(n, ...)
  local specs, key = signature(self, n, ...)
  local checked = self.opts.checked
  if checked == nil then checked = checked_default end
  if checked then key = key .. "|checked" end
  local spec = self.specs[key]
  if spec then
    spec.epoch = check_epoch
    return spec
  end
  local opts = options_of(self)
  opts.checked = checked
  local now = require("cute._c").host.now_ns
  local t0 = now()
  local copts = compiler_options(opts)
  local compiled, traced, pretraced, trace_ms
  -- checked kernels always trace (the trace records their check sites); a
  -- compile-time argument that is a function is in the signature by its
  -- address, which another process does not share: traced, keyed by its IR
  if opts.trace_key and not checked and copts:get("cache") and not const_function(specs) then
    compiled, traced, pretraced, trace_ms = pretrace_compile(self, specs, key, opts, copts)
  end
  if not compiled then
    traced = trace(self, specs, opts, copts)
    trace_ms = tonumber(now() - t0) / 1e6
    compiled = M.compile_module(traced.module, self.name, opts, copts)
  end
  local total_ms = tonumber(now() - t0) / 1e6
  local storage, argv = make_packer(traced.params)
  spec = { key = key, specs = specs, params = traced.params, compiled = compiled, storage = storage, argv = argv,
    dyn_smem = traced.dyn_smem, static_smem = traced.static_smem, module = traced.module, loaded = {},
    trace_ms = trace_ms, compile_ms = total_ms - trace_ms, epoch = check_epoch,
    check_sites = traced.check_sites, pretraced = pretraced or false }
  if opts.checked then spec.check = { ptr = ffi.new("uint64_t", 0) } end
  spec.guard, spec.pack = codegen(spec, { ... })
  self.specs[key] = spec
  self.nspecs = self.nspecs + 1
  return spec
end

-- The loaded kernel function of a specialisation on the current device
-- (loaded again after a device reset).
local function kernel_fn(k, spec)
  local dev = runtime.current_device()
  local gen = runtime.generation(dev)
  local l = spec.loaded[dev]
  if l and l.gen == gen then return l.fn end
  local mod = runtime.load_module(spec.compiled:cubin(), k.name)
  local kfn = mod:kernel(k.name)
  spec.loaded[dev] = { gen = gen, fn = kfn, module = mod }
  return kfn
end

-- ---------------------------------------------------------------------------
-- The launch path. Each specialisation gets two generated functions: a guard
-- (do these arguments fit it? same layout objects, dtypes, sufficient
-- alignment, the same compile-time values) and a packer (write the arguments
-- into its parameter struct). A kernel remembers its last specialisation, so a
-- repeated launch costs the guard, the packing and cuLaunchKernel.

local rt = require("cute._c").rt
local Scalar = dtype.Scalar

local function narrow_float(dt)
  return dt.is_float and (dt.storage == "uint16_t" or dt.storage == "uint8_t")
end

-- Encodes a number as the storage of a narrow float dtype (f16, bf16, fp8).
local conv_in, conv_out = ffi.new("double[1]"), ffi.new("uint64_t[1]")
local function encode_narrow(code, v)
  conv_in[0] = v
  rt.from_doubles(conv_out, code, conv_in, 1)
  return conv_out[0]
end

-- A checked kernel's bound for a tensor argument: the bytes its layout spans
-- (cosize), or fewer if its buffer ends before.
local function tensor_limit(t)
  local l = rawget(t, "_lim")
  if l then return l end
  l = L.cosize(t.layout) * t.dtype.bytes
  if t.buffer then
    local room = tonumber(t.buffer.bytes) - t.offset
    if room < l then l = room end
  end
  t._lim = l
  return l
end

codegen = function(spec, args)
  local DeviceTensor = require("cute.tensor").DeviceTensor
  local env = { DT = DeviceTensor, SC = Scalar, CE = Constexpr, SM = StaticMark, ffi = ffi, enc = encode_narrow,
    getmetatable = getmetatable, rawequal = rawequal, rawget = rawget, type = type, sig = tensor_spec,
    lim = tensor_limit, CK = spec.check, fits = dtype.fits }
  local n = #spec.specs
  local names = {}
  for i = 1, n do names[i] = "a" .. i end
  local conds = { "n == " .. n }
  for i, s in ipairs(spec.specs) do
    local a, arg = names[i], args[i]
    if s.kind == "tensor" then
      local static = getmetatable(arg) == StaticMark
      env["K" .. i] = s.key
      local src = static and (a .. ".tensor") or a
      if static then conds[#conds + 1] = string.format("getmetatable(%s) == SM", a) end
      -- the signature cached on the tensor (tensor_spec), or computed now for a new tensor
      conds[#conds + 1] = string.format("getmetatable(%s) == DT and (rawget(%s, '%s') or sig(%s, %s)).key == K%d",
        src, src, static and "_sig_static" or "_sig", src, tostring(static), i)
    elseif s.kind == "scalar" then
      env["D" .. i] = s.dtype
      if s.plain then -- a number the dtype holds (else the signature's classify says why not)
        conds[#conds + 1] = string.format("type(%s) == 'number' and fits(D%d, %s)", a, i, a)
      else
        conds[#conds + 1] = string.format("getmetatable(%s) == SC and %s.dtype == D%d", a, a, i)
      end
    elseif s.kind == "const" then
      env["V" .. i] = s.value
      if getmetatable(arg) == Constexpr then
        conds[#conds + 1] = string.format("getmetatable(%s) == CE and rawequal(%s.value, V%d)", a, a, i)
      else
        conds[#conds + 1] = string.format("rawequal(%s, V%d)", a, i)
      end
    else -- tma
      conds[#conds + 1] = string.format("ffi.istype('CuteTmaDesc', %s)", a)
    end
  end
  local stmts = {}
  for j, p in ipairs(spec.params) do
    local a = names[p.arg]
    local t = getmetatable(args[p.arg]) == StaticMark and (a .. ".tensor") or a
    local rhs
    if p.what == "value" then
      local v = spec.specs[p.arg].plain and a or (a .. ".value")
      if narrow_float(p.dtype) then
        rhs = string.format("enc(%d, %s)", p.dtype.code, v)
      elseif p.dtype.name == "bool" then
        rhs = string.format("(%s == true or %s == 1) and 1 or 0", v, v)
      else
        rhs = v
      end
    elseif p.what == "ptr" then
      rhs = t .. "._ptr"
    elseif p.what == "tma" then
      rhs = a
    elseif p.what == "check_lim" then
      rhs = string.format("lim(%s)", t)
    elseif p.what == "check_err" then
      rhs = "CK.ptr"
    elseif p.what == "shape" then
      rhs = string.format("%s._sl[%d]", t, p.leaf)
    else
      rhs = string.format("%s._dl[%d]", t, p.leaf)
    end
    stmts[#stmts + 1] = string.format("  st.p%d = %s", j, rhs)
  end
  local arglist = table.concat(names, ", ")
  local code = string.format([[
local DT, SC, CE, SM, ffi, enc, getmetatable, rawequal, rawget, type, sig, lim, CK, fits =
  DT, SC, CE, SM, ffi, enc, getmetatable, rawequal, rawget, type, sig, lim, CK, fits
local guard = function(n%s%s)
  return %s
end
local pack = function(st%s%s)
%s
end
return guard, pack]], n > 0 and ", " or "", arglist, table.concat(conds, "\n    and "), n > 0 and ", " or "", arglist,
    table.concat(stmts, "\n"))
  local chunk = assert(loadstring(code, "=(kernel launch " .. spec.key .. ")"))
  setfenv(chunk, env)
  return chunk()
end

-- The loaded kernel function of a specialisation on the current device.
local function loaded_fn(k, spec)
  local dev = runtime.current_device()
  local gen = rt.generation(dev)
  if spec.fn and spec.fn_dev == dev and spec.fn_gen == gen then return spec.fn end
  local kf = kernel_fn(k, spec)
  spec.fn, spec.fn_dev, spec.fn_gen = kf.fn, dev, gen
  return spec.fn
end

local launch_cfg = ffi.new("RtLaunch")

-- Checked launches: a record buffer per device (cute.trace.check describes
-- it), cleared before each launch and read after it.
local check_bufs = {}
local function check_buffer()
  local dev = runtime.current_device()
  local gen = rt.generation(dev)
  local b = check_bufs[dev]
  if not b or b.gen ~= gen then
    b = { gen = gen, buf = runtime.alloc(require("cute.trace.check").RECORD_BYTES), host = ffi.new("int32_t[16]") }
    check_bufs[dev] = b
  end
  return b
end

local function b_clear(b, cfg) b.buf:memset(0, 4, 16, 0, cfg.stream) end

local function dims(h, i) return string.format("(%d,%d,%d)", h[i], h[i + 1], h[i + 2]) end

-- Waits for a checked launch and raises what its record says.
local function check_result(k, spec, cfg, b)
  if cfg.stream then cfg.stream:synchronize() else runtime.synchronize() end
  local h = b.host
  b.buf:copy_to_host(h, 64, 0)
  if h[0] == 0 then return end
  local site = spec.check_sites[h[2]] or { what = "access", where = "?" }
  local count = h[1] % 2 ^ 32
  local msg
  if site.what == "assert" then
    msg = string.format("kernel '%s': cute.assert_ failed at %s%s, in block %s thread %s", k.name, site.where,
      site.msg and (": " .. tostring(site.msg)) or "", dims(h, 3), dims(h, 6))
    if count > 1 then msg = msg .. string.format(" (%d failures in all; the first is shown)", count) end
  else
    local off = h[10] * 2 ^ 32 + h[9] % 2 ^ 32
    local lim = h[12] * 2 ^ 32 + h[11] % 2 ^ 32
    msg = string.format("kernel '%s': out-of-bounds %s of %d bytes at %s, in block %s thread %s: byte offset %d of "
      .. "%s, which has %d bytes", k.name, site.what, site.bytes, site.where, dims(h, 3), dims(h, 6), off, site.name,
      lim)
    if count > 1 then msg = msg .. string.format(" (%d out-of-bounds accesses in all; the first is shown)", count) end
    msg = msg .. ". Checked launch: the access was not made, and the GPU stays usable"
  end
  err.raise("%s", msg)
end

--- Launches: k:launch({grid=, block=, smem=, cluster=, stream=}, args...).
-- The dynamic shared memory the kernel carved is added to cfg.smem.
function Kernel:launch(cfg, ...)
  local n = select("#", ...)
  local spec = self.last
  if not (spec and spec.epoch == check_epoch and spec.guard(n, ...)) then
    spec = self:_specialise(n, ...)
    self.last = spec
  end
  local cb
  if spec.check then
    cb = check_buffer()
    spec.check.ptr = cb.buf.ptr
  end
  -- The arguments are packed before anything else: LuaJIT cannot compile a
  -- use of `...` in a trace that starts inside a callee (a side trace of the
  -- helpers below), and the launch would fall back to the interpreter.
  spec.pack(spec.storage, ...)
  local fn = loaded_fn(self, spec)
  runtime._fill_launch(cfg, launch_cfg)
  if spec.dyn_smem > 0 then
    if cfg.smem and cfg.smem < spec.dyn_smem then
      err.raise("launch of %s: smem = %d is less than the %d bytes of shared memory the kernel allocates", self.name,
        cfg.smem, spec.dyn_smem)
    end
    launch_cfg.smem = spec.dyn_smem > launch_cfg.smem and spec.dyn_smem or launch_cfg.smem
  end
  if self.cluster and not cfg.cluster then
    local cx = self.cluster
    launch_cfg.cluster[0], launch_cfg.cluster[1], launch_cfg.cluster[2] = cx[1] or 1, cx[2] or 1, cx[3] or 1
  end
  if cb then b_clear(cb, cfg) end
  local rc = rt.launch(fn, launch_cfg, spec.argv)
  if rc ~= 0 then runtime._check(rc) end
  if cb then check_result(self, spec, cfg, cb) end
end

--- k{grid=, block=, ...}(args...): a launch in two steps, like the CUDA <<<>>> syntax.
function Kernel:__call(cfg)
  if type(cfg) ~= "table" or getmetatable(cfg) then
    err.raise("%s: call a kernel as k{grid = ..., block = ...}(args...) or k:launch(cfg, args...)", self.name)
  end
  local k = self
  return function(...) return k:launch(cfg, ...) end
end

--- Inside a kernel being traced: its launch bounds, for when they depend on
-- what is traced (a block size passed as cute.constexpr): at most
-- max_threads threads a block, and (optional) at least min_blocks blocks
-- resident an SM. They override the kernel's max_threads/min_blocks options.
function M.launch_bounds(max_threads, min_blocks)
  local T = core.current()
  if not T or T.kind ~= "kernel" then err.raise("cute.launch_bounds: only inside a kernel being traced") end
  if type(max_threads) ~= "number" or max_threads < 1 or max_threads > 1024 or max_threads % 1 ~= 0 then
    err.raise("cute.launch_bounds: max_threads must be a whole number of threads in 1..1024, got %s",
      tostring(max_threads))
  end
  if min_blocks ~= nil and not whole(min_blocks, 1, 32) then
    err.raise("cute.launch_bounds: min_blocks must be a whole number of blocks an SM from 1 to 32, got %s",
      tostring(min_blocks))
  end
  T.max_threads, T.min_blocks = max_threads, min_blocks
end

M._exports = { "constexpr", "static", "launch_bounds", "set_checked" }

-- cute.kernel(...) is M.kernel; the module stays reachable as cute.kernel.*
return setmetatable(M, { __call = function(_, ...) return M.kernel(...) end })
