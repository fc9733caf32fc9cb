--- cute._err: errors that point at the user's line.
--
-- cutelua's modules call each other, so a fixed `error(msg, 2)` often names a
-- line inside cutelua. `raise` walks the stack to the first frame that is not
-- a cutelua module (nor a C function) and reports that line: the user's call.
--
--   local err = require "cute._err"
--   err.raise("composition: shape %s does not divide %s", a, b)
local M = {}

-- Chunks of cutelua's own modules: bundled ("@lua/cute/x.lua") or read from a
-- checkout in development mode ("@/path/lua/cute/x.lua"), and the REPL logic.
local internal_cache = setmetatable({}, { __mode = "k" })
local function is_internal(source)
  local r = internal_cache[source]
  if r == nil then
    r = source == "=[C]" or source:find("^@lua/cute/") ~= nil or source:find("/lua/cute/[^/]+%.lua$") ~= nil
      or source:find("/lua/cute/.+/[^/]+%.lua$") ~= nil or source:find("^@cli/repl%.lua$") ~= nil
    internal_cache[source] = r
  end
  return r
end
M.is_internal = is_internal

--- The stack level (as `error` counts it, seen from the caller of this
-- function's caller) of the first frame outside cutelua; 1 if there is none.
function M.user_level(start)
  local level = (start or 1) + 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 1 end
    if not is_internal(info.source) then return level - 1 end
    level = level + 1
  end
end

--- "file:line" of the user's frame, or nil.
function M.where()
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if not is_internal(info.source) then
      return info.short_src .. ":" .. (info.currentline or 0), info.short_src, info.currentline
    end
    level = level + 1
  end
end

--- Raises string.format(fmt, ...) at the user's line. Arguments that are not
-- strings or numbers are passed through tostring (layouts print in CuTe notation).
function M.raise(fmt, ...)
  local args = { ... }
  for i = 1, select("#", ...) do
    local a = args[i]
    if type(a) ~= "string" and type(a) ~= "number" then args[i] = tostring(a) end
  end
  local msg = select("#", ...) > 0 and string.format(fmt, unpack(args, 1, select("#", ...))) or fmt
  error(msg, M.user_level(1))
end

--- The lowest host address cutelua dereferences: 65536, Linux's default
-- mmap_min_addr, the first page a process may map. Below it lie NULL plus an
-- offset, small integers and handles passed by mistake, which would crash
-- whatever reads or writes them; above it an address is taken on trust, as a C
-- API takes a pointer.
M.MIN_HOST_ADDRESS = 65536

--- Raises (at the user's line, naming `what`) unless p is a host pointer worth
-- using: an FFI pointer or light userdata, not NULL and not below
-- M.MIN_HOST_ADDRESS. Returns p.
function M.check_host_ptr(p, what)
  local t = type(p)
  if t ~= "cdata" and t ~= "userdata" then M.raise("%s: expected an FFI pointer to host memory, got %s", what, t) end
  local a = require("ffi").cast("uintptr_t", p)
  if a == 0 then M.raise("%s: the host pointer is NULL", what) end
  if a < M.MIN_HOST_ADDRESS then
    M.raise("%s: the host pointer %d is below %d: no memory there", what, tonumber(a), M.MIN_HOST_ADDRESS)
  end
  return p
end

--- " (did you mean 'x'?)" for the name in `names` (a list) closest to the
-- misspelt `name`, or "" when none is close (edit distance at most 2, or a
-- third of the name's length): for messages about unknown names.
function M.did_you_mean(name, names)
  name = tostring(name)
  local best, best_d = nil, math.max(2, math.floor(#name / 3))
  for _, cand in ipairs(names) do
    -- Levenshtein distance, two rows
    local prev, cur = {}, {}
    for j = 0, #cand do prev[j] = j end
    for i = 1, #name do
      cur[0] = i
      local a = name:byte(i)
      for j = 1, #cand do
        local cost = a == cand:byte(j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev, cur = cur, prev
    end
    local d = prev[#cand]
    if d <= best_d and (not best or d < best_d) then best, best_d = cand, d end
  end
  return best and string.format(" (did you mean '%s'?)", best) or ""
end

-- Rendering an error for a person ---------------------------------------------------

-- The text of line n of a file (nil when unreadable), cached per file.
local file_lines = setmetatable({}, { __mode = "v" })
local function source_line(file, n)
  local lines = file_lines[file]
  if lines == nil then
    local f = io.open(file, "r")
    if not f then return nil end
    lines = {}
    local size = 0
    for l in f:lines() do
      lines[#lines + 1] = l
      size = size + #l
      if size > 4 * 1024 * 1024 then break end -- not a source file
    end
    f:close()
    file_lines[file] = lines
  end
  return lines[n]
end

-- The span [a, b] (1-based columns) of the call of `name` in `line`: from a
-- "cute." or "obj:" in front of it to the parenthesis closing its arguments
-- (or the end of the line); nil when the name is not there as a word.
local function call_span(line, name)
  local init = 1
  while true do
    local a, b = line:find(name, init, true)
    if not a then return nil end
    local before, after = line:sub(a - 1, a - 1), line:sub(b + 1, b + 1)
    if not before:match("[%w_]") and not after:match("[%w_]") then
      -- the qualified name: cute.x, cute.lib.x, t:x, ...
      while a > 1 and line:sub(1, a - 1):match("[%w_]+[.:]$") do
        a = line:sub(1, a - 1):find("[%w_]+[.:]$")
      end
      local c = b + 1
      while line:sub(c, c) == " " do c = c + 1 end
      if line:sub(c, c) == "(" then
        local depth = 0
        for i = c, #line do
          local ch = line:sub(i, i)
          if ch == "(" then depth = depth + 1 elseif ch == ")" then
            depth = depth - 1
            if depth == 0 then return a, i end
          end
        end
        return a, #line
      end
      return a, b
    end
    init = b + 1
  end
end

-- The names a message is about, most telling first: the operation it starts
-- with ("composition: ...", "cute.testing.assert_close: ..."), then quoted
-- names ('thread_id').
local function subjects(msg)
  local out = {}
  local op = msg:match("^([%w_.:]+):%s")
  if op and #op:match("([%w_]+)$") > 1 then -- (not a kernel named k)
    out[#out + 1] = op:match("([%w_]+)$")
  end
  for q in msg:gmatch("'([%w_]+)'") do out[#out + 1] = q end
  return out
end

-- Raw Lua errors whose cause is known, explained: a misspelt cute.<name>, a
-- Lua for loop over a traced bound.
local function explain(msg, line)
  local part = msg:match("'for' (%w+) must be a number")
  if part then
    return string.format("a Lua `for` needs Lua numbers; when its %s is a traced value (known only on the GPU), "
      .. "loop on the GPU: `for i in cute.range(lo, hi) do ... end`", part == "initial" and "start" or part)
  end
  local name = msg:match("attempt to call field '([%w_]+)' %(a nil value%)")
    or msg:match("attempt to index field '([%w_]+)' %(a nil value%)")
  if name and line and line:find("cute%." .. name) then
    local ok, cute = pcall(require, "cute")
    local mt = ok and getmetatable(cute)
    if mt and mt.__complete then
      local hint = M.did_you_mean(name, mt.__complete())
      if hint ~= "" then
        return string.format("cute.%s does not exist%s", name, hint:gsub("'([%w_]+)'", "'cute.%1'"))
      end
      return string.format("cute.%s does not exist", name)
    end
  end
end

-- A traceback with cutelua's own frames (and C functions, tail calls) left
-- out; the count of cutelua's frames left out. full: keep everything.
local function user_traceback(tb, full)
  if not tb or tb == "" then return nil, 0 end
  local out, hidden = {}, 0
  for l in tb:gmatch("[^\n]+") do
    local src = l:match("^%s+([^:]+):")
    -- the header is written by the caller; C functions (error, pcall, ...)
    -- and tail calls say nothing to the user
    local header, noise = l:match("^stack traceback") ~= nil, src == "[C]" or l:match("^%s+%(tail call%)") ~= nil
    if full and not header then
      out[#out + 1] = l
    elseif not full and not header and not noise then
      if src and is_internal("@" .. src) then hidden = hidden + 1 else out[#out + 1] = l end
    end
  end
  if #out == 0 then return nil, hidden end
  return table.concat(out, "\n"), hidden
end

--- An error message (and the traceback taken where it was raised) as a person
-- reads it, after rustc: the message as raised (file:line: what), then
-- "--> file:line:col", the source line with a caret under the call the
-- message is about (or the whole statement), a translation of a raw Lua
-- error whose cause is known, and the traceback of the user's frames only
-- (all of them with opts.full, or CUTELUA_TRACEBACK=full). The message is
-- returned unchanged when it names no readable line.
function M.render(msg, tb, opts)
  opts = opts or {}
  msg = tostring(msg)
  local full = opts.full
  if full == nil then full = os.getenv("CUTELUA_TRACEBACK") == "full" end
  local out = { msg }
  local file, n = msg:match("^([^\n]-%.lua):(%d+): ")
  if not file then file, n = msg:match("^([^\n:]+):(%d+): ") end
  n = tonumber(n)
  local line = file and n and source_line(file, n)
  if line then
    local text = line:gsub("\t", "  ")
    local a, b
    local body = msg:sub(#file + #tostring(n) + 4)
    for _, name in ipairs(subjects(body)) do
      a, b = call_span(text, name)
      if a then break end
    end
    if not a then a, b = text:find("%S.*%S"), #text:match("^(.-)%s*$") end
    if not a then a, b = 1, 1 end
    local gutter = string.rep(" ", #tostring(n))
    out[#out + 1] = string.format("%s--> %s:%d:%d", gutter, file, n, a)
    out[#out + 1] = gutter .. " |"
    out[#out + 1] = string.format("%d | %s", n, text)
    out[#out + 1] = string.format("%s | %s%s", gutter, string.rep(" ", a - 1), string.rep("^", b - a + 1))
    local why = explain(msg, line)
    if why then out[#out + 1] = string.format("%s = help: %s", gutter, why) end
  end
  local utb, hidden = user_traceback(tb, full)
  if utb then
    out[#out + 1] = "stack traceback" .. (hidden > 0 and string.format(
      " (%d frame%s of cutelua left out; CUTELUA_TRACEBACK=full shows them):", hidden, hidden == 1 and "" or "s")
      or ":")
    out[#out + 1] = utb
  end
  return table.concat(out, "\n")
end

return M
