-- The Hopper GEMM against cuBLAS in one run (a probe, not a timed test):
-- bf16 A (M x K row-major) and B (K x N column-major: both K-major), bf16 C,
-- at 4096^3 and 8192^3 (or the sizes given). Prints the plan's choice, the
-- kernel's resources, TFLOP/s of cute.gemm (the whole call, host planning
-- included), of its kernel launched alone, of cute.cublas, and the ratio;
-- each result is checked against float64 on sampled entries first.
--   cutelua bench/gemm_sm90_probe.lua [size ...]        e.g. 4096 8192 6144
--   KERNEL=sm80 cutelua bench/gemm_sm90_probe.lua       the mma.sync kernel, for comparison
--   SM90=128,6 cutelua bench/gemm_sm90_probe.lua        gemm_sm90 with another tile: bn, stages[, group]
--   TMA_STORE=0 cutelua bench/gemm_sm90_probe.lua       the epilogue from registers instead of smem + TMA
--   SM90=128,6 SCHEDULE=pingpong cutelua bench/gemm_sm90_probe.lua   the ping-pong schedule (64-row tiles)
--   SM90=128,4 BK=128 cutelua bench/gemm_sm90_probe.lua    two 128-byte swizzle rows of K a stage (bk 128 bf16,
--                                                    256 fp8: two TMA boxes adjacent along K an operand a stage)
--   DTYPE=e4m3 cutelua bench/gemm_sm90_probe.lua     fp8 in, bf16 out (no cuBLAS line: the suite has cuBLASLt)
--   CLUSTER=2x1 cutelua bench/gemm_sm90_probe.lua    clusters of 2 (2x1: a pair of vertically adjacent tiles
--                                                    shares B, 1x2: A; TMA multicast), and the same tile without
--                                                    a cluster timed in the same run ("none" or 1x1: no cluster)
--   SPLITK=4 cutelua bench/gemm_sm90_probe.lua [MxNxK ...]   split-K (opts.config.split_k = 4, the tile as above,
--                                                    the heuristic's without SM90) timed next to the default plan
--                                                    and cuBLAS in the same run; sizes default to 128x8192x8192
--   SPLITK=2 SPLIT_REDUCE=fused cutelua bench/gemm_sm90_probe.lua [MxNxK ...]   split-K with the k-slices summed
--                                                    by each tile's last unit in the GEMM kernel
--                                                    (opts.config.split_reduce); "kernel": the second kernel (the
--                                                    default); "both": each timed in the same run, and their ratio
--   AUTO_SPLITK=1 cutelua bench/gemm_sm90_probe.lua  the default plan with gemm_sm90.AUTO_SPLIT_K on
--   AB="bn=256,stages=5,schedule=pingpong" cutelua bench/gemm_sm90_probe.lua [MxNxK ...]   the default plan,
--                                                    the default with those opts.config fields and cuBLAS in
--                                                    alternating rounds (bf16; the fair A/B: see below)
--   SWAP=1 cutelua bench/gemm_sm90_probe.lua 16x8192x8192   planned as C^T = B^T A^T (opts.config.swap_ab = true;
--                                                    SM90's bn, stages then a tile of C^T); SWAP=0: swap_ab =
--                                                    false (the plan without the swap, for comparison)
local cute = require "cute"
local G = require "cute.lib.gemm"

-- sizes: N (N x N x N) or MxNxK
local sizes = {}
for i = 1, #arg do
  local m, n, k = arg[i]:match("^(%d+)x(%d+)x(%d+)$")
  if m then
    sizes[#sizes + 1] = { tonumber(m), tonumber(n), tonumber(k) }
  elseif tonumber(arg[i]) then
    local s = tonumber(arg[i])
    sizes[#sizes + 1] = { s, s, s }
  else
    error("a size is N or MxNxK, got " .. arg[i])
  end
end
local splitk = tonumber(os.getenv("SPLITK") or "")
if #sizes == 0 then sizes = splitk and { { 128, 8192, 8192 } } or { { 4096, 4096, 4096 }, { 8192, 8192, 8192 } } end
local opts = { kernel = os.getenv("KERNEL") }
local dt = cute[os.getenv("DTYPE") or "bf16"]
if os.getenv("TMA_STORE") == "0" then opts.tma_store = false end -- the register epilogue, for comparison
if os.getenv("SM90") then
  local v = {}
  for x in os.getenv("SM90"):gmatch("%d+") do v[#v + 1] = tonumber(x) end
  opts.kernel, opts.config = "sm90", { bn = v[1], stages = v[2], group = v[3] }
  if os.getenv("SCHEDULE") == "pingpong" then opts.config.bm, opts.config.schedule = 64, "pingpong" end
  if os.getenv("BK") then opts.config.bk = tonumber(os.getenv("BK")) end
end
if os.getenv("SWAP") == "1" or os.getenv("SWAP") == "0" then
  opts.kernel, opts.config = "sm90", opts.config or {}
  opts.config.swap_ab = os.getenv("SWAP") == "1"
end
-- CLUSTER: the tile as above (the heuristic's without SM90), in clusters of 2
local nocluster = nil
local cl = os.getenv("CLUSTER")
if cl and cl ~= "" and cl ~= "none" and cl ~= "1x1" then
  local cm, cn = cl:match("^(%d)x(%d)$")
  if not cm then error("CLUSTER is 2x1, 1x2 or none, got " .. cl) end
  nocluster = { kernel = "sm90", tma_store = opts.tma_store, config = opts.config }
  opts.kernel, opts.config = "sm90", {}
  for k, v in pairs(nocluster.config or {}) do opts.config[k] = v end
  opts.config.cluster = { tonumber(cm), tonumber(cn) }
end

-- AUTO_SPLITK=1: cute.lib.gemm_sm90.AUTO_SPLIT_K on (the default plan may then split K)
if os.getenv("AUTO_SPLITK") == "1" then require("cute.lib.gemm_sm90").AUTO_SPLIT_K = true end
-- SPLITK: the same options with opts.config.split_k (the tile of SM90 if given)
-- SPLIT_REDUCE: opts.config.split_reduce ("kernel", "fused"), or "both" (one after the other)
local reduce_env = os.getenv("SPLIT_REDUCE") or "kernel"
local reductions = reduce_env == "both" and { "kernel", "fused" } or { reduce_env }
local split_variants = {}
if splitk then
  for _, red in ipairs(reductions) do
    local so = { kernel = "sm90", tma_store = opts.tma_store, config = { split_k = splitk, split_reduce = red } }
    for k, v in pairs(opts.kernel == "sm90" and opts.config or {}) do so.config[k] = v end
    split_variants[#split_variants + 1] = so
  end
end

local info = cute.device_info()
print(string.format("%s (sm_%d%d, %d SMs)", info.name, info.compute_capability[1], info.compute_capability[2],
  info.sm_count))

-- AB="bn=256,stages=5,schedule=pingpong": the default plan, the default with
-- those opts.config fields (schedule=pingpong implies bm=64; cluster=1x2 is
-- {1, 2}) and cuBLAS in
-- alternating rounds (each turn settles 100 ms untimed, then 100 ms timed; the
-- median of five rounds, ROUNDS=n for n; REST_MS=1000: a second's idle before each turn,
-- since timed back to back the board's power limit alternates the clock by 2-4% from one
-- timing to the next: docs/benchmarks.md), so that the clock's drift under tensor-core load
-- favours none of them (one after the other, the first measured runs at the
-- highest clock). Each result is checked first. cute.gemm's own options go
-- there too (AB=pdl_prefetch_b=1 AB_BASE=pdl=1: a launch's PDL with and without
-- the weights prefetched, G.launcher launching each as its plan says).
-- A problem's operands (A row-major, B column-major: both K-major) and C
local function operands(s)
  local m, n, k = s[1], s[2], s[3]
  return m, n, k, 2 * m * n * k, cute.tensor(dt, { m, k }, "row"):uniform(-1, 1, 1),
    cute.tensor(dt, { k, n }, "col"):uniform(-1, 1, 2), cute.tensor(cute.bf16, { m, n }, "row")
end

-- cute.gemm's options among AB's fields (pdl=1, pdl_prefetch_b=1: booleans), the
-- rest opts.config's; AB_BASE="pdl=1" sets fields in both runs (the default's too)
local OPTS = { pdl = true, pdl_prefetch_b = true }
local function ab_opts(spec, base)
  local o = { config = {} }
  for key, v in (spec or ""):gmatch("([%w_]+)=([%w_]+)") do
    if OPTS[key] then o[key] = v == "1" or v == "true" else o.config[key] = tonumber(v) or v end
  end
  local cfg = o.config
  if cfg.schedule == "pingpong" and not cfg.bm then cfg.bm = 64 end
  if type(cfg.cluster) == "string" then -- cluster=1x2
    local cm, cn = cfg.cluster:match("^(%d)x(%d)$")
    assert(cm, "AB: cluster=MxN (1x2, 2x1)")
    cfg.cluster = { tonumber(cm), tonumber(cn) }
  end
  for key, v in pairs(base or {}) do if key ~= "config" and o[key] == nil then o[key] = v end end
  if next(cfg) == nil then o.config = nil else o.kernel = "sm90" end
  return o
end

local AB = os.getenv("AB")
if AB then
  local base = ab_opts(os.getenv("AB_BASE"))
  local other = ab_opts(AB, base)
  for _, s in ipairs(sizes) do
    local m, n, k, flops, A, B, C = operands(s)
    local runs, names = {}, { "default", AB, "cuBLAS" }
    for i, o in ipairs { base, other } do
      local p = G.plan(A, B, C, o)
      local launch = G.launcher(p)
      C:fill(0 / 0)
      launch()
      cute.synchronize()
      local chk = cute.testing.check_gemm(A, B, C, { samples = 300 })
      print(string.format("%dx%dx%d %s: %s (grid %d), checked %d entries, max relative error %.2e", m, n, k, names[i],
        p.kernel.name, p.grid[1], chk.checked, chk.max_rel))
      runs[i] = launch
    end
    runs[3] = function()
      cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = m, n = n, k = k, b_trans = true, dtype = cute.bf16,
        c_dtype = cute.bf16 }
    end
    local ms, rounds = { {}, {}, {} }, tonumber(os.getenv("ROUNDS") or "") or 5
    local rest = tonumber(os.getenv("REST_MS") or "")
    for _ = 1, rounds do
      for i, run in ipairs(runs) do
        if rest then -- (each turn from rest: back to back the power limit's cycle alternates the clock)
          cute.synchronize()
          os.execute(string.format("sleep %.3f", rest / 1000))
        end
        cute.bench(run, { min_time_ms = 100 })
        ms[i][#ms[i] + 1] = cute.bench(run, { min_time_ms = 100 }).median_ms
      end
    end
    local tf, lo, hi = {}, {}, {}
    local function at(i, q) return flops / (ms[i][math.max(1, math.ceil(q * rounds))] * 1e-3) / 1e12 end
    for i = 1, 3 do
      table.sort(ms[i])
      tf[i], hi[i], lo[i] = at(i, 0.5), at(i, 0.1), at(i, 0.9)
    end
    print(string.format("  rounds %d, p90-p10 of the rounds' medians (TFLOP/s): default %.1f-%.1f, %s %.1f-%.1f, "
      .. "cuBLAS %.1f-%.1f", rounds, lo[1], hi[1], AB, lo[2], hi[2], lo[3], hi[3]))
    print(string.format("ab %dx%dx%d: default %.1f, %s %.1f, cuBLAS %.1f TFLOP/s (%.3fx the default; "
      .. "cuBLAS ratios %.3f / %.3f)", m, n, k, tf[1], AB, tf[2], tf[3], tf[2] / tf[1], tf[1] / tf[3], tf[2] / tf[3]))
    A:free(); B:free(); C:free()
  end
  return
end
for _, s in ipairs(sizes) do
  local m, n, k, flops, A, B, C = operands(s)
  local p = G.plan(A, B, C, opts)
  print(string.format("%dx%dx%d: kernel %s (%s): %s, grid %d, block %d", m, n, k, p.kernel_name, p.why,
    p.kernel.name, p.grid[1], p.block))
  local h = p.kernel:compile(unpack(p.args))
  local r = h:resources()[p.kernel.name]
  print(string.format("  registers %d, spill %d/%d bytes", r.registers, r.spill_stores, r.spill_loads))
  C:fill(0 / 0)
  cute.gemm(A, B, C, opts)
  cute.synchronize()
  local chk = cute.testing.check_gemm(A, B, C, { samples = 500 })
  print(string.format("  checked %d entries against float64, max relative error %.2e", chk.checked, chk.max_rel))
  local rg = cute.bench(function() cute.gemm(A, B, C, opts) end, { flops = flops })
  local launch = G.launcher(p) -- (a split-K plan: both kernels)
  local rk = cute.bench(launch, { flops = flops })
  print(string.format("  cute.gemm  %7.1f TFLOP/s", rg.tflops))
  print(string.format("  kernel     %7.1f TFLOP/s", rk.tflops))
  if nocluster then
    local p0 = G.plan(A, B, C, nocluster)
    local launch0, args0 = p0.kernel { grid = p0.grid, block = p0.block }, p0.args
    launch0(unpack(args0)) -- (compiled before timing)
    local r0 = cute.bench(function() launch0(unpack(args0)) end, { flops = flops })
    local r1 = cute.bench(launch, { flops = flops })
    print(string.format("  no cluster %7.1f TFLOP/s (%s, grid %d); in clusters again %.1f: ratio cluster / none %.3f",
      r0.tflops, p0.kernel.name, p0.grid[1], r1.tflops, r1.tflops / r0.tflops))
  end
  local by_reduce = {}
  for _, split_opts in ipairs(split_variants) do
    local ps = G.plan(A, B, C, split_opts)
    local red = split_opts.config.split_reduce
    print(string.format("  split-K plan (split_reduce %s): %s; %s grid %d + %s grid %d, workspace %.1f MiB", red,
      ps.why, ps.kernel.name, ps.grid[1], ps.reduce and ps.reduce.kernel.name or "(no reduction kernel)",
      ps.reduce and ps.reduce.grid[1] or 0, ps.workspace and ps.workspace:nbytes() / 2 ^ 20 or 0))
    local hs = ps.kernel:compile(unpack(ps.args))
    local rs = hs:resources()[ps.kernel.name]
    print(string.format("  split-K kernel registers %d, spill %d/%d bytes", rs.registers, rs.spill_stores,
      rs.spill_loads))
    local run = G.launcher(ps)
    C:fill(0 / 0)
    run()
    cute.synchronize()
    local chk2 = cute.testing.check_gemm(A, B, C, { samples = 500 })
    print(string.format("  split-K checked %d entries against float64, max relative error %.2e", chk2.checked,
      chk2.max_rel))
    local r0 = cute.bench(launch, { flops = flops })
    local r1 = cute.bench(run, { flops = flops })
    print(string.format("  split-K %d %7.1f TFLOP/s (split_reduce %s); default kernel again %.1f: ratio split / "
      .. "default %.3f", ps.config.split_k or 1, r1.tflops, red, r0.tflops, r1.tflops / r0.tflops))
    by_reduce[red] = r1.tflops
  end
  if by_reduce.kernel and by_reduce.fused then
    -- (again in turns, so that a drift of the clock does not favour one)
    local pk = G.plan(A, B, C, split_variants[1])
    local pf = G.plan(A, B, C, split_variants[2])
    local rk2 = cute.bench(G.launcher(pk), { flops = flops })
    local rf2 = cute.bench(G.launcher(pf), { flops = flops })
    print(string.format("  ratio split_reduce fused / kernel %.3f (again: %.1f / %.1f TFLOP/s = %.3f)",
      by_reduce.fused / by_reduce.kernel, rf2.tflops, rk2.tflops, rf2.tflops / rk2.tflops))
  end
  if dt == cute.bf16 then
    local rb = cute.bench(function()
      cute.cublas.gemm_rowmajor { a = A, b = B, c = C, m = m, n = n, k = k, b_trans = true, dtype = cute.bf16,
        c_dtype = cute.bf16 }
    end, { flops = flops })
    print(string.format("  cuBLAS     %7.1f TFLOP/s", rb.tflops))
    print(string.format("  ratio cute.gemm / cuBLAS %.3f (kernel alone %.3f)", rg.tflops / rb.tflops,
      rk.tflops / rb.tflops))
    for _, red in ipairs(reductions) do
      if by_reduce[red] then
        print(string.format("  ratio split-K (%s) / cuBLAS %.3f", red, by_reduce[red] / rb.tflops))
      end
    end
  end
  A:free(); B:free(); C:free()
end
