--- Trace and compile times of the tensor-core GEMM kernel (cute.lib.gemm), not
-- a test: the tracer's share of a compile.
--   cutelua bench/trace_gemm.lua [repeats]
-- For the 128x128x32 (4 stages, 2x2 warps) and 128x256x64 (3 stages, 2x4 warps)
-- configurations, bf16 with A K-major and B N-major, compiled for sm_90a with
-- the compile cache off: the time to trace the Lua body into the IR, and the
-- rest of the compile (printing the IR, emitting NVVM IR, libnvvm, ptxas),
-- medians of the repeats (each a fresh kernel object: a full trace).
local cute = require "cute"
local G = require "cute.lib.gemm"
local compiler = require "cute.compiler"
local repeats = tonumber(arg and arg[1]) or 5

local function fake(r, c, stride)
  return cute.fake_tensor(cute.bf16, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
end
local A, B, C = fake(4096, 4096, { 4096, 1, 0 }), fake(4096, 4096, { 1, 4096, 0 }), fake(4096, 4096, { 4096, 1, 0 })

local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

print("| configuration | trace (ms) | rest of the compile (ms) | IR ops |")
print("|---|---|---|---|")
for _, c in ipairs { { 128, 128, 32, 4, 2, 2 }, { 128, 256, 64, 3, 2, 4 } } do
  local tr, co, nops = {}, {}, 0
  for i = 1, repeats do
    local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
      group = 8, even = true, beta = false, bm = c[1], bn = c[2], bk = c[3], stages = c[4], wm = c[5], wn = c[6],
      ldmatrix = i } -- a distinct key: a fresh kernel, traced again
    local k = G.kernel(cfg):with { arch = "sm_90a", cache = false }
    local spec = k:_specialise(5, A, B, C, cute.f32(1), cute.f32(0))
    tr[#tr + 1], co[#co + 1] = spec.trace_ms, spec.compile_ms
    local ir = spec.compiled:ir()
    local _, n = ir:gsub("\n", "")
    nops = n
  end
  print(string.format("| %dx%dx%d, %d stages, %dx%d warps | %.1f | %.0f | %d |", c[1], c[2], c[3], c[4], c[5], c[6],
    median(tr), median(co), nops))
end
local _ = compiler
