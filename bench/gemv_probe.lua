-- The GEMV kernels (cute.lib.gemv: cute.gemm with M <= 16) against cuBLAS and
-- the copy bandwidth in one run (a probe, not a timed test): each shape in
-- the SIMT form (M <= 8) and the tensor-core form, checked against float64
-- first. The weights B (K x N, K-major) are read once a call: GB/s of B.
--   cutelua bench/gemv_probe.lua [mode ...]           ROWS=8,16 for other row counts
local cute = require "cute"
local gemv = require "cute.lib.gemv"

-- the forms to time (override with arguments: simt, mma, mma<WN>, mma<WN>u<UNROLL>, mmaw<S>r<R>)
local MODES = { "simt", "mma", "mma1", "mma2", "mma4", "mma8" }
if arg[1] then MODES = { unpack(arg) } end
local ROWS = { 1, 2, 4, 8, 16 }
if os.getenv("ROWS") then
  ROWS = {}
  for x in os.getenv("ROWS"):gmatch("%d+") do ROWS[#ROWS + 1] = tonumber(x) end
end
local info = cute.device_info()
print(string.format("%s (sm_%d%d, %d SMs)", info.name, info.compute_capability[1], info.compute_capability[2],
  info.sm_count))
local big = cute.tensor(cute.u8, { 1024 * 1024 * 1024 })
local big2 = cute.tensor(cute.u8, { 1024 * 1024 * 1024 })
local rc = cute.bench(function() big2:copy_from(big) end, { bytes = 2 * 1024 ^ 3 })
print(string.format("cuMemcpyDtoD: %.0f GB/s", rc.gbps))
big:free()
big2:free()
for _, s in ipairs { { 4096, 4096 }, { 8192, 8192 }, { 14336, 4096 } } do
  local n, k = s[1], s[2]
  local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, 2)
  for _, m in ipairs(ROWS) do
    local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
    local C = cute.tensor(cute.bf16, { m, n }, "row")
    local line = string.format("%2dx%5dx%5d", m, n, k)
    local rb = cute.bench(function()
      cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = m, n = n, k = k, b_trans = true, dtype = cute.bf16,
        c_dtype = cute.bf16 }
    end, { bytes = n * k * 2 })
    for _, mode in ipairs(MODES) do
      if mode ~= "simt" or m <= gemv.SIMT_ROWS then
        gemv.override = mode
        local p = cute.lib.gemm.plan(A, B, C) -- (launched directly: cute.gemm's plan cache would keep the first form)
        local launch = p.kernel { grid = p.grid, block = p.block }
        C:fill(0 / 0)
        launch(unpack(p.args))
        cute.synchronize()
        cute.testing.check_gemm(A, B, C, { samples = 300 })
        local r = cute.bench(function() launch(unpack(p.args)) end, { bytes = n * k * 2 })
        line = line .. string.format("  %s(%s) %6.0f GB/s %.2fx", mode, p.config.wn or "-", r.gbps,
          rb.median_ms / r.median_ms)
      end
    end
    gemv.override = nil
    print(line .. string.format("  cuBLAS %6.0f GB/s", rb.gbps))
    A:free()
    C:free()
  end
  B:free()
end
