--- cutelua.repl: the REPL's logic, kept apart from the terminal so it can be tested.
--
-- The C side (cli/repl.c) reads lines, runs the compiled chunks under the
-- interrupt handler and prints what this module formats. Everything here is a
-- pure function of its arguments.
local M = {}

local KEYWORDS = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
  "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
}

--- Compiles one REPL entry.
-- Tries `return <src>` first, so that an expression typed alone yields its
-- value(s); `=expr` is accepted too, as in the Lua 5.1 REPL.
-- @return the chunk's function; or nil, "incomplete" when more input is needed
--   (the chunk ends in the middle of a statement); or nil and the syntax error.
-- The expression is passed through a local identity function rather than
-- returned directly, so that it is not a tail call: an error raised by it
-- (`error "x"` typed alone) keeps the REPL line in its message.
local EXPR_PREFIX = "local function __values(...) return ... end return __values("

function M.compile(src, chunkname)
  chunkname = chunkname or "=stdin"
  -- ?x: help on x
  local topic = src:match("^%s*%?%s*(.-)%s*$")
  if topic then
    if topic == "" then return loadstring("help()", chunkname) end
    local fn, err = loadstring(string.format("help(%s, %q)", topic, topic), chunkname)
    if fn then return fn end
    return nil, err
  end
  local expr = src:match("^%s*=(.*)$")
  if expr then src = expr end
  local fn, experr = loadstring(EXPR_PREFIX .. src .. "\n)", chunkname)
  if fn then return fn end
  if expr then
    -- judge completeness without the wrapper's closing parenthesis
    local _, err = loadstring("return " .. src, chunkname)
    if err and err:sub(-7) == "'<eof>'" then return nil, "incomplete" end
    return nil, err or experr
  end
  local err
  fn, err = loadstring(src, chunkname)
  if fn then return fn end
  if err:sub(-7) == "'<eof>'" then return nil, "incomplete" end
  return nil, err
end

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not M._keyword_set[s]
end

M._keyword_set = {}
for _, k in ipairs(KEYWORDS) do M._keyword_set[k] = true end

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local esc = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ['"'] = '\\"', ["\\"] = "\\\\" }
    return esc[c] or string.format("\\%03d", c:byte())
  end) .. '"'
end

local function format_number(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  return tostring(v)
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__tostring ~= nil
end

-- Key order for printing: integers first (numerically), then strings, then the rest.
local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    local rank = { number = 1, string = 2 }
    return (rank[ta] or 3) < (rank[tb] or 3) or ((rank[ta] or 3) == (rank[tb] or 3) and ta < tb)
  end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local pretty_value
local names_of -- (below)

local function pretty_table(t, opts, depth, seen, indent)
  if seen[t] then return "<cycle>" end
  if depth >= opts.max_depth then return "{...}" end
  seen[t] = true
  local items, n = {}, #t
  for i = 1, n do items[#items + 1] = pretty_value(t[i], opts, depth + 1, seen, indent .. "  ") end
  local keys = {}
  for k in pairs(t) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_less)
  for _, k in ipairs(keys) do
    if #items >= opts.max_items then
      items[#items + 1] = "..."
      break
    end
    local ks = is_identifier(k) and k or ("[" .. pretty_value(k, opts, depth + 1, seen, indent) .. "]")
    items[#items + 1] = ks .. " = " .. pretty_value(t[k], opts, depth + 1, seen, indent .. "  ")
  end
  seen[t] = nil
  if #items == 0 then return "{}" end
  local one = "{" .. table.concat(items, ", ") .. "}"
  if #one + #indent <= opts.width and not one:find("\n") then return one end
  return "{\n" .. indent .. "  " .. table.concat(items, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
end

-- The name under which a loaded module is in package.loaded, or a table field
-- of `cute` (its submodules, which a test runner's insulation may have dropped
-- from package.loaded while `cute` keeps them); nil if neither.
local function module_name(v)
  for name, m in pairs(package.loaded) do
    if rawequal(m, v) and type(name) == "string" and (name == "cute" or name:sub(1, 5) == "cute.") then return name end
  end
  local cute = package.loaded.cute
  if type(cute) == "table" then
    for k, m in pairs(cute) do
      if rawequal(m, v) and type(k) == "string" and k:sub(1, 1) ~= "_" then return "cute." .. k end
    end
  end
end

function pretty_value(v, opts, depth, seen, indent)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "number" then return format_number(v) end
  if t == "table" then
    if has_tostring(v) then return tostring(v) end
    -- a module prints as a summary, not as its hundreds of functions
    local mod = module_name(v)
    if mod then
      local names = 0
      for _, k in ipairs(names_of(v)) do
        if k:sub(1, 1) ~= "_" then names = names + 1 end
      end
      return string.format("<module %s: %d names; help(%s) lists them>", mod, names, mod)
    end
    return pretty_table(v, opts, depth, seen, indent)
  end
  return tostring(v)
end

--- Formats a value for display: tables as Lua constructors (nested, sorted,
-- cycles marked), objects with __tostring (layouts, tensors) through it.
-- Strings are quoted unless opts.raw_strings.
function M.pretty(v, opts)
  opts = opts or {}
  local o = {
    max_depth = opts.max_depth or 4,
    max_items = opts.max_items or 64,
    width = opts.width or 78,
  }
  if opts.raw_strings and type(v) == "string" then return v end
  return pretty_value(v, o, 0, {}, "")
end

--- The text the REPL prints for the values a chunk returned; nil when there are none.
function M.format_results(n, ...)
  if n == 0 then return nil end
  rawset(_G, "_", (...)) -- the last result, as `_`
  local parts = {}
  for i = 1, n do parts[i] = M.pretty((select(i, ...)), { raw_strings = true }) end
  return table.concat(parts, "\t")
end

-- Names a value offers for completion: its own keys, those of its metatable's
-- __index tables, and whatever a metatable's __complete function lists (the
-- lazily loaded `cute` namespace uses that to name modules not loaded yet).
function names_of(v, methods_only)
  local out, seen = {}, {}
  local function add(k, val)
    if is_identifier(k) and not seen[k] and (not methods_only or type(val) == "function") then
      seen[k] = true
      out[#out + 1] = k
    end
  end
  local cur, guard = v, 0
  while cur ~= nil and guard < 8 do
    guard = guard + 1
    if type(cur) == "table" then
      for k, val in pairs(cur) do add(k, val) end
    end
    local mt = (type(cur) == "table" or type(cur) == "userdata") and getmetatable(cur) or nil
    if type(mt) ~= "table" then break end
    if type(mt.__complete) == "function" then
      local ok, list = pcall(mt.__complete, cur)
      if ok and type(list) == "table" then
        for _, k in ipairs(list) do add(k, true) end
      end
    end
    cur = type(mt.__index) == "table" and mt.__index or nil
  end
  return out
end

-- Resolves "a.b.c" from env without calling anything but __index.
local function resolve(path, env)
  local v = env
  for part in path:gmatch("[^%.:]+") do
    if not is_identifier(part) then return nil end
    local t = type(v)
    if t ~= "table" and t ~= "userdata" then return nil end
    local ok, nv = pcall(function() return v[part] end)
    if not ok then return nil end
    v = nv
  end
  return v
end

--- Completion candidates for the word before the cursor ("cute.lay" gives
-- {"cute.layout"}; "x:fo" gives the methods of x starting with "fo").
-- @return a sorted list of full replacements for `word`.
function M.complete(word, env)
  env = env or _G
  local prefix, sep, partial = word:match("^(.*)([%.:])([%w_]*)$")
  local candidates = {}
  if prefix then
    if prefix == "" or prefix:find("[^%w_%.:]") then return candidates end
    local base = resolve(prefix, env)
    if base == nil then return candidates end
    for _, k in ipairs(names_of(base, sep == ":")) do
      -- private names (_x, a module's internal table) only when asked for
      local private = k:sub(1, 1) == "_" or k == "internal"
      if k:sub(1, #partial) == partial and (not private or partial == k:sub(1, #partial) and #partial > 0
        and (partial:sub(1, 1) == "_" or partial:sub(1, 3) == "int")) then
        candidates[#candidates + 1] = prefix .. sep .. k
      end
    end
  else
    if word:find("[^%w_]") then return candidates end
    for _, k in ipairs(names_of(env)) do
      if k:sub(1, #word) == word then candidates[#candidates + 1] = k end
    end
    for _, k in ipairs(KEYWORDS) do
      if k:sub(1, #word) == word then candidates[#candidates + 1] = k end
    end
  end
  table.sort(candidates)
  local uniq = {}
  for i, c in ipairs(candidates) do
    if c ~= candidates[i - 1] then uniq[#uniq + 1] = c end
  end
  return uniq
end

-- Help ----------------------------------------------------------------------------

-- The lines of a chunk's source: a file bundled into the binary ("@lua/cute/x.lua"),
-- else the file itself (development mode, the user's own files); nil if unreadable.
local source_cache = {}
local function source_lines(source)
  if source_cache[source] ~= nil then return source_cache[source] or nil end
  local text
  if source:sub(1, 1) == "@" then
    local path = source:sub(2)
    local ok, c = pcall(require, "cute._c")
    if ok then
      local ffi = require "ffi"
      local len = ffi.new("size_t[1]")
      local p = c.host.bundled_file(path, len)
      if p ~= nil then text = ffi.string(p, len[0]) end
    end
    if not text then
      local f = io.open(path, "r")
      if f then
        text = f:read("*a")
        f:close()
      end
    end
  end
  local lines = false
  if text then
    lines = {}
    for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  end
  source_cache[source] = lines
  return lines or nil
end

-- The comment block right above line n (its "--" markers removed).
local function comment_above(lines, n)
  local out = {}
  local i = n - 1
  while i >= 1 and lines[i]:match("^%s*%-%-") do
    table.insert(out, 1, (lines[i]:gsub("^%s*%-%-%-?%s?", "")))
    i = i - 1
  end
  return out
end

-- The names a table offers, sorted, private (_) ones left out.
local function public_names(v)
  local names = {}
  for _, k in ipairs(names_of(v)) do
    if k:sub(1, 1) ~= "_" and k ~= "internal" then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

local function wrap(words, width, indent)
  local lines, cur = {}, indent
  for _, w in ipairs(words) do
    if #cur + #w + 2 > width and cur ~= indent then
      lines[#lines + 1] = cur
      cur = indent
    end
    cur = cur == indent and (cur .. w) or (cur .. "  " .. w)
  end
  if cur ~= indent then lines[#lines + 1] = cur end
  return table.concat(lines, "\n")
end

-- The doc comment of cute.<short> found by name in the modules that define
-- it (for functions made by wrappers, whose own definition says nothing):
-- the definition line and the comment, or nil.
local function doc_by_name(short)
  local ok, cute = pcall(require, "cute")
  local mt = ok and getmetatable(cute)
  local ex = mt and mt.exports
  if not ex then return nil end
  local mods = {}
  if ex.where[short] then mods[1] = ex.where[short] end
  for _, entry in ipairs(ex.modules) do
    for _, n in ipairs(entry[2]) do
      if n == short and entry[1] ~= mods[1] then mods[#mods + 1] = entry[1] end
    end
  end
  local esc = short:gsub("%p", "%%%0")
  for _, mod in ipairs(mods) do
    local file = "lua/cute/" .. mod:gsub("%.", "/") .. ".lua"
    local lines = source_lines("@" .. file)
    for i, l in ipairs(lines or {}) do
      if l:match("^function [%w_.:]*[.:]" .. esc .. "%(") or l:match("^local function " .. esc .. "%(")
        or l:match("^function " .. esc .. "%(") then
        local doc = comment_above(lines, i)
        if #doc > 0 then return l, doc, file .. ":" .. i end
      end
    end
  end
  -- a function made in a loop, declared by an LDoc block `-- @function name`
  -- (or `-- @function T:name`) next to the loop: the block is its doc
  for _, mod in ipairs(mods) do
    local file = "lua/cute/" .. mod:gsub("%.", "/") .. ".lua"
    local lines = source_lines("@" .. file) or {}
    for i, l in ipairs(lines) do
      local declared = l:match("^%s*%-%-%s*@function%s+([%w_.:]+)%s*$")
      if declared and declared:match("([%w_]+)$") == short then
        local last = i
        while lines[last + 1] and lines[last + 1]:match("^%s*%-%-") and not lines[last + 1]:match("^%s*%-%-%-") do
          last = last + 1
        end
        local doc = comment_above(lines, last + 1)
        while #doc > 0 and not (lines[last + 1 - #doc] or ""):match("^%s*%-%-%-") do table.remove(doc, 1) end
        if #doc > 0 then return "cute." .. short .. " (" .. mod .. ")", doc, file .. ":" .. i end
      end
    end
  end
end

-- A doc comment's lines for a person: the text as it is, then its LDoc tags
-- as "Parameters:" (one line each, the names aligned), "Returns:" and
-- "Usage:" (a line that follows a tag continues it; @function is left out).
local function render_doc(doc)
  local text, params, returns, usages = {}, {}, {}, {}
  local last
  for _, l in ipairs(doc) do
    local tag, rest = l:match("^%s*@(%w+)%s*(.*)$")
    if tag == "param" or tag == "tparam" then
      local ty, name, what
      if tag == "tparam" then ty, name, what = rest:match("^(%S+)%s+(%S+)%s*(.*)$") else
        name, what = rest:match("^(%S+)%s*(.*)$")
      end
      last = { name = name or rest, what = ((ty and ("(" .. ty .. ") ") or "") .. (what or "")) }
      params[#params + 1] = last
    elseif tag == "return" or tag == "treturn" then
      last = { what = rest }
      returns[#returns + 1] = last
    elseif tag == "usage" then
      last = { what = rest }
      usages[#usages + 1] = last
    elseif tag then
      last = nil -- (@function and other tags: not shown)
    elseif last then
      last.what = last.what .. " " .. l:gsub("^%s+", "")
    else
      text[#text + 1] = l
    end
  end
  local out = text
  if #params > 0 then
    local w = 0
    for _, p in ipairs(params) do w = math.max(w, #p.name) end
    out[#out + 1] = "Parameters:"
    for _, p in ipairs(params) do out[#out + 1] = string.format("  %-" .. w .. "s  %s", p.name, p.what) end
  end
  for _, r in ipairs(returns) do out[#out + 1] = "Returns: " .. r.what end
  for _, u in ipairs(usages) do out[#out + 1] = "Usage: " .. u.what end
  return out
end

--- The help text for a value (what `help(x)` and `?x` print): a function's
-- definition line and the doc comment above it with where it is defined; a
-- module's or object's description and its public names; else its type.
function M.doc(v, name)
  if name == nil and type(v) == "function" then
    -- help(f) without its text: f's name in the cute namespace, if it is there
    local cute = package.loaded.cute
    if type(cute) == "table" then
      for k, f in pairs(cute) do
        if rawequal(f, v) and type(k) == "string" then name = "cute." .. k end
      end
    end
  end
  name = name or "this value"
  local t = type(v)
  if t == "function" then
    local info = debug.getinfo(v, "S")
    if info.what == "C" then return name .. ": a built-in (C) function; no documentation" end
    local lines = source_lines(info.source)
    local where = info.short_src .. ":" .. info.linedefined
    if not lines or not lines[info.linedefined] then return name .. ": a Lua function, defined at " .. where end
    local out = { (lines[info.linedefined]:gsub("^%s+", "")) }
    local doc = comment_above(lines, info.linedefined)
    local short = name:match("^cute%.([%w_]+)$")
    if #doc == 0 and short then
      local def, d, at = doc_by_name(short)
      if def then out[1], doc, where = def, d, at end
    end
    if #doc > 0 then
      out[#out + 1] = ""
      for _, l in ipairs(render_doc(doc)) do out[#out + 1] = "  " .. l end
    else
      out[#out + 1] = "  (no doc comment)"
    end
    out[#out + 1] = ""
    out[#out + 1] = "  defined at " .. where
    return table.concat(out, "\n")
  end
  if t == "table" or t == "userdata" or t == "cdata" then
    local out = {}
    local ok, s = pcall(tostring, v)
    local mt = (t == "table" or t == "userdata") and getmetatable(v)
    if type(mt) == "table" and mt.__name then
      out[#out + 1] = string.format("%s: a %s, %s", name, mt.__name, ok and s or "?")
    elseif ok and has_tostring(v) then
      out[#out + 1] = string.format("%s: %s", name, s)
    else
      out[#out + 1] = string.format("%s: a %s", name, t)
    end
    -- a module: the comment that opens its file
    if t == "table" then
      for _, f in pairs(v) do
        if type(f) == "function" then
          local info = debug.getinfo(f, "S")
          local lines = info.what ~= "C" and source_lines(info.source)
          if lines and lines[1] and lines[1]:match("^%-%-") then
            local head = comment_above(lines, (function()
              local i = 1
              while lines[i] and lines[i]:match("^%-%-") do i = i + 1 end
              return i
            end)())
            local mine = name:match("([%w_]+)$")
            if head[1] and mine and head[1]:find(mine, 1, true) then
              for _, l in ipairs(head) do out[#out + 1] = "  " .. l end
            end
          end
          break
        end
      end
    end
    local names = (t == "table" or t == "userdata") and public_names(v) or {}
    if #names > 0 then
      out[#out + 1] = ""
      out[#out + 1] = string.format("  %d names (help(%s.name) for one):", #names, name)
      out[#out + 1] = wrap(names, 88, "    ")
    end
    return table.concat(out, "\n")
  end
  return string.format("%s: a %s (%s)", name, t, M.pretty(v))
end

--- help(x): prints M.doc(x); help() says how to get help.
function M.help(...)
  if select("#", ...) == 0 then
    print("help(x) or ?x shows the documentation of x: help(cute.make_layout), ?cute.composition,\n"
      .. "help(cute) lists the cute namespace, help(cute.nvgpu.warpgroup) a module. Tab completes names;\n"
      .. "_ is the last result. Documentation: docs/*.md in the source tree.")
    return
  end
  local v, name = ...
  print(M.doc(v, name))
end

--- The banner shown when the REPL starts on a terminal.
function M.banner(version, luajit)
  return string.format("cutelua %s (%s) -- `cute` is loaded; Tab completes, Ctrl-C interrupts, Ctrl-D exits.",
    version, luajit) .. " help() for help."
end

return M
