--- cute.kernel's trace driver: a specialisation traced into a new IR module
-- (its target, its instruction bound, the body run once with proxies, the
-- kernel attributes), and that module compiled in one C call
-- (compile_module). Also the option helpers the trace needs (the compile
-- options of a kernel's option table, max_ir_ops, cluster sizes) and the
-- process's counters.
local ffi = require "ffi"
local core = require "cute.trace.core"
local err = require "cute._err"
local kargs = require "cute.kernel_args"

local KT = {}

-- ---------------------------------------------------------------------------
-- Compiling a traced module: verify, print (the cache key's material), and
-- only on a cache miss emit NVVM IR and run libnvvm and nvJitLink

-- The compile options' names (from C, through cute.compiler).
local compiler_option_set -- read when first needed: cute.compiler is not loaded before it is used

--- The set of the compile options' names.
function KT.compiler_option_names()
  if not compiler_option_set then
    compiler_option_set = {}
    for _, name in ipairs(require("cute.compiler").option_names()) do compiler_option_set[name] = true end
  end
  return compiler_option_set
end

--- The cute.compiler options in a kernel's option table.
local function compiler_options(opts)
  local t = {}
  for k, v in pairs(opts) do
    if KT.compiler_option_names()[k] then t[k] = v end
  end
  return require("cute.compiler").options(t)
end

--- Compiles a traced IR module (one C call: verify, print, key, lookup,
-- emit, compile, store, report); returns cute.compiler's module handle.
-- copts: the kernel's compiler options when already made (else from opts).
function KT.compile_module(m, name, opts, copts)
  copts = copts or compiler_options(opts)
  local compiler = require "cute.compiler"
  -- the build id salts the key: the same IR may emit other NVVM IR in another build
  return compiler.compile_module(m, copts, { name = name, salt = "cutelua " .. (compiler.build_id() or "?") })
end

-- ---------------------------------------------------------------------------
-- Option helpers

local function whole(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end
KT.whole = whole

-- The default limit on a module's IR instructions (docs/tracer.md): far
-- above the largest kernel of cute.lib, low enough that a trace that never
-- ends stops within seconds. CUTELUA_MAX_IR_OPS changes it (0: no limit).
local MAX_IR_OPS_DEFAULT = 500000
KT.MAX_IR_OPS_DEFAULT = MAX_IR_OPS_DEFAULT

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
KT.max_ir_ops = max_ir_ops

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
KT.cluster_dims = cluster_dims

-- ---------------------------------------------------------------------------
-- Tracing

-- Counters of this process (M.stats()).
local stats = { traces = 0, pretrace_hits = 0, pretrace_misses = 0, pretrace_fallbacks = 0 }

KT.stats = stats

-- CUTELUA_TRACE_JIT=1 keeps the JIT on while tracing.
local trace_jit_off = os.getenv("CUTELUA_TRACE_JIT") ~= "1"

-- Traces one specialisation into a new IR module.
function KT.trace(k, specs, opts, copts)
  stats.traces = stats.traces + 1
  local ir = core.ir()
  local m = ffi.gc(ir.module_new(), ir.module_free)
  -- the target: ops the arch lacks are refused as they are traced, at their line
  local arch = (copts or compiler_options(opts)):get("arch")
  if ir.module_set_target(m, arch) ~= 0 then err.raise("kernel %s: %s", k.name, ffi.string(ir.diag(m))) end
  local IRC = require("cute.ir").enums -- the IR's enumerations, by name (from C)
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
    local body = k:body() -- preprocessed unless {preprocess = false}
    local args, params = kargs.make_params(T, specs, k.names, opts.checked)
    local n
    if internal then
      core.at_user_line(function(...) n = select("#", body(...)) end, unpack(args, 1, #specs))
    else
      n = select("#", body(unpack(args, 1, #specs)))
    end
    if n > 0 then
      local info = debug.getinfo(k.fn, "S")
      err.raise("kernel %s (%s:%d) returns a value: a kernel's results are what it writes to its tensor arguments; "
        .. "return nothing (or use cute.return_() to leave early on the GPU)", k.name, info.short_src,
        info.linedefined)
    end
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
  if max_threads and T.warpgroup and max_threads % 128 ~= 0 then
    err.raise("kernel %s: %s issues a warpgroup instruction (wgmma), which runs on whole warpgroups of 128 threads, "
      .. "but the launch bounds allow at most %d threads a block (max_threads): make it a multiple of 128", k.name,
      T.warpgroup, max_threads)
  end
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
    check_sites = T.check and T.check.sites, warpgroup = T.warpgroup and true }
end

KT.compiler_options = compiler_options
return KT
