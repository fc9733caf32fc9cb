-- The REPL's logic (repl/repl.lua): compiling entries, formatting, completion.
local repl = require "cutelua.repl"

local function run(src)
  local fn, err = repl.compile(src)
  assert(fn, err)
  return fn()
end

describe("repl.compile", function()
  it("returns the value of an expression typed alone", function()
    assert.equal(3, run("1 + 2"))
    assert.same({ 1, "a" }, { run("1, 'a'") })
  end)

  it("accepts =expr", function()
    assert.equal(5, run("= 2 + 3"))
  end)

  it("runs statements", function()
    assert.is_nil(run("local x = 1"))
  end)

  it("asks for more input inside an unfinished statement", function()
    for _, src in ipairs { "for i = 1, 2 do", "function f()", "x = {", "if x then", "s = [[abc", "= 1 +" } do
      local fn, why = repl.compile(src)
      assert.is_nil(fn)
      assert.equal("incomplete", why, src)
    end
  end)

  it("reports syntax errors with the line", function()
    local fn, err = repl.compile("x = = 1")
    assert.is_nil(fn)
    assert.matches("^stdin:1:", err)
  end)

  it("keeps the line in errors raised by an expression", function()
    local fn = repl.compile("error('boom')")
    local ok, err = pcall(fn)
    assert.is_false(ok)
    assert.equal("stdin:1: boom", err)
  end)

  it("tolerates a trailing comment on an expression", function()
    assert.equal(4, run("4 -- four"))
  end)
end)

describe("repl.pretty", function()
  it("prints nested tables as constructors with sorted keys", function()
    assert.equal('{1, 2, a = {b = 3}, z = "s"}', repl.pretty({ 1, 2, z = "s", a = { b = 3 } }))
  end)

  it("quotes strings inside tables and escapes control characters", function()
    assert.equal('{"a\\nb", "q\\""}', repl.pretty({ "a\nb", 'q"' }))
  end)

  it("marks cycles", function()
    local t = {}
    t.self = t
    assert.equal("{self = <cycle>}", repl.pretty(t))
  end)

  it("uses __tostring", function()
    local obj = setmetatable({}, { __tostring = function() return "(4,8):(1,4)" end })
    assert.equal("{(4,8):(1,4)}", repl.pretty({ obj }))
  end)

  it("prints integers without exponents", function()
    assert.equal("1000000000000000", repl.pretty(1e15))
    assert.equal("0.5", repl.pretty(0.5))
  end)

  it("breaks long tables over lines", function()
    local t = {}
    for i = 1, 40 do t[i] = i * 1000 end
    assert.matches("^{\n  1000,\n  2000,", repl.pretty(t))
  end)

  it("limits depth and size", function()
    assert.equal("{{{{{...}}}}}", repl.pretty({ { { { { { 1 } } } } } }))
    local t = {}
    for i = 1, 100 do t["k" .. i] = i end
    assert.matches("%.%.%.", repl.pretty(t))
  end)
end)

describe("repl.format_results", function()
  it("joins values with tabs, strings raw", function()
    assert.equal("1\tab\t{1}", repl.format_results(3, 1, "ab", { 1 }))
    assert.equal("nil\tnil", repl.format_results(2, nil, nil))
    assert.is_nil(repl.format_results(0))
  end)
end)

describe("repl.complete", function()
  local env = {
    string = string,
    cute = require "cute",
    counter = 1,
    obj = setmetatable({ field = 1 }, { __index = { method = function() end, value = 2 } }),
  }

  it("completes globals and keywords", function()
    assert.same({ "counter", "cute" }, repl.complete("c", env))
    assert.same({ "function" }, repl.complete("fun", env))
  end)

  it("completes fields of tables", function()
    assert.same({ "string.rep", "string.reverse" }, repl.complete("string.re", env))
  end)

  it("completes names of the lazily loaded cute namespace", function()
    local c = repl.complete("cute.vers", env)
    assert.same({ "cute.version" }, c)
  end)

  it("completes methods after ':'", function()
    assert.same({ "obj:method" }, repl.complete("obj:m", env))
    assert.same({}, repl.complete("obj:v", env))
  end)

  it("offers nothing for what it cannot resolve", function()
    assert.same({}, repl.complete("nothing.here", env))
    assert.same({}, repl.complete("f(x).y", env))
  end)
end)

describe("repl help", function()
  local cute = require "cute"

  it("shows a function's definition and doc comment, from the bundled source", function()
    local d = repl.doc(cute.make_layout, "cute.make_layout")
    assert.matches("^function M%.make_layout%(shape, stride", d)
    assert.matches("make_layout(shape[, stride]): stride a congruent tuple", d, 1, true)
    assert.matches("defined at lua/cute/layout.lua:%d+", d)
    -- its LDoc tags as sections
    assert.matches("\n  Parameters:\n    shape   an integer or nested tuple", d)
    assert.matches("\n  Returns: Layout\n", d)
    assert.matches("\n  Usage: local L = cute.make_layout", d)
    assert.is_nil(d:find("@param", 1, true))
  end)

  it("finds the doc of a cute name made by a wrapper by its name", function()
    -- cute.composition is cute.trace.tensor's wrapper; the doc is cute.layout's
    local d = repl.doc(cute.composition, "cute.composition")
    assert.matches("composition(A, B): the layout R with R(c) == A(B(c))", d, 1, true)
  end)

  it("finds the doc of a cute name made in a loop by its LDoc @function block", function()
    local d = repl.doc(cute.shuffle_xor, "cute.shuffle_xor")
    assert.matches("^cute%.shuffle_xor %(trace%.sync%)", d)
    assert.matches("lane   the lane mask", d, 1, true)
    assert.matches("defined at lua/cute/trace/sync.lua:%d+", d)
    d = repl.doc(cute.exp, "cute.exp")
    assert.matches("e to the power x", d, 1, true)
    assert.is_nil(d:find("no doc comment", 1, true))
  end)

  it("describes modules and objects with their public names", function()
    local d = repl.doc(cute.layout, "cute.layout")
    assert.matches("names %(help%(cute%.layout%.name%) for one%):", d)
    assert.matches("make_layout", d, 1, true)
    assert.is_nil(d:find(" internal ", 1, true) and d:find("  _", 1, true))
    assert.matches("a Layout, %(2,3%):%(1,2%)", repl.doc(cute.make_layout({ 2, 3 }), "L"))
    assert.matches("a number (42)", repl.doc(42, "x"), 1, true)
    assert.matches("a built%-in %(C%) function", repl.doc(print, "print"))
  end)

  it("reads ?x as help(x, \"x\")", function()
    local seen
    local saved, saved_cute = rawget(_G, "help"), rawget(_G, "cute")
    rawset(_G, "help", function(v, name) seen = { v, name } end)
    rawset(_G, "cute", cute)
    local fn = assert(repl.compile("?cute.make_layout"))
    fn()
    rawset(_G, "help", saved)
    rawset(_G, "cute", saved_cute)
    assert.equal(cute.make_layout, seen[1])
    assert.equal("cute.make_layout", seen[2])
    assert.is_nil((repl.compile("?cute.(")))
  end)

  it("keeps the last result as _, and prints modules as a summary", function()
    repl.format_results(2, 41, "x")
    assert.equal(41, rawget(_G, "_"))
    assert.matches("^<module cute%.layout: %d+ names; help%(cute%.layout%) lists them>$", repl.pretty(cute.layout))
    rawset(_G, "_", nil)
  end)
end)

describe("repl completion of cutelua's names", function()
  local cute = require "cute"
  local env = { cute = cute }

  it("completes cute.lib's modules without loading them", function()
    assert.same({ "cute.lib.reduce", "cute.lib.rowwise" }, repl.complete("cute.lib.r", env))
  end)

  it("hides private names and internal tables unless they are typed", function()
    local _ = cute.layout.make_layout
    for _, c in ipairs(repl.complete("cute.layout.", env)) do
      assert.is_nil(c:find("%._") or c:find("%.internal$"), c)
    end
    assert.same({ "cute.layout.internal" }, repl.complete("cute.layout.int", env))
  end)
end)
