--- cute.atom: MMA and copy atoms as data, and their tilings (CuTe's MMA_Atom,
-- TiledMMA, Copy_Atom, TiledCopy), for the warp-level tensor cores of sm_80
-- and later.
--
--   local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
--   local mma = cute.make_tiled_mma(atom, { 2, 2, 1 })              -- 2 x 2 warps: a 32 x 16 x 16 tile
--   local ldsm = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(false, 4), cute.bf16)
--   local g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp("global"), cute.bf16, { num_bits_per_copy = 128 })
--   local copy = cute.make_tiled_copy_tv(g2s, cute.make_layout({ 32, 4 }, { 4, 1 }), cute.make_layout({ 1, 8 }))
--
-- Everything here is plain data (layouts, dtypes, the IR's names) usable
-- without a GPU and outside kernels: print it, draw it (cute.print_svg_mma,
-- cute.print_svg_copy), check it. Inside a kernel, tiled_mma:get_slice(tid)
-- and tiled_copy:get_slice(tid) give a thread's slice, which partitions
-- tensors (cute.trace.partition); cute.gemm and cute.copy use the atoms
-- (cute.trace.atom).
--
-- Thread-value (TV) layouts map (thread, value) to the column-major index of
-- an element in the atom's tile: A is M x K (index m + M k), B is N x K
-- (n + N k), C is M x N (m + M n), as CuTe has them. Values are in register
-- order: a fragment's value i is element i of the PTX register list (16-bit
-- and 8-bit elements packed low half first). The layouts are the PTX ISA's
-- mma.sync fragment figures ("Matrix fragments for mma.m16n8k16" and
-- siblings), written as layouts.
local L = require "cute.layout"
local LT = require "cute.layout_tile"
local P = require "cute.layout_print"
local dtype = require "cute.dtype"
local err = require "cute._err"
local partition = require "cute.trace.partition"

local is_any_layout = L.internal.is_any_layout

local M = {}

local make_layout = L.make_layout

-- ---------------------------------------------------------------------------
-- MMA atoms

-- The thread part shared by every mma.sync fragment of a 16 x 8 tile: lane
-- = 4 * group + tig (PTX's groupID and threadID_in_group).
-- A, B, C layouts by (shape, element bits of A/B): thread strides, value
-- shape and strides (see the PTX figures).
local FRAGMENTS = {
  -- m16n8k16, 16-bit inputs: a0..a7 (row g / g+8, col 2 tig + {0,1} / +8)
  ["m16n8k16/16"] = {
    a = { { 4, 8 }, { 2, 2, 2 }, { 32, 1 }, { 16, 8, 128 } },
    b = { { 4, 8 }, { 2, 2 }, { 16, 1 }, { 8, 64 } },
  },
  -- m16n8k8, 16-bit inputs: a0..a3, b0..b1
  ["m16n8k8/16"] = {
    a = { { 4, 8 }, { 2, 2 }, { 32, 1 }, { 16, 8 } },
    b = { { 4, 8 }, 2, { 16, 1 }, 8 },
  },
  -- m16n8k8, tf32: a0 (g, tig), a1 (g+8, tig), a2 (g, tig+4), a3 (g+8, tig+4); b0 (tig, g), b1 (tig+4, g)
  ["m16n8k8/32"] = {
    a = { { 4, 8 }, { 2, 2 }, { 16, 1 }, { 8, 64 } },
    b = { { 4, 8 }, 2, { 8, 1 }, 32 },
  },
  -- m16n8k4, tf32: a0 (g, tig), a1 (g+8, tig); b0 (tig, g)
  ["m16n8k4/32"] = {
    a = { { 4, 8 }, 2, { 16, 1 }, 8 },
    b = { { 4, 8 }, 1, { 8, 1 }, 0 },
  },
  -- m16n8k32, 8-bit inputs: a0..a15 (row g / g+8, col 4 tig + {0..3} / +16); b0..b7
  ["m16n8k32/8"] = {
    a = { { 4, 8 }, { 4, 2, 2 }, { 64, 1 }, { 16, 8, 256 } },
    b = { { 4, 8 }, { 4, 2 }, { 32, 1 }, { 8, 128 } },
  },
  -- m16n8k16, 8-bit inputs: a0..a7, b0..b3
  ["m16n8k16/8"] = {
    a = { { 4, 8 }, { 4, 2 }, { 64, 1 }, { 16, 8 } },
    b = { { 4, 8 }, 4, { 32, 1 }, 8 },
  },
}
-- C and D of every m16n8 shape: c0..c3 (row g / g+8, col 2 tig + {0,1})
local C16x8 = { { 4, 8 }, { 2, 2 }, { 32, 1 }, { 16, 8 } }

local function tv(f) return make_layout({ f[1], f[2] }, { f[3], f[4] }) end

-- The atoms that exist: (shape, A, B, C/D dtype names, lowest sm). The MMA
-- ops below pick from this table; anything else is an error listing it.
local ATOMS = {}
local function add(shape, a, b, c, sm) ATOMS[#ATOMS + 1] = { shape = shape, a = a, b = b, c = c, sm = sm } end
for _, s in ipairs { "m16n8k16", "m16n8k8" } do
  add(s, "f16", "f16", "f32", s == "m16n8k8" and 75 or 80)
  add(s, "f16", "f16", "f16", s == "m16n8k8" and 75 or 80)
  add(s, "bf16", "bf16", "f32", 80)
end
add("m16n8k8", "tf32", "tf32", "f32", 80)
add("m16n8k4", "tf32", "tf32", "f32", 80)
for _, s in ipairs { "m16n8k32", "m16n8k16" } do
  for _, a in ipairs { "i8", "u8" } do
    for _, b in ipairs { "i8", "u8" } do add(s, a, b, "i32", 80) end
  end
end
for _, a in ipairs { "e4m3", "e5m2" } do
  for _, b in ipairs { "e4m3", "e5m2" } do add("m16n8k32", a, b, "f32", 89) end
end

-- the IR's mma type names for cute dtypes
local IR_TYPE = { f16 = "f16", bf16 = "bf16", tf32 = "tf32", f32 = "f32", i8 = "s8", u8 = "u8", i32 = "s32",
  e4m3 = "e4m3", e5m2 = "e5m2" }

local function list_atoms()
  local out = {}
  for _, r in ipairs(ATOMS) do
    out[#out + 1] = string.format("%s %s x %s -> %s (sm_%d)", r.shape, r.a, r.b, r.c, r.sm)
  end
  return table.concat(out, "\n  ")
end

local function shape_name(mnk, what)
  if type(mnk) == "string" then return mnk end
  if type(mnk) ~= "table" or #mnk ~= 3 then
    err.raise("%s: the shape is {M, N, K} (e.g. {16, 8, 16}), got %s", what, tostring(mnk))
  end
  return string.format("m%dn%dk%d", mnk[1], mnk[2], mnk[3])
end

local function dname(x, what)
  if x == nil then return nil end
  local ok, d = pcall(dtype.get, x)
  if not ok then err.raise("%s: %s is not a dtype", what, tostring(x)) end
  return d.name
end

-- An MMA op: what the user asks for; make_mma_atom checks it exists.
local MmaOp = { __name = "MmaOp" }
MmaOp.__index = MmaOp
MmaOp.__tostring = function(o) return string.format("MmaOp(%s %s x %s -> %s)", o.shape, o.a, o.b, o.c) end

local function mma_op(what, shape, a, b, c)
  return setmetatable({ what = what, shape = shape_name(shape, what), a = dname(a, what), b = dname(b, what),
    c = dname(c, what) }, MmaOp)
end

M.nvgpu = { warp = {}, cpasync = {} }
local warp, cpasync = M.nvgpu.warp, M.nvgpu.cpasync
-- The Hopper atoms live in their own modules, loaded on first use:
-- cute.nvgpu.warpgroup (wgmma) and the TMA ops among cute.nvgpu.cpasync.
-- A family cutelua does not have is an error that says which it has.
local FAMILIES = { "CopyUniversalOp", "cpasync", "warp", "warpgroup" }
setmetatable(M.nvgpu, {
  __index = function(t, k)
    if k == "warpgroup" then
      local wg = require "cute.nvgpu.warpgroup"
      rawset(t, k, wg)
      return wg
    end
    if type(k) == "string" and k:byte(1) ~= 95 then
      err.raise("cute.nvgpu.%s does not exist%s: cute.nvgpu has %s%s", k, err.did_you_mean(k, FAMILIES),
        table.concat(FAMILIES, ", "), (k == "tcgen05" or k == "tcgen05_mma") and " (tcgen05 is sm_100a's, not in "
        .. "cutelua yet)" or "")
    end
  end,
  __complete = function() return FAMILIES end,
})
setmetatable(cpasync, { __index = function(t, k)
  if type(k) ~= "string" or k:byte(1) == 95 then return nil end
  local v = rawget(require "cute.nvgpu.tma", k)
  if v ~= nil then rawset(t, k, v) end
  return v
end })

--- mma.sync with f16 or bf16 inputs: ab_dtype (f16, bf16), acc_dtype (f32,
-- or f16 for f16 inputs), shape_mnk {16, 8, 16} or {16, 8, 8}.
-- @param ab_dtype cute.f16 or cute.bf16
-- @param acc_dtype cute.f32 (or cute.f16 for f16 inputs)
-- @param shape_mnk {16, 8, 16} or {16, 8, 8}
-- @return an MMA op (for cute.make_mma_atom)
-- @usage local op = cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, {16, 8, 16})
function warp.MmaF16BF16Op(ab_dtype, acc_dtype, shape_mnk)
  return mma_op("MmaF16BF16Op", shape_mnk or { 16, 8, 16 }, ab_dtype, ab_dtype, acc_dtype or dtype.f32)
end

--- mma.sync with tf32 inputs and f32 accumulators: shape {16, 8, 8} or {16, 8, 4}.
-- @param shape_mnk optional: {16, 8, 8} (the default) or {16, 8, 4}
-- @return an MMA op
-- @usage local op = cute.nvgpu.warp.MmaTF32Op({16, 8, 8})
function warp.MmaTF32Op(shape_mnk) return mma_op("MmaTF32Op", shape_mnk or { 16, 8, 8 }, "tf32", "tf32", "f32") end

--- mma.sync with 8-bit integer inputs (i8 or u8 each) and i32 accumulators:
-- shape {16, 8, 32} or {16, 8, 16}.
-- @param a_dtype cute.i8 or cute.u8
-- @param b_dtype cute.i8 or cute.u8
-- @param shape_mnk {16, 8, 32} or {16, 8, 16}
-- @return an MMA op
-- @usage local op = cute.nvgpu.warp.MmaI8Op(cute.i8, cute.i8, {16, 8, 32})
function warp.MmaI8Op(a_dtype, b_dtype, shape_mnk)
  return mma_op("MmaI8Op", shape_mnk or { 16, 8, 32 }, a_dtype or "i8", b_dtype or a_dtype or "i8", "i32")
end

--- mma.sync with fp8 inputs (e4m3 or e5m2 each) and f32 accumulators, sm_89+: shape {16, 8, 32}.
-- @param a_dtype cute.e4m3 or cute.e5m2
-- @param b_dtype cute.e4m3 or cute.e5m2
-- @param shape_mnk {16, 8, 32}
-- @return an MMA op
-- @usage local op = cute.nvgpu.warp.MmaFP8Op(cute.e4m3, cute.e4m3, {16, 8, 32})
function warp.MmaFP8Op(a_dtype, b_dtype, shape_mnk)
  return mma_op("MmaFP8Op", shape_mnk or { 16, 8, 32 }, a_dtype or "e4m3", b_dtype or a_dtype or "e4m3", "f32")
end

local MmaAtom = { __name = "MmaAtom" }
MmaAtom.__index = MmaAtom
MmaAtom.__tostring = function(a)
  return string.format("MmaAtom(%s %s x %s -> %s, %s)", a.ir.shape, a.a_dtype.name, a.b_dtype.name,
    a.c_dtype.name, a.arch or ("sm_" .. a.sm))
end

--- An MMA atom from an op (cute.nvgpu.warp.Mma*Op(...)); an error lists the
-- atoms that exist when the combination is not one.
-- @param op an MMA op: cute.nvgpu.warp.MmaF16BF16Op(ab_dtype, acc_dtype, {M, N, K}), ...
-- @return an MMA atom
-- @usage local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.f16, cute.f32, {16, 8, 16}))
function M.make_mma_atom(op)
  -- ops of other modules (cute.nvgpu.warpgroup) give their atoms' fields
  local mt = getmetatable(op)
  if type(mt) == "table" and rawget(mt, "__make_mma_atom") then return setmetatable(mt.__make_mma_atom(op), MmaAtom) end
  if mt ~= MmaOp then
    err.raise("make_mma_atom: expected an MMA op (cute.nvgpu.warp.MmaF16BF16Op(...) and siblings), got %s",
      tostring(op))
  end
  local row
  for _, r in ipairs(ATOMS) do
    if r.shape == op.shape and r.a == op.a and r.b == op.b and r.c == op.c then row = r end
  end
  if not row then
    err.raise("make_mma_atom: there is no mma.sync %s with %s x %s -> %s; the atoms that exist:\n  %s", op.shape,
      tostring(op.a), tostring(op.b), tostring(op.c), list_atoms())
  end
  local mm, nn, kk = op.shape:match("^m(%d+)n(%d+)k(%d+)$")
  mm, nn, kk = tonumber(mm), tonumber(nn), tonumber(kk)
  local ad, bd, cd = dtype.get(row.a), dtype.get(row.b), dtype.get(row.c)
  local f = FRAGMENTS[op.shape .. "/" .. ad.bits]
  local atom = setmetatable({
    kind = "mma", shape_mnk = { mm, nn, kk }, a_dtype = ad, b_dtype = bd, c_dtype = cd, sm = row.sm,
    ir = { shape = op.shape, a = IR_TYPE[row.a], b = IR_TYPE[row.b], c = IR_TYPE[row.c], d = IR_TYPE[row.c] },
    threads = 32,
    tv_a = tv(f.a), tv_b = tv(f.b), tv_c = tv(C16x8),
  }, MmaAtom)
  -- values a thread holds, and the 32-bit registers they pack into
  atom.values = { a = L.size(atom.tv_a, 1), b = L.size(atom.tv_b, 1), c = L.size(atom.tv_c, 1) }
  atom.regs = {
    a = atom.values.a * ad.bits / 32, b = atom.values.b * bd.bits / 32,
    c = cd.bits == 16 and atom.values.c / 2 or atom.values.c,
  }
  return atom
end

--- The MMA atoms that exist, as text (one per line).
-- @treturn string
-- @usage print(cute.mma_atoms())
function M.mma_atoms() return list_atoms() end

-- ---------------------------------------------------------------------------
-- Tiled MMA: an atom repeated over warps, and over a larger tile

-- A layout's strides re-expressed from an (rows_from x ...) column-major
-- tile into a (rows_to x ...) one: each stride moves rows or columns only
-- (true of every atom layout here).
local function restride(l, rows_from, rows_to)
  local function walk(s)
    if type(s) == "table" then
      local out = {}
      for i, x in ipairs(s) do out[i] = walk(x) end
      return out
    end
    return (s % rows_from) + rows_to * math.floor(s / rows_from)
  end
  return make_layout(L.shape(l), walk(L.stride(l)))
end

local TiledMma = { __name = "TiledMma" }
TiledMma.__index = TiledMma
TiledMma.__tostring = function(t)
  return string.format("TiledMma(%s, %s %dx%dx%d, tile %dx%dx%d, %d threads)", tostring(t.atom),
    t.atom.threads == 128 and "warpgroups" or "warps", t.warps[1],
    t.warps[2], t.warps[3], t.tile_mnk[1], t.tile_mnk[2], t.tile_mnk[3], t.size)
end

--- A tiled MMA: the atom repeated over atom_layout_mnk warps (warpgroups of 128
-- threads for a cute.nvgpu.warpgroup atom) ({WM, WN, 1},
-- default {1, 1, 1}; warp w is (w % WM, w // WM)), covering a tile of
-- permutation_mnk ({TM, TN, TK}, multiples of the warps' tile; default the
-- warps' tile): each thread then holds TM / (atom M * WM) x TN / (atom N * WN)
-- atoms of C and TK / atom K steps of A and B.
-- @param atom an MMA atom
-- @param atom_layout_mnk optional: the warps (or warpgroups), {WM, WN, 1}
-- @param permutation_mnk optional: the tile covered, {TM, TN, TK}
-- @return a tiled MMA (tiled_mma:get_slice(tid), :make_fragment_*, ...)
-- @usage local mma = cute.make_tiled_mma(atom, {2, 2, 1})
function M.make_tiled_mma(atom, atom_layout_mnk, permutation_mnk)
  if getmetatable(atom) ~= MmaAtom then
    local mt = getmetatable(atom)
    if mt == MmaOp or (type(mt) == "table" and rawget(mt, "__make_mma_atom")) then atom = M.make_mma_atom(atom) else
      err.raise("make_tiled_mma: expected an MMA atom, got %s", tostring(atom))
    end
  end
  local w = atom_layout_mnk or { 1, 1, 1 }
  if is_any_layout(w) then w = L.shape(w) end
  if type(w) ~= "table" then w = { w, 1, 1 } end
  local wm, wn, wk = w[1] or 1, w[2] or 1, w[3] or 1
  for _, x in ipairs { wm, wn, wk } do
    if type(x) ~= "number" or x < 1 or x % 1 ~= 0 then
      err.raise("make_tiled_mma: atom_layout_mnk is {WM, WN, 1}, whole numbers from 1, got %s",
        type(atom_layout_mnk) == "table" and ("{" .. table.concat({ tostring(wm), tostring(wn), tostring(wk) }, ", ")
          .. "}") or tostring(atom_layout_mnk))
    end
  end
  if wk ~= 1 then err.raise("make_tiled_mma: warps along K (%d) are not supported; use {WM, WN, 1}", wk) end
  local am, an, ak = atom.shape_mnk[1], atom.shape_mnk[2], atom.shape_mnk[3]
  local p = permutation_mnk or { am * wm, an * wn, ak }
  if type(p) ~= "table" then
    err.raise("make_tiled_mma: permutation_mnk is {TM, TN, TK}, got %s", tostring(permutation_mnk))
  end
  local tm, tn, tk = p[1], p[2], p[3]
  for _, x in ipairs { tm, tn, tk } do
    if type(x) ~= "number" or x < 1 or x % 1 ~= 0 then
      err.raise("make_tiled_mma: permutation_mnk is {TM, TN, TK}, whole numbers from 1, got {%s, %s, %s}",
        tostring(tm), tostring(tn), tostring(tk))
    end
  end
  if tm % (am * wm) ~= 0 or tn % (an * wn) ~= 0 or tk % ak ~= 0 then
    err.raise("make_tiled_mma: the tile %dx%dx%d must be a multiple of the warps' %dx%dx%d", tm, tn, tk, am * wm,
      an * wn, ak)
  end
  local t = setmetatable({ atom = atom, warps = { wm, wn, 1 }, tile_mnk = { tm, tn, tk }, size = atom.threads * wm * wn,
    rep = { tm / (am * wm), tn / (an * wn), tk / ak } }, TiledMma)
  -- The warps' tile (one atom a warp): what partition_A/B/C divide tensors
  -- by; a thread's values there are the atom's, in register order.
  local wtm, wtn = am * wm, an * wn
  t.warp_tile = { wtm, wtn, ak }
  local ca, cb, cc = restride(atom.tv_a, am, wtm), restride(atom.tv_b, an, wtn), restride(atom.tv_c, am, wtm)
  t.tv_a_w = make_layout({ { L.shape(ca, 0), wm, wn }, L.shape(ca, 1) },
    { { L.stride(ca, 0), am, 0 }, L.stride(ca, 1) })
  t.tv_b_w = make_layout({ { L.shape(cb, 0), wm, wn }, L.shape(cb, 1) },
    { { L.stride(cb, 0), 0, an }, L.stride(cb, 1) })
  t.tv_c_w = make_layout({ { L.shape(cc, 0), wm, wn }, L.shape(cc, 1) },
    { { L.stride(cc, 0), am, wtm * an }, L.stride(cc, 1) })
  local rm, rn, rk = t.rep[1], t.rep[2], t.rep[3]
  -- C: threads (lane, wm, wn), values (atom values, rm, rn) -> m + TM n
  local c = restride(atom.tv_c, am, tm)
  t.tv_c = make_layout({ { L.shape(c, 0), wm, wn }, { L.shape(c, 1), rm, rn } },
    { { L.stride(c, 0), am, tm * an }, { L.stride(c, 1), am * wm, tm * an * wn } })
  -- A: threads (lane, wm, wn: not used), values (atom values, rm, rk) -> m + TM k
  local a = restride(atom.tv_a, am, tm)
  t.tv_a = make_layout({ { L.shape(a, 0), wm, wn }, { L.shape(a, 1), rm, rk } },
    { { L.stride(a, 0), am, 0 }, { L.stride(a, 1), am * wm, tm * ak } })
  -- B: threads (lane, wm: not used, wn), values (atom values, rn, rk) -> n + TN k
  local b = restride(atom.tv_b, an, tn)
  t.tv_b = make_layout({ { L.shape(b, 0), wm, wn }, { L.shape(b, 1), rn, rk } },
    { { L.stride(b, 0), 0, an }, { L.stride(b, 1), an * wn, tn * ak } })
  return t
end

--- The (thread, value) -> m + TM k layout of A over the tile (and B, C).
-- @return a Layout
-- @usage local tv = mma:tv_layout_A()
function TiledMma:tv_layout_A() return self.tv_a end
--- The (thread, value) layout of B over the tile.
-- @return a Layout
-- @usage local tv = mma:tv_layout_B()
function TiledMma:tv_layout_B() return self.tv_b end
--- The (thread, value) layout of C over the tile.
-- @return a Layout
-- @usage local tv = mma:tv_layout_C()
function TiledMma:tv_layout_C() return self.tv_c end
--- The tile {M, N, K} one pass of the tiled MMA covers.
-- @return a table {M, N, K}
-- @usage local mnk = mma:get_tile_size()
function TiledMma:get_tile_size() return { self.tile_mnk[1], self.tile_mnk[2], self.tile_mnk[3] } end

--- Inside a kernel: the slice of the tiled MMA for thread tid (a value or a
-- number), which partitions tensors and makes fragments (cute.trace.partition).
-- @param tid the thread's index (a value or number)
-- @return a thread slice (partition_A/B/C, make_fragment_A/B/C, ...)
-- @usage local thr = mma:get_slice(cute.thread_idx().x)
function TiledMma:get_slice(tid) return partition.thr_mma(self, tid) end
TiledMma.get_thr_slice = TiledMma.get_slice

--- Sets a field of the MMA for the code traced after it (CuTe DSL's
-- tiled_mma.set(Field.ACCUMULATE, x)): for a warpgroup MMA,
-- cute.nvgpu.warpgroup.Field.ACCUMULATE (or "ACCUMULATE") false, or a false
-- bool value, makes the next cute.gemm's first k-block ignore C (D = A B).
-- @param field cute.nvgpu.warpgroup.Field.ACCUMULATE (or "ACCUMULATE")
-- @param value a Lua boolean or a bool value
-- @usage mma:set(cute.nvgpu.warpgroup.Field.ACCUMULATE, false)
function TiledMma:set(field, value)
  local name = type(field) == "table" and field.name or field
  if name ~= "ACCUMULATE" or not self.atom.wgmma then
    err.raise("tiled_mma:set: %s has no field %s (a warpgroup MMA has Field.ACCUMULATE)", tostring(self),
      tostring(field))
  end
  rawset(self, "fields", { ACCUMULATE = value, trace = partition.current_trace() })
end

M.is_tiled_mma = function(x) return getmetatable(x) == TiledMma end
M.is_mma_atom = function(x) return getmetatable(x) == MmaAtom end

-- ---------------------------------------------------------------------------
-- Copy atoms

local CopyOp = { __name = "CopyOp" }
CopyOp.__index = CopyOp
CopyOp.__tostring = function(o) return "CopyOp(" .. o.name .. ")" end

--- A universal copy: plain loads and stores, vectorised to num_bits_per_copy.
-- @return a copy op (for cute.make_copy_atom)
-- @usage local op = cute.nvgpu.CopyUniversalOp()
function M.nvgpu.CopyUniversalOp() return setmetatable({ name = "universal", kind = "universal" }, CopyOp) end

--- cp.async global -> shared (sm_80+): cache_mode "always" (.ca, 4/8/16
-- bytes) or "global" (.cg, 16 bytes: L2 only).
-- @param cache_mode optional: "always" (.ca, the default) or "global" (.cg)
-- @return a copy op
-- @usage local op = cute.nvgpu.cpasync.CopyG2SOp("global")
function cpasync.CopyG2SOp(cache_mode)
  cache_mode = cache_mode or "always"
  if cache_mode ~= "always" and cache_mode ~= "global" then
    err.raise("CopyG2SOp: cache_mode is \"always\" (.ca) or \"global\" (.cg), got %s", tostring(cache_mode))
  end
  return setmetatable({ name = "cp.async." .. (cache_mode == "global" and "cg" or "ca"), kind = "cp.async",
    cache = cache_mode == "global" and "cg" or "ca" }, CopyOp)
end

local function matrix_op(kind, name, transpose, num_matrices)
  num_matrices = num_matrices or 4
  if num_matrices ~= 1 and num_matrices ~= 2 and num_matrices ~= 4 then
    err.raise("%s: num_matrices is 1, 2 or 4, got %s", name, tostring(num_matrices))
  end
  return setmetatable({ name = string.format("%s.x%d%s", kind, num_matrices, transpose and ".trans" or ""),
    kind = kind, transpose = transpose and true or false, num_matrices = num_matrices }, CopyOp)
end

--- ldmatrix (sm_75+): num_matrices (1, 2, 4) 8 x 8 matrices of 16-bit
-- elements from shared memory to registers, optionally transposed.
-- @param transpose optional: a boolean
-- @param num_matrices optional: 1, 2 or 4 (the default)
-- @return a copy op
-- @usage local op = cute.nvgpu.warp.LdMatrix8x8x16bOp(false, 4)
function warp.LdMatrix8x8x16bOp(transpose, num_matrices) return matrix_op("ldmatrix", "LdMatrix8x8x16bOp", transpose,
  num_matrices) end

--- stmatrix (sm_90+): the reverse of ldmatrix.
-- @param transpose optional: a boolean
-- @param num_matrices optional: 1, 2 or 4 (the default)
-- @return a copy op
-- @usage local op = cute.nvgpu.warp.StMatrix8x8x16bOp(false, 4)
function warp.StMatrix8x8x16bOp(transpose, num_matrices) return matrix_op("stmatrix", "StMatrix8x8x16bOp", transpose,
  num_matrices) end

local CopyAtom = { __name = "CopyAtom" }
CopyAtom.__index = CopyAtom
CopyAtom.__tostring = function(a) return string.format("CopyAtom(%s, %s, %d bits)", a.op.name, a.dtype.name, a.bits) end

--- A copy atom: an op and the element dtype; opts.num_bits_per_copy (the
-- vector width of universal copies and cp.async: 32, 64 or 128; default 128
-- for cp.async, the dtype's width for universal copies).
-- Thread-value layouts of one atom (CuTe's): src and dst (thread, value) ->
-- element index of the atom's values. For ldmatrix, 32 threads: each gives
-- the address of one 16-byte row (src: 8 contiguous elements a thread) and
-- receives 2 elements a matrix (dst).
-- @param op a copy op: cute.nvgpu.CopyUniversalOp(), cute.nvgpu.cpasync.CopyG2SOp(), ...
-- @param dt the element dtype
-- @param opts optional: {num_bits_per_copy = 32 | 64 | 128}
-- @return a copy atom
-- @usage local atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.f32, {num_bits_per_copy = 128})
function M.make_copy_atom(op, dt, opts)
  if getmetatable(op) ~= CopyOp then
    err.raise("make_copy_atom: expected a copy op (cute.nvgpu.CopyUniversalOp(), cute.nvgpu.cpasync.CopyG2SOp(), "
      .. "cute.nvgpu.warp.LdMatrix8x8x16bOp(), ...), got %s", tostring(op))
  end
  dt = dtype.get(dt)
  local bits = opts and opts.num_bits_per_copy
  local a = setmetatable({ kind = "copy", op = op, dtype = dt }, CopyAtom)
  if op.kind == "ldmatrix" or op.kind == "stmatrix" then
    -- 16-bit elements; 8-bit ones too when not transposed (a register holds
    -- 4 of them, and the transpose works on 16-bit units)
    if not (dt.bits == 16 or (dt.bits == 8 and not op.transpose)) then
      err.raise("make_copy_atom: %s moves 16-bit elements (or 8-bit ones, not transposed), not %s", op.name,
        dt.name)
    end
    a.bits, a.threads, a.sm = 128, 32, op.kind == "ldmatrix" and 75 or 90
    local nm, epr = op.num_matrices, 32 / dt.bits
    local row = 16 / dt.bytes
    -- src: thread t gives row t % 8 of matrix t // 8 (threads past 8 nm repeat)
    a.tv_src = make_layout({ 32, row }, { row, 1 })
    -- dst: thread t holds (row t // 4, elements epr (t % 4) + 0 .. epr - 1) of each matrix
    a.tv_dst = make_layout({ { 4, 8 }, { epr, nm } }, { { epr, row }, { 1, 8 * row } })
    a.values = epr * nm
    a.per_register = epr
  else
    local default = op.kind == "cp.async" and 128 or dt.bits
    bits = bits or default
    local ok_bits = op.kind == "cp.async" and { [32] = true, [64] = true, [128] = true }
      or { [8] = true, [16] = true, [32] = true, [64] = true, [128] = true }
    if not ok_bits[bits] or bits < dt.bits or bits % dt.bits ~= 0 then
      err.raise("make_copy_atom: %s cannot move %s bits of %s at a time (%s)", op.name, tostring(bits), dt.name,
        op.kind == "cp.async" and "cp.async moves 4, 8 or 16 bytes" or "8 to 128 bits, whole elements")
    end
    if op.kind == "cp.async" and op.cache == "cg" and bits ~= 128 then
      err.raise("make_copy_atom: cp.async.cg moves 16 bytes only; use cache_mode \"always\" for %d bits", bits)
    end
    a.bits, a.threads, a.sm = bits, 1, op.kind == "cp.async" and 80 or 0
    a.values = bits / dt.bits
    a.tv_src = make_layout({ 1, a.values })
    a.tv_dst = a.tv_src
  end
  return a
end

M.is_copy_atom = function(x) return getmetatable(x) == CopyAtom end

-- ---------------------------------------------------------------------------
-- Tiled copies

local TiledCopy = { __name = "TiledCopy" }
TiledCopy.__index = TiledCopy
TiledCopy.__tostring = function(t)
  return string.format("TiledCopy(%s, %d threads, tile %s, tv %s)", tostring(t.atom), t.size,
    t.tiler and ("(" .. table.concat(t.tiler, ",") .. ")") or "-", tostring(t.tv))
end

--- A tiled copy from a thread layout and a value layout (CuTe's
-- make_tiled_copy_tv): thread i of thr_layout holds the val_layout block at
-- its place; the tile is their raked product. The atom's vector must fit the
-- value block's contiguous first mode.
-- @param atom a copy atom
-- @tparam Layout thr_layout the threads' layout over the tile
-- @tparam Layout val_layout each thread's block of values
-- @return a tiled copy (tiled_copy:get_slice(tid):partition_S(t), ...)
-- @usage local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({32, 8}), cute.make_layout({1, 4}))
function M.make_tiled_copy_tv(atom, thr_layout, val_layout)
  if getmetatable(atom) ~= CopyAtom then
    err.raise("make_tiled_copy_tv: expected a copy atom, got %s", tostring(atom))
  end
  if atom.op.kind == "ldmatrix" or atom.op.kind == "stmatrix" then
    err.raise("make_tiled_copy_tv: %s is matched to an MMA operand: use make_tiled_copy_A/B/C(atom, tiled_mma)",
      atom.op.name)
  end
  if not is_any_layout(thr_layout) then thr_layout = make_layout(thr_layout) end
  if not is_any_layout(val_layout) then val_layout = make_layout(val_layout) end
  local tiler, tvl = LT.make_layout_tv(thr_layout, val_layout)
  local nv = L.size(val_layout)
  if nv % atom.values ~= 0 then
    err.raise("make_tiled_copy_tv: %d values a thread is not a multiple of the atom's %d", nv, atom.values)
  end
  local t = setmetatable({ atom = atom, tv = tvl, size = L.size(thr_layout), values = nv,
    tiler = type(tiler) == "table" and tiler or { tiler } }, TiledCopy)
  return t
end

local function tiled_copy_mma(atom, mma, which)
  if getmetatable(atom) ~= CopyAtom then err.raise("make_tiled_copy_%s: expected a copy atom", which) end
  if getmetatable(mma) ~= TiledMma then err.raise("make_tiled_copy_%s: expected a tiled MMA", which) end
  local tvm = which == "A" and mma.tv_a or which == "B" and mma.tv_b or mma.tv_c
  local tm, tn, tk = mma.tile_mnk[1], mma.tile_mnk[2], mma.tile_mnk[3]
  local tiler = which == "A" and { tm, tk } or which == "B" and { tn, tk } or { tm, tn }
  local t = setmetatable({ atom = atom, tv = tvm, size = mma.size, tiler = tiler, mma = mma, operand = which,
    values = L.size(tvm, 1) }, TiledCopy)
  if atom.op.kind == "ldmatrix" or atom.op.kind == "stmatrix" then
    if which == "C" and atom.op.kind == "ldmatrix" then
      err.raise("make_tiled_copy_C: ldmatrix loads A or B operands; use make_tiled_copy_A/B")
    end
    local mt = which == "A" and mma.atom.a_dtype or which == "B" and mma.atom.b_dtype or mma.atom.c_dtype
    if mt.bits ~= atom.dtype.bits and not (which == "C" and mt.bits == 32) then
      err.raise("make_tiled_copy_%s: %s moves %d-bit elements; the operand is %s", which, atom.op.name,
        atom.dtype.bits, mt.name)
    end
  end
  return t
end

--- A tiled copy matched to a tiled MMA's A (B, C) operand: the same threads
-- and values, so that the copy fills (or empties) the MMA's fragments.
-- @param atom a copy atom
-- @param mma a tiled MMA
-- @return a tiled copy
-- @usage local s2r_a = cute.make_tiled_copy_A(ldmatrix_atom, mma)
function M.make_tiled_copy_A(atom, mma) return tiled_copy_mma(atom, mma, "A") end
--- A tiled copy matched to a tiled MMA's B operand (see make_tiled_copy_A).
-- @param atom a copy atom
-- @param mma a tiled MMA
-- @return a tiled copy
-- @usage local s2r_b = cute.make_tiled_copy_B(ldmatrix_atom, mma)
function M.make_tiled_copy_B(atom, mma) return tiled_copy_mma(atom, mma, "B") end
--- A tiled copy matched to a tiled MMA's C operand (see make_tiled_copy_A).
-- @param atom a copy atom
-- @param mma a tiled MMA
-- @return a tiled copy
-- @usage local r2s_c = cute.make_tiled_copy_C(stmatrix_atom, mma)
function M.make_tiled_copy_C(atom, mma) return tiled_copy_mma(atom, mma, "C") end

--- Inside a kernel: the slice of the tiled copy for thread tid
-- (cute.trace.partition).
-- @param tid the thread's index (a value or number)
-- @return a thread slice (partition_S, partition_D, retile)
-- @usage local thr = tiled_copy:get_slice(cute.thread_idx().x)
function TiledCopy:get_slice(tid) return partition.thr_copy(self, tid) end
TiledCopy.get_thr_slice = TiledCopy.get_slice

M.is_tiled_copy = function(x) return getmetatable(x) == TiledCopy end

-- ---------------------------------------------------------------------------
-- Pictures

-- One SVG holding several pictures side by side (their own svg elements).
local function side_by_side(title, parts)
  local x, height, inner = 10, 0, {}
  for _, svg in ipairs(parts) do
    local w, h = svg:match('width="(%d+)" height="(%d+)"')
    w, h = tonumber(w), tonumber(h)
    local body = svg:gsub("^<%?xml[^>]*>%s*", "")
    body = body:gsub("^<svg ", string.format('<svg x="%d" y="30" ', x), 1)
    inner[#inner + 1] = body
    x = x + w + 20
    height = math.max(height, h)
  end
  local width = x
  height = height + 40
  return table.concat {
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">', width,
      height, width, height),
    "<title>", (title:gsub("&", "&amp;"):gsub("<", "&lt;")), "</title>",
    string.format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', width, height),
    string.format('<text x="10" y="18" font-family="monospace" font-size="14">%s</text>',
      (title:gsub("&", "&amp;"):gsub("<", "&lt;"))),
    table.concat(inner, "\n"), "</svg>\n" }
end

-- A picture's title and caption prefixed with what it shows.
local function label(svg, what)
  svg = svg:gsub("<title>", "<title>" .. what, 1)
  return (svg:gsub('(class="caption"[^>]*>)', "%1" .. what, 1))
end

-- The A (M x K), B (N x K drawn as K x N, as CuTe draws it) and C (M x N)
-- thread-value pictures of an atom or a tiled MMA.
function M.svg_mma(x)
  if getmetatable(x) == MmaAtom then x = M.make_tiled_mma(x) end
  if getmetatable(x) ~= TiledMma then err.raise("svg_mma: expected an MMA atom or a tiled MMA, got %s", tostring(x)) end
  local tm, tn, tk = x.tile_mnk[1], x.tile_mnk[2], x.tile_mnk[3]
  -- B drawn K x N as CuTe draws it: its index n + TN k re-strided into the
  -- K x N column-major index k + TK n
  local function walk(s)
    if type(s) == "table" then
      local o = {}
      for i, v in ipairs(s) do o[i] = walk(v) end
      return o
    end
    local n, k = s % tn, math.floor(s / tn)
    return k + tk * n
  end
  local b_kn = make_layout(L.shape(x.tv_b), walk(L.stride(x.tv_b)))
  return side_by_side(tostring(x), {
    label(P.svg_tv(x.tv_a, { tm, tk }), "A (M x K) "),
    label(P.svg_tv(b_kn, { tk, tn }), "B (K x N) "),
    label(P.svg_tv(x.tv_c, { tm, tn }), "C (M x N) "),
  })
end

-- Writes svg to path (stdout without one); returns the path.
local function write_svg(svg, path, what)
  if not path then
    io.write(svg)
    return nil
  end
  local f, e = io.open(path, "w")
  if not f then err.raise("%s: %s", what, e) end
  f:write(svg)
  f:close()
  return path
end

--- Writes the SVG picture of an MMA atom or tiled MMA (A, B and C) to path.
-- @param x an MMA atom or tiled MMA
-- @param path optional: the file (stdout without one)
-- @return the path
-- @usage cute.print_svg_mma(mma, "mma.svg")
function M.print_svg_mma(x, path) return write_svg(M.svg_mma(x), path, "print_svg_mma") end

--- The SVG picture of a tiled copy: its (thread, value) layout over its tile.
function M.svg_copy(t)
  if getmetatable(t) ~= TiledCopy then err.raise("svg_copy: expected a tiled copy, got %s", tostring(t)) end
  local tiler = t.tiler
  if #tiler == 1 then tiler = { tiler[1], 1 } end
  return side_by_side(tostring(t), { P.svg_tv(t.tv, tiler) })
end

--- Writes the SVG picture of a tiled copy to path.
-- @param t a tiled copy
-- @param path optional: the file (stdout without one)
-- @return the path
-- @usage cute.print_svg_copy(tc, "copy.svg")
function M.print_svg_copy(t, path) return write_svg(M.svg_copy(t), path, "print_svg_copy") end

return M
