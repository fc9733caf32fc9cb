-- How cutelua's Lua modules depend on each other (docs/architecture.md, "Lua
-- modules"): each requires only modules of its own layer or below, so there
-- is no cycle, even through the requires made at call time; none uses
-- another's private (_-prefixed) names; and each type's methods are defined
-- in its own module, so they are there however the module was loaded.

-- The layers, lowest first. A module may require the modules of its own
-- group and of the groups before it.
local LAYERS = {
  { "_err", "_c", "arith" },
  { "pre.lex" }, { "pre.parse" }, { "pre.print", "pre.rewrite" }, -- the preprocessor's syntax (cute.pre)
  { "int_tuple" }, { "swizzle" }, { "layout" }, { "layout_algebra" }, { "layout_tile" }, { "layout_print" },
  { "dtype" }, { "compiler", "ir" }, { "sim.num", "sim.memory", "sim.tma" }, { "runtime" },
  { "tensor", "cublas", "bench", "testing", "dlpack" }, { "npy" },
  { "sim.machine" }, { "sim.hopper" }, { "sim.compile" }, { "sim.exec" },
  { "trace.core" }, { "trace.ops" }, { "random" }, { "trace.control" },
  { "pre.rt" }, { "pre.source" }, -- the preprocessor's run-time helpers and its entry (cute.pre)
  { "trace.check" }, { "trace.sync" }, { "trace.tensor" },
  { "trace.partition" }, { "nvgpu.*" }, { "atom" }, { "trace.wgmma", "trace.tma", "trace.sync90" },
  { "trace.atom" }, { "pipeline" }, { "func" },
  { "kernel_args" }, { "kernel_trace" }, { "kernel_cache", "kernel_launch", "sim.launch" }, { "kernel" }, { "aot" },
  { "autotune" },
  { "lib.*" }, -- cute.lib: kernels written against the namespace, like a user's
  { "cute" }, -- the namespace (init.lua)
}

-- Requires that go up, each for a reason.
local UP = {
  -- cute.lib is written against the namespace, which names two of its functions
  -- (cute.gemm; cute.tensor's device fill) and loads them at call time
  ["lib.* -> cute"] = true,
}

-- Uses of another module's _-prefixed names allowed, as "module: other._name"
-- (none: what a module offers the others is its documented internal table).
local PRIVATE_OK = {}

local function modules()
  local list = {}
  for path in io.popen("cd lua/cute && find . -name '*.lua' | sort"):lines() do
    local name = path:gsub("^%./", ""):gsub("%.lua$", ""):gsub("/", ".")
    list[#list + 1] = { name = name == "init" and "cute" or name, file = "lua/cute/" .. path:gsub("^%./", "") }
  end
  return list
end

local function layer_of(name)
  for i, group in ipairs(LAYERS) do
    for _, m in ipairs(group) do
      if m == name or (m:sub(-2) == ".*" and name:sub(1, #m - 1) == m:sub(1, -2)) then return i, m end
    end
  end
end

-- The modules a file requires by name (at load or at call time): "cute.x" as x, "cute" as cute.
local function requires_of(file)
  local out = {}
  local src = io.open(file):read("*a"):gsub("%-%-[^\n]*", "") -- code, not comments
  for _, name in src:gmatch("require%s*%(?%s*([\"'])(cute[%w_.]*)%1") do
    if name:sub(-1) ~= "." then out[#out + 1] = name == "cute" and "cute" or name:sub(6) end -- not "cute." .. x
  end
  return out, src
end

describe("cutelua's Lua modules", function()
  it("require only modules of their layer or below, so none is part of a cycle", function()
    local bad, edges = {}, 0
    for _, m in ipairs(modules()) do
      local li, group = layer_of(m.name)
      assert.is_not_nil(li, m.file .. " is in no layer of tests/spec/modules_spec.lua")
      for _, r in ipairs(requires_of(m.file)) do
        if r ~= "_capi" and r ~= "capi" then
          edges = edges + 1
          local lr, rgroup = layer_of(r)
          assert.is_not_nil(lr, m.file .. " requires cute." .. r .. ", which is in no layer")
          if lr > li and not UP[group .. " -> " .. rgroup] then
            bad[#bad + 1] = string.format("%s requires %s, a layer above it", m.name, r)
          end
        end
      end
    end
    assert.is_true(edges > 100, edges .. " requires")
    assert.same({}, bad)
  end)

  it("use no other module's private names", function()
    local bad = {}
    for _, m in ipairs(modules()) do
      local src = io.open(m.file):read("*a"):gsub("%-%-[^\n]*", "")
      -- local aliases of modules: local X = require "cute.y"
      local alias = {}
      for a, name in src:gmatch("local%s+([%w_]+)%s*=%s*require%s*%(?%s*[\"']cute%.([%w_.]+)[\"']%)?%s*\n") do
        alias[a] = name
      end
      local function note(name, field)
        if name ~= m.name and field ~= "_" then
          local key = m.name .. ": " .. name:gsub("^.*%.", "") .. "." .. field
          if not PRIVATE_OK[key] then bad[#bad + 1] = m.file .. ": cute." .. name .. "." .. field end
        end
      end
      for a, field in src:gmatch("%f[%w_]([%a_][%w_]*)%.(_[%w_]*)") do
        if alias[a] then note(alias[a], field) end
      end
      for name, field in src:gmatch("require%s*%(%s*[\"']cute%.([%w_.]+)[\"']%s*%)%.(_[%w_]*)") do
        note(name, field)
      end
    end
    assert.same({}, bad)
  end)

  it("define their types' methods themselves: a layout has its algebra without cute.layout_algebra loaded",
    function()
      local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
      local code = [[
        local L = require "cute.layout"
        local l = L.make_layout({ 4, 8 })
        local c = L.make_composed_layout(require("cute.swizzle").Swizzle(1, 0, 1), 0, l)
        print(tostring(l:compose(2, 4)), tostring(l:with_shape({ 8, 4 })), tostring(l:complement(64)),
          tostring(L.make_layout(4, 2):right_inverse()), tostring(L.make_layout(4, 2):left_inverse()),
          tostring(l:slice({ 1, require("cute.int_tuple")._ })), tostring(c:compose(4)), tostring(c:with_shape(32)))
        for _, m in ipairs { "cute.layout_algebra", "cute.layout_tile", "cute" } do
          print(m, package.loaded[m] ~= nil)
        end
        local A = require "cute.atom"
        local mma = A.make_tiled_mma(A.make_mma_atom(A.nvgpu.warp.MmaF16BF16Op(require("cute.dtype").f16,
          require("cute.dtype").f32)))
        local copy = A.make_tiled_copy_tv(A.make_copy_atom(A.nvgpu.CopyUniversalOp(), require("cute.dtype").f16),
          L.make_layout(32), L.make_layout(1))
        print(type(mma.get_slice), type(mma.get_thr_slice), type(copy.get_slice), type(copy.get_thr_slice))
        print("cute.trace.atom", package.loaded["cute.trace.atom"] ~= nil)]]
      local p = io.popen(string.format("%s -e %q 2>&1", bin, code))
      local out = p:read("*a")
      p:close()
      assert.equal(table.concat({
        "(2,4):(1,4)\t(8,4):(1,8)\t2:32\t1:0\t(2,4):(4,1)\t(8):(4)\tS<1,0,1> o 0 o 4:1\tS<1,0,1> o 0 o 32:1",
        "cute.layout_algebra\tfalse", "cute.layout_tile\tfalse", "cute\tfalse",
        "function\tfunction\tfunction\tfunction", "cute.trace.atom\tfalse", "" }, "\n"), out)
    end)
end)
