-- The preprocessor's rewrite rules (cute.pre.rewrite), one test each: what a
-- construct becomes, and that on Lua values the rewritten function does what
-- the original does (so metaprogramming in kernel bodies keeps working).
local parse = require "cute.pre.parse"
local rewrite = require "cute.pre.rewrite"
local printer = require "cute.pre.print"
local source = require "cute.pre.source"

-- The rewritten text of the first function in src.
local function rewritten(src)
  local ast = parse.parse(src, "t")
  local f
  local function find(n)
    if f or type(n) ~= "table" then return end
    if n.k == "Function" then f = n return end
    for _, v in pairs(n) do find(v) end
  end
  find(ast)
  return printer.print(rewrite.rewrite(f, "t"))
end

local function error_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end

-- fn and its rewritten version give the same results for each argument list.
local function same(fn, ...)
  local new = source.rewrite(fn)
  assert.are_not.equal(fn, new)
  for _, args in ipairs { ... } do
    assert.same({ fn(unpack(args)) }, { new(unpack(args)) })
  end
end

describe("the preprocessor's rewrite rules", function()
  it("make comparisons calls: < <= > >= == ~=", function()
    local out = rewritten("local f = function(a, b) return a < b, a <= b, a > b, a >= b, a == b, a ~= b end")
    for _, f in ipairs { "lt", "le", "gt", "ge", "eq", "ne" } do
      assert.matches("__cute_R%." .. f .. "%(a, b%)", out)
    end
    same(function(a, b) return a < b, a <= b, a > b, a >= b, a == b, a ~= b end, { 1, 2 }, { 2, 2 }, { "a", "b" })
    local t = {}
    same(function(a, b) return a == b, a ~= b, a == t, nil == b end, { t, {} }, { t, t }, { 1, nil })
    local msg = error_of(function() source.rewrite(function(a, b) return a < b end)(1, nil) end)
    assert.matches("attempt to compare number with nil", msg)
  end)

  it("make and/or calls that keep Lua's short circuit (a thunk unless the right side is simple)", function()
    local out = rewritten("local f = function(a, b, t) return a and b, a or t.x, not a end")
    assert.matches("__cute_R%.and_%(a, b%)", out)
    assert.matches("__cute_R%.or_f%(a, function%(%) return t%.x; end%)", out)
    assert.matches("__cute_R%.not_%(a%)", out)
    -- the right side runs exactly when Lua would run it (the log says)
    same(function(a, b)
      local log = {}
      local function side(x)
        log[#log + 1] = x
        return x
      end
      return a and side(1), b or side(2), not a, a and b or 7, table.concat(log, ",")
    end, { false, nil }, { 1, 2 }, { nil, false }, { true, false })
  end)

  it("make if/elseif/else a call with the assigned locals carried in and out", function()
    local out = rewritten([[local f = function(c, d)
      local x, y = 0, 0
      if c then x = 1 elseif d then y = 2 else x = 3 end
      return x, y
    end]])
    assert.matches('x, y = __cute_R%.if_%(3, "x,y", 2, c, function%(x, y%)', out)
    same(function(c, d)
      local x, y = 0, 0
      if c then x = 1 elseif d then y = 2 else x = 3 end
      return x, y
    end, { true, false }, { false, true }, { false, false })
  end)

  it("make numeric for a call, unrolling on Lua numbers, with carried locals", function()
    assert.matches('s = __cute_R%.for_%(1, "s", 1, 1, n, 2, function%(s, i%)',
      rewritten("local f = function(n) local s = 0 for i = 1, n, 2 do s = s + i end return s end"))
    same(function(n)
      local s, t = 0, {}
      for i = 1, n, 2 do s = s + i end
      for i = n, 1, -1 do t[#t + 1] = i end
      return s, table.concat(t, ",")
    end, { 0 }, { 1 }, { 10 })
  end)

  it("make generic for a call over any iterator", function()
    assert.matches('__cute_R%.forin%(1, "s", 1, function%(s, k, v%)',
      rewritten("local f = function(t) local s = 0 for k, v in pairs(t) do s = s + v end return s end"))
    same(function(t)
      local s, keys = 0, ""
      for i, v in ipairs(t) do s = s + i * v end
      for k in pairs({ a = 1 }) do keys = keys .. k end
      return s, keys
    end, { { 4, 5, 6 } })
  end)

  it("make while and repeat calls, the condition a function of the carried locals", function()
    local out = rewritten("local f = function(n) local i = 0 while i < n do i = i + 1 end return i end")
    assert.matches('i = __cute_R%.while_%(1, "i", 1, function%(i%) return __cute_R%.lt%(i, n%); end', out)
    same(function(n)
      local i, j = 0, 10
      while i < n do i = i + 1 end
      repeat
        local d = 2
        j = j - d
      until j < d -- the condition sees the body's locals
      return i, j
    end, { 0 }, { 5 })
  end)

  it("pass break, goto continue and return out of the functions they are in", function()
    local out = rewritten([[local f = function(t)
      for i = 1, #t do
        if t[i] < 0 then break end
        if t[i] == 0 then goto continue end
        if t[i] > 100 then return "big" end
        ::continue::
      end
    end]])
    assert.matches("do return 2, nil; end", out)
    assert.matches("do return 3, nil; end", out)
    assert.matches("do return 1, __cute_R%.pack%(\"big\"%); end", out)
    assert.matches("__cute_R%.ifx%(", out)
    assert.matches("__cute_R%.forx%(", out)
    same(function(t)
      local s = 0
      for i = 1, #t do
        if t[i] < 0 then break end
        if t[i] == 0 then goto continue end
        if t[i] > 100 then return "big", s end
        s = s + t[i]
        ::continue::
      end
      local k = 0
      while true do
        k = k + 1
        if k > 3 then break end
      end
      return s, k
    end, { { 1, 0, 2, -1, 5 } }, { { 1, 200 } }, { {} })
  end)

  it("reach the enclosing function's ... from inside a region", function()
    same(function(...)
      local n = 0
      if select("#", ...) > 1 then n = select(2, ...) end
      return n
    end, { 1 }, { 1, 2 })
  end)

  it("keep every token on its line", function()
    local src = "local f = function(a, b)\n  if a < b then\n    a = b\n  end\n  return a\nend"
    local out = rewritten(src)
    local lines = {}
    for l in (out .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.matches("__cute_R%.if_%(2, \"a\", 1, __cute_R%.lt%(a, b%)", lines[2])
    assert.matches("a = b", lines[3])
    assert.matches("return a", lines[5])
  end)

  it("refuse a goto out of a region that is not `goto continue`, at its line", function()
    local msg = error_of(function()
      rewritten("local f = function(n)\n for i = 1, n do\n if i then goto out end\n end\n ::out::\nend")
    end)
    assert.matches("^t:3: goto out jumps out of a loop or if", msg)
    assert.matches("preprocess = false", msg)
  end)

  it("say when a function's source cannot be had, and what to do", function()
    local fn = loadstring("return function(a) return a end", "=nowhere")()
    debug.getregistry().cutelua_chunks["=nowhere"] = nil
    local msg = error_of(function() source.rewrite(fn) end)
    assert.matches("nowhere:1: the preprocessor cannot rewrite this function: its source cannot be had", msg)
    assert.matches("{preprocess = false}", msg, 1, true)
    -- strings loaded by name keep their text
    local g = loadstring("return function(a, b) return a < b end", "=kept")()
    assert.is_true(source.rewrite(g)(1, 2))
  end)

  it("share the original's upvalues", function()
    local count = 0
    local function inc() count = count + 1 if count > 1 then return count end return 0 end
    local new = source.rewrite(inc)
    assert.equal(0, new())
    assert.equal(2, inc())
    assert.equal(3, new())
    assert.equal(3, count)
  end)
end)
