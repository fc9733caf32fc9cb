-- The compile cache seen from Lua and from several processes: hits from
-- memory and from disk, the key, corrupt entries rebuilt, the variables
-- that move it or turn it off, and processes filling one cache at once.
local compiler = require "cute.compiler"
local H = require "tests.spec.compiler.helper"

-- A child that compiles saxpy through the cache and prints what happened.
local CHILD = [[
  local compiler = require "cute.compiler"
  local warnings = {}
  compiler.set_warning_handler(function(w) warnings[#warnings + 1] = w end)
  local f = io.open("%s/tests/data/nvvm/saxpy.ll"):read("*a")
  local m = compiler.compile(f, { arch = "sm_80", keep = "" })
  print("origin=" .. m.origin)
  print("key=" .. m:cache_key())
  print("kernels=" .. table.concat(m:kernels(), ","))
  print("bytes=" .. #m:cubin())
  for _, w in ipairs(warnings) do print("warning=" .. w) end
]]

local function cwd() return (H.sh("pwd")):gsub("%s+$", "") end

local function field(out, name) return out:match(name .. "=([^\n]*)") end

describe("the compile cache", function()
  local dir
  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.rm(dir) end)

  it("serves a second compile from memory, and a new process from disk", function()
    local o = compiler.options { arch = "sm_80", cache_dir = dir, keep = "" }
    local before = compiler.cache_stats()
    local text = H.data("saxpy.ll") .. "; " .. dir -- unique to this test
    local m1 = compiler.compile(text, o)
    local m2 = compiler.compile(text, o)
    assert.equal("compiled", m1.origin)
    assert.equal("memory", m2.origin)
    assert.equal(m1:cubin(), m2:cubin())
    assert.equal(m1:ptx(), m2:ptx())
    assert.same(m1:resources(), m2:resources())
    local after = compiler.cache_stats()
    assert.equal(1, after.misses - before.misses)
    assert.equal(1, after.memory_hits - before.memory_hits)
    assert.equal(1, after.disk_writes - before.disk_writes)
    local key = m1:cache_key()
    assert.truthy(H.read(dir .. "/" .. key:sub(1, 2) .. "/" .. key .. ".entry"))

    local code = CHILD:format(cwd())
    local out, rc = H.run(code, { CUTELUA_CACHE_DIR = dir }, dir)
    assert.equal(0, rc, out)
    assert.equal("compiled", field(out, "origin"))
    out = H.run(code, { CUTELUA_CACHE_DIR = dir }, dir)
    assert.equal("disk", field(out, "origin"))
    assert.equal("saxpy", field(out, "kernels"))
  end)

  it("keys on the options", function()
    local text = H.data("saxpy.ll")
    local base = compiler.options { arch = "sm_80", cache = false }
    local k = compiler.cache_key(text, base)
    assert.are_not.equal(k, compiler.cache_key(text, base:with { arch = "sm_90a" }))
    assert.are_not.equal(k, compiler.cache_key(text, base:with { max_registers = 32 }))
    assert.are_not.equal(k, compiler.cache_key(text, base:with { lineinfo = true }))
    assert.are_not.equal(k, compiler.cache_key(text, base, "salt"))
    assert.are_not.equal(k, compiler.cache_key(text .. " ", base))
    assert.equal(k, compiler.cache_key(text, base:with { keep = "ptx", dump_dir = "/x", cache_dir = dir }))
  end)

  it("rebuilds a truncated or corrupted entry, with a warning", function()
    local code = CHILD:format(cwd())
    local env = { CUTELUA_CACHE_DIR = dir }
    local out = H.run(code, env, dir)
    local key = field(out, "key")
    local path = dir .. "/" .. key:sub(1, 2) .. "/" .. key .. ".entry"
    local good = H.read(path)
    assert.truthy(good)
    local damages = {
      truncated = good:sub(1, #good - 100),
      empty = "",
      header_only = good:sub(1, 120),
      flipped = good:sub(1, 500) .. string.char((good:byte(501) + 1) % 256) .. good:sub(502),
      bad_magic = "X" .. good:sub(2),
    }
    for what, bytes in pairs(damages) do
      H.write(path, bytes)
      out = H.run(code, env, dir)
      assert.equal("compiled", field(out, "origin"), what)
      assert.equal("saxpy", field(out, "kernels"), what)
      assert.matches("warning=cache entry .-%.entry was unusable %(.-%): removed, compiling again", out, nil, what)
      -- written again, whole (not byte for byte: the log has ptxas's timings)
      assert.equal("CLNVCACH", H.read(path):sub(1, 8), what)
      assert.is_true(math.abs(#H.read(path) - #good) < 16, what)
      out = H.run(code, env, dir)
      assert.equal("disk", field(out, "origin"), what)
    end
  end)

  it("refuses a FIFO, a link to /dev/zero or a directory in place of an entry, with a warning, and rebuilds it",
    function()
      -- a FIFO blocked the compile for ever, a link to /dev/zero was read until memory ran out:
      -- each child runs under `timeout`, so a regression fails here instead of hanging
      local code = CHILD:format(cwd())
      local out = H.run(code, { CUTELUA_CACHE_DIR = dir }, dir)
      local key = field(out, "key")
      local path = dir .. "/" .. key:sub(1, 2) .. "/" .. key .. ".entry"
      local script = dir .. "/hostile.lua"
      H.write(script, code)
      for _, c in ipairs {
        { "mkfifo " .. H.quote(path), "a FIFO" },
        { "ln -s /dev/zero " .. H.quote(path), "a character device" },
        { "mkdir " .. H.quote(path), "a directory" },
      } do
        H.sh("rm -rf " .. H.quote(path) .. " && " .. c[1])
        local o, rc = H.sh("timeout 60 env -u CUTELUA_CACHE CUTELUA_CACHE_DIR=" .. H.quote(dir) .. " "
          .. H.quote(H.cutelua()) .. " " .. H.quote(script))
        assert.equal(0, rc, c[2] .. " (124: it hung): " .. o)
        assert.equal("compiled", field(o, "origin"), c[2])
        assert.matches("warning=cache entry .-%.entry was unusable %(" .. c[2]
          .. ", not a regular file%): removed, compiling again", o, nil, c[2])
        assert.equal("disk", field(H.run(code, { CUTELUA_CACHE_DIR = dir }, dir), "origin"), c[2])
      end
    end)

  it("moves with CUTELUA_CACHE_DIR and turns off with CUTELUA_CACHE=0", function()
    local code = CHILD:format(cwd())
    local out = H.run(code, { CUTELUA_CACHE_DIR = dir .. "/moved", CUTELUA_CACHE = "0" }, dir)
    assert.equal("compiled", field(out, "origin"))
    out = H.run(code, { CUTELUA_CACHE_DIR = dir .. "/moved", CUTELUA_CACHE = "0" }, dir)
    assert.equal("compiled", field(out, "origin"))
    assert.equal("", (H.sh("ls -A " .. H.quote(dir .. "/moved") .. " 2>/dev/null")))
    H.run(code, { CUTELUA_CACHE_DIR = dir .. "/moved" }, dir)
    out = H.run(code, { CUTELUA_CACHE_DIR = dir .. "/moved" }, dir)
    assert.equal("disk", field(out, "origin"))
    -- the default place: $XDG_CACHE_HOME/cutelua
    H.run(code, { XDG_CACHE_HOME = dir .. "/xdg" }, dir)
    local key = field(out, "key")
    assert.truthy(H.read(dir .. "/xdg/cutelua/" .. key:sub(1, 2) .. "/" .. key .. ".entry"))
  end)

  it("survives several processes filling it at once", function()
    -- each process compiles the same three kernels, in a different order
    local code = ([[
      local compiler = require "cute.compiler"
      local n = tonumber(arg[1])
      local files = { "saxpy.ll", "mma.ll", "add_one.ptx" }
      for i = 1, 3 do
        local f = files[(i + n) %% 3 + 1]
        local text = io.open("%s/tests/data/nvvm/" .. f):read("*a")
        local m = compiler.compile(text, { arch = "sm_90a", keep = "" })
        assert(#m:kernels() == 1, "no kernel in " .. f)
        print(f .. " " .. m.origin .. " " .. m:cache_key() .. " " .. #m:cubin())
      end
    ]]):format(cwd())
    local outs, failed = H.run_many(6, code, { CUTELUA_CACHE_DIR = dir }, dir)
    assert.equal(0, failed, table.concat(outs, "\n"))
    local sizes = {}
    for _, out in ipairs(outs) do
      for f, origin, key, bytes in out:gmatch("(%S+) (%a+) (%x+) (%d+)\n") do
        assert.truthy(origin == "compiled" or origin == "disk")
        assert.is_nil(out:find("warning", 1, true))
        sizes[key] = sizes[key] or bytes
        assert.equal(sizes[key], bytes, f)
      end
    end
    -- three entries, whole, no temporaries left; a last process hits them all
    local listing = H.sh("cd " .. H.quote(dir) .. " && ls */")
    local entries = select(2, listing:gsub("%.entry", ""))
    assert.equal(3, entries, listing)
    assert.is_nil(listing:find(".tmp.", 1, true))
    local out = H.run(code:gsub("tonumber%(arg%[1%]%)", "0"), { CUTELUA_CACHE_DIR = dir }, dir)
    assert.equal(3, select(2, out:gsub(" disk ", "")), out)
  end)

  it("clears", function()
    local o = compiler.options { arch = "sm_80", cache_dir = dir, keep = "" }
    local text = H.data("add_one.ptx") .. "// " .. dir
    compiler.compile(text, o)
    compiler.cache_clear { options = o, disk = true }
    assert.equal(0, compiler.cache_stats().memory_entries)
    assert.equal("compiled", compiler.compile(text, o).origin)
    compiler.cache_clear { options = o } -- memory only
    assert.equal("disk", compiler.compile(text, o).origin)
  end)
end)
