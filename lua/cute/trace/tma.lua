--- cute.trace.tma: the bulk tensor engine in kernels: TMA loads (multicast), stores,
-- reductions and prefetches through a TMA atom, and non-tensor bulk copies.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here).
--
-- A TMA atom (cute.nvgpu.cpasync.make_tiled_tma_atom) passed to a kernel is
-- a 128-byte grid-constant parameter: its descriptor, encoded at launch from
-- the tensor the atom was made from. In the kernel:
--
--   local part = cpasync.tma_partition(atom, 0, cute.make_layout(1), sA_layout)
--   cute.copy(atom, part:gmem_tile({ m, k }), part:smem_tile(sA), { tma_bar_ptr = bar })  -- load
--   cute.copy(store_atom, part:smem_tile(sC), part:gmem_tile({ m, n }))                   -- store
--
-- A copy issues the CTA's whole boxes (tma_partition): the coordinates of
-- box k are the tile's origin plus the box's offset in the tile, the
-- shared-memory address the layout's offset of that box. Issue it from one
-- thread.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local tensor = require "cute.trace.tensor"
local tma = require "cute.nvgpu.tma"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"

local M = {}

local is_value, type_of, emit = core.is_value, core.type_of, core.emit

local need_trace = core.need_trace

-- The descriptor operand: a traced TMA atom (a kernel argument), a TMA
-- descriptor argument ({tma = true, ptr = ...}) or a pointer value.
local function desc_of(x, what)
  if tma.is_tma_atom(x) then
    local d = rawget(x, "_desc")
    if d == nil then
      err.raise("%s: this TMA atom is not a kernel argument; pass it to the kernel (its descriptor becomes a "
        .. "grid-constant parameter)", what)
    end
    return d
  end
  if type(x) == "table" and x.tma and is_value(x.ptr) then return x.ptr end
  if is_value(x) and type_of(x).kind == "ptr" then return x end
  err.raise("%s: expected a TMA atom or descriptor passed to the kernel, got %s", what, core.describe(x))
end

local function shared_ptr(p, align, what, name)
  if not is_value(p) or type_of(p).kind ~= "ptr" or type_of(p).space ~= "shared" then
    err.raise("%s: the %s must be a shared-memory pointer, got %s", what, name, core.describe(p))
  end
  local t = type_of(p)
  if (t.align or 1) < align then
    err.raise("%s: the %s is %d-byte aligned; it must be %d-byte aligned", what, name, t.align or 1, align)
  end
  return emit("ptrcast", core.ptr(core.scalar(dtype.u8), "shared", align), p)
end

local function global_ptr(p, what, name)
  if not is_value(p) or type_of(p).kind ~= "ptr" or type_of(p).space ~= "global" then
    err.raise("%s: the %s must be a global pointer, got %s", what, name, core.describe(p))
  end
  local t = type_of(p)
  if (t.align or 1) < 16 then
    err.raise("%s: the %s is %d-byte aligned; bulk copies need 16-byte aligned addresses", what, name, t.align or 1)
  end
  return emit("ptrcast", core.ptr(core.scalar(dtype.u8), "global", 16), p)
end

local function coord_list(coords, what)
  if type(coords) ~= "table" or #coords < 1 or #coords > tma.MAX_RANK then
    err.raise("%s: the coordinates are a list of 1 to %d integers (one per TMA dimension), got %s", what,
      tma.MAX_RANK, type(coords) == "table" and tostring(#coords) or core.describe(coords))
  end
  local out = {}
  for i = 1, #coords do out[i] = core.coerce(coords[i], core.i32, what .. " coordinate " .. (i - 1)) end
  return out
end

local function append(list, more)
  for i = 1, #more do list[#list + 1] = more[i] end
  return list
end

-- ---------------------------------------------------------------------------
-- The instructions

local arch = {}
M.arch = arch

--- TMA load of one box (cp.async.bulk.tensor, global -> shared) at coords
-- (a list of i32, dimension 0 first) into smem_ptr (128-byte aligned),
-- completing on the mbarrier at mbar_ptr (complete_tx::bytes).
-- mcast_mask (optional, i16 or a number): write the box into every CTA of
-- the cluster whose %cluster_ctarank bit is set (sm_90a).
-- @param desc the TMA descriptor (a kernel argument)
-- @param smem_ptr the destination, a shared-memory pointer (128-byte aligned)
-- @param mbar_ptr the mbarrier's shared-memory pointer
-- @param coords a list of i32 coordinates, dimension 0 first
-- @param mcast_mask optional: the CTAs of the cluster to write to
-- @usage cute.arch.tma_load(desc, sA:ptr_at(0), bar, {k * 64, m0})
function arch.tma_load(desc, smem_ptr, mbar_ptr, coords, mcast_mask)
  local what = "cute.arch.tma_load"
  need_trace(what)
  local d = desc_of(desc, what)
  local dst = shared_ptr(smem_ptr, 128, what, "destination")
  local bar = shared_ptr(mbar_ptr, 8, what, "mbarrier")
  local c = coord_list(coords, what)
  local args = append({ dst, d, bar }, c)
  if mcast_mask ~= nil then
    if type(mcast_mask) == "number" and (mcast_mask < 0 or mcast_mask > 0xFFFF or mcast_mask ~= math.floor(mcast_mask))
    then
      err.raise("%s: mcast_mask %s: a 16-bit CTA mask (0 to 0xFFFF)", what, tostring(mcast_mask))
    end
    if type(mcast_mask) == "number" then
      mcast_mask = core.const(core.scalar(dtype.i16), mcast_mask >= 0x8000 and mcast_mask - 0x10000 or mcast_mask)
    elseif is_value(mcast_mask) and type_of(mcast_mask).kind ~= "float" and type_of(mcast_mask).bits ~= 16 then
      mcast_mask = ops.to(mcast_mask, dtype.i16) -- a mask computed in 32 bits: its low 16 bits
    end
    args[#args + 1] = core.coerce(mcast_mask, core.scalar(dtype.i16), what .. " mcast_mask")
    core.emitn("tma.load.multicast", nil, args, { #c })
  else
    core.emitn("tma.load", nil, args, { #c })
  end
end

--- TMA store of one box from smem_ptr (128-byte aligned) to the tensor at
-- coords (bulk_group: commit and wait with cp_async_bulk_commit_group /
-- cp_async_bulk_wait_group). reduction (optional): "add", "min", "max",
-- "inc", "dec", "and", "or", "xor" (cp.reduce.async.bulk.tensor).
-- @param desc the TMA descriptor
-- @param smem_ptr the source, a shared-memory pointer (128-byte aligned)
-- @param coords a list of i32 coordinates
-- @param reduction optional: "add", "min", "max", "inc", "dec", "and", "or" or "xor"
-- @usage cute.arch.tma_store(desc, sC:ptr_at(0), {n0, m0})
function arch.tma_store(desc, smem_ptr, coords, reduction)
  local what = "cute.arch.tma_store"
  need_trace(what)
  local d = desc_of(desc, what)
  local src = shared_ptr(smem_ptr, 128, what, "source")
  local c = coord_list(coords, what)
  local args = append({ d, src }, c)
  if reduction ~= nil then
    core.emitn("tma.reduce", nil, args, { #c, ops.imm("A", reduction, what .. " reduction") })
  else
    core.emitn("tma.store", nil, args, { #c })
  end
end

--- L2 prefetch of the box at coords (cp.async.bulk.prefetch.tensor).
-- @param desc the TMA descriptor
-- @param coords a list of i32 coordinates
-- @usage cute.arch.tma_prefetch(desc, {k * 64, m0})
function arch.tma_prefetch(desc, coords)
  local what = "cute.arch.tma_prefetch"
  need_trace(what)
  local d = desc_of(desc, what)
  core.emitn("tma.prefetch", nil, append({ d }, coord_list(coords, what)), { #coords })
end

--- prefetch.tensormap: warms the descriptor cache (CuTe DSL's
-- cpasync.prefetch_descriptor); once per descriptor, at the kernel's start.
-- @param desc the TMA descriptor
-- @usage cute.arch.prefetch_descriptor(desc)
function arch.prefetch_descriptor(desc)
  need_trace("cute.arch.prefetch_descriptor")
  emit("tma.prefetch_desc", nil, desc_of(desc, "cute.arch.prefetch_descriptor"))
end

local function size_arg(bytes, what)
  if type(bytes) == "number" and (bytes <= 0 or bytes % 16 ~= 0 or bytes ~= math.floor(bytes)) then
    err.raise("%s: %s bytes: a bulk copy moves a positive multiple of 16 bytes", what, tostring(bytes))
  end
  return core.coerce(bytes, core.i32, what .. " bytes")
end

--- cp.async.bulk global -> shared: bytes (a multiple of 16) from gmem_ptr
-- to smem_ptr (both 16-byte aligned), completing on the mbarrier at mbar_ptr.
-- @param smem_ptr the destination, a shared-memory pointer
-- @param gmem_ptr the source, a global pointer
-- @param bytes a multiple of 16
-- @param mbar_ptr the mbarrier's shared-memory pointer
-- @usage cute.arch.cp_async_bulk_g2s(s:ptr_at(0), g:ptr_at(0), 4096, bar)
function arch.cp_async_bulk_g2s(smem_ptr, gmem_ptr, bytes, mbar_ptr)
  local what = "cute.arch.cp_async_bulk_g2s"
  need_trace(what)
  local dst = shared_ptr(smem_ptr, 16, what, "destination")
  local src = global_ptr(gmem_ptr, what, "source")
  local n = size_arg(bytes, what)
  core.emitn("bulk.load", nil, { dst, src, n, shared_ptr(mbar_ptr, 8, what, "mbarrier") })
end

--- cp.async.bulk shared -> global (bulk_group): bytes (a multiple of 16).
-- @param gmem_ptr the destination, a global pointer
-- @param smem_ptr the source, a shared-memory pointer
-- @param bytes a multiple of 16
-- @usage cute.arch.cp_async_bulk_s2g(g:ptr_at(0), s:ptr_at(0), 4096)
function arch.cp_async_bulk_s2g(gmem_ptr, smem_ptr, bytes)
  local what = "cute.arch.cp_async_bulk_s2g"
  need_trace(what)
  local dst = global_ptr(gmem_ptr, what, "destination")
  local src = shared_ptr(smem_ptr, 16, what, "source")
  emit("bulk.store", nil, dst, src, size_arg(bytes, what))
end

--- cp.async.bulk.prefetch.L2: bytes (a multiple of 16) at gmem_ptr into L2.
-- @param gmem_ptr a global pointer
-- @param bytes a multiple of 16
-- @usage cute.arch.cp_async_bulk_prefetch(g:ptr_at(0), 4096)
function arch.cp_async_bulk_prefetch(gmem_ptr, bytes)
  local what = "cute.arch.cp_async_bulk_prefetch"
  need_trace(what)
  emit("bulk.prefetch", nil, global_ptr(gmem_ptr, what, "source"), size_arg(bytes, what))
end

--- Closes the bulk group of the TMA / bulk stores issued since the last commit.
-- @usage cute.arch.cp_async_bulk_commit_group()
function arch.cp_async_bulk_commit_group()
  need_trace("cute.arch.cp_async_bulk_commit_group")
  emit("bulk.commit", nil)
end

--- Waits until at most n bulk groups are pending; read = true: only until
-- they have read their shared-memory sources (the buffers may be rewritten).
-- @param n the pending groups allowed (0-63)
-- @param read optional: true to wait only for the reads of the sources
-- @usage cute.arch.cp_async_bulk_wait_group(0)
function arch.cp_async_bulk_wait_group(n, read)
  need_trace("cute.arch.cp_async_bulk_wait_group")
  n = n or 0
  if type(n) ~= "number" or n < 0 or n > 63 or n ~= math.floor(n) then
    err.raise("cute.arch.cp_async_bulk_wait_group: n is a number of groups from 0 to 63, got %s", tostring(n))
  end
  emit("bulk.wait", nil, nil, nil, nil, n, read and 1 or 0)
end

-- ---------------------------------------------------------------------------
-- cute.copy with a TMA atom

local function tile_of(x, kind, what, role)
  if type(x) ~= "table" or x.kind ~= kind then
    local want = kind == "tma_gmem" and "part:gmem_tile(tile_coord) (the TMA tensor's tile from tma_partition)"
      or "part:smem_tile(smem_tensor[, stage]) (the shared-memory tile from tma_partition)"
    err.raise("%s: the %s must be %s, got %s", what, role, want, core.describe(x))
  end
  return x
end

-- The shared-memory pointer of box k of a partition's smem tile.
local function box_ptr(st, k, what)
  local part, t = st.part, st.tensor
  if not tensor.is_tensor(t) or t.engine ~= "ptr" or t.space ~= "shared" then
    err.raise("%s: the shared-memory tile's tensor must be a shared-memory tensor (cute.make_smem_tensor), got %s",
      what, core.describe(t))
  end
  local need = part.atom.smem_align
  if t.align < need then
    err.raise("%s: the shared-memory tensor is %d-byte aligned; the atom's boxes need %d (allocate it with that "
      .. "alignment)", what, t.align, need)
  end
  local off = part:smem_offset(k, st.stage)
  local e = part.atom.dtype.bytes
  if type(off) == "number" then
    if (off * e) % need ~= 0 then
      err.raise("%s: box %d of stage %s starts at shared-memory byte %d, not a multiple of %d", what, k,
        tostring(st.stage), off * e, need)
    end
  elseif part.stage_layout then
    -- a traced stage: every stage must start on the boxes' alignment
    local strides = L.stride(part.stage_layout)
    if type(strides) ~= "table" then strides = { strides } end
    for _, d in ipairs(strides) do
      if type(d) ~= "number" or (d * e) % need ~= 0 then
        err.raise("%s: the stage mode's stride %s (elements) does not keep the boxes %d-byte aligned", what,
          tostring(d), need)
      end
    end
  end
  return tensor.internal.address(t, off, need)
end

-- The partitions of the two tiles must be the same.
local function same_part(g, s, what)
  if g.part ~= s.part then
    err.raise("%s: the global and shared-memory tiles come from different tma_partition calls", what)
  end
  return g.part
end

--- cute.copy(tma_atom, src, dst[, opts]): loads (src = part:gmem_tile(c),
-- dst = part:smem_tile(sA[, stage]); opts.tma_bar_ptr: the mbarrier,
-- opts.mcast_mask: the 16-bit CTA mask of a multicast atom) or stores and
-- reductions (src = part:smem_tile(...), dst = part:gmem_tile(c)) every box
-- of this CTA. Issue from one thread.
function M.copy(at, src, dst, opts)
  return core.at_user_line(M._copy, at, src, dst, opts)
end

function M._copy(at, src, dst, opts)
  local what = "cute.copy"
  need_trace(what)
  if type(opts) ~= "table" then opts = {} end
  for k in pairs(opts) do
    if k ~= "tma_bar_ptr" and k ~= "mcast_mask" then
      err.raise("%s: unknown option %s for a TMA copy (options: tma_bar_ptr, mcast_mask)", what, tostring(k))
    end
  end
  local kind = at.op.kind
  if kind == "load" then
    local g = tile_of(src, "tma_gmem", what, "source")
    local s = tile_of(dst, "tma_smem", what, "destination")
    local part = same_part(g, s, what)
    if opts.tma_bar_ptr == nil then
      err.raise("%s: a TMA load completes on an mbarrier: pass { tma_bar_ptr = <shared pointer> }", what)
    end
    local mask = opts.mcast_mask
    if at.op.multicast and mask == nil then
      err.raise("%s: %s needs { mcast_mask = <16-bit CTA mask> }", what, at.op.name)
    elseif not at.op.multicast and mask ~= nil then
      err.raise("%s: mcast_mask is for CopyBulkTensorTileG2SMulticastOp; this atom's op is %s", what, at.op.name)
    end
    for k = 0, part.num_boxes - 1 do
      arch.tma_load(at, box_ptr(s, k, what), opts.tma_bar_ptr, part:coords(g.tile_coord, k), mask)
    end
    return dst
  end
  if opts.tma_bar_ptr ~= nil or opts.mcast_mask ~= nil then
    err.raise("%s: tma_bar_ptr and mcast_mask are for TMA loads; this atom %ss", what, kind)
  end
  local s = tile_of(src, "tma_smem", what, "source")
  local g = tile_of(dst, "tma_gmem", what, "destination")
  local part = same_part(g, s, what)
  for k = 0, part.num_boxes - 1 do
    arch.tma_store(at, box_ptr(s, k, what), part:coords(g.tile_coord, k),
      kind == "reduce" and at.op.reduction or nil)
  end
  return dst
end

--- cute.prefetch(tma_atom, part:gmem_tile(c)): an L2 prefetch of every box
-- of this CTA's tile.
-- @param at a TMA atom
-- @param src the tile in global memory (part:gmem_tile(c))
-- @usage cute.prefetch(tma_a, part:gmem_tile({k, 0}))
function M.prefetch(at, src)
  return core.at_user_line(function()
    need_trace("cute.prefetch")
    if not tma.is_tma_atom(at) then err.raise("cute.prefetch: expected a TMA atom, got %s", core.describe(at)) end
    local g = tile_of(src, "tma_gmem", "cute.prefetch", "source")
    for k = 0, g.part.num_boxes - 1 do arch.tma_prefetch(at, g.part:coords(g.tile_coord, k)) end
  end)
end

return M
