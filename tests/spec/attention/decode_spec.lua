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

-- The tensors and options of case c (see run), the caches filled at random,
-- O and LSE poisoned; bt: the block table as a Lua table (paged).
local function make(c)
  local dt = cute.dtype.get(c.dtype or "bf16")
  local B, sq, hq, hkv, d = #c.lens, c.sq or 1, c.hq or 2, c.hkv or c.hq or 2, c.d or 64
  local Q = rand(cute.tensor(dt, { B, sq, hq, d }, "row"))
  local O = cute.tensor(dt, { B, sq, hq, d }, "row"):fill(0 / 0)
  local lse = cute.tensor(cute.f32, { B, hq, sq }, "row"):fill(0 / 0)
  local Kc, Vc, bt
  local opts = { cache_seqlens = c.lens, num_splits = c.splits, causal = c.causal, window = c.window, lse = lse,
    config = c.config, pdl = c.pdl }
  if c.page then
    local per = math.ceil(c.cache / c.page)
    local pages = B * per + 3
    Kc = rand(cute.tensor(dt, { pages, c.page, hkv, d }, "row"))
    Vc = rand(cute.tensor(dt, { pages, c.page, hkv, d }, "row"))
    -- pages handed out shuffled: sequence b's j-th page is (b * per + j + shift) * 7 mod pages
    bt = {}
    local flat = {}
    for b = 1, B do
      bt[b] = {}
      for j = 1, per do bt[b][j] = ((b - 1) * per + j - 1 + (c.shift or 0)) * 7 % pages end
    end
    for j = 1, per do
      for b = 1, B do flat[#flat + 1] = bt[b][j] end
    end
    opts.block_table = cute.tensor(cute.i32, { B, per }, "row"):copy_from(flat)
  else
    Kc = rand(cute.tensor(dt, { B, c.cache, hkv, d }, "row"))
    Vc = rand(cute.tensor(dt, { B, c.cache, hkv, d }, "row"))
  end
  return Q, Kc, Vc, O, lse, opts, bt
end

-- The decode of case c (O and LSE poisoned first) against float64.
local function check(c, Q, Kc, Vc, O, lse, opts, bt)
  O:fill(0 / 0)
  lse:fill(0 / 0)
  local O2, lse2 = A.decode(Q, Kc, Vc, O, opts)
  assert(O2 == O and lse2 == lse)
  cute.synchronize()
  return T.check_attention(Q, Kc, Vc, O, lse, { causal = c.causal, window = c.window, cache_seqlens = c.lens,
    block_table = bt, samples = c.samples })
end

-- c = {dtype, b, sq, hq, hkv, d, cache (tokens a sequence's cache holds), lens,
-- page (paged: tokens a page), splits, causal, samples}
local function run(c)
  local Q, Kc, Vc, O, lse, opts, bt = make(c)
  local why = A.decode_plan(Q, Kc, Vc, O, opts).why
  assert((why:find("query heads of a KV head in one tile", 1, true) ~= nil) == (c.packed == true), why)
  return check(c, Q, Kc, Vc, O, lse, opts, bt)
end

-- n calls of case c, each with new tensors (or the same ones refilled) and
-- new lengths, each checked; the cache plans once and serves the rest
local function calls(c, n, same_tensors, device_lens)
  local before = A.decode_cache()
  local Q, Kc, Vc, O, lse, opts, bt
  for i = 1, n do
    c.lens = c.lens_of(i)
    if i == 1 or not same_tensors then
      Q, Kc, Vc, O, lse, opts, bt = make(c)
    else
      rand(Q); rand(Kc); rand(Vc)
    end
    opts.cache_seqlens = device_lens and cute.tensor(cute.i32, #c.lens):copy_from(c.lens) or c.lens
    assert.is_true(check(c, Q, Kc, Vc, O, lse, opts, bt).rows > 0, "call " .. i)
  end
  local after = A.decode_cache()
  assert.equals(before.plans + 1, after.plans)
  assert.equals(before.hits + n - 1, after.hits)
  return after
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
  { name = "one token, GQA 8:2 in 64-row tiles of 4 warps (config), split in 3", hq = 8, hkv = 2, cache = 200,
    lens = { 200, 65 }, splits = 3, packed = true, config = { bm = 64, warps = 4 } },
  { name = "one token, GQA 8:2, config {bm = 32} (its 2 warps derived), split in 2", hq = 8, hkv = 2, cache = 100,
    lens = { 100 }, splits = 2, packed = true, config = { bm = 32 } },
  { name = "one token, GQA 32:2 (16 rows a tile, all used), head dim 128, split in 2", hq = 32, hkv = 2, d = 128,
    cache = 130, lens = { 130, 64 }, splits = 2, packed = true },
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

describe("cute.lib.attention.decode's plan cache on the simulator", function()
  local sim = H.simulator { arch = "sm_80" }
  setup(sim.enter)
  teardown(sim.leave)
  before_each(function() A.decode_cache(true) end)

  it("reuses a plan with new Q, K, V, O, LSE and lengths each call (GQA packed, split in 3)", function()
    calls({ hq = 4, hkv = 2, cache = 200, splits = 3, lens_of = function(i) return { 190 - 40 * i, 7 * i } end }, 3)
  end)
  it("reuses a plan with the same tensors refilled, lengths on the device (two tokens causal, splits chosen)",
    function()
      calls({ sq = 2, hq = 2, hkv = 1, cache = 300, causal = true,
        lens_of = function(i) return { 300 - 100 * i, 1 + i } end }, 3, true, true)
    end)
  it("reuses a plan over paged caches with a new block table each call (f16, one length 0)", function()
    local c = { dtype = "f16", cache = 128, page = 32, splits = 2,
      lens_of = function(i) return { 128 - 30 * i, 0 } end }
    c.shift = 0
    local mk = make
    make = function(x) -- (the pages handed out differently each call)
      x.shift = x.shift + 5
      return mk(x)
    end
    local ok, e = pcall(calls, c, 3)
    make = mk
    assert(ok, e)
  end)
  it("refuses lengths past the cache and freed tensors on a cached call", function()
    local c = { cache = 512, lens_of = function() return { 500 } end }
    calls(c, 2)
    local Q, Kc, Vc, O, _, opts = make(c)
    opts.cache_seqlens = { 513 }
    local msg = H.error_of(function() A.decode(Q, Kc, Vc, O, opts) end)
    assert.matches("decode_spec%.lua:%d+: cute%.lib%.attention: opts%.cache_seqlens%[1%] is 513", msg)
    local freed = cute.tensor(cute.bf16, { 1, 1, 2, 64 }, "row")
    freed:free()
    msg = H.error_of(function() A.decode(freed, Kc, Vc, O, opts) end)
    assert.matches("Q was freed", msg)
    -- lengths on the device, freed after a call
    opts.cache_seqlens = cute.tensor(cute.i32, 1):copy_from({ 100 })
    A.decode(Q, Kc, Vc, O, opts)
    opts.cache_seqlens:free()
    msg = H.error_of(function() A.decode(Q, Kc, Vc, O, opts) end)
    assert.matches("opts%.cache_seqlens was freed", msg)
  end)
  it("plans again for other options, and keeps at most DECODE_CACHE_ENTRIES plans", function()
    local c = { cache = 64, splits = 2, lens = { 64, 50 } }
    local Q, Kc, Vc, O, lse, opts = make(c)
    local keep = A.DECODE_CACHE_ENTRIES
    A.DECODE_CACHE_ENTRIES = 2
    local ok, e = pcall(function()
      for _, scale in ipairs { 0.1, 0.2, 0.3, 0.1 } do
        opts.scale = scale
        O:fill(0 / 0)
        A.decode(Q, Kc, Vc, O, opts)
        T.check_attention(Q, Kc, Vc, O, lse, { scale = scale, cache_seqlens = c.lens })
      end
    end)
    A.DECODE_CACHE_ENTRIES = keep
    assert(ok, e)
    local s = A.decode_cache()
    assert.equals(4, s.plans) -- (0.1 was evicted before it came back)
    assert.equals(2, s.entries)
    assert.equals(2, s.evictions)
    assert.equals(0, A.decode_cache(true).entries)
  end)
  it("keeps a plan (and workspace) a stream", function()
    local c = { cache = 128, splits = 2, lens = { 128, 70 } }
    local Q, Kc, Vc, O, lse, opts, bt = make(c)
    local s1, s2 = cute.stream(), cute.stream()
    for _, s in ipairs { s1, s2, s1, s2 } do
      opts.stream = s
      assert.is_true(check(c, Q, Kc, Vc, O, lse, opts, bt).rows > 0)
    end
    local st = A.decode_cache()
    assert.equals(2, st.plans)
    assert.equals(2, st.hits)
  end)
  it("makes O and LSE when not given, new ones each call", function()
    local c = { cache = 64, splits = 2, lens = { 64, 50 } }
    local Q, Kc, Vc, _, _, opts = make(c)
    opts.lse = nil
    local O1, l1 = A.decode(Q, Kc, Vc, nil, opts)
    local O2, l2 = A.decode(Q, Kc, Vc, nil, opts)
    assert.are_not.equal(O1, O2)
    assert.are_not.equal(l1, l2)
    T.check_attention(Q, Kc, Vc, O1, l1, { cache_seqlens = c.lens })
    T.check_attention(Q, Kc, Vc, O2, l2, { cache_seqlens = c.lens })
    assert.equals(1, A.decode_cache().hits)
  end)
end)

describe("cute.lib.attention.decode on the simulated sm_90a", function()
  local sim = H.simulator { arch = "sm_90a" }
  setup(sim.enter)
  teardown(sim.leave)
  it("GQA 8:2 over 40 splits (most empty: the combine's lanes take several each), twice", function()
    local c = { hq = 8, hkv = 2, cache = 300, splits = 40, lens = { 300, 100 } }
    local Q, Kc, Vc, O, lse, opts = make(c)
    for _ = 1, 2 do assert.is_true(check(c, Q, Kc, Vc, O, lse, opts).rows > 0) end
  end)
  it("opts.pdl: each call's kernels programmatic dependent launches, split and not, repeated", function()
    for _, c in ipairs { { hq = 8, hkv = 2, cache = 300, splits = 5, lens = { 300, 100 }, pdl = true },
      { hq = 4, hkv = 4, cache = 200, splits = 1, lens = { 200 }, pdl = true } } do
      local Q, Kc, Vc, O, lse, opts = make(c)
      for _ = 1, 3 do assert.is_true(check(c, Q, Kc, Vc, O, lse, opts).rows > 0) end
    end
  end)
  it("takes more splits for longer lengths in one plan, growing its workspace", function()
    A.decode_cache(true)
    local lens = { { 64 }, { 512 }, { 300 } }
    local c = { cache = 512, lens_of = function(i) return lens[i] end }
    local splits = {}
    for i = 1, 3 do
      local q = cute.fake_tensor(cute.bf16, { 1, 1, 2, 64 }, "row")
      local kc = cute.fake_tensor(cute.bf16, { 1, 512, 2, 64 }, "row")
      splits[i] = A.decode_plan(q, kc, kc, nil, { cache_seqlens = lens[i] }).grid[1]
    end
    assert.same({ 1, 4, 2 }, splits) -- (2 CTAs a split, 264 resident)
    calls(c, 3)
  end)
  it("launches the combine as a programmatic dependent launch on the sm_90 device, without opts.arch", function()
    -- (the device's compute capability decides where no arch is given)
    local q = cute.fake_tensor(cute.bf16, { 1, 1, 8, 128 }, "row")
    local kc = cute.fake_tensor(cute.bf16, { 1, 4096, 2, 128 }, "row")
    for _, pdl in ipairs { false, true } do
      local p = A.decode_plan(q, kc, kc, nil, { num_splits = 8, pdl = pdl })
      assert.is_true(p.combine.pdl)
      assert.equal(pdl or nil, p.pdl)
      assert.matches("griddepcontrol%.wait", p.combine.kernel:compile(unpack(p.combine.args)):ptx())
      assert.matches("griddepcontrol%.launch_dependents", p.kernel:compile(unpack(p.args)):ptx())
    end
  end)
  it("plans the split count for the 132 SMs it simulates", function()
    local function fake(dt, shape) return cute.fake_tensor(dt, shape, "row") end
    local q = fake(cute.bf16, { 1, 1, 32, 128 })
    local kc = fake(cute.bf16, { 1, 32768, 8, 128 })
    local p = A.decode_plan(q, kc, kc, nil, {})
    -- 8 CTAs a split (the 4 query heads of each of 8 KV heads in a 16-row tile
    -- of one warp), 3 CTAs an SM (70 KB of shared memory): 396 resident; 47
    -- splits of at most 11 key tiles make one wave
    assert.same({ 47, 8, 1 }, p.grid)
    assert.equals(32, p.block)
    assert.same({ 47, 1, 4, 8, 128 }, require("cute.layout").shape(p.args[4].layout)) -- (splits, B, G, Hkv, D)
    -- 64-row tiles of 4 warps: 2 CTAs an SM, 264 resident
    p = A.decode_plan(q, kc, kc, nil, { config = { bm = 64, warps = 4 } })
    assert.same({ 32, 8, 1 }, p.grid)
  end)
end)

-- The fused combine (opts.config.fused_combine): the two-kernel path against
-- float64, then the fused one bit for bit against it on the same inputs, in two cached
-- calls (the second finds the arrival counters the first left at zero); then
-- the plan's counters all zero after two launches of its kernel.
local function bits(t) -- (O and LSE as a list of numbers; -0 and 0 apart)
  local out = {}
  local function walk(x)
    if type(x) == "table" then
      for _, y in ipairs(x) do walk(y) end
    else
      out[#out + 1] = (x == 0 and 1 / x < 0) and "-0" or x
    end
  end
  walk(t:to_table())
  return out
end

local function fused(c)
  A.decode_cache(true)
  local Q, Kc, Vc, O, lse, opts, bt = make(c)
  assert.is_true(check(c, Q, Kc, Vc, O, lse, opts, bt).rows > 0)
  local o2, l2 = bits(O), bits(lse)
  local fopts, config = {}, { fused_combine = true }
  for k, v in pairs(opts) do fopts[k] = v end
  for k, v in pairs(c.config or {}) do config[k] = v end
  fopts.config = config
  local plan = A.decode_plan(Q, Kc, Vc, O, fopts)
  assert.is_true(plan.fused)
  assert.is_nil(plan.combine)
  assert.matches("the combine fused into it", plan.why)
  assert.equals((c.packed == true), plan.why:find("query heads of a KV head in one tile", 1, true) ~= nil)
  for call = 1, 2 do -- (bit for bit the checked two-kernel result: no second float64 reference)
    O:fill(0 / 0)
    lse:fill(0 / 0)
    A.decode(Q, Kc, Vc, O, fopts)
    cute.synchronize()
    assert.same(o2, bits(O), "O, call " .. call)
    assert.same(l2, bits(lse), "LSE, call " .. call)
  end
  local s = A.decode_cache()
  assert.equals(1, s.hits)
  -- the plan's own counters (zeroed when made), its kernel launched twice
  local counts = plan.args[18]
  assert.equals(plan.grid[1] / plan.splits * plan.grid[2] * plan.grid[3], counts:size())
  for _ = 1, 2 do
    O:fill(0 / 0)
    plan.kernel { grid = plan.grid, block = plan.block } (unpack(plan.args))
    cute.synchronize()
    for _, n in ipairs(counts:to_table()) do assert.equals(0, n) end
    assert.same(o2, bits(O))
  end
end

local fused_cases = {
  { name = "one token, GQA 8:2 packed, causal, paged (pages of 32), split in 2", hq = 8, hkv = 2, cache = 160,
    lens = { 150, 64 }, page = 32, splits = 2, causal = true, packed = true },
  { name = "two tokens, causal, GQA 4:2, split in 5 (empty splits)", sq = 2, hq = 4, hkv = 2, cache = 300,
    lens = { 257, 31 }, splits = 5, causal = true },
  { name = "f16, head dim 128, GQA 8:2 packed, split in 17 (most empty), a length 0", dtype = "f16", d = 128,
    hq = 8, hkv = 2, cache = 200, lens = { 200, 0 }, splits = 17, packed = true },
  { name = "3 tokens causal, GQA 8:1, pages of 16, 64-row tiles (two rows a warp a group), split in 5", sq = 3, hq = 8,
    hkv = 1, cache = 96, lens = { 90, 17 }, page = 16, splits = 5, causal = true, config = { bm = 64, warps = 4 } },
  { name = "one token, window {40, -1} (not packed), paged (pages of 64), split in 3", hq = 4, hkv = 2, cache = 128,
    lens = { 128, 100 }, page = 64, splits = 3, window = { 40, -1 } },
}

describe("cute.lib.attention.decode with the combine fused (config.fused_combine) on the simulator", function()
  local sim = H.simulator { arch = "sm_80" }
  setup(sim.enter)
  teardown(sim.leave)
  for _, c in ipairs(fused_cases) do
    it(c.name, function() fused(c) end)
  end
end)

describe("cute.lib.attention.decode with the combine fused on the simulated sm_90a", function()
  local sim = H.simulator { arch = "sm_90a" }
  setup(sim.enter)
  teardown(sim.leave)
  it("GQA 4:2 packed over the most splits (128, most empty)", function()
    fused { hq = 4, hkv = 2, cache = 300, lens = { 300 }, splits = A.DECODE_MAX_SPLITS, packed = true }
  end)
end)

describe("cute.lib.attention.decode on the GPU", function()
  for _, c in ipairs(large) do
    it(c.name .. " #gpu", function() assert.is_true(run(c).rows > 0) end)
  end
  for _, c in ipairs(large) do
    it("the combine fused, bit for bit the two kernels': " .. c.name .. " #gpu", function() fused(c) end)
  end
  it("opts.pdl: the calls' kernels as programmatic dependent launches, three calls in a row #gpu", function()
    local c = {}
    for k, v in pairs(large[1]) do c[k] = v end
    c.pdl = true
    local Q, Kc, Vc, O, lse, opts = make(c)
    -- calls back to back: the next call's split kernel must not write the shared split
    -- workspace before the previous call's combine has read it (its griddepcontrol.wait)
    for _ = 1, 3 do
      O:fill(0 / 0)
      for _ = 1, 4 do A.decode(Q, Kc, Vc, O, opts) end
      assert.is_true(check(c, Q, Kc, Vc, O, lse, opts).rows > 0)
    end
  end)
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
  it("fuses the combine into the split kernel on request (config.fused_combine), and compiles it", function()
    local q = fake(cute.bf16, { 1, 1, 8, 128 })
    local kc = fake(cute.bf16, { 1, 4096, 2, 128 })
    for _, arch in ipairs { "sm_80", "sm_90a" } do
      local two = A.decode_plan(q, kc, kc, nil, { arch = arch, num_splits = 8 })
      local p = A.decode_plan(q, kc, kc, nil, { arch = arch, num_splits = 8, config = { fused_combine = true } })
      assert.is_true(p.fused)
      assert.is_nil(p.combine)
      assert.are_not.equal(two.kernel.name, p.kernel.name)
      assert.same(two.grid, p.grid)
      local ptx = p.kernel:compile(unpack(p.args)):ptx()
      assert.matches("atom%.[%w.]*add", ptx)
      assert.matches("fence%.acq_rel%.gpu", ptx)
      assert.is_nil(two.kernel:compile(unpack(two.args)):ptx():find("atom%.[%w.]*add"))
    end
    -- one split: nothing to combine, the kernel of the unfused plan
    local one = A.decode_plan(q, kc, kc, nil, { num_splits = 1, config = { fused_combine = true } })
    assert.is_falsy(one.fused)
    assert.equals(A.decode_plan(q, kc, kc, nil, { num_splits = 1 }).kernel.name, one.kernel.name)
    local msg = H.error_of(function() A.decode_plan(q, kc, kc, nil, { config = { fused_combine = 1 } }) end)
    assert.matches("opts%.config%.fused_combine must be a boolean, got number", msg)
    msg = H.error_of(function() A.decode_plan(q, kc, kc, nil, { config = { fused_combin = true } }) end)
    assert.matches("opts%.config%.fused_combin is not one of", msg)
  end)
  it("launches the combine as a programmatic dependent launch on sm_90 (griddepcontrol), not before", function()
    local q = fake(cute.bf16, { 1, 1, 8, 128 })
    local kc = fake(cute.bf16, { 1, 4096, 2, 128 })
    for _, c in ipairs { { "sm_90a", true }, { "sm_80", false } } do
      local p = A.decode_plan(q, kc, kc, nil, { arch = c[1], num_splits = 8 })
      assert.equal(c[2], p.combine.pdl, c[1])
      local ptx = p.combine.kernel:compile(unpack(p.combine.args)):ptx()
      assert.equal(c[2], ptx:find("griddepcontrol%.wait") ~= nil, c[1])
      -- the split kernel lets it launch once all its CTAs have started
      local sptx = p.kernel:compile(unpack(p.args)):ptx()
      assert.equal(c[2], sptx:find("griddepcontrol%.launch_dependents") ~= nil, c[1])
      assert.is_nil(sptx:find("griddepcontrol.wait", 1, true))
      -- fused (no combine launch) or one split (no combine): neither
      local f = A.decode_plan(q, kc, kc, nil, { arch = c[1], num_splits = 8, config = { fused_combine = true } })
      assert.is_nil(f.kernel:compile(unpack(f.args)):ptx():find("griddepcontrol", 1, true))
      local one = A.decode_plan(q, kc, kc, nil, { arch = c[1], num_splits = 1 })
      assert.is_nil(one.kernel:compile(unpack(one.args)):ptx():find("griddepcontrol", 1, true))
    end
    -- opts.pdl: the split (or only) kernel waits at its start and lets the next launch
    -- start early, and so does the combine; before sm_90 it changes nothing
    for _, n in ipairs { 8, 1 } do
      local p = A.decode_plan(q, kc, kc, nil, { arch = "sm_90a", num_splits = n, pdl = true })
      assert.is_true(p.pdl)
      local sptx = p.kernel:compile(unpack(p.args)):ptx()
      local launch, wait = sptx:find("griddepcontrol.launch_dependents", 1, true), sptx:find("griddepcontrol.wait", 1,
        true)
      local read = math.min(sptx:find("cp.async", 1, true) or math.huge, sptx:find("ld.global", 1, true) or math.huge)
      assert.is_true(launch ~= nil and wait ~= nil and launch < wait and wait < read)
      if n > 1 then
        assert.matches("griddepcontrol%.launch_dependents", p.combine.kernel:compile(unpack(p.combine.args)):ptx())
      end
    end
    local p80 = A.decode_plan(q, kc, kc, nil, { arch = "sm_80", num_splits = 8, pdl = true })
    assert.is_falsy(p80.pdl)
    assert.is_nil(p80.kernel:compile(unpack(p80.args)):ptx():find("griddepcontrol.wait", 1, true))
    assert.matches("opts.pdl must be a boolean", H.error_of(function()
      return A.decode_plan(q, kc, kc, nil, { arch = "sm_90a", pdl = "on" })
    end))
    -- a launch's pdl is a boolean
    local fill, cfg = require("cute.runtime").internal.fill_launch, require("ffi").new("RtLaunch")
    assert.equal(1, fill({ grid = 1, block = 32, pdl = true }, cfg).pdl)
    assert.equal(0, fill({ grid = 1, block = 32 }, cfg).pdl)
    assert.matches("pdl must be a boolean", H.error_of(function() fill({ grid = 1, block = 32, pdl = 1 }, cfg) end))
  end)
  it("takes the split count from the wave model", function()
    -- (CTAs a split, key tiles of the longest sequence, CTAs resident) -> splits
    local cases = {
      { 8, 512, 264, 32 },   -- batch 1, 32k cache, 8 KV heads (GQA packed), an H100 at 2 CTAs an SM: one wave
      { 64, 128, 264, 4 },   -- batch 8, 8k: 256 CTAs
      { 128, 256, 264, 2 },  -- batch 16, 16k
      { 512, 64, 264, 1 },   -- batch 64, 4k: two waves without splitting
      { 8, 8, 264, 4 },      -- a short cache: two key tiles a split at least
      { 8, 100000, 1000, 125 }, -- at most 128
      { 32, 1, 264, 1 },
      { 250, 256, 264, 1 },  -- 0.95 of a wave: more waves would cost more than they save
      { 200, 256, 264, 5 },  -- 0.76 of a wave: 1000 CTAs, 3.8 waves
    }
    for _, c in ipairs(cases) do
      assert.equals(c[4], A.decode_splits(c[1], c[2], c[3]), table.concat(c, ", "))
    end
    local h100 = { smem_per_sm = 233472, registers_per_sm = 65536, max_threads_per_sm = 2048 }
    assert.equals(2, A.ctas_per_sm(h100, 128, 81920, 248))  -- head dim 128
    assert.equals(2, A.ctas_per_sm(h100, 128, 40960, 176))  -- head dim 64: registers
    local a100 = { smem_per_sm = 167936, registers_per_sm = 65536, max_threads_per_sm = 2048 }
    assert.equals(1, A.ctas_per_sm(a100, 128, 98304, 256))  -- head dim 256: shared memory
    assert.equals(5, A.ctas_per_sm(h100, 128, 40960, 64))   -- fewer registers: shared memory
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
      { function() A.decode_plan(q, kc, kc, nil, { num_splits = 129 }) end,
        "opts.num_splits must be a whole number from 1 to 128, got 129" },
    }
    for i, c in ipairs(cases) do
      local ok, msg = pcall(c[1])
      assert.is_false(ok, "case " .. i)
      assert.matches("decode_spec%.lua:%d+: cute%.lib%.attention: " .. c[2], tostring(msg), nil, "case " .. i)
    end
  end)
end)
