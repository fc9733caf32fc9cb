--- cute.lib.gemm_sm90: a warp-specialised Hopper GEMM (sm_90a): TMA loads into a
-- 128B-swizzled shared-memory ring, an mbarrier pipeline, wgmma from shared
-- memory, setmaxnreg, a persistent grid.
--
--   C = alpha * A @ B + beta * C     A: M x K, B: K x N (both K contiguous), C: M x N [, L]
--
-- The CTA (384 threads, one an SM):
--
--   * warpgroup 0, the producer (setmaxnreg.dec 40): one thread walks the
--     CTA's tiles and their k-tiles, and for each waits until the next
--     stage of the ring is free (its empty barrier), arms the stage's full
--     barrier with the stage's bytes and issues two TMA loads (a BM x BK tile
--     of A, a BN x BK tile of B), which complete the transaction;
--   * warpgroups 1 and 2, the consumers (setmaxnreg.inc 232): a cooperative
--     BM x BN tile, each warpgroup 64 rows of it (BN / 2 f32 accumulators a
--     thread). For each k-tile: wait for the full barrier, one batch of
--     BK / 16 wgmma m64nBNk16 (fence, the MMAs, commit), wait until at most
--     this batch is in flight (wait_group 1), then release the previous
--     k-tile's stage (its MMAs are done). The epilogue computes alpha * acc
--     + beta * C (and the fused parts) and, for a 16-bit row-major C, goes
--     through shared memory (stmatrix into 64B-swizzled strips, TMA stores that
--     overlap the next strip and tile); otherwise it stores from the registers
--     (predicated on ragged tiles); meanwhile the producer loads the next tile.
--     cfg.schedule = "pingpong" gives each consumer warpgroup 64-row tiles of
--     its own instead, the CTA's tiles taken in turns (see build());
--   * the tile scheduler: tile t = blockIdx.x, + gridDim.x, ... in grouped
--     order (GROUP tiles of M share a column of B tiles, so that the CTAs
--     running at once share A and B in L2); both roles walk the same tiles,
--     and the barriers' phases carry on from tile to tile;
--   * cfg.cluster = {2, 1} or {1, 2}: clusters of two CTAs on pairs of adjacent
--     tiles that share B or A; each CTA loads half of the shared operand's
--     stage with a multicast TMA load into both, and a stage is released to
--     the producers of both CTAs (see build() and M.cluster_tile_coords).
--   * cfg.split_k = S (split-K, for problems of few tiles and long K): the
--     work units are (tile, k-slice) pairs, slice s the k-tiles [s per, min((s
--     + 1) per, ktiles)) (per = ceil(ktiles / S), no slice empty); a unit's
--     consumers store their raw accumulators into slice s of a workspace (S x
--     M x N x L, the accumulator's dtype) and a second kernel
--     (M.reduce_kernel) sums the slices and applies the whole epilogue;
--     with cfg.split_reduce = "fused" each unit then counts its arrival on
--     its tile's counter, and the tile's last unit sums the slices (in the
--     reduction kernel's order) and stores C with the whole epilogue, in this
--     kernel (see reduce_last in build() and M.split_k_plan).
--   * cfg.pdl (opts.pdl): launched as a programmatic dependent launch. Every
--     CTA says griddepcontrol.launch_dependents first (the stream's next
--     kernel, if launched so, may start as this one's CTAs leave), and every
--     thread waits at griddepcontrol.wait after setting up its barriers, before
--     any load of A or B or write of C: the CTAs' launch and set-up overlap the
--     previous kernel's end. cfg.pdl_pre = "a" or "b" (opts.pdl_prefetch_b:
--     the caller's B, the weights): the producer loads that operand's part
--     of the first tile's first stages before it waits (the caller promises
--     that no earlier kernel in the stream still writes it), the other's
--     after; each stage's barrier counts both.
--
-- TMA zero-fills what lies outside the matrices (and still completes the full
-- byte count), so ragged M, N and K need no predicates in the main loop.
-- Facts: docs/notes/hopper-facts.md section 7; docs/hopper.md section 8.
local cute = require "cute"
local err = require "cute._err"
local common = require "cute.lib.common"
local wg = require "cute.nvgpu.warpgroup"
local P = cute.pipeline
local A = cute.arch

local M = {}

-- The defaults (bk is one 128-byte swizzle row of K: 64 bf16/f16, 128 fp8 or
-- int8, 32 tf32); M.pick_config chooses bn and stages for a problem.
M.CONFIG = { bm = 128, bn = 256, stages = 4, group = 8 }

-- Streaming multiprocessors of the device (132 on an H100 SXM when there is none).
local function sm_count()
  local ok, info = pcall(cute.device_info)
  return ok and info.sm_count or 132
end
M.sm_count = sm_count

-- The ring stages that fit beside the epilogue's buffers (227 KiB a CTA, 1 KiB
-- of barriers) with stages of `stage_bytes` (BM + BN rows of the k-tile's bytes).
local function stages_fit(stage_bytes)
  return math.floor((227 * 1024 - 1024 - M.EPI_BYTES) / stage_bytes)
end

-- The opts.config fields that leave the tile to the heuristic (or the tuner).
local NOT_TILE = { cluster = true, split_k = true, split_reduce = true, swap_ab = true }
local function names_tile(config)
  for k in pairs(config or {}) do
    if not NOT_TILE[k] then return true end
  end
  return false
end

--- The tile width and stages for an M x N x K (x L) problem with inputs `name`
-- on `sms` multiprocessors: the widest BN (256, 128, 64, 32) whose tiles fill
-- the machine's waves best, a narrower tile counting as 10% less efficient a
-- halving (its wgmma reads more shared memory a flop); as many stages as fit
-- (at most 4 for 256-wide tiles, 8 otherwise: narrow tiles come with skinny,
-- memory-bound problems, which want more loads in flight).
--
-- Up to 64 columns with more rows (what a skinny problem becomes when planned
-- swapped, M.swap_ab: C^T = B^T A^T): BN the columns rounded up to 16 and the
-- ping-pong schedule's 64-row tiles with 12 stages.
--
-- Up to 64 rows (decode and small-batch shapes, memory-bound on B; planned
-- swapped when they have at least 4 times as many columns): the
-- ping-pong schedule's 64-row tiles, the widest BN of 128, 64, 32 whose tiles
-- cover at least 48% of the SMs, as many stages as fit (at most 8). Measured on
-- the H200 (2026-11-28, bench/gemm_sm90_probe.lua, cuBLAS in the same run):
-- 64x4096x14336 0.89x cuBLAS at 64x64 (64 tiles) against 0.37x with the
-- 128x32 tiles this rule replaced and 0.70x at 64x128 (32 tiles); 16x8192x8192
-- 0.81x at 64x128 (64 tiles) against 0.72x at 64x64 (128 tiles).
--
-- The same from 65 to 128 rows of one matrix (batches: the rule below): at
-- 128x8192x8192 64x128 ping-pong tiles are 1.00x cuBLAS against 0.94x with
-- the 128x64 cooperative ones, at 128x4096x14336 0.86x against 0.76x (128x32);
-- 128x128 cooperative 0.84 / 0.54x, 128x64 in clusters of 1x2 0.88 / 0.68x
-- (H200, 2026-11-28, the same probe).
--
-- From 129 to 256 rows of one matrix, the same ping-pong tiles where the
-- cooperative 128-row tiles would leave their last row of tiles at most half
-- full (129-192 rows: three 64-row tiles against two of 128) or where the
-- ping-pong tiles are no more than the cooperative ones; otherwise the rule
-- below. Measured on the H200 (the same probe, on 2026-11-28 and twice on
-- 2026-11-29): 192x8192x8192 0.83-0.86x cuBLAS against 0.77-0.82x,
-- 256x4096x14336 0.95-1.05 against 0.88 (128 tiles each), 160x8192x8192
-- 0.55-0.61 against 0.57 (within the spread); 256x8192x8192 keeps its 128
-- cooperative tiles (0.84-0.85x; 256 ping-pong tiles 0.78-0.79x).
--
-- A short K (16-bit inputs, at most 16 k-tiles) over many tiles (at least 8
-- waves of 128 x 256): 64 x 256 ping-pong tiles, 5 stages, so that one
-- warpgroup's epilogue, a large share of a tile this short, runs under the
-- other's main loop. Measured on the H200 (2026-11-29, the probe's AB mode,
-- alternating rounds with cuBLAS): 16384x16384x1024, 8192x8192x1024 and
-- 16384x4096x1024 1.03-1.04x the cooperative tiles; 4096x4096x1024 (3.9
-- waves) 0.99x; from K 2048 they lose (2048^3 0.96x, 4096^3 0.96x,
-- 8192x1024x8192 0.94x).
function M.pick_config(m, n, k, l, name, sms)
  sms = sms or sm_count()
  if n <= 64 and m > 64 then
    -- few columns (a skinny problem planned swapped, M.swap_ab): BN the columns
    -- rounded up to 16, 64-row ping-pong tiles (the most CTAs), 12 stages (at 16 x
    -- 8192 x 8192 on the H200: 0.97x cuBLAS, 0.92 with 6 stages, 0.95 with 20;
    -- 128-row cooperative tiles with 10 stages 0.97)
    local bn = math.max(16, math.ceil(n / 16) * 16)
    return { bm = 64, bn = bn, stages = math.min(stages_fit((64 + bn) * 128), 12), schedule = "pingpong" }
  end
  local function pingpong() -- (64-row tiles, the widest BN of 128, 64, 32 whose tiles cover 48% of the SMs)
    local bn = 32
    for _, w in ipairs { 128, 64 } do
      if math.ceil(m / 64) * math.ceil(n / w) * (l or 1) >= 0.48 * sms then
        bn = w
        break
      end
    end
    return { bm = 64, bn = bn, stages = math.min(stages_fit((64 + bn) * 128), 8), schedule = "pingpong" }
  end
  if m <= 64 or (m <= 128 and (l or 1) == 1) then return pingpong() end
  local best, best_score
  local penalty = 1
  for _, bn in ipairs { 256, 128, 64, 32 } do
    local tiles = math.ceil(m / 128) * math.ceil(n / bn) * (l or 1)
    local waves = math.ceil(tiles / sms)
    local score = tiles / (waves * sms) * penalty
    if not best_score or score > best_score + 1e-9 then best, best_score = bn, score end
    penalty = penalty * 0.9
  end
  if m <= 256 and (l or 1) == 1 then
    local pp = pingpong()
    if math.ceil(m / 64) % 2 == 1
        or math.ceil(m / 64) * math.ceil(n / pp.bn) <= math.ceil(m / 128) * math.ceil(n / best) then
      return pp
    end
  end
  local short_k = (name == "bf16" or name == "f16") and k <= 16 * 64
  if short_k and best == 256 and (l or 1) == 1 and math.ceil(m / 128) * math.ceil(n / 256) >= 8 * sms then
    return { bm = 64, bn = 256, stages = math.min(stages_fit((64 + 256) * 128), 5), schedule = "pingpong" }
  end
  return { bm = 128, bn = best, stages = math.min(stages_fit((128 + best) * 128), best == 256 and 4 or 8) }
end

-- Automatic split-K (M.plan, when opts.config gives no split_k): off, as it
-- lost on the H200 wherever measured (docs/hopper.md section 8);
-- opts.config.split_k = S asks for it explicitly.
M.AUTO_SPLIT_K = false

--- The split-K the automatic choice (M.AUTO_SPLIT_K) takes for an M x N x K
-- (x L) problem with BN-wide tiles and k-tiles of `bk` on `sms` SMs: when the
-- tiles are fewer than half the SMs and K has at least 16 k-tiles, S k-slices
-- such that tiles x S is about the SMs (at most 16, at least 8 k-tiles a
-- slice); nil otherwise.
-- @return S (2 to 16) or nil
-- @usage M.auto_split_k(128, 8192, 8192, 1, 256, 64, 132) -- 4
function M.auto_split_k(m, n, k, l, bn, bk, sms)
  sms = sms or sm_count()
  local tiles = math.ceil(m / 128) * math.ceil(n / bn) * (l or 1)
  local ktiles = math.ceil(k / bk)
  if tiles * 2 > sms or ktiles < 16 then return nil end
  local s = math.min(16, math.floor(sms / tiles), math.floor(ktiles / 8))
  return s >= 2 and s or nil
end

--- The split-K the heuristic's 64-row ping-pong tiles take without
-- AUTO_SPLIT_K: 2 where those tiles are at most half the SMs and K is long (at
-- least 128 k-tiles), nil otherwise. Measured on the H200 (split in two, the
-- second kernel reducing): 64x4096x14336 in 64 x 64 tiles 1.09x (2026-11-28),
-- 128x4096x14336 in 64 x 128 tiles 1.06x (0.93x cuBLAS against 0.89,
-- 2026-11-29); both are 64 tiles on 132 SMs.
-- @param tiles the tiles (batch 1)
-- @param ktiles the k-tiles of K
-- @param sms the SMs
-- @return 2 or nil
-- @usage M.pingpong_split_k(64, 224, 132) -- 2
function M.pingpong_split_k(tiles, ktiles, sms)
  if tiles * 2 <= sms and ktiles >= 128 then return 2 end
  return nil
end

-- TMA LOAD (swap point): a 3-d tiled TMA load of the box at (x, y, z) of the
-- tensor that `desc` (a CuteTmaDesc kernel parameter) describes into shared
-- memory at `smem_ptr`, completing `bar_ptr`'s transaction. Written with the
-- inline-PTX escape hatch until cute.copy takes TMA atoms: replace this one
-- function by cute.copy(tma_atom, ...) then.
local function tma_load_3d(desc, smem_ptr, x, y, z, bar_ptr)
  cute.asm("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
    .. " [$0], [$1, {$2, $3, $4}], [$5];", "r,l,r,r,r,r",
    { smem_ptr:addr(), desc.ptr:cast("generic"):addr(), x, y, z, bar_ptr:addr() }, { memory = true })
end

-- The same load written into every CTA of the cluster in `mask` (16 bits, bit
-- r = the CTA of rank r), at the same shared-memory offset in each, completing
-- the transaction on each one's barrier at `bar_ptr`'s offset (sm_90a).
local function tma_load_3d_multicast(desc, smem_ptr, x, y, z, bar_ptr, mask)
  cute.asm("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
    .. " [$0], [$1, {$2, $3, $4}], [$5], $6;", "r,l,r,r,r,r,h",
    { smem_ptr:addr(), desc.ptr:cast("generic"):addr(), x, y, z, bar_ptr:addr(), mask }, { memory = true })
end

-- Integer division and minimum of run-time values or Lua numbers (the
-- scheduler below runs traced in the kernel and on numbers in the tests).
local function idiv(a, b)
  if type(a) == "number" and type(b) == "number" then return math.floor(a / b) end
  return a / b
end
local function imin(a, b)
  if type(a) == "number" and type(b) == "number" then return math.min(a, b) end
  return cute.min(a, b)
end

--- The tile scheduler: linear tile t of tiles_m x tiles_n tiles a matrix
-- (batch after batch) -> m tile, n tile, batch. Grouped: `group` tiles along
-- M walk a column of N tiles before the next group, so that tiles that run at
-- the same time share A rows and B columns in L2 (the last group may be
-- narrower).
function M.tile_coords(t, tiles_m, tiles_n, group)
  local per_batch = tiles_m * tiles_n
  local l = idiv(t, per_batch)
  local r = t % per_batch
  local per_group = tiles_n * group
  local first_m = idiv(r, per_group) * group
  local gsize = imin(tiles_m - first_m, group)
  local g = r % per_group
  return first_m + g % gsize, idiv(g, gsize), l
end

--- The tile scheduler of a cluster (cfg.cluster = {cm, cn}, one of them 2):
-- the clusters walk linear pair index t over ceil(tiles_m / cm) x ceil(tiles_n
-- / cn) pairs (grouped as tile_coords, `group` counting M tiles), and the CTA
-- of rank `rank` takes tile (pm * cm + rank, pn) ({2, 1}: the pair's tiles
-- are vertically adjacent) or (pm, pn * cn + rank) ({1, 2}: horizontally).
-- The second tile of a pair may lie past M or N (its CTA still loads and
-- computes it, for its partner's sake, and stores nothing).
-- @return m tile, n tile, batch
function M.cluster_tile_coords(t, tiles_m, tiles_n, group, cluster, rank)
  local cm, cn = cluster[1], cluster[2]
  local pm, pn = idiv(tiles_m + (cm - 1), cm), idiv(tiles_n + (cn - 1), cn)
  local g = cm == 2 and math.max(1, math.floor(group / 2)) or group
  local a, b, l = M.tile_coords(t, pm, pn, g)
  if cm == 2 then return a * 2 + rank, b, l end
  return a, b * 2 + rank, l
end

--- The pairs a cluster of cfg.cluster walks over for tiles_m x tiles_n tiles.
function M.cluster_pairs(tiles_m, tiles_n, cluster)
  local cm, cn = cluster[1], cluster[2]
  return idiv(tiles_m + (cm - 1), cm) * idiv(tiles_n + (cn - 1), cn)
end

local kernels = {}

-- The epilogue's strips (cfg.tma_store): 32 columns of C (64 bytes of a
-- 16-bit C, the 64B swizzle's width); two buffers of BM x 32.
local EPI_N = 32
M.EPI_BYTES = 2 * 128 * EPI_N * 2

-- The input dtypes gemm_sm90 takes: the wgmma op for a BN-wide atom, the
-- dtype the data has in memory (tf32 is f32 data), the accumulator's dtype.
local INPUTS = {
  bf16 = { k = 16, acc = "f32" }, f16 = { k = 16, acc = "f32" },
  e4m3 = { k = 32, acc = "f32" }, e5m2 = { k = 32, acc = "f32" },
  i8 = { k = 32, acc = "i32" }, u8 = { k = 32, acc = "i32" },
  tf32 = { k = 8, acc = "f32", storage = "f32" },
}
M.INPUTS = INPUTS

local function major_mode(m) return m == "mn" and wg.OperandMajorMode.MN or wg.OperandMajorMode.K end

local function wgmma_op(name, bn, a_major, b_major)
  local S, K = wg.OperandSource.SMEM, wg.OperandMajorMode.K
  local t = cute.dtype.get(name)
  local shape = { 64, bn, INPUTS[name].k }
  if name == "bf16" or name == "f16" then
    return wg.MmaF16BF16Op(t, cute.f32, shape, S, major_mode(a_major), major_mode(b_major))
  end
  if name == "e4m3" or name == "e5m2" then return wg.MmaF8Op(t, t, cute.f32, shape, S, K, K) end
  if name == "i8" or name == "u8" then return wg.MmaI8Op(t, t, shape, S, K, K) end
  return wg.MmaTF32Op(shape, S, K, K)
end

-- The operand dtype of a tensor dtype (f32 data is read as tf32).
local function input_name(dt) return dt.name == "f32" and "tf32" or dt.name end
M.input_name = input_name

local function build(cfg, trace_key)
  local BM, BN, BK, STAGES, GROUP = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.group
  local inp = INPUTS[cfg.a_dtype]
  local ta = cute.dtype.get(inp.storage or cfg.a_dtype) -- the data in memory
  local tacc = cute.dtype.get(inp.acc)
  local amaj, bmaj = cfg.a_major or "k", cfg.b_major or "k"
  local atom = cute.make_mma_atom(wgmma_op(cfg.a_dtype, BN, amaj, bmaj))
  -- cfg.schedule: "cooperative" (the default: both consumer warpgroups on one BM = 128
  -- tile, 64 rows each) or "pingpong" (BM = 64: each warpgroup a tile of its own, the
  -- CTA's tiles taken in turn, one's epilogue overlapping the other's main loop)
  local PP = cfg.schedule == "pingpong"
  if PP and BM ~= 64 then
    err.raise("cute.gemm: the ping-pong schedule takes 64-row tiles, got bm = %s", tostring(BM))
  end
  -- cfg.cluster = {2, 1} or {1, 2} (nil: no cluster): a cluster of two CTAs on a
  -- pair of adjacent tiles that shares one operand ({2, 1}: vertically adjacent
  -- tiles share B; {1, 2}: horizontally adjacent ones share A); each CTA loads
  -- half of that operand's stage and multicasts it into both
  local CL = cfg.cluster
  local MC_A, MC_B = CL ~= nil and CL[2] == 2, CL ~= nil and CL[1] == 2
  local mma = cute.make_tiled_mma(atom, { PP and 1 or BM / 64, 1, 1 })
  local consumers = 256 -- two consumer warpgroups
  local tile_threads = mma.size -- the threads of one tile's MMA: 256 cooperative, 128 ping-pong
  local threads = 128 + consumers
  local kblocks = BK / inp.k
  -- K-major: S<3,3,3> o (rows, BK, STAGES), one TMA box a stage; MN-major
  -- (16-bit only): 64-row SW128 atoms, K first, one 64 x BK box a 64 rows
  local layA = wg.make_smem_layout_a(major_mode(amaj), { BM, BN, BK }, ta, STAGES)
  local layB = wg.make_smem_layout_b(major_mode(bmaj), { BM, BN, BK }, ta, STAGES)
  -- the boxes of a stage, from the TMA atoms on stand-in views of this majorness
  local boxesA, boxesB = M.stage_boxes(cfg)
  local stage_a, stage_b = BM * BK, BN * BK -- elements a stage
  local tx_bytes = (stage_a + stage_b) * ta.bytes
  local _ = cute._

  -- cfg.split: a split-K unit's raw accumulators into the workspace. true: C is then
  -- the workspace (M, N, L x S) and the extra argument the slices S (M.plan leaves no
  -- fused part, beta or TMA store in such a configuration; a second kernel reduces).
  -- "fused": C is C, the extra arguments (after the bias) the workspace, the tiles'
  -- arrival counters and S; the tile's last unit to arrive sums the slices and
  -- applies the whole epilogue (no TMA store)
  local SPLIT = cfg.split
  local SFUSED = SPLIT == "fused"
  local fused = (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "") .. (cfg.fn and "_epilogue" or "")
  local GROUPS = cfg.groups -- grouped: the number of problems (experts)
  local TSTORE = cfg.tma_store -- the epilogue through shared memory and TMA stores
  if TSTORE then fused = fused .. "_tmastore" end
  if PP then fused = fused .. "_pingpong" end
  if GROUPS then fused = "_grouped" .. fused end
  if CL then fused = fused .. "_cluster" .. CL[1] .. "x" .. CL[2] end
  if SPLIT then fused = fused .. (SFUSED and "_splitkf" or "_splitk") end
  local PDL = cfg.pdl
  -- cfg.pdl_pre ("a" or "b", with cfg.pdl): that operand (the caller's B, the
  -- weights) loads its first stages before griddepcontrol.wait
  local PRE = PDL and cfg.pdl_pre or nil
  if PDL then fused = fused .. "_pdl" .. (PRE and ("_pre" .. PRE) or "") end
  if cfg.wait_ns then fused = fused .. "_wait" .. cfg.wait_ns end
  return cute.kernel("gemm_sm90_" .. cfg.a_dtype .. "_" .. BM .. "x" .. BN .. "x" .. BK .. fused,
    function(descA, descB, C, K, alpha, beta, ...)
      -- the optional arguments: grouped, the problems' row offsets (GROUPS + 1)
      -- and first tiles (GROUPS + 1); then the bias when cfg.bias; then C's TMA
      -- descriptor when cfg.tma_store; split-K: the k-slices S alone; split-K reduced
      -- in the kernel: the workspace, the counters and S after the bias
      local extra = { ... }
      local offsets, tstart = nil, nil
      local nx = 1
      if GROUPS then offsets, tstart, nx = extra[1], extra[2], 3 end
      local bias, descC = nil, nil
      if cfg.bias then bias, nx = extra[nx], nx + 1 end
      if TSTORE then descC = extra[nx] end
      local SK, W, CNT = nil, nil, nil
      if SFUSED then
        W, CNT, SK = extra[nx], extra[nx + 1], extra[nx + 2]
      elseif SPLIT then
        SK = extra[1]
      end
      cute.launch_bounds(threads, 1)
      if PDL then A.griddepcontrol_launch_dependents() end
      local Mr, Nr, L = C.layout.shape[1], C.layout.shape[2], C.layout.shape[3]
      if SPLIT and not SFUSED then L = L / SK end -- the workspace's batches: slice s of batch l at s L + l
      local tid = cute.thread_idx().x
      local wgi = tid / 128
      local smem = cute.smem_allocator()
      local sA_raw = smem:tensor(ta, cute.make_layout(stage_a * STAGES), 1024)
      local sB_raw = smem:tensor(ta, cute.make_layout(stage_b * STAGES), 1024)
      -- the epilogue's two staging buffers (cfg.tma_store): BM x 32 of C each
      local sE_raw = TSTORE and smem:tensor(C.dtype, cute.make_layout(2 * BM * EPI_N * (PP and 2 or 1)), 1024) or nil
      -- split-K reduced in the kernel: "this unit is its tile's last", one a tile (ping-pong: a warpgroup)
      local sLast = SFUSED and smem:tensor(cute.i32, cute.make_layout(2), 16) or nil
      local pipe = P.PipelineTmaAsync.create {
        num_stages = STAGES, tx_count = tx_bytes,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
        consumer_group = P.CooperativeGroup(P.Agent.Thread, tile_threads),
        cluster_shape = CL, -- across a cluster: a release arrives on both CTAs' empty barriers
        -- (cfg.wait_ns, opt-in: each try_wait's suspend-time hint; no faster on the H200, docs/hopper.md)
        suspend_ns = cfg.wait_ns,
      }
      -- (cfg.pdl) what the previous kernel wrote is visible from here on (cfg.pdl_pre:
      -- the producer waits in its loop, after its first loads of the weights)
      if PDL and not PRE then A.griddepcontrol_wait() end
      if PRE and tid ~= 0 then A.griddepcontrol_wait() end

      -- the tile scheduler: tile t -> (m tile, n tile, batch), grouped along M
      local tiles_m = (Mr + (BM - 1)) / BM
      local tiles_n = (Nr + (BN - 1)) / BN
      local total = GROUPS and tstart[GROUPS] or tiles_m * tiles_n * L
      -- a cluster walks pairs of tiles (both CTAs the same sequence), the CTA of rank
      -- `rank` one tile of each pair
      local rank = nil
      if CL then
        total = M.cluster_pairs(tiles_m, tiles_n, CL) * L
        rank = cute.block_rank_in_cluster()
      end
      local ktiles = (K + (BK - 1)) / BK
      -- split-K: unit u is k-slice u % SK of tile u / SK; a slice is `kper` k-tiles (the
      -- last one fewer; M.plan picks S so that none is empty)
      local kper = nil
      if SPLIT then
        total = total * SK
        kper = (ktiles + (SK - 1)) / SK
      end
      -- tile t -> {bm, bn: the tile in its problem; a_row, b_row: the first rows of
      -- its A and B boxes; a_l, b_l: their batches; l: C's batch; row0, rows: the
      -- problem's first row in C and its rows; kt0, nk: its first k-tile and k-tiles;
      -- ks, tile: its k-slice and linear tile (split-K)}
      local function coords(t)
        if SPLIT then
          local ks, tt = t % SK, t / SK
          local bm, bn, l = M.tile_coords(tt, tiles_m, tiles_n, GROUP)
          local kt0 = ks * kper
          return { bm = bm, bn = bn, a_row = bm * BM, b_row = bn * BN, a_l = l, b_l = l, l = l, row0 = 0, rows = Mr,
            kt0 = kt0, nk = imin(kper, ktiles - kt0), ks = ks, tile = tt }
        end
        if not GROUPS then
          local bm, bn, l
          if CL then
            bm, bn, l = M.cluster_tile_coords(t, tiles_m, tiles_n, GROUP, CL, rank)
          else
            bm, bn, l = M.tile_coords(t, tiles_m, tiles_n, GROUP)
          end
          return { bm = bm, bn = bn, a_row = bm * BM, b_row = bn * BN, a_l = l, b_l = l, l = l, row0 = 0, rows = Mr,
            kt0 = 0, nk = ktiles }
        end
        -- grouped: problem e is the last whose first tile is at or before t (the
        -- problems without rows have no tiles, and never the last such one)
        local e = cute.var(cute.i32, 0)
        for j in cute.range(1, GROUPS) do
          if t >= tstart[j] then e.value = j end
        end
        local g = e.value
        local row0 = offsets[g]
        local rows = offsets[g + 1] - row0
        local bm, bn = M.tile_coords(t - tstart[g], (rows + (BM - 1)) / BM, tiles_n, GROUP)
        return { bm = bm, bn = bn, a_row = row0 + bm * BM, b_row = bn * BN, a_l = 0, b_l = g, l = 0, row0 = row0,
          rows = rows, kt0 = 0, nk = ktiles }
      end
      local first, step = cute.block_idx().x, cute.grid_dim().x
      if CL then first, step = first / 2, step / 2 end -- the cluster's index, the clusters

      -- the TMA loads of one operand's stage s: every box; of the shared operand
      -- (multicast), this CTA's half of the boxes, into both CTAs (mask 0b11)
      local function load(desc, boxes, raw, stage_elems, s, row, kt, l, bar, shared)
        if not shared then
          for _, bx in ipairs(boxes) do
            local c = bx.coords(row, kt * BK, l)
            tma_load_3d(desc, raw:ptr_at(s * stage_elems + bx.smem_offset), c[1], c[2], c[3], bar)
          end
          return
        end
        -- box k of CTA 0 and box k of CTA 1 lie a fixed distance apart (in the tile
        -- and in shared memory): CTA `rank`'s is CTA 0's plus rank times that
        local per = #boxes / 2
        for k = 1, per do
          local b0, b1 = boxes[k], boxes[per + k]
          local c, z0, z1 = b0.coords(row, kt * BK, l), b0.coords(0, 0, 0), b1.coords(0, 0, 0)
          for i = 1, 3 do
            if z1[i] ~= z0[i] then c[i] = c[i] + rank * (z1[i] - z0[i]) end
          end
          local off = s * stage_elems + b0.smem_offset + rank * (b1.smem_offset - b0.smem_offset)
          tma_load_3d_multicast(desc, raw:ptr_at(off), c[1], c[2], c[3], bar, 3)
        end
      end

      if wgi == 0 then
        -- the producer warpgroup: one thread issues every load
        A.setmaxnreg_dec(40)
        if tid == 0 then
          local ps = P.make_pipeline_state(P.PipelineUserType.Producer, STAGES)
          -- the j-th k-tile of tile tc's (its k-slice's first under split-K)
          local function ktile(tc, j) return SPLIT and tc.kt0 + j or j end
          -- one operand's k-tile kt of tile tc into stage s, completing `bar`
          local function load_a(tc, kt, s, bar)
            load(descA, boxesA, sA_raw, stage_a, s, tc.a_row, kt, tc.a_l, bar, MC_A)
          end
          local function load_b(tc, kt, s, bar)
            load(descB, boxesB, sB_raw, stage_b, s, tc.b_row, kt, tc.b_l, bar, MC_B)
          end
          -- the k-tiles of the first tile loaded before the loop (cfg.pdl_pre; without
          -- it the loop is as it was, from k-tile 0)
          local skip = PRE and cute.var(cute.i32, 0) or nil
          if PRE then
            -- the weights' part of the first tile's first stages while the previous
            -- kernel may still run (the caller promised that it does not write them;
            -- each stage's barrier is armed for both operands, so it completes only
            -- once the other's part, loaded after the wait, has landed too)
            local early, late = load_b, load_a
            if PRE == "a" then early, late = load_a, load_b end
            local tc = coords(first)
            if first < total then skip.value = imin(tc.nk, STAGES) end
            for j in cute.range(skip.value) do
              pipe:producer_acquire(ps)
              early(tc, ktile(tc, j), ps.index, pipe:producer_get_barrier(ps))
              pipe:producer_commit(ps)
              ps:advance()
            end
            A.griddepcontrol_wait()
            for j in cute.range(skip.value) do -- (stages 0 .. skip - 1, in order)
              late(tc, ktile(tc, j), j, pipe:full_barrier(j))
            end
          end
          for t in cute.range(first, total, step) do
            local tc = coords(t)
            for j in cute.range(skip and skip.value or 0, tc.nk) do
              local kt = ktile(tc, j)
              pipe:producer_acquire(ps)
              local bar = pipe:producer_get_barrier(ps)
              local s = ps.index
              load_a(tc, kt, s, bar)
              load_b(tc, kt, s, bar)
              pipe:producer_commit(ps)
              ps:advance()
            end
            if PRE then skip.value = 0 end
          end
          pipe:producer_tail(ps)
        end
      else
        -- the consumer warpgroups: a cooperative BM x BN tile
        A.setmaxnreg_inc(232)
        local ct = tid - 128
        -- this consumer warpgroup (from lane 0 by a shuffle: warp-uniform to ptxas, so
        -- that the ping-pong schedule's stage indices, which start from it, and the
        -- descriptors built from them stay in uniform registers)
        local me = cute.shuffle(ct / 128, 0)
        local lt = PP and ct % 128 or ct -- this thread in its tile's MMA
        -- the named barrier of this tile's consumer threads (the epilogue's): 1 for both
        -- warpgroups (cooperative), 3 or 4 for a warpgroup's own (ping-pong)
        local ebar = PP and 3 + me or 1
        local sA = cute.make_tensor(sA_raw:ptr_at(0), layA)
        local sB = cute.make_tensor(sB_raw:ptr_at(0), layB)
        local thr = mma:get_slice(lt)
        -- the descriptors from warp-uniform slices (B: thread 0's; A: its warpgroup's
        -- first thread, `me` from lane 0 by a shuffle), so that ptxas keeps them in
        -- uniform registers (as cute.lib.attention_sm90 does): the main loop issues
        -- 51 instructions a k-tile instead of 67 at 128 x 256 (41 instead of 55 at 64
        -- x 128 ping-pong), no R2UR. Not with split-K's reduction in the kernel, where
        -- the uniform registers they take make ptxas spill (fp8: 20 bytes).
        local thrA, thrB = thr, thr
        if not SFUSED then thrA, thrB = mma:get_slice(PP and 0 or me * 128), mma:get_slice(0) end
        local tCsA = thrA:make_fragment_A(thrA:partition_A(sA)) -- (atom, 1, k-blocks, stages): descriptors
        local tCsB = thrB:make_fragment_B(thrB:partition_B(sB))
        local cid = cute.make_identity_tensor({ BM, BN })
        local acc = thr:make_fragment_C(thr:partition_C(cid))
        local tCcC = thr:partition_C(cid)
        local n = cute.size(acc)
        local cs = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES)
        local rs = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES) -- the next stage to release

        -- one batch: the k-tile in stage s, the first k-block D = A B when `fresh`
        local function batch(s, fresh)
          A.warpgroup_fence_operand(acc)
          A.warpgroup_fence()
          for kb = 0, kblocks - 1 do
            mma:set(wg.Field.ACCUMULATE, not (fresh and kb == 0))
            cute.gemm(mma, acc, tCsA[{ _, _, kb, s }], tCsB[{ _, _, kb, s }], acc)
          end
          A.warpgroup_commit_group()
        end

        -- the epilogue through shared memory (cfg.tma_store): the tile in BN / 32
        -- column strips of BM x 32; each strip's values go by stmatrix into one of
        -- two 64B-swizzled buffers (the layout of a TMA box of 32 x BM with the 64B
        -- swizzle: conflict-free), and one thread stores the strip with TMA (which
        -- clips at C's edges) while the warpgroups go on to the next strip and tile.
        -- Barrier 1 (the consumers) orders the buffer's reuse and the store.
        local function store_tile(value, bm, bn, l)
          local lane = lt % 32
          local wrow = (lt / 32) * 16 -- the warp's first row (4 warps a warpgroup, 16 rows each)
          -- ping-pong: each warpgroup its own two buffers and barrier (ebar: 3 or 4)
          local ebase = PP and me * 2 * BM * EPI_N or 0
          local row = wrow + lane % 8 + ((lane / 8) % 2) * 8 -- this lane's row of its stmatrix matrix
          local key = (row / 2) % 4 -- the 64B swizzle: 16-byte chunk c of a 64-byte row lands at c ^ key
          local col8 = lane / 16 -- this lane's matrix's 8-column half of a 16-column block
          for j = 0, BN / EPI_N - 1 do
            local buf = j % 2
            -- the buffer's previous store (two strips ago) has read it
            if lt == 0 then A.cp_async_bulk_wait_group(1, true) end
            A.barrier(ebar, tile_threads)
            for q = 0, EPI_N / 16 - 1 do
              local regs = {}
              for m = 0, 3 do
                local i = (j * (EPI_N / 16) + q) * 8 + 2 * m
                regs[m + 1] = common.pack2(value(i), value(i + 1)):bitcast(cute.i32)
              end
              local chunk = (col8 + 2 * q):bxor(key)
              cute.arch.stmatrix(sE_raw:ptr_at(ebase + buf * BM * EPI_N + row * EPI_N + chunk * 8), regs)
            end
            A.fence_view_async_shared()
            A.barrier(ebar, tile_threads)
            if lt == 0 then
              A.tma_store(descC, sE_raw:ptr_at(ebase + buf * BM * EPI_N), { bn * BN + j * EPI_N, bm * BM, l })
              A.cp_async_bulk_commit_group()
            end
          end
        end

        local function tile(t)
          local tc = coords(t)
          local bm, bn, l = tc.bm, tc.bn, tc.l
          -- k-tile 0 (every tile has one: K >= 1)
          pipe:consumer_wait(cs)
          batch(cs.index, true)
          cs:advance()
          for _ in cute.range(1, tc.nk) do
            pipe:consumer_wait(cs)
            batch(cs.index, false)
            A.warpgroup_wait_group(1) -- the previous batch is done, this one in flight
            A.warpgroup_fence_operand(acc)
            pipe:consumer_release(rs)
            rs:advance()
            cs:advance()
          end
          if PP then cute.barrier(2 - me, consumers, "arrive") end -- the other warpgroup's turn
          A.warpgroup_wait_group(0)
          A.warpgroup_fence_operand(acc)
          pipe:consumer_release(rs)
          rs:advance()

          -- the epilogue into matrix Cl (batch l of C, or a split-K slice of the
          -- workspace): alpha acc + beta C in C's dtype, or when `raw` the accumulators
          -- as they are (a partial sum), straight from the registers
          local rm, rn = tc.rows - bm * BM, Nr - bn * BN
          local function store(Cl, raw)
            if GROUPS then -- the problem's rows of C
              Cl = cute.make_tensor(Cl:ptr_at({ tc.row0, 0 }), cute.make_layout({ tc.rows, Nr }, Cl.layout.stride))
            end
            local gC = cute.local_tile(Cl, { BM, BN }, { bm, bn })
            local tCgC = thr:partition_C(gC)
            local beta_read = cfg.beta and not raw
            local function value(i, old)
              if raw then return acc[i] end
              return M.epilogue_value(cfg, tacc, acc[i], old, alpha, beta, bias, function()
                return tc.row0 + bm * BM + tCcC[i][1], bn * BN + tCcC[i][2]
              end, l, C.dtype)
            end
            if TSTORE then
              store_tile(value, bm, bn, l)
              return
            end
            if rm >= BM and rn >= BN then
              if beta_read then
                -- element by element: a whole fragment of 32-bit C next to the
                -- accumulators would not fit in 232 registers
                for i = 0, n - 1 do tCgC[i] = value(i, tCgC[i]) end
              else
                local out = cute.make_fragment_like(acc, Cl.dtype)
                for i = 0, n - 1 do out[i] = value(i) end
                cute.copy(out, tCgC)
              end
            else
              for i = 0, n - 1 do
                local c = tCcC[i]
                if rm > c[1] and rn > c[2] then tCgC[i] = value(i, beta_read and tCgC[i]) end
              end
            end
          end

          -- split-K reduced in the kernel: this unit's partial sums into its slice of
          -- the workspace, then its arrival on the tile's counter; the last of the S
          -- units to arrive (no unit waits for another) sets the counter back to 0 for
          -- the next launch, sums the S slices in order (slice 0 + slice 1 + ..., as
          -- M.reduce_kernel: the same bits) and stores the epilogue's value into C. The
          -- sum: the whole fragment through the slices when a thread holds at most 64
          -- accumulators (then the register epilogue); else RCH elements at a time
          -- through the slices and into C (a chunk's loads in flight together, only its
          -- sums live: the whole fragment's sums next to a chunk's loads spill)
          local WHOLE = n <= 64
          local RCH = WHOLE and n or 16
          local function reduce_last()
            store(W[{ _, _, tc.ks * L + l }], true)
            -- every store of the unit issued (the barrier orders them before thread 0's
            -- release); one thread counts the arrival
            local slot = PP and me or 0 -- (the tile's warpgroup, or both)
            A.barrier(ebar, tile_threads)
            if lt == 0 then
              cute.fence("gpu") -- release: the unit's slice before its count
              local old = cute.atomic_add(CNT:ptr_at(tc.tile), 1, { scope = "gpu" })
              sLast[slot] = 0
              if old == SK - 1 then
                CNT[tc.tile] = 0 -- (every unit of the tile has counted: nobody else touches it this launch)
                cute.fence("gpu") -- acquire: the other units' slices after their counts
                sLast[slot] = 1
              end
            end
            A.barrier(ebar, tile_threads)
            if sLast[slot] ~= 0 then
              -- elements [i0, i0 + RCH) of the fragment from slice s (start: slice 0, the
              -- sum's start), predicated on a ragged tile
              local function add_slice(s, i0, start, full)
                local tW = thr:partition_C(cute.local_tile(W[{ _, _, s * L + l }], { BM, BN }, { bm, bn }))
                for i = i0, i0 + RCH - 1 do
                  local c = tCcC[i]
                  if full or (rm > c[1] and rn > c[2]) then
                    if start then acc[i] = tW[i] else acc[i] = acc[i] + tW[i] end
                  end
                end
              end
              local tCgC = thr:partition_C(cute.local_tile(C[{ _, _, l }], { BM, BN }, { bm, bn }))
              local function reduce(full)
                for i0 = 0, n - 1, RCH do
                  add_slice(0, i0, true, full)
                  for s in cute.range(1, SK) do add_slice(s, i0, false, full) end
                  if not WHOLE then
                    for i = i0, i0 + RCH - 1 do
                      local c = tCcC[i]
                      if full or (rm > c[1] and rn > c[2]) then
                        tCgC[i] = M.epilogue_value(cfg, tacc, acc[i], cfg.beta and tCgC[i], alpha, beta, bias,
                          function() return bm * BM + c[1], bn * BN + c[2] end, l, C.dtype)
                      end
                    end
                  end
                end
              end
              if rm >= BM and rn >= BN then reduce(true) else reduce(false) end
              if WHOLE then store(C[{ _, _, l }], false) end
            end
          end

          -- the epilogue: split-K's partial sums (into the workspace, and reduced by the
          -- tile's last unit when SFUSED), or C
          local function epilogue()
            if SFUSED then
              reduce_last()
            elseif SPLIT then
              store(C[{ _, _, tc.ks * L + l }], true) -- (the reduction kernel does the rest)
            else
              store(C[{ _, _, l }], false)
            end
          end
          if CL then
            -- the second tile of a cluster's pair may lie past C: its CTA loaded and
            -- computed it for the partner's sake (the shared loads, the releases) and
            -- stores nothing
            if bm * BM < tc.rows and bn * BN < Nr then epilogue() end
          else
            epilogue()
          end
        end

        if PP then
          -- ping-pong: warpgroup w takes the CTA's tiles of ordinal i with i % 2 == w,
          -- the main loops in turns (named barriers 1 and 2: a warpgroup waits on its
          -- own before a tile's first MMA; the other arrives on it after issuing its
          -- tile's last); the stages of the tiles it leaves to the other are skipped
          local function skip(st, nk)
            local tot = st._index.value + nk
            st._phase.value = st._phase.value:bxor((tot / STAGES) % 2)
            st._index.value = tot % STAGES
          end
          if me == 1 then cute.barrier(1, consumers, "arrive") end -- warpgroup 0 starts
          for t in cute.range(first, total, step) do
            if ((t - first) / step) % 2 == me then
              cute.barrier(1 + me, consumers)
              tile(t)
            else
              local nk = SPLIT and coords(t).nk or ktiles
              skip(cs, nk)
              skip(rs, nk)
            end
          end
        else
          for t in cute.range(first, total, step) do tile(t) end
        end
        if TSTORE and lt == 0 then A.cp_async_bulk_wait_group(0) end
      end
      if CL then
        -- no CTA exits while its partner may still write into its shared memory or
        -- arrive on its barriers (the warps reconverged first: the barrier is .aligned,
        -- and one lane of warp 0 ran the producer's loop alone)
        cute.sync_warp()
        A.cluster_arrive()
        A.cluster_wait()
      end
    end, { arch = "sm_90a", trace_key = trace_key, preprocess = true,
      cluster = CL and { 2, 1, 1 } or nil, -- (a 1-d grid: the pair is ranks 0 and 1 along x)
      -- libnvvm at -opt=1 (ptxas stays at -O3): the same SASS speed on the H100 (bench/nvvm_opt_probe.lua:
      -- e4m3 8192^3 1.001x, bf16 1.018x, alternating same-run rounds) and about half the compile time (e4m3
      -- 914 -> 450 ms there; opt 3 duplicated the main loop)
      nvvm_opt = 1 })
end

-- The kernel of `key` in `cache` (with a user epilogue function, in that
-- function's own table of fn_caches), built by make(cfg, trace key) on a miss.
-- No trace key with a user function: the key would stand for the function's
-- number in this process, and the cache keyed before tracing would hand
-- another process's function's kernel to this one. Such kernels are traced,
-- and cached by their IR.
local function cached_kernel(cache, fn_caches, cfg, key, make, prefix)
  if cfg.fn then
    cache = fn_caches[cfg.fn] or {}
    fn_caches[cfg.fn] = cache
  end
  local k = cache[key]
  if not k then
    k = make(cfg, not cfg.fn and (prefix .. key) or nil)
    cache[key] = k
  end
  return k
end

--- The kernel for a configuration {a_dtype ("bf16" or "f16"), bm, bn, bk,
-- stages, group, beta (C is read)}; cached by its key (the trace key).
-- (kernels with a user epilogue function: per function, weakly, so that
-- dropping the function drops its kernels; fn_ids number them for the key)
local fn_kernels = setmetatable({}, { __mode = "k" })
local fn_ids, next_fn_id = setmetatable({}, { __mode = "k" }), 0

function M.kernel(cfg)
  local key = {}
  for _, k in ipairs { "a_dtype", "bm", "bn", "bk", "stages", "group", "beta", "bias", "bias_dtype", "act", "a_major",
    "b_major", "groups", "tma_store", "schedule", "split", "swapped", "pdl", "pdl_pre", "wait_ns" } do
    key[#key + 1] = tostring(cfg[k])
  end
  if cfg.cluster then key[#key + 1] = "cluster" .. cfg.cluster[1] .. "x" .. cfg.cluster[2] end
  if cfg.fn then
    if not fn_ids[cfg.fn] then
      next_fn_id = next_fn_id + 1
      fn_ids[cfg.fn] = next_fn_id
    end
    key[#key + 1] = "fn" .. fn_ids[cfg.fn]
  end
  return cached_kernel(kernels, fn_kernels, cfg, table.concat(key, ","), build, "cute.lib.gemm_sm90:")
end

-- ---------------------------------------------------------------------------
-- Fused epilogues

-- The activations opts.activation names: f32 value -> f32 value.
M.ACTIVATIONS = {
  relu = function(v) return cute.max(v, 0.0) end,
  -- x * sigmoid(x)
  silu = function(v) return v / (cute.exp(v * -1.0) + 1.0) end,
  -- the tanh approximation (torch's approximate="tanh")
  gelu_tanh = function(v)
    return v * 0.5 * (cute.tanh((v * v * v * 0.044715 + v) * 0.7978845608028654) + 1.0)
  end,
  -- the exact one, with erf
  gelu = function(v) return v * 0.5 * (cute.erf(v * 0.7071067811865476) + 1.0) end,
}

--- The fused part of the epilogue, in f32 (i32 for integer GEMMs: the user
-- function only): v (alpha acc + beta C) at row m, column n, batch l of C
-- (run-time values), plus the bias (cfg.bias = "col": bias[n], "row":
-- bias[m]), through the activation (cfg.act) and the user's function
-- (cfg.fn(v, m, n, l) -> the value to store, traced like a kernel body).
-- @param cfg the kernel's configuration
-- @param v the value
-- @param bias the bias tensor (a kernel argument) or nil
-- @param m the row
-- @param n the column
-- @param l the batch
-- @return the value to store (converted to C's dtype by the caller)
-- @usage v = M.fused(cfg, v, bias, m, n, l)
function M.fused(cfg, v, bias, m, n, l)
  if cfg.bias == "col" then v = v + bias[n]:to(cute.f32) end
  if cfg.bias == "row" then v = v + bias[m]:to(cute.f32) end
  if cfg.act then v = M.ACTIVATIONS[cfg.act](v) end
  if cfg.fn then
    -- a swapped plan (M.swapped_plan) computes C^T: its rows are C's columns
    local r
    if cfg.swapped then r = cfg.fn(v, n, m, l) else r = cfg.fn(v, m, n, l) end
    if r == nil then err.raise("cute.gemm: opts.epilogue(v, m, n, l) must return the value to store, got nil") end
    v = r
  end
  return v
end

--- The epilogue's value of one element of C: alpha x (the accumulator's
-- dtype `tacc`: f32, or i32 with integer alpha and beta) + beta x old (C's
-- value, when cfg.beta), then the fused parts (M.fused), in `out`, C's dtype.
-- Shared by the GEMM's epilogue and the split-K reduction.
-- @param cfg the kernel's configuration (beta, bias, act, fn)
-- @param tacc the accumulator's dtype
-- @param x the accumulated value
-- @param old C's value (read when cfg.beta), or nil
-- @param alpha the f32 alpha (a kernel argument)
-- @param beta the f32 beta (a kernel argument)
-- @param bias the bias tensor or nil
-- @param at a function returning the element's row and column in C (called only for fused parts)
-- @param l the batch
-- @param out C's dtype
-- @return the value to store
-- @usage C[{ m, n, l }] = M.epilogue_value(cfg, cute.f32, s, nil, alpha, beta, nil, function() return m, n end, l,
--   C.dtype)
function M.epilogue_value(cfg, tacc, x, old, alpha, beta, bias, at, l, out)
  local v
  if tacc.is_integer then -- integer alpha and beta (plan checks), in i32
    v = x * alpha:to(tacc)
    if cfg.beta then v = v + old:to(tacc) * beta:to(tacc) end
  else
    v = x * alpha
    if cfg.beta then v = cute.fma(beta, old:to(cute.f32), v) end
  end
  if cfg.bias or cfg.act or cfg.fn then
    local m, n = at()
    v = M.fused(cfg, v, bias, m, n, l)
  end
  return v:to(out)
end

-- ---------------------------------------------------------------------------
-- Split-K: the reduction of the k-slices' partial sums

-- The reduction's block (threads) and the elements a thread takes at most
-- (the grid covers the output in that many passes of a grid-stride loop).
M.REDUCE_THREADS = 256
M.REDUCE_PER_THREAD = 4

local function build_reduce(cfg, trace_key)
  local tacc = cute.dtype.get(cfg.acc)
  local T = M.REDUCE_THREADS
  local fused = (cfg.beta and "_beta" or "") .. (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "")
    .. (cfg.fn and "_epilogue" or "")
  return cute.kernel("gemm_sm90_splitk_reduce" .. fused, function(W, C, SK, alpha, beta, ...)
    -- W: the workspace (M, N, L x SK), slice s of batch l at s L + l; C (M, N, L); the
    -- bias after beta when cfg.bias
    local extra = { ... }
    local bias = cfg.bias and extra[1] or nil
    cute.launch_bounds(T, 1)
    local Mr, Nr, L = C.layout.shape[1], C.layout.shape[2], C.layout.shape[3]
    local total = Mr * Nr * L
    -- element e of C in (N, M, L) order: consecutive threads read consecutive
    -- columns of each slice (the workspace's rows are contiguous)
    for e in cute.range(cute.block_idx().x * T + cute.thread_idx().x, total, cute.grid_dim().x * T) do
      local n = e % Nr
      local r = e / Nr
      local m = r % Mr
      local l = r / Mr
      local sum = cute.var(tacc, W[{ m, n, l }])
      for s in cute.range(1, SK) do sum.value = sum.value + W[{ m, n, s * L + l }] end
      local old = cfg.beta and C[{ m, n, l }] or nil
      C[{ m, n, l }] = M.epilogue_value(cfg, tacc, sum.value, old, alpha, beta, bias, function() return m, n end, l,
        C.dtype)
    end
  end, { arch = "sm_90a", trace_key = trace_key, preprocess = true })
end

local reduce_kernels = {}
local fn_reduce_kernels = setmetatable({}, { __mode = "k" })

--- The split-K reduction for a configuration {acc (the workspace's dtype:
-- "f32" or "i32"), beta, bias, bias_dtype, act, fn}: a kernel(W, C, S, alpha,
-- beta[, bias]) that sums the S slices of the workspace W (M, N, L x S) and
-- stores the epilogue's value (M.epilogue_value) in C (M, N, L); M.REDUCE_THREADS
-- threads a block, one element of C at a time, coalesced along N. Cached by
-- its key (per user function, weakly, as M.kernel).
-- @param cfg the configuration
-- @return the kernel
-- @usage local k = M.reduce_kernel({ acc = "f32", beta = false })
function M.reduce_kernel(cfg)
  local key = {}
  for _, k in ipairs { "acc", "beta", "bias", "bias_dtype", "act", "swapped" } do key[#key + 1] = tostring(cfg[k]) end
  return cached_kernel(reduce_kernels, fn_reduce_kernels, cfg, table.concat(key, ","), build_reduce,
    "cute.lib.gemm_sm90.reduce:")
end

--- The contiguous mode of an operand view (rows, K, L) from its strides:
-- "k" (K-major: unit stride along K), "mn" (unit stride along the rows), or
-- nil (neither).
-- @param st the view's strides {rows, K, L}, in elements
-- @return "k", "mn" or nil
-- @usage M.major_of({ 4096, 1, 0 }) -- "k"
function M.major_of(st)
  if st[2] == 1 then return "k" end
  if st[1] == 1 then return "mn" end
  return nil
end

--- Why this kernel cannot take a problem (nil when it can): A (M, K, L) and
-- B (N, K, L) kernel views' strides (elements), their dtype, the tensors.
function M.unsupported(dt, a_stride, b_stride, Ao, Bo, batch)
  if not INPUTS[input_name(dt)] then
    return "its inputs are " .. dt.name .. " (gemm_sm90 takes bf16, f16, e4m3, e5m2, i8, u8 and f32 as tf32)"
  end
  local sixteen = dt.bits == 16
  for _, x in ipairs { { "A", a_stride, Ao }, { "B", b_stride, Bo } } do
    local what, st, t = x[1], x[2], x[3]
    local major = M.major_of(st)
    if not major then
      return what .. " has no unit stride in its rows or K (TMA needs a contiguous mode)"
    end
    if major == "mn" and not sixteen then
      return string.format("%s is MN-major, and wgmma reads %s operands K-major only (transpose it, or store it "
        .. "K-major)", what, dt.name)
    end
    local ld = major == "k" and st[1] or st[2] -- the other mode's stride
    if (ld * dt.bytes) % 16 ~= 0 or (st[3] * dt.bytes) % 16 ~= 0 then
      return string.format("%s's strides (%d, %d elements) are not multiples of 16 bytes (TMA's rule)", what,
        ld, st[3])
    end
    if t:alignment() < 16 then return what .. " is not 16-byte aligned (TMA's rule)" end
    if batch > 1 and st[3] < ld then
      return string.format("%s's batch stride (%d elements) is below its other stride (%d): TMA's third dimension "
        .. "must be the outermost", what, st[3], ld)
    end
  end
  return nil
end

--- The TMA atoms of the kernel's loads (cute.nvgpu.cpasync): for A (M, K, L) and
-- B (N, K, L) kernel views, the global -> shared atoms onto one stage of the
-- wgmma layouts (K-major SW128 atoms tiled over BM x BK and BN x BK). The atom
-- checks that TMA's write (dense boxes, K fastest, 128B swizzle) is exactly
-- the layout the wgmma descriptors read; the kernel issues one box an operand
-- a stage, so each tile must be one box. In a cluster (cfg.cluster) the
-- shared operand's atom multicasts: its tile split over the 2 CTAs (a K-major
-- tile as two boxes of half the rows).
function M.tma_atoms(cfg, Av, Bv)
  local cp = cute.nvgpu.cpasync
  local ta = cute.dtype.get(INPUTS[cfg.a_dtype].storage or cfg.a_dtype)
  local amaj, bmaj = cfg.a_major or "k", cfg.b_major or "k"
  local layA = wg.make_smem_layout_a(major_mode(amaj), { cfg.bm, cfg.bn, cfg.bk }, ta)
  local layB = wg.make_smem_layout_b(major_mode(bmaj), { cfg.bm, cfg.bn, cfg.bk }, ta)
  local cl = cfg.cluster
  local function atom(view, lay, rows, shared)
    if shared then
      return cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SMulticastOp(), view, lay, { rows, cfg.bk }, 2)
    end
    return cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), view, lay, { rows, cfg.bk })
  end
  local atomA = atom(Av, layA, cfg.bm, cl ~= nil and cl[2] == 2)
  local atomB = atom(Bv, layB, cfg.bn, cl ~= nil and cl[1] == 2)
  for _, x in ipairs { { atomA, amaj }, { atomB, bmaj } } do
    local a, major = x[1], x[2]
    local d = a.dim_modes
    -- K-major: TMA dimensions (K, rows, L), one 128B-swizzled box (one a CTA when
    -- multicast); MN-major: (rows, K, L), a box a swizzle atom's width of rows (64 with
    -- the 128B swizzle; 32 or 16 rows, 64B or 32B, in narrower tiles)
    local want = major == "k" and { 1, 0, 2 } or { 0, 1, 2 }
    local atoms_k = cfg.bk * ta.bytes / 128 -- 128-byte swizzle rows of K a stage (1, or 2: cfg.bk doubled)
    if (major == "k" and (#a.boxes ~= a.num_multicast * atoms_k or a.swizzle ~= "128B")) or d[1] ~= want[1]
      or d[2] ~= want[2] or d[3] ~= want[3] then
      err.raise("cute.gemm: gemm_sm90 loads a %s-major tile as TMA boxes over %s; got %s",
        major == "k" and "K" or "MN", major == "k" and "(K, rows, L), one 128B-swizzled box" or "(rows, K, L)",
        tostring(a))
    end
  end
  return atomA, atomB
end

-- A stand-in operand view (rows, K, L) of a majorness, for the atoms' boxes.
local function stand_in(dt, rows, k, major)
  local stride = major == "k" and { k, 1, rows * k } or { 1, rows, rows * k }
  return cute.fake_tensor(dt, { rows, k, 1 }, cute.make_layout({ rows, k, 1 }, stride))
end

--- The TMA boxes of one stage of A and of B for a configuration: lists of
-- {smem_offset (elements), coords = function(row0, k0, l) -> the box's TMA
-- coordinates}, from the TMA atoms on stand-in views (the boxes depend on the
-- majorness and the tile, not on the extents).
-- @param cfg the configuration (a_dtype, bm, bn, bk, a_major, b_major)
-- @return the boxes of A, the boxes of B
-- @usage local boxesA, boxesB = M.stage_boxes(cfg)
function M.stage_boxes(cfg)
  local ta = cute.dtype.get(INPUTS[cfg.a_dtype].storage or cfg.a_dtype)
  local amaj, bmaj = cfg.a_major or "k", cfg.b_major or "k"
  local atomA, atomB = M.tma_atoms(cfg, stand_in(ta, 4 * cfg.bm, 4 * cfg.bk, amaj),
    stand_in(ta, 4 * cfg.bn, 4 * cfg.bk, bmaj))
  local function boxes(atom)
    local out = {}
    for i, bx in ipairs(atom.boxes) do
      local o, modes = bx.origin, atom.dim_modes
      out[i] = { smem_offset = bx.smem_offset, coords = function(row0, k0, l)
        local base = { [0] = row0, [1] = k0, [2] = l }
        return { base[modes[1]] + o[1], base[modes[2]] + o[2], base[modes[3]] + o[3] }
      end }
    end
    return out
  end
  return boxes(atomA), boxes(atomB)
end

-- The TMA descriptor of an operand view (rows, K, L) with strides (ld, 1,
-- batch) for its atom: the atom's box and swizzle, zero fill out of bounds.
-- (The descriptor is encoded here rather than by atom:descriptor(t) so that
-- a single matrix, whose batch stride is 0, gets a valid third stride.)
local function descriptor(atom, t, dims, strides)
  if t.fake then return require("ffi").new("CuteTmaDesc") end
  local dt = t.dtype
  -- K-major: TMA dimensions (K, rows, L), the row stride between; MN-major: (rows, K, L), K's stride
  local kmajor = strides[2] == 1
  local tdims = kmajor and { dims[2], dims[1], dims[3] } or { dims[1], dims[2], dims[3] }
  local ld = kmajor and strides[1] or strides[2]
  -- one matrix: any valid batch stride (the box never leaves batch 0)
  local batch_stride = dims[3] > 1 and strides[3] or tdims[2] * ld
  return cute.tma_descriptor { dtype = dt, address = t, dims = tdims,
    strides = { ld * dt.bytes, batch_stride * dt.bytes }, box = atom.box, swizzle = atom.swizzle,
    oob = "zero" }
end

--- The configurations autotuning times for a problem (cute.gemm(..., {tune =
-- true})): the heuristic's pick first, then the other tile widths and stage
-- counts that make sense for its size, and a wider rasterisation group; for
-- skinny problems (up to 256 rows, memory-bound on B) also stages of two
-- 128-byte swizzle rows of K (bk doubled: 256 contiguous bytes a row of B a
-- stage).
function M.candidates(m, n, k, l, name)
  local list, seen = {}, {}
  local atom = 128 / cute.dtype.get(INPUTS[name].storage or name).bytes -- one swizzle row of K
  local function add(bn, stages, group, bm, rows_k)
    bm, rows_k = bm or 128, rows_k or 1
    stages = math.min(stages, stages_fit((bm + bn) * 128 * rows_k))
    local key = bm .. "," .. bn .. "," .. rows_k .. "," .. stages .. "," .. group
    if not seen[key] then
      seen[key] = true
      list[#list + 1] = { bm = bm, bn = bn, stages = stages, group = group,
        schedule = bm == 64 and "pingpong" or nil, bk = rows_k == 2 and 2 * atom or nil }
    end
  end
  local d = M.pick_config(m, n, k, l, name)
  add(d.bn, d.stages, M.CONFIG.group, d.bm)
  if n <= 64 and m > 64 then -- a swapped skinny problem: BN is its few rows
    for _, stages in ipairs { 8, 16 } do add(d.bn, stages, 8, 64) end
    add(d.bn, 10, 8)
  elseif d.bm == 64 and d.bn < 256 then
    for _, bn in ipairs { 128, 64, 32 } do add(bn, 8, 8, 64) end
    for _, bn in ipairs { 128, 64 } do add(bn, 8, 8) end
    for _, bn in ipairs { 128, 64 } do add(bn, 4, 8, 64, 2) end
  elseif m > 256 then
    add(256, 4, 8)
    add(256, 3, 8)
    add(256, 4, 16)
    add(128, 7, 8)
    add(128, 4, 8)
  else
    for _, bn in ipairs { 256, 128, 64, 32 } do add(bn, 8, 8) end
    for _, bn in ipairs { 128, 64 } do add(bn, 4, 8, 128, 2) end
  end
  return list
end

-- The autotuner's name for this kernel, and its built-in default (the
-- heuristic) for when nothing is cached and tuning is off.
local TUNE_NAME = "cute.lib.gemm_sm90"
require("cute.autotune").defaults[TUNE_NAME] = function(_, problem)
  local c = M.pick_config(problem.m, problem.n, problem.k, problem.l, problem.name)
  return { bm = c.bm, bn = c.bn, stages = c.stages, group = M.CONFIG.group, schedule = c.schedule }
end

local function pow2_up(x)
  local p = 1
  while p < x do p = p * 2 end
  return p
end

-- The tile configuration of a problem on this device: opts.config as given;
-- else the autotuner's (a tuned result cached for this device, shape class
-- and dtypes; with opts.tune = true, measured now on scratch output;
-- otherwise the heuristic). Returns the config and where it came from.
local function tuned_config(Av, Bv, Cv, dims, strides, alpha, opts, name, swapped)
  local m, n, k, l = dims.m, dims.n, dims.k, dims.l
  if Av.fake or opts.tune == false then
    local c = M.pick_config(m, n, k, l, name)
    c.group = M.CONFIG.group
    return c, "heuristic"
  end
  local scratch
  local function builder(cfg)
    scratch = scratch or cute.tensor(Cv.dtype, Cv.layout)
    local o = { config = cfg, tune = false }
    local p = M.plan(Av, Bv, scratch, dims, strides, alpha, 0, o, swapped)
    local launch = p.kernel { grid = p.grid, block = p.block }
    return function() launch(unpack(p.args)) end
  end
  local shape = string.format("%dx%dx%dx%d", pow2_up(m), pow2_up(n), pow2_up(k), l)
  local cfg, report = require("cute.autotune").autotune(builder, M.candidates(m, n, k, l, name), {}, {
    name = TUNE_NAME, shape_class = shape, dtypes = name .. "->" .. Cv.dtype.name, tune = opts.tune == true,
    problem = { m = m, n = n, k = k, l = l, name = name } })
  if scratch then scratch:free() end
  return cfg, report.source, report
end

--- The fused epilogue's part of a configuration, from cute.gemm's options:
-- bias (a device tensor of N values, or M with bias_mode = "row"; f32, bf16
-- or f16), activation (a name of M.ACTIVATIONS), epilogue (a function(v, m,
-- n, l) traced into the kernel: v the f32 value, i32 for integer GEMMs, after
-- the bias and activation; m, n, l its coordinates in C). Sets cfg.bias,
-- cfg.bias_dtype, cfg.act and cfg.fn; returns the bias tensor (the kernel's
-- extra argument) or nil.
-- @param cfg the configuration being planned
-- @param opts cute.gemm's options
-- @param m the rows of C
-- @param n the columns of C
-- @param integer whether the GEMM accumulates in i32
-- @return the bias tensor, or nil
-- @usage local bias = M.fused_config(cfg, opts, m, n, false)
function M.fused_config(cfg, opts, m, n, integer)
  local bias, act, fn = opts.bias, opts.activation, opts.epilogue
  if opts.bias_mode ~= nil and opts.bias_mode ~= "col" and opts.bias_mode ~= "row" then
    err.raise("cute.gemm: opts.bias_mode is \"col\" (one value a column of C, the default) or \"row\", got %s",
      tostring(opts.bias_mode))
  end
  if act ~= nil and not M.ACTIVATIONS[act] then
    local names = {}
    for k in pairs(M.ACTIVATIONS) do names[#names + 1] = k end
    table.sort(names)
    err.raise("cute.gemm: unknown activation %s%s (the activations: %s)", tostring(act),
      err.did_you_mean(tostring(act), names), table.concat(names, ", "))
  end
  if fn ~= nil and type(fn) ~= "function" then
    err.raise("cute.gemm: opts.epilogue must be a function(v, m, n, l) returning the value to store, got %s", type(fn))
  end
  if integer and (bias ~= nil or act ~= nil) then
    err.raise("cute.gemm: a bias or an activation on an integer GEMM is not supported (opts.epilogue is: it gets the "
      .. "i32 value)")
  end
  cfg.act, cfg.fn = act, fn
  if bias == nil then
    if opts.bias_mode ~= nil then err.raise("cute.gemm: opts.bias_mode without opts.bias") end
    return nil
  end
  local tensor = require "cute.tensor"
  if not tensor.is_device_tensor(bias) then
    err.raise("cute.gemm: opts.bias must be a device tensor, got %s", tostring(bias))
  end
  if not bias:valid() then err.raise("cute.gemm: opts.bias was freed (or its device was reset)") end
  local mode = opts.bias_mode or "col"
  local want = mode == "col" and n or m
  local L = require "cute.layout"
  if L.rank(bias.layout) ~= 1 or L.size(bias.layout) ~= want then
    err.raise("cute.gemm: opts.bias (bias_mode \"%s\") must hold %d values (one a %s of C), got %s", mode, want,
      mode == "col" and "column" or "row", tostring(bias.layout))
  end
  local bn = bias.dtype.name
  if bn ~= "f32" and bn ~= "bf16" and bn ~= "f16" then
    err.raise("cute.gemm: opts.bias must be f32, bf16 or f16, got %s", bn)
  end
  cfg.bias, cfg.bias_dtype = mode, bn
  return bias
end

-- The fields of gemm_sm90's opts.config.
M.CONFIG_KEYS = { "bm", "bn", "bk", "stages", "group", "schedule", "cluster", "split_k", "split_reduce", "swap_ab",
  "wait_ns" }

-- Problems of up to this many rows are planned swapped (M.swap_ab) when
-- opts.config names no tile. Measured on the H200 (2026-11-28,
-- bench/gemm_sm90_probe.lua, SWAP=1 against SWAP=0, cuBLAS in the same run):
-- 4 / 8 / 16 / 32 x 8192 x 8192 1.03 / 0.97 / 0.97 / 0.99x cuBLAS swapped (64 x
-- 16 or 64 x 32 ping-pong tiles of C^T, 128 CTAs) against 0.70 / 0.72 / 0.81 /
-- 0.85x; 16x14336x4096 0.98 against 0.86; 64x4096x14336 1.06 against 0.91;
-- 64x8192x8192 0.99 both ways; 128x8192x8192 0.75 against 0.92 (hence 64).
M.SWAP_ROWS = 64

--- Whether to plan C^T = B^T A^T instead of C = A B (a skinny problem's few
-- rows become wgmma's N, which takes 8 to 256, instead of padding a 64-row
-- tile), and why: opts.config.swap_ab (true or false) decides; else problems
-- of up to M.SWAP_ROWS rows and at least 4 times as many columns when
-- opts.config names no tile; grouped problems never.
-- @param m the rows of C
-- @param n the columns of C
-- @param opts cute.gemm's options
-- @return true or false, and the reason (nil when not swapped)
-- @usage M.swap_ab(16, 8192, {}) -- true (with M.SWAP_ROWS >= 16)
function M.swap_ab(m, n, opts)
  local c = opts.config or {}
  if c.swap_ab ~= nil and c.swap_ab ~= true and c.swap_ab ~= false then
    err.raise("cute.gemm: gemm_sm90's swap_ab is true or false, got %s", tostring(c.swap_ab))
  end
  if opts.group_offsets then
    if c.swap_ab then err.raise("cute.gemm: a grouped GEMM takes no swap_ab (its problems share B, not A)") end
    return false
  end
  if c.swap_ab ~= nil then return c.swap_ab, c.swap_ab and "swapped (opts.config.swap_ab)" or nil end
  if names_tile(c) then return false end
  if m <= M.SWAP_ROWS and n >= 4 * m then
    return true, string.format("swapped: M = %d <= %d rows (cute.lib.gemm_sm90.SWAP_ROWS)", m, M.SWAP_ROWS)
  end
  return false
end

-- (rows, cols, L) -> (cols, rows, L): the same memory
local function transposed(t)
  local L = require "cute.layout"
  local s, d = L.shape(t.layout), L.stride(t.layout)
  return require("cute.lib.gemm").view(t, { s[2], s[1], s[3] }, { d[2], d[1], d[3] })
end

--- The plan of C = alpha A B + beta C as C^T = alpha B^T A^T + beta C^T: B's
-- view (N x K) as the kernel's A, A's (M x K) as its B, C^T (N x M, C's
-- memory) as its C; a bias by column of C is one by row of C^T (and the
-- reverse), and opts.epilogue still gets C's coordinates (cfg.swapped).
-- plan.swap_why says why; plan.config is the swapped problem's (bm x bn a
-- tile of C^T).
-- @param Av A's kernel view (M, K, L)
-- @param Bv B's kernel view (N, K, L)
-- @param Cv C's kernel view (M, N, L)
-- @param dims {m =, n =, k =, l =}
-- @param strides {a = A's view's strides, b = B's}
-- @param alpha the f32 alpha (with the fp8 scales folded in)
-- @param beta the f32 beta
-- @param opts cute.gemm's options
-- @param why the reason, for plan.swap_why
-- @return the plan
-- @usage local p = M.swapped_plan(Av, Bv, Cv, dims, strides, 1, 0, {}, "swapped (opts.config.swap_ab)")
function M.swapped_plan(Av, Bv, Cv, dims, strides, alpha, beta, opts, why)
  local o = {} -- (opts.config as given: the swapped plan ignores swap_ab)
  for k, v in pairs(opts) do o[k] = v end
  if opts.bias ~= nil and (opts.bias_mode == nil or opts.bias_mode == "col" or opts.bias_mode == "row") then
    o.bias_mode = opts.bias_mode == "row" and "col" or "row"
  end
  local p = M.plan(Bv, Av, transposed(Cv), { m = dims.n, n = dims.m, k = dims.k, l = dims.l },
    { a = strides.b, b = strides.a }, alpha, beta, o, true)
  p.swap_why = why
  return p
end

-- How split-K's k-slices are summed (opts.config.split_reduce): "kernel" (the
-- default: a second kernel, M.reduce_kernel) or "fused" (the tile's last unit
-- to arrive, in the GEMM kernel).
M.SPLIT_REDUCE = { kernel = true, fused = true }

--- Checks cfg.cluster (opts.config.cluster) and normalises it: nil or {1, 1}
-- (no cluster: cfg.cluster = nil), {2, 1} (two CTAs on vertically adjacent
-- tiles share B) or {1, 2} (horizontally adjacent tiles share A).
-- @param cfg the configuration being planned
-- @param grouped whether the GEMM is grouped (which takes no cluster)
-- @usage M.check_cluster(cfg, false)
function M.check_cluster(cfg, grouped)
  local cl = cfg.cluster
  if cl == nil then return end
  local ok = type(cl) == "table" and (#cl == 2 or (#cl == 3 and cl[3] == 1))
  local cm, cn = ok and cl[1], ok and cl[2]
  if not ok or not ((cm == 1 and cn == 1) or (cm == 2 and cn == 1) or (cm == 1 and cn == 2)) then
    local shown = tostring(cl)
    if type(cl) == "table" then
      local t = {}
      for i = 1, #cl do t[i] = tostring(cl[i]) end
      shown = "{" .. table.concat(t, ", ") .. "}"
    end
    err.raise("cute.gemm: gemm_sm90's cluster is {1, 1} (none), {2, 1} (two CTAs on vertically adjacent tiles "
      .. "share B) or {1, 2} (horizontally adjacent tiles share A), got %s", shown)
  end
  if cm * cn == 1 then
    cfg.cluster = nil
    return
  end
  if grouped then
    err.raise("cute.gemm: a grouped GEMM does not run in clusters (a pair's tiles may lie in two problems); leave "
      .. "opts.config.cluster at {1, 1}, got {%d, %d}", cm, cn)
  end
  cfg.cluster = { cm, cn }
end

--- Checks cfg.split_k (opts.config.split_k): nil, or a whole number from 1 to
-- 64 (1: no split); a grouped GEMM or a cluster takes none above 1. And
-- cfg.split_reduce: nil, "kernel" or "fused" (M.SPLIT_REDUCE).
-- @param cfg the configuration being planned
-- @param grouped whether the GEMM is grouped
-- @usage M.check_split_k(cfg, false)
function M.check_split_k(cfg, grouped)
  local red = cfg.split_reduce
  if red ~= nil and not M.SPLIT_REDUCE[red] then
    err.raise("cute.gemm: gemm_sm90's split_reduce is \"kernel\" (a second kernel sums the k-slices, the default) or "
      .. "\"fused\" (the last k-slice of a tile to finish sums them in the GEMM kernel), got %s",
      type(red) == "string" and string.format("%q", red) or tostring(red))
  end
  local sk = cfg.split_k
  if sk == nil then return end
  if type(sk) ~= "number" or sk % 1 ~= 0 or sk < 1 or sk > 64 then
    err.raise("cute.gemm: gemm_sm90's split_k is a whole number from 1 to 64 (the k-slices each tile's K is split "
      .. "into; 1: none), got %s", tostring(sk))
  end
  if sk == 1 then
    cfg.split_k = false -- (no split, and no automatic one either)
    return
  end
  if grouped then
    err.raise("cute.gemm: a grouped GEMM does not split K (its problems' tiles are walked one after the other); "
      .. "leave opts.config.split_k at 1, got %d", sk)
  end
  if cfg.cluster then
    err.raise("cute.gemm: split_k does not run in clusters (the pair scheduler walks whole tiles); take split_k = %d "
      .. "or cluster {%d, %d}, not both", sk, cfg.cluster[1], cfg.cluster[2])
  end
end

--- The split-K of a plan: cfg.split_k as asked (M.check_split_k checked it;
-- false: none), or, when `auto` and none was asked, M.auto_split_k's (or
-- `auto` itself when it is a number: M.pingpong_split_k's); clamped
-- so that no k-slice is empty (per = ceil(ktiles / S) k-tiles a slice, S =
-- ceil(ktiles / per) slices). Sets cfg.split_k to S (nil: none) and
-- cfg.split_source ("opts.config" or "automatic").
-- @return the plan's words for it ("split-K 4 (automatic): 32 tiles x 4 k-slices of 32 k-tiles over 132 SMs"),
-- or nil
function M.split_k_config(cfg, m, n, k, batch, tiles, sms, auto)
  local asked, source = cfg.split_k, "opts.config"
  if asked == nil and auto then
    asked = type(auto) == "number" and auto or M.auto_split_k(m, n, k, batch, cfg.bn, cfg.bk, sms)
    source = "automatic"
  end
  cfg.split_k, cfg.split_source = nil, nil
  if not asked then return nil end
  local ktiles = math.ceil(k / cfg.bk)
  local s = 1
  if ktiles > 1 then s = math.ceil(ktiles / math.ceil(ktiles / asked)) end
  local clamp = s < asked and string.format(", %d asked: K is %d k-tile%s of %d", asked, ktiles,
    ktiles == 1 and "" or "s", cfg.bk) or ""
  if s == 1 then return string.format("no split-K (%s%s)", source, clamp) end
  cfg.split_k, cfg.split_source = s, source
  return string.format("split-K %d (%s%s)%s: %d tiles x %d k-slices of %d k-tiles over %d SMs", s, source, clamp,
    cfg.split_reduce == "fused" and ", reduced by the tile's last unit" or "", tiles, s, math.ceil(ktiles / s), sms)
end

-- The split-K launch (M.plan with cfg.split_k = S): the GEMM kernel storing
-- each unit's partial sums into a workspace (S, M, N, L) of the accumulator's
-- dtype (slice s of batch l is the kernel's matrix s L + l), then the
-- reduction (M.reduce_kernel) into C with the whole epilogue (plan.reduce:
-- kernel, args, grid, block). The plan keeps the workspace (plan.workspace;
-- freed with the plan when collected).
--
-- cfg.split_reduce = "fused": one kernel. Each unit stores its slice as above
-- and counts its arrival on its tile's counter (plan.counters: an i32 a tile,
-- zeroed when allocated); the last of the tile's S units sums the slices in
-- the reduction's order and stores C with the whole epilogue (plan.reduce is
-- nil). That unit sets the counter back to 0, so that every launch of the
-- plan finds zeros: an aborted launch (a fault, a kill) leaves counts behind,
-- and the plan must then be made again. Two launches of one plan must not
-- overlap (on two streams): they share the workspace and counters.
function M.split_k_plan(cfg, args, Av, Cv, dims, alpha, beta, bias, sms, source, report, split_why)
  local m, n, batch, S = dims.m, dims.n, dims.l, cfg.split_k
  local tacc = cute.dtype.get(INPUTS[cfg.a_dtype].acc)
  if S * m * n * batch >= 2 ^ 31 then
    err.raise("cute.gemm: split_k = %d needs a workspace of %d x %d x %d x %d elements, past 32-bit indexing; take a "
      .. "smaller split_k", S, S, m, n, batch)
  end
  -- the workspace (S, M, N, L), N contiguous, then M, L, S; the kernels' view (M, N, L x S)
  local wl = cute.make_layout({ S, m, n, batch }, { m * n * batch, n, 1, m * n })
  local vl = cute.make_layout({ m, n, batch * S }, { n, 1, m * n })
  local W, Wv
  if Av.fake then
    W = cute.fake_tensor(tacc, { S, m, n, batch }, wl)
    Wv = cute.fake_tensor(tacc, { m, n, batch * S }, vl)
  else
    W = cute.tensor(tacc, wl)
    Wv = require("cute.tensor").from_ptr(W:data_ptr(), tacc, vl)
  end
  local tiles = math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn) * batch
  local units = tiles * S
  local kcfg = {}
  for key, v in pairs(cfg) do kcfg[key] = v end
  kcfg.tma_store = nil
  if cfg.split_reduce == "fused" then
    -- one kernel: C, the epilogue, and after the bias the workspace, the counters and S
    kcfg.split = "fused"
    local counters = Av.fake and cute.fake_tensor(cute.i32, { tiles }) or cute.tensor(cute.i32, { tiles }):fill(0)
    local kargs = { args[1], args[2], Cv, args[4], args[5], args[6] }
    if bias then kargs[#kargs + 1] = bias end
    for _, a in ipairs { Wv, counters, cute.i32(S) } do kargs[#kargs + 1] = a end
    return {
      kernel = M.kernel(kcfg), args = kargs, grid = { math.min(units, sms), 1, 1 }, block = 384, config = cfg,
      config_source = source, tune_report = report, split_why = split_why, workspace = W, counters = counters,
      pdl = cfg.pdl,
    }
  end
  -- the GEMM kernel: no beta, fused part or TMA store (the reduction has them)
  kcfg.split, kcfg.beta, kcfg.bias, kcfg.bias_dtype, kcfg.act, kcfg.fn = true, false, nil, nil, nil, nil
  local kargs = { args[1], args[2], Wv, args[4], args[5], cute.f32(0), cute.i32(S) }
  local T, per = M.REDUCE_THREADS, M.REDUCE_PER_THREAD
  local rcfg = { acc = tacc.name, beta = cfg.beta, bias = cfg.bias, bias_dtype = cfg.bias_dtype, act = cfg.act,
    fn = cfg.fn }
  return {
    kernel = M.kernel(kcfg), args = kargs, grid = { math.min(units, sms), 1, 1 }, block = 384, config = cfg,
    config_source = source, tune_report = report, split_why = split_why, workspace = W, pdl = cfg.pdl,
    reduce = { kernel = M.reduce_kernel(rcfg), args = { Wv, Cv, cute.i32(S), cute.f32(alpha), cute.f32(beta), bias },
      grid = { math.max(1, math.ceil(m * n * batch / (T * per))), 1, 1 }, block = T },
  }
end

--- The launch for kernel views Av (M, K, L), Bv (N, K, L), Cv (M, N, L)
-- (cute.lib.gemm.plan made them and checked M.unsupported): the kernel, its
-- arguments, grid and block. A skinny problem is planned swapped (M.swap_ab,
-- M.swapped_plan); `swapped` is true for the swapped problem's own plan.
function M.plan(Av, Bv, Cv, dims, strides, alpha, beta, opts, swapped)
  if not swapped then
    local swap, swap_why = M.swap_ab(dims.m, dims.n, opts)
    if swap then return M.swapped_plan(Av, Bv, Cv, dims, strides, alpha, beta, opts, swap_why) end
  end
  local name = input_name(Av.dtype)
  local bytes = Av.dtype.bytes
  local bk = 128 / bytes -- one 128-byte swizzle row of K
  local cfg = { bk = bk }
  for k, v in pairs(M.CONFIG) do cfg[k] = v end
  require("cute.lib.gemm").check_config_keys(opts.config, M.CONFIG_KEYS, "gemm_sm90's")
  local source, report = "opts.config", nil
  -- a config of a cluster alone keeps the tile the heuristic (or the tuner) picks
  local tile_given = names_tile(opts.config)
  if not tile_given then
    local chosen
    chosen, source, report = tuned_config(Av, Bv, Cv, dims, strides, alpha, opts, name, swapped)
    for k, v in pairs(chosen) do cfg[k] = v end
  end
  for k, v in pairs(opts.config or {}) do cfg[k] = v end
  cfg.swap_ab, cfg.swapped = nil, swapped or nil
  M.check_cluster(cfg, opts.group_offsets ~= nil)
  M.check_split_k(cfg, opts.group_offsets ~= nil)
  local m, n, k, batch = dims.m, dims.n, dims.k, dims.l
  local sms = sm_count()
  -- the automatic split-K (M.AUTO_SPLIT_K) weighs the widest tile: where its tiles
  -- are few and K long, 128 x 256 tiles in k-slices rather than the heuristic's
  -- narrower tiles
  local auto = M.AUTO_SPLIT_K and not opts.group_offsets and cfg.cluster == nil and cfg.schedule ~= "pingpong"
  if auto and cfg.split_k == nil and not tile_given and (source == "heuristic" or source == "default")
    and M.auto_split_k(m, n, k, batch, 256, bk, sms) then
    cfg.bn, cfg.stages = 256, 4
  end
  -- 2 consumer warpgroups (the register split 40 / 232 is for 384 threads),
  -- one 128B swizzle row of K, one TMA box of B (at most 256 rows)
  if cfg.schedule ~= nil and cfg.schedule ~= "cooperative" and cfg.schedule ~= "pingpong" then
    err.raise("cute.gemm: gemm_sm90's schedule is \"cooperative\" or \"pingpong\", got %s", tostring(cfg.schedule))
  end
  local want_bm = cfg.schedule == "pingpong" and 64 or 128
  if cfg.bm ~= want_bm or (cfg.bk ~= bk and cfg.bk ~= 2 * bk) then
    err.raise("cute.gemm: gemm_sm90 tiles for %s are %d x BN x %d or %d (%s, one or two 128-byte swizzle rows of K), "
      .. "got bm = %s, bk = %s", name, want_bm, bk, 2 * bk, cfg.schedule == "pingpong"
      and "a warpgroup a tile: ping-pong" or "two consumer warpgroups a tile", tostring(cfg.bm), tostring(cfg.bk))
  end
  -- (a multicast stage splits its shared operand's boxes between the pair: one box
  -- of K a stage)
  if cfg.bk ~= bk and cfg.cluster ~= nil and (cfg.cluster[1] ~= 1 or cfg.cluster[2] ~= 1) then
    err.raise("cute.gemm: gemm_sm90 in clusters takes one 128-byte swizzle row of K a stage (bk = %d), got bk = %s",
      bk, tostring(cfg.bk))
  end
  if type(cfg.bn) ~= "number" or cfg.bn % 16 ~= 0 or cfg.bn < 16 or cfg.bn > 256 then
    err.raise("cute.gemm: gemm_sm90's bn is a multiple of 16 from 16 to 256, got %s", tostring(cfg.bn))
  end
  if cfg.group ~= nil and (type(cfg.group) ~= "number" or cfg.group % 1 ~= 0 or cfg.group < 1) then
    err.raise("cute.gemm: gemm_sm90's group (the tiles of M that share a column of B tiles) is a whole number from 1, "
      .. "got %s", tostring(cfg.group))
  end
  local stage_bytes = (cfg.bm + cfg.bn) * cfg.bk * bytes
  local max_stages = stages_fit(stage_bytes)
  if type(cfg.stages) ~= "number" or cfg.stages % 1 ~= 0 or cfg.stages < 2 or cfg.stages > max_stages then
    err.raise("cute.gemm: gemm_sm90 with a %dx%dx%d tile takes 2 to %d stages (%d bytes each), got %s", cfg.bm,
      cfg.bn, cfg.bk, max_stages, stage_bytes, tostring(cfg.stages))
  end
  cfg.a_dtype = name
  cfg.wait_ns = common.wait_ns(cfg.wait_ns, "cute.gemm: gemm_sm90's wait_ns")
  cfg.a_major, cfg.b_major = M.major_of(strides.a), M.major_of(strides.b)
  cfg.beta = beta ~= 0
  if INPUTS[name].acc == "i32" and (alpha % 1 ~= 0 or beta % 1 ~= 0) then
    err.raise("cute.gemm: integer GEMMs take integer alpha and beta (got %s, %s)", tostring(alpha), tostring(beta))
  end
  local bias = M.fused_config(cfg, opts, m, n, INPUTS[name].acc == "i32")
  local tiles = math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn) * batch
  if not auto and cfg.split_k == nil and not tile_given and (source == "heuristic" or source == "default")
      and cfg.schedule == "pingpong" and batch == 1 and not swapped and not opts.group_offsets
      and cfg.cluster == nil then
    auto = M.pingpong_split_k(tiles, math.ceil(k / cfg.bk), sms)
  end
  local split_why = M.split_k_config(cfg, m, n, k, batch, tiles, sms, auto)
  -- the epilogue through shared memory and TMA stores: a 16-bit C with unit
  -- stride along N (TMA's rules for the rest), not read (beta 0), one matrix
  -- a problem (a grouped problem's rows end inside C, where TMA would not clip)
  local cs = Cv.layout.stride
  local cb = Cv.dtype.bytes
  cfg.tma_store = opts.tma_store ~= false and cb == 2 and cs[2] == 1 and (cs[1] * cb) % 16 == 0
    and (batch == 1 or (cs[3] * cb) % 16 == 0) and not cfg.beta and not opts.group_offsets and cfg.bn % 32 == 0
    and not cfg.split_k and (Cv.fake or Cv:alignment() >= 16) or nil
  cfg.pdl = opts.pdl or nil
  -- opts.pdl_prefetch_b: the caller's B (the kernel's A when swapped) loads its first
  -- stages before the wait
  cfg.pdl_pre = cfg.pdl and opts.pdl_prefetch_b and (swapped and "a" or "b") or nil
  local atomA, atomB = M.tma_atoms(cfg, Av, Bv)
  local dA = descriptor(atomA, Av, { m, k, batch }, strides.a)
  local dB = descriptor(atomB, Bv, { n, k, opts.group_offsets and #opts.group_offsets - 1 or batch }, strides.b)
  local args = { dA, dB, Cv, cute.i32(k), cute.f32(alpha), cute.f32(beta) }
  local group_tensors
  if opts.group_offsets then
    -- grouped: problem e is rows offsets[e] .. offsets[e+1]-1 of A and C with batch e of
    -- B; the tiles of the problems one after the other (tstart[e]: e's first tile)
    local off = opts.group_offsets
    cfg.groups = #off - 1
    local tstart, t = { 0 }, 0
    for e = 1, cfg.groups do
      t = t + math.ceil((off[e + 1] - off[e]) / cfg.bm) * math.ceil(n / cfg.bn)
      tstart[e + 1] = t
    end
    tiles = t
    if Av.fake then
      group_tensors = { cute.fake_tensor(cute.i32, { #off }), cute.fake_tensor(cute.i32, { #off }) }
    else
      group_tensors = { cute.tensor(cute.i32, { #off }):copy_from(off),
        cute.tensor(cute.i32, { #off }):copy_from(tstart) }
    end
    args[7], args[8] = group_tensors[1], group_tensors[2]
  end
  args[#args + 1] = bias
  if cfg.tma_store then
    -- C as TMA dimensions (N, M, L), a box of 32 columns x BM rows, the 64B swizzle
    args[#args + 1] = Cv.fake and require("ffi").new("CuteTmaDesc") or cute.tma_descriptor {
      dtype = Cv.dtype, address = Cv, dims = { n, m, batch },
      strides = { cs[1] * cb, (batch > 1 and cs[3] or m * cs[1]) * cb }, box = { 32, cfg.bm, 1 }, swizzle = "64B",
      oob = "zero" }
  end
  if cfg.split_k then
    return M.split_k_plan(cfg, args, Av, Cv, dims, alpha, beta, bias, sms, source, report, split_why)
  end
  local grid = math.min(tiles, sms)
  if cfg.cluster then -- clusters of 2, one a pair of tiles
    grid = 2 * math.min(M.cluster_pairs(math.ceil(m / cfg.bm), math.ceil(n / cfg.bn), cfg.cluster) * batch,
      math.max(1, math.floor(sms / 2)))
  end
  return {
    kernel = M.kernel(cfg), args = args, group_tensors = group_tensors,
    grid = { grid, 1, 1 }, block = 384, config = cfg, config_source = source,
    tune_report = report, split_why = split_why, pdl = cfg.pdl,
  }
end

return M
