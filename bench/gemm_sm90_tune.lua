-- Autotunes cute.gemm's Hopper kernel on the GEMM suite's bf16 and fp8 shapes
-- (or the M N K triples given) and prints each candidate's time: what the
-- heuristic (M.pick_config, the built-in default) leaves on the table. The
-- winners stay in the autotune cache, so later cute.gemm calls use them.
--   cutelua bench/gemm_sm90_tune.lua [M N K ...]
local cute = require "cute"
local G = require "cute.lib.gemm"

local shapes = {}
for i = 1, #arg - 2, 3 do shapes[#shapes + 1] = { tonumber(arg[i]), tonumber(arg[i + 1]), tonumber(arg[i + 2]) } end
if #shapes == 0 then
  shapes = { { 2048, 2048, 2048 }, { 4096, 4096, 4096 }, { 8192, 8192, 8192 }, { 4096, 14336, 4096 },
    { 8192, 1024, 8192 }, { 16384, 16384, 1024 }, { 128, 8192, 8192 }, { 16, 8192, 8192 }, { 1, 4096, 4096 } }
end
local info = cute.device_info()
print(string.format("%s (%d SMs)", info.name, info.sm_count))
for _, dt in ipairs { cute.bf16, cute.e4m3 } do
  for _, s in ipairs(shapes) do
    local m, n, k = s[1], s[2], s[3]
    if dt == cute.bf16 or m >= 4096 then
      local A = cute.tensor(dt, { m, k }, "row"):uniform(-1, 1, 1)
      local B = cute.tensor(dt, { k, n }, "col"):uniform(-1, 1, 2)
      local C = cute.tensor(cute.bf16, { m, n }, "row")
      local p = G.plan(A, B, C, { tune = true })
      local r = p.tune_report
      print(string.format("%s %dx%dx%d: %s, picked %dx%d stages %d group %d", dt.name, m, n, k, p.config_source,
        p.config.bm, p.config.bn, p.config.stages, p.config.group))
      for i, e in ipairs(r and r.entries or {}) do
        local c = e.config
        print(string.format("  %d. %3dx%3d stages %d group %2d  %s", i, c.bm, c.bn, c.stages, c.group,
          e.time_ms and string.format("%.4f ms  %.1f TFLOP/s", e.time_ms, 2 * m * n * k / e.time_ms / 1e9)
          or ("skipped: " .. tostring(e.skipped))))
      end
      A:free()
      B:free()
      C:free()
    end
  end
end
