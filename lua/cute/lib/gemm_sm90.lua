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
--     k-tile's stage (its MMAs are done). The epilogue writes
--     alpha * acc + beta * C from the registers to global memory (predicated
--     on ragged tiles) while the producer already loads the next tile;
--   * the tile scheduler: tile t = blockIdx.x, + gridDim.x, ... in grouped
--     order (GROUP tiles of M share a column of B tiles, so that the CTAs
--     running at once share A and B in L2); both roles walk the same tiles,
--     and the barriers' phases carry on from tile to tile.
--
-- TMA zero-fills what lies outside the matrices (and still completes the full
-- byte count), so ragged M, N and K need no predicates in the main loop.
-- Facts: docs/notes/hopper-facts.md section 7; docs/hopper.md section 8.
local cute = require "cute"
local err = require "cute._err"
local wg = require "cute.nvgpu.warpgroup"
local P = cute.pipeline
local A = cute.arch

local M = {}

M.CONFIG = { bm = 128, bn = 256, bk = 64, stages = 4, group = 8 }

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

local kernels = {}

local function build(cfg, trace_key)
  local BM, BN, BK, STAGES, GROUP = cfg.bm, cfg.bn, cfg.bk, cfg.stages, cfg.group
  local ta = cute.dtype.get(cfg.a_dtype)
  local atom = cute.make_mma_atom(wg.MmaF16BF16Op(ta, cute.f32, { 64, BN, 16 }, wg.OperandSource.SMEM,
    wg.OperandMajorMode.K, wg.OperandMajorMode.K))
  local mma = cute.make_tiled_mma(atom, { BM / 64, 1, 1 })
  local consumers = mma.size -- 256 threads: BM / 64 warpgroups
  local threads = 128 + consumers
  local kblocks = BK / 16
  local layA = wg.make_smem_layout_a("K", { BM, BN, BK }, ta, STAGES) -- S<3,3,3> o (BM,BK,STAGES)
  local layB = wg.make_smem_layout_b("K", { BM, BN, BK }, ta, STAGES)
  local stage_a, stage_b = BM * BK, BN * BK -- elements a stage
  local tx_bytes = (stage_a + stage_b) * ta.bytes
  local _ = cute._

  return cute.kernel("gemm_sm90_" .. ta.name .. "_" .. BM .. "x" .. BN .. "x" .. BK,
    function(descA, descB, C, K, alpha, beta)
      cute.launch_bounds(threads, 1)
      local Mr, Nr, L = C.layout.shape[1], C.layout.shape[2], C.layout.shape[3]
      local tid = cute.thread_idx().x
      local wgi = tid / 128
      local smem = cute.smem_allocator()
      local sA_raw = smem:tensor(ta, cute.make_layout(stage_a * STAGES), 1024)
      local sB_raw = smem:tensor(ta, cute.make_layout(stage_b * STAGES), 1024)
      local pipe = P.PipelineTmaAsync.create {
        num_stages = STAGES, tx_count = tx_bytes,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
        consumer_group = P.CooperativeGroup(P.Agent.Thread, consumers),
      }

      -- the tile scheduler: tile t -> (m tile, n tile, batch), grouped along M
      local tiles_m = (Mr + (BM - 1)) / BM
      local tiles_n = (Nr + (BN - 1)) / BN
      local total = tiles_m * tiles_n * L
      local ktiles = (K + (BK - 1)) / BK
      local function coords(t) return M.tile_coords(t, tiles_m, tiles_n, GROUP) end
      local first, step = cute.block_idx().x, cute.grid_dim().x

      cute.if_(wgi:eq(0), function()
        -- the producer warpgroup: one thread issues every load
        A.setmaxnreg_dec(40)
        cute.if_(tid:eq(0), function()
          local ps = P.make_pipeline_state(P.PipelineUserType.Producer, STAGES)
          cute.range(first, total, step, function(t)
            local bm, bn, l = coords(t)
            cute.range(ktiles, function(kt)
              pipe:producer_acquire(ps)
              local bar = pipe:producer_get_barrier(ps)
              local s = ps.index
              tma_load_3d(descA, sA_raw:ptr_at(s * stage_a), kt * BK, bm * BM, l, bar)
              tma_load_3d(descB, sB_raw:ptr_at(s * stage_b), kt * BK, bn * BN, l, bar)
              pipe:producer_commit(ps)
              ps:advance()
            end)
          end)
          pipe:producer_tail(ps)
        end)
      end, function()
        -- the consumer warpgroups: a cooperative BM x BN tile
        A.setmaxnreg_inc(232)
        local ct = tid - 128
        local sA = cute.make_tensor(sA_raw:ptr_at(0), layA)
        local sB = cute.make_tensor(sB_raw:ptr_at(0), layB)
        local thr = mma:get_slice(ct)
        local tCsA = thr:make_fragment_A(thr:partition_A(sA)) -- (atom, 1, k-blocks, stages): descriptors
        local tCsB = thr:make_fragment_B(thr:partition_B(sB))
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

        cute.range(first, total, step, function(t)
          local bm, bn, l = coords(t)
          -- k-tile 0 (every tile has one: K >= 1)
          pipe:consumer_wait(cs)
          batch(cs.index, true)
          cs:advance()
          cute.range(1, ktiles, function()
            pipe:consumer_wait(cs)
            batch(cs.index, false)
            A.warpgroup_wait_group(1) -- the previous batch is done, this one in flight
            A.warpgroup_fence_operand(acc)
            pipe:consumer_release(rs)
            rs:advance()
            cs:advance()
          end)
          A.warpgroup_wait_group(0)
          A.warpgroup_fence_operand(acc)
          pipe:consumer_release(rs)
          rs:advance()

          -- the epilogue: alpha acc + beta C in C's dtype, straight from the registers
          local gC = cute.local_tile(C[{ _, _, l }], { BM, BN }, { bm, bn })
          local tCgC = thr:partition_C(gC)
          local function value(i, old)
            local v = acc[i] * alpha
            if cfg.beta then v = cute.fma(beta, old:to(cute.f32), v) end
            return v:to(C.dtype)
          end
          local rm, rn = Mr - bm * BM, Nr - bn * BN
          cute.if_(cute.and_(rm:ge(BM), rn:ge(BN)), function()
            local out = cute.make_fragment_like(acc, C.dtype)
            local old = cfg.beta and tCgC:load()
            for i = 0, n - 1 do out[i] = value(i, old and old[i]) end
            cute.copy(out, tCgC)
          end, function()
            for i = 0, n - 1 do
              local c = tCcC[i]
              cute.if_(cute.and_(rm:gt(c[1]), rn:gt(c[2])), function()
                tCgC[i] = value(i, cfg.beta and tCgC[i])
              end)
            end
          end)
        end)
      end)
    end, { arch = "sm_90a", trace_key = trace_key })
end

--- The kernel for a configuration {a_dtype ("bf16" or "f16"), bm, bn, bk,
-- stages, group, beta (C is read)}; cached by its key (the trace key).
function M.kernel(cfg)
  local key = {}
  for _, k in ipairs { "a_dtype", "bm", "bn", "bk", "stages", "group", "beta" } do key[#key + 1] = tostring(cfg[k]) end
  key = table.concat(key, ",")
  local k = kernels[key]
  if not k then
    k = build(cfg, "cute.lib.gemm_sm90:" .. key)
    kernels[key] = k
  end
  return k
end

--- Why this kernel cannot take a problem (nil when it can): A (M, K, L) and
-- B (N, K, L) kernel views' strides (elements), their dtype, the tensors.
function M.unsupported(dt, a_stride, b_stride, Ao, Bo, batch)
  if dt.name ~= "bf16" and dt.name ~= "f16" then
    return "its inputs are " .. dt.name .. " (gemm_sm90 takes bf16 and f16)"
  end
  if a_stride[2] ~= 1 or b_stride[2] ~= 1 then
    return "A or B is not K-major (gemm_sm90 takes a row-major A and a column-major B for now)"
  end
  for _, x in ipairs { { "A", a_stride, Ao }, { "B", b_stride, Bo } } do
    local what, st, t = x[1], x[2], x[3]
    if (st[1] * dt.bytes) % 16 ~= 0 or (st[3] * dt.bytes) % 16 ~= 0 then
      return string.format("%s's strides (%d, %d elements) are not multiples of 16 bytes (TMA's rule)", what,
        st[1], st[3])
    end
    if t:alignment() < 16 then return what .. " is not 16-byte aligned (TMA's rule)" end
    if batch > 1 and st[3] < st[1] then
      return string.format("%s's batch stride (%d elements) is below its row stride (%d): TMA's third dimension "
        .. "must be the outermost", what, st[3], st[1])
    end
  end
  return nil
end

--- The TMA atoms of the kernel's loads (cute.nvgpu.cpasync): for A (M, K, L) and
-- B (N, K, L) kernel views, the global -> shared atoms onto one stage of the
-- wgmma layouts (K-major SW128 atoms tiled over BM x BK and BN x BK). The atom
-- checks that TMA's write (dense boxes, K fastest, 128B swizzle) is exactly
-- the layout the wgmma descriptors read; the kernel issues one box an operand
-- a stage, so each tile must be one box.
function M.tma_atoms(cfg, Av, Bv)
  local cp = cute.nvgpu.cpasync
  local ta = cute.dtype.get(cfg.a_dtype)
  local layA = wg.make_smem_layout_a("K", { cfg.bm, cfg.bn, cfg.bk }, ta)
  local layB = wg.make_smem_layout_b("K", { cfg.bm, cfg.bn, cfg.bk }, ta)
  local atomA = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), Av, layA, { cfg.bm, cfg.bk })
  local atomB = cp.make_tiled_tma_atom(cp.CopyBulkTensorTileG2SOp(), Bv, layB, { cfg.bn, cfg.bk })
  for _, a in ipairs { atomA, atomB } do
    local d = a.dim_modes
    if #a.boxes ~= 1 or a.swizzle ~= "128B" or d[1] ~= 1 or d[2] ~= 0 or d[3] ~= 2 then
      err.raise("cute.gemm: gemm_sm90 loads a tile as one 128B-swizzled TMA box over (K, rows, L); got %s", tostring(a))
    end
  end
  return atomA, atomB
end

-- The TMA descriptor of an operand view (rows, K, L) with strides (ld, 1,
-- batch) for its atom: the atom's box and swizzle, zero fill out of bounds.
-- (The descriptor is encoded here rather than by atom:descriptor(t) so that
-- a single matrix, whose batch stride is 0, gets a valid third stride.)
local function descriptor(atom, t, dims, strides)
  if t.fake then return require("ffi").new("CuteTmaDesc") end
  local dt = t.dtype
  -- one matrix: any valid batch stride (the box never leaves batch 0)
  local batch_stride = dims[3] > 1 and strides[3] or dims[1] * strides[1]
  return cute.tma_descriptor { dtype = dt, address = t, dims = { dims[2], dims[1], dims[3] },
    strides = { strides[1] * dt.bytes, batch_stride * dt.bytes }, box = atom.box, swizzle = atom.swizzle,
    oob = "zero" }
end

--- The launch for kernel views Av (M, K, L), Bv (N, K, L), Cv (M, N, L)
-- (cute.lib.gemm.plan made them and checked M.unsupported): the kernel, its
-- arguments, grid and block.
function M.plan(Av, Bv, Cv, dims, strides, alpha, beta, opts)
  local cfg = {}
  for k, v in pairs(M.CONFIG) do cfg[k] = v end
  for k, v in pairs(opts.config or {}) do cfg[k] = v end
  -- 2 consumer warpgroups (the register split 40 / 232 is for 384 threads),
  -- one 128B swizzle row of K, one TMA box of B (at most 256 rows)
  if cfg.bm ~= 128 or cfg.bk ~= 64 then
    err.raise("cute.gemm: gemm_sm90 tiles are 128 x BN x 64 (two consumer warpgroups, one 128-byte swizzle row of "
      .. "K), got bm = %s, bk = %s", tostring(cfg.bm), tostring(cfg.bk))
  end
  if type(cfg.bn) ~= "number" or cfg.bn % 16 ~= 0 or cfg.bn < 16 or cfg.bn > 256 then
    err.raise("cute.gemm: gemm_sm90's bn is a multiple of 16 from 16 to 256, got %s", tostring(cfg.bn))
  end
  local stage_bytes = (cfg.bm + cfg.bn) * cfg.bk * 2
  local max_stages = math.floor((227 * 1024 - 1024) / stage_bytes)
  if type(cfg.stages) ~= "number" or cfg.stages % 1 ~= 0 or cfg.stages < 2 or cfg.stages > max_stages then
    err.raise("cute.gemm: gemm_sm90 with a 128x%dx64 tile takes 2 to %d stages (%d bytes each), got %s", cfg.bn,
      max_stages, stage_bytes, tostring(cfg.stages))
  end
  cfg.a_dtype = Av.dtype.name
  cfg.beta = beta ~= 0
  local m, n, k, batch = dims.m, dims.n, dims.k, dims.l
  local atomA, atomB = M.tma_atoms(cfg, Av, Bv)
  local dA = descriptor(atomA, Av, { m, k, batch }, strides.a)
  local dB = descriptor(atomB, Bv, { n, k, batch }, strides.b)
  local tiles = math.ceil(m / cfg.bm) * math.ceil(n / cfg.bn) * batch
  local sms = 132
  local ok, info = pcall(cute.device_info)
  if ok and info.sm_count then sms = info.sm_count end
  return {
    kernel = M.kernel(cfg), args = { dA, dB, Cv, cute.i32(k), cute.f32(alpha), cute.f32(beta) },
    grid = { math.min(tiles, sms), 1, 1 }, block = 128 + cfg.bm / 64 * 128, config = cfg,
  }
end

return M
