-- Forward shapes timed as the attention suite times them (cute.bench, 200 ms settled,
-- 300 ms of calls, the median; each from rest, after a second's idle) and checked
-- against float64 on sampled rows, then torch's backends on the same shapes
-- (bench/attention_torch.py): e.g. whether the persistent grid's last round of tiles
-- shows (4096 tiles on 132 SMs against 4224).
--   cutelua bench/tail_probe.lua D:CAUSAL:B:H:S ...
-- TAIL_CFG="bm=192,pingpong=0": opts.config fields (bench/attention_config.lua); torch then left out
local cute = require "cute"
local A = cute.lib.attention
package.path = "bench/?.lua;" .. package.path
local AC = require "attention_config"
for _, spec in ipairs(arg) do
  local p = AC.problem(spec)
  local Q, K, V, O, LSE, causal, flops = p.Q, p.K, p.V, p.O, p.LSE, p.causal, p.flops
  local opts = { causal = causal, lse = LSE }
  if os.getenv("TAIL_CFG") then opts.config = AC.parse(os.getenv("TAIL_CFG")) end
  cute.synchronize()
  os.execute("sleep 1") -- (from rest: back to back, timings alternate by 2-3% with the board's power limit)
  local r = cute.bench(function() A.forward(Q, K, V, O, opts) end, { flops = flops, warmup_ms = 200 })
  O:fill(0 / 0)
  A.forward(Q, K, V, O, opts)
  local ok, e = pcall(cute.testing.check_attention, Q, K, V, O, LSE, { causal = causal, samples = 8 })
  print(string.format("cutelua %s %.5f %.2f %s", spec, r.median_ms, flops / r.median_ms / 1e9,
    ok and "checked" or ("WRONG: " .. tostring(e))))
  for _, t in ipairs { Q, K, V, O, LSE } do t:free() end
end
if not os.getenv("TAIL_CFG") then os.execute("cd bench && python3 attention_torch.py " .. table.concat(arg, " ")) end
