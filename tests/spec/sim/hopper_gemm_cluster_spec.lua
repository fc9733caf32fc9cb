-- cute.gemm's Hopper kernel in clusters of two CTAs (opts.config.cluster = {2, 1}:
-- vertically adjacent tiles share B; {1, 2}: horizontally adjacent ones share A; each
-- CTA loads half of the shared operand's stage and multicasts it into both) on the
-- CPU simulator as an sm_90a device, against float64 (cute.testing) with poisoned
-- outputs: both schedules, fp8, both majors of the shared operand, ragged M and N (a
-- pair's second tile past C), K under one k-tile, more pairs than clusters (the
-- persistent walk); the scheduler's pairs; the option's refusals. The simulator
-- models the cluster (DSMEM, remote mbarrier arrivals, multicast TMA) and reports a
-- hang as a deadlock.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local G = require "cute.lib.gemm"
local S90 = require "cute.lib.gemm_sm90"

describe("cute.gemm's Hopper kernel in clusters of 2 on the simulator (sm_90a)", function()
  local sim = H.simulator({ arch = "sm_90a" })
  setup(sim.enter)
  teardown(sim.leave)

  -- cute.gemm of a random M x K by K x N (A and B in layouts al and bl) into a poisoned
  -- C of dtype cdt with the given config; checks the plan (the cluster's kernel, an
  -- even grid) and C against float64 (every entry, or `samples` of them)
  local function check(dt, m, n, k, config, o)
    o = o or {}
    local cdt = o.cdt or cute.f32
    local lo = dt.name == "u8" and 0 or -1
    local A = cute.tensor(dt, { m, k }, o.al or "row"):uniform(lo, 1)
    local B = cute.tensor(dt, { k, n }, o.bl or "col"):uniform(lo, 1)
    local C = cute.tensor(cdt, { m, n }, "row"):fill(cdt.is_float and 0 / 0 or -12345678)
    local opts = { kernel = "sm90", config = config, pdl = o.pdl_prefetch_b, pdl_prefetch_b = o.pdl_prefetch_b }
    local p = G.plan(A, B, C, opts)
    local cl = config.cluster
    assert.matches("_cluster" .. cl[1] .. "x" .. cl[2] .. (o.pdl_prefetch_b and "_pdl_preb" or "") .. "$",
      p.kernel.name)
    assert.same(cl, p.config.cluster)
    assert.equal(0, p.grid[1] % 2)
    assert.matches("cluster " .. cl[1] .. "x" .. cl[2], p.why)
    cute.gemm(A, B, C, opts)
    local what = string.format("%s %dx%dx%d cluster %dx%d %s", dt.name, m, n, k, cl[1], cl[2],
      config.schedule or "cooperative")
    local r = cute.testing.check_gemm(A, B, C, { rtol = o.rtol or 1e-5, samples = o.samples, what = what })
    if not o.samples then assert.equal(m * n, r.checked) end
    A:free(); B:free(); C:free()
    return p
  end

  it("{2, 1}: two CTAs on vertically adjacent tiles share B; ragged M (a pair's second tile past C)", function()
    -- 3 M tiles: the second pair's rank-1 CTA has no rows of C and still loads its half of B
    check(cute.bf16, 300, 200, 88, { cluster = { 2, 1 }, bn = 64, stages = 4 })
    -- 4 M tiles (3 tiles + a bit), a bf16 C through the TMA-store epilogue
    local p = check(cute.bf16, 424, 136, 128, { cluster = { 2, 1 }, bn = 128, stages = 4 }, { cdt = cute.bf16,
      rtol = 2 ^ -8 })
    assert.is_true(p.config.tma_store)
  end)

  it("with pdl_prefetch_b: B's first stages (multicast in {2, 1}) loaded before the wait, A's after", function()
    -- (each CTA's barriers armed once for both operands, B's half from the pair's other CTA)
    check(cute.bf16, 300, 200, 200, { cluster = { 2, 1 }, bn = 64, stages = 2 }, { pdl_prefetch_b = true })
    check(cute.bf16, 264, 300, 72, { cluster = { 1, 2 }, bn = 64, stages = 4 }, { pdl_prefetch_b = true })
  end)

  it("{1, 2}: horizontally adjacent tiles share A; ragged N, the TMA-store epilogue", function()
    check(cute.bf16, 264, 300, 72, { cluster = { 1, 2 }, bn = 64, stages = 4 })
    -- 5 N tiles: the last pair's second tile has no columns of C (no TMA store for it)
    local p = check(cute.bf16, 130, 296, 64, { cluster = { 1, 2 }, bn = 64, stages = 3 }, { cdt = cute.bf16,
      rtol = 2 ^ -8 })
    assert.is_true(p.config.tma_store)
  end)

  it("K under one k-tile (zero-filled), and a cluster alone keeps the heuristic's tile", function()
    check(cute.bf16, 200, 100, 24, { cluster = { 2, 1 }, bn = 32, stages = 4 })
    local p = check(cute.bf16, 136, 72, 8, { cluster = { 1, 2 } })
    assert.equal(S90.pick_config(136, 72, 8, 1, "bf16").bn, p.config.bn)
  end)

  it("the ping-pong schedule in clusters: more pairs than clusters (both warpgroups' turns), ragged", function()
    -- 10 x 16 tiles of 64 x 32: 80 pairs on the 66 clusters of 132 CTAs
    check(cute.bf16, 600, 512, 64, { cluster = { 2, 1 }, bm = 64, bn = 32, stages = 4, schedule = "pingpong" },
      { samples = 3000 })
    -- 3 x 5 tiles: the last pairs' second tiles past C, the TMA-store epilogue
    local p = check(cute.bf16, 150, 296, 136, { cluster = { 1, 2 }, bm = 64, bn = 64, stages = 4,
      schedule = "pingpong" }, { cdt = cute.bf16, rtol = 2 ^ -8 })
    assert.is_true(p.config.tma_store)
  end)

  it("the cooperative schedule's persistent walk: more pairs than clusters", function()
    -- 5 x 32 tiles of 128 x 32: 80 pairs along N (the last M tile alone in its row)
    check(cute.bf16, 600, 1024, 40, { cluster = { 1, 2 }, bn = 32, stages = 4 }, { samples = 3000 })
  end)

  it("batched: the pairs of each batch, a pair's second tile past C in each", function()
    local m, n, k, l = 264, 150, 64, 3 -- 3 x 3 tiles of 128 x 64 a batch
    local A = cute.tensor(cute.bf16, { m, k, l }, { k, 1, m * k }):uniform(-1, 1)
    local B = cute.tensor(cute.bf16, { k, n, l }, { 1, k, k * n }):uniform(-1, 1)
    local C = cute.tensor(cute.f32, { m, n, l }, { n, 1, m * n }):fill(0 / 0)
    for _, cl in ipairs { { 2, 1 }, { 1, 2 } } do
      local o = { kernel = "sm90", config = { cluster = cl, bn = 64, stages = 4 } }
      assert.matches("_cluster", G.plan(A, B, C, o).kernel.name)
      C:fill(0 / 0)
      cute.gemm(A, B, C, o)
      local r = cute.testing.check_gemm(A, B, C, { rtol = 1e-5, what = "batched cluster " .. cl[1] .. "x" .. cl[2] })
      assert.equal(m * n * l, r.checked)
    end
  end)

  it("fp8 (e4m3) with a 128-byte k-tile, and MN-major shared operands split by boxes", function()
    check(cute.e4m3, 200, 160, 256, { cluster = { 2, 1 }, bn = 64, stages = 4 })
    -- B MN-major (two 64-row boxes a stage: one from each CTA), A MN-major likewise
    check(cute.bf16, 200, 256, 72, { cluster = { 2, 1 }, bn = 128, stages = 4 }, { bl = "row" })
    check(cute.bf16, 136, 160, 72, { cluster = { 1, 2 }, bn = 64, stages = 4 }, { al = "col" })
  end)
end)

describe("cute.lib.gemm_sm90's cluster scheduler and option (CPU)", function()
  it("the pairs cover every tile once; a pair's second tile lies past C only at a ragged edge", function()
    for _, c in ipairs { { 3, 5, 8 }, { 4, 4, 8 }, { 7, 3, 2 }, { 1, 1, 8 }, { 10, 9, 3 } } do
      local tm, tn, group = c[1], c[2], c[3]
      for _, cl in ipairs { { 2, 1 }, { 1, 2 } } do
        local seen, outside = {}, 0
        local pairs_n = S90.cluster_pairs(tm, tn, cl)
        for t = 0, 2 * pairs_n - 1 do -- two batches
          for rank = 0, 1 do
            local bm, bn, l = S90.cluster_tile_coords(t, tm, tn, group, cl, rank)
            if bm < tm and bn < tn then
              local key = bm .. "," .. bn .. "," .. l
              assert.is_nil(seen[key], key .. " twice")
              seen[key] = true
            else
              outside = outside + 1
              -- only the rank-1 CTA's tile, one past the edge of the paired mode
              assert.equal(1, rank)
              if cl[1] == 2 then
                assert.same({ tm, true }, { bm, bn < tn })
              else
                assert.same({ tn, true }, { bn, bm < tm })
              end
            end
            -- the partner's tile: the same column ({2, 1}) or row ({1, 2})
            local pm, pn = S90.cluster_tile_coords(t, tm, tn, group, cl, 1 - rank)
            if cl[1] == 2 then assert.equal(bn, pn) else assert.equal(bm, pm) end
          end
        end
        local n = 0
        for _ in pairs(seen) do n = n + 1 end
        assert.equal(2 * tm * tn, n)
        local odd = cl[1] == 2 and tm % 2 or tn % 2
        assert.equal(2 * odd * (cl[1] == 2 and tn or tm), outside)
      end
    end
  end)

  it("plan: {1, 1} is today's kernel; other shapes and grouped GEMMs are refused", function()
    local A = cute.fake_tensor(cute.bf16, { 512, 256 }, "row")
    local B = cute.fake_tensor(cute.bf16, { 256, 512 }, "col")
    local base = G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = { bn = 128, stages = 4 } })
    local one = G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = { bn = 128, stages = 4,
      cluster = { 1, 1 } } })
    assert.equal(base.kernel, one.kernel)
    assert.is_nil(one.config.cluster)
    assert.is_nil(one.why:find("cluster", 1, true))
    local two = G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = { bn = 128, stages = 4,
      cluster = { 2, 1 } } })
    assert.equal("gemm_sm90_bf16_128x128x64_cluster2x1", two.kernel.name)
    assert.equal(16, two.grid[1]) -- 4 x 4 tiles: 8 pairs, a cluster of 2 CTAs each
    assert.matches("cluster 2x1 %(the pair shares B: TMA multicast%)", two.why)
    local function refused(cl, grouped)
      local ok, msg
      if grouped then
        local W = cute.fake_tensor(cute.bf16, { 256, 128, 2 }, cute.make_layout({ 256, 128, 2 }, { 1, 256, 256 * 128 }))
        local X = cute.fake_tensor(cute.bf16, { 512, 256 }, "row")
        local Y = cute.fake_tensor(cute.bf16, { 512, 128 }, "row")
        ok, msg = pcall(G.grouped_plan, X, W, Y, { 0, 300, 512 }, { arch = "sm_90a", config = { cluster = cl } })
      else
        ok, msg = pcall(G.plan, A, B, nil, { arch = "sm_90a", kernel = "sm90", config = { cluster = cl } })
      end
      assert.is_false(ok)
      return msg
    end
    for _, bad in ipairs { { 2, 2 }, { 4, 1 }, { 1, 4 }, { 2 }, "2x1", { 2, 1, 2 } } do
      assert.matches("gemm_sm90's cluster is {1, 1} %(none%), {2, 1} .* or {1, 2}", refused(bad))
    end
    assert.matches("got {2, 2}", refused { 2, 2 })
    assert.matches("a grouped GEMM does not run in clusters", refused({ 2, 1 }, true))
    -- opts.config without opts.kernel = "sm90" is the mma.sync kernel's, which has no clusters
    local ok, msg = pcall(G.plan, A, B, nil, { arch = "sm_90a", config = { cluster = { 2, 1 } } })
    assert.is_false(ok)
    assert.matches("opts.config.cluster is the Hopper kernel's %(with opts.kernel = \"sm90\"%), and this problem does "
      .. "not run it: opts.config configures the mma.sync kernel %(with opts.kernel = \"sm90\" it configures "
      .. "gemm_sm90%)", msg)
  end)
end)
