-- The Hopper attention kernel (cute.lib.attention_sm90) on its own, a probe
-- (not a timed test): checks each case against float64 on sampled rows with O
-- poisoned first, then times the forward shapes and prints TFLOP/s.
--   cutelua bench/attention_sm90_probe.lua [check|time|all]
-- PERSISTENT=1: the persistent grid (config.persistent) too: each case checked
-- with it (and on a grid capped at 7 CTAs), then timed next to the default in
-- alternating rounds at S 512 to 8192, head dims 64 and 128 (ATTN_D: one).
-- LPT_AB=1: the same rounds, causal only, between the persistent grid's
-- longest-first order over every (batch, head) pair (config.lpt_group past
-- their count) and its default groups (attention_sm90.lpt_group).
-- AB="bn=128,stages=3": the same rounds between the plan's default and the
-- default with those config fields, S 512 to 16384 (AB_CAUSAL=0 or 1: one mask;
-- AB_LENGTHS="512,1024": those S; AB_GQA=4: 4 query heads a KV head).
-- REST_MS: the idle before each timing of those rounds, 1000 (a second) by default,
-- REST_MS=0 for none. Timed back to back, a kernel's figures alternate by 2-4% with
-- the board's power limit's cycle; from rest they hold within 1% (docs/benchmarks.md,
-- "The power limit's cycle"). On the H200 the back-to-back rounds of the d 64 S 512
-- A/B read the two kernels in the wrong order (1.012-1.015x where the suite's
-- separate processes read 0.982-0.987x); with the rest they read 0.983-0.992x
-- (docs/benchmarks.md, "The probe's A/B rounds from rest").
-- AB_MODULE=path: the same rounds between this build's cute.lib.attention_sm90 and
-- the copy of it at path (an older commit's: `git show REV:lua/cute/lib/
-- attention_sm90.lua > old.lua`), each planning with its defaults (and AB's fields
-- for the copy's plans when AB is given too): the A/B of a code change.
local cute = require "cute"
local a90 = require "cute.lib.attention_sm90"

local what = arg[1] or "all"
-- ATTN_CFG="bn=128,stages=2,pingpong=0": the tile configuration
package.path = "bench/?.lua;" .. package.path
local parse_config = require("attention_config").parse
local config = parse_config(os.getenv("ATTN_CFG") or "")
local PERSISTENT = os.getenv("PERSISTENT") == "1"
local LPT_AB = os.getenv("LPT_AB") == "1"
local AB = os.getenv("AB")
local AB_MODULE = os.getenv("AB_MODULE")
local alt = AB_MODULE and assert(loadfile(AB_MODULE))() or nil
-- config with fields of extra added
local function with(extra)
  local c = {}
  for k, v in pairs(config) do c[k] = v end
  for k, v in pairs(extra) do c[k] = v end
  return c
end


-- A problem: B, Hq, Hkv, Sq, Sk, D, causal, window {left, right}, varlen (list of {sq, sk})
local function make(c)
  local dt = cute[c.dtype or "bf16"]
  local B, Sq, Sk = c.b, c.sq, c.sk
  local cu_q, cu_k
  if c.varlen then
    cu_q, cu_k = { 0 }, { 0 }
    for i, l in ipairs(c.varlen) do cu_q[i + 1] = cu_q[i] + l[1]; cu_k[i + 1] = cu_k[i] + l[2] end
    B, Sq, Sk = 1, cu_q[#cu_q], cu_k[#cu_k]
  end
  local Q = cute.tensor(dt, { B, Sq, c.hq, c.d }, "row"):uniform(-1, 1, c.seed or 1)
  local K = cute.tensor(dt, { B, Sk, c.hkv, c.d }, "row"):uniform(-1, 1, (c.seed or 1) + 1)
  local V = cute.tensor(dt, { B, Sk, c.hkv, c.d }, "row"):uniform(-1, 1, (c.seed or 1) + 2)
  local O = cute.tensor(dt, { B, Sq, c.hq, c.d }, "row")
  local LSE = cute.tensor(cute.f32, { B, c.hq, Sq }, "row")
  local left, right = math.huge, math.huge
  if c.causal then right = 0 end
  if c.window then
    left = c.window[1] < 0 and math.huge or c.window[1]
    right = c.window[2] < 0 and math.huge or c.window[2]
  end
  local pr = { dtype = dt.name, d = c.d, batch = c.varlen and #c.varlen or B, hq = c.hq, hkv = c.hkv, sq = Sq, sk = Sk,
    scale = c.scale or 1 / math.sqrt(c.d), left = left, right = right, q4 = Q, k4 = K, v4 = V, o4 = O, lse3 = LSE }
  if c.varlen then
    local mq, mk = 0, 0
    for _, l in ipairs(c.varlen) do mq = math.max(mq, l[1]); mk = math.max(mk, l[2]) end
    pr.sq, pr.sk = mq, mk
    pr.cu_q = cute.tensor(cute.i32, { #cu_q }):copy_from(cu_q)
    pr.cu_k = cute.tensor(cute.i32, { #cu_k }):copy_from(cu_k)
  end
  return pr, { Q = Q, K = K, V = V, O = O, LSE = LSE, cu_q = cu_q, cu_k = cu_k, left = left, right = right }
end

local function run(p)
  local launch = p.kernel { grid = p.grid, block = p.block }
  launch(unpack(p.args))
end

-- float64 reference on sampled rows
local function check(c, pr, t, samples, cfg)
  t.O:fill(0 / 0)
  t.LSE:fill(0 / 0)
  local p = assert(a90.plan(pr, { config = cfg or config }))
  run(p)
  cute.synchronize()
  local hq, hk, hv, ho, hl = t.Q:to_host(), t.K:to_host(), t.V:to_host(), t.O:to_host(), t.LSE:to_host()
  local D = c.d
  local seqs = {}
  if t.cu_q then
    for i = 1, #t.cu_q - 1 do
      local q0, k0 = t.cu_q[i], t.cu_k[i]
      seqs[i] = { b = 0, q0 = q0, sq = t.cu_q[i + 1] - q0, k0 = k0, sk = t.cu_k[i + 1] - k0 }
    end
  else
    for b = 0, c.b - 1 do seqs[#seqs + 1] = { b = b, q0 = 0, sq = c.sq, k0 = 0, sk = c.sk } end
  end
  local worst, nrows = 0, 0
  local group = c.hq / c.hkv
  for si, s in ipairs(seqs) do
    for n = 0, samples - 1 do
      local i = (n * 7919 + si * 31) % s.sq
      local h = (n * 13 + si) % c.hq
      local kh = math.floor(h / group)
      local off = s.sk - s.sq
      local sc = {}
      local m = -math.huge
      for j = 0, s.sk - 1 do
        if j <= i + off + t.right and j >= i + off - t.left then
          local acc = 0
          for d = 0, D - 1 do acc = acc + hq[{ s.b, s.q0 + i, h, d }] * hk[{ s.b, s.k0 + j, kh, d }] end
          sc[j] = acc * pr.scale
          if sc[j] > m then m = sc[j] end
        end
      end
      local l = 0
      for _, v in pairs(sc) do l = l + math.exp(v - m) end
      local lse_ref = l > 0 and (m + math.log(l)) or -math.huge
      local lse = hl[{ s.b, h, s.q0 + i }]
      if not (lse == lse_ref or math.abs(lse - lse_ref) <= 1e-3 * (1 + math.abs(lse_ref))) then
        error(string.format("LSE[%d,%d,%d] = %s, expected %s", s.b, h, s.q0 + i, lse, lse_ref))
      end
      for d = 0, D - 1 do
        local o = 0
        for j, v in pairs(sc) do o = o + math.exp(v - m) * hv[{ s.b, s.k0 + j, kh, d }] end
        o = l > 0 and o / l or 0
        local got = ho[{ s.b, s.q0 + i, h, d }]
        local e = math.abs(got - o)
        if got ~= got or e > 2 ^ -7 * math.abs(o) + 4e-3 then
          error(string.format("O[%d,%d,%d,%d] = %s, expected %s", s.b, s.q0 + i, h, d, got, o))
        end
        if e > worst then worst = e end
      end
      nrows = nrows + 1
    end
  end
  return worst, nrows
end

local info = cute.device_info()
print(string.format("%s (sm_%d%d, %d SMs)", info.name, info.compute_capability[1], info.compute_capability[2],
  info.sm_count))

if what == "check" or what == "all" then
  local cases = {
    { b = 2, hq = 2, hkv = 2, sq = 256, sk = 256, d = 128 },
    { b = 1, hq = 2, hkv = 2, sq = 200, sk = 333, d = 128 },
    { b = 2, hq = 4, hkv = 1, sq = 300, sk = 300, d = 64, causal = true },
    { b = 1, hq = 2, hkv = 2, sq = 130, sk = 500, d = 256, causal = true },
    { b = 1, hq = 2, hkv = 1, sq = 500, sk = 200, d = 128, causal = true }, -- rows with no key: O = 0, LSE = -inf
    { b = 1, hq = 2, hkv = 2, sq = 400, sk = 400, d = 64, window = { 100, 20 } },
    { b = 1, hq = 4, hkv = 2, d = 128, varlen = { { 100, 150 }, { 300, 260 }, { 1, 77 } }, causal = true },
    { b = 1, hq = 2, hkv = 2, sq = 256, sk = 256, d = 128, dtype = "f16" },
  }
  local variants = { { "", config } }
  if PERSISTENT then
    variants[2] = { ", persistent", with { persistent = true } }
    variants[3] = { ", persistent on 7 CTAs", with { persistent = true, max_ctas = 7 } }
  end
  for ci, c in ipairs(cases) do
    for _, v in ipairs(variants) do
      local pr, t = make(c)
      local ok, e, n = pcall(check, c, pr, t, 12, v[2])
      print(string.format("case %d (d %d, %s%s%s%s%s): %s", ci, c.d, c.varlen and "varlen" or (c.sq .. "x" .. c.sk),
        c.causal and ", causal" or "", c.window and ", window" or "", c.hq ~= c.hkv and ", gqa" or "", v[1],
        ok and string.format("ok, %d rows, max |err| %.2e", n, e) or ("FAILED: " .. tostring(e))))
      for _, x in pairs(t) do if type(x) == "table" and x.free then x:free() end end
    end
  end
end

-- PERSISTENT=1: the default grid and the persistent one on the same problem, in
-- alternating rounds (each settles 100 ms untimed first; the order reversed every
-- other round); the median of the rounds
if (PERSISTENT or LPT_AB or AB or alt) and (what == "time" or what == "all") then
  local ds = { 64, 128 }
  if os.getenv("ATTN_D") then ds = { tonumber(os.getenv("ATTN_D")) } end
  local cfgs = { config, with { persistent = true } }
  local names = { "default", "persistent" }
  local masks, lengths = { false, true }, { 512, 1024, 2048, 8192 }
  if LPT_AB then
    cfgs = { with { persistent = true, lpt_group = 2 ^ 30 }, with { persistent = true } }
    names = { "one order", "grouped" }
    masks = { true }
  elseif AB or alt then
    cfgs = { config, with(parse_config(AB or "")) }
    names = { "default", (alt and AB_MODULE .. " " or "") .. (AB or "") }
    if not os.getenv("ATTN_D") then ds = { 64, 128, 256 } end
    lengths = { 512, 2048, 8192, 16384 }
    if os.getenv("AB_LENGTHS") then
      lengths = {}
      for x in os.getenv("AB_LENGTHS"):gmatch("%d+") do lengths[#lengths + 1] = tonumber(x) end
    end
    if os.getenv("AB_CAUSAL") then masks = { os.getenv("AB_CAUSAL") == "1" } end
  end
  for _, d in ipairs(ds) do
    for _, causal in ipairs(masks) do
      for _, s in ipairs(lengths) do
        local hq = d == 64 and 32 or 16
        local b = math.max(1, math.floor(16384 / s))
        local c = { b = b, hq = hq, hkv = hq / tonumber(os.getenv("AB_GQA") or 1), sq = s, sk = s, d = d,
          causal = causal }
        local pr, t = make(c)
        local flops = 4 * b * hq * s * s * d * (causal and 0.5 or 1)
        local vs = {}
        for i, cfg in ipairs(cfgs) do
          local p = assert(((i == 2 and alt) or a90).plan(pr, { config = cfg }))
          vs[i] = { p = p, launch = p.kernel { grid = p.grid, block = p.block }, ms = {} }
        end
        -- six rounds, the order reversed every other one (A B, B A, ...): on the H200 the
        -- three-CTA kernel read up to 6% lower as the first of the pair than as the second
        -- (docs/notes/gpu-pending.md); this evens out whatever the order does
        local rest = tonumber(os.getenv("REST_MS") or "") or 1000
        if rest <= 0 then rest = nil end
        for round = 1, 6 do
          for j = 1, #vs do
            local v = vs[round % 2 == 1 and j or #vs + 1 - j]
            if rest then -- (each turn from rest: docs/benchmarks.md, "The power limit's cycle")
              cute.synchronize()
              os.execute(string.format("sleep %.3f", rest / 1000))
            end
            cute.bench(function() v.launch(unpack(v.p.args)) end, { min_time_ms = 100 })
            local r = cute.bench(function() v.launch(unpack(v.p.args)) end, { min_time_ms = 100 })
            v.ms[#v.ms + 1] = r.median_ms
          end
        end
        local tf = {}
        for i, v in ipairs(vs) do
          table.sort(v.ms)
          tf[i] = flops / (v.ms[math.ceil(#v.ms / 2)] * 1e-3) / 1e12
        end
        print(string.format("%s d=%d causal=%s b=%d h=%d s=%d: %s %.1f, %s %.1f TFLOP/s (%.3fx; %d CTAs; %s)",
          (AB or alt) and "ab" or "persistent", d, tostring(causal), b, hq, s, names[1], tf[1], names[2], tf[2],
          tf[2] / tf[1], vs[2].p.grid[1], vs[2].p.why:match("sm_90a: (.*)") or ""))
        for _, x in pairs(t) do if type(x) == "table" and x.free then x:free() end end
      end
    end
  end
  return
end

if what == "time" or what == "all" then
  local ds = { 64, 128, 256 }
  if os.getenv("ATTN_D") then ds = { tonumber(os.getenv("ATTN_D")) } end
  for _, d in ipairs(ds) do
    for _, causal in ipairs { false, true } do
      for _, s in ipairs { 1024, 4096, 8192 } do
        local hq = d == 64 and 32 or (d == 128 and 16 or 16)
        local b = math.max(1, math.floor(16384 / s))
        local c = { b = b, hq = hq, hkv = hq, sq = s, sk = s, d = d, causal = causal }
        local pr, t = make(c)
        local p = assert(a90.plan(pr, { config = config }))
        local launch = p.kernel { grid = p.grid, block = p.block }
        local flops = 4 * b * hq * s * s * d * (causal and 0.5 or 1)
        local r = cute.bench(function() launch(unpack(p.args)) end, { flops = flops })
        print(string.format("time d=%d causal=%s b=%d h=%d s=%d: %.3f ms, %.1f TFLOP/s", d, tostring(causal), b, hq, s,
          r.median_ms, r.tflops))
        for _, x in pairs(t) do if type(x) == "table" and x.free then x:free() end end
      end
    end
  end
end
