--- cute.sim.memory: the simulator's "device" memory, which is host memory.
--
-- A sim buffer has the methods and fields of a device buffer (cute.runtime's
-- RtBuffer: ptr, bytes, device, copy_from_host, copy_to_host, copy_from,
-- memset, valid, free), so cute.tensor works unchanged on it; its ptr is the
-- host address of the memory, which the simulated kernels read and write.
-- Also the stand-ins the simulator gives for streams and events, and what
-- device_info says about it.
local ffi = require "ffi"
local err = require "cute._err"

ffi.cdef [[
void *malloc(size_t size);
void free(void *p);
]]

local M = {}

local Buffer = {}
Buffer.__index = Buffer
M.Buffer = Buffer

local live = 0 -- bytes allocated and not freed

local function check(b, offset, bytes, what)
  if b.released then err.raise("%s: this tensor's simulator memory was freed", what) end
  if offset < 0 or bytes < 0 or offset + bytes > b.bytes then
    err.raise("%s: %d bytes at offset %d are outside the %d-byte simulator buffer", what, bytes, offset, b.bytes)
  end
end

local function addr(b, offset) return ffi.cast("uint8_t *", b.ptr + offset) end

local host_ptr = err.check_host_ptr -- (NULL and the first page refused)

--- Copies `bytes` from host memory `src` (a pointer) to this buffer at `offset`.
function Buffer:copy_from_host(src, bytes, offset)
  offset = offset or 0
  check(self, offset, bytes, "copy to device")
  host_ptr(src, "copy to device")
  if bytes > 0 then ffi.copy(addr(self, offset), src, bytes) end
end

function Buffer:copy_to_host(dst, bytes, offset)
  offset = offset or 0
  check(self, offset, bytes, "copy to host")
  host_ptr(dst, "copy to host")
  if bytes > 0 then ffi.copy(dst, addr(self, offset), bytes) end
end

function Buffer:copy_from(src, bytes, dst_offset, src_offset)
  dst_offset, src_offset = dst_offset or 0, src_offset or 0
  if getmetatable(src) ~= Buffer then
    err.raise("device copy: the source is GPU memory and this tensor is the simulator's; copy through the host")
  end
  check(self, dst_offset, bytes, "device copy")
  check(src, src_offset, bytes, "device copy")
  if bytes > 0 then ffi.C.memmove(addr(self, dst_offset), addr(src, src_offset), bytes) end
end

local FILL = { [1] = "uint8_t *", [2] = "uint16_t *", [4] = "uint32_t *", [8] = "uint64_t *" }

--- Sets `count` elements of `width` bytes from `offset` to the raw bit pattern `bits`.
function Buffer:memset(bits, width, count, offset)
  offset = offset or 0
  check(self, offset, width * count, "memset")
  local p = ffi.cast(FILL[width], addr(self, offset))
  for i = 0, count - 1 do p[i] = bits end
end

function Buffer:valid() return not self.released end

function Buffer:free()
  if self.released then return end
  self.released = true
  if self.owned then
    ffi.C.free(self.mem)
    live = live - self.bytes
  end
  self.mem = nil
end

function Buffer:__tostring()
  return string.format("cute.Buffer(%d bytes at 0x%x on the simulator)", self.bytes, self.ptr)
end

Buffer.__gc = nil -- tables: the memory is released by a proxy (below)

ffi.cdef [[ void *memmove(void *dst, const void *src, size_t n); ]]

--- Allocates `bytes` of simulator memory (256-byte aligned, like cudaMalloc).
function M.alloc(bytes)
  local raw = ffi.C.malloc(bytes + 256)
  if raw == nil then err.raise("alloc: out of host memory for %d bytes of simulator memory", bytes) end
  local base = tonumber(ffi.cast("uintptr_t", raw))
  local ptr = base + (256 - base % 256) % 256
  live = live + bytes
  local b = setmetatable({ ptr = ptr, bytes = bytes, device = "sim", owned = true, released = false, mem = raw },
    Buffer)
  -- the memory goes with the buffer: a userdata proxy's finaliser frees it
  local proxy = newproxy(true)
  getmetatable(proxy).__gc = function() b:free() end
  b._gc = proxy
  return b
end

--- Wraps host memory the caller owns as simulator memory (never freed here).
function M.wrap(ptr, bytes)
  local p
  if type(ptr) == "number" then
    p = ptr
  elseif type(ptr) == "cdata" or type(ptr) == "userdata" then
    p = tonumber(ffi.cast("uintptr_t", ptr))
  else
    err.raise("wrap: expected a host address (the simulator's memory is host memory), got %s", type(ptr))
  end
  -- (the simulator reads and writes the address itself: cute._err's MIN_HOST_ADDRESS)
  if p ~= p or p < err.MIN_HOST_ADDRESS or p % 1 ~= 0 then
    err.raise("wrap: %s is not a host address (the simulator's memory is host memory)", tostring(p))
  end
  return setmetatable({ ptr = p, bytes = bytes, device = "sim", owned = false, released = false }, Buffer)
end

--- Bytes of simulator memory allocated and not freed.
function M.live_bytes() return live end

-- Streams and events: the simulator runs each launch to completion before it
-- returns, so a stream has nothing to wait for and an event records the time.
local Stream = { __index = {} }
function Stream.__index.synchronize() end
function Stream.__index.free() end
Stream.__tostring = function() return "cute.Stream(simulator)" end

function M.stream() return setmetatable({ sim = true }, Stream) end

local now = require("cute._c").host.now_ns
local Event = { __index = {} }
function Event.__index.record(e) e.t = now() end
function Event.__index.synchronize() end
function Event.__index.elapsed_ms(e, stop) return tonumber(stop.t - e.t) / 1e6 end
function Event.__index.free() end
Event.__tostring = function() return "cute.Event(simulator)" end

function M.event() return setmetatable({ sim = true, t = now() }, Event) end

-- The architecture the simulator presents: "sm_80" (default) or "sm_90a"
-- (CUTELUA_SIM_ARCH, or cute.set_device("sim", {arch = ...})). On sm_90a it
-- reports compute capability 9.0, so cute.gemm plans its Hopper kernel, and
-- it runs the Hopper instructions (wgmma, TMA, mbarriers, clusters).
local ARCHS = { sm_80 = { 8, 0 }, sm_90a = { 9, 0 } }
local arch = os.getenv("CUTELUA_SIM_ARCH")
if arch == nil or arch == "" then arch = "sm_80" end
if arch == "sm_90" then arch = "sm_90a" end
if not ARCHS[arch] then
  io.stderr:write(string.format("cutelua: CUTELUA_SIM_ARCH=%s is not a simulated architecture (sm_80, sm_90a); " ..
    "using sm_80\n", arch))
  arch = "sm_80"
end

--- Sets the simulated architecture: "sm_80" or "sm_90a" ("sm_90" is taken as "sm_90a").
function M.set_arch(a)
  if a == "sm_90" then a = "sm_90a" end
  if not ARCHS[a] then
    require("cute._err").raise("cute.set_device(\"sim\", {arch = %s}): the simulator is \"sm_80\" or \"sm_90a\"",
      tostring(a))
  end
  arch = a
end

--- The simulated architecture ("sm_80" or "sm_90a").
function M.arch() return arch end

--- What cute.device_info says on the simulator.
function M.device_info()
  local cc = ARCHS[arch]
  -- as sm_90a it has an H100 SXM's 132 SMs, so that cute.gemm plans the tiles and grid it plans there
  return { ordinal = "sim", name = "cutelua CPU simulator", compute_capability = { cc[1], cc[2] }, arch = arch,
    sm_count = cc[1] >= 9 and 132 or 1, total_memory = 0, l2_bytes = 0, max_threads_per_block = 1024,
    max_threads_per_sm = 1024,
    warp_size = 32, registers_per_block = 65536, registers_per_sm = 65536, smem_per_block = 49152,
    smem_per_block_optin = 232448, smem_per_sm = 233472, clock_mhz = 0, memory_clock_mhz = 0, memory_bus_bits = 0,
    max_grid = { 2 ^ 31 - 1, 65535, 65535 }, max_block = { 1024, 1024, 64 }, cluster_launch = cc[1] >= 9,
    driver_version = "sim", cuda_version = "sim", simulator = true }
end

return M
