-- docs/ir.md's op table is generated from the C op table (tools/gen_ir_doc.lua):
-- this fails when it is stale. CUTELUA_UPDATE_DOCS=1 rewrites it.
local gen = dofile("tools/gen_ir_doc.lua")
local ir = require "cute.ir"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

describe("docs/ir.md", function()
  it("has the op table of ir_ops.h, as tools/gen_ir_doc.lua writes it", function()
    local doc = read("docs/ir.md")
    local want = assert(gen.render(doc))
    if want ~= doc and os.getenv("CUTELUA_UPDATE_DOCS") == "1" then
      local f = assert(io.open("docs/ir.md", "wb"))
      f:write(want)
      f:close()
      doc = want
    end
    if want ~= doc then
      local got, exp = {}, {}
      for l in (doc .. "\n"):gmatch("(.-)\n") do got[#got + 1] = l end
      for l in (want .. "\n"):gmatch("(.-)\n") do exp[#exp + 1] = l end
      local n = 1
      while got[n] == exp[n] do n = n + 1 end
      error(string.format("docs/ir.md's op table is stale (line %d: %q, generated: %q); run `build/cutelua "
        .. "tools/gen_ir_doc.lua` (or CUTELUA_UPDATE_DOCS=1 ctest -R spec/ir/doc)", n, tostring(got[n]),
        tostring(exp[n])), 0)
    end
  end)

  it("lists every op of the C table in the table's order", function()
    local t = gen.table()
    local last = 0
    for name, id in pairs(ir.ops) do
      local at = t:find("\n| `" .. name .. "` |", 1, true)
      assert(at, "no row for " .. name)
      assert.equal(id, select(2, t:sub(1, at):gsub("\n", "")) - 2, name) -- its row is the op's number
      last = math.max(last, at)
    end
    assert.is_true(last > 0)
  end)

  it("names the feature an op needs and escapes bars in the meaning", function()
    local t = gen.table()
    assert.matches("| `stmatrix` | 2 | `nF` | STMATRIX | ", t, 1, true)
    assert.matches("| `abs` | 1 |  |  | \\|a\\| |", t, 1, true)
    assert.matches("| `asm` | 0+ | `ssF` |  |", t, 1, true)
    assert.matches("| `barrier.named` | 1-2 | `B` |  |", t, 1, true)
  end)
end)
