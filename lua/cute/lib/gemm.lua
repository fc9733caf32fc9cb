--- cute.lib.gemm: an Ampere-style tensor-core GEMM (mma.sync), for sm_80
-- and later (Hopper included), and the high-level entry point cute.gemm.
--
--   C = alpha * A @ B + beta * C     A: M x K, B: K x N, C: M x N (each [, L] batched)
--   cute.gemm(A, B)                  -- a new C (f32 for 16-bit inputs)
--   cute.gemm(A, B, C, {alpha = 2, beta = 1})
--
-- The kernel, one CTA a BM x BN tile of C (threads: warps WM x WN, each a
-- (BM / WM) x (BN / WN) warp tile of m16n8k16 atoms):
--
--   * global -> shared: cp.async, 16 bytes a thread a copy (narrower when the
--     strides do not allow), STAGES tiles in flight (a multistage pipeline:
--     cp.async.commit_group / wait_group), zero-filled past the matrix edges;
--   * shared layouts swizzled (16-byte chunks XORed with row bits) so that
--     ldmatrix reads and cp.async writes are free of bank conflicts;
--   * shared -> registers: ldmatrix.x4, transposed for M- or N-major
--     operands, double-buffered across the k-blocks of a tile;
--   * mma.sync on register fragments (cute.gemm);
--   * epilogue: alpha, beta (C read only when beta ~= 0), conversion to C's
--     dtype, vectorised stores, predicated at the edges.
--
-- Operands may be row- or column-major (either major order for A and for B)
-- and of any size; A and B 16-bit (bf16, f16) with f32 accumulation, tf32
-- (f32 inputs) and int8 (i32 accumulation) use plain shared-memory reads
-- instead of ldmatrix. Configurations come from a small table by dtype and
-- size (M.pick), or are given.
local cute = require "cute"
local err = require "cute._err"
local atoms = require "cute.atom"
local trace_atom = require "cute.trace.atom"

local M = {}

-- Shared layout of a rows x cols tile stored with `major` ("k": cols
-- contiguous, "mn": rows contiguous), elements of `bytes`: the 16-byte
-- chunks of a 128-byte line XORed with the row bits above the line, so that
-- 8 rows read at the same column land in 8 different chunks.
--- The swizzled shared-memory layout of a rows x cols tile (see the comment above).
-- @param rows the tile's rows
-- @param cols the tile's columns
-- @param major "k" (cols contiguous) or "mn" (rows contiguous)
-- @param bytes the element size in bytes
-- @return a ComposedLayout
-- @usage local sA = gemm.smem_layout(128, 32, "k", 2)
function M.smem_layout(rows, cols, major, bytes)
  local contiguous = major == "k" and cols or rows
  local function log2(x) return math.floor(math.log(x) / math.log(2) + 0.5) end
  local line = math.min(contiguous * bytes, 128)
  local lrb = log2(128 / line)
  local mbits = log2(16 / bytes)
  local b = 3 - lrb
  local s = log2(contiguous) + lrb - mbits
  local outer = major == "k" and cute.make_layout({ rows, cols }, { cols, 1 }) or cute.make_layout({ rows, cols })
  if b <= 0 or line < 32 then return outer end
  return cute.make_composed_layout(cute.Swizzle(b, mbits, s), 0, outer)
end

-- The MMA op for operand dtypes.
local function mma_op(ta, tc)
  local w = cute.nvgpu.warp
  if ta.name == "bf16" or ta.name == "f16" then return w.MmaF16BF16Op(ta, tc, { 16, 8, 16 }) end
  if ta.name == "f32" or ta.name == "tf32" then return w.MmaTF32Op({ 16, 8, 8 }) end
  if ta.name == "i8" or ta.name == "u8" then return w.MmaI8Op(ta, ta, { 16, 8, 32 }) end
  if ta.name == "e4m3" or ta.name == "e5m2" then return w.MmaFP8Op(ta, ta, { 16, 8, 32 }) end
  err.raise("cute.gemm: no tensor-core GEMM for %s inputs (bf16, f16, f32 as tf32, i8, u8, e4m3, e5m2)", ta.name)
end

-- The kernel for one configuration (cached by its key).
local kernels = {}

-- trace_key: the configuration's key (M.kernel), which with the signature
-- determines the kernel's IR: everything the body captures comes from cfg.
local function build(cfg, trace_key)
  local BM, BN, BK, STAGES = cfg.bm, cfg.bn, cfg.bk, cfg.stages
  local WM, WN = cfg.wm, cfg.wn
  local ta = cute.dtype.get(cfg.a_dtype)
  local tacc = cute.dtype.get(cfg.acc_dtype)
  local op = mma_op(ta, tacc)
  local atom = cute.make_mma_atom(op)
  local mma = cute.make_tiled_mma(atom, { WM, WN, 1 }, { BM, BN, atom.shape_mnk[3] })
  local threads = mma.size
  local store_dt = ta.name == "tf32" and cute.f32 or ta -- tf32 operands travel as f32
  -- ldmatrix for 16-bit operands, and 8-bit K-major ones (its transpose
  -- works on 16-bit units); plain shared-memory reads otherwise
  local function ldsm_for(major, which)
    if cfg.ldmatrix == false or not (ta.bits == 16 or (ta.bits == 8 and major == "k")) then return nil end
    local catom = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(major == "mn", 4), ta)
    return which == "A" and cute.make_tiled_copy_A(catom, mma) or cute.make_tiled_copy_B(catom, mma)
  end
  local ldsmA, ldsmB = ldsm_for(cfg.a_major, "A"), ldsm_for(cfg.b_major, "B")
  local kblocks = BK / atom.shape_mnk[3]

  -- global -> shared copies: `vec` elements a copy along the contiguous mode
  local function tiled_g2s(rows, major, vec)
    return require("cute.lib.common").tiled_g2s(store_dt, threads, rows, BK, major, vec)
  end
  local copyA = tiled_g2s(BM, cfg.a_major, cfg.a_vec)
  local copyB = tiled_g2s(BN, cfg.b_major, cfg.b_vec)

  -- 8-bit operands read without ldmatrix (M/N-major) stay unswizzled: their
  -- element-wise reads then share one base register with immediate offsets,
  -- where swizzled addresses would each need a register of their own
  local function smem_layout(rows, major, ldsm)
    if ta.bits == 8 and not ldsm then
      return major == "k" and cute.make_layout({ rows, BK }, { BK, 1 }) or cute.make_layout({ rows, BK })
    end
    return M.smem_layout(rows, BK, major, store_dt.bytes)
  end
  local layA = smem_layout(BM, cfg.a_major, ldsmA)
  local layB = smem_layout(BN, cfg.b_major, ldsmB)

  return cute.kernel("gemm_" .. ta.name .. "_" .. BM .. "x" .. BN .. "x" .. BK, function(A, B, C, alpha, beta)
    cute.launch_bounds(threads, cfg.min_blocks or 1)
    local Mr, Kr = A.layout.shape[1], A.layout.shape[2]
    local Nr = B.layout.shape[1]
    local tid = cute.thread_idx().x
    -- which tile: grouped rasterisation (GROUP tiles of M share columns of B in L2)
    local tiles_m = (Mr + (BM - 1)) / BM
    local tiles_n = (Nr + (BN - 1)) / BN
    local pid = cute.block_idx().x
    local group = cfg.group
    local per_group = tiles_n * group
    local function coords(tile)
      local first_m = (tile / per_group) * group
      local gsize = cute.min(tiles_m - first_m, group)
      return first_m + (tile % per_group) % gsize, (tile % per_group) / gsize
    end
    local bm, bn = coords(pid)
    local l = cute.block_idx().z
    local Al, Bl, Cl = A[{ cute._, cute._, l }], B[{ cute._, cute._, l }], C[{ cute._, cute._, l }]
    local gA = cute.local_tile(Al, { BM, BK }, { bm, cute._ }) -- (BM, BK, k-tiles)
    local gB = cute.local_tile(Bl, { BN, BK }, { bn, cute._ })
    local gC = cute.local_tile(Cl, { BM, BN }, { bm, bn })
    local ktiles = (Kr + (BK - 1)) / BK
    -- persistent (full tiles only): a CTA an SM, each taking tiles pid,
    -- pid + grid, ...; the copies run ahead across tiles, so that the next
    -- tile's first stages load while this one's last k-tiles multiply and its
    -- results go out (the launch gives min(tiles, SMs) CTAs: M.plan)
    local persistent = cfg.persistent and cfg.even
    local nprog = persistent and cute.grid_dim().x
    local total = ktiles
    if persistent then total = ((tiles_m * tiles_n - pid + nprog - 1) / nprog) * ktiles end

    -- shared memory: STAGES tiles of A and of B, each stage its own swizzled tile
    local smem = cute.smem_allocator()
    local stage_a = cute.cosize(layA.outer or layA) -- a swizzle stays inside the tile
    local stage_b = cute.cosize(layB.outer or layB)
    local sA_all = smem:tensor(store_dt, cute.make_layout(stage_a * STAGES), 128)
    local sB_all = smem:tensor(store_dt, cute.make_layout(stage_b * STAGES), 128)
    local function sA(s) return cute.make_tensor(sA_all:ptr_at(s * stage_a), layA) end
    local function sB(s) return cute.make_tensor(sB_all:ptr_at(s * stage_b), layB) end

    -- predicates: the coordinates each copy covers, against what is left
    -- of the matrices (uneven shapes only)
    local res_m, res_n = Mr - bm * BM, Nr - bn * BN
    local thrA, thrB = copyA:get_slice(tid), copyB:get_slice(tid)
    local cA = thrA:partition_S(cute.make_identity_tensor({ BM, BK }))
    local cB = thrB:partition_S(cute.make_identity_tensor({ BN, BK }))
    local nva, nvb = cute.size(cA.layout, 0), cute.size(cB.layout, 0)
    local function lt(a, b)
      if type(a) == "number" and type(b) == "number" then return a < b end
      if type(a) == "number" then return b:gt(a) end
      return a:lt(b)
    end
    local even = cfg.even
    -- one k-tile kt into stage s (nothing past the last tile); live: a
    -- predicate for all the copies (false: they read nothing, cp.async's
    -- zero-fill), or nil
    local function issue(kt, s, live)
      local res_k = Kr - kt * BK
      local pa, pb
      if not even then
        pa = function(r)
          local c = cA[r * nva]
          local p = cute.and_(lt(c[1], res_m), lt(c[2], res_k))
          if live ~= nil then return cute.and_(live, p) end
          return p
        end
        pb = function(r)
          local c = cB[r * nvb]
          local p = cute.and_(lt(c[1], res_n), lt(c[2], res_k))
          if live ~= nil then return cute.and_(live, p) end
          return p
        end
      elseif live ~= nil then
        pa = function() return live end
        pb = pa
      end
      cute.copy(copyA, thrA:partition_S(gA[{ cute._, cute._, kt }]), thrA:partition_D(sA(s)), pa)
      cute.copy(copyB, thrB:partition_S(gB[{ cute._, cute._, kt }]), thrB:partition_D(sB(s)), pb)
    end
    -- persistent: the k-tile whose copies go out next, its tile and the
    -- tile's coordinates (worked out once a tile, when the copies move on to
    -- the next: the rasterisation divides)
    if persistent then
      local c_kt, c_tile = cute.var(cute.i32, 0), cute.var(cute.i32, pid)
      local c_bm, c_bn = cute.var(cute.i32, bm), cute.var(cute.i32, bn)
      issue = function(_, s)
        local kt = c_kt.value
        cute.copy(copyA, thrA:partition_S(cute.local_tile(Al, { BM, BK }, { c_bm.value, kt })),
          thrA:partition_D(sA(s)))
        cute.copy(copyB, thrB:partition_S(cute.local_tile(Bl, { BN, BK }, { c_bn.value, kt })),
          thrB:partition_D(sB(s)))
        local wrap = (kt + 1):eq(ktiles)
        c_kt.value = cute.where(wrap, 0, kt + 1)
        if wrap then
          c_tile.value = c_tile.value + nprog
          c_bm.value, c_bn.value = coords(c_tile.value)
        end
      end
    end

    -- register fragments: A and B of a whole k-tile, the accumulators
    local thr = mma:get_slice(tid)
    local tCrA = thr:partition_fragment_A(sA(0)) -- (V, MMA_M, MMA_K)
    local tCrB = thr:partition_fragment_B(sB(0))
    local tCrC = thr:partition_fragment_C(gC)
    tCrC:fill(0)
    -- shared -> registers for k-block kb of stage s
    local la, lb = ldsmA and ldsmA:get_slice(tid), ldsmB and ldsmB:get_slice(tid)
    local function kblock_view(frag, kb)
      return frag[{ cute._, cute._, kb }]
    end
    local AK = atom.shape_mnk[3]
    local function load_kblock(s, kb)
      if ldsmA then
        local srcA = la:partition_S(cute.local_tile(sA(s), { BM, AK }, { 0, kb }))
        cute.copy(ldsmA, srcA, la:retile(kblock_view(tCrA, kb)))
      else
        cute.copy(thr:partition_A(sA(s))[{ cute._, cute._, kb }], kblock_view(tCrA, kb))
      end
      if ldsmB then
        local srcB = lb:partition_S(cute.local_tile(sB(s), { BN, AK }, { 0, kb }))
        cute.copy(ldsmB, srcB, lb:retile(kblock_view(tCrB, kb)))
      else
        cute.copy(thr:partition_B(sB(s))[{ cute._, cute._, kb }], kblock_view(tCrB, kb))
      end
    end

    -- prologue: STAGES - 1 tiles in flight
    for s = 0, STAGES - 2 do
      if total - s > 0 then issue(s, s) end
      cute.arch.cp_async_commit_group()
    end
    cute.arch.cp_async_wait_group(STAGES - 2)
    cute.sync_threads()
    local read = cute.var(cute.i32, 0)
    local write = cute.var(cute.i32, STAGES - 1)
    local single = cfg.frag_buffers == 1
    if not single then load_kblock(read.value, 0) end

    -- the copies of a later tile go out after the first k-block's MMAs (cfg.copy_late,
    -- the default), so that after the barrier the tensor cores start at once
    -- rather than after every warp's address arithmetic; or before them
    local copy_late = cfg.copy_late ~= false and kblocks > 1
    -- The copies past the last k-tile are predicated off (branch-free, the
    -- k-tile clamped so that no address leaves the matrix), so that the
    -- loop body is one basic block in which ptxas can spread their address
    -- arithmetic between the MMAs; or skipped by a branch (cfg.copy_branch,
    -- and the persistent schedule, whose copies advance its tile counters).
    local copy_branch = cfg.copy_branch or persistent
    local function next_copies(kt)
      local next_tile = kt + (STAGES - 1)
      if copy_branch then
        if next_tile < total then issue(next_tile, write.value) end
      else
        issue(cute.min(next_tile, total - 1), write.value, next_tile:lt(total))
      end
      cute.arch.cp_async_commit_group()
      write.value = cute.where((write.value + 1):eq(STAGES), 0, write.value + 1)
    end
    -- epilogue: C = alpha acc + beta C, in C's dtype, for the tile gCt
    local n = cute.size(tCrC)
    local read_c = cfg.beta
    local function value(i, old)
      local v = tCrC[i]
      if tacc.is_integer then
        if read_c then v = v * alpha:to(tacc) + old:to(tacc) * beta:to(tacc) else v = v * alpha:to(tacc) end
        return v:to(C.dtype)
      end
      v = v * alpha
      if read_c then v = cute.fma(beta, old:to(cute.f32), v) end
      return v:to(C.dtype)
    end
    -- full tiles that do not read C go out through shared memory: the
    -- fragments into a BM x BN tile (rows padded by 16 bytes, so that the 8
    -- rows a warp writes at once fall in 8 different bank groups), then
    -- 16-byte pieces of rows to global memory, where storing from the MMA's
    -- layout writes 4 bytes a thread (store-queue stalls: 7% of the kernel's
    -- samples). The tile lies over the pipeline's stages, or (persistent:
    -- the next tile's copies are in flight) in shared memory of its own.
    local c_bytes = C.dtype.bytes
    local row_vecs = BN * c_bytes / 16
    local pad = 16 / c_bytes
    local c_tile_bytes = BM * (BN + pad) * c_bytes
    local staged = STAGES * (stage_a + stage_b) * store_dt.bytes
    local smem_c = even and not read_c and cfg.smem_epilogue ~= false and row_vecs >= 1 and row_vecs % 1 == 0
      and threads % row_vecs == 0 and BM % (threads / row_vecs) == 0
      and (persistent and staged + c_tile_bytes + 128 <= 227 * 1024 or c_tile_bytes <= staged)
    local sC
    if smem_c then
      local layC = cute.make_layout({ BM, BN }, { BN + pad, 1 })
      sC = persistent and smem:tensor(C.dtype, layC, 128) or smem:reuse(C.dtype, layC)
    end
    local function epilogue(gCt, rm, rn)
      local tCgC = thr:partition_C(gCt)
      local out = cute.make_fragment_like(tCrC, C.dtype)
      if smem_c then
        cute.sync_threads() -- every warp is done with the stages (or the last tile's rows)
        for i = 0, n - 1 do out[i] = value(i) end
        cute.copy(out, thr:partition_C(sC))
        cute.sync_threads()
        local catom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), C.dtype, { num_bits_per_copy = 128 })
        local copyC = cute.make_tiled_copy_tv(catom,
          cute.make_layout({ threads / row_vecs, row_vecs }, { row_vecs, 1 }), cute.make_layout({ 1, 16 / c_bytes }))
        local tc = copyC:get_slice(tid)
        local from = tc:partition_S(sC)
        local rows = cute.make_fragment_like(from)
        cute.copy(copyC, from, rows)
        cute.copy(copyC, rows, tc:partition_D(gCt))
      elseif even then
        local old = read_c and tCgC:load()
        for i = 0, n - 1 do out[i] = value(i, old and old[i]) end
        cute.copy(out, tCgC)
      else
        local cC = thr:partition_C(cute.make_identity_tensor({ BM, BN }))
        for i = 0, n - 1 do
          local c = cC[i]
          if c[1] < rm and c[2] < rn then tCgC[i] = value(i, read_c and tCgC[i]) end
        end
      end
    end

    -- the barrier between k-tiles, after the tile's last MMAs are issued (they
    -- keep the tensor cores busy through it): the next stage is complete, and
    -- every thread is done with the one the next copies overwrite; then the
    -- next tile's first k-block's registers. (ptxas moves register-only work
    -- across it: placed before the last k-block's MMAs, the SASS is the same.)
    local function next_stage()
      cute.arch.cp_async_wait_group(STAGES - 2)
      cute.sync_threads()
      read.value = cute.where((read.value + 1):eq(STAGES), 0, read.value + 1)
      if not single then load_kblock(read.value, 0) end
    end
    -- persistent: the k-tile being multiplied and its tile
    local k_kt, k_tile
    if persistent then k_kt, k_tile = cute.var(cute.i32, 0), cute.var(cute.i32, pid) end
    for kt in cute.range(total) do
      for kb = 0, kblocks - 1 do
        -- the next k-block's registers while this one multiplies (or, with
        -- cfg.frag_buffers = 1, this one's just before its MMAs: fewer
        -- registers, for more warps)
        if single then load_kblock(read.value, kb)
        elseif kb < kblocks - 1 then load_kblock(read.value, kb + 1) end
        if kb == 0 and not copy_late then next_copies(kt) end
        cute.gemm(mma, tCrC, kblock_view(tCrA, kb), kblock_view(tCrB, kb), tCrC)
        if kb == 0 and copy_late then next_copies(kt) end
        if kb == kblocks - 1 then next_stage() end
      end
      if persistent then
        local last = k_kt.value == ktiles - 1
        if last then
          local tbm, tbn = coords(k_tile.value)
          epilogue(cute.local_tile(Cl, { BM, BN }, { tbm, tbn }))
          tCrC:fill(0)
        end
        k_tile.value = cute.where(last, k_tile.value + nprog, k_tile.value)
        k_kt.value = cute.where(last, 0, k_kt.value + 1)
      end
    end
    cute.arch.cp_async_wait_group(0)
    if not persistent then epilogue(gC, res_m, res_n) end
  end, { trace_key = trace_key, preprocess = true })
end

M._build = build

--- The kernel for a configuration: cfg = {a_dtype, acc_dtype, a_major,
-- b_major ("k" or "mn"), a_vec, b_vec (elements a global -> shared copy),
-- bm, bn, bk, stages, wm, wn, group, even (all extents multiples of the
-- tiles), beta (C is read), ldmatrix (false: plain shared-memory reads),
-- copy_late (false: the next tile's copies before the first k-block's MMAs),
-- smem_epilogue (false: full tiles stored straight from the MMA's registers),
-- persistent (full tiles: a CTA an SM looping over tiles; M.plan sizes the grid),
-- copy_branch (true: the copies past the last k-tile skipped by a branch rather
-- than predicated off), frag_buffers (1: each k-block's registers loaded just
-- before its MMAs, for more warps in fewer registers), min_blocks (CTAs an SM
-- the registers must allow: launch bounds)}.
-- The key of the configuration is the kernel's trace_key, so a kernel
-- compiled before (in any process, with the disk cache) is found without
-- tracing it (docs/compiler.md).
-- @param cfg the configuration (above)
-- @return a cute.kernel
-- @usage local k = cute.lib.gemm.kernel(cute.lib.gemm.plan(A, B, C).config)
function M.kernel(cfg)
  local key = {}
  for _, k in ipairs { "a_dtype", "acc_dtype", "a_major", "b_major", "a_vec", "b_vec", "bm", "bn", "bk", "stages",
    "wm", "wn", "group", "even", "beta", "ldmatrix", "copy_late", "smem_epilogue", "persistent", "copy_branch",
    "frag_buffers", "min_blocks" } do
    key[#key + 1] = tostring(cfg[k])
  end
  key = table.concat(key, ",")
  local k = kernels[key]
  if not k then
    k = build(cfg, "cute.lib.gemm:" .. key)
    kernels[key] = k
  end
  return k
end


-- ---------------------------------------------------------------------------
-- The host side: views, configuration, launch

local L = require "cute.layout"
local tensor = require "cute.tensor"

-- A device tensor as (rows, cols, batch) extents and strides.
local function dims3(t, what)
  if not tensor.is_device_tensor(t) then
    err.raise("cute.gemm: %s must be a device tensor, got %s", what, tostring(t))
  end
  if not t:valid() then err.raise("cute.gemm: %s was freed (or its device was reset)", what) end
  local s, d = L.shape(t.layout), L.stride(t.layout)
  if type(s) ~= "table" or (#s ~= 2 and #s ~= 3) then
    err.raise("cute.gemm: %s must be a matrix (rows, cols) or a batch of them (rows, cols, L), got %s", what,
      tostring(t.layout))
  end
  for i = 1, #s do
    if type(s[i]) ~= "number" or type(d[i]) ~= "number" then
      err.raise("cute.gemm: %s needs flat modes (rows, cols[, L]), got %s", what, tostring(t.layout))
    end
  end
  return { s[1], s[2], s[3] or 1 }, { d[1], d[2], d[3] or 0 }
end

--- A view of a device tensor with another shape and strides: the same memory (a fake
-- tensor of the same dtype and alignment for a fake one).
-- @param t the device tensor
-- @param shape the view's shape
-- @param stride the view's strides, in elements
-- @return the view
-- @usage local Ct = cute.lib.gemm.view(C, { n, m, 1 }, { 1, n, 0 }) -- C (m x n, row-major) transposed
local function view(t, shape, stride)
  if t.fake then return tensor.fake_tensor(t.dtype, shape, L.make_layout(shape, stride), { align = t:alignment() }) end
  return tensor.from_ptr(t:data_ptr(), t.dtype, L.make_layout(shape, stride))
end
M.view = view

-- Which mode is contiguous ("k" or "mn"), for an operand seen as (mn, k).
local function major_of(stride, what, layout)
  if stride[2] == 1 then return "k" end
  if stride[1] == 1 then return "mn" end
  err.raise("cute.gemm: %s needs a unit stride in one of its two modes (row- or column-major), got %s", what, layout)
end

-- Elements a global -> shared copy can move: 16 bytes, less when the other
-- stride or the address is not aligned to it.
local function vec_of(t, stride, major, dt)
  local v = 16 / dt.bytes
  local other = major == "k" and stride[1] or stride[2]
  local batch = stride[3]
  while v > 1 and (other % v ~= 0 or batch % v ~= 0 or t:alignment() < v * dt.bytes) do v = v / 2 end
  return v
end

-- The configurations, by input dtype and size (measured on an H200 at
-- 4096^3, bf16: 128x256x64 with 3 stages and 2x4 warps 429 TFLOP/s, 4 stages
-- 426, 256x128x64 412, 128x128x64 407, 128x128x32 388, 128x256x32 375; see
-- docs/benchmarks.md).
local CONFIGS = {
  large16 = { bm = 128, bn = 256, bk = 64, stages = 3, wm = 2, wn = 4 },
  medium16 = { bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2 },
  small16 = { bm = 64, bn = 64, bk = 32, stages = 3, wm = 2, wn = 2 },
  tf32 = { bm = 128, bn = 128, bk = 16, stages = 4, wm = 2, wn = 4 },
  int8 = { bm = 128, bn = 128, bk = 64, stages = 3, wm = 2, wn = 4 },
}
M.CONFIGS = CONFIGS

--- The configuration picked for an M x N x K problem of dtype dt.
-- @param m the rows of C
-- @param n the columns of C
-- @param k the reduction extent
-- @param dt the inputs' dtype
-- @return a configuration table
-- @usage local cfg = cute.lib.gemm.pick(4096, 4096, 4096, cute.f16)
function M.pick(m, n, k, dt)
  local _ = k
  if dt.bits == 32 then return CONFIGS.tf32 end
  if dt.bits == 8 then return CONFIGS.int8 end
  if m * n >= 4096 * 4096 then return CONFIGS.large16 end
  if m * n >= 1024 * 1024 then return CONFIGS.medium16 end
  return CONFIGS.small16
end

-- Whether a problem is planned for the Hopper kernel (cute.lib.gemm_sm90)
-- and why (or why not): a sm_90 device (or opts.arch = "sm_90a" without
-- one), its input dtypes and majors, TMA's alignment rules, no
-- opts.config (the sm_80 kernel's table); opts.kernel = "sm80" or "sm90"
-- forces the choice.
local function device_is_sm90()
  local ok, info = pcall(cute.device_info)
  return ok and info.compute_capability and info.compute_capability[1] == 9
end

-- From this many rows cute.gemm takes the Hopper kernel (on an sm_90 target,
-- operands it takes) over cute.lib.gemv. Measured on the H200 (2026-11-28,
-- bench/gemm_sm90_probe.lua with and without SWAP=1, cuBLAS in the same run):
-- the swapped plan's 64 x 16 tiles of C^T against the gemv at 2 / 3 rows x
-- 8192 x 8192: 1.005 / 0.995x cuBLAS against 0.895 / 0.768x; at one row the gemv
-- wins (8192x8192, 14336x4096, 4096x4096: 1.03 / 0.98 / 1.40x against 0.99 /
-- 1.01 / 1.05x).
M.GEMV_ROWS_SM90 = 2

--- Whether a problem is planned for the Hopper kernel, and why (see the comment above device_is_sm90).
-- @param dt the inputs' dtype
-- @param a_stride A's strides
-- @param b_stride B's strides
-- @param Av A's kernel view
-- @param Bv B's kernel view
-- @param m the rows of C
-- @param n the columns of C
-- @param k the reduction extent
-- @param batch the batch count
-- @param opts cute.gemm's options
-- @return true or false, and the reason
-- @usage local sm90, why = gemm.choose_sm90(dt, sa, sb, Av, Bv, m, n, k, 1, opts)
function M.choose_sm90(dt, a_stride, b_stride, Av, Bv, m, n, k, batch, opts)
  if opts.kernel ~= nil and opts.kernel ~= "sm80" and opts.kernel ~= "sm90" and opts.kernel ~= "gemv" then
    err.raise("cute.gemm: opts.kernel is %s; it is \"sm80\" (mma.sync), \"sm90\" (TMA + wgmma) or \"gemv\" (M <= 16)",
      tostring(opts.kernel))
  end
  if opts.kernel == "sm80" then return false, "opts.kernel = \"sm80\" forces the mma.sync kernel" end
  if opts.config ~= nil and opts.kernel == nil then
    return false, "opts.config configures the mma.sync kernel (with opts.kernel = \"sm90\" it configures gemm_sm90)"
  end
  local hopper
  if opts.arch ~= nil then
    hopper = opts.arch == "sm_90a" or opts.arch == "sm_90"
  else
    hopper = device_is_sm90()
  end
  local no
  if not hopper and opts.kernel ~= "sm90" then
    no = opts.arch and ("opts.arch is " .. tostring(opts.arch) .. ", not sm_90a") or "the device is not sm_90"
  elseif m == 0 or n == 0 or k == 0 then
    no = "the problem is empty (M, N or K is 0)"
  else
    no = require("cute.lib.gemm_sm90").unsupported(dt, a_stride, b_stride, Av, Bv, batch)
  end
  if no then
    if opts.kernel == "sm90" then err.raise("cute.gemm: opts.kernel = \"sm90\", but %s", no) end
    return false, "the mma.sync kernel (sm_80 and later): " .. no
  end
  return true, (opts.kernel == "sm90" and "opts.kernel = \"sm90\"; " or "")
    .. "a sm_90 target and operands that meet wgmma's and TMA's rules (bf16/f16 of either major, fp8, int8 and "
    .. "tf32 K-major): the warp-specialised TMA + wgmma kernel"
end

-- opts.pdl: a boolean; opts.pdl_prefetch_b: a boolean, true only with pdl (who:
-- the caller's name, for the message)
local function check_pdl(opts, who)
  if opts.pdl ~= nil and type(opts.pdl) ~= "boolean" then
    err.raise("%s: opts.pdl must be a boolean (a programmatic dependent launch), got %s", who, type(opts.pdl))
  end
  local pre = opts.pdl_prefetch_b
  if pre ~= nil and type(pre) ~= "boolean" then
    err.raise("%s: opts.pdl_prefetch_b must be a boolean (B's first stages loaded before the wait), got %s", who,
      type(pre))
  end
  if pre and not opts.pdl then
    err.raise("%s: opts.pdl_prefetch_b loads B before the Hopper kernel waits for the previous kernel: it needs "
      .. "opts.pdl = true", who)
  end
end

local PLAN_OPTIONS = { alpha = true, beta = true, scale_a = true, scale_b = true, kernel = true, arch = true,
  config = true, stream = true, tune = true, bias = true, bias_mode = true, activation = true, epilogue = true,
  tma_store = true, pdl = true, pdl_prefetch_b = true }

--- What cute.gemm(A, B, C, opts) launches, without launching: a table with
-- kernel, args (its arguments: the kernel views of A, B, C, alpha, beta),
-- grid, block, config and C. With fake tensors (cute.fake_tensor; a fake C
-- is made when none is given) `plan.kernel:compile(unpack(plan.args))`
-- compiles what cute.gemm would run, without a GPU. A Hopper plan of a skinny
-- problem may be swapped (config.swapped: C^T = B^T A^T, config's tile one of
-- C^T; docs/hopper.md, "Skinny problems").
-- @param A the device tensor A (M x K[, L])
-- @param B the device tensor B (K x N[, L])
-- @param C optional: the device tensor C (M x N[, L])
-- @param opts optional: as for cute.gemm
-- @return the plan: {kernel =, args =, grid =, block =, config =, C =}
-- @usage local p = cute.lib.gemm.plan(cute.fake_tensor(cute.f16, {512, 512}), B)
function M.plan(A, B, C, opts)
  if C ~= nil and not tensor.is_device_tensor(C) and type(C) == "table" and opts == nil then
    opts, C = C, nil
  end
  opts = opts or {}
  if type(opts) ~= "table" then err.raise("cute.gemm: opts must be a table, got %s", type(opts)) end
  for key in pairs(opts) do
    if not PLAN_OPTIONS[key] then
      local names = {}
      for n in pairs(PLAN_OPTIONS) do names[#names + 1] = n end
      table.sort(names)
      err.raise("cute.gemm: unknown option '%s'%s (the options are: %s)", tostring(key),
        err.did_you_mean(tostring(key), names), table.concat(names, ", "))
    end
  end
  require("cute.lib.common").check_arch("cute.gemm", opts.arch)
  local as, ad = dims3(A, "A")
  local bs, bd = dims3(B, "B")
  local m, k, batch = as[1], as[2], as[3]
  if bs[1] ~= k then err.raise("cute.gemm: A is %dx%d and B is %dx%d: the inner extents differ", m, k, bs[1], bs[2]) end
  local n = bs[2]
  if bs[3] ~= batch then err.raise("cute.gemm: A has %d matrices and B %d", batch, bs[3]) end
  if A.dtype ~= B.dtype then err.raise("cute.gemm: A is %s and B is %s; give both the same dtype", A.dtype.name,
    B.dtype.name) end
  local dt = A.dtype
  mma_op(dt.name == "f32" and cute.tf32 or dt, dt.is_integer and cute.i32 or cute.f32) -- refuses what has no atom
  local acc = dt.is_integer and cute.i32 or cute.f32
  if C == nil then
    C = (A.fake and tensor.fake_tensor or cute.tensor)(acc, batch > 1 and { m, n, batch } or { m, n }, "row")
  end
  local cs, cd = dims3(C, "C")
  if cs[1] ~= m or cs[2] ~= n or cs[3] ~= batch then
    err.raise("cute.gemm: C is %dx%dx%d; A @ B is %dx%dx%d", cs[1], cs[2], cs[3], m, n, batch)
  end
  -- (each tile of C reads whole rows of A and columns of B that other tiles read too)
  require("cute.lib.common").check_no_overlap("cute.gemm", { { C, "C" } }, { { A, "A" }, { B, "B" } })
  -- kernel views: A (M, K, L), B as (N, K, L), C (M, N, L)
  local Av = view(A, { m, k, batch }, { ad[1], ad[2], ad[3] })
  local Bv = view(B, { n, k, batch }, { bd[2], bd[1], bd[3] })
  local Cv = view(C, { m, n, batch }, { cd[1], cd[2], cd[3] })
  local amaj = major_of({ ad[1], ad[2] }, "A", tostring(A.layout))
  local bmaj = major_of({ bd[2], bd[1] }, "B", tostring(B.layout))
  check_pdl(opts, "cute.gemm")
  -- per-tensor scales (fp8's dequantisation factors) fold into alpha
  for _, key in ipairs { "alpha", "beta", "scale_a", "scale_b" } do
    if opts[key] ~= nil and type(opts[key]) ~= "number" then
      err.raise("cute.gemm: opts.%s must be a number, got %s", key, type(opts[key]))
    end
    if opts[key] ~= nil and (opts[key] ~= opts[key] or math.abs(opts[key]) == math.huge) then
      err.raise("cute.gemm: opts.%s must be a finite number, got %s", key, tostring(opts[key]))
    end
  end
  local alpha, beta = (opts.alpha or 1) * (opts.scale_a or 1) * (opts.scale_b or 1), opts.beta or 0
  -- a few rows (decode, M <= 16): the GEMV kernels (cute.lib.gemv), bound by B's bandwidth;
  -- on Hopper from M.GEMV_ROWS_SM90 rows the TMA + wgmma kernel's ping-pong tiles read B faster
  local hopper_rows = m >= M.GEMV_ROWS_SM90 and m <= 16 and opts.kernel == nil and opts.config == nil
    and M.choose_sm90(dt, { ad[1], ad[2], ad[3] }, { bd[2], bd[1], bd[3] }, Av, Bv, m, n, k, batch, opts)
  if m <= 16 and m > 0 and n > 0 and k > 0 and opts.config == nil and (opts.kernel == nil or opts.kernel == "gemv")
      and not hopper_rows then
    local gemv = require "cute.lib.gemv"
    local no = gemv.unsupported(dt, m, { ad[1], ad[2], ad[3] }, { bd[2], bd[1], bd[3] }, Av, Bv)
    if no and opts.kernel == "gemv" then err.raise("cute.gemm: opts.kernel = \"gemv\", but %s", no) end
    if not no then
      local p = gemv.plan(Av, Bv, Cv, alpha, beta, opts)
      p.C, p.kernel_name = C, "gemv"
      p.why = string.format("%sM = %d: the GEMV kernel (a warp a column of C, B streamed in 16-byte vectors)",
        opts.kernel == "gemv" and "opts.kernel = \"gemv\"; " or "", m)
      return p
    end
  end
  if opts.kernel == "gemv" then
    err.raise("cute.gemm: opts.kernel = \"gemv\" takes 1 to 16 rows and no opts.config; this problem has M = %d", m)
  end
  -- Hopper: the warp-specialised TMA + wgmma kernel (cute.lib.gemm_sm90) when it can
  local use90, why = M.choose_sm90(dt, { ad[1], ad[2], ad[3] }, { bd[2], bd[1], bd[3] }, Av, Bv, m, n, k, batch, opts)
  if use90 then
    local p = require("cute.lib.gemm_sm90").plan(Av, Bv, Cv, { m = m, n = n, k = k, l = batch },
      { a = { ad[1], ad[2], ad[3] }, b = { bd[2], bd[1], bd[3] } }, alpha, beta, opts)
    p.C, p.kernel_name = C, "sm90"
    local cl = p.config.cluster
    p.why = why .. string.format("; tile %dx%dx%d, %d stages, group %d (%s)%s", p.config.bm, p.config.bn,
      p.config.bk, p.config.stages, p.config.group, p.config_source, cl and string.format(
        "; cluster %dx%d (the pair shares %s: TMA multicast)", cl[1], cl[2], cl[1] == 2 and "B" or "A") or "")
      .. (p.split_why and ("; " .. p.split_why) or "")
      .. (p.swap_why and ("; " .. p.swap_why .. ": C^T = B^T A^T, the tile one of C^T") or "")
      .. (p.pdl and ("; a programmatic dependent launch (opts.pdl)" .. (p.config.pdl_pre
        and ", B's first stages loaded before it waits (opts.pdl_prefetch_b)" or "")) or "")
    return p
  end
  if opts.bias ~= nil or opts.activation ~= nil or opts.epilogue ~= nil or opts.bias_mode ~= nil then
    err.raise("cute.gemm: fused epilogues (opts.bias, activation, epilogue) run in the Hopper kernel only, and this "
      .. "problem does not run it: %s", why)
  end
  if opts.config ~= nil and opts.config.cluster ~= nil then
    err.raise("cute.gemm: opts.config.cluster is the Hopper kernel's (with opts.kernel = \"sm90\"), and this problem "
      .. "does not run it: %s", why)
  end
  local base = M.pick(m, n, k, dt)
  local cfg = {}
  for key, v in pairs(base) do cfg[key] = v end
  M.check_config_keys(opts.config, M.CONFIG_KEYS, "the mma.sync kernel's")
  for key, v in pairs(opts.config or {}) do cfg[key] = v end
  local store = dt.name == "tf32" and cute.f32 or dt
  cfg.a_dtype = dt.name == "f32" and "tf32" or dt.name
  cfg.acc_dtype = acc.name
  cfg.a_major, cfg.b_major = amaj, bmaj
  cfg.a_vec = vec_of(Av, { ad[1], ad[2], ad[3] }, amaj, store)
  cfg.b_vec = vec_of(Bv, { bd[2], bd[1], bd[3] }, bmaj, store)
  cfg.group = cfg.group or 8
  for _, key in ipairs { "stages", "group", "wm", "wn" } do -- (bm, bn, bk: the tiled MMA names what is wrong)
    local v, least = cfg[key], key == "stages" and 2 or 1
    if type(v) ~= "number" or v % 1 ~= 0 or v < least then
      err.raise("cute.gemm: the mma.sync kernel's %s is a whole number from %d, got %s", key, least, tostring(v))
    end
  end
  cfg.even = m % cfg.bm == 0 and n % cfg.bn == 0 and k % cfg.bk == 0
  if dt.is_integer and (alpha % 1 ~= 0 or beta % 1 ~= 0) then
    err.raise("cute.gemm: integer GEMMs take integer alpha and beta (got %s, %s)", tostring(alpha), tostring(beta))
  end
  cfg.beta = beta ~= 0
  -- The copies past the last k-tile skipped by a branch (copy_branch) rather
  -- than predicated off, in two cases:
  -- * an operand whose rows are not 4-byte aligned (a_vec or b_vec elements
  --   below 32 bits: 4097x4095x63 bf16 has vec 1 for both) is copied element by
  --   element with ld.global + st.shared, not cp.async: each loaded value holds
  --   a register until its store, and in the branch-free loop ptxas spreads the
  --   loads between the MMAs, so that 32 + 32 of them a thread sit beside the
  --   128 accumulators: every such plan of a 128-wide tile compiled at the cap,
  --   254-255 registers, and 4097x4095x63 spilled 4-8 bytes; with the branch
  --   they take 188-245 and none spill (bench/gemm_registers.lua, issue 18);
  -- * K not a multiple of the k-tile (the copies predicated by the K edge too):
  --   tf32 there reaches 254 registers branch-free.
  local sync_copy = cfg.a_vec * store.bits < 32 or cfg.b_vec * store.bits < 32
  if (sync_copy or k % cfg.bk ~= 0) and (opts.config or {}).copy_branch == nil then cfg.copy_branch = true end
  local tiles = math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn)
  if not cfg.even then cfg.persistent = nil end
  local grid_x = tiles
  if cfg.persistent then -- a CTA an SM (or fewer, for few tiles)
    local ok, info = pcall(cute.device_info)
    grid_x = math.min(tiles, ok and info.sm_count or tiles)
  end
  -- (the plan alone, on every path: a second result would reach M.launcher(M.plan(...)) as its stream)
  return { kernel = M.kernel(cfg), args = { Av, Bv, Cv, cute.f32(alpha), cute.f32(beta) },
    grid = { grid_x, 1, batch }, block = cfg.wm * cfg.wn * 32, config = cfg, C = C, kernel_name = "sm80", why = why }
end

-- The fields of the mma.sync kernel's opts.config (M.pick's tile and the
-- kernel's switches).
M.CONFIG_KEYS = { "bm", "bn", "bk", "stages", "wm", "wn", "group", "persistent", "copy_branch", "copy_late",
  "frag_buffers", "smem_epilogue", "min_blocks", "ldmatrix" }

--- Raises for a field of opts.config that `keys` does not name (see
-- cute.lib.common.check_config_keys).
-- @param config opts.config (nil: nothing to check)
-- @param keys the fields the kernel reads
-- @param whose the kernel's name for the message ("the mma.sync kernel's")
-- @usage gemm.check_config_keys(opts.config, gemm.CONFIG_KEYS, "the mma.sync kernel's")
function M.check_config_keys(config, keys, whose)
  require("cute.lib.common").check_config_keys("cute.gemm", config, keys, whose)
end

-- Plans of repeated calls: planning (kernel views, TMA descriptors, the
-- tile choice) costs ~100 us of host time, more than a decode-sized GEMM
-- runs. A call with the same A, B and C objects and the same options reuses
-- the plan (and with it the views whose layouts the launch guard knows).
-- Keyed weakly by the tensor objects, so freeing or dropping a tensor drops
-- its plans; a freed tensor (not valid) is never looked up. opts.config is
-- keyed by its contents at the call (the caller may change the table), so a
-- configured call (split-K's workspace) reuses its plan too. Not cached: C
-- made by the call, a config holding anything but numbers, strings, booleans
-- and lists of them.
local plan_cache = setmetatable({}, { __mode = "k" })
M._plan_cache = plan_cache -- (for tests)
local OPT_KEYS = { "alpha", "beta", "scale_a", "scale_b", "kernel", "arch", "tune", "bias", "bias_mode", "activation",
  "epilogue", "tma_store", "pdl", "pdl_prefetch_b" }

-- A number for an object (a bias tensor, an epilogue function): cute.lib.common.ident.
local ident = require("cute.lib.common").ident

local KEYED = {}
for _, k in ipairs(OPT_KEYS) do KEYED[k] = true end

local config_key = require("cute.lib.common").config_key

-- The options' part of a plan's cache key; nil for options the cache does not
-- take (a config it cannot key by value; what plan refuses).
-- (the options given, in OPT_KEYS' order, as "name=value,": "" for none, so that
-- the common call, cute.gemm(A, B, C), builds no string at all; it runs on every
-- call, ahead of the launch)
local function options_key(opts)
  if opts == nil then return "" end
  for key in pairs(opts) do
    if key ~= "stream" and key ~= "config" and not KEYED[key] then return nil end
  end
  local key = ""
  for _, k in ipairs(OPT_KEYS) do
    local v = opts[k]
    if v ~= nil then
      local t = type(v)
      key = key .. k .. "=" .. ((t == "table" or t == "function") and ("#" .. ident(v)) or tostring(v)) .. ","
    end
  end
  if opts.config ~= nil then
    local ck = config_key(opts.config)
    if not ck then return nil end
    key = key .. "config{" .. ck .. "}"
  end
  return key
end

-- The cache key of a call's plan, or nil when the call cannot be cached
-- (C made by the call, fake or freed tensors, a config not keyed by value).
local function cache_key(A, B, C, opts)
  if C == nil or not tensor.is_device_tensor(C) or A.fake or B.fake or C.fake then return nil end
  if not (A:valid() and B:valid() and C:valid()) then return nil end
  if type(opts) == "table" and tensor.is_device_tensor(opts.bias) and not opts.bias:valid() then return nil end
  return options_key(opts)
end

-- Launches the plan of (A, B, C, opts) under key `extra` (what else the plan
-- depends on; nil: nothing; false: not to be cached), made by make_plan() on a
-- miss and kept when the call can be cached. Returns the plan.
local function launch_cached(A, B, C, opts, extra, make_plan)
  local key = extra ~= false and cache_key(A, B, C, opts) or nil
  if key and extra then key = extra .. "|" .. key end
  local byB = key and plan_cache[A]
  local byC = byB and byB[B]
  local byO = byC and byC[C]
  local p = byO and byO[key]
  if not p then
    p = make_plan()
    p.launcher = p.kernel { grid = p.grid, block = p.block, pdl = p.pdl }
    -- split-K: the reduction of the k-slices after the GEMM kernel (the plan keeps the workspace)
    if p.reduce then p.reduce_launcher = p.reduce.kernel { grid = p.reduce.grid, block = p.reduce.block } end
    if key then
      byB = plan_cache[A] or setmetatable({}, { __mode = "k" })
      plan_cache[A] = byB
      byC = byB[B] or setmetatable({}, { __mode = "k" })
      byB[B] = byC
      byO = byC[C] or {}
      byC[C] = byO
      -- (the cached plan must not hold C: a weak key its own value reaches is
      -- never collected in LuaJIT, which has no ephemerons)
      byO[key] = { kernel = p.kernel, args = p.args, grid = p.grid, block = p.block, launcher = p.launcher,
        reduce = p.reduce, reduce_launcher = p.reduce_launcher, workspace = p.workspace,
        counters = p.counters, pdl = p.pdl }
    end
  end
  M._last_kernel, M._last_args = p.kernel, p.args -- for bench/gemm_probe.lua
  if opts and opts.stream then
    p.kernel { grid = p.grid, block = p.block, stream = opts.stream, pdl = p.pdl }(unpack(p.args))
    local r = p.reduce
    if r then r.kernel { grid = r.grid, block = r.block, stream = opts.stream }(unpack(r.args)) end
  else
    p.launcher(unpack(p.args))
    if p.reduce then p.reduce_launcher(unpack(p.reduce.args)) end
  end
  return p
end

--- A function that launches a plan (M.plan's) as cute.gemm does: its kernel,
-- then, for a split-K plan, the reduction of the k-slices (plan.reduce).
-- @param p the plan
-- @param stream optional: a cute.Stream
-- @return a function() that launches it
-- @usage local run = cute.lib.gemm.launcher(cute.lib.gemm.plan(A, B, C, opts)); run()
function M.launcher(p, stream)
  local k = p.kernel { grid = p.grid, block = p.block, stream = stream, pdl = p.pdl }
  local r = p.reduce
  local rk = r and r.kernel { grid = r.grid, block = r.block, stream = stream }
  local args = p.args
  -- (the kernels' views of split-K's workspace do not own it: the plan does, and may
  -- be dropped while the launcher lives)
  local keep = { p.workspace, p.counters }
  return function()
    local _ = keep
    k(unpack(args))
    if rk then rk(unpack(r.args)) end
  end
end

-- C = alpha * A @ B + beta * C on device tensors (M.gemm)
local function host_gemm(A, B, C, opts)
  local p = launch_cached(A, B, C, opts, nil, function() return (M.plan(A, B, C, opts)) end)
  return p.C or C
end

--- A grouped GEMM in one launch, as a mixture-of-experts layer has it: the
-- rows of A and C split into G problems by `offsets` (G + 1 non-decreasing
-- row numbers from 0 to T; problem e is rows offsets[e+1] .. offsets[e+2]-1,
-- Lua's 1-based list), problem e multiplying its rows of A by matrix e of B:
--   C[r, :] = alpha * A[r, :] @ B[:, :, e] + beta * C[r, :]   for the rows r of e
-- A (T x K), B (K x N x G: one matrix a problem, as the experts' weights), C
-- (T x N). The Hopper kernel only (a device of sm_90 or opts.arch = "sm_90a"),
-- with its dtypes, majors and options (fused epilogues included; a row bias
-- indexes C's rows). Problems without rows are allowed. Returns C.
-- @param A the tokens (T x K), a device tensor
-- @param B the problems' matrices (K x N x G), a device tensor
-- @param C the output (T x N), a device tensor
-- @param offsets a Lua list of G + 1 row offsets: 0, ..., T
-- @param opts optional: cute.gemm's options (alpha, beta, bias, activation, ...)
-- @return C
-- @usage cute.lib.gemm.grouped(X, W, Y, { 0, 1024, 1792, 4096 })
function M.grouped(A, B, C, offsets, opts)
  -- (plans cached as cute.gemm's, the offsets' values in the key: planning
  -- uploads the offsets and the problems' first tiles, which costs more than
  -- a small launch; offsets that are not a list of numbers plan, and fail, each time)
  local ok, text = pcall(table.concat, type(offsets) == "table" and offsets or {}, ",")
  launch_cached(A, B, C, opts, ok and type(offsets) == "table" and ("grouped|" .. text) or false,
    function() return M.grouped_plan(A, B, C, offsets, opts) end)
  return C
end

--- What M.grouped launches, without launching (as M.plan for cute.gemm).
-- @param A the tokens (T x K)
-- @param B the problems' matrices (K x N x G)
-- @param C the output (T x N)
-- @param offsets the G + 1 row offsets
-- @param opts optional: cute.gemm's options
-- @return a table {kernel, args, grid, block, config}
-- @usage local p = cute.lib.gemm.grouped_plan(X, W, Y, offsets, { arch = "sm_90a" })
function M.grouped_plan(A, B, C, offsets, opts)
  opts = opts or {}
  local as, ad = dims3(A, "A")
  local bs, bd = dims3(B, "B")
  local cs, cd = dims3(C, "C")
  if as[3] ~= 1 or cs[3] ~= 1 then err.raise("cute.lib.gemm.grouped: A and C are matrices (T x K, T x N)") end
  local T, K, N, G = as[1], as[2], bs[2], bs[3]
  if bs[1] ~= K then err.raise("cute.lib.gemm.grouped: A is %dx%d and B is %dx%dx%d: the inner extents differ", T, K,
    bs[1], N, G) end
  if cs[1] ~= T or cs[2] ~= N then
    err.raise("cute.lib.gemm.grouped: C is %dx%d; A @ B is %dx%d", cs[1], cs[2], T, N)
  end
  if type(offsets) ~= "table" or #offsets ~= G + 1 then
    err.raise("cute.lib.gemm.grouped: offsets must be a list of %d row offsets (one more than B's %d problems), "
      .. "got %s", G + 1, G, type(offsets) == "table" and (#offsets .. " values") or type(offsets))
  end
  for e = 1, G + 1 do
    local o = offsets[e]
    if type(o) ~= "number" or o % 1 ~= 0 or (e == 1 and o ~= 0) or (e == G + 1 and o ~= T)
        or (e > 1 and o < offsets[e - 1]) then
      err.raise("cute.lib.gemm.grouped: offsets must go from 0 to %d (A's rows), never down; offsets[%d] is %s", T,
        e, tostring(o))
    end
  end
  if A.dtype ~= B.dtype then err.raise("cute.lib.gemm.grouped: A is %s and B is %s", A.dtype.name, B.dtype.name) end
  for key in pairs(opts) do
    if not PLAN_OPTIONS[key] then err.raise("cute.lib.gemm.grouped: unknown option '%s'", tostring(key)) end
  end
  check_pdl(opts, "cute.lib.gemm.grouped")
  local dt = A.dtype
  local Av = view(A, { T, K, 1 }, { ad[1], ad[2], 0 })
  local Bv = view(B, { N, K, G }, { bd[2], bd[1], bd[3] })
  local Cv = view(C, { T, N, 1 }, { cd[1], cd[2], 0 })
  local o = {}
  for key, v in pairs(opts) do o[key] = v end
  o.kernel = "sm90"
  M.choose_sm90(dt, { ad[1], ad[2], 0 }, { bd[2], bd[1], bd[3] }, Av, Bv, T, N, K, 1, o) -- (raises why not)
  local bld = bd[1] == 1 and bd[2] or bd[1] -- B's other stride
  if G > 1 and bd[3] < bld then
    err.raise("cute.lib.gemm.grouped: B's problem stride (%d elements) is below its other stride (%d): TMA's third "
      .. "dimension must be the outermost", bd[3], bld)
  end
  o.group_offsets, o.tune = offsets, false
  local alpha = (opts.alpha or 1) * (opts.scale_a or 1) * (opts.scale_b or 1)
  local p = require("cute.lib.gemm_sm90").plan(Av, Bv, Cv, { m = T, n = N, k = K, l = 1 },
    { a = { ad[1], ad[2], 0 }, b = { bd[2], bd[1], bd[3] } }, alpha, opts.beta or 0, o)
  p.kernel_name, p.C = "sm90", C
  return p
end

--- cute.gemm. On the host, C = alpha * A @ B + beta * C on device tensors:
-- gemm(A, B[, C, opts]), A (M x K), B (K x N), C (M x N), each optionally
-- batched (a third mode L), any strides with one unit stride each. C is made
-- (f32, or i32 for 8-bit integers; row-major) when not given. opts: alpha
-- (1), beta (0; C is then not read), scale_a and scale_b (fp8's per-tensor
-- scales, folded into alpha), stream, kernel ("sm80" or "sm90" forces one),
-- arch ("sm_90a": plan for Hopper without a GPU), config (the tile: for the
-- sm_80 kernel M.pick's bm, bn, bk, stages, wm, wn; for gemm_sm90 bm, bn, bk,
-- stages, group, schedule, cluster, split_k, split_reduce, swap_ab), tune
-- (true: time gemm_sm90's tiles once and cache the winner; docs/autotune.md),
-- and the Hopper kernel's fused epilogue: bias (a device tensor, one value a
-- column, or a row with bias_mode = "row"), activation
-- ("relu", "gelu", "gelu_tanh", "silu") and epilogue (a function(v, m, n, l)
-- traced into the kernel, returning the value to store), and pdl (true: the
-- Hopper kernel as a programmatic dependent launch, its launch and set-up
-- overlapping the previous kernel's end; plan.pdl says where taken) with
-- pdl_prefetch_b (true: B's first stages load before the kernel waits, a promise
-- that no earlier kernel in the stream still writes B). A repeated call
-- with the same tensors and options reuses its plan. Returns C. Inside a kernel,
-- gemm(tiled_mma or mma_atom, D, A, B, C) on register fragments
-- (cute.trace.atom.gemm).
-- @param A the device tensor A (or, in a kernel, a tiled MMA or MMA atom)
-- @param ... B[, C, opts] (or, in a kernel, D, A, B, C)
-- @return C
-- @usage local C = cute.gemm(A, B)
-- @usage cute.gemm(X, W, Y, { bias = b, activation = "gelu_tanh" })
function M.gemm(A, ...)
  if atoms.is_tiled_mma(A) or atoms.is_mma_atom(A) then return trace_atom.gemm(A, ...) end
  return host_gemm(A, ...)
end

return M
