-- The public API's doc comments: every function exported as cute.<name>
-- (EXPORTS in lua/cute/init.lua) and every public method of the public
-- objects has a doc comment (LDoc's `---`) with a summary and a @param (or
-- @tparam) for each of its parameters, varargs as `...`. The comment is found
-- in the source through debug.getinfo (file and line of the definition), the
-- parameters through debug.getlocal. (scripts/api-doc checks the comments'
-- form: the ctest api-doc fails on any LDoc warning.)
local cute = require "cute"

-- the source lines of a file, cached
local files = {}
local function lines_of(path)
  local l = files[path]
  if l == nil then
    l = {}
    local f = io.open(path, "r")
    if f then
      for line in f:lines() do l[#l + 1] = line end
      f:close()
    end
    files[path] = l
  end
  return l
end

-- The doc comment above line n of a file: the block of comment lines that
-- ends just above it, from its last line starting with `---`; nil if none.
local function doc_comment(path, n)
  local l = lines_of(path)
  local first = n
  while first > 1 and l[first - 1] and l[first - 1]:match("^%s*%-%-") do first = first - 1 end
  local start
  for i = n - 1, first, -1 do
    if l[i]:match("^%s*%-%-%-") and not l[i]:match("^%s*%-%-%-%-") then
      start = i
      break
    end
  end
  if not start then return nil end
  local out = {}
  for i = start, n - 1 do out[#out + 1] = l[i]:gsub("^%s*%-%-%-?%s?", "", 1) end
  return out
end

-- The parameter names of a Lua function (self left out), and whether it takes `...`.
local function params(fn)
  local info = debug.getinfo(fn, "u")
  local names = {}
  for i = 1, info.nparams or 0 do
    local name = debug.getlocal(fn, i)
    if name ~= "self" then names[#names + 1] = name end
  end
  if info.isvararg then names[#names + 1] = "..." end
  return names
end

-- The LDoc block that declares `@function d` in a file, d the public name
-- or its end (`shuffle` for cute.shuffle, `Value:lt`, `PipelineAsync.create`):
-- for functions made in a loop or a table, which have no definition of their
-- own to comment; nil if none.
local function declared(path, name)
  local l = lines_of(path)
  for i, line in ipairs(l) do
    local d = line:match("^%s*%-%-%s*@function%s+([%w_.:]+)%s*$")
    if d and (d == name or name:sub(-#d - 1):match("^[.:]") and name:sub(-#d) == d) then
      local a, b = i, i
      while a > 1 and l[a - 1]:match("^%s*%-%-") and not l[a]:match("^%s*%-%-%-") do a = a - 1 end
      while l[b + 1] and l[b + 1]:match("^%s*%-%-") and not l[b + 1]:match("^%s*%-%-%-") do b = b + 1 end
      local out = {}
      for j = a, b do out[#out + 1] = l[j]:gsub("^%s*%-%-%-?%s?", "", 1) end
      return out
    end
  end
  return nil
end

-- Whether a function's source (lines linedefined .. lastlinedefined) has a
-- `return` with a value in its own body (not in a nested function). A
-- returned call (`return f(x)`: a tail call, often of a function returning
-- nothing) does not count.
local function returns_value(path, info)
  local l = lines_of(path)
  local stack, functions = {}, 0 -- open blocks ("f" a function, "b" another), functions among them
  for i = info.linedefined, info.lastlinedefined do
    local line = (l[i] or ""):gsub("%-%-.*$", ""):gsub('"[^"]*"', '""'):gsub("'[^']*'", "''")
    for word, rest in line:gmatch("([%a_][%w_]*)()") do
      if word == "function" then
        stack[#stack + 1] = "f"
        functions = functions + 1
      elseif word == "if" or word == "do" then
        stack[#stack + 1] = "b"
      elseif word == "end" and #stack > 0 then
        if table.remove(stack) == "f" then functions = functions - 1 end
      elseif word == "return" and functions == 1 then
        local nxt = line:sub(rest):match("^%s*([^%s;]+)")
        if nxt and not nxt:match("^end$") and not line:sub(rest):match("^%s*[%w_.:]+%(") then return true end
      end
    end
  end
  return false
end

-- A wrapper function(...) that calls its upvalue f (cute.trace.sync's
-- guard against use outside a kernel): the function it wraps.
local function unwrap(fn)
  local info = debug.getinfo(fn, "u")
  if info.nparams ~= 0 or not info.isvararg then return fn end
  for i = 1, info.nups do
    local name, v = debug.getupvalue(fn, i)
    if name == "f" and type(v) == "function" then return v end
  end
  return fn
end

-- The doc comment of fn (called `name` in its module, or any of the list of
-- names `name`): the comment's lines (nil if none), where fn is
-- ("file:line"), its file and debug info; nothing for a C function, or nil
-- and why.
local function doc_of(fn, name)
  fn = unwrap(fn)
  local info = debug.getinfo(fn, "S")
  if info.what ~= "Lua" then return nil end
  local path = info.source:match("^@(.*)$")
  if not path then return nil, "no source file (" .. info.source .. ")" end
  path = path:match("(lua/cute/.*)$") or path
  local where = path .. ":" .. info.linedefined
  local doc
  for _, n in ipairs(type(name) == "table" and name or { name }) do doc = doc or declared(path, n) end
  return doc or doc_comment(path, info.linedefined), where, path, info
end

-- nil when the doc comment of fn (called `name` in its module) is complete,
-- else what is missing.
local function problem(fn, name)
  local doc, where, path, info = doc_of(fn, name)
  if not where then return nil end
  if not path then return where end
  fn = unwrap(fn)
  if not doc then return where .. ": no doc comment (---)" end
  if not doc[1]:match("%S") then return where .. ": the doc comment has no summary" end
  local documented = {}
  for _, line in ipairs(doc) do
    local p = line:match("^%s*@param%s+([%w_.]+)") or line:match("^%s*@tparam%s+%S+%s+([%w_.]+)")
    if p then documented[p] = true end
  end
  local missing = {}
  for _, p in ipairs(params(fn)) do
    if not documented[p] then missing[#missing + 1] = p end
  end
  if #missing > 0 then return where .. ": no @param for " .. table.concat(missing, ", ") end
  local tags = table.concat(doc, "\n")
  if not tags:find("@usage", 1, true) then return where .. ": no @usage line" end
  if returns_value(path, info) and not (tags:find("@return", 1, true) or tags:find("@treturn", 1, true)) then
    return where .. ": returns a value, but has no @return"
  end
  return nil
end

-- name -> function: the public API
local function public_functions()
  local out = {}
  local function add(name, f)
    if type(f) == "function" then out[name] = f end
  end
  local function add_table(prefix, t)
    for k, v in pairs(t) do
      if type(k) == "string" and not k:match("^_") then add(prefix .. k, v) end
    end
  end
  -- cute.<name>
  for name in pairs(getmetatable(cute).exports.where) do add("cute." .. name, cute[name]) end
  -- Layout and ComposedLayout methods
  add_table("Layout:", getmetatable(cute.make_layout(4)).__index)
  local composed = cute.make_composed_layout(cute.make_swizzle(1, 0, 1), 0, cute.make_layout(4))
  local composed_index = getmetatable(composed).__index
  if type(composed_index) == "table" then add_table("ComposedLayout:", composed_index) end
  -- tensors in kernels: trace.tensor's methods (an upvalue of Tensor.__index)
  local index = require("cute.trace.tensor").Tensor.__index
  for i = 1, math.huge do
    local name, v = debug.getupvalue(index, i)
    if not name then break end
    if name == "methods" then add_table("Tensor:", v) end
  end
  -- device tensors (runtime tensor API) and their host copies
  add_table("DeviceTensor:", getmetatable(cute.fake_tensor(cute.f32, 16)).__index)
  local host_index = require("cute.tensor").HostTensor.__index
  for i = 1, math.huge do
    local name, v = debug.getupvalue(host_index, i)
    if not name then break end
    if name == "host_methods" then add_table("HostTensor:", v) end
  end
  -- kernel objects, and what k:compile returns
  add("cute.kernel", require("cute.kernel").kernel)
  add_table("cute.kernel:", require("cute.kernel").Kernel)
  add_table("compiled:", require("cute.compiler").Module)
  -- values in kernels (a:lt(b), x:to(cute.f16), p:cast("generic"), ...)
  add_table("Value:", require("cute.trace.core").Value)
  -- atoms: tiled MMAs and copies, and their per-thread slices
  local op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 })
  local mma = cute.make_tiled_mma(cute.make_mma_atom(op))
  add_table("TiledMma:", getmetatable(mma).__index)
  local copy = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.f32),
    cute.make_layout(32), cute.make_layout(1))
  add_table("TiledCopy:", getmetatable(copy).__index)
  local partition = require "cute.trace.partition"
  for _, f in ipairs { partition.thr_mma, partition.thr_copy } do
    for i = 1, math.huge do
      local name, v = debug.getupvalue(f, i)
      if not name then break end
      if name == "ThrMma" or name == "ThrCopy" then add_table(name .. ":", v.__index) end
    end
  end
  -- runtime objects
  for _, o in ipairs { "Buffer", "Stream", "Event", "Module", "Kernel" } do add_table("cute." .. o .. ":", cute[o]) end
  -- cute.lib.* entry points, cute.testing, cute.autotune
  for _, m in ipairs(getmetatable(cute.lib).__complete()) do add_table("cute.lib." .. m .. ".", cute.lib[m]) end
  add_table("cute.testing.", cute.testing)
  add_table("cute.autotune.", cute.autotune)
  -- the instructions in kernels (cute.arch, with its Hopper parts) and the ops of the atoms
  add_table("cute.arch.", require("cute.trace.atom").arch)
  for _, part in ipairs { "cute.trace.wgmma", "cute.trace.tma", "cute.trace.sync90" } do
    add_table("cute.arch.", require(part).arch)
  end
  add_table("cute.nvgpu.", cute.nvgpu)
  for _, family in ipairs { "warp", "cpasync", "warpgroup" } do
    add_table("cute.nvgpu." .. family .. ".", cute.nvgpu[family])
  end
  -- (cpasync's TMA part is copied in on first use: all of it, whatever ran before)
  add_table("cute.nvgpu.cpasync.", require "cute.nvgpu.tma")
  -- pipelines, benchmarks, the compiler, cuBLAS, exported kernels, dtypes
  add_table("cute.pipeline.", cute.pipeline)
  add("cute.pipeline.PipelineTmaAsync.create", cute.pipeline.PipelineTmaAsync.create)
  add("cute.pipeline.PipelineAsync.create", cute.pipeline.PipelineAsync.create)
  for _, m in ipairs { "bench", "compiler", "cublas", "aot", "dtype" } do add_table("cute." .. m .. ".", cute[m]) end
  return out
end

-- How a @usage line shows a result: strings quoted, tuples and layouts in
-- CuTe notation.
local function show(...)
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if type(v) == "string" then
      out[i] = string.format("%q", v)
    elseif type(v) == "table" then
      out[i] = cute.pretty_str(v)
    else
      out[i] = tostring(v)
    end
  end
  return table.concat(out, ", ")
end

describe("the public API's doc comments", function()
  it("finds a doc comment's summary and parameters", function()
    -- (the finder itself, on functions of this file's kind)
    assert.same({ "fn" }, params(params))
    assert.same({ "name", "..." }, params(function(name, ...) return name, ... end))
    assert.matches("no doc comment", problem(lines_of))
    assert.is_nil(problem(cute.make_layout))
    -- a file with a doc comment lacking a @param, a @return, a @usage
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("--- Adds.\n-- @param a a number\n-- @usage add(1, 2)\nlocal function add(a, b) return a + b end\n",
      "--- Doubles.\n-- @param x a number\n-- @usage twice(1)\nlocal function twice(x) return x * 2 end\n",
      "--- Nothing.\nlocal function nothing() end\n",
      "--- Fine.\n-- @param ... anything\n-- @return the count\n-- @usage count(1, 2)\n",
      "local function count(...) return select('#', ...) end\n",
      "return { add = add, twice = twice, nothing = nothing, count = count }\n")
    f:close()
    local m = dofile(path)
    local add, twice, nothing, count = problem(m.add), problem(m.twice), problem(m.nothing), problem(m.count)
    os.remove(path)
    files[path] = nil
    assert.matches("no @param for b", add)
    assert.matches("returns a value, but has no @return", twice)
    assert.matches("no @usage line", nothing)
    assert.is_nil(count)
  end)

  it("has a summary and a @param for each parameter on every public function", function()
    local bad = {}
    local n = 0
    local functions, names = public_functions(), {}
    for name, f in pairs(functions) do -- every name of each function (a declared block may name any)
      names[f] = names[f] or {}
      table.insert(names[f], name)
    end
    for name, f in pairs(functions) do
      n = n + 1
      local p = problem(f, names[f])
      if p then bad[#bad + 1] = name .. " (" .. p .. ")" end
    end
    table.sort(bad)
    assert.is_true(n > 500, n .. " public functions found")
    assert.equal("", table.concat(bad, "\n"), #bad .. " of " .. n .. " public functions lack doc comments")
  end)

  it("shows in @usage lines the results the examples give", function()
    -- `@usage cute.f(...)  -- result` (or `local x = cute.f(...)  -- result`):
    -- the expression is run (on the host, with `cute` in scope) and shown
    local seen, bad, n = {}, {}, 0
    for name, f in pairs(public_functions()) do
      local doc, where = doc_of(f, name)
      for _, line in ipairs(doc or {}) do
        local code, want = line:match("^%s*@usage%s+(.-)%s%s%-%-%s(.+)$")
        if code then
          code = code:gsub("^local%s+[%w_,%s]+=%s*", "")
          if code:match("^cute%.") and not want:match("^or ") and not seen[code] then
            seen[code] = true
            n = n + 1
            local fn = assert(loadstring("return " .. code, "=@usage"))
            setfenv(fn, setmetatable({ cute = cute }, { __index = _G }))
            local r = { pcall(fn) }
            local got = r[1] and show(unpack(r, 2, table.maxn(r))) or ("error: " .. tostring(r[2]))
            if got ~= want then bad[#bad + 1] = string.format("%s: %s gives %s, the comment says %s", where, code,
              got, want) end
          end
        end
      end
    end
    table.sort(bad)
    assert.is_true(n >= 50, n .. " examples with results")
    assert.equal("", table.concat(bad, "\n"))
  end)
end)
