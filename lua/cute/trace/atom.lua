--- cute.trace.atom: MMA and copy atoms inside kernels.
--
--   local thr_mma = tiled_mma:get_slice(cute.thread_idx().x)
--   local tCsA = thr_mma:partition_A(sA)           -- (MMA_V, MMA_M, MMA_K) of this thread
--   local tCrA = thr_mma:make_fragment_A(tCsA)      -- its registers
--   local tCrC = thr_mma:partition_fragment_C(gC)   -- accumulators
--   cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)    -- D = A B + C, atom by atom
--
--   local thr_copy = tiled_copy:get_slice(tid)
--   cute.copy(tiled_copy, thr_copy:partition_S(gA), thr_copy:partition_D(sA), pred)
--
-- Partitioning divides a tensor by a tile and composes the tile with a
-- thread-value layout: a thread's slice has its values first, then the
-- repetitions of the tile over the tensor (CuTe's (V, rest...) shape). The
-- tensors may be in global or shared memory (swizzled layouts too) or
-- registers; thread indices are run-time values.
--
-- Low-level ops (the IR's, one instruction each): cute.arch.mma_sync,
-- cute.arch.ldmatrix, cute.arch.stmatrix, cute.arch.cp_async,
-- cute.arch.cp_async_commit_group, cute.arch.cp_async_wait_group.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local tensor = require "cute.trace.tensor"
local checked = require("cute.trace.check").access
local atom = require "cute.atom"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"
local is_any_layout = L.internal.is_any_layout
local LA = require "cute.layout_algebra"
local it = require "cute.int_tuple"
local arith = require "cute.arith"

local M = {}

local is_value, type_of, emit = core.is_value, core.type_of, core.emit
local imm = ops.imm
local U = it._

local function need_trace(what)
  if not core.current() then err.raise("%s can only be used while tracing a kernel", what) end
end

-- ---------------------------------------------------------------------------
-- The instructions

local arch = {}
M.arch = arch

local function struct_of(ty, n)
  if n == 1 then return core.scalar(ty) end
  local f = {}
  for i = 1, n do f[i] = core.scalar(ty) end
  return core.struct(f)
end

--- ldmatrix: n (1, 2, 4) 8 x 8 matrices of 16-bit elements from shared
-- memory (ptr: this thread's row) into n 32-bit registers (a list of i32
-- values). trans: transposed.
function arch.ldmatrix(ptr, n, trans)
  need_trace("cute.arch.ldmatrix")
  if not is_value(ptr) or type_of(ptr).kind ~= "ptr" or type_of(ptr).space ~= "shared" then
    err.raise("cute.arch.ldmatrix: expected a shared-memory pointer, got %s", core.describe(ptr))
  end
  local p = checked(emit("ptrcast", core.ptr(core.scalar(dtype.u8), "shared", 16), ptr), 16, "ldmatrix")
  local r = emit("ldmatrix", struct_of(dtype.i32, n), p, nil, nil, n, trans and 4 or 0)
  if n == 1 then return { r } end
  local out = {}
  for i = 1, n do out[i] = emit("extract", core.i32, r, nil, nil, i - 1) end
  return out
end

--- stmatrix (sm_90): n 32-bit registers (a list of i32 values) to n 8 x 8
-- matrices in shared memory (ptr: this thread's row).
function arch.stmatrix(ptr, regs, trans)
  need_trace("cute.arch.stmatrix")
  local n = #regs
  local p = checked(emit("ptrcast", core.ptr(core.scalar(dtype.u8), "shared", 16), ptr), 16, "stmatrix")
  local v = n == 1 and regs[1] or core.emitn("pack", struct_of(dtype.i32, n), regs)
  emit("stmatrix", nil, p, v, nil, n, trans and 4 or 0)
end

--- cp.async: bytes (4, 8, 16) from global src to shared dst, cache "ca" or
-- "cg" (16 bytes only); src_bytes (a value, optional): how many to read, the
-- rest zero-filled (0: none read, for predicated-off copies).
function arch.cp_async(dst, src, bytes, cache, src_bytes)
  need_trace("cute.arch.cp_async")
  local d = emit("ptrcast", core.ptr(core.scalar(dtype.u8), "shared", bytes), dst)
  local s = emit("ptrcast", core.ptr(core.scalar(dtype.u8), "global", bytes), src)
  if src_bytes ~= nil then src_bytes = core.coerce(src_bytes, core.i32, "cp_async src_bytes") end
  d = checked(d, bytes, "cp.async write")
  s = checked(s, bytes, "cp.async read", src_bytes == nil and bytes or src_bytes)
  emit("cp.async", nil, d, s, src_bytes, bytes, imm("C", cache or "ca", "cp_async cache"))
end

--- Closes the group of cp.async issued since the last commit.
function arch.cp_async_commit_group()
  need_trace("cute.arch.cp_async_commit_group")
  emit("cp.async.commit", nil)
end

--- Waits until at most n groups of cp.async are pending.
function arch.cp_async_wait_group(n)
  need_trace("cute.arch.cp_async_wait_group")
  emit("cp.async.wait", nil, nil, nil, nil, n or 0)
end

--- One mma.sync of an atom: a, b, c lists of registers (i32 for packed
-- operands, f32 accumulators); returns the list of D registers.
function arch.mma_sync(at, a, b, c)
  need_trace("cute.arch.mma_sync")
  local ct = at.c_dtype.bits == 32 and at.c_dtype or dtype.i32
  if at.c_dtype.name == "i32" then ct = dtype.i32 end
  local function pack(list, ty) return #list == 1 and list[1] or core.emitn("pack", struct_of(ty, #list), list) end
  local sa, sb = pack(a, dtype.i32), pack(b, dtype.i32)
  local sc = pack(c, ct)
  local rt = struct_of(ct, #c)
  local r = core.emitn("mma", rt, { sa, sb, sc }, { imm("M", at.ir.shape), imm("E", at.ir.a), imm("E", at.ir.b),
    imm("E", at.ir.c), imm("E", at.ir.d), 0 })
  if #c == 1 then return { r } end
  local out = {}
  for i = 1, #c do out[i] = emit("extract", core.scalar(ct), r, nil, nil, i - 1) end
  return out
end


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
  return tensor._with_offset(t, off, layout)
end

-- ---------------------------------------------------------------------------
-- Tiled MMA slices

local ThrMma = { __name = "ThrMma" }
ThrMma.__index = ThrMma

--- The slice of a tiled MMA for thread tid (a value or number).
function atom._TiledMma.get_slice(self, tid)
  need_trace("tiled_mma:get_slice")
  return setmetatable({ tiled = self, tid = tid }, ThrMma)
end
atom._TiledMma.get_thr_slice = atom._TiledMma.get_slice

local function rank2(t, what)
  local r = L.rank(t.layout)
  if r < 2 then err.raise("%s: expected a tensor of rank 2 or more (rows, cols[, ...]), got %s", what, tostring(t)) end
end

--- This thread's part of A (an M x K tensor, or M x K x ... with more
-- modes): (MMA_V, MMA_M, MMA_K[, ...]).
function ThrMma:partition_A(t)
  rank2(t, "partition_A")
  local w = self.tiled.warp_tile
  return M.partition_tv(t, { w[1], w[3] }, self.tiled.tv_a_w, self.tid)
end

--- This thread's part of B (an N x K tensor): (MMA_V, MMA_N, MMA_K[, ...]).
function ThrMma:partition_B(t)
  rank2(t, "partition_B")
  local w = self.tiled.warp_tile
  return M.partition_tv(t, { w[2], w[3] }, self.tiled.tv_b_w, self.tid)
end

--- This thread's part of C (an M x N tensor): (MMA_V, MMA_M, MMA_N[, ...]).
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
function ThrMma:make_fragment_A(x) return fragment(x, self.tiled.atom.a_dtype) end
function ThrMma:make_fragment_B(x) return fragment(x, self.tiled.atom.b_dtype) end
function ThrMma:make_fragment_C(x) return fragment(x, self.tiled.atom.c_dtype) end
function ThrMma:partition_fragment_A(t) return self:make_fragment_A(self:partition_A(t)) end
function ThrMma:partition_fragment_B(t) return self:make_fragment_B(self:partition_B(t)) end
function ThrMma:partition_fragment_C(t) return self:make_fragment_C(self:partition_C(t)) end

-- ---------------------------------------------------------------------------
-- cute.gemm on fragments

-- n consecutive elements of a register fragment from element `first` (its
-- var index) as 32-bit registers.
local function frag_regs(frag, first, n, dt)
  local v = tensor._var_vector(frag, first, n)
  if not v then err.raise("cute.gemm: the fragment's values of one atom must be consecutive registers") end
  local bits = n * dt.bits
  if dt.bits == 32 and dt.name ~= "tf32" then
    -- f32 / i32: one register each
    local out = {}
    for i = 1, n do out[i] = emit("extract", core.scalar(dt), v, nil, nil, i - 1) end
    return out
  end
  local words = bits / 32
  if words == 1 then return { emit("bitcast", core.i32, v) } end
  local w = emit("bitcast", core.vec(dtype.i32, words), v)
  local out = {}
  for i = 1, words do out[i] = emit("extract", core.i32, w, nil, nil, i - 1) end
  return out
end

-- Writes registers (a list) to n consecutive elements of a fragment.
local function frag_store(frag, first, n, dt, regs)
  local packed
  if dt.bits == 32 and dt.name ~= "tf32" then
    packed = core.emitn("pack", core.vec(dt, n), regs)
  elseif #regs == 1 then
    packed = emit("bitcast", core.vec(dt, n), regs[1])
  else
    local w = core.emitn("pack", core.vec(dtype.i32, #regs), regs)
    packed = emit("bitcast", core.vec(dt, n), w)
  end
  if not tensor._var_vector(frag, first, n, packed) then
    err.raise("cute.gemm: the accumulator's values of one atom must be consecutive registers")
  end
end

local function check_frag(t, what, nv)
  if not tensor.is_tensor(t) or t.engine ~= "rmem" then
    err.raise("cute.gemm: %s must be a register fragment (thr_mma:make_fragment_%s), got %s", what, what:sub(1, 1),
      core.describe(t))
  end
  local v = L.size(t.layout, 0)
  if v ~= nv then
    err.raise("cute.gemm: %s has %s values in its first mode; the atom takes %d", what, tostring(v), nv)
  end
end

-- The number of elements of mode i (1 when there is no such mode).
local function extent(t, i)
  if L.rank(t.layout) <= i then return 1 end
  return L.size(t.layout, i)
end

--- D = A B + C for fragments partitioned by a tiled MMA: A (V, M, K), B
-- (V, N, K), C and D (V, M, N); one mma.sync per (m, n, k), k outermost,
-- n serpentine (as CuTe orders them, so that A and B registers are reused).
function M.mma_gemm(tiled, d, a, b, c)
  return core.at_user_line(M._mma_gemm, tiled, d, a, b, c)
end

function M._mma_gemm(tiled, d, a, b, c)
  local at = tiled.atom
  check_frag(a, "A", at.values.a)
  check_frag(b, "B", at.values.b)
  check_frag(c, "C", at.values.c)
  check_frag(d, "D", at.values.c)
  local mm, nn, kk = extent(a, 1), extent(b, 1), extent(a, 2)
  if extent(b, 2) ~= kk or extent(c, 1) ~= mm or extent(c, 2) ~= nn or extent(d, 1) ~= mm or extent(d, 2) ~= nn then
    err.raise("cute.gemm: shapes do not agree: A %s, B %s, C %s, D %s", tostring(a.layout), tostring(b.layout),
      tostring(c.layout), tostring(d.layout))
  end
  local va, vb, vc = at.values.a, at.values.b, at.values.c
  local function first(t, i, j)
    local r = L.rank(t.layout)
    if r >= 3 then return t.layout({ 0, i, j }) end
    if r == 2 then return t.layout({ 0, i }) end
    return 0
  end
  for k = 0, kk - 1 do
    for m = 0, mm - 1 do
      for n0 = 0, nn - 1 do
        local n = (m % 2 == 0) and n0 or (nn - 1 - n0)
        local ra = frag_regs(a, first(a, m, k), va, at.a_dtype)
        local rb = frag_regs(b, first(b, n, k), vb, at.b_dtype)
        local src = (k == 0) and c or d
        local rc = frag_regs(src, first(src, m, n), vc, at.c_dtype)
        local rd = arch.mma_sync(at, ra, rb, rc)
        frag_store(d, first(d, m, n), vc, at.c_dtype, rd)
      end
    end
  end
  return d
end

-- ---------------------------------------------------------------------------
-- Tiled copy slices

local ThrCopy = { __name = "ThrCopy" }
ThrCopy.__index = ThrCopy

--- The slice of a tiled copy for thread tid.
function atom._TiledCopy.get_slice(self, tid)
  need_trace("tiled_copy:get_slice")
  return setmetatable({ tiled = self, tid = tid }, ThrCopy)
end
atom._TiledCopy.get_thr_slice = atom._TiledCopy.get_slice

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
function ThrCopy:partition_S(t)
  if is_matrix(self.tiled) and self.tiled.atom.op.kind == "ldmatrix" then return self:matrix_rows(t) end
  return partition_plain(self, t)
end

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
  return tensor._with_offset(frag, 0, L.make_layout({ per, n / per }))
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
    ptrs[i + 1] = tensor._address(t, swizzled(offset(th, v0, i)))
  end
  return setmetatable({ kind = "matrix_rows", ptrs = ptrs, tile = t, per = per, n_instr = total / per,
    trans = trans }, { __name = "MatrixRows" })
end

-- ---------------------------------------------------------------------------
-- cute.copy with an atom or a tiled copy

-- Is x a value "true"? (predicates: booleans or bool values)
local function pred_at(pred, i)
  if pred == nil then return nil end
  if type(pred) == "function" then return pred(i) end
  return pred[i]
end

-- cp.async of a thread's (V, rest...) partition: the atom's vector at a time.
local function copy_cp_async(at, src, dst, pred)
  local nv = L.size(src.layout, 0)
  local n = L.size(src.layout)
  if L.size(dst.layout) ~= n then err.raise("cute.copy: source and destination sizes differ") end
  local per = at.values
  local bytes = at.bits / 8
  for i = 0, n - 1, per do
    local ps = tensor._address(src, tensor._coord_offset(src, i), bytes)
    local pd = tensor._address(dst, tensor._coord_offset(dst, i), bytes)
    local p = pred_at(pred, math.floor(i / nv))
    local sb
    if p ~= nil then
      if type(p) == "boolean" then
        sb = p and bytes or 0
      else
        sb = ops.where(p, core.const(core.i32, bytes), 0)
      end
    end
    arch.cp_async(pd, ps, bytes, at.op.cache, sb)
  end
end

local function copy_matrix(tc, src, dst)
  local at = tc.atom
  local nm, trans = at.op.num_matrices, at.op.transpose
  if at.op.kind == "ldmatrix" then
    if type(src) ~= "table" or src.kind ~= "matrix_rows" then
      err.raise("cute.copy: ldmatrix copies from thr_copy:partition_S(smem tile)")
    end
    local frag = dst
    if not tensor.is_tensor(frag) or frag.engine ~= "rmem" then
      err.raise("cute.copy: ldmatrix copies into a register fragment (thr_copy:retile(fragment))")
    end
    local total = L.size(frag.layout)
    if total ~= src.n_instr * src.per then
      err.raise("cute.copy: the fragment holds %d values; the shared tile gives %d instructions of %d", total,
        src.n_instr, src.per)
    end
    for i = 1, src.n_instr do
      local regs = arch.ldmatrix(src.ptrs[i], nm, trans)
      frag_store(frag, frag.layout((i - 1) * src.per), src.per, frag.dtype, regs)
    end
    return dst
  end
  -- stmatrix: registers to the rows partition_D gave
  if type(dst) ~= "table" or dst.kind ~= "matrix_rows" then
    err.raise("cute.copy: stmatrix copies to thr_copy:partition_D(smem tile)")
  end
  if not tensor.is_tensor(src) or src.engine ~= "rmem" then
    err.raise("cute.copy: stmatrix copies from a register fragment (thr_copy:retile(fragment))")
  end
  local total = L.size(src.layout)
  if total ~= dst.n_instr * dst.per then
    err.raise("cute.copy: the fragment holds %d values; the shared tile takes %d instructions of %d", total,
      dst.n_instr, dst.per)
  end
  for i = 1, dst.n_instr do
    arch.stmatrix(dst.ptrs[i], frag_regs(src, src.layout((i - 1) * dst.per), dst.per, src.dtype), trans)
  end
  return dst
end

--- cute.copy(atom_or_tiled_copy, src, dst[, pred]): copies with a copy
-- atom. cp.async: src and dst are a thread's (V, rest...) partitions (pred:
-- a function of the rest index, or a table, giving a bool: false copies
-- nothing and zero-fills). ldmatrix: src = thr_copy:partition_S(sA), dst =
-- thr_copy:retile(fragment). Universal copies: as cute.copy(src, dst).
function M.copy_with(x, src, dst, pred)
  return core.at_user_line(M._copy_with, x, src, dst, pred)
end

function M._copy_with(x, src, dst, pred)
  local at = atom.is_tiled_copy(x) and x.atom or x
  local kind = at.op.kind
  if kind == "cp.async" then return copy_cp_async(at, src, dst, pred) end
  if kind == "ldmatrix" or kind == "stmatrix" then
    if not atom.is_tiled_copy(x) then err.raise("cute.copy: %s needs a tiled copy (make_tiled_copy_A/B)", kind) end
    return copy_matrix(x, src, dst)
  end
  if pred == nil then return tensor.copy(src, dst) end
  -- predicated universal copies zero-fill what they skip, as cp.async does:
  -- pred(r) for each rest index r covers the first mode's values
  local nv = L.size(src.layout, 0)
  local n = L.size(src.layout)
  local control = require "cute.trace.control"
  for r = 0, n / nv - 1 do
    control.if_(pred_at(pred, r), function()
      for v = 0, nv - 1 do dst[r * nv + v] = src[r * nv + v] end
    end, function()
      for v = 0, nv - 1 do dst[r * nv + v] = 0 end
    end)
  end
  return dst
end

--- cute.gemm: inside a kernel, cute.gemm(tiled_mma, D, A, B, C) on
-- register fragments (D = A B + C); on the host, cute.gemm(A, B[, C, opts])
-- on device tensors (cute.lib.gemm).
function M.gemm(x, ...)
  if atom.is_tiled_mma(x) then return M.mma_gemm(x, ...) end
  if atom.is_mma_atom(x) then return M.mma_gemm(atom.make_tiled_mma(x), ...) end
  return require("cute.lib.gemm").gemm(x, ...)
end

M._exports = { "arch", "gemm" }

return M
