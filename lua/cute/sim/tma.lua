--- cute.sim.tma: TMA descriptors on the CPU simulator, and the bulk tensor
-- engine's copies (tiled loads with swizzle and out-of-bounds fill, stores
-- clipped at the tensor's edges, reductions).
--
-- On a GPU a descriptor is the driver's opaque 128-byte CUtensorMap
-- (cuTensorMapEncodeTiled). While the simulator is the current device,
-- cute.tma_descriptor checks the same rules (the runtime's rt_tensormap_tiled
-- without its driver call) and writes the fields in cutelua's own 128-byte
-- form instead (a magic word first); a simulated kernel reads them back here.
-- A descriptor made for a GPU is refused by the simulator, and the other way
-- round the GPU would fault on a simulator's descriptor (tensors are host
-- memory there anyway).
local ffi = require "ffi"
local bit = require "bit"

local band, bor, bxor, lshift, rshift = bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift

local M = {}

ffi.cdef [[
typedef struct CuteSimTma {
  uint32_t magic; int32_t dtype, rank, swizzle, interleave, oob, l2, pad;
  uint64_t address; uint64_t dims[5]; uint64_t strides[4]; uint16_t box[5]; uint8_t estrides[5];
} CuteSimTma;
]]

M.MAGIC = 0x54534c43 -- "CLST"

-- CUtensorMapDataType -> element bytes, the type of its elements (reductions)
local DT = {
  [0] = { 1, "u8" }, [1] = { 2, "u16" }, [2] = { 4, "u32" }, [3] = { 4, "i32" }, [4] = { 8, "u64" }, [5] = { 8, "i64" },
  [6] = { 2, "f16" }, [7] = { 4, "f32" }, [8] = { 8, "f64" }, [9] = { 2, "bf16" }, [10] = { 4, "f32" },
  [11] = { 4, "f32" }, [12] = { 4, "f32" },
}
local SWZ_MASK = { [0] = 0, [1] = 1, [2] = 3, [3] = 7 } -- swizzle code -> mask of the 128-byte row bits XORed in

--- The simulator's descriptor (a CuteTmaDesc) from the fields cute.tma_descriptor checked.
function M.encode(dt, rank, address, dims, strides, box, es, inter, swz, l2, oob)
  local desc = ffi.new("CuteTmaDesc")
  local d = ffi.cast("CuteSimTma *", desc)
  d.magic, d.dtype, d.rank, d.swizzle, d.interleave, d.oob, d.l2 = M.MAGIC, dt.tma, rank, swz, inter, oob, l2
  d.address = ffi.cast("uint64_t", address)
  for i = 0, rank - 1 do
    d.dims[i], d.box[i], d.estrides[i] = dims[i], box[i], es[i]
    if i < rank - 1 then d.strides[i] = strides[i] end
  end
  return desc
end

--- The fields of the descriptor at host address a (nil and a reason if it is not the simulator's).
function M.decode(a)
  local d = ffi.cast("CuteSimTma *", a)
  if d.magic ~= M.MAGIC then
    return nil, "it is not a simulator's TMA descriptor (made while a GPU was the current device?)"
  end
  local info = DT[d.dtype]
  if not info then return nil, "its element type code " .. d.dtype .. " is not simulated" end
  if d.interleave ~= 0 then return nil, "interleaved layouts are not simulated" end
  local t = { rank = d.rank, dtype = d.dtype, esize = info[1], etype = info[2], swizzle = d.swizzle,
    swz_mask = SWZ_MASK[d.swizzle], oob = d.oob, address = tonumber(d.address), dims = {}, strides = {}, box = {},
    es = {}, n = {} }
  local elems = 1
  for i = 1, t.rank do
    t.dims[i], t.box[i], t.es[i] = tonumber(d.dims[i - 1]), d.box[i - 1], d.estrides[i - 1]
    t.strides[i] = i == 1 and t.esize or tonumber(d.strides[i - 2])
    t.n[i] = math.ceil(t.box[i] / t.es[i]) -- elements the box holds along dimension i
    elems = elems * t.n[i]
  end
  t.bytes = elems * t.esize
  -- the bytes of global memory the descriptor spans
  local span = t.esize
  for i = 1, t.rank do span = span + (t.dims[i] - 1) * t.strides[i] end
  t.span = span
  return t
end

--- The shared-memory byte offset o as the swizzle places it (16-byte chunk
-- bits 4-6 XOR the 128-byte row bits 7-9, masked to 1, 2 or 3 bits).
local function swizzle(o, mask)
  if mask == 0 then return o end
  return bxor(o, lshift(band(rshift(o, 7), mask), 4))
end
M.swizzle = swizzle

-- Calls fn(smem_offset, global_address or nil when out of bounds) for each
-- element of the box at coords (0-based, dimension 0 first), in the box's
-- dense order from shared-memory offset dst.
local function each(t, dst, coords, fn)
  local r, e = t.rank, t.esize
  local idx = { 0, 0, 0, 0, 0 }
  local lin = 0
  while true do
    -- global coordinate of dimensions 1..r-1 for this row
    local base, inb = t.address, true
    for i = 2, r do
      local g = coords[i] + idx[i] * t.es[i]
      if g < 0 or g >= t.dims[i] then inb = false end
      base = base + g * t.strides[i]
    end
    local n0, es0, c0, d0 = t.n[1], t.es[1], coords[1], t.dims[1]
    for j = 0, n0 - 1 do
      local g = c0 + j * es0
      local so = swizzle(dst + (lin + j) * e, t.swz_mask)
      if inb and g >= 0 and g < d0 then fn(so, base + g * e) else fn(so, nil) end
    end
    lin = lin + n0
    local i = 2
    while i <= r do
      idx[i] = idx[i] + 1
      if idx[i] < t.n[i] then break end
      idx[i] = 0
      i = i + 1
    end
    if i > r then return end
  end
end
M.each = each

local u8p = ffi.typeof("uint8_t *")

--- Box load: the box at coords into shared memory at offset dst (sbase: the
-- host address of that shared memory; mark(o, n): records the write).
function M.load(t, sbase, dst, coords, mark)
  local e = t.esize
  local nan = t.oob == 1
  each(t, dst, coords, function(so, ga)
    mark(so, e)
    local d = ffi.cast(u8p, sbase + so)
    if ga then
      ffi.copy(d, ffi.cast(u8p, ga), e)
    elseif nan and (t.etype == "f32" or t.etype == "f16" or t.etype == "bf16") then
      if e == 4 then ffi.cast("uint32_t *", d)[0] = 0x7fffffff
      elseif t.etype == "f16" then ffi.cast("uint16_t *", d)[0] = 0x7fff
      else ffi.cast("uint16_t *", d)[0] = 0x7fff end
    else
      ffi.fill(d, e)
    end
  end)
end

-- element readers/writers by type, for reductions
local RD = {
  u8 = "uint8_t", u16 = "uint16_t", u32 = "uint32_t", i32 = "int32_t", u64 = "uint64_t", i64 = "int64_t",
  f32 = "float", f64 = "double",
}

local function reduce1(op, etype, old, v)
  local int = not (etype == "f32" or etype == "f64" or etype == "f16" or etype == "bf16")
  if op == "add" then return old + v end
  if op == "min" then return v < old and v or old end
  if op == "max" then return v > old and v or old end
  if not int then return nil end
  if op == "and" then return band(old, v) end
  if op == "or" then return bor(old, v) end
  if op == "xor" then return bxor(old, v) end
  if op == "inc" then return old >= v and 0 or old + 1 end
  if op == "dec" then return (old == 0 or old > v) and v or old - 1 end
  return nil
end

--- Box store (or reduction with op): shared memory at dst to the box at
-- coords; elements outside the tensor are not written. check(o, n) checks
-- the shared-memory read. Returns an error text for an op the type lacks.
function M.store(t, sbase, dst, coords, op, check, N)
  local e = t.esize
  local et = t.etype
  local bad
  each(t, dst, coords, function(so, ga)
    check(so, e)
    if not ga then return end
    local s = ffi.cast(u8p, sbase + so)
    if not op then
      ffi.copy(ffi.cast(u8p, ga), s, e)
      return
    end
    local old, v, r
    if et == "f16" or et == "bf16" then
      local dec = et == "f16" and N.F16 or N.BF16
      local enc = et == "f16" and N.enc_f16 or N.enc_bf16
      old, v = dec[ffi.cast("uint16_t *", ga)[0]], dec[ffi.cast("uint16_t *", s)[0]]
      r = reduce1(op, et, old, v)
      if r then ffi.cast("uint16_t *", ga)[0] = enc(r) end
    else
      local ct = ffi.typeof(RD[et] .. " *")
      old, v = ffi.cast(ct, ga)[0], ffi.cast(ct, s)[0]
      if et == "u32" or et == "i32" or et == "u8" or et == "u16" then old, v = tonumber(old), tonumber(v) end
      r = reduce1(op, et, old, v)
      if r and et == "f32" then r = N.f32(r) end
      if r then ffi.cast(ct, ga)[0] = r end
    end
    if not r then bad = string.format("a TMA reduction '%s' on %s elements", op, et) end
  end)
  return bad
end

return M
