--- cute.autotune: picks the fastest of several configurations of a kernel,
-- timing each on the device, and remembers the winner on disk.
--
--   local best, report = cute.autotune(function(cfg)
--     return my_kernel(cfg.bn, cfg.stages), { grid = ..., block = ... }
--   end, { { bn = 128, stages = 4 }, { bn = 256, stages = 3 } }, { a, b, c },
--   { name = "my_gemm", shape_class = "4096x4096x4096" })
--
-- builder(config) returns a cute.kernel and its launch configuration
-- ({grid=, block=, ...}), or a launch function called with the arguments, or
-- nil and a reason to refuse the config. args: the launch arguments (a list),
-- or a function(config) making them per config. A builder that raises, a
-- kernel that does not compile for the arguments and a launch that fails are
-- skipped and reported; only when every config is skipped does autotune
-- raise (listing why each was).
--
-- The winner is kept in a cache keyed by (device name, arch, shape class,
-- dtypes, cutelua's build id, the builder's name, the list of configs): the
-- same key never tunes again unless opts.force. With no cached result and
-- opts.tune == false, cute.autotune.defaults[name](device_name, problem)
-- gives the config without timing anything (else the first config).
--
-- opts: name (the builder's name; default its source file and line),
-- shape_class (string; default from the arguments' shapes, each extent
-- rounded up to a power of two), dtypes (string; default the arguments'
-- dtypes), problem (passed to a default; default the shape class), tune
-- (default true), force (re-tune even when cached), timer (replaces
-- cute.autotune.timer), bench (options for cute.bench), cache_dir (the
-- directory, or false: memory only), device ({name=, arch=}; default the
-- current GPU's).
--
-- Returns the winning config and a report: { source = "cache" | "tuned" |
-- "default" | "first", key = ..., config = winner, time_ms = its time (when
-- timed), entries = { { config =, time_ms = } or { config =, skipped = why } } }.
local err = require "cute._err"
local compiler = require "cute.compiler"
local runtime = require "cute.runtime"
local bench = require "cute.bench"
local L = require "cute.layout"

local M = {}

--- name -> function(device_name, problem) -> config: the built-in choice when
-- nothing is cached and tuning is off.
M.defaults = {}

--- The timer: ms for one launch (median over repetitions). CPU tests replace it.
-- @param launch a function launching the kernel once
-- @param bench_opts optional: options for cute.bench
-- @return milliseconds
-- @usage cute.autotune.timer = function(launch) return my_time(launch) end
function M.timer(launch, bench_opts)
  local o = { flush_l2 = true, min_time_ms = 50, warmup_ms = 10 }
  for k, v in pairs(bench_opts or {}) do o[k] = v end
  return bench.bench(launch, o).median_ms
end

--- cutelua's build id (a key part); replaceable for tests.
-- @return a string
-- @usage print(cute.autotune.build_id())
function M.build_id() return compiler.build_id() or "unknown-build" end

-- ---- keys --------------------------------------------------------------------

local function scalar_string(v)
  local t = type(v)
  if t == "number" then return "n", string.format("%.17g", v) end
  if t == "string" then return "s", v end
  if t == "boolean" then return "b", tostring(v) end
  return nil
end

-- A config as a canonical string (sorted keys, scalars only), or nil and why.
--- A config as a canonical string (sorted keys, scalars only), or nil and why.
-- @param cfg a config table
-- @return a string, or nil and the reason
-- @usage local text = cute.autotune.encode_config({bn = 128, stages = 4})
local function encode_config(cfg)
  if type(cfg) ~= "table" then return nil, "a config must be a table, got " .. type(cfg) end
  local keys = {}
  for k in pairs(cfg) do
    if type(k) ~= "string" then return nil, "config keys must be strings, got " .. type(k) end
    if not k:match("^[%w_]+$") then return nil, string.format("config key %q is not a plain name", k) end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local lines = {}
  for _, k in ipairs(keys) do
    local tag, s = scalar_string(cfg[k])
    if not tag then
      return nil, string.format("config field %s is a %s (numbers, strings, booleans only)", k, type(cfg[k]))
    end
    if s:find("[\n\r]") then return nil, string.format("config field %s contains a newline", k) end
    lines[#lines + 1] = string.format("config %s %s %s", k, tag, s)
  end
  return table.concat(lines, "\n")
end
M.encode_config = encode_config

local function pow2_up(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

local function is_tensor(x) return type(x) == "table" and x.layout ~= nil and x.dtype ~= nil end

local function flat_shape(t)
  local out = {}
  local function walk(s)
    if type(s) == "table" then
      for _, e in ipairs(s) do walk(e) end
    else
      out[#out + 1] = s
    end
  end
  walk(L.shape(t.layout))
  return out
end

--- The default shape class of a list of arguments: each tensor's extents and
-- each integer, rounded up to a power of two.
-- @param args a list of launch arguments
-- @treturn string
-- @usage cute.autotune.shape_class({cute.fake_tensor(cute.f16, {4096, 4096}), 3000})  -- "4096x4096,4096"
function M.shape_class(args)
  local parts = {}
  for _, a in ipairs(args) do
    if is_tensor(a) then
      local s = {}
      for i, e in ipairs(flat_shape(a)) do s[i] = tostring(type(e) == "number" and pow2_up(e) or e) end
      parts[#parts + 1] = table.concat(s, "x")
    elseif type(a) == "number" and a == math.floor(a) and a > 0 then
      parts[#parts + 1] = tostring(pow2_up(a))
    end
  end
  return table.concat(parts, ",")
end

--- The default dtypes of a list of arguments: each tensor's dtype name.
-- @param args a list of launch arguments
-- @treturn string
-- @usage cute.autotune.dtypes({cute.fake_tensor(cute.f16, 8), cute.fake_tensor(cute.bf16, 8)})  -- "f16,bf16"
function M.dtypes(args)
  local parts = {}
  for _, a in ipairs(args) do
    if is_tensor(a) then parts[#parts + 1] = tostring(a.dtype.name or a.dtype) end
  end
  return table.concat(parts, ",")
end

local function one_line(s, what)
  s = tostring(s)
  if s:find("[\n\r]") then err.raise("autotune: %s must be one line, got %q", what, s) end
  return s
end

-- ---- the cache -----------------------------------------------------------------

local memory = {} -- dir or "" -> key -> { config =, time_ms = }

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

--- The directory of the tuning cache: a sibling of the compile cache's
-- (its directory with "-autotune" appended), or false when the compile cache
-- is memory only.
-- @param opts optional: autotune's options (opts.cache_dir overrides)
-- @return a directory path, or false
-- @usage print(cute.autotune.cache_dir())
function M.cache_dir(opts)
  if opts and opts.cache_dir ~= nil then return opts.cache_dir end
  local ok, o = pcall(compiler.options, { arch = "sm_80" }) -- no GPU needed for the directory
  if not ok then return false end
  local d = o:get("cache_dir")
  if not d then return false end
  return (d:gsub("/+$", "")) .. "-autotune"
end

local function entry_path(dir, key) return dir .. "/" .. compiler.sha256(key):sub(1, 32) .. ".tune" end

local HEADER = "cutelua-autotune 1"

local function warn(fmt, ...) compiler.warn(string.format(fmt, ...)) end

-- Parses an entry file's text; nil and why when it is not one for key.
local function parse_entry(text, key)
  local lines = {}
  for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  if lines[1] ~= HEADER then return nil, "bad header" end
  if lines[2] ~= "key " .. key then return nil, "written for another key" end
  local t = lines[3] and lines[3]:match("^time_ms (%S+)$")
  local time_ms = t and tonumber(t)
  if not time_ms then return nil, "no time_ms line" end
  local cfg, n = {}, 0
  for i = 4, #lines - 1 do
    local k, tag, v = lines[i]:match("^config ([%w_]+) ([nsb]) (.*)$")
    if not k then return nil, "bad line " .. i end
    if tag == "n" then
      v = tonumber(v)
      if not v then return nil, "bad number on line " .. i end
    elseif tag == "b" then
      if v ~= "true" and v ~= "false" then return nil, "bad boolean on line " .. i end
      v = v == "true"
    end
    cfg[k] = v
    n = n + 1
  end
  if lines[#lines] ~= "end" then return nil, "truncated (no end line)" end
  return { config = cfg, time_ms = time_ms }
end

local function cache_get(dir, key)
  local mem = memory[dir or ""]
  if mem and mem[key] then return mem[key] end
  if not dir then return nil end
  local path = entry_path(dir, key)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a") or ""
  f:close()
  local e, why = parse_entry(text, key)
  if not e then
    warn("autotune: ignoring the corrupt cache entry %s (%s)", path, why)
    return nil
  end
  memory[dir] = memory[dir] or {}
  memory[dir][key] = e
  return e
end

local tmp_seq = 0

local function cache_put(dir, key, cfg_text, time_ms, cfg)
  memory[dir or ""] = memory[dir or ""] or {}
  memory[dir or ""][key] = { config = cfg, time_ms = time_ms }
  if not dir then return end
  os.execute("mkdir -p " .. shell_quote(dir))
  local path = entry_path(dir, key)
  tmp_seq = tmp_seq + 1
  local tmp = string.format("%s.tmp.%d.%d.%d", path, os.time(), tmp_seq, math.random(1, 1e9))
  local f, e = io.open(tmp, "wb")
  if not f then
    warn("autotune: cannot write the cache entry %s: %s", tmp, tostring(e))
    return
  end
  local body = HEADER .. "\nkey " .. key .. "\n" .. string.format("time_ms %.17g\n", time_ms)
  if cfg_text ~= "" then body = body .. cfg_text .. "\n" end
  local ok = f:write(body .. "end\n")
  f:close()
  local renamed, rerr = false, nil
  if ok then renamed, rerr = os.rename(tmp, path) end
  if not renamed then
    os.remove(tmp)
    warn("autotune: cannot write the cache entry %s: %s", path, tostring(rerr or "write failed"))
  end
end

--- Forgets the cached results held in memory (the disk entries stay).
-- @usage cute.autotune.clear_memory()
function M.clear_memory() memory = {} end

-- ---- tuning ----------------------------------------------------------------------

local function is_kernel(x) return type(x) == "table" and getmetatable(x) == require("cute.kernel").Kernel end

local function builder_name(builder)
  local info = debug.getinfo(builder, "S")
  return string.format("%s:%d", (info.short_src or "?"), info.linedefined or 0)
end

local function args_for(args, cfg)
  if type(args) == "function" then
    local a = args(cfg)
    if type(a) ~= "table" then err.raise("autotune: the args function returned a %s, expected a list", type(a)) end
    return a
  end
  return args
end

-- The launch function of one config, or nil and why it is skipped.
local function prepare(builder, cfg, args)
  local ok, k, lc = pcall(builder, cfg)
  if not ok then return nil, "builder raised: " .. tostring(k) end
  if k == nil or k == false then return nil, "refused by the builder" .. (lc and (": " .. tostring(lc)) or "") end
  local a = args_for(args, cfg)
  local n = a.n or #a
  if type(k) == "function" then
    return function() return k(unpack(a, 1, n)) end
  end
  if is_kernel(k) then
    if type(lc) ~= "table" then return nil, "the builder returned a kernel without its launch configuration" end
    local cok, cerr = pcall(k.compile, k, unpack(a, 1, n))
    if not cok then return nil, "compile failed: " .. tostring(cerr) end
    return function() return k:launch(lc, unpack(a, 1, n)) end
  end
  return nil,
    string.format("the builder returned a %s (expected a kernel and its launch config, or a function)", type(k))
end

--- Whether two configs are the same (their canonical strings are equal).
-- @param a a config table
-- @param b a config table
-- @treturn bool
-- @usage assert(cute.autotune.same_config(best, {bn = 128, stages = 4}))
local function same_config(a, b) return encode_config(a) == encode_config(b) end

-- autotune's options (sorted, for messages)
local OPTIONS = { "bench", "cache_dir", "device", "dtypes", "force", "name", "problem", "shape_class", "timer", "tune" }
local OPTION_SET = {}
for _, k in ipairs(OPTIONS) do OPTION_SET[k] = true end

--- cute.autotune(builder, configs, args[, opts]): the fastest config, tuned or from the cache (see above).
-- @param builder function(config) -> kernel and launch config, or a launch function, or nil and why
-- @param configs a non-empty list of config tables
-- @param args the launch arguments (a list), or a function(config) making them
-- @param opts optional: name, shape_class, dtypes, problem, tune, force, timer, bench, cache_dir, device
-- @return the winning config and the report
-- @usage local best, report = cute.autotune(build, {{bn = 128}, {bn = 256}}, {a, b, c}, {name = "my_gemm"})
function M.autotune(builder, configs, args, opts)
  if type(builder) ~= "function" then err.raise("autotune: expected a builder function, got %s", type(builder)) end
  if type(configs) ~= "table" or #configs == 0 then err.raise("autotune: expected a non-empty list of configs") end
  if type(args) ~= "table" and type(args) ~= "function" then
    err.raise("autotune: args must be a list or a function(config), got %s", type(args))
  end
  opts = opts or {}
  if type(opts) ~= "table" then err.raise("autotune: opts must be a table, got %s", type(opts)) end
  for k in pairs(opts) do
    if not OPTION_SET[k] then
      err.raise("autotune: unknown option '%s'%s (the options are: %s)", tostring(k),
        err.did_you_mean(tostring(k), OPTIONS), table.concat(OPTIONS, ", "))
    end
  end
  local texts = {}
  for i, c in ipairs(configs) do
    local t, why = encode_config(c)
    if not t then err.raise("autotune: config %d: %s", i, why) end
    texts[i] = t
  end
  local name = one_line(opts.name or builder_name(builder), "name")
  local a0 = type(args) == "table" and args or {}
  local shape = one_line(opts.shape_class or M.shape_class(a0), "shape_class")
  local dts = one_line(opts.dtypes or M.dtypes(a0), "dtypes")
  local dev = opts.device
  if not dev then
    local info = runtime.device_info()
    dev = { name = info.name, arch = info.arch }
  end
  local key = table.concat({
    "device=" .. one_line(dev.name, "device name"), "arch=" .. one_line(dev.arch, "arch"), "shape=" .. shape,
    "dtypes=" .. dts, "build=" .. one_line(M.build_id(), "build id"), "name=" .. name,
    "configs=" .. compiler.sha256(table.concat(texts, "\n--\n")):sub(1, 16) }, "|")
  local dir = M.cache_dir(opts)
  local report = { key = key, entries = {} }

  if not opts.force then
    local hit = cache_get(dir, key)
    if hit then
      report.source, report.config, report.time_ms = "cache", hit.config, hit.time_ms
      return hit.config, report
    end
  end
  if opts.tune == false and not opts.force then
    local d = M.defaults[name]
    if d then
      local cfg = d(dev.name, opts.problem or shape)
      if type(cfg) ~= "table" then
        err.raise("autotune: cute.autotune.defaults[%q] returned a %s, expected a config table", name, type(cfg))
      end
      report.source, report.config = "default", cfg
      return cfg, report
    end
    report.source, report.config = "first", configs[1]
    return configs[1], report
  end

  local timer = opts.timer or M.timer
  local best, best_i
  for i, cfg in ipairs(configs) do
    local entry = { config = cfg }
    report.entries[i] = entry
    local launch, why = prepare(builder, cfg, args)
    if launch then
      local ok, t = pcall(timer, launch, opts.bench)
      if not ok then
        entry.skipped = "launch failed: " .. tostring(t)
      elseif type(t) ~= "number" or t ~= t or t <= 0 then
        entry.skipped = "the timer returned " .. tostring(t)
      else
        entry.time_ms = t
        if not best or t < best then best, best_i = t, i end
      end
    else
      entry.skipped = why
    end
  end
  if not best_i then
    local lines = {}
    for i, e in ipairs(report.entries) do lines[i] = string.format("  config %d {%s}: %s", i,
      texts[i]:gsub("config ", ""):gsub("\n", ", "), e.skipped) end
    err.raise("autotune %s: every config was skipped:\n%s", name, table.concat(lines, "\n"))
  end
  cache_put(dir, key, texts[best_i], best, configs[best_i])
  report.source, report.config, report.time_ms = "tuned", configs[best_i], best
  return configs[best_i], report
end

M.same_config = same_config

-- cute.autotune(builder, configs, args, opts) is M.autotune.
return setmetatable(M, { __call = function(_, ...) return M.autotune(...) end })
