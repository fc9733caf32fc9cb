--- cute.trace.wgmma: the warpgroup MMA in kernels: wgmma.mma_async (SS and RS), its fences,
-- commit and wait groups, and cute.gemm with a warpgroup tiled MMA.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here).
--
--   local mma = cute.make_tiled_mma(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 64, 16 }, "SMEM", "K", "K"))
--   local thr = mma:get_slice(cute.thread_idx().x)
--   local tCsA, tCsB = thr:partition_A(sA), thr:partition_B(sB)   -- shared memory, GMMA layouts
--   local tCrA, tCrB = thr:make_fragment_A(tCsA), thr:make_fragment_B(tCsB) -- descriptor fragments
--   local acc = thr:make_fragment_C(thr:partition_C(gC))
--   cute.arch.warpgroup_fence()
--   cute.gemm(mma, acc, tCrA, tCrB, acc, { accumulate = false })  -- one wgmma per (m, n, k) atom
--   cute.arch.warpgroup_commit_group()
--   cute.arch.warpgroup_wait_group(0)
--
-- A descriptor fragment of an operand in shared memory is the thread's
-- partition itself (thr_mma:make_fragment_A of a shared tensor returns it):
-- cute.gemm makes the 64-bit descriptor of each atom's block from it, the
-- constant fields (swizzle, LBO, SBO) from the layout of one block (the
-- partition's first mode, through cute.nvgpu.warpgroup.make_smem_desc) and
-- the start address from the tensor's address at run time, + the block's
-- static byte offset / 16 for each (m or n, k) (hopper-facts 2.5).
--
-- Low-level: cute.arch.mma_async(atom, acc, a, b, scale_d, opts) is one
-- wgmma.mma_async on registers (acc: a list of 32-bit values; a: an i64
-- descriptor or four i32 registers; b: an i64 descriptor).
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local tensor = require "cute.trace.tensor"
local atom = require "cute.atom"
local wg = require "cute.nvgpu.warpgroup"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"

local M = {}

local is_value, type_of, emit = core.is_value, core.type_of, core.emit
local imm = ops.imm
local tensor_internal = tensor.internal

local SMEM, RMEM = wg.OperandSource.SMEM, wg.OperandSource.RMEM
local MN_MAJOR = wg.OperandMajorMode.MN

local need_trace = core.need_trace

-- The kernel uses a warpgroup op: its block size must be a multiple of 128
-- (checked at launch; the verifier checks launch bounds).
local function mark_warpgroup()
  local T = core.current()
  if not T.warpgroup then T.warpgroup = core.loc_text(core.update_loc()) end -- the first one's "file:line"
end

local function struct_of(ty, n)
  local f = {}
  for i = 1, n do f[i] = ty end
  return core.struct(f)
end

-- ---------------------------------------------------------------------------
-- The instructions

local arch = {}
M.arch = arch

--- wgmma.commit_group: closes this warpgroup's uncommitted wgmma.mma_async
-- into one wgmma-group (sm_90a).
-- @usage cute.arch.warpgroup_commit_group()
function arch.warpgroup_commit_group()
  need_trace("cute.arch.warpgroup_commit_group")
  mark_warpgroup()
  emit("wgmma.commit", nil)
end

--- wgmma.wait_group n: waits until at most n of this warpgroup's
-- wgmma-groups are pending (n: a whole number 0..63, default 0).
-- @param n optional: the pending groups allowed (default 0)
-- @usage cute.arch.warpgroup_wait_group(0)
function arch.warpgroup_wait_group(n)
  need_trace("cute.arch.warpgroup_wait_group")
  n = n or 0
  if type(n) ~= "number" or n ~= math.floor(n) or n < 0 or n > 63 then
    err.raise("cute.arch.warpgroup_wait_group: n is a whole number of pending groups from 0 to 63 known when "
      .. "tracing, got %s", core.describe(n))
  end
  mark_warpgroup()
  emit("wgmma.wait", nil, nil, nil, nil, n)
end

-- The IR register type of an accumulator register of an atom: f32 for f32
-- accumulators, i32 for i32 ones and for pairs of f16.
local function acc_reg(at) return at.c_dtype.name == "f32" and core.f32 or core.i32 end

-- A list of 32-bit registers through one fence_operand op (or several, of
-- up to 128).
local function fence_regs(regs)
  local out = {}
  for i, r in ipairs(regs) do
    if not is_value(r) then regs[i] = core.coerce(r, core.f32, "cute.arch.warpgroup_fence_operand") end
  end
  for first = 1, #regs, 128 do
    local last = math.min(#regs, first + 127)
    if last == first then
      out[first] = emit("wgmma.fence_operand", type_of(regs[first]), regs[first])
    else
      local fields, vals = {}, {}
      for i = first, last do
        fields[#fields + 1] = type_of(regs[i])
        vals[#vals + 1] = regs[i]
      end
      local st = core.struct(fields)
      local r = emit("wgmma.fence_operand", st, core.emitn("pack", st, vals))
      for i = first, last do out[i] = emit("extract", fields[i - first + 1], r, nil, nil, i - first) end
    end
  end
  return out
end

-- The chunks (first, count) that n consecutive elements are read and
-- written in: vectors of a power of two up to 64 elements (what a
-- fragment's var.loadv / var.storev take), largest first.
local function chunks(n)
  local out, at, s = {}, 0, 64
  while at < n do
    while s > n - at do s = s / 2 end
    out[#out + 1] = { at, s }
    at = at + s
  end
  return out
end

-- n consecutive elements of a register fragment from element `first` as
-- 32-bit registers: one each for f32/i32 (f32 or i32 values), else the
-- elements' bits packed in i32 words (16-bit pairs, 8-bit quads, tf32).
local function frag_words(frag, first, n, what)
  local dt = frag.dtype
  local plain = dt.name == "f32" or dt.name == "i32" or dt.name == "u32"
  local out = {}
  for _, ch in ipairs(chunks(n)) do
    local v = tensor_internal.var_vector(frag, first + ch[1], ch[2])
    if not v then err.raise("%s: the fragment's values of one atom must be consecutive registers", what) end
    if plain then
      for i = 1, ch[2] do out[#out + 1] = emit("extract", core.scalar(dt), v, nil, nil, i - 1) end
    else
      local words = ch[2] * dt.bits / 32
      if words ~= math.floor(words) or words < 1 then
        err.raise("%s: %d %s values are not whole 32-bit registers", what, n, dt.name)
      end
      if words == 1 then
        out[#out + 1] = emit("bitcast", core.i32, v)
      else
        local w = emit("bitcast", core.vec(dtype.i32, words), v)
        for i = 1, words do out[#out + 1] = emit("extract", core.i32, w, nil, nil, i - 1) end
      end
    end
  end
  return out
end

-- Writes 32-bit registers back to n consecutive elements of a fragment.
local function frag_store_words(frag, first, n, regs, what)
  local dt = frag.dtype
  local plain = dt.name == "f32" or dt.name == "i32" or dt.name == "u32"
  local per = plain and 1 or 32 / dt.bits -- elements a register
  for _, ch in ipairs(chunks(n)) do
    local r0, nr = ch[1] / per, ch[2] / per
    local part = {}
    for i = 1, nr do part[i] = regs[r0 + i] end
    local packed
    if plain then
      packed = core.emitn("pack", core.vec(dt, ch[2]), part)
    elseif nr == 1 then
      packed = emit("bitcast", core.vec(dt, ch[2]), part[1])
    else
      packed = emit("bitcast", core.vec(dt, ch[2]), core.emitn("pack", core.vec(dtype.i32, nr), part))
    end
    if not tensor_internal.var_vector(frag, first + ch[1], ch[2], packed) then
      err.raise("%s: the fragment's values of one atom must be consecutive registers", what)
    end
  end
end

--- warpgroup_fence_operand(x): keeps the registers of x (a register
-- fragment, a list of f32/i32 values or one value) as they are at this
-- point: no read or write of them moves across it (CuTe's
-- warpgroup_fence_operand; put one on the accumulator before
-- warpgroup_fence() and after warpgroup_wait_group()). Returns x (a
-- fragment: the same fragment; values: the fenced values).
-- @param x a register fragment, a list of values or one value
-- @return x (values: the fenced values)
-- @usage acc = cute.arch.warpgroup_fence_operand(acc)
function arch.warpgroup_fence_operand(x)
  need_trace("cute.arch.warpgroup_fence_operand")
  local what = "cute.arch.warpgroup_fence_operand"
  if tensor.is_tensor(x) then
    if x.engine ~= "rmem" then
      err.raise("%s: expected a register fragment (the accumulator), got %s", what, tostring(x))
    end
    local n = L.size(x.layout)
    local per = x.dtype.bits >= 32 and 1 or (32 / x.dtype.bits)
    local consecutive = n % per == 0
    for i = 0, n - 1 do
      if consecutive and x.layout(i) ~= x.layout(0) + i then consecutive = false end
    end
    if not consecutive then
      -- not whole consecutive registers: value by value (f32 / i32 fragments)
      for i = 0, n - 1 do x[i] = fence_regs({ x[i] })[1] end
      return x
    end
    frag_store_words(x, 0, n, fence_regs(frag_words(x, 0, n, what)), what)
    return x
  end
  if is_value(x) then return fence_regs({ x })[1] end
  if type(x) == "table" then return fence_regs(x) end
  err.raise("%s: expected a register fragment or f32/i32 values, got %s", what, core.describe(x))
end

local function as_atom(at, what)
  if atom.is_mma_atom(at) then
    if not at.wgmma then err.raise("%s: %s is not a warpgroup (wgmma) atom", what, tostring(at)) end
    return at
  end
  if wg.is_mma_op(at) then return atom.make_mma_atom(at) end
  if atom.is_tiled_mma(at) and at.atom.wgmma then return at.atom end
  err.raise("%s: expected a cute.nvgpu.warpgroup MMA op or atom, got %s", what, core.describe(at))
end

local function bool_of(x, what)
  if x == nil then return core.const(core.bool, true) end
  if type(x) == "boolean" then return core.const(core.bool, x) end
  if is_value(x) and type_of(x) == core.bool then return x end
  err.raise("%s: scale_d (accumulate) is a boolean or a bool value, got %s", what, core.describe(x))
end

--- mma_async(atom, acc, a, b[, scale_d[, opts]]): one wgmma.mma_async of a
-- warpgroup atom (or op): acc the accumulator's 32-bit registers (a list:
-- N/2 f32 or i32, or N/4 i32 of f16 pairs), a an i64 shared-memory
-- descriptor (SS) or a list of four i32 registers (RS), b an i64
-- descriptor, scale_d false (or a false bool value) to ignore acc (D = A B;
-- default true), opts.negate_a / opts.negate_b (floats), opts.satfinite
-- (integers). Returns the new accumulator registers (a list). Issue it
-- between warpgroup_fence() and warpgroup_commit_group().
-- @param at the warpgroup MMA atom
-- @param acc the accumulator registers (a list)
-- @param a A's descriptor (i64) or a list of four i32 registers
-- @param b B's descriptor (i64)
-- @param scale_d optional: false to ignore acc (default true)
-- @param opts optional: {negate_a =, negate_b =, satfinite =}
-- @return the new accumulator registers (a list)
-- @usage acc = cute.arch.mma_async(atom, acc, desc_a, desc_b)
function arch.mma_async(at, acc, a, b, scale_d, opts)
  return core.at_user_line(M._mma_async, at, acc, a, b, scale_d, opts)
end

function M._mma_async(at, acc, a, b, scale_d, opts)
  local what = "cute.arch.mma_async"
  need_trace(what)
  at = as_atom(at, what)
  opts = opts or {}
  local nreg = at.regs.c
  local rt = acc_reg(at)
  if type(acc) ~= "table" or #acc ~= nreg then
    err.raise("%s: m64n%dk%d %s accumulates in %d registers a thread (a list), got %s", what, at.shape_mnk[2],
      at.shape_mnk[3], at.c_dtype.name, nreg, type(acc) == "table" and (#acc .. " values") or core.describe(acc))
  end
  local cvals = {}
  for i = 1, nreg do cvals[i] = core.coerce(acc[i], rt, what .. ": accumulator register " .. i) end
  local st = struct_of(rt, nreg)
  local sa
  if at.a_src == RMEM then
    if type(a) ~= "table" or #a ~= 4 then
      err.raise("%s: A from registers (RS) is a list of four i32 registers, got %s", what, core.describe(a))
    end
    local r = {}
    for i = 1, 4 do r[i] = core.coerce(a[i], core.i32, what .. ": A register " .. i) end
    sa = core.emitn("pack", struct_of(core.i32, 4), r)
  else
    sa = core.coerce(a, core.i64, what .. ": the A descriptor")
  end
  local sb = core.coerce(b, core.i64, what .. ": the B descriptor")
  local sd = bool_of(scale_d, what)
  local mode = (at.a_major == MN_MAJOR and 1 or 0) + (at.b_major == MN_MAJOR and 2 or 0)
    + (opts.negate_a and 4 or 0) + (opts.negate_b and 8 or 0) + (opts.satfinite and 16 or 0)
  mark_warpgroup()
  local r = core.emitn("wgmma.mma_async", st, { sa, sb, core.emitn("pack", st, cvals), sd },
    { at.shape_mnk[2], imm("E", at.ir.a), imm("E", at.ir.b), imm("E", at.ir.d), mode })
  local out = {}
  for i = 1, nreg do out[i] = emit("extract", rt, r, nil, nil, i - 1) end
  return out
end

-- ---------------------------------------------------------------------------
-- Descriptor fragments

-- The coordinate of value 0 of atom block (i, j) of a partition (V, I, J...).
local function block_coord(t, i, j)
  local r = L.rank(t.layout)
  if r >= 3 then return { 0, i, j } end
  if r == 2 then return { 0, i } end
  return 0
end

local function ptr_word(p) return emit("ptrtoint", core.i32, p) end

-- The descriptor plan of a shared-memory operand partition t (V, MN, K...)
-- of an SS wgmma: the constant fields from the layout of one block (the
-- first mode), the start address of block (0, 0) at run time.
local function desc_plan(t, at, which, what)
  if not tensor.is_tensor(t) or t.engine ~= "ptr" or t.space ~= "shared" then
    err.raise("%s: %s of an SS wgmma is thr_mma:partition_%s (or make_fragment_%s) of a shared-memory tensor, "
      .. "got %s", what, which, which, which, core.describe(t))
  end
  local lay = t.layout
  local composed = not L.is_layout(lay)
  local outer = composed and lay.outer or lay
  local vmode = L.get(outer, 0)
  while L.rank(vmode) == 1 and type(L.shape(vmode)) == "table" do vmode = L.get(vmode, 0) end
  local dt = which == "A" and at.a_dtype or at.b_dtype
  local major = which == "A" and at.a_major or at.b_major
  local mn = which == "A" and 64 or at.shape_mnk[2]
  local k = at.shape_mnk[3]
  if L.rank(vmode) ~= 2 or L.size(vmode, 0) ~= mn or L.size(vmode, 1) ~= k then
    err.raise("%s: the first mode of %s should be one atom's %d x %d block of %s (partition a shared tensor with "
      .. "thr_mma:partition_%s), got %s", what, which, mn, k, which, which, tostring(vmode))
  end
  local vl = composed and L.make_composed_layout(lay.inner, 0, vmode) or vmode
  local ok, desc = pcall(wg.make_smem_desc, vl, dt, major, { mn = mn })
  if not ok then
    err.raise("%s: %s's shared-memory layout has no wgmma descriptor: %s", what, which,
      tostring(desc):gsub("^[^:]*:%d+: ", ""))
  end
  if desc.align_bytes > t.align then
    err.raise("%s: %s's shared-memory buffer is %d-byte aligned; its %s swizzle needs %d (allocate it with "
      .. "alignment %d)", what, which, t.align, desc.swizzle, desc.align_bytes, desc.align_bytes)
  end
  -- block (0, 0)'s start: the pointer (and a swizzled layout's offset) in
  -- the unswizzled address space. A static part of the offset (a slice's:
  -- k-block, stage) joins each block's constant advance, so that every
  -- slice of one tensor shares the base descriptor.
  local addr = ptr_word(t.ptr)
  local e = dt.bytes
  local dyn, static = 0, 0
  if composed then dyn, static = ops.split_const(lay.offset) end
  if is_value(dyn) then
    local o = core.coerce(dyn, core.i32, what)
    addr = emit("add", core.i32, addr, emit("mul", core.i32, o, core.const(core.i32, e)))
  end
  local field = emit("and", core.i32, emit("lshr", core.i32, addr, core.const(core.i32, 4)),
    core.const(core.i32, 0x3FFF))
  local lo = emit("add", core.i32, field, core.const(core.i32, desc.lo))
  local hi = desc.hi >= 2 ^ 31 and (desc.hi - 2 ^ 32) or desc.hi
  local base = emit("or", core.i64, emit("cvtu", core.i64, lo, nil, nil, 0, 0), core.const(core.i64, hi * 2 ^ 32))
  return { t = t, base = base, e = e, outer = outer, static = static, desc = desc, which = which }
end

-- The descriptor of block (i, j) of a plan: the base + the block's byte offset / 16.
local function desc_at(p, i, j, what)
  local off = p.outer(block_coord(p.t, i, j))
  if type(off) ~= "number" then err.raise("%s: %s's layout must be static", what, p.which) end
  local bytes = (off + p.static) * p.e
  if bytes % 16 ~= 0 then
    err.raise("%s: block (%d, %d) of %s starts %d bytes in: descriptors address 16-byte units", what, i, j, p.which,
      bytes)
  end
  if bytes == 0 then return p.base end
  return emit("add", core.i64, p.base, core.const(core.i64, bytes / 16))
end

-- ---------------------------------------------------------------------------
-- cute.gemm with a warpgroup tiled MMA

local function check_frag(t, what, nv, name)
  if not tensor.is_tensor(t) or t.engine ~= "rmem" then
    err.raise("%s: %s must be a register fragment (thr_mma:make_fragment_%s), got %s", what, name, name:sub(1, 1),
      core.describe(t))
  end
  local v = L.size(t.layout, 0)
  if v ~= nv then
    err.raise("%s: %s has %s values in its first mode; the atom takes %d", what, name, tostring(v), nv)
  end
end

local function extent(t, i)
  if L.rank(t.layout) <= i then return 1 end
  return L.size(t.layout, i)
end

--- cute.gemm(tiled_mma, d, a, b, c[, opts]) with a warpgroup tiled MMA:
-- one wgmma.mma_async per (m, n, k) atom, k outermost. a and b are
-- descriptor fragments (thr_mma:make_fragment_A/B of shared-memory
-- partitions) or, for an RS atom, a a register fragment; c and d the
-- accumulator fragments (d may be c). The first k-block uses scale-d =
-- opts.accumulate (or what tiled_mma:set(warpgroup.Field.ACCUMULATE, x)
-- set; default true): false (or a false bool value) makes D = A B with no
-- fill of the accumulator. opts.negate_a, opts.negate_b. The caller
-- issues warpgroup_fence() before and commit/wait after.
function M.gemm(tiled, d, a, b, c, opts)
  return core.at_user_line(M._gemm, tiled, d, a, b, c, opts)
end

function M._gemm(tiled, d, a, b, c, opts)
  local what = "cute.gemm"
  need_trace(what)
  local at = tiled.atom
  opts = opts or {}
  local acc_first = opts.accumulate
  local fields = rawget(tiled, "fields")
  if acc_first == nil and fields and fields.trace == core.current() then acc_first = fields.ACCUMULATE end
  if acc_first == nil then acc_first = true end
  check_frag(c, what, at.values.c, "C")
  check_frag(d, what, at.values.c, "D")
  local va = at.values.a
  local pa
  if at.a_src == SMEM then
    pa = desc_plan(a, at, "A", what)
  else
    check_frag(a, what, va, "A")
  end
  local pb = desc_plan(b, at, "B", what)
  local mm, nn, kk = extent(a, 1), extent(b, 1), extent(a, 2)
  if extent(b, 2) ~= kk or extent(c, 1) ~= mm or extent(c, 2) ~= nn or extent(d, 1) ~= mm or extent(d, 2) ~= nn then
    err.raise("%s: shapes do not agree: A %s, B %s, C %s, D %s", what, tostring(a.layout), tostring(b.layout),
      tostring(c.layout), tostring(d.layout))
  end
  local vc = at.values.c
  local function first(t, i, j)
    local r = L.rank(t.layout)
    if r >= 3 then return t.layout({ 0, i, j }) end
    if r == 2 then return t.layout({ 0, i }) end
    return 0
  end
  local mopts = { negate_a = opts.negate_a, negate_b = opts.negate_b, satfinite = opts.satfinite }
  for k = 0, kk - 1 do
    for m = 0, mm - 1 do
      for n0 = 0, nn - 1 do
        local n = (m % 2 == 0) and n0 or (nn - 1 - n0)
        local ra = pa and desc_at(pa, m, k, what) or frag_words(a, first(a, m, k), va, what)
        local rb = desc_at(pb, n, k, what)
        local src = (k == 0) and c or d
        local rc = frag_words(src, first(src, m, n), vc, what)
        local scale = true
        if k == 0 then scale = acc_first end
        local rd = M._mma_async(at, rc, ra, rb, scale, mopts)
        frag_store_words(d, first(d, m, n), vc, rd, what)
      end
    end
  end
  return d
end

--- Whether x is a warpgroup tiled MMA (cute.trace.atom's gemm sends those here).
function M.is_warpgroup_mma(x) return atom.is_tiled_mma(x) and x.atom.wgmma == true end

return M
