-- libnvvm's optimisation level on the Hopper GEMM (a probe, not a test): the
-- same kernel compiled with nvvm_opt 3 (the default) and 1 (ptxas at -O3 in
-- both), its compile time here, and on the GPU both launched in alternating
-- rounds (each round settles for 200 ms untimed first, so both see the same
-- clocks), each result checked against float64 first.
--   cutelua bench/nvvm_opt_probe.lua [size] [dtype]      e.g. 8192 e4m3
io.stdout:setvbuf("line")
local cute = require "cute"
local G = require "cute.lib.gemm"
local host = require("cute._c").host

local n = tonumber(arg[1]) or 8192
local dt = cute[arg[2] or "bf16"]
local gpu = cute.gpu_available()
local mk = gpu and cute.tensor or cute.fake_tensor
local A, B, C = mk(dt, { n, n }, "row"), mk(dt, { n, n }, "col"), mk(cute.bf16, { n, n }, "row")
if gpu then A:uniform(-1, 1, 1); B:uniform(-1, 1, 2) end
local p = G.plan(A, B, C, gpu and {} or { arch = "sm_90a" })
local variants = {}
for _, lvl in ipairs { 3, 1 } do
  local k = p.kernel:with { nvvm_opt = lvl, cache = false }
  local t0 = tonumber(host.now_ns())
  local h = k:compile(unpack(p.args))
  local ms = (tonumber(host.now_ns()) - t0) / 1e6
  local r = h:resources()[k.name]
  print(string.format("nvvm_opt %d: compile %.0f ms (no cache), %d registers, spill %d", lvl, ms, r.registers,
    r.spill_stores))
  variants[#variants + 1] = { lvl = lvl, launch = k { grid = p.grid, block = p.block } }
end
if not gpu then return end
for _, v in ipairs(variants) do
  C:fill(0 / 0)
  v.launch(unpack(p.args))
  cute.synchronize()
  local chk = cute.testing.check_gemm(A, B, C, { samples = 300 })
  print(string.format("nvvm_opt %d: checked %d entries, max relative error %.2e", v.lvl, chk.checked, chk.max_rel))
  v.times = {}
end
local flops = 2 * n * n * n
for _ = 1, 6 do
  for _, v in ipairs(variants) do
    cute.bench(function() v.launch(unpack(p.args)) end, { min_time_ms = 200 }) -- settle
    local r = cute.bench(function() v.launch(unpack(p.args)) end, { min_time_ms = 100, keep_times = true })
    for _, t in ipairs(r.times) do
      v.times[#v.times + 1] = t
    end
  end
end
for _, v in ipairs(variants) do
  table.sort(v.times)
  local med = v.times[math.floor(#v.times / 2) + 1]
  v.tflops = flops / (med * 1e-3) / 1e12
  print(string.format("nvvm_opt %d: %s %d^3 median %.4f ms, %.1f TFLOP/s (%d reps)", v.lvl, dt.name, n, med,
    v.tflops, #v.times))
end
print(string.format("ratio nvvm_opt 1 / 3: %.3f", variants[2].tflops / variants[1].tflops))
