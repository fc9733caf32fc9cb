-- cute.lib.attention.decode at inference decode shapes, a probe (not a timed
-- test): one query token a sequence, GQA 32/8 heads, head dim 128, bf16, batch
-- 1/8/16/64 against 4k/8k/32k cached tokens. For each case the whole call (the
-- plan cache's lookup, both launches), the split kernel alone and the combine
-- alone, as GB/s of the KV cache read once and as a fraction of cuMemcpyDtoD
-- measured in the same run; torch's scaled_dot_product_attention at the same
-- shapes (bench/attention_decode_torch.py, its best backend, enable_gqa) where
-- python3 has torch. The L2 is flushed before each timed call (the small caches
-- would fit in it): the cache comes from HBM. Outputs checked against float64 first
-- (O poisoned) where the cache is at most 256 MiB (the check copies it to the host
-- and converts it to doubles); decode_spec's #gpu cases check larger ones.
--   cutelua bench/attention_decode_probe.lua [b:cache[:splits] ...]   e.g. 1:32768 8:8192:16
--   CUTELUA_NO_TORCH=1: without the torch peer
--   CUTELUA_DECODE_TILE=64x4: opts.config = {bm = 64, warps = 4} (rows a query tile and warps a CTA)
--   CUTELUA_DECODE_CONFIG=bn=32,stages=2: more of opts.config (numbers), e.g. narrower key tiles
--   CUTELUA_DECODE_FUSED=1: opts.config.fused_combine = true (the last CTA of a tile's splits combines
--   them: one launch; "split kernel" is then the whole work, and no combine time)
io.stdout:setvbuf("line")
local cute = require "cute"
local A = cute.lib.attention

local cases = {}
for i = 1, #arg do
  local b, c, s = arg[i]:match("^(%d+):(%d+):?(%d*)$")
  if not b then error("bench/attention_decode_probe.lua: arguments are b:cache[:splits], got " .. arg[i], 0) end
  cases[#cases + 1] = { tonumber(b), tonumber(c), tonumber(s) }
end
if #cases == 0 then
  for _, b in ipairs { 1, 8, 16, 64 } do
    for _, c in ipairs { 4096, 8192, 32768 } do cases[#cases + 1] = { b, c } end
  end
end
local hq, hkv, d = 32, 8, 128
local config
if os.getenv("CUTELUA_DECODE_TILE") then
  local bm, w = os.getenv("CUTELUA_DECODE_TILE"):match("^(%d+)x(%d+)$")
  if not bm then error("CUTELUA_DECODE_TILE must be BMxWARPS, e.g. 64x4", 0) end
  config = { bm = tonumber(bm), warps = tonumber(w) }
end
if os.getenv("CUTELUA_DECODE_CONFIG") then
  config = config or {}
  for key, v in os.getenv("CUTELUA_DECODE_CONFIG"):gmatch("(%w+)=(%d+)") do config[key] = tonumber(v) end
end
if os.getenv("CUTELUA_DECODE_FUSED") == "1" then
  config = config or {}
  config.fused_combine = true
end

local info = cute.device_info()
print(string.format("%s (%d SMs)", info.name, info.sm_count))

-- torch's time a case (key "B:CACHE"), the fastest backend
local peers = {}
if os.getenv("CUTELUA_NO_TORCH") ~= "1" then
  local keys = {}
  for i, c in ipairs(cases) do keys[i] = c[1] .. ":" .. c[2] end
  local p = io.popen(string.format("HQ=%d HKV=%d D=%d python3 bench/attention_decode_torch.py %s 2>/dev/null", hq, hkv,
    d, table.concat(keys, " ")))
  for line in p:lines() do
    if line:sub(1, 1) == "#" then print("torch peer: " .. line:sub(3)) end
    local backend, key, ms = line:match("^torch (%S+) (%S+) ([%d.]+)$")
    if backend and (not peers[key] or tonumber(ms) < peers[key].ms) then
      peers[key] = { backend = backend, ms = tonumber(ms) }
    end
  end
  p:close()
  if next(peers) == nil then print("torch peer: none (no python3 with torch and a GPU)") end
end

local GiB = 1024 ^ 3
local src, dst = cute.alloc(GiB), cute.alloc(GiB)
src:memset(0x3f800000, 4, GiB / 4)
local copy = cute.bench(function() dst:copy_from(src, GiB) end, { bytes = 2 * GiB, flush_l2 = false }).gbps
print(string.format("cuMemcpyDtoD %.0f GB/s (bytes read + written)", copy))
src:free(); dst:free()

local summary = {}
for _, c in ipairs(cases) do
  local b, cache, splits = c[1], c[2], c[3]
  local Q = cute.tensor(cute.bf16, { b, 1, hq, d }, "row"):uniform(-1, 1, 4)
  local K = cute.tensor(cute.bf16, { b, cache, hkv, d }, "row"):uniform(-1, 1, 5)
  local V = cute.tensor(cute.bf16, { b, cache, hkv, d }, "row"):uniform(-1, 1, 6)
  local O = cute.tensor(cute.bf16, { b, 1, hq, d }, "row"):fill(0 / 0)
  local LSE = cute.tensor(cute.f32, { b, hq, 1 }, "row")
  local opts = { lse = LSE, num_splits = splits, config = config }
  local bytes = 2 * b * cache * hkv * d * 2
  A.decode(Q, K, V, O, opts)
  cute.synchronize()
  local chk = "skipped (a cache over 256 MiB)"
  if bytes <= GiB / 4 then
    local ok, e = pcall(cute.testing.check_attention, Q, K, V, O, LSE, { samples = 16 })
    chk = ok and "ok" or ("FAILED: " .. tostring(e))
  end
  local p = A.decode_plan(Q, K, V, O, opts)
  local bopts = { bytes = bytes, flush_l2 = true, min_time_ms = 100, max_reps = 2000 }
  local whole = cute.bench(function() A.decode(Q, K, V, O, opts) end, bopts)
  local l1 = p.kernel { grid = p.grid, block = p.block }
  local k1 = cute.bench(function() l1(unpack(p.args)) end, bopts)
  local line = string.format("b%d cache %d: %s; grid %dx%dx%d; whole %.1f us %.0f GB/s (%.2f), split kernel %.1f us "
    .. "%.0f GB/s (%.2f)", b, cache, p.why, p.grid[1], p.grid[2], p.grid[3], whole.median_ms * 1e3, whole.gbps,
    whole.gbps / copy, k1.median_ms * 1e3, k1.gbps, k1.gbps / copy)
  if p.combine then
    local cc = p.combine
    local l2 = cc.kernel { grid = cc.grid, block = cc.block }
    local k2 = cute.bench(function() l2(unpack(cc.args)) end, {})
    line = line .. string.format(", combine %.1f us", k2.median_ms * 1e3)
  end
  local peer = peers[b .. ":" .. cache]
  local tfrac
  if peer then
    tfrac = bytes / (peer.ms * 1e-3) / 1e9 / copy
    line = line .. string.format("; torch %s %.1f us (%.2f of copy, cute %.2fx)", peer.backend, peer.ms * 1e3, tfrac,
      peer.ms / whole.median_ms)
  end
  print(line .. "; checked " .. chk)
  summary[#summary + 1] = string.format("%-4d %-6d %-5d %-6.2f %-6.2f %s", b, cache, p.grid[1], whole.gbps / copy,
    k1.gbps / copy, tfrac and string.format("%.2f", tfrac) or "-")
  for _, t in ipairs { Q, K, V, O, LSE } do t:free() end
  A.decode_cache(true)
end
print("\nfraction of the copy bandwidth (whole call, split kernel alone, torch SDPA's best backend):")
print("b    cache  split whole  kernel torch")
for _, s in ipairs(summary) do print(s) end
