--- Sample kernels built through cute.ir, for the Lua tests and the IR
-- benchmark (bench/ir_build.lua): the same two as the C tests' samples
-- (tests/c/support/ir_sample.c), which left the library with it.
--   local samples = require "tests.spec.ir.samples"
--   samples.saxpy(m); samples.mma_tile(m, 512, 128)
local M = {}

--- saxpy: y[i] = a * x[i] + y[i] for i < n, located at saxpy.lua:1-4.
function M.saxpy(m)
  m:set_loc("saxpy.lua", 1, "saxpy")
  local k = m:kernel("saxpy", { maxntid = 256 })
  local a, x, y, n = k:param("f32"), k:param("ptr<f32, global, 4>"), k:param("ptr<f32, global, 4>"), k:param("i32")
  m:set_loc("saxpy.lua", 2, "saxpy")
  local i = k:op("add", nil, k:op("mul", nil, k:op("sreg", nil, { "ctaid.x" }), k:op("sreg", nil, { "ntid.x" })),
    k:op("sreg", nil, { "tid.x" }))
  m:set_loc("saxpy.lua", 3, "saxpy")
  k:if_(k:op("icmp", nil, i, n, { "slt" }))
  m:set_loc("saxpy.lua", 4, "saxpy")
  local px, py = k:op("gep", nil, x, i), k:op("gep", nil, y, i)
  k:op("store", nil, py, k:op("fma", nil, a, k:op("load", nil, px), k:op("load", nil, py)))
  k:end_()
  m:set_loc(nil, 0, nil)
  return k
end

--- A fully unrolled warp tile: n_ldm ldmatrix.x4 and n_mma mma.sync.m16n8k16
-- (f16 -> f32) over 16 accumulators, stored to global at the end.
function M.mma_tile(m, n_mma, n_ldm)
  n_mma, n_ldm = n_mma or 512, n_ldm or 128
  local k = m:kernel(string.format("mma_tile_%d_%d", n_mma, n_ldm), { maxntid = 32 })
  local out = k:param("ptr<f32, global, 16>")
  local smem_bytes = math.min(math.max(n_ldm * 512, 1024), 48 * 1024)
  local s = k:op("smem", "ptr<i8, shared, 128>", { smem_bytes, 128 })
  local lane = k:op("sreg", nil, { "laneid" })
  local lane16 = k:op("mul", nil, lane, k:const("i32", 16))
  local frag = {}
  for i = 0, n_ldm - 1 do
    local o = k:op("add", nil, lane16, k:const("i32", i * 512 % smem_bytes))
    frag[i] = k:op("ldmatrix", nil, k:op("gep", "ptr<i8, shared, 16>", s, o), { 4 })
  end
  local z = k:const("f32", 0)
  local acc = {}
  for j = 0, 15 do acc[j] = k:op("pack", "{4 x f32}", z, z, z, z) end
  local imms = { "m16n8k16", "f16", "f16", "f32", "f32" }
  for j = 0, n_mma - 1 do
    local bsrc = frag[(j + 1) % n_ldm]
    local h = math.floor(j / n_ldm) % 2 * 2
    local b = k:op("pack", "{2 x i32}", k:op("extract", nil, bsrc, { h }), k:op("extract", nil, bsrc, { h + 1 }))
    acc[j % 16] = k:op("mma", nil, frag[j % n_ldm], b, acc[j % 16], imms)
  end
  local base = k:op("mul", nil, lane, k:const("i32", 64))
  for q = 0, 15 do
    local v = {}
    for e = 0, 3 do v[e + 1] = k:op("extract", nil, acc[q], { e }) end
    local p = k:op("gep", "ptr<f32, global, 16>", out, k:op("add", nil, base, k:const("i32", q * 4)))
    k:op("store", nil, p, k:op("pack", "<4 x f32>", unpack(v)))
  end
  return k
end

return M
