-- The GEMV kernels (cute.lib.gemv: cute.gemm with M <= 16) against cuBLAS and
-- the copy bandwidth in one run (a probe, not a timed test): each shape in
-- the SIMT form (M <= 8) and the tensor-core form, checked against float64
-- first. The weights B (K x N, K-major) are read once a call: GB/s of B.
--   cutelua bench/gemv_probe.lua [mode ...]           ROWS=8,16 for other row counts
local cute = require "cute"
local gemv = require "cute.lib.gemv"

--   FLUSH=1: the L2 flushed before each timed call (cuBLAS's too); SHAPES=4096x4096,8192x8192 (N x K)
-- the forms to time (override with arguments: simt, simtu<UNROLL>, mma, mma<WN>, mma<WN>u<UNROLL>, mmaw<S>r<R>)
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
local SHAPES = { { 4096, 4096 }, { 8192, 8192 }, { 14336, 4096 } }
if os.getenv("SHAPES") then
  SHAPES = {}
  for n, k in os.getenv("SHAPES"):gmatch("(%d+)x(%d+)") do SHAPES[#SHAPES + 1] = { tonumber(n), tonumber(k) } end
end
local flush = os.getenv("FLUSH") == "1"
-- MIN_BLOCKS=n: the kernels' min_blocks launch bound; BOUNDS=0: no max_threads bound (ptxas then plans for
-- 1024 threads a block: at most 64 registers)
gemv.min_blocks = tonumber(os.getenv("MIN_BLOCKS") or "")
if os.getenv("BOUNDS") == "0" then gemv.bounds = false end
for _, s in ipairs(SHAPES) do
  local n, k = s[1], s[2]
  local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, 2)
  for _, m in ipairs(ROWS) do
    local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
    local C = cute.tensor(cute.bf16, { m, n }, "row")
    local line = string.format("%2dx%5dx%5d", m, n, k)
    local rb = cute.bench(function()
      cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = m, n = n, k = k, b_trans = true, dtype = cute.bf16,
        c_dtype = cute.bf16 }
    end, { bytes = n * k * 2, flush_l2 = flush })
    for _, mode in ipairs(MODES) do
      if not mode:match("^simt") or m <= gemv.SIMT_ROWS then
        gemv.override = mode
        local p = cute.lib.gemm.plan(A, B, C) -- (launched directly: cute.gemm's plan cache would keep the first form)
        local launch = p.kernel { grid = p.grid, block = p.block }
        C:fill(0 / 0)
        launch(unpack(p.args))
        cute.synchronize()
        cute.testing.check_gemm(A, B, C, { samples = 300 })
        local r = cute.bench(function() launch(unpack(p.args)) end, { bytes = n * k * 2, flush_l2 = flush })
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
