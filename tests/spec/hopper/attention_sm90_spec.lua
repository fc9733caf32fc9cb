-- The Hopper attention kernel (cute.lib.attention_sm90) compiled for sm_90a on
-- the CPU: its plan per head dimension and mask, the reasons it refuses a
-- problem, the kernel's resources (no spill, no serialized wgmma) and, with a
-- disassembler, its SASS (HGMMA for both products, UTMALDG, setmaxnreg).
-- Results are checked on the GPU by tests/spec/attention (the #gpu tests,
-- through cute.lib.attention) and bench/attention_sm90_probe.lua.
local cute = require "cute"
local a90 = require "cute.lib.attention_sm90"
local H = require "tests.spec.trace.helper"


-- A problem of fake tensors: (B, S, H, D) views, LSE (B, H, S).
local function problem(o)
  o = o or {}
  local dt = o.dtype or cute.bf16
  local B, Sq, Sk, Hq, Hkv, D = o.b or 2, o.sq or 1000, o.sk or 1000, o.hq or 8, o.hkv or 8, o.d or 128
  local function f(shape, layout) return cute.fake_tensor(dt, shape, layout or "row") end
  return { dtype = dt.name, d = D, batch = B, hq = Hq, hkv = Hkv, sq = Sq, sk = Sk, scale = 1 / math.sqrt(D),
    left = o.left or math.huge, right = o.right or math.huge, q4 = f({ B, Sq, Hq, D }, o.q_layout),
    k4 = f { B, Sk, Hkv, D }, v4 = f { B, Sk, Hkv, D }, o4 = f { B, Sq, Hq, D },
    lse3 = cute.fake_tensor(cute.f32, { B, Hq, Sq }, "row"),
    cu_q = o.varlen and cute.fake_tensor(cute.i32, { B + 1 }) or nil,
    cu_k = o.varlen and cute.fake_tensor(cute.i32, { B + 1 }) or nil }
end

describe("cute.lib.attention_sm90 (CPU)", function()
  it("plans a tile per head dimension and mask, a CTA a query block of a head of a batch", function()
    local cases = {
      { { d = 64 }, { 192, 128, 2, false }, 512 },
      { { d = 128 }, { 128, 176, 2, true }, 384 },
      { { d = 128, right = 0 }, { 128, 128, 2, true }, 384 }, -- causal: narrower key blocks
      { { d = 256 }, { 128, 80, 2, true }, 384 },
    }
    for _, c in ipairs(cases) do
      local p = assert(a90.plan(problem(c[1]), {}))
      assert.same(c[2], { p.config.bm, p.config.bn, p.config.stages, p.config.pingpong })
      assert.equal(c[3], p.block)
      assert.same({ math.ceil(1000 / c[2][1]), 8, 2 }, p.grid)
      assert.matches("TMA %+ wgmma", p.why)
    end
    -- opts.config overrides; a varlen problem gets its own kernel
    local p = assert(a90.plan(problem { varlen = true }, { config = { bn = 128, pingpong = false } }))
    assert.equal("attention_sm90_bf16_d128_128x128_varlen", p.kernel.name)
  end)

  it("says why it cannot take a problem", function()
    local function why(o) return select(2, a90.plan(problem(o), {})) end
    assert.matches("head dimension is 96", why { d = 96 })
    assert.matches("inputs are f32", why { dtype = cute.f32 })
    -- D not contiguous in Q
    assert.matches("Q's head dimension is not contiguous",
      why { q_layout = cute.make_layout({ 2, 1000, 8, 128 }, { 1, 2, 2000, 16000 }) })
    -- a row stride that is not a multiple of 16 bytes
    assert.matches("Q's strides are not multiples of 16 bytes",
      why { q_layout = cute.make_layout({ 2, 1000, 8, 128 }, { 1000 * 1028, 1028, 128, 1 }) })
    assert.is_nil(why {})
  end)

  it("refuses tiles it has no register split for", function()
    assert.matches("bm is 128 or 192",
      H.error_of(function() return a90.kernel { dtype = "bf16", d = 128, bm = 256, bn = 128, stages = 2 } end))
    assert.matches("ping%-pong takes two consumer warpgroups", H.error_of(function()
      return a90.kernel { dtype = "bf16", d = 64, bm = 192, bn = 128, stages = 2, pingpong = true }
    end))
  end)

  it("compiles every head dimension, mask and varlen kernel without spills or serialized wgmma", function()
    for _, o in ipairs { { d = 64 }, { d = 128 }, { d = 128, right = 0 }, { d = 256 }, { d = 128, varlen = true },
      { d = 64, dtype = cute.f16 } } do
      local p = assert(a90.plan(problem(o), {}))
      local h = p.kernel:compile(unpack(p.args)) -- (raises on a serialized wgmma: the compiler's check)
      local r = h:resources()[p.kernel.name]
      assert.equal(0, r.spill_stores, p.kernel.name)
      assert.equal(0, r.stack, p.kernel.name)
      local ptx = h:ptx()
      assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n" .. p.config.bn .. "k16%.f32%.", ptx)
      assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n" .. o.d .. "k16%.f32%.", ptx)
      assert.matches("cp%.async%.bulk%.tensor%.4d", ptx)
      assert.matches("ex2%.approx", ptx)
      assert.matches("setmaxnreg%.inc%.sync%.aligned%.u32 " .. (p.config.bm == 192 and 160 or 240), ptx)
    end
  end)

  it("SASS: HGMMA for both products, UTMALDG.4D, setmaxnreg (when a disassembler is present)", function()
    local p = assert(a90.plan(problem { d = 128 }, {}))
    local h = p.kernel:compile(unpack(p.args))
    local ok, sass = pcall(h.sass, h)
    if not ok then
      pending("no nvdisasm or cuobjdump: SASS not checked")
      return
    end
    -- S = Q K^T: 8 k-blocks of 64x176x16 (the first block and the loop); O += P V: 11 of 64x128x16 (the loop, the last)
    assert.equal(16, H.count(sass, "HGMMA.64x176x16.F32.BF16 "))
    assert.equal(22, H.count(sass, "HGMMA.64x128x16.F32.BF16 "))
    assert.matches("UTMALDG%.4D", sass)
    assert.matches("USETMAXREG%.DEALLOC%.CTAPOOL 0x18", sass)
    assert.matches("USETMAXREG%.TRY_ALLOC%.CTAPOOL UP%d, 0xf0", sass)
    assert.is_nil(sass:find("LDL", 1, true))
  end)
end)
