--- cute.trace.atom: MMA and copy atoms inside kernels: the instructions,
-- cute.gemm on register fragments and cute.copy with an atom.
--
--   local thr_mma = tiled_mma:get_slice(cute.thread_idx().x)  -- (cute.trace.partition)
--   local tCrA = thr_mma:make_fragment_A(thr_mma:partition_A(sA))
--   local tCrC = thr_mma:partition_fragment_C(gC)   -- accumulators
--   cute.gemm(tiled_mma, tCrC, tCrA, tCrB, tCrC)    -- D = A B + C, atom by atom
--
--   local thr_copy = tiled_copy:get_slice(tid)
--   cute.copy(tiled_copy, thr_copy:partition_S(gA), thr_copy:partition_D(sA), pred)
--
-- cute.copy is this module's copy: with a copy atom or a tiled copy first, it
-- copies with the atom; otherwise it is cute.trace.tensor's copy of tensors.
-- cute.gemm on device tensors (on the host) is cute.lib.gemm's, which hands
-- a call with a tiled MMA or an MMA atom to this module's gemm.
--
-- Low-level ops (the IR's, one instruction each): cute.arch.mma_sync,
-- cute.arch.ldmatrix, cute.arch.stmatrix, cute.arch.cp_async,
-- cute.arch.cp_async_commit_group, cute.arch.cp_async_wait_group.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local control = require "cute.trace.control"
local tensor = require "cute.trace.tensor"
local checked = require("cute.trace.check").access
local atom = require "cute.atom"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"

local M = {}

local is_value, type_of, emit = core.is_value, core.type_of, core.emit
local imm = ops.imm
local tensor_internal = tensor.internal

local need_trace = core.need_trace

-- ---------------------------------------------------------------------------
-- The instructions

local arch = {}
M.arch = arch

-- The Hopper (sm_90a) instructions are the arch tables of their parts'
-- modules, loaded at the first use of a name this table lacks.
local PARTS = { "cute.trace.wgmma", "cute.trace.tma", "cute.trace.sync90" }
setmetatable(arch, { __index = function(t, k)
  for _, name in ipairs(PARTS) do
    local f = require(name).arch[k]
    if f ~= nil then
      rawset(t, k, f)
      return f
    end
  end
end })

local function struct_of(ty, n)
  if n == 1 then return core.scalar(ty) end
  local f = {}
  for i = 1, n do f[i] = core.scalar(ty) end
  return core.struct(f)
end

--- ldmatrix: n (1, 2, 4) 8 x 8 matrices of 16-bit elements from shared
-- memory (ptr: this thread's row) into n 32-bit registers (a list of i32
-- values). trans: transposed.
-- @param ptr a shared-memory pointer value (this thread's row)
-- @param n 1, 2 or 4
-- @param trans optional: transposed
-- @return a list of n i32 values
-- @usage local r = cute.arch.ldmatrix(sA:ptr_at({row, 0}), 4)
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
-- @param ptr a shared-memory pointer value (this thread's row)
-- @param regs a list of 1, 2 or 4 i32 values
-- @param trans optional: transposed
-- @usage cute.arch.stmatrix(sC:ptr_at({row, 0}), regs)
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
-- @param dst a shared-memory pointer value
-- @param src a global pointer value
-- @param bytes 4, 8 or 16
-- @param cache optional: "ca" or "cg"
-- @param src_bytes optional: the bytes read (a value); the rest zero-filled
-- @usage cute.arch.cp_async(s:ptr_at(i), g:ptr_at(i), 16, "cg")
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
-- @usage cute.arch.cp_async_commit_group()
function arch.cp_async_commit_group()
  need_trace("cute.arch.cp_async_commit_group")
  emit("cp.async.commit", nil)
end

--- Waits until at most n groups of cp.async are pending.
-- @param n the pending groups allowed (a Lua number)
-- @usage cute.arch.cp_async_wait_group(0)
function arch.cp_async_wait_group(n)
  need_trace("cute.arch.cp_async_wait_group")
  emit("cp.async.wait", nil, nil, nil, nil, n or 0)
end

--- wgmma.fence (sm_90a): this warpgroup's register accesses before its later wgmma.mma_async.
-- @usage cute.arch.warpgroup_fence()
function arch.warpgroup_fence()
  need_trace("cute.arch.warpgroup_fence")
  emit("wgmma.fence", nil)
end

--- One mma.sync of an atom: a, b, c lists of registers (i32 for packed
-- operands, f32 accumulators); returns the list of D registers.
-- @param at the MMA atom
-- @param a the A registers (a list of values)
-- @param b the B registers
-- @param c the C registers
-- @return the list of D registers
-- @usage local d = cute.arch.mma_sync(atom, a, b, c)
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
-- cute.gemm on fragments

-- n consecutive elements of a register fragment from element `first` (its
-- var index) as 32-bit registers.
local function frag_regs(frag, first, n, dt)
  local v = tensor_internal.var_vector(frag, first, n)
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
  if not tensor_internal.var_vector(frag, first, n, packed) then
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
    err.raise("cute.gemm: shapes do not agree: A %s, B %s, C %s, D %s", core.describe(a), core.describe(b),
      core.describe(c), core.describe(d))
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
  if L.size(dst.layout) ~= n then
    err.raise("cute.copy: source and destination sizes differ: src is %s, dst is %s", core.describe(src),
      core.describe(dst))
  end
  local per = at.values
  local bytes = at.bits / 8
  for i = 0, n - 1, per do
    local ps = tensor_internal.address(src, tensor_internal.coord_offset(src, i), bytes)
    local pd = tensor_internal.address(dst, tensor_internal.coord_offset(dst, i), bytes)
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
      err.raise("cute.copy: ldmatrix copies into a register fragment (thr_copy:retile(fragment)), got %s",
        core.describe(frag))
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
    err.raise("cute.copy: stmatrix copies from a register fragment (thr_copy:retile(fragment)), got %s",
      core.describe(src))
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
  for r = 0, n / nv - 1 do
    control.if_(pred_at(pred, r), function()
      for v = 0, nv - 1 do dst[r * nv + v] = src[r * nv + v] end
    end, function()
      for v = 0, nv - 1 do dst[r * nv + v] = 0 end
    end)
  end
  return dst
end

--- cute.gemm(tiled_mma or mma_atom, D, A, B, C) on register fragments (D =
-- A B + C), inside a kernel. (cute.gemm is cute.lib.gemm's, which takes
-- device tensors on the host and hands these calls here.)
function M.gemm(x, ...)
  if atom.is_mma_atom(x) then x = atom.make_tiled_mma(x) end
  if atom.is_tiled_mma(x) and x.atom.wgmma then return require("cute.trace.wgmma").gemm(x, ...) end -- warpgroup MMA
  if atom.is_tiled_mma(x) then return M.mma_gemm(x, ...) end
  err.raise("cute.gemm: inside a kernel it takes a tiled MMA or an MMA atom, then the fragments D, A, B, C; got %s",
    core.describe(x))
end

--- cute.copy(atom_or_tiled_copy, src, dst[, pred]) copies with the atom
-- (copy_with); cute.copy(src, dst[, pred]) copies tensors elementwise
-- (cute.trace.tensor's copy).
-- @param x a copy atom or tiled copy (or the source tensor)
-- @param ... src, dst[, pred] (or dst[, pred])
-- @usage cute.copy(tiled_copy, tAgA, tAsA)
function M.copy(x, ...)
  if atom.is_copy_atom(x) or atom.is_tiled_copy(x) then return M.copy_with(x, ...) end
  if require("cute.nvgpu.tma").is_tma_atom(x) then return require("cute.trace.tma").copy(x, ...) end
  return tensor.copy(x, ...)
end

return M
