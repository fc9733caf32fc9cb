--- Writes the NVVM IR and PTX of every example's kernels and of cute.lib's
-- kernels (several configurations, sm_80 and sm_90a, one with line info) to
-- a directory, compiled with the cache off and without a GPU: run it with
-- two builds and diff the directories to check that a change leaves the
-- generated code as it was.
--   cutelua tools/ptx_snapshot.lua DIR
--   diff -r DIR_BEFORE DIR_AFTER
-- Not a test (it takes a minute): a tool for changes to the tracer, the IR
-- or the emitter.
local cute = require "cute"
local dir = assert(arg and arg[1], "usage: cutelua tools/ptx_snapshot.lua DIR")
os.execute("mkdir -p '" .. dir .. "'")

local count = 0
local function write(name, ext, text)
  local f = assert(io.open(dir .. "/" .. name .. "." .. ext, "wb"))
  f:write(text)
  f:close()
end

-- Compiles k for the arguments and writes its NVVM IR and PTX under a name.
local function snap(name, k, opts, ...)
  local h = k:with(opts):compile(...)
  write(name, "ll", h:ll())
  write(name, "ptx", h:ptx())
  count = count + 1
end

local function each_arch(name, k, ...)
  for _, arch in ipairs { "sm_80", "sm_90a" } do snap(name .. "." .. arch, k, { arch = arch, cache = false }, ...) end
end

-- --- the examples: their kernels, caught as the example defines them ---------------------------

-- Runs an example's file until it first makes a device tensor (or ends),
-- with cute.gpu_available saying yes; returns the kernels it made by name,
-- and what cute.export was given.
local function kernels_of(path)
  local made, exported = {}, {}
  local saved = { kernel = cute.kernel, gpu_available = cute.gpu_available, tensor = cute.tensor,
    export = cute.export }
  local stop = {}
  cute.kernel = function(...)
    local k = saved.kernel(...)
    made[k.name] = k
    return k
  end
  cute.gpu_available = function() return true end
  cute.tensor = function() error(stop) end
  cute.export = function(t) exported[#exported + 1] = t; error(stop) end
  local saved_arg = arg
  arg = { [0] = path, "/tmp" }
  local ok, e = pcall(dofile, path)
  arg = saved_arg
  for key, v in pairs(saved) do cute[key] = v end
  if not ok and e ~= stop then error(e, 0) end
  return made, exported
end

local function fake(dt, shape, major) return cute.fake_tensor(dt, shape, major) end

do
  local k = kernels_of("examples/vector_add.lua").vadd
  each_arch("example.vector_add", k, fake(cute.f32, 1000003), fake(cute.f32, 1000003), fake(cute.f32, 1000003))
  k = kernels_of("examples/sgemm_simt.lua").sgemm_tiled
  each_arch("example.sgemm_simt", k, fake(cute.f32, { 1000, 700 }, "row"), fake(cute.f32, { 700, 900 }, "row"),
    fake(cute.f32, { 1000, 900 }, "row"))
  local _, exported = kernels_of("examples/aot/export.lua")
  for _, t in ipairs(exported) do
    for _, e in ipairs(t.kernels) do each_arch("example.aot." .. e.name, e.kernel, unpack(e.args)) end
  end
  -- gemm_sm80 compiles with fake tensors itself: its kernel, with the example's arguments
  local made = kernels_of("examples/gemm_sm80.lua")
  for name, kk in pairs(made) do
    local function f3(dt, r, c, stride)
      return cute.fake_tensor(dt, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
    end
    local M, N, K = 4096, 4096, 4096
    each_arch("example.gemm_sm80." .. name, kk, f3(cute.bf16, M, K, { K, 1, 0 }), f3(cute.bf16, N, K, { 1, N, 0 }),
      f3(cute.bf16, M, N, { N, 1, 0 }), cute.f32(1), cute.f32(0))
  end
end

-- --- cute.lib ---------------------------------------------------------------------------------

local G = require "cute.lib.gemm"
local function f3(dt, r, c, stride) return cute.fake_tensor(dt, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride)) end
local gemm_cases = {
  { "bf16.4096.kn", cute.bf16, 4096, 4096, 4096, "row", "row" },
  { "bf16.2048.kk", cute.bf16, 2048, 2048, 2048, "row", "col" },
  { "f16.1000x777x333", cute.f16, 1000, 777, 333, "row", "row" },
  { "f16.256", cute.f16, 256, 256, 256, "col", "row" },
  { "f32.1024", cute.f32, 1024, 1024, 1024, "row", "row" },
  { "i8.1024", cute.i8, 1024, 1024, 1024, "row", "col" },
}
for _, c in ipairs(gemm_cases) do
  local name, dt, m, n, k, amaj, bmaj = c[1], c[2], c[3], c[4], c[5], c[6], c[7]
  local A = fake(dt, { m, k }, amaj)
  local B = fake(dt, { k, n }, bmaj)
  for _, beta in ipairs { 0, 1 } do
    local p = G.plan(A, B, nil, { beta = beta })
    each_arch("lib.gemm." .. name .. ".beta" .. beta, p.kernel, unpack(p.args))
  end
end
do -- the two benchmark configurations (bench/trace_gemm.lua), one with line info
  local A, B, C = f3(cute.bf16, 4096, 4096, { 4096, 1, 0 }), f3(cute.bf16, 4096, 4096, { 1, 4096, 0 }),
    f3(cute.bf16, 4096, 4096, { 4096, 1, 0 })
  for _, c in ipairs { { 128, 128, 32, 4, 2, 2 }, { 128, 256, 64, 3, 2, 4 } } do
    local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
      group = 8, even = true, beta = false, bm = c[1], bn = c[2], bk = c[3], stages = c[4], wm = c[5], wn = c[6] }
    local nm = string.format("lib.gemm.cfg%dx%dx%d", c[1], c[2], c[3])
    each_arch(nm, G.kernel(cfg), A, B, C, cute.f32(1), cute.f32(0))
    snap(nm .. ".lineinfo.sm_90a", G.kernel(cfg), { arch = "sm_90a", cache = false, lineinfo = true }, A, B, C,
      cute.f32(1), cute.f32(0))
  end
end

do -- cute.lib.gemm_sm90 (sm_90a only): dtypes, majors, tile widths, ragged, beta, fused epilogues
  local cases = {
    { "bf16.4096.kk", cute.bf16, 4096, 4096, 4096, "row", "col", {} },
    { "bf16.4096.kn.beta1", cute.bf16, 4096, 4096, 4096, "row", "row", { beta = 1 } },
    { "f16.1024x776x336.mk", cute.f16, 1024, 776, 336, "col", "col", {} },
    { "bf16.256x8192x1024", cute.bf16, 256, 8192, 1024, "row", "col", {} },
    { "bf16.16x4096x4096", cute.bf16, 16, 4096, 4096, "row", "col", {} },
    { "e4m3.4096", cute.e4m3, 4096, 4096, 4096, "row", "col", { scale_a = 0.5 } },
    { "i8.1024", cute.i8, 1024, 1024, 1024, "row", "col", {} },
    { "tf32.1024", cute.f32, 1024, 1024, 1024, "row", "col", {} },
    { "bf16.2048.gelu", cute.bf16, 2048, 2048, 2048, "row", "col", { activation = "gelu_tanh" } },
  }
  for _, c in ipairs(cases) do
    local o = { arch = "sm_90a" }
    for key, v in pairs(c[8]) do o[key] = v end
    local p = G.plan(fake(c[2], { c[3], c[5] }, c[6]), fake(c[2], { c[5], c[4] }, c[7]), nil, o)
    assert(p.kernel_name == "sm90", "ptx_snapshot: " .. c[1] .. " is not planned for gemm_sm90")
    snap("lib.gemm_sm90." .. c[1] .. ".sm_90a", p.kernel, { arch = "sm_90a", cache = false }, unpack(p.args))
  end
end

local fill = require "cute.lib.fill"
for _, dt in ipairs(require("cute.dtype").all()) do
  if dt.name ~= "bool" then
    for _, mode in ipairs { "iota", "uniform", "normal" } do
      local t = fake(dt, { 100, 37 }, "row")
      snap("lib.fill." .. dt.name .. "." .. mode .. ".sm_90a", fill.kernel, { arch = "sm_90a", cache = false }, t,
        cute.constexpr(mode), cute.u64(1), cute.f64(0), cute.f64(1))
    end
  end
end

local ew, red = require "cute.lib.elementwise", require "cute.lib.reduce"
local rw, tr, sg = require "cute.lib.rowwise", require "cute.lib.transpose", require "cute.lib.sgemm"
for _, dt in ipairs { cute.f32, cute.bf16, cute.f16 } do
  local x = fake(dt, 2 ^ 20)
  each_arch("lib.copy." .. dt.name, ew.kernels.copy, x, x)
  each_arch("lib.axpb." .. dt.name, ew.kernels.axpb, x, x, cute.f32(2), cute.f32(1))
end
local a = fake(cute.f32, { 1000, 4096 }, "row")
each_arch("lib.add_broadcast", ew.kernels.add_broadcast, a, fake(cute.f32, 4096), a)
for _, op in ipairs { "sum", "max" } do
  local k = red.kernels(op)
  each_arch("lib.reduce." .. op .. ".partial", k.partial, fake(cute.f32, 2 ^ 20), fake(cute.f32, 256))
  each_arch("lib.reduce." .. op .. ".final", k.final, fake(cute.f32, 256), fake(cute.f32, 1))
  each_arch("lib.reduce." .. op .. ".row", red.row_kernel(op), a, fake(cute.f32, 1000), cute.constexpr(2))
end
for _, dt in ipairs { cute.bf16, cute.f32 } do
  for _, n in ipairs { 4096, 4000, 1024 } do
    local cfg = rw.config(n, dt)
    local x, w = fake(dt, { 64, n }, "row"), fake(dt, n)
    local nm = "lib.rowwise." .. dt.name .. "." .. n
    each_arch(nm .. ".softmax", rw.kernels.softmax, x, x, cute.constexpr(cfg))
    each_arch(nm .. ".rmsnorm", rw.kernels.rmsnorm, x, w, x, cute.f32(1e-6), cute.constexpr(cfg))
    each_arch(nm .. ".layernorm", rw.kernels.layernorm, x, w, w, x, cute.f32(1e-5), cute.constexpr(cfg))
  end
end
local m, mt = fake(cute.f32, { 1000, 777 }, "row"), fake(cute.f32, { 777, 1000 }, "row")
each_arch("lib.transpose", tr.kernel, m, mt)
each_arch("lib.transpose32", tr.kernel32, m, mt)
local A, B = fake(cute.f32, { 333, 190 }, "row"), fake(cute.f32, { 190, 257 }, "row")
local C = fake(cute.f32, { 333, 257 }, "row")
each_arch("lib.sgemm.beta0", sg.kernel, A, B, C, cute.f32(1), cute.f32(0), cute.constexpr(false))
each_arch("lib.sgemm.beta1", sg.kernel, A, B, C, cute.f32(1), cute.f32(1), cute.constexpr(true))
A, B, C = fake(cute.f32, { 1024, 1024 }, "row"), fake(cute.f32, { 1024, 1024 }, "row"),
  fake(cute.f32, { 1024, 1024 }, "row")
each_arch("lib.sgemm.1024", sg.kernel, A, B, C, cute.f32(1), cute.f32(0), cute.constexpr(false))

print(string.format("ptx_snapshot: %d kernels written to %s", count, dir))
