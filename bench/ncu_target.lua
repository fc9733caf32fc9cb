-- A target for Nsight Compute (ncu) or compute-sanitizer: one configuration
-- launched a few times, nothing timed, the result checked once. Profile it on
-- the GPU machine, e.g. (ncu replays each profiled launch):
--   ncu --clock-control none --launch-skip 2 --launch-count 2 --section SpeedOfLight \
--     --section MemoryWorkloadAnalysis cutelua bench/ncu_target.lua gemv mmaw4r3q2
--   cutelua bench/ncu_target.lua gemv mma [MxNxK]      cute.lib.gemv's form (default 16x8192x8192)
--   cutelua bench/ncu_target.lua splitk 4 [MxNxK]      gemm_sm90 with opts.config.split_k (default 128x8192x8192)
--   cutelua bench/ncu_target.lua cluster 2x1 [MxNxK]   gemm_sm90 in clusters of 2 (default 1000x1500x520)
--   cutelua bench/ncu_target.lua attn persistent       the Hopper attention forward, causal GQA (d 128, 2x700x8/2
--                                                      heads), its persistent grid on 7 CTAs or the default grid
--   cutelua bench/ncu_target.lua attn short [causal] [D] [S]   the attention suite's row of head dim D (128;
--                                                      64: h32) and S keys (512; B = 16384 / S), its default
--                                                      plan (ATTN_CFG="bm=128,pingpong=1": those config fields)
local cute = require "cute"
local G = require "cute.lib.gemm"

local what, arg2, size = arg[1], arg[2], arg[3]
if what == "attn" then
  local A = require "cute.lib.attention"
  local short = arg2 == "short"
  local b, s, hq, hkv, d = 2, 700, 8, 2, 128
  local causal = not short
  if short then
    local rest = { size, arg[4], arg[5] } -- ([causal] [D] [S])
    if rest[1] == "causal" then causal = true; table.remove(rest, 1) end
    d = tonumber(rest[1] or 128)
    assert(d == 64 or d == 128 or d == 256, "attn short: the head dim is 64, 128 or 256")
    s = tonumber(rest[2] or 512)
    b, hq, hkv = math.max(1, math.floor(16384 / s)), d == 64 and 32 or 16, d == 64 and 32 or 16
  end
  package.path = "bench/?.lua;" .. package.path
  local given = os.getenv("ATTN_CFG") and require("attention_config").parse(os.getenv("ATTN_CFG")) or nil
  local Q = cute.tensor(cute.bf16, { b, s, hq, d }, "row"):uniform(-1, 1, 1)
  local K = cute.tensor(cute.bf16, { b, s, hkv, d }, "row"):uniform(-1, 1, 2)
  local V = cute.tensor(cute.bf16, { b, s, hkv, d }, "row"):uniform(-1, 1, 3)
  local O = cute.tensor(cute.bf16, { b, s, hq, d }, "row")
  local opts = { causal = causal,
    config = arg2 == "persistent" and { persistent = true, max_ctas = 7 } or given }
  print(A.plan(Q, K, V, O, opts).why)
  O:fill(0 / 0)
  for _ = 1, 3 do A.forward(Q, K, V, O, opts) end
  cute.synchronize()
  local ho = O:to_host()
  local bad = 0
  for i = 0, O:size() - 1 do if ho[i] ~= ho[i] then bad = bad + 1 end end
  print(string.format("%d NaN entries of %d (the specs check the values)", bad, O:size()))
  return
end
local function dims(default)
  local m, n, k = (size or default):match("^(%d+)x(%d+)x(%d+)$")
  assert(m, "size: MxNxK")
  return tonumber(m), tonumber(n), tonumber(k)
end
local m, n, k, opts
if what == "gemv" then
  m, n, k = dims("16x8192x8192")
  require("cute.lib.gemv").override = arg2 or "mma"
  opts = {}
elseif what == "splitk" then
  m, n, k = dims("128x8192x8192")
  opts = { kernel = "sm90", config = { split_k = tonumber(arg2) or 4 } }
elseif what == "cluster" then
  m, n, k = dims("1000x1500x520")
  local cm, cn = (arg2 or "2x1"):match("^(%d)x(%d)$")
  opts = { kernel = "sm90", config = { cluster = { tonumber(cm), tonumber(cn) } } }
else
  error("usage: ncu_target.lua gemv FORM [MxNxK] | splitk S [MxNxK] | cluster 2x1|1x2 [MxNxK] | attn [persistent]")
end
local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, 2)
local C = cute.tensor(cute.bf16, { m, n }, "row")
local p = G.plan(A, B, C, opts)
print(string.format("%dx%dx%d: %s (%s), grid %d%s", m, n, k, p.kernel.name, p.why, p.grid[1],
  p.reduce and string.format(" + %s grid %d", p.reduce.kernel.name, p.reduce.grid[1]) or ""))
local run = G.launcher(p)
C:fill(0 / 0)
for _ = 1, 5 do run() end
cute.synchronize()
local chk = cute.testing.check_gemm(A, B, C, { samples = 300 })
print(string.format("checked %d entries, max relative error %.2e", chk.checked, chk.max_rel))
