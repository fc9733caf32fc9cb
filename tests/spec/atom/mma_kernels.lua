-- One-tile GEMM kernels built from atoms, for the atom specs: every MMA
-- atom, A and B in either major order, fragments loaded with ldmatrix
-- (16-bit operands) or plain copies from shared memory, cp.async for global
-- to shared, an epilogue through partition_C.
local cute = require "cute"

local M = {}

-- A swizzled shared layout for a rows x cols tile stored with `major`
-- ("k": cols contiguous; "mn": rows contiguous) and elements of `bytes`:
-- 16-byte chunks XORed with the row bits above a 128-byte line.
function M.smem_layout(rows, cols, major, bytes)
  local contiguous = major == "k" and cols or rows
  local line = math.min(contiguous * bytes, 128)
  local lrb = math.floor(math.log(128 / line) / math.log(2) + 0.5)
  local chunk = 16 / bytes -- elements in 16 bytes
  local mbits = math.floor(math.log(chunk) / math.log(2) + 0.5)
  local b = 3 - lrb
  local s = math.floor(math.log(contiguous) / math.log(2) + 0.5) + lrb - mbits
  local outer = major == "k" and cute.make_layout({ rows, cols }, { cols, 1 }) or cute.make_layout({ rows, cols })
  if b <= 0 or contiguous * bytes < 32 then return outer end
  return cute.make_composed_layout(cute.Swizzle(b, mbits, s), 0, outer)
end

--- A kernel computing C (M x N, row-major, f32 or the accumulator dtype) =
-- A B for one tile: A (M x K) with `amajor` ("k": row-major, "mn":
-- column-major), B given as N x K with `bmajor`. opts: op (an MMA op),
-- warps {WM, WN, 1}, ldmatrix (bool).
function M.tile_gemm(opts)
  local atom = cute.make_mma_atom(opts.op)
  local mma = cute.make_tiled_mma(atom, opts.warps or { 2, 2, 1 })
  local threads = mma.size
  local ta, tb = atom.a_dtype, atom.b_dtype
  local use_ldsm = opts.ldmatrix and ta.bits == 16
  local ldsmA = use_ldsm and cute.make_tiled_copy_A(
    cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(opts.amajor == "mn", 4), ta), mma)
  local ldsmB = use_ldsm and cute.make_tiled_copy_B(
    cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(opts.bmajor == "mn", 4), tb), mma)
  return cute.kernel("tile_gemm", function(A, B, C, BM, BN, BK)
    local tid = cute.thread_idx().x
    A = cute.local_tile(A, { BM, BK }, { 0, 0 })
    B = cute.local_tile(B, { BN, BK }, { 0, 0 })
    C = cute.local_tile(C, { BM, BN }, { 0, 0 })
    local sA = cute.make_smem_tensor(ta, M.smem_layout(BM, BK, opts.amajor, ta.bytes), 128)
    local sB = cute.make_smem_tensor(tb, M.smem_layout(BN, BK, opts.bmajor, tb.bytes), 128)
    -- global -> shared: 16-byte cp.async along the contiguous mode
    local function load(g, s, rows, cols, major, dt)
      local vec = 16 / dt.bytes
      local atom16 = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp("global"), dt, { num_bits_per_copy = 128 })
      local tcopy
      if major == "k" then
        local tc = cols / vec
        tcopy = cute.make_tiled_copy_tv(atom16, cute.make_layout({ threads / tc, tc }, { tc, 1 }),
          cute.make_layout({ 1, vec }))
      else
        local tr = rows / vec
        tcopy = cute.make_tiled_copy_tv(atom16, cute.make_layout({ tr, threads / tr }), cute.make_layout({ vec, 1 }))
      end
      local thr = tcopy:get_slice(tid)
      cute.copy(tcopy, thr:partition_S(g), thr:partition_D(s))
    end
    load(A, sA, BM, BK, opts.amajor, ta)
    load(B, sB, BN, BK, opts.bmajor, tb)
    cute.arch.cp_async_commit_group()
    cute.arch.cp_async_wait_group(0)
    cute.sync_threads()
    local thr = mma:get_slice(tid)
    local tCrA = thr:partition_fragment_A(sA)
    local tCrB = thr:partition_fragment_B(sB)
    local tCrC = thr:partition_fragment_C(C)
    tCrC:fill(0)
    if use_ldsm then
      local la, lb = ldsmA:get_slice(tid), ldsmB:get_slice(tid)
      cute.copy(ldsmA, la:partition_S(sA), la:retile(tCrA))
      cute.copy(ldsmB, lb:partition_S(sB), lb:retile(tCrB))
    else
      cute.copy(thr:partition_A(sA), tCrA)
      cute.copy(thr:partition_B(sB), tCrB)
    end
    cute.gemm(mma, tCrC, tCrA, tCrB, tCrC)
    local tCgC = thr:partition_C(C)
    if C.dtype == atom.c_dtype then
      cute.copy(tCrC, tCgC)
    else
      local out = cute.make_fragment_like(tCrC, C.dtype)
      for i = 0, cute.size(tCrC) - 1 do out[i] = tCrC[i]:to(C.dtype) end
      cute.copy(out, tCgC)
    end
  end), mma
end

--- Host tensors for a tile GEMM: A (M x K) and B (N x K) in the given major
-- orders.
function M.operands(dt_a, dt_b, m, n, k, amajor, bmajor, seed)
  local function make(dt, rows, cols, major, s)
    local t = cute.tensor(dt, { rows, cols }, major == "k" and "row" or "col")
    if dt.kind == "uint" then t:uniform(0, 16, s) elseif dt.is_integer then t:uniform(-8, 8, s) else
      t:uniform(-2, 2, s)
    end
    return t
  end
  return make(dt_a, m, k, amajor, seed), make(dt_b, n, k, bmajor, seed + 1)
end

return M
