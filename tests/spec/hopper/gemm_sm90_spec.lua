-- The Hopper GEMM (cute.lib.gemm_sm90): cute.lib.gemm.plan's choice and its
-- reasons; the kernel compiled for sm_90a on the CPU (no spill, no
-- serialized wgmma, setmaxnreg honoured, the instructions in the PTX and,
-- with a disassembler, the SASS); on an H100/H200, results against float64
-- on sampled entries with poisoned outputs.
local cute = require "cute"
local G = require "cute.lib.gemm"
local H = require "tests.spec.trace.helper"

-- Fake (CPU) operands: A M x K row-major, B K x N column-major (both K-major).
local function fakes(dt, m, n, k, b_layout)
  return cute.fake_tensor(dt, { m, k }, "row"), cute.fake_tensor(dt, { k, n }, b_layout or "col")
end

local function compile(dt, m, n, k, opts)
  local A, B = fakes(dt, m, n, k)
  local C = opts and opts.c_dtype and cute.fake_tensor(opts.c_dtype, { m, n }, "row") or nil
  local o = { arch = "sm_90a" }
  for key, v in pairs(opts or {}) do if key ~= "c_dtype" then o[key] = v end end
  local p = G.plan(A, B, C, o)
  return p, p.kernel:compile(unpack(p.args))
end

describe("cute.lib.gemm_sm90 (CPU)", function()
  it("plan picks the Hopper kernel for K-major bf16/f16 on sm_90a and says why", function()
    for _, dt in ipairs { cute.bf16, cute.f16 } do
      local A, B = fakes(dt, 2000, 2000, 304)
      local p = G.plan(A, B, nil, { arch = "sm_90a" })
      assert.equal("sm90", p.kernel_name)
      assert.matches("TMA %+ wgmma", p.why)
      assert.equal(384, p.block)
      assert.same({ 128, 256, 64, 4 }, { p.config.bm, p.config.bn, p.config.bk, p.config.stages })
      -- tiles: 16 x 8 = 128 (fewer than the SMs: one CTA a tile)
      assert.equal(128, p.grid[1])
      assert.equal("gemm_sm90_" .. dt.name .. "_128x256x64", p.kernel.name)
    end
    -- the other input dtypes: k-tiles of 128 bytes
    for _, c in ipairs { { cute.e4m3, 128, "e4m3" }, { cute.e5m2, 128, "e5m2" }, { cute.i8, 128, "i8" },
      { cute.u8, 128, "u8" }, { cute.f32, 32, "tf32" } } do
      local A, B = fakes(c[1], 4096, 4096, 4096)
      local p = G.plan(A, B, nil, { arch = "sm_90a" })
      assert.equal("sm90", p.kernel_name)
      assert.equal(c[2], p.config.bk)
      assert.equal("gemm_sm90_" .. c[3] .. "_128x256x" .. c[2], p.kernel.name)
    end
  end)

  it("picks the tile width that fills the machine's waves, and more stages for narrow tiles", function()
    local S = require "cute.lib.gemm_sm90"
    local function pick(m, n, k, l)
      local c = S.pick_config(m, n, k, l, "bf16", 132)
      return { c.bm, c.bn, c.stages, c.schedule }
    end
    assert.same({ 128, 256, 4 }, pick(4096, 4096, 4096, 1)) -- 512 tiles: 3.9 waves either way; the widest
    assert.same({ 128, 256, 4 }, pick(2048, 2048, 2048, 1)) -- 128 tiles: one wave
    assert.same({ 128, 128, 6 }, pick(256, 8192, 8192, 1)) -- 128 tiles of 128 instead of 64 of 256
    assert.same({ 128, 256, 4 }, pick(128, 8192, 8192, 4)) -- batches fill the machine too
    -- a short K over at least 8 waves of 128 x 256 tiles: 64 x 256 ping-pong (16-bit inputs)
    assert.same({ 64, 256, 5, "pingpong" }, pick(16384, 16384, 1024, 1)) -- 8192 tiles
    assert.same({ 64, 256, 5, "pingpong" }, pick(16384, 4096, 1000, 1)) -- 2048 tiles
    assert.same({ 128, 256, 4 }, pick(4096, 4096, 1024, 1)) -- 512 tiles: 3.9 waves
    assert.same({ 128, 256, 4 }, pick(8192, 8192, 2048, 1)) -- K 2048
    assert.same({ 128, 256, 4 }, pick(8192, 8192, 1024, 2)) -- batched: unmeasured
    local c8 = S.pick_config(8192, 8192, 1024, 1, "e4m3", 132) -- fp8: unmeasured
    assert.same({ 128, 256, 4 }, { c8.bm, c8.bn, c8.stages, c8.schedule })
    -- up to 64 rows: ping-pong 64-row tiles, the widest BN whose tiles cover 48% of the SMs
    assert.same({ 64, 128, 8, "pingpong" }, pick(16, 8192, 8192, 1)) -- 64 tiles
    assert.same({ 64, 64, 8, "pingpong" }, pick(64, 4096, 14336, 1)) -- 64 tiles (128 wide: 32)
    assert.same({ 64, 32, 8, "pingpong" }, pick(33, 1024, 4096, 1)) -- 32 tiles: the narrowest
    assert.same({ 64, 128, 8, "pingpong" }, pick(64, 1024, 4096, 8)) -- 8 batches of 8 tiles
    -- the same up to 128 rows of one matrix; batched, the cooperative 128-row tiles
    assert.same({ 64, 128, 8, "pingpong" }, pick(128, 8192, 8192, 1)) -- 128 tiles
    assert.same({ 64, 128, 8, "pingpong" }, pick(128, 4096, 14336, 1)) -- 64 tiles
    assert.same({ 64, 64, 8, "pingpong" }, pick(65, 2048, 4096, 1)) -- 64 tiles (128 wide: 32)
    assert.equal(128, pick(128, 4096, 4096, 2)[1])
    -- 129-256 rows: ping-pong where the cooperative tiles' last row would be at most
    -- half full, or where the ping-pong tiles are no more; else cooperative
    assert.same({ 64, 128, 8, "pingpong" }, pick(192, 8192, 8192, 1)) -- 3 rows of tiles against 2
    assert.same({ 64, 128, 8, "pingpong" }, pick(129, 4096, 4096, 1))
    assert.same({ 64, 128, 8, "pingpong" }, pick(256, 4096, 14336, 1)) -- 128 tiles either way
    assert.same({ 128, 128, 6 }, pick(256, 8192, 8192, 1)) -- 128 tiles against 256
    assert.same({ 128, 128, 6 }, pick(255, 8192, 8192, 1))
    assert.equal(128, pick(257, 8192, 8192, 1)[1])
    assert.equal(128, pick(192, 8192, 8192, 2)[1])
    -- up to 64 columns with more rows (a swapped skinny problem): BN the columns rounded
    -- up to 16, 64-row ping-pong tiles, 12 stages
    assert.same({ 64, 16, 12, "pingpong" }, pick(8192, 16, 8192, 1))
    assert.same({ 64, 16, 12, "pingpong" }, pick(14336, 3, 4096, 1))
    assert.same({ 64, 48, 12, "pingpong" }, pick(4096, 40, 4096, 1))
    assert.same({ 64, 64, 12, "pingpong" }, pick(4096, 64, 14336, 1))
    -- a skinny problem is planned swapped (C^T = B^T A^T): its 17 rows are the tile's
    -- 32 columns, the grid covers C^T's 8192 rows (16 rows and fewer: the same on
    -- Hopper from GEMV_ROWS_SM90 rows, cute.lib.gemv below)
    local A, B = fakes(cute.bf16, 17, 8192, 8192)
    local p = G.plan(A, B, nil, { arch = "sm_90a" })
    assert.same({ 64, 32, 12, "pingpong" }, { p.config.bm, p.config.bn, p.config.stages, p.config.schedule })
    assert.is_true(p.config.swapped)
    assert.matches("; swapped: M = 17 <= 64 rows %(cute.lib.gemm_sm90.SWAP_ROWS%): C^T = B^T A^T", p.why)
    assert.equal("gemm_sm90_bf16_64x32x64_pingpong", p.kernel.name)
    assert.equal(128, p.grid[1])
    assert.same({ 8192, 17, 1 }, p.args[3].layout.shape) -- C^T: C's memory (17 x 8192 f32, row-major)
    assert.same({ 1, 8192, 0 }, p.args[3].layout.stride)
    -- not swapped: with swap_ab = false, a tile in opts.config, few columns, or over 64 rows
    local function swapped(m, n, config)
      local a, b = fakes(cute.bf16, m, n, 1024)
      return G.plan(a, b, nil, { arch = "sm_90a", kernel = "sm90", config = config }).config.swapped == true
    end
    assert.is_false(swapped(17, 8192, { swap_ab = false }))
    assert.is_false(swapped(17, 8192, { bm = 64, bn = 128, stages = 4, schedule = "pingpong" }))
    assert.is_true(swapped(17, 8192, { split_k = 2 }))
    assert.is_false(swapped(64, 128))
    assert.is_true(swapped(64, 256))
    assert.is_false(swapped(65, 8192))
    assert.is_true(swapped(200, 1024, { swap_ab = true }))
    assert.matches("swap_ab is true or false, got yes",
      H.error_of(function() swapped(16, 256, { swap_ab = "yes" }) end))
  end)

  it("plan falls back to the sm_80 kernel and says why", function()
    local A, B = fakes(cute.bf16, 256, 256, 256)
    local function why(a, b, opts) local p = G.plan(a, b, nil, opts) return p.kernel_name, p.why end
    local A8 = cute.fake_tensor(cute.e4m3, { 256, 256 }, "row")
    local k, w = why(A8, cute.fake_tensor(cute.e4m3, { 256, 256 }, "row"), { arch = "sm_90a" })
    assert.equal("sm80", k)
    assert.matches("B is MN%-major, and wgmma reads e4m3 operands K%-major only", w)
    k, w = why(cute.fake_tensor(cute.bf16, { 256, 300 }, "row"), cute.fake_tensor(cute.bf16, { 300, 256 }, "col"),
      { arch = "sm_90a" })
    assert.equal("sm80", k)
    assert.matches("not multiples of 16 bytes", w)
    k, w = why(A, B, { arch = "sm_90a", kernel = "sm80" })
    assert.equal("sm80", k)
    assert.matches("forces", w)
    k, w = why(A, B, { arch = "sm_90a", config = { bm = 64, bn = 64, bk = 32, stages = 3, wm = 2, wn = 2 } })
    assert.equal("sm80", k)
    assert.matches("opts%.config configures the mma%.sync kernel", w)
    k, w = why(A, B, { arch = "sm_80" })
    assert.equal("sm80", k)
    assert.matches("sm_80", w)
    -- forcing the Hopper kernel where it cannot run, and unknown kernels: errors at the caller's line
    local NB = cute.fake_tensor(cute.e4m3, { 256, 256 }, "row")
    local msg = H.error_at(function() G.plan(A8, NB, nil, { arch = "sm_90a", kernel = "sm90" }) end)
    assert.matches("cute%.gemm: opts%.kernel = \"sm90\", but B is MN%-major", msg)
    msg = H.error_at(function() G.plan(A, B, nil, { kernel = "sm100" }) end)
    assert.matches("opts%.kernel is sm100", msg)
  end)

  it("the tile scheduler visits every tile of every batch once, in groups along M", function()
    local S = require "cute.lib.gemm_sm90"
    for _, c in ipairs { { 32, 16, 1, 8 }, { 9, 5, 2, 8 }, { 1, 1, 3, 8 }, { 13, 7, 1, 4 }, { 8, 3, 1, 1 } } do
      local tm, tn, l, g = c[1], c[2], c[3], c[4]
      local seen = {}
      for t = 0, tm * tn * l - 1 do
        local bm, bn, bl = S.tile_coords(t, tm, tn, g)
        assert.is_true(bm >= 0 and bm < tm and bn >= 0 and bn < tn and bl >= 0 and bl < l)
        local key = bm .. "," .. bn .. "," .. bl
        assert.is_nil(seen[key], key .. " twice")
        seen[key] = t
        -- grouped: consecutive tiles stay in one band of g M tiles until its N column is done
        local first = math.floor((t % (tm * tn)) / (tn * g)) * g
        assert.is_true(bm >= first and bm < first + g)
      end
    end
  end)

  it("TMA writes exactly the wgmma layouts: one 128B-swizzled box an operand a stage", function()
    local S = require "cute.lib.gemm_sm90"
    for _, l in ipairs { 1, 3 } do
      local Av = cute.fake_tensor(cute.bf16, { 1000, 304, l }, cute.make_layout({ 1000, 304, l }, { 304, 1, 304000 }))
      local Bv = cute.fake_tensor(cute.bf16, { 500, 304, l }, cute.make_layout({ 500, 304, l }, { 304, 1, 152000 }))
      local a, b = S.tma_atoms({ a_dtype = "bf16", bm = 128, bn = 256, bk = 64 }, Av, Bv)
      assert.same({ 64, 128, 1 }, a.box)
      assert.same({ 64, 256, 1 }, b.box)
      assert.same({ 1, 0, 2 }, a.dim_modes) -- TMA dimensions (K, rows, L): the kernel's coordinates
      assert.equal(16384 + 32768, a.tile_bytes + b.tile_bytes) -- the pipeline's expect-tx count
    end
  end)

  it("compiles for sm_90a: no spill, no serialized wgmma, setmaxnreg, TMA and one wait a k-tile", function()
    for _, c in ipairs {
      { cute.bf16, 4096, 4096, 4096 },
      { cute.f16, 1000, 500, 40, { beta = 1, c_dtype = cute.f16 } },
      { cute.bf16, 300, 200, 1000, { alpha = 2, c_dtype = cute.bf16 } },
    } do
      local p, h = compile(c[1], c[2], c[3], c[4], c[5])
      assert.equal("sm90", p.kernel_name)
      local r = h:resources()[p.kernel.name]
      assert.equal(0, r.spill_stores)
      assert.equal(0, r.spill_loads)
      assert.equal(168, r.registers) -- 65536 / 384: the entry count setmaxnreg moves from
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
      -- the NVVM IR names the accumulator's struct type once (docs/compiler.md, "Notes for
      -- the emitter") and builds no aggregate for wgmma's operands: 300 KB, not 3 MB
      local ll = h:ll()
      local acc = "{" .. ("float, "):rep(p.config.bn / 2 - 1) .. "float}"
      assert.equal(1, H.count(ll, acc))
      assert.matches("\n%%cl%.s%d+ = type {float, float", ll)
      assert.equal(0, H.count(ll, "insertvalue"))
      assert.is_true(#ll < 600 * 1024, #ll .. " bytes of NVVM IR")
      local ptx = h:ptx()
      assert.equal(1, H.count(ptx, "setmaxnreg.dec.sync.aligned.u32 40;"))
      assert.equal(1, H.count(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"))
      -- two batches of 4 (the first k-tile of a tile, then the loop's)
      assert.equal(8, H.count(ptx, "wgmma.mma_async.sync.aligned.m64n" .. p.config.bn .. "k16.f32." .. c[1].name
        .. "." .. c[1].name))
      assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 1;"))
      assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 0;"))
      assert.matches("cp%.async%.bulk%.tensor%.3d%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
      -- 4 stages: full barriers of 1 arrival (the producer's expect_tx), empty ones of 256 (the consumers)
      local inits = {}
      for cnt in ptx:gmatch("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], (%d+);") do
        inits[cnt] = (inits[cnt] or 0) + 1
      end
      local st = p.config.stages
      assert.same({ ["1"] = st, ["256"] = st }, inits)
      assert.matches("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%%r%d+%], " .. (128 + p.config.bn) * 128
        .. ";", ptx)
    end
  end)

  it("takes other tiles with opts.kernel = \"sm90\" and opts.config, and refuses what it cannot run", function()
    local p, h = compile(cute.bf16, 2048, 2048, 2048, { kernel = "sm90", config = { bn = 128, stages = 6 } })
    assert.equal("gemm_sm90_bf16_128x128x64", p.kernel.name)
    local r = h:resources()[p.kernel.name]
    assert.same({ 168, 0 }, { r.registers, r.spill_stores })
    assert.is_nil(h:log():find("(C75", 1, true), h:log())
    assert.equal(8, H.count(h:ptx(), "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"))
    local A, B = fakes(cute.bf16, 256, 256, 256)
    local function refused(config)
      local msg = H.error_at(function() G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = config }) end)
      return msg -- (not a tail call: error_at finds this line as its caller's)
    end
    assert.matches("tiles for bf16 are 128 x BN x 64 or 128", refused { bm = 64 })
    assert.matches("tiles for bf16 are 128 x BN x 64 or 128", refused { bk = 32 })
    assert.matches("tiles for bf16 are 128 x BN x 64 or 128", refused { bk = 256 })
    assert.matches("in clusters takes one 128%-byte swizzle row of K a stage %(bk = 64%), got bk = 128",
      refused { bk = 128, bn = 128, stages = 4, cluster = { 2, 1 } })
    assert.matches("128x256x128 tile takes 2 to 2 stages", refused { bk = 128, stages = 3 })
    -- two swizzle rows of K a stage: two TMA boxes an operand, twice the wgmmas a stage, no spill
    local p2, h2 = compile(cute.bf16, 16, 8192, 8192, { kernel = "sm90", config = { bm = 64, bn = 128, bk = 128,
      stages = 4, schedule = "pingpong" } })
    assert.equal("gemm_sm90_bf16_64x128x128_pingpong", p2.kernel.name)
    local r2 = h2:resources()[p2.kernel.name]
    assert.same({ 168, 0 }, { r2.registers, r2.spill_stores })
    assert.equal(16, H.count(h2:ptx(), "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"))
    assert.matches("bn is a multiple of 16 from 16 to 256", refused { bn = 100 })
    assert.matches("takes 2 to 4 stages %(49152 bytes each%), got 5", refused { bn = 256, stages = 5 })
    -- a misspelt field is refused, not ignored
    assert.matches("opts.config.split_kk is not one of gemm_sm90's fields %(did you mean 'split_k'%?%)",
      refused { split_kk = 4 })
    assert.matches("opts.config.wm is not one of gemm_sm90's fields", refused { wm = 2 })
    assert.matches("gemm_sm90's group %(the tiles of M that share a column of B tiles%) is a whole number from 1, "
      .. "got 0", refused { group = 0 })
    assert.matches("gemm_sm90's group .* got 2%.5", refused { group = 2.5 })
  end)

  it("compiles fp8, int8 and tf32 kernels: wgmma k32 / k8 from 128-byte k-tiles, no spill", function()
    for _, c in ipairs {
      { cute.e4m3, "k32.f32.e4m3.e4m3", { c_dtype = cute.bf16, scale_a = 0.5, scale_b = 4 } },
      { cute.e5m2, "k32.f32.e5m2.e5m2", { c_dtype = cute.f16 } },
      { cute.i8, "k32.s32.s8.s8", { c_dtype = cute.i32, beta = 1 } },
      { cute.u8, "k32.s32.u8.u8", {} },
      { cute.f32, "k8.f32.tf32.tf32", { c_dtype = cute.f32 } },
    } do
      local p, h = compile(c[1], 2048, 2048, 2048, c[3])
      assert.equal("sm90", p.kernel_name)
      local r = h:resources()[p.kernel.name]
      assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
      -- batches of BK / k = 4 (the first k-tile of a tile, then the loop's, which the optimiser may unroll)
      local count = H.count(h:ptx(), "wgmma.mma_async.sync.aligned.m64n256" .. c[2])
      assert.is_true(count >= 8 and count % 4 == 0, c[1].name .. ": " .. count)
    end
    -- the scales fold into alpha
    local p = compile(cute.e4m3, 256, 256, 256, { alpha = 3, scale_a = 0.5, scale_b = 4, c_dtype = cute.bf16 })
    assert.equal(6, p.args[5].value)
    local A, B = fakes(cute.i8, 256, 256, 256)
    assert.matches("integer GEMMs take integer alpha and beta",
      H.error_at(function() G.plan(A, B, nil, { arch = "sm_90a", alpha = 0.5 }) end))
    assert.matches("opts%.scale_a must be a number",
      H.error_at(function() G.plan(A, B, nil, { arch = "sm_90a", scale_a = "2" }) end))
    -- NaN or infinite factors would fill C with NaN or infinity: refused, on either kernel
    for _, c in ipairs { { "alpha", 0 / 0, "sm_90a" }, { "beta", math.huge, "sm_90a" },
      { "scale_b", -math.huge, "sm_90a" }, { "alpha", 0 / 0, "sm_80" } } do
      local o = { arch = c[3], [c[1]] = c[2] }
      assert.matches("cute%.gemm: opts%." .. c[1] .. " must be a finite number, got",
        H.error_at(function() G.plan(A, B, nil, o) end))
    end
    -- the mma.sync kernel's stages, group and warps
    local Ab, Bb = fakes(cute.bf16, 256, 256, 256)
    for _, c in ipairs { { { stages = 1 }, "stages is a whole number from 2, got 1" },
      { { stages = 2.5 }, "stages is a whole number from 2, got 2%.5" },
      { { group = 0 }, "group is a whole number from 1, got 0" }, { { wm = 0 }, "wm is a whole number from 1" } } do
      local o = { arch = "sm_80", config = c[1] }
      assert.matches("cute%.gemm: the mma%.sync kernel's " .. c[2], H.error_at(function() G.plan(Ab, Bb, nil, o) end))
    end
  end)

  it("config.wait_ns (opt-in): the pipeline's waits with a suspend-time hint; refusals", function()
    local W = "mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[%%r%d+%], %%r%d+"
    local function waits(dt, config)
      local p, h = compile(dt, 1024, 1024, 1024, { kernel = config and "sm90" or nil, config = config,
        c_dtype = cute.bf16 })
      local ptx = h:ptx()
      return p, select(2, ptx:gsub(W .. ", 20000;", "")), select(2, ptx:gsub(W .. ";", ""))
    end
    for _, dt in ipairs { cute.bf16, cute.e4m3 } do
      -- none by default (nor with false): every wait the hardware's own
      local p, hinted, plain = waits(dt)
      assert.is_nil(p.config.wait_ns)
      assert.equal(0, hinted)
      assert.is_true(plain >= 2, dt.name .. ": " .. plain) -- (the producer's and the consumers')
      assert.is_nil(p.kernel.name:find("_wait", 1, true))
      local q, h1, p1 = waits(dt, { wait_ns = false })
      assert.is_nil(q.config.wait_ns)
      assert.is_nil(q.kernel.name:find("_wait", 1, true))
      assert.equal(0, h1)
      -- asked for: every one of them hinted, the kernel named for it
      local r, h2, p2 = waits(dt, { wait_ns = 20000 })
      assert.equal(p1, h2, dt.name)
      assert.equal(0, p2)
      assert.matches("_wait20000$", r.kernel.name)
    end
    local A, B = fakes(cute.bf16, 256, 256, 256)
    for _, bad in ipairs { -1, 1.5, "10", true } do
      assert.matches("gemm_sm90's wait_ns is " .. tostring(bad) .. ", expected a whole number of nanoseconds",
        H.error_at(function() G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = { wait_ns = bad } }) end),
        1, true)
    end
  end)

  it("16-bit operands in all four majors: MN-major tiles as 64-row TMA boxes, wgmma's transpose bits", function()
    local S = require "cute.lib.gemm_sm90"
    for _, c in ipairs { { "row", "col", "k", "k", 0, 0 }, { "row", "row", "k", "mn", 0, 1 },
      { "col", "col", "mn", "k", 1, 0 }, { "col", "row", "mn", "mn", 1, 1 } } do
      local A = cute.fake_tensor(cute.f16, { 2048, 1024 }, c[1])
      local B = cute.fake_tensor(cute.f16, { 1024, 2048 }, c[2])
      local p = G.plan(A, B, cute.fake_tensor(cute.f16, { 2048, 2048 }, "row"), { arch = "sm_90a" })
      assert.equal("sm90", p.kernel_name, p.why)
      assert.same({ c[3], c[4] }, { p.config.a_major, p.config.b_major })
      local h = p.kernel:compile(unpack(p.args))
      local r = h:resources()[p.kernel.name]
      assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
      -- the wgmma's transpose operands (imm-trans-a, imm-trans-b): 1 for an MN-major operand
      assert.matches("p, 1, 1, " .. c[5] .. ", " .. c[6] .. ";", h:ptx(), 1, true)
      -- the boxes of a stage: K-major one box (K, rows); MN-major a box a 64 rows, (rows, K)
      local ba, bb = S.stage_boxes(p.config)
      assert.equal(c[3] == "k" and 1 or 2, #ba)
      assert.equal(c[4] == "k" and 1 or 4, #bb)
      for i, bx in ipairs(bb) do
        local co = bx.coords(1000, 64, 3)
        if c[4] == "k" then
          assert.same({ 64, 1000, 3 }, co)
        else
          assert.same({ 1000 + 64 * (i - 1), 64, 3 }, co)
          assert.equal((i - 1) * 64 * 64, bx.smem_offset) -- 64 x 64 boxes, one after the other
        end
      end
    end
  end)

  it("stores a 16-bit row-major C through shared memory and TMA, and says when it cannot", function()
    local A, B = fakes(cute.bf16, 1000, 768, 512)
    local function plan(C, o)
      o = o or {}
      o.arch = "sm_90a"
      return G.plan(A, B, C, o)
    end
    local C = cute.fake_tensor(cute.bf16, { 1000, 768 }, "row")
    local p = plan(C)
    assert.is_true(p.config.tma_store)
    local ptx = p.kernel:compile(unpack(p.args)):ptx()
    assert.matches("stmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16", ptx)
    assert.matches("cp%.async%.bulk%.tensor%.3d%.global%.shared::cta%.tile%.bulk_group", ptx)
    assert.matches("cp%.async%.bulk%.wait_group%.read 1", ptx)
    assert.matches("fence%.proxy%.async%.shared::cta", ptx)
    -- the others keep the register epilogue: f32 C, C column-major, beta, opts.tma_store = false
    assert.is_nil(plan(cute.fake_tensor(cute.f32, { 1000, 768 }, "row")).config.tma_store)
    assert.is_nil(plan(cute.fake_tensor(cute.bf16, { 1000, 768 }, "col")).config.tma_store)
    assert.is_nil(plan(C, { beta = 1 }).config.tma_store)
    assert.is_nil(plan(C, { tma_store = false }).config.tma_store)
    -- a row stride TMA cannot take (1000 columns of a 1004-wide row: 2008 bytes)
    local odd = cute.fake_tensor(cute.bf16, { 1000, 768 }, cute.make_layout({ 1000, 768 }, { 1004, 1 }))
    assert.is_nil(plan(odd).config.tma_store)
  end)

  it("the ping-pong schedule: 64-row tiles a warpgroup each, compiled without spill; refusals", function()
    local A, B = fakes(cute.bf16, 4096, 4096, 4096)
    local C = cute.fake_tensor(cute.bf16, { 4096, 4096 }, "row")
    local o = { arch = "sm_90a", kernel = "sm90", config = { bm = 64, bn = 128, stages = 6, schedule = "pingpong" } }
    local p = G.plan(A, B, C, o)
    assert.equal("gemm_sm90_bf16_64x128x64_tmastore_pingpong", p.kernel.name)
    assert.equal(384, p.block)
    local h = p.kernel:compile(unpack(p.args))
    local r = h:resources()[p.kernel.name]
    assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
    local ptx = h:ptx()
    assert.matches("bar%.arrive", ptx) -- the turns
    assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n128k16", ptx)
    local function refused(cfg)
      local ok, msg = pcall(G.plan, A, B, C, { arch = "sm_90a", kernel = "sm90", config = cfg })
      assert.is_false(ok)
      return msg
    end
    assert.matches("tiles for bf16 are 64 x BN", refused { bm = 128, bn = 128, stages = 4, schedule = "pingpong" })
    assert.matches("schedule is \"cooperative\" or \"pingpong\"", refused { bn = 128, stages = 4, schedule = "ping" })
  end)

  it("clusters of 2: the shared operand's half-stage multicast, both CTAs' releases, cluster barriers", function()
    for _, c in ipairs {
      { { 2, 1 }, nil, 16 }, -- cooperative: 2 CTAs x 8 consumer warps release a stage
      { { 1, 2 }, { bm = 64, bn = 128, stages = 6, schedule = "pingpong" }, 8 }, -- a warpgroup a tile: 2 x 4
    } do
      local config = { cluster = c[1] }
      for k, v in pairs(c[2] or {}) do config[k] = v end
      local p, h = compile(cute.bf16, 4096, 4096, 4096, { kernel = "sm90", config = config, c_dtype = cute.bf16 })
      local tag = "_cluster" .. c[1][1] .. "x" .. c[1][2]
      assert.equal(tag, p.kernel.name:sub(-#tag))
      assert.equal(0, p.grid[1] % 2)
      local r = h:resources()[p.kernel.name]
      assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
      local ptx = h:ptx()
      assert.matches("%.reqnctapercluster 2, 1, 1", ptx)
      -- the shared operand: one K-major box of half its rows from each CTA, into both (mask 3);
      -- the other operand as before
      assert.equal(1, H.count(ptx, "mbarrier::complete_tx::bytes.multicast::cluster"))
      assert.equal(2, H.count(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"))
      -- the stage's bytes still expected whole: half of the shared tile comes from the partner
      assert.matches("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%%r%d+%], " .. (p.config.bm + p.config.bn)
        * 128 .. ";", ptx)
      local inits = {}
      for cnt in ptx:gmatch("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], (%d+);") do
        inits[cnt] = (inits[cnt] or 0) + 1
      end
      assert.same({ ["1"] = p.config.stages, [tostring(c[3])] = p.config.stages }, inits)
      assert.matches("mapa%.shared::cluster", ptx) -- a release arrives on the partner's empty barrier too
      assert.matches("barrier%.cluster%.arrive%.relaxed%.aligned", ptx) -- after the barriers' init
      assert.matches("barrier%.cluster%.arrive%.release%.aligned", ptx) -- before exit
      assert.matches("barrier%.cluster%.wait", ptx)
    end
  end)

  it("fused epilogues: bias by column or row, activations, a user function; refusals", function()
    local A, B = fakes(cute.bf16, 1000, 768, 512)
    local C = cute.fake_tensor(cute.bf16, { 1000, 768 }, "row")
    local seen = {}
    for _, c in ipairs {
      { { bias = cute.fake_tensor(cute.f32, { 768 }), activation = "gelu_tanh" }, "_bias_gelu_tanh", "ex2.approx" },
      { { activation = "silu" }, "_silu", "ex2.approx" },
      { { activation = "relu" }, "_relu", "max.f32" },
      { { bias = cute.fake_tensor(cute.bf16, { 1000 }), bias_mode = "row",
        epilogue = function(v, m, n) return v * 2.0 + (m + n):to(cute.f32) end }, "_bias_epilogue", "cvt.rn.f32.s32" },
    } do
      local o = c[1]
      o.arch = "sm_90a"
      local p = G.plan(A, B, C, o)
      assert.equal("sm90", p.kernel_name)
      assert.equal("gemm_sm90_bf16_128x" .. p.config.bn .. "x64" .. c[2] .. "_tmastore", p.kernel.name)
      local h = p.kernel:compile(unpack(p.args))
      local r = h:resources()[p.kernel.name]
      assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
      assert.matches(c[3], h:ptx(), 1, true)
      assert.is_nil(seen[p.kernel], "a kernel of its own")
      seen[p.kernel] = true
    end
    local function refused(o)
      o.arch = "sm_90a"
      local msg = H.error_at(function() G.plan(A, B, C, o) end)
      return msg
    end
    assert.matches("unknown activation gelu_tan.*did you mean 'gelu_tanh'", refused { activation = "gelu_tan" })
    assert.matches("must hold 768 values %(one a column of C%)",
      refused { bias = cute.fake_tensor(cute.f32, { 1000 }) })
    assert.matches("must hold 1000 values %(one a row of C%)",
      refused { bias = cute.fake_tensor(cute.f32, { 768 }), bias_mode = "row" })
    assert.matches("bias_mode is \"col\"", refused { bias = cute.fake_tensor(cute.f32, { 768 }), bias_mode = "column" })
    assert.matches("opts%.bias must be f32, bf16 or f16", refused { bias = cute.fake_tensor(cute.f64, { 768 }) })
    assert.matches("opts%.epilogue must be a function", refused { epilogue = "relu" })
    assert.matches("cute%.gemm: opts%.arch: unknown arch 'sm_91' %(known: sm_80, ",
      H.error_at(function() G.plan(A, B, C, { arch = "sm_91" }) end))
    assert.matches("fused epilogues .* run in the Hopper kernel only, and this problem does not run it: "
      .. "opts.kernel = \"sm80\" forces the mma.sync kernel", refused { activation = "relu", kernel = "sm80" })
    local Ai, Bi = fakes(cute.i8, 256, 256, 256)
    local function refused_int(o)
      local msg = H.error_at(function() G.plan(Ai, Bi, nil, o) end)
      return msg
    end
    assert.matches("a bias or an activation on an integer GEMM is not supported",
      refused_int { arch = "sm_90a", activation = "relu" })
    -- two processes, two user functions that are each one's first: each gets its own
    -- kernel (the cache keyed before tracing must not hand one's to the other)
    local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
    local function ptx_with(factor)
      local path = os.tmpname()
      local f = assert(io.open(path, "w"))
      local src = ([[local cute = require "cute"
local G = require "cute.lib.gemm"
local A = cute.fake_tensor(cute.bf16, { 256, 256 }, "row")
local B = cute.fake_tensor(cute.bf16, { 256, 256 }, "col")
local p = G.plan(A, B, nil, { arch = "sm_90a", epilogue = function(v) return v * FACTOR end })
io.write(p.kernel:compile(unpack(p.args)):ptx())]]):gsub("FACTOR", factor)
      f:write(src)
      f:close()
      local pipe = io.popen(string.format("'%s' '%s' 2>&1", bin, path))
      local out = pipe:read("*a")
      pipe:close()
      os.remove(path)
      return out
    end
    local p3, p5 = ptx_with("3.0"), ptx_with("5.0")
    assert.matches("0f40400000", p3, 1, true) -- 3.0f
    assert.matches("0f40A00000", p5, 1, true) -- 5.0f
    -- an epilogue that returns nothing: an error at the kernel's trace
    local p = G.plan(A, B, C, { arch = "sm_90a", epilogue = function() end })
    assert.has_error(function() p.kernel:compile(unpack(p.args)) end)
  end)

  it("grouped (MoE) GEMMs: one launch over the problems' tiles; refusals", function()
    local T, K, N, E = 4096, 1024, 2048, 8
    local A = cute.fake_tensor(cute.bf16, { T, K }, "row")
    local B = cute.fake_tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N }))
    local C = cute.fake_tensor(cute.bf16, { T, N }, "row")
    local off = { 0, 1024, 1792, 2432, 2944, 3392, 3776, 3968, 4096 }
    local p = G.grouped_plan(A, B, C, off, { arch = "sm_90a" })
    assert.equal("gemm_sm90_bf16_128x" .. p.config.bn .. "x64_grouped", p.kernel.name)
    assert.equal(E, p.config.groups)
    local tiles = 0
    for e = 1, E do tiles = tiles + math.ceil((off[e + 1] - off[e]) / 128) * math.ceil(N / p.config.bn) end
    assert.equal(math.min(tiles, 132), p.grid[1])
    local h = p.kernel:compile(unpack(p.args))
    local r = h:resources()[p.kernel.name]
    assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
    local function refused(o, b, c)
      local msg = H.error_at(function() G.grouped_plan(A, b or B, c or C, o, { arch = "sm_90a" }) end)
      return msg
    end
    assert.matches("offsets must be a list of 9 row offsets", refused { 0, 4096 })
    assert.matches("never down; offsets%[3%] is 100", refused { 0, 1024, 100, 2432, 2944, 3392, 3776, 3968, 4096 })
    assert.matches("offsets must go from 0 to 4096", refused { 0, 1024, 1792, 2432, 2944, 3392, 3776, 3968, 4000 })
    assert.matches("inner extents differ", refused(off, cute.fake_tensor(cute.bf16, { 512, N, E },
      cute.make_layout({ 512, N, E }, { 1, 512, 512 * N }))))
  end)

  it("split-K: (tile, k-slice) units into a workspace, a reduction with the epilogue; why; refusals", function()
    local S90 = require "cute.lib.gemm_sm90"
    -- 128 x 8192 x 8192 with 128 x 256 tiles: 32 tiles, 128 k-tiles; 4 slices of 32
    local A, B = fakes(cute.bf16, 128, 8192, 8192)
    local C = cute.fake_tensor(cute.bf16, { 128, 8192 }, "row")
    local bias = cute.fake_tensor(cute.f32, { 8192 })
    local o = { arch = "sm_90a", kernel = "sm90", bias = bias, activation = "gelu_tanh",
      config = { bn = 256, stages = 4, split_k = 4 } }
    local p = G.plan(A, B, C, o)
    assert.equal("gemm_sm90_bf16_128x256x64_splitk", p.kernel.name) -- no fused part, no TMA store
    assert.matches("; split%-K 4 %(opts.config%): 32 tiles x 4 k%-slices of 32 k%-tiles over 132 SMs$", p.why)
    assert.same({ 128, 1, 1 }, p.grid) -- 128 units
    assert.equal(4, p.config.split_k)
    assert.equal("f32", p.workspace.dtype.name)
    assert.same({ 4, 128, 8192, 1 }, p.workspace.layout.shape)
    assert.same({ 128 * 8192, 8192, 1, 128 * 8192 }, p.workspace.layout.stride)
    assert.same({ 128, 8192, 4 }, p.args[3].layout.shape) -- the kernel's view: slice s of batch l at s L + l
    assert.equal("gemm_sm90_splitk_reduce_bias_gelu_tanh", p.reduce.kernel.name)
    assert.equal(C.dtype, p.reduce.args[2].dtype)
    assert.equal(bias, p.reduce.args[6])
    assert.equal(S90.REDUCE_THREADS, p.reduce.block)
    assert.equal(math.ceil(128 * 8192 / (S90.REDUCE_THREADS * S90.REDUCE_PER_THREAD)), p.reduce.grid[1])
    local h = p.kernel:compile(unpack(p.args))
    local r = h:resources()[p.kernel.name]
    assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads })
    assert.is_nil(h:log():find("(C75", 1, true), h:log())
    local hr = p.reduce.kernel:compile(unpack(p.reduce.args))
    local rr = hr:resources()[p.reduce.kernel.name]
    assert.same({ 0, 0 }, { rr.spill_stores, rr.spill_loads })
    -- int8: an i32 workspace; batches
    local Ai = cute.fake_tensor(cute.i8, { 64, 512, 2 }, { 512, 1, 64 * 512 })
    local Bi = cute.fake_tensor(cute.i8, { 512, 256, 2 }, { 1, 512, 512 * 256 })
    local pi = G.plan(Ai, Bi, nil, { arch = "sm_90a", kernel = "sm90", config = { split_k = 2, swap_ab = false } })
    assert.equal("i32", pi.workspace.dtype.name)
    assert.same({ 2, 64, 256, 2 }, pi.workspace.layout.shape)
    -- the default kernel is untouched: no split without opts.config.split_k (AUTO_SPLIT_K is off)
    assert.is_false(S90.AUTO_SPLIT_K)
    local d = G.plan(A, B, C, { arch = "sm_90a" })
    assert.is_nil(d.reduce)
    assert.is_nil(d.config.split_k)
    assert.is_nil(d.why:find("split", 1, true))
    -- the heuristic's ping-pong tiles split in two where they are at most half the SMs and K
    -- is long (M.pingpong_split_k; measured 1.06-1.09x on the H200): 128 x 4096 x 14336 is
    -- 64 tiles of 64 x 128
    local As, Bs = fakes(cute.bf16, 128, 4096, 14336)
    local ps = G.plan(As, Bs, cute.fake_tensor(cute.bf16, { 128, 4096 }, "row"), { arch = "sm_90a" })
    assert.equal(2, ps.config.split_k)
    assert.matches("; split%-K 2 %(automatic%): 64 tiles x 2 k%-slices of 112 k%-tiles over 132 SMs$", ps.why)
    assert.equal("gemm_sm90_splitk_reduce", ps.reduce.kernel.name)
    assert.is_nil(G.plan(As, Bs, cute.fake_tensor(cute.bf16, { 128, 4096 }, "row"),
      { arch = "sm_90a", kernel = "sm90", config = { split_k = 1 } }).config.split_k) -- 1: none
    assert.equal(2, S90.pingpong_split_k(64, 224, 132))
    assert.is_nil(S90.pingpong_split_k(128, 128, 132)) -- 128 x 8192 x 8192: 128 tiles
    assert.is_nil(S90.pingpong_split_k(64, 127, 132)) -- K shorter than 128 k-tiles
    -- the automatic choice: 32 tiles of 128 x 256 on 132 SMs -> 4 slices
    assert.equal(4, S90.auto_split_k(128, 8192, 8192, 1, 256, 64, 132))
    assert.equal(8, S90.auto_split_k(64, 4096, 14336, 1, 256, 64, 132)) -- 16 tiles
    assert.equal(16, S90.auto_split_k(128, 1024, 8192, 1, 256, 64, 132)) -- 4 tiles: at most 16
    assert.is_nil(S90.auto_split_k(4096, 4096, 4096, 1, 256, 64, 132)) -- enough tiles
    assert.is_nil(S90.auto_split_k(128, 8192, 960, 1, 256, 64, 132)) -- a short K (15 k-tiles)
    -- on: the heuristic's tile gives way to 128 x 256 tiles in k-slices (384 x 4096 x 8192:
    -- 48 such tiles; up to 256 rows could be 64-row ping-pong tiles, which it leaves alone)
    S90.AUTO_SPLIT_K = true
    local A2, B2 = fakes(cute.bf16, 384, 4096, 8192)
    local planned, pa = pcall(G.plan, A2, B2, cute.fake_tensor(cute.bf16, { 384, 4096 }, "row"), { arch = "sm_90a" })
    S90.AUTO_SPLIT_K = false
    assert(planned, pa)
    assert.equal(256, pa.config.bn)
    assert.matches("; split%-K 2 %(automatic%): 48 tiles x 2 k%-slices of 64 k%-tiles over 132 SMs$", pa.why)
    assert.equal("gemm_sm90_splitk_reduce", pa.reduce.kernel.name)
    local function refused(config, grouped)
      local ok, msg
      if grouped then
        local Bg = cute.fake_tensor(cute.bf16, { 8192, 256, 2 }, { 1, 8192, 8192 * 256 })
        local Cg = cute.fake_tensor(cute.bf16, { 128, 256 }, "row")
        ok, msg = pcall(G.grouped_plan, A, Bg, Cg, { 0, 64, 128 }, { arch = "sm_90a", config = config })
      else
        ok, msg = pcall(G.plan, A, B, C, { arch = "sm_90a", kernel = "sm90", config = config })
      end
      assert.is_false(ok)
      return msg
    end
    for _, bad in ipairs { 0, 65, 2.5, "4", -1 } do
      assert.matches("split_k is a whole number from 1 to 64", refused { split_k = bad })
    end
    assert.matches("a grouped GEMM does not split K", refused({ split_k = 2 }, true))
    assert.matches("split_k does not run in clusters", refused { split_k = 2, cluster = { 2, 1 } })
    -- split_k = 1: none (and no automatic one)
    assert.is_nil(G.plan(A, B, C, { arch = "sm_90a", kernel = "sm90", config = { split_k = 1 } }).reduce)
    assert.matches("split_reduce is \"kernel\" .* or \"fused\" .*, got \"second\"",
      refused { split_k = 2, split_reduce = "second" })
  end)

  it("split-K reduced by the tile's last unit (split_reduce = \"fused\"): one kernel, counters; no spill", function()
    -- 128 x 256 cooperative tiles with beta, a bias and gelu_tanh (bf16), and plain (every dtype)
    local A, B = fakes(cute.bf16, 128, 8192, 8192)
    local C = cute.fake_tensor(cute.bf16, { 128, 8192 }, "row")
    local bias = cute.fake_tensor(cute.f32, { 8192 })
    local p = G.plan(A, B, C, { arch = "sm_90a", kernel = "sm90", bias = bias, activation = "gelu_tanh", beta = 0.5,
      config = { bn = 256, stages = 4, split_k = 4, split_reduce = "fused" } })
    assert.equal("gemm_sm90_bf16_128x256x64_bias_gelu_tanh_splitkf", p.kernel.name)
    assert.is_nil(p.reduce)
    assert.is_nil(p.config.tma_store)
    assert.matches("; split%-K 4 %(opts.config%), reduced by the tile's last unit: 32 tiles x 4 k%-slices of 32 "
      .. "k%-tiles over 132 SMs$", p.why)
    assert.same({ 128, 1, 1 }, p.grid)
    assert.same({ 4, 128, 8192, 1 }, p.workspace.layout.shape)
    assert.same({ 32 }, p.counters.layout.shape)
    assert.equal("i32", p.counters.dtype.name)
    -- C, alpha, beta, the bias, then the workspace's view, the counters and S
    assert.equal(C.dtype, p.args[3].dtype)
    assert.equal(bias, p.args[7])
    assert.same({ 128, 8192, 4 }, p.args[8].layout.shape)
    assert.equal(p.counters, p.args[9])
    local function no_spill(q)
      local h = q.kernel:compile(unpack(q.args))
      local r = h:resources()[q.kernel.name]
      assert.same({ 168, 0, 0 }, { r.registers, r.spill_stores, r.spill_loads }, q.kernel.name)
      assert.is_nil(h:log():find("(C75", 1, true), h:log())
      return h
    end
    no_spill(p)
    for _, dt in ipairs { cute.e4m3, cute.i8, cute.f32 } do
      local Ad, Bd = fakes(dt, 128, 8192, 8192)
      no_spill(G.plan(Ad, Bd, nil, { arch = "sm_90a", kernel = "sm90",
        config = { bn = 256, stages = 3, split_k = 4, split_reduce = "fused" } }))
    end
    -- 64 x 128 ping-pong tiles (16 x 8192 x 8192, the skinny shape split-K is for), f32 C with beta
    local As, Bs = fakes(cute.bf16, 16, 8192, 8192)
    local Cs = cute.fake_tensor(cute.f32, { 16, 8192 }, "row")
    local pp = G.plan(As, Bs, Cs, { arch = "sm_90a", kernel = "sm90", beta = 1,
      config = { bm = 64, bn = 128, stages = 8, schedule = "pingpong", split_k = 2, split_reduce = "fused" } })
    assert.equal("gemm_sm90_bf16_64x128x64_pingpong_splitkf", pp.kernel.name)
    assert.same({ 64 }, pp.counters.layout.shape)
    local ptx = no_spill(pp):ptx()
    -- the arrival: a release fence, one relaxed gpu-scope add, an acquire fence for the last
    assert.equal(2, H.count(ptx, "fence.acq_rel.gpu;"))
    assert.equal(1, H.count(ptx, "atom.relaxed.gpu.global.add"))
    -- the default reduction is the second kernel
    local pk = G.plan(A, B, C, { arch = "sm_90a", kernel = "sm90",
      config = { bn = 256, stages = 4, split_k = 4, split_reduce = "kernel" } })
    assert.equal("gemm_sm90_bf16_128x256x64_splitk", pk.kernel.name)
    assert.is_not_nil(pk.reduce)
    assert.is_nil(pk.counters)
  end)

  it("opts.pdl: launch_dependents first, griddepcontrol.wait after the barriers' set-up and before any load", function()
    for _, c in ipairs { { 128, 8192, 8192 }, { 2048, 2048, 2048 }, { 16, 8192, 8192 } } do
      local p, h = compile(cute.bf16, c[1], c[2], c[3], { pdl = true })
      assert.is_true(p.pdl)
      assert.matches("; a programmatic dependent launch %(opts.pdl%)$", p.why)
      assert.matches("_pdl$", p.kernel.name)
      local ptx = h:ptx()
      local launch, init = ptx:find("griddepcontrol.launch_dependents", 1, true), ptx:find("mbarrier.init", 1, true)
      local wait, load = ptx:find("griddepcontrol.wait", 1, true), ptx:find("cp.async.bulk.tensor", 1, true)
      assert.is_true(launch < init and init < wait and wait < load, p.kernel.name)
      local r = h:resources()[p.kernel.name]
      assert.equal(0, r.spill_stores)
      local p0, h0 = compile(cute.bf16, c[1], c[2], c[3])
      assert.is_nil(p0.pdl)
      assert.is_nil(h0:ptx():find("griddepcontrol", 1, true))
    end
    -- a split-K plan: the GEMM kernel's launch (its reduction a plain launch after it)
    local ps = compile(cute.bf16, 128, 4096, 14336, { pdl = true, kernel = "sm90", config = { split_k = 2 } })
    assert.is_true(ps.pdl and ps.reduce ~= nil)
    local A, B = fakes(cute.bf16, 64, 64, 64)
    assert.matches("opts.pdl must be a boolean", H.error_of(function()
      return G.plan(A, B, nil, { arch = "sm_90a", pdl = 1 })
    end))
    local T = cute.fake_tensor(cute.bf16, { 64, 64 }, "row")
    local W = cute.fake_tensor(cute.bf16, { 64, 64, 2 }, cute.make_layout({ 64, 64, 2 }, { 1, 64, 4096 }))
    assert.matches("cute.lib.gemm.grouped: opts.pdl must be a boolean", H.error_of(function()
      return G.grouped_plan(T, W, cute.fake_tensor(cute.bf16, { 64, 64 }, "row"), { 0, 32, 64 },
        { arch = "sm_90a", pdl = "yes" })
    end))
    local pg = G.grouped_plan(T, W, cute.fake_tensor(cute.bf16, { 64, 64 }, "row"), { 0, 32, 64 },
      { arch = "sm_90a", pdl = true })
    assert.is_true(pg.pdl)
    assert.matches("_pdl$", pg.kernel.name)
  end)

  it("opts.pdl_prefetch_b: the weights' first stages load before the producer's wait, the other operand's after",
    function()
      -- 128 rows (B the kernel's B), 16 rows (swapped: B the kernel's A), split-K
      for _, c in ipairs { { 128, 8192, 8192, "b" }, { 16, 8192, 8192, "a" }, { 128, 4096, 14336, "b", 2 } } do
        local o = { pdl = true, pdl_prefetch_b = true, kernel = "sm90", config = c[5] and { split_k = c[5] } or nil }
        local p, h = compile(cute.bf16, c[1], c[2], c[3], o)
        assert.equal(c[4], p.config.pdl_pre)
        assert.matches("a programmatic dependent launch %(opts.pdl%), B's first stages loaded before it waits", p.why)
        assert.matches("_pdl_pre" .. c[4] .. "$", p.kernel.name)
        local ptx = h:ptx()
        -- the consumers' wait, then the producer's: between them only the early operand's loads
        -- (its k-tiles' boxes, one each: K-major), after them the other operand's
        assert.equal(2, H.count(ptx, "griddepcontrol.wait;"))
        local w1 = ptx:find("griddepcontrol.wait", 1, true)
        local w2 = ptx:find("griddepcontrol.wait", w1 + 1, true)
        assert.is_true(ptx:find("mbarrier.init", 1, true) < w1)
        assert.equal(1, H.count(ptx:sub(w1, w2), "cp.async.bulk.tensor"))
        assert.is_nil(ptx:sub(1, w1):find("cp.async.bulk.tensor", 1, true))
        assert.is_not_nil(ptx:find("cp.async.bulk.tensor", w2, true))
        local r = h:resources()[p.kernel.name]
        assert.same({ 0, 0 }, { r.spill_stores, r.spill_loads }, p.kernel.name)
      end
      local A, B = fakes(cute.bf16, 64, 64, 64)
      assert.matches("opts.pdl_prefetch_b loads B before .* it needs opts.pdl = true", H.error_of(function()
        return G.plan(A, B, nil, { arch = "sm_90a", pdl_prefetch_b = true })
      end))
      assert.matches("opts.pdl_prefetch_b must be a boolean", H.error_of(function()
        return G.plan(A, B, nil, { arch = "sm_90a", pdl = true, pdl_prefetch_b = "B" })
      end))
    end)

  it("autotuning's candidates start with the heuristic's pick, which is the built-in default", function()
    local S = require "cute.lib.gemm_sm90"
    local tune = require "cute.autotune"
    for _, c in ipairs { { 4096, 4096, 4096 }, { 16, 8192, 8192 }, { 1000, 500, 300 }, { 16384, 16384, 1024 } } do
      local list = S.candidates(c[1], c[2], c[3], 1, "bf16")
      local d = S.pick_config(c[1], c[2], c[3], 1, "bf16")
      assert.same({ d.bn, d.stages }, { list[1].bn, list[1].stages })
      local def = tune.defaults["cute.lib.gemm_sm90"]("NVIDIA H100 80GB HBM3", { m = c[1], n = c[2], k = c[3], l = 1,
        name = "bf16" })
      assert.same(list[1], def)
      local doubled = 0
      local A, B = fakes(cute.bf16, c[1], c[2], 304) -- (a K that meets TMA's 16-byte rule)
      for _, cfg in ipairs(list) do -- every candidate fits in shared memory, and plans
        assert.is_true((cfg.bm + cfg.bn) * 128 * (cfg.bk and 2 or 1) * cfg.stages <= 227 * 1024 - 1024)
        assert.equal(cfg.bm == 64 and "pingpong" or nil, cfg.schedule)
        if cfg.bk then doubled = doubled + 1 end
        assert.equal(cfg.bk or 64, G.plan(A, B, nil, { arch = "sm_90a", kernel = "sm90", config = cfg }).config.bk)
      end
      -- two swizzle rows of K a stage are tried for skinny problems only
      assert.equal(c[1] <= 256 and 2 or 0, doubled)
      if c[3] == 1024 then -- a short K: 64 x 256 ping-pong first, the cooperative 128 x 256 among the rest
        assert.same({ 64, 256, "pingpong" }, { list[1].bm, list[1].bn, list[1].schedule })
        assert.same({ 128, 256 }, { list[2].bm, list[2].bn })
      end
    end
    -- cute.gemm's options are checked, with a suggestion
    local A, B = fakes(cute.bf16, 256, 256, 256)
    assert.matches("unknown option 'tunes'.*did you mean 'tune'",
      H.error_at(function() G.plan(A, B, nil, { arch = "sm_90a", tunes = true }) end))
  end)

  it("SASS: HGMMA 64x256x16 (64x16x16 swapped), UTMALDG, USETMAXREG (when a disassembler is present)", function()
    -- (ptxas writes f16 inputs as the default: HGMMA.64x256x16.F32 with no type after it)
    -- (the PTX's wgmma counts first, so that a change of the kernel's structure fails on a
    -- machine without a disassembler too; the SASS counts must equal them)
    local _, hs = compile(cute.bf16, 16, 8192, 8192, { c_dtype = cute.bf16 })
    assert.equal(8, H.count(hs:ptx(), "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16"))
    for _, c in ipairs { { cute.bf16, "HGMMA.64x256x16.F32.BF16 ", "bf16.bf16" },
      { cute.f16, "HGMMA.64x256x16.F32 ", "f16.f16" } } do
      local dt = c[1]
      local _, h = compile(dt, 2048, 2048, 2048)
      assert.equal(8, H.count(h:ptx(), "wgmma.mma_async.sync.aligned.m64n256k16.f32." .. c[3]))
      local ok, sass = pcall(h.sass, h)
      if not ok then
        pending("no nvdisasm or cuobjdump: SASS not checked (the PTX's wgmma counts were)")
        return
      end
      assert.equal(8, H.count(sass, c[2]))
      assert.matches("UTMALDG%.3D", sass)
      assert.matches("USETMAXREG%.DEALLOC%.CTAPOOL 0x28", sass)
      assert.matches("USETMAXREG%.TRY_ALLOC%.CTAPOOL UP%d, 0xe8", sass)
      -- one batch in flight: the loop waits for all but one, the tile's end for all
      assert.equal(1, H.count(sass, "WARPGROUP.DEPBAR.LE gsb0, 0x1"))
      assert.equal(1, H.count(sass, "WARPGROUP.DEPBAR.LE gsb0, 0x0"))
      assert.matches("RZ, !UPT", sass) -- scale-d 0 on a tile's first wgmma
      -- the descriptors in uniform registers: 19 R2UR in the kernel (50 when they were
      -- sliced per thread, 16 a k-tile)
      assert.is_true(H.count(sass, "R2UR") <= 24, H.count(sass, "R2UR") .. " R2UR")
    end
    -- a skinny problem planned swapped: its 16 rows are the MMA's N; C^T stored from registers
    local p, h = compile(cute.bf16, 16, 8192, 8192, { c_dtype = cute.bf16 })
    assert.is_true(p.config.swapped)
    local sass = h:sass()
    assert.equal(8, H.count(sass, "HGMMA.64x16x16.F32.BF16 "))
    assert.equal(0, H.count(sass, "HGMMA.64x128"))
    assert.is_true(H.count(sass, "R2UR") <= 24, H.count(sass, "R2UR") .. " R2UR") -- (45 before)
    assert.matches("UTMALDG%.3D", sass)
    assert.matches("STG%.E%.U16", sass)
    assert.is_nil(sass:find("UTMASTG", 1, true))
  end)
end)

-- ---------------------------------------------------------------------------
-- On the GPU

local function need_sm90()
  local info = cute.device_info()
  if info.compute_capability[1] ~= 9 then
    pending("needs sm_90")
    return false
  end
  return true
end

-- A (M x K [x L]) row-major, B (K x N [x L]) column-major, C (M x N [x L]) row-major
-- (or A and B in the layouts given: "row" or "col").
local operands = H.gemm_operands

-- Runs cute.gemm through the Hopper kernel (checking that the plan chose it)
-- and checks sampled entries against float64; C poisoned first (beta 0) or
-- random (beta ~= 0, the values kept as c0).
local function check(dt, m, n, k, opts)
  opts = opts or {}
  local cdt = opts.c_dtype or cute.f32
  local A, B, C = operands(dt, m, n, k, opts.l, cdt, m + n + k, opts.a_layout, opts.b_layout)
  local beta = opts.beta or 0
  local c0
  if beta ~= 0 then
    C:uniform(-1, 1, 7)
    c0 = C:to_host() -- a host copy: compared by coordinate
  else
    C:fill(cdt.is_integer and -12345 or 0 / 0) -- poisoned: every entry must be written
  end
  -- (1 to 3 rows go to cute.lib.gemv by default, 4 to 16 on Hopper to this kernel: asked for by name)
  local want = opts.want or "sm90"
  local o = { alpha = opts.alpha, beta = beta, scale_a = opts.scale_a, scale_b = opts.scale_b, config = opts.config,
    kernel = not opts.default and (want == "gemv" and "gemv" or ((opts.config or m <= 16) and "sm90" or nil)) or nil }
  local p = G.plan(A, B, C, o)
  assert.equal(want, p.kernel_name, p.why)
  cute.gemm(A, B, C, o)
  cute.synchronize()
  cute.testing.check_gemm(A, B, C, { alpha = (opts.alpha or 1) * (opts.scale_a or 1) * (opts.scale_b or 1),
    beta = beta, c0 = c0, samples = opts.samples or 4000, rtol = opts.rtol,
    what = string.format("%s %dx%dx%d", dt.name, m, n, k) })
end

describe("cute.lib.gemm_sm90 on the GPU", function()
  it("square bf16 and f16, f32 out #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 1024, 1024, 1024)
    check(cute.f16, 2048, 2048, 512)
    check(cute.bf16, 4096, 4096, 4096, { samples = 2000 }) -- more tiles than SMs: the persistent walk
  end)

  it("ragged M, N, K (not tile multiples, K < 64) #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 300, 200, 40)
    check(cute.f16, 129, 257, 8)
    check(cute.bf16, 1000, 777, 1000)
    check(cute.bf16, 1, 8, 72)
    check(cute.f16, 4097, 2056, 136, { samples = 2000 })
  end)

  it("16-bit outputs, alpha and beta #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 512, 768, 256, { c_dtype = cute.bf16 })
    check(cute.f16, 512, 768, 256, { c_dtype = cute.f16, alpha = 0.5 })
    check(cute.bf16, 333, 517, 200, { c_dtype = cute.f32, alpha = 2, beta = -1 })
    check(cute.f16, 640, 384, 128, { c_dtype = cute.f16, alpha = 1.5, beta = 0.5 })
  end)

  it("fp8 (e4m3, e5m2) with per-tensor scales, int8, tf32 #gpu", function()
    if not need_sm90() then return end
    -- fp8 products are exact in f32: the error is the f32 sums' and one rounding to C
    check(cute.e4m3, 1024, 1024, 1024, { c_dtype = cute.bf16, rtol = 2 ^ -8 })
    -- (f32 out: the fp8 wgmma's own accumulation is less precise than f32's, ~2^-13 of the sum of
    -- |products| measured on the H100)
    check(cute.e4m3, 300, 520, 208, { c_dtype = cute.f32, scale_a = 0.5, scale_b = 3, rtol = 2 ^ -10 })
    check(cute.e5m2, 512, 256, 384, { c_dtype = cute.f16, beta = 1, rtol = 2 ^ -10 })
    check(cute.e4m3, 4096, 4096, 4096, { c_dtype = cute.bf16, rtol = 2 ^ -8, samples = 1000 })
    -- int8: exact
    check(cute.i8, 256, 384, 512, { c_dtype = cute.i32 })
    check(cute.u8, 200, 136, 304, { c_dtype = cute.i32, alpha = 2, beta = -1 })
    -- tf32 (f32 data, the low 13 mantissa bits not used): within 2^-9 of the sum of |products|
    check(cute.f32, 512, 512, 512, { c_dtype = cute.f32, rtol = 2 ^ -9 })
    check(cute.f32, 333, 200, 100, { c_dtype = cute.f32, rtol = 2 ^ -9 })
  end)

  it("fused epilogues against float64: bias, activations, a user function #gpu", function()
    if not need_sm90() then return end
    local G90 = require "cute.lib.gemm_sm90"
    local function ref_act(name, x)
      if name == "relu" then return math.max(x, 0) end
      if name == "silu" then return x / (1 + math.exp(-x)) end
      if name == "gelu_tanh" then
        return 0.5 * x * (1 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
      end
      if name == "gelu" then
        local z = x / math.sqrt(2)
        local erf
        if math.abs(z) < 3 then -- its series
          local term, sum = z, 0
          for j = 0, 80 do
            sum = sum + term / (2 * j + 1)
            term = -term * z * z / (j + 1)
          end
          erf = 2 / math.sqrt(math.pi) * sum
        else -- 1 - erfc, erfc by its asymptotic series (relative error < 1e-4 from |z| = 3)
          local a = math.abs(z)
          local erfc = math.exp(-a * a) / (a * math.sqrt(math.pi)) * (1 - 1 / (2 * a * a) + 3 / (4 * a ^ 4))
          erf = (z > 0 and 1 or -1) * (1 - erfc)
        end
        return 0.5 * x * (1 + erf)
      end
      return x
    end
    for _, c in ipairs {
      { 1000, 777, 520, { activation = "relu" } },
      { 512, 768, 256, { bias = "col", activation = "gelu_tanh", alpha = 0.5 } },
      { 300, 1000, 200, { bias = "row", activation = "silu" } },
      { 640, 384, 128, { activation = "gelu", beta = 1 } },
      { 333, 517, 72, { bias = "col", epilogue = function(v, m, n) return v * 2.0 + (m - n):to(cute.f32) end } },
    } do
      local m, n, k, o = c[1], c[2], c[3], c[4]
      local A, B, C = operands(cute.bf16, m, n, k, nil, cute.f32, m + k)
      local c0
      if o.beta then
        C:uniform(-1, 1, 3)
        c0 = C:to_host()
      else
        C:fill(0 / 0)
      end
      local bias
      if o.bias then bias = cute.tensor(cute.f32, { o.bias == "col" and n or m }):uniform(-1, 1, 5) end
      local opts = { bias = bias, bias_mode = o.bias, activation = o.activation, epilogue = o.epilogue,
        alpha = o.alpha, beta = o.beta }
      assert.equal("sm90", G.plan(A, B, C, opts).kernel_name)
      cute.gemm(A, B, C, opts)
      cute.synchronize()
      local ha, hb, hc, hbias = A:to_host(), B:to_host(), C:to_host(), bias and bias:to_host()
      for t = 0, 499 do
        local idx = (t * 7919) % (m * n)
        local i, j = idx % m, math.floor(idx / m)
        local s, mag = 0, 0
        for kk = 0, k - 1 do
          local p = ha[{ i, kk }] * hb[{ kk, j }]
          s, mag = s + p, mag + math.abs(p)
        end
        local v = (o.alpha or 1) * s + (o.beta or 0) * (c0 and c0[{ i, j }] or 0)
        if o.bias then v = v + hbias[{ o.bias == "col" and j or i }] end
        v = ref_act(o.activation, v)
        if o.epilogue then v = 2 * v + (i - j) end
        local got = hc[{ i, j }]
        local lim = 2 ^ -7 * (mag + 1) + 1e-3 * math.abs(v)
        assert(math.abs(got - v) <= lim, string.format("%s (%d,%d): got %.6g, expected %.6g (allowed %.3g)",
          G90.fused and (o.activation or "epilogue") or "?", i, j, got, v, lim))
      end
      A:free(); B:free(); C:free()
      if bias then bias:free() end
    end
  end)

  it("MN-major A and B (16-bit): all four majors, ragged #gpu", function()
    if not need_sm90() then return end
    for _, lay in ipairs { { "row", "row" }, { "col", "col" }, { "col", "row" } } do
      local o = { a_layout = lay[1], b_layout = lay[2] }
      check(cute.bf16, 1024, 1024, 1024, o)
      check(cute.f16, 1000, 776, 520, { a_layout = lay[1], b_layout = lay[2], c_dtype = cute.f16, beta = 1 })
      check(cute.bf16, 16, 4096, 2048, { a_layout = lay[1], b_layout = lay[2], c_dtype = cute.bf16 })
    end
  end)

  it("grouped (MoE) GEMMs against float64: uneven and empty problems, ragged rows, a bias #gpu", function()
    if not need_sm90() then return end
    for _, c in ipairs {
      { 1000, 512, 384, { 0, 300, 300, 555, 1000 } },
      { 4096, 1024, 1024, { 0, 1024, 1792, 2432, 2944, 3392, 3776, 3968, 4096 } },
      { 200, 256, 72, { 0, 0, 17, 200 }, true },
    } do
      local T, K, N, off, with_bias = c[1], c[2], c[3], c[4], c[5]
      local E = #off - 1
      local A = cute.tensor(cute.bf16, { T, K }, "row"):uniform(-1, 1, 1)
      local B = cute.tensor(cute.bf16, { K, N, E }, cute.make_layout({ K, N, E }, { 1, K, K * N })):uniform(-1, 1, 2)
      local C = cute.tensor(cute.f32, { T, N }, "row"):fill(0 / 0)
      local bias = with_bias and cute.tensor(cute.f32, { N }):uniform(-1, 1, 3) or nil
      G.grouped(A, B, C, off, { bias = bias })
      cute.synchronize()
      -- the plan is kept (keyed by the tensors, the options and the offsets' values)
      local n_plans = 0
      for key in pairs(G._plan_cache[A][B][C]) do
        if key:find("^grouped|") then n_plans = n_plans + 1 end
      end
      assert.equal(1, n_plans)
      cute.testing.check_grouped_gemm(A, B, C, off, { bias = bias, rtol = 1e-5, samples = 600,
        what = string.format("grouped %dx%dx%d", T, K, N) })
      A:free(); B:free(); C:free()
      if bias then bias:free() end
    end
  end)

  it("skinny (decode) shapes: 64-row ping-pong tiles (2 to 64 rows), cute.lib.gemv (1 row, or asked) #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 40, 8192, 1024, { c_dtype = cute.bf16, samples = 2000 })
    check(cute.bf16, 64, 4096, 1000, { c_dtype = cute.bf16, samples = 2000 }) -- 64 x 64 tiles
    check(cute.bf16, 5, 8192, 1040, { c_dtype = cute.bf16, samples = 2000, default = true }) -- the default plan
    check(cute.bf16, 2, 4096, 1024, { c_dtype = cute.bf16, samples = 2000, default = true }) -- swapped
    check(cute.bf16, 1, 4096, 1024, { c_dtype = cute.bf16, samples = 2000, default = true, want = "gemv" })
    check(cute.bf16, 16, 8192, 1024, { c_dtype = cute.bf16, samples = 2000, want = "gemv" })
    check(cute.bf16, 1, 4096, 4096, { c_dtype = cute.bf16, samples = 2000, want = "gemv" })
    check(cute.f16, 7, 1000, 520, { c_dtype = cute.f16, want = "gemv" })
    check(cute.bf16, 16, 8192, 1024, { c_dtype = cute.bf16, samples = 2000 }) -- the Hopper kernel, asked for
  end)

  it("two 128-byte swizzle rows of K a stage (config.bk doubled): ping-pong, cooperative, fp8, split-K #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 16, 8192, 1040, { config = { bm = 64, bn = 128, bk = 128, stages = 4, schedule = "pingpong" },
      c_dtype = cute.bf16, samples = 2000 })
    check(cute.bf16, 300, 1000, 1000, { config = { bn = 64, bk = 128, stages = 4 }, samples = 2000 })
    check(cute.bf16, 704, 904, 200, { config = { bn = 128, bk = 128, stages = 3 }, a_layout = "col", b_layout = "row" })
    check(cute.e4m3, 64, 4096, 2064, { config = { bm = 64, bn = 64, bk = 256, stages = 4, schedule = "pingpong" },
      c_dtype = cute.bf16, rtol = 2 ^ -8 })
    check(cute.bf16, 64, 4096, 3000, { config = { bm = 64, bn = 64, bk = 128, stages = 4, schedule = "pingpong",
      split_k = 2 }, samples = 2000 })
  end)

  it("skinny problems planned swapped (C^T = B^T A^T): both schedules, split-K, fp8, majors, alpha and beta #gpu",
    function()
      if not need_sm90() then return end
      local sw = { swap_ab = true }
      check(cute.bf16, 16, 8192, 1040, { config = sw, c_dtype = cute.bf16, samples = 2000 }) -- 64 x 16 ping-pong
      check(cute.bf16, 16, 8192, 1040, { config = { swap_ab = true, bn = 16, stages = 10 }, c_dtype = cute.bf16,
        samples = 2000 }) -- 128 x 16 cooperative
      check(cute.bf16, 13, 14336, 4096, { config = sw, samples = 2000 }) -- ragged rows, f32 C, 224 tiles
      check(cute.bf16, 40, 4096, 3000, { config = { swap_ab = true, split_k = 2, split_reduce = "fused" },
        samples = 2000 })
      check(cute.bf16, 64, 1000, 1000, { config = { swap_ab = true, split_k = 3 }, samples = 2000 })
      check(cute.e4m3, 16, 4096, 2048, { config = sw, c_dtype = cute.bf16, rtol = 2 ^ -8, scale_a = 0.5 })
      check(cute.bf16, 24, 2048, 512, { config = sw, a_layout = "col", b_layout = "row", beta = -1.5, alpha = 2 })
    end)

  it("cute.lib.gemv's wide form (A through shared memory, B through a cp.async ring) #gpu", function()
    if not need_sm90() then return end
    local gemv = require "cute.lib.gemv"
    finally(function() gemv.override = nil end)
    for _, mode in ipairs { "mmaw4r4", "mmaw2r8", "mmaw4r3q2" } do
      gemv.override = mode
      check(cute.bf16, 16, 8192, 1024, { c_dtype = cute.bf16, samples = 2000, want = "gemv" })
      check(cute.bf16, 11, 1000, 1096, { c_dtype = cute.f32, samples = 2000, want = "gemv" }) -- (ragged N, K's tail)
      check(cute.f16, 3, 520, 4096, { c_dtype = cute.f16, want = "gemv" })
    end
  end)

  it("opts.pdl: a chain of dependent launches, each GEMM reading the previous one's output, repeated #gpu",
    function()
      if not need_sm90() then return end
      -- X1 = X0 W1, X2 = X1 W2 (128 rows: ping-pong tiles; X2's A the launch before's C),
      -- X3 = X16 W3 (16 rows: swapped), all with pdl, three times over, then checked
      local X0 = cute.tensor(cute.bf16, { 128, 4096 }, "row"):uniform(-1, 1, 31)
      local W1 = cute.tensor(cute.bf16, { 4096, 2048 }, "col"):uniform(-1, 1, 32)
      local W2 = cute.tensor(cute.bf16, { 2048, 8192 }, "col"):uniform(-1, 1, 33)
      local X1 = cute.tensor(cute.bf16, { 128, 2048 }, "row")
      local X2 = cute.tensor(cute.bf16, { 128, 8192 }, "row")
      local X16 = cute.tensor(cute.bf16, { 16, 8192 }, "row"):uniform(-1, 1, 34)
      local W3 = cute.tensor(cute.bf16, { 8192, 4096 }, "col"):uniform(-1, 1, 35)
      local X3 = cute.tensor(cute.f32, { 16, 4096 }, "row")
      -- plain, then with the weights' first stages loaded before the wait
      for _, o in ipairs { { pdl = true }, { pdl = true, pdl_prefetch_b = true } } do
        for _ = 1, 3 do
          X1:fill(0 / 0); X2:fill(0 / 0); X3:fill(0 / 0)
          cute.gemm(X0, W1, X1, o)
          cute.gemm(X1, W2, X2, o)
          cute.gemm(X16, W3, X3, o)
        end
        local what = o.pdl_prefetch_b and "pdl_prefetch_b " or "pdl "
        assert.is_true(G.plan(X0, W1, X1, o).pdl)
        cute.testing.check_gemm(X0, W1, X1, { rtol = 2 ^ -8, samples = 2000, what = what .. "X1" })
        cute.testing.check_gemm(X1, W2, X2, { rtol = 2 ^ -8, samples = 2000, what = what .. "X2" })
        cute.testing.check_gemm(X16, W3, X3, { rtol = 1e-5, samples = 2000, what = what .. "X3" })
      end
      for _, t in ipairs { X0, W1, W2, X1, X2, X16, W3, X3 } do t:free() end
    end)

  it("repeated calls reuse their plan; new contents, new tensors and freed tensors are seen #gpu", function()
    if not need_sm90() then return end
    local cache = G._plan_cache
    local A, B, C = operands(cute.bf16, 256, 512, 128, nil, cute.f32, 5)
    C:fill(0 / 0)
    cute.gemm(A, B, C)
    local key, plan = next(cache[A][B][C])
    assert.is_table(plan)
    A:uniform(-1, 1, 99) -- new contents: the same plan, the new result
    cute.gemm(A, B, C)
    assert.equal(plan, cache[A][B][C][key])
    cute.synchronize()
    cute.testing.check_gemm(A, B, C, { what = "second call" })
    cute.gemm(A, B, C, { alpha = 2 }) -- other options: another plan
    cute.synchronize()
    cute.testing.check_gemm(A, B, C, { alpha = 2, what = "alpha 2" })
    local C2 = cute.tensor(cute.f32, { 256, 512 }, "row"):fill(0 / 0)
    cute.gemm(A, B, C2)
    cute.synchronize()
    cute.testing.check_gemm(A, B, C2, { what = "another C" })
    C2:free() -- a freed tensor is refused, never launched from the cache
    assert.has_error(function() cute.gemm(A, B, C2) end, "cute.gemm: C was freed (or its device was reset)")
    -- dropped tensors drop their plans
    A, B, C, C2 = nil, nil, nil, nil -- luacheck: ignore 311 (dropped so that the GC takes them)
    collectgarbage()
    collectgarbage()
    local left = {}
    for a in pairs(cache) do left[#left + 1] = tostring(a.dtype.name) .. " " .. tostring(a.layout) end
    assert.equal(0, #left, "plans left for A = " .. table.concat(left, "; "))
  end)

  it("opts.tune times the candidates once and caches the winner by device, shape class and dtypes #gpu", function()
    if not need_sm90() then return end
    local A, B, C = operands(cute.bf16, 1000, 1500, 520, nil, cute.bf16, 3)
    C:uniform(-1, 1, 4)
    local c0 = C:to_host()
    -- tuning launches on scratch output: C keeps its values for beta
    local p = G.plan(A, B, C, { tune = true, beta = 1 })
    assert.is_true(p.config_source == "tuned" or p.config_source == "cache", p.config_source)
    assert.matches("%((%a+)%)$", p.why)
    local again = G.plan(A, B, C, { beta = 1 }) -- no tuning asked: the cached winner
    assert.equal("cache", again.config_source)
    assert.same({ p.config.bn, p.config.stages, p.config.group },
      { again.config.bn, again.config.stages, again.config.group })
    cute.gemm(A, B, C, { beta = 1 })
    cute.synchronize()
    cute.testing.check_gemm(A, B, C, { beta = 1, c0 = c0, samples = 3000, what = "tuned" })
  end)

  it("the ping-pong schedule against float64: two tiles a CTA and more, ragged, both epilogues #gpu", function()
    if not need_sm90() then return end
    local cfg = { bm = 64, bn = 128, stages = 6, schedule = "pingpong" }
    check(cute.bf16, 4096, 4096, 4096, { config = cfg, c_dtype = cute.bf16, samples = 2000 })
    check(cute.bf16, 1000, 777, 136, { config = cfg })
    check(cute.f16, 130, 257, 64, { config = cfg, c_dtype = cute.f16 })
  end)

  it("clusters of 2 with TMA multicast, {2, 1} and {1, 2}: both schedules, fp8, ragged, 2048^3 #gpu", function()
    if not need_sm90() then return end
    for _, cl in ipairs { { 2, 1 }, { 1, 2 } } do
      -- ragged: 8 x 6 tiles of 128 x 256 (the heuristic's), 16 x 12 of 64 x 128 (ping-pong); K not a k-tile multiple
      check(cute.bf16, 1000, 1500, 520, { config = { cluster = cl } })
      check(cute.bf16, 1000, 1500, 520, { config = { cluster = cl, bm = 64, bn = 128, stages = 6,
        schedule = "pingpong" }, c_dtype = cute.bf16 })
      -- an odd number of tiles along the paired mode: a pair's second tile past C
      check(cute.bf16, 1100, 1300, 136, { config = { cluster = cl, bn = 128, stages = 6 }, c_dtype = cute.bf16 })
      check(cute.bf16, 2048, 2048, 2048, { config = { cluster = cl }, c_dtype = cute.bf16, samples = 2000 })
      check(cute.bf16, 2048, 2048, 2048, { config = { cluster = cl, bm = 64, bn = 128, stages = 6,
        schedule = "pingpong" }, samples = 2000 })
      check(cute.e4m3, 1000, 1500, 528, { config = { cluster = cl }, c_dtype = cute.bf16, rtol = 2 ^ -8 })
      check(cute.bf16, 712, 904, 200, { config = { cluster = cl, bn = 128, stages = 6 }, a_layout = "col",
        b_layout = "row" }) -- MN-major (strides of 1424 and 1808 bytes: TMA's 16-byte rule): boxes split
    end
  end)

  it("split-K: skinny problems with long K in k-slices, a reduction with the epilogue #gpu", function()
    if not need_sm90() then return end
    for _, c in ipairs { { 128, 8192, 8192, 4 }, { 128, 8192, 8192, 8 }, { 64, 4096, 14336, 4 },
      { 64, 4096, 14336, 8 }, { 100, 1000, 3000, 3 } } do
      local m, n, k, s = c[1], c[2], c[3], c[4]
      local A = cute.fake_tensor(cute.bf16, { m, k }, "row")
      local B = cute.fake_tensor(cute.bf16, { k, n }, "col")
      local p = G.plan(A, B, nil, { kernel = "sm90", config = { split_k = s } })
      assert.equal(s, p.config.split_k, p.why)
      check(cute.bf16, m, n, k, { config = { split_k = s }, samples = 2000 })
    end
    -- 16-bit output with beta and alpha (the reduction reads C), batches
    check(cute.bf16, 128, 4096, 4096, { config = { split_k = 4 }, c_dtype = cute.bf16, alpha = 0.5, beta = 2,
      rtol = 2 ^ -7, samples = 2000 })
    check(cute.bf16, 120, 1000, 2056, { config = { split_k = 3 }, l = 2, samples = 2000 })
  end)

  it("split-K reduced by the tile's last unit (split_reduce = \"fused\"): against float64 and the two kernels #gpu",
    function()
    if not need_sm90() then return end
    for _, c in ipairs { { 128, 8192, 8192, 4 }, { 64, 4096, 14336, 2 }, { 64, 4096, 14336, 8 },
      { 100, 1000, 3000, 3 } } do
      check(cute.bf16, c[1], c[2], c[3], { config = { split_k = c[4], split_reduce = "fused" }, samples = 2000 })
    end
    -- skinny shapes on 64-row ping-pong tiles (as the probe times them)
    check(cute.bf16, 16, 8192, 8192, { config = { bm = 64, bn = 128, stages = 8, schedule = "pingpong", split_k = 2,
      split_reduce = "fused" }, samples = 2000 })
    check(cute.bf16, 64, 4096, 14336, { config = { bm = 64, bn = 64, stages = 8, schedule = "pingpong", split_k = 2,
      split_reduce = "fused" }, samples = 2000 })
    -- beta and alpha into 16-bit C, batches, fp8, int8 (exact)
    check(cute.bf16, 128, 4096, 4096, { config = { split_k = 4, split_reduce = "fused" }, c_dtype = cute.bf16,
      alpha = 0.5, beta = 2, rtol = 2 ^ -7, samples = 2000 })
    check(cute.bf16, 120, 1000, 2056, { config = { split_k = 3, split_reduce = "fused" }, l = 2, samples = 2000 })
    check(cute.e4m3, 128, 4096, 4096, { config = { split_k = 4, split_reduce = "fused" }, rtol = 2 ^ -10,
      samples = 2000 })
    check(cute.i8, 128, 2048, 4096, { config = { split_k = 4, split_reduce = "fused" }, c_dtype = cute.i32,
      samples = 2000 })
    -- bit for bit the two kernels' C (the same sum order), launch after launch (the counters reset)
    local A, B, C = operands(cute.bf16, 64, 4096, 14336, nil, cute.f32, 5)
    local C2 = cute.tensor(cute.f32, { 64, 4096 }, "row")
    local cfg = { bm = 64, bn = 64, stages = 8, schedule = "pingpong", split_k = 4 }
    local pk = G.plan(A, B, C2, { kernel = "sm90", config = cfg })
    G.launcher(pk)()
    local fcfg = { split_reduce = "fused" }
    for key, v in pairs(cfg) do fcfg[key] = v end
    local pf = G.plan(A, B, C, { kernel = "sm90", config = fcfg })
    local run = G.launcher(pf)
    local want = C2:to_table()
    for launch = 1, 3 do
      C:fill(0 / 0)
      run()
      cute.synchronize()
      local got = C:to_table()
      for i = 1, #want do
        if got[i] ~= want[i] then
          error(string.format("launch %d: element %d: fused %s, two kernels %s", launch, i, got[i], want[i]))
        end
      end
      for _, v in ipairs(pf.counters:to_table()) do assert.equal(0, v) end
    end
    A:free(); B:free(); C:free(); C2:free()
  end)

  it("batched #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 256, 512, 128, { l = 3 })
    check(cute.f16, 200, 300, 72, { l = 5, c_dtype = cute.f16, beta = 1 })
  end)
end)
