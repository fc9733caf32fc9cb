-- cute.lib.attention.decode at the attention suite's decode shapes, a probe (not a
-- timed test): for each case the whole call (planning, partial buffers, both
-- launches), the split kernel alone, the combine alone, as GB/s of the KV cache
-- read once and as a fraction of cuMemcpyDtoD measured in the same run; each
-- output checked against float64 first (O poisoned).
--   cutelua bench/attention_decode_probe.lua [b:cache[:splits] ...]   e.g. 1:32768 8:8192:16
io.stdout:setvbuf("line")
local cute = require "cute"
local A = cute.lib.attention

local cases = {}
for i = 1, #arg do
  local b, c, s = arg[i]:match("^(%d+):(%d+):?(%d*)$")
  cases[#cases + 1] = { tonumber(b), tonumber(c), tonumber(s) }
end
if #cases == 0 then cases = { { 1, 32768 }, { 8, 8192 }, { 16, 16384 }, { 64, 4096 } } end

local info = cute.device_info()
print(string.format("%s (%d SMs)", info.name, info.sm_count))
local GiB = 1024 ^ 3
local src, dst = cute.alloc(GiB), cute.alloc(GiB)
src:memset(0x3f800000, 4, GiB / 4)
local copy = cute.bench(function() dst:copy_from(src, GiB) end, { bytes = 2 * GiB, flush_l2 = false }).gbps
print(string.format("cuMemcpyDtoD %.0f GB/s (bytes read + written)", copy))
src:free(); dst:free()

for _, c in ipairs(cases) do
  local b, cache, splits = c[1], c[2], c[3]
  local hq, hkv, d = 32, 8, 128
  local Q = cute.tensor(cute.bf16, { b, 1, hq, d }, "row"):uniform(-1, 1, 4)
  local K = cute.tensor(cute.bf16, { b, cache, hkv, d }, "row"):uniform(-1, 1, 5)
  local V = cute.tensor(cute.bf16, { b, cache, hkv, d }, "row"):uniform(-1, 1, 6)
  local O = cute.tensor(cute.bf16, { b, 1, hq, d }, "row"):fill(0 / 0)
  local LSE = cute.tensor(cute.f32, { b, hq, 1 }, "row")
  local opts = { lse = LSE, num_splits = splits }
  local bytes = 2 * b * cache * hkv * d * 2
  A.decode(Q, K, V, O, opts)
  cute.synchronize()
  local chk = cute.testing.check_attention(Q, K, V, O, LSE, { samples = 16 })
  local p = A.decode_plan(Q, K, V, O, opts)
  local whole = cute.bench(function() A.decode(Q, K, V, O, opts) end, { bytes = bytes })
  local l1 = p.kernel { grid = p.grid, block = p.block }
  local k1 = cute.bench(function() l1(unpack(p.args)) end, { bytes = bytes })
  local line = string.format("b%d cache %d: %s; grid %dx%dx%d; "
    .. "whole %.1f us %.0f GB/s (%.2f), split kernel %.1f us %.0f GB/s (%.2f)",
    b, cache, p.why, p.grid[1], p.grid[2], p.grid[3], whole.median_ms * 1e3, whole.gbps, whole.gbps / copy,
    k1.median_ms * 1e3, k1.gbps, k1.gbps / copy)
  if p.combine then
    local cc = p.combine
    local l2 = cc.kernel { grid = cc.grid, block = cc.block }
    local k2 = cute.bench(function() l2(unpack(cc.args)) end, {})
    line = line .. string.format(", combine %.1f us", k2.median_ms * 1e3)
  end
  print(line .. string.format("; checked %s", chk and "ok" or "?"))
  for _, t in ipairs { Q, K, V, O, LSE } do t:free() end
end
