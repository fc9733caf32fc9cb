--- cute.sim.hopper: the Hopper (sm_90a) instructions on the CPU simulator:
-- mbarriers (phases, arrival and transaction counts, with checks), the TMA
-- and bulk copies (done when issued: their bytes arrive at once and complete
-- their transaction on the mbarrier), wgmma (a warpgroup collective reading
-- its shared-memory operands through the matrix descriptors), elect.sync and
-- the cluster barrier. The helpers here are called by the generated code
-- (cute.sim.compile); the collectives are resolved by the scheduler
-- (cute.sim.exec).
local ffi = require "ffi"
local bit = require "bit"
local N = require "cute.sim.num"
local machine = require "cute.sim.machine"
local tma = require "cute.sim.tma"

local band, bxor, lshift, rshift, tobit = bit.band, bit.bxor, bit.lshift, bit.rshift, bit.tobit
local floor = math.floor
local S, fail = machine.S, machine.fail

local M = {}
local H = {}
M.H = H

local CLUSTER_SHIFT = 16777216 -- a shared_cluster address: rank * 2^24 + the shared-memory offset

local function where(site)
  local s = machine.site_of(site)
  return string.format("%s, in %s thread %s", s.where, machine.where_block(), machine.coords(S.tid))
end

-- A shared operand's offset in its CTA's shared memory, and that CTA's
-- context when it is another CTA of the cluster (nil for this one).
local function split(space, a, site, what)
  if space == "shared" then return a, nil end
  if space == "shared_cluster" then
    local rank, o = floor(a / CLUSTER_SHIFT), a % CLUSTER_SHIFT
    if rank == S.rank then return o, nil end
    local c = rank < S.csize and machine.ctx(rank + 1)
    if not c then
      fail("kernel '%s': %s at %s: a shared_cluster address of CTA rank %d, in a cluster of %d CTA(s)", S.kernel,
        what, where(site), rank, S.csize)
    end
    return o, c
  end
  local base = machine.smem_base()
  if a >= base and a < base + S.smem_bytes then return a - base, nil end
  fail("kernel '%s': %s at %s: address 0x%x is not in the block's shared memory", S.kernel, what, where(site), a)
end
-- The offset in this CTA's own shared memory.
local function soff(space, a, site, what)
  local o, c = split(space, a, site, what)
  if c then
    fail("kernel '%s': %s at %s: the address is in CTA rank %d's shared memory; this instruction takes this CTA's",
      S.kernel, what, where(site), c.rank)
  end
  return o
end

function machine.cluster_host(a, n, site, write)
  local o, c = split("shared_cluster", a, site, "a shared_cluster access")
  if not c then return machine.host_addr("shared", o, n, site, write) end
  return machine.remote_access(c, o, n, site, write and "write" or "read")
end

-- ---------------------------------------------------------------------------
-- mbarriers: state per shared-memory offset of the block (S.mbar, reset by
-- machine.begin_block): count (arrivals a phase expects), pending (arrivals
-- still missing), tx (the transaction count), phase (completed phases).

local function bar_state(space, a, site, what)
  local o, c = split(space, a, site, what)
  if o % 8 ~= 0 then
    fail("kernel '%s': %s at %s: the mbarrier at shared offset %d is not 8-byte aligned", S.kernel, what, where(site),
      o)
  end
  local b = (c and c.mbar or S.mbar)[o]
  if not b then
    fail("kernel '%s': %s at %s on the mbarrier at shared offset %d%s, which is not initialised (mbarrier_init " ..
      "first, then a fence and a barrier before other threads use it)", S.kernel, what, where(site), o,
      c and (" of CTA rank " .. c.rank) or "")
  end
  b.ctx = c
  return b, o
end

local function describe(b, o)
  return string.format("the mbarrier at shared offset %d (phase %d, parity %d: %d of %d arrivals pending, " ..
    "transaction count %d bytes)", o, b.phase, b.phase % 2, b.pending, b.count, b.tx)
end
M.describe = function(o)
  local b = S.mbar[o]
  if not b then return string.format("the mbarrier at shared offset %d (not initialised)", o) end
  return describe(b, o)
end

local function complete_if_done(b)
  if b.pending == 0 and b.tx == 0 then
    b.phase = b.phase + 1
    b.pending = b.count
    -- a completed phase orders the accesses before its arrivals and copies with those after its waits:
    -- the race check takes it as a barrier of the block
    if b.ctx then b.ctx.epoch = b.ctx.epoch + 1 else machine.end_epoch() end
  end
end

function H.mb_init(space, a, count, site)
  local o = soff(space, a, site, "mbarrier.init")
  if o % 8 ~= 0 then
    fail("kernel '%s': mbarrier.init at %s: shared offset %d is not 8-byte aligned", S.kernel, where(site), o)
  end
  if count < 1 or count > 1048575 then
    fail("kernel '%s': mbarrier.init at %s: count %d; it must be 1 to 2^20 - 1", S.kernel, where(site), count)
  end
  if S.checks then machine.host_addr("shared", o, 8, site, "mark") end
  ffi.fill(ffi.cast("uint8_t *", machine.smem_base() + o), 8)
  S.mbar[o] = { count = count, pending = count, tx = 0, phase = 0, site = site }
end

local function arrive(b, o, n, site, what)
  if n < 1 then
    fail("kernel '%s': %s at %s: arrival count %d; it must be at least 1", S.kernel, what, where(site), n)
  end
  if n > b.pending then
    fail("kernel '%s': %s at %s: %d arrival(s) on %s: more arrivals than the phase expects (on the GPU the extra " ..
      "arrivals complete the phase early or count toward the next one)", S.kernel, what, where(site), n, describe(b, o))
  end
  b.pending = b.pending - n
  complete_if_done(b)
end

function H.mb_arrive(space, a, n, site)
  local b, o = bar_state(space, a, site, "mbarrier.arrive")
  local token = b.phase
  arrive(b, o, n, site, "mbarrier.arrive")
  return N.I64(token)
end

function H.mb_expect_tx(space, a, bytes, site)
  local b, o = bar_state(space, a, site, "mbarrier.expect_tx")
  if bytes < 0 or b.tx + bytes > 1048575 then
    fail("kernel '%s': mbarrier.expect_tx at %s: %d bytes on %s: the transaction count must stay within 2^20 - 1",
      S.kernel, where(site), bytes, describe(b, o))
  end
  b.tx = b.tx + bytes
end

function H.mb_arrive_tx(space, a, bytes, site)
  H.mb_expect_tx(space, a, bytes, site)
  local b, o = bar_state(space, a, site, "mbarrier.arrive.expect_tx")
  arrive(b, o, 1, site, "mbarrier.arrive.expect_tx")
end

-- A copy delivers `bytes` to the barrier at offset o (complete_tx) of this CTA or of context c.
local function complete_tx(o, bytes, site, what, c)
  local b = (c and c.mbar or S.mbar)[o]
  if not b then
    fail("kernel '%s': %s at %s completes its bytes on the mbarrier at shared offset %d%s, which is not initialised",
      S.kernel, what, where(site), o, c and (" of CTA rank " .. c.rank) or "")
  end
  b.ctx = c
  if b.pending == 0 and bytes > b.tx then
    fail("kernel '%s': %s at %s delivers %d bytes to %s: more bytes than its expect_tx announced for the phase " ..
      "(transaction count underflow; on the GPU the phase does not complete as intended)", S.kernel, what, where(site),
      bytes, describe(b, o))
  end
  b.tx = b.tx - bytes
  complete_if_done(b)
end

function H.mb_inval(space, a, site)
  local _, o = bar_state(space, a, site, "mbarrier.inval")
  S.mbar[o] = nil
end

-- Whether the phase of `parity` has completed: the current phase's parity differs.
local function done(b, parity) return b.phase % 2 ~= band(parity, 1) end
M.mb_done = function(o, parity)
  local b = S.mbar[o]
  return b ~= nil and done(b, parity)
end

--- try_wait / test_wait / wait: returns true once the phase has completed;
-- until then the thread yields to the others (the scheduler wakes it).
function H.mb_wait(space, a, parity, site)
  local b, o = bar_state(space, a, site, "mbarrier wait")
  if b.ctx then
    fail("kernel '%s': mbarrier wait at %s on CTA rank %d's barrier: a thread waits on its own CTA's mbarriers",
      S.kernel, where(site), b.ctx.rank)
  end
  if done(b, parity) then return true end
  return coroutine.yield(M.Y_MBWAIT, site, o, parity)
end

-- ---------------------------------------------------------------------------
-- TMA and bulk copies: done when issued

local descs = {} -- host address -> decoded descriptor (reset each launch)
function M.reset() descs = {} end

local function desc_at(a, site, what)
  local t = descs[a]
  if t then return t end
  local why
  t, why = tma.decode(a)
  if not t then fail("kernel '%s': %s at %s: the TMA descriptor at 0x%x: %s", S.kernel, what, where(site), a, why) end
  descs[a] = t
  return t
end
M.desc_at = desc_at

local function mark_w(site) return function(o, n) machine.host_addr("shared", o, n, site, "mark") end end
local function check_r(site)
  return function(o, n)
    if S.checks then machine.chk_s(o, n, site, false) elseif o < 0 or o + n > S.smem_bytes then
      machine.chk_s(o, n, site, false)
    end
  end
end

local function coords_of(t, site, what, ...)
  local c = { ... }
  if #c ~= t.rank then
    fail("kernel '%s': %s at %s gives %d coordinates to a rank-%d TMA descriptor", S.kernel, what, where(site), #c,
      t.rank)
  end
  return c
end

function H.tma_load(desc, space, dst, bspace, bar, mask, site, ...)
  local what = mask and "tma.load.multicast" or "tma.load"
  local t = desc_at(desc, site, what)
  local d = soff(space, dst, site, what)
  if d % 128 ~= 0 then
    fail("kernel '%s': %s at %s: the destination (shared offset %d) must be 128-byte aligned", S.kernel, what,
      where(site), d)
  end
  local o = soff(bspace, bar, site, what)
  local c = coords_of(t, site, what, ...)
  if not mask then
    tma.load(t, machine.smem_base(), d, c, mark_w(site))
    return complete_tx(o, t.bytes, site, what)
  end
  -- multicast: the box and its complete_tx at the same offsets in every CTA of the mask
  mask = band(mask, 0xffff)
  if mask == 0 or mask >= lshift(1, S.csize) then
    fail("kernel '%s': %s at %s: CTA mask 0x%x in a cluster of %d CTA(s)", S.kernel, what, where(site), mask, S.csize)
  end
  for r = 0, S.csize - 1 do
    if band(mask, lshift(1, r)) ~= 0 then
      if r == S.rank then
        tma.load(t, machine.smem_base(), d, c, mark_w(site))
        complete_tx(o, t.bytes, site, what)
      else
        local cx = machine.ctx(r + 1)
        tma.load(t, cx.base, d, c, function(so, n) machine.remote_access(cx, so, n, site, "multicast write") end)
        complete_tx(o, t.bytes, site, what, cx)
      end
    end
  end
end

function H.tma_store(desc, space, src, op, site, ...)
  local what = op and ("tma.reduce." .. op) or "tma.store"
  local t = desc_at(desc, site, what)
  local s = soff(space, src, site, what)
  if s % 128 ~= 0 then
    fail("kernel '%s': %s at %s: the source (shared offset %d) must be 128-byte aligned", S.kernel, what, where(site),
      s)
  end
  local bad = tma.store(t, machine.smem_base(), s, coords_of(t, site, what, ...), op, check_r(site), N)
  if bad then fail("kernel '%s': %s at %s: %s is not defined", S.kernel, what, where(site), bad) end
end

function H.tma_check(desc, site) desc_at(desc, site, "tma.prefetch") end

function H.bulk_load(space, dst, src, bytes, bspace, bar, site, mask)
  if mask then -- multicast: into every CTA of the mask
    mask = band(mask, 0xffff)
    if mask == 0 or mask >= lshift(1, S.csize) then
      fail("kernel '%s': bulk.load.multicast at %s: CTA mask 0x%x in a cluster of %d CTA(s)", S.kernel, where(site),
        mask, S.csize)
    end
    local d, o = soff(space, dst, site, "bulk.load"), soff(bspace, bar, site, "bulk.load")
    if S.checks then machine.chk_g(src, bytes, site) end
    for r = 0, S.csize - 1 do
      if band(mask, lshift(1, r)) ~= 0 then
        local cx = r ~= S.rank and machine.ctx(r + 1)
        local h = cx and machine.remote_access(cx, d, bytes, site, "multicast write") or
          machine.host_addr("shared", d, bytes, site, "mark")
        ffi.copy(ffi.cast("uint8_t *", h), ffi.cast("uint8_t *", src), bytes)
        complete_tx(o, bytes, site, "bulk.load.multicast", cx or nil)
      end
    end
    return
  end
  local d = soff(space, dst, site, "bulk.load")
  if bytes <= 0 or bytes % 16 ~= 0 or d % 16 ~= 0 or src % 16 ~= 0 then
    fail("kernel '%s': bulk.load at %s: %d bytes from 0x%x to shared offset %d: sizes and addresses must be " ..
      "multiples of 16", S.kernel, where(site), bytes, src, d)
  end
  if S.checks then machine.chk_g(src, bytes, site) end
  machine.host_addr("shared", d, bytes, site, "mark")
  ffi.copy(ffi.cast("uint8_t *", machine.smem_base() + d), ffi.cast("uint8_t *", src), bytes)
  complete_tx(soff(bspace, bar, site, "bulk.load"), bytes, site, "bulk.load")
end

function H.bulk_store(dst, space, src, bytes, site)
  local s = soff(space, src, site, "bulk.store")
  if bytes <= 0 or bytes % 16 ~= 0 or s % 16 ~= 0 or dst % 16 ~= 0 then
    fail("kernel '%s': bulk.store at %s: %d bytes from shared offset %d to 0x%x: sizes and addresses must be " ..
      "multiples of 16", S.kernel, where(site), bytes, s, dst)
  end
  check_r(site)(s, bytes)
  if S.checks then machine.chk_g(dst, bytes, site) end
  ffi.copy(ffi.cast("uint8_t *", dst), ffi.cast("uint8_t *", machine.smem_base() + s), bytes)
end

-- ---------------------------------------------------------------------------
-- Clusters: the cluster barrier (B.cl, shared by the cluster's CTAs), mapa,
-- getctarank, shared_cluster loads and stores

function H.cl_arrive(B, T)
  local cl = B.cl
  T.cl_gen = cl.gen
  cl.arrived = cl.arrived + 1
  M.cl_check(cl)
end
--- Completes the cluster barrier's phase once every thread of the cluster arrived (or exited).
function M.cl_check(cl)
  if cl.arrived > 0 and cl.arrived + cl.ndone >= cl.nthreads then
    cl.gen = cl.gen + 1
    cl.arrived = 0
    for i = 1, S.csize do
      local c = machine.ctx(i)
      if c.rank == S.rank then machine.end_epoch() else c.epoch = c.epoch + 1 end
    end
    return true
  end
  return false
end
function H.cl_wait(B, T, site)
  if T.cl_gen == nil then
    fail("kernel '%s': barrier.cluster.wait at %s without a barrier.cluster.arrive before it (on the GPU: a hang " ..
      "or undefined behaviour)", S.kernel, where(site))
  end
  if T.cl_gen >= B.cl.gen then coroutine.yield(M.Y_CLWAIT, site, T.cl_gen) end
  T.cl_gen = nil
end

function H.mapa(p, rank, site)
  if rank < 0 or rank >= S.csize then
    fail("kernel '%s': mapa at %s: CTA rank %d, in a cluster of %d CTA(s)", S.kernel, where(site), rank, S.csize)
  end
  return p % CLUSTER_SHIFT + rank * CLUSTER_SHIFT
end
function H.ctarank(p) return floor(p / CLUSTER_SHIFT) end
function H.cl_generic(p)
  local o, c = split("shared_cluster", p, 0, "a shared_cluster address made generic")
  if c then return c.base + o - machine.smem_base() end
  return o
end

for name, r in pairs(machine.RAW) do
  local ld, st = machine.H["lds_" .. name], machine.H["sts_" .. name]
  local bytes, rd, wr = r[1], r[2], r[3]
  H["ldc_" .. name] = function(a, site)
    local o, c = split("shared_cluster", a, site, "ld.shared::cluster")
    if not c then return ld(o, site) end
    return rd(machine.remote_access(c, o, bytes, site, "read"))
  end
  H["stc_" .. name] = function(a, v, site)
    local o, c = split("shared_cluster", a, site, "st.shared::cluster")
    if not c then return st(o, v, site) end
    wr(machine.remote_access(c, o, bytes, site, "write"), v)
  end
end

-- ---------------------------------------------------------------------------
-- wgmma: D (64 x N) = A (64 x K) B (K x N) + (scale_d ? D : 0), K = 32 bytes

local BYTES = { f16 = 2, bf16 = 2, tf32 = 4, e4m3 = 1, e5m2 = 1, s8 = 1, u8 = 1 }
local u8p, u16p, u32p = ffi.typeof("uint8_t *"), ffi.typeof("uint16_t *"), ffi.typeof("uint32_t *")

-- an element's value from its bits
local function decoder(ty)
  if ty == "f16" then return function(b) return N.F16[b] end end
  if ty == "bf16" then return function(b) return N.BF16[b] end end
  if ty == "tf32" then return function(b) return N.bits_f32(band(b, -8192)) end end
  if ty == "e4m3" then return function(b) return N.E4M3[b] end end
  if ty == "e5m2" then return function(b) return N.E5M2[b] end end
  if ty == "s8" then return function(b) return b >= 128 and b - 256 or b end end
  return function(b) return b end
end

--- The fields of a 64-bit shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format").
function M.decode_desc(d)
  local lo = tonumber(band(d, 0xffffffffLL))
  local hi = tonumber(band(rshift(d, 32), 0xffffffffLL))
  return { start = band(lo, 0x3fff) * 16, lbo = band(rshift(lo, 16), 0x3fff) * 16, sbo = band(hi, 0x3fff) * 16,
    base = band(rshift(hi, 17), 7), layout = band(rshift(hi, 30), 3) }
end
local W = { [0] = 0, [1] = 128, [2] = 64, [3] = 32 } -- layout type -> swizzle width in bytes (0: none)
local MASK = { [0] = 0, [1] = 7, [2] = 3, [3] = 1 }

--- The byte offset in shared memory of element (mn, k) of an operand read
-- through descriptor fields f, element size e, K-major (mn_major false) or
-- MN-major (PTX ISA "Shared Memory Matrix Layout"; docs/hopper.md section 3).
function M.desc_offset(f, e, mn_major, mn, k)
  local w = W[f.layout]
  local o
  if not mn_major then
    local kb = k * e
    if w == 0 then
      o = (mn % 8) * 16 + floor(mn / 8) * f.sbo + kb % 16 + floor(kb / 16) * f.lbo
    else
      o = (mn % 8) * w + floor(mn / 8) * f.sbo + kb
    end
  else
    local mb = mn * e
    if w == 0 then
      o = mb % 16 + floor(mb / 16) * f.sbo + (k % 8) * 16 + floor(k / 8) * f.lbo
    else
      o = mb % w + floor(mb / w) * f.lbo + (k % 8) * w + floor(k / 8) * f.sbo
    end
  end
  o = f.start + o
  local m = MASK[f.layout]
  if m ~= 0 then o = bxor(o, lshift(band(rshift(o, 7), m), 4)) end
  return o
end

-- Reads an operand (rows x K elements, row-major into out[r * K + k]) through a descriptor.
local function read_operand(desc, ty, mn_major, rows, K, out, site, who)
  local f = M.decode_desc(desc)
  if f.base ~= 0 then
    fail("kernel '%s': wgmma at %s: the %s descriptor has base offset %d; the simulator reads base offset 0 only " ..
      "(a buffer on its swizzle pattern's repeat)", S.kernel, where(site), who, f.base)
  end
  local e = BYTES[ty]
  local dec = decoder(ty)
  local sb = machine.smem_base()
  local chk = S.checks
  for r = 0, rows - 1 do
    for k = 0, K - 1 do
      local o = M.desc_offset(f, e, mn_major, r, k)
      if chk or o < 0 or o + e > S.smem_bytes then machine.chk_s(o, e, site, false) end
      local bits
      if e == 2 then bits = ffi.cast(u16p, sb + o)[0] elseif e == 1 then bits = ffi.cast(u8p, sb + o)[0] else
        bits = tonumber(ffi.cast(u32p, sb + o)[0])
      end
      out[r * K + k] = dec(bits)
    end
  end
end

local Abuf, Bbuf = {}, {}

-- the accumulator element (row, col) of value i of thread t of the warpgroup
local function acc_pos(t, i)
  local w, l = floor(t / 32), t % 32
  return 16 * w + floor(l / 4) + 8 * (floor(i / 2) % 2), 8 * floor(i / 4) + 2 * (l % 4) + i % 2
end
M.acc_pos = acc_pos

-- the A element (row, k) of value v of thread t (A from registers, K-major), per element size
local function areg_pos(t, v, e)
  local w, l = floor(t / 32), t % 32
  if e == 2 then
    local v0, v1, v2 = v % 2, floor(v / 2) % 2, floor(v / 4)
    return 16 * w + floor(l / 4) + 8 * v1, 2 * (l % 4) + v0 + 8 * v2
  elseif e == 4 then
    local v0, v1 = v % 2, floor(v / 2)
    return 16 * w + floor(l / 4) + 8 * v0, l % 4 + 4 * v1
  end
  local v0, v1, v2 = v % 4, floor(v / 4) % 2, floor(v / 8)
  return 16 * w + floor(l / 4) + 8 * v1, 4 * (l % 4) + v0 + 16 * v2
end
M.areg_pos = areg_pos

--- Resolves a wgmma that the 128 threads (base .. base + 127) reached: args
-- of each thread {N, ta, tb, td, mode, na, a (na values), b desc, scale_d, {acc...}}.
function M.wgmma(st, base, site)
  local a0 = st.args[base]
  local n, ta, tb, td, mode, na = a0[1], a0[2], a0[3], a0[4], a0[5], a0[6]
  local e = BYTES[ta]
  if not e or BYTES[tb] ~= e then
    fail("kernel '%s': wgmma %s x %s at %s is not simulated", S.kernel, ta, tb, machine.site_of(site).where)
  end
  local K = 32 / e
  local trans_a, trans_b = band(mode, 1) ~= 0, band(mode, 2) ~= 0
  local neg_a, neg_b = band(mode, 4) ~= 0 and -1 or 1, band(mode, 8) ~= 0 and -1 or 1
  local bi = 7 + na
  local bdesc, scale = a0[bi], a0[bi + 1]
  -- descriptors must be warpgroup-uniform
  for t = base + 1, base + 127 do
    local x = st.args[t]
    if x[bi] ~= bdesc or (na == 1 and x[7] ~= a0[7]) then
      fail("kernel '%s': wgmma at %s: thread %d of the warpgroup gives other descriptors than thread 0; they must " ..
        "be the same in all 128 threads", S.kernel, machine.site_of(site).where, t - base)
    end
  end
  local saved = S.tid
  S.tid = base
  local A, Bm = Abuf, Bbuf
  if na == 1 then
    read_operand(a0[7], ta, trans_a, 64, K, A, site, "A")
  else
    local dec = decoder(ta)
    local per = 4 / e -- elements a register
    for t = 0, 127 do
      local x = st.args[base + t]
      for r = 0, 3 do
        local reg = x[7 + r]
        for j = 0, per - 1 do
          local bits = e == 4 and reg or band(rshift(reg, 8 * e * j), e == 2 and 0xffff or 0xff)
          local row, k = areg_pos(t, r * per + j, e)
          A[row * K + k] = dec(bits)
        end
      end
    end
  end
  read_operand(bdesc, tb, trans_b, n, K, Bm, site, "B")
  S.tid = saved
  -- D = A B (+ C), in double, rounded once to the accumulator's type
  local f16acc = td == "f16"
  local per_t = f16acc and n / 4 or n / 2
  local scl = (scale and true) and true or false
  local sign = neg_a * neg_b
  for t = 0, 127 do
    local x = st.args[base + t]
    local acc = x[bi + 2]
    local out = {}
    for i = 0, n / 2 - 1 do
      local row, col = acc_pos(t, i)
      local s = 0
      local ar, bc = row * K, col * K
      for k = 0, K - 1 do s = s + A[ar + k] * Bm[bc + k] end
      s = s * sign
      local c = 0
      if scl then
        if f16acc then
          local reg = acc[floor(i / 2) + 1]
          c = N.F16[i % 2 == 0 and band(reg, 0xffff) or band(rshift(reg, 16), 0xffff)]
        else
          c = acc[i + 1]
        end
      end
      s = s + c
      if td == "f32" then
        out[i + 1] = N.f32(s)
      elseif td == "s32" then
        if band(mode, 16) ~= 0 then s = math.max(-2147483648, math.min(2147483647, s)) end
        out[i + 1] = tobit(s)
      else
        out[i + 1] = N.enc_f16(N.to_f16(s))
      end
    end
    if f16acc then
      local packed = {}
      for r = 0, per_t - 1 do packed[r + 1] = tobit(out[2 * r + 1] + out[2 * r + 2] * 65536) end
      out = packed
    end
    st.res[base + t] = out
  end
end

return M
