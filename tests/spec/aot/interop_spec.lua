-- cute.export of kernels taking TMA atoms (the wrapper encodes each
-- descriptor from the tensor's pointer, extents and strides) and prepared TMA
-- descriptors: the header's signatures, the encoding in the source, a C
-- program compiled with strict flags and linked against the object; with a
-- GPU of sm_90, the program and the module loaded back into Lua run the kernel.
local cute = require "cute"
local H = require "tests.spec.compiler.helper"
local K = require "tests.aot.kernels"
local aot = require "cute.aot"

local CC = os.getenv("CC") or "cc"
local STRICT = "-std=c99 -Wall -Wextra -pedantic -Werror"

local function cuda_home()
  for _, d in ipairs { os.getenv("CUDA_HOME") or "", "/usr/local/cuda" } do
    if d ~= "" and H.read(d .. "/include/cuda.h") then return d end
  end
  error("no CUDA headers")
end

local function sh_ok(cmd)
  local out, rc = H.sh(cmd)
  assert(rc == 0, cmd .. "\n" .. out)
  return out
end

local function hopper()
  local ok, info = pcall(cute.device_info)
  return ok and info.compute_capability[1] >= 9
end

-- Runs <prefix>_check (the embedded checksum over metadata, descriptor tables
-- and cubins) in a C program linked with the object; with no GPU, against the
-- toolkit's stub driver (the check calls nothing in it).
local function run_check(dir, object, prefix)
  local home = cuda_home()
  H.write(dir .. "/check_" .. prefix .. ".c", string.format([[
#include <stdio.h>
#include "%s.h"
int main(void) {
  char err[512];
  const cutelua_aot_module *d = %s_describe();
  if (%s_check(err, sizeof err) != 0) { printf("%%s\n", err); return 1; }
  printf("checks ok: %%d entries\n", d->nkernels);
  return 0;
}
]], prefix, prefix, prefix))
  sh_ok(string.format("%s %s -I%s -c %s/check_%s.c -o %s/check_%s.o && %s %s/check_%s.o %s -o %s/check_%s -L%s/lib64 "
    .. "-L%s/lib64/stubs -lcuda", CC, STRICT, H.quote(dir), H.quote(dir), prefix, H.quote(dir), prefix, CC,
    H.quote(dir), prefix, H.quote(object), H.quote(dir), prefix, H.quote(home), H.quote(home)))
  local libdir = dir .. "/stub"
  if not pcall(cute.device_info) then
    sh_ok(string.format("mkdir -p %s && ln -sf %s/lib64/stubs/libcuda.so %s/libcuda.so.1", H.quote(libdir),
      H.quote(home), H.quote(libdir)))
  end
  return sh_ok(string.format("LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} %s/check_%s", H.quote(libdir),
    H.quote(dir), prefix))
end

describe("cute.export of kernels taking TMA descriptors", function()
  it("takes a TMA atom's tensor (pointer, extents, strides) and encodes the descriptor in the wrapper", function()
    local dir = H.tmpdir()
    local p = cute.export { name = "tt", prefix = "tt", dir = dir, arch = { "sm_90a" }, kernels = { K.tma_entry() } }
    local h = H.read(p.header)
    assert.matches("int tt_tma_tile%(tt_module %*module, uint64_t load, int64_t load_shape_0, int64_t load_shape_1, "
      .. "int64_t load_stride_1, uint64_t store, int64_t store_shape_0, int64_t store_shape_1, int64_t store_stride_1, "
      .. "struct CUstream_st %*stream%);", h)
    assert.matches("load: the global tensor of a TMA atom %(CopyBulkTensorTileG2SOp of f32, box 32x16", h)
    local src = H.read(p.source)
    -- the atom's static facts baked in (f32 is CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7), the tensor's from the arguments
    assert.matches("const cuuint32_t box%[2%] = {32, 16}, es%[2%] = {1, 1};", src)
    assert.matches("r = cuTensorMapEncodeTiled%(&load_desc, %(CUtensorMapDataType%)7, 2, %(void %*%)%(uintptr_t%)load,",
      src)
    assert.matches("strides%[0%] = %(cuuint64_t%)store_stride_1 %* 4;", src)
    assert.matches("void %*args%[2%] = {%(void %*%)&load_desc, %(void %*%)&store_desc};", src)
    -- the grid from the run-time extents of the load atom's tensor
    assert.matches("gx = %(%(%(int64_t%)load_shape_0 %+ %(int64_t%)31%) / %(int64_t%)32%)", src)
    -- a C program against the header and the object: strict C99, linked with the driver (its stub here)
    local home = cuda_home()
    sh_ok(string.format(
      "cp tests/aot/tma_main.c %s/ && %s %s -I%s -isystem %s/include -c %s/tma_main.c -o %s/tma_main.o",
      H.quote(dir), CC, STRICT, H.quote(dir), H.quote(home), H.quote(dir), H.quote(dir)))
    sh_ok(string.format("%s %s/tma_main.o %s -o %s/tma_main -L%s/lib64 -L%s/lib64/stubs -lcuda", CC, H.quote(dir),
      H.quote(p.object), H.quote(dir), H.quote(home), H.quote(home)))
    local syms = sh_ok("nm " .. H.quote(p.object))
    for _, want in ipairs { "T tt_tma_tile", "T tt_load", "T tt_unload", "T tt_describe", "U cuTensorMapEncodeTiled",
      "U cuLaunchKernel" } do
      assert.matches(want, syms, 1, true)
    end
    -- and the header as C++
    H.write(dir .. "/use.cc", '#include "tt.h"\nint main() { return tt_describe() == nullptr; }\n')
    sh_ok(string.format("c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I%s -c %s/use.cc -o %s/use_cc.o",
      H.quote(dir), H.quote(dir), H.quote(dir)))
    assert.matches("checks ok: 1 entries", run_check(dir, p.object, "tt"))
    if hopper() then
      local out = sh_ok(H.quote(dir .. "/tma_main"))
      assert.matches("tma_main: B = 2 A for 100 x 70: ok", out)
    end
    H.rm(dir)
  end)

  it("takes a prepared descriptor (a CUtensorMap) by pointer", function()
    local k = cute.kernel("takes_desc", function(d, out)
      local _ = d
      cute.if_(cute.thread_idx().x:eq(0), function() out[0] = 1 end)
    end)
    local dir = H.tmpdir()
    local p = cute.export { name = "td", dir = dir, arch = { "sm_90a" }, kernels = {
      { name = "takes_desc", kernel = k, args = { require("ffi").new("CuteTmaDesc"), cute.fake_tensor(cute.i32, 4) },
        grid = 1, block = 32 } } }
    local h = H.read(p.header)
    assert.matches("int td_takes_desc%(td_module %*module, const void %*d, uint64_t out, int32_t out_shape_0, "
      .. "struct CUstream_st %*stream%);", h)
    assert.matches("d: a pointer to a prepared TMA descriptor %(a CUtensorMap, 128 bytes, 64%-byte aligned%)", h)
    local src = H.read(p.source)
    assert.matches("void *args[3] = {(void *)d, (void *)&out, (void *)&out_shape_0};", src, 1, true)
    assert.matches('{"d", "const void *", 8, 5, 0, 0}', src, 1, true)
    assert.matches("*(const void *const *)args[0]", src, 1, true)
    -- the generated source itself compiles with warnings as errors
    sh_ok(string.format("%s %s -I%s -isystem %s/include -c %s -o %s/strict.o", CC, STRICT, H.quote(dir),
      H.quote(cuda_home()), H.quote(p.source), H.quote(dir)))
    H.rm(dir)
  end)

  it("loaded back into Lua, takes the atoms of device tensors and runs B = 2 A #gpu", function()
    if not hopper() then return pending("needs sm_90 or later") end
    local dir = H.tmpdir()
    local p = cute.export { name = "tl", prefix = "tl", dir = dir, arch = { cute.device_info().arch }, shared = true,
      kernels = { K.tma_entry() } }
    local m = cute.aot.load(p.shared)
    local W, Hh = 76, 45 -- other extents than the export's (the store writes whole 16-byte chunks: W a multiple of 4)
    local A = cute.tensor(cute.f32, { W, Hh }, { 1, 80 }):uniform(-10, 10, math.random(1, 2 ^ 30))
    local B = cute.tensor(cute.f32, { W, Hh }, { 1, 80 }):fill(0 / 0)
    m.tma_tile(K.tma_atoms(A, B))
    cute.synchronize()
    local a, b = A:to_table(), B:to_table()
    for i = 1, #a do assert(b[i] == 2 * a[i], i) end
    H.rm(dir)
  end)
end)

describe("cute.export of cute.gemm's Hopper kernel (one configuration)", function()
  local G = require "cute.lib.gemm"
  local OPTS = { arch = "sm_90a", kernel = "sm90", config = { bn = 128, stages = 4 } }
  local function entry(p)
    return { name = "gemm_bf16", kernel = p.kernel, args = p.args, block = p.block, doc = "C = A B (bf16, K-major)",
      grid = function(_, _, C) return cute.ceil_div(C.shape[1], 128) * cute.ceil_div(C.shape[2], 128) * C.shape[3] end }
  end

  it("takes the TMA descriptors cute.gemm prepares, with its shared memory and the grid in C", function()
    local A, B = cute.fake_tensor(cute.bf16, { 512, 256 }, "row"), cute.fake_tensor(cute.bf16, { 256, 384 }, "col")
    local p = G.plan(A, B, nil, OPTS)
    local dir = H.tmpdir()
    local x = cute.export { name = "hg", prefix = "hg", dir = dir, arch = { "sm_90a" }, kernels = { entry(p) } }
    local h = H.read(x.header)
    assert.matches("int hg_gemm_bf16%(hg_module %*module, const void %*descA, const void %*descB, uint64_t C, ", h)
    assert.matches("int32_t K, float alpha, float beta, struct CUstream_st %*stream%);", h)
    assert.matches("block %(%(int64_t%)384, %(int64_t%)1, %(int64_t%)1%), 131072 bytes of dynamic shared memory", h)
    local src = H.read(x.source)
    assert.matches("static const unsigned hg_dyn_smem[hg_NKERNELS] = {131072};", src, 1, true)
    assert.matches("checks ok: 1 entries", run_check(dir, x.object, "hg"))
    H.rm(dir)
  end)

  it("loaded back, computes cute.gemm's product from the descriptors of real tensors #gpu", function()
    if not hopper() then return pending("needs sm_90") end
    local m, n, k = 300, 272, 192
    local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, math.random(1, 2 ^ 30))
    local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, math.random(1, 2 ^ 30))
    local C = cute.tensor(cute.f32, { m, n }, "row"):fill(0 / 0)
    local p = G.plan(A, B, C, OPTS)
    local dir = H.tmpdir()
    local x = cute.export { name = "hl", prefix = "hl", dir = dir, arch = { "sm_90a" }, shared = true,
      kernels = { entry(p) } }
    local mod = cute.aot.load(x.shared)
    mod.gemm_bf16(unpack(p.args))
    cute.synchronize()
    assert.equal(m * n, cute.testing.check_gemm(A, B, C).checked)
    H.rm(dir)
  end)
end)

describe("cute.export of a host function that makes several launches", function()
  it("launches its kernels in order from one C entry point, with the geometry from its arguments", function()
    local dir = H.tmpdir()
    local p = cute.export { name = "pp", prefix = "pp", dir = dir, arch = { "sm_80", "sm_90a" },
      kernels = { K.entries()[1], K.pipeline_entry() } }
    local h = H.read(p.header)
    assert.matches("int pp_scale_add%(pp_module %*module, uint64_t x, int32_t x_shape_0, uint64_t y, int32_t "
      .. "y_shape_0, uint64_t z, int32_t z_shape_0, float s, struct CUstream_st %*stream%);", h)
    assert.matches("1%. kernel scale1d: grid %(%(%(%(int64_t%)x_shape_0 %+ %(int64_t%)127%) / %(int64_t%)128%)", h)
    assert.matches("2%. kernel vadd: grid %(%(%(%(int64_t%)z_shape_0 %+ %(int64_t%)255%) / %(int64_t%)256%)", h)
    assert.is_nil(h:find("scale_add_step", 1, true)) -- the launches have no wrappers of their own
    local src = H.read(p.source)
    -- scale1d is the module's kernel 1 and vadd (again, as the pipeline's second launch) kernel 2, in this order
    local first = src:find("cuLaunchKernel(m->fn[1]", 1, true)
    local second = src:find("cuLaunchKernel(m->fn[2]", 1, true)
    assert.is_truthy(first and second and first < second)
    assert.matches("float a3 = (float)(s);", src, 1, true)
    assert.matches("args scale_add 4", src, 1, true)
    assert.matches("kernel scale_add_step2 ir%-sha256 %x+", src)
    -- two entries in the descriptor (vadd_f32, scale_add), three kernels in the module; the checksum holds
    assert.matches("checks ok: 2 entries", run_check(dir, p.object, "pp"))
    sh_ok(string.format("%s %s -I%s -isystem %s/include -c %s -o %s/strict.o", CC, STRICT, H.quote(dir),
      H.quote(cuda_home()), H.quote(p.source), H.quote(dir)))
    H.rm(dir)
  end)

  it("refuses launches it cannot express in C, saying why", function()
    local function msg(host)
      local ok, e = pcall(cute.export, { name = "bad", dir = H.tmpdir(), arch = { "sm_80" }, kernels = { {
        name = "bad", args = { cute.fake_tensor(cute.f32, 64), cute.f32(1) }, host = host } } })
      assert.is_false(ok)
      return e
    end
    assert.matches("host function bad launches nothing", msg(function() end))
    assert.matches("launch 1: argument 1 is a tensor that is not one of the host function's arguments", msg(
      function(launch, _, s) launch(K.scale1d, { grid = 1, block = 64 }, cute.fake_tensor(cute.f32, 8), s) end))
    assert.matches("launch 1: expected a cute.kernel", msg(function(launch) launch(42, {}) end))
    assert.matches("launch 1: grid is missing", msg(function(launch, x, s) launch(K.scale1d, { block = 64 }, x, s) end))
  end)

  it("loaded back into Lua, gives the two launches' result #gpu", function()
    local dir = H.tmpdir()
    local p = cute.export { name = "pl", prefix = "pl", dir = dir, arch = { cute.device_info().arch }, shared = true,
      kernels = { K.pipeline_entry() } }
    local m = cute.aot.load(p.shared)
    local n = 70001
    local x = cute.tensor(cute.f32, n):uniform(-1, 1, math.random(1, 2 ^ 30))
    local y = cute.tensor(cute.f32, n):uniform(-1, 1, math.random(1, 2 ^ 30))
    local z = cute.tensor(cute.f32, n):fill(0 / 0)
    local x0, y0 = x:to_host():doubles(), y:to_host():doubles()
    m.scale_add(x, y, z, cute.f32(2))
    cute.synchronize()
    local xs, zs = x:to_host():doubles(), z:to_host():doubles()
    for i = 0, n - 1 do
      local sx = 2 * x0[i] -- exact in f32
      assert(xs[i] == sx, i)
      assert(math.abs(zs[i] - (sx + y0[i])) <= 2 ^ -22 * math.max(1, math.abs(sx + y0[i])), i)
    end
    H.rm(dir)
  end)
end)

describe("cute.aot.load of an object file (.o)", function()
  local function export(dir, arch, shared)
    return cute.export { name = "ob", prefix = "ob", dir = dir, arch = arch, shared = shared,
      kernels = { K.entries()[1], K.pipeline_entry() } }
  end

  it("reads the cubins and entries without running the object's code", function()
    local dir = H.tmpdir()
    local p = export(dir, { "sm_80", "sm_90a" })
    local o = cute.aot.read_object(p.object)
    assert.equal("ob", o.prefix)
    assert.equal(3, #o.kernels) -- vadd_f32, and the pipeline's two launches
    assert.same({ "vadd", "scale1d", "vadd" }, { o.kernels[1].fn, o.kernels[2].fn, o.kernels[3].fn })
    -- the cubins are the kernels' own, byte for byte
    local e = K.entries()[1]
    for _, im in ipairs(o.kernels[1].images) do
      assert.equal(K.vadd:with { arch = im.arch }:compile(unpack(e.args)):cubin(), im.cubin)
    end
    assert.same({ "sm_80", "sm_90a" }, { o.kernels[2].images[1].arch, o.kernels[2].images[2].arch })
    assert.is_true(o.kernels[2].images[2].exact)
    -- the entries: parameters as the descriptor has them, the launches in order
    local sa = o.entries.scale_add
    assert.equal(4, sa.nargs)
    assert.equal(7, #sa.params)
    assert.same({ "x", 0, "uint64_t" }, { sa.params[1].name, sa.params[1].kind, sa.params[1].ctype })
    assert.same({ "s", 3, "float" }, { sa.params[7].name, sa.params[7].kind, sa.params[7].ctype })
    assert.same({ 2, 3 }, { sa.launches[1].kernel, sa.launches[2].kernel })
    -- the geometry, computed in Lua as the C wrapper computes it
    for _, n in ipairs { 1, 127, 128, 129, 100003 } do
      local g = { aot._geometry_fn(sa.launches[1].geometry, "x")({ x_shape_0 = n }) }
      assert.same({ math.ceil(n / 128), 1, 1, 128, 1, 1, 0 }, g)
      g = { aot._geometry_fn(o.entries.vadd_f32.launches[1].geometry, "x")({ c_shape_0 = n }) }
      assert.same({ math.ceil(n / 256), 1, 1, 256, 1, 1, 0 }, g)
    end
    H.rm(dir)
  end)

  it("keeps a host function's literal arguments as numbers, and its launches' clusters", function()
    local dir = H.tmpdir()
    local p = cute.export { name = "lit", dir = dir, arch = { "sm_80" }, kernels = { {
      name = "half", args = { cute.fake_tensor(cute.f32, 256) },
      host = function(launch, x) launch(K.scale1d, { grid = cute.ceil_div(cute.size(x), 64), block = 64 }, x,
        cute.f32(0.5)) end } } }
    local o = cute.aot.read_object(p.object)
    local l = o.entries.half.launches[1]
    assert.same({ "x", "x_shape_0", "0.5" }, { l.args[1].lua, l.args[2].lua, l.args[3].lua })
    assert.same({ "uint64_t", "int32_t", "float" }, { l.args[1].ctype, l.args[2].ctype, l.args[3].ctype })
    assert.same({ 1, 1, 1 }, l.cluster)
    assert.matches("float a3 = (float)(0.5);", H.read(p.source), 1, true)
    H.rm(dir)
  end)

  it("computes C's truncating division and remainder", function()
    local f = aot._geometry_fn("cdiv(a, 2);cmod(a, 3);cdiv((-a), 2);cmod((-a), 3);min(a, 4);max(a, 4);(a * 2)", "x")
    assert.same({ 3, 1, -3, -1, 4, 7, 14 }, { f({ a = 7 }) })
    assert.has_error(function() aot._geometry_fn("os.exit(1);1;1;1;1;1;1", "x") end)
  end)

  it("refuses altered, truncated and foreign files, naming what is wrong", function()
    local dir = H.tmpdir()
    local p = export(dir, { "sm_80" }, true)
    local data = H.read(p.object)
    local function with(name, bytes)
      H.write(dir .. "/" .. name, bytes)
      local ok, e = pcall(cute.aot.read_object, dir .. "/" .. name)
      assert.is_false(ok)
      return e
    end
    local function flip(at) return data:sub(1, at - 1) .. string.char((data:byte(at) + 1) % 256) .. data:sub(at + 1) end
    local cubin = K.scale1d:with { arch = "sm_80" }:compile(cute.fake_tensor(cute.f32, 1000), cute.f32(2)):cubin()
    local at = data:find(cubin, 1, true)
    assert.is_truthy(at)
    assert.matches("the sm_80 cubin of kernel scale_add_step1 was altered", with("c.o", flip(at + 100)))
    local m = data:find("cutelua-aot 2", 1, true)
    assert.matches("the embedded metadata was altered", with("m.o", flip(m + 3)))
    assert.matches("not an ELF file", with("t.o", "hello"))
    assert.matches("ELF type 3, not a relocatable object", with("s.o", H.read(p.shared)))
    assert.matches("truncated", with("cut.o", data:sub(1, #data - 200)))
    -- cute.aot.load knows an object by its ELF type, whatever its name
    H.write(dir .. "/cut.bin", data:sub(1, #data - 200))
    local loaded, e = pcall(cute.aot.load, dir .. "/cut.bin")
    assert.is_false(loaded)
    assert.matches("is not an object file exported by cutelua: .*truncated", e)
    for i = 1, 20 do -- cut anywhere: an error, never a crash
      local cut = math.random(1, #data - 1)
      local ok = pcall(cute.aot.read_object, (function()
        H.write(dir .. "/r" .. i .. ".o", data:sub(1, cut))
        return dir .. "/r" .. i .. ".o"
      end)())
      assert.is_false(ok)
    end
    H.rm(dir)
  end)

  it("loads both the .o and the .so and gives the same results as the Lua launches #gpu", function()
    local dir = H.tmpdir()
    local p = export(dir, { cute.device_info().arch }, true)
    local n = 50001
    local x0 = cute.tensor(cute.f32, n):uniform(-1, 1, math.random(1, 2 ^ 30))
    local y = cute.tensor(cute.f32, n):uniform(-1, 1, math.random(1, 2 ^ 30))
    local results = {}
    for _, path in ipairs { p.object, p.shared } do
      local m = cute.aot.load(path)
      local c = cute.tensor(cute.f32, n):fill(0 / 0)
      m.vadd_f32(x0, y, c)
      local x = cute.tensor(cute.f32, n):copy_from(x0)
      local z = cute.tensor(cute.f32, n):fill(0 / 0)
      m.scale_add(x, y, z, cute.f32(2))
      cute.synchronize()
      results[#results + 1] = { c:to_host():doubles(), z:to_host():doubles() }
    end
    local c2 = cute.tensor(cute.f32, n):fill(0 / 0)
    K.vadd { grid = cute.ceil_div(n, 256), block = 256 }(x0, y, c2)
    local want, xs, ys = c2:to_host():doubles(), x0:to_host():doubles(), y:to_host():doubles()
    for i = 0, n - 1 do
      for _, r in ipairs(results) do
        assert(r[1][i] == want[i], i)
        assert(math.abs(r[2][i] - (2 * xs[i] + ys[i])) <= 2 ^ -22 * math.max(1, math.abs(2 * xs[i] + ys[i])), i)
      end
    end
    H.rm(dir)
  end)
end)
