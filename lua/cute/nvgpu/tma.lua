--- cute.nvgpu.tma: the host side of the tensor memory accelerator (TMA,
-- sm_90): bulk tensor copy ops, the TMA atom that derives a descriptor's
-- box, swizzle and global dims from a global tensor and the shared-memory
-- layout of a CTA tile, and the partitioning algebra (which boxes a CTA
-- issues, at which coordinates; multicast masks). Plain Lua, usable
-- without a GPU; only atom:descriptor() needs the driver.
--
--   local tma = require "cute.nvgpu.tma"
--   local A = cute.tensor(cute.bf16, { 4096, 1024 }, { 1024, 1 })        -- M x K, K contiguous
--   local sA = wg.make_smem_layout_a(wg.OperandMajorMode.K, { 128, 128, 64 }, cute.bf16)
--   local atom = tma.make_tiled_tma_atom(tma.CopyBulkTensorTileG2SOp(), A, sA, { 128, 64 })
--   print(atom)             --> TmaAtom(load bf16, box (64,128) 128B swizzle, 1 box a tile, 16384 bytes)
--   local desc = atom:descriptor(A)                                      -- cute.tma_descriptor{...}
--   local part = tma.tma_partition(atom, 0, cute.make_layout(1), sA)
--   part:coords({ m_tile, k_tile }, 0)                                   -- {k0, m0}: the box's TMA coordinates
--
-- A TMA descriptor's dimension 0 is the global tensor's contiguous mode
-- (stride 1); the others follow in mode order. A box is written to shared
-- memory densely, dimension 0 fastest, then the swizzle (XOR of byte bits
-- 4-6 with bits 7-9, masked to the mode's 1, 2 or 3 bits) is applied to the
-- destination address (docs/notes/hopper-facts.md 2.2 and 4.1, checked on
-- an H100). The atom finds the box that makes this write the shared-memory
-- layout it was given, and the boxes (at most 256 elements a dimension)
-- that cover the CTA tile.
local L = require "cute.layout"
local dtype = require "cute.dtype"
local swizzle = require "cute.swizzle"
local arith = require "cute.arith"
local err = require "cute._err"

local floor = math.floor

local M = {}

-- ---------------------------------------------------------------------------
-- Ops (CuTe DSL's names)

local TmaOp = { __name = "TmaCopyOp" }
TmaOp.__index = TmaOp
TmaOp.__tostring = function(o) return o.name .. "()" end

--- cp.async.bulk.tensor global -> shared, completing on an mbarrier.
-- @return the op (for make_tiled_tma_atom)
-- @usage local op = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
function M.CopyBulkTensorTileG2SOp()
  return setmetatable({ name = "CopyBulkTensorTileG2SOp", kind = "load", multicast = false }, TmaOp)
end

--- The same, written into every CTA of a cluster mask (.multicast::cluster, sm_90a).
-- @return the op (for make_tiled_tma_atom)
-- @usage local op = cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp()
function M.CopyBulkTensorTileG2SMulticastOp()
  return setmetatable({ name = "CopyBulkTensorTileG2SMulticastOp", kind = "load", multicast = true }, TmaOp)
end

--- cp.async.bulk.tensor shared -> global (bulk-group completion); clipped at the tensor's edges.
-- @return the op (for make_tiled_tma_atom)
-- @usage local op = cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp()
function M.CopyBulkTensorTileS2GOp()
  return setmetatable({ name = "CopyBulkTensorTileS2GOp", kind = "store", multicast = false }, TmaOp)
end

local REDUCTIONS = { add = true, min = true, max = true, inc = true, dec = true, ["and"] = true, ["or"] = true,
  xor = true }
local REDUCTION_LIST = "add, min, max, inc, dec, and, or, xor"

--- cp.reduce.async.bulk.tensor shared -> global: reduction "add" (default),
-- "min", "max", "inc", "dec", "and", "or" or "xor" into the global tensor.
-- @param reduction optional: the reduction's name (default "add")
-- @return the op (for make_tiled_tma_atom)
-- @usage local op = cute.nvgpu.cpasync.CopyReduceBulkTensorTileS2GOp("max")
function M.CopyReduceBulkTensorTileS2GOp(reduction)
  reduction = reduction or "add"
  if type(reduction) ~= "string" or not REDUCTIONS[reduction:lower()] then
    err.raise("CopyReduceBulkTensorTileS2GOp: the reduction is one of %s, got %s", REDUCTION_LIST, tostring(reduction))
  end
  return setmetatable({ name = "CopyReduceBulkTensorTileS2GOp", kind = "reduce", multicast = false,
    reduction = reduction:lower() }, TmaOp)
end

--- Whether x is a TMA op (one of the four above).
-- @param x any value
-- @return a boolean
-- @usage cute.nvgpu.cpasync.is_tma_op(cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp())  -- true
function M.is_tma_op(x) return getmetatable(x) == TmaOp end

-- ---------------------------------------------------------------------------
-- Rules of cuTensorMapEncodeTiled (CUDA driver API; facts 4.1)

M.MAX_RANK = 5
M.MAX_BOX = 256
M.MAX_STRIDE = 2 ^ 40
M.MAX_DIM = 2 ^ 32
M.MAX_MULTICAST = 16

local SWIZZLE_NAME = { [0] = "none", "32B", "64B", "128B" }

local function log2(x)
  local r = 0
  while x > 1 do x, r = x / 2, r + 1 end
  return r
end

local function show_list(t, from)
  local parts = {}
  for i = from or 1, #t do parts[#parts + 1] = arith.show(t[i]) end
  return "(" .. table.concat(parts, ",") .. ")"
end

local function is_int(x) return type(x) == "number" and x == floor(x) end

-- The global side of a tensor: dtype, flat modes (extents, strides in
-- elements), the TMA dimension order (dim d is mode order[d], 1-based
-- here), dims and byte strides in that order, and the base alignment.
local function global_view(t, what)
  if type(t) ~= "table" or not t.dtype or not L.internal.is_any_layout(t.layout) then
    err.raise("%s: expected a global tensor (cute.tensor or cute.fake_tensor), got %s", what, tostring(t))
  end
  local dt = t.dtype
  if not dt.tma then err.raise("%s: %s has no TMA data type: TMA cannot move it", what, dt.name) end
  local lay = t.layout
  if not L.is_layout(lay) then
    err.raise("%s: the global tensor's layout %s is swizzled; TMA reads plain strided tensors", what, tostring(lay))
  end
  local rank = L.rank(lay)
  local shape, stride = L.shape(lay), L.stride(lay)
  if type(shape) ~= "table" then shape, stride = { shape }, { stride } end
  if rank > M.MAX_RANK then
    err.raise("%s: the global tensor %s has %d modes; TMA moves tensors of 1 to %d dimensions", what, tostring(lay),
      rank, M.MAX_RANK)
  end
  local ext, str = {}, {}
  for j = 1, rank do
    if type(shape[j]) == "table" then
      err.raise("%s: mode %d of the global tensor %s is nested; a TMA dimension is one flat mode (flatten or "
        .. "coalesce it first)", what, j - 1, tostring(lay))
    end
    if not is_int(shape[j]) or not is_int(stride[j]) then
      err.raise("%s: the global tensor %s must have static extents and strides here", what, tostring(lay))
    end
    ext[j], str[j] = shape[j], stride[j]
  end
  -- dimension 0: the unit-stride mode
  local first
  for j = 1, rank do
    if str[j] == 1 and ext[j] > 1 then first = j; break end
  end
  if not first then
    for j = 1, rank do if str[j] == 1 then first = j; break end end
  end
  if not first then
    err.raise("%s: the global tensor %s has no mode of stride 1; TMA's dimension 0 must be contiguous", what,
      tostring(lay))
  end
  -- then the modes of more than one element by increasing stride (each
  -- dimension's stride then spans the ones before it, as the driver
  -- expects), then those of one element (their stride is never used: it
  -- gets the next multiple of 16 bytes past the others' span)
  local order = { first }
  local rest = {}
  for j = 1, rank do if j ~= first then rest[#rest + 1] = j end end
  table.sort(rest, function(x, y)
    if (ext[x] == 1) ~= (ext[y] == 1) then return ext[y] == 1 end
    if ext[x] > 1 and str[x] ~= str[y] then return str[x] < str[y] end
    return x < y
  end)
  for _, j in ipairs(rest) do order[#order + 1] = j end
  local dims, strides = {}, {}
  local span = ext[first] * dt.bytes
  for d = 1, rank do
    local j = order[d]
    dims[d] = ext[j]
    if ext[j] > M.MAX_DIM then
      err.raise("%s: mode %d of the global tensor has %s elements; a TMA dimension holds 1 to 2^32", what, j - 1,
        arith.show(ext[j]))
    end
    if d > 1 and ext[j] == 1 then
      strides[d - 1] = math.max(16, math.ceil(span / 16) * 16)
      if strides[d - 1] >= M.MAX_STRIDE then strides[d - 1] = 16 end
    elseif d > 1 then
      local bytes = str[j] * dt.bytes
      span = math.max(span, bytes * ext[j])
      if str[j] <= 0 then
        err.raise("%s: mode %d of the global tensor %s has stride %d; TMA strides are positive", what, j - 1,
          tostring(lay), str[j])
      end
      if bytes % 16 ~= 0 then
        err.raise("%s: mode %d of the global tensor %s has a stride of %s bytes; TMA needs strides that are "
          .. "multiples of 16 bytes (%d %s elements)", what, j - 1, tostring(lay), arith.show(bytes), 16 / dt.bytes,
          dt.name)
      end
      if bytes >= M.MAX_STRIDE then
        err.raise("%s: mode %d of the global tensor has a stride of %s bytes; TMA strides are below 2^40", what, j - 1,
          arith.show(bytes))
      end
      strides[d - 1] = bytes
    end
  end
  local align = t.fake and (t.align or t._align) or t._align
  if align and align < 16 then
    err.raise("%s: the global tensor's address is %d-byte aligned; TMA needs a 16-byte aligned base", what, align)
  end
  return { dtype = dt, rank = rank, ext = ext, str = str, order = order, dims = dims, strides = strides,
    layout = lay, fake = t.fake and true or false }
end
M._global_view = global_view

-- ---------------------------------------------------------------------------
-- The atom: the box that writes the shared-memory layout

local TmaAtom = { __name = "TmaAtom" }
TmaAtom.__index = TmaAtom
TmaAtom.__tostring = function(a)
  return string.format("TmaAtom(%s %s, box %s %s swizzle, %d box%s a tile%s, %d bytes)", a.op.kind, a.dtype.name,
    show_list(a.box), a.swizzle, a.num_boxes, a.num_boxes == 1 and "" or "es",
    a.num_multicast > 1 and string.format(" over %d CTAs", a.num_multicast) or "", a.tile_bytes)
end

local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return a
end

-- offsets of mode j (1-based) of a static layout of `rank` modes at 1-D
-- indices 0..n-1
local function mode_offsets(outer, rank, j, n, what, lay)
  local c, out = {}, {}
  for i = 1, rank do c[i] = 0 end
  for i = 0, n - 1 do
    c[j] = i
    local v = rank == 1 and outer(i) or outer(c)
    if type(v) ~= "number" then err.raise("%s: the shared-memory layout %s must be static", what, tostring(lay)) end
    out[i] = v
  end
  return out
end

--- A TMA atom (CuTe DSL's make_tiled_tma_atom): op, the global tensor (a
-- cute.tensor, or a cute.fake_tensor when compiling without one: the
-- descriptor is then built at launch from the real tensor), the
-- shared-memory layout of one CTA tile (elements; swizzled or not; a
-- trailing stage mode is ignored: stage 0 is used), cta_tiler (the tile's
-- extent along the global modes, e.g. {128, 64}; modes past it have
-- extent 1) and num_multicast (CTAs that share each tile through
-- CopyBulkTensorTileG2SMulticastOp; default 1). opts: {l2 = "none"|"64B"|
-- "128B"|"256B", oob = "zero"|"nan", internal_type = dtype (the TMA data
-- type, e.g. cute.tf32 for f32 data; same size)}. Returns the atom and the
-- TMA coordinate layout of the global tensor (global coordinate -> TMA
-- coordinates, basis strides: mode j of the tensor is TMA dimension d).
-- @param op a TMA op (CopyBulkTensorTileG2SOp(), ...)
-- @param gmem_tensor the global tensor (or a fake one)
-- @param smem_layout the shared-memory layout of one CTA tile
-- @param cta_tiler the tile's extent along the global modes
-- @param num_multicast optional: CTAs sharing each tile (default 1)
-- @param opts optional: {l2 =, oob =, internal_type =}
-- @return the atom and the TMA coordinate layout
-- @usage local atom, coords = cute.nvgpu.cpasync.make_tiled_tma_atom(op, gA, sA_layout, {128, 64})
function M.make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast, opts)
  local what = "make_tiled_tma_atom"
  if getmetatable(op) ~= TmaOp then
    err.raise("%s: expected a TMA op (cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), ...), got %s", what,
      tostring(op))
  end
  local g = global_view(gmem_tensor, what)
  local dt = g.dtype
  local e = dt.bytes
  num_multicast = num_multicast or 1
  if not is_int(num_multicast) or num_multicast < 1 or num_multicast > M.MAX_MULTICAST then
    err.raise("%s: num_multicast must be an integer from 1 to %d, got %s", what, M.MAX_MULTICAST,
      tostring(num_multicast))
  end
  if num_multicast > 1 and not op.multicast then
    err.raise("%s: num_multicast = %d needs CopyBulkTensorTileG2SMulticastOp (%s does not multicast)", what,
      num_multicast, op.name)
  end
  opts = opts or {}
  if type(opts) ~= "table" then err.raise("%s: opts must be a table", what) end
  for k in pairs(opts) do
    if k ~= "l2" and k ~= "oob" and k ~= "internal_type" then
      err.raise("%s: unknown option %s (options: l2, oob, internal_type)", what, tostring(k))
    end
  end
  local tma_dtype = dt
  if opts.internal_type ~= nil then
    tma_dtype = dtype.get(opts.internal_type)
    if tma_dtype.bytes ~= dt.bytes or not tma_dtype.tma then
      err.raise("%s: internal_type %s must be a TMA type of the tensor's element size (%d bytes)", what,
        tma_dtype.name, dt.bytes)
    end
  end
  if op.kind == "reduce" and dt.is_float and (op.reduction == "and" or op.reduction == "or"
      or op.reduction == "xor" or op.reduction == "inc" or op.reduction == "dec") then
    err.raise("%s: the reduction %s is for integers, not %s", what, op.reduction, dt.name)
  end
  -- the tile
  if type(cta_tiler) == "number" then cta_tiler = { cta_tiler } end
  if type(cta_tiler) ~= "table" or #cta_tiler < 1 then
    err.raise("%s: cta_tiler must be a list of tile extents such as {128, 64}, got %s", what, tostring(cta_tiler))
  end
  local R = g.rank
  if #cta_tiler > R then
    err.raise("%s: cta_tiler %s has more modes than the global tensor %s", what, show_list(cta_tiler),
      tostring(g.layout))
  end
  local tile = {}
  for j = 1, R do
    local t = cta_tiler[j] or 1
    if type(t) == "table" and L.internal.is_any_layout(t) then t = L.size(t) end
    if not is_int(t) or t < 1 then
      err.raise("%s: cta_tiler %s: extents must be positive static integers", what, show_list(cta_tiler))
    end
    tile[j] = t
  end
  -- the shared-memory layout: swizzle, offset, outer layout over the tiler's modes
  if not L.internal.is_any_layout(smem_layout) then
    err.raise("%s: expected a shared-memory layout, got %s", what, tostring(smem_layout))
  end
  local sw, soff, outer = nil, 0, smem_layout
  if L.is_composed_layout(smem_layout) then
    if not swizzle.is_swizzle(smem_layout.inner) then
      err.raise("%s: %s is composed with %s, not a swizzle", what, tostring(smem_layout),
        tostring(smem_layout.inner))
    end
    sw, soff, outer = smem_layout.inner, smem_layout.offset, smem_layout.outer
    if type(soff) ~= "number" then err.raise("%s: %s must be static", what, tostring(smem_layout)) end
  end
  local nt = #cta_tiler
  local srank = L.rank(outer)
  if srank ~= nt and srank ~= nt + 1 then
    err.raise("%s: the shared-memory layout %s has %d modes; the tile %s has %d (a trailing stage mode is allowed)",
      what, tostring(smem_layout), srank, show_list(cta_tiler), nt)
  end
  for j = 1, nt do
    local n = srank == 1 and L.size(outer) or L.size(outer, j - 1)
    if n ~= tile[j] then
      err.raise("%s: mode %d of the shared-memory layout %s has %s elements; the tile has %d", what, j - 1,
        tostring(smem_layout), arith.show(n), tile[j])
    end
  end
  local b = 0
  if sw and sw.bits > 0 then
    local want = 4 - log2(e)
    if sw.bits > 3 or sw.base ~= want or sw.shift ~= 3 then
      err.raise("%s: the swizzle %s on %s elements is S<%d,%d,%d> on bytes; TMA swizzles are S<1..3,4,3> on bytes "
        .. "(S<b,%d,3> on %s elements: 32B, 64B, 128B)", what, tostring(sw), dt.name, sw.bits, sw.base + log2(e),
        sw.shift, want, dt.name)
    end
    b = sw.bits
  end
  local span = b > 0 and 16 * 2 ^ b or nil
  -- offsets along each TMA dimension (mode order[d]); modes past the tiler: 0
  local off = {}
  for d = 1, R do
    local j = g.order[d]
    if j <= nt then off[d] = mode_offsets(outer, srank, j, tile[j], what, smem_layout) else off[d] = { [0] = 0 } end
  end
  -- the box: dimension by dimension, the largest extent (dividing the tile,
  -- at most 256, and within the swizzle span for dimension 0) over which
  -- the layout continues densely after the dimensions before it
  local box, pitch = {}, {}
  local P = 1
  for d = 1, R do
    local t = tile[g.order[d]]
    local o = off[d]
    local run = 1
    while run < t and o[run] - o[0] == run * P do run = run + 1 end
    local cap = math.min(run, M.MAX_BOX)
    if d == 1 and span then cap = math.min(cap, span / e) end
    local bd = 1
    for c = cap, 1, -1 do
      if t % c == 0 then bd = c; break end
    end
    box[d], pitch[d] = bd, P
    P = P * bd
  end
  -- the inner box row: a multiple of 16 bytes
  local j0 = g.order[1]
  if (box[1] * e) % 16 ~= 0 then
    local why
    if tile[j0] * e < 16 then
      why = string.format("the tile has %d element%s along it", tile[j0], tile[j0] == 1 and "" or "s")
    else
      local run = 1
      while run < tile[j0] and off[1][run] - off[1][0] == run do run = run + 1 end
      why = string.format("the shared-memory layout keeps %d element%s contiguous along it", run,
        run == 1 and "" or "s")
    end
    err.raise("%s: TMA moves rows of a multiple of 16 bytes along the global tensor's contiguous mode %d, but a box "
      .. "would be %d %s elements = %d bytes wide: %s; use a shared-memory layout contiguous along mode %d (e.g. a "
      .. "%s-major layout atom)", what, j0 - 1, box[1], dt.name, box[1] * e, why, j0 - 1,
      j0 == 1 and "MN" or "K")
  end
  -- multicast: split the boxes over the CTAs, cutting the outermost box
  -- dimensions where the boxes do not divide evenly
  local nbox = 1
  for d = 1, R do nbox = nbox * (tile[g.order[d]] / box[d]) end
  if num_multicast > 1 then
    local need = num_multicast / gcd(num_multicast, nbox)
    for d = R, 1, -1 do
      local f = gcd(box[d], need)
      if f > 1 then
        box[d], need = box[d] / f, need / f
        nbox = nbox * f
      end
    end
    if need > 1 then
      err.raise("%s: a tile of %s cannot be split into %d equal parts of whole TMA boxes", what, show_list(tile),
        num_multicast)
    end
    P = 1
    for d = 1, R do pitch[d], P = P, P * box[d] end
    if (box[1] * e) % 16 ~= 0 then
      err.raise("%s: splitting the tile over %d CTAs cuts the box's rows to %d bytes; TMA rows are multiples of 16 "
        .. "bytes", what, num_multicast, box[1] * e)
    end
  end
  -- every box must be the dense image of its elements, and start on TMA's alignment
  local box_align = span and 8 * span or 128
  local nb = {}
  for d = 1, R do
    local t, o, bd = tile[g.order[d]], off[d], box[d]
    nb[d] = t / bd
    for q = 0, nb[d] - 1 do
      for i = 0, bd - 1 do
        local got, want = o[q * bd + i] - o[q * bd], i * pitch[d]
        if got ~= want then
          err.raise("%s: the shared-memory layout %s is not dense inside a TMA box %s: along mode %d, element %d is "
            .. "%d elements from the box's start where TMA writes it at %d; build the layout from a layout atom "
            .. "(cute.nvgpu.warpgroup.make_smem_layout_atom) with tile_to_shape", what, tostring(smem_layout),
            show_list(box), g.order[d] - 1, q * bd + i, got, want)
        end
      end
    end
  end
  -- the box grid (dimension 0 fastest): tile origin and smem offset of each box
  local boxes = {}
  local idx = {}
  for d = 1, R do idx[d] = 0 end
  for _ = 1, nbox do
    local origin, so = {}, soff
    for d = 1, R do
      origin[d] = idx[d] * box[d]
      so = so + off[d][idx[d] * box[d]]
    end
    if (so * e) % box_align ~= 0 then
      err.raise("%s: the TMA box at tile offset %s starts at shared-memory byte %d, not a multiple of %d (%s)", what,
        show_list(origin), so * e, box_align, span and "the swizzle pattern's repeat" or "TMA's destination alignment")
    end
    boxes[#boxes + 1] = { origin = origin, smem_offset = so, smem_bytes = so * e }
    for d = 1, R do
      idx[d] = idx[d] + 1
      if idx[d] < nb[d] then break end
      idx[d] = 0
    end
  end
  local box_elems = 1
  for d = 1, R do box_elems = box_elems * box[d] end
  -- boxes must not overlap (a layout that is not one-to-one)
  local starts = {}
  for i, bx in ipairs(boxes) do starts[i] = bx end
  table.sort(starts, function(x, y) return x.smem_offset < y.smem_offset end)
  for i = 2, #starts do
    if starts[i].smem_offset < starts[i - 1].smem_offset + box_elems then
      err.raise("%s: the shared-memory layout %s puts several tile elements in one place: the TMA boxes at tile "
        .. "offsets %s and %s overlap", what, tostring(smem_layout), show_list(starts[i - 1].origin),
        show_list(starts[i].origin))
    end
  end
  -- TMA stores and reductions write whole 16-byte chunks of the contiguous
  -- dimension: where a box crosses its edge they write up to 16 bytes past
  -- the tensor (measured on an H100: a 150-element u16 row stored into a
  -- 152-element pitch writes elements 150 and 151; a 40-byte f32 row, 48
  -- bytes). Loads fill out-of-bounds elements exactly. A box's contiguous
  -- extent is a multiple of 16 bytes, so an edge that is not crosses a box.
  local inner = g.dims[1]
  if op.kind ~= "load" and type(inner) == "number" and (inner * e) % 16 ~= 0 then
    err.raise("%s: %s writes whole 16-byte chunks of the contiguous mode %d, which has %d elements (%d bytes, no "
      .. "multiple of 16): at its edge it would write past the tensor; store a view whose contiguous extent is a "
      .. "multiple of %d elements, and the rest another way", what, op.name, g.order[1] - 1, inner, inner * e, 16 / e)
  end
  local tile_elems = 1
  for j = 1, R do tile_elems = tile_elems * tile[j] end
  local atom = setmetatable({
    kind = "tma", op = op, dtype = dt, tma_dtype = tma_dtype, rank = R,
    dim_modes = {}, box = box, box_grid = nb, tile = tile, tiler_rank = nt,
    swizzle = SWIZZLE_NAME[b], swizzle_code = b, dtype_code = tma_dtype.tma,
    element_strides = {}, num_boxes = nbox, boxes = boxes, box_bytes = box_elems * e, tile_bytes = tile_elems * e,
    num_multicast = num_multicast, l2 = opts.l2, oob = opts.oob,
    gmem = g, fake = g.fake, tensor = not g.fake and gmem_tensor or nil, smem_layout = smem_layout,
    smem_align = box_align,
  }, TmaAtom)
  for d = 1, R do
    atom.dim_modes[d] = g.order[d] - 1
    atom.element_strides[d] = 1
  end
  atom.boxes_per_cta = nbox / num_multicast
  -- whether box offsets are affine in the box grid coordinates (what a
  -- traced CTA index needs): box_step[d] apart along dimension d
  atom.box_step, atom.box_affine = {}, true
  local s = 1
  for d = 1, R do
    atom.box_step[d] = nb[d] > 1 and boxes[1 + s].smem_offset - boxes[1].smem_offset or 0
    s = s * nb[d]
  end
  for q, bx in ipairs(boxes) do
    local rest_q, want = q - 1, boxes[1].smem_offset
    for d = 1, R do
      want = want + (rest_q % nb[d]) * atom.box_step[d]
      rest_q = floor(rest_q / nb[d])
    end
    if bx.smem_offset ~= want then atom.box_affine = false end
  end
  -- global coordinate -> TMA coordinates: mode j is TMA dimension d
  local strides = {}
  for d = 1, R do strides[g.order[d]] = arith.E(d - 1, 1) end
  local gshape = L.shape(g.layout)
  local coord = L.make_layout(gshape, type(gshape) == "table" and strides or strides[1])
  return atom, coord
end

--- The spec of cute.tma_descriptor for tensor t (default: the tensor the
-- atom was made from, unless that was a fake one): t's dims, strides and
-- address with the atom's box, swizzle and data type. t must match what the
-- atom was derived for (dtype, mode order; any extents and strides that
-- pass TMA's rules).
function TmaAtom:tma_spec(t)
  local what = "TmaAtom:tma_spec"
  t = t or self.tensor
  if t == nil then
    err.raise("%s: the atom was made from a fake tensor; pass the real tensor (at launch)", what)
  end
  if t.fake then err.raise("%s: %s is a fake tensor: it has no memory to describe", what, tostring(t)) end
  local g = global_view(t, what)
  if g.dtype ~= self.dtype then
    err.raise("%s: the tensor holds %s; the atom moves %s", what, g.dtype.name, self.dtype.name)
  end
  if g.rank ~= self.rank then
    err.raise("%s: the tensor has %d modes; the atom was made for %d", what, g.rank, self.rank)
  end
  for d = 1, g.rank do
    if g.order[d] - 1 ~= self.dim_modes[d] then
      err.raise("%s: the tensor's contiguous mode is %d; the atom was made for mode %d contiguous", what,
        g.order[1] - 1, self.dim_modes[1])
    end
  end
  local strides = {}
  for d = 1, g.rank - 1 do strides[d] = g.strides[d] end
  local box, es = {}, {}
  for d = 1, g.rank do box[d], es[d] = self.box[d], 1 end
  return { dtype = self.tma_dtype, address = t, dims = g.dims, strides = strides, box = box, element_strides = es,
    swizzle = self.swizzle, l2 = self.l2, oob = self.oob }
end

--- The descriptor (cute.tma_descriptor: 128 bytes, a grid-constant kernel
-- argument) for tensor t; needs the CUDA driver.
function TmaAtom:descriptor(t) return require("cute.runtime").tma_descriptor(self:tma_spec(t)) end

--- Whether x is a TMA atom (make_tiled_tma_atom's).
-- @param x any value
-- @return a boolean
-- @usage cute.nvgpu.cpasync.is_tma_atom(42)  -- false
function M.is_tma_atom(x) return getmetatable(x) == TmaAtom end
M._TmaAtom = TmaAtom

-- ---------------------------------------------------------------------------
-- Partitioning

local TmaPartition = { __name = "TmaPartition" }
TmaPartition.__index = TmaPartition
TmaPartition.__tostring = function(p)
  return string.format("TmaPartition(%d of %d boxes a tile from CTA %s, %d bytes issued, %d expected a tile)",
    p.num_boxes, p.atom.num_boxes, arith.show(p.cta_index), p.bytes, p.tile_bytes)
end

--- What one CTA of a multicast group issues (CuTe DSL's tma_partition):
-- cta_coord is the CTA's coordinate in cta_layout, the layout of the CTAs
-- that share a tile (size the atom's num_multicast; a number n means
-- make_layout(n)); smem_tensor is the CTA's shared-memory layout (or a
-- tensor with one), possibly with a trailing stage mode; gmem_tensor, when
-- given, must have the atom's global shape. The CTA of index
-- cta_layout(cta_coord) issues boxes index * boxes_per_cta .. + boxes_per_cta - 1
-- of the tile (the box grid with dimension 0 fastest); every CTA of the
-- group receives all of them. cta_coord may be a traced (dynamic) value.
-- @param atom a TMA atom
-- @param cta_coord the CTA's coordinate in cta_layout
-- @param cta_layout the layout of the CTAs sharing a tile (or their count)
-- @param smem_tensor the CTA's shared-memory layout, or a tensor with one
-- @param gmem_tensor optional: the global tensor (its shape checked)
-- @return a TmaPartition
-- @usage local part = cute.nvgpu.cpasync.tma_partition(atom, 0, 1, sA_layout)
function M.tma_partition(atom, cta_coord, cta_layout, smem_tensor, gmem_tensor)
  local what = "tma_partition"
  if getmetatable(atom) ~= TmaAtom then err.raise("%s: expected a TMA atom, got %s", what, tostring(atom)) end
  if type(cta_layout) == "number" then cta_layout = L.make_layout(cta_layout) end
  if not L.is_layout(cta_layout) then
    err.raise("%s: cta_layout must be a layout of the CTAs sharing a tile, got %s", what, tostring(cta_layout))
  end
  if L.size(cta_layout) ~= atom.num_multicast then
    err.raise("%s: cta_layout %s has %s CTAs; the atom was made for num_multicast = %d", what, tostring(cta_layout),
      arith.show(L.size(cta_layout)), atom.num_multicast)
  end
  local index = cta_layout(cta_coord)
  if type(index) == "number" and (index < 0 or index >= atom.num_multicast or index ~= floor(index)) then
    err.raise("%s: cta_coord %s is CTA %s of cta_layout %s, outside 0..%d", what, arith.show(cta_coord),
      arith.show(index), tostring(cta_layout), atom.num_multicast - 1)
  end
  -- the stage mode of the shared-memory layout, if any
  local stage_stride = nil
  if smem_tensor ~= nil then
    local lay = smem_tensor
    if not L.internal.is_any_layout(lay) and type(lay) == "table" then lay = rawget(lay, "layout") end
    if not L.internal.is_any_layout(lay) then
      err.raise("%s: smem_tensor must be a shared-memory layout or a tensor with one, got %s", what,
        tostring(smem_tensor))
    end
    local outer = L.is_composed_layout(lay) and lay.outer or lay
    local r = L.rank(outer)
    local nt = atom.tiler_rank
    if r ~= nt and r ~= nt + 1 then
      err.raise("%s: smem_tensor %s has %d modes; the atom's tile has %d (and maybe a stage mode)", what,
        tostring(lay), r, nt)
    end
    local ref = atom.smem_layout
    local ref_outer = L.is_composed_layout(ref) and ref.outer or ref
    local same = (L.is_composed_layout(lay) and lay.inner or nil) == (L.is_composed_layout(ref) and ref.inner or nil)
      and (L.is_composed_layout(lay) and lay.offset or 0) == (L.is_composed_layout(ref) and ref.offset or 0)
    for j = 1, nt do
      if not same then break end
      local n = r == 1 and L.size(outer) or L.size(outer, j - 1)
      if n ~= atom.tile[j] then
        same = false
        break
      end
      local mine = mode_offsets(outer, r, j, n, what, lay)
      local theirs = mode_offsets(ref_outer, L.rank(ref_outer), j, n, what, ref)
      for i = 0, n - 1 do
        if mine[i] ~= theirs[i] then same = false end
      end
    end
    if not same then
      err.raise("%s: smem_tensor %s is not the layout the atom was made for (%s)", what, tostring(lay), tostring(ref))
    end
    if r == nt + 1 then
      stage_stride = L.get(outer, nt)
    end
  end
  if gmem_tensor ~= nil then
    local glay = L.internal.is_any_layout(gmem_tensor) and gmem_tensor
      or (type(gmem_tensor) == "table" and gmem_tensor.layout)
    if not L.internal.is_any_layout(glay) or tostring(L.shape(glay)) ~= tostring(L.shape(atom.gmem.layout)) then
      err.raise("%s: gmem_tensor %s does not have the shape the atom was made for (%s)", what, tostring(gmem_tensor),
        tostring(atom.gmem.layout))
    end
  end
  local per = atom.boxes_per_cta
  local p = setmetatable({ atom = atom, cta_index = index, num_boxes = per, box_bytes = atom.box_bytes,
    bytes = per * atom.box_bytes, tile_bytes = atom.tile_bytes, stage_layout = stage_stride }, TmaPartition)
  if type(index) == "number" then
    p.boxes = {}
    for k = 0, per - 1 do p.boxes[k + 1] = atom.boxes[index * per + k + 1] end
  end
  return p
end

-- The grid coordinates of box number q (possibly dynamic): dimension 0 fastest.
local function box_coords(atom, q)
  local out = {}
  for d = 1, atom.rank do
    local n = atom.box_grid[d]
    if n == 1 then out[d] = 0 else
      out[d] = arith.mod(q, n)
      q = arith.div(q, n)
    end
  end
  return out
end

local function check_box(p, k, what)
  if type(k) ~= "number" or k < 0 or k >= p.num_boxes or k ~= floor(k) then
    err.raise("%s: box %s is not one of this CTA's boxes 0..%d", what, arith.show(k), p.num_boxes - 1)
  end
end

--- The element offset, inside the CTA tile, of box k (0-based) of this CTA,
-- per TMA dimension.
function TmaPartition:box_origin(k)
  check_box(self, k, "TmaPartition:box_origin")
  local q = arith.add(arith.mul(self.cta_index, self.num_boxes), k)
  local g = box_coords(self.atom, q)
  local out = {}
  for d = 1, self.atom.rank do out[d] = arith.mul(g[d], self.atom.box[d]) end
  return out
end

--- The shared-memory element offset (from the layout's start, its offset
-- included) where box k of this CTA lands, in stage `stage` (default 0).
function TmaPartition:smem_offset(k, stage)
  check_box(self, k, "TmaPartition:smem_offset")
  local a = self.atom
  local q = arith.add(arith.mul(self.cta_index, self.num_boxes), k)
  local off
  if type(q) == "number" then off = a.boxes[q + 1].smem_offset else
    -- a traced CTA index: the offset from the box grid coordinates
    if not a.box_affine then
      err.raise("TmaPartition:smem_offset: the atom's boxes are not evenly spaced in shared memory along each TMA "
        .. "dimension; a traced CTA index needs them to be")
    end
    local g = box_coords(a, q)
    off = a.boxes[1].smem_offset
    for d = 1, a.rank do
      if a.box_grid[d] > 1 then off = arith.add(off, arith.mul(g[d], a.box_step[d])) end
    end
  end
  if stage ~= nil and stage ~= 0 then
    if not self.stage_layout then
      err.raise("TmaPartition:smem_offset: stage %s asked for, but the smem_tensor given had no stage mode",
        arith.show(stage))
    end
    off = arith.add(off, self.stage_layout(stage))
  end
  return off
end

--- The TMA coordinates (one per TMA dimension, in elements) of box k of this
-- CTA for the CTA tile at tile_coord: a list with, for each global mode,
-- the tile's index along it (modes covered by cta_tiler) or the coordinate
-- itself (the modes past it). Values may be traced integers.
function TmaPartition:coords(tile_coord, k)
  local a = self.atom
  if type(tile_coord) ~= "table" then tile_coord = { tile_coord } end
  if #tile_coord ~= a.rank then
    err.raise("TmaPartition:coords: the tile coordinate %s has %d entries; the global tensor has %d modes",
      show_list(tile_coord), #tile_coord, a.rank)
  end
  local o = self:box_origin(k or 0)
  local out = {}
  for d = 1, a.rank do
    local j = a.dim_modes[d] + 1
    out[d] = arith.add(arith.mul(tile_coord[j], a.tile[j]), o[d])
  end
  return out
end

--- The TMA tensor's tile at tile_coord, as a copy's global side (in a
-- kernel: cute.copy(atom, part:gmem_tile(c), part:smem_tile(sA), {...})).
function TmaPartition:gmem_tile(tile_coord)
  if type(tile_coord) ~= "table" then tile_coord = { tile_coord } end
  if #tile_coord ~= self.atom.rank then
    err.raise("TmaPartition:gmem_tile: the tile coordinate %s has %d entries; the global tensor has %d modes",
      show_list(tile_coord), #tile_coord, self.atom.rank)
  end
  return { kind = "tma_gmem", part = self, tile_coord = tile_coord }
end

--- The shared-memory tile (a shared-memory tensor with the atom's layout,
-- stage `stage` of its trailing stage mode, default 0), as a copy's shared side.
function TmaPartition:smem_tile(smem_tensor, stage)
  return { kind = "tma_smem", part = self, tensor = smem_tensor, stage = stage }
end

--- Whether x is a TmaPartition (tma_partition's).
-- @param x any value
-- @return a boolean
-- @usage cute.nvgpu.cpasync.is_tma_partition({})  -- false
function M.is_tma_partition(x) return getmetatable(x) == TmaPartition end

-- ---------------------------------------------------------------------------
-- Multicast masks

--- The mask pattern of the CTAs along mode `mode` (0-based) of cta_layout
-- (cluster coordinate -> %cluster_ctarank) when the other coordinates are
-- 0: bit cta_layout(0, .., i, .., 0) for each i. The mask for a CTA is this
-- pattern shifted left by cta_layout(its coordinate with mode `mode` set
-- to 0).
-- @param cta_layout the cluster's layout (coordinate -> %cluster_ctarank)
-- @param mode the mode (0-based) along which the CTAs share
-- @return the pattern (a number, bit r for rank r)
-- @usage cute.nvgpu.cpasync.multicast_mask_pattern(cute.make_layout({2, 2}), 1)  -- 5
function M.multicast_mask_pattern(cta_layout, mode)
  local what = "multicast_mask_pattern"
  if not L.is_layout(cta_layout) then err.raise("%s: expected a layout of the cluster, got %s", what,
    tostring(cta_layout)) end
  local r = L.rank(cta_layout)
  if not is_int(mode) or mode < 0 or mode >= r then
    err.raise("%s: mode %s is not a mode of %s (0..%d)", what, tostring(mode), tostring(cta_layout), r - 1)
  end
  local n = L.size(cta_layout)
  if type(n) ~= "number" or n > M.MAX_MULTICAST then
    err.raise("%s: a cluster has at most %d CTAs, %s has %s", what, M.MAX_MULTICAST, tostring(cta_layout),
      arith.show(n))
  end
  local sub = r == 1 and cta_layout or L.get(cta_layout, mode)
  local pattern = 0
  for i = 0, L.size(sub) - 1 do
    local rank = sub(i)
    pattern = pattern + 2 ^ rank
  end
  return pattern
end

--- The 16-bit cluster mask of the CTAs that share cta_coord's coordinates
-- except along mode `mode` (CuTe DSL's create_tma_multicast_mask):
-- cta_layout maps a cluster coordinate to %cluster_ctarank. Static
-- coordinates only (for a traced coordinate: multicast_mask_pattern, shifted
-- by cta_layout(coordinate with mode `mode` at 0)).
-- @param cta_layout the cluster's layout (coordinate -> %cluster_ctarank)
-- @param cta_coord this CTA's coordinate (static)
-- @param mode the mode (0-based) along which the CTAs share
-- @return the 16-bit mask
-- @usage cute.nvgpu.cpasync.create_tma_multicast_mask(cute.make_layout({2, 2}), {1, 0}, 1)  -- 10
function M.create_tma_multicast_mask(cta_layout, cta_coord, mode)
  local what = "create_tma_multicast_mask"
  local pattern = M.multicast_mask_pattern(cta_layout, mode)
  local r = L.rank(cta_layout)
  if type(cta_coord) ~= "table" then cta_coord = { cta_coord } end
  if #cta_coord ~= r then
    err.raise("%s: the coordinate %s has %d entries; %s has %d modes", what, show_list(cta_coord), #cta_coord,
      tostring(cta_layout), r)
  end
  local c = {}
  for i = 1, r do
    if type(cta_coord[i]) ~= "number" then
      err.raise("%s: the coordinate %s is not static; shift multicast_mask_pattern(cta_layout, %d) by "
        .. "cta_layout(coordinate with mode %d at 0) in the kernel", what, show_list(cta_coord), mode, mode)
    end
    c[i] = cta_coord[i]
  end
  c[mode + 1] = 0
  local base = r == 1 and cta_layout(c[1]) or cta_layout(c)
  return pattern * 2 ^ base
end

return M
