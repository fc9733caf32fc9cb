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
      local A, B = fakes(dt, 1000, 500, 304)
      local p = G.plan(A, B, nil, { arch = "sm_90a" })
      assert.equal("sm90", p.kernel_name)
      assert.matches("TMA %+ wgmma", p.why)
      assert.equal(384, p.block)
      assert.same({ 128, 256, 64, 4 }, { p.config.bm, p.config.bn, p.config.bk, p.config.stages })
      -- tiles: 8 x 2 = 16 (fewer than the SMs: one CTA a tile)
      assert.equal(16, p.grid[1])
      assert.equal("gemm_sm90_" .. dt.name .. "_128x256x64", p.kernel.name)
    end
  end)

  it("plan falls back to the sm_80 kernel and says why", function()
    local A, B = fakes(cute.bf16, 256, 256, 256)
    local function why(a, b, opts) local p = G.plan(a, b, nil, opts) return p.kernel_name, p.why end
    local k, w = why(A, cute.fake_tensor(cute.bf16, { 256, 256 }, "row"), { arch = "sm_90a" })
    assert.equal("sm80", k)
    assert.matches("not K%-major", w)
    k, w = why(cute.fake_tensor(cute.bf16, { 256, 300 }, "row"), cute.fake_tensor(cute.bf16, { 300, 256 }, "col"),
      { arch = "sm_90a" })
    assert.equal("sm80", k)
    assert.matches("not multiples of 16 bytes", w)
    k, w = why(cute.fake_tensor(cute.f32, { 256, 256 }, "row"), cute.fake_tensor(cute.f32, { 256, 256 }, "col"),
      { arch = "sm_90a" })
    assert.equal("sm80", k)
    assert.matches("f32", w)
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
    local NB = cute.fake_tensor(cute.bf16, { 256, 256 }, "row")
    local msg = H.error_at(function() G.plan(A, NB, nil, { arch = "sm_90a", kernel = "sm90" }) end)
    assert.matches("cute%.gemm: opts%.kernel = \"sm90\", but A or B is not K%-major", msg)
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
      local ptx = h:ptx()
      assert.equal(1, H.count(ptx, "setmaxnreg.dec.sync.aligned.u32 40;"))
      assert.equal(1, H.count(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"))
      -- two batches of 4 (the first k-tile of a tile, then the loop's)
      assert.equal(8, H.count(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32." .. c[1].name .. "."
        .. c[1].name))
      assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 1;"))
      assert.equal(1, H.count(ptx, "wgmma.wait_group.sync.aligned 0;"))
      assert.matches("cp%.async%.bulk%.tensor%.3d%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
      -- 4 stages: full barriers of 1 arrival (the producer's expect_tx), empty ones of 256 (the consumers)
      local inits = {}
      for cnt in ptx:gmatch("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], (%d+);") do
        inits[cnt] = (inits[cnt] or 0) + 1
      end
      assert.same({ ["1"] = 4, ["256"] = 4 }, inits)
      assert.matches("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%%r%d+%], 49152;", ptx)
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
    assert.matches("tiles are 128 x BN x 64", refused { bm = 64 })
    assert.matches("tiles are 128 x BN x 64", refused { bk = 128 })
    assert.matches("bn is a multiple of 16 from 16 to 256", refused { bn = 100 })
    assert.matches("takes 2 to 4 stages %(49152 bytes each%), got 5", refused { stages = 5 })
  end)

  it("SASS: HGMMA 64x256x16, UTMALDG, USETMAXREG (when a disassembler is present)", function()
    -- (ptxas writes f16 inputs as the default: HGMMA.64x256x16.F32 with no type after it)
    for _, c in ipairs { { cute.bf16, "HGMMA.64x256x16.F32.BF16 " }, { cute.f16, "HGMMA.64x256x16.F32 " } } do
      local dt = c[1]
      local _, h = compile(dt, 2048, 2048, 2048)
      local ok, sass = pcall(h.sass, h)
      if not ok then
        pending("no nvdisasm or cuobjdump: SASS not checked")
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
    end
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

-- A (M x K [x L]) row-major, B (K x N [x L]) column-major, C (M x N [x L]) row-major.
local function operands(dt, m, n, k, l, cdt, seed)
  local A, B, C
  if l then
    A = cute.tensor(dt, { m, k, l }, { k, 1, m * k })
    B = cute.tensor(dt, { k, n, l }, { 1, k, k * n })
    C = cute.tensor(cdt, { m, n, l }, { n, 1, m * n })
  else
    A = cute.tensor(dt, { m, k }, "row")
    B = cute.tensor(dt, { k, n }, "col")
    C = cute.tensor(cdt, { m, n }, "row")
  end
  A:uniform(-1, 1, seed)
  B:uniform(-1, 1, seed + 1)
  return A, B, C
end

-- Runs cute.gemm through the Hopper kernel (checking that the plan chose it)
-- and checks sampled entries against float64; C poisoned first (beta 0) or
-- random (beta ~= 0, the values kept as c0).
local function check(dt, m, n, k, opts)
  opts = opts or {}
  local cdt = opts.c_dtype or cute.f32
  local A, B, C = operands(dt, m, n, k, opts.l, cdt, m + n + k)
  local beta = opts.beta or 0
  local c0
  if beta ~= 0 then
    C:uniform(-1, 1, 7)
    c0 = C:to_host() -- a host copy: compared by coordinate
  else
    C:fill(0 / 0)
  end
  local p = G.plan(A, B, C, { alpha = opts.alpha, beta = beta })
  assert.equal("sm90", p.kernel_name, p.why)
  cute.gemm(A, B, C, { alpha = opts.alpha, beta = beta })
  cute.synchronize()
  cute.testing.check_gemm(A, B, C, { alpha = opts.alpha, beta = beta, c0 = c0, samples = opts.samples or 4000,
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

  it("batched #gpu", function()
    if not need_sm90() then return end
    check(cute.bf16, 256, 512, 128, { l = 3 })
    check(cute.f16, 200, 300, 72, { l = 5, c_dtype = cute.f16, beta = 1 })
  end)
end)
