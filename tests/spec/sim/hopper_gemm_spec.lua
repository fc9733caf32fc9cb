-- cute.gemm's Hopper kernel (cute.lib.gemm_sm90: TMA, an mbarrier ring,
-- warp-specialised wgmma warpgroups, setmaxnreg, a persistent grid) on the
-- CPU simulator as an sm_90a device, at small shapes, against float64
-- (cute.testing): every input dtype it takes, all four majors of the 16-bit
-- ones, ragged edges, alpha and beta, fused epilogues, grouped GEMMs; the
-- simulator's checks stay silent on all of them. Outputs are poisoned first.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local G = require "cute.lib.gemm"

describe("cute.gemm's Hopper kernel on the simulator (sm_90a)", function()
  local sim = H.simulator({ arch = "sm_90a" })
  setup(sim.enter)
  teardown(sim.leave)

  -- A (M x K) and B (K x N) in the given layouts ("row" or "col"), random; C poisoned.
  local function operands(dt, m, n, k, cdt, al, bl)
    local lo = dt.name == "u8" and 0 or -1
    local A = cute.tensor(dt, { m, k }, al or "row"):uniform(lo, 1)
    local B = cute.tensor(dt, { k, n }, bl or "col"):uniform(lo, 1)
    cdt = cdt or cute.f32
    local C = cute.tensor(cdt, { m, n }, "row"):fill(cdt.is_float and 0 / 0 or -12345678) -- poisoned
    return A, B, C
  end

  local function hopper_plan(A, B, C, opts)
    local p = G.plan(A, B, C, opts)
    assert.matches("^gemm_sm90_", p.kernel.name, p.why)
    return p
  end

  local cases = {
    { cute.bf16, 128, 256, 64 }, { cute.bf16, 200, 136, 88 }, { cute.f16, 130, 70, 40 }, { cute.e4m3, 96, 80, 128 },
    { cute.e5m2, 64, 64, 160 }, { cute.i8, 100, 48, 96 }, { cute.u8, 64, 112, 64 }, { cute.tf32, 72, 40, 36 },
  }
  for _, c in ipairs(cases) do
    local dt, m, n, k = c[1], c[2], c[3], c[4]
    it(string.format("%s %d x %d x %d (ragged edges, f32 or i32 out)", dt.name, m, n, k), function()
      local cdt = (dt.name == "i8" or dt.name == "u8") and cute.i32 or cute.f32
      local A, B, C = operands(dt, m, n, k, cdt)
      hopper_plan(A, B, C)
      cute.gemm(A, B, C)
      local tol = (dt.name == "i8" or dt.name == "u8") and 0 or 1e-5
      local r = cute.testing.check_gemm(A, B, C, { rtol = tol, what = dt.name })
      assert.equal(m * n, r.checked)
    end)
  end

  for _, majors in ipairs { { "row", "col" }, { "col", "col" }, { "row", "row" }, { "col", "row" } } do
    it(string.format("bf16 with A %s-major and B %s-major storage, 16-bit output", majors[1], majors[2]), function()
      local A, B, C = operands(cute.bf16, 136, 72, 80, cute.bf16, majors[1], majors[2])
      hopper_plan(A, B, C)
      cute.gemm(A, B, C)
      cute.testing.check_gemm(A, B, C, { rtol = 2 ^ -8, what = majors[1] .. "/" .. majors[2] })
    end)
  end

  it("opts.pdl: a chain of programmatic dependent launches, each GEMM reading the one before's C", function()
    -- X1 = X0 W1, X2 = X1 W2 (its A the previous launch's output), both launched with pdl,
    -- and a split-K one (its reduction a plain launch after it)
    local X0 = cute.tensor(cute.bf16, { 96, 128 }, "row"):uniform(-1, 1)
    local W1 = cute.tensor(cute.bf16, { 128, 192 }, "col"):uniform(-1, 1)
    local W2 = cute.tensor(cute.bf16, { 192, 64 }, "col"):uniform(-1, 1)
    local X1 = cute.tensor(cute.bf16, { 96, 192 }, "row"):fill(0 / 0)
    local X2 = cute.tensor(cute.f32, { 96, 64 }, "row"):fill(0 / 0)
    local o = { pdl = true }
    local p = hopper_plan(X0, W1, X1, o)
    assert.is_true(p.pdl)
    assert.matches("_pdl$", p.kernel.name)
    cute.gemm(X0, W1, X1, o)
    cute.gemm(X1, W2, X2, o)
    cute.testing.check_gemm(X0, W1, X1, { rtol = 2 ^ -8, what = "pdl X1" })
    cute.testing.check_gemm(X1, W2, X2, { rtol = 1e-5, what = "pdl X2" })
    local X3 = cute.tensor(cute.f32, { 96, 64 }, "row"):fill(0 / 0)
    local os = { pdl = true, kernel = "sm90", config = { split_k = 2 } }
    assert.is_true(hopper_plan(X1, W2, X3, os).pdl)
    cute.gemm(X1, W2, X3, os)
    cute.testing.check_gemm(X1, W2, X3, { rtol = 1e-5, what = "pdl split-K" })
    -- the weights' first stages before the wait (each stage's barrier armed once for
    -- both operands' bytes): plain, swapped (B the kernel's A) and split-K
    local X16 = cute.tensor(cute.bf16, { 16, 128 }, "row"):uniform(-1, 1)
    local X4 = cute.tensor(cute.f32, { 16, 192 }, "row"):fill(0 / 0)
    for _, c in ipairs { { X0, W1, X1, {}, "b" }, { X16, W1, X4, {}, "a" }, { X1, W2, X3, { split_k = 2 }, "b" } } do
      c[3]:fill(0 / 0)
      local op = { pdl = true, pdl_prefetch_b = true, kernel = "sm90", config = c[4] }
      assert.equal(c[5], hopper_plan(c[1], c[2], c[3], op).config.pdl_pre)
      cute.gemm(c[1], c[2], c[3], op)
      cute.testing.check_gemm(c[1], c[2], c[3], { rtol = c[3].dtype == cute.f32 and 1e-5 or 2 ^ -8,
        what = "pdl_prefetch_b " .. c[5] })
    end
  end)

  it("the ping-pong schedule (a warpgroup a 64-row tile, in turns): two tiles a CTA, ragged, both epilogues", function()
    -- 160 tiles on the simulated H100's 132 CTAs: some CTAs take two, one a warpgroup
    local o = { kernel = "sm90", config = { bm = 64, bn = 128, stages = 4, schedule = "pingpong" } }
    for _, c in ipairs { { 640, 2048, 128, cute.bf16 }, { 1100, 1024, 64, cute.bf16 }, { 200, 300, 200, cute.f32 } } do
      local m, n, k, cdt = c[1], c[2], c[3], c[4]
      local A, B, C = operands(cute.bf16, m, n, k, cdt)
      local p = hopper_plan(A, B, C, o)
      assert.matches("_pingpong$", p.kernel.name)
      assert.equal(cdt == cute.bf16 or nil, p.config.tma_store)
      cute.gemm(A, B, C, o)
      cute.testing.check_gemm(A, B, C, { samples = 3000, what = string.format("ping-pong %dx%dx%d", m, n, k) })
    end
  end)

  it("two 128-byte swizzle rows of K a stage (config.bk doubled): both schedules, majors, dtypes, split-K", function()
    -- each operand's stage is two TMA boxes adjacent along K (256 contiguous bytes a row)
    for _, c in ipairs {
      { cute.bf16, 200, 300, 456, { bm = 64, bn = 128, bk = 128, stages = 3, schedule = "pingpong" }, cute.bf16 },
      { cute.bf16, 136, 72, 200, { bn = 64, bk = 128, stages = 3 }, cute.f32, "col", "row" },
      { cute.f16, 130, 96, 136, { bn = 32, bk = 128, stages = 2 }, cute.f16, "row", "row" },
      { cute.e4m3, 96, 80, 304, { bn = 64, bk = 256, stages = 2 }, cute.bf16 },
      { cute.i8, 100, 48, 272, { bn = 48, bk = 256, stages = 2 }, cute.i32 },
      { cute.tf32, 72, 40, 100, { bn = 64, bk = 64, stages = 3 }, cute.f32 },
      { cute.bf16, 64, 256, 1000, { bm = 64, bn = 64, bk = 128, stages = 4, schedule = "pingpong", split_k = 3 },
        cute.f32 },
    } do
      local dt, m, n, k, cfg, cdt = c[1], c[2], c[3], c[4], c[5], c[6]
      local A, B, C = operands(dt, m, n, k, cdt, c[7], c[8])
      local o = { kernel = "sm90", config = cfg }
      local p = hopper_plan(A, B, C, o)
      assert.matches(string.format("_%dx%dx%d", cfg.bm or 128, cfg.bn, cfg.bk), p.kernel.name)
      cute.gemm(A, B, C, o)
      local exact = dt.name == "i8"
      local r = cute.testing.check_gemm(A, B, C, { samples = 1500, rtol = exact and 0 or (cdt.bytes == 2 and 2 ^ -7
        or 1e-4), what = string.format("%s %dx%dx%d bk %d", dt.name, m, n, k, cfg.bk) })
      assert.is_true(r.checked > 0)
    end
  end)

  it("alpha and beta (C read back), f16 output", function()
    local A, B, C = operands(cute.f16, 96, 64, 64, cute.f16)
    C:uniform(-1, 1)
    local c0 = C:to_host()
    hopper_plan(A, B, C, { alpha = 0.5, beta = -2 })
    cute.gemm(A, B, C, { alpha = 0.5, beta = -2 })
    cute.testing.check_gemm(A, B, C, { alpha = 0.5, beta = -2, c0 = c0, rtol = 2 ^ -8, atol = 2 ^ -9 })
  end)

  it("a fused epilogue: a bias by column and gelu_tanh, against float64", function()
    local m, n, k = 100, 72, 64
    local A, B, C = operands(cute.bf16, m, n, k)
    local bias = cute.tensor(cute.f32, { n }):uniform(-1, 1)
    hopper_plan(A, B, C, { bias = bias, activation = "gelu_tanh" })
    cute.gemm(A, B, C, { bias = bias, activation = "gelu_tanh" })
    local a, b, c, bv = A:to_table(), B:to_table(), C:to_table(), bias:to_table()
    local worst = 0
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s, mag = H.dot(a, b, m, k, i, j)
        local x = s + bv[j + 1]
        local want = 0.5 * x * (1 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
        local got = c[i + m * j + 1]
        local e = math.abs(got - want) / (mag + math.abs(bv[j + 1]) + 1e-30)
        assert.is_true(got == got and e < 1e-5, string.format("C(%d,%d) = %s, expected %s", i, j, got, want))
        if e > worst then worst = e end
      end
    end
  end)

  it("a skinny problem planned swapped (C^T = B^T A^T): tiles, majors, split-K, alpha and beta", function()
    -- C's few rows become wgmma's N (config.swap_ab); the tile is one of C^T, and C is
    -- written through its transposed view
    for _, c in ipairs {
      { 16, 300, 200, {}, cute.bf16, 16 }, -- the heuristic's swapped tile: 64 x 16 ping-pong
      { 5, 264, 136, {}, cute.f32, 16 }, -- 5 rows in a 16-wide tile
      { 40, 200, 96, { bm = 128, bn = 48, stages = 3 }, cute.f32, 48 }, -- cooperative
      { 24, 136, 600, { split_k = 3 }, cute.f32, 32 },
      { 16, 128, 72, {}, cute.bf16, 16, "col", "row" }, -- A M-major, B N-major
    } do
      local m, n, k, cfg, cdt, bn = c[1], c[2], c[3], c[4], c[5], c[6]
      local A, B, C = operands(cute.bf16, m, n, k, cdt, c[7], c[8])
      local o = { kernel = "sm90", config = { swap_ab = true } }
      for key, v in pairs(cfg) do o.config[key] = v end
      local p = hopper_plan(A, B, C, o)
      local what = string.format("swapped %dx%dx%d", m, n, k)
      assert.matches("swapped %(opts.config.swap_ab%)", p.why, what)
      assert.is_true(p.config.swapped, what)
      assert.equal(bn, p.config.bn, what)
      cute.gemm(A, B, C, o)
      local r = cute.testing.check_gemm(A, B, C, { rtol = cdt.bytes == 2 and 2 ^ -7 or 1e-5, what = what })
      assert.equal(m * n, r.checked)
    end
    local A, B, C = operands(cute.f16, 12, 96, 64, cute.f16)
    C:uniform(-1, 1)
    local c0 = C:to_host()
    local o = { alpha = 0.5, beta = -2, kernel = "sm90", config = { swap_ab = true } }
    cute.gemm(A, B, C, o)
    cute.testing.check_gemm(A, B, C, { alpha = 0.5, beta = -2, c0 = c0, rtol = 2 ^ -8, atol = 2 ^ -9 })
    -- batches (strided: each of C's matrices transposed in its own place), by the default rule
    local m, n, k, l = 9, 80, 72, 3
    local Ab = cute.tensor(cute.bf16, { m, k, l }, { k, 1, m * k }):uniform(-1, 1)
    local Bb = cute.tensor(cute.bf16, { k, n, l }, { 1, k, k * n }):uniform(-1, 1)
    local Cb = cute.tensor(cute.f32, { m, n, l }, { n, 1, m * n }):fill(0 / 0)
    local p = hopper_plan(Ab, Bb, Cb)
    assert.is_true(p.config.swapped, p.why)
    cute.gemm(Ab, Bb, Cb)
    local r = cute.testing.check_gemm(Ab, Bb, Cb, { rtol = 1e-5, what = "swapped batches" })
    assert.equal(m * n * l, r.checked)
  end)

  it("a swapped plan's fused epilogue: a bias by column or by row, the user function gets C's coordinates", function()
    local m, n, k = 12, 72, 64
    for _, mode in ipairs { "col", "row" } do
      local A, B, C = operands(cute.bf16, m, n, k)
      local bias = cute.tensor(cute.f32, { mode == "col" and n or m }):uniform(-1, 1)
      local function fn(v, i, j) return v + i:to(cute.f32) * 0.25 - j:to(cute.f32) * 0.0625 end
      local o = { kernel = "sm90", config = { swap_ab = true }, bias = bias, bias_mode = mode, activation = "relu",
        epilogue = fn }
      assert.is_true(hopper_plan(A, B, C, o).config.swapped)
      cute.gemm(A, B, C, o)
      local a, b, c, bv = A:to_table(), B:to_table(), C:to_table(), bias:to_table()
      for i = 0, m - 1 do
        for j = 0, n - 1 do
          local s, mag = H.dot(a, b, m, k, i, j)
          local bb = mode == "col" and bv[j + 1] or bv[i + 1]
          local want = math.max(s + bb, 0) + i * 0.25 - j * 0.0625
          local got = c[i + m * j + 1]
          assert.is_true(got == got and math.abs(got - want) <= 1e-5 * (mag + 1 + i + j),
            string.format("bias_mode %s: C(%d,%d) = %s, expected %s", mode, i, j, got, want))
        end
      end
    end
  end)

  it("a grouped (MoE) GEMM: uneven and empty problems, ragged rows, a bias", function()
    local T, K, N, off = 200, 64, 72, { 0, 0, 37, 120, 200 }
    local E = #off - 1
    local A = cute.tensor(cute.bf16, { T, K }, "row"):uniform(-1, 1)
    local B = cute.tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })):uniform(-1, 1)
    local C = cute.tensor(cute.f32, { T, N }, "row"):fill(0 / 0)
    local bias = cute.tensor(cute.f32, { N }):uniform(-1, 1)
    G.grouped(A, B, C, off, { bias = bias })
    local r = cute.testing.check_grouped_gemm(A, B, C, off, { bias = bias, rtol = 1e-5, what = "grouped" })
    assert.equal(T * N, r.checked)
    -- as a dependent launch with the experts' weights loaded before the wait
    C:fill(0 / 0)
    local o = { bias = bias, pdl = true, pdl_prefetch_b = true }
    assert.equal("b", G.grouped_plan(A, B, C, off, o).config.pdl_pre)
    G.grouped(A, B, C, off, o)
    cute.testing.check_grouped_gemm(A, B, C, off, { bias = bias, rtol = 1e-5, what = "grouped, pdl_prefetch_b" })
  end)
end)
