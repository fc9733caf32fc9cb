--- cute.tensor: tensors in device memory, seen from the host.
--
--   local a = cute.tensor(cute.f32, {1024, 512})          -- column-major, as CuTe's make_layout
--   local b = cute.tensor(cute.bf16, {1024, 512}, "row")   -- row-major
--   local c = cute.tensor(cute.f32, cute.make_layout({8, 8}, {1, 16}))
--   a:uniform(-1, 1); b:fill(0); a:copy_from({...}); a:to_table(); a:to_host()[{3, 4}]
--   k{grid = ..., block = ...}(a, b, c)                     -- kernels take them as arguments
--
-- Element order: CuTe's. A flat Lua table, to_table() and the 1-D index of a
-- tensor run through coordinates with the first mode fastest (column-major
-- coordinate order), whatever the strides. A nested table t[i][j] is element
-- (i-1, j-1) of a rank-2 tensor.
--
-- Memory is freed by the GC or at once with :free() (both safe). A tensor can
-- wrap memory the caller owns (cute.from_ptr): cutelua never frees that.
local ffi = require "ffi"
local rt = require("cute._c").rt
local runtime = require "cute.runtime"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"
local is_any_layout = L.internal.is_any_layout
local it = require "cute.int_tuple"

local M = {}

local DeviceTensor = { __name = "DeviceTensor" }
local methods = {}
DeviceTensor.__index = methods
M.DeviceTensor = DeviceTensor

local function is_device_tensor(x) return getmetatable(x) == DeviceTensor end
M.is_device_tensor = is_device_tensor

-- The layout of a shape and an optional layout spec: a Layout, "col" (the
-- default), "row", or a stride tuple.
local function layout_of(shape, spec, what)
  if is_any_layout(shape) then return shape end
  if type(shape) == "number" then shape = shape end
  if spec == nil or spec == "col" then return L.make_layout(shape) end
  if is_any_layout(spec) then return spec end
  if spec == "row" then
    if type(shape) == "number" then return L.make_layout(shape) end
    return L.make_layout(shape, it.suffix_product(shape))
  end
  if type(spec) == "table" or type(spec) == "number" then return L.make_layout(shape, spec) end
  err.raise("%s: the layout must be a Layout, \"row\", \"col\" or a stride tuple, got %s", what, tostring(spec))
end

local function check_static(layout, what)
  local n, c = L.size(layout), L.cosize(layout)
  if type(n) ~= "number" or type(c) ~= "number" then
    err.raise("%s: a device tensor needs a static layout, got %s", what, tostring(layout))
  end
  return n, c
end

-- Leaves of an IntTuple, in order.
local function leaves(x, out)
  out = out or {}
  if type(x) == "table" then
    for i = 1, #x do leaves(x[i], out) end
  else
    out[#out + 1] = x
  end
  return out
end

-- ---------------------------------------------------------------------------
-- Host arrays and layout walks

pcall(ffi.cdef, "void *malloc(size_t); void free(void *);")

-- A host array of n elements of a C type (a string), zero-initialised only
-- when small: LuaJIT's own arrays stop below 2 GiB, so large ones come from
-- malloc (freed by the GC).
local function host_array(ctype, n)
  n = math.max(n, 1)
  local bytes = n * ffi.sizeof(ctype)
  if bytes < 2 ^ 28 then return ffi.new(ctype .. "[?]", n) end
  local p = ffi.C.malloc(bytes)
  if p == nil then err.raise("out of host memory allocating %.0f MiB", bytes / 2 ^ 20) end
  return ffi.gc(ffi.cast(ctype .. "*", p), ffi.C.free)
end
M._host_array = host_array

-- The layout's leaves without the modes of size 1: shapes and strides.
local function live_modes(layout)
  local s, d = leaves(L.shape(layout)), leaves(L.stride(layout))
  local ls, ld = {}, {}
  for i = 1, #s do
    if s[i] ~= 1 then ls[#ls + 1], ld[#ld + 1] = s[i], d[i] end
  end
  return ls, ld
end

-- Whether the layout maps index i to offset i (column-major and compact, as
-- a 1-D array): then coordinate order is memory order.
local function is_identity(layout)
  local s, d = live_modes(layout)
  local want = 1
  for i = 1, #s do
    if d[i] ~= want then return false end
    want = want * s[i]
  end
  return true
end

-- Whether the layout is a permutation of 0..size-1 (every element of the
-- span used exactly once, in some order): fills that do not care about order
-- may then treat the span as a flat array.
local function is_dense(layout)
  local s, d = live_modes(layout)
  local order = {}
  for i = 1, #s do order[i] = i end
  table.sort(order, function(a, b) return d[a] < d[b] end)
  local want = 1
  for _, i in ipairs(order) do
    if d[i] ~= want then return false end
    want = want * s[i]
  end
  return true
end

-- Calls fn(i, offset) for every index i in coordinate order with the memory
-- offset of element i (an odometer over the layout's leaves: no layout
-- evaluation per element).
local function each_offset(layout, fn)
  local s, d = live_modes(layout)
  local r, n = #s, L.size(layout)
  local idx = {}
  for k = 1, r do idx[k] = 0 end
  local off = 0
  for i = 0, n - 1 do
    fn(i, off)
    local k = 1
    while k <= r do
      local c = idx[k] + 1
      off = off + d[k]
      if c < s[k] then
        idx[k] = c
        break
      end
      idx[k] = 0
      off = off - d[k] * s[k]
      k = k + 1
    end
  end
end
M._each_offset = each_offset

-- The largest power of two (up to 16) dividing an address.
local function pow2_align(p)
  local a = 16
  while a > 1 and tonumber(p % a) ~= 0 do a = a / 2 end
  return a
end

-- What a launch reads of a tensor, computed once here rather than per launch:
-- the data address (_ptr), its alignment (_align) and the layout's leaves
-- (_sl, _dl).
local function new(buf, offset, dt, layout)
  local t = setmetatable({ buffer = buf, offset = offset, dtype = dt, layout = layout }, DeviceTensor)
  local p = ffi.new("uint64_t", buf.ptr + offset)
  t._ptr, t._align = p, pow2_align(p)
  t._sl, t._dl = leaves(L.shape(layout)), leaves(L.stride(layout))
  return t
end
M._leaves = leaves

--- A new device tensor of dtype dt and a shape (with an optional layout
-- spec), or of a Layout. Its contents are undefined until written.
-- @param dt the dtype (cute.f32, ...)
-- @param shape a shape, or a Layout
-- @param spec optional: the strides, cute.LayoutLeft (default) or cute.LayoutRight
-- @return a device tensor
-- @usage local a = cute.tensor(cute.f32, {128, 64})
function M.tensor(dt, shape, spec)
  dt = dtype.get(dt)
  local layout = layout_of(shape, spec, "cute.tensor")
  local _, cosize = check_static(layout, "cute.tensor")
  return new(runtime.alloc(cosize * dt.bytes), 0, dt, layout)
end

--- A tensor with t's dtype and layout (or another dtype).
-- @param t a device tensor
-- @param dt optional: the dtype (default t's)
-- @return a new device tensor
-- @usage local out = cute.empty_like(a)
function M.empty_like(t, dt) return M.tensor(dt or t.dtype, t.layout) end

--- A tensor over device memory the caller owns: ptr is a device address (a
-- number, FFI pointer or integer, or a light userdata from C).
-- @param ptr the device address
-- @param dt the dtype
-- @param shape a shape, or a Layout
-- @param spec optional: the strides, LayoutLeft or LayoutRight
-- @return a device tensor that does not own its memory
-- @usage local t = cute.from_ptr(dev_ptr, cute.f16, {m, k}, cute.LayoutRight)
function M.from_ptr(ptr, dt, shape, spec)
  dt = dtype.get(dt)
  local layout = layout_of(shape, spec, "cute.from_ptr")
  local _, cosize = check_static(layout, "cute.from_ptr")
  return new(runtime.wrap(ptr, cosize * dt.bytes), 0, dt, layout)
end

--- A tensor that has a dtype, a layout and an alignment but no memory: for
-- compiling kernels without a GPU (cute.compile) or for describing arguments.
-- @param dt the dtype
-- @param shape a shape, or a Layout
-- @param spec optional: the strides, LayoutLeft or LayoutRight
-- @param opts optional: {align = bytes} (default 16)
-- @return a device tensor without memory
-- @usage k:compile(cute.fake_tensor(cute.f32, {1024}))
function M.fake_tensor(dt, shape, spec, opts)
  dt = dtype.get(dt)
  local layout = layout_of(shape, spec, "cute.fake_tensor")
  local align = opts and opts.align or 16
  return setmetatable({ fake = true, dtype = dt, layout = layout, align = align, offset = 0, _ptr = 0,
    _align = align, _sl = leaves(L.shape(layout)), _dl = leaves(L.stride(layout)) }, DeviceTensor)
end

-- ---------------------------------------------------------------------------
-- Queries

--- The device address of the first element (a uint64_t); a fake tensor has none.
-- @return a uint64_t cdata
-- @usage local p = t:data_ptr()
function methods:data_ptr()
  if self.fake then err.raise("a fake tensor has no memory") end
  return self._ptr
end

--- The number of elements.
-- @return an integer
-- @usage local n = t:size()
function methods:size() return L.size(self.layout) end
--- The extent of the memory the layout addresses, in elements.
-- @return an integer
-- @usage local n = t:cosize()
function methods:cosize() return L.cosize(self.layout) end
--- The extent of the memory the layout addresses, in bytes.
-- @return an integer
-- @usage local bytes = t:nbytes()
function methods:nbytes() return L.cosize(self.layout) * self.dtype.bytes end

--- The largest power of two (up to 16) dividing the data address.
-- @return 1, 2, 4, 8 or 16
-- @usage assert(t:alignment() == 16)
function methods:alignment() return self._align end

--- Frees the tensor's memory now (rather than when it is collected).
-- @usage t:free()
function methods:free()
  if self.buffer then self.buffer:free() end
end

--- Whether the tensor can still be used (fake, or its memory not freed).
-- @return a boolean
-- @usage assert(t:valid())
function methods:valid() return self.fake or self.buffer:valid() end

DeviceTensor.__tostring = function(t)
  return string.format("cute.tensor(%s, %s%s)", t.dtype.name, tostring(t.layout), t.fake and ", fake" or "")
end

DeviceTensor.__len = function(t) return L.size(t.layout) end

-- ---------------------------------------------------------------------------
-- Host views: a host tensor is a copy of the elements in an FFI array, with
-- the same layout. h[i], h[{i, j}] read decoded numbers.

local HostTensor = { __name = "HostTensor" }
local host_methods = {}
M.HostTensor = HostTensor

local function decode(dt, data, off)
  if dt.storage == "float" or dt.storage == "double" or (dt.is_integer and dt.bytes <= 4) or dt.name == "bool" then
    return tonumber(data[off])
  end
  if dt.is_integer then return tonumber(data[off]) end -- 64-bit: exact below 2^53
  local d = ffi.new("double[1]")
  rt.to_doubles(d, data + off, dt.code, 1)
  return d[0]
end

HostTensor.__index = function(h, k)
  local m = host_methods[k]
  if m then return m end
  if type(k) == "number" then
    -- (a layout maps an index past its size to an offset past its span: checked here)
    local n = L.size(h.layout)
    if k < 0 or k >= n or k % 1 ~= 0 then
      err.raise("host tensor: index %s is outside its %d elements (0 to %d)", tostring(k), n, n - 1)
    end
    return decode(h.dtype, h.data, h.layout(k))
  end
  if type(k) == "table" then return decode(h.dtype, h.data, h.layout(k)) end
  return nil
end

HostTensor.__newindex = function(_, k)
  err.raise("host tensor: h[%s] = ... : a host tensor is a read-only copy of the device's elements; write the "
    .. "device tensor (t:copy_from, t:fill) instead", tostring(k))
end

HostTensor.__len = function(h) return L.size(h.layout) end

--- All elements as a flat Lua table, in coordinate order.
-- @return a Lua table of numbers
-- @usage local values = t:to_host():to_table()
function host_methods:to_table()
  local n = L.size(self.layout)
  local out = {}
  for i = 0, n - 1 do out[i + 1] = decode(self.dtype, self.data, self.layout(i)) end
  return out
end

--- All elements as doubles (an FFI array of size(), coordinate order).
-- @return a double[?] cdata
-- @usage local d = t:to_host():doubles()
function host_methods:doubles()
  local n = L.size(self.layout)
  local out = host_array("double", n)
  if is_identity(self.layout) then
    rt.to_doubles(out, self.data, self.dtype.code, n)
  else
    -- convert the span in bulk, then gather in coordinate order
    local cosize = L.cosize(self.layout)
    local span = host_array("double", cosize)
    rt.to_doubles(span, self.data, self.dtype.code, cosize)
    each_offset(self.layout, function(i, off) out[i] = span[off] end)
  end
  return out
end

--- The elements as float64 without gathering them: (get, n), get(i) the i-th
-- element in coordinate order (0-based), read from the span converted once.
-- For checks that read a fraction of a large tensor (doubles() would copy all).
-- @return a function(i) -> number, the number of elements, the span (a
-- double[cosize] cdata) and offset(i), element i's index in it
-- @usage local get, n = t:to_host():lazy_doubles()
function host_methods:lazy_doubles()
  local n = L.size(self.layout)
  local cosize = L.cosize(self.layout)
  local span = host_array("double", cosize)
  rt.to_doubles(span, self.data, self.dtype.code, cosize)
  if is_identity(self.layout) then return function(i) return span[i] end, n, span, function(i) return i end end
  local s, d = live_modes(self.layout)
  local r = #s
  local function offset(i)
    local off = 0
    for k = 1, r do
      local sk = s[k]
      local c = i % sk
      off = off + c * d[k]
      i = (i - c) / sk
    end
    return off
  end
  return function(i) return span[offset(i)] end, n, span, offset
end

--- Copies the device tensor's memory into a host tensor.
-- @return a host tensor (index it with h[{i, j}], or h:to_table())
-- @usage local h = t:to_host()
function methods:to_host()
  local cosize = L.cosize(self.layout)
  local data = host_array(self.dtype.storage, cosize)
  self.buffer:copy_to_host(data, cosize * self.dtype.bytes, self.offset)
  return setmetatable({ data = data, dtype = self.dtype, layout = self.layout }, HostTensor)
end

--- The elements as a flat Lua table, in coordinate order.
-- @return a Lua table of numbers
-- @usage local values = t:to_table()
function methods:to_table() return self:to_host():to_table() end

--- A host tensor: dtype dt, a shape (with an optional layout spec, as
-- cute.tensor) or a Layout, its elements in an FFI array of cosize storage
-- elements: `data` when given (kept alive by the tensor, not copied), else a
-- new one (zeroed below 256 MiB, like every host array here).
-- @param dt the dtype
-- @param shape a shape (IntTuple) or a Layout
-- @param spec optional: a layout spec ("row", "col" or strides), as cute.tensor
-- @param data optional: an FFI array holding the elements (kept alive, not copied)
-- @return a host tensor
-- @usage local h = cute.host_tensor(cute.f32, {4, 8}, "row")
function M.host_tensor(dt, shape, spec, data)
  dt = dtype.get(dt)
  local layout = layout_of(shape, spec, "cute.host_tensor")
  local _, cosize = check_static(layout, "cute.host_tensor")
  if data ~= nil and type(data) ~= "cdata" then
    err.raise("cute.host_tensor: data must be an FFI array or pointer, got %s", type(data))
  end
  if data ~= nil then err.check_host_ptr(data, "cute.host_tensor") end
  local anchor = data
  data = data and ffi.cast(dt.storage_ptr, data) or host_array(dt.storage, cosize)
  return setmetatable({ data = data, dtype = dt, layout = layout, _anchor = anchor }, HostTensor)
end

--- A device tensor with the host tensor's dtype, layout and storage (a copy).
-- @return a new device tensor
-- @usage local d = h:to_device()
function host_methods:to_device()
  local t = M.tensor(self.dtype, self.layout)
  t.buffer:copy_from_host(self.data, L.cosize(self.layout) * self.dtype.bytes, t.offset)
  return t
end

--- A DLPack managed tensor (kDLCPU) over this host tensor: cute.dlpack.to_dlpack.
-- @param opts optional: {versioned = true} for a DLManagedTensorVersioned
-- @return an FFI pointer to the managed tensor (the consumer calls its deleter)
-- @usage local dl = h:to_dlpack()
function host_methods:to_dlpack(opts) return require("cute.dlpack").to_dlpack(self, opts) end

HostTensor.__tostring = function(h)
  return string.format("cute.host_tensor(%s, %s)", h.dtype.name, tostring(h.layout))
end

-- ---------------------------------------------------------------------------
-- Writing from the host

-- Stages n values (a function i -> number for i in 0..n-1) and uploads them
-- to the elements of the tensor (through a read-modify-write of the span when
-- the layout has holes).
local function upload(t, n, value_at)
  local dt = t.dtype
  local cosize = L.cosize(t.layout)
  local staging = host_array(dt.storage, cosize)
  local compact = is_identity(t.layout)
  if not compact and not is_dense(t.layout) then t.buffer:copy_to_host(staging, cosize * dt.bytes, t.offset) end
  local vals = host_array("double", n)
  for i = 0, n - 1 do vals[i] = value_at(i) end
  if compact then
    local bad = rt.from_doubles(staging, dt.code, vals, n)
    if bad ~= 0 then
      err.raise("the value %s at index %d does not fit %s", tostring(vals[tonumber(bad) - 1]), tonumber(bad) - 1,
        dt.name)
    end
  else
    each_offset(t.layout, function(i, off)
      local bad = rt.from_doubles(staging + off, dt.code, vals + i, 1)
      if bad ~= 0 then err.raise("the value %s at index %d does not fit %s", tostring(vals[i]), i, dt.name) end
    end)
  end
  t.buffer:copy_from_host(staging, cosize * dt.bytes, t.offset)
end

--- Copies elements in: a flat Lua table (coordinate order), a nested rank-2
-- table (t[i][j] is element (i-1, j-1)), another device tensor (same dtype
-- and layout: a device copy), or an FFI pointer to the raw storage
-- (cosize elements).
-- @param src a Lua table, a device tensor or an FFI pointer
-- @return the tensor (for chaining)
-- @usage a:copy_from({1, 2, 3, 4})
function methods:copy_from(src)
  local n = L.size(self.layout)
  if is_device_tensor(src) then
    if src.dtype ~= self.dtype or src:size() ~= n then
      err.raise("copy_from: %s into %s needs the same dtype and size", tostring(src), tostring(self))
    end
    if tostring(src.layout) ~= tostring(self.layout) then
      err.raise("copy_from: device copies need the same layout (%s vs %s); copy through the host or a kernel",
        tostring(src.layout), tostring(self.layout))
    end
    self.buffer:copy_from(src.buffer, self:nbytes(), self.offset, src.offset)
    return self
  end
  if type(src) == "cdata" then
    self.buffer:copy_from_host(src, self:nbytes(), self.offset)
    return self
  end
  if type(src) ~= "table" then err.raise("copy_from: expected a table, tensor or FFI pointer, got %s", type(src)) end
  if type(src[1]) == "table" then
    local shape = L.shape(self.layout)
    if type(shape) ~= "table" or #shape ~= 2 then
      err.raise("copy_from: a nested table fills a rank-2 tensor, not %s", tostring(self.layout))
    end
    local m = shape[1]
    upload(self, n, function(i)
      local row = src[i % m + 1]
      local v = row and row[math.floor(i / m) + 1]
      if type(v) ~= "number" then err.raise("copy_from: element (%d, %d) is missing", i % m, math.floor(i / m)) end
      return v
    end)
    return self
  end
  if #src ~= n then err.raise("copy_from: %d values for a tensor of %d elements", #src, n) end
  upload(self, n, function(i)
    local v = src[i + 1]
    if type(v) == "boolean" then v = v and 1 or 0 end
    if type(v) ~= "number" then err.raise("copy_from: element %d is a %s", i + 1, type(v)) end
    return v
  end)
  return self
end

--- Copies the raw storage (cosize elements) into an FFI pointer.
-- @param dst an FFI pointer with room for cosize elements
-- @return dst
-- @usage t:copy_to(ffi.new("float[?]", t:cosize()))
function methods:copy_to(dst)
  if type(dst) ~= "cdata" then err.raise("copy_to: expected an FFI pointer, got %s", type(dst)) end
  self.buffer:copy_to_host(dst, self:nbytes(), self.offset)
  return dst
end

--- Sets every element to v.
-- @param v a Lua number (or a boolean, for a bool tensor)
-- @return the tensor (for chaining)
-- @usage t:fill(0)
function methods:fill(v)
  local n = L.size(self.layout)
  if type(v) == "boolean" and self.dtype.kind == "bool" then v = v and 1 or 0 end
  if type(v) ~= "number" then
    err.raise("fill: expected a number%s, got %s", self.dtype.kind == "bool" and " or a boolean" or "",
      type(v) == "boolean" and ("the boolean " .. tostring(v) .. " (for a " .. self.dtype.name .. " tensor)")
        or type(v))
  end
  if L.cosize(self.layout) == n and is_dense(self.layout) then
    local cell = ffi.new(self.dtype.storage_array, 1)
    local bad = rt.from_doubles(cell, self.dtype.code, ffi.new("double[1]", v), 1)
    if bad ~= 0 then err.raise("fill: %s does not fit %s", tostring(v), self.dtype.name) end
    local bits = ffi.new("uint64_t[1]")
    ffi.copy(bits, cell, self.dtype.bytes)
    self.buffer:memset(bits[0], self.dtype.bytes, n, self.offset)
    return self
  end
  upload(self, n, function() return v end)
  return self
end

-- Fills of many elements run on the device (cute.lib.fill): the same values
-- as the host's generator, element i of the coordinate order a function of
-- (seed, i), without staging the tensor through host memory. Small tensors,
-- layouts that are not a permutation of their span, and bool stay on the host.
local DEVICE_FILL_MIN = 65536

-- The device fill: a kernel of cute.lib, a layer above this module, which
-- the `cute` namespace plugs in (set_device_fill) when this module loads.
local fill_launch = nil

--- Installs fn(t, mode, a, b, seed) as the fill of large tensors on the
-- device (cute.lib.fill.launch; `require "cute"` installs it, and without it
-- every fill runs on the host). Returns the function it replaces.
function M.set_device_fill(fn)
  local old = fill_launch
  fill_launch = fn
  return old
end

local function device_fill(t)
  if not fill_launch or t.buffer.device == "sim" then return false end
  local n = L.size(t.layout)
  return n >= DEVICE_FILL_MIN and t.dtype.name ~= "bool" and L.cosize(t.layout) == n and is_dense(t.layout)
end

local function flat_view(t)
  if is_identity(t.layout) then return new(t.buffer, t.offset, t.dtype, L.make_layout(L.size(t.layout))) end
  return t
end

-- Integer fills whose values the dtype does not hold are refused before either
-- path runs, so that the device's kernel (which would saturate) and the host's
-- encoding (which refuses) agree. iota: the first index i < n whose value
-- start + i step is not an integer of dt, or nil.
local function iota_misfit(dt, n, start, step)
  if n == 0 then return nil end
  if not dtype.fits(dt, start) then return 0 end
  if n == 1 then return nil end
  if step ~= math.floor(step) then return 1 end -- (NaN too: start + step is no integer)
  if dtype.fits(dt, start + (n - 1) * step) then return nil end
  -- the values are monotonic: the first past the end they run towards
  if step > 0 then return math.floor((dt.hi - 1 - start) / step) + 1 end
  return math.floor((dt.lo - start) / step) + 1
end

-- uniform on an integer dtype: values floor(v), v in [lo, hi): from floor(lo) to
-- ceil(hi) - 1 (lo when hi <= lo), every one a value of dt; normal: no integer dtype.
local function check_random(dt, normal, lo, hi, seed)
  local what = normal and "normal" or "uniform"
  if type(lo) ~= "number" or type(hi) ~= "number" then
    err.raise("%s: the %s must be numbers, got %s and %s", what, normal and "mean and std" or "bounds", type(lo),
      type(hi))
  end
  if lo ~= lo or hi ~= hi or math.abs(lo) == math.huge or math.abs(hi) == math.huge then
    err.raise("%s: the %s must be finite, got %s and %s", what, normal and "mean and std" or "bounds", tostring(lo),
      tostring(hi))
  end
  if normal and hi < 0 then err.raise("normal: std must be 0 or more, got %s", tostring(hi)) end
  if not normal and lo > hi then
    err.raise("uniform: lo (%s) is above hi (%s); the values are in [lo, hi)", tostring(lo), tostring(hi))
  end
  if seed ~= nil and not ((type(seed) == "number" and seed >= 0 and seed % 1 == 0 and seed < 2 ^ 53)
      or (type(seed) == "cdata" and (ffi.istype("uint64_t", seed) or ffi.istype("int64_t", seed)))) then
    err.raise("%s: the seed must be a whole number from 0 (or a 64-bit integer), got %s", what, tostring(seed))
  end
  if not dt.is_integer then return end
  if normal then
    err.raise("normal: %s is an integer dtype and normal values are not integers: fill a float tensor "
      .. "(and convert it), or use uniform(lo, hi) for integers", dt.name)
  end
  local first, last = math.floor(lo), math.max(math.ceil(hi) - 1, math.floor(lo))
  if not (dtype.fits(dt, first) and dtype.fits(dt, last)) then
    err.raise("uniform: integers in [%s, %s) do not fit %s (integers %s)", tostring(lo), tostring(hi), dt.name,
      dtype.range_text(dt))
  end
end

--- Element i (coordinate order) = start + i * step. On an integer dtype every
-- value must be one the dtype holds (an error names the first that is not).
-- @param start optional: the first value (default 0)
-- @param step optional: the difference (default 1)
-- @return the tensor (for chaining)
-- @usage t:iota()
function methods:iota(start, step)
  start, step = start or 0, step or 1
  if type(start) ~= "number" or type(step) ~= "number" then
    err.raise("iota: start and step must be numbers, got %s and %s", type(start), type(step))
  end
  local dt = self.dtype
  if dt.is_integer then
    local bad = iota_misfit(dt, L.size(self.layout), start, step)
    if bad then
      err.raise("iota: the value %s at index %d does not fit %s (integers %s)", tostring(start + bad * step), bad,
        dt.name, dtype.range_text(dt))
    end
  end
  if device_fill(self) then
    fill_launch(flat_view(self), "iota", start, step)
    return self
  end
  upload(self, L.size(self.layout), function(i) return start + i * step end)
  return self
end

local seed_counter = 0
local function next_seed(seed)
  if seed then return seed end
  seed_counter = seed_counter + 1
  return seed_counter
end

local function random_fill(t, normal, a, b, seed)
  local n = L.size(t.layout)
  local dt = t.dtype
  check_random(dt, normal, a, b, seed)
  seed = next_seed(seed)
  if device_fill(t) then
    fill_launch(flat_view(t), normal and "normal" or "uniform", a, b, seed)
    return t
  end
  if is_identity(t.layout) then
    local staging = host_array(dt.storage, n)
    rt.host_random(staging, dt.code, n, normal and 1 or 0, a, b, seed)
    t.buffer:copy_from_host(staging, n * dt.bytes, t.offset)
    return t
  end
  local vals = host_array("double", n)
  rt.host_random(vals, dtype.f64.code, n, normal and 1 or 0, a, b, seed)
  local floor = dt.is_integer and not normal -- integers uniform in [a, b), as the direct path
  upload(t, n, function(i) return floor and math.floor(vals[i]) or vals[i] end)
  return t
end

--- Uniform random values in [lo, hi) (default [0, 1)); integers: in [lo, hi)
-- (floored), every one a value of the dtype (else an error).
-- A seed makes them reproducible; without one each call draws anew.
-- @param lo optional: the lower bound (default 0)
-- @param hi optional: the upper bound (default 1)
-- @param seed optional: an integer seed
-- @return the tensor (for chaining)
-- @usage t:uniform(-1, 1, 42)
function methods:uniform(lo, hi, seed) return random_fill(self, false, lo or 0, hi or 1, seed) end

--- Normal random values (mean, std: default 0, 1); float dtypes only.
-- @param mean optional: default 0
-- @param std optional: the standard deviation, default 1
-- @param seed optional: an integer seed
-- @return the tensor (for chaining)
-- @usage t:normal(0, 0.02, 7)
function methods:normal(mean, std, seed) return random_fill(self, true, mean or 0, std or 1, seed) end

-- ---------------------------------------------------------------------------
-- Views and files

--- A DLPack managed tensor (kDLCUDA) over this tensor: cute.dlpack.to_dlpack.
-- @param opts optional: {versioned = true} for a DLManagedTensorVersioned
-- @return an FFI pointer to the managed tensor (the consumer calls its deleter)
-- @usage local dl = t:to_dlpack()
function methods:to_dlpack(opts) return require("cute.dlpack").to_dlpack(self, opts) end

--- The same memory seen through another layout (its cosize must fit).
-- @param layout_or_shape a Layout or shape
-- @param spec optional: the strides, LayoutLeft or LayoutRight (with a shape)
-- @return a device tensor sharing t's memory
-- @usage local flat = t:view({t:size()})
function methods:view(layout_or_shape, spec)
  local layout = layout_of(layout_or_shape, spec, "view")
  local _, cosize = check_static(layout, "view")
  if cosize > self:cosize() then
    err.raise("view: layout %s needs %d elements; the tensor has %d", tostring(layout), cosize, self:cosize())
  end
  return new(self.buffer, self.offset, self.dtype, layout)
end

--- Writes the raw storage (cosize elements, native byte order) to a file.
-- @param path the file's path
-- @return the tensor (for chaining)
-- @usage t:write_file("a.bin")
function methods:write_file(path)
  local f, e = io.open(path, "wb")
  if not f then err.raise("write_file: %s", e) end
  local data = host_array(self.dtype.storage, self:cosize())
  self:copy_to(data)
  f:write(ffi.string(data, self:nbytes()))
  f:close()
  return self
end

--- Reads the raw storage (cosize elements) from a file written by write_file
-- (or any file of exactly that many bytes).
-- @param path the file's path
-- @return the tensor (for chaining)
-- @usage t:read_file("a.bin")
function methods:read_file(path)
  local f, e = io.open(path, "rb")
  if not f then err.raise("read_file: %s", e) end
  local s = f:read("*a")
  f:close()
  if #s ~= self:nbytes() then
    err.raise("read_file: %s has %d bytes; the tensor needs %d", path, #s, self:nbytes())
  end
  self.buffer:copy_from_host(s, #s, self.offset)
  return self
end

--- What the modules above (cute.npy, cute.dlpack) use; not for users.
M.internal = {
  host_array = host_array, -- host_array(ctype, n): an FFI array of n elements (malloc'd from 256 MiB)
  each_offset = each_offset, -- each_offset(layout, fn): fn(i, offset) in coordinate order
  leaves = leaves, -- leaves(int_tuple): its leaves, in order
}

-- cute.tensor(dt, shape, spec) is M.tensor; the module stays reachable as cute.tensor.*
return setmetatable(M, { __call = function(_, ...) return M.tensor(...) end })
