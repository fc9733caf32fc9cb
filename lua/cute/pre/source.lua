--- cute.pre.source: a Lua function's source, rewritten by the preprocessor
-- and loaded as a new function that shares the original's upvalues and
-- environment.
--
-- The source comes from the function's chunk: a file (read from disk, or
-- the copy bundled into cutelua for its own modules), a string chunk (the
-- chunk name is its text), or a chunk registered by name (`cutelua -e`, the
-- REPL: M.register). The rewritten chunk is loaded under the original chunk
-- name with every token on its original line, so errors, debug.getinfo and
-- the IR's lines name the user's file and lines. Parsing and rewriting are
-- cached per chunk text and function, so a second kernel from the same
-- function costs a load of the cached chunk.
local parse = require "cute.pre.parse"
local rewrite = require "cute.pre.rewrite"
local printer = require "cute.pre.print"

local M = {}

-- Chunks known by name: the texts of `cutelua -e` and of REPL entries (their
-- chunk names start with "="), and of strings loaded by name (cute's init
-- makes loadstring and load keep them).
local chunks = debug.getregistry().cutelua_chunks
if type(chunks) ~= "table" then
  chunks = {}
  debug.getregistry().cutelua_chunks = chunks
end

--- Records the text of the chunk called name, for kernels defined in it.
function M.register(name, text) chunks[name] = text end

local function bundled(path)
  local ok, c = pcall(require, "cute._c")
  if not ok then return nil end
  local ffi = require "ffi"
  local len = ffi.new("size_t[1]")
  local p = c.host.bundled_file(path, len)
  if p ~= nil then return ffi.string(p, len[0]) end
end

--- The text of the chunk with source name src (debug.getinfo's source), or
-- nil and why not.
function M.chunk_text(src)
  local c = src:sub(1, 1)
  if c == "@" then
    local path = src:sub(2)
    local text = bundled(path)
    if text then return text end
    local f = io.open(path, "rb")
    if not f then
      -- a string loaded under a file's name
      if chunks[src] then return chunks[src] end
      return nil, "its file " .. path .. " cannot be read"
    end
    text = f:read("*a")
    f:close()
    return text
  elseif c == "=" then
    local text = chunks[src]
    if text then return text end
    return nil, "its chunk " .. src:sub(2) .. " was loaded without keeping its text"
  end
  -- a string chunk: its text kept under its name (cutelua_dostring, loadstring
  -- with a name), else the name is the text (loadstring without one)
  return chunks[src] or src
end

-- text -> {ast = the chunk's AST, fns = {["first:last:nparams"] = entry}}
local cache = setmetatable({}, { __mode = "k" })
local by_text = {}

local function find_functions(node, first, last, out)
  if type(node) ~= "table" then return end
  if node.k == "Function" and node.line == first and node.eline == last then out[#out + 1] = node end
  for key, v in pairs(node) do
    if key ~= "decl" and key ~= "esc_loop" and type(v) == "table" then find_functions(v, first, last, out) end
  end
end

local function fail(info, why)
  error(string.format("%s:%d: the preprocessor cannot rewrite this function: %s; make it {preprocess = false} "
    .. "(plain tracing: cute.if_, cute.range, i:lt(n))", info.short_src, info.linedefined, why), 0)
end

-- The cache entry for fn: {loader (the compiled chunk), code (its text),
-- upnames}; raises what the preprocessor cannot do.
local function entry_of(fn, text)
  local info = debug.getinfo(fn, "Su")
  if info.what ~= "Lua" then fail(info, "it is not a Lua function") end
  if not text then
    local why
    text, why = M.chunk_text(info.source)
    if not text then fail(info, "its source cannot be had (" .. why .. ")") end
  end
  local file = by_text[text]
  if not file then
    local ok, ast = pcall(parse.parse, text, info.short_src)
    if not ok then fail(info, "its chunk does not parse here (" .. tostring(ast) .. ")") end
    file = { ast = ast, fns = {} }
    by_text[text] = file
  end
  local key = info.linedefined .. ":" .. info.lastlinedefined .. ":" .. info.nparams
  local e = file.fns[key]
  if e then return e end
  local found = {}
  find_functions(file.ast, info.linedefined, info.lastlinedefined, found)
  local matches = {}
  for _, f in ipairs(found) do
    if #f.params == info.nparams and f.vararg == (info.isvararg and true or false) then matches[#matches + 1] = f end
  end
  if #matches == 0 then fail(info, "its source text was not found in the chunk (was the file changed?)") end
  if #matches > 1 then fail(info, "several functions like it start and end on the same lines") end
  local new = rewrite.rewrite(matches[1], info.short_src)
  local ups = {}
  for i = 1, math.huge do
    local n = debug.getupvalue(fn, i)
    if not n then break end
    if n:match("^[%a_][%w_]*$") then ups[#ups + 1] = n end
  end
  -- the upvalues become locals of the chunk that the new function closes over
  local head = "local __cute_R" .. (#ups > 0 and (", " .. table.concat(ups, ", ")) or "") .. " = ... return "
  local code = head .. printer.print(new, { first_line = 1 })
  local loader, lerr = loadstring(code, info.source)
  if not loader then fail(info, "its rewritten text does not load (" .. tostring(lerr) .. "); please report this") end
  e = { loader = loader, code = code }
  file.fns[key] = e
  return e
end

--- The rewritten version of fn: a new function with fn's upvalues (shared,
-- not copied) and environment. text: the chunk's text when the caller has it
-- (M.capture). Raises, at fn's line, when fn's source cannot be had or
-- rewritten.
function M.rewrite(fn, text)
  local e = cache[fn]
  if e then return e.fn, e.code end
  local entry = entry_of(fn, text)
  local new = entry.loader(require "cute.pre.rt")
  -- share the original's upvalues, by name
  local index = {}
  for i = 1, math.huge do
    local n = debug.getupvalue(fn, i)
    if not n then break end
    index[n] = i
  end
  for j = 1, math.huge do
    local n = debug.getupvalue(new, j)
    if not n then break end
    if n ~= "__cute_R" and index[n] then debug.upvaluejoin(new, j, fn, index[n]) end
  end
  setfenv(new, getfenv(fn))
  cache[fn] = { fn = new, code = entry.code }
  return new, entry.code
end

--- cute.preprocess(fn): fn rewritten by the preprocessor, for a helper
-- that kernels call (the preprocessor rewrites a kernel's own function and
-- the functions written inside it, not the helpers it calls). The rewrite
-- happens at the first call, when a kernel is traced.
-- @param fn the helper function
-- @return the function, rewritten when it is first called
-- @usage local clamp = cute.preprocess(function(x, n) if x >= n then return n - 1 end return x end)
function M.preprocess(fn)
  if type(fn) ~= "function" then
    require("cute._err").raise("cute.preprocess: expected a function, got %s", type(fn))
  end
  local text = M.capture(fn)
  local new
  local core = require "cute.trace.core"
  local function leave(T, ...)
    T.pre_inline = T.pre_inline - 1
    return ...
  end
  return function(...)
    if not new then new = M.rewrite(fn, text) end
    local T = core.current()
    if not T then return new(...) end
    -- inlined into the trace: a `return` in a run-time region of it cannot be a cute.return_
    T.pre_inline = (T.pre_inline or 0) + 1
    return leave(T, new(...))
  end
end

--- The text of fn's chunk when it would be lost later (a chunk registered
-- by name, which the next REPL entry replaces); nil for files and strings.
function M.capture(fn)
  local src = debug.getinfo(fn, "S").source
  if src:sub(1, 1) == "=" then return chunks[src] end
end

return M
