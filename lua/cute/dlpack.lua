--- cute.dlpack: tensors exchanged with other libraries through DLPack.
--
--   local t = cute.from_dlpack(ptr)     -- a DLManagedTensor * (cdata, light userdata or address)
--   local p = t:to_dlpack()             -- a DLManagedTensor * for another library
--
-- The C structs are DLPack's (dmlc/dlpack, include/dlpack/dlpack.h): the
-- legacy DLManagedTensor, and with {versioned = true} the DLPack 1.x
-- DLManagedTensorVersioned. They are declared here under cutelua's own names
-- (CuteDLManagedTensor, ...) so that a program declaring DLPack's own names
-- through the FFI does not clash; the layouts are the same.
--
-- Ownership (DLPack's rule: whoever holds the managed tensor calls its
-- deleter once, when done):
-- * from_dlpack takes the managed tensor over when it returns: the tensor it
--   returns (and every view of it) holds it, and the deleter is called once,
--   when the tensor's memory is freed (t:free(), or the GC). When it raises
--   (an unsupported dtype, device or layout), it has taken nothing: the caller
--   still owns the managed tensor.
-- * to_dlpack gives a new managed tensor to the consumer, which must call its
--   deleter once; until then cutelua keeps the tensor alive (do not t:free()
--   it meanwhile). The deleter is a Lua function: call it on the thread that
--   runs this Lua state, while no other Lua code of the state runs.
local ffi = require "ffi"
local jit = require "jit"
local err = require "cute._err"
local dtype = require "cute.dtype"
local L = require "cute.layout"
local runtime = require "cute.runtime"
local tensor = require "cute.tensor"

local M = {}

pcall(ffi.cdef, [[
typedef struct CuteDLDevice { int32_t device_type; int32_t device_id; } CuteDLDevice;
typedef struct CuteDLDataType { uint8_t code; uint8_t bits; uint16_t lanes; } CuteDLDataType;
typedef struct CuteDLTensor {
  void *data;
  CuteDLDevice device;
  int32_t ndim;
  CuteDLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} CuteDLTensor;
typedef struct CuteDLManagedTensor {
  CuteDLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct CuteDLManagedTensor *self);
} CuteDLManagedTensor;
typedef struct CuteDLPackVersion { uint32_t major; uint32_t minor; } CuteDLPackVersion;
typedef struct CuteDLManagedTensorVersioned {
  CuteDLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct CuteDLManagedTensorVersioned *self);
  uint64_t flags;
  CuteDLTensor dl_tensor;
} CuteDLManagedTensorVersioned;
]]) -- pcall: already declared when this module is loaded a second time (package.loaded reset)
pcall(ffi.cdef, "void *malloc(size_t); void free(void *);")

-- DLDeviceType values (dlpack.h)
local kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
local DEVICE_NAMES = { [1] = "kDLCPU", [2] = "kDLCUDA", [3] = "kDLCUDAHost", [4] = "kDLOpenCL", [7] = "kDLVulkan",
  [8] = "kDLMetal", [9] = "kDLVPI", [10] = "kDLROCM", [11] = "kDLROCMHost", [12] = "kDLExtDev",
  [13] = "kDLCUDAManaged", [14] = "kDLOneAPI", [15] = "kDLWebGPU", [16] = "kDLHexagon", [17] = "kDLMAIA" }

-- DLDataTypeCode values (dlpack.h): kDLInt 0, kDLUInt 1, kDLFloat 2,
-- kDLBfloat 4, kDLBool 6, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12.
local CODE_NAMES = { [0] = "int", "uint", "float", "opaque handle", "bfloat", "complex", "bool", "float8_e3m4",
  "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
  "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn" }
local FROM_DL = {
  ["0:8"] = "i8", ["0:16"] = "i16", ["0:32"] = "i32", ["0:64"] = "i64",
  ["1:8"] = "u8", ["1:16"] = "u16", ["1:32"] = "u32", ["1:64"] = "u64",
  ["2:16"] = "f16", ["2:32"] = "f32", ["2:64"] = "f64", ["4:16"] = "bf16", ["6:8"] = "bool",
  ["10:8"] = "e4m3", ["12:8"] = "e5m2",
}
local TO_DL = { tf32 = { 2, 32 } } -- tf32 is stored as f32
for k, v in pairs(FROM_DL) do
  local code, bits = k:match("(%d+):(%d+)")
  TO_DL[v] = { tonumber(code), tonumber(bits) }
end

local DLPACK_MAJOR, DLPACK_MINOR = 1, 0 -- the version to_dlpack{versioned = true} writes

-- ---------------------------------------------------------------------------
-- Importing

local MIN_ADDRESS = err.MIN_HOST_ADDRESS -- (below it: a mistake that would crash; cute._err)

local function managed_ptr(ptr, ctype, what)
  local t = type(ptr)
  if t == "number" then
    if ptr < MIN_ADDRESS or ptr ~= math.floor(ptr) then
      err.raise("%s: %s is not an address (a pointer to a DLManagedTensor)", what, tostring(ptr))
    end
    return ffi.cast(ctype, ffi.cast("uintptr_t", ptr))
  end
  if t ~= "cdata" and t ~= "userdata" then
    err.raise("%s: expected a pointer to a DLManagedTensor (cdata, light userdata or address), got %s", what, t)
  end
  local p = ffi.cast(ctype, ptr) -- a pointer, an integer, a light userdata or the struct itself
  if p == nil then err.raise("%s: the DLManagedTensor pointer is NULL", what) end
  local a = ffi.cast("uintptr_t", p)
  if a < MIN_ADDRESS then
    err.raise("%s: %s is not an address (a pointer to a DLManagedTensor)", what, tostring(tonumber(a)))
  end
  return p
end

-- The layout of a DLTensor's shape and strides (elements); NULL strides are
-- compact row-major.
local function layout_of(dl, what)
  local ndim = dl.ndim
  if ndim < 0 then err.raise("%s: ndim is %d", what, ndim) end
  if ndim == 0 then return L.make_layout(1) end
  local shape, stride = {}, {}
  for i = 0, ndim - 1 do
    local n = tonumber(dl.shape[i])
    if n < 1 then
      err.raise("%s: dimension %d has extent %d; cutelua's tensors have positive extents", what, i, n)
    end
    shape[i + 1] = n
  end
  if dl.strides == nil then
    local s = 1
    for i = ndim, 1, -1 do
      stride[i] = s
      s = s * shape[i]
    end
  else
    for i = 0, ndim - 1 do
      local s = tonumber(dl.strides[i])
      if s < 0 then
        err.raise("%s: dimension %d has the negative stride %d; cutelua's layouts take strides >= 0", what, i, s)
      end
      stride[i + 1] = s
    end
  end
  if ndim == 1 then return L.make_layout(shape[1], stride[1]) end
  return L.make_layout(shape, stride)
end

local function dtype_of(dl, what)
  local code, bits, lanes = dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
  if lanes ~= 1 then err.raise("%s: vector dtypes (lanes = %d) are not supported", what, lanes) end
  local name = FROM_DL[code .. ":" .. bits]
  if not name then
    err.raise("%s: the DLPack dtype %s (code %d) of %d bits has no cutelua dtype", what,
      CODE_NAMES[code] or "unknown", code, bits)
  end
  return dtype.get(name)
end

--- A tensor over a DLPack managed tensor (DLManagedTensor *, or with
-- opts.versioned = true a DLManagedTensorVersioned *: FFI cdata, a light
-- userdata or an address). Device memory (kDLCUDA, kDLCUDAManaged) gives a
-- device tensor on the current device (the managed tensor's device_id must
-- be it); host memory (kDLCPU, kDLCUDAHost) a host tensor
-- (cute.host_tensor). DLPack's shape (d0, d1, ...) and strides (elements)
-- are the layout's, in that order, so element (i, j) is the producer's
-- [i, j]; NULL strides are compact row-major; a 0-d tensor has one element.
-- The tensor owns the managed tensor from then on: its deleter is called
-- once, when the tensor's memory is freed (t:free() or the GC; a host
-- tensor: the GC). On an error nothing is taken over.
-- @param ptr a DLManagedTensor * (cdata, light userdata or address)
-- @param opts optional: {versioned = true} for a DLManagedTensorVersioned *
-- @return a device tensor or a host tensor
-- @usage local t = cute.from_dlpack(ptr)
function M.from_dlpack(ptr, opts)
  local versioned = opts and opts.versioned
  local what = "from_dlpack"
  local m = managed_ptr(ptr, versioned and "CuteDLManagedTensorVersioned *" or "CuteDLManagedTensor *", what)
  if versioned and m.version.major ~= DLPACK_MAJOR then
    err.raise("%s: DLPack version %d.%d; cutelua reads major version %d", what, m.version.major, m.version.minor,
      DLPACK_MAJOR)
  end
  local dl = m.dl_tensor
  if dl.data == nil and dl.byte_offset == 0 then err.raise("%s: the tensor's data pointer is NULL", what) end
  local dt = dtype_of(dl, what)
  local layout = layout_of(dl, what)
  local dev_type, dev_id = dl.device.device_type, dl.device.device_id
  local address = ffi.cast("uint64_t", ffi.cast("uintptr_t", dl.data)) + dl.byte_offset
  -- the deleter, called once (never from a compiled trace: it may be a Lua callback)
  local function release()
    if m.deleter ~= nil then m.deleter(m) end
  end
  jit.off(release)
  if dev_type == kDLCUDA or dev_type == kDLCUDAManaged then
    local cur = runtime.current_device()
    if dev_id ~= cur then
      err.raise("%s: the tensor is on CUDA device %d; the current device is %d (cute.set_device(%d) first)", what,
        dev_id, cur, dev_id)
    end
    local t = tensor.from_ptr(address, dt, layout)
    runtime.internal.set_on_release(t.buffer, release)
    return t
  end
  if dev_type == kDLCPU or dev_type == kDLCUDAHost then
    local h = tensor.host_tensor(dt, layout, nil, ffi.cast(dt.storage_ptr, address))
    rawset(h, "_dlpack_owner", ffi.gc(ffi.new("char[1]"), release)) -- (host tensors refuse writes)
    return h
  end
  err.raise("%s: tensors on %s (device type %d) are not supported; cutelua takes kDLCUDA, kDLCUDAManaged, "
    .. "kDLCPU and kDLCUDAHost", what, DEVICE_NAMES[dev_type] or "an unknown device", dev_type)
end

-- ---------------------------------------------------------------------------
-- Exporting

-- Managed tensors given out and not yet deleted: id -> the tensor (kept alive).
local exported, next_id, live = {}, 0, 0

local function on_delete(mp, ctype)
  local m = ffi.cast(ctype, mp)
  local id = tonumber(ffi.cast("uintptr_t", m.manager_ctx))
  if exported[id] then
    exported[id] = nil
    live = live - 1
  end
  ffi.C.free(m)
end

-- One callback per struct kind, made on first use (LuaJIT has few callback slots).
local deleters = {}
local function deleter(kind)
  local d = deleters[kind]
  if not d then
    local ctype = kind .. " *"
    d = ffi.cast("void (*)(" .. ctype .. ")", function(mp) on_delete(mp, ctype) end)
    deleters[kind] = d
  end
  return d
end

--- A new DLPack managed tensor over a device tensor (kDLCUDA, its device) or
-- a host tensor (kDLCPU): DLManagedTensor *, or DLManagedTensorVersioned *
-- with opts.versioned = true (DLPack 1.0, flags 0). The shape and strides
-- (elements) are the layout's leaves in order (a nested shape flattened).
-- The consumer owns it and must call its deleter once; until then the tensor
-- stays alive.
function M.to_dlpack(t, opts)
  local what = "to_dlpack"
  if type(t) ~= "table" or not t.dtype or not t.layout then err.raise("%s: expected a tensor", what) end
  local dev = tensor.is_device_tensor(t)
  if dev and t.fake then err.raise("%s: a fake tensor has no memory", what) end
  local code = TO_DL[t.dtype.name]
  if not code then err.raise("%s: %s has no DLPack dtype", what, t.dtype.name) end
  local shape, stride = tensor.internal.leaves(L.shape(t.layout)), tensor.internal.leaves(L.stride(t.layout))
  for i = 1, #stride do
    if type(stride[i]) ~= "number" then err.raise("%s: the layout %s is not static", what, tostring(t.layout)) end
  end
  local versioned = opts and opts.versioned
  local kind = versioned and "CuteDLManagedTensorVersioned" or "CuteDLManagedTensor"
  local head = ffi.sizeof(kind)
  local ndim = #shape
  local block = ffi.C.malloc(head + 16 * ndim)
  if block == nil then err.raise("%s: out of host memory", what) end
  ffi.fill(block, head + 16 * ndim)
  local m = ffi.cast(kind .. " *", block)
  local dims = ffi.cast("int64_t *", ffi.cast("char *", block) + head)
  for i = 1, ndim do
    dims[i - 1], dims[ndim + i - 1] = shape[i], stride[i]
  end
  local dl = m.dl_tensor
  if dev then
    dl.data = ffi.cast("void *", ffi.cast("uintptr_t", t:data_ptr()))
    dl.device.device_type, dl.device.device_id = kDLCUDA, t.buffer.device
  else
    dl.data = ffi.cast("void *", t.data)
    dl.device.device_type, dl.device.device_id = kDLCPU, 0
  end
  dl.ndim = ndim
  dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = code[1], code[2], 1
  dl.shape, dl.strides, dl.byte_offset = dims, dims + ndim, 0
  next_id = next_id + 1
  exported[next_id] = t
  live = live + 1
  m.manager_ctx = ffi.cast("void *", ffi.cast("uintptr_t", next_id))
  m.deleter = deleter(kind)
  if versioned then m.version.major, m.version.minor, m.flags = DLPACK_MAJOR, DLPACK_MINOR, 0 end
  return m
end

--- For tests: how many managed tensors to_dlpack gave out are not yet deleted.
function M.live_exports() return live end

return M
