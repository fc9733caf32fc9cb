--- cute.sim.machine: the state of a simulated launch and the memory
-- accesses of the generated code, with the simulator's checks.
--
-- One launch runs at a time, one block at a time, one thread at a time (the
-- scheduler, cute.sim.exec, sets which), so the state is this module's: the
-- global regions the launch may touch (its tensor arguments), the current
-- block's shared memory and its shadow (who wrote and read each byte since the
-- last barrier, for the race and uninitialised-read checks), the current
-- thread. The helpers here are what the generated code calls for a load or a
-- store; each checks the access and raises the simulator's error for a bad one.
local ffi = require "ffi"
local bit = require "bit"
local N = require "cute.sim.num"
require "cute.sim.memory" -- malloc and free

local floor = math.floor

local M = {}

-- ---------------------------------------------------------------------------
-- State of the launch (set by cute.sim.exec)

local S = {
  kernel = "?",    -- the kernel's name
  sites = {},      -- site id -> { what =, where =, bytes = }
  regions = {},    -- { lo =, hi =, name = } per tensor argument (global memory the launch may touch)
  checks = true,   -- bounds, race and uninitialised-read checks on
  block = { 0, 0, 0 }, bdim = { 1, 1, 1 },
  tid = 0,         -- the current thread (linear index in its block)
  smem_bytes = 0,
  epoch = 1,       -- barrier generation of the block (moves on at each block-wide barrier)
  wepoch = {},     -- per warp: moves on at each syncwarp
}
M.S = S

local SBASE = 0   -- host address of the current block's shared memory
local SSIZE = 0
local shadow      -- int32 arrays: wt we ww ws rt re rw rs (writer, epochs, site; reader ...)
local GLO, GHI = 0, 0 -- the region of the last global access that passed

-- Raised errors carry this prefix so the launch knows they are the simulator's findings.
local function fail(fmt, ...)
  error({ sim = true, msg = string.format(fmt, ...) }, 0)
end
M.fail = fail

local function coords(tid)
  local bx, by = S.bdim[1], S.bdim[2]
  return string.format("(%d,%d,%d)", tid % bx, floor(tid / bx) % by, floor(tid / (bx * by)))
end
M.coords = coords

local function where_block()
  return string.format("block (%d,%d,%d)", S.block[1], S.block[2], S.block[3])
end
M.where_block = where_block

local function site_of(id) return S.sites[id] or { what = "access", where = "?", bytes = 0 } end
M.site_of = site_of

-- A CTA's shared memory and its shadow live in a context; a launch with
-- clusters of several CTAs has one per CTA of the cluster and switches
-- between them as it runs their threads (M.switch). Context 1 serves
-- launches without clusters.
local ctxs = {}
local cur -- the current context

local function new_ctx(bytes)
  -- in C's heap (kernels write it through raw pointers), 1024-byte aligned
  local n = math.max(bytes, 16)
  local c = { size = n }
  c.buf = ffi.gc(ffi.C.malloc(n + 1024), ffi.C.free)
  local base = tonumber(ffi.cast("uintptr_t", c.buf))
  c.base = base + (1024 - base % 1024) % 1024
  c.shadow = {}
  for i = 1, 8 do c.shadow[i] = ffi.gc(ffi.cast("int32_t *", ffi.C.malloc(4 * n)), ffi.C.free) end
  return c
end

local function load_ctx(c)
  cur = c
  SBASE, SSIZE, shadow = c.base, c.size, c.shadow
  S.smem_bytes, S.epoch, S.uninit, S.wepoch, S.mbar, S.block = c.bytes, c.epoch, c.uninit, c.wepoch, c.mbar, c.block
  S.rank = c.rank
end

local function save_ctx()
  if cur then cur.epoch, cur.uninit = S.epoch, S.uninit end
end

--- Makes context i (CTA rank i - 1 of the cluster) current.
function M.switch(i)
  local c = ctxs[i]
  if c == cur then return end
  save_ctx()
  load_ctx(c)
end

--- Context i (nil if none): its fields base, bytes, mbar, epoch (when not current), rank.
function M.ctx(i)
  local c = ctxs[i]
  if c == cur then save_ctx() end
  return c
end

--- Prepares context i (default 1) for a block: its shared memory (bytes),
-- fresh shadow state, block coordinates {x, y, z}; makes it current.
function M.begin_block(bytes, i, block)
  i = i or 1
  save_ctx()
  local c = ctxs[i]
  if not c or bytes > c.size then
    c = new_ctx(bytes)
    ctxs[i] = c
  end
  c.bytes, c.epoch, c.uninit, c.mbar, c.rank = bytes, 1, nil, {}, i - 1
  c.block = block or c.block or { 0, 0, 0 }
  c.wepoch = c.wepoch or {}
  for w = 0, 31 do c.wepoch[w] = 1 end
  if S.checks then for k = 1, 8 do ffi.fill(c.shadow[k], 4 * c.size) end end
  load_ctx(c)
end

--- At a barrier and at the end of a block: raises the uninitialised read found since the last one.
function M.end_epoch()
  if S.uninit then fail("%s", S.uninit) end
  S.epoch = S.epoch + 1
end

--- Marks [o, o + n) of context c's shared memory written by another CTA of
-- the cluster (a DSMEM store, a multicast copy): initialised, in no epoch
-- (not race-checked). Raises for an access outside it.
function M.remote_access(c, o, n, site, what)
  if o < 0 or o + n > c.bytes then
    local st = site_of(site)
    fail("kernel '%s': out-of-bounds distributed shared-memory %s of %d bytes at %s, in %s thread %s: byte " ..
      "offset %d of CTA rank %d's %d bytes of shared memory", S.kernel, what or st.what, n, st.where, where_block(),
      coords(S.tid), o, c.rank, c.bytes)
  end
  if S.checks and what ~= "read" then
    local wt, we = c.shadow[1], c.shadow[2]
    for b = o, o + n - 1 do wt[b], we[b] = -2, 0 end
  end
  return c.base + o
end

function M.smem_base() return SBASE end

-- ---------------------------------------------------------------------------
-- Checks

-- The tensor argument nearest to address a (the fewest bytes from its range):
-- the one an out-of-bounds access most likely meant, whatever the order of the
-- arguments in memory
local function region_near(a)
  local best, best_d
  for _, r in ipairs(S.regions) do
    local d = a < r.lo and r.lo - a or (a >= r.hi and a - r.hi + 1 or 0)
    if not best_d or d < best_d then best, best_d = r, d end
  end
  return best
end

local function oob(a, n, site)
  local s = site_of(site)
  local r = region_near(a)
  local what
  if r then
    what = string.format("byte offset %d of %s, which has %d bytes", a - r.lo, r.name, r.hi - r.lo)
  else
    what = string.format("address 0x%x, and the launch has no tensor argument", a)
  end
  fail("kernel '%s': out-of-bounds %s of %d bytes at %s, in %s thread %s: %s", S.kernel, s.what, n, s.where,
    where_block(), coords(S.tid), what)
end

--- Global access [a, a + n): inside one of the launch's tensor arguments.
local function chk_g(a, n, site)
  if a >= GLO and a + n <= GHI then return end
  for _, r in ipairs(S.regions) do
    if a >= r.lo and a + n <= r.hi then
      GLO, GHI = r.lo, r.hi
      return
    end
  end
  oob(a, n, site)
end
M.chk_g = chk_g

function M.reset_regions() GLO, GHI = 0, 0 end

local function thread_word(t) return t < 0 and "several threads" or ("thread " .. coords(t - 1)) end

local function race(kind, byte, prev_tid, prev_site, site)
  local a, b = site_of(prev_site), site_of(site)
  fail("kernel '%s': shared-memory race (%s) in %s at byte offset %d of shared memory: %s at %s and thread %s " ..
    "at %s, with no barrier between", S.kernel, kind, where_block(), byte, thread_word(prev_tid),
    a.where .. " (" .. a.what .. ")", coords(S.tid), b.where .. " (" .. b.what .. ")")
end

-- Does an access at (tid, epoch, warp epoch) conflict with the current thread now?
local function conflicts(t, ep, wep)
  if t == 0 or ep ~= S.epoch then return false end
  local me = S.tid + 1
  if t == me then return false end
  if t > 0 then
    local w = floor((t - 1) / 32)
    if w == floor(S.tid / 32) and wep ~= S.wepoch[w] then return false end
  end
  return true
end

--- Shared access [o, o + n) (o: byte offset in the block's shared memory).
local function chk_s(o, n, site, write)
  if o < 0 or o + n > S.smem_bytes then
    local s = site_of(site)
    fail("kernel '%s': out-of-bounds shared-memory %s of %d bytes at %s, in %s thread %s: byte offset %d of the " ..
      "block's %d bytes of shared memory", S.kernel, s.what, n, s.where, where_block(), coords(S.tid), o,
      S.smem_bytes)
  end
  local wt, we, ww, ws, rt, re, rw, rs = shadow[1], shadow[2], shadow[3], shadow[4], shadow[5], shadow[6],
    shadow[7], shadow[8]
  local me, ep = S.tid + 1, S.epoch
  local wep = S.wepoch[floor(S.tid / 32)]
  for b = o, o + n - 1 do
    if write then
      if conflicts(wt[b], we[b], ww[b]) then race("write after write", b, wt[b], ws[b], site) end
      if conflicts(rt[b], re[b], rw[b]) then race("write after read", b, rt[b], rs[b], site) end
      wt[b], we[b], ww[b], ws[b] = me, ep, wep, site
    else
      local w = wt[b]
      if w == 0 and not S.uninit and not site_of(site).speculative then
        -- reported at the next barrier (or the block's end) unless a race with a write comes first
        local s = site_of(site)
        S.uninit = string.format("kernel '%s': read of uninitialised shared memory at %s (%s of %d bytes), in %s " ..
          "thread %s: byte offset %d was never written", S.kernel, s.where, s.what, n, where_block(), coords(S.tid), b)
      end
      if conflicts(w, we[b], ww[b]) then race("read after write", b, w, ws[b], site) end
      local r = rt[b]
      if re[b] == ep and r ~= me and r ~= 0 then
        rt[b] = -1
      else
        rt[b] = me
      end
      re[b], rw[b], rs[b] = ep, wep, site
    end
  end
end
M.chk_s = chk_s

--- Marks [o, o + n) written by the current thread without checking (atomics, async copies).
local function mark_s(o, n, site)
  if o < 0 or o + n > S.smem_bytes then chk_s(o, n, site, true) end
  local wt, we, ww, ws = shadow[1], shadow[2], shadow[3], shadow[4]
  local me, ep, wep = S.tid + 1, S.epoch, S.wepoch[floor(S.tid / 32)]
  for b = o, o + n - 1 do wt[b], we[b], ww[b], ws[b] = me, ep, wep, site end
end
M.mark_s = mark_s

-- ---------------------------------------------------------------------------
-- Loads and stores, per scalar type: raw accessors of host memory (value
-- in, value out), then the checked helpers per address space.

local P = {}
for _, c in ipairs { "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "float", "double",
  "uint64_t" } do
  P[c] = ffi.typeof(c .. " *")
end
local cast = ffi.cast
local F16, BF16, E4M3, E5M2 = N.F16, N.BF16, N.E4M3, N.E5M2
local enc_f16, enc_bf16, enc_e4m3, enc_e5m2 = N.enc_f16, N.enc_bf16, N.enc_e4m3, N.enc_e5m2
local I64 = N.I64

-- Floats read from memory: a NaN with a payload (any bits, e.g. an integer -1
-- seen as a float) is read as the canonical NaN, since LuaJIT takes some NaN
-- patterns of a double for its own tagged values.
local band = bit.band
local NAN = 0 / 0
local function rd_f32(a)
  local u = cast(P.uint32_t, a)[0]
  if band(u, 0x7f800000) == 0x7f800000 and band(u, 0x7fffff) ~= 0 then return NAN end
  return cast(P.float, a)[0]
end
local function rd_f64(a)
  local hi = cast(P.uint32_t, a + 4)[0]
  if band(hi, 0x7ff00000) == 0x7ff00000 and (band(hi, 0xfffff) ~= 0 or cast(P.uint32_t, a)[0] ~= 0) then
    return NAN
  end
  return cast(P.double, a)[0]
end
M.rd_f32, M.rd_f64 = rd_f32, rd_f64

-- type name -> { bytes, read(addr), write(addr, v) }
local RAW = {
  i1 = { 1, function(a) return cast(P.uint8_t, a)[0] ~= 0 end,
    function(a, v) cast(P.uint8_t, a)[0] = v and 1 or 0 end },
  i8 = { 1, function(a) return cast(P.int8_t, a)[0] end, function(a, v) cast(P.int8_t, a)[0] = v end },
  i16 = { 2, function(a) return cast(P.int16_t, a)[0] end, function(a, v) cast(P.int16_t, a)[0] = v end },
  i32 = { 4, function(a) return cast(P.int32_t, a)[0] end, function(a, v) cast(P.int32_t, a)[0] = v end },
  i64 = { 8, function(a) return I64(cast(P.int64_t, a)[0]) end, function(a, v) cast(P.int64_t, a)[0] = v end },
  f32 = { 4, rd_f32, function(a, v) cast(P.float, a)[0] = v end },
  f64 = { 8, rd_f64, function(a, v) cast(P.double, a)[0] = v end },
  f16 = { 2, function(a) return F16[cast(P.uint16_t, a)[0]] end,
    function(a, v) cast(P.uint16_t, a)[0] = enc_f16(v) end },
  bf16 = { 2, function(a) return BF16[cast(P.uint16_t, a)[0]] end,
    function(a, v) cast(P.uint16_t, a)[0] = enc_bf16(v) end },
  tf32 = { 4, rd_f32, function(a, v) cast(P.float, a)[0] = v end },
  e4m3 = { 1, function(a) return E4M3[cast(P.uint8_t, a)[0]] end,
    function(a, v) cast(P.uint8_t, a)[0] = enc_e4m3(v) end },
  e5m2 = { 1, function(a) return E5M2[cast(P.uint8_t, a)[0]] end,
    function(a, v) cast(P.uint8_t, a)[0] = enc_e5m2(v) end },
  -- pointers in memory: 64-bit addresses (shared ones are offsets)
  p64 = { 8, function(a) return tonumber(cast(P.uint64_t, a)[0]) end, function(a, v) cast(P.uint64_t, a)[0] = v end },
}
M.RAW = RAW

-- The helpers of the generated code, by name: ldg_T(a, site), stg_T(a, v, site)
-- (global), lds_T / sts_T (shared: a is an offset), ldx_T / stx_T (generic).
local H = {}
M.H = H

for tname, r in pairs(RAW) do
  local bytes, rd, wr = r[1], r[2], r[3]
  H["ldg_" .. tname] = function(a, site)
    if S.checks then chk_g(a, bytes, site) end
    return rd(a)
  end
  H["stg_" .. tname] = function(a, v, site)
    if S.checks then chk_g(a, bytes, site) end
    wr(a, v)
  end
  H["lds_" .. tname] = function(o, site)
    if S.checks then chk_s(o, bytes, site, false) end
    return rd(SBASE + o)
  end
  H["sts_" .. tname] = function(o, v, site)
    if S.checks then chk_s(o, bytes, site, true) end
    wr(SBASE + o, v)
  end
  H["ldx_" .. tname] = function(a, site)
    if a >= SBASE and a < SBASE + SSIZE then
      if S.checks then chk_s(a - SBASE, bytes, site, false) end
    elseif S.checks then
      chk_g(a, bytes, site)
    end
    return rd(a)
  end
  H["stx_" .. tname] = function(a, v, site)
    if a >= SBASE and a < SBASE + SSIZE then
      if S.checks then chk_s(a - SBASE, bytes, site, true) end
    elseif S.checks then
      chk_g(a, bytes, site)
    end
    wr(a, v)
  end
end

--- The host address of a pointer of an address space (for atomics, copies).
function M.host_addr(space, a, n, site, write)
  if space == "shared_cluster" then return M.cluster_host(a, n, site, write) end
  if space == "shared" then
    if S.checks then
      if write == "mark" then mark_s(a, n, site) else chk_s(a, n, site, write) end
    end
    return SBASE + a
  end
  if space == "generic" and a >= SBASE and a < SBASE + SSIZE then
    if S.checks then
      if write == "mark" then mark_s(a - SBASE, n, site) else chk_s(a - SBASE, n, site, write) end
    end
    return a
  end
  if S.checks then chk_g(a, n, site) end
  return a
end

return M
