--- cute.compiler: NVVM IR or PTX to a cubin, with options, a cache, dumps
-- and reports (seed 000's compiler interface; C side: src/nvvm).
--
--   local compiler = require "cute.compiler"
--   local opts = compiler.options { arch = "sm_90a", max_registers = 128 }
--   local ptx = compiler.nvvm_to_ptx(nvvm_text, opts)
--   local cubin, log = compiler.ptx_to_cubin(ptx, opts)
--   local m = compiler.compile(nvvm_or_ptx_text, opts, { name = "saxpy" })
--   print(m:report())          -- registers, shared memory, spills per kernel
--   m:ptx(), m:cubin(), m:sass(), m:resources().saxpy.registers, m:cache_key()
--
-- Options come from, in increasing priority: defaults (the GPU's arch, or
-- sm_90a with none), the CUTELUA_* environment variables, the table given.
-- Every compile goes through the content-addressed cache (memory, then
-- disk) unless `cache = false` or CUTELUA_CACHE=0. Errors raise at the
-- user's line with the structured diagnostic (the tool's log, the failing
-- line of NVVM IR or PTX marked, the Lua line behind it where known);
-- compiler.last_diagnostic() returns the same as a table.
local ffi = require "ffi"
local err = require "cute._err"
local C = require("cute._c").nvvm

local compiler = {}

-- Part, phase and origin names come from C (nvvm.cdef), never a second list.
local PART = setmetatable({}, {
  __index = function(t, name)
    local i = C.part_find(name)
    assert(i >= 0, "cute.compiler: C has no result part " .. tostring(name))
    rawset(t, name, i)
    return i
  end,
})
-- Info fields by name, numbered by C (nv_compile.h NV_INFOS).
local INFO = setmetatable({}, {
  __index = function(t, name)
    local i = C.info_find(name)
    assert(i >= 0, "cute.compiler: C has no result info field " .. tostring(name))
    rawset(t, name, i)
    return i
  end,
})

local len_out = ffi.new("size_t[1]")
local function part(r, name)
  local p = C.part(r, PART[name], len_out)
  return ffi.string(p, len_out[0])
end

local function new_result()
  local r = C.result_new()
  if r == nil then err.raise("cute.compiler: out of memory") end
  return ffi.gc(r, C.result_free)
end

-- ---- warnings -------------------------------------------------------------

local function default_warning(msg) io.stderr:write("cutelua: warning: ", msg, "\n") end
local warning_handler = default_warning

--- Sets the function that receives warnings (a kernel that spills, a cache
-- entry found corrupt, a dump that could not be written); nil restores the
-- default, which writes them to stderr. Returns the previous handler.
-- @param fn function(message), or nil for the default
-- @return the previous handler
-- @usage local old = cute.compiler.set_warning_handler(function(msg) log[#log + 1] = msg end)
function compiler.set_warning_handler(fn)
  if fn ~= nil and type(fn) ~= "function" then
    err.raise("compiler.set_warning_handler: expected a function or nil, got %s", type(fn))
  end
  local old = warning_handler
  warning_handler = fn or default_warning
  return old
end

--- Sends a warning (one line or several) to the warning handler.
-- @param msg the warning's text
-- @usage cute.compiler.warn("cache entry corrupt: recompiling")
function compiler.warn(msg)
  if type(msg) ~= "string" then err.raise("compiler.warn: expected a string, got %s", type(msg)) end
  for line in msg:gmatch("[^\n]+") do warning_handler(line) end
end

local function warn_lines(text)
  for line in text:gmatch("[^\n]+") do warning_handler(line) end
end

-- ---- diagnostics ---------------------------------------------------------------

local last_diag

local function diagnostic(r, input)
  local stage = C.info(r, INFO.input_stage)
  return {
    phase = ffi.string(C.phase_name(C.info(r, INFO.phase))),
    message = part(r, "message"),
    text = part(r, "diag"),
    log = part(r, "tool_log"),
    line = C.info(r, INFO.line) > 0 and C.info(r, INFO.line) or nil,
    col = C.info(r, INFO.col) > 0 and C.info(r, INFO.col) or nil,
    input = ffi.string(C.stage_name(stage)), -- the text `line` counts in: "ll" or "ptx" (C's stage names)
    excerpt = part(r, "excerpt"),
    source = part(r, "source") ~= "" and part(r, "source") or nil,
    input_text = input,
  }
end

--- The diagnostic of the last failed compile, as a table: phase ("libnvvm",
-- "ptxas", "nvJitLink", "options", ...), message, text (all of it), log (the
-- tool's), line and col (in the NVVM IR or PTX, `input` says which), excerpt,
-- source (the Lua file:line, when found). nil before any failure.
-- @return a table, or nil
-- @usage local d = cute.compiler.last_diagnostic(); if d then print(d.phase, d.message) end
function compiler.last_diagnostic() return last_diag end

-- Raises the result's diagnostic at the user's line. `locate(diag)` (from the
-- caller, e.g. the tracer) may name the Lua line when C found none.
local function fail(r, input, locate, context)
  local d = diagnostic(r, input)
  if not d.source and locate and d.line then
    local ok, where = pcall(locate, d)
    if ok and type(where) == "string" and where ~= "" then
      C.set_part(r, PART.source, where, #where) -- C reformats the message with it
      d = diagnostic(r, input)
    end
  end
  last_diag = d
  -- raised at the Lua line the failing code came from when it is known and
  -- is a file here (the traceback still shows the call that compiled), else
  -- at the caller's line
  local src_file = d.source and d.source:match("^(.+):%d+$")
  local readable = src_file and io.open(src_file, "r")
  if readable then readable:close() end
  if readable then
    error(string.format("%s: %s%s", d.source, context and context .. ": " or "", d.text), 0)
  end
  err.raise("%s%s", context and context .. ": " or "", d.text)
end

-- ---- options -------------------------------------------------------------------

local Options = {}
Options.__index = Options

-- The option names, from C (nv_compile.h NV_OPTION_NAMES): name -> in_key
-- (1: changes what is compiled, 2: by the contents of the files it names,
-- 0: does not).
local KNOWN, OPTION_LIST = {}, {}
for i = 0, 63 do
  local p = C.option_name(i)
  if p == nil then break end
  local name = ffi.string(p)
  KNOWN[name] = C.option_in_key(i)
  OPTION_LIST[#OPTION_LIST + 1] = name
end

--- The names of the compile options, in C's order; with t.in_key, only
-- those that change what is compiled by their value (a kernel's cache key
-- material lists them).
-- @param t optional: {in_key = true}
-- @return a list of names
-- @usage for _, n in ipairs(cute.compiler.option_names()) do print(n) end
function compiler.option_names(t)
  local out = {}
  for _, name in ipairs(OPTION_LIST) do
    if not (t and t.in_key) or KNOWN[name] == 1 then out[#out + 1] = name end
  end
  return out
end

local function known_list()
  local names = {}
  for k in pairs(KNOWN) do names[#names + 1] = k end
  table.sort(names)
  return table.concat(names, ", ")
end

local function set_string(field, cap, value, what)
  if #value >= cap then err.raise("compiler.options: %s is too long (%d bytes at most)", what, cap - 1) end
  ffi.copy(field, value)
end

local function check_flag(name, v)
  if type(v) ~= "boolean" and v ~= 0 and v ~= 1 then
    err.raise("compiler.options: %s must be a boolean, got %s", name, tostring(v))
  end
  return (v == true or v == 1) and 1 or 0
end

local function check_int(name, v, lo, hi, what)
  if type(v) ~= "number" or v ~= math.floor(v) or v < lo or v > hi then
    err.raise("compiler.options: %s must be %s, got %s", name, what, tostring(v))
  end
  return v
end

local function keep_mask(v)
  if v == true then v = "all" elseif v == false then v = "" end
  if type(v) == "table" then v = table.concat(v, ",") end
  if type(v) ~= "string" then
    err.raise("compiler.options: keep must be a list of stages or a string like \"ptx,cubin\", got %s", type(v))
  end
  local mask, r = ffi.new("uint32_t[1]"), new_result()
  if C.keep_parse(v, mask, r) ~= 0 then err.raise("compiler.options: keep: %s", part(r, "message")) end
  return mask[0]
end

local function add_link(o, keep, entry, i)
  if type(entry) == "string" then entry = { path = entry } end
  if type(entry) ~= "table" then
    err.raise("compiler.options: link[%d] must be a path or a table {path=} / {data=, kind=}, got %s", i, type(entry))
  end
  local li = o.link[i - 1]
  local kind = entry.kind or "auto"
  local k = C.link_kind_find(tostring(kind))
  if k < 0 then
    err.raise("compiler.options: link[%d]: unknown kind '%s' (auto, nvvm, ptx, cubin, fatbin, ltoir, object, library)",
      i, tostring(kind))
  end
  li.kind = k
  if entry.path ~= nil then
    if type(entry.path) ~= "string" then err.raise("compiler.options: link[%d].path must be a string", i) end
    li.path = entry.path
    keep[#keep + 1] = entry.path
  elseif type(entry.data) == "string" then
    li.data, li.size = entry.data, #entry.data
    keep[#keep + 1] = entry.data
  else
    err.raise("compiler.options: link[%d] needs a path or data (a string)", i)
  end
  if entry.name ~= nil then
    li.name = tostring(entry.name)
    keep[#keep + 1] = li.name
  end
end

-- Applies the fields of t over the NvOptions o; strings that o points to
-- (link paths and data) go into keep, which the Options value holds.
local function apply(o, keep, t)
  for k in pairs(t) do
    if not KNOWN[k] then
      local names = {}
      for n in pairs(KNOWN) do names[#names + 1] = n end
      table.sort(names)
      err.raise("compiler.options: unknown option '%s'%s (known: %s)", tostring(k),
        err.did_you_mean(k, names), known_list())
    end
  end
  if t.arch ~= nil then
    if C.options_set_arch(o, tostring(t.arch)) ~= 0 then
      local names = {}
      for _, a in ipairs(compiler.archs()) do names[#names + 1] = a.name end
      err.raise("compiler.options: unknown arch '%s' (known: %s)", tostring(t.arch), table.concat(names, ", "))
    end
  end
  if t.opt ~= nil then o.opt_level = check_int("opt", t.opt, 0, 3, "0, 1, 2 or 3") end
  if t.nvvm_opt ~= nil then
    o.nvvm_opt = t.nvvm_opt == false and -1
    or check_int("nvvm_opt", t.nvvm_opt, 0, 3, "0, 1, 2 or 3, or false (as opt)")
  end
  if t.fast_math ~= nil then o.fast_math = check_flag("fast_math", t.fast_math) end
  if t.ftz ~= nil then o.ftz = check_flag("ftz", t.ftz) end
  if t.lineinfo ~= nil then o.lineinfo = check_flag("lineinfo", t.lineinfo) end
  if t.max_registers ~= nil then
    o.max_registers = check_int("max_registers", t.max_registers, 0, 255, "0 (no limit) or a count up to 255")
  end
  if t.ptxas_options ~= nil then
    local p = t.ptxas_options
    if type(p) == "table" then p = table.concat(p, " ") end
    if type(p) ~= "string" then err.raise("compiler.options: ptxas_options must be a string or a list of strings") end
    set_string(o.ptxas_options, 512, p, "ptxas_options")
  end
  if t.link ~= nil then
    if type(t.link) ~= "table" then err.raise("compiler.options: link must be a list") end
    if #t.link > 16 then err.raise("compiler.options: at most 16 link inputs, got %d", #t.link) end
    for i, entry in ipairs(t.link) do add_link(o, keep, entry, i) end
    o.nlink = #t.link
  end
  if t.keep ~= nil then o.keep = keep_mask(t.keep) end
  if t.dump_dir ~= nil then set_string(o.dump_dir, 512, tostring(t.dump_dir), "dump_dir") end
  if t.cache ~= nil then o.cache = check_flag("cache", t.cache) end
  if t.cache_dir ~= nil then
    if t.cache_dir == false then
      set_string(o.cache_dir, 512, "", "cache_dir")
    elseif type(t.cache_dir) == "string" and t.cache_dir ~= "" then
      set_string(o.cache_dir, 512, t.cache_dir, "cache_dir")
    else
      err.raise("compiler.options: cache_dir must be a directory or false (memory only), got %s", tostring(t.cache_dir))
    end
  end
  local r = new_result()
  if C.options_check(o, r) ~= 0 then err.raise("compiler.options: %s", part(r, "message")) end
end

--- Compile options: defaults, then CUTELUA_* variables, then `t`.
-- t: arch ("sm_80" ... "sm_120a"), opt (0-3: libnvvm's -opt and ptxas's -O),
-- nvvm_opt (0-3: libnvvm's level alone, ptxas keeps opt's; false: as opt), fast_math, ftz, lineinfo
-- (booleans), max_registers (0 = none), ptxas_options (string or list),
-- link (list of paths or {path=|data=, kind=, name=}), keep ("ptx,cubin",
-- a list, or true for all), dump_dir, cache (boolean), cache_dir (false:
-- memory only). An Options value passes through unchanged.
-- @param t optional: a table of options, or an Options value
-- @return an Options value (o:get(name), o:with(t))
-- @usage local o = cute.compiler.options({arch = "sm_90a", lineinfo = true})
function compiler.options(t)
  if getmetatable(t) == Options then return t end
  if t ~= nil and type(t) ~= "table" then err.raise("compiler.options: expected a table, got %s", type(t)) end
  local o = ffi.new("NvOptions")
  -- the GPU is asked for its arch (cuInit) only when no arch is named
  local env_arch = os.getenv("CUTELUA_ARCH")
  if (t and t.arch ~= nil) or (env_arch and env_arch ~= "") then C.options_base(o) else C.options_default(o) end
  local r = new_result()
  if C.options_from_env(o, r) ~= 0 then err.raise("compiler options from the environment: %s", part(r, "message")) end
  local keep = {}
  apply(o, keep, t or {})
  return setmetatable({ c = o, _keep = keep }, Options)
end

--- Checks the options of table t (names, types, ranges) as compiler.options
-- does, without reading the environment or asking the GPU for its arch; the
-- kernels' options are checked so when a kernel is made.
-- @param t a table of options
-- @usage check_options({arch = "sm_80", opt = 3})
local function check_options(t)
  if getmetatable(t) == Options then return end
  if type(t) ~= "table" then err.raise("compiler.options: expected a table, got %s", type(t)) end
  local o = ffi.new("NvOptions")
  C.options_base(o)
  apply(o, {}, t)
end

--- The value of one option, as compiler.options takes it.
function Options:get(name)
  local o = self.c
  if name == "arch" then
    local a = compiler.archs()[o.arch + 1]
    return a and a.name
  elseif name == "opt" then return o.opt_level
  elseif name == "nvvm_opt" then return o.nvvm_opt < 0 and o.opt_level or o.nvvm_opt
  elseif name == "fast_math" then return o.fast_math == 1
  elseif name == "ftz" then return (o.ftz < 0 and o.fast_math or o.ftz) == 1
  elseif name == "lineinfo" then return o.lineinfo == 1
  elseif name == "max_registers" then return o.max_registers
  elseif name == "ptxas_options" then return ffi.string(o.ptxas_options)
  elseif name == "dump_dir" then return ffi.string(o.dump_dir)
  elseif name == "cache" then return o.cache == 1
  elseif name == "cache_dir" then
    local d = ffi.string(o.cache_dir)
    return d ~= "" and d or false
  elseif name == "keep" then
    local stages = {}
    for s = 0, 31 do
      if bit.band(o.keep, bit.lshift(1, s)) ~= 0 then stages[#stages + 1] = ffi.string(C.stage_name(s)) end
    end
    return table.concat(stages, ",")
  elseif name == "link" then return o.nlink
  end
  err.raise("Options:get: unknown option '%s' (known: %s)", tostring(name), known_list())
end

--- A copy with the fields of t changed (the environment is not read again).
function Options:with(t)
  if type(t) ~= "table" then err.raise("Options:with: expected a table, got %s", type(t)) end
  local o = ffi.new("NvOptions")
  ffi.copy(o, self.c, ffi.sizeof("NvOptions"))
  local keep = { unpack(self._keep) }
  apply(o, keep, t)
  return setmetatable({ c = o, _keep = keep }, Options)
end

function Options:__tostring()
  local parts = {}
  for _, k in ipairs { "arch", "opt", "fast_math", "ftz", "lineinfo", "max_registers", "ptxas_options", "keep",
    "cache", "cache_dir" } do
    parts[#parts + 1] = k .. "=" .. tostring(self:get(k))
    if k == "opt" and self.c.nvvm_opt >= 0 then parts[#parts + 1] = "nvvm_opt=" .. self.c.nvvm_opt end
  end
  if self.c.nlink > 0 then parts[#parts + 1] = "link=" .. self.c.nlink .. " inputs" end
  return "cute.compiler.options{" .. table.concat(parts, ", ") .. "}"
end

-- ---- targets and tools ------------------------------------------------------------

-- The target table and its features, read from C (src/target) once; a
-- row's feature set when it is first asked for.
local arch_cache, arch_by_name, feature_list
local function load_features()
  if feature_list then return feature_list end
  local T = require("cute._c").target
  feature_list = {}
  for f = 0, T.feature_count() - 1 do
    feature_list[f + 1] = { name = ffi.string(T.feature_name(f)), what = ffi.string(T.feature_what(f)), id = f }
  end
  return feature_list
end
local Row = { __index = function(row, k)
  if k ~= "features" then return nil end
  local T, set = require("cute._c").target, {}
  for _, f in ipairs(load_features()) do
    if T.has(row.id, f.id) == 1 then set[f.name] = true end
  end
  rawset(row, "features", set)
  return set
end }
local function load_targets()
  if arch_cache then return end
  local T = require("cute._c").target
  arch_cache, arch_by_name = {}, {}
  local info = ffi.new("ClTargetInfo")
  for i = 0, T.count() - 1 do
    T.info(i, info)
    local row = setmetatable({ name = ffi.string(info.name), cc = info.cc, arch_specific = info.arch_specific == 1,
      ptx_isa = ffi.string(info.ptx_isa), description = ffi.string(info.description), id = i }, Row)
    arch_cache[#arch_cache + 1] = row
    arch_by_name[row.name] = row
  end
end

--- The target table: {name, cc, arch_specific, ptx_isa, description,
-- features} per target, features a set of feature names ({WGMMA = true, ...}).
-- @return a list of target rows
-- @usage for _, t in ipairs(cute.compiler.archs()) do print(t.name, t.description) end
function compiler.archs()
  load_targets()
  return arch_cache
end

--- The row of a target by name ("sm_90a"), or nil and why.
-- @param name the target's name ("sm_90a")
-- @return the row, or nil and why
-- @usage print(cute.compiler.target("sm_90a").ptx_isa)
function compiler.target(name)
  load_targets()
  local row = arch_by_name[name]
  if row then return row end
  local names = {}
  for _, a in ipairs(arch_cache) do names[#names + 1] = a.name end
  return nil, string.format("unknown arch '%s' (known: %s)", tostring(name), table.concat(names, ", "))
end

--- The target features: a list of {name, what}, in table order.
-- @return a list of {name, what}
-- @usage for _, f in ipairs(cute.compiler.features()) do print(f.name) end
function compiler.features() return load_features() end

--- Whether target `name` has feature `feature` (names as in the tables);
-- raises on an unknown name.
-- @param name the target's name
-- @param feature the feature's name ("WGMMA", ...)
-- @treturn bool
-- @usage cute.compiler.target_has("sm_90a", "WGMMA")  -- true
function compiler.target_has(name, feature)
  local row, why = compiler.target(name)
  if not row then err.raise("compiler.target_has: %s", why) end
  local known = false
  for _, f in ipairs(load_features()) do known = known or f.name == feature end
  if not known then err.raise("compiler.target_has: unknown feature '%s'", tostring(feature)) end
  return row.features[feature] == true
end

--- The refusal of a feature on a target, as C words it: "needs WGMMA,
-- which sm_90 lacks (sm_90a has it)".
-- @param name the target's name
-- @param feature the feature's name
-- @treturn string
-- @usage print(cute.compiler.target_needs("sm_90", "WGMMA"))
function compiler.target_needs(name, feature)
  local row = assert(compiler.target(name))
  local T = require("cute._c").target
  local buf = ffi.new("char[512]")
  T.needs(row.id, T.feature_find(feature), buf, 512)
  return ffi.string(buf)
end

--- The current GPU's target, or nil and why not.
-- @return the target's name, or nil and why
-- @usage local arch = cute.compiler.detect_arch() or "sm_80"
function compiler.detect_arch()
  local why = ffi.new("char[256]")
  local i = C.arch_detect(why, 256)
  if i < 0 then return nil, ffi.string(why) end
  return compiler.archs()[i + 1].name
end

--- "libnvvm 2.0 (NVVM IR 2.0, debug 3.2); nvJitLink 13.0; driver 13.0" (loads the libraries).
-- @treturn string
-- @usage print(cute.compiler.versions())
function compiler.versions()
  local r = new_result()
  if C.versions(r) ~= 0 then fail(r) end
  return part(r, "versions")
end

local build_id_cache
--- cutelua's build id: 16 hex digits, a hash of the Lua modules and .cdef
-- files bundled into this build and of the C sources of the compiler path
-- (computed by embedgen when cutelua is built). In development mode
-- (CUTELUA_SOURCE_DIR / --source-dir) the bundled files' part is computed
-- once per process from the files under that directory, as they are then;
-- modules that the build does not bundle yet are not seen. Returns nil and
-- why when a file there cannot be read.
-- @return a string, or nil and why
-- @usage print(cute.compiler.build_id())
function compiler.build_id()
  if build_id_cache then return build_id_cache end
  local dir = debug.getregistry()["cutelua.source_dir"] -- what the module searcher reads (src/host/cl_host.c)
  local hex, msg = ffi.new("char[17]"), ffi.new("char[512]")
  if require("cute._c").host.build_id(type(dir) == "string" and dir or nil, hex, msg, 512) ~= 0 then
    return nil, ffi.string(msg)
  end
  build_id_cache = ffi.string(hex, 16)
  return build_id_cache
end

--- The SHA-256 of a string, as 64 hex digits.
-- @param s a string
-- @treturn string
-- @usage cute.compiler.sha256("abc"):sub(1, 8)  -- "ba7816bf"
function compiler.sha256(s)
  local hex = ffi.new("char[65]")
  C.sha256_hex(s, #s, hex)
  return ffi.string(hex, 64)
end

--- The SASS of a cubin (a string or a compiled module) through nvdisasm or cuobjdump.
-- @param cubin a cubin (string) or a compiled module
-- @treturn string
-- @usage print(cute.compiler.sass(k:compile(x):cubin()))
function compiler.sass(cubin)
  if type(cubin) == "table" and cubin.cubin then return cubin:sass() end
  if type(cubin) ~= "string" then
    err.raise("compiler.sass: expected a cubin (string) or a module, got %s", type(cubin))
  end
  local r = new_result()
  C.set_part(r, PART.cubin, cubin, #cubin)
  if C.sass(r) ~= 0 then fail(r) end
  return part(r, "sass")
end

-- ---- the two steps ------------------------------------------------------------------

local function check_text(fn, text)
  if type(text) ~= "string" then err.raise("compiler.%s: expected the text as a string, got %s", fn, type(text)) end
end

--- NVVM IR text -> PTX text.
-- @param text the NVVM IR
-- @param opts optional: compile options
-- @return the PTX text
-- @usage local ptx = cute.compiler.nvvm_to_ptx(ll, {arch = "sm_80"})
function compiler.nvvm_to_ptx(text, opts)
  check_text("nvvm_to_ptx", text)
  opts = compiler.options(opts)
  local r = new_result()
  if C.nvvm_to_ptx(r, text, #text, opts.c) ~= 0 then fail(r, text, nil, "compiler.nvvm_to_ptx") end
  return part(r, "ptx")
end

--- PTX text -> cubin (a string of bytes) and nvJitLink's info log.
-- @param ptx the PTX text
-- @param opts optional: compile options
-- @return the cubin and the info log
-- @usage local cubin, log = cute.compiler.ptx_to_cubin(ptx, {arch = "sm_80"})
function compiler.ptx_to_cubin(ptx, opts)
  check_text("ptx_to_cubin", ptx)
  opts = compiler.options(opts)
  local r = new_result()
  if C.ptx_to_cubin(r, ptx, #ptx, opts.c) ~= 0 then fail(r, ptx, nil, "compiler.ptx_to_cubin") end
  return part(r, "cubin"), part(r, "log")
end

--- The cache key (64 hex digits) of a text under options, with an optional salt.
-- @param text the source text
-- @param opts optional: compile options
-- @param salt optional: a string mixed into the key
-- @treturn string
-- @usage local key = cute.compiler.cache_key(ptx, {arch = "sm_80"})
function compiler.cache_key(text, opts, salt)
  check_text("cache_key", text)
  if salt ~= nil and type(salt) ~= "string" then
    err.raise("compiler.cache_key: the salt must be a string, got %s", type(salt))
  end
  opts = compiler.options(opts)
  local r = new_result()
  if C.cache_key(r, text, #text, salt, opts.c) ~= 0 then fail(r, nil, nil, "compiler.cache_key") end
  return ffi.string(C.key(r))
end

--- Counters of the cache in this process.
-- @return a table of counters
-- @usage print(cute.compiler.cache_stats().misses)
function compiler.cache_stats()
  local s = ffi.new("NvCacheStats")
  C.cache_stats(s)
  local out = {}
  for _, k in ipairs { "memory_hits", "disk_hits", "misses", "stores", "disk_writes", "corrupt", "write_errors",
    "memory_entries", "memory_bytes" } do
    out[k] = tonumber(s[k])
  end
  return out
end

--- Empties the cache: t.memory (default true) and t.disk (default false;
-- the directory of t.options or the default options).
-- @param t optional: {memory =, disk =, options =}
-- @usage cute.compiler.cache_clear({disk = true})
function compiler.cache_clear(t)
  t = t or {}
  local opts = compiler.options(t.options)
  local r = new_result()
  local memory = t.memory == nil or t.memory
  if C.cache_clear(r, opts.c, memory and 1 or 0, t.disk and 1 or 0) ~= 0 then fail(r) end
end

--- Caps the memory cache at `bytes` (default 256 MiB); the least recently used go first.
-- @param bytes the limit in bytes
-- @usage cute.compiler.cache_memory_limit(64 * 1024 * 1024)
function compiler.cache_memory_limit(bytes)
  if type(bytes) ~= "number" or bytes < 0 then err.raise("compiler.cache_memory_limit: expected a byte count") end
  C.cache_set_memory_limit(bytes)
end

-- ---- compiled modules ---------------------------------------------------------------------

local Module = {}
Module.__index = Module
compiler.Module = Module

local function kind_of(text, info)
  if info.kind == "nvvm" or info.kind == "ll" then return 1 end
  if info.kind == "ptx" then return 2 end
  if info.kind ~= nil then
    err.raise("compiler.compile: kind must be \"nvvm\" or \"ptx\", got %s", tostring(info.kind))
  end
  local k = C.input_kind(text, #text)
  if k == 0 then
    err.raise("compiler.compile: cannot tell whether the text is NVVM IR or PTX (give kind = \"nvvm\" or \"ptx\")")
  end
  return k
end

local function first_kernel(r)
  if C.cubin_kernels(r) ~= 0 then return nil end
  return part(r, "kernels"):match("^([^\n]+)")
end

--- Compiles NVVM IR or PTX to a cubin, through the cache.
-- source: the text, or a function returning it (called only on a cache miss,
-- so a caller can skip emitting NVVM IR when the cache has the kernel).
-- info (all optional): name (for dumps and messages; default the first
-- kernel), kind ("nvvm"/"ptx"; default guessed), key_text (what the cache
-- key hashes; default the source text: the tracer gives the printed IR),
-- salt, ir (the printed IR, kept and dumped as the "ir" stage; or a function
-- returning it, called only when the IR is asked for: m:ir(), or an "ir"
-- dump), meta (bytes stored with the cache entry; or a function returning
-- them, called on a miss after the source function), refresh (true: do not
-- look in the cache, compile and store over what is there), locate
-- (function(diag) -> "file:line" for failures C could not map to Lua).
-- @param source the NVVM IR or PTX text, or a function producing it (on a cache miss)
-- @param opts optional: compile options
-- @param info optional: the fields above
-- @return a compiled module
-- @usage local m = cute.compiler.compile(ptx_text, {arch = "sm_80"})
function compiler.compile(source, opts, info)
  info = info or {}
  if type(info) ~= "table" then err.raise("compiler.compile: info must be a table, got %s", type(info)) end
  if type(source) ~= "string" and type(source) ~= "function" then
    err.raise("compiler.compile: expected NVVM IR or PTX text (or a function returning it), got %s", type(source))
  end
  for _, field in ipairs { "name", "kind", "key_text", "salt" } do
    local v = info[field]
    if v ~= nil and type(v) ~= "string" then
      err.raise("compiler.compile: info.%s must be a string, got %s", field,
        type(v) == "table" and "a table" or (type(v) .. " " .. tostring(v)))
    end
  end
  if info.locate ~= nil and type(info.locate) ~= "function" then
    err.raise("compiler.compile: info.locate must be a function(diag) -> \"file:line\", got %s", type(info.locate))
  end
  opts = compiler.options(opts)
  local r = new_result()
  local text = type(source) == "string" and source or nil
  local key_text = info.key_text or text
  if key_text == nil then
    err.raise("compiler.compile: with a function as the source, give info.key_text (what the cache key hashes)")
  end
  if C.cache_key(r, key_text, #key_text, info.salt, opts.c) ~= 0 then fail(r, nil, nil, "compiler.compile") end
  local ir_fn
  if type(info.ir) == "function" then
    ir_fn = info.ir
  elseif info.ir ~= nil then
    if type(info.ir) ~= "string" then
      err.raise("compiler.compile: info.ir must be the IR text or a function returning it, got %s", type(info.ir))
    end
    C.set_part(r, PART.ir, info.ir, #info.ir)
  end
  -- with keep "ir" (stage id == part id), a lazy IR is produced for the dump
  local dump_ir = ir_fn and bit.band(opts.c.keep, bit.lshift(1, PART.ir)) ~= 0
  local hit = not info.refresh and C.cache_get(r, opts.c) == 1
  if not hit then
    if not text then
      text = source()
      if type(text) ~= "string" then
        err.raise("compiler.compile: the source function returned %s, not a string", type(text))
      end
    end
    local meta = info.meta
    if type(meta) == "function" then meta = meta() end -- after source(): it may describe what source() made
    if meta ~= nil then
      if type(meta) ~= "string" then err.raise("compiler.compile: info.meta must be a string, got %s", type(meta)) end
      C.set_part(r, PART.meta, meta, #meta)
    end
    if C.compile(r, text, #text, kind_of(text, info), opts.c) ~= 0 then fail(r, nil, info.locate, info.name) end
    C.cache_put(r, opts.c)
  elseif text and bit.band(opts.c.keep, bit.lshift(1, PART.ll)) ~= 0 and kind_of(text, info) == 1 then
    C.set_part(r, PART.ll, text, #text) -- so that a hit dumps its NVVM IR too (stage id == part id)
  end
  if dump_ir then
    local s = ir_fn()
    C.set_part(r, PART.ir, s, #s)
  end
  local m = setmetatable({ _r = r, _source = source, _ir_fn = ir_fn, options = opts, key = ffi.string(C.key(r)),
    arch = opts:get("arch"), origin = ffi.string(C.origin_name(C.info(r, INFO.origin))) }, Module)
  m.name = info.name or first_kernel(r) or "module"
  -- Warnings: spills (not again for a kernel served from this process's memory), notes.
  if C.report_text(r) > 0 and m.origin ~= "memory" then warn_lines(part(r, "warnings")) end
  if opts.c.keep ~= 0 and C.dump(r, opts.c, m.name) ~= 0 then
    warning_handler("dumps of " .. m.name .. " failed: " .. part(r, "message"))
  end
  warn_lines(part(r, "note"))
  return m
end

-- A part's bytes, or nil when it is empty (no string made for nothing).
local function part_or_nil(r, name)
  local p = C.part(r, PART[name], len_out)
  if len_out[0] == 0 then return nil end
  return ffi.string(p, len_out[0])
end

-- Warnings and notes of a result, after a compile or a lookup hit.
local function tell(r, origin)
  if C.info(r, INFO.warnings) > 0 and origin ~= "memory" then warn_lines(part(r, "warnings")) end
  local note = part_or_nil(r, "note")
  if note then warn_lines(note) end
end

local job = ffi.new("NvModuleJob")

--- Compiles a traced IR module (src/ir) to a cubin in one C call
-- (nv_compile_module: verify, print, key, lookup, emit, compile, store,
-- report, dumps); the texts stay in C until asked for (Module:ir(), :ll(),
-- :ptx() ...). m: the module (cdata IrModule*, kept alive by the returned
-- Module), whose target must be the options' arch. info (all optional):
-- name, salt, meta (bytes stored with the cache entry).
--
-- A kernel keyed before tracing gives no module but info.key_text (the key
-- material) and info.trace (a function that traces and returns the module):
-- the cache is asked first, and trace is called on a miss, or on a hit when
-- the IR or NVVM IR is asked for (a dump of them included); info.meta may then
-- be a function (called after trace, on a miss); info.refresh compiles and
-- stores over the entry without looking.
-- @param m the IR module (or nil with info.trace)
-- @param opts optional: compile options
-- @param info optional: the fields above
-- @return a compiled module
-- @usage local m = cute.compiler.compile_module(irmod, {arch = "sm_80"}, {name = "k"})
function compiler.compile_module(m, opts, info)
  info = info or {}
  opts = compiler.options(opts)
  local r = new_result()
  local name = info.name or "module"
  local trace = info.trace
  local hit = false
  ffi.fill(job, ffi.sizeof(job))
  job.name, job.salt = name, info.salt
  if m == nil then
    if type(trace) ~= "function" or type(info.key_text) ~= "string" then
      err.raise("compiler.compile_module: without a module, give info.key_text and info.trace")
    end
    local key = info.key_text
    if info.refresh then
      job.key_text, job.key_len, job.refresh = key, #key, 1
    else
      local rc = C.module_lookup(r, key, #key, info.salt, opts.c)
      if rc < 0 then fail(r, nil, nil, name) end
      hit = rc == 1
      job.looked_up = 1
    end
  end
  local meta -- (held while C reads it)
  if hit then
    local keep = opts.c.keep
    if bit.band(keep, bit.lshift(1, PART.ir)) ~= 0 then C.module_print(r, trace()) end
    if bit.band(keep, bit.lshift(1, PART.ll)) ~= 0 and C.module_emit(r, trace(), opts.c, name) ~= 0 then
      fail(r, nil, nil, nil)
    end
    C.module_finish(r, opts.c, name)
  else
    if m == nil then m = trace() end
    meta = info.meta
    if type(meta) == "function" then meta = meta() end -- after trace(): it may describe what trace made
    if meta ~= nil then
      if type(meta) ~= "string" then
        err.raise("compiler.compile_module: info.meta must be a string, got %s", type(meta))
      end
      job.meta, job.meta_len = meta, #meta
    end
    if C.compile_module(r, m, opts.c, job) ~= 0 then
      local phase = ffi.string(C.phase_name(C.info(r, INFO.phase)))
      -- the module's own failures name the kernel already; a tool's gets it in front
      local own = phase == "verify" or phase == "emit" or phase == "options"
      -- a tool's error in a line of the PTX or NVVM IR: without line info
      -- there is no Lua line to name, so compile again with it (only now,
      -- on the error path) and take the Lua line that compile names
      local function locate()
        if own or opts:get("lineinfo") then return nil end
        local r2, job2 = new_result(), ffi.new("NvModuleJob")
        job2.name, job2.salt = name, info.salt
        if C.compile_module(r2, m, opts:with({ lineinfo = true, cache = false }).c, job2) ~= 0 then
          return diagnostic(r2, nil).source
        end
      end
      fail(r, nil, locate, not own and name or nil)
    end
  end
  local mod = setmetatable({ _r = r, _irmod = m, _trace = trace, options = opts, key = ffi.string(C.key(r)),
    arch = opts:get("arch"), origin = ffi.string(C.origin_name(C.info(r, INFO.origin))), name = name }, Module)
  tell(r, mod.origin)
  return mod
end

--- The compiled module as bytes of one stage ("ptx", "cubin", "log", ...).
-- @param name the stage: "ptx", "cubin", "log", "meta", ...
-- @treturn string
-- @usage local cubin = compiled:stage("cubin")
function Module:stage(name)
  local cached = rawget(self, "_stage_" .. name)
  if cached then return cached end
  local s = part(self._r, name)
  rawset(self, "_stage_" .. name, s)
  return s
end

--- The PTX text.
-- @treturn string
-- @usage print(k:compile(x):ptx())
function Module:ptx() return self:stage("ptx") end
--- The cubin (bytes).
-- @treturn string
-- @usage io.open("k.cubin", "wb"):write(compiled:cubin())
function Module:cubin() return self:stage("cubin") end
--- nvJitLink's info log (ptxas's -v output).
-- @treturn string
-- @usage print(compiled:log())
function Module:log() return self:stage("log") end
--- The bytes given as info.meta when the module was compiled ("" if none),
-- also after a cache hit in another process.
-- @treturn string
-- @usage local m = compiled:meta()
function Module:meta() return self:stage("meta") end

-- The IR module behind a Module made by compile_module (traced now if it
-- was found in the cache before tracing), or nil.
local function ir_module(self)
  if self._irmod == nil and self._trace then self._irmod = self._trace() end
  return self._irmod
end

--- The printed cutelua IR, when the caller gave it (as text, or as a
-- function that produces it now, e.g. by tracing the kernel again).
-- @treturn string
-- @usage print(k:compile(x):ir())
function Module:ir()
  local s = part(self._r, "ir")
  if s ~= "" then return s end
  local m = ir_module(self)
  if m ~= nil then
    if C.module_print(self._r, m) ~= 0 then err.raise("module %s: out of memory printing the IR", self.name) end
    return part(self._r, "ir")
  end
  if self._ir_fn then
    s = self._ir_fn()
    if type(s) ~= "string" then
      err.raise("module %s: the IR function returned %s, not a string", self.name, type(s))
    end
    C.set_part(self._r, PART.ir, s, #s)
    return s
  end
  err.raise("module %s: no IR was given to compiler.compile (info.ir)", self.name)
end

--- The NVVM IR compiled (for PTX input: an error). After a cache hit it is
-- produced again by the source function, when there is one.
-- @treturn string
-- @usage print(compiled:ll())
function Module:ll()
  local s = part(self._r, "ll")
  if s ~= "" then return s end
  local m = ir_module(self)
  if m ~= nil then
    if C.module_emit(self._r, m, self.options.c, self.name) ~= 0 then fail(self._r) end
    return part(self._r, "ll")
  end
  if type(self._source) == "function" then
    s = self._source()
    C.set_part(self._r, PART.ll, s, #s)
    return s
  end
  if self._source and C.input_kind(self._source, #self._source) == 1 then return self._source end
  err.raise("module %s: no NVVM IR (it was compiled from PTX)", self.name)
end

--- SASS through nvdisasm or cuobjdump (a clear error where neither exists).
-- @treturn string
-- @usage print(compiled:sass())
function Module:sass()
  local s = part(self._r, "sass")
  if s ~= "" then return s end
  if C.sass(self._r) ~= 0 then fail(self._r) end
  return part(self._r, "sass")
end

--- The kernels in the cubin, in symbol table order.
-- @return a list of names
-- @usage for _, name in ipairs(compiled:kernels()) do print(name) end
function Module:kernels()
  if C.cubin_kernels(self._r) ~= 0 then fail(self._r) end
  local out = {}
  for k in part(self._r, "kernels"):gmatch("[^\n]+") do out[#out + 1] = k end
  return out
end

local function or_nil(v) v = tonumber(v); return v >= 0 and v or nil end

--- The resource report: a list of functions in ptxas's order, each also
-- reachable by name: {name, kind ("kernel"/"function"), arch, registers,
-- barriers, smem, cmem, stack, spill_stores, spill_loads, compile_ms}.
-- Fields ptxas did not report are nil.
-- @return a list of tables, also keyed by name
-- @usage print(compiled:resources()[1].registers)
function Module:resources()
  local n = C.report(self._r, nil, 0)
  local k = ffi.new("NvKernelReport[?]", math.max(n, 1))
  C.report(self._r, k, n)
  local out = {}
  for i = 0, n - 1 do
    local e = k[i]
    local item = { name = ffi.string(e.name), kind = e.entry == 1 and "kernel" or "function",
      arch = e.entry == 1 and ffi.string(e.arch) or nil, registers = or_nil(e.registers),
      barriers = or_nil(e.barriers), smem = or_nil(e.smem), cmem = or_nil(e.cmem0), stack = or_nil(e.stack_frame),
      spill_stores = or_nil(e.spill_stores), spill_loads = or_nil(e.spill_loads), compile_ms = or_nil(e.compile_ms) }
    out[#out + 1] = item
    out[item.name] = item
  end
  return out
end

--- The resource report as a printable table, with the spill warnings.
-- @treturn string
-- @usage print(k:compile(x):report())
function Module:report()
  C.report_text(self._r)
  local w = part(self._r, "warnings")
  return part(self._r, "report") .. (w ~= "" and ("warning: " .. w:gsub("\n(.)", "\nwarning: %1")) or "")
end

--- The spill warnings, one string per kernel that spills.
-- @return a list of strings
-- @usage assert(#compiled:warnings() == 0)
function Module:warnings()
  C.report_text(self._r)
  local out = {}
  for line in part(self._r, "warnings"):gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

--- The compile cache's key of the module.
-- @treturn string
-- @usage print(compiled:cache_key())
function Module:cache_key() return self.key end

--- Writes the stages in `keep` (default: the options' keep, else all) to
-- `dir` (default: the options' dump_dir); returns the paths written.
-- @param keep optional: the stages to write (a list such as {"ptx", "cubin"}, or true for all)
-- @param dir optional: the directory
-- @return a list of paths
-- @usage compiled:dump({"ptx"}, "/tmp/k")
function Module:dump(keep, dir)
  local t = { keep = keep or (self.options.c.keep ~= 0 and self.options:get("keep") or true) }
  if dir then t.dump_dir = dir end
  local opts = self.options:with(t)
  C.set_part(self._r, PART.dumped, "", 0)
  C.set_part(self._r, PART.note, "", 0)
  if C.dump(self._r, opts.c, self.name) ~= 0 then fail(self._r) end
  warn_lines(part(self._r, "note"))
  local paths = {}
  for p in part(self._r, "dumped"):gmatch("[^\n]+") do paths[#paths + 1] = p end
  return paths
end

function Module:__tostring()
  return string.format("cute.compiler.Module<%s %s: %d-byte cubin, %s>", self.name, self.arch, #self:cubin(),
    self.origin)
end

-- For cutelua's other modules ----------------------------------------------------

--- What cute.kernel uses; not for users.
compiler.internal = {
  check_options = check_options, -- check_options(t): raises on a bad option table, as compiler.options would
}

return compiler
