--- cute.runtime: devices, device memory, modules, launches, streams, events.
--
-- A thin layer over the C runtime (src/rt, reached through the FFI). Every
-- failure raises a Lua error at the caller's line naming the driver call, the
-- kernel and the CUDA error. A kernel fault (illegal address, trap, failed
-- assertion) is fatal to the GPU for the rest of the process: the CUDA driver
-- refuses all further work (see src/rt/rt.h for what was measured), so every
-- later call raises at once saying so; a new process starts clean (the REPL
-- restarts itself).
--
-- Handles are FFI structs with methods and a GC finalizer; `:free()` releases
-- at once. Both are safe in any order, any number of times.
local ffi = require "ffi"
local rt = require("cute._c").rt
local err = require "cute._err"
local dtype = require "cute.dtype"

local M = {}

local function last_error() return ffi.string(rt.last_error()) end

--- Raises the runtime's last error when rc is not 0 (what: a prefix naming the operation).
local function check(rc, what)
  if rc ~= 0 then
    if what then err.raise("%s: %s", what, last_error()) end
    err.raise("%s", last_error())
  end
end

-- ---------------------------------------------------------------------------
-- Devices

--- True when a CUDA driver and a GPU are usable; else false and the reason.
-- @return true, or false and the reason (a string)
-- @usage if cute.gpu_available() then ... end
function M.gpu_available()
  if rt.available() == 1 then return true end
  return false, last_error()
end

--- The number of CUDA devices.
-- @return an integer (an error when no driver is usable: check cute.gpu_available first)
-- @usage for d = 0, cute.device_count() - 1 do print(cute.device_info(d).name) end
function M.device_count()
  local n = ffi.new("int32_t[1]")
  check(rt.device_count(n))
  return n[0]
end

-- The current device, mirrored here for the launch path: an ordinal, or
-- "sim" for the CPU simulator (docs/simulator.md: tensors in host memory,
-- kernels run on the CPU); CUTELUA_DEVICE=sim starts with it.
local current = os.getenv("CUTELUA_DEVICE") == "sim" and "sim" or 0
local sim_mem -- cute.sim.memory, loaded when the simulator is first used
local function sim()
  sim_mem = sim_mem or require "cute.sim.memory"
  return sim_mem
end

--- Makes device `ordinal` (0-based) current: new memory, modules and launches go there;
-- "sim" makes the CPU simulator current (docs/simulator.md); with "sim",
-- opts.arch = "sm_80" (default) or "sm_90a" chooses the simulated architecture.
-- @param ordinal the device, 0-based, or "sim"
-- @param opts optional, with "sim": {arch = "sm_80" | "sm_90a"}
-- @usage cute.set_device(1); cute.set_device("sim", {arch = "sm_90a"})
function M.set_device(ordinal, opts)
  if ordinal == "sim" and opts ~= nil then
    if type(opts) ~= "table" then
      err.raise("cute.set_device(\"sim\", opts): opts must be a table, e.g. {arch = \"sm_90a\"}")
    end
    if opts.arch ~= nil then sim().set_arch(opts.arch) end
  end
  -- back from the simulator to device 0 on a machine without a GPU: the state a process starts in
  if ordinal ~= "sim" and not (ordinal == 0 and current == "sim" and rt.available() ~= 1) then
    check(rt.set_device(ordinal), "set_device")
  end
  current = ordinal
end

--- True when the current device is the CPU simulator.
-- @return true or false
-- @usage if cute.is_sim() then print("on the CPU simulator") end
function M.is_sim() return current == "sim" end

--- The current device's ordinal (0-based), or "sim" on the CPU simulator.
-- @return an integer or "sim"
-- @usage local d = cute.current_device()
function M.current_device() return current end

local info_cache = {}

-- The target a GPU of compute capability cc (major*10 + minor) is compiled
-- for: the "a" row of exactly that cc, else the nearest plain row of its
-- major (src/target); "sm_<cc>" when the table has none.
local function target_for_cc(cc)
  local T = require("cute._c").target
  local i = T.for_cc(cc)
  if i < 0 then return "sm_" .. cc end
  local info = ffi.new("ClTargetInfo")
  T.info(i, info)
  return ffi.string(info.name)
end

--- A table describing device `ordinal` (default: the current one): name,
-- compute capability, SMs, memory, L2, shared memory limits, clocks, versions.
-- @param ordinal optional: the device, 0-based (default the current one)
-- @return a table (name, cc, sms, memory, ...)
-- @usage print(cute.device_info().name)
function M.device_info(ordinal)
  ordinal = ordinal or M.current_device()
  if ordinal == "sim" then return sim().device_info() end
  local cached = info_cache[ordinal]
  if cached then return cached end
  local p = ffi.new("RtDeviceInfo")
  check(rt.device_info(ordinal, p), "device_info")
  local function ver(v) return string.format("%d.%d", math.floor(v / 1000), math.floor(v % 1000 / 10)) end
  local cc = p.cc_major * 10 + p.cc_minor
  local info = {
    ordinal = ordinal,
    name = ffi.string(p.name),
    compute_capability = { p.cc_major, p.cc_minor },
    arch = target_for_cc(cc), -- the target the compiler picks for it (src/target)
    sm_count = p.sm_count,
    total_memory = tonumber(p.total_mem),
    l2_bytes = p.l2_bytes,
    max_threads_per_block = p.max_threads_per_block,
    max_threads_per_sm = p.max_threads_per_sm,
    warp_size = p.warp_size,
    registers_per_block = p.regs_per_block,
    registers_per_sm = p.regs_per_sm,
    smem_per_block = p.smem_per_block,
    smem_per_block_optin = p.smem_per_block_optin,
    smem_per_sm = p.smem_per_sm,
    clock_mhz = p.clock_khz / 1000,
    memory_clock_mhz = p.mem_clock_khz / 1000,
    memory_bus_bits = p.mem_bus_bits,
    max_grid = { p.max_grid[0], p.max_grid[1], p.max_grid[2] },
    max_block = { p.max_block[0], p.max_block[1], p.max_block[2] },
    cluster_launch = p.cluster_launch ~= 0,
    driver_version = ver(p.driver_version),
    cuda_version = ver(p.cuda_headers_version),
  }
  info_cache[ordinal] = info
  return info
end

--- Waits for all work on the current device. A kernel fault found here raises.
-- @usage cute.synchronize()
function M.synchronize()
  if current == "sim" then return end
  check(rt.synchronize())
end

--- With on = true, every launch waits for its kernel, so a fault names the
-- kernel that caused it (slow; for debugging).
-- @param on a boolean
-- @usage cute.set_sync_launches(true)
function M.set_sync_launches(on) rt.set_sync_launches(on and 1 or 0) end

--- Free and total bytes of the current device's memory.
-- @return the free and the total bytes of device memory
-- @usage local free, total = cute.mem_info()
function M.mem_info()
  local f, t = ffi.new("uint64_t[1]"), ffi.new("uint64_t[1]")
  check(rt.mem_info(f, t))
  return tonumber(f[0]), tonumber(t[0])
end

--- The generation of a device's CUDA context (moves on with reset_device).
-- @param ordinal optional: the device (default the current one)
-- @return an integer
-- @usage local g = cute.generation()
function M.generation(ordinal) return rt.generation(ordinal or M.current_device()) end

--- Frees everything made on the device (cudaDeviceReset). Tensors, modules,
-- streams and events made before are refused afterwards, with a message.
-- @param ordinal optional: the device (default the current one)
-- @usage cute.reset_device()
function M.reset_device(ordinal)
  check(rt.reset_device(ordinal or M.current_device()), "reset_device")
end

--- True when a kernel fault made a device (default: any) unusable in this process.
-- @param ordinal optional: the device (default any)
-- @return a boolean
-- @usage if cute.device_lost() then cute.reset_device() end
function M.device_lost(ordinal) return rt.device_lost(ordinal or -1) == 1 end

-- ---------------------------------------------------------------------------
-- Device memory (raw); cute.tensor builds typed tensors on it

local Buffer = {}
Buffer.__index = Buffer

-- Buffers over memory whose owner wants to know when cutelua is done with it
-- (cute.from_dlpack): buffer -> function, called once, by :free() or the GC.
local on_release = setmetatable({}, { __mode = "k" })

--- Frees the buffer now (rather than when it is collected); it is invalid afterwards.
-- @usage buf:free()
function Buffer:free()
  rt.buffer_release(self)
  ffi.gc(self, nil)
  local f = on_release[self]
  if f then
    on_release[self] = nil
    f()
  end
end

-- Calls fn() once when the buffer is freed (:free()) or collected.
local function set_on_release(buf, fn)
  on_release[buf] = fn
  ffi.gc(buf, function(b)
    rt.buffer_release(b)
    fn()
  end)
end

-- The CUstream of a stream argument (nil: the default stream): a cute.stream()
-- or a cute.stream_from_handle(...); anything else raises, naming `what` (a
-- string, a table or a number would otherwise reach the default stream, or
-- fail as a Lua error).
local function stream_handle(stream, what)
  if stream == nil then return nil end
  if type(stream) == "cdata" and ffi.istype("RtStream", stream) then return stream.handle end
  if type(stream) == "table" and stream.sim then
    err.raise("%s: a stream of the CPU simulator, on a GPU's call (make it with cute.stream() on the device)", what)
  end
  err.raise("%s: stream must be a cute.stream() or a cute.stream_from_handle(handle), got %s", what,
    type(stream) == "string" and string.format("the string %q", stream) or type(stream))
end

local host_ptr = err.check_host_ptr -- (NULL and the first page refused)

--- Copies `bytes` from host memory `src` (a pointer) to this buffer at `offset`.
-- @param src a host pointer (FFI cdata)
-- @param bytes the number of bytes
-- @param offset optional: the byte offset in the buffer (default 0)
-- @param stream optional: a cute.Stream (default the default stream, synchronous)
-- @usage buf:copy_from_host(ffi.new("float[256]"), 1024)
function Buffer:copy_from_host(src, bytes, offset, stream)
  local what = "copy to device"
  check(rt.copy_htod(self, offset or 0, host_ptr(src, what), bytes, stream_handle(stream, what)), what)
end

--- Copies `bytes` from this buffer at `offset` to host memory `dst` (a pointer).
-- @param dst a host pointer (FFI cdata)
-- @param bytes the number of bytes
-- @param offset optional: the byte offset in the buffer (default 0)
-- @param stream optional: a cute.Stream (default the default stream, synchronous)
-- @usage buf:copy_to_host(host, 1024)
function Buffer:copy_to_host(dst, bytes, offset, stream)
  local what = "copy to host"
  check(rt.copy_dtoh(host_ptr(dst, what), self, offset or 0, bytes, stream_handle(stream, what)), what)
end

--- Copies `bytes` from the buffer `src` at `src_offset` to this one at `dst_offset` (device to device).
-- @param src a Buffer
-- @param bytes the number of bytes
-- @param dst_offset optional: the byte offset in this buffer (default 0)
-- @param src_offset optional: the byte offset in src (default 0)
-- @param stream optional: a cute.Stream
-- @usage dst:copy_from(src, src.bytes)
function Buffer:copy_from(src, bytes, dst_offset, src_offset, stream)
  check(rt.copy_dtod(self, dst_offset or 0, src, src_offset or 0, bytes, stream_handle(stream, "device copy")),
    "device copy")
end

--- Sets `count` elements of `width` bytes from `offset` to the raw bit pattern `bits`.
-- @param bits the bit pattern (an integer)
-- @param width the element size in bytes (1, 2 or 4)
-- @param count the number of elements
-- @param offset optional: the byte offset (default 0)
-- @param stream optional: a cute.Stream
-- @usage buf:memset(0, 4, 256)
function Buffer:memset(bits, width, count, offset, stream)
  check(rt.memset(self, offset or 0, bits, width, count, stream_handle(stream, "memset")), "memset")
end

--- Whether the buffer can still be used (not freed, its device not reset).
-- @return a boolean
-- @usage assert(buf:valid())
function Buffer:valid()
  return self.released == 0 and rt.buffer_check(self, 0, 0) == 0
end

function Buffer:__tostring()
  return string.format("cute.Buffer(%d bytes at 0x%x on device %d)", tonumber(self.bytes), tonumber(self.ptr),
    self.device)
end

ffi.metatype("RtBuffer", Buffer)

--- Allocates `bytes` of device memory on the current device (256-byte aligned).
-- @param bytes the size in bytes
-- @return a Buffer (freed when collected, or by :free())
-- @usage local buf = cute.alloc(1 << 20)
function M.alloc(bytes)
  if type(bytes) ~= "number" or bytes < 0 or bytes ~= math.floor(bytes) then
    err.raise("alloc: bytes must be a non-negative integer, got %s", tostring(bytes))
  end
  if current == "sim" then return sim().alloc(bytes) end
  local b = ffi.new("RtBuffer")
  check(rt.buffer_alloc(b, bytes), "alloc")
  return ffi.gc(b, rt.buffer_release)
end

--- Wraps device memory the caller owns (a C application's, say): cutelua
-- never frees it. ptr: a number, an FFI pointer or integer, or a light userdata.
-- @param ptr the device address
-- @param bytes the size in bytes
-- @return a Buffer that does not own its memory
-- @usage local buf = cute.wrap(dev_ptr, n * 4)
function M.wrap(ptr, bytes)
  if current == "sim" then return sim().wrap(ptr, bytes) end
  local p
  if type(ptr) == "number" then
    p = ptr
  elseif type(ptr) == "cdata" or type(ptr) == "userdata" then
    p = ffi.cast("uint64_t", ffi.cast("uintptr_t", ptr))
  else
    err.raise("wrap: expected a device address, got %s", type(ptr))
  end
  local b = ffi.new("RtBuffer")
  check(rt.buffer_wrap(b, p, bytes), "wrap")
  return b
end

M.Buffer = Buffer

-- ---------------------------------------------------------------------------
-- Streams and events

local Stream = {}
Stream.__index = Stream

--- Waits until the work queued on the stream is done.
-- @usage s:synchronize()
function Stream:synchronize() check(rt.stream_synchronize(self), "stream synchronize") end

-- Streams another library owns (stream_from_handle): never destroyed here.
local foreign = setmetatable({}, { __mode = "k" })

--- Destroys the stream now (rather than when it is collected); a stream
-- from cute.stream_from_handle is only refused from then on, left to its owner.
-- @usage s:free()
function Stream:free()
  if foreign[self] then
    self.released = 1 -- refused from now on, left to its owner
    return
  end
  rt.stream_release(self)
  ffi.gc(self, nil)
end

function Stream:__tostring() return string.format("cute.Stream(%s)", tostring(self.handle)) end

ffi.metatype("RtStream", Stream)

--- A new (non-blocking) stream on the current device.
-- @return a Stream
-- @usage local s = cute.stream()
function M.stream()
  if current == "sim" then return sim().stream() end
  local s = ffi.new("RtStream")
  check(rt.stream_create(s), "stream")
  return ffi.gc(s, rt.stream_release)
end

--- A stream over a CUstream that another library created and owns (torch's
-- current stream, a C application's): a number, an FFI pointer or integer, or
-- a light userdata. It can be passed wherever a cute.stream() can (launches,
-- copies, events, cute.bench); cutelua never destroys it (s:free() only makes
-- cutelua refuse it). It is taken to belong to the current device, whose
-- primary context (the CUDA runtime's, which torch uses too) must be the
-- stream's context. 0 is the default (legacy) stream.
-- @param ptr the CUstream (number, FFI pointer or integer, light userdata)
-- @return a cute stream
-- @usage local s = cute.stream_from_handle(torch_stream_ptr)
function M.stream_from_handle(ptr)
  local h
  local t = type(ptr)
  if t == "number" then
    if ptr < 0 or ptr ~= math.floor(ptr) then err.raise("stream_from_handle: %s is not a handle", tostring(ptr)) end
    h = ffi.cast("void *", ffi.cast("uintptr_t", ptr))
  elseif t == "cdata" or t == "userdata" then
    if ffi.istype("RtStream", ptr) then err.raise("stream_from_handle: this is already a cute stream") end
    h = ffi.cast("void *", ffi.cast("uintptr_t", ptr))
  else
    err.raise("stream_from_handle: expected a CUstream handle (a pointer, light userdata or number), got %s", t)
  end
  -- the device's primary context, retained now (its generation starts at 1 then)
  if rt.available() == 1 then check(rt.set_device(current), "stream_from_handle") end
  local s = ffi.new("RtStream")
  s.handle, s.device, s.gen, s.released = h, current, rt.generation(current), 0
  foreign[s] = true
  return s
end

local Event = {}
Event.__index = Event

--- Records the event on a stream (default: the default stream).
-- @param stream optional: a cute.Stream
-- @usage start:record(s)
function Event:record(stream) check(rt.event_record(self, stream_handle(stream, "event record")), "event record") end

--- Waits until the event has completed.
-- @usage stop:synchronize()
function Event:synchronize() check(rt.event_synchronize(self), "event synchronize") end

--- Milliseconds from this event to `stop` (both recorded and complete).
-- @param stop an Event recorded after this one
-- @return the time in milliseconds
-- @usage local ms = start:elapsed_ms(stop)
function Event:elapsed_ms(stop)
  local ms = ffi.new("float[1]")
  check(rt.event_elapsed_ms(self, stop, ms), "event elapsed time")
  return ms[0]
end

--- Destroys the event now (rather than when it is collected).
-- @usage e:free()
function Event:free()
  rt.event_release(self)
  ffi.gc(self, nil)
end

ffi.metatype("RtEvent", Event)

--- A new event; timing = false makes one that cannot be timed (cheaper to record).
-- @param timing optional: false for an event without timing (default true)
-- @return an Event
-- @usage local start, stop = cute.event(), cute.event()
function M.event(timing)
  if current == "sim" then return sim().event() end
  local e = ffi.new("RtEvent")
  check(rt.event_create(e, timing == false and 0 or 1), "event")
  return ffi.gc(e, rt.event_release)
end

-- ---------------------------------------------------------------------------
-- Modules and raw launches (seed 000's KernelExecutor)

local Module = {}
Module.__index = Module

local Kernel = {}
Kernel.__index = Kernel

--- Loads a module from memory: a cubin or fatbin image, or PTX text (JIT-compiled by the driver).
-- @param image the cubin, fatbin or PTX (a string)
-- @param name optional: the module's name in messages
-- @return a Module
-- @usage local m = cute.load_module(ptx, "mine")
function M.load_module(image, name)
  if type(image) ~= "string" then err.raise("load_module: expected the image as a string, got %s", type(image)) end
  local m = ffi.new("RtModule")
  -- PTX must be NUL-terminated; Lua strings are, and ffi passes their bytes as is.
  check(rt.module_load(m, image, #image), "load_module" .. (name and (" " .. name) or ""))
  ffi.gc(m, rt.module_release)
  return setmetatable({ handle = m, name = name or "module", image = image }, Module)
end

--- Loads a cubin, fatbin or PTX file.
-- @param path the file's path
-- @return a Module
-- @usage local m = cute.load_module_file("kernels.cubin")
function M.load_module_file(path)
  local f, e = io.open(path, "rb")
  if not f then err.raise("load_module_file: cannot open %s", e) end
  local data = f:read("*a")
  f:close()
  return M.load_module(data, path)
end

--- The kernel called `name` in the module.
-- @param name the kernel's symbol name
-- @return a cute.Kernel (raw launches)
-- @usage local k = m:kernel("vector_add")
function Module:kernel(name)
  local f = ffi.new("RtFunction")
  check(rt.module_function(self.handle, name, f), "kernel '" .. name .. "' of " .. self.name)
  return setmetatable({ fn = f, module = self, name = name }, Kernel)
end

--- Unloads the module now (rather than when it is collected).
-- @usage m:free()
function Module:free()
  rt.module_release(self.handle)
  ffi.gc(self.handle, nil)
end

function Module:__tostring() return "cute.Module(" .. self.name .. ")" end

--- Static facts the driver reports about the kernel.
-- @return a table: max_threads_per_block, static_smem, max_dynamic_smem, registers, local_bytes, const_bytes
-- @usage print(k:attributes().registers)
function Kernel:attributes()
  local f = self.fn
  return {
    max_threads_per_block = f.max_threads,
    static_smem = f.static_smem,
    max_dynamic_smem = f.dyn_smem_limit,
    registers = f.num_regs,
    local_bytes = f.local_bytes,
    const_bytes = f.const_bytes,
  }
end

function Kernel:__tostring() return "cute.Kernel(" .. self.name .. ")" end

-- grid/block/cluster: a number, or {x, y, z} (missing entries are 1)
local function dims(v, what, default)
  if v == nil then return default, 1, 1 end
  if type(v) == "number" then return v, 1, 1 end
  if type(v) == "table" then return v[1] or v.x or 1, v[2] or v.y or 1, v[3] or v.z or 1 end
  err.raise("launch: %s must be a number or {x, y, z}, got %s", what, type(v))
end

local function integer_dim(v, what)
  if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v > 0xffffffff then
    err.raise("launch: %s = %s is not a valid dimension", what, tostring(v))
  end
  return v
end

--- Fills an RtLaunch from {grid=, block=, smem=, cluster=, stream=, pdl=}.
local function fill_launch(cfg, out)
  if type(cfg) ~= "table" then err.raise("launch: expected a configuration table {grid=, block=, ...}") end
  local gx, gy, gz = dims(cfg.grid, "grid", 1)
  local bx, by, bz = dims(cfg.block, "block", nil)
  if bx == nil then err.raise("launch: the configuration needs block = {x, y, z}") end
  local cx, cy, cz = dims(cfg.cluster, "cluster", 1)
  out.grid[0], out.grid[1], out.grid[2] = integer_dim(gx, "grid.x"), integer_dim(gy, "grid.y"),
    integer_dim(gz, "grid.z")
  out.block[0], out.block[1], out.block[2] = integer_dim(bx, "block.x"), integer_dim(by, "block.y"),
    integer_dim(bz, "block.z")
  out.cluster[0], out.cluster[1], out.cluster[2] = integer_dim(cx, "cluster.x"), integer_dim(cy, "cluster.y"),
    integer_dim(cz, "cluster.z")
  out.smem = integer_dim(cfg.smem or 0, "smem")
  out.stream = stream_handle(cfg.stream, "launch")
  if cfg.pdl ~= nil and type(cfg.pdl) ~= "boolean" then
    err.raise("launch: pdl must be a boolean (a programmatic dependent launch), got %s", type(cfg.pdl))
  end
  out.pdl = cfg.pdl and 1 or 0
  return out
end

-- One kernel argument as (pointer to its bytes, anchor to keep alive).
local function pack_arg(a, i)
  local t = type(a)
  if t == "table" then
    local mt = getmetatable(a)
    if mt == dtype.Scalar then
      local dt = a.dtype
      local cell = ffi.new(dt.storage .. "[1]")
      local v = a.value
      if type(v) == "boolean" then v = v and 1 or 0 end
      if dt.storage == "float" or dt.storage == "double" or dt.is_integer or dt.name == "bool" then
        cell[0] = v
      else
        local d = ffi.new("double[1]", v)
        rt.from_doubles(cell, dt.code, d, 1)
      end
      return cell, cell
    end
    if a.buffer then -- a tensor: its device address
      local cell = ffi.new("uint64_t[1]", a:data_ptr())
      return cell, cell
    end
  elseif t == "cdata" then
    if ffi.istype("RtBuffer", a) then
      local cell = ffi.new("uint64_t[1]", a.ptr)
      return cell, cell
    end
    local cell_type = ffi.istype("uint64_t", a) and "uint64_t[1]" or ffi.istype("int64_t", a) and "int64_t[1]"
    if cell_type then -- (a one-element array: its address)
      local cell = ffi.new(cell_type, a)
      return cell, cell
    end
    -- a struct passed by value (e.g. a TMA descriptor): its own bytes
    return ffi.cast("void *", a), a
  end
  err.raise("launch: argument #%d is a %s; pass a tensor, a buffer, a typed scalar such as cute.i32(%s), "
    .. "or an FFI value", i, t, tostring(a))
end

local launch_cfg = ffi.new("RtLaunch")

--- Launches with raw arguments: kernel:launch({grid=, block=, smem=, cluster=, stream=}, args...).
-- Arguments: tensors or buffers (their device address), typed scalars
-- (cute.i32(n), cute.f32(x)), FFI values (structs by value, 64-bit integers).
-- @param cfg the configuration: {grid =, block =, smem =, cluster =, stream =}
-- @param ... the kernel's arguments
-- @return the arguments' anchors (what keeps their memory alive during the launch)
-- @usage k:launch({grid = {64}, block = {256}}, buf, cute.i32(n))
function Kernel:launch(cfg, ...)
  fill_launch(cfg, launch_cfg)
  local n = select("#", ...)
  local args = ffi.new("void *[?]", n + 1)
  local anchors = {}
  for i = 1, n do
    local p, anchor = pack_arg((select(i, ...)), i)
    args[i - 1] = p
    anchors[i] = anchor
  end
  check(rt.launch(self.fn, launch_cfg, args))
  return anchors -- keeps argument memory alive until here
end

--- Checks a configuration without launching; returns true or false and the reason.
-- @param cfg the configuration, as for launch
-- @return true, or false and the reason
-- @usage assert(k:check_launch({grid = {1}, block = {1024}}))
function Kernel:check_launch(cfg)
  fill_launch(cfg, launch_cfg)
  if rt.launch_check(self.fn, launch_cfg) == 0 then return true end
  return false, last_error()
end

--- Resident blocks per SM for a block size and dynamic shared memory.
-- @param block_threads the threads per block
-- @param smem optional: the dynamic shared memory in bytes (default 0)
-- @return an integer
-- @usage local blocks = k:occupancy(256)
function Kernel:occupancy(block_threads, smem)
  local n = ffi.new("int32_t[1]")
  check(rt.occupancy(self.fn, block_threads, smem or 0, n), "occupancy")
  return n[0]
end

M.Module, M.Kernel, M.Stream, M.Event = Module, Kernel, Stream, Event

-- ---------------------------------------------------------------------------
-- TMA descriptors (cuTensorMapEncodeTiled)

local SWIZZLE = { none = 0, ["32B"] = 1, ["64B"] = 2, ["128B"] = 3 }
local L2 = { none = 0, ["64B"] = 1, ["128B"] = 2, ["256B"] = 3 }
local INTERLEAVE = { none = 0, ["16B"] = 1, ["32B"] = 2 }
local OOB = { zero = 0, nan = 1 }

ffi.cdef [[
typedef struct CuteTmaDesc { uint8_t bytes[128]; } CuteTmaDesc;
]]

local function enum_opt(tbl, v, what, default)
  if v == nil then return default end
  local r = tbl[v]
  if r == nil then
    local names = {}
    for k in pairs(tbl) do names[#names + 1] = k end
    table.sort(names)
    err.raise("tma descriptor: %s must be one of %s, got %s", what, table.concat(names, ", "), tostring(v))
  end
  return r
end

--- Encodes a tiled TMA descriptor. spec: {dtype=, address=, dims={d0, d1, ...}
-- (d0 the contiguous dimension), strides={bytes between elements of d1, of d2, ...},
-- box={...}, element_strides=, swizzle="none"|"32B"|"64B"|"128B",
-- l2="none"|"64B"|"128B"|"256B", interleave=, oob="zero"|"nan"}. Errors use the
-- driver's parameter names (globalDim[i], boxDim[i], globalStrides[i], 0-based).
-- Returns a CuteTmaDesc (128 bytes) to pass to a kernel by value (grid-constant).
-- @param spec the descriptor's fields, as above
-- @return a CuteTmaDesc
-- @usage local d = cute.tma_descriptor({dtype = cute.f16, address = t:data_ptr(), dims = {64, 64}, box = {64, 8}, ...})
function M.tma_descriptor(spec)
  local dt = dtype.get(spec.dtype)
  if not dt.tma then err.raise("tma descriptor: dtype %s cannot be moved by TMA", dt.name) end
  local rank = #spec.dims
  local dims_, strides_ = ffi.new("uint64_t[5]"), ffi.new("uint64_t[5]")
  local box, es = ffi.new("uint32_t[5]"), ffi.new("uint32_t[5]")
  for i = 1, rank do
    dims_[i - 1] = spec.dims[i]
    box[i - 1] = spec.box[i] or 0
    es[i - 1] = spec.element_strides and spec.element_strides[i] or 1
    if i > 1 then strides_[i - 2] = spec.strides[i - 1] or 0 end
  end
  -- 64-byte alignment for the encoder: over-allocate and align inside
  local holder = ffi.new("uint8_t[?]", 128 + 64)
  local addr = ffi.cast("uintptr_t", holder)
  local aligned = ffi.cast("uint8_t *", holder) + tonumber((64 - addr % 64) % 64)
  local address = spec.address
  if type(address) == "table" and address.data_ptr then address = address:data_ptr() end
  local inter = enum_opt(INTERLEAVE, spec.interleave, "interleave", 0)
  local swz = enum_opt(SWIZZLE, spec.swizzle, "swizzle", 0)
  local l2, oob = enum_opt(L2, spec.l2, "l2", 0), enum_opt(OOB, spec.oob, "oob", 0)
  if current == "sim" then
    -- the CPU simulator: the driver's rules checked, then the fields in cutelua's own
    -- 128-byte form (cute.sim.tma reads them; docs/simulator.md)
    check(rt.tensormap_tiled(nil, dt.tma, rank, address, dims_, strides_, box, es, inter, swz, l2, oob))
    return require("cute.sim.tma").encode(dt, rank, address, dims_, strides_, box, es, inter, swz, l2, oob)
  end
  check(rt.tensormap_tiled(aligned, dt.tma, rank, address, dims_, strides_, box, es, inter, swz, l2, oob))
  local desc = ffi.new("CuteTmaDesc")
  ffi.copy(desc, aligned, 128)
  return desc
end

-- For cutelua's other modules ----------------------------------------------------

--- What cute.kernel (the launch path) and cute.cublas use; not for users.
M.internal = {
  check = check, -- check(rc, what): raises the runtime's last error when rc is not 0
  fill_launch = fill_launch, -- fill_launch(cfg, out): the RtLaunch out from {grid=, block=, smem=, cluster=, stream=}
  set_on_release = set_on_release, -- set_on_release(buffer, fn): fn() once when the buffer is freed or collected
  pack_arg = pack_arg, -- pack_arg(value, i): the address of a launch argument's bytes, and what keeps them alive
  stream_handle = stream_handle, -- stream_handle(stream, what): a stream argument's CUstream (nil: default), checked
}

return M
