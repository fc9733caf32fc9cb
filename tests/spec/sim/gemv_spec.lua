-- cute.lib.gemv (cute.gemm with M <= 8 rows: decode) on the simulator, against
-- float64 with C poisoned first: ragged K (the element tail), batches, alpha
-- and beta, a bias and an activation; which problems it takes and why not.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local G = require "cute.lib.gemm"

describe("cute.lib.gemv (on the simulator)", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("computes C = alpha A B for 1 to 8 rows, K ragged, batched (B K-major), SIMT and tensor cores", function()
    local seed = os.time() % 1000
    -- (K 2856 = a SIMT step of 8 vectors a lane, 3 steps of one and 40 elements)
    for _, c in ipairs { { 1, 1040, 70, 1, cute.bf16 }, { 3, 1000, 33, 1, cute.f16 }, { 8, 24, 17, 1, cute.bf16 },
      { 5, 1032, 20, 2, cute.bf16 }, { 1, 2856, 9, 1, cute.bf16 }, { 2, 2856, 5, 2, cute.f16 } } do
      local m, k, n, L, dt = c[1], c[2], c[3], c[4], c[5]
      local A = cute.tensor(dt, { m, k, L }, cute.make_layout({ m, k, L }, { k, 1, m * k }))
        :uniform(-1, 1, seed)
      local B = cute.tensor(dt, { k, n, L }, cute.make_layout({ k, n, L }, { 1, k, k * n })):uniform(-1, 1, seed + 1)
      local C = cute.tensor(dt, { m, n, L }, cute.make_layout({ m, n, L }, { n, 1, m * n })):fill(0 / 0)
      local p = G.plan(A, B, C)
      assert.equal("gemv", p.kernel_name)
      assert.matches("M = " .. m, p.why)
      cute.gemm(A, B, C, { alpha = 0.75 })
      cute.testing.check_gemm(A, B, C, { alpha = 0.75, what = string.format("C (%dx%dx%d x%d)", m, k, n, L) })
    end
  end)

  it("the tensor-core forms (9-16 rows, or asked for): column-group splits, wide form, ragged K, batches", function()
    local gemv = require "cute.lib.gemv"
    finally(function() gemv.override = nil end)
    local seed = os.time() % 1000 + 7
    for _, mode in ipairs { "mma", "mma1", "mma2", "mma4", "mma8", "mmaw1r2", "mmaw2r5", "mmaw2r3q2" } do
      gemv.override = mode
      for _, c in ipairs { { 16, 1040, 70, 1 }, { 9, 1000, 33, 1 }, { 12, 24, 17, 1 }, { 1, 520, 20, 2 } } do
        local m, k, n, L = c[1], c[2], c[3], c[4]
        local ld = math.ceil(k / 8) * 8 -- (K not a multiple of 8: rows padded to 16 bytes)
        local A = cute.tensor(cute.bf16, { m, k, L }, cute.make_layout({ m, k, L }, { ld, 1, m * ld })):uniform(-1, 1,
          seed)
        local B = cute.tensor(cute.bf16, { k, n, L }, cute.make_layout({ k, n, L }, { 1, ld, ld * n })):uniform(-1, 1,
          seed + 1)
        local C = cute.tensor(cute.f32, { m, n, L }, cute.make_layout({ m, n, L }, { n, 1, m * n })):fill(0 / 0)
        local p = G.plan(A, B, C)
        assert.is_true(p.config.mma)
        cute.gemm(A, B, C, { alpha = -1.5 })
        cute.testing.check_gemm(A, B, C, { alpha = -1.5, what = string.format("C (%s, %dx%dx%d x%d)", mode, m, k, n,
          L) })
      end
    end
    gemv.override = nil
    -- by default: SIMT up to 2 rows, tensor cores above
    local A = cute.fake_tensor(cute.bf16, { 3, 512 }, "row")
    local B = cute.fake_tensor(cute.bf16, { 512, 4096 }, "col")
    local p = G.plan(A, B, nil, { arch = "sm_80" })
    assert.same({ "gemv", true }, { p.kernel_name, p.config.mma })
    assert.is_nil(G.plan(cute.fake_tensor(cute.bf16, { 2, 512 }, "row"), B, nil, { arch = "sm_80" }).config.mma)
  end)

  it("reads C with beta, adds a bias and applies an activation, as the Hopper kernel's epilogue", function()
    local m, k, n = 4, 304, 40 -- (K: one 256-wide tile and a tail of 48)
    local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 11)
    local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, 12)
    local C = cute.tensor(cute.f32, { m, n }, "row"):uniform(-1, 1, 13)
    local bias = cute.tensor(cute.f32, { n }):uniform(-1, 1, 14)
    local ha, hb, hc, hbias = A:to_host(), B:to_host(), C:to_host(), bias:to_host()
    cute.gemm(A, B, C, { alpha = 2, beta = 0.5, bias = bias, activation = "relu" })
    assert.equal("gemv", G.plan(A, B, C, { beta = 0.5, bias = bias, activation = "relu" }).kernel_name)
    local got = C:to_host()
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s = 0
        for kk = 0, k - 1 do s = s + ha[{ i, kk }] * hb[{ kk, j }] end
        local want = math.max(2 * s + 0.5 * hc[{ i, j }] + hbias[j], 0)
        local g = got[{ i, j }]
        assert(math.abs(g - want) <= 1e-4 * (1 + math.abs(want)), string.format("C[%d,%d] = %s, expected %s", i, j,
          g, want))
      end
    end
  end)

  it("bounds its blocks (256 threads), so that ptxas plans a step's loads together", function()
    local B = cute.fake_tensor(cute.bf16, { 4096, 4096 }, "col")
    for _, rows in ipairs { 1, 12 } do
      local A = cute.fake_tensor(cute.bf16, { rows, 4096 }, "row")
      local p = G.plan(A, B, nil, { arch = "sm_90a", kernel = "gemv" })
      local ptx = p.kernel:compile(unpack(p.args)):ptx()
      assert.matches("%.maxntid 256, 1, 1", ptx)
    end
  end)

  it("leaves other problems to the tile kernels and says why when asked for it", function()
    local A = cute.fake_tensor(cute.bf16, { 17, 512 }, "row")
    local B = cute.fake_tensor(cute.bf16, { 512, 256 }, "col")
    assert.are_not.equal("gemv", G.plan(A, B, nil, { arch = "sm_90a" }).kernel_name) -- 17 rows
    local A1 = cute.fake_tensor(cute.bf16, { 1, 512 }, "row")
    assert.equal("gemv", G.plan(A1, B, nil, { arch = "sm_90a" }).kernel_name)
    -- on Hopper from 2 rows (gemm.GEMV_ROWS_SM90) the TMA + wgmma kernel's 64-row ping-pong tiles;
    -- elsewhere, or asked for, the gemv
    local function kernel_of(rows, o)
      return G.plan(cute.fake_tensor(cute.bf16, { rows, 512 }, "row"), B, nil, o).kernel_name
    end
    assert.equal(2, G.GEMV_ROWS_SM90)
    assert.equal("gemv", kernel_of(1, { arch = "sm_90a" }))
    for _, rows in ipairs { 2, 3, 16 } do
      local p = G.plan(cute.fake_tensor(cute.bf16, { rows, 512 }, "row"), B, nil, { arch = "sm_90a" })
      assert.equal("sm90", p.kernel_name)
      assert.same({ 64, "pingpong" }, { p.config.bm, p.config.schedule })
      assert.equal("gemv", kernel_of(rows, { arch = "sm_80" }))
      assert.equal("gemv", kernel_of(rows, { arch = "sm_90a", kernel = "gemv" }))
    end
    -- B N-major: not K-contiguous
    local Bn = cute.fake_tensor(cute.bf16, { 512, 256 }, "row")
    assert.are_not.equal("gemv", G.plan(A1, Bn, nil, { arch = "sm_90a" }).kernel_name)
    local ok, msg = pcall(G.plan, A1, Bn, nil, { kernel = "gemv" })
    assert.is_false(ok)
    assert.matches("opts.kernel = \"gemv\", but B is not K%-contiguous", msg)
    ok, msg = pcall(G.plan, A, B, nil, { kernel = "gemv" })
    assert.is_false(ok)
    assert.matches("takes 1 to 16 rows", msg)
    -- f32 inputs: the tf32 tile kernels
    local Af = cute.fake_tensor(cute.f32, { 1, 512 }, "row")
    local Bf = cute.fake_tensor(cute.f32, { 512, 256 }, "col")
    assert.are_not.equal("gemv", G.plan(Af, Bf, nil, { arch = "sm_90a" }).kernel_name)
  end)
end)
