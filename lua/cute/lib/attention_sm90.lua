--- cute.lib.attention_sm90: a FlashAttention forward for Hopper (sm_90a),
-- built as FlashAttention 3 is: TMA loads of K and V through mbarrier
-- pipelines, wgmma for both products, warp specialisation.
--
--   O = softmax(scale * Q K^T + mask) V        LSE = log(sum(exp(scale * Q K^T + mask)))  a row
--
-- One CTA a BM query rows of one (batch, head) (BM 128: 384 threads; 192 at
-- head dim 64: 512):
--
--   * warpgroup 0, the producer (setmaxnreg.dec 24): one thread loads the Q
--     tile once (TMA, its own barrier), then walks the CTA's key blocks, K_{n+1}
--     before V_n, into two rings (K and V, so that S = Q K^T of a block can
--     start before its V has landed);
--   * the consumer warpgroups (setmaxnreg.inc 240; 160 with three; with one
--     and several CTAs an SM, the CTA's share less the producer's), 64 query
--     rows each. Key block n: S = Q K^T (wgmma m64nBNk16, Q and K from shared
--     memory, BN / 2 f32 a thread) is issued before block n-1's O += P V
--     (wgmma m64nDk16, RS: P from registers, V from shared memory MN-major);
--     while that P V runs: release K, the mask (sequence ends, causal, sliding
--     window) as -inf on the blocks that cross an edge, the online softmax in
--     registers (two rows a thread: a row's max and sum over the thread's
--     values as trees, then over the four threads of the quad by shuffles), the
--     scale folded into exp2's argument; then the O accumulator rescaled and P
--     converted to bf16/f16 where it lies (it already has the layout wgmma
--     wants for A from registers). With two consumer warpgroups they take turns
--     to issue (ping-pong on named barriers 1 and 2);
--   * the epilogue divides O by the row sums and stores it with the rows'
--     log-sum-exp (natural log): through shared memory (stmatrix) and TMA
--     stores where the buffer fits (config.o_tma), else in 16-byte stores. A
--     row that no key reaches (masked out entirely) gets O = 0 and LSE = -inf,
--     never NaN.
--
-- Tensors are FlashAttention's layout, seen by the kernel as (B, S, H, D)
-- views with D contiguous: a variable-length batch is B = 1 and S = the
-- packed total, its sequences found by the offsets cu_q, cu_k.
--
-- config.persistent (the default at short lengths: M.persistent_by_default): a
-- persistent grid, one CTA an SM walking the (query block, head, batch) work
-- tiles (longest first under a causal mask),
-- the rings' phases and the ping-pong turns carried from tile to tile, Q
-- released by the consumers after a tile's last S so that the next tile's Q
-- and first K/V load during its last P V and epilogue.
-- docs/attention.md ("The Hopper kernel") has the design and its figures.
local cute = require "cute"
local err = require "cute._err"
local common = require "cute.lib.common"
local wg = require "cute.nvgpu.warpgroup"
local P = cute.pipeline
local A = cute.arch

local M = {}

local LOG2E = 1.4426950408889634
local LN2 = 0.6931471805599453

-- 2^x by a polynomial on the FMA pipe (config.poly_exp2), for x <= 8 (P's
-- exponents): x = j + f with j = round(x) (the 1.5 * 2^23 trick: adding it
-- leaves round(x) in the low mantissa bits) and f in [-0.5, 0.5]; 2^f by a
-- cubic (minimax in relative error over [-0.5, 0.5], Remez: 7.5e-5, under
-- bf16's and f16's half-ulp); j added to the exponent field as an integer.
-- Below -126 (a masked score is -inf) the result is 0, exactly as ex2's.
local POLY_C = { 0.9999280735404956, 0.6932609854573362, 0.2426111221943308, 0.055171669074864 }
local ROUND_MAGIC = 12582912.0 -- 1.5 * 2^23
local function exp2_poly(x)
  local t = x + ROUND_MAGIC
  local j = t - ROUND_MAGIC
  local f = x - j
  local p = cute.fma(cute.fma(cute.fma(f, POLY_C[4], POLY_C[3]), f, POLY_C[2]), f, POLY_C[1])
  local bits = cute.bitcast(p, cute.i32) + cute.bitcast(t, cute.i32):shl(23)
  return cute.where(x:ge(-126.0), cute.bitcast(bits, cute.f32), 0.0)
end
M.exp2_poly = exp2_poly

-- A 4-d tiled TMA load (D, S, H, B coordinates) of the box at (d, s, h, b)
-- into shared memory at smem_ptr, completing bar_ptr's transaction.
local function tma_load_4d(desc, smem_ptr, d, s, h, b, bar_ptr)
  A.tma_load(desc, smem_ptr, bar_ptr, { d, s, h, b })
end

--- The tile configuration for a head dimension: BM query rows a CTA (64 a
-- consumer warpgroup), BN keys a block, the ring stages, ping-pong. Measured
-- on the H100 (docs/attention.md): head dim 64 runs three consumer
-- warpgroups (BM 192, 160 registers each, no ping-pong); 128 takes 176-key
-- blocks without a mask and 128 with a causal one (fewer masked blocks); 256
-- takes 80-key blocks (the registers: O is 128 a thread). On the H200
-- (2026-11-29, bench/attention_sm90_probe.lua with AB=bm=128,pingpong=1, the
-- two alternating in one run) head dim 64 gains from two ping-ponging
-- warpgroups of 128 x 128 under a causal mask (1.21x/1.07x/1.03x/1.04x at S
-- 512/2048/8192/16384) and without one at S 512 (1.07x; 0.97-1.01x from 2048).
-- Lazy rescaling (config.lazy_rescale) is the default at head dims 64 and 256:
-- on the H200 (2026-11-29, AB=lazy_rescale=1, uniform descriptors) 1.00-1.06x
-- at d 64 and 1.02-1.11x at d 256, S 512-16384 with and without a causal mask;
-- at d 128 without a mask 0.96-1.01x in three runs, so off there; at d 128
-- under a causal mask 0.99-1.03x in two runs (2026-11-29, fourth session:
-- S 512 1.032 / 1.013, 2048 1.012 / 1.003, 8192 0.997 / 0.993, 16384 1.028 /
-- 1.019), so on.
-- Head dim 64 under a causal mask (not a window) from 1025 to 2048 keys takes 64 x 96
-- tiles of one consumer warpgroup, three CTAs an SM (config.ctas_per_sm; H200,
-- 2026-11-29, docs/attention.md "Three CTAs an SM"). Head dim 64 without a mask up
-- to 512 keys on the persistent grid: M.plan takes the 192-row tiles there too
-- (M.short_tiles_by_default).
-- @param d the head dimension (64, 128 or 256)
-- @param causal whether the mask is causal (or a window)
-- @param sk the keys (the longest sequence's; default: many)
-- @param window whether the mask is a window (bounded on the left, or on the right
--   other than at the diagonal)
-- @return {bm, bn, stages, pingpong, lazy_rescale[, ctas_per_sm]}
-- @usage local c = M.pick_config(128, false) -- {bm = 128, bn = 176, stages = 2, pingpong = true, lazy_rescale = false}
function M.pick_config(d, causal, sk, window)
  local lazy = d ~= 128 or causal
  if d == 64 and causal and not window and sk and sk > 1024 and sk <= 2048 then
    return { bm = 64, bn = 96, stages = 2, pingpong = false, lazy_rescale = true, ctas_per_sm = 3 }
  end
  if d == 64 and not causal and (sk or math.huge) > 512 then
    return { bm = 192, bn = 128, stages = 2, pingpong = false, lazy_rescale = lazy }
  end
  if d == 256 then return { bm = 128, bn = 80, stages = 2, pingpong = true, lazy_rescale = lazy } end
  return { bm = 128, bn = (causal or d == 64) and 128 or 176, stages = 2, pingpong = true, lazy_rescale = lazy }
end

-- The wgmma ops: S = Q K^T (SS, both K-major), O += P V (RS, V MN-major).
local function ops(dt, bn, d)
  local K, MN = wg.OperandMajorMode.K, wg.OperandMajorMode.MN
  local S, R = wg.OperandSource.SMEM, wg.OperandSource.RMEM
  return wg.MmaF16BF16Op(dt, cute.f32, { 64, bn, 16 }, S, K, K), wg.MmaF16BF16Op(dt, cute.f32, { 64, d, 16 }, R, K, MN)
end

-- The softmax's P, held in S's accumulator registers, is already the A
-- operand of the second wgmma (RS): value kb * 8 + v of an m64nBN f32
-- accumulator sits at the same (row, column) as value v of k-block kb of a
-- 16-bit A fragment. Checked here on the two atoms' layouts, thread by thread.
local function check_p_layout(bn)
  local C = wg.c_layout(bn)
  local Ar = wg.a_rs_layout(16)
  for t = 0, 127 do
    for kb = 0, bn / 16 - 1 do
      for v = 0, 7 do
        local a = Ar({ t, v }) -- m + 64 k in the 64 x 16 block
        local c = C({ t, kb * 8 + v }) -- m + 64 n in the 64 x bn tile
        local am, ak = a % 64, math.floor(a / 64)
        if c ~= am + 64 * (kb * 16 + ak) then
          err.raise("attention_sm90: the accumulator and RS A layouts disagree at thread %d, k-block %d, value %d", t,
            kb, v)
        end
      end
    end
  end
end

-- The columns of an m64nBN accumulator's values relative to a thread's first:
-- delta[v + 1] = column(t, v) - column(t, 0), the same for every thread t
-- (checked here on the layout), so that a mask compares each value's offset,
-- a constant, against a bound a row.
local function column_deltas(bn)
  local C = wg.c_layout(bn)
  local delta = {}
  for t = 0, 127 do
    local base = math.floor(C({ t, 0 }) / 64)
    for v = 0, bn / 2 - 1 do
      local d = math.floor(C({ t, v }) / 64) - base
      if t == 0 then delta[v + 1] = d end
      if d ~= delta[v + 1] then
        err.raise("attention_sm90: value %d's column offset differs between threads 0 and %d", v, t)
      end
    end
  end
  return delta
end

-- f(get(list[1]), get(list[2]), ...) as a balanced tree (short dependency
-- chains: the values' latencies overlap)
local function tree(list, get, f)
  local vals = {}
  for i, x in ipairs(list) do vals[i] = get(x) end
  while #vals > 1 do
    local nxt = {}
    for i = 1, #vals, 2 do nxt[#nxt + 1] = vals[i + 1] and f(vals[i], vals[i + 1]) or vals[i] end
    vals = nxt
  end
  return vals[1]
end

local kernels = {}

-- config.poly_exp2 in eighths
local function poly_eighths(cfg) return math.floor((cfg.poly_exp2 or 0) * 8 + 0.5) end

-- A configuration's kernel name: dtype, head dim, tile and every variant that
-- changes the code (M.kernel's cache key adds the stages).
local function kernel_name(cfg)
  local persist, poly8 = cfg.persistent, poly_eighths(cfg)
  return string.format("attention_sm90_%s_d%d_%dx%d", cfg.dtype, cfg.d, cfg.bm, cfg.bn)
    .. (cfg.varlen and "_varlen" or "") .. (cfg.window and "_window" or "") .. (cfg.pingpong and "_pingpong" or "")
    .. (persist and (cfg.lpt and "_persistent_lpt" or "_persistent") or "")
    .. (cfg.o_vec and "_ovec" or "") .. (cfg.uniform_desc == false and "_vdesc" or "")
    .. (cfg.lazy_rescale and "_lazy" or "") .. ((cfg.ctas_per_sm or 1) > 1 and ("_" .. cfg.ctas_per_sm .. "ctas") or "")
    .. (poly8 > 0 and ("_poly" .. poly8) or "") .. (cfg.sum_mma and "_summma" or "")
    .. ((cfg.q_stages or 1) > 1 and ("_q" .. cfg.q_stages) or "") .. (cfg.tile_overlap and "_tov" or "")
    .. (cfg.o_tma and "_otma" or "") .. (cfg.unmasked_loop and "_uloop" or "") .. (cfg.late_k and "_latek" or "")
    .. (cfg.early_p and "_earlyp" or "") .. (cfg.wait_ns and ("_wait" .. cfg.wait_ns) or "")
    .. (cfg.s_early and cfg.pingpong and "_searly" or "") .. (cfg.half_masked and "_half" or "")
    .. (cfg.narrow_diag and "_narrow" or "")
end

-- A CTA's shared memory at most on sm_90, in KiB.
M.SMEM_KIB_CTA = 227

--- The shared memory of a configuration in KiB: Q's buffers, the K and V rings,
-- O's staging buffer (config.o_tma), 1 KiB the runtime reserves a CTA and 1 KiB
-- for alignment and barriers.
-- @param bm the query block
-- @param bn the key block
-- @param stages the K and V rings' stages
-- @param d the head dimension
-- @param bytes an element's bytes
-- @param q_stages Q's buffers (1 or 2)
-- @param o_tma whether O leaves through shared memory (a BM x D buffer)
-- @return KiB
-- @usage local kib = M.smem_kib(128, 128, 2, 64, 2, 2) -- 98
function M.smem_kib(bm, bn, stages, d, bytes, q_stages, o_tma)
  return ((bm * (q_stages + (o_tma and 1 or 0)) + 2 * bn * stages) * d * bytes + 2048) / 1024
end

local function build(cfg, trace_key)
  local BM, BN, D, STAGES = cfg.bm, cfg.bn, cfg.d, cfg.stages
  local PINGPONG = cfg.pingpong
  if BM ~= 64 and BM ~= 128 and BM ~= 192 then
    err.raise("attention_sm90: bm is 64, 128 or 192 (1, 2 or 3 consumer warpgroups), got %s", tostring(BM))
  end
  if PINGPONG and BM ~= 128 then err.raise("attention_sm90: ping-pong takes two consumer warpgroups (bm = 128)") end
  if type(BN) ~= "number" or BN < 16 or BN > 256 or BN % 16 ~= 0 then
    err.raise("attention_sm90: config.bn (keys a block) is %s, expected a multiple of 16 from 16 to 256", tostring(BN))
  end
  if type(STAGES) ~= "number" or STAGES < 1 or STAGES % 1 ~= 0 then
    err.raise("attention_sm90: config.stages (the K and V rings' stages) is %s, expected a whole number from 1",
      tostring(STAGES))
  end
  -- CTAs an SM (cfg.ctas_per_sm, default 1): the register file (64K) is theirs in equal
  -- parts; ptxas gives each thread its launch bound's share at entry, and a CTA's
  -- setmaxnreg moves registers between its own warpgroups: the producer keeps 24
  -- a thread, the consumers take the rest (a multiple of 8, at most 240)
  local CTAS = cfg.ctas_per_sm or 1
  local consumers = BM * 2 -- (a warpgroup of 128 threads for each 64 rows)
  local threads = 128 + consumers
  local entry = math.floor(65536 / (threads * CTAS) / 8) * 8
  local CONSUMER_REGS = math.min(240, math.floor((threads * math.min(entry, 255) - 128 * 24) / consumers / 8) * 8)
  -- ptxas compiles a wgmma within the entry count: its accumulators (BN / 2 for S,
  -- D / 2 for O) and about 26-30 more (measured: 64 x 128 tiles at d 64 need 90, O at
  -- d 128 94, at d 256 158)
  local need = math.max(BN / 2 + 26, D / 2 + 30)
  if entry < need then
    err.raise("attention_sm90: %d CTAs an SM leave %d registers a thread at entry, and a %dx%d tile at head dim %d "
      .. "needs about %d for its wgmma (fewer CTAs an SM or narrower key blocks)", CTAS, entry, BM, BN, D, need)
  end
  local dt = cute.dtype.get(cfg.dtype)
  -- several CTAs an SM must fit its 228 KiB of shared memory together (Q and the K
  -- and V rings, 1 KiB the runtime reserves a CTA, 1 KiB for alignment and barriers)
  -- cfg.q_stages (persistent only, default 1): Q's buffers; with 2 the next tile's Q
  -- loads while this tile's products still read the other
  local QST = cfg.q_stages or 1
  if QST ~= 1 and QST ~= 2 then err.raise("attention_sm90: config.q_stages is 1 or 2, got %s", tostring(QST)) end
  if QST > 1 and not cfg.persistent then
    err.raise("attention_sm90: config.q_stages applies to a persistent grid (config.persistent)")
  end
  -- cfg.tile_overlap (persistent only): a tile's last P V and the next tile's first S
  -- issued in one turn, the epilogue running while that S is on the tensor cores
  local TOV = cfg.tile_overlap
  -- cfg.unmasked_loop (not with a window): the key blocks that cross no edge in a loop of their own
  local UNMASKED_LOOP = cfg.unmasked_loop
  if UNMASKED_LOOP and cfg.window then
    err.raise("attention_sm90: config.unmasked_loop does not take a window's left edge (opts.window)")
  end
  if TOV and not cfg.persistent then
    err.raise("attention_sm90: config.tile_overlap applies to a persistent grid (config.persistent)")
  end
  -- cfg.o_tma: O's tile leaves through shared memory (stmatrix into a 128B-swizzled
  -- buffer of 64 x D a consumer warpgroup, then TMA stores)
  local O_TMA = cfg.o_tma
  local smem_kib = M.smem_kib(BM, BN, STAGES, D, dt.bytes, QST, O_TMA)
  if (QST > 1 or O_TMA) and smem_kib > M.SMEM_KIB_CTA then
    err.raise("attention_sm90: %s needs %.0f KiB of shared memory at %dx%d tiles, head dim %d, %d "
      .. "stages (a CTA has at most %d): %s, fewer stages or keys a block",
      QST > 1 and "config.q_stages = 2" .. (O_TMA and " with config.o_tma" or "") or "config.o_tma", smem_kib, BM,
      BN, D, STAGES, M.SMEM_KIB_CTA, QST > 1 and "one Q" or "O stored directly")
  end
  if smem_kib > M.SMEM_KIB_CTA then
    err.raise("attention_sm90: %dx%d tiles at head dim %d in %d stages need %.0f KiB of shared memory (a CTA has at "
      .. "most %d): fewer stages or keys a block", BM, BN, D, STAGES, smem_kib, M.SMEM_KIB_CTA)
  end
  if CTAS > 1 and CTAS * smem_kib > 228 then
    err.raise("attention_sm90: %d CTAs an SM need %d x %.0f KiB of shared memory (an SM has 228 KiB): fewer CTAs, "
      .. "stages or keys a block", CTAS, CTAS, smem_kib)
  end
  -- cfg.narrow_diag (d 64, ping-pong): where none of a warpgroup's 64 rows keeps a key
  -- of a block's second half (a causal diagonal's first rows), its S and P V of that
  -- block at half width (a whole wgmma group chosen at run time)
  local NARROW = cfg.narrow_diag
  if NARROW and (D ~= 64 or not PINGPONG or BN % 32 ~= 0 or TOV or cfg.sum_mma) then
    err.raise("attention_sm90: config.narrow_diag takes head dim 64, ping-pong and key blocks of a multiple of 32, "
      .. "without config.tile_overlap or config.sum_mma (ptxas then serialises the wgmmas for want of registers)")
  end
  check_p_layout(BN)
  local DELTA = column_deltas(BN)
  local opS, opO = ops(dt, BN, D)
  local mmaS = cute.make_tiled_mma(cute.make_mma_atom(opS), { BM / 64, 1, 1 })
  local mmaO = cute.make_tiled_mma(cute.make_mma_atom(opO), { BM / 64, 1, 1 })
  -- cfg.sum_mma: the row sums of P by the tensor cores, P (RS) times a BN x 8
  -- tile of ones, beside P V (m64n8k16; every column of the result is the sum)
  local SUM_MMA = cfg.sum_mma
  local mmaL = SUM_MMA and cute.make_tiled_mma(cute.make_mma_atom(wg.MmaF16BF16Op(dt, cute.f32, { 64, 8, 16 },
    wg.OperandSource.RMEM, wg.OperandMajorMode.K, wg.OperandMajorMode.K)), { BM / 64, 1, 1 })
  assert(mmaS.size == consumers)
  local K_, MN_ = wg.OperandMajorMode.K, wg.OperandMajorMode.MN
  -- shared layouts: Q (BM, D) and K (BN, D, stages) K-major, 128B-swizzled
  -- atoms of 64 elements of D; V (D, BN, stages) MN-major (the B operand of P V,
  -- N = D contiguous)
  local layQ = wg.make_smem_layout_a(K_, { BM, BN, D }, dt, QST > 1 and QST or nil)
  local layK = wg.make_smem_layout_b(K_, { BM, BN, D }, dt, STAGES)
  local layV = wg.make_smem_layout_b(MN_, { BM, D, BN }, dt, STAGES)
  local layOnes = SUM_MMA and wg.make_smem_layout_b(K_, { BM, 8, BN }, dt)
  -- (the consumers' in one table: their function is at Lua's limit of 60 upvalues)
  local lay = { q = layQ, k = layK, v = layV, ones = layOnes }
  -- (cfg.narrow_diag) K's first BN / 2 rows of stage s as stage 2 s of BN / 2-row
  -- stages: at d 64 (one 128-byte row of D) the rows lie in the same places
  local narrow_ops
  if NARROW then
    local layKn = wg.make_smem_layout_b(K_, { BM, BN / 2, D }, dt, 2 * STAGES)
    for s = 0, STAGES - 1 do
      for r = 0, BN / 2 - 1 do
        for c = 0, D - 1, 8 do
          if layKn({ r, c, 2 * s }) ~= layK({ r, c, s }) then
            err.raise("attention_sm90: K's half-width view differs at row %d, column %d, stage %d", r, c, s)
          end
        end
      end
    end
    narrow_ops = { lay = layKn, mma = cute.make_tiled_mma(cute.make_mma_atom(wg.MmaF16BF16Op(dt, cute.f32,
      { 64, BN / 2, 16 }, wg.OperandSource.SMEM, K_, K_)), { BM / 64, 1, 1 }) }
  end
  -- the TMA boxes: 64 elements of D (one 128-byte swizzle row) x rows; box j
  -- (D from 64 j) lands at element j * rows * 64 of its tile in every layout
  local dboxes = D / 64
  for j = 0, dboxes - 1 do
    local at = { { layQ, BM, QST > 1 and { 0, 64 * j, 0 } or { 0, 64 * j } }, { layK, BN, { 0, 64 * j, 0 } },
      { layV, BN, { 64 * j, 0, 0 } } }
    for _, x in ipairs(at) do
      local got = x[1](x[3])
      if got ~= j * x[2] * 64 then
        err.raise("attention_sm90: box %d of a %d-row tile is at element %s, expected %d", j, x[2], tostring(got),
          j * x[2] * 64)
      end
    end
  end
  local q_elems, kv_elems = BM * D, BN * D
  local _ = cute._
  -- cfg.persistent: a CTA an SM walking work tiles (cfg.lpt: longest first, for
  -- causal masks), its pipelines' phases and the ping-pong turns carried on from
  -- tile to tile (M.plan, docs/attention.md "A persistent grid")
  local PERSIST, LPT, O_VEC, LAZY = cfg.persistent, cfg.lpt, cfg.o_vec, cfg.lazy_rescale
  local WINDOW = cfg.window
  local POLY8, name = poly_eighths(cfg), kernel_name(cfg)
  return cute.kernel(name, function(descQ, descK, descV, O, LSE, sq, sk, left, right, group, scale_log2, ...)
    -- left, right: the window around the diagonal, in keys; group: Q heads a
    -- KV head; varlen: then cu_q, cu_k (sq, sk unused); persistent: then the
    -- work tiles' query blocks, heads and batches
    local extra = { ... }
    cute.launch_bounds(threads, CTAS)
    local tid = cute.thread_idx().x
    local wgi = tid / 128
    -- a work tile (query block qblk of head h of batch b): its sequence, its
    -- first row q0, the diagonal, the key blocks it needs [n_lo, n_hi)
    local function tile_info(qblk, h, b)
      local w = { h = h, b = b, hk = h / group }
      w.q_start, w.k_start = cute.var(cute.i32, 0), cute.var(cute.i32, 0)
      w.Sq, w.Sk = cute.var(cute.i32, sq), cute.var(cute.i32, sk)
      w.bt = b -- the TMA batch coordinate (0 for a packed batch)
      if cfg.varlen then
        local cu_q, cu_k = extra[1], extra[2]
        w.q_start.value = cu_q[b]
        w.k_start.value = cu_k[b]
        w.Sq.value = cu_q[b + 1] - w.q_start.value
        w.Sk.value = cu_k[b + 1] - w.k_start.value
        w.bt = 0
      end
      w.q0 = qblk * BM
      w.off = w.Sk.value - w.Sq.value -- the diagonal: query i sees keys up to i + off (bottom-right aligned)
      w.q_last = cute.min(w.q0 + BM, w.Sq.value) - 1
      w.n_hi = cute.min((w.Sk.value + (BN - 1)) / BN, (cute.max(w.q_last + w.off + right + 1, 0) + (BN - 1)) / BN)
      w.n_lo = cute.max(w.q0 + w.off - left, 0) / BN
      return w
    end
    local w0 -- the CTA's one tile (not persistent)
    if not PERSIST then
      -- the query blocks in reverse: under a causal mask the last rows see the most
      -- keys, and their CTAs start first
      w0 = tile_info(cute.grid_dim().x - 1 - cute.block_idx().x, cute.block_idx().y, cute.block_idx().z)
    end
    local smem = cute.smem_allocator()
    local sQ_raw = smem:tensor(dt, cute.make_layout(q_elems * QST), 1024)
    local sK_raw = smem:tensor(dt, cute.make_layout(kv_elems * STAGES), 1024)
    local sV_raw = smem:tensor(dt, cute.make_layout(kv_elems * STAGES), 1024)
    local sOnes_raw = SUM_MMA and smem:tensor(dt, cute.make_layout(8 * BN), 1024)
    local sO_raw = O_TMA and smem:tensor(dt, cute.make_layout(BM * D), 1024)
    -- (cfg.o_tma) O's TMA descriptor, after every other argument
    local descO = O_TMA and extra[(cfg.varlen and 2 or 0) + (PERSIST and 4 or 0) + 1]
    local function pipe(stages, bytes)
      return P.PipelineTmaAsync.create {
        num_stages = stages, tx_count = bytes,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
        consumer_group = P.CooperativeGroup(P.Agent.Warp, consumers / 32),
        suspend_ns = cfg.wait_ns, -- (cfg.wait_ns, opt-in: each try_wait's suspend-time hint)
      }
    end
    local pipeQ = pipe(QST, q_elems * dt.bytes)
    local pipeK = pipe(STAGES, kv_elems * dt.bytes)
    local pipeV = pipe(STAGES, kv_elems * dt.bytes)
    -- (a varlen tile past its sequence's end has nothing to do)
    local function is_live(w) return w.q0 < w.Sq.value end
    local live = not PERSIST and is_live(w0)

    -- the persistent grid's work tiles: t = blockIdx.x, + gridDim.x, ... of
    -- mblocks x heads x batches; lpt: the (batch, head) pairs in groups of
    -- `npairs` (whose K and V fit in the L2 together, M.lpt_group), and in a group
    -- the last query blocks (the most keys under a causal mask) first, the
    -- group's pairs of one query block side by side; otherwise a (batch, head)'s
    -- query blocks one after another (its K and V stay in L2 while its tiles run)
    local mblocks, heads, batches, npairs, first, step, total
    if PERSIST then
      local nx = cfg.varlen and 3 or 1
      mblocks, heads, batches, npairs = extra[nx], extra[nx + 1], extra[nx + 2], extra[nx + 3]
      first, step, total = cute.block_idx().x, cute.grid_dim().x, mblocks * heads * batches
    end
    local function tile_of(t)
      if LPT then
        local g = t / (npairs * mblocks) -- the group
        local within = t - g * (npairs * mblocks)
        local n = cute.min(npairs, heads * batches - g * npairs) -- (its pairs: the last group may have fewer)
        local r = g * npairs + within % n
        return tile_info(mblocks - 1 - within / n, r % heads, r / heads)
      end
      local r = t / mblocks
      return tile_info(t % mblocks, r % heads, r / heads)
    end

    if wgi == 0 then
      A.setmaxnreg_dec(24)
      -- one tile's loads; st: the pipelines' states (made here for the first tile)
      local function produce(w, st)
        st.pq = st.pq or P.make_pipeline_state(P.PipelineUserType.Producer, QST)
        local pq = st.pq
        -- (persistent: the consumers released the previous tile's Q)
        pipeQ:producer_acquire(pq)
        for j = 0, dboxes - 1 do
          tma_load_4d(descQ, sQ_raw:ptr_at(QST > 1 and pq.index * q_elems + j * BM * 64 or j * BM * 64), j * 64,
            w.q_start.value + w.q0, w.h, w.bt,
            pipeQ:producer_get_barrier(pq))
        end
        if PERSIST then pq:advance() end
        st.pk = st.pk or P.make_pipeline_state(P.PipelineUserType.Producer, STAGES)
        st.pv = st.pv or P.make_pipeline_state(P.PipelineUserType.Producer, STAGES)
        local pk, pv = st.pk, st.pv
        local n_lo, n_hi = w.n_lo, w.n_hi
        -- K runs a block ahead of V (K_{n+1} before V_n): the consumers need S's
        -- operands first, and V's stage frees later (after its P V)
        local function load_k(n)
          pipeK:producer_acquire(pk)
          for j = 0, dboxes - 1 do
            tma_load_4d(descK, sK_raw:ptr_at(pk.index * kv_elems + j * BN * 64), j * 64, w.k_start.value + n * BN,
              w.hk, w.bt, pipeK:producer_get_barrier(pk))
          end
          pk:advance()
        end
        if n_hi > n_lo then load_k(n_lo) end
        for n in cute.range(n_lo, n_hi) do
          if n + 1 < n_hi then load_k(n + 1) end
          pipeV:producer_acquire(pv)
          for j = 0, dboxes - 1 do
            tma_load_4d(descV, sV_raw:ptr_at(pv.index * kv_elems + j * BN * 64), j * 64, w.k_start.value + n * BN,
              w.hk, w.bt, pipeV:producer_get_barrier(pv))
          end
          pv:advance()
        end
      end
      if PERSIST then
        if tid == 0 then
          -- the rings carry on across tiles: the next tile's Q (once the consumers
          -- release it) and first K and V load while the consumers finish this one
          local st = { pq = P.make_pipeline_state(P.PipelineUserType.Producer, QST),
            pk = P.make_pipeline_state(P.PipelineUserType.Producer, STAGES),
            pv = P.make_pipeline_state(P.PipelineUserType.Producer, STAGES) }
          for t in cute.range(first, total, step) do
            local w = tile_of(t)
            if is_live(w) then produce(w, st) end
          end
        end
      elseif tid == 0 and live then
        produce(w0, {})
      end
    else
      A.setmaxnreg_inc(CONSUMER_REGS)
      local ct = tid - 128
      local sQ = cute.make_tensor(sQ_raw:ptr_at(0), lay.q)
      local sK = cute.make_tensor(sK_raw:ptr_at(0), lay.k)
      local sV = cute.make_tensor(sV_raw:ptr_at(0), lay.v)
      local thrS = mmaS:get_slice(ct)
      local thrO = mmaO:get_slice(ct)
      -- The wgmma descriptors in uniform registers. Sliced for thread ct, the
      -- operands' addresses carry the thread index (K and V through a term
      -- (ct / 256) * 64 that is 0, Q through its warpgroup's rows), which ptxas
      -- cannot tell warp-uniform: it computed each descriptor in vector
      -- registers and moved it to uniform ones (R2UR) before every wgmma. Q is
      -- sliced for its warpgroup's first thread, the warpgroup's index taken
      -- from lane 0 by a shuffle (warp-uniform to ptxas); K and V for thread 0.
      -- The main loop's block of 19 wgmmas at d 128 issues 66 instructions
      -- instead of 186 (at d 256: 165 for 37 wgmmas instead of 257). On the
      -- persistent grid too since the masks' constant offsets freed the registers
      -- they spilled (1.01-1.08x there on the H200).
      -- (config.uniform_desc = false: every operand sliced per thread, as before)
      local UDESC = cfg.uniform_desc ~= false
      local qS = UDESC and mmaS:get_slice(cute.shuffle(ct / 128, 0) * 128) or thrS
      local tSsQ = qS:make_fragment_A(qS:partition_A(sQ))
      local kvS, kvO = UDESC and mmaS:get_slice(0) or thrS, UDESC and mmaO:get_slice(0) or thrO
      local tSsK = kvS:make_fragment_B(kvS:partition_B(sK))
      local tOsV = kvO:make_fragment_B(kvO:partition_B(sV))
      local cS = cute.make_identity_tensor({ BM, BN })
      local tScS = thrS:partition_C(cS)
      local accS = thrS:make_fragment_C(tScS)
      local tOrP = thrO:make_fragment_A(thrO:partition_A(cS))
      local cO = cute.make_identity_tensor({ BM, D })
      local tOcO = thrO:partition_C(cO)
      local accO = thrO:make_fragment_C(tOcO)
      local ns, no = cute.size(accS), cute.size(accO)
      -- (cfg.narrow_diag) the half-width S's operands (uniform descriptors, as above)
      -- and its accumulator, copied once done into accS's first BN / 4 values (S's first
      -- BN / 2 columns; the same registers would be defined in one branch and not the
      -- other, which makes ptxas serialise)
      local NW
      if narrow_ops then
        for i = 0, ns - 1 do
          if (i < ns / 2) ~= (DELTA[i + 1] < BN / 2) then
            err.raise("attention_sm90: S's value %d is not in the half its index says", i)
          end
        end
        local m = narrow_ops.mma
        local qn, kn, tn = m:get_slice(cute.shuffle(ct / 128, 0) * 128), m:get_slice(0), m:get_slice(ct)
        NW = { mma = m, q = qn:make_fragment_A(qn:partition_A(sQ)),
          k = kn:make_fragment_B(kn:partition_B(cute.make_tensor(sK_raw:ptr_at(0), narrow_ops.lay))),
          acc = tn:make_fragment_C(tn:partition_C(cute.make_identity_tensor({ BM, BN / 2 }))) }
      end
      accO:fill(0.0)
      local accL, tLsOnes -- (cfg.sum_mma) the row sums' accumulator (4 a thread) and the ones
      if SUM_MMA then
        for i = ct, 8 * BN - 1, consumers do sOnes_raw[i] = 1.0 end
        A.fence_proxy_async() -- (the wgmma reads them through the async proxy)
        cute.barrier(3, consumers)
        local thrL = mmaL:get_slice(ct)
        accL = thrL:make_fragment_C(thrL:partition_C(cute.make_identity_tensor({ BM, 8 })))
        accL:fill(0.0)
        local oneL = mmaL:get_slice(0)
        tLsOnes = oneL:make_fragment_B(oneL:partition_B(cute.make_tensor(sOnes_raw:ptr_at(0), lay.ones)))
      end
      -- the thread's two rows (r = 0, 1: values with (i // 2) % 2 == r): running max
      -- (scaled to log2 units) and sum
      local mx = { cute.var(cute.f32, -math.huge), cute.var(cute.f32, -math.huge) }
      local sum = { cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0) }
      local row_of = { tScS[0][1], tScS[2][1] } -- the two rows in the tile
      local col0 = tScS[0][2] -- the thread's first column (value i's is col0 + DELTA[i + 1])
      -- the row (1 or 2: row_of's) of accumulator value i, of S's and of O's
      local function row_index(i) return math.floor(i / 2) % 2 + 1 end
      -- cfg.o_vec: O's full tiles leave in 16-byte stores. A thread holds, of
      -- each 8-column chunk of its two rows, one 4-byte pair (the quad's four
      -- lanes the chunk); four chunks at a time, the quad transposes its 4 x 4
      -- pairs by two exchanges (lanes 1 apart, then 2), after which lane q holds
      -- chunk 4g + q whole: each row's 64 bytes in whole 32-byte sectors
      -- (2026-11-29, H200 ncu: O's 4-byte stores wrote 7.6 sectors a request, half
      -- of each).
      local function store_o_vec(out, gO)
        local q = ct % 4
        local odd, high = (q % 2) == 1, (q / 2) % 2 == 1
        -- x[j] and x[k] between lanes `mask` apart: the upper lane of the two gives
        -- its x[j] for the lower one's x[k]
        local function exchange(x, j, k, upper, mask)
          local recv = cute.shuffle_xor(cute.where(upper, x[j], x[k]), mask)
          x[j], x[k] = cute.where(upper, recv, x[j]), cute.where(upper, x[k], recv)
        end
        local function pair(i) return common.pack2(out[i], out[i + 1]) end -- (values i, i + 1 of out)
        for r = 0, 1 do
          local row = row_of[r + 1]
          for g = 0, D / 32 - 1 do
            local x = {}
            for j = 0, 3 do x[j] = pair(4 * (4 * g + j) + 2 * r) end
            exchange(x, 0, 1, odd, 1) -- lanes 1 apart: the 2 x 2 blocks
            exchange(x, 2, 3, odd, 1)
            exchange(x, 0, 2, high, 2) -- lanes 2 apart: the blocks
            exchange(x, 1, 3, high, 2)
            local frag = cute.make_fragment(4, cute.u32)
            for j = 0, 3 do frag[j] = x[j] end
            local col = 8 * (4 * g + q)
            cute.copy(frag, cute.make_tensor(gO:ptr_at({ row, col }):cast(nil, cute.u32), cute.make_layout(4)))
          end
        end
      end
      -- ping-pong (cfg.pingpong): the two warpgroups take turns to issue their
      -- wgmma (named barriers 1 and 2, one a warpgroup), so that one's softmax
      -- runs while the other's products use the tensor cores. Both take the same
      -- turns a tile (its key blocks are the CTA's, whichever rows are past Sq), so
      -- a persistent CTA's turns carry on from tile to tile: warpgroup 0 starts the
      -- first, and warpgroup 1's last arrive of a tile starts the next
      local me = wgi - 1
      local function my_turn() if PINGPONG then cute.barrier(1 + me, consumers) end end
      local function their_turn() if PINGPONG then cute.barrier(2 - me, consumers, "arrive") end end
      -- cfg.o_tma: the warpgroup's 64 rows of O leave through its own buffer in
      -- shared memory, D / 64 strips of 64 x 64 with the 128-byte swizzle (the
      -- layout of TMA's box, and conflict-free for stmatrix: chunk c of a row's 8
      -- 16-byte chunks lands at c ^ (row % 8)): stmatrix writes the strips, one
      -- thread stores them with TMA (which clips rows past O's end) and the
      -- warpgroup goes on; the buffer is written again once that store has read it
      -- (a tile later). Named barrier 4 + me orders the two.
      local lt = ct % 128
      local function store_o_tma(out, w, q0)
        local lane = lt % 32
        local row = (lt / 32) * 16 + lane % 8 + ((lane / 8) % 2) * 8 -- this lane's row of its stmatrix matrix
        local key, col8 = row % 8, lane / 16
        local base = me * 64 * D
        if lt == 0 then A.cp_async_bulk_wait_group(0, true) end
        cute.barrier(4 + me, 128)
        for j = 0, D / 64 - 1 do
          for q = 0, 3 do -- (16 columns: four 8 x 8 matrices, rows 0-7 and 8-15 of each 8-column half)
            local regs = {}
            for m = 0, 3 do
              local i = (4 * j + q) * 8 + 2 * m
              regs[m + 1] = common.pack2(out[i], out[i + 1]):bitcast(cute.i32)
            end
            local chunk = (col8 + 2 * q):bxor(key)
            cute.arch.stmatrix(sO_raw:ptr_at(base + j * 64 * 64 + row * 64 + chunk * 8), regs)
          end
        end
        A.fence_view_async_shared()
        cute.barrier(4 + me, 128)
        if lt == 0 then
          for j = 0, D / 64 - 1 do
            A.tma_store(descO, sO_raw:ptr_at(base + j * 64 * 64),
              { j * 64, w.q_start.value + q0 + me * 64, w.h, w.bt })
          end
          A.cp_async_bulk_commit_group()
        end
      end

      -- O's tile of work tile w from row q0 (gO) and the thread's share (tOgO)
      local function o_tile(w, q0)
        local gO = cute.make_tensor(O:ptr_at({ w.bt, w.q_start.value + q0, w.h, 0 }),
          cute.make_layout({ BM, D }, { O.layout.stride[2], 1 }))
        return gO, thrO:partition_C(gO)
      end
      -- the tile's O (out, the thread's values) in the rows before Sq of work tile w
      -- from row q0 (o_tile's gO, tOgO)
      local function store_o(out, w, q0, Sq, gO, tOgO)
        -- (a packed batch's partial tile would write into the next sequence: not by TMA)
        if O_TMA and (not cfg.varlen or q0 + BM <= Sq.value) then
          store_o_tma(out, w, q0)
        elseif O_VEC and q0 + BM <= Sq.value then
          store_o_vec(out, gO)
        elseif q0 + BM <= Sq.value then
          cute.copy(out, tOgO)
        else
          for i = 0, no - 1 do
            if q0 + tOcO[i][1] < Sq.value then tOgO[i] = out[i] end
          end
        end
      end

      -- one tile; st: the pipelines' states (made here for the first tile); (TOV)
      -- ahead: whether this tile's first S is in flight already (issued with the
      -- previous tile's last P V), nxt: whether the next tile has key blocks (its
      -- first S then goes with this tile's last P V; with one Q buffer that P V
      -- waits for the next tile's Q to load)
      local function consume(w, st, ahead, nxt)
        local q0, n_lo, n_hi, off, q_last = w.q0, w.n_lo, w.n_hi, w.off, w.q_last
        local Sq, Sk = w.Sq, w.Sk
        -- cfg.half_masked (declared here: the consumers' function is at Lua's limit
        -- of 60 upvalues)
        local HALF = cfg.half_masked or false
        -- the previous tile's O (TOV: later, once no wgmma is in flight; defining an
        -- accumulator's registers while one is makes ptxas serialize every wgmma)
        local function clear_o()
          accO:fill(0.0)
          if SUM_MMA then accL:fill(0.0) end
        end
        if PERSIST then -- the previous tile's state
          if not TOV then clear_o() end
          for r = 1, 2 do
            mx[r].value = -math.huge
            sum[r].value = 0.0
          end
        end
        st.cq = st.cq or P.make_pipeline_state(P.PipelineUserType.Consumer, QST)
        local cq = st.cq
        pipeQ:consumer_wait(cq)
        -- (persistent) Q is free once the tile's last S is done: the producer loads
        -- the next tile's during the last P V and the epilogue
        local function release_q()
          pipeQ:consumer_release(cq)
          cq:advance()
        end
        st.ck = st.ck or P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES)
        st.cv = st.cv or P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES)
        local ck, cv = st.ck, st.cv
        -- S = Q K^T for the K tile in stage st, issued (not waited for); (cfg.narrow_diag)
        -- nar (a Lua value): S's first BN / 2 columns only
        local function issue_s(s, nar)
          local function go(mma, acc, q, k, ks)
            A.warpgroup_fence_operand(acc)
            A.warpgroup_fence()
            for kb = 0, D / 16 - 1 do
              mma:set(wg.Field.ACCUMULATE, kb > 0)
              cute.gemm(mma, acc, QST > 1 and q[{ _, _, kb, cq.index }] or q[{ _, _, kb }], k[{ _, _, kb, ks }], acc)
            end
            A.warpgroup_commit_group()
          end
          if nar then go(NW.mma, NW.acc, NW.q, NW.k, 2 * s) else go(mmaS, accS, tSsQ, tSsK, s) end
        end
        -- (cfg.narrow_diag) once S is done: a half-width S's values into accS's first
        -- BN / 4 (its first BN / 2 columns; the rest are masked)
        local function s_done(nar)
          if nar then
            A.warpgroup_fence_operand(NW.acc)
            for i = 0, ns / 2 - 1 do accS[i] = NW.acc[i] end
          end
        end
        -- (cfg.narrow_diag) whether none of this warpgroup's rows keeps a key of block
        -- n's second half (a run-time bool; nil without it or where unmasked): its last
        -- row's last key (the diagonal's, or the sequence's) is in the first half. Such a
        -- block is the warpgroup's last (the next block's keys are past its rows), and
        -- the tile's (the other warpgroup's rows, 64 further, end within this block)
        local function narrow_at(n, masked)
          if NW and masked then return cute.min(q0 + me * 64 + 63 + off + right, Sk.value - 1) < n * BN + BN / 2 end
          return nil
        end
        -- O += P V for the V tile in stage st, issued; (cfg.narrow_diag) nar: nil, or
        -- a run-time bool: P's first BN / 2 columns only where it holds (the rest are 0)
        local function issue_o(s, nar)
          local function go(nk)
            A.warpgroup_fence_operand(accO)
            A.warpgroup_fence()
            for kb = 0, nk - 1 do
              mmaO:set(wg.Field.ACCUMULATE, true)
              cute.gemm(mmaO, accO, tOrP[{ _, _, kb }], tOsV[{ _, _, kb, s }], accO)
            end
            if SUM_MMA then
              A.warpgroup_fence_operand(accL)
              for kb = 0, nk - 1 do
                mmaL:set(wg.Field.ACCUMULATE, true)
                cute.gemm(mmaL, accL, tOrP[{ _, _, kb }], tLsOnes[{ _, _, kb }], accL)
              end
            end
            A.warpgroup_commit_group()
          end
          if nar then go(BN / 32) else go(BN / 16) end
        end
        -- the mask of key block n (keys past the sequence's end, outside the window
        -- around the diagonal as -inf), only on the blocks that cross an edge: a
        -- bound a row (keys below hi, and from lo where the block crosses the
        -- window's left edge), against which each value compares its column offset,
        -- a constant (one compare a value on a causal diagonal block)
        -- (cfg.half_masked) returns 1 in `narrow` where every row of the warp keeps
        -- no key of the block's second half (a causal diagonal block's first rows)
        local function mask(n)
          local n0 = n * BN
          local edge = (n0 + BN > Sk.value) or (n0 + (BN - 1) > q0 + off + right)
          local left_edge = false
          if WINDOW then -- (cfg.window: a left edge; without one the kernel has no code for it)
            left_edge = n0 < q_last + off - left
            edge = edge or left_edge
          end
          local narrow = HALF and cute.var(cute.i32, 0)
          if edge then
            local key0 = n0 + col0
            local hi, lo = {}, {}
            for r = 1, 2 do
              local qi = q0 + row_of[r]
              hi[r] = cute.min(Sk.value, qi + off + right + 1) - key0
              lo[r] = qi + off - left - key0
            end
            if HALF then
              -- (a key's column in the block is col0 + its delta: none from BN / 2 is kept)
              local ends = cute.and_(hi[1] + col0 <= BN / 2, hi[2] + col0 <= BN / 2)
              if cute.vote_all(ends) then narrow.value = 1 end
            end
            local function apply(with_lo)
              for i = 0, ns - 1 do
                local r, d = row_index(i), DELTA[i + 1]
                local keep = hi[r] > d
                if with_lo then keep = keep and (lo[r] <= d) end
                accS[i] = cute.where(keep, accS[i], -math.huge)
              end
            end
            if left_edge then apply(true) else apply(false) end -- (false, a Lua value, without a window)
          end
          return narrow
        end
        -- the online softmax of S (in accS): P = exp2(S scale - max) in place, the
        -- running max and sum updated; returns the factors for O's two rows
        -- (half: the values of the block's second half are all masked, their P 0
        -- without exponentials)
        local function softmax(half)
          local scale_o, moved = {}, {}
          for r = 0, 1 do
            local mine = {}
            for i = 0, ns - 1 do
              if row_index(i) == r + 1 then
                if half and DELTA[i + 1] >= BN / 2 then accS[i] = 0.0 else mine[#mine + 1] = i end
              end
            end
            local m = tree(mine, function(i) return accS[i] end, cute.max)
            m = cute.max(m, cute.shuffle_xor(m, 1))
            m = cute.max(m, cute.shuffle_xor(m, 2))
            local m_new
            if LAZY then
              -- config.lazy_rescale: the running max moves only when this block's row
              -- max passes it by more than 8 (log2 units); P's values then reach 2^8,
              -- and O and the sum, rescaled together, stay exact
              local m_blk = m * scale_log2
              m_new = cute.where(m_blk > mx[r + 1].value + 8.0, m_blk, mx[r + 1].value)
              moved[r + 1] = m_new ~= mx[r + 1].value
            else
              m_new = cute.max(mx[r + 1].value, m * scale_log2)
            end
            -- a row with no key yet keeps -inf: exp2's base is then 0, not -inf
            local base = cute.where(m_new == -math.huge, 0.0, m_new)
            scale_o[r + 1] = cute.exp2(mx[r + 1].value - base, { fast = true })
            mx[r + 1].value = m_new
            for k, i in ipairs(mine) do
              local x = cute.fma(accS[i], scale_log2, -base)
              -- config.poly_exp2: of each 8 values, the first POLY8 by the polynomial
              -- (the FMA pipe), the rest by ex2 (the MUFU's, 16 a clock an SM)
              accS[i] = ((k - 1) % 8 < POLY8) and exp2_poly(x) or cute.exp2(x, { fast = true })
            end
            if not SUM_MMA then
              local s = tree(mine, function(i) return accS[i] end, function(x, y) return x + y end)
              sum[r + 1].value = cute.fma(sum[r + 1].value, scale_o[r + 1], s)
            end
          end
          -- (lazy: whether any row of the warp moved its max, so O needs rescaling)
          if LAZY then return scale_o, cute.vote_any(cute.or_(moved[1], moved[2])) end
          return scale_o
        end
        local function to_p()
          for i = 0, ns - 1 do tOrP[i] = accS[i]:to(dt) end
        end
        -- block n's mask (where masked) and softmax; returns softmax's. cfg.half_masked
        -- (M.half_masked_by_default): a warp whose rows keep no key of the block's
        -- second half skips that half's exponentials (its P there is 0)
        local function mask_softmax(n, masked)
          if not masked then return softmax() end
          local narrow = mask(n)
          if not HALF then return softmax() end
          -- (the factors as values: a table may not be set in a run-time branch; moved,
          -- lazy rescaling's vote, false without it)
          local function factors(half)
            local so, mv = softmax(half)
            return so[1], so[2], mv or false
          end
          local s1, s2, moved
          if narrow.value ~= 0 then s1, s2, moved = factors(true) else s1, s2, moved = factors() end
          return { s1, s2 }, moved
        end

        if n_hi > n_lo then
          if PINGPONG and me == 1 and not PERSIST then cute.barrier(1, consumers, "arrive") end -- warpgroup 0 starts
          -- (cfg.narrow_diag) whether the P V in flight or next is at half width
          local pv_nar = NW and cute.var(cute.i32, 0)
          local function set_pv_nar(nar)
            if nar ~= nil then
              if nar then pv_nar.value = 1 else pv_nar.value = 0 end
            end
          end
          local function pv_narrow() if NW then return pv_nar.value ~= 0 end end
          -- the first block: S, its softmax, P (O is still zero: no rescale)
          local function first_s(nar)
            pipeK:consumer_wait(ck)
            my_turn()
            issue_s(ck.index, nar)
            their_turn()
          end
          if NW then
            -- (cfg.narrow_diag: each choice with its wait, so that no wgmma is in flight
            -- where the branches join, which makes ptxas serialize them, C7515)
            local function first_nw(nar)
              first_s(nar)
              A.warpgroup_wait_group(0)
              s_done(nar)
            end
            local nar0 = narrow_at(n_lo, true)
            if nar0 then first_nw(true) else first_nw(false) end
            set_pv_nar(nar0)
          else
            if not (TOV and ahead) then first_s() end -- (ahead: issued with the previous tile's last P V)
            A.warpgroup_wait_group(0)
          end
          A.warpgroup_fence_operand(accS)
          if TOV then clear_o() end
          pipeK:consumer_release(ck)
          ck:advance()
          mask_softmax(n_lo, true)
          to_p()
          -- then each block's S is issued before the previous block's P V, and its
          -- softmax runs while that P V is in flight (masked: whether block n may
          -- cross an edge, its mask then tested at run time)
          -- ((cfg.narrow_diag) nar, a Lua value: whether S and P V are at half width)
          local function body(n, masked, nar)
            pipeK:consumer_wait(ck)
            local function turn()
              if cfg.s_early and PINGPONG then
                -- cfg.s_early (ping-pong; M.s_early_by_default): S issued as soon as K
                -- is in, before the turn, which then holds only the previous block's
                -- P V (without ping-pong there is no turn: the same code, as the name says)
                issue_s(ck.index, nar)
                pipeV:consumer_wait(cv)
                my_turn()
              else
                pipeV:consumer_wait(cv)
                my_turn()
                issue_s(ck.index, nar)
              end
              issue_o(cv.index)
              their_turn()
              A.warpgroup_wait_group(1) -- S is done; P V may be in flight
              s_done(nar)
            end
            turn()
            set_pv_nar(nar)
            A.warpgroup_fence_operand(accS)
            if not cfg.late_k then
              pipeK:consumer_release(ck)
              ck:advance()
            end
            local scale_o, rescale = mask_softmax(n, masked)
            if cfg.late_k then
              -- cfg.late_k (opt-in): K's stage released after the softmax, its arrive
              -- predicated on the row sums (true for any sum of exponentials, NaN
              -- included). ptxas moves P V's wait up to the synchronising instruction
              -- before it (the mask's branch join, K's release): with the arrive here
              -- every exponential lies between the two waits, yet on the H200 this
              -- measured 0.95-1.03x (docs/attention.md, "K released after the softmax")
              local after = cute.not_((sum[1].value + sum[2].value) < -1.0)
              cute.sync_warp()
              cute.if_(cute.and_(A.elect_one(), after), function() A.mbarrier_arrive(pipeK:empty_barrier(ck.index)) end)
              ck:advance()
            end
            A.warpgroup_wait_group(0) -- P V is done: P and O are free
            A.warpgroup_fence_operand(accO)
            pipeV:consumer_release(cv)
            cv:advance()
            local function rescale_o()
              for i = 0, no - 1 do accO[i] = accO[i] * scale_o[row_index(i)] end
              if SUM_MMA then
                A.warpgroup_fence_operand(accL)
                for i = 0, 3 do accL[i] = accL[i] * scale_o[row_index(i)] end
              end
            end
            -- cfg.early_p (the default under lazy rescaling at d 64 and 128): P
            -- converted before O's rescale (a branch under lazy rescaling), so that
            -- ptxas interleaves the conversions with the last exponentials rather
            -- than issue them after the branch (M.early_p_by_default)
            if cfg.early_p then to_p() end
            if not LAZY or rescale then rescale_o() end
            if not cfg.early_p then to_p() end
          end
          -- (cfg.narrow_diag) last: the tile's last block, where a warpgroup may narrow;
          -- the whole block in each branch, so that no wait is hoisted to their join
          local function block(n, masked, last)
            local nar = narrow_at(n, masked and last)
            if nar == nil then body(n, masked) elseif nar then body(n, masked, true) else body(n, masked, false) end
          end
          -- the masked blocks from n0 on; (cfg.narrow_diag) the last apart, the only one
          -- where a warpgroup may narrow (narrow_at), so that the loop has no choice in it
          local function masked_blocks(n0)
            if NW then
              for n in cute.range(n0, n_hi - 1) do block(n, true) end
              if n_hi - 1 >= n0 then block(n_hi - 1, true, true) end
            else
              for n in cute.range(n0, n_hi) do block(n, true) end
            end
          end
          if UNMASKED_LOOP then
            -- cfg.unmasked_loop (the default at d 64 and 128): the blocks before the
            -- first that crosses the sequence's end or the right bound (causal: the
            -- diagonal) in a loop of their own, without the mask's compares and selects
            -- and its branch; the rest as before
            local split = cute.min(cute.max(cute.min(Sk.value / BN, (q0 + off + right + 1) / BN), n_lo + 1), n_hi)
            for n in cute.range(n_lo + 1, split) do block(n, false) end
            masked_blocks(split)
          else
            masked_blocks(n_lo + 1)
          end
          if PERSIST then release_q() end
          -- the last block's P V (TOV: with the next tile's first S, its Q and K waited
          -- for first; the P V's group completes before the S's). Without a next tile
          -- the S is issued all the same, on whatever Q and K the stages hold, and
          -- drained at once: a wgmma issued under a run-time branch, after another in
          -- the same stage, makes ptxas serialize every wgmma of the kernel (C7515)
          pipeV:consumer_wait(cv)
          if TOV and nxt then
            pipeQ:consumer_wait(cq) -- (release_q advanced cq to the next tile's Q)
            pipeK:consumer_wait(ck)
          end
          my_turn()
          issue_o(cv.index, pv_narrow())
          if TOV then issue_s(ck.index) end
          their_turn()
          if TOV and nxt then A.warpgroup_wait_group(1) else A.warpgroup_wait_group(0) end
          A.warpgroup_fence_operand(accO)
          pipeV:consumer_release(cv)
          cv:advance()
        end
        if PERSIST and n_hi <= n_lo then
          if TOV then clear_o() end
          release_q()
        end
        -- the epilogue: the row sums across the quad, O / sum, LSE
        local inv = {}
        if SUM_MMA then A.warpgroup_fence_operand(accL) end
        for r = 0, 1 do
          local s
          if SUM_MMA then
            s = accL[2 * r] -- (the whole row's: every column of P times ones)
          else
            s = sum[r + 1].value
            s = s + cute.shuffle_xor(s, 1)
            s = s + cute.shuffle_xor(s, 2)
          end
          local empty = s == 0.0
          inv[r + 1] = cute.where(empty, 0.0, cute.rcp(s))
          local lse = cute.where(empty, -math.huge, (mx[r + 1].value + cute.log2(s)) * LN2)
          local row = q0 + row_of[r + 1]
          if ct % 4 == 0 and row < Sq.value then
            LSE[{ w.bt, w.h, w.q_start.value + row }] = lse
          end
        end
        local gO, tOgO = o_tile(w, q0)
        local out = cute.make_fragment_like(accO, dt)
        for i = 0, no - 1 do out[i] = (accO[i] * inv[row_index(i)]):to(dt) end
        store_o(out, w, q0, Sq, gO, tOgO)
      end
      if PERSIST then
        local st = { cq = P.make_pipeline_state(P.PipelineUserType.Consumer, QST),
          ck = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES),
          cv = P.make_pipeline_state(P.PipelineUserType.Consumer, STAGES) }
        if PINGPONG and me == 1 then cute.barrier(1, consumers, "arrive") end -- warpgroup 0 starts
        -- (TOV) whether the tile's first S was issued with the previous tile's last P V
        local ahead = TOV and cute.var(cute.i32, 0)
        for t in cute.range(first, total, step) do
          local w = tile_of(t)
          if TOV then
            -- the next tile's first S goes with this one's last P V when both have key blocks
            local nxt = cute.var(cute.i32, 0)
            if is_live(w) then
              if w.n_hi > w.n_lo and t + step < total then
                local wn = tile_of(t + step)
                if is_live(wn) and wn.n_hi > wn.n_lo then nxt.value = 1 end
              end
              consume(w, st, ahead.value ~= 0, nxt.value ~= 0)
            end
            ahead.value = nxt.value
          elseif is_live(w) then
            consume(w, st)
          end
        end
      elseif live then
        consume(w0, {})
      end
      -- (cfg.o_tma) the shared memory stays until the last store has read it
      if O_TMA and lt == 0 then A.cp_async_bulk_wait_group(0, true) end
    end
  end, { arch = "sm_90a", trace_key = trace_key, preprocess = true, ftz = true })
end

--- The kernel for a configuration {dtype, d, bm, bn, stages, varlen,
-- pingpong, persistent, lpt}.
-- @param cfg the configuration
-- @return the cute.kernel
-- @usage local k = M.kernel({ dtype = "bf16", d = 128, bm = 128, bn = 128, stages = 2 })
function M.kernel(cfg)
  local key = kernel_name(cfg) .. ",stages" .. cfg.stages
  local k = kernels[key]
  if not k then
    k = build(cfg, "cute.lib.attention_sm90:" .. key)
    kernels[key] = k
  end
  return k
end

-- The TMA descriptor of a (B, S, H, D) view t: dimensions (D, S, H, B), a box
-- of 64 x rows x 1 x 1 with the 128-byte swizzle, zero fill past the ends.
local function descriptor(t, rows)
  if t.fake then return require("ffi").new("CuteTmaDesc") end
  local sh, st = t.layout.shape, t.layout.stride
  local by = t.dtype.bytes
  return cute.tma_descriptor { dtype = t.dtype, address = t, dims = { sh[4], sh[2], sh[3], sh[1] },
    strides = { st[2] * by, st[3] * by, st[1] * by }, box = { 64, rows, 1, 1 }, swizzle = "128B", oob = "zero" }
end

-- A view of tensor t with another layout (device or fake).
local function view(t, shape, stride)
  local L = require "cute.layout"
  if t.fake then
    return require("cute.tensor").fake_tensor(t.dtype, shape, L.make_layout(shape, stride), { align = t:alignment() })
  end
  return require("cute.tensor").from_ptr(t:data_ptr(), t.dtype, L.make_layout(shape, stride))
end

--- This module's problem from cute.lib.attention's (its `problem` table: q, k,
-- v, o, lse tensors in the user's shapes, window {left, right} with -1
-- unbounded, varlen offsets): the (B, S, H, D) views q4, k4, v4, o4 (a packed
-- batch is B = 1, S = its total), the (B, H, S) view lse3, the window as
-- left/right key counts (math.huge: unbounded), cu_q and cu_k.
-- @param p cute.lib.attention's problem
-- @return this module's problem
-- @usage local pr = M.views(cute.lib.attention.problem(Q, K, V, O, opts))
function M.views(p)
  local L = require "cute.layout"
  local function v4(t)
    local s, d = L.shape(t.layout), L.stride(t.layout)
    if #s == 4 then return t end
    return view(t, { 1, s[1], s[2], s[3] }, { s[1] * d[1], d[1], d[2], d[3] })
  end
  local lse = p.lse
  if p.varlen then
    local s, d = L.shape(lse.layout), L.stride(lse.layout)
    lse = view(lse, { 1, s[1], s[2] }, { s[1] * d[1], d[1], d[2] })
  end
  local w = p.window or { -1, -1 }
  local function bound(x) return (x == nil or x < 0) and math.huge or x end
  local right = bound(w[2])
  if p.causal then right = math.min(right, 0) end
  local dt = p.dtype
  return { dtype = type(dt) == "table" and dt.name or dt, d = p.d, batch = p.batch, hq = p.hq, hkv = p.hkv, sq = p.sq,
    sk = p.sk, scale = p.scale, left = bound(w[1]), right = right, q4 = v4(p.q), k4 = v4(p.k), v4 = v4(p.v),
    o4 = v4(p.o), lse3 = lse, cu_q = p.varlen and p.cu_seqlens_q or nil, cu_k = p.varlen and p.cu_seqlens_k or nil }
end

--- Why this kernel cannot take a problem (nil when it can).
-- @param pr the problem (cute.lib.attention's normalised table)
-- @return a sentence, or nil
-- @usage local why = M.unsupported(problem)
function M.unsupported(pr)
  if pr.dtype ~= "bf16" and pr.dtype ~= "f16" then return "its inputs are " .. pr.dtype .. " (bf16 or f16 only)" end
  if pr.d ~= 64 and pr.d ~= 128 and pr.d ~= 256 then
    return string.format("its head dimension is %d (64, 128 or 256)", pr.d)
  end
  for _, x in ipairs { { "Q", pr.q4 }, { "K", pr.k4 }, { "V", pr.v4 } } do
    local t = x[2]
    local st = t.layout.stride
    if st[4] ~= 1 then return x[1] .. "'s head dimension is not contiguous" end
    for i = 1, 3 do
      if (st[i] * t.dtype.bytes) % 16 ~= 0 then
        return string.format("%s's strides are not multiples of 16 bytes (TMA's rule)", x[1])
      end
    end
    if not t.fake and t:alignment() < 16 then return x[1] .. " is not 16-byte aligned (TMA's rule)" end
  end
  return nil
end

-- Streaming multiprocessors of the device (132, an H100 SXM's, when there is none).
local function sm_count()
  local ok, info = pcall(cute.device_info)
  return ok and type(info) == "table" and info.sm_count or 132
end
M.sm_count = sm_count

-- The fields of the Hopper kernel's opts.config.
M.CONFIG_KEYS = { "bm", "bn", "stages", "pingpong", "persistent", "lpt", "lpt_group", "max_ctas", "o_vec",
  "uniform_desc", "lazy_rescale", "poly_exp2", "sum_mma", "ctas_per_sm", "q_stages", "tile_overlap", "o_tma",
  "unmasked_loop", "late_k", "early_p", "wait_ns", "s_early", "half_masked", "narrow_diag" }
-- Those of them that plan checks to be booleans (bench/attention_config.lua reads them too).
M.BOOLEAN_CONFIG_KEYS = { "o_vec", "uniform_desc", "lazy_rescale", "sum_mma", "tile_overlap", "o_tma",
  "unmasked_loop", "late_k", "early_p", "s_early", "half_masked", "narrow_diag" }

--- The (batch, head) pairs of a group of the persistent grid's longest-first
-- order (config.lpt): as many as the K and V of their KV heads fit in half the
-- L2 (the query heads of a KV head share them), a whole number of KV heads'
-- query heads, all the pairs when they fit. One order over every pair would
-- take the last query block of each pair, then the next-to-last of each, ...:
-- where the pairs' K and V exceed the L2, each pass reads them again from
-- memory (at b32 h16 s512 d128 causal on the H200, 2026-11-29, ncu: 457 MB
-- moved where Q, K, V and O are 268 MB; L2 hit rate 25%).
-- @param pr the problem (M.plan's)
-- @param l2_bytes the L2's size in bytes (default: the device's; 50 MiB, an H100's or
-- H200's, without one or on the simulator, which has none)
-- @return the pairs a group
-- @usage M.lpt_group(problem) -- 100 at b32 h16 s512 d128 bf16 with a 50 MiB L2
function M.lpt_group(pr, l2_bytes)
  if not l2_bytes then
    local ok, info = pcall(cute.device_info)
    l2_bytes = ok and type(info) == "table" and (info.l2_bytes or 0) > 0 and info.l2_bytes or 50 * 2 ^ 20
  end
  local ratio = pr.hq / pr.hkv
  local kv = 2 * pr.sk * pr.d * cute.dtype.get(pr.dtype).bytes -- (K and V of a KV head of a batch)
  local all = pr.hq * pr.batch
  return math.min(all, math.max(1, math.floor(l2_bytes / 2 / kv)) * ratio)
end

-- A tile's cost beyond its key blocks (Q's load, the epilogue's O), in key
-- blocks: lpt_balanced's model.
local TILE_OVERHEAD = 2
-- The most tiles lpt_balanced models (its cost grows with the tiles over the group).
local BALANCE_MOST_TILES = 1e7
-- lpt_balanced's answers by their inputs (a plan not cached asks again), at most 256
local balanced, nbalanced = {}, 0

--- The group of the persistent grid's longest-first order whose static walk
-- (CTA c takes tiles c, c + ctas, ... in the kernel's order) loads the CTAs
-- most evenly, among the groups of whole KV heads' query heads up to `most`
-- (M.lpt_group's L2 bound); on a tie the smaller (a pair's K and V read again sooner, from the L2).
-- A tile costs its key blocks (under the causal mask or right bound, with no
-- left bound) plus TILE_OVERHEAD. The walk is static, so a group that makes
-- the long tiles fall on the same CTAs costs the whole launch: at b32 h16 s512
-- d256 causal on the H200 (2026-11-29, seventh session; 64-key blocks, 132
-- CTAs), groups of 50 (the L2 bound) leave the most loaded CTA 1.18x the mean
-- by this model, groups of 4 or 12 1.03x: 12 measured 1.07-1.09x faster than
-- 50, and the default (4) 1.07x in the suite; at d 128 and 64 groups of 20 and
-- 40 (1.06x, 1.02x) measured 1.02-1.03x faster than 100 and 200 (1.16x, 1.05x),
-- the defaults (4, 12) 1.04x and 1.03x. Not for varlen batches (their tiles'
-- costs differ by sequence): `most` then.
-- @param pr the problem (M.plan's)
-- @param bm the tile's query rows
-- @param bn the tile's key block
-- @param ctas the persistent grid's CTAs
-- @param most the largest group (M.lpt_group's)
-- @return the pairs a group, and the model's most loaded CTA over the mean
-- @usage local g = M.lpt_balanced(problem, 128, 64, 132, 50) -- 4 at b32 h16 s512 d256 causal
function M.lpt_balanced(pr, bm, bn, ctas, most)
  local all, ratio = pr.hq * pr.batch, pr.hq / pr.hkv
  local mb = math.ceil(pr.sq / bm)
  local tiles = mb * all
  if pr.cu_q ~= nil or tiles > BALANCE_MOST_TILES then return most end
  local key = table.concat({ pr.hq, pr.hkv, pr.batch, pr.sq, pr.sk, pr.right, bm, bn, ctas, most }, ",")
  local known = balanced[key]
  if known then return known[1], known[2] end
  local cost, sum = {}, 0
  local shift, nk = pr.sk - pr.sq, math.ceil(pr.sk / bn)
  for m = 0, mb - 1 do
    local last = math.min((m + 1) * bm, pr.sq) - 1
    local hi = nk
    if pr.right < math.huge then hi = math.max(0, math.min(nk, math.floor((last + shift + pr.right) / bn) + 1)) end
    cost[m] = hi + TILE_OVERHEAD
    sum = sum + cost[m] * all
  end
  ctas = math.min(ctas, tiles)
  -- the walk in runs of equal tiles (a group's pairs at one query block): a
  -- run of n tiles from tile t adds its cost to CTAs t, t + 1, ... (mod ctas),
  -- kept as whole rounds plus a difference array over the CTAs
  local diff = {}
  local function add(t, n, w, base)
    base = base + math.floor(n / ctas) * w
    local a, r = t % ctas, n % ctas
    if r > 0 then
      diff[a] = diff[a] + w
      if a + r <= ctas then
        diff[a + r] = diff[a + r] - w
      else
        diff[ctas] = diff[ctas] - w
        diff[0] = diff[0] + w
        diff[a + r - ctas] = diff[a + r - ctas] - w
      end
    end
    return base
  end
  local best, best_g = math.huge, most
  for j = math.floor(most / ratio), 1, -1 do
    local g = j * ratio
    for c = 0, ctas do diff[c] = 0 end
    local base, t = 0, 0
    for g0 = 0, all - 1, g do -- the kernel's tile_of: a group's last query blocks first, its pairs side by side
      local n = math.min(g, all - g0)
      for m = mb - 1, 0, -1 do
        base = add(t, n, cost[m], base)
        t = t + n
      end
    end
    local worst, run = 0, 0
    for c = 0, ctas - 1 do
      run = run + diff[c]
      worst = math.max(worst, run)
    end
    worst = worst + base
    if worst <= best then best, best_g = worst, g end
  end
  if nbalanced >= 256 then balanced, nbalanced = {}, 0 end
  balanced[key], nbalanced = { best_g, best / (sum / ctas) }, nbalanced + 1
  return best_g, best / (sum / ctas)
end

--- Why O's full tiles cannot leave in 16-byte stores (config.o_vec, the
-- default where they can), or nil: each row of O must start on 16 bytes.
-- Measured on the H200 (2026-11-29, bench/attention_sm90_probe.lua with
-- AB=o_vec=1, the two alternating in one run): 1.06-1.14x at S 512 (d 128, 256),
-- 1.02-1.07x at 2048, within the spread (0.99-1.02x) from 8192 up.
-- @param o4 O's (B, S, H, D) view
-- @return a sentence, or nil
-- @usage local why = M.o_vec_unsupported(problem.o4)
function M.o_vec_unsupported(o4)
  local st, bytes = o4.layout.stride, o4.dtype.bytes
  for i = 1, 3 do
    if (st[i] * bytes) % 16 ~= 0 then return "O's strides are not multiples of 16 bytes" end
  end
  if not o4.fake and o4:alignment() < 16 then return "O is not 16-byte aligned" end
  return nil
end

--- Whether a problem gets the persistent grid when opts.config does not say:
-- measured on the H200 (2026-11-28, bench/attention_sm90_probe.lua time, the
-- two grids alternating in one run) it gains at short sequences, where a
-- CTA's tile is short and launching and draining CTAs costs most: without a
-- mask 1.15x/1.04x/1.00x (d 64) and 1.14x/1.06x/1.02x (d 128) at S 512/1024/2048,
-- 1.00x/0.99x at 8192; causal 1.19x (d 64) and 1.01x (d 128) at 512, but
-- 1.03x/0.90x at 1024 and 0.84-0.95x beyond; head dim 256 (64-key blocks; on
-- 2026-11-29) 1.09x/1.04x at 512 (without a mask, causal) and 0.68-0.99x beyond.
-- With the longest-first groups balanced (lpt_balanced; 2026-11-29, the suite's
-- rows against a copy of this module taking it, two rounds) d 128 causal gains
-- 1.08x / 1.10x at S 2048 (the probe 1.11x at 1024), 1.01x / 1.02x at 8192; d 64
-- causal 0.94x at 2048, 1.00x at 8192; d 256 causal 0.92x at 8192.
-- So: fixed lengths (varlen and windows unmeasured), at least two tiles an SM,
-- and keys up to 2048 without a mask or at d 128 with a causal one, 1024 at
-- d 64 causal, 512 at d 256.
-- @param pr the problem (as M.plan's)
-- @param bm the query block
-- @return true to take the persistent grid
-- @usage if M.persistent_by_default(pr, 128) then ... end
function M.persistent_by_default(pr, bm)
  if pr.cu_q ~= nil or pr.left < math.huge then return false end
  local causal = pr.right < math.huge
  if causal and pr.right ~= 0 then return false end -- a window on the right only
  local tiles = math.ceil(pr.sq / bm) * pr.hq * pr.batch
  if tiles < 2 * sm_count() then return false end
  local limit = pr.d == 256 and 512 or (causal and pr.d == 64) and 1024 or 2048
  return pr.sk <= limit
end

--- Whether the persistent grid takes Q in two buffers (config.q_stages = 2) when
-- opts.config does not say: the next tile's Q then loads while this tile's
-- products still read the other, where one buffer waited for the tile's last S.
-- Measured on the H200 (2026-11-29, bench/attention_sm90_probe.lua time with
-- AB="persistent=1,q_stages=2", alternating rounds): d 64 1.05x / 1.05x / 1.03x at
-- S 512 / 1024 / 2048, causal 1.02x at 512 and 1024; d 128 in 128-key blocks (176
-- and two Qs exceed the shared memory) 1.06x / 1.02x / 1.00x without a mask, causal
-- 0.98-1.01x; 3 K/V stages 1.00-1.01x with one Q. So: one CTA an SM at d 64, and d 128
-- without a mask up to 1024 keys (d 256's two Qs do not fit beside its rings).
-- @param pr the problem (as M.plan's)
-- @param cfg the configuration planned so far (persistent, ctas_per_sm)
-- @return true to take two Q buffers
-- @usage if M.q_stages_by_default(pr, cfg) then cfg.q_stages = 2 end
function M.q_stages_by_default(pr, cfg)
  if not cfg.persistent or (cfg.ctas_per_sm or 1) > 1 then return false end
  if pr.d == 64 then return true end
  return pr.d == 128 and pr.right == math.huge and pr.left == math.huge and pr.sk <= 1024
end

--- Whether the persistent grid overlaps tiles (config.tile_overlap: a tile's
-- last P V and the next tile's first S in one turn) when opts.config does not
-- say. Measured on the H200 (2026-11-29, ninth session, the attention suite's
-- rows against a copy with it): d 64 without a mask at S 2048 (192-row tiles,
-- two Qs) 1.034x / 1.037x in two rounds, and 1.015x / 1.020x with O by TMA (the
-- default since); S 512 (128-row ping-pong tiles) 0.99x; under a causal mask and
-- at d 128 and 256 0.88-0.97x in the suite, 0.90-1.03x in the probe. So: d 64
-- without a mask in 192-row tiles (1025 to 2048 keys, where the grid is persistent).
-- Not at 1024 keys and fewer (2026-11-30, fifteenth session, `bench/tail_probe.lua`
-- from rest, three rounds each way at b16 h32 S 1024: 0.990-0.999x with it; at S 512
-- in 192-row tiles, M.short_tiles_by_default, 0.96x).
-- @param pr the problem (as M.plan's)
-- @param cfg the configuration planned so far (persistent, bm)
-- @return true to overlap tiles
-- @usage if M.tile_overlap_by_default(pr, cfg) then cfg.tile_overlap = true end
function M.tile_overlap_by_default(pr, cfg)
  return cfg.persistent and pr.d == 64 and cfg.bm == 192 and pr.right == math.huge and pr.left == math.huge
    and pr.sk > 1024 or false
end

--- Whether a problem takes 192-row tiles of three consumer warpgroups (not
-- ping-pong) on the persistent grid where M.pick_config gave 128-row ping-pong
-- ones, when opts.config names no tile, schedule or grid (nor a ping-pong
-- variant): head dim 64 without a mask up to 512 keys, where the persistent grid
-- is the default either way and the 192-row tiles pad the queries by at
-- most 12.5% more than 128-row ones (at S 512 the last of three tiles has 128
-- rows: its third warpgroup's work is thrown away). Measured on the H200
-- (2026-11-30, fifteenth session, `bench/tail_probe.lua` from rest, two rounds):
-- at b32 h32 S 512 367-370 TFLOP/s in the ping-pong tiles, 379-382 in the
-- 192-row ones without tile overlap, 364-366 with it (cuDNN 377-378 in the same
-- runs); a warpgroup with no row in the tile skipping its work (a config of the
-- experiment's) did not gain (377-379): the three chains overlap, the third's
-- products cost the others little. The suite's row against the module before,
-- alternating processes, three rounds: 1.013-1.018x (372.7-373.5 TFLOP/s
-- against 366.8-367.9). Under a causal mask the 192-row tiles lose (217-223
-- against 249-251).
-- @param pr the problem (as M.plan's)
-- @param given opts.config
-- @return true to take 192-row tiles
-- @usage if M.short_tiles_by_default(pr, {}) then ... end
function M.short_tiles_by_default(pr, given)
  for _, k in ipairs { "bm", "bn", "pingpong", "persistent", "ctas_per_sm", "s_early", "narrow_diag" } do
    if given[k] ~= nil then return false end
  end
  if pr.d ~= 64 or pr.right < math.huge or pr.left < math.huge or pr.sk > 512 then return false end
  if math.ceil(pr.sq / 192) * 192 > 1.125 * math.ceil(pr.sq / 128) * 128 then return false end
  return M.persistent_by_default(pr, 128) and M.persistent_by_default(pr, 192)
end

--- Whether O leaves through shared memory and TMA stores (config.o_tma) when
-- opts.config does not say: wherever its buffer (BM x D) fits beside Q and the
-- rings and O's rows start on 16 bytes. Measured on the H200 (2026-11-29, ninth
-- session, the attention suite's rows against a copy without it, two rounds
-- each): 1.03-1.04x at d 128 S 512 (with a causal mask or without) and d 64
-- S 2048, 1.00-1.01x on the other rows at S 512 and 2048 and (one round) 0.99-1.01x
-- from S 8192; d 256's 128-row tiles leave no room for it, nor d 128's 176-key blocks.
-- @param pr the problem (as M.plan's)
-- @param cfg the configuration planned so far (bm, bn, stages, q_stages, ctas_per_sm)
-- @return true to store O by TMA
-- @usage if M.o_tma_by_default(pr, cfg) then cfg.o_tma = true end
function M.o_tma_by_default(pr, cfg)
  -- (not with config.poly_exp2, kept as measured: beside O's buffer its 192-row tiles spill)
  if M.o_vec_unsupported(pr.o4) or (cfg.poly_exp2 or 0) > 0 then return false end
  local kib = M.smem_kib(cfg.bm, cfg.bn, cfg.stages, pr.d, cute.dtype.get(pr.dtype).bytes, cfg.q_stages or 1, true)
  return kib * (cfg.ctas_per_sm or 1) <= M.SMEM_KIB_CTA
end

--- Whether P is converted to the wgmma's type before O's rescale rather than
-- after it (config.early_p) when opts.config does not say: under lazy rescaling
-- (the rescale then a branch, which ptxas does not move the conversions above)
-- at head dims 64 and 128. With it ptxas interleaves the conversions with the
-- softmax's last exponentials, where Nsight Compute's stall samples at d 64 S 512
-- (H200, 2026-11-30) found 12% of the kernel's samples waiting between
-- back-to-back MUFU.EX2s. Measured on the H200 (2026-11-30, the attention suite's
-- rows against a copy taking it, in alternating processes): d 64 1.002-1.027x in
-- every row but one of eight (causal S 512: 0.989, 1.002, 1.004, 1.009 in four
-- rounds), d 128 causal S 2048 1.012-1.018x (four rounds); without lazy rescaling
-- (d 128 without a mask) 0.992-1.004x and at d 256 0.991-1.002x: not taken there.
-- @param pr the problem (as M.plan's)
-- @param cfg the config so far (its lazy_rescale)
-- @return true to convert P before O's rescale
-- @usage if M.early_p_by_default(pr, cfg) then cfg.early_p = true end
function M.early_p_by_default(pr, cfg)
  return cfg.lazy_rescale == true and pr.d <= 128
end

--- Whether the key blocks that cross no edge run in a loop of their own
-- (config.unmasked_loop) when opts.config does not say: at head dims 128 and 64
-- without a window's left edge, at 64 under a causal mask (or a right bound) only
-- from 1025 keys. Measured on the H200 (2026-11-29, tenth session, the attention
-- suite's rows against a copy taking it, in alternating processes): d 128
-- 1.006-1.035x at S 512 and 2048 and 1.034-1.062x at S 8192 and 16384, with a
-- causal mask or without (two rounds); d 64 1.002-1.020x without a mask and
-- 1.007-1.010x causal at S 2048 (four rounds), 0.996-1.007x causal from S 8192, and
-- 0.993 / 0.994x causal at S 512 (its short tiles: not taken there); d 256 0.995-1.032x
-- (two rounds, not taken).
-- @param pr the problem (as M.plan's)
-- @return true for the unmasked blocks' loop
-- @usage if M.unmasked_loop_by_default(pr) then cfg.unmasked_loop = true end
function M.unmasked_loop_by_default(pr)
  if pr.left < math.huge then return false end
  return pr.d == 128 or (pr.d == 64 and (pr.right == math.huge or pr.sk > 1024))
end

--- Whether the ping-pong tiles issue each block's S before the warpgroups'
-- turn (config.s_early), which then holds only the previous block's P V, when
-- opts.config does not say. Measured on the H200 (2026-11-30, thirteenth session,
-- the attention suite's rows against a copy without it, alternating processes,
-- each variant first in one round of each pair, four rounds at S 512 and 2048):
-- d 256 without a mask 1.008-1.024x at S 512 and 1.001-1.015x at 2048, causal
-- 1.002-1.007x at 512 and 1.000-1.016x at 2048; but d 256 0.985-0.992x at S 8192
-- and 16384 without a mask (two rounds), d 64 without a mask at S 512 0.992-1.008x
-- (four rounds), d 64 causal S 512 0.93x and d 128 0.96-1.02x (two rounds): not
-- taken there.
-- @param pr the problem (as M.plan's)
-- @param cfg the configuration planned so far (pingpong)
-- @return true to issue S before the turn
-- @usage if M.s_early_by_default(pr, cfg) then cfg.s_early = true end
function M.s_early_by_default(pr, cfg)
  return cfg.pingpong and pr.d == 256 and pr.left == math.huge and pr.sk <= 2048 or false
end

--- Whether a warp whose rows keep no key of a masked block's second half skips
-- that half's exponentials (config.half_masked) when opts.config does not say.
-- Measured on the H200 (2026-11-30, thirteenth session, the suite's causal rows
-- against a copy taking it, alternating processes, each variant first in one
-- round of each pair): d 256 causal S 512 1.010 / 1.013 / 1.013 / 1.014x and d 64
-- causal S 2048 (64-row tiles, three CTAs an SM) 1.003 / 1.007 / 1.011 / 1.007x in
-- four rounds; d 64 causal S 512 1.001-1.004x, d 256 causal S 2048 0.994-1.005x
-- (four rounds), d 128 causal S 512 0.98x, S 16384 1.007 / 1.010x and the other
-- causal rows 0.986-1.004x (two rounds): not taken there.
-- @param pr the problem (as M.plan's)
-- @return true to skip the half-masked warps' exponentials
-- @usage if M.half_masked_by_default(pr) then cfg.half_masked = true end
function M.half_masked_by_default(pr)
  if pr.right ~= 0 or pr.left < math.huge or pr.cu_q ~= nil then return false end
  return (pr.d == 256 and pr.sk <= 512) or (pr.d == 64 and pr.sk > 1024 and pr.sk <= 2048)
end

--- Whether the Hopper kernel takes a warpgroup's S and P V at half width in a block
-- where its rows keep none of the second half's keys (config.narrow_diag) when
-- opts.config does not say: under a causal mask (fixed lengths, no window) at head
-- dim 64 beyond 2048 keys, in ping-pong tiles on a grid of a CTA a tile (H200,
-- 2026-11-30: 1.003-1.008x at 8192 and 16384 keys; on the persistent grid at 512 keys
-- 0.91-0.92x, where its branches on the thread's warpgroup index take the descriptors
-- off the uniform datapath: docs/attention.md, "Narrow diagonals").
-- @param pr the problem
-- @param cfg the configuration so far (pingpong, persistent, tile_overlap, bn)
-- @return a boolean
-- @usage if M.narrow_diag_by_default(pr, cfg) then cfg.narrow_diag = true end
function M.narrow_diag_by_default(pr, cfg)
  if pr.right ~= 0 or pr.left < math.huge or pr.cu_q ~= nil or pr.d ~= 64 or pr.sk <= 2048 then return false end
  return (cfg.pingpong and not cfg.persistent and not cfg.tile_overlap and cfg.bn % 32 == 0) or false
end

--- The launch of a problem: {kernel, args, grid, block, config, why}, or
-- nil and why not.
-- problem fields: dtype ("bf16"/"f16"), d, batch, hq, hkv, sq, sk (the
-- longest sequences for varlen), scale, left, right (the window around the
-- diagonal in keys; math.huge or a large number when unbounded, right = 0
-- for causal), q4, k4, v4, o4 ((B, S, H, D) views), lse3 ((B, H, S) f32
-- view), cu_q, cu_k (i32 device tensors of B + 1 offsets, varlen only).
-- @param pr the problem
-- opts.config.persistent = true: a persistent grid, min(work tiles, SMs x config.ctas_per_sm) CTAs
-- (one fits an SM: the consumers' setmaxnreg takes the register file), each
-- walking the (query block, head, batch) tiles t = blockIdx.x, + gridDim.x, ...;
-- config.lpt (default: with a causal mask, a right bound and no left one) takes
-- the last query blocks first, in groups of config.lpt_group (batch, head)
-- pairs (default M.lpt_group: their K and V fit in the L2); config.max_ctas
-- caps the grid (tests: a few CTAs that walk many tiles).
-- @param opts options: config (overrides; its fields are M.CONFIG_KEYS)
-- @return the plan, or nil and a sentence
-- @usage local p = M.plan(problem, {})
function M.plan(pr, opts)
  if pr.q4 == nil then pr = M.views(pr) end
  local why = M.unsupported(pr)
  if why then return nil, why end
  local cfg = M.pick_config(pr.d, pr.right < math.huge or pr.left < math.huge, pr.sk,
    pr.left < math.huge or (pr.right ~= 0 and pr.right < math.huge))
  local given = (opts or {}).config or {}
  common.check_config_keys("cute.lib.attention", given, M.CONFIG_KEYS, "the Hopper kernel's")
  for k, v in pairs(given) do cfg[k] = v end
  for _, key in ipairs(M.BOOLEAN_CONFIG_KEYS) do
    if cfg[key] ~= nil and type(cfg[key]) ~= "boolean" then
      err.raise("attention_sm90: config.%s is %s, expected a boolean", key, tostring(cfg[key]))
    end
  end
  for _, key in ipairs { "pingpong", "persistent", "lpt" } do -- (not kernel fields of their own: above)
    if cfg[key] ~= nil and type(cfg[key]) ~= "boolean" then
      err.raise("attention_sm90: config.%s is %s, expected a boolean", key, tostring(cfg[key]))
    end
  end
  local nc = cfg.ctas_per_sm
  if nc ~= nil and (type(nc) ~= "number" or nc < 1 or nc > 4 or nc % 1 ~= 0) then
    err.raise("attention_sm90: config.ctas_per_sm is %s, expected 1 to 4", tostring(nc))
  end
  local poly = cfg.poly_exp2
  if poly ~= nil and (type(poly) ~= "number" or poly < 0 or poly > 1 or poly * 8 ~= math.floor(poly * 8)) then
    err.raise("attention_sm90: config.poly_exp2 is %s, expected a share of the exponentials in eighths (0, 0.125, "
      .. "..., 1)", tostring(poly))
  end
  cfg.wait_ns = common.wait_ns(cfg.wait_ns, "attention_sm90: config.wait_ns")
  local o_misaligned = M.o_vec_unsupported(pr.o4)
  if given.o_vec and o_misaligned then
    err.raise("attention_sm90: config.o_vec needs O's rows on 16 bytes, and %s", o_misaligned)
  end
  if given.o_vec == nil then cfg.o_vec = o_misaligned == nil end
  if cfg.o_tma and o_misaligned then
    err.raise("attention_sm90: config.o_tma needs O's rows on 16 bytes (TMA's rule), and %s", o_misaligned)
  end
  local auto_persistent = false
  if M.short_tiles_by_default(pr, given) then
    cfg.bm, cfg.pingpong, cfg.persistent, auto_persistent = 192, false, true, true
  elseif given.persistent == nil and M.persistent_by_default(pr, cfg.bm) then
    cfg.persistent, auto_persistent = true, true
  end
  -- persistent at head dim 256: 64-key blocks (80 spill: the tile loop's state does
  -- not fit next to O's 128 registers and S's 40 a thread)
  if cfg.persistent and pr.d == 256 and given.bn == nil then cfg.bn = 64 end
  -- O's buffer (config.o_tma) beside 176-key blocks at d 128 exceeds the shared memory: 128 then
  local bytes = cute.dtype.get(pr.dtype).bytes
  if cfg.o_tma and given.bn == nil and pr.d == 128
    and M.smem_kib(cfg.bm, cfg.bn, cfg.stages, pr.d, bytes, cfg.q_stages or 1, true) > M.SMEM_KIB_CTA then
    cfg.bn = 128
  end
  if given.q_stages == nil and M.q_stages_by_default(pr, cfg) then
    local bn = (pr.d == 128 and given.bn == nil) and 128 or cfg.bn -- (176-key blocks and two Qs do not fit)
    if M.smem_kib(cfg.bm, bn, cfg.stages, pr.d, bytes, 2, cfg.o_tma) <= M.SMEM_KIB_CTA then
      cfg.q_stages, cfg.bn = 2, bn
    end
  end
  if given.o_tma == nil then cfg.o_tma = M.o_tma_by_default(pr, cfg) end
  if given.tile_overlap == nil and M.tile_overlap_by_default(pr, cfg) then cfg.tile_overlap = true end
  if given.unmasked_loop == nil and M.unmasked_loop_by_default(pr) then cfg.unmasked_loop = true end
  if given.early_p == nil and M.early_p_by_default(pr, cfg) then cfg.early_p = true end
  if given.s_early == nil and M.s_early_by_default(pr, cfg) then cfg.s_early = true end
  if given.half_masked == nil and M.half_masked_by_default(pr) then cfg.half_masked = true end
  if given.narrow_diag == nil and M.narrow_diag_by_default(pr, cfg) then cfg.narrow_diag = true end
  cfg.dtype, cfg.d, cfg.varlen = pr.dtype, pr.d, pr.cu_q ~= nil
  -- a window's left edge (keys before it masked): only then does the kernel test it
  cfg.window = pr.left < math.huge or nil
  local big = 2 ^ 30
  local function clamp(x) return math.min(x, big) end
  local args = { descriptor(pr.q4, cfg.bm), descriptor(pr.k4, cfg.bn), descriptor(pr.v4, cfg.bn), pr.o4, pr.lse3,
    cute.i32(pr.sq), cute.i32(pr.sk), cute.i32(clamp(pr.left)), cute.i32(clamp(pr.right)), cute.i32(pr.hq / pr.hkv),
    cute.f32(pr.scale * LOG2E) }
  if cfg.varlen then
    args[#args + 1] = pr.cu_q
    args[#args + 1] = pr.cu_k
  end
  local mblocks = math.ceil(pr.sq / cfg.bm)
  local grid = { mblocks, pr.hq, pr.batch }
  why = string.format("sm_90a: TMA + wgmma, warp-specialised, %dx%d tiles, %d stages%s", cfg.bm, cfg.bn, cfg.stages,
    ((cfg.q_stages or 1) > 1 and ", Q in two buffers" or "") .. (cfg.tile_overlap and ", tiles overlapped" or ""))
  if cfg.o_tma then why = why .. ", O by TMA" end
  if cfg.unmasked_loop then why = why .. ", the unmasked key blocks in a loop of their own" end
  if cfg.late_k then why = why .. ", K released after the softmax" end
  if cfg.early_p then why = why .. ", P converted before O's rescale" end
  if cfg.s_early and cfg.pingpong then why = why .. ", S issued before the ping-pong turn" end
  if cfg.half_masked then
    why = why .. ", half of a block's exponentials skipped where a warp's rows keep none of its keys"
  end
  if cfg.narrow_diag then
    why = why .. ", a warpgroup's S and P V at half width where its rows keep none of a block's second half"
  end
  if cfg.persistent then
    if cfg.lpt == nil then cfg.lpt = pr.right < math.huge and pr.left == math.huge end
    local mc = cfg.max_ctas
    if mc ~= nil and (type(mc) ~= "number" or mc < 1 or mc % 1 ~= 0) then
      err.raise("attention_sm90: config.max_ctas is %s, expected a whole number from 1", tostring(mc))
    end
    local tiles = mblocks * pr.hq * pr.batch
    local sms = sm_count()
    local ctas = math.max(1, math.min(tiles, sms * (cfg.ctas_per_sm or 1), mc or math.huge))
    grid = { ctas, 1, 1 }
    local all = pr.hq * pr.batch
    local npairs = cfg.lpt_group
    if npairs ~= nil and (type(npairs) ~= "number" or npairs < 1 or npairs % 1 ~= 0 or not cfg.lpt) then
      err.raise("attention_sm90: config.lpt_group is %s, expected a whole number from 1 with config.lpt",
        tostring(npairs))
    end
    local user_group = npairs ~= nil
    if not user_group and cfg.lpt then npairs = M.lpt_balanced(pr, cfg.bm, cfg.bn, ctas, M.lpt_group(pr)) end
    npairs = math.min(all, npairs or all)
    for _, x in ipairs { mblocks, pr.hq, pr.batch, npairs } do args[#args + 1] = cute.i32(x) end
    why = string.format("%s; persistent%s: %d CTAs (%s an SM of %d) walk %d work tiles, %s", why,
      auto_persistent and " (the default for this length: config.persistent = false turns it off)" or "", ctas,
      ({ "one", "two", "three", "four" })[cfg.ctas_per_sm or 1], sms, tiles,
      cfg.lpt and ("the last query blocks first (causal: the longest tiles)" .. (npairs < all
        and string.format(" in groups of %d (batch, head) pairs%s", npairs, user_group and " (config.lpt_group)"
          or " whose K and V fit in the L2 and whose tiles spread evenly over the CTAs") or ""))
        or "a (batch, head)'s query blocks together (its K and V stay in L2)")
  elseif cfg.max_ctas ~= nil or cfg.lpt_group ~= nil then
    err.raise("attention_sm90: config.%s applies to a persistent grid; set config.persistent = true with it",
      cfg.max_ctas ~= nil and "max_ctas" or "lpt_group")
  end
  if cfg.o_tma then args[#args + 1] = descriptor(pr.o4, 64) end -- (after every other argument)
  return {
    kernel = M.kernel(cfg), args = args, grid = grid, block = 128 + cfg.bm / 64 * 128, config = cfg, why = why,
  }
end

return M
