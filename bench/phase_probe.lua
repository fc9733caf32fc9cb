-- Whether the suite's timing of an attention case depends on what ran just before
-- it (the board's clock under its power limit): the same forward timed as the
-- suite times it (cute.bench, 200 ms settled, the median) back to back, after a
-- second of idle, and after half a second of copies; the SM clock and power
-- sampled by nvidia-smi every 50 ms, each timing's window given in the same clock.
--   cutelua bench/phase_probe.lua [D:CAUSAL:B:H:S (64:0:32:32:512)] [N (6)] [MS (300)] [back]
-- (MS: each timing's window, as the harness's min_time_ms; "back": the back-to-back timings only)
local cute = require "cute"
local A = cute.lib.attention
package.path = "bench/?.lua;" .. package.path
local p = require("attention_config").problem(arg[1] or "64:0:32:32:512")
local n = tonumber(arg[2] or 6)
local ms = tonumber(arg[3] or 300)
local only_back = arg[4] == "back"
local Q, K, V, O, LSE, flops = p.Q, p.K, p.V, p.O, p.LSE, p.flops
local opts = { causal = p.causal, lse = LSE }
local big = cute.alloc(2 ^ 30)
local big2 = cute.alloc(2 ^ 30)
local function wall()
  local f = io.popen("date +%s.%N")
  local t = tonumber(f:read("*l"))
  f:close()
  return t
end
local smi = os.tmpname()
os.execute("nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 > " .. smi
  .. " 2>/dev/null & echo $! > " .. smi .. ".pid")
os.execute("sleep 1")
local windows = {}
local function timed(label)
  local t0 = wall()
  local r = cute.bench(function() A.forward(Q, K, V, O, opts) end, { flops = flops, warmup_ms = 200, min_time_ms = ms })
  local t1 = wall()
  windows[#windows + 1] = { label, t0, t1, r.median_ms }
end
for i = 1, n do timed("back to back " .. i) end
for i = 1, only_back and 0 or n do
  os.execute("sleep 1")
  timed("after 1 s idle " .. i)
end
for i = 1, only_back and 0 or n do
  cute.bench(function() big2:copy_from(big, 2 ^ 30) end, { warmup_ms = 400, min_time_ms = 100 })
  timed("after copies " .. i)
end
os.execute("sleep 0.3; kill $(cat " .. smi .. ".pid) 2>/dev/null; sleep 0.2")
-- samples: "2026/11/30 10:45:01.123, 1980, 650.1"
local samples = {}
for line in io.lines(smi) do
  local Y, Mo, D, hh, mm, ss, clk, pw = line:match("(%d+)/(%d+)/(%d+) (%d+):(%d+):([%d.]+),%s*([%d.]+),%s*([%d.]+)")
  if Y then
    local t = os.time { year = tonumber(Y), month = tonumber(Mo), day = tonumber(D), hour = tonumber(hh),
      min = tonumber(mm), sec = 0 } + tonumber(ss)
    samples[#samples + 1] = { t, tonumber(clk), tonumber(pw) }
  end
end
os.remove(smi)
os.remove(smi .. ".pid")
-- (nvidia-smi's timestamps are local time, os.time reads its table as local time: the same clock as date +%s)
for _, w in ipairs(windows) do
  local cs, ps = {}, {}
  for _, x in ipairs(samples) do
    if x[1] >= w[2] + 0.2 and x[1] <= w[3] then cs[#cs + 1], ps[#ps + 1] = x[2], x[3] end
  end
  local function mean(t)
    local a = 0
    for _, v in ipairs(t) do a = a + v end
    return #t > 0 and a / #t or 0 / 0
  end
  local lo, hi = math.huge, 0
  for _, v in ipairs(cs) do lo, hi = math.min(lo, v), math.max(hi, v) end
  print(string.format("%-18s %.5f ms %6.1f TFLOP/s  clock %6.0f MHz (%4.0f-%4.0f, %d samples)  power %5.0f W",
    w[1], w[4], flops / w[4] / 1e9, mean(cs), lo, hi, #cs, mean(ps)))
end
