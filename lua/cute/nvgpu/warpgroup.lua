--- cute.nvgpu.warpgroup: the warpgroup MMA of sm_90a (wgmma.mma_async) as
-- data: its ops and atoms (A, B and C thread-value layouts over the 128
-- threads of a warpgroup), the canonical shared-memory layout atoms its
-- operands live in, and the shared-memory matrix descriptor computed from
-- such a layout. Everything here is plain Lua, usable without a GPU.
--
--   local wg = require "cute.nvgpu.warpgroup"
--   local op = wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 128, 16 }, wg.OperandSource.SMEM,
--     wg.OperandMajorMode.K, wg.OperandMajorMode.K)
--   local mma = cute.make_tiled_mma(cute.make_mma_atom(op), { 2, 1, 1 })   -- 2 warpgroups: 128 x 128 x 16
--   local sA = wg.make_smem_layout_a(wg.OperandMajorMode.K, { 128, 128, 64 }, cute.bf16, 4)
--   local d = wg.make_smem_desc(sA, cute.bf16, wg.OperandMajorMode.K, { mn = 64 })
--   print(d)   --> SmemDesc(K-major 128B: LBO 16 B (unused), SBO 1024 B, ...)
--
-- Facts (PTX ISA "wgmma.mma_async", "Matrix Descriptor Format", "Shared
-- Memory Matrix Layout"; checked with ptxas and on an H100 as
-- docs/notes/hopper-facts.md sections 1-3 record):
--   * M is 64; K is 32 bytes of the input type (16 for f16/bf16, 8 for
--     tf32, 32 for fp8 and 8-bit integers); N is 8..256 step 8, except for
--     8-bit integers: 8, 16, 24, 32, then 48..256 step 16.
--   * bf16 and tf32 accumulate in f32 only, f16 and fp8 in f32 or f16,
--     8-bit integers in s32.
--   * Only f16/bf16 operands may be MN-major ("transposed") in shared
--     memory; A from registers (RS) is always K-major.
--
-- Swizzles: the hardware (and TMA) XOR the 16-byte chunk index of a byte
-- address (bits 4-6) with its 128-byte row index (bits 7-9), masked to 1, 2
-- or 3 bits for the 32B, 64B and 128B modes: CuTe's Swizzle<B,4,3> on bytes.
-- The layouts here are in elements, so they carry the same swizzle recast
-- to element offsets, Swizzle<B, 4 - log2(element bytes), 3> (S<3,3,3> for
-- 16-bit types), valid when the buffer starts on the pattern's repeat
-- (1024 B for 128B, 512 B for 64B, 256 B for 32B).
local L = require "cute.layout"
local dtype = require "cute.dtype"
local swizzle = require "cute.swizzle"
local err = require "cute._err"

local floor = math.floor

local M = {}

-- ---------------------------------------------------------------------------
-- Enumerations (CuTe DSL's names): members print as Enum.MEMBER; functions
-- taking one accept the member or its name as a string ("K", "SMEM", ...).

local Member = { __name = "EnumMember" }
Member.__index = Member
Member.__tostring = function(m) return m.enum .. "." .. m.name end

local function enum(name, members)
  local e = { _name = name, _order = members }
  for i, m in ipairs(members) do e[m] = setmetatable({ enum = name, name = m, index = i - 1 }, Member) end
  return e
end

local function pick(e, v, what, default)
  if v == nil and default ~= nil then return default end
  if getmetatable(v) == Member and v.enum == e._name then return v end
  if type(v) == "string" and e[v:upper()] then return e[v:upper()] end
  local names = {}
  for _, m in ipairs(e._order) do names[#names + 1] = e._name .. "." .. m end
  err.raise("%s: expected one of %s, got %s", what, table.concat(names, ", "), tostring(v))
end

--- Where A comes from: shared memory (a descriptor, "SS") or registers ("RS").
M.OperandSource = enum("OperandSource", { "SMEM", "RMEM" })
--- Which dimension of an operand is contiguous in shared memory: K (K-major,
-- "not transposed") or MN (MN-major, "transposed").
M.OperandMajorMode = enum("OperandMajorMode", { "K", "MN" })
--- The canonical shared-memory layout atoms: major mode x swizzle
-- (INTER: no swizzle, 16-byte core-matrix rows; SWw: w-byte swizzled rows).
M.SmemLayoutAtomKind = enum("SmemLayoutAtomKind",
  { "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128", "K_INTER", "K_SW32", "K_SW64", "K_SW128" })

--- Run-time fields of a warpgroup tiled MMA (tiled_mma:set(Field.ACCUMULATE, x)).
M.Field = enum("Field", { "ACCUMULATE" })

local K_MAJOR, MN_MAJOR = M.OperandMajorMode.K, M.OperandMajorMode.MN
local SMEM, RMEM = M.OperandSource.SMEM, M.OperandSource.RMEM

-- ---------------------------------------------------------------------------
-- The forms of wgmma.mma_async

local function steps(lo, hi, step, out)
  out = out or {}
  for n = lo, hi, step do out[#out + 1] = n end
  return out
end
local N_ALL = steps(8, 256, 8)
local N_INT = steps(48, 256, 16, { 8, 16, 24, 32 })

-- Families: input types, accumulators, K, the Ns, whether MN-major exists.
local FAMILIES = {
  f16 = { a = { "f16" }, b = { "f16" }, acc = { "f32", "f16" }, k = 16, n = N_ALL, mn_major = true },
  bf16 = { a = { "bf16" }, b = { "bf16" }, acc = { "f32" }, k = 16, n = N_ALL, mn_major = true },
  tf32 = { a = { "tf32" }, b = { "tf32" }, acc = { "f32" }, k = 8, n = N_ALL, mn_major = false },
  f8 = { a = { "e4m3", "e5m2" }, b = { "e4m3", "e5m2" }, acc = { "f32", "f16" }, k = 32, n = N_ALL, mn_major = false },
  i8 = { a = { "i8", "u8" }, b = { "i8", "u8" }, acc = { "i32" }, k = 32, n = N_INT, mn_major = false },
}
local FAMILY_ORDER = { "f16", "bf16", "tf32", "f8", "i8" }

local function n_text(ns)
  return ns == N_INT and "8, 16, 24, 32, 48..256 step 16" or "8..256 step 8"
end

--- The wgmma.mma_async forms that exist, as text (one per line).
-- @treturn string
-- @usage print(cute.nvgpu.warpgroup.mma_forms())
function M.mma_forms()
  local out = { "wgmma.mma_async forms (M = 64; SS: A and B in shared memory; RS: A in registers, K-major):" }
  for _, name in ipairs(FAMILY_ORDER) do
    local f = FAMILIES[name]
    out[#out + 1] = string.format("  %s x %s -> %s: m64nNk%d, N = %s; %s", table.concat(f.a, "/"),
      table.concat(f.b, "/"), table.concat(f.acc, " or "), f.k, n_text(f.n),
      f.mn_major and "A and B K- or MN-major" or "A and B K-major only")
  end
  return table.concat(out, "\n")
end

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

local function get_dtype(x, what, role)
  if x == nil then err.raise("%s: the %s dtype is missing\n%s", what, role, M.mma_forms()) end
  local ok, d = pcall(dtype.get, x)
  if not ok then err.raise("%s: the %s dtype %s is not a dtype", what, role, tostring(x)) end
  return d
end

local function shape_text(s)
  if type(s) ~= "table" then return tostring(s) end
  local parts = {}
  for i = 1, #s do parts[i] = tostring(s[i]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local WgmmaOp = { __name = "WarpgroupMmaOp" }
WgmmaOp.__index = WgmmaOp
WgmmaOp.__tostring = function(o)
  return string.format("%s(m64n%dk%d %s x %s -> %s, A %s %s-major, B %s-major)", o.what, o.shape_mnk[2],
    o.shape_mnk[3], o.a.name, o.b.name, o.acc.name, o.a_src.name, o.a_major.name, o.b_major.name)
end

-- Checks a request against the family and makes the op; every refusal
-- names what is wrong and lists the forms that exist.
local function make_op(what, family, a, b, acc, shape, a_src, a_major, b_major)
  local f = FAMILIES[family]
  local forms = M.mma_forms()
  if not has(f.a, a.name) or not has(f.b, b.name) then
    err.raise("%s: takes %s x %s inputs, got %s x %s\n%s", what, table.concat(f.a, "/"), table.concat(f.b, "/"),
      a.name, b.name, forms)
  end
  if not has(f.acc, acc.name) then
    err.raise("%s: there is no wgmma.mma_async with %s x %s -> %s (%s inputs accumulate in %s)\n%s", what, a.name,
      b.name, acc.name, a.name, table.concat(f.acc, " or "), forms)
  end
  if type(shape) ~= "table" or #shape ~= 3 then
    err.raise("%s: the instruction shape is {64, N, %d}, got %s\n%s", what, f.k, shape_text(shape), forms)
  end
  local m, n, k = shape[1], shape[2], shape[3]
  if m ~= 64 or k ~= f.k or not has(f.n, n) then
    local why = m ~= 64 and string.format("M is always 64, not %s", tostring(m))
      or k ~= f.k and string.format("K is %d for %s inputs (32 bytes), not %s", f.k, a.name, tostring(k))
      or string.format("N = %s is not one of %s", tostring(n), n_text(f.n))
    err.raise("%s: there is no wgmma.mma_async m%sn%sk%s with %s x %s -> %s: %s\n%s", what, tostring(m), tostring(n),
      tostring(k), a.name, b.name, acc.name, why, forms)
  end
  a_src = pick(M.OperandSource, a_src, what .. ": a_src", SMEM)
  a_major = pick(M.OperandMajorMode, a_major, what .. ": a_major", K_MAJOR)
  b_major = pick(M.OperandMajorMode, b_major, what .. ": b_major", K_MAJOR)
  if not f.mn_major and (a_major == MN_MAJOR or b_major == MN_MAJOR) then
    err.raise("%s: wgmma reads %s operands K-major only (%s is MN-major); only f16/bf16 operands can be MN-major\n%s",
      what, a.name, a_major == MN_MAJOR and "A" or "B", forms)
  end
  if a_src == RMEM and a_major == MN_MAJOR then
    err.raise("%s: A from registers (OperandSource.RMEM) is K-major only; pass OperandMajorMode.K for A\n%s", what,
      forms)
  end
  return setmetatable({ what = what, family = family, a = a, b = b, acc = acc, shape_mnk = { 64, n, k },
    a_src = a_src, a_major = a_major, b_major = b_major }, WgmmaOp)
end

--- wgmma with f16 or bf16 inputs: ab_dtype (f16, bf16), acc_dtype (f32;
-- f16 for f16 inputs), instruction_shape_mnk {64, N, 16}, a_src
-- (OperandSource, default SMEM), a_major and b_major (OperandMajorMode,
-- default K).
-- @param ab_dtype cute.f16 or cute.bf16
-- @param acc_dtype cute.f32 (or cute.f16 for f16 inputs)
-- @param instruction_shape_mnk {64, N, 16}
-- @param a_src optional: OperandSource.SMEM (the default) or .RMEM
-- @param a_major optional: OperandMajorMode.K (the default) or .MN
-- @param b_major optional: OperandMajorMode.K (the default) or .MN
-- @return a warpgroup MMA op (for cute.make_mma_atom)
-- @usage local op = cute.nvgpu.warpgroup.MmaF16BF16Op(cute.bf16, cute.f32, {64, 128, 16})
function M.MmaF16BF16Op(ab_dtype, acc_dtype, instruction_shape_mnk, a_src, a_major, b_major)
  local what = "warpgroup.MmaF16BF16Op"
  local ab = get_dtype(ab_dtype, what, "A/B")
  local fam = ab.name == "bf16" and "bf16" or "f16"
  return make_op(what, fam, ab, ab, get_dtype(acc_dtype, what, "accumulator"), instruction_shape_mnk, a_src, a_major,
    b_major)
end

--- wgmma with fp8 inputs (e4m3 or e5m2 each): acc_dtype f32 or f16,
-- instruction_shape_mnk {64, N, 32}; operands K-major.
-- @param a_dtype cute.e4m3 or cute.e5m2
-- @param b_dtype cute.e4m3 or cute.e5m2
-- @param acc_dtype cute.f32 or cute.f16
-- @param instruction_shape_mnk {64, N, 32}
-- @param a_src optional: OperandSource.SMEM (the default) or .RMEM
-- @param a_major optional: OperandMajorMode.K
-- @param b_major optional: OperandMajorMode.K
-- @return a warpgroup MMA op
-- @usage local op = cute.nvgpu.warpgroup.MmaF8Op(cute.e4m3, cute.e4m3, cute.f32, {64, 128, 32})
function M.MmaF8Op(a_dtype, b_dtype, acc_dtype, instruction_shape_mnk, a_src, a_major, b_major)
  local what = "warpgroup.MmaF8Op"
  return make_op(what, "f8", get_dtype(a_dtype, what, "A"), get_dtype(b_dtype, what, "B"),
    get_dtype(acc_dtype, what, "accumulator"), instruction_shape_mnk, a_src, a_major, b_major)
end

--- wgmma with 8-bit integer inputs (i8 or u8 each) and i32 accumulators:
-- instruction_shape_mnk {64, N, 32} (N = 8, 16, 24, 32, 48..256 step 16);
-- operands K-major.
-- @param a_dtype cute.i8 or cute.u8
-- @param b_dtype cute.i8 or cute.u8
-- @param instruction_shape_mnk {64, N, 32}
-- @param a_src optional: OperandSource.SMEM (the default) or .RMEM
-- @param a_major optional: OperandMajorMode.K
-- @param b_major optional: OperandMajorMode.K
-- @return a warpgroup MMA op
-- @usage local op = cute.nvgpu.warpgroup.MmaI8Op(cute.i8, cute.i8, {64, 64, 32})
function M.MmaI8Op(a_dtype, b_dtype, instruction_shape_mnk, a_src, a_major, b_major)
  local what = "warpgroup.MmaI8Op"
  return make_op(what, "i8", get_dtype(a_dtype, what, "A"), get_dtype(b_dtype, what, "B"), dtype.i32,
    instruction_shape_mnk, a_src, a_major, b_major)
end

--- wgmma with tf32 inputs (f32 data read as tf32) and f32 accumulators:
-- instruction_shape_mnk {64, N, 8}; operands K-major. (CuTe DSL has no
-- warpgroup tf32 op; this one is named like cute.nvgpu.warp.MmaTF32Op.)
-- @param instruction_shape_mnk {64, N, 8}
-- @param a_src optional: OperandSource.SMEM (the default) or .RMEM
-- @param a_major optional: OperandMajorMode.K
-- @param b_major optional: OperandMajorMode.K
-- @return a warpgroup MMA op
-- @usage local op = cute.nvgpu.warpgroup.MmaTF32Op({64, 64, 8})
function M.MmaTF32Op(instruction_shape_mnk, a_src, a_major, b_major)
  return make_op("warpgroup.MmaTF32Op", "tf32", dtype.tf32, dtype.tf32, dtype.f32, instruction_shape_mnk, a_src,
    a_major, b_major)
end

--- is_mma_op(x): x is a warpgroup MMA op.
-- @param x any value
-- @treturn bool
-- @usage cute.nvgpu.warpgroup.is_mma_op(cute.nvgpu.warpgroup.MmaTF32Op({64, 64, 8}))  -- true
M.is_mma_op = function(x) return getmetatable(x) == WgmmaOp end

-- ---------------------------------------------------------------------------
-- Atoms: thread-value layouts over a warpgroup (t = 0..127: lane l = t % 32,
-- warp w = t // 32), as CuTe writes them (index m + 64 k for A, n + N k for
-- B, m + 64 n for C).

local make_layout = L.make_layout

--- C/D of m64nN: thread (l % 4, l // 4, w), value i = (i % 2, (i // 2) % 2,
-- i // 4): row 16 w + l // 4 + 8 ((i // 2) % 2), column 8 (i // 4) + 2 (l % 4) + i % 2.
-- @param n the N of m64nN
-- @treturn Layout
-- @usage local tv_c = cute.nvgpu.warpgroup.c_layout(128)
function M.c_layout(n) return make_layout({ { 4, 8, 4 }, { 2, 2, n / 8 } }, { { 128, 1, 16 }, { 64, 8, 512 } }) end

-- A in registers (RS), by input bits: four 32-bit registers a thread, the
-- rows of its warp as in mma.sync m16n8k16's A.
local A_RS = {
  [16] = { { { 4, 8, 4 }, { 2, 2, 2 } }, { { 128, 1, 16 }, { 64, 8, 512 } } }, -- k16: (r, 2c+{0,1}), r+8, k+8
  [32] = { { { 4, 8, 4 }, { 2, 2 } }, { { 64, 1, 16 }, { 8, 256 } } },         -- tf32 k8: (r, c), r+8, k+4
  [8] = { { { 4, 8, 4 }, { 4, 2, 2 } }, { { 256, 1, 16 }, { 64, 8, 1024 } } },   -- 8-bit k32: (r, 4c+{0..3}), r+8, k+16
}

--- The A layout of an RS wgmma with inputs of `bits` (8, 16 or 32).
-- @param bits 8, 16 or 32
-- @treturn Layout
-- @usage local tv_a = cute.nvgpu.warpgroup.a_rs_layout(16)
function M.a_rs_layout(bits) return make_layout(A_RS[bits][1], A_RS[bits][2]) end

--- An operand in shared memory: every thread of the warpgroup "holds" the
-- whole (rows x k) operand (thread stride 0), as CuTe's ABLayout.
-- @param rows the operand's rows (M or N)
-- @param k the operand's K
-- @treturn Layout
-- @usage cute.nvgpu.warpgroup.smem_operand_layout(64, 16)  -- (128,(64,16)):(0,(1,64))
function M.smem_operand_layout(rows, k) return make_layout({ 128, { rows, k } }, { 0, { 1, rows } }) end

-- The fields of the atom; cute.atom.make_mma_atom makes them an MmaAtom.
local function make_atom(op)
  local n, k = op.shape_mnk[2], op.shape_mnk[3]
  local shape = string.format("m64n%dk%d", n, k)
  local ir_name = { i8 = "s8", u8 = "u8", i32 = "s32" }
  local function irn(d) return ir_name[d.name] or d.name end
  local a = {
    kind = "mma", wgmma = true, shape_mnk = { 64, n, k }, a_dtype = op.a, b_dtype = op.b, c_dtype = op.acc,
    sm = 90, arch = "sm_90a", threads = 128, op = op,
    a_src = op.a_src, a_major = op.a_major, b_major = op.b_major,
    ir = { op = "wgmma", shape = shape, a = irn(op.a), b = irn(op.b), c = irn(op.acc), d = irn(op.acc) },
    tv_a = op.a_src == RMEM and M.a_rs_layout(op.a.bits) or M.smem_operand_layout(64, k),
    tv_b = M.smem_operand_layout(n, k),
    tv_c = M.c_layout(n),
  }
  a.values = { a = L.size(a.tv_a, 1), b = L.size(a.tv_b, 1), c = L.size(a.tv_c, 1) }
  -- 32-bit registers a thread gives: A (RS) 4, A and B from shared memory
  -- none (a 64-bit descriptor each), C n/2 (f32, s32) or n/4 (f16 pairs)
  a.regs = { a = op.a_src == RMEM and 4 or 0, b = 0, c = op.acc.bits == 16 and n / 4 or n / 2 }
  return a
end
WgmmaOp.__make_mma_atom = make_atom

-- ---------------------------------------------------------------------------
-- Shared-memory layout atoms

local function log2(x)
  local r = 0
  while x > 1 do x, r = x / 2, r + 1 end
  return r
end

-- element bytes of an operand dtype (8-, 16- or 32-bit elements)
local function elem_bytes(dt, what)
  dt = dtype.get(dt)
  if dt.bits ~= 8 and dt.bits ~= 16 and dt.bits ~= 32 then
    err.raise("%s: wgmma operands are 8-, 16- or 32-bit elements, not %s", what, dt.name)
  end
  return dt.bytes, dt
end

local SW_BITS = { INTER = 0, SW32 = 1, SW64 = 2, SW128 = 3 }
local SW_NAME = { [0] = "INTER", "SW32", "SW64", "SW128" }

--- The element-unit swizzle of the GMMA atoms for `esize`-byte elements:
-- Swizzle<b, 4 - log2(esize), 3> (b = 0, 1, 2, 3 for none, 32B, 64B, 128B).
-- @param b 0, 1, 2 or 3 (none, 32B, 64B, 128B)
-- @param esize the element size in bytes
-- @return a Swizzle
-- @usage local sw = cute.nvgpu.warpgroup.element_swizzle(3, 2)
function M.element_swizzle(b, esize) return swizzle.Swizzle(b, 4 - log2(esize), 3) end

--- The swizzled layout atom of a kind for dtype (a ComposedLayout, in
-- elements, over (MN, K)): K-major SWw is Sw o (8, w/e):(w/e, 1), MN-major
-- SWw is Sw o (w/e, 8):(1, w/e) (w = 16 bytes for INTER, e the element
-- bytes).
-- @param kind a SmemLayoutAtomKind (or its name: "K_SW128", ...)
-- @param dt the element dtype
-- @return a ComposedLayout
-- @usage local atom = cute.nvgpu.warpgroup.make_smem_layout_atom("K_SW128", cute.bf16)
function M.make_smem_layout_atom(kind, dt)
  local what = "warpgroup.make_smem_layout_atom"
  kind = pick(M.SmemLayoutAtomKind, kind, what .. ": kind")
  if dt == nil then err.raise("%s: the dtype is missing", what) end
  local e = elem_bytes(dt, what)
  local major, sw = kind.name:match("^(%a+)_(%w+)$")
  local b = SW_BITS[sw]
  local width = (16 * 2 ^ b) / e -- elements in a row of the atom
  local outer = major == "K" and make_layout({ 8, width }, { width, 1 }) or make_layout({ width, 8 }, { 1, width })
  return L.make_composed_layout(M.element_swizzle(b, e), 0, outer)
end

--- The widest atom kind whose contiguous extent divides major_mode_size
-- (the tile's extent along the contiguous mode: K for K-major, MN for
-- MN-major), as CuTe DSL's get_smem_layout_atom picks it.
-- @param major an OperandMajorMode
-- @param dt the element dtype
-- @param major_mode_size the tile's extent along the contiguous mode
-- @return a SmemLayoutAtomKind
-- @usage local kind = wg.get_smem_layout_atom_kind(wg.OperandMajorMode.K, cute.bf16, 64)  -- (wg: cute.nvgpu.warpgroup)
function M.get_smem_layout_atom_kind(major, dt, major_mode_size)
  local what = "warpgroup.get_smem_layout_atom_kind"
  major = pick(M.OperandMajorMode, major, what .. ": major")
  local e = elem_bytes(dt, what)
  if type(major_mode_size) ~= "number" or major_mode_size < 1 or major_mode_size ~= floor(major_mode_size) then
    err.raise("%s: the major mode size must be a positive integer, got %s", what, tostring(major_mode_size))
  end
  local bytes = major_mode_size * e
  for b = 3, 0, -1 do
    if bytes % (16 * 2 ^ b) == 0 then return M.SmemLayoutAtomKind[major.name .. "_" .. SW_NAME[b]] end
  end
  err.raise("%s: a %s-major extent of %d %s elements (%d bytes) is not a multiple of 16 bytes: no atom fits", what,
    major.name, major_mode_size, dtype.get(dt).name, bytes)
end

--- The atom tiled over shape {MN, K} or {MN, K, stages}: MN first for a
-- K-major atom, K first for an MN-major one (so that one TMA box of
-- (contiguous extent, the other extent) fills a block of atoms densely),
-- stages last.
-- @param atom a layout atom (make_smem_layout_atom)
-- @param shape {MN, K} or {MN, K, stages}
-- @param major an OperandMajorMode
-- @return a ComposedLayout
-- @usage local sA = wg.tile_to_mma_shape(atom, {128, 64, 4}, wg.OperandMajorMode.K)
function M.tile_to_mma_shape(atom, shape, major)
  local what = "warpgroup.tile_to_mma_shape"
  if not L.internal.is_any_layout(atom) then err.raise("%s: expected a layout atom, got %s", what, tostring(atom)) end
  major = pick(M.OperandMajorMode, major, what .. ": major")
  if type(shape) ~= "table" or (#shape ~= 2 and #shape ~= 3) then
    err.raise("%s: the shape is {MN, K} or {MN, K, stages}, got %s", what, shape_text(shape))
  end
  local order
  if #shape == 2 then order = major == K_MAJOR and { 1, 2 } or { 2, 1 }
  else order = major == K_MAJOR and { 1, 2, 3 } or { 2, 1, 3 } end
  return require("cute.layout_tile").tile_to_shape(atom, shape, order)
end

local function smem_layout_operand(which, major, tiler_mnk, dt, stages)
  local what = "warpgroup.make_smem_layout_" .. which
  major = pick(M.OperandMajorMode, major, what .. ": major")
  if type(tiler_mnk) ~= "table" or #tiler_mnk ~= 3 then
    err.raise("%s: the tiler is {M, N, K}, got %s", what, shape_text(tiler_mnk))
  end
  local mn = which == "a" and tiler_mnk[1] or tiler_mnk[2]
  local k = tiler_mnk[3]
  local kind = M.get_smem_layout_atom_kind(major, dt, major == K_MAJOR and k or mn)
  local atom = M.make_smem_layout_atom(kind, dt)
  local shape = { mn, k }
  if stages ~= nil then shape[3] = stages end
  return M.tile_to_mma_shape(atom, shape, major)
end

--- The shared-memory layout of A over (M, K[, stages]) for a tile
-- {M, N, K}: the widest swizzle atom that fits, tiled (CuTe DSL's
-- make_smem_layout_a).
-- @param major an OperandMajorMode
-- @param tiler_mnk the tile {M, N, K}
-- @param dt the element dtype
-- @param stages optional: the pipeline stages
-- @return a ComposedLayout
-- @usage local sA = wg.make_smem_layout_a(wg.OperandMajorMode.K, {128, 128, 64}, cute.bf16, 4)
function M.make_smem_layout_a(major, tiler_mnk, dt, stages)
  return smem_layout_operand("a", major, tiler_mnk, dt, stages)
end

--- The same for B, over (N, K[, stages]).
-- @param major an OperandMajorMode
-- @param tiler_mnk the tile {M, N, K}
-- @param dt the element dtype
-- @param stages optional: the pipeline stages
-- @return a ComposedLayout
-- @usage local sB = wg.make_smem_layout_b(wg.OperandMajorMode.K, {128, 128, 64}, cute.bf16, 4)
function M.make_smem_layout_b(major, tiler_mnk, dt, stages)
  return smem_layout_operand("b", major, tiler_mnk, dt, stages)
end

-- ---------------------------------------------------------------------------
-- Shared-memory matrix descriptors

local TWO16 = 2 ^ 16
local LAYOUT_TYPE = { [0] = 0, 3, 2, 1 }   -- swizzle bits -> descriptor layout type (1 128B, 2 64B, 3 32B)
local TYPE_NAME = { [0] = "none", "128B", "64B", "32B" }

local function check_field(what, name, v, lo, hi, multiple)
  if type(v) ~= "number" or v ~= floor(v) or v < lo or v > hi or (multiple and v % multiple ~= 0) then
    err.raise("%s: %s must be an integer in %d..%d%s, got %s", what, name, lo, hi,
      multiple and string.format(" and a multiple of %d", multiple) or "", tostring(v))
  end
  return v
end

--- Packs a GMMA shared-memory descriptor (PTX ISA "Matrix Descriptor
-- Format"): fields {start_address, lbo_bytes, sbo_bytes (bytes, multiples of
-- 16 below 2^18), base_offset (0..7), layout_type (0 none, 1 128B, 2 64B,
-- 3 32B)}. Returns the low and high 32-bit words: bits 0-13 start >> 4,
-- 16-29 LBO >> 4 (low word); 32-45 SBO >> 4, 49-51 base offset, 62-63
-- layout type (high word).
-- @param f the fields {start_address, lbo_bytes, sbo_bytes, base_offset, layout_type}
-- @return the low and the high word
-- @usage local lo, hi = wg.encode_smem_desc({start_address = 0, lbo_bytes = 16, sbo_bytes = 1024})
function M.encode_smem_desc(f)
  local what = "warpgroup.encode_smem_desc"
  if type(f) ~= "table" then err.raise("%s: expected a table of fields, got %s", what, tostring(f)) end
  local limit = (2 ^ 14 - 1) * 16
  local addr = check_field(what, "start_address", f.start_address or 0, 0, limit, 16)
  local lbo = check_field(what, "lbo_bytes", f.lbo_bytes, 0, limit, 16)
  local sbo = check_field(what, "sbo_bytes", f.sbo_bytes, 0, limit, 16)
  local base = check_field(what, "base_offset", f.base_offset or 0, 0, 7)
  local lt = check_field(what, "layout_type", f.layout_type, 0, 3)
  local lo = addr / 16 + (lbo / 16) * TWO16
  local hi = sbo / 16 + base * 2 ^ 17 + lt * 2 ^ 30
  return lo, hi
end

--- The fields of a descriptor from its two words (encode_smem_desc's inverse).
-- @param lo the low word
-- @param hi the high word
-- @return a table of the fields
-- @usage local f = cute.nvgpu.warpgroup.decode_smem_desc(lo, hi)
function M.decode_smem_desc(lo, hi)
  local function bits(w, from, n) return floor(w / 2 ^ from) % 2 ^ n end
  return { start_address = bits(lo, 0, 14) * 16, lbo_bytes = bits(lo, 16, 14) * 16, sbo_bytes = bits(hi, 0, 14) * 16,
    base_offset = bits(hi, 17, 3), layout_type = bits(hi, 30, 2) }
end

local SmemDesc = { __name = "SmemDesc" }
SmemDesc.__index = SmemDesc
SmemDesc.__tostring = function(d)
  return string.format("SmemDesc(%s-major %s: LBO %d B%s, SBO %d B%s, base offset %d, start +%d B, %d x %d elements"
    .. " a block, %d MN x %d K blocks, %d stages, buffer aligned to %d B)", d.major, d.swizzle, d.lbo_bytes,
    d.lbo_used and "" or " (unused)", d.sbo_bytes, d.sbo_used and "" or " (unused)", d.base_offset, d.start_bytes,
    d.mn, d.k, d.mn_blocks, d.k_blocks, d.stages, d.align_bytes)
end

--- The descriptor's two words for the operand block starting at smem byte
-- address `address` (the buffer's address plus an entry of
-- start/mn/k/stage offsets).
function SmemDesc:words(address)
  return M.encode_smem_desc { start_address = address, lbo_bytes = self.lbo_bytes, sbo_bytes = self.sbo_bytes,
    base_offset = self.base_offset, layout_type = self.layout_type }
end

local function atom_hint(major, b, e, dt_name)
  local kind = major .. "_" .. SW_NAME[b]
  return string.format("make_smem_layout_atom(SmemLayoutAtomKind.%s, %s) tiled with tile_to_mma_shape "
    .. "(%s %s-major atom is %s)", kind, dt_name, major == "MN" and "an" or "a", major,
    major == "K" and string.format("8 rows of %d bytes", 16 * 2 ^ b)
      or string.format("%d MN elements x 8 K rows", 16 * 2 ^ b / e))
end

-- the offsets of mode `mode` of a static layout at 1-D indices 0..n-1
local function mode_offsets(outer, rank, mode, n, what, lay)
  local out = {}
  local c = {}
  for i = 1, rank do c[i] = 0 end
  for i = 0, n - 1 do
    c[mode + 1] = i
    local v = outer(c)
    if type(v) ~= "number" then err.raise("%s: %s must be static", what, tostring(lay)) end
    out[i] = v
  end
  return out
end

--- The GMMA descriptor of an operand's shared-memory layout, by analysis:
-- `layout` (a Layout, a swizzled ComposedLayout, or a tensor with one) maps
-- (MN, K) or (MN, K, stages) to element offsets; dt is the element dtype and
-- major the operand's OperandMajorMode. opts.mn: the MN extent one wgmma
-- reads (64 for A, N for B; default the layout's whole MN extent): the
-- layout is cut into blocks of opts.mn x K-instruction (32 bytes of K), and
-- every block must be the same canonical layout (PTX ISA "Shared Memory
-- Matrix Layout") at its own start address. Returns an SmemDesc:
--   layout_type (0 none, 1 128B, 2 64B, 3 32B), swizzle, major,
--   lbo_bytes, sbo_bytes (a field the hardware does not read for this
--   layout holds 16, i.e. 1 in the field, as CUTLASS writes it;
--   lbo_used/sbo_used say which), base_offset (0: the buffer starts on the
--   swizzle's repeat, align_bytes),
--   start_bytes (block (0, 0) of stage 0, from the buffer's start),
--   mn_offsets_bytes, k_offsets_bytes, stage_offsets_bytes (lists, 1-based,
--   from the first block: the per-k-block advance is k_offsets_bytes[kb+1],
--   added as k_offsets_bytes[kb+1] / 16 to the low word),
--   lo, hi (the words with start address 0: add (address >> 4) to lo),
--   mn, k, mn_blocks, k_blocks, stages.
-- A layout no descriptor can describe is an error saying why and which atom fits.
-- @param layout a Layout, swizzled ComposedLayout or a tensor with one
-- @param dt the element dtype
-- @param major the operand's OperandMajorMode
-- @param opts optional: {mn =}
-- @return an SmemDesc
-- @usage local d = wg.make_smem_desc(sA_layout, cute.bf16, wg.OperandMajorMode.K)
function M.make_smem_desc(layout, dt, major, opts)
  local what = "warpgroup.make_smem_desc"
  local lay = layout
  local is_layout = L.internal.is_any_layout
  if type(layout) == "table" and not is_layout(layout) and is_layout(rawget(layout, "layout")) then
    lay = layout.layout
  end
  if not L.internal.is_any_layout(lay) then
    err.raise("%s: expected a layout (or a tensor) over (MN, K), got %s", what, tostring(layout))
  end
  if dt == nil then err.raise("%s: the dtype is missing", what) end
  local e, d = elem_bytes(dt, what)
  major = pick(M.OperandMajorMode, major, what .. ": major")
  if major == MN_MAJOR and e ~= 2 then
    err.raise("%s: wgmma reads %s operands K-major only; only 16-bit operands can be MN-major", what, d.name)
  end
  if opts ~= nil and type(opts) ~= "table" then err.raise("%s: opts must be a table such as {mn = 64}", what) end
  -- the swizzle, the offset and the outer layout
  local sw, offset, outer = nil, 0, lay
  if L.is_composed_layout(lay) then
    if not swizzle.is_swizzle(lay.inner) then
      err.raise("%s: %s is composed with %s, not a swizzle", what, tostring(lay), tostring(lay.inner))
    end
    sw, offset, outer = lay.inner, lay.offset, lay.outer
    if type(offset) ~= "number" then err.raise("%s: %s must be static", what, tostring(lay)) end
  end
  local b = 0
  if sw then
    b = sw.bits
    local want_base = 4 - log2(e)
    if b > 3 or (b > 0 and (sw.base ~= want_base or sw.shift ~= 3)) then
      err.raise("%s: the swizzle %s on %s elements is S<%d,%d,%d> on bytes; wgmma's swizzles are S<1..3,4,3> on "
        .. "bytes (S<b,%d,3> on %s elements): use %s", what, tostring(sw), d.name, sw.bits, sw.base + log2(e),
        sw.shift, want_base, d.name, atom_hint(major.name, math.min(b, 3), e, d.name))
    end
  end
  local rank = L.rank(outer)
  if rank ~= 2 and rank ~= 3 then
    err.raise("%s: %s has rank %d; expected (MN, K) or (MN, K, stages)", what, tostring(lay), rank)
  end
  local mnx, kx = L.size(outer, 0), L.size(outer, 1)
  local nst = rank == 3 and L.size(outer, 2) or 1
  if type(mnx) ~= "number" or type(kx) ~= "number" or type(nst) ~= "number" then
    err.raise("%s: %s must be static", what, tostring(lay))
  end
  local T = 16 / e            -- elements in a 16-byte core-matrix row
  local W = 16 * 2 ^ b / e    -- elements in a swizzle row (T when not swizzled)
  local kinst = 32 / e        -- K of one wgmma
  local mnb = opts and opts.mn or mnx
  if type(mnb) ~= "number" or mnb < 1 or mnx % mnb ~= 0 then
    err.raise("%s: opts.mn = %s must divide the layout's MN extent %d", what, tostring(mnb), mnx)
  end
  local gran = major == K_MAJOR and 8 or W
  local hint = atom_hint(major.name, b, e, d.name)
  if mnb % gran ~= 0 then
    local fits = "none"
    if major == MN_MAJOR then
      for bb = 3, 0, -1 do
        if mnb % (16 * 2 ^ bb / e) == 0 then fits = atom_hint("MN", bb, e, d.name); break end
      end
    end
    err.raise("%s: an MN extent of %d is not a multiple of the %s-major %s atom's %d; %s", what, mnb, major.name,
      SW_NAME[b], gran, major == MN_MAJOR and ("an atom that fits: " .. fits) or "wgmma's M and N are multiples of 8")
  end
  if kx % kinst ~= 0 then
    err.raise("%s: a K extent of %d is not a multiple of one wgmma's K (%d %s elements = 32 bytes)", what, kx, kinst,
      d.name)
  end
  local off_mn = mode_offsets(outer, rank, 0, mnx, what, lay)
  local off_k = mode_offsets(outer, rank, 1, kx, what, lay)
  local off_s = rank == 3 and mode_offsets(outer, rank, 2, nst, what, lay) or { [0] = 0 }
  -- the atom to suggest: the one whose rows are as long as this layout's
  -- contiguous run along the major mode
  do
    local moff, mext = major == K_MAJOR and off_k or off_mn, major == K_MAJOR and kx or mnx
    local run = 1
    while run < mext and moff[run] == moff[0] + run do run = run + 1 end
    for bb = 3, 0, -1 do
      if (run * e) % (16 * 2 ^ bb) == 0 then
        if bb ~= b then
          hint = string.format("%s (this layout keeps %d bytes contiguous along %s; that atom's rows are %d bytes, %s)",
            atom_hint(major.name, bb, e, d.name), run * e, major.name, 16 * 2 ^ bb,
            bb == 0 and "not swizzled" or ("swizzled with " .. tostring(M.element_swizzle(bb, e))))
        end
        break
      end
    end
  end
  -- contiguity, to name a wrong major mode
  local contiguous = (mnx > 1 and off_mn[1] == 1) and "MN" or (kx > 1 and off_k[1] == 1) and "K" or nil
  if contiguous and contiguous ~= major.name then
    err.raise("%s: %s is %s-major (%s contiguous) but OperandMajorMode.%s was asked for; pass OperandMajorMode.%s or "
      .. "build the layout from %s", what, tostring(lay), contiguous, contiguous, major.name, contiguous, hint)
  end
  -- the strides the descriptor carries, read off block (0, 0) in elements
  local lbo, sbo, lbo_used, sbo_used
  if major == K_MAJOR then
    sbo_used = mnb > 8
    sbo = sbo_used and off_mn[8] - off_mn[0] or nil
    lbo_used = b == 0
    lbo = lbo_used and off_k[T] - off_k[0] or nil
  elseif b == 0 then
    sbo_used = mnb > T
    sbo = sbo_used and off_mn[T] - off_mn[0] or nil
    lbo_used = true
    lbo = off_k[8] - off_k[0]
  else
    lbo_used = mnb > W
    lbo = lbo_used and off_mn[W] - off_mn[0] or nil
    sbo_used = true
    sbo = off_k[8] - off_k[0]
  end
  -- the canonical layout of one block (PTX ISA; facts section 2.3), by mode
  local canon_mn, canon_k, form
  if major == K_MAJOR then
    local row = b == 0 and T or W
    canon_mn = function(i) return (i % 8) * row + floor(i / 8) * (sbo or 0) end
    if b == 0 then
      canon_k = function(j) return j % T + floor(j / T) * lbo end
      form = string.format("((8,m),(%d,2)):((%d,SBO),(1,LBO))", T, T)
    else
      canon_k = function(j) return j end
      form = string.format("%s o ((8,m),(%d,2)):((%d,SBO),(1,%d))", tostring(M.element_swizzle(b, e)), T, W, T)
    end
  elseif b == 0 then
    canon_mn = function(i) return i % T + floor(i / T) * (sbo or 0) end
    canon_k = function(j) return (j % 8) * T + floor(j / 8) * lbo end
    form = string.format("((%d,m),(8,k)):((1,SBO),(%d,LBO))", T, T)
  else
    canon_mn = function(i) return i % W + floor(i / W) * (lbo or 0) end
    canon_k = function(j) return (j % 8) * W + floor(j / 8) * sbo end
    form = string.format("%s o ((%d,%d,m),(8,k)):((1,%d,LBO),(%d,SBO))", tostring(M.element_swizzle(b, e)), T, W / T,
      T, W)
  end
  local function mismatch(mode, base, i, got, want)
    local mn, k = mode == "MN" and base + i or 0, mode == "K" and base + i or 0
    err.raise("%s: %s is not a canonical %s-major %s layout: element (mn %d, k %d) is %d elements from its block's "
      .. "start, where a descriptor (LBO %s, SBO %s elements) reads %d; the canonical block is %s; build the layout "
      .. "from %s", what, tostring(lay), major.name, SW_NAME[b], mn, k, got, tostring(lbo or "-"),
      tostring(sbo or "-"), want, form, hint)
  end
  for blk = 0, mnx / mnb - 1 do
    local base = blk * mnb
    for i = 0, mnb - 1 do
      local got = off_mn[base + i] - off_mn[base]
      local want = canon_mn(i)
      if got ~= want then mismatch("MN", base, i, got, want) end
    end
  end
  for blk = 0, kx / kinst - 1 do
    local base = blk * kinst
    for j = 0, kinst - 1 do
      local got = off_k[base + j] - off_k[base]
      local want = canon_k(j)
      if got ~= want then mismatch("K", base, j, got, want) end
    end
  end
  -- fields in bytes
  local limit = (2 ^ 14 - 1) * 16
  local function bytes_of(name, v, used)
    if not used then return 16 end
    local by = v * e
    if by < 0 or by % 16 ~= 0 or by > limit then
      err.raise("%s: %s of %s is %d bytes; the descriptor holds multiples of 16 bytes from 0 to %d", what, name,
        tostring(lay), by, limit)
    end
    return by
  end
  local lbo_b = bytes_of("the LBO", lbo, lbo_used)
  local sbo_b = bytes_of("the SBO", sbo, sbo_used)
  local start = (offset + off_mn[0] + off_k[0] + off_s[0]) * e
  local function rel_list(offs, step, count)
    local out = {}
    for i = 0, count - 1 do
      local by = (offs[i * step] - offs[0]) * e
      if (start + by) % 16 ~= 0 then
        err.raise("%s: a block of %s starts at byte %d, not a multiple of 16 (descriptors address 16-byte units)",
          what, tostring(lay), start + by)
      end
      out[i + 1] = by
    end
    return out
  end
  if start % 16 ~= 0 then
    err.raise("%s: %s starts at byte %d, not a multiple of 16 (descriptors address 16-byte units)", what,
      tostring(lay), start)
  end
  local desc = setmetatable({
    layout_type = LAYOUT_TYPE[b], swizzle = TYPE_NAME[LAYOUT_TYPE[b]], major = major.name,
    lbo_bytes = lbo_b, sbo_bytes = sbo_b, lbo_used = lbo_used, sbo_used = sbo_used, base_offset = 0,
    align_bytes = b == 0 and 16 or 128 * 2 ^ b,
    start_bytes = start, mn = mnb, k = kinst, mn_blocks = mnx / mnb, k_blocks = kx / kinst, stages = nst,
    mn_offsets_bytes = rel_list(off_mn, mnb, mnx / mnb), k_offsets_bytes = rel_list(off_k, kinst, kx / kinst),
    stage_offsets_bytes = rel_list(off_s, 1, nst),
  }, SmemDesc)
  desc.lo, desc.hi = desc:words(0)
  return desc
end

--- is_smem_desc(x): x is an SmemDesc (make_smem_desc).
-- @param x any value
-- @treturn bool
-- @usage cute.nvgpu.warpgroup.is_smem_desc(d)
M.is_smem_desc = function(x) return getmetatable(x) == SmemDesc end
M._SmemDesc = SmemDesc

return M
