-- The tutorials in docs/tutorials/*.md run as written: every ```lua block of a
-- file, in order, in one environment, and each `print(...) --> result` line
-- prints exactly the result written after the arrow (the values tab-separated,
-- as print writes them). A tutorial whose claims drift from the library fails
-- here, naming the file and line.
local function tutorials()
  local list = {}
  local p = io.popen("ls docs/tutorials/*.md 2>/dev/null")
  for f in p:lines() do
    if not f:find("README%.md$") then list[#list + 1] = f end -- (the index has no code)
  end
  p:close()
  return list
end

-- The lua blocks of a markdown file: {first_line, lines}
local function blocks(path)
  local out, cur, n = {}, nil, 0
  for line in io.lines(path) do
    n = n + 1
    if cur then
      if line:match("^```") then
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    elseif line:match("^```lua") then
      cur = { first = n + 1, lines = {} }
    end
  end
  return out
end

-- The blocks' source as one chunk (a block's locals are the next one's, as in
-- a session), each `print(X) --> R` turned into a check of X against R; every
-- line keeps its line number in the markdown file.
local function instrument(bs)
  local src, checks = {}, 0
  for _, b in ipairs(bs) do
    while #src < b.first - 1 do src[#src + 1] = "" end
    for _, line in ipairs(b.lines) do
    local code, want = line:match("^(.-)%s*%-%->%s?(.*)$")
    local args = code and code:match("^%s*print(%b())%s*$")
      if args then
        checks = checks + 1
        src[#src + 1] = string.format("__check(%q, %s)", want, "(function(...) return select('#', ...), ... end)"
          .. args)
      else
        src[#src + 1] = line
      end
    end
  end
  return table.concat(src, "\n"), checks
end

describe("the tutorials", function()
  local files = tutorials()
  it("exist", function() assert.is_true(#files >= 1) end)
  for _, path in ipairs(files) do
    it(path .. " runs as written and prints what it says", function()
      local env = setmetatable({}, { __index = _G })
      local total = 0
      env.__check = function(want, n, ...)
        total = total + 1
        local got = {}
        for i = 1, n do got[i] = tostring((select(i, ...))) end
        local text = table.concat(got, "\t")
        if text ~= want then
          error(string.format("printed %q, the tutorial says %q", text, want), 2)
        end
      end
      env.print = function() end -- (the blocks' other prints)
      local src, checks = instrument(blocks(path))
      local chunk = assert(loadstring(src, "@" .. path))
      setfenv(chunk, env)
      chunk()
      assert.equal(checks, total) -- every claim was reached
      assert.is_true(total >= 5, path .. " checks only " .. total .. " results")
    end)
  end

  it("a wrong claim fails, naming the tutorial's line", function()
    local b = { first = 3, lines = { "local cute = require 'cute'", "print(cute.make_layout(4)) --> 4:2" } }
    local src = instrument({ b })
    local env = setmetatable({ __check = function(want, n, ...)
      local text = tostring((select(1, ...)))
      if text ~= want then error(string.format("printed %q, the tutorial says %q", text, want), 2) end
      local _ = n
    end }, { __index = _G })
    local chunk = assert(loadstring(src, "@docs/tutorials/x.md"))
    setfenv(chunk, env)
    local ok, msg = pcall(chunk)
    assert.is_false(ok)
    assert.matches("x%.md:4: printed \"4:1\", the tutorial says \"4:2\"", msg)
  end)
end)
