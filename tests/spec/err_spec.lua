-- cute._err: errors raised inside cutelua name the user's line.
local err = require "cute._err"

describe("cute._err", function()
  it("classifies cutelua's own chunks as internal", function()
    assert.is_true(err.is_internal("@lua/cute/layout.lua"))
    assert.is_true(err.is_internal("@/home/me/cutelua/lua/cute/layout.lua"))
    assert.is_true(err.is_internal("=[C]"))
    assert.is_false(err.is_internal("@tests/spec/err_spec.lua"))
    assert.is_false(err.is_internal("@gemm.lua"))
  end)

  it("reports the caller's line when raised from user code", function()
    local ok, msg = pcall(function()
      err.raise("bad %s #%d", "thing", 2) -- this line
    end)
    assert.is_false(ok)
    assert.matches("err_spec%.lua:%d+: bad thing #2", msg)
  end)

  it("formats non-string arguments with tostring", function()
    local obj = setmetatable({}, { __tostring = function() return "(4,8):(1,4)" end })
    local ok, msg = pcall(err.raise, "layout %s", obj)
    assert.is_false(ok)
    assert.matches("layout %(4,8%):%(1,4%)", msg)
  end)

  it("skips frames of bundled modules", function()
    -- a chunk named like a bundled module calls raise; the error names this file
    local internal = loadstring("local err = ... ; return function() err.raise('deep') end", "@lua/cute/fake.lua")(err)
    local ok, msg = pcall(function()
      internal() -- expected line
    end)
    assert.is_false(ok)
    local line = debug.getinfo(1, "l").currentline - 3
    assert.equal("tests/spec/err_spec.lua:" .. line .. ": deep", msg)
  end)
end)

describe("cute._err.render", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p '" .. dir .. "'")
  local file = dir .. "/user.lua"
  local f = assert(io.open(file, "w"))
  f:write("local cute = require 'cute'\n",
    "local x = cute.logical_divide(L, { 3, 5, 7 })\n",
    "\tlocal t = cute.thread_id()\n",
    "error('boom')\n")
  f:close()
  local TB = table.concat({ "stack traceback:", "\t[C]: in function 'error'",
    "\tlua/cute/kernel_trace.lua:148: in function 'trace'", "\tlua/cute/kernel.lua:244: in function 'compile'",
    "\t" .. file .. ":3: in function 'f'", "\t(tail call): ?", "\t" .. file .. ":9: in main chunk" }, "\n")

  local function lines(s)
    local t = {}
    for l in (s .. "\n"):gmatch("([^\n]*)\n") do t[#t + 1] = l end
    return t
  end

  it("shows the line with a caret under the call the message names, and its column", function()
    local msg = file .. ":2: logical_divide: tiler (3,5,7) has more modes than the layout (4,8):(1,4)"
    local out = lines(err.render(msg, nil, { full = false }))
    assert.equal(msg, out[1])
    assert.equal(" --> " .. file .. ":2:11", out[2])
    assert.equal("2 | local x = cute.logical_divide(L, { 3, 5, 7 })", out[4])
    -- the caret spans cute.logical_divide(...) exactly
    local caret = out[5]:sub(5)
    assert.equal(string.rep(" ", 10) .. string.rep("^", #"cute.logical_divide(L, { 3, 5, 7 })"), caret)
  end)

  it("explains a misspelt cute name, tabs shown as spaces", function()
    local out = err.render(file .. ":3: attempt to call field 'thread_id' (a nil value)", nil, { full = false })
    assert.matches("3 |   local t = cute.thread_id()", out, 1, true)
    assert.matches("= help: cute.thread_id does not exist (did you mean 'cute.thread_idx'?)", out, 1, true)
  end)

  it("underlines the whole statement when no name of the message is on the line", function()
    local out = lines(err.render(file .. ":4: boom", nil, { full = false }))
    assert.equal("4 | error('boom')", out[4])
    assert.equal("  | " .. string.rep("^", #"error('boom')"), out[5])
  end)

  it("leaves out cutelua's frames (saying how many), C functions and tail calls, unless full", function()
    local out = err.render(file .. ":4: boom", TB, { full = false })
    assert.matches("stack traceback (2 frames of cutelua left out; CUTELUA_TRACEBACK=full shows them):", out, 1, true)
    assert.matches(file .. ":3: in function 'f'", out, 1, true)
    assert.matches(file .. ":9: in main chunk", out, 1, true)
    assert.is_nil(out:find("lua/cute/", 1, true))
    assert.is_nil(out:find("[C]", 1, true))
    local all = err.render(file .. ":4: boom", TB, { full = true })
    assert.matches("lua/cute/kernel_trace.lua:148", all, 1, true)
    assert.equal(1, select(2, all:gsub("stack traceback", "")))
  end)

  it("gives the message as it is when it names no readable line", function()
    assert.equal("plain message", err.render("plain message"))
    assert.equal("nowhere.lua:3: gone", err.render("nowhere.lua:3: gone"))
    assert.equal(file .. ":99: past the end", err.render(file .. ":99: past the end"))
  end)
end)
