-- cute.export and cute.aot.load: kernels exported as C (header, object,
-- shared library), their launch geometry computed in C from the run-time
-- sizes, metadata and checks; on the GPU, the exported kernels loaded back
-- into Lua give the same results as the Lua launches.
local cute = require "cute"
local aot = require "cute.aot"
local K = require "tests.aot.kernels"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d)
  return d
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

describe("cute.export", function()
  it("writes a documented header, the source and an object, with the geometry in C", function()
    local dir = tmpdir()
    local p = cute.export { name = "m1", prefix = "pfx", dir = dir, arch = { "sm_90a" }, kernels = K.entries() }
    local h = read(p.header)
    assert.matches("int pfx_vadd_f32%(pfx_module %*module, uint64_t a, int32_t a_shape_0, uint64_t b, int32_t "
      .. "b_shape_0, uint64_t c, int32_t c_shape_0, struct CUstream_st %*stream%);", h)
    assert.matches("int pfx_scale_rows%(pfx_module %*module, uint64_t x, int32_t x_shape_0, int32_t x_shape_1, "
      .. "int32_t x_stride_0, float s, struct CUstream_st %*stream%);", h)
    assert.matches("x_stride_0 %(a multiple of 16%)", h)
    assert.matches("c = a %+ b", h)
    -- the grid is the Lua function's arithmetic, in C
    local src = read(p.source)
    assert.matches("gx = %(%(%(int64_t%)c_shape_0 %+ %(int64_t%)255%) / %(int64_t%)256%)", src)
    assert.matches("gy = %(%(%(int64_t%)x_shape_1 %+ %(int64_t%)15%) / %(int64_t%)16%)", src)
    -- the kernel with dynamic shared memory sets its size at launch
    assert.matches("if %(smem < 1024%) smem = 1024;", src)
    assert.matches("ir%-sha256 %x+", src)
    assert.is_true(#read(p.object) > 1000)
    os.execute("rm -rf " .. dir)
  end)

  it("keeps static shapes out of the parameters and documents them", function()
    local dir = tmpdir()
    local p = cute.export { name = "m2", dir = dir, arch = { "sm_80" }, kernels = {
      { name = "vadd_static", kernel = K.vadd, args = { cute.static(cute.fake_tensor(cute.f32, 512)),
        cute.static(cute.fake_tensor(cute.f32, 512)), cute.static(cute.fake_tensor(cute.f32, 512)) },
        grid = 2, block = 256 },
    } }
    local h = read(p.header)
    assert.matches("int m2_vadd_static%(m2_module %*module, uint64_t a, uint64_t b, uint64_t c, struct CUstream_st", h)
    assert.matches("static layout 512:1", h)
    os.execute("rm -rf " .. dir)
  end)

  it("refuses what it cannot export, saying why", function()
    local function msg(spec)
      local ok, e = pcall(cute.export, spec)
      assert.is_false(ok)
      return e
    end
    assert.matches("name must be a C identifier", msg { name = "not ok", kernels = K.entries() })
    assert.matches("kernels = .* is missing", msg { name = "x", kernels = {} })
    assert.matches("kernels%[1%]%.kernel must be a cute.kernel", msg { name = "x", kernels = { { kernel = 3 } } })
    assert.matches("grid of vadd_f32 is missing", msg { name = "x", dir = tmpdir(), arch = { "sm_80" }, kernels = {
      { name = "vadd_f32", kernel = K.vadd, args = K.entries()[1].args, block = 256 } } })
    assert.matches("two kernels are called", msg { name = "x", arch = { "sm_80" },
      kernels = { K.entries()[1], K.entries()[1] } })
    assert.matches("unknown arch 'sm_9'", msg { name = "x", dir = tmpdir(), arch = { "sm_9" }, kernels = K.entries() })
  end)

  it("computes launch geometry symbolically", function()
    local n = aot._sym("n")
    assert.equal("((n + (int64_t)7) / (int64_t)8)", tostring(cute.ceil_div(n, 8)))
    assert.equal("((n * (int64_t)3) - (int64_t)1)", tostring(n * 3 - 1))
  end)
end)

describe("exported modules loaded back into Lua", function()
  it("give the results of the Lua launches #gpu", function()
    local dir = tmpdir()
    local info = cute.device_info()
    local arch = info.arch
    local p = cute.export { name = "m3", prefix = "m3", dir = dir, arch = { arch }, shared = true,
      kernels = K.entries() }
    local m = cute.aot.load(p.shared)
    assert.matches("prefix m3", m.metadata)
    local n = 100003
    local a = cute.tensor(cute.f32, n):uniform(-1, 1, 1)
    local b = cute.tensor(cute.f32, n):uniform(-1, 1, 2)
    local c1, c2 = cute.tensor(cute.f32, n):fill(0 / 0), cute.tensor(cute.f32, n):fill(0 / 0)
    m.vadd_f32(a, b, c1)
    K.vadd { grid = cute.ceil_div(n, 256), block = 256 }(a, b, c2)
    local x1 = cute.tensor(cute.f32, { 300, 70 }, "row"):uniform(-4, 4, 3)
    local x2 = cute.tensor(cute.f32, { 300, 70 }, "row"):copy_from(x1)
    m.scale_rows(x1, 2.5)
    K.scale { grid = { 19, 5 }, block = { 16, 16 } }(x2, cute.f32(2.5))
    local y1, y2 = cute.tensor(cute.f32, n):fill(0), cute.tensor(cute.f32, n):fill(0)
    m.reverse256(a, y1)
    K.reverse { grid = cute.ceil_div(n, 256), block = 256 }(a, y2)
    cute.synchronize()
    for _, pair in ipairs { { c1, c2 }, { x1, x2 }, { y1, y2 } } do
      local u, v = pair[1]:to_host():doubles(), pair[2]:to_host():doubles()
      for i = 0, pair[1]:size() - 1 do
        if u[i] ~= v[i] then error(string.format("element %d: exported %.9g, Lua %.9g", i, u[i], v[i])) end
      end
    end
    -- a module without a cubin for this device is refused, naming both sides
    local other = info.compute_capability[1] == 8 and "sm_90a" or "sm_80"
    local q = cute.export { name = "m4", prefix = "m4", dir = dir, arch = { other }, shared = true,
      kernels = { K.entries()[1] } }
    local ok, e = pcall(cute.aot.load, q.shared)
    assert.is_false(ok)
    assert.matches("m4: no cubin of kernel vadd_f32 for this GPU: the module has " .. other .. "; the device is sm_"
      .. info.compute_capability[1] .. info.compute_capability[2], e)
    -- the flat C parameters work too
    c1:fill(0 / 0)
    m.vadd_f32(a, n, b, n, c1, n)
    local u, v = c1:to_host():doubles(), c2:to_host():doubles()
    for i = 0, n - 1 do assert(u[i] == v[i], i) end
    os.execute("rm -rf " .. dir)
  end)

  it("stay loaded until the process ends, and are left alone after a device reset #gpu", function()
    local dir = tmpdir()
    local p = cute.export { name = "m5", prefix = "m5", dir = dir, arch = { cute.device_info().arch }, shared = true,
      kernels = { K.entries()[1] } }
    -- each in its own process: the module's finalizer runs at exit (it once ran
    -- after the library was unloaded, and crashed), or after a reset
    for i, tail in ipairs { "", "cute.reset_device()\ncollectgarbage()\n" } do
      local script = dir .. "/exit" .. i .. ".lua"
      local f = assert(io.open(script, "w"))
      f:write(string.format([[
local cute = require "cute"
local m = cute.aot.load(%q)
local a = cute.tensor(cute.f32, 1000):fill(1)
local c = cute.tensor(cute.f32, 1000):fill(0)
m.vadd_f32(a, a, c)
assert(c:to_table()[1000] == 2)
%sprint("done")
]], p.shared, tail))
      f:close()
      local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
      local h = io.popen(bin .. " " .. script .. " 2>&1; echo \"rc=$?\"")
      local out = h:read("*a")
      h:close()
      assert.matches("done\nrc=0\n$", out)
    end
    os.execute("rm -rf " .. dir)
  end)
end)
