-- cute.lib.attention.forward's plan cache, a probe (not a timed test): the
-- host time of a forward call with its plan made (the cache emptied before
-- each call: what every call cost before the cache) and with it taken from
-- the cache, and the wall time of N back-to-back calls then a synchronize
-- (where planning shows when the kernels are short). bf16, causal, O and LSE
-- given. The outputs are checked against float64 (O poisoned) after both.
--   cutelua bench/attention_forward_cache_probe.lua [b:s:h:d ...]   e.g. 32:512:32:64 1:128:8:64
--   CUTELUA_SIM_ARCH=sm_90a: on the simulator (small shapes only; the wall times mean nothing there)
io.stdout:setvbuf("line")
local cute = require "cute"
local A = cute.lib.attention
local host = require("cute._c").host
local function now() return tonumber(host.now_ns()) / 1e3 end -- microseconds

local cases = {}
for i = 1, #arg do
  local b, s, h, d = arg[i]:match("^(%d+):(%d+):(%d+):(%d+)$")
  if not b then error("bench/attention_forward_cache_probe.lua: arguments are b:s:h:d, got " .. arg[i], 0) end
  cases[#cases + 1] = { tonumber(b), tonumber(s), tonumber(h), tonumber(d) }
end
if #cases == 0 then cases = { { 32, 512, 32, 64 }, { 4, 256, 16, 64 }, { 1, 128, 8, 64 }, { 1, 128, 8, 128 } } end
if os.getenv("CUTELUA_SIM_ARCH") then cute.set_device("sim", { arch = os.getenv("CUTELUA_SIM_ARCH") }) end
local N = tonumber(os.getenv("CUTELUA_PROBE_CALLS") or "") or 200

local info = cute.device_info()
print(string.format("%s; %d calls a measurement", info.name or info.arch or "device", N))
for _, c in ipairs(cases) do
  local b, s, h, d = c[1], c[2], c[3], c[4]
  local Q = cute.tensor(cute.bf16, { b, s, h, d }, "row"):uniform(-1, 1, 1)
  local K = cute.tensor(cute.bf16, { b, s, h, d }, "row"):uniform(-1, 1, 2)
  local V = cute.tensor(cute.bf16, { b, s, h, d }, "row"):uniform(-1, 1, 3)
  local O = cute.tensor(cute.bf16, { b, s, h, d }, "row")
  local lse = cute.tensor(cute.f32, { b, h, s }, "row")
  local opts = { lse = lse, causal = true }
  local p = A.plan(Q, K, V, O, opts)
  local function planned()
    A.forward_cache(true)
    A.forward(Q, K, V, O, opts)
  end
  local function cached() A.forward(Q, K, V, O, opts) end
  local res = {}
  for _, m in ipairs { { "planned", planned }, { "cached", cached } } do
    O:fill(0 / 0)
    m[2]()
    cute.synchronize()
    cute.testing.check_attention(Q, K, V, O, lse, { causal = true, samples = 64, what = m[1] })
    for _ = 1, 10 do m[2]() end
    cute.synchronize()
    local t0 = now()
    for _ = 1, N do m[2]() end
    local t1 = now()
    cute.synchronize()
    local t2 = now()
    res[#res + 1] = string.format("%s: host %.1f us a call, wall %.1f us a call", m[1], (t1 - t0) / N, (t2 - t0) / N)
  end
  print(string.format("b%d s%d h%d d%d (%s): %s; %s", b, s, h, d, p.kernel_name, res[1], res[2]))
  for _, t in ipairs { Q, K, V, O, lse } do t:free() end
end
