-- The cute namespace: one export table in lua/cute/init.lua decides where each
-- cute.<name> comes from, and names several modules have are decided there.
local cute = require "cute"

local exports = getmetatable(cute).exports

local function run(code) -- output and exit status of `cutelua -e code`
  local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
  local p = io.popen(string.format("%s -e %q 2>&1; echo \"rc=$?\"", bin, code))
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return out:gsub("rc=%d+%s*$", ""), rc
end

describe("the cute namespace", function()
  it("gives every name of the export table from its module, which has it", function()
    local n = 0
    for name, mod in pairs(exports.where) do
      local m = require("cute." .. mod)
      assert.is_not_nil(m[name], "cute." .. mod .. " has no " .. name)
      assert.equal(m[name], cute[name], "cute." .. name)
      n = n + 1
    end
    assert.is_true(n > 240, n .. " names")
    for _, sub in ipairs(exports.submodules) do assert.equal(require("cute." .. sub), cute[sub]) end
    assert.is_nil(cute.no_such_name)
  end)

  it("decides every name several modules list, as the table says", function()
    local listed = {}
    for _, entry in ipairs(exports.modules) do
      for _, name in ipairs(entry[2]) do listed[name] = (listed[name] or 0) + 1 end
    end
    local shared = 0
    for name, count in pairs(listed) do
      if count > 1 then
        shared = shared + 1
        assert.equal(exports.wins[name], exports.where[name], name)
      end
    end
    assert.equal(26, shared) -- the 24 of the review, copy and gemm
    -- the version that takes the most kinds of argument: tensors, layouts, tuples
    local l = cute.make_layout({ 4, 6 }, { 6, 1 })
    assert.equal(24, cute.size(l))
    assert.equal(6, cute.size({ 2, 3 }))
    assert.equal(cute.size, require("cute.trace.tensor").size)
    assert.equal("(2,3)", cute.pretty_str(cute.flatten({ { 2 }, 3 })))
    assert.equal("(4,6):(6,1)", tostring(cute.flatten(cute.make_layout({ { 4 }, 6 }, { { 6 }, 1 }))))
    assert.equal(cute.copy, require("cute.trace.atom").copy)
    assert.equal(cute.gemm, require("cute.lib.gemm").gemm)
  end)

  it("has every dtype under its name", function()
    local dts = require("cute.dtype").all()
    assert.is_true(#dts >= 16)
    for _, dt in ipairs(dts) do assert.equal(dt, cute[dt.name], dt.name) end
  end)

  it("hands a call of a shared name down to the version for its arguments", function()
    -- cute.gemm: device tensors on the host (cute.lib.gemm); a tiled MMA in a kernel (cute.trace.atom)
    local ok, e = pcall(require("cute.trace.atom").gemm, cute.make_layout(4))
    assert.is_false(ok)
    assert.matches("namespace_spec.lua:%d+: cute.gemm: inside a kernel it takes a tiled MMA or an MMA atom", e)
    ok, e = pcall(cute.gemm, cute.make_layout(4), cute.make_layout(4))
    assert.is_false(ok)
    assert.matches("namespace_spec.lua:%d+: cute.gemm: A must be a device tensor", e)
    -- cute.copy: with a copy atom (cute.trace.atom), else tensors (cute.trace.tensor)
    ok, e = pcall(cute.copy, 1, 2)
    assert.is_false(ok)
    assert.matches("namespace_spec.lua:%d+: copy%(src, dst%): tensors expected", e)
  end)

  it("plugs cute.lib.fill into cute.tensor, whichever is loaded first", function()
    local fill = [[print(type(require("cute.tensor").set_device_fill(nil)))]]
    assert.equal("function\n", (run([[require "cute"; ]] .. fill)))
    assert.equal("function\n", (run([[require "cute.tensor"; require "cute"; ]] .. fill)))
    assert.equal("nil\n", (run(fill))) -- cute.tensor alone fills on the host
  end)

  it("refuses an export table with an undecided or wrongly decided name", function()
    local function problems(mods, wins, subs, own) -- the messages, one a line
      local _, list = exports.resolve(mods, wins, subs or {}, own)
      return list and table.concat(list, "\n")
    end
    local mods = { { "a", { "size", "only_a" } }, { "b", { "size" } } }
    assert.is_nil(exports.resolve(mods, {}, {}))
    assert.equal("cute.size is listed under a and b: say in WINS which one it is", problems(mods, {}))
    assert.same({ size = "b", only_a = "a" }, (exports.resolve(mods, { size = "b" }, {})))
    assert.equal("cute.size is listed under a and b: say in WINS which one it is (WINS names c, which does not "
      .. "list it)", problems(mods, { size = "c" }))
    assert.equal("WINS gives cute.only_a to a, but only a lists it", problems(mods, { size = "a", only_a = "a" }))
    assert.equal("WINS gives cute.gone to b, but no module lists it", problems(mods, { size = "a", gone = "b" }))
    assert.equal("cute.only_a is both a submodule and a name of a", problems(mods, { size = "a" }, { "only_a" }))
    assert.equal("cute.only_a is defined by init.lua and listed under a",
      problems(mods, { size = "a" }, {}, { only_a = true }))
    -- the real table is consistent
    assert.is_nil(problems(exports.modules, exports.wins, exports.submodules, exports.own))
  end)

  it("does not depend on the order names are first used in", function()
    -- cute.func was the module or the function, whichever was used first
    local out, rc = run([[local cute = require "cute"; local f = cute.func; print(type(f), f == cute.func)]])
    assert.equal(0, rc, out)
    assert.equal("function\ttrue\n", out)
    out, rc = run([[local cute = require "cute"; local _ = cute.make_layout; print(type(cute.func))]])
    assert.equal(0, rc, out)
    assert.equal("function\n", out)
  end)

  -- (cute._c, the C core's API tables, is read for the math functions' names)
  it("lists every name for completion without loading a module", function()
    local out, rc = run([[local cute = require "cute"
      local names = getmetatable(cute).__complete()
      local loaded = 0
      for k in pairs(package.loaded) do
        if k:find("^cute%.") and k ~= "cute._capi" and k ~= "cute._c" then loaded = loaded + 1 end
      end
      print(#names, loaded)]])
    assert.equal(0, rc, out)
    local n, loaded = out:match("^(%d+)%s+(%d+)")
    assert.is_true(tonumber(n) > 260, out)
    assert.equal("0", loaded)
  end)

  it("resolves every cute.<name> the documentation mentions", function()
    local function resolves(path)
      local parts = {}
      for p in path:gmatch("[^.]+") do parts[#parts + 1] = p end
      local v, prefix, i = cute, "cute", 1
      while i <= #parts do
        -- (a table that raises for names it lacks, as cute.nvgpu does, is read as nil)
        local okv, nv = pcall(function() return type(v) == "table" and v[parts[i]] or nil end)
        if not okv then nv = nil end
        local j = i
        -- a module that is not a field (cute.lib.gemm: cute.lib is a folder)
        while nv == nil and j <= #parts do
          local ok, m = pcall(require, prefix .. "." .. table.concat(parts, ".", i, j))
          if ok then nv = m else j = j + 1 end
        end
        if nv == nil then -- a folder of modules (cute.lib)
          local dir = ("lua/" .. prefix .. "." .. table.concat(parts, ".", i)):gsub("%.", "/")
          return os.rename(dir, dir) == true
        end
        prefix = prefix .. "." .. table.concat(parts, ".", i, math.max(i, j))
        i = math.max(i, j) + 1
        v = nv
        if type(v) ~= "table" then return true end -- a function's result's fields are not checked
      end
      return true
    end
    local bad, seen = {}, 0
    local files = { "README.md" }
    -- (docs/errors.md misspells names on purpose; errors_doc_spec runs it)
    for f in io.popen("ls docs/*.md"):lines() do
      if f ~= "docs/errors.md" then files[#files + 1] = f end
    end
    for _, f in ipairs(files) do
      local n = 0
      for line in io.lines(f) do
        n = n + 1
        for path, after in line:gmatch("%f[%w_./]cute%.([%a_][%w_%.]*)(.?)") do -- (not paths: lib/lua/5.1/cute.so)
          path = path:gsub("%.+$", "")
          if after ~= "<" then -- cute.lay<Tab>
            seen = seen + 1
            if not resolves(path) then bad[#bad + 1] = string.format("%s:%d: cute.%s", f, n, path) end
          end
        end
      end
    end
    assert.is_true(seen > 300, seen .. " names")
    assert.same({}, bad)
  end)
end)
