-- cute.from_dlpack and t:to_dlpack: DLPack managed tensors made in Lua as
-- another library would make them (kDLCPU on the CPU, kDLCUDA on a GPU),
-- read through the layout their shape and strides give, and deleted exactly
-- once; cutelua's own exports read back; cute.stream_from_handle.
local cute = require "cute"
local ffi = require "ffi"
local dlpack = require "cute.dlpack"
local runtime = require "cute.runtime"

-- A producer: managed tensors over FFI arrays, with a deleter that counts.
local deleted = {}
local producer_deleter = ffi.cast("void (*)(CuteDLManagedTensor *)", function(m)
  local id = tonumber(ffi.cast("uintptr_t", m.manager_ctx))
  deleted[id] = (deleted[id] or 0) + 1
end)
local keep, next_id = {}, 0 -- luacheck: ignore 241 (keep: anchors the producer's memory)

local function managed(spec)
  next_id = next_id + 1
  local m = ffi.new("CuteDLManagedTensor")
  local ndim = #spec.shape
  local shape = ffi.new("int64_t[?]", math.max(ndim, 1), spec.shape)
  local strides = spec.strides and ffi.new("int64_t[?]", ndim, spec.strides) or nil
  m.dl_tensor.data = spec.data
  m.dl_tensor.device.device_type, m.dl_tensor.device.device_id = spec.device or 1, spec.device_id or 0
  m.dl_tensor.ndim = ndim
  m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes = spec.code, spec.bits, spec.lanes or 1
  m.dl_tensor.shape, m.dl_tensor.strides, m.dl_tensor.byte_offset = shape, strides, spec.byte_offset or 0
  m.manager_ctx = ffi.cast("void *", next_id)
  m.deleter = producer_deleter
  keep[next_id] = { m, shape, strides, spec.data } -- the producer's own memory
  return m, next_id
end

local function gc()
  collectgarbage()
  collectgarbage()
end

describe("cute.from_dlpack of host memory (kDLCPU)", function()
  it("reads elements through the producer's shape and strides, and deletes once when collected", function()
    local data = ffi.new("float[12]")
    for i = 0, 11 do data[i] = i * 1.5 end
    -- a 3 x 4 row-major array: element [i][j] at i * 4 + j
    local m, id = managed { data = data, shape = { 3, 4 }, strides = { 4, 1 }, code = 2, bits = 32 }
    local h = cute.from_dlpack(m)
    assert.equal("f32", h.dtype.name)
    assert.equal("(3,4):(4,1)", tostring(h.layout))
    for i = 0, 2 do
      for j = 0, 3 do assert.equal((i * 4 + j) * 1.5, h[{ i, j }]) end
    end
    assert.is_nil(deleted[id])
    h = nil -- luacheck: ignore 311
    gc()
    assert.equal(1, deleted[id])
    gc()
    assert.equal(1, deleted[id])
  end)

  it("takes NULL strides as row-major, a byte offset, 0-d tensors and every dtype it maps", function()
    local data = ffi.new("int16_t[8]", 0, 1, 2, 3, 4, 5, 6, 7)
    local h = cute.from_dlpack((managed { data = data, shape = { 2, 3 }, code = 0, bits = 16, byte_offset = 4 }))
    assert.equal("(2,3):(3,1)", tostring(h.layout))
    assert.same({ 2, 5, 3, 6, 4, 7 }, h:to_table())
    local z = cute.from_dlpack((managed { data = data, shape = {}, code = 1, bits = 16 }))
    assert.same({ 0 }, z:to_table())
    local MAP = { { 0, 8, "i8" }, { 0, 32, "i32" }, { 0, 64, "i64" }, { 1, 8, "u8" }, { 1, 32, "u32" },
      { 1, 64, "u64" }, { 2, 16, "f16" }, { 2, 64, "f64" }, { 4, 16, "bf16" }, { 6, 8, "bool" }, { 10, 8, "e4m3" },
      { 12, 8, "e5m2" } }
    local raw = ffi.new("uint64_t[1]")
    for _, e in ipairs(MAP) do
      local t = cute.from_dlpack((managed { data = raw, shape = { 1 }, code = e[1], bits = e[2] }))
      assert.equal(e[3], t.dtype.name)
    end
    -- a broadcast (stride 0) dimension
    local b = cute.from_dlpack((managed { data = data, shape = { 3, 2 }, strides = { 0, 1 }, code = 0, bits = 16 }))
    assert.same({ 0, 0, 0, 1, 1, 1 }, b:to_table())
  end)

  it("refuses what it cannot read and then takes nothing over", function()
    local data = ffi.new("float[4]")
    local cases = {
      { { data = data, shape = { 2 }, code = 5, bits = 64 }, "the DLPack dtype complex %(code 5%) of 64 bits" },
      { { data = data, shape = { 2 }, code = 2, bits = 32, lanes = 4 }, "vector dtypes %(lanes = 4%)" },
      { { data = data, shape = { 2 }, code = 2, bits = 32, device = 10 },
        "tensors on kDLROCM %(device type 10%) are not supported" },
      { { data = data, shape = { 2, 2 }, strides = { -2, 1 }, code = 2, bits = 32 },
        "dimension 0 has the negative stride %-2" },
      { { data = data, shape = { 2, 0 }, code = 2, bits = 32 }, "dimension 1 has extent 0" },
      { { data = nil, shape = { 2 }, code = 2, bits = 32 }, "the tensor's data pointer is NULL" },
    }
    for _, c in ipairs(cases) do
      local m, id = managed(c[1])
      assert.error_matches(function() cute.from_dlpack(m) end, "from_dlpack: " .. c[2])
      gc()
      assert.is_nil(deleted[id])
    end
    assert.error_matches(function() cute.from_dlpack(nil) end, "expected a pointer to a DLManagedTensor")
    assert.error_matches(function() cute.from_dlpack(ffi.cast("void *", 0)) end, "the DLManagedTensor pointer is NULL")
    -- small integers and pointers below the first page a process may map (they crashed it)
    assert.error_matches(function() cute.from_dlpack(5) end, "from_dlpack: 5 is not an address")
    assert.error_matches(function() cute.from_dlpack(ffi.cast("void *", 4096)) end,
      "from_dlpack: 4096 is not an address")
    local v = ffi.new("CuteDLManagedTensorVersioned")
    v.version.major = 2
    assert.error_matches(function() cute.from_dlpack(v, { versioned = true }) end,
      "DLPack version 2%.0; cutelua reads major version 1")
  end)
end)

describe("to_dlpack", function()
  it("describes a host tensor, keeps it alive until the consumer deletes it", function()
    local before = dlpack.live_exports()
    local h = cute.host_tensor(cute.bf16, cute.make_layout({ { 2, 3 }, 4 }, { { 1, 8 }, 2 }))
    local m = h:to_dlpack()
    assert.equal(before + 1, dlpack.live_exports())
    local dl = m.dl_tensor
    assert.equal(1, dl.device.device_type)
    assert.equal(3, dl.ndim)
    assert.same({ 4, 16, 1 }, { dl.dtype.code, dl.dtype.bits, dl.dtype.lanes })
    assert.same({ 2, 3, 4 }, { tonumber(dl.shape[0]), tonumber(dl.shape[1]), tonumber(dl.shape[2]) })
    assert.same({ 1, 8, 2 }, { tonumber(dl.strides[0]), tonumber(dl.strides[1]), tonumber(dl.strides[2]) })
    assert.equal(tonumber(ffi.cast("uintptr_t", h.data)), tonumber(ffi.cast("uintptr_t", dl.data)))
    h = nil -- luacheck: ignore 311
    gc()
    assert.equal(before + 1, dlpack.live_exports()) -- still held for the consumer
    m.deleter(m)
    assert.equal(before, dlpack.live_exports())
  end)

  it("writes DLPack 1.0 managed tensors with versioned = true", function()
    local h = cute.host_tensor(cute.i32, 5)
    local m = h:to_dlpack { versioned = true }
    assert.is_true(ffi.istype("CuteDLManagedTensorVersioned *", m))
    assert.same({ 1, 0, 0 }, { m.version.major, m.version.minor, tonumber(m.flags) })
    assert.same({ 0, 32, 1 }, { m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.ndim })
    local back = cute.from_dlpack(m, { versioned = true })
    back.data[3] = 42
    assert.equal(42, h[3]) -- the same memory
    local live = dlpack.live_exports()
    back = nil -- luacheck: ignore 311
    gc()
    assert.equal(live - 1, dlpack.live_exports()) -- from_dlpack's tensor called cutelua's deleter
  end)

  it("round-trips through from_dlpack, sharing memory, deleting once", function()
    local h = cute.host_tensor(cute.f64, { 3, 2 }, "row")
    for i = 0, 5 do h.data[i] = i + 0.25 end
    local live = dlpack.live_exports()
    local m = h:to_dlpack()
    local back = cute.from_dlpack(tonumber(ffi.cast("uintptr_t", m))) -- the address as a number
    assert.equal(tostring(h.layout), tostring(back.layout))
    assert.same(h:to_table(), back:to_table())
    back = nil -- luacheck: ignore 311
    gc()
    assert.equal(live, dlpack.live_exports())
  end)

  it("refuses fake tensors", function()
    assert.error_matches(function() cute.fake_tensor(cute.f32, 4):to_dlpack() end,
      "to_dlpack: a fake tensor has no memory")
  end)
end)

describe("cute.stream_from_handle", function()
  it("wraps a handle for launches, and never destroys it", function()
    local s = cute.stream_from_handle(ffi.cast("void *", 0x1234))
    assert.equal(0x1234, tonumber(ffi.cast("uintptr_t", s.handle)))
    local cfg = ffi.new("RtLaunch")
    runtime.internal.fill_launch({ grid = 1, block = 32, stream = s }, cfg)
    assert.equal(0x1234, tonumber(ffi.cast("uintptr_t", cfg.stream)))
    assert.equal(0x99, tonumber(ffi.cast("uintptr_t", cute.stream_from_handle(0x99).handle)))
    s:free() -- nothing reaches the driver: the handle is not cutelua's
    assert.equal(1, s.released)
    assert.error_matches(function() s:synchronize() end, "this stream was destroyed")
    assert.error_matches(function() cute.stream_from_handle("s") end,
      "stream_from_handle: expected a CUstream handle %(a pointer, light userdata or number%), got string")
  end)

  it("launches on another owner's stream, which outlives the wrapper #gpu", function()
    local s0 = cute.stream_from_handle(0) -- the default stream, usable at once
    s0:synchronize()
    local owner = cute.stream()
    local s = cute.stream_from_handle(owner.handle)
    local k = cute.kernel(function(a) a[cute.thread_idx().x] = cute.thread_idx().x:to(cute.f32) end)
    local a = cute.tensor(cute.f32, 64)
    k { grid = 1, block = 64, stream = s }(a)
    s:synchronize()
    s:free()
    s = nil -- luacheck: ignore 311
    gc()
    k { grid = 1, block = 64, stream = owner }(a) -- the owner's stream still works
    owner:synchronize()
    assert.equal(63, a:to_table()[64])
  end)
end)

describe("DLPack device tensors", function()
  it("imports device memory another owner allocated and deletes once on free #gpu", function()
    local buf = cute.alloc(4 * 64)
    local m, id = managed { data = ffi.cast("void *", buf.ptr), shape = { 8, 8 }, strides = { 1, 8 }, code = 2,
      bits = 32, device = 2, device_id = cute.current_device() }
    local t = cute.from_dlpack(m)
    assert.is_true(cute.tensor.is_device_tensor(t))
    t:iota()
    local v = t:view(cute.make_layout(64))
    assert.same(t:to_table(), v:to_table())
    v:free() -- a view frees the memory it shares: the deleter runs
    assert.equal(1, deleted[id])
    t:free()
    gc()
    assert.equal(1, deleted[id])
    local other = managed { data = ffi.cast("void *", buf.ptr), shape = { 2 }, code = 2, bits = 32, device = 2,
      device_id = cute.current_device() + 1 }
    assert.error_matches(function() cute.from_dlpack(other) end, "the tensor is on CUDA device 1")
  end)

  it("exports device tensors as kDLCUDA and reads them back #gpu", function()
    local t = cute.tensor(cute.f16, { 16, 4 }, "row"):uniform(-1, 1, 5)
    local m = t:to_dlpack()
    assert.equal(2, m.dl_tensor.device.device_type)
    assert.equal(tonumber(t:data_ptr()), tonumber(ffi.cast("uintptr_t", m.dl_tensor.data)))
    local live = dlpack.live_exports()
    local back = cute.from_dlpack(m)
    assert.same(t:to_table(), back:to_table())
    back:free()
    assert.equal(live - 1, dlpack.live_exports())
  end)
end)
