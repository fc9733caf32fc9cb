-- The preprocessor's lexer, parser and printer (cute.pre.lex, .parse, .print):
-- LuaJIT's dialect, and a round trip of every Lua file of the project that
-- keeps every token on its line.
local lex = require "cute.pre.lex"
local parse = require "cute.pre.parse"
local printer = require "cute.pre.print"

local function error_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end

local function kinds(src)
  local out = {}
  for _, t in ipairs(lex.lex(src, "t")) do out[#out + 1] = t.t .. ":" .. t.v .. "@" .. t.line end
  return table.concat(out, " ")
end

-- The tokens of src (";" left out: the printer ends statements with one).
local function tokens(src, chunk)
  local out = {}
  for _, t in ipairs(lex.lex(src, chunk)) do
    if t.v ~= ";" and t.t ~= "eof" then out[#out + 1] = t end
  end
  return out
end

describe("cute.pre.lex", function()
  it("reads LuaJIT's numbers: hex, exponents, hex floats, LL/ULL and imaginary suffixes", function()
    assert.equal("num:0x1F@1 num:1e-3@1 num:.5@1 num:3.@1 num:0x1p4@1 op:-@1 num:1LL@1 eof:<eof>@1",
      kinds("0x1F 1e-3 .5 3. 0x1p4 -1LL"))
    assert.equal("num:0xFFFFFFFFFFFFFFFFULL@1 num:12i@1 num:7ull@1 eof:<eof>@1",
      kinds("0xFFFFFFFFFFFFFFFFULL 12i 7ull"))
    assert.equal("c:1: malformed number near '12abc'", error_of(function() lex.lex("x = 12abc", "c") end))
  end)

  it("reads strings with escapes, long strings and comments, counting their lines", function()
    local src = 'a = "x\\"y\\\nz" -- c\nb = [==[\n]]\n]==] --[[ long\ncomment ]] c = \'\\z\n  q\' d'
    local toks = lex.lex(src, "t")
    assert.equal('"x\\"y\\\nz"', toks[3].v)
    assert.equal(1, toks[3].line)
    assert.equal("b", toks[4].v)
    assert.equal(3, toks[4].line)
    assert.equal("[==[\n]]\n]==]", toks[6].v)
    assert.equal("c", toks[7].v)
    assert.equal(6, toks[7].line)
    assert.equal("d", toks[10].v)
    assert.equal(7, toks[10].line)
    assert.equal("c:1: unfinished string", error_of(function() lex.lex("s = 'open\n'", "c") end))
    assert.equal("c:1: unfinished long string or comment", error_of(function() lex.lex("s = [[open", "c") end))
  end)

  it("reads goto, labels and the longest punctuation first", function()
    assert.equal("kw:goto@1 name:continue@1 op:::@1 name:continue@1 op:::@1 op:...@1 op:..@1 op:.@1 op:~=@1 "
      .. "eof:<eof>@1",
      kinds("goto continue ::continue:: ... .. . ~="))
  end)
end)

describe("cute.pre.parse and cute.pre.print", function()
  it("print every Lua file of cutelua back with the same tokens on the same lines, and it loads", function()
    local files = 0
    for path in io.popen("find lua cli examples bench tests/spec -name '*.lua' | sort"):lines() do
      local f = assert(io.open(path, "rb"))
      local src = f:read("*a")
      f:close()
      local out = printer.print(parse.parse(src, path))
      local a, b = tokens(src, path), tokens(out, path .. " (printed)")
      assert.equal(#a, #b, path)
      for i = 1, #a do
        if a[i].v ~= b[i].v or a[i].line ~= b[i].line then
          error(string.format("%s: token %d: %s at line %d printed as %s at line %d", path, i, a[i].v, a[i].line,
            b[i].v, b[i].line))
        end
      end
      assert(loadstring(out, "=" .. path), path)
      files = files + 1
    end
    assert.is_true(files > 100)
  end)

  it("keeps behaviour: a printed chunk computes what the original does", function()
    local src = [[
      local t, s = {}, 0
      for i = 10, 1, -3 do t[#t + 1] = i end
      for _, v in ipairs(t) do s = s + v end
      local function f(...) return select("#", ...), ... end
      local n = f(1, nil, 3)
      local w = 0
      while w < 5 do w = w + 2 end
      repeat w = w - 1 until w <= 3
      goto skip
      s = -1
      ::skip::
      return s, n, w, #"a\tb", 2^3^2, -2^2, not nil == true, 1 .. 2 .. 3, { [1] = 'x'; y = 2, 3, }
    ]]
    local a = { loadstring(src)() }
    local b = { loadstring(printer.print(parse.parse(src, "t")))() }
    assert.same(a, b)
    assert.equal(22, b[1])
  end)

  it("reports syntax errors at their line", function()
    assert.equal("c:3: unexpected symbol near '<eof>'", error_of(function() parse.parse("local x = \n\n(", "c") end))
    assert.equal("c:3: 'end' expected (to close 'if' at line 1) near '<eof>'",
      error_of(function() parse.parse("if x then\n y = 1\n", "c") end))
    assert.equal("c:2: 'end' expected near 'x'", error_of(function() parse.parse("return 1\nx = 2", "c") end))
  end)
end)
