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
--
-- This file is the kernel object (cute.kernel, its options, specialisations,
-- compile and launch); the concepts behind it are files of their own:
-- kernel_args.lua (what each argument is, the signature, the parameters),
-- kernel_trace.lua (the trace driver and the one-call compile),
-- kernel_cache.lua (the cache keyed before tracing and its launch metadata)
-- and kernel_launch.lua (the generated guard and packer, checked launches).
local ffi = require "ffi"
local core = require "cute.trace.core"
local runtime = require "cute.runtime"
local err = require "cute._err"
local args = require "cute.kernel_args"
local ktrace = require "cute.kernel_trace"
local kcache = require "cute.kernel_cache"
local klaunch = require "cute.kernel_launch"

local M = {}

M.constexpr, M.static = args.constexpr, args.static
local param_names, signature, make_packer = args.param_names, args.signature, args.make_packer
local compiler_options, trace, stats = ktrace.compiler_options, ktrace.trace, ktrace.stats
local PRETRACE_SALT = kcache.PRETRACE_SALT
local whole, cluster_dims, MAX_IR_OPS_DEFAULT = ktrace.whole, ktrace.cluster_dims, ktrace.MAX_IR_OPS_DEFAULT
local pretrace_compile, pretrace_material, const_function = kcache.pretrace_compile, kcache.pretrace_material,
  kcache.const_function
local codegen, loaded_fn, launch_cfg = klaunch.codegen, klaunch.loaded_fn, klaunch.launch_cfg
local check_buffer, b_clear, check_result = klaunch.check_buffer, klaunch.b_clear, klaunch.check_result
local rt = require("cute._c").rt

M.MAX_IR_OPS_DEFAULT = MAX_IR_OPS_DEFAULT
M.compile_module = ktrace.compile_module
M._compiler_options = compiler_options

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
-- @param on a boolean
-- @return the previous setting
-- @usage local old = cute.set_checked(true)
function M.set_checked(on)
  local old = checked_default
  checked_default = on and true or false
  if checked_default ~= old then check_epoch = check_epoch + 1 end
  return old
end

-- ---------------------------------------------------------------------------
-- Kernel options: every name is known and every value checked when the
-- kernel is made (cute.kernel, k:with), at the user's line.

local function bool_option(name)
  return function(v, kname)
    if type(v) ~= "boolean" then
      err.raise("cute.kernel %s: option %s must be true or false, got %s", kname, name, tostring(v))
    end
  end
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
  preprocess = bool_option("preprocess"),
  checked = bool_option("checked"),
  trace_key = function(v, kname)
    if v ~= false and type(v) ~= "string" then
      err.raise("cute.kernel %s: option trace_key must be a string (what, with the arguments' signature and the "
        .. "options, determines the kernel's IR) or false, got a %s (%s)", kname, type(v), tostring(v))
    end
  end,
  device = function(v, kname)
    if v ~= "sim" and v ~= "gpu" then
      err.raise("cute.kernel %s: option device must be \"sim\" (the CPU simulator) or \"gpu\", got %s", kname,
        tostring(v))
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
    elseif ktrace.compiler_option_names()[key] then
      copts = copts or {}
      copts[key] = v
    else
      local names = {}
      for n in pairs(KERNEL_OPTIONS) do names[#names + 1] = n end
      for n in pairs(ktrace.compiler_option_names()) do if not KERNEL_OPTIONS[n] then names[#names + 1] = n end end
      table.sort(names)
      err.raise("cute.kernel %s: unknown option '%s'%s (known: %s)", kname, tostring(key),
        err.did_you_mean(key, names), table.concat(names, ", "))
    end
  end
  if copts then require("cute.compiler").internal.check_options(copts) end
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
-- @param a the kernel's name (a string), or the function
-- @param b the function, or the options
-- @param c the options (with a name first)
-- @return a kernel object (k:launch, k{...}(...), k:compile, k:with, k:ir)
-- @usage local k = cute.kernel("add", function(x, y) ... end, {max_threads = 256})
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
  -- the preprocessor (cute.pre): the text of a chunk that a later one replaces is kept now
  local pre_text = opts.preprocess ~= false and require("cute.pre.source").capture(fn) or nil
  return setmetatable({ name = name, fn = fn, opts = opts, names = names, ann = ann, specs = {}, nspecs = 0,
    cluster = cluster, vararg = debug.getinfo(fn, "u").isvararg, pre_text = pre_text }, Kernel)
end

--- True when the kernel's body goes through the preprocessor: the option
-- preprocess, by default true, except for cutelua's own kernels (cute.lib),
-- which are written in the explicit form (cute.if_, cute.range, i:lt(n)).
-- @return true or false
-- @usage print(k:preprocessed())
function Kernel:preprocessed()
  local p = self.opts.preprocess
  if p == nil then p = not err.is_internal(debug.getinfo(self.fn, "S").source) end
  return p
end

--- The function that is traced: the body rewritten by the preprocessor
-- (cute.pre: Lua's if, for, while and comparisons on run-time values become
-- regions of the IR), or the body itself with {preprocess = false}.
-- @return the function that is traced
-- @usage local f = k:body()
function Kernel:body()
  if not self:preprocessed() then return self.fn end
  return (require("cute.pre.source").rewrite(self.fn, self.pre_text))
end

--- The preprocessor's rewritten source of the kernel's chunk (the body is
-- the function on the kernel's lines); nil with {preprocess = false}.
-- @return the rewritten source (a string), or nil
-- @usage print(k:source())
function Kernel:source()
  if not self:preprocessed() then return nil end
  local _, code = require("cute.pre.source").rewrite(self.fn, self.pre_text)
  return code
end

function Kernel:__tostring() return "cute.kernel(" .. self.name .. ")" end

--- A view of the kernel with other options (its own specialisations).
-- @param opts the options to change (as for cute.kernel)
-- @return a kernel object
-- @usage local k80 = k:with({arch = "sm_80"})
function Kernel:with(opts)
  if type(opts) ~= "table" or getmetatable(opts) then
    err.raise("%s:with: expected a table of kernel options, e.g. k:with{arch = \"sm_90a\", opt = 2}, got %s; "
      .. "compile flags are options too: opt (0-3), ptxas_options = \"...\", max_registers, fast_math, lineinfo",
      self.name, type(opts) == "string" and string.format("the string %q", opts) or tostring(opts))
  end
  local k = M.kernel(self.name, self.fn, options_of(self, opts))
  k.pre_text = k.pre_text or self.pre_text
  return k
end

--- Counters of this process: traces (kernel specialisations traced, lazily
-- for :ir() included), pretrace_hits / pretrace_misses (specialisations of
-- kernels with a trace_key found / not found in the cache before tracing),
-- pretrace_fallbacks (found, but with unusable launch metadata: traced again).
function M.stats()
  local out = {}
  for k, v in pairs(stats) do out[k] = v end
  return out
end

--- Traces and compiles for arguments like these (device tensors, fake
-- tensors from cute.fake_tensor, scalars) without launching or needing a GPU.
-- Returns the compiled handle: :ir(), :ll(), :ptx(), :cubin(), :sass(),
-- :resources(), :report(), :cache_key().
-- @param ... the arguments, as for a launch
-- @return the compiled handle
-- @usage print(k:compile(cute.fake_tensor(cute.f32, 1024)):ptx())
function Kernel:compile(...)
  local spec = self:_specialise(select("#", ...), ...)
  return spec.compiled
end

--- The IR of the specialisation for these arguments, as text.
-- @param ... the arguments, as for a launch
-- @treturn string
-- @usage print(k:ir(cute.fake_tensor(cute.f32, 1024)))
function Kernel:ir(...)
  return self:compile(...):ir()
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

function Kernel:_specialise(n, ...) return self:_specialise_for(false, n, ...) end

-- A specialisation for the GPU, or (sim) for the CPU simulator: traced, not
-- compiled, without the checked launch's instrumentation (the simulator checks).
function Kernel:_specialise_for(sim, n, ...)
  local specs, key = signature(self, n, ...)
  local checked = self.opts.checked
  if checked == nil then checked = checked_default end
  if sim then checked, key = false, key .. "|sim" end
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
  if opts.trace_key and not checked and not sim and copts:get("cache") and not const_function(specs) then
    compiled, traced, pretraced, trace_ms = pretrace_compile(self, specs, key, opts, copts)
  end
  if not compiled then
    traced = trace(self, specs, opts, copts)
    trace_ms = tonumber(now() - t0) / 1e6
    if not sim then compiled = M.compile_module(traced.module, self.name, opts, copts) end
  end
  local total_ms = tonumber(now() - t0) / 1e6
  local storage, argv = make_packer(traced.params)
  spec = { key = key, specs = specs, params = traced.params, compiled = compiled, storage = storage, argv = argv,
    dyn_smem = traced.dyn_smem, static_smem = traced.static_smem, module = traced.module, loaded = {},
    trace_ms = trace_ms, compile_ms = total_ms - trace_ms, epoch = check_epoch,
    check_sites = traced.check_sites, pretraced = pretraced or false, warpgroup = traced.warpgroup, sim = sim }
  if opts.checked then spec.check = { ptr = ffi.new("uint64_t", 0) } end
  spec.guard, spec.pack = codegen(spec, { ... })
  self.specs[key] = spec
  self.nspecs = self.nspecs + 1
  return spec
end

-- A kernel with warpgroup instructions (wgmma) runs on whole warpgroups:
-- its block must be a multiple of 128 threads (before any launch).
local function check_warpgroup_block(k, cfg)
  local b = type(cfg) == "table" and cfg.block
  local n = type(b) == "number" and b or (type(b) == "table" and (b[1] or 1) * (b[2] or 1) * (b[3] or 1))
  if type(n) == "number" and n % 128 ~= 0 then
    err.raise("launch of %s: the kernel uses warpgroup instructions (wgmma), which run on whole warpgroups of 128 "
      .. "threads, but its block has %d threads: launch a multiple of 128", k.name, n)
  end
end

--- Launches: k:launch({grid=, block=, smem=, cluster=, stream=, pdl=}, args...).
-- The dynamic shared memory the kernel carved is added to cfg.smem. pdl = true:
-- a programmatic dependent launch (sm_90+, ignored before): the grid may start
-- before the stream's previous kernel ends, so the kernel must wait for it
-- (cute.arch.griddepcontrol_wait()) before it reads what that kernel wrote.
-- @param cfg the configuration: {grid =, block =, smem =, cluster =, stream =, pdl =}
-- @param ... the kernel's arguments
-- @usage k:launch({grid = {n / 256}, block = {256}}, x, y)
function Kernel:launch(cfg, ...)
  local n = select("#", ...)
  local spec = self.last
  local sim = self.opts.device == "sim" or (self.opts.device == nil and runtime.is_sim())
  if not (spec and spec.epoch == check_epoch and spec.sim == sim and spec.guard(n, ...)) then
    spec = self:_specialise_for(sim, n, ...)
    self.last = spec
  end
  if sim then -- the CPU simulator (docs/simulator.md)
    spec.pack(spec.storage, ...)
    return require("cute.sim.launch").launch(self, spec, cfg, ...)
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
  if spec.warpgroup then check_warpgroup_block(self, cfg) end
  local fn = loaded_fn(self, spec)
  runtime.internal.fill_launch(cfg, launch_cfg)
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
  if rc ~= 0 then runtime.internal.check(rc) end
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
-- @param max_threads the most threads a block, 1-1024
-- @param min_blocks optional: the fewest resident blocks an SM
-- @usage cute.launch_bounds(block_size)
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


-- cute.kernel(...) is M.kernel; the module stays reachable as cute.kernel.*
return setmetatable(M, { __call = function(_, ...) return M.kernel(...) end })
