--- cute.lib.gemv: the GEMM of a few rows (M <= 16: decode), at the memory's
-- speed.
--
--   C = alpha * A @ B + beta * C      A: M x K (K contiguous), B: K x N (K contiguous), M <= 16
--
-- A skinny GEMM reads each of B's K x N values once and uses it M times: it
-- is bound by the bandwidth of B, and a tensor-core tile of 64 or 128 rows
-- would mostly multiply zeros while its pipeline's round trips, not the
-- memory, set the pace. Two forms, both with the Hopper kernel's fused
-- epilogue (alpha, beta, bias, activation, a user function):
--
--   * SIMT (M <= SIMT_ROWS): a warp a column of C; its lanes stream column n
--     of B in 16-byte vectors, UNROLL of them in flight a lane, multiply each
--     by the same K-slice of A's rows (through L1: every warp reads the same
--     A) into f32 sums, reduced by shuffles; K's rest a vector, then an
--     element, at a time;
--   * tensor cores (more rows; build_mma below): a warp a 16 x 8 block of C
--     with mma.sync, B's columns read 256 contiguous bytes at a time.
-- bench/gemv_probe.lua measured the choice (H100: SIMT ahead at 1-2 rows,
-- the MMA form from 3 rows, where SIMT's multiply-adds become the limit).
-- Every form carries its launch bound (max_threads, the block's 256): without
-- one ptxas plans for blocks of 1024 threads, at most 64 registers a thread,
-- and issued a step's loads one or two at a time between the multiply-adds
-- that wait on them (H200, 2026-11-29: the one-row form 1.07-1.11x faster with
-- the bound and 8 vectors a step: docs/hopper.md, "The launch bound").
local cute = require "cute"
local common = require "cute.lib.common"
local err = require "cute._err"

local M = {}

M.MAX_ROWS = 16
M.SIMT_ROWS = 2 -- up to this many rows the SIMT form; more, the tensor-core form (bench/gemv_probe.lua)
local WARPS, UNROLL, VEC = 8, 8, 8 -- (VEC: 8 16-bit values = one 16-byte load)
local UNROLL_MMA = 2 -- (the tensor-core form: steps of 128 k in flight a warp)

local kernels = {}

-- A form's cute.kernel options: its launch bound (the block's 256 threads;
-- cfg.bounds = false leaves it out, cfg.min_blocks adds one: a probe's)
local function kernel_options(cfg, trace_key)
  return { trace_key = trace_key, preprocess = true, max_threads = cfg.bounds ~= false and WARPS * 32 or nil,
    min_blocks = cfg.min_blocks }
end

local function build(cfg, trace_key)
  local MR = cfg.m
  local fused = (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "") .. (cfg.fn and "_epilogue" or "")
  local sm90 = require "cute.lib.gemm_sm90"
  local u = cfg.unroll and ("_u" .. cfg.unroll) or ""
  return cute.kernel("gemv_" .. cfg.dtype .. "_m" .. MR .. u .. fused, function(A, B, C, alpha, beta, ...)
    local bias = ... -- (cfg.bias: the bias tensor)
    local K, N = A.layout.shape[2], B.layout.shape[1]
    local tid = cute.thread_idx().x
    local lane, warp = tid % 32, tid / 32
    local n = cute.block_idx().x * WARPS + warp
    local l = cute.block_idx().z
    if n < N then
      local acc = {}
      for m = 1, MR do acc[m] = cute.var(cute.f32, 0.0) end
      local Bn = B[{ n, cute._, l }]
      local rows = {}
      for m = 1, MR do rows[m] = A[{ m - 1, cute._, l }] end
      -- steps of U vectors a lane (all loads of a step issued before its
      -- multiply-adds), then of one vector, then K's rest element by element
      local function step(i, nv)
        local b = common.thread_slice_1d(Bn, i, lane, VEC, 32, nv):load()
        for m = 1, MR do
          local a = common.thread_slice_1d(rows[m], i, lane, VEC, 32, nv):load()
          local s = acc[m].value
          for e = 0, VEC * nv - 1 do s = cute.fma(a[e]:to(cute.f32), b[e]:to(cute.f32), s) end
          acc[m].value = s
        end
      end
      local U = cfg.unroll or UNROLL
      local full, vecs = K / (VEC * 32 * U), K / (VEC * 32)
      for i in cute.range(full) do step(i, U) end
      for j in cute.range(full * U, vecs) do step(j, 1) end
      for k in cute.range(vecs * (VEC * 32) + lane, K, 32) do
        local b = Bn[k]:to(cute.f32)
        for m = 1, MR do acc[m].value = cute.fma(rows[m][k]:to(cute.f32), b, acc[m].value) end
      end
      for m = 1, MR do
        local v = cute.warp_reduce_shuffle(acc[m].value, common.add) * alpha
        if lane == 0 then
          if cfg.beta then v = cute.fma(beta, C[{ m - 1, n, l }]:to(cute.f32), v) end
          if cfg.bias or cfg.act or cfg.fn then v = sm90.fused(cfg, v, bias, m - 1, n, l) end
          C[{ m - 1, n, l }] = v:to(C.dtype)
        end
      end
    end
  end, kernel_options(cfg, trace_key))
end

-- Two 16-bit values as one 32-bit register (lo in the low half), as mma.sync takes them.
local function pack2(lo, hi)
  return hi:bitcast(cute.u16):to(cute.u32):shl(16):bor(lo:bitcast(cute.u16):to(cute.u32)):bitcast(cute.i32)
end

-- One step of 32 k of this thread into the 16 x 8 accumulator acc (four
-- cute.vars): eight m16n8k16 MMAs whose k-slots {2t, 2t+1} and {2t+8, 2t+9}
-- are this thread's k 4j .. 4j+3 (A and B alike). b: the 32 values of B's
-- column, a0 and a1 those of A's rows g and g + 8.
local function mma_step(atom, acc, b, a0, a1)
  for j = 0, 7 do
    local e = 4 * j
    local c = { acc[1].value, acc[2].value, acc[3].value, acc[4].value }
    local ra = { pack2(a0[e], a0[e + 1]), pack2(a1[e], a1[e + 1]), pack2(a0[e + 2], a0[e + 3]),
      pack2(a1[e + 2], a1[e + 3]) }
    local d = cute.arch.mma_sync(atom, ra, { pack2(b[e], b[e + 1]), pack2(b[e + 2], b[e + 3]) }, c)
    for q = 1, 4 do acc[q].value = d[q] end
  end
end

-- Step kt (128 k) of thread t's 32 values of each of the 1-D tensors xs,
-- element by element, zero past K (the tail of K).
local function load_masked(xs, K, kt, t)
  local out = {}
  for q, x in ipairs(xs) do
    local vals = {}
    for e = 0, 31 do
      local k = kt * 128 + t * 32 + e
      vals[e] = cute.where(k:lt(K), x[cute.min(k, K - 1)], 0.0)
    end
    out[q] = vals
  end
  return out
end

-- C's value at (row, n, l) from the sum s: alpha s (+ beta C) through the
-- fused epilogue, in C's dtype.
local function c_value(cfg, C, s, alpha, beta, bias, row, n, l)
  local v = s * alpha
  if cfg.beta then v = cute.fma(beta, C[{ row, n, l }]:to(cute.f32), v) end
  if cfg.bias or cfg.act or cfg.fn then v = require("cute.lib.gemm_sm90").fused(cfg, v, bias, row, n, l) end
  return v:to(C.dtype)
end

-- The tensor-core form (cfg.mma; up to 16 rows): a warp computes a 16 x 8
-- block of C (8 columns; rows past M are computed from a repeated row and not
-- stored) with mma.sync m16n8k16 over its share of K. The reduction's order
-- is free, so each thread loads 16 contiguous bytes of B's column g = lane / 4
-- at k0 + 8 t (t = lane % 4) and of A's rows g and g + 8 at the same k, and
-- gives them to two MMAs as the k-slots {2t, 2t+1, 2t+8, 2t+9} and
-- {16 + ...}: A and B agree on the permutation, so no shuffle is needed and
-- every load is a 16-byte vector. A CTA's 8 warps are WN column groups x WK
-- slices of K (WN from the plan: enough CTAs for the machine, few enough
-- that A, read by every CTA, stays a small share of the traffic); the WK
-- partial blocks meet in shared memory, where WN x 128 threads finish C.
local function build_mma(cfg, trace_key)
  local WN = cfg.wn
  local WK = WARPS / WN
  local fused = (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "") .. (cfg.fn and "_epilogue" or "")
  local dt = cute.dtype.get(cfg.dtype)
  local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(dt, cute.f32, { 16, 8, 16 }))
  return cute.kernel("gemv_mma_" .. cfg.dtype .. "_w" .. WN .. fused, function(A, B, C, alpha, beta, ...)
    local bias = ... -- (cfg.bias: the bias tensor)
    local Mr, K, N = A.layout.shape[1], A.layout.shape[2], B.layout.shape[1]
    local tid = cute.thread_idx().x
    local lane, warp = tid % 32, tid / 32
    local g, t = lane / 4, lane % 4
    local wn, wk = warp % WN, warp / WN
    local n0 = (cute.block_idx().x * WN + wn) * 8
    local l = cute.block_idx().z
    -- rows and columns past the ends read a valid one (their results are dropped)
    local bcol = B[{ cute.min(n0 + g, N - 1), cute._, l }]
    local arow0 = A[{ cute.min(g, Mr - 1), cute._, l }]
    local arow1 = A[{ cute.min(g + 8, Mr - 1), cute._, l }]
    local acc = { cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0) }
    -- one step: 32 k of this warp's slice; steps of the WK warps interleave (256 k)
    -- a step: KS = 128 k of this warp's slice, 32 contiguous a thread (four
    -- 16-byte vectors of B's column and of each A row); the steps of the WK
    -- warps interleave. Loads of the unrolled steps go first, then the MMAs.
    local KS = 128
    local function load(kt, masked)
      if not masked then
        local out = {}
        for q, x in ipairs { bcol, arow0, arow1 } do out[q] = common.thread_slice_1d(x, kt, t, 32, 4, 1):load() end
        return out
      end
      -- the last steps, element by element: zero past K in both operands
      return load_masked({ bcol, arow0, arow1 }, K, kt, t)
    end
    local function mma(v) mma_step(atom, acc, v[1], v[2], v[3]) end
    local steps = K / KS -- whole steps; then masked ones for the rest
    local U = cfg.unroll or UNROLL_MMA
    local per = WK * U
    local rounds = steps / per
    for r in cute.range(rounds) do
      local v = {}
      for u = 0, U - 1 do v[u + 1] = load((r * U + u) * WK + wk, false) end
      for u = 1, U do mma(v[u]) end
    end
    for kt in cute.range(rounds * per + wk, (K + (KS - 1)) / KS, WK) do mma(load(kt, true)) end
    -- the WK partial 16 x 8 blocks of a column group meet in shared memory
    local red = cute.make_smem_tensor(cute.f32, cute.make_layout({ 128, WARPS }), 16)
    for j = 0, 3 do
      -- value j: row g + 8 (j / 2), column 2 t + j % 2
      local idx = (g + 8 * math.floor(j / 2)) * 8 + 2 * t + j % 2
      red[{ idx, warp }] = acc[j + 1].value
    end
    cute.sync_threads()
    for e in cute.range(tid, 128 * WN, WARPS * 32) do
      local cg, idx = e / 128, e % 128
      local row, col = idx / 8, idx % 8
      local s = red[{ idx, cg }]
      for w = 1, WK - 1 do s = s + red[{ idx, cg + w * WN }] end
      local n = (cute.block_idx().x * WN + cg) * 8 + col
      if row < Mr and n < N then C[{ row, n, l }] = c_value(cfg, C, s, alpha, beta, bias, row, n, l) end
    end
  end, kernel_options(cfg, trace_key))
end

-- The wide tensor-core form (cfg.wide; "mmaw<S>r<R>"): a CTA covers 64
-- columns (a warp its own 16 x 8 block of C over all of K) and reads A once,
-- through shared memory. The mma form above reads all of A once a CTA of 8
-- columns: at 16 rows that is twice the bytes of the CTA's weights, and L2,
-- serving three bytes a byte of weights, sets its pace (2.2 TB/s on the H100
-- and the H200 alike). Here A's share of the traffic is 16/64. K goes in
-- chunks of S steps of 128 k: the CTA's threads copy the next chunk of A (16
-- rows x 128 S k, rows padded by 16 bytes against bank conflicts) into the
-- other of two shared buffers while the warps multiply the current one. B
-- streams through a ring of R steps in shared memory filled by cp.async,
-- each thread its own 64 bytes a step (so it waits for its own copies, no
-- barrier): R - 1 steps in flight a thread, whatever ptxas does with
-- registers (plain loads were issued just before their use). A thread's four
-- vectors of a step are k 8t + 32v (v = 0..3), so that each copy instruction
-- reads whole 32-byte sectors (cp.async.cg bypasses L1: a half-used sector
-- would be fetched from L2 twice); A is read in the same order.
-- Measured on the H200 (2026-11-28, before the sector order): slower than the
-- mma form (1.6 vs 2.2 TB/s at 16x8192x8192) whatever S and R; the cause is
-- not found yet (see docs/hopper.md, "Decode"). Opt-in until it wins.
local function build_wide(cfg, trace_key)
  local S, R, Q = cfg.steps, cfg.ring, cfg.run or 1
  assert(S % Q == 0, "gemv's wide form: the steps of a chunk must be a multiple of the steps of a run")
  local KC = 128 * S -- k a chunk
  local LD = KC + 8 -- (a row of the chunk in shared memory, padded)
  local THREADS = WARPS * 32
  local fused = (cfg.bias and "_bias" or "") .. (cfg.act and ("_" .. cfg.act) or "") .. (cfg.fn and "_epilogue" or "")
  local dt = cute.dtype.get(cfg.dtype)
  local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(dt, cute.f32, { 16, 8, 16 }))
  local name = "gemv_wide_" .. cfg.dtype .. "_s" .. S .. "r" .. R .. (Q > 1 and ("q" .. Q) or "") .. fused
  return cute.kernel(name, function(A, B, C, alpha, beta, ...)
    local bias = ... -- (cfg.bias: the bias tensor)
    local Mr, K, N = A.layout.shape[1], A.layout.shape[2], B.layout.shape[1]
    local tid = cute.thread_idx().x
    local lane, warp = tid % 32, tid / 32
    local g, t = lane / 4, lane % 4
    local n0 = (cute.block_idx().x * WARPS + warp) * 8
    local l = cute.block_idx().z
    local bcol = B[{ cute.min(n0 + g, N - 1), cute._, l }]
    local sA = cute.make_smem_tensor(dt, cute.make_layout({ 16, KC, 2 }, { LD, 1, 16 * LD }), 16)
    -- B's ring: a slot holds a run of Q steps, vector v (8 values) of thread tid
    -- at v (4 a step); a thread's vectors 16 bytes from its neighbours' (no bank
    -- conflicts)
    local sB = cute.make_smem_tensor(dt, cute.make_layout({ 8, THREADS, 4 * Q, R },
      { 1, 8, 8 * THREADS, 8 * THREADS * 4 * Q }), 16)
    -- the chunk copy: thread tid moves KC / 16 contiguous k of row tid / 16
    local PER = KC / 16
    local crow = tid / 16
    local arow = A[{ cute.min(crow, Mr - 1), cute._, l }]
    local function a_fetch(c) return common.thread_slice_1d(arow, c, tid % 16, PER, 16, 1):load() end
    local function a_put(frag, buf)
      common.thread_slice_1d(sA[{ crow, cute._, buf }], 0, tid % 16, PER, 16, 1):store(frag)
    end
    local chunks = K / KC
    local steps = chunks * S
    local runs = steps / Q
    -- the copies of run j (Q steps of 128 k of this warp's columns, 256 Q contiguous
    -- bytes a column; past the last, none read)
    local function b_issue(j)
      local k0 = cute.min(j, runs - 1) * (128 * Q) + t * 8
      local slot = j % R
      for q = 0, Q - 1 do
        for v = 0, 3 do
          cute.arch.cp_async(sB:ptr_at({ 0, tid, 4 * q + v, slot }), bcol:ptr_at(k0 + 128 * q + 32 * v), 16, "cg",
            cute.max(cute.min(runs - j, 1), 0) * 16)
        end
      end
      cute.arch.cp_async_commit_group()
    end
    local acc = { cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0), cute.var(cute.f32, 0.0) }
    local function mma(b, a0, a1) mma_step(atom, acc, b, a0, a1) end
    if chunks > 0 then
      for j = 0, R - 2 do b_issue(j) end
      a_put(a_fetch(0), 0)
      cute.sync_threads()
    end
    for c in cute.range(chunks) do
      local buf = c % 2
      local nxt = a_fetch(cute.min(c + 1, chunks - 1)) -- (the last chunk fetches itself again: unused)
      for s = 0, S - 1 do
        local q = s % Q
        local j = c * (S / Q) + math.floor(s / Q) -- (this step's run)
        if q == 0 then
          b_issue(j + R - 1)
          cute.arch.cp_async_wait_group(R - 1)
        end
        local slot = j % R
        local b = {}
        for v = 0, 3 do
          local x = sB[{ cute._, tid, 4 * q + v, slot }]:load()
          for e = 0, 7 do b[8 * v + e] = x[e] end
        end
        local a0 = common.thread_slice_1d(sA[{ g, cute._, buf }], s, t, 8, 4, 4):load()
        local a1 = common.thread_slice_1d(sA[{ g + 8, cute._, buf }], s, t, 8, 4, 4):load()
        mma(b, a0, a1)
      end
      a_put(nxt, 1 - buf)
      cute.sync_threads()
    end
    cute.arch.cp_async_wait_group(0)
    -- K's rest past the chunks: steps of 128 k, element by element, A from global
    local arow0 = A[{ cute.min(g, Mr - 1), cute._, l }]
    local arow1 = A[{ cute.min(g + 8, Mr - 1), cute._, l }]
    for kt in cute.range(steps, (K + 127) / 128) do
      local v = load_masked({ bcol, arow0, arow1 }, K, kt, t)
      mma(v[1], v[2], v[3])
    end
    for j = 0, 3 do
      -- value j: row g + 8 (j / 2), column 2 t + j % 2
      local row, n = g + 8 * math.floor(j / 2), n0 + 2 * t + j % 2
      if row < Mr and n < N then
        C[{ row, n, l }] = c_value(cfg, C, acc[j + 1].value, alpha, beta, bias, row, n, l)
      end
    end
  end, kernel_options(cfg, trace_key))
end

--- The kernel for a configuration {dtype, m (rows), beta, bias, bias_dtype, act, fn}.
-- @param cfg the configuration
-- @return the cute.kernel
-- @usage local k = M.kernel({ dtype = "bf16", m = 1 })
function M.kernel(cfg)
  local make = cfg.wide and build_wide or cfg.mma and build_mma or build
  if cfg.fn then return make(cfg, nil) end -- (traced per function: no key stands for it)
  local key = {}
  local fields = { "dtype", "m", "beta", "bias", "bias_dtype", "act", "mma", "wn", "unroll", "wide", "steps", "ring",
    "run", "min_blocks", "bounds" }
  for i, f in ipairs(fields) do
    key[i] = tostring(cfg[f])
  end
  key = table.concat(key, ",")
  local k = kernels[key]
  if not k then
    k = make(cfg, "cute.lib.gemv:" .. key)
    kernels[key] = k
  end
  return k
end

--- Why this kernel cannot take a problem (nil when it can): the kernel views
-- A (M, K, L) and B (N, K, L) with their strides (elements), the dtype.
-- @param dt the inputs' dtype
-- @param m the rows of A and C
-- @param a_stride A's view strides {rows, K, L}
-- @param b_stride B's view strides {columns, K, L}
-- @param Av A's kernel view
-- @param Bv B's kernel view
-- @return a sentence, or nil
-- @usage local why = M.unsupported(cute.bf16, 1, { 4096, 1, 0 }, { 4096, 1, 0 }, Av, Bv)
function M.unsupported(dt, m, a_stride, b_stride, Av, Bv)
  if m > M.MAX_ROWS then return string.format("M is %d (the GEMV path takes up to %d rows)", m, M.MAX_ROWS) end
  if dt.name ~= "bf16" and dt.name ~= "f16" then return "its inputs are " .. dt.name .. " (bf16 or f16)" end
  for _, x in ipairs { { "A", a_stride, Av }, { "B", b_stride, Bv } } do
    local st = x[2]
    if st[2] ~= 1 then return x[1] .. " is not K-contiguous" end
    if st[1] % VEC ~= 0 or st[3] % VEC ~= 0 then return x[1] .. "'s strides are not multiples of 16 bytes" end
    if not x[3].fake and x[3]:alignment() < 16 then return x[1] .. " is not 16-byte aligned" end
  end
  return nil
end

--- The launch for kernel views Av (M, K, L), Bv (N, K, L), Cv (M, N, L):
-- {kernel, args, grid, block, config}.
-- @param Av A's kernel view
-- @param Bv B's kernel view
-- @param Cv C's kernel view
-- @param alpha the scale of A @ B
-- @param beta the scale of C (0: C is not read)
-- @param opts cute.gemm's options (bias, bias_mode, activation, epilogue)
-- @return the plan
-- @usage local p = M.plan(Av, Bv, Cv, 1, 0, {})
function M.plan(Av, Bv, Cv, alpha, beta, opts)
  local m, n = Av.layout.shape[1], Bv.layout.shape[1]
  local batch = Av.layout.shape[3]
  -- (M.min_blocks, M.bounds = false: a probe's launch bounds, bench/gemv_probe.lua)
  local cfg = { dtype = Av.dtype.name, m = m, beta = beta ~= 0 or nil, min_blocks = M.min_blocks, bounds = M.bounds }
  local bias = require("cute.lib.gemm_sm90").fused_config(cfg, opts, m, n, false)
  local args = { Av, Bv, Cv, cute.f32(alpha), cute.f32(beta) }
  if bias then args[6] = bias end
  -- (a probe's or a test's override, M.override or CUTELUA_GEMV: "simt", "simtu<UNROLL>", "mma", "mma<WN>",
  -- "mma<WN>u<UNROLL>", or the wide form "mmaw" / "mmaw<STEPS>r<RING>[q<RUN>]")
  local mode = M.override or os.getenv("CUTELUA_GEMV") or ""
  cfg.mma = mode:match("^mma") ~= nil or (not mode:match("^simt") and m > M.SIMT_ROWS) or nil
  local steps, ring, run = mode:match("^mmaw(%d*)r?(%d*)q?(%d*)$")
  if steps then
    steps, ring, run = tonumber(steps) or 4, tonumber(ring) or 4, tonumber(run) or 1
    if steps % run ~= 0 then
      err.raise("cute.lib.gemv: mode %s: the steps of a chunk (%d) must be a multiple of a run's (%d)", mode, steps,
        run)
    end
    -- the wide form: 64 columns a CTA, A through shared memory (build_wide)
    cfg.mma, cfg.wide, cfg.steps, cfg.ring, cfg.run, cfg.m = true, true, steps, ring, run > 1 and run or nil, nil
    return { kernel = M.kernel(cfg), args = args, grid = { math.ceil(n / (8 * WARPS)), 1, batch },
      block = WARPS * 32, config = cfg }
  end
  if cfg.mma then
    -- one column group a CTA (its 8 warps split K): measured best on the H100 at
    -- N = 4096 to 14336 (bench/gemv_probe.lua); more groups share A's reads but
    -- give fewer CTAs and fewer loads in flight a column
    local wn = tonumber(mode:match("^mma(%d+)")) or 1
    cfg.unroll = tonumber(mode:match("^mma%d*u(%d+)$")) -- ("mma1u4": 4 steps in flight)
    cfg.wn, cfg.m = wn, nil -- (one kernel for every M: the rows are a run-time extent)
    return { kernel = M.kernel(cfg), args = args, grid = { math.ceil(n / (8 * wn)), 1, batch }, block = WARPS * 32,
      config = cfg }
  end
  cfg.unroll = tonumber(mode:match("^simtu(%d+)$")) -- ("simtu8": 8 vectors in flight a lane)
  return { kernel = M.kernel(cfg), args = args, grid = { math.ceil(n / WARPS), 1, batch }, block = WARPS * 32,
    config = cfg }
end

return M
