--- cute.lib.attention: fused scaled-dot-product attention (a FlashAttention-2
-- forward for sm_80 and later, which also runs on the CPU simulator).
--
--   O, LSE = cute.lib.attention.forward(Q, K, V, O[, opts])
--   O[b, i, h, :] = sum_j softmax_j(scale * Q[b, i, h, :] . K[b, j, hk, :]) V[b, j, hk, :]
--   LSE[b, h, i]  = log sum_j exp(scale * Q[b, i, h, :] . K[b, j, hk, :])   (natural log)
--
-- with hk = h / (Hq / Hkv) (grouped-query attention) and j over the keys the
-- mask allows. Tensors in FlashAttention's layout: Q and O (B, Sq, Hq, D), K
-- and V (B, Sk, Hkv, D), any strides with D contiguous; varlen (packed
-- sequences, opts.cu_seqlens_q/k): Q and O (total_q, Hq, D), K and V
-- (total_k, Hkv, D), LSE (Hq, total_q). docs/attention.md has the API.
--
-- The problem table. plan() normalises the call into one table, which the
-- kernels' planners take (this module's sm_80 plan, and a Hopper module's
-- `plan(problem, opts)` where one is installed as cute.lib.attention_sm90):
--
--   dtype        cute.bf16 or cute.f16 (Q, K, V and O share it)
--   batch        B (varlen: the number of sequences)
--   hq, hkv      query and key/value heads (hq a multiple of hkv)
--   sq, sk       query and key lengths (varlen: the longest sequence of each)
--   d            the head dimension (64, 128, 256)
--   scale        the softmax scale (default 1/sqrt(d))
--   causal       boolean: bottom-right aligned (query i sees key j when
--                j <= i + sk - sq), as FlashAttention 2.1 and later
--   window       {left, right}: query i sees keys i + sk - sq - left ..
--                i + sk - sq + right (-1: unbounded); causal makes right 0
--   varlen       boolean: packed sequences
--   cu_seqlens_q, cu_seqlens_k   varlen only: (B + 1) i32 device tensors of offsets
--   seqlens_q, seqlens_k         varlen only: the offsets as Lua lists, when known on the host
--   q, k, v, o   the user's tensors (device or fake)
--   lse          the f32 LSE tensor: (B, Hq, Sq), varlen (Hq, total_q)
--   arch         the target: "sm_80", "sm_90a", ... (opts.arch, else the device's)
--
-- A planner returns {kernel, args, grid, block[, cluster], config, why, ...};
-- forward launches kernel{grid =, block =, cluster =, stream =}(unpack(args)),
-- or calls plan.launch(stream) when the plan has one (several launches).
-- forward keeps the plans of calls that give O and opts.lse (forward_cache()):
-- a planner's args may hold the user's tensors themselves (the cache takes them
-- out of its copy and puts the call's back at each launch); nothing else in them
-- may reach a user's tensor object (views made from a data pointer, TMA
-- descriptors and scalars do not).
local cute = require "cute"
local err = require "cute._err"
local tensor = require "cute.tensor"
local L = require "cute.layout"
local runtime = require "cute.runtime"

local M = {}

local LOG2E = 1.4426950408889634
local LN2 = 0.6931471805599453
local NEG_INF = -math.huge

-- ---------------------------------------------------------------------------
-- The sm_80 kernel (FlashAttention-2's forward)
--
-- One CTA a BM-row tile of queries of one (batch, head), W warps, each warp
-- 16-row slices of it (rows w*16 + 16*W*m), so that a row's softmax stays in
-- the quad of lanes that hold it:
--
--   Q tile (BM x D)   cp.async -> shared (swizzled) -> registers (ldmatrix)
--   for each key tile j (BN keys) the mask allows:
--     K_j, V_j        cp.async -> shared, two stages: j + 1's copies in flight while j computes
--     S  = Q K_j^T    mma.sync m16n8k16, f32 accumulators (registers)
--     mask            keys past Sk, causal / window: -inf
--     online softmax  m_new = max(m, rowmax(S * scale log2 e)); P = exp2(S' - m_new);
--                     l = l exp2(m - m_new) + rowsum(P); O *= exp2(m - m_new)
--     O += P V_j      P converted to 16 bits in registers: the accumulator layout of
--                     two n8 tiles is the A layout of one k16 block, so no shared memory
--   O /= l, LSE = (m + log2 l) ln 2; rows with nothing to attend to: O = 0, LSE = -inf

local kernels = {}

local common = require "cute.lib.common"
local tiled_g2s = common.tiled_g2s

-- The most key splits a decode launch takes (the combine's weights sit in
-- shared memory, one a split).
local MAX_SPLITS = 128
M.DECODE_MAX_SPLITS = MAX_SPLITS

-- The combine of split-KV, row (b, i, h): O = sum_s exp(LSE_s - LSE) O_s, LSE
-- = log sum_s exp(LSE_s), shared by the combine kernel and the split kernel's
-- fused combine (the same arithmetic in the same order: the same bits).
-- combine_lses: a warp's loads of the row's partial LSEs from Lp (splits, B,
-- Hq, Sq), lane l splits l, l + 32, l + 64, l + 96 (loads clamped to the last
-- split, their values dropped), and their maximum so far.
local function combine_lses(Lp, b, h, i, splits, lane)
  local v = {}
  local mx = NEG_INF
  for k = 1, MAX_SPLITS / 32 do
    local s = lane + 32 * (k - 1)
    v[k] = cute.where(s:lt(splits), Lp[{ cute.min(s, splits - 1), b, h, i }], NEG_INF)
    mx = cute.max(mx, v[k])
  end
  return v, mx
end

-- The row's weights exp(LSE_s - LSE) into w (shared, MAX_SPLITS f32; 0 past
-- the splits, and for a row that saw no key) from combine_lses's values,
-- reduced over the warp with shuffles; returns the row's LSE.
local function combine_weights(v, mx, lane, w)
  mx = cute.warp_reduce_shuffle(mx, cute.max)
  local base = cute.where(mx:eq(NEG_INF), 0.0, mx)
  local sum = 0.0
  for k = 1, #v do sum = sum + cute.exp2((v[k] - base) * LOG2E) end
  sum = cute.warp_reduce_shuffle(sum, function(x, y) return x + y end)
  local empty = sum:eq(0.0)
  local lse = cute.where(empty, NEG_INF, base + cute.log(cute.where(empty, 1.0, sum)))
  for k = 1, #v do
    w[lane + 32 * (k - 1)] = cute.where(empty, 0.0, cute.exp2((v[k] - lse) * LOG2E))
  end
  return lse
end

local function build(cfg, trace_key)
  local gemm = require "cute.lib.gemm"
  local D, BM, BN, W, STAGES = cfg.d, cfg.bm, cfg.bn, cfg.warps, cfg.stages
  local dt = cute.dtype.get(cfg.dtype)
  local threads = W * 32
  local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(dt, cute.f32, { 16, 8, 16 }))
  local mma_s = cute.make_tiled_mma(atom, { W, 1, 1 }, { BM, BN, 16 }) -- S = Q K^T: (BM, BN, D)
  local mma_o = cute.make_tiled_mma(atom, { W, 1, 1 }, { BM, D, 16 })  -- O = P V:   (BM, D, BN)
  local function ldsm(trans, which, mma)
    local a = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(trans, 4), dt)
    return which == "A" and cute.make_tiled_copy_A(a, mma) or cute.make_tiled_copy_B(a, mma)
  end
  local ldQ, ldK, ldV = ldsm(false, "A", mma_s), ldsm(false, "B", mma_s), ldsm(true, "B", mma_o)
  local layQ = gemm.smem_layout(BM, D, "k", dt.bytes)
  local layK = gemm.smem_layout(BN, D, "k", dt.bytes)
  local layV = gemm.smem_layout(D, BN, "mn", dt.bytes) -- V_j seen as (D, BN): B of P V, N-major
  local cpQ = tiled_g2s(dt, threads, BM, D, "k", cfg.q_vec)
  local cpK = tiled_g2s(dt, threads, BN, D, "k", cfg.k_vec)
  local cpV = tiled_g2s(dt, threads, D, BN, "mn", cfg.v_vec)
  local DK, NK = D / 16, BN / 16 -- k-blocks of the two products
  local varlen, has_left, has_right = cfg.varlen, cfg.has_left, cfg.has_right
  local split, paged, seqlens = cfg.split, cfg.paged, cfg.seqlens -- (decode)
  local fused = split and cfg.fused_combine
  local masked = cfg.causal or has_left or has_right or not cfg.even_k or seqlens

  local name = string.format("flash_%s_%s_d%d_%dx%d", split and (fused and "split_combine" or "split") or "fwd",
    dt.name, D, BM, BN)
  -- Decode: lens (B) i32 lengths of the caches (or false); bt, the block table (B,
  -- max pages) i32 and the page size P (paged caches K, V (pages, P, Hkv, D), or
  -- false); splits: the key range cut into that many parts, one a CTA, each writing
  -- its O (normalised) and LSE into O (splits, B, Sq, Hq, D) and LSE (splits, B, Hq, Sq).
  -- fused_combine: the last CTA of a tile's splits to finish combines them into Of
  -- (B, Sq, Hq, D) and Lf (B, Hq, Sq); cnt: the (B, Hq, m_blocks) i32 arrival
  -- counters, zero before the launch and after it (or false).
  local function body(Q, K, V, O, LSE, cuq, cuk, scale_log2, hratio, left, right, lens, bt, page, splits, Of, Lf, cnt)
    cute.launch_bounds(threads, 1)
    -- launch_dependents (split, sm_90+): the combine, a programmatic dependent
    -- launch, may be launched once every CTA of this grid has started (it
    -- waits for this grid's end before it reads the partials)
    if split and cfg.launch_dependents or cfg.pdl_wait then cute.arch.griddepcontrol_launch_dependents() end
    -- pdl_wait (decode's opts.pdl, sm_90+): this kernel is itself a programmatic
    -- dependent launch, which may start before the stream's previous kernel ends:
    -- nothing is read before that kernel's writes are visible
    if cfg.pdl_wait then cute.arch.griddepcontrol_wait() end
    local tid = cute.thread_idx().x
    local m_block = cute.block_idx().x
    local h = cute.block_idx().y
    local b = cute.block_idx().z
    local hk = h / hratio

    -- this (batch, head)'s rows: q (sq, D), k (sk, D), vt (D, sk), o, lse (sq)
    local q, k, vt, o, lse, sq, sk
    local splits_at, m_blocks = 0, 1
    if varlen then
      local q0, k0 = cuq[b], cuk[b]
      sq, sk = cuq[b + 1] - q0, cuk[b + 1] - k0
      local Qh, Kh, Vh, Oh = Q[{ cute._, h, cute._ }], K[{ cute._, hk, cute._ }], V[{ cute._, hk, cute._ }],
        O[{ cute._, h, cute._ }]
      q = cute.make_tensor(Qh:ptr_at({ q0, 0 }), cute.make_layout({ sq, D }, { Qh.layout.stride[1], 1 }))
      k = cute.make_tensor(Kh:ptr_at({ k0, 0 }), cute.make_layout({ sk, D }, { Kh.layout.stride[1], 1 }))
      vt = cute.make_tensor(Vh:ptr_at({ k0, 0 }), cute.make_layout({ D, sk }, { 1, Vh.layout.stride[1] }))
      o = cute.make_tensor(Oh:ptr_at({ q0, 0 }), cute.make_layout({ sq, D }, { Oh.layout.stride[1], 1 }))
      local Lh = LSE[{ h, cute._ }]
      lse = cute.make_tensor(Lh:ptr_at(q0), cute.make_layout({ sq }, { Lh.layout.stride[1] }))
    else
      local Ob, Lb = O, LSE
      q = Q[{ b, cute._, h, cute._ }]
      sq = q.layout.shape[1]
      local split_idx = 0
      if split then -- block x: split_idx * m_blocks + m_block
        m_blocks = (sq + (BM - 1)) / BM
        split_idx = m_block / m_blocks
        m_block = m_block % m_blocks
        Ob, Lb = O[{ split_idx, cute._, cute._, cute._, cute._ }], LSE[{ split_idx, cute._, cute._, cute._ }]
      end
      o = Ob[{ b, cute._, h, cute._ }]
      lse = Lb[{ b, h, cute._ }]
      if paged then
        sk = lens[b]
      else
        k = K[{ b, cute._, hk, cute._ }]
        local Vh = V[{ b, cute._, hk, cute._ }]
        sk = k.layout.shape[1]
        if seqlens then
          sk = lens[b]
          k = cute.make_tensor(k:ptr_at(0), cute.make_layout({ sk, D }, { k.layout.stride[1], 1 }))
        end
        vt = cute.make_tensor(Vh:ptr_at(0), cute.make_layout({ D, sk }, { 1, Vh.layout.stride[1] }))
      end
      splits_at = split_idx
    end
    if m_block * BM >= sq then return end

    -- the key tiles this query tile sees: [n_lo, n_hi)
    local shift = sk - sq -- bottom-right alignment
    local n_hi = (sk + (BN - 1)) / BN
    if has_right then
      local last_row = cute.min((m_block + 1) * BM, sq) - 1
      n_hi = cute.max(0, cute.min(n_hi, (last_row + shift + right + BN) / BN))
    end
    local n_lo = 0
    if has_left then n_lo = cute.max(0, m_block * BM + shift - left) / BN end
    if split then -- this CTA's part of the key tiles
      local per = ((sk + (BN - 1)) / BN + splits - 1) / splits
      n_lo = cute.max(n_lo, splits_at * per)
      n_hi = cute.min(n_hi, (splits_at + 1) * per)
    end

    -- shared memory: Q, then STAGES stages of K and V
    local smem = cute.smem_allocator()
    local sQ = smem:tensor(dt, layQ, 128)
    local stK, stV = cute.cosize(layK.outer or layK), cute.cosize(layV.outer or layV)
    local sK_all = smem:tensor(dt, cute.make_layout(stK * STAGES), 128)
    local sV_all = smem:tensor(dt, cute.make_layout(stV * STAGES), 128)
    local function sK(s) return cute.make_tensor(sK_all:ptr_at(s * stK), layK) end
    local function sV(s) return cute.make_tensor(sV_all:ptr_at(s * stV), layV) end

    -- global -> shared, zero-filled past Sq and Sk
    local res_q = sq - m_block * BM
    local tq, tk, tv = cpQ:get_slice(tid), cpK:get_slice(tid), cpV:get_slice(tid)
    local cQ = tq:partition_S(cute.make_identity_tensor({ BM, D }))
    local cK = tk:partition_S(cute.make_identity_tensor({ BN, D }))
    local cV = tv:partition_S(cute.make_identity_tensor({ D, BN }))
    local nq, nk, nv = cute.size(cQ.layout, 0), cute.size(cK.layout, 0), cute.size(cV.layout, 0)
    cute.copy(cpQ, tq:partition_S(cute.local_tile(q, { BM, D }, { m_block, 0 })), tq:partition_D(sQ),
      function(r) return cQ[r * nq][1] < res_q end)
    cute.arch.cp_async_commit_group()
    -- key tile j of K (BN, D) and of V seen as (D, BN); paged: in page
    -- block_table[b, j BN / P] (P a multiple of BN), from its row j BN % P
    local function kv_tiles(j)
      if paged then
        local pg = bt[{ b, (j * BN) / page }]
        local r0 = (j * BN) % page
        local kt = cute.make_tensor(K:ptr_at({ pg, r0, hk, 0 }),
          cute.make_layout({ BN, D }, { K.layout.stride[2], 1 }))
        local vtt = cute.make_tensor(V:ptr_at({ pg, r0, hk, 0 }),
          cute.make_layout({ D, BN }, { 1, V.layout.stride[2] }))
        return kt, vtt
      end
      return cute.local_tile(k, { BN, D }, { j, 0 }), cute.local_tile(vt, { D, BN }, { 0, j })
    end
    local function issue_kv(j, s)
      local res_k = sk - j * BN
      local kt, vtt = kv_tiles(j)
      cute.copy(cpK, tk:partition_S(kt), tk:partition_D(sK(s)), function(r) return cK[r * nk][1] < res_k end)
      cute.copy(cpV, tv:partition_S(vtt), tv:partition_D(sV(s)), function(r) return cV[r * nv][2] < res_k end)
    end
    if n_lo < n_hi then issue_kv(n_lo, 0) end
    cute.arch.cp_async_commit_group()

    local ts, to = mma_s:get_slice(tid), mma_o:get_slice(tid)
    local lq, lk, lv = ldQ:get_slice(tid), ldK:get_slice(tid), ldV:get_slice(tid)
    local tSrQ = ts:partition_fragment_A(sQ)      -- (V, MMA_M, D/16)
    local tSrK = ts:partition_fragment_B(sK(0))   -- (V, BN/8, D/16)
    local tOrV = to:partition_fragment_B(sV(0))   -- (V, D/8, BN/16)
    local idS = cute.make_identity_tensor({ BM, BN })
    local cS = ts:partition_C(idS)                -- (row, col) of each S element
    local tOrO = to:partition_fragment_C(cute.make_identity_tensor({ BM, D }))
    local cO = to:partition_C(cute.make_identity_tensor({ BM, D }))
    local MM = cute.size(tOrO.layout, 1)          -- 16-row slices a warp holds
    local NS, NO = BN / 8, D / 8                  -- n8 tiles of S and O
    assert(cute.size(tOrO.layout, 0) == 4 and cute.size(tOrO.layout, 2) == NO, "attention: unexpected C layout")
    tOrO:fill(0)
    -- row r (0 .. 2 MM - 1) of this thread: slice r // 2, upper or lower 8 rows r % 2
    local row_max = cute.make_rmem_tensor({ 2 * MM }, cute.f32)
    local row_sum = cute.make_rmem_tensor({ 2 * MM }, cute.f32)
    row_max:fill(NEG_INF)
    row_sum:fill(0.0)

    local function load_q(kb)
      cute.copy(ldQ, lq:partition_S(cute.local_tile(sQ, { BM, 16 }, { 0, kb })),
        lq:retile(tSrQ[{ cute._, cute._, kb }]))
    end
    if cfg.q_regs then -- the whole Q tile in registers, once
      cute.arch.cp_async_wait_group(1)
      cute.sync_threads()
      for kb = 0, DK - 1 do load_q(kb) end
    end

    local stage = 0
    for j in cute.range(n_lo, n_hi) do
      -- the next tile's copies, into the other stage (free since the last barrier)
      if j + 1 < n_hi then issue_kv(j + 1, 1 - stage) end
      cute.arch.cp_async_commit_group()
      cute.arch.cp_async_wait_group(1)
      cute.sync_threads()

      -- S = Q K_j^T
      local tSrS = ts:make_fragment_C(cS)
      tSrS:fill(0.0)
      local sKs = sK(stage)
      local function load_s(kb)
        if not cfg.q_regs then load_q(kb) end
        cute.copy(ldK, lk:partition_S(cute.local_tile(sKs, { BN, 16 }, { 0, kb })),
          lk:retile(tSrK[{ cute._, cute._, kb }]))
      end
      load_s(0)
      for kb = 0, DK - 1 do
        if kb + 1 < DK then load_s(kb + 1) end
        cute.gemm(mma_s, tSrS, tSrQ[{ cute._, cute._, kb }], tSrK[{ cute._, cute._, kb }], tSrS)
      end

      -- scale (log2 domain) and mask; only the tiles that cross an edge (the
      -- last key tile, the diagonal bands of causal and window masks) pay for it
      local n = cute.size(tSrS)
      for i = 0, n - 1 do tSrS[i] = tSrS[i] * scale_log2 end
      if masked then
        local need = (j + 1) * BN > sk
        if has_right then need = need or (j + 1) * BN - 1 > m_block * BM + shift + right end
        if has_left then need = need or j * BN < cute.min((m_block + 1) * BM, sq) - 1 + shift - left end
        if need then
          for i = 0, n - 1 do
            local c = cS[i]
            local row, col = m_block * BM + c[1], j * BN + c[2]
            local ok = col < sk
            if has_right then ok = ok and col <= row + shift + right end
            if has_left then ok = ok and col + left >= row + shift end
            tSrS[i] = cute.where(ok, tSrS[i], NEG_INF)
          end
        end
      end

      -- online softmax, row by row (a row's values are in the quad of lanes 4g .. 4g + 3)
      for r = 0, 2 * MM - 1 do
        local half, mi = r % 2, (r - r % 2) / 2
        local function idx(v, ni) return 2 * half + v + 4 * (mi + MM * ni) end
        local mx = row_max[r]
        for ni = 0, NS - 1 do
          for v = 0, 1 do mx = cute.max(mx, tSrS[idx(v, ni)]) end
        end
        mx = cute.max(mx, cute.shuffle_xor(mx, 1))
        mx = cute.max(mx, cute.shuffle_xor(mx, 2))
        -- a row that has seen only masked keys keeps -inf: subtract 0 then
        local base = cute.where(mx == NEG_INF, 0.0, mx)
        local corr = cute.exp2(row_max[r] - base, { fast = true })
        row_max[r] = mx
        local rs = 0.0
        for ni = 0, NS - 1 do
          for v = 0, 1 do
            local p = cute.exp2(tSrS[idx(v, ni)] - base, { fast = true })
            tSrS[idx(v, ni)] = p
            rs = rs + p
          end
        end
        row_sum[r] = row_sum[r] * corr + rs
        for ni = 0, NO - 1 do
          for v = 0, 1 do tOrO[idx(v, ni)] = tOrO[idx(v, ni)] * corr end
        end
      end

      -- P in 16 bits, as the A operand of P V: the accumulators of n8 tiles
      -- 2 kb and 2 kb + 1 are A's values 0-3 and 4-7 of k-block kb
      local tOrP = to:make_fragment_A(to:partition_A(idS))
      for kb = 0, NK - 1 do
        for mi = 0, MM - 1 do
          for v = 0, 7 do
            tOrP[v + 8 * (mi + MM * kb)] = tSrS[v % 4 + 4 * (mi + MM * (2 * kb + (v - v % 4) / 4))]:to(dt)
          end
        end
      end

      -- O += P V_j
      local sVs = sV(stage)
      local function load_v(kb)
        cute.copy(ldV, lv:partition_S(cute.local_tile(sVs, { D, 16 }, { 0, kb })),
          lv:retile(tOrV[{ cute._, cute._, kb }]))
      end
      if cfg.v_double then load_v(0) end
      for kb = 0, NK - 1 do
        if not cfg.v_double then load_v(kb)
        elseif kb + 1 < NK then load_v(kb + 1) end
        cute.gemm(mma_o, tOrO, tOrP[{ cute._, cute._, kb }], tOrV[{ cute._, cute._, kb }], tOrO)
      end
      cute.sync_threads() -- every warp is done with this stage before the next copies into it
      stage = 1 - stage
    end
    cute.arch.cp_async_wait_group(0)

    -- epilogue: O / l and the LSE, rows past Sq not stored
    local gO = cute.local_tile(o, { BM, D }, { m_block, 0 })
    local tOgO = to:partition_C(gO)
    local lane = tid % 4
    local full = res_q >= BM -- a whole tile: O's two neighbouring columns a store
    local out = cute.make_fragment_like(tOrO, o.dtype)
    for r = 0, 2 * MM - 1 do
      local half, mi = r % 2, (r - r % 2) / 2
      local l = row_sum[r]
      l = l + cute.shuffle_xor(l, 1)
      l = l + cute.shuffle_xor(l, 2)
      local empty = l == 0.0
      local inv = cute.where(empty, 0.0, 1.0 / cute.where(empty, 1.0, l))
      local lse_r = cute.where(empty, NEG_INF, (row_max[r] + cute.log2(cute.where(empty, 1.0, l))) * LN2)
      local row = cO[2 * half + 4 * mi][1]
      for ni = 0, NO - 1 do
        for v = 0, 1 do
          local i = 2 * half + v + 4 * (mi + MM * ni)
          out[i] = (tOrO[i] * inv):to(o.dtype)
        end
      end
      if row < res_q then
        if not full then
          for ni = 0, NO - 1 do
            for v = 0, 1 do
              local i = 2 * half + v + 4 * (mi + MM * ni)
              tOgO[i] = out[i]
            end
          end
        end
        if lane == 0 then lse[m_block * BM + row] = lse_r end
      end
    end
    if full then cute.copy(out, tOgO) end

    if fused then
      -- the arrival: every store of this CTA made, one thread's release fence
      -- and count; the last of the splits (the count was splits - 1) takes the
      -- others' stores (acquire fence), resets the counter for the next launch
      -- and combines the tile. No CTA waits for another.
      local flag = smem:tensor(cute.i32, cute.make_layout(1), 16)
      cute.sync_threads()
      if tid == 0 then
        local slot = (b * cute.grid_dim().y + h) * m_blocks + m_block
        cute.fence("gpu")
        local old = cute.atomic_add(cnt:ptr_at(slot), 1, { scope = "gpu" })
        flag[0] = 0
        if old == splits - 1 then
          cute.fence("gpu")
          cnt[slot] = 0
          flag[0] = 1
        end
      end
      cute.sync_threads()
      if flag[0] == 0 then return end
      -- the combine of the tile's rows (combine_lses, combine_weights: as the
      -- combine kernel): groups of R rows a warp, round robin; the warp's
      -- weights in the (now free) K stages' shared memory, R rows of
      -- MAX_SPLITS; lane l the columns l, l + 32, ... of the R rows, U splits
      -- at a time: 64 loads in flight a lane (more took d 64's kernel from 168
      -- to 213 registers)
      local warp, wl = tid / 32, tid % 32
      local kv_bytes = stK * STAGES * dt.bytes
      local R = math.max(1, math.min(4, math.floor(kv_bytes / (W * MAX_SPLITS * 4))))
      assert(R >= 1 and W * R * MAX_SPLITS * 4 <= kv_bytes, "attention: no room for the combine's weights")
      local wall = cute.make_tensor(sK_all:ptr_at(0):cast(nil, cute.f32), cute.make_layout({ MAX_SPLITS, W * R }))
      local function wrow(x) return wall[{ cute._, warp * R + x }] end
      local NC = D / 32
      local U = math.max(1, math.min(16, math.floor(64 / (R * NC))))
      local row0 = m_block * BM
      local nrows = cute.min(BM, sq - row0)
      local groups = (nrows + (R - 1)) / R
      for g in cute.range(warp, groups, W) do
        local rows = {}
        for x = 0, R - 1 do rows[x] = row0 + cute.min(g * R + x, nrows - 1) end -- (clamped: every load valid)
        local lsv, lsm = {}, {}
        for x = 0, R - 1 do lsv[x], lsm[x] = combine_lses(LSE, b, h, rows[x], splits, wl) end
        for x = 0, R - 1 do
          local l = combine_weights(lsv[x], lsm[x], wl, wrow(x))
          if wl == 0 and g * R + x < nrows then Lf[{ b, h, rows[x] }] = l end
        end
        cute.sync_warp()
        local acc = cute.make_rmem_tensor({ R * NC }, cute.f32)
        acc:fill(0.0)
        for s in cute.range(splits, { unroll = U }) do
          for x = 0, R - 1 do
            local ws = wrow(x)[s]
            for c = 0, NC - 1 do
              acc[x * NC + c] = acc[x * NC + c] + ws * O[{ s, b, rows[x], h, wl + 32 * c }]
            end
          end
        end
        for x = 0, R - 1 do
          if g * R + x < nrows then
            for c = 0, NC - 1 do Of[{ b, rows[x], h, wl + 32 * c }] = acc[x * NC + c]:to(Of.dtype) end
          end
        end
        cute.sync_warp() -- (the weights read before the next group's)
      end
    end
  end
  return cute.kernel(name, body, { trace_key = trace_key, preprocess = true })
end

M._build = build

--- The sm_80 kernel for a configuration: cfg = {dtype ("bf16", "f16"), d, bm, bn,
-- warps, stages (2), q_vec, k_vec, v_vec (elements a global -> shared copy), q_regs
-- (the Q tile held in registers), v_double (V's fragments of the next k-block loaded while this one
-- multiplies: more registers), varlen, causal, has_left, has_right (window
-- sides bounded), even_k (Sk a multiple of bn: no key mask needed), and for decode: split (each CTA a
-- part of the keys, writing f32 partial results), paged (caches in pages, a block table), seqlens
-- (per-batch cache lengths), fused_combine (split: the last CTA of a tile's splits combines them),
-- launch_dependents (split, sm_90+: griddepcontrol.launch_dependents at the start, for a combine launched
-- with pdl = true)}. The key of the configuration is the kernel's trace_key (docs/compiler.md).
-- @param cfg the configuration (above)
-- @return a cute.kernel
-- @usage local k = cute.lib.attention.kernel(cute.lib.attention.plan(Q, K, V, O).config)
function M.kernel(cfg)
  local key = {}
  for _, k in ipairs { "dtype", "d", "bm", "bn", "warps", "stages", "q_vec", "k_vec", "v_vec", "q_regs", "v_double",
    "varlen",
    "causal", "has_left", "has_right", "even_k", "split", "paged", "seqlens", "fused_combine", "launch_dependents",
    "pdl_wait" } do
    local v = cfg[k]
    if k == "fused_combine" or k == "launch_dependents" then v = cfg.split and v == true end -- (split kernels')
    key[#key + 1] = tostring(v)
  end
  key = table.concat(key, ",")
  local k = kernels[key]
  if not k then
    k = build(cfg, "cute.lib.attention:" .. key)
    kernels[key] = k
  end
  return k
end

-- ---------------------------------------------------------------------------
-- The host side: the problem, the plan, the launch

local OPTIONS = { scale = true, causal = true, window = true, lse = true, cu_seqlens_q = true, cu_seqlens_k = true,
  max_seqlen_q = true, max_seqlen_k = true, arch = true, kernel = true, config = true, stream = true }

local function fail(fmt, ...) err.raise("cute.lib.attention: " .. fmt, ...) end

-- Shape and strides of a device tensor of rank `rank`, flat modes only.
local function dims(t, what, rank, names)
  if not tensor.is_device_tensor(t) then fail("%s must be a device tensor, got %s", what, tostring(t)) end
  if not t:valid() then fail("%s was freed (or its device was reset)", what) end
  local s, d = L.shape(t.layout), L.stride(t.layout)
  if type(s) == "number" then s, d = { s }, { d } end
  if #s ~= rank then
    fail("%s must have %d modes %s, got %s", what, rank, names, tostring(t.layout))
  end
  for i = 1, rank do
    if type(s[i]) ~= "number" or type(d[i]) ~= "number" then
      fail("%s needs flat modes %s, got %s", what, names, tostring(t.layout))
    end
  end
  return s, d
end

-- A list of B + 1 offsets (Lua list or i32 tensor) as a Lua list and a device tensor.
local function offsets(x, what, total, fake)
  local list, dev
  if type(x) == "table" and not tensor.is_device_tensor(x) then
    list = x
  elseif tensor.is_device_tensor(x) then
    if x.dtype ~= cute.i32 then fail("opts.%s must hold i32 offsets, got %s", what, x.dtype.name) end
    local s = L.shape(x.layout)
    if type(s) ~= "number" then
      fail("opts.%s must be a 1-D tensor of B + 1 offsets, got %s", what, tostring(x.layout))
    end
    dev = x
    if not x.fake then list = x:to_host():to_table() end
  else
    fail("opts.%s must be a Lua list or an i32 device tensor of B + 1 offsets, got %s", what, type(x))
  end
  if list then
    if #list < 2 then fail("opts.%s needs at least 2 offsets (one sequence), got %d", what, #list) end
    for i = 1, #list do
      local o = list[i]
      if type(o) ~= "number" or o % 1 ~= 0 or (i == 1 and o ~= 0) or (i > 1 and o < list[i - 1]) then
        fail("opts.%s must go up from 0 without going down; entry %d is %s", what, i, tostring(o))
      end
    end
    if list[#list] > total then
      fail("opts.%s ends at %d, past the %d rows of its tensor", what, list[#list], total)
    end
    if not dev then
      dev = fake and tensor.fake_tensor(cute.i32, { #list }) or cute.tensor(cute.i32, #list)
      if not fake then dev:copy_from(list) end
    end
  end
  return list, dev
end

local function longest(list)
  local m = 0
  for i = 2, #list do m = math.max(m, list[i] - list[i - 1]) end
  return m
end

--- The problem table of a call (the fields at the top of this file), checking
-- every argument: shapes, dtypes, strides, options.
-- @param Q the queries: (B, Sq, Hq, D), or (total_q, Hq, D) with cu_seqlens
-- @param K the keys: (B, Sk, Hkv, D), or (total_k, Hkv, D)
-- @param V the values, K's shape
-- @param O the output, Q's shape (nil: made)
-- @param opts optional: the options of forward
-- @return the problem table
-- @usage local p = cute.lib.attention.problem(Q, K, V, O, { causal = true })
function M.problem(Q, K, V, O, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("opts must be a table, got %s", type(opts)) end
  local names = {}
  for n in pairs(OPTIONS) do names[#names + 1] = n end
  table.sort(names)
  for key in pairs(opts) do
    if not OPTIONS[key] then
      fail("unknown option '%s'%s (the options are: %s)", tostring(key), err.did_you_mean(tostring(key), names),
        table.concat(names, ", "))
    end
  end
  local varlen = opts.cu_seqlens_q ~= nil or opts.cu_seqlens_k ~= nil
  if varlen and (opts.cu_seqlens_q == nil or opts.cu_seqlens_k == nil) then
    fail("varlen attention needs both opts.cu_seqlens_q and opts.cu_seqlens_k")
  end
  local rank = varlen and 3 or 4
  local qn = varlen and "(total_q, Hq, D)" or "(B, Sq, Hq, D)"
  local kn = varlen and "(total_k, Hkv, D)" or "(B, Sk, Hkv, D)"
  local qs, qd = dims(Q, "Q", rank, qn)
  local ks, kd = dims(K, "K", rank, kn)
  local vs, vd = dims(V, "V", rank, kn)
  local fake = Q.fake
  if O == nil then
    O = (fake and tensor.fake_tensor or cute.tensor)(Q.dtype, qs, "row")
  end
  local os_, od = dims(O, "O", rank, qn)
  local dt = Q.dtype
  if dt ~= cute.bf16 and dt ~= cute.f16 then fail("Q is %s; attention takes bf16 or f16", dt.name) end
  for _, x in ipairs { { K, "K" }, { V, "V" }, { O, "O" } } do
    if x[1].dtype ~= dt then fail("Q is %s and %s is %s; give them one dtype", dt.name, x[2], x[1].dtype.name) end
  end
  local function same(a, b, an, bn)
    for i = 1, rank do
      if a[i] ~= b[i] then
        fail("%s is (%s) and %s is (%s): they must have the same shape", an, table.concat(a, ", "), bn,
          table.concat(b, ", "))
      end
    end
  end
  same(ks, vs, "K", "V")
  same(qs, os_, "Q", "O")
  for _, x in ipairs { { qd, "Q" }, { kd, "K" }, { vd, "V" }, { od, "O" } } do
    if x[1][rank] ~= 1 then
      fail("%s's head dimension D must be contiguous (stride 1), got stride %d", x[2], x[1][rank])
    end
  end
  local d = qs[rank]
  if ks[rank] ~= d then fail("Q has head dimension %d and K %d", d, ks[rank]) end
  local hq, hkv = qs[rank - 1], ks[rank - 1]
  if hkv < 1 or hq % hkv ~= 0 then
    fail("Q has %d heads and K %d: grouped-query attention needs Q's heads a multiple of K's", hq, hkv)
  end
  local p = { dtype = dt, hq = hq, hkv = hkv, d = d, q = Q, k = K, v = V, o = O, varlen = varlen }
  if varlen then
    p.seqlens_q, p.cu_seqlens_q = offsets(opts.cu_seqlens_q, "cu_seqlens_q", qs[1], fake)
    p.seqlens_k, p.cu_seqlens_k = offsets(opts.cu_seqlens_k, "cu_seqlens_k", ks[1], fake)
    local bq = p.seqlens_q and #p.seqlens_q - 1 or L.size(p.cu_seqlens_q.layout) - 1
    local bk = p.seqlens_k and #p.seqlens_k - 1 or L.size(p.cu_seqlens_k.layout) - 1
    if bq ~= bk then fail("opts.cu_seqlens_q has %d sequences and opts.cu_seqlens_k %d", bq, bk) end
    p.batch = bq
    p.sq = opts.max_seqlen_q or (p.seqlens_q and longest(p.seqlens_q)) or qs[1]
    p.sk = opts.max_seqlen_k or (p.seqlens_k and longest(p.seqlens_k)) or ks[1]
  else
    if ks[1] ~= qs[1] then fail("Q has batch %d and K %d", qs[1], ks[1]) end
    p.batch, p.sq, p.sk = qs[1], qs[2], ks[2]
  end
  -- options
  local scale = opts.scale
  if scale == nil then scale = 1 / math.sqrt(d) end
  if type(scale) ~= "number" or scale ~= scale or scale == math.huge or scale == -math.huge then
    fail("opts.scale must be a finite number, got %s", tostring(scale))
  end
  p.scale = scale
  if opts.causal ~= nil and type(opts.causal) ~= "boolean" then
    fail("opts.causal must be a boolean, got %s", type(opts.causal))
  end
  p.causal = opts.causal == true
  local left, right = -1, -1
  if opts.window ~= nil then
    local w = opts.window
    if type(w) ~= "table" or #w ~= 2 then
      fail("opts.window must be {left, right} (-1: unbounded), got %s", tostring(w))
    end
    for i = 1, 2 do
      if type(w[i]) ~= "number" or w[i] % 1 ~= 0 or w[i] < -1 then
        fail("opts.window[%d] must be an integer >= -1 (-1: unbounded), got %s", i, tostring(w[i]))
      end
    end
    left, right = w[1], w[2]
  end
  if p.causal then right = 0 end
  p.window = { left, right }
  -- LSE
  local lse_shape = varlen and { hq, qs[1] } or { p.batch, hq, p.sq }
  local lse = opts.lse
  if lse == nil then
    lse = (fake and tensor.fake_tensor or cute.tensor)(cute.f32, lse_shape, "row")
  else
    local s = dims(lse, "opts.lse", #lse_shape, varlen and "(Hq, total_q)" or "(B, Hq, Sq)")
    if lse.dtype ~= cute.f32 then fail("opts.lse must be f32, got %s", lse.dtype.name) end
    for i = 1, #lse_shape do
      if s[i] ~= lse_shape[i] then
        fail("opts.lse is (%s); this problem's LSE is (%s)", table.concat(s, ", "), table.concat(lse_shape, ", "))
      end
    end
  end
  p.lse = lse
  -- O and the LSE must not share memory with what other tiles read: K and V
  -- (every query tile reads them), and Q, but for O being Q itself (each tile
  -- reads its Q rows before it writes the same O rows: in place is safe)
  common.check_no_overlap("cute.lib.attention", { { O, "O" }, { lse, "the LSE" } },
    { { Q, "Q" }, { K, "K" }, { V, "V" } }, { ["O=Q"] = true })
  if common.overlap(lse, O) then
    fail("the LSE overlaps O in memory: the kernel writes both, and one would overwrite the other; give the LSE "
      .. "memory of its own")
  end
  return p
end

-- The arch a plan targets.
local function target_arch(opts)
  if opts.arch ~= nil then
    if type(opts.arch) ~= "string" or not opts.arch:match("^sm_%d+a?$") then
      fail("opts.arch must be a target name such as \"sm_80\" or \"sm_90a\", got %s", tostring(opts.arch))
    end
    return common.check_arch("cute.lib.attention", opts.arch)
  end
  local ok, info = pcall(cute.device_info)
  if ok and info.compute_capability then
    local cc = info.compute_capability
    return string.format("sm_%d%d%s", cc[1], cc[2], cc[1] == 9 and "a" or "")
  end
  return "sm_80"
end

-- Elements a global -> shared copy can move: 16 bytes, less when a stride or
-- the address is not aligned to it.
local function vec_of(t, strides, rank)
  local v = 8
  while v > 1 do
    local ok = t:alignment() >= v * 2
    for i = 1, rank - 1 do ok = ok and strides[i] % v == 0 end
    if ok then break end
    v = v / 2
  end
  return v
end

-- The sm_80 tiles: BM query rows a CTA (16 a warp), BN keys a step, two
-- stages of K and V. Picked from ptxas's register counts (sm_80 and sm_90a,
-- causal and not; no GPU measurement yet): every row of the table compiles
-- without spilling except head dim 256, whose 128 f32 accumulators a thread
-- and V's fragments spill 120 bytes on sm_80 (8 on sm_90a).
local SM80_CONFIGS = {
  [64] = { bm = 128, bn = 64, warps = 8, stages = 2, q_regs = true },   -- 151-165 registers
  [128] = { bm = 128, bn = 64, warps = 8, stages = 2, q_regs = true },  -- 233-248 registers
  [256] = { bm = 64, bn = 32, warps = 4, stages = 2, q_regs = false },  -- 255 registers, spills
}
M.SM80_CONFIGS = SM80_CONFIGS
-- The fields of the sm_80 kernel's opts.config (pack: decode's packing of GQA
-- heads; fused_combine: decode's combine in the split kernel).
M.SM80_CONFIG_KEYS = { "bm", "bn", "warps", "stages", "q_regs", "pack", "fused_combine" }

local function sm80_plan(p, opts, why)
  local base = SM80_CONFIGS[p.d]
  if not base then
    fail("head dimension %d is not supported by the sm_80 kernel (it takes 64, 128 and 256)", p.d)
  end
  local cfg = {}
  for key, v in pairs(base) do cfg[key] = v end
  if opts.config ~= nil then
    if type(opts.config) ~= "table" then fail("opts.config must be a table, got %s", type(opts.config)) end
    common.check_config_keys("cute.lib.attention", opts.config, M.SM80_CONFIG_KEYS, "the sm_80 kernel's")
    for key, v in pairs(opts.config) do cfg[key] = v end
  end
  cfg.dtype, cfg.d, cfg.varlen = p.dtype.name, p.d, p.varlen
  cfg.causal = p.causal
  cfg.has_left, cfg.has_right = p.window[1] >= 0, p.window[2] >= 0
  cfg.even_k = not p.varlen and p.sk % cfg.bn == 0
  local rank = p.varlen and 3 or 4
  cfg.q_vec = math.min(vec_of(p.q, L.stride(p.q.layout), rank), vec_of(p.o, L.stride(p.o.layout), rank))
  cfg.k_vec = vec_of(p.k, L.stride(p.k.layout), rank)
  cfg.v_vec = vec_of(p.v, L.stride(p.v.layout), rank)
  local smem = (cfg.bm * p.d + cfg.stages * 2 * cfg.bn * p.d) * 2
  local kern = M.kernel(cfg)
  if opts.arch then kern = kern:with { arch = opts.arch } end
  local args = { p.q, p.k, p.v, p.o, p.lse, p.varlen and p.cu_seqlens_q or false,
    p.varlen and p.cu_seqlens_k or false, cute.f32(p.scale * LOG2E), cute.i32(p.hq / p.hkv),
    cute.i32(p.window[1]), cute.i32(p.window[2]), false, false, false, false, false, false, false }
  return {
    kernel = kern, args = args, grid = { math.max(1, math.ceil(p.sq / cfg.bm)), p.hq, p.batch },
    block = cfg.warps * 32, smem = smem, config = cfg, problem = p, kernel_name = "sm80",
    why = string.format("%s; the sm_80 FlashAttention-2 kernel (mma.sync, ldmatrix, cp.async): %dx%d tiles, %d warps, "
      .. "head dim %d", why, cfg.bm, cfg.bn, cfg.warps, p.d),
  }
end

--- What forward would launch, without launching: a table with kernel, args,
-- grid, block, smem (bytes of dynamic shared memory), config, problem,
-- kernel_name ("sm80", or the Hopper module's) and why (a sentence). On an
-- sm_90 target (the device's, or opts.arch = "sm_90a" without a GPU) the plan
-- of cute.lib.attention_sm90 is taken where that module is installed and
-- takes the problem; otherwise the sm_80 kernel (which runs on Hopper too).
-- @param Q the queries (B, Sq, Hq, D) (varlen: (total_q, Hq, D))
-- @param K the keys (B, Sk, Hkv, D)
-- @param V the values, K's shape
-- @param O the output, Q's shape (nil: made)
-- @param opts optional: forward's options, and arch ("sm_80", "sm_90a")
-- @return the plan
-- @usage local p = cute.lib.attention.plan(Q, K, V, O, { arch = "sm_90a" })
function M.plan(Q, K, V, O, opts)
  opts = opts or {}
  local p = M.problem(Q, K, V, O, opts)
  local arch = target_arch(opts)
  p.arch = arch
  if opts.kernel ~= nil and opts.kernel ~= "sm80" and opts.kernel ~= "sm90" then
    fail("opts.kernel is %s; it is \"sm80\" (mma.sync) or \"sm90\" (the Hopper module)", tostring(opts.kernel))
  end
  local why
  if arch:match("^sm_9") and opts.kernel ~= "sm80" then
    local ok, mod = pcall(require, "cute.lib.attention_sm90")
    if ok and type(mod) == "table" and mod.plan then
      local plan, why_not = mod.plan(p, opts)
      if plan then
        plan.problem = plan.problem or p
        plan.kernel_name = plan.kernel_name or "sm90"
        return plan
      end
      why = string.format("%s target, but the Hopper kernel does not take this problem (%s)", arch,
        tostring(why_not or "no reason given"))
    else
      why = string.format("%s target, but cute.lib.attention_sm90 is not available", arch)
    end
    if opts.kernel == "sm90" then fail("opts.kernel = \"sm90\": %s", why) end
  else
    why = opts.kernel == "sm80" and "opts.kernel = \"sm80\"" or (arch .. " target")
  end
  return sm80_plan(p, opts, why)
end

-- ---------------------------------------------------------------------------
-- forward's plan cache
--
-- Planning a call (the checks, the views, TMA descriptors, the kernel's
-- config) costs tens of microseconds of host time, as much as a short
-- kernel runs. A call with the same Q, K, V and O objects and the same
-- options (scale, causal, window, config by its contents, arch, kernel,
-- max_seqlen_q/k, opts.lse and device offsets by identity, Lua offsets by
-- their values, the stream, the device) launches the kernel it launched
-- before. Keyed weakly by the tensor objects (Q, then K, V, O), so dropping
-- one drops its plans; an entry holds no tensor of the caller (LuaJIT has
-- no ephemerons: a weak key its value reaches is never collected): the
-- caller's tensors are put into the kernel's arguments for the launch and
-- taken out after, as decode does. Not cached (planned every call, as
-- before): calls without O or opts.lse (forward makes them), fake tensors,
-- options of other types (a function, a config holding tables), device
-- offsets without max_seqlen_q and max_seqlen_k (the plan reads their
-- lengths), plans of several launches (plan.launch).

-- A cache key's string for a stream (a CUstream by its handle, a simulator
-- stream by a number of its own), "-" for none; nil for anything else.
local stream_ids = setmetatable({ n = 0 }, { __mode = "k" })
local function stream_key(stream)
  if stream == nil then return "-" end
  if type(stream) == "cdata" then return tostring(stream.handle) end -- (a CUstream: its handle)
  if type(stream) ~= "table" then return nil end
  local sid = stream_ids[stream] -- (the simulator's streams: one id each)
  if not sid then
    stream_ids.n = stream_ids.n + 1
    sid = "sim stream " .. stream_ids.n
    stream_ids[stream] = sid
  end
  return sid
end

-- A cache key's string for the current device (the simulator's arch and SMs).
local function device_key()
  local dev = runtime.current_device()
  if dev == "sim" then
    local info = cute.device_info()
    return "sim " .. info.arch .. "/" .. tostring(info.sm_count)
  end
  return dev .. "/" .. runtime.generation(dev)
end

-- A number for an object (opts.lse, device offsets): a key string must not hold the object itself.
local ident = common.ident

local function real_tensor(t) return tensor.is_device_tensor(t) and not t.fake end

-- nil or a number (or a string, a boolean) as a key's part; nil (not
-- cacheable) for any other value.
local function scalar_key(v, kind)
  if v == nil then return "-" end
  if type(v) ~= kind then return nil end
  return kind == "number" and string.format("%.17g", v) or tostring(v)
end

-- The offsets' part of a key: a Lua list by its values, a device tensor by
-- its identity (only with both max_seqlen options: without them the plan
-- reads the lengths from the tensor, which may change in place).
local function offsets_key(x, opts)
  if x == nil then return "-" end
  if real_tensor(x) then
    if type(opts.max_seqlen_q) ~= "number" or type(opts.max_seqlen_k) ~= "number" then return nil end
    return "#" .. ident(x)
  end
  if type(x) ~= "table" or tensor.is_device_tensor(x) then return nil end
  local n = 0
  for _ in pairs(x) do n = n + 1 end
  if n ~= #x then return nil end
  local items = {}
  for i = 1, n do
    if type(x[i]) ~= "number" then return nil end
    items[i] = string.format("%.17g", x[i])
  end
  return "[" .. table.concat(items, ",") .. "]"
end

-- The key of a forward call's plan, or nil when the call is not cached.
local function forward_key(Q, K, V, O, opts)
  for key in pairs(opts) do
    if not OPTIONS[key] then return nil end
  end
  local lse = opts.lse
  if not (real_tensor(Q) and real_tensor(K) and real_tensor(V) and real_tensor(O) and real_tensor(lse)) then
    return nil
  end
  local w, wk = opts.window, "-"
  if w ~= nil then
    if type(w) ~= "table" or tensor.is_device_tensor(w) or type(w[1]) ~= "number" or type(w[2]) ~= "number" then
      return nil
    end
    local n = 0
    for _ in pairs(w) do n = n + 1 end
    if n ~= 2 then return nil end
    wk = string.format("{%.17g,%.17g}", w[1], w[2])
  end
  local ck = "-"
  if opts.config ~= nil then
    ck = common.config_key(opts.config)
    if not ck then return nil end
  end
  local parts = { scalar_key(opts.scale, "number"), scalar_key(opts.causal, "boolean"), wk, ck,
    scalar_key(opts.arch, "string"), scalar_key(opts.kernel, "string"), scalar_key(opts.max_seqlen_q, "number"),
    scalar_key(opts.max_seqlen_k, "number"), offsets_key(opts.cu_seqlens_q, opts),
    offsets_key(opts.cu_seqlens_k, opts), stream_key(opts.stream) }
  for i = 1, 11 do
    if parts[i] == nil then return nil end
  end
  parts[12] = "#" .. ident(lse)
  parts[13] = device_key()
  return table.concat(parts, "|")
end

-- Q -> K -> V -> O -> {n = entries, plans = {[key] = entry}}
local fwd_cache = setmetatable({}, { __mode = "k" })
local fwd_stats = { plans = 0, hits = 0 }
-- The most plans kept for one (Q, K, V, O): varlen calls with other Lua
-- offsets each time would otherwise pile up plans (and their offsets).
M.FORWARD_CACHE_PLANS = 8

local function forward_lookup(Q, K, V, O, key)
  local byK = fwd_cache[Q]
  local byV = byK and byK[K]
  local byO = byV and byV[V]
  local set = byO and byO[O]
  return set and set.plans[key]
end

-- The caller's objects a plan's arguments may hold, by their slot code.
local function bound(code, Q, K, V, O, opts)
  if code == 1 then return Q elseif code == 2 then return K elseif code == 3 then return V
  elseif code == 4 then return O elseif code == 5 then return opts.lse elseif code == 6 then return opts.cu_seqlens_q
  else return opts.cu_seqlens_k end
end

-- Keeps a call's plan: its kernel, launch configuration and arguments, with
-- the caller's objects taken out of them (their slots remembered).
local function forward_store(Q, K, V, O, opts, key, plan)
  if plan.launch then return end
  local n = table.maxn(plan.args)
  local args, slots = {}, {}
  for i = 1, n do
    local a = plan.args[i]
    for code = 1, 7 do
      local x = bound(code, Q, K, V, O, opts)
      if x ~= nil and rawequal(a, x) then
        a = false
        slots[#slots + 1] = i
        slots[#slots + 1] = code
        break
      end
    end
    args[i] = a
  end
  local e = { kernel = plan.kernel, args = args, n = n, slots = slots,
    launch = { grid = plan.grid, block = plan.block, cluster = plan.cluster } }
  local byK = fwd_cache[Q] or setmetatable({}, { __mode = "k" })
  fwd_cache[Q] = byK
  local byV = byK[K] or setmetatable({}, { __mode = "k" })
  byK[K] = byV
  local byO = byV[V] or setmetatable({}, { __mode = "k" })
  byV[V] = byO
  local set = byO[O]
  if not set or set.n >= M.FORWARD_CACHE_PLANS then
    set = { n = 0, plans = {} }
    byO[O] = set
  end
  if not set.plans[key] then set.n = set.n + 1 end
  set.plans[key] = e
  fwd_stats.plans = fwd_stats.plans + 1
end

-- Launches a cached plan with the caller's objects in their slots.
local function forward_launch(e, Q, K, V, O, opts)
  local a, slots = e.args, e.slots
  for i = 1, #slots, 2 do a[slots[i]] = bound(slots[i + 1], Q, K, V, O, opts) end
  e.launch.stream = opts.stream
  local ok, why = pcall(e.kernel.launch, e.kernel, e.launch, unpack(a, 1, e.n))
  for i = 1, #slots, 2 do a[slots[i]] = false end
  e.launch.stream = nil
  if not ok then error(why, 0) end
end

--- forward's plan cache: {entries (plans kept for live tensors), tensors
-- (the Q objects it has plans for), plans (made and kept), hits}; with
-- clear = true, empties it and zeroes the counters.
-- @param clear optional: empty the cache
-- @return the counters
-- @usage local s = cute.lib.attention.forward_cache(); print(s.entries, s.hits)
function M.forward_cache(clear)
  if clear then
    for Q in pairs(fwd_cache) do fwd_cache[Q] = nil end
    fwd_stats.plans, fwd_stats.hits = 0, 0
  end
  local entries, tensors = 0, 0
  for _, byK in pairs(fwd_cache) do
    tensors = tensors + 1
    for _, byV in pairs(byK) do
      for _, byO in pairs(byV) do
        for _, set in pairs(byO) do entries = entries + set.n end
      end
    end
  end
  return { entries = entries, tensors = tensors, plans = fwd_stats.plans, hits = fwd_stats.hits }
end

--- Fused attention forward: O = softmax(scale Q K^T + mask) V, and the
-- log-sum-exp of each row. Q, O (B, Sq, Hq, D), K, V (B, Sk, Hkv, D), bf16 or
-- f16, D contiguous, D 64, 128 or 256, Hq a multiple of Hkv. opts: scale
-- (1/sqrt(D)), causal (bottom-right aligned when Sq ~= Sk), window {left,
-- right} (-1 unbounded), lse (a (B, Hq, Sq) f32 tensor to fill; made if
-- absent), cu_seqlens_q and cu_seqlens_k (varlen: B + 1 offsets, a Lua list or
-- an i32 device tensor, with Q (total_q, Hq, D), K and V (total_k, Hkv, D), LSE
-- (Hq, total_q)), max_seqlen_q and max_seqlen_k (varlen with device offsets),
-- kernel ("sm80" forces the sm_80 kernel), config (its tile), stream. Rows
-- that see no key get O = 0 and LSE = -inf.
-- @param Q the queries
-- @param K the keys
-- @param V the values
-- @param O the output (nil: made)
-- @param opts optional: the options above
-- @return O and LSE
-- @usage local O, lse = cute.lib.attention.forward(Q, K, V, O, { causal = true })
function M.forward(Q, K, V, O, opts)
  local key = O ~= nil and type(opts) == "table" and forward_key(Q, K, V, O, opts)
  if key then
    local e = forward_lookup(Q, K, V, O, key)
    -- (a freed tensor is planned, which raises naming it)
    if e and Q:valid() and K:valid() and V:valid() and O:valid() and opts.lse:valid()
        and (not tensor.is_device_tensor(opts.cu_seqlens_q) or opts.cu_seqlens_q:valid())
        and (not tensor.is_device_tensor(opts.cu_seqlens_k) or opts.cu_seqlens_k:valid()) then
      fwd_stats.hits = fwd_stats.hits + 1
      forward_launch(e, Q, K, V, O, opts)
      return O, opts.lse
    end
  end
  local plan = M.plan(Q, K, V, O, opts)
  local p = plan.problem
  if p.q.fake then fail("forward needs real tensors; plan() takes fake ones") end
  if plan.launch then -- (a plan that is more than one launch: the Hopper module's)
    plan.launch(opts and opts.stream)
    return p.o, p.lse
  end
  local cfg = { grid = plan.grid, block = plan.block }
  if opts and opts.stream then cfg.stream = opts.stream end
  if plan.cluster then cfg.cluster = plan.cluster end
  plan.kernel(cfg)(unpack(plan.args))
  if key then forward_store(Q, K, V, O, opts, key, plan) end
  return p.o, p.lse
end

-- ---------------------------------------------------------------------------
-- Decode: a few query tokens against a long KV cache

-- The combine step of split-KV: O[b, i, h, :] = sum_s exp(LSE_s - LSE) O_s, LSE = log sum_s exp(LSE_s).
-- One CTA a row (b, i, h), a thread a column d: the first warp loads the
-- splits' LSEs at once (lane l splits l, l + 32, l + 64, l + 96, in
-- registers), reduces them with shuffles and puts each split's weight
-- exp(LSE_s - LSE) in shared memory (0 past the splits); every thread sums
-- its column over the splits in groups of CG (64), a group's loads in flight
-- at once, the first group loaded while the weights are computed.
local CG = 64 -- (the combine's group of splits: up to 64 splits, one round trip to the partial outputs)
local combine_kernel = cute.kernel("flash_combine", function(Op, Lp, O, LSE, splits, pdl, dependents)
  -- dependents (constexpr; decode's opts.pdl): the stream's next kernel, a
  -- programmatic dependent launch, may start as this one's CTAs leave
  if dependents then cute.arch.griddepcontrol_launch_dependents() end
  -- pdl (constexpr, sm_90+): launched as a programmatic dependent launch,
  -- so it may start before the split kernel ends: wait for its writes
  if pdl then cute.arch.griddepcontrol_wait() end
  local row = cute.block_idx().x
  local d = cute.thread_idx().x
  local hq, sq = O.layout.shape[3], O.layout.shape[2]
  local h = row % hq
  local i = (row / hq) % sq
  local b = row / (hq * sq)
  local w = cute.smem_allocator():tensor(cute.f32, cute.make_layout(MAX_SPLITS), 16)
  -- the splits in whole groups of CG, each group's loads at once: past the last
  -- split the load is the last split's again and its weight 0, which leaves
  -- the sum's bits as they were (a remainder loop of one split at a time waited
  -- for each load in turn: 15 round trips at 47 splits, the combine 11 us on
  -- the H200 at batch 1 against a 32768-token cache, 7 in groups of 32). The
  -- first group's values are loaded before the weights are known, at the same
  -- time as the LSEs; with the launch bound (256 threads) ptxas keeps all 64
  -- loads in flight (without one it plans for 64 registers and splits them).
  local function part(s) return Op[{ cute.min(s, splits - 1), b, i, h, d }] end -- split s's value (clamped)
  local first = {}
  for s = 0, CG - 1 do first[s] = part(s) end
  if d < 32 then
    local v, mx = combine_lses(Lp, b, h, i, splits, d)
    local lse = combine_weights(v, mx, d, w)
    if d == 0 then LSE[{ b, h, i }] = lse end
  end
  cute.sync_threads()
  local acc = 0.0
  for s = 0, CG - 1 do acc = acc + w[s] * first[s] end
  for s in cute.range(CG, ((splits + CG - 1) / CG) * CG, { unroll = CG }) do acc = acc + w[s] * part(s) end
  O[{ b, i, h, d }] = acc:to(O.dtype)
end, { preprocess = true, trace_key = "cute.lib.attention:combine v7", max_threads = 256 })

local DECODE_OPTIONS = { scale = true, causal = true, window = true, lse = true, cache_seqlens = true,
  block_table = true, page_size = true, num_splits = true, arch = true, config = true, stream = true, pdl = true }
local DECODE_OPTION_NAMES = {}
for n in pairs(DECODE_OPTIONS) do DECODE_OPTION_NAMES[#DECODE_OPTION_NAMES + 1] = n end
table.sort(DECODE_OPTION_NAMES)

-- A list of B lengths (Lua list or i32 tensor) as a device tensor, and the list
-- when given as one (a device tensor is not read back: no synchronisation).
local function lengths(x, b, limit, fake)
  if tensor.is_device_tensor(x) then
    if x.dtype ~= cute.i32 or L.size(x.layout) ~= b then
      fail("opts.cache_seqlens must be %d i32 lengths (one a sequence), got %s", b, tostring(x))
    end
    if not x:valid() then fail("opts.cache_seqlens was freed (or its device was reset)") end
    return nil, x
  end
  if type(x) ~= "table" or #x ~= b then
    fail("opts.cache_seqlens must be a list (or i32 tensor) of %d lengths, one a sequence", b)
  end
  for i = 1, b do
    if type(x[i]) ~= "number" or x[i] % 1 ~= 0 or x[i] < 0 or x[i] > limit then
      fail("opts.cache_seqlens[%d] is %s: a length from 0 to %d (the cache's capacity)", i, tostring(x[i]), limit)
    end
  end
  local dev = fake and tensor.fake_tensor(cute.i32, { b }) or cute.tensor(cute.i32, b)
  if not fake then dev:copy_from(x) end
  return x, dev
end

-- Registers a thread of the decode kernel takes, from ptxas (sm_80 / sm_90a,
-- bf16, split or not; 64-row tiles of 4 warps and 16-row tiles of one): head
-- dim 64 156-175, 128 237-252, 256 255 (and spills); rounded up for the
-- occupancy model.
local DECODE_REGS = { [64] = 176, [128] = 256, [256] = 256 }

--- CTAs of `threads` threads, `smem` bytes of shared memory and `regs`
-- registers a thread that one SM holds at once (at least 1): the least of
-- what its shared memory (1 KiB reserved a CTA), registers (allocated 256 a
-- warp at a time) and threads allow. info: a device_info table.
-- @param info the device (cute.device_info())
-- @param threads threads a CTA
-- @param smem bytes of shared memory a CTA
-- @param regs registers a thread
-- @return CTAs an SM
-- @usage local n = cute.lib.attention.ctas_per_sm(cute.device_info(), 128, 81920, 248)
function M.ctas_per_sm(info, threads, smem, regs)
  local warps = math.ceil(threads / 32)
  local by_smem = math.floor((info.smem_per_sm or 233472) / (smem + 1024))
  local by_regs = math.floor((info.registers_per_sm or 65536) / (warps * math.ceil(regs * 32 / 256) * 256))
  local by_threads = math.floor((info.max_threads_per_sm or 2048) / (warps * 32))
  return math.max(1, math.min(by_smem, by_regs, by_threads, 32))
end

-- The cost of a CTA beyond its key tiles (its prologue, epilogue and share of
-- the combine), in key tiles: the wave model's only tuned constant.
M.DECODE_CTA_OVERHEAD = 2

--- The number of key splits of a decode launch: `ctas` CTAs a split (query
-- tiles x heads x batch), the longest sequence `tiles` key tiles long, `slots`
-- CTAs resident on the whole GPU at once (SMs x CTAs an SM). Each split is at
-- least two key tiles (at most MAX_SPLITS splits); among those counts, the one
-- that minimises waves x (tiles a split + DECODE_CTA_OVERHEAD), where waves =
-- ceil(ctas splits / slots) (CTAs of one launch, equal work, finish a wave
-- at a time), the smallest on a tie.
-- @param ctas CTAs a split
-- @param tiles key tiles of the longest sequence
-- @param slots CTAs the GPU holds at once
-- @return the split count
-- @usage local s = cute.lib.attention.decode_splits(8, 512, 264) -- 32
function M.decode_splits(ctas, tiles, slots)
  local most = math.max(1, math.min(MAX_SPLITS, math.floor(tiles / 2)))
  local best, best_cost = 1, math.huge
  for s = 1, most do
    local cost = math.ceil(ctas * s / slots) * (math.ceil(tiles / s) + M.DECODE_CTA_OVERHEAD)
    if cost < best_cost then best, best_cost = s, cost end
  end
  return best
end

-- Everything of a decode call but its split count: the checks, the problem,
-- the kernel configuration (split unset) and the occupancy model.
local function decode_setup(Q, Kc, Vc, O, opts)
  if type(opts) ~= "table" then fail("opts must be a table, got %s", type(opts)) end
  for key in pairs(opts) do
    if not DECODE_OPTIONS[key] then
      fail("unknown decode option '%s'%s (the options are: %s)", tostring(key),
        err.did_you_mean(tostring(key), DECODE_OPTION_NAMES), table.concat(DECODE_OPTION_NAMES, ", "))
    end
  end
  local qs = dims(Q, "Q", 4, "(B, Sq, Hq, D)")
  local paged = opts.block_table ~= nil
  local ks = dims(Kc, "Kcache", 4, paged and "(pages, page_size, Hkv, D)" or "(B, S_cache, Hkv, D)")
  local B = qs[1]
  local page, bt, capacity = nil, nil, ks[2]
  if paged then
    bt = opts.block_table
    local bs = dims(bt, "opts.block_table", 2, "(B, max_pages)")
    if bt.dtype ~= cute.i32 then fail("opts.block_table must be i32, got %s", bt.dtype.name) end
    if bs[1] ~= B then fail("opts.block_table has %d rows and Q a batch of %d", bs[1], B) end
    page = ks[2]
    if opts.page_size ~= nil and opts.page_size ~= page then
      fail("opts.page_size is %s but the caches' pages hold %d tokens (their second mode)", tostring(opts.page_size),
        page)
    end
    capacity = bs[2] * page
  elseif opts.page_size ~= nil then
    fail("opts.page_size needs opts.block_table (paged caches)")
  elseif ks[1] ~= B then
    fail("Q has batch %d and the caches %d", B, ks[1])
  end
  if opts.cache_seqlens == nil and paged then
    fail("paged caches need opts.cache_seqlens (the length of each sequence)")
  end
  if opts.pdl ~= nil and type(opts.pdl) ~= "boolean" then
    fail("opts.pdl must be a boolean (a programmatic dependent launch), got %s", type(opts.pdl))
  end
  local splits = opts.num_splits
  if splits ~= nil and (type(splits) ~= "number" or splits % 1 ~= 0 or splits < 1 or splits > MAX_SPLITS) then
    fail("opts.num_splits must be a whole number from 1 to %d, got %s", MAX_SPLITS, tostring(splits))
  end
  -- the problem as forward sees it, with the caches as K and V (shapes checked there)
  local fopts = { scale = opts.scale, causal = opts.causal, window = opts.window, lse = opts.lse, arch = opts.arch,
    config = opts.config, kernel = "sm80" }
  local Kv, Vv = Kc, Vc
  if paged then -- (a batch-shaped view for forward's checks: the caches as (1, pages x page, Hkv, D))
    dims(Vc, "Vcache", 4, "(pages, page_size, Hkv, D)")
    local vs = L.shape(Vc.layout)
    for i = 1, 4 do
      if vs[i] ~= ks[i] then fail("Kcache and Vcache must have the same shape") end
    end
    for _, x in ipairs { { Kc, "Kcache" }, { Vc, "Vcache" } } do
      if L.stride(x[1].layout)[4] ~= 1 then fail("%s's head dimension D must be contiguous (stride 1)", x[2]) end
    end
    local shape = { B, page, ks[3], ks[4] }
    Kv, Vv = tensor.fake_tensor(Kc.dtype, shape, "row"), tensor.fake_tensor(Vc.dtype, shape, "row")
  end
  local p = M.problem(Q, Kv, Vv, O, fopts)
  p.k, p.v = Kc, Vc
  p.paged, p.page_size, p.block_table = paged, page, bt
  local list, dev
  if opts.cache_seqlens ~= nil then
    list, dev = lengths(opts.cache_seqlens, B, capacity, Q.fake)
  end
  p.cache_seqlens, p.seqlens_k = dev, list
  p.sk = capacity
  if list then
    local m = 0
    for i = 1, #list do m = math.max(m, list[i]) end
    p.sk = m
  end
  -- One new token and grouped-query heads: the G = Hq / Hkv query heads that
  -- share a KV head become G rows of one query tile (the same position, so a
  -- causal mask or a right window changes nothing), and each KV head's cache
  -- is read once instead of G times. Q and O seen as (B, G, Hkv, D), LSE as
  -- (B, Hkv, G): views of the same memory.
  local kp = p -- the problem the kernel sees
  local G = p.hq / p.hkv
  local st = { B = B, G = G, d = p.d, paged = paged, page = page, capacity = capacity, arch = opts.arch,
    num_splits = splits }
  if p.sq == 1 and G > 1 and p.window[1] < 0 and not (opts.config and opts.config.pack == false) then
    local function view(t, lay)
      if t.fake then return tensor.fake_tensor(t.dtype, L.shape(lay), lay, { align = t:alignment() }) end
      return t:view(lay)
    end
    local qd, od, ld = L.stride(p.q.layout), L.stride(p.o.layout), L.stride(p.lse.layout)
    st.q_layout = L.make_layout({ B, G, p.hkv, p.d }, { qd[1], qd[3], G * qd[3], 1 })
    st.o_layout = L.make_layout({ B, G, p.hkv, p.d }, { od[1], od[3], G * od[3], 1 })
    st.l_layout = L.make_layout({ B, p.hkv, G }, { ld[1], G * ld[2], ld[2] })
    kp = {}
    for key, v in pairs(p) do kp[key] = v end
    kp.q, kp.o, kp.lse = view(p.q, st.q_layout), view(p.o, st.o_layout), view(p.lse, st.l_layout)
    kp.sq, kp.hq, kp.causal, kp.window = G, p.hkv, false, { -1, -1 }
  end
  -- the parallelism is in the splits: up to 16 query rows (one token's packed
  -- heads, or a few tokens) a tile of one warp, so that no warp computes rows
  -- of padding and an SM holds more CTAs (three at head dim 128 on an H100,
  -- more bytes in flight); more rows, or head dim 256, 64-row tiles of 4 warps
  local given = {}
  if type(opts.config) == "table" then
    for key, v in pairs(opts.config) do given[key] = v end
  end
  if not (given.bm or given.warps) then
    if kp.sq <= 16 and p.d <= 128 then given.bm, given.warps = 16, 1 else given.bm, given.warps = 64, 4 end
  elseif not given.warps then -- (one of the two given: the other from it, 16 rows a warp)
    given.warps = type(given.bm) == "number" and math.max(1, math.min(4, math.floor(given.bm / 16))) or nil
  elseif not given.bm then
    given.bm = type(given.warps) == "number" and 16 * given.warps or nil
  end
  if given.fused_combine ~= nil and type(given.fused_combine) ~= "boolean" then
    fail("opts.config.fused_combine must be a boolean, got %s", type(given.fused_combine))
  end
  st.fused = given.fused_combine == true
  if opts.config == nil or type(opts.config) == "table" then fopts.config = given end
  local plan = sm80_plan(kp, fopts, "decode")
  local cfg = plan.config
  cfg.causal, cfg.has_right = kp.causal, kp.window[2] >= 0
  if paged then
    cfg.bn = math.min(cfg.bn, page)
    if page % 16 ~= 0 or page % cfg.bn ~= 0 then
      fail("page size %d: the sm_80 kernel takes pages of a multiple of 16 tokens", page)
    end
  end
  cfg.paged, cfg.seqlens = paged, dev ~= nil
  cfg.even_k = false
  st.p, st.kp, st.cfg, st.packed = p, kp, cfg, kp ~= p
  st.sq, st.hq = kp.sq, kp.hq -- the kernel's rows and heads
  st.scalars = { plan.args[8], plan.args[9], plan.args[10], plan.args[11] } -- scale log2 e, hratio, left, right
  st.block = cfg.warps * 32
  -- (the fused combine's 16 bytes of flag left out: the same split count as the two kernels)
  st.smem = (cfg.bm * p.d + cfg.stages * 2 * cfg.bn * p.d) * 2
  st.m_blocks = math.ceil(kp.sq / cfg.bm)
  st.ctas = st.m_blocks * kp.hq * B
  -- the GPU the split count is planned for: the current device, else (no GPU)
  -- an H100 for an sm_90 target and an A100 otherwise
  local ok, info = pcall(cute.device_info)
  if not ok then
    local hopper = (opts.arch or ""):match("^sm_9") ~= nil
    info = { sm_count = hopper and 132 or 108, smem_per_sm = hopper and 233472 or 167936, registers_per_sm = 65536,
      max_threads_per_sm = 2048 }
  end
  st.slots = info.sm_count * M.ctas_per_sm(info, st.block, st.smem, DECODE_REGS[p.d] or 255)
  -- on sm_90 and later the combine is a programmatic dependent launch: its
  -- launch overlaps the split kernel's end (it waits for the partials with
  -- griddepcontrol.wait)
  local row = st.arch and cute.compiler.target(st.arch)
  local cap = not st.arch and ok and info.compute_capability -- (the device's, without opts.arch)
  local cc = row and row.cc or (cap and cap[1] * 10 + cap[2]) or 0
  st.pdl = cc >= 90
  -- opts.pdl (sm_90 and later): the split (or only) kernel a programmatic dependent
  -- launch too, waiting at its start for the stream's previous kernel, and each
  -- call's last kernel letting the next call's start early
  st.pdl_chain = st.pdl and opts.pdl == true
  return st
end

-- The split count of a call whose longest sequence is `keys` keys.
local function decode_split_count(st, keys)
  if st.num_splits then return st.num_splits end
  local tiles = math.max(1, math.ceil(keys / st.cfg.bn))
  return M.decode_splits(st.ctas, tiles, st.slots)
end

-- The launches of a split count: {kernel, args, grid, block, config, combine,
-- fused, ...} with the user's tensors' slots of args (and combine.args) false;
-- Ow, Lw: the partial O and LSE (split > 1); counts: the arrival counters of
-- the fused combine (split > 1 and st.fused), zeroed.
local function decode_variant(st, splits, Ow, Lw, counts)
  local cfg = {}
  for key, v in pairs(st.cfg) do cfg[key] = v end
  cfg.split = splits > 1
  cfg.fused_combine = cfg.split and st.fused
  cfg.launch_dependents = cfg.split and not st.fused and st.pdl
  cfg.pdl_wait = st.pdl_chain or nil
  local kern = M.kernel(cfg)
  if st.arch then kern = kern:with { arch = st.arch } end
  local s = st.scalars
  local v = {
    kernel = kern, splits = splits, config = cfg, block = st.block, smem = st.smem,
    grid = { splits * st.m_blocks, st.hq, st.B },
    args = { false, false, false, Ow or false, Lw or false, false, false, s[1], s[2], s[3], s[4], false, false,
      st.page and cute.i32(st.page) or false, cute.i32(splits), false, false, counts or false },
    why = string.format("decode: the sm_80 kernel over %d split%s of the keys%s, %dx%d tiles%s%s", splits,
      splits > 1 and "s" or "", st.paged and (" from pages of " .. st.page) or "", cfg.bm, cfg.bn,
      st.packed and string.format(", the %d query heads of a KV head in one tile", st.G) or "",
      cfg.fused_combine and "; the combine fused into it (the last CTA of a tile's splits to finish merges them)"
        or ""),
    fused = cfg.fused_combine, pdl = st.pdl_chain or nil,
  }
  if cfg.split and not cfg.fused_combine then
    local ck = combine_kernel
    if st.arch then ck = ck:with { arch = st.arch } end
    v.combine = { kernel = ck, args = { Ow, Lw, false, false, cute.i32(splits), cute.constexpr(st.pdl),
      cute.constexpr(st.pdl_chain) },
      grid = st.B * st.sq * st.hq, block = st.d, pdl = st.pdl }
  end
  return v
end

-- The shapes of the partial O and LSE of `splits` splits.
local function workspace_shapes(st, splits)
  return { splits, st.B, st.sq, st.hq, st.d }, { splits, st.B, st.hq, st.sq }
end

-- The fused combine's arrival counters: one i32 a query tile (B, Hq, m_blocks),
-- zeroed here once; the last CTA of a tile's splits puts its counter back to 0,
-- so that the next launch (stream-ordered after it) finds them all zero.
local function new_counters(st, fake)
  local n = st.B * st.hq * st.m_blocks
  if fake then return tensor.fake_tensor(cute.i32, { n }) end
  return cute.tensor(cute.i32, n):fill(0)
end

--- What decode would launch: the split kernel's plan (kernel, args, grid, block,
-- config, problem, why) and, when the keys are split, combine = {kernel, args,
-- grid, block} and the workspace (partial O and LSE, f32); with
-- opts.config.fused_combine, fused = true and no combine: the split kernel
-- combines (its args end with O, LSE and its arrival counters, zeroed once:
-- each launch leaves them zero). Same arguments as decode; it plans afresh
-- each call (decode keeps its plans in a cache).
-- @param Q the new queries (B, Sq, Hq, D), Sq small
-- @param Kc the key cache: (B, S_cache, Hkv, D), or paged (pages, page_size, Hkv, D)
-- @param Vc the value cache, Kc's shape
-- @param O the output, Q's shape (nil: made)
-- @param opts optional: decode's options
-- @return the plan
-- @usage local p = cute.lib.attention.decode_plan(q, kc, vc, nil, { cache_seqlens = lens, num_splits = 8 })
function M.decode_plan(Q, Kc, Vc, O, opts)
  local st = decode_setup(Q, Kc, Vc, O, opts or {})
  local p, kp = st.p, st.kp
  local splits = decode_split_count(st, p.sk)
  local mk = Q.fake and tensor.fake_tensor or cute.tensor
  local Ow, Lw, counts
  if splits > 1 then
    local os_, ls = workspace_shapes(st, splits)
    Ow, Lw = mk(cute.f32, os_, "row"), mk(cute.f32, ls, "row")
    if st.fused then counts = new_counters(st, Q.fake) end
  end
  local plan = decode_variant(st, splits, Ow, Lw, counts)
  local a = plan.args
  a[1], a[2], a[3], a[12], a[13] = kp.q, p.k, p.v, p.cache_seqlens or false, p.block_table or false
  if plan.combine then
    plan.combine.args[3], plan.combine.args[4] = kp.o, kp.lse
  elseif plan.fused then
    a[16], a[17] = kp.o, kp.lse
  else
    a[4], a[5] = kp.o, kp.lse
  end
  plan.problem = p
  return plan
end

-- ---------------------------------------------------------------------------
-- decode's plan cache: a call whose tensors have the shapes, strides, dtypes
-- and alignments of an earlier one, with the same options, on the same device
-- and stream, takes that call's plan: no checks beyond the key, no planning, no
-- allocation. An entry holds the kernels, the launch configurations, the
-- split workspace (one per entry, so per stream) and the device copy of Lua
-- lengths; the user's tensors are put into the arguments for the launch and
-- taken out after it.

local ffi = require "ffi"

local cache = { entries = {}, count = 0, clock = 0 }
local stats = { plans = 0, hits = 0, evictions = 0 }
M.DECODE_CACHE_ENTRIES = 16

-- A tensor's part of the key: dtype, shape, strides, alignment (cached on the
-- tensor: tensors never change layout).
local function tensor_key(t)
  local k = rawget(t, "_decode_key")
  if not k then
    k = t.dtype.name .. "(" .. table.concat(t._sl, ",") .. ":" .. table.concat(t._dl, ",") .. ")" .. t._align
    rawset(t, "_decode_key", k)
  end
  return k
end

local function value_key(v)
  local tv = type(v)
  if tv == "number" then return string.format("%.17g", v) end
  if tv == "table" then
    if tensor.is_device_tensor(v) then return tensor_key(v) end
    local keys = {}
    for key in pairs(v) do keys[#keys + 1] = tostring(key) end
    table.sort(keys)
    for i, key in ipairs(keys) do
      local x = v[key]
      if x == nil then x = v[tonumber(key)] end
      keys[i] = key .. "=" .. (type(x) == "table" and tostring(x) or value_key(x))
    end
    return "{" .. table.concat(keys, ",") .. "}"
  end
  return tostring(v)
end

-- The key of a call, or nil when the call is not one the cache takes (then
-- decode plans it, raising on what is wrong).
local function decode_key(Q, Kc, Vc, O, opts)
  for key in pairs(opts) do
    if not DECODE_OPTIONS[key] then return nil end
  end
  for _, t in ipairs { Q, Kc, Vc, O } do
    if not tensor.is_device_tensor(t) or t.fake then return nil end
  end
  local lens, stream = opts.cache_seqlens, opts.stream
  if lens ~= nil and type(lens) ~= "table" then return nil end
  local sid = stream_key(stream)
  if not sid then return nil end
  return table.concat({ tensor_key(Q), tensor_key(Kc), tensor_key(Vc), tensor_key(O),
    value_key(opts.scale), value_key(opts.causal), value_key(opts.window), value_key(opts.num_splits),
    value_key(opts.page_size), value_key(opts.arch), value_key(opts.config), value_key(opts.lse),
    value_key(opts.block_table), value_key(opts.pdl),
    lens == nil and "all" or (tensor.is_device_tensor(lens) and tensor_key(lens) or ("list" .. #lens)),
    device_key(), sid }, "|")
end

local function free_entry(e)
  for _, t in ipairs { e.Ow, e.Lw, e.lens_dev, e.counts } do
    if t and t:valid() then t:free() end
  end
end

-- A new cache entry for a call (planning it, which checks everything).
local function new_entry(key, Q, Kc, Vc, O, opts)
  local st = decode_setup(Q, Kc, Vc, O, opts)
  stats.plans = stats.plans + 1
  local e = { key = key, st = st, variants = {}, splits_of = {}, views = setmetatable({}, { __mode = "k" }),
    ws_splits = 0, lsen = opts.cache_seqlens ~= nil and not tensor.is_device_tensor(opts.cache_seqlens) }
  if e.lsen then -- Lua lengths: the entry's device copy (made by setup), its host staging and what it holds
    e.lens_dev = st.p.cache_seqlens
    e.lens_host = ffi.new("int32_t[?]", st.B)
    e.lens_last = {}
    for i = 1, st.B do e.lens_last[i] = opts.cache_seqlens[i] end
  end
  -- the entry keeps no user tensor: only layouts and numbers
  st.p, st.kp = nil, nil
  if cache.count >= M.DECODE_CACHE_ENTRIES then -- evict the least recently used
    local old
    for _, x in pairs(cache.entries) do
      if not old or x.used < old.used then old = x end
    end
    cache.entries[old.key] = nil
    cache.count = cache.count - 1
    stats.evictions = stats.evictions + 1
    free_entry(old)
  end
  cache.entries[key] = e
  cache.count = cache.count + 1
  return e
end

-- The entry's launches for a split count, with the workspace grown to it
-- (a view of the first `splits` partial results of the largest so far).
local function entry_variant(e, splits)
  local v = e.variants[splits]
  if v then return v end
  local st = e.st
  local Ow, Lw
  if splits > 1 then
    if st.fused and not e.counts then e.counts = new_counters(st) end
    if splits > e.ws_splits then
      local os_, ls = workspace_shapes(st, splits)
      e.Ow, e.Lw = cute.tensor(cute.f32, os_, "row"), cute.tensor(cute.f32, ls, "row")
      e.ws_splits, e.variants = splits, {}
    end
    local os_, ls = workspace_shapes(st, splits)
    Ow = e.Ow:view(L.make_layout(os_, L.stride(e.Ow.layout)))
    Lw = e.Lw:view(L.make_layout(ls, L.stride(e.Lw.layout)))
  end
  v = decode_variant(st, splits, Ow, Lw, splits > 1 and e.counts or nil)
  v.launch = { grid = v.grid, block = v.block, pdl = v.pdl }
  if v.combine then v.combine.launch = { grid = v.combine.grid, block = v.combine.block, pdl = v.combine.pdl } end
  e.variants[splits] = v
  return v
end

-- t seen through the entry's packed layout (memoised a tensor).
local function packed_view(e, t, lay)
  local v = e.views[t]
  if not v then
    v = t:view(lay)
    e.views[t] = v
  end
  return v
end

--- decode's plan cache: {entries, plans (made), hits, evictions}; with
-- clear = true, frees every entry's workspace, empties it and zeroes the counters.
-- @param clear optional: empty the cache
-- @return the counters
-- @usage local s = cute.lib.attention.decode_cache(); print(s.plans, s.hits)
function M.decode_cache(clear)
  if clear then
    for _, e in pairs(cache.entries) do free_entry(e) end
    cache.entries, cache.count = {}, 0
    stats.plans, stats.hits, stats.evictions = 0, 0, 0
  end
  return { entries = cache.count, plans = stats.plans, hits = stats.hits, evictions = stats.evictions }
end

--- Attention of a few new query tokens against a long KV cache (decoding):
-- split-KV (several CTAs over the cache, each writing a partial O and LSE,
-- then a combine kernel, or with config.fused_combine the last CTA of each
-- query tile's splits), caches of per-sequence lengths, paged caches. Q, O
-- (B, Sq, Hq, D) with Sq small (1 to a few; causal aligns them with the
-- cache's end), Kcache, Vcache (B, S_cache, Hkv, D), or paged (pages,
-- page_size, Hkv, D) with opts.block_table ((B, max_pages) i32 device tensor:
-- sequence b's token t is in page block_table[b, t // page_size]). opts: cache_seqlens
-- (B lengths, a Lua list or i32 device tensor; default the cache's capacity;
-- paged caches need it), num_splits (1 to 128; default: from a wave model of
-- the GPU), page_size (checked against the caches), scale, causal, window,
-- lse ((B, Hq, Sq) f32), arch, config, stream. Returns O and LSE (made when
-- not given: pass both for calls that allocate nothing). Plans are cached:
-- a call like an earlier one (shapes, strides, dtypes, options, device,
-- stream) launches at once.
-- @param Q the new queries (B, Sq, Hq, D)
-- @param Kcache the key cache
-- @param Vcache the value cache
-- @param O the output, Q's shape (nil: made)
-- @param opts optional: the options above
-- @return O and LSE
-- @usage local o = cute.lib.attention.decode(q, kc, vc, nil, { cache_seqlens = lens })
function M.decode(Q, Kcache, Vcache, O, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("opts must be a table, got %s", type(opts)) end
  if tensor.is_device_tensor(Q) and Q.fake then fail("decode needs real tensors; decode_plan() takes fake ones") end
  local lse = opts.lse
  if tensor.is_device_tensor(Q) and not Q.fake then -- (what the caller did not give is made, as forward does)
    local qs = L.shape(Q.layout)
    if O == nil and type(qs) == "table" and #qs == 4 then O = cute.tensor(Q.dtype, qs, "row") end
    if lse == nil and type(qs) == "table" and #qs == 4 then
      lse = cute.tensor(cute.f32, { qs[1], qs[3], qs[2] }, "row")
    end
  end
  local key = O ~= nil and decode_key(Q, Kcache, Vcache, O, opts)
  local e = key and cache.entries[key]
  if not e then
    local o2 = opts
    if lse ~= opts.lse then
      o2 = {}
      for k, v in pairs(opts) do o2[k] = v end
      o2.lse = lse
    end
    if not key then -- (not a call the cache takes: planned and launched once)
      local plan = M.decode_plan(Q, Kcache, Vcache, O, o2)
      local stream = opts.stream
      plan.kernel { grid = plan.grid, block = plan.block, stream = stream, pdl = plan.pdl } (unpack(plan.args))
      if plan.combine then
        local c = plan.combine
        c.kernel { grid = c.grid, block = c.block, stream = stream, pdl = c.pdl } (unpack(c.args))
      end
      return plan.problem.o, plan.problem.lse
    end
    e = new_entry(key, Q, Kcache, Vcache, O, o2)
  else
    stats.hits = stats.hits + 1
  end
  cache.clock = cache.clock + 1
  e.used = cache.clock
  local st = e.st
  -- what the key does not say: the tensors still valid, the lengths in range
  local bt, lens = opts.block_table, opts.cache_seqlens
  if not (Q:valid() and Kcache:valid() and Vcache:valid() and O:valid() and lse:valid() and (bt == nil or bt:valid())
      and (not tensor.is_device_tensor(lens) or lens:valid())) then
    M.decode_plan(Q, Kcache, Vcache, O, opts) -- (raises, naming the tensor)
    fail("a tensor of this call was freed")
  end
  local most = st.capacity -- the longest sequence
  local lens_dev = lens
  if e.lsen then
    local changed = false
    most = 0
    local last = e.lens_last
    for i = 1, st.B do
      local x = lens[i]
      if type(x) ~= "number" or x % 1 ~= 0 or x < 0 or x > st.capacity then
        M.decode_plan(Q, Kcache, Vcache, O, opts) -- (raises, naming the length)
        fail("opts.cache_seqlens[%d] is %s: a length from 0 to %d", i, tostring(x), st.capacity)
      end
      if x > most then most = x end
      if x ~= last[i] then changed = true end
    end
    if changed then
      local h = e.lens_host
      for i = 1, st.B do
        h[i - 1] = lens[i]
        last[i] = lens[i]
      end
      e.lens_dev.buffer:copy_from_host(h, 4 * st.B, e.lens_dev.offset, opts.stream)
    end
    lens_dev = e.lens_dev
  end
  local tiles = math.ceil(most / st.cfg.bn)
  local splits = e.splits_of[tiles]
  if not splits then
    splits = decode_split_count(st, most)
    e.splits_of[tiles] = splits
  end
  local v = entry_variant(e, splits)
  local q, o, l = Q, O, lse
  if st.packed then
    q, o, l = packed_view(e, Q, st.q_layout), packed_view(e, O, st.o_layout), packed_view(e, lse, st.l_layout)
  end
  local a = v.args
  a[1], a[2], a[3], a[12], a[13] = q, Kcache, Vcache, lens_dev or false, bt or false
  local stream = opts.stream
  local c = v.combine
  if c then
    c.args[3], c.args[4] = o, l
  elseif v.fused then
    a[16], a[17] = o, l
  else
    a[4], a[5] = o, l
  end
  v.launch.stream = stream
  local ok, why = pcall(v.kernel.launch, v.kernel, v.launch, unpack(a))
  if ok and c then
    c.launch.stream = stream
    ok, why = pcall(c.kernel.launch, c.kernel, c.launch, unpack(c.args))
    c.args[3], c.args[4], c.launch.stream = false, false, nil
  end
  a[1], a[2], a[3], a[12], a[13], v.launch.stream = false, false, false, false, false, nil
  if v.fused then
    a[16], a[17] = false, false
  elseif not c then
    a[4], a[5] = false, false
  end
  if not ok then error(why, 0) end
  return O, lse
end

return M
