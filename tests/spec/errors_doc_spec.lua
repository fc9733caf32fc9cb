-- docs/errors.md is a catalogue of errors, each entry a program and the
-- message it must fail with: every entry runs here, with `cute` in scope.
local cute = require "cute"

local function entries()
  local list = {}
  local f = assert(io.open("docs/errors.md"))
  local text = f:read("*a")
  f:close()
  for line, code, msg in text:gmatch("\n## (E%d+: [^\n]*)\n.-```lua\n(.-)```.-\nerror: `([^\n]*)`") do
    list[#list + 1] = { title = line, code = code, msg = msg }
  end
  return list, text
end

describe("docs/errors.md", function()
  local list, text = entries()

  it("has an entry for each heading, numbered in order", function()
    local headings = select(2, text:gsub("\n## E%d+:", ""))
    assert.equal(headings, #list)
    assert.is_true(#list >= 17, #list .. " entries")
    for i, e in ipairs(list) do assert.equal(string.format("E%02d", i), e.title:match("^E%d+")) end
  end)

  for _, e in ipairs(list) do
    it(e.title .. ": the program fails with the message shown", function()
      local env = setmetatable({ cute = cute }, { __index = _G })
      local fn = assert(loadstring(e.code, "=errors.md"))
      setfenv(fn, env)
      local ok, msg = pcall(fn)
      assert.is_false(ok, "the program of " .. e.title .. " ran without an error")
      assert.matches(e.msg, tostring(msg), 1, true)
    end)
  end
end)
