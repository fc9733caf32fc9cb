--- cute.trace.partition: a thread's part of a tensor, for the tiled MMAs and
-- tiled copies of cute.atom: the slices tiled_mma:get_slice(tid) and
-- tiled_copy:get_slice(tid) return (CuTe's ThrMMA and ThrCopy).
--
--   local thr_mma = tiled_mma:get_slice(cute.thread_idx().x)
--   local tCsA = thr_mma:partition_A(sA)           -- (MMA_V, MMA_M, MMA_K) of this thread
--   local tCrA = thr_mma:make_fragment_A(tCsA)      -- its registers
--   local thr_copy = tiled_copy:get_slice(tid)
--   local tAgA, tAsA = thr_copy:partition_S(gA), thr_copy:partition_D(sA)
--
-- Partitioning divides a tensor by a tile and composes the tile with a
-- thread-value layout: a thread's slice has its values first, then the
-- repetitions of the tile over the tensor (CuTe's (V, rest...) shape). The
-- tensors may be in global or shared memory (swizzled layouts too) or
-- registers; thread indices are run-time values. The tiled MMAs and copies
-- are cute.atom's data; what moves the data (cute.gemm, cute.copy with an
-- atom) is cute.trace.atom.
local core = require "cute.trace.core"
local tensor = require "cute.trace.tensor"
local err = require "cute._err"
local L = require "cute.layout"
local LA = require "cute.layout_algebra"
local it = require "cute.int_tuple"
local arith = require "cute.arith"

local M = {}

local is_value = core.is_value
local is_any_layout = L.internal.is_any_layout
local U = it._

local need_trace = core.need_trace

-- ---------------------------------------------------------------------------
-- Partitioning by a thread-value layout

local function is_composed(l) return is_any_layout(l) and not L.is_layout(l) end

-- The layout of thread tid's slice of l divided by tiler and composed with
-- tv: (V, rest modes...), and its offset.
local function tv_slice(l, tiler, tv, tid)
  if is_composed(l) then
    local outer, off = tv_slice(l.outer, tiler, tv, tid)
    return L.make_composed_layout(l.inner, arith.add(l.offset, off), outer), 0
  end
  local z = LA.zipped_divide(l, tiler)
  local tile, rest = L.get(z, 0), L.get(z, 1)
  local c = LA.composition(tile, tv)
  local vl, off = L.slice_and_offset(it.internal.tup { tid, U }, c, "partition")
  local modes = { vl }
  local r = L.rank(rest)
  if r == 1 and type(L.shape(rest)) ~= "table" then
    modes[2] = rest
  else
    for i = 0, r - 1 do modes[#modes + 1] = L.get(rest, i) end
  end
  return L.make_layout(unpack(modes)), off
end

--- Thread tid's part of tensor t divided by tiler and composed with the
-- (thread, value) layout tv: a tensor (V, rest...) (CuTe's partition).
function M.partition_tv(t, tiler, tv, tid)
  if not tensor.is_tensor(t) then err.raise("partition: expected a tensor, got %s", core.describe(t)) end
  local layout, off = tv_slice(t.layout, tiler, tv, tid)
  return tensor.internal.with_offset(t, off, layout)
end

-- ---------------------------------------------------------------------------
-- Tiled MMA slices

--- The trace being recorded now (nil outside one): what a tiled MMA's
-- run-time fields (tiled_mma:set) belong to.
function M.current_trace() return core.current() end

local ThrMma = { __name = "ThrMma" }
ThrMma.__index = ThrMma

--- The slice of a tiled MMA for thread tid (a value or number):
-- tiled_mma:get_slice(tid) (cute.atom).
function M.thr_mma(tiled, tid)
  need_trace("tiled_mma:get_slice")
  return setmetatable({ tiled = tiled, tid = tid }, ThrMma)
end

local function rank2(t, what)
  local r = L.rank(t.layout)
  if r < 2 then
    err.raise("%s: expected a tensor of rank 2 or more (rows, cols[, ...]), got %s", what, core.describe(t))
  end
end

--- This thread's part of A (an M x K tensor, or M x K x ... with more
-- modes): (MMA_V, MMA_M, MMA_K[, ...]).
-- @param t the Tensor A (in a kernel)
-- @return the thread's part, a Tensor
-- @usage local tCgA = thr_mma:partition_A(gA)
function ThrMma:partition_A(t)
  rank2(t, "partition_A")
  local w = self.tiled.warp_tile
  return M.partition_tv(t, { w[1], w[3] }, self.tiled.tv_a_w, self.tid)
end

--- This thread's part of B (an N x K tensor): (MMA_V, MMA_N, MMA_K[, ...]).
-- @param t the Tensor B
-- @return the thread's part, a Tensor
-- @usage local tCgB = thr_mma:partition_B(gB)
function ThrMma:partition_B(t)
  rank2(t, "partition_B")
  local w = self.tiled.warp_tile
  return M.partition_tv(t, { w[2], w[3] }, self.tiled.tv_b_w, self.tid)
end

--- This thread's part of C (an M x N tensor): (MMA_V, MMA_M, MMA_N[, ...]).
-- @param t the Tensor C
-- @return the thread's part, a Tensor
-- @usage local tCgC = thr_mma:partition_C(gC)
function ThrMma:partition_C(t)
  rank2(t, "partition_C")
  local w = self.tiled.warp_tile
  return M.partition_tv(t, { w[1], w[2] }, self.tiled.tv_c_w, self.tid)
end

local function fragment(x, dt)
  local shape = tensor.is_tensor(x) and L.shape(x.layout) or x
  return tensor.make_rmem_tensor(L.make_layout(shape), dt)
end

--- Register fragments shaped like a partition (or a shape), in the atom's
-- operand dtypes.
-- A warpgroup (wgmma) atom reading an operand from shared memory: the
-- descriptor fragment is the shared partition itself (cute.trace.wgmma makes
-- each block's descriptor from it).
local function smem_operand(self, x, src)
  return self.tiled.atom.wgmma and (src == nil or src.name == "SMEM") and tensor.is_tensor(x) and x.space == "shared"
end
--- A register fragment for A shaped like a partition (or a shape), in the atom's A dtype (a shared
-- partition itself for a warpgroup atom reading A from shared memory).
-- @param x a Tensor (a partition) or a shape
-- @return a Tensor
-- @usage local tCrA = thr_mma:make_fragment_A(thr_mma:partition_A(sA))
function ThrMma:make_fragment_A(x)
  if smem_operand(self, x, self.tiled.atom.a_src) then return x end
  return fragment(x, self.tiled.atom.a_dtype)
end
--- A register fragment for B shaped like a partition (or a shape), in the atom's B dtype.
-- @param x a Tensor (a partition) or a shape
-- @return a Tensor
-- @usage local tCrB = thr_mma:make_fragment_B(thr_mma:partition_B(sB))
function ThrMma:make_fragment_B(x)
  if smem_operand(self, x) then return x end
  return fragment(x, self.tiled.atom.b_dtype)
end
--- A register fragment for C shaped like a partition (or a shape), in the accumulator's dtype.
-- @param x a Tensor (a partition) or a shape
-- @return a Tensor
-- @usage local acc = thr_mma:make_fragment_C(thr_mma:partition_C(gC))
function ThrMma:make_fragment_C(x) return fragment(x, self.tiled.atom.c_dtype) end
--- make_fragment_A(partition_A(t)): A's fragment for the tile t.
-- @param t the Tensor A
-- @return a Tensor
-- @usage local tCrA = thr_mma:partition_fragment_A(sA)
function ThrMma:partition_fragment_A(t) return self:make_fragment_A(self:partition_A(t)) end
--- make_fragment_B(partition_B(t)): B's fragment for the tile t.
-- @param t the Tensor B
-- @return a Tensor
-- @usage local tCrB = thr_mma:partition_fragment_B(sB)
function ThrMma:partition_fragment_B(t) return self:make_fragment_B(self:partition_B(t)) end
--- make_fragment_C(partition_C(t)): the accumulator for the tile t.
-- @param t the Tensor C
-- @return a Tensor
-- @usage local acc = thr_mma:partition_fragment_C(gC)
function ThrMma:partition_fragment_C(t) return self:make_fragment_C(self:partition_C(t)) end


-- ---------------------------------------------------------------------------
-- Tiled copy slices

local ThrCopy = { __name = "ThrCopy" }
ThrCopy.__index = ThrCopy

--- The slice of a tiled copy for thread tid: tiled_copy:get_slice(tid) (cute.atom).
function M.thr_copy(tiled, tid)
  need_trace("tiled_copy:get_slice")
  return setmetatable({ tiled = tiled, tid = tid }, ThrCopy)
end

local function is_matrix(tc) return tc.atom.op.kind == "ldmatrix" or tc.atom.op.kind == "stmatrix" end

-- The tile a copy matched to an MMA operand partitions by: the warps' tile.
local function operand_tile(tc)
  local w = tc.mma.warp_tile
  if tc.operand == "A" then return { w[1], w[3] }, tc.mma.tv_a_w end
  if tc.operand == "B" then return { w[2], w[3] }, tc.mma.tv_b_w end
  return { w[1], w[2] }, tc.mma.tv_c_w
end

local function partition_plain(self, t)
  if self.tiled.mma then
    local tiler, tv = operand_tile(self.tiled)
    return M.partition_tv(t, tiler, tv, self.tid)
  end
  return M.partition_tv(t, self.tiled.tiler, self.tiled.tv, self.tid)
end

--- The source (partition_S) or destination (partition_D) of this thread:
-- for ldmatrix, partition_S of the shared tile is a tensor (8, CPY_M, CPY_K)
-- whose element (0, m, k) is the row this thread's address points to for
-- instruction (m, k); partition_D of a fragment is retile_D. For the other
-- atoms, both are the thread's (V, rest...) part.
-- @param t the source Tensor
-- @return a Tensor
-- @usage local tAgA = thr_copy:partition_S(gA)
function ThrCopy:partition_S(t)
  if is_matrix(self.tiled) and self.tiled.atom.op.kind == "ldmatrix" then return self:matrix_rows(t) end
  return partition_plain(self, t)
end

--- The destination of this thread (see partition_S).
-- @param t the destination Tensor
-- @return a Tensor
-- @usage local tAsA = thr_copy:partition_D(sA)
function ThrCopy:partition_D(t)
  if is_matrix(self.tiled) then
    if self.tiled.atom.op.kind == "stmatrix" then return self:matrix_rows(t) end
    return self:retile(t)
  end
  return partition_plain(self, t)
end

--- A register fragment (partitioned by the tiled MMA: (MMA_V, M, K)) seen
-- as this copy's instructions: (CPY_V, CPY_N), CPY_V the values one
-- instruction moves: consecutive runs of the fragment's column-major order.
-- @param frag a register fragment (Tensor)
-- @return a Tensor
-- @usage local tCrA_view = s2r:get_slice(tid):retile_D(tCrA)
function ThrCopy:retile(frag)
  local tc = self.tiled
  if not is_matrix(tc) then return frag end
  if not tensor.is_tensor(frag) or frag.engine ~= "rmem" then
    err.raise("retile: expected a register fragment, got %s", core.describe(frag))
  end
  local per = tc.atom.values
  local n = L.size(frag.layout)
  if n % per ~= 0 then err.raise("retile: %d values are not a whole number of %d-value instructions", n, per) end
  if L.cosize(frag.layout) ~= n or frag.layout(n - 1) ~= n - 1 then
    err.raise("retile: the fragment must be compact column-major (made by make_fragment_*), got %s",
      tostring(frag.layout))
  end
  return tensor.internal.with_offset(frag, 0, L.make_layout({ per, n / per }))
end
ThrCopy.retile_D = ThrCopy.retile
ThrCopy.retile_S = ThrCopy.retile

local function band(x, m) return is_value(x) and x:band(m) or x % (m + 1) end
local function shr(x, k) return is_value(x) and x:shr(k) or math.floor(x / 2 ^ k) end

-- For ldmatrix/stmatrix over a shared tile t (rows x cols of the operand:
-- M x K for A, N x K for B, possibly several warp tiles): for each
-- instruction i (covering values i*per .. of the thread's fragment in
-- column-major order), the coordinate this lane's address points at.
-- Non-transposed, lane 8j + r gives row r of matrix j: the first of the two
-- values register j of lane 4r holds; transposed, value 2j + r % 2 of lane
-- r // 2 (the stored rows then run along the fragment's value pairs).
--- For ldmatrix/stmatrix: the coordinates this lane's addresses point at (see the comment above).
-- @param t the shared tile (Tensor)
-- @return a Tensor
-- @usage local rows = thr_copy:matrix_rows(sA)
function ThrCopy:matrix_rows(t)
  return core.at_user_line(self._matrix_rows, self, t)
end

function ThrCopy:_matrix_rows(t)
  local tc = self.tiled
  if not tensor.is_tensor(t) or t.space ~= "shared" then
    err.raise("partition_S: %s works on a shared-memory tile, got %s", tc.atom.op.name, core.describe(t))
  end
  local trans, nm = tc.atom.op.transpose, tc.atom.op.num_matrices
  local tiler, tv = operand_tile(tc)
  local nv, per = L.size(tv, 1), tc.atom.values
  local composed = not L.is_layout(t.layout)
  local outer = composed and t.layout.outer or t.layout
  if not L.is_static(outer) then
    err.raise("partition_S: %s needs a shared tile of static layout, got %s", tc.atom.op.name, tostring(t.layout))
  end
  -- the tile as (warp tile, repetitions), the warp tile's offsets as (thread, value)
  local z = LA.zipped_divide(outer, tiler)
  local tile_l, rest_l = L.get(z, 0), L.get(z, 1)
  local rest = L.make_layout(L.shape(rest_l))
  local off_tv = LA.composition(tile_l, tv) -- (thread, value) -> offset in the tile (before a swizzle)
  local total = nv * L.size(rest)
  if total % per ~= 0 or (per % nv ~= 0 and nv % per ~= 0) then
    err.raise("partition_S: %d values a thread are not a whole number of %d-value %s instructions", total, per,
      tc.atom.op.name)
  end
  local epr = tc.atom.per_register or 2 -- elements a 32-bit register
  local row_len = 16 / tc.atom.dtype.bytes -- elements a 16-byte row
  -- lane 8j + r: which thread's value (the first of its row) it points at
  local function source(lane, wbase)
    local j, r = shr(lane, 3), band(lane, 7)
    if nm < 4 then j = band(j, nm - 1) end
    if trans then return arith.add(wbase, shr(r, 1)), arith.add(arith.mul(j, 2), band(r, 1)) end
    return arith.add(wbase, arith.mul(r, 4)), arith.mul(j, epr)
  end
  -- The offset (before a swizzle) of value v0 + i * per of thread th's
  -- fragment (column-major (V, rest...)), v0 < per: the dynamic parts (th,
  -- v0) and the static ones (i) kept apart, so that instructions differ by
  -- constants (address immediates once a swizzle lets them through).
  local rest_stride0 = L.stride(rest_l, 0)
  if type(rest_stride0) == "table" then rest_stride0 = nil end
  local log2nv = math.floor(math.log(nv) / math.log(2) + 0.5)
  local function offset(th, v0, i)
    local qs = i * per
    local ri = math.floor(qs / nv)
    local base, h
    if per <= nv then
      local vs = qs % nv -- a multiple of per: the value modes past v0's
      base = off_tv({ th, v0 })
      if vs ~= 0 then base = arith.add(base, off_tv({ 0, vs }) - off_tv({ 0, 0 })) end
      h = 0
    else
      -- an instruction spans per / nv fragments along the first repetition mode
      base = off_tv({ th, band(v0, nv - 1) })
      h = shr(v0, log2nv)
      if not rest_stride0 or L.size(rest_l, 0) % (per / nv) ~= 0 then
        err.raise("partition_S: %s spans %d operand fragments; the tile's repetitions do not group by %d",
          tc.atom.op.name, per / nv, per / nv)
      end
    end
    local o = arith.add(base, rest_l(ri))
    if not arith.lit(h, 0) then o = arith.add(o, arith.mul(h, rest_stride0)) end
    return o
  end
  local function swizzled(o)
    if composed then return t.layout.inner(arith.add(t.layout.offset, o)) end
    return o
  end
  -- static check on warp 0 and the first instruction: each row an
  -- instruction reads is 16 consecutive bytes of the tile
  for lane = 0, 31 do
    local th, v0 = source(lane, 0)
    local start = swizzled(offset(th, v0, 0))
    for e = 1, row_len - 1 do
      local th2, v2
      if trans then th2, v2 = th + 4 * e, v0 else th2, v2 = th + math.floor(e / epr), v0 + e % epr end
      local off = swizzled(offset(th2, v2, 0))
      if off ~= start + e then
        err.raise("partition_S: %s reads rows of 16 consecutive bytes, but the shared layout %s puts element %d "
          .. "of lane %d's row at offset %d, not %d: use %s, or a layout with the %s contiguous", tc.atom.op.name,
          tostring(t.layout), e, lane, off, start + e, trans and "LdMatrix8x8x16bOp(false, ...)" or
          "LdMatrix8x8x16bOp(true, ...) (transposed)", trans and "rows" or "K mode")
      end
    end
  end
  local tid = self.tid
  local lane = band(tid, 31)
  local th, v0 = source(lane, arith.sub(tid, lane))
  local ptrs = {}
  for i = 0, total / per - 1 do
    ptrs[i + 1] = tensor.internal.address(t, swizzled(offset(th, v0, i)))
  end
  return setmetatable({ kind = "matrix_rows", ptrs = ptrs, tile = t, per = per, n_instr = total / per,
    trans = trans }, { __name = "MatrixRows" })
end

return M
