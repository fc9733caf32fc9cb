-- cute.gemm's Hopper kernel with split-K (opts.config.split_k = S: each tile's
-- K in S k-slices, one work unit each, their partial sums in a workspace and
-- a second kernel summing them with the whole epilogue) on the CPU simulator
-- as an sm_90a device, against float64 (cute.testing) with C poisoned: S = 2,
-- 3, 4 on ragged M, N, K, slices of unequal length, S clamped by a short K
-- (and no split at all for one k-tile), 16-bit output with beta, a bias and
-- gelu, fp8, int8, batches, the ping-pong schedule with two units a CTA; the
-- plan (workspace, why, cache) and the automatic choice behind
-- gemm_sm90.AUTO_SPLIT_K. The same with the reduction in the GEMM kernel
-- (opts.config.split_reduce = "fused": the tile's last unit sums the slices):
-- bit for bit the two kernels' result, the counters back at 0 after a launch.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local G = require "cute.lib.gemm"
local S90 = require "cute.lib.gemm_sm90"

-- erf (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7: enough against bf16)
local function erf(x)
  local s = x < 0 and -1 or 1
  x = math.abs(x)
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    * math.exp(-x * x)
  return s * y
end

describe("cute.gemm's Hopper kernel with split-K on the simulator (sm_90a)", function()
  local sim = H.simulator({ arch = "sm_90a" })
  setup(sim.enter)
  teardown(sim.leave)

  -- A (M x K [x L]) row-major, B (K x N [x L]) column-major, C (M x N [x L]) row-major, poisoned
  local function operands(dt, m, n, k, l, cdt)
    local A, B, C = H.gemm_operands(dt, m, n, k, l, cdt)
    C:fill(cdt.is_float and 0 / 0 or -12345678)
    return A, B, C
  end

  -- cute.gemm with opts.config = config (split_k in it) into a poisoned C; checks the
  -- A user epilogue function of the coordinates through a split-K config: C against
  -- the unsplit kernel's C through the same function in Lua.
  local function user_epilogue(config)
    local A, B, C = operands(cute.bf16, 72, 40, 200, nil, cute.f32)
    local function fn(v, m, n) return v * 2.0 + (m * 1000 + n):to(cute.f32) end
    cute.gemm(A, B, C, { kernel = "sm90", epilogue = fn, config = config })
    local ref = cute.tensor(cute.f32, { 72, 40 }, "row"):fill(0 / 0)
    cute.gemm(A, B, ref, { kernel = "sm90", config = { bn = config.bn, stages = config.stages } })
    local c, r = C:to_table(), ref:to_table()
    for i = 0, 71 do
      for j = 0, 39 do
        local want = 2 * r[i + 72 * j + 1] + i * 1000 + j
        local got = c[i + 72 * j + 1]
        assert.is_true(math.abs(got - want) <= 1e-4 * (math.abs(want) + 1), string.format("C(%d,%d) = %s, expected %s",
          i, j, got, want))
      end
    end
    A:free(); B:free(); C:free(); ref:free()
  end

  -- plan (the split kernel, the reduction, S slices of the workspace) and C against
  -- float64; returns the plan
  local function check(dt, m, n, k, config, o)
    o = o or {}
    local cdt = o.cdt or ((dt.name == "i8" or dt.name == "u8") and cute.i32 or cute.f32)
    local A, B, C = operands(dt, m, n, k, o.l, cdt)
    local opts = { kernel = "sm90", config = config }
    local p = G.plan(A, B, C, opts)
    local S = o.slices or config.split_k
    assert.equal(S, p.config.split_k)
    assert.same({ S, m, n, o.l or 1 }, p.workspace.layout.shape)
    assert.matches("split%-K " .. S .. " %(opts.config", p.why)
    if config.split_reduce == "fused" then
      assert.matches("_splitkf$", p.kernel.name)
      assert.is_nil(p.reduce)
      assert.matches("split%-K " .. S .. " %(opts.config[^)]*%), reduced by the tile's last unit", p.why)
      local tiles = math.ceil(m / p.config.bm) * math.ceil(n / p.config.bn) * (o.l or 1)
      assert.same({ tiles }, p.counters.layout.shape)
    else
      assert.matches("_splitk$", p.kernel.name)
      assert.matches("^gemm_sm90_splitk_reduce", p.reduce.kernel.name)
    end
    cute.gemm(A, B, C, opts)
    local what = string.format("%s %dx%dx%d split_k %d", dt.name, m, n, k, S)
    local r = cute.testing.check_gemm(A, B, C, { rtol = o.rtol or ((dt.name == "i8" or dt.name == "u8") and 0 or 1e-5),
      samples = o.samples, what = what })
    if not o.samples then assert.equal(m * n * (o.l or 1), r.checked) end
    A:free(); B:free(); C:free()
    return p
  end

  it("S = 2, 3, 4 on ragged M, N, K: slices of unequal length, every k-tile summed once", function()
    -- 5 k-tiles in 3 slices of 2, 2, 1
    check(cute.bf16, 200, 136, 296, { split_k = 3, bn = 64, stages = 4 })
    -- 13 k-tiles in 4 slices of 4, 4, 4, 1 (K ragged too)
    check(cute.bf16, 130, 70, 776, { split_k = 4, bn = 32, stages = 4 })
    -- 4 k-tiles in 2 slices; the heuristic's tile (split_k alone in opts.config)
    local p = check(cute.f16, 64, 200, 256, { split_k = 2 })
    assert.equal(S90.pick_config(64, 200, 256, 1, "f16").bn, p.config.bn)
  end)

  it("a short K clamps S so that no slice is empty; one k-tile is no split at all", function()
    -- 2 k-tiles: 4 asked, 2 slices of 1
    local p = check(cute.bf16, 100, 72, 120, { split_k = 4, bn = 64, stages = 4 }, { slices = 2 })
    assert.matches("4 asked: K is 2 k%-tiles of 64", p.why)
    -- 7 k-tiles, 6 asked: slices of 2 (ceil(7 / 6)), hence 4 of them
    check(cute.bf16, 72, 64, 448, { split_k = 6, bn = 64, stages = 4 }, { slices = 4 })
    -- one k-tile (K under 64): the plain kernel, no workspace
    local A, B, C = operands(cute.bf16, 100, 72, 40, nil, cute.f32)
    local opts = { kernel = "sm90", config = { split_k = 4, bn = 64, stages = 4 } }
    local q = G.plan(A, B, C, opts)
    assert.is_nil(q.reduce)
    assert.is_nil(q.workspace)
    assert.is_nil(q.config.split_k)
    assert.is_nil(q.kernel.name:find("splitk", 1, true))
    assert.matches("no split%-K %(opts.config, 4 asked: K is 1 k%-tile of 64%)", q.why)
    cute.gemm(A, B, C, opts)
    cute.testing.check_gemm(A, B, C, { rtol = 1e-5 })
  end)

  it("bf16 output with beta (C read by the reduction), a bias by column and gelu, against float64", function()
    local m, n, k = 100, 72, 392
    local A, B, C = operands(cute.bf16, m, n, k, nil, cute.bf16)
    C:uniform(-1, 1)
    local c0 = C:to_table()
    local bias = cute.tensor(cute.f32, { n }):uniform(-1, 1)
    local opts = { kernel = "sm90", beta = 0.5, alpha = 2, bias = bias, activation = "gelu",
      config = { split_k = 3, bn = 32, stages = 4 } }
    local p = G.plan(A, B, C, opts)
    assert.equal(3, p.config.split_k)
    assert.is_nil(p.config.tma_store) -- (the reduction stores from registers)
    assert.equal("gemm_sm90_splitk_reduce_beta_bias_gelu", p.reduce.kernel.name)
    cute.gemm(A, B, C, opts)
    local a, b, c, bv = A:to_table(), B:to_table(), C:to_table(), bias:to_table()
    -- (to_table lists a matrix's elements column by column, whatever its storage)
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s, mag = H.dot(a, b, m, k, i, j)
        local c_old = c0[i + m * j + 1]
        local x = 2 * s + 0.5 * c_old + bv[j + 1]
        local want = 0.5 * x * (1 + erf(x / math.sqrt(2)))
        local got = c[i + m * j + 1]
        local e = math.abs(got - want) / (2 * mag + math.abs(0.5 * c_old) + math.abs(bv[j + 1]) + 1e-30)
        assert.is_true(got == got and e < 2 ^ -7, string.format("C(%d,%d) = %s, expected %s", i, j, got, want))
      end
    end
    A:free(); B:free(); C:free(); bias:free()
  end)

  it("a user epilogue function, in the reduction", function()
    user_epilogue { split_k = 2, bn = 64, stages = 4 }
  end)

  it("fp8 (e4m3, f32 out), int8 (i32, exact), batches (L = 2)", function()
    check(cute.e4m3, 96, 80, 528, { split_k = 2, bn = 64, stages = 4 }, { rtol = 2 ^ -10 })
    check(cute.i8, 100, 48, 640, { split_k = 3, bn = 48, stages = 4 })
    check(cute.bf16, 136, 72, 328, { split_k = 3, bn = 64, stages = 4 }, { l = 2 })
  end)

  it("the ping-pong schedule: more units than CTAs (a warpgroup skips the other's slices)", function()
    -- 10 x 8 tiles of 64 x 64, 2 slices of unequal length (3 + 2 k-tiles): 160 units on 132 CTAs
    check(cute.bf16, 640, 512, 320, { split_k = 2, bm = 64, bn = 64, stages = 4, schedule = "pingpong" },
      { samples = 3000 })
  end)

  it("cute.gemm's plan cache keeps the workspace; the automatic choice (AUTO_SPLIT_K) says why", function()
    -- (200 rows: up to 128, and from 129 to 192, the heuristic takes 64-row ping-pong
    -- tiles, which it leaves unsplit)
    local A, B, C = operands(cute.bf16, 200, 256, 1024, nil, cute.f32)
    local was = S90.AUTO_SPLIT_K
    S90.AUTO_SPLIT_K = true
    local ok, e = pcall(function()
      local p = G.plan(A, B, C)
      -- a few tiles (the heuristic's narrow ones) over 132 SMs, 16 k-tiles: 2 slices of 8
      local sms, tiles = S90.sm_count(), 2 * 256 / p.config.bn
      assert.equal(2, p.config.split_k, p.why)
      assert.matches(string.format("split%%-K 2 %%(automatic%%): %d tiles x 2 k%%-slices of 8 k%%-tiles over %d SMs",
        tiles, sms), p.why)
      cute.gemm(A, B, C)
      cute.gemm(A, B, C) -- (the cached plan, its workspace reused)
      local byO = G._plan_cache[A][B][C]
      local n, ws = 0, nil
      for _, cp in pairs(byO) do n, ws = n + 1, cp.workspace end
      assert.equal(1, n)
      assert.same({ 2, 200, 256, 1 }, ws.layout.shape)
      cute.testing.check_gemm(A, B, C, { rtol = 1e-5 })
    end)
    S90.AUTO_SPLIT_K = was
    assert(ok, e)
    -- off (the default): the same problem is not split
    assert.is_nil(G.plan(A, B, C).config.split_k)
    A:free(); B:free(); C:free()
  end)

  -- opts.config with split_reduce = "fused"
  local function fused(config)
    local c = { split_reduce = "fused" }
    for k, v in pairs(config) do c[k] = v end
    return c
  end

  it("fused: S = 2, 3, 4 on ragged M, N, K, slices of unequal length; a short K clamps S", function()
    check(cute.bf16, 200, 136, 296, fused { split_k = 3, bn = 64, stages = 4 })
    check(cute.bf16, 130, 70, 776, fused { split_k = 4, bn = 32, stages = 4 })
    check(cute.f16, 64, 200, 256, fused { split_k = 2 })
    check(cute.bf16, 100, 72, 120, fused { split_k = 4, bn = 64, stages = 4 }, { slices = 2 })
  end)

  it("fused: the ping-pong schedule, more units than CTAs; 64-row tiles of a skinny problem", function()
    check(cute.bf16, 640, 512, 320, fused { split_k = 2, bm = 64, bn = 64, stages = 4, schedule = "pingpong" },
      { samples = 3000 })
    check(cute.bf16, 16, 200, 400, fused { split_k = 3, bm = 64, bn = 128, stages = 4, schedule = "pingpong" })
  end)

  it("fused: bit for bit the two kernels' sum (f32 C, both schedules, alpha); the plan launched twice", function()
    local function same(dt, m, n, k, config, l)
      local A, B, C = operands(dt, m, n, k, l, cute.f32)
      local _, _, C2 = operands(dt, m, n, k, l, cute.f32)
      local p = G.plan(A, B, C, { kernel = "sm90", alpha = 0.75, config = fused(config) })
      local run = G.launcher(p)
      run()
      -- (the launcher keeps the plan's workspace: the plan itself may be collected)
      local run2 = G.launcher(G.plan(A, B, C2, { kernel = "sm90", alpha = 0.75, config = config }))
      collectgarbage()
      collectgarbage()
      run2()
      local a, b = C:to_table(), C2:to_table()
      local function bitwise(what)
        for i = 1, #a do
          assert.is_true(a[i] == b[i], string.format("%s: element %d: fused %s, two kernels %s", what, i, a[i], b[i]))
        end
      end
      bitwise("first launch")
      -- the last units set their counters back to 0: the next launch of the plan reduces again
      for _, v in ipairs(p.counters:to_table()) do assert.equal(0, v) end
      C:fill(0 / 0)
      run()
      a = C:to_table()
      bitwise("second launch")
      A:free(); B:free(); C:free(); C2:free()
    end
    same(cute.bf16, 200, 136, 392, { split_k = 3, bn = 64, stages = 4 })
    same(cute.bf16, 136, 72, 328, { split_k = 4, bn = 64, stages = 4 }, 2)
    same(cute.bf16, 72, 100, 520, { split_k = 3, bm = 64, bn = 64, stages = 4, schedule = "pingpong" })
    -- 128 x 256 tiles (128 accumulators a thread: the sum and the epilogue a chunk at a time), full and ragged
    same(cute.bf16, 136, 260, 128, { split_k = 2, bn = 256, stages = 3 })
  end)

  it("fused: bf16 output with beta, a bias by column and gelu; a user epilogue function", function()
    local function epi(m, n, k, config, name)
      local A, B, C = operands(cute.bf16, m, n, k, nil, cute.bf16)
      C:uniform(-1, 1)
      local C2 = cute.tensor(cute.bf16, { m, n }, "row"):copy_from(C)
      local bias = cute.tensor(cute.f32, { n }):uniform(-1, 1)
      local function opts(cfg)
        return { kernel = "sm90", beta = 0.5, alpha = 2, bias = bias, activation = "gelu", config = cfg }
      end
      local p = G.plan(A, B, C, opts(fused(config)))
      assert.equal(name, p.kernel.name)
      assert.is_nil(p.config.tma_store)
      cute.gemm(A, B, C, opts(fused(config)))
      -- against the two kernels' result (itself checked against float64 above): within a bf16 rounding
      cute.gemm(A, B, C2, opts(config))
      local c, c2 = C:to_table(), C2:to_table()
      for i = 1, m * n do
        assert.is_true(c[i] == c[i] and math.abs(c[i] - c2[i]) <= 2 ^ -7 * math.abs(c2[i]) + 1e-6,
          string.format("%s: element %d: fused %s, two kernels %s", name, i, c[i], c2[i]))
      end
      A:free(); B:free(); C:free(); C2:free(); bias:free()
    end
    epi(100, 72, 392, { split_k = 3, bn = 32, stages = 4 }, "gemm_sm90_bf16_128x32x64_bias_gelu_splitkf")
    -- 128 x 256 tiles, one full (the epilogue a chunk at a time)
    epi(136, 260, 128, { split_k = 2, bn = 256, stages = 3 }, "gemm_sm90_bf16_128x256x64_bias_gelu_splitkf")
    -- a user epilogue
    user_epilogue(fused { split_k = 2, bn = 64, stages = 4 })
  end)

  it("fused: fp8 (e4m3), int8 (i32, exact, beta), tf32, batches (L = 2)", function()
    check(cute.e4m3, 96, 80, 528, fused { split_k = 2, bn = 64, stages = 4 }, { rtol = 2 ^ -10 })
    check(cute.i8, 100, 48, 640, fused { split_k = 3, bn = 48, stages = 4 })
    check(cute.tf32, 72, 40, 200, fused { split_k = 3, bn = 64, stages = 4 })
    check(cute.bf16, 136, 72, 328, fused { split_k = 3, bn = 64, stages = 4 }, { l = 2 })
    -- int8 with beta: C read by the last unit
    local A, B, C = operands(cute.i8, 64, 48, 256, nil, cute.i32)
    C:fill(7)
    cute.gemm(A, B, C, { kernel = "sm90", alpha = 2, beta = -3, config = fused { split_k = 2, bn = 48, stages = 4 } })
    local a, b, c = A:to_table(), B:to_table(), C:to_table()
    for i = 0, 63 do
      for j = 0, 47 do
        local s = 0
        for kk = 0, 255 do s = s + a[i + 64 * kk + 1] * b[kk + 256 * j + 1] end
        assert.equal(2 * s - 21, c[i + 64 * j + 1])
      end
    end
    A:free(); B:free(); C:free()
  end)

  it("split_reduce is \"kernel\" or \"fused\"", function()
    local A, B, C = operands(cute.bf16, 64, 64, 256, nil, cute.f32)
    for _, bad in ipairs { "atomic", true, 1 } do
      local ok, msg = pcall(G.plan, A, B, C, { kernel = "sm90", config = { split_k = 2, split_reduce = bad } })
      assert.is_false(ok)
      assert.matches("split_reduce is \"kernel\" %(a second kernel sums the k%-slices, the default%) or \"fused\"",
        tostring(msg))
    end
    local p = G.plan(A, B, C, { kernel = "sm90", config = { split_k = 2, split_reduce = "kernel" } })
    assert.matches("_splitk$", p.kernel.name)
    assert.is_not_nil(p.reduce)
    A:free(); B:free(); C:free()
  end)
end)
