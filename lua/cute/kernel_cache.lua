--- cute.kernel's cache keyed before tracing (a kernel's trace_key;
-- docs/compiler.md, "Cache keyed before tracing"): the key material of a
-- specialisation (the build id, the kernel's name and source, its trace_key,
-- signature and options), the launch metadata stored with the entry and read
-- back (the codec), and the compile that asks the cache first
-- (pretrace_compile).
local err = require "cute._err"
local args = require "cute.kernel_args"
local ktrace = require "cute.kernel_trace"

local K = {}
local serialize, trace, stats = args.serialize, ktrace.trace, ktrace.stats

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
function K.const_function(specs)
  for _, sp in ipairs(specs) do
    if sp.kind == "const" and has_function(sp.value) then return true end
  end
  return false
end

local pretrace_warned = {} -- reasons already warned about (once a process each)

-- The key material, or nil and why there is none.
function K.pretrace_material(k, key, opts, copts, compiler)
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
  if traced.warpgroup then lines[#lines + 1] = "warpgroup 1" end
  for _, p in ipairs(traced.params) do
    lines[#lines + 1] = string.format("param %s %d %s %s %s", p.ctype, p.arg, p.what, p.dtype and p.dtype.name or "-",
      p.leaf and tostring(p.leaf) or "-")
  end
  return table.concat(lines, "\n") .. "\n"
end

local WHAT_OF_KIND = { tensor = { ptr = true, shape = true, stride = true }, scalar = { value = true },
  tma = { tma = true }, tma_atom = { tma_atom = true }, tuple = { tuple = true } }

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
    elseif field == "warpgroup" then
      out.warpgroup = true
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
      elseif what == "tuple" then
        p.leaf = tonumber(leaf)
        local want
        for _, d in ipairs(s.dyn) do if d.leaf == p.leaf then want = d.dtype end end
        if not want or dname ~= want.name or ctype ~= want.storage then
          return nil, string.format("argument %d: a tuple leaf %s %s, which its profile %s does not have", arg, ctype,
            dname, s.profile)
        end
        p.dtype = want
      elseif what == "ptr" then
        if ctype ~= "uint64_t" then return nil, "a pointer parameter of C type " .. ctype end
      elseif what == "tma" or what == "tma_atom" then
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
    if s.kind ~= "const" and not (s.kind == "tuple" and #s.dyn == 0) then
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
function K.pretrace_compile(k, specs, key, opts, copts)
  local compiler = require "cute.compiler"
  local material, why = K.pretrace_material(k, key, opts, copts, compiler)
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
    return compiled, { params = meta.params, dyn_smem = meta.dyn_smem, static_smem = meta.static_smem,
      warpgroup = meta.warpgroup }, true, 0
  end
  stats.pretrace_hits = stats.pretrace_hits - 1
  stats.pretrace_fallbacks = stats.pretrace_fallbacks + 1
  compiler.warn(string.format("kernel %s: the cache entry %s (trace_key %q) has unusable launch metadata (%s): "
    .. "tracing and compiling it again", k.name, compiled:cache_key(), opts.trace_key, why))
  info.refresh = true
  compiled = compiler.compile_module(nil, copts, info)
  return compiled, traced, false, trace_ms
end

K.PRETRACE_SALT = PRETRACE_SALT
return K
