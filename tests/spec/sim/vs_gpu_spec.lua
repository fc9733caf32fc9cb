-- The simulator against the GPU (run on a GPU machine): every case of
-- tests/spec/sim/lib_kernels.lua (the cute.lib kernels) and the mma.sync
-- tiles run on both from the same inputs. Integer and copy kernels (the
-- cases marked exact: copies, transposes, fills) must match bitwise; the
-- others within a stated tolerance, relative to max(|GPU value|, 1): f32
-- kernels 1e-5 (the GPU's approximate math and contractions differ from
-- the simulator's), bf16 results 2 ulps (2^-6), mma.sync tiles 1e-4 (f32
-- accumulators: the tensor core's summation order against the simulator's
-- double sum) or 2^-9 (tf32); the int8 tile bitwise.
package.path = "tests/spec/sim/?.lua;tests/spec/atom/?.lua;" .. package.path
local cute = require "cute"
local K = require "lib_kernels"

local function on(device, fn)
  local old = cute.current_device()
  cute.set_device(device)
  local ok, r = pcall(fn)
  cute.set_device(old)
  if not ok then error(r, 0) end
  return r
end

local function compare(name, gpu, sim, exact, tol)
  assert.equal(#gpu, #sim, name .. ": outputs")
  for o = 1, #gpu do
    local g, s = gpu[o], sim[o]
    assert.equal(#g, #s, name .. ": sizes")
    for i = 1, #g do
      local same = g[i] == s[i] or (g[i] ~= g[i] and s[i] ~= s[i])
      if not same then
        local e = math.abs(g[i] - s[i]) / math.max(math.abs(g[i]), 1)
        assert.is_true(not exact and e <= tol, string.format("%s: output %d element %d: GPU %.9g, simulator %.9g%s",
          name, o, i, g[i], s[i], exact and " (bitwise expected)" or string.format(" (tolerance %g)", tol)))
      end
    end
  end
end

describe("the simulator matches the GPU", function()
  for _, c in ipairs(K.cases) do
    it(c.name .. " #gpu", function()
      local gpu = on(0, c.run)
      local sim = on("sim", c.run)
      local tol = c.gpu_tol or (c.name:match("bf16") and 2 ^ -6) or 1e-5
      compare(c.name, gpu, sim, c.exact, tol)
    end)
  end

  it("mma.sync tiles: bf16, f16, tf32 and int8 atoms, both major orders #gpu", function()
    local MK = require "mma_kernels"
    local cases = {
      { op = cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }), ldmatrix = true, tol = 1e-4 },
      { op = cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, { 16, 8, 16 }), tol = 1e-4 },
      { op = cute.nvgpu.warp.MmaTF32Op({ 16, 8, 8 }), tol = 2 ^ -9 },
      { op = cute.nvgpu.warp.MmaI8Op(cute.i8, cute.u8, { 16, 8, 32 }), exact = true, size = 64 },
    }
    for n, c in ipairs(cases) do
      for _, am in ipairs { "k", "mn" } do
        for _, bm in ipairs { "k", "mn" } do
          c.amajor, c.bmajor = am, bm
          local k, mma = MK.tile_gemm(c)
          local function go()
            local at = mma.atom
            local sz = c.size or 32
            local A, B = MK.operands(at.a_dtype, at.b_dtype, sz, sz, sz, am, bm, 200 + n)
            local C = cute.tensor(cute.f32, { sz, sz }, "row"):fill(0)
            k { grid = 1, block = mma.size }(A, B, C, cute.constexpr(sz), cute.constexpr(sz), cute.constexpr(sz))
            return { K.host(C) }
          end
          compare(string.format("mma %d %s %s", n, am, bm), on(0, go), on("sim", go), c.exact, c.tol)
        end
      end
    end
  end)
end)
