-- The tensor-core path on the simulator: one-tile GEMMs built from atoms
-- (tests/spec/atom/mma_kernels.lua: cp.async global -> shared with swizzled
-- layouts, ldmatrix or plain copies to fragments, mma.sync, the epilogue)
-- match A B computed here, for the 16-bit and tf32 atoms in both major orders.
package.path = "tests/spec/atom/?.lua;" .. package.path
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local K = require "mma_kernels"

local CASES = {
  { name = "bf16 -> f32 m16n8k16, ldmatrix", op = cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }),
    ldmatrix = true },
  { name = "f16 -> f32 m16n8k16", op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 }) },
  { name = "f16 -> f16 m16n8k8, ldmatrix", op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f16, { 16, 8, 8 }),
    ldmatrix = true, tol = 2 ^ -9, size = 64 },
  { name = "tf32 m16n8k8", op = cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }), tol = 2 ^ -9 },
  { name = "i8 x u8 -> i32 m16n8k32", op = cute.nvgpu.warp.MmaI8Op(cute.i8, cute.u8, { 16, 8, 32 }), tol = 0,
    size = 64 },
  { name = "e4m3 x e5m2 -> f32 m16n8k32", op = cute.nvgpu.warp.MmaFP8Op(cute.e4m3, cute.e5m2, { 16, 8, 32 }),
    size = 64 },
}

describe("mma.sync tiles on the simulator", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  for n, c in ipairs(CASES) do
    for _, am in ipairs { "k", "mn" } do
      for _, bm in ipairs { "k", "mn" } do
        it(string.format("%s, A %s-major, B %s-major", c.name, am, bm), function()
          c.amajor, c.bmajor = am, bm
          local k, mma = K.tile_gemm(c)
          local at = mma.atom
          local BM, BN, BK = c.size or 32, c.size or 32, c.size or 32
          local A, B = K.operands(at.a_dtype, at.b_dtype, BM, BN, BK, am, bm, 100 + n)
          local C = cute.tensor(cute.f32, { BM, BN }, "row"):fill(0 / 0)
          k { grid = 1, block = mma.size }(A, B, C, cute.constexpr(BM), cute.constexpr(BN), cute.constexpr(BK))
          local ha, hb, hc = A:to_host(), B:to_host(), C:to_host()
          local tol = c.tol or 1e-5
          for i = 0, BM - 1 do
            for j = 0, BN - 1 do
              local ref, mag = 0, 0
              for kk = 0, BK - 1 do
                local p = ha[{ i, kk }] * hb[{ j, kk }]
                ref, mag = ref + p, mag + math.abs(p)
              end
              local got = hc[{ i, j }]
              assert.is_true(math.abs(got - ref) <= tol * math.max(mag, 1),
                string.format("C[%d,%d] = %.9g, expected %.9g", i, j, got, ref))
            end
          end
        end)
      end
    end
  end
end)
