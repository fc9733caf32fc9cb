-- Whether the attention forward's speed depends on where Q, K, V and O lie in
-- memory: the four carved from one buffer at chosen gaps (KiB after Q, after K,
-- after V), each placement timed as the suite times a case (cute.bench, 200 ms
-- settled, the median), in rounds.
--   cutelua bench/address_probe.lua D:CAUSAL:B:H:S ROUNDS GAP_QK:GAP_KV:GAP_VO ...
local cute = require "cute"
local ffi = require "ffi"
local A = cute.lib.attention
-- (the problem's own Q, K and V are the placements' sources, its O unused)
package.path = "bench/?.lua;" .. package.path
local p = require("attention_config").problem(arg[1])
local d, causal, b, h, s = p.d, p.causal, p.b, p.h, p.s
local rounds = tonumber(arg[2])
local shape = { b, s, h, d }
local bytes = b * s * h * d * 2
local MiB = 2 ^ 20
local gaps, most = {}, 0
for i = 3, #arg do
  local g = {}
  for x in arg[i]:gmatch("[%d]+") do g[#g + 1] = tonumber(x) * 1024 end
  gaps[#gaps + 1] = g
  most = math.max(most, g[1] + g[2] + g[3])
end
local buf = cute.alloc(4 * bytes + most + 4 * MiB)
local base = tonumber(ffi.cast("uint64_t", buf.ptr))
base = math.ceil(base / (2 * MiB)) * (2 * MiB)
local src, LSE, flops = { p.Q, p.K, p.V }, p.LSE, p.flops
local function place(g)
  local off = { 0, bytes + g[1], 2 * bytes + g[1] + g[2], 3 * bytes + g[1] + g[2] + g[3] }
  local t = {}
  for i = 1, 4 do t[i] = cute.from_ptr(ffi.cast("uint64_t", base + off[i]), cute.bf16, shape, "row") end
  for i = 1, 3 do t[i]:copy_from(src[i]) end
  return t
end
print(string.format("d %d %s b %d h %d s %d: %.0f MiB a tensor; base %% 64 MiB = %d MiB", d, causal and "causal" or
  "no mask", b, h, s, bytes / MiB, (base % (64 * MiB)) / MiB))
for r = 1, rounds do
  for _, g in ipairs(gaps) do
    local t = place(g)
    local opts = { causal = causal, lse = LSE }
    local res = cute.bench(function() A.forward(t[1], t[2], t[3], t[4], opts) end, { flops = flops, warmup_ms = 200 })
    print(string.format("round %d gaps %6d %6d %6d KiB: %.5f ms %.1f TFLOP/s", r, g[1] / 1024, g[2] / 1024,
      g[3] / 1024, res.median_ms, flops / res.median_ms / 1e9))
  end
end
-- the suite's way: tensors of their own, five times over (addresses as allocated)
for r = 1, 5 do
  local t = {}
  for i = 1, 4 do t[i] = cute.tensor(cute.bf16, shape, "row") end
  for i = 1, 3 do t[i]:copy_from(src[i]) end
  local opts = { causal = causal, lse = LSE }
  local res = cute.bench(function() A.forward(t[1], t[2], t[3], t[4], opts) end, { flops = flops, warmup_ms = 200 })
  local addr = {}
  for i = 1, 4 do addr[i] = string.format("%x", tonumber(ffi.cast("uint64_t", t[i]._ptr))) end
  print(string.format("own %d: %s: %.5f ms %.1f TFLOP/s", r, table.concat(addr, " "), res.median_ms,
    flops / res.median_ms / 1e9))
  if r % 2 == 1 then for i = 1, 4 do t[i]:free() end end
end
