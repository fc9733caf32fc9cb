-- The Hopper attention kernel (cute.lib.attention_sm90: TMA, mbarrier rings, wgmma
-- SS and RS, warp specialisation, ping-pong) run on the CPU simulator as an sm_90a
-- device, through cute.lib.attention.forward, against float64 on every row with O
-- poisoned first: each head dimension, causal, a sliding window, grouped-query
-- heads, Sq ~= Sk (rows that see no key: O = 0, LSE = -inf), varlen, f16; the
-- persistent grid (config.persistent) on a few CTAs with the same cases; and the
-- kernel's variants (two Qs, tiles overlapped, O by TMA or stored directly, the
-- unmasked blocks' loop, lazy rescaling, ...).
local cute = require "cute"
local H = require "tests.spec.trace.helper"


describe("cute.lib.attention_sm90 (on the simulator as sm_90a)", function()
  local sim = H.simulator({ arch = "sm_90a" })
  setup(sim.enter)
  teardown(sim.leave)

  local seed = os.time() % 1000
  local function run(c)
    local dt = c.dtype or cute.bf16
    local qs = c.varlen and { c.cu_q[#c.cu_q], c.hq, c.d } or { c.b, c.sq, c.hq, c.d }
    local ks = c.varlen and { c.cu_k[#c.cu_k], c.hkv, c.d } or { c.b, c.sk, c.hkv, c.d }
    local Q = cute.tensor(dt, qs, "row"):uniform(-1, 1, seed)
    local K = cute.tensor(dt, ks, "row"):uniform(-1, 1, seed + 1)
    local V = cute.tensor(dt, ks, "row"):uniform(-1, 1, seed + 2)
    local O = cute.tensor(dt, qs, "row"):fill(0 / 0)
    -- (a case that sets config.o_vec tests O's direct stores: O not by TMA there)
    local o_tma = c.o_tma
    if o_tma == nil and c.o_vec ~= nil then o_tma = false end
    local opts = { causal = c.causal, window = c.window, cu_seqlens_q = c.cu_q, cu_seqlens_k = c.cu_k, scale = c.scale,
      config = c.ctas and { persistent = true, max_ctas = c.ctas, lpt_group = c.lpt_group, o_vec = c.o_vec,
        lazy_rescale = c.lazy, uniform_desc = c.udesc, sum_mma = c.sum_mma, bm = c.bm, bn = c.bn,
        pingpong = c.pingpong, ctas_per_sm = c.cps, q_stages = c.q_stages, tile_overlap = c.tov, o_tma = o_tma,
        unmasked_loop = c.uloop, late_k = c.late_k, early_p = c.early_p, s_early = c.s_early,
        half_masked = c.half, narrow_diag = c.narrow }
        or (c.o_vec ~= nil and { o_vec = c.o_vec, o_tma = false }) or c.cfg }
    local p = cute.lib.attention.plan(Q, K, V, O, opts)
    assert.equal("sm90", p.kernel_name, p.why)
    -- (a case of config.s_early runs the ping-pong tiles it changes)
    if (opts.config or {}).s_early then assert.matches("_searly", p.kernel.name) end
    if (opts.config or {}).narrow_diag then assert.matches("_narrow", p.kernel.name) end
    if c.ctas then -- a persistent grid of c.ctas CTAs, each walking several tiles
      assert.same({ c.ctas, 1, 1 }, p.grid)
      assert.matches("persistent: " .. c.ctas .. " CTAs", p.why)
      local tiles = tonumber(p.why:match("walk (%d+) work tiles"))
      assert.is_true(tiles >= 2 * c.ctas, p.why)
      assert.equal(c.lpt or false, p.config.lpt)
    end
    local o, lse = cute.lib.attention.forward(Q, K, V, O, opts)
    local r = cute.testing.check_attention(Q, K, V, o, lse, { causal = c.causal, window = c.window, scale = c.scale,
      cu_seqlens_q = c.cu_q, cu_seqlens_k = c.cu_k, what = c.what, lse_tol = c.lse_tol })
    return r
  end

  -- a packed batch of three causal sequences (the last of one row) on a persistent grid
  -- of 3 CTAs, with the case's fields added
  local function packed(fields)
    local c = { varlen = true, cu_q = { 0, 100, 340, 341 }, cu_k = { 0, 150, 410, 487 }, hq = 2, hkv = 1, d = 128,
      causal = true, ctas = 3, lpt = true }
    for k, v in pairs(fields) do c[k] = v end
    return c
  end
  -- the persistent grid's cases that each of its variants runs with its fields: Sq > Sk
  -- under a causal mask (tiles no key reaches, between tiles that have keys), d 64 with
  -- two Qs (each buffer filled and released more than once), a packed batch (a
  -- sequence's tiles past its end are not live)
  local function persistent_cases(fields, name)
    local function with(c)
      for k, v in pairs(fields) do c[k] = v end
      return c
    end
    local r = run(with { b = 2, sq = 300, sk = 180, hq = 2, hkv = 1, d = 128, causal = true, ctas = 3, lpt = true,
      what = name .. " causal, Sq > Sk" })
    assert.is_true(r.masked_rows > 0)
    run(with { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, ctas = 2, q_stages = 2,
      what = name .. " d64, two Qs" })
    run(packed(with { what = name .. " varlen" }))
  end

  it("head dimensions 64 (ping-pong, or three consumer warpgroups), 128 (ping-pong), 256, ragged lengths", function()
    run { b = 2, sq = 200, sk = 200, hq = 2, hkv = 2, d = 64, what = "d64" }
    -- (up to 512 keys d 64 takes two ping-ponging 128-row warpgroups; beyond, three of 64 rows)
    run { b = 1, sq = 250, sk = 150, hq = 1, hkv = 1, d = 64, cfg = { bm = 192, bn = 128, pingpong = false },
      what = "d64, 192-row tiles" }
    run { b = 1, sq = 130, sk = 333, hq = 2, hkv = 2, d = 128, what = "d128, Sq < Sk" }
    run { b = 1, sq = 70, sk = 150, hq = 1, hkv = 1, d = 256, what = "d256" }
  end)

  it("causal (bottom-right aligned: rows that see no key), a window, grouped-query heads, f16", function()
    local r = run { b = 1, sq = 300, sk = 180, hq = 4, hkv = 2, d = 128, causal = true, what = "causal, Sq > Sk" }
    assert.is_true(r.masked_rows > 0) -- the first 120 rows see no key
    run { b = 1, sq = 260, sk = 260, hq = 2, hkv = 1, d = 64, window = { 50, 10 }, what = "window" }
    -- a window wider than a key block: blocks that cross only its left edge, or only its right
    run { b = 1, sq = 600, sk = 640, hq = 1, hkv = 1, d = 128, window = { 300, 40 }, what = "wide window" }
    run { b = 1, sq = 150, sk = 150, hq = 2, hkv = 2, d = 128, dtype = cute.f16, causal = true, what = "f16" }
    -- one consumer warpgroup of 64 rows, three CTAs an SM (d 64 causal from 1025 to 2048 keys)
    local r2 = run { b = 1, sq = 300, sk = 260, hq = 2, hkv = 1, d = 64, causal = true,
      cfg = { bm = 64, bn = 96, pingpong = false, ctas_per_sm = 3 }, what = "causal, 64 x 96 tiles, 3 CTAs an SM" }
    assert.is_true(r2.masked_rows > 0)
  end)

  -- a persistent grid capped at 2-3 CTAs: each walks several (query block, head,
  -- batch) tiles, its pipelines' phases and ping-pong turns carried from tile to tile
  it("a persistent grid: head dimensions 64, 128 and 256, ragged lengths, grouped-query heads", function()
    run { b = 2, sq = 200, sk = 200, hq = 2, hkv = 1, d = 64, ctas = 3, what = "persistent d64, gqa" }
    run { b = 1, sq = 130, sk = 333, hq = 2, hkv = 2, d = 128, ctas = 2, what = "persistent d128, Sq < Sk" }
    run { b = 1, sq = 140, sk = 90, hq = 2, hkv = 2, d = 256, ctas = 2, what = "persistent d256, Sq > Sk" }
    -- config.uniform_desc = false: every descriptor sliced per thread (the old kernels)
    run { b = 1, sq = 130, sk = 333, hq = 2, hkv = 2, d = 128, ctas = 2, udesc = false,
      what = "persistent d128, per-thread descriptors" }
  end)

  it("a persistent grid: causal (longest tiles first, tiles that see no key), a window, varlen", function()
    local r = run { b = 2, sq = 300, sk = 180, hq = 2, hkv = 1, d = 128, causal = true, ctas = 3, lpt = true,
      what = "persistent causal, Sq > Sk" }
    assert.is_true(r.masked_rows > 0) -- the first 120 rows see no key: the first query block's tiles none
    run { b = 1, sq = 260, sk = 260, hq = 2, hkv = 2, d = 64, window = { 50, 10 }, ctas = 2,
      what = "persistent window" }
    run(packed { what = "persistent varlen" })
    -- one 64-row consumer warpgroup a CTA, three CTAs an SM
    run { b = 1, sq = 260, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 3, lpt = true, bm = 64, bn = 64,
      pingpong = false, cps = 3, what = "persistent causal, 64 x 64 tiles, 3 CTAs an SM" }
    -- longest first in groups of (batch, head) pairs: 6 pairs in groups of 4 (the
    -- last of 2), 3 query blocks each; every row checked
    run { b = 2, sq = 300, sk = 300, hq = 3, hkv = 1, d = 64, causal = true, ctas = 4, lpt = true, lpt_group = 4,
      what = "persistent causal, groups of 4 pairs" }
  end)

  it("config.q_stages = 2: Q in two buffers, the next tile's Q loading while this tile's products read the other",
    function()
      -- several tiles a CTA so that each buffer is filled and released more than once, a
      -- ragged last block, a causal mask (tiles of unequal length), d 64 and 128
      run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, ctas = 2, q_stages = 2, what = "q_stages 2 d64" }
      run { b = 1, sq = 333, sk = 400, hq = 2, hkv = 2, d = 128, causal = true, ctas = 2, lpt = true, q_stages = 2,
        what = "q_stages 2 d128 causal" }
    end)

  it("config.tile_overlap: a tile's last P V and the next tile's first S in one turn", function()
    -- several tiles a CTA; Sq > Sk under a causal mask (tiles no key reaches, between
    -- tiles that have keys: no S goes ahead of them), two Qs, three consumer warpgroups,
    -- varlen (a sequence's tiles past its end are not live)
    persistent_cases({ tov = true }, "tile_overlap")
    run { b = 1, sq = 400, sk = 260, hq = 2, hkv = 2, d = 64, ctas = 2, bm = 192, pingpong = false, tov = true,
      what = "tile_overlap d64, 192-row tiles" }
  end)

  it("config.o_tma: O through shared memory (stmatrix, 128B swizzle) and TMA stores", function()
    -- a ragged last query block (TMA clips the rows past O's end), every head
    -- dimension (1, 2 and 4 strips of 64 columns), three consumer warpgroups, a
    -- persistent grid (each buffer written again after its store), with two Qs and
    -- tiles overlapped, Sq > Sk under a causal mask (rows no key reaches: O = 0), and a
    -- packed batch (its partial tiles stored directly: TMA would write past the sequence)
    run { b = 2, sq = 200, sk = 200, hq = 2, hkv = 2, d = 64, cfg = { o_tma = true }, what = "o_tma d64" }
    run { b = 1, sq = 250, sk = 150, hq = 1, hkv = 1, d = 64, cfg = { bm = 192, bn = 128, pingpong = false,
      o_tma = true }, what = "o_tma d64, 192-row tiles" }
    run { b = 1, sq = 70, sk = 150, hq = 1, hkv = 1, d = 256, cfg = { o_tma = true, bm = 64, bn = 64,
      pingpong = false }, what = "o_tma d256, one consumer warpgroup" }
    persistent_cases({ o_tma = true }, "o_tma")
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, ctas = 2, q_stages = 2, tov = true, o_tma = true,
      what = "o_tma d64, two Qs, tiles overlapped" }
  end)

  it("config.unmasked_loop: the blocks that cross no edge in a loop of their own, the rest masked as before", function()
    -- Sk not a multiple of the block (the last block masked), a causal mask with Sq < Sk
    -- and Sq > Sk (rows no key reaches; tiles whose every block crosses the diagonal),
    -- each head dimension, the persistent grid's cases (varlen: the split differs by
    -- sequence), with two Qs and tiles overlapped under a causal mask
    run { b = 2, sq = 200, sk = 333, hq = 2, hkv = 1, d = 64, cfg = { unmasked_loop = true }, what = "uloop d64" }
    local r = run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 2, d = 128, causal = true,
      cfg = { unmasked_loop = true }, what = "uloop causal, Sq > Sk" }
    assert.is_true(r.masked_rows > 0)
    run { b = 1, sq = 140, sk = 420, hq = 1, hkv = 1, d = 128, causal = true, cfg = { unmasked_loop = true },
      what = "uloop causal, Sq < Sk" }
    run { b = 1, sq = 70, sk = 300, hq = 1, hkv = 1, d = 256, causal = true, cfg = { unmasked_loop = true },
      what = "uloop d256 causal" }
    -- config.late_k (K's stage released after the softmax, on a predicate of its sums)
    run { b = 1, sq = 140, sk = 420, hq = 1, hkv = 1, d = 128, causal = true,
      cfg = { unmasked_loop = true, late_k = true }, what = "uloop, K late, causal" }
    run { b = 2, sq = 200, sk = 333, hq = 2, hkv = 1, d = 64, cfg = { late_k = true }, what = "K late d64" }
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 2, lpt = true, q_stages = 2,
      tov = true, late_k = true, what = "K late persistent causal, two Qs, tiles overlapped" }
    -- config.early_p (P converted before O's rescale): lazy (d 64, a branch) and not (d 128)
    run { b = 2, sq = 200, sk = 333, hq = 2, hkv = 1, d = 64, cfg = { unmasked_loop = true, early_p = true },
      what = "uloop, P early, d64" }
    run { b = 1, sq = 140, sk = 420, hq = 1, hkv = 1, d = 128, causal = true,
      cfg = { unmasked_loop = true, early_p = true, lazy_rescale = false }, what = "uloop, P early, causal d128" }
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, ctas = 2, q_stages = 2, uloop = true, early_p = true,
      what = "uloop, P early, persistent d64, two Qs" }
    persistent_cases({ uloop = true }, "uloop")
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 2, lpt = true, q_stages = 2,
      tov = true, uloop = true, what = "uloop persistent causal, two Qs, tiles overlapped" }
  end)

  it("config.s_early: S issued before the ping-pong turn, which holds only P V", function()
    -- the ping-pong tiles (128 rows, two warpgroups taking turns): the unmasked loop and
    -- the masked one, a causal mask with rows no key reaches, the persistent grid with
    -- two Qs (turns carried from tile to tile) and with tiles overlapped
    run { b = 2, sq = 200, sk = 333, hq = 2, hkv = 1, d = 64, cfg = { pingpong = true, bm = 128,
      unmasked_loop = true, s_early = true }, what = "S early d64" }
    local r = run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 2, d = 128, causal = true,
      cfg = { s_early = true }, what = "S early causal d128, Sq > Sk" }
    assert.is_true(r.masked_rows > 0)
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, ctas = 2, q_stages = 2, pingpong = true, bm = 128,
      uloop = true, early_p = true, s_early = true, what = "S early persistent d64, two Qs" }
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 2, lpt = true, q_stages = 2,
      pingpong = true, bm = 128, tov = true, s_early = true, what = "S early persistent causal, tiles overlapped" }
  end)

  it("config.half_masked: a warp whose rows keep none of a block's second half skips its exponentials", function()
    -- causal diagonals on 128-key blocks (the first warpgroup's warps narrow), a
    -- diagonal off the blocks' grid (Sq < Sk) and rows no key reaches (Sq > Sk), a
    -- window, the persistent grid with overlapped tiles and the unmasked loop, d 256's
    -- 64-key blocks and a packed batch
    local half = { half_masked = true }
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, cfg = half, what = "half d64 causal" }
    run { b = 1, sq = 200, sk = 333, hq = 2, hkv = 2, d = 64, causal = true, cfg = half,
      what = "half d64 causal, Sq < Sk" }
    local r = run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 1, d = 128, causal = true,
      cfg = { half_masked = true, lazy_rescale = false }, what = "half d128 causal, Sq > Sk, eager rescaling" }
    assert.is_true(r.masked_rows > 0)
    run { b = 1, sq = 260, sk = 260, hq = 2, hkv = 1, d = 64, window = { 100, 0 }, cfg = half,
      what = "half d64 window" }
    run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 2, lpt = true, q_stages = 2,
      pingpong = true, bm = 128, tov = true, uloop = true, half = true, what = "half persistent causal, tov, uloop" }
    run { b = 1, sq = 200, sk = 200, hq = 2, hkv = 1, d = 256, causal = true, ctas = 2, lpt = true, half = true,
      what = "half persistent causal d256" }
    run(packed { half = true, what = "half varlen causal" })
  end)

  it("config.narrow_diag: a warpgroup's S and P V at half width where its rows keep no key of the block's second half",
    function()
      -- causal diagonals on the blocks' grid and off it (Sq < Sk), rows no key reaches
      -- (Sq > Sk) with eager rescaling, a window with half-masked warps, the sequence's
      -- end in a block's first half (no mask: both warpgroups narrow), the persistent grid
      -- with two Qs and the unmasked loop, a packed batch
      local narrow = { narrow_diag = true }
      run { b = 2, sq = 256, sk = 256, hq = 2, hkv = 1, d = 64, causal = true, cfg = narrow,
        what = "narrow d64 causal" }
      run { b = 1, sq = 200, sk = 333, hq = 2, hkv = 2, d = 64, causal = true, cfg = narrow,
        what = "narrow d64 causal, Sq < Sk" }
      local r = run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 1, d = 64, causal = true,
        cfg = { narrow_diag = true, lazy_rescale = false }, what = "narrow d64 causal, Sq > Sk, eager rescaling" }
      assert.is_true(r.masked_rows > 0)
      run { b = 1, sq = 260, sk = 260, hq = 2, hkv = 1, d = 64, window = { 100, 0 },
        cfg = { narrow_diag = true, half_masked = true }, what = "narrow d64 window, half-masked warps" }
      run { b = 1, sq = 200, sk = 190, hq = 2, hkv = 1, d = 64, cfg = narrow, what = "narrow d64, the keys' end" }
      run { b = 2, sq = 300, sk = 300, hq = 2, hkv = 1, d = 64, causal = true, ctas = 2, lpt = true, q_stages = 2,
        pingpong = true, bm = 128, uloop = true, narrow = true, what = "narrow persistent causal, two Qs, uloop" }
      run(packed { d = 64, narrow = true, what = "narrow varlen causal" })
    end)

  it("config.lazy_rescale: the running max moves only past 8 (log2), O rescaled when a warp's max moved", function()
    -- a large scale spreads the scores, so that later blocks both move the max (by more
    -- than 8) and leave it; a causal mask and rows past Sk add rows that see no key
    run { b = 1, sq = 200, sk = 400, hq = 1, hkv = 1, d = 64, scale = 3.0, cfg = { lazy_rescale = true },
      what = "lazy d64" }
    run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 1, d = 128, causal = true, scale = 2.0,
      cfg = { lazy_rescale = true }, what = "lazy d128 causal" }
    run { b = 1, sq = 130, sk = 300, hq = 1, hkv = 1, d = 256, scale = 1.0, cfg = { lazy_rescale = true },
      what = "lazy d256" }
    run { b = 1, sq = 260, sk = 400, hq = 2, hkv = 2, d = 128, scale = 2.5, ctas = 2, what = "lazy persistent",
      lazy = true }
  end)

  it("the polynomial exp2 (config.poly_exp2): relative error under 1e-4 from -125 to 8, 0 below -126 and at -inf",
    function()
      local xs = { -math.huge, -1000, -127, -126.25, -126, -125.5, -100.3, -30.5, -8, -1.5, -0.5, -0.25, 0, 0.25, 0.5,
        1, 3.75, 7.5, 8 }
      for i = 0, 200 do xs[#xs + 1] = -20 + i * 0.1375 end -- every fraction of the step
      local n = #xs
      local X = cute.tensor(cute.f32, n):copy_from(xs)
      local Y = cute.tensor(cute.f32, n):fill(0 / 0)
      local k = cute.kernel(function(x, y)
        local i = cute.block_idx().x * 32 + cute.thread_idx().x
        if i < n then y[i] = require("cute.lib.attention_sm90").exp2_poly(x[i]) end
      end)
      k { grid = math.ceil(n / 32), block = 32 }(X, Y)
      local hy = Y:to_host()
      local worst = 0
      for i = 1, n do
        local x, got = xs[i], hy[i - 1]
        if x < -126 then
          assert.equal(0, got, "2^" .. x)
        elseif x < -125 then -- (results near the denormals: tiny, which the GPU's ftz flushes)
          assert.is_true(got >= 0 and got < 2 ^ -124, "2^" .. x)
        else
          local rel = math.abs(got - 2 ^ x) / 2 ^ x
          assert.is_true(rel < 1e-4, string.format("2^%s = %s, expected %s", x, got, 2 ^ x))
          worst = math.max(worst, rel)
        end
      end
      assert.is_true(worst > 1e-6) -- (the cubic's, not ex2's: the test reaches the polynomial)
    end)

  it("config.poly_exp2: a share of P's exponentials by a cubic on the FMA pipe, masked scores still 0", function()
    -- every exponential by the polynomial (1), and half of them with lazy rescaling's
    -- larger exponents (up to 8); a causal mask with rows that see no key, f16's finer P
    run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 1, d = 64, causal = true, cfg = { poly_exp2 = 1 },
      what = "poly d64 causal, Sq > Sk" }
    run { b = 1, sq = 200, sk = 400, hq = 1, hkv = 1, d = 64, scale = 3.0, cfg = { poly_exp2 = 0.5,
      lazy_rescale = true }, what = "poly d64 lazy" }
    run { b = 1, sq = 150, sk = 150, hq = 2, hkv = 2, d = 128, dtype = cute.f16, causal = true,
      cfg = { poly_exp2 = 0.25 }, what = "poly d128 f16" }
  end)

  -- (the sums are of P as rounded for P V: the LSE to bf16's 2^-8, where a row of few keys
  -- cannot average the roundings out; O's numerator and denominator round alike)
  it("config.sum_mma: the row sums by the tensor cores (P times ones), with rows that see no key", function()
    run { b = 1, sq = 300, sk = 180, hq = 2, hkv = 1, d = 64, causal = true, cfg = { sum_mma = true },
      lse_tol = 2 ^ -8, what = "sum_mma d64 causal, Sq > Sk" }
    run { b = 1, sq = 200, sk = 400, hq = 1, hkv = 1, d = 64, scale = 3.0,
      cfg = { sum_mma = true, lazy_rescale = true }, lse_tol = 2 ^ -8, what = "sum_mma d64 lazy" }
    run { b = 1, sq = 130, sk = 333, hq = 2, hkv = 2, d = 128, cfg = { sum_mma = true }, lse_tol = 2 ^ -8,
      what = "sum_mma d128" }
    run { b = 1, sq = 70, sk = 150, hq = 1, hkv = 1, d = 256, cfg = { sum_mma = true }, lse_tol = 2 ^ -8,
      what = "sum_mma d256" }
    run { b = 1, sq = 130, sk = 333, hq = 2, hkv = 2, d = 64, cfg = { sum_mma = true, bm = 192, bn = 128,
      pingpong = false }, lse_tol = 2 ^ -8, what = "sum_mma d64, 192-row tiles" }
    run { b = 2, sq = 200, sk = 200, hq = 2, hkv = 1, d = 128, causal = true, ctas = 3, lpt = true, sum_mma = true,
      lse_tol = 2 ^ -8, what = "sum_mma persistent" }
  end)

  it("O stored directly (config.o_tma = false): 16-byte stores (config.o_vec) or 4-byte ones, a ragged last tile",
    function()
      run { b = 1, sq = 200, sk = 130, hq = 2, hkv = 1, d = 64, o_vec = true, what = "16-byte O d64" }
      run { b = 1, sq = 260, sk = 200, hq = 2, hkv = 2, d = 128, ctas = 2, o_vec = true, q_stages = 2, bn = 128,
        what = "16-byte O persistent" }
      run { b = 1, sq = 200, sk = 130, hq = 2, hkv = 1, d = 64, o_vec = false, what = "4-byte O d64" }
      run { b = 2, sq = 150, sk = 150, hq = 1, hkv = 1, d = 128, causal = true, o_vec = false, what = "4-byte O d128" }
      run { b = 1, sq = 260, sk = 200, hq = 2, hkv = 2, d = 128, ctas = 2, o_vec = false,
        what = "4-byte O persistent" }
    end)
  it("variable-length batches (packed sequences)", function()
    run { varlen = true, cu_q = { 0, 100, 340, 341 }, cu_k = { 0, 150, 410, 487 }, hq = 4, hkv = 2, d = 128,
      causal = true, what = "varlen" }
  end)
end)
