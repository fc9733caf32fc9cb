-- cute.lib.attention.decode: a few query tokens against a KV cache, split
-- over several CTAs (partial O and LSE, then the combine kernel), caches of
-- per-sequence lengths and paged caches (a block table), on the simulator at
-- small sizes and on the GPU at inference sizes (#gpu), checked in float64.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local T = cute.testing
local A = cute.lib.attention

local seed = 500
local function rand(t)
  seed = seed + 1
  return t:uniform(-1, 1, seed)
end

-- c = {dtype, b, sq, hq, hkv, d, cache (tokens a sequence's cache holds), lens,
-- page (paged: tokens a page), splits, causal, samples}
local function run(c)
  local dt = cute.dtype.get(c.dtype or "bf16")
  local B, sq, hq, hkv, d = #c.lens, c.sq or 1, c.hq or 2, c.hkv or c.hq or 2, c.d or 64
  local Q = rand(cute.tensor(dt, { B, sq, hq, d }, "row"))
  local O = cute.tensor(dt, { B, sq, hq, d }, "row"):fill(0 / 0)
  local lse = cute.tensor(cute.f32, { B, hq, sq }, "row"):fill(0 / 0)
  local Kc, Vc, bt
  local opts = { cache_seqlens = c.lens, num_splits = c.splits, causal = c.causal, lse = lse }
  if c.page then
    local per = math.ceil(c.cache / c.page)
    local pages = B * per + 3
    Kc = rand(cute.tensor(dt, { pages, c.page, hkv, d }, "row"))
    Vc = rand(cute.tensor(dt, { pages, c.page, hkv, d }, "row"))
    -- pages handed out shuffled: sequence b's j-th page is (b * per + j) * 7 mod pages
    bt = {}
    local flat = {}
    for b = 1, B do
      bt[b] = {}
      for j = 1, per do bt[b][j] = ((b - 1) * per + j - 1) * 7 % pages end
    end
    for j = 1, per do
      for b = 1, B do flat[#flat + 1] = bt[b][j] end
    end
    opts.block_table = cute.tensor(cute.i32, { B, per }, "row"):copy_from(flat)
  else
    Kc = rand(cute.tensor(dt, { B, c.cache, hkv, d }, "row"))
    Vc = rand(cute.tensor(dt, { B, c.cache, hkv, d }, "row"))
  end
  local why = A.decode_plan(Q, Kc, Vc, O, opts).why
  assert((why:find("query heads of a KV head in one tile", 1, true) ~= nil) == (c.packed == true), why)
  local O2, lse2 = A.decode(Q, Kc, Vc, O, opts)
  assert(O2 == O and lse2 == lse)
  cute.synchronize()
  return T.check_attention(Q, Kc, Vc, O, lse, { causal = c.causal, cache_seqlens = c.lens, block_table = bt,
    samples = c.samples })
end

local small = {
  { name = "one token, 2 sequences of 257 and 31 keys, no split", cache = 300, lens = { 257, 31 }, splits = 1 },
  { name = "two tokens, causal, GQA 4:2, split in 3 (an empty split)", sq = 2, hq = 4, hkv = 2, cache = 300,
    lens = { 257, 31 }, splits = 3, causal = true },
  { name = "f16, head dim 128, split in 2, a sequence of length 0", dtype = "f16", d = 128, cache = 200,
    lens = { 130, 0, 65 }, splits = 2 },
  { name = "paged (pages of 32 tokens), split in 2", cache = 160, lens = { 150, 64 }, page = 32, splits = 2 },
  { name = "paged (pages of 16 tokens, as vLLM), GQA 8:1, 3 tokens causal", sq = 3, hq = 8, hkv = 1, cache = 96,
    lens = { 90, 17 }, page = 16, splits = 3, causal = true },
  { name = "paged (pages of 64), head dim 256, no split", d = 256, cache = 128, lens = { 100 }, page = 64,
    splits = 1 },
  { name = "one token, GQA 8:2 (a KV head's 4 query heads one tile), causal, split in 2", hq = 8, hkv = 2,
    cache = 200, lens = { 190, 77 }, splits = 2, causal = true, packed = true },
  { name = "one token, GQA 4:1, paged (pages of 32), f16, no split", dtype = "f16", hq = 4, hkv = 1, cache = 128,
    lens = { 128, 33 }, page = 32, splits = 1, packed = true },
}

local large = {
  { name = "batch 16, 1 token, 32 heads (GQA 32:8), cache 8192, splits chosen", hq = 32, hkv = 8, d = 128,
    cache = 8192, lens = { 8192, 4000, 1, 8191, 5000, 6000, 7000, 300, 8192, 8192, 2048, 4096, 100, 5555, 3333, 8000 },
    samples = 200, packed = true },
  { name = "batch 4, 4 tokens causal, paged 256-token pages, cache 32768", sq = 4, hq = 16, hkv = 4, d = 128,
    cache = 32768, lens = { 32768, 20000, 12345, 777 }, page = 256, causal = true, samples = 200 },
  { name = "batch 2, 1 token, paged 16-token pages, head dim 64, cache 4096", hq = 8, hkv = 2, d = 64, cache = 4096,
    lens = { 4096, 3000 }, page = 16, samples = 100, packed = true },
}

describe("cute.lib.attention.decode on the simulator", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)
  for _, c in ipairs(small) do
    it(c.name, function() assert.is_true(run(c).rows > 0) end)
  end
end)

describe("cute.lib.attention.decode on the GPU", function()
  for _, c in ipairs(large) do
    it(c.name .. " #gpu", function() assert.is_true(run(c).rows > 0) end)
  end
end)

describe("cute.lib.attention.decode_plan", function()
  local function fake(dt, shape) return cute.fake_tensor(dt, shape, "row") end
  it("splits long caches, and says so", function()
    local q = fake(cute.bf16, { 1, 1, 8, 128 })
    local kc = fake(cute.bf16, { 1, 16384, 8, 128 })
    local p = A.decode_plan(q, kc, kc, nil, { arch = "sm_80" })
    assert.is_true(p.config.split)
    assert.is_not_nil(p.combine)
    assert.matches("decode: the sm_80 kernel over %d+ splits of the keys", p.why)
    local h = p.kernel:compile(unpack(p.args))
    assert.matches("mma%.sync", h:ptx())
    p.combine.kernel:compile(unpack(p.combine.args))
  end)
  it("refuses bad caches and options with the user's line", function()
    local q = fake(cute.bf16, { 2, 1, 8, 64 })
    local kc = fake(cute.bf16, { 2, 512, 8, 64 })
    local pages = fake(cute.bf16, { 10, 24, 8, 64 })
    local bt = fake(cute.i32, { 2, 5 })
    local cases = {
      { function() A.decode_plan(q, kc, kc, nil, { num_split = 2 }) end,
        "unknown decode option 'num_split' %(did you mean 'num_splits'%?%)" },
      { function() A.decode_plan(q, kc, kc, nil, { cache_seqlens = { 1, 600 } }) end,
        "opts.cache_seqlens%[2%] is 600: a length from 0 to 512" },
      { function() A.decode_plan(q, kc, kc, nil, { cache_seqlens = { 1 } }) end,
        "opts.cache_seqlens must be a list %(or i32 tensor%) of 2 lengths" },
      { function() A.decode_plan(q, pages, pages, nil, { block_table = bt }) end,
        "paged caches need opts.cache_seqlens" },
      { function() A.decode_plan(q, pages, pages, nil, { block_table = bt, cache_seqlens = { 1, 2 } }) end,
        "page size 24: the sm_80 kernel takes pages of a multiple of 16 tokens" },
      { function() A.decode_plan(q, kc, kc, nil, { page_size = 16 }) end, "opts.page_size needs opts.block_table" },
      { function() A.decode_plan(q, fake(cute.bf16, { 3, 512, 8, 64 }), fake(cute.bf16, { 3, 512, 8, 64 })) end,
        "Q has batch 2 and the caches 3" },
      { function() A.decode_plan(q, kc, kc, nil, { num_splits = 0 }) end, "opts.num_splits must be a whole number" },
    }
    for i, c in ipairs(cases) do
      local ok, msg = pcall(c[1])
      assert.is_false(ok, "case " .. i)
      assert.matches("decode_spec%.lua:%d+: cute%.lib%.attention: " .. c[2], tostring(msg), nil, "case " .. i)
    end
  end)
end)
