--- cute.trace.sync90: Hopper synchronisation in kernels: mbarriers, proxy fences, named
-- barriers, elect, cluster barriers, distributed shared memory, setmaxnreg.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here), with CuTe DSL's names:
--
--   local bar = cute.make_smem_tensor(cute.i64, cute.make_layout(2), 8):ptr_at(0)
--   cute.if_(tid:eq(0), function() cute.arch.mbarrier_init(bar, 1) end)
--   cute.arch.mbarrier_init_fence(); cute.sync_threads()
--   cute.arch.mbarrier_arrive_and_expect_tx(bar, bytes)   -- then a TMA completing on bar
--   cute.arch.mbarrier_wait(bar, phase)                    -- loops on try_wait
--   cute.arch.cluster_arrive_relaxed(); cute.arch.cluster_wait()
--   local peer = cute.arch.mapa(p, rank)                   -- p in CTA `rank` (shared_cluster)
--   cute.arch.setmaxnreg_dec(40)                           -- the producer warpgroup
--
-- A barrier is a pointer value to a 64-bit object in shared memory, 8-byte
-- aligned (ptr_at of an i64/u64 smem tensor); a peer CTA's barrier is a
-- shared_cluster pointer (mapa), or the local one and a peer rank.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local control = require "cute.trace.control"
local dtype = require "cute.dtype"
local err = require "cute._err"

local M = {}

local emit, imm, is_value, type_of = core.emit, ops.imm, core.is_value, core.type_of

local arch = {}
M.arch = arch

local function need_trace(what) core.need_trace("cute.arch." .. what) end

-- The barrier operand as a pointer to i64 (the element type of an i64/u64
-- tensor's pointer; other pointers are refused by name). Its alignment is
-- kept: the verifier refuses one below 8.
local function bar_ptr(p, what)
  if not is_value(p) or type_of(p).kind ~= "ptr" then
    err.raise("cute.arch.%s: the barrier must be a pointer value (an i64 smem tensor's ptr_at(i)), got %s", what,
      core.describe(p))
  end
  local t = type_of(p)
  if t.space ~= "shared" and t.space ~= "shared_cluster" then
    err.raise("cute.arch.%s: the barrier is a %s pointer; mbarriers live in shared memory", what, t.space)
  end
  if t.elem.bits ~= 64 or t.elem.kind == "float" then
    err.raise("cute.arch.%s: the barrier points to %s; an mbarrier is a 64-bit integer (i64 or u64)", what,
      t.elem.name)
  end
  if t.elem.name ~= "i64" then p = emit("ptrcast", core.ptr(core.i64, t.space, t.align), p) end
  return p
end

local function i32(x, what) return core.coerce(x, core.i32, "cute.arch." .. what) end

local function scope_imm(scope, what)
  scope = scope or "cta"
  if scope ~= "cta" and scope ~= "cluster" then
    err.raise("cute.arch.%s: scope %s: an mbarrier's scope is \"cta\" or \"cluster\"", what, tostring(scope))
  end
  return imm("S", scope)
end

-- The barrier, or the same barrier in CTA `peer` of the cluster (mapa).
local function target_bar(bar, peer, what)
  bar = bar_ptr(bar, what)
  if peer == nil then return bar end
  if type_of(bar).space ~= "shared" then
    err.raise("cute.arch.%s: a peer rank maps this CTA's barrier; the barrier is already a shared_cluster address",
      what)
  end
  return M.mapa(bar, peer)
end

--- mapa: the shared_cluster address of shared pointer p's offset in the CTA
-- of rank `rank` in the cluster (cute.block_rank_in_cluster numbering).
function M.mapa(p, rank)
  if not is_value(p) or type_of(p).kind ~= "ptr" or type_of(p).space ~= "shared" then
    err.raise("cute.arch.mapa: expected a shared-memory pointer, got %s", core.describe(p))
  end
  local t = type_of(p)
  return emit("mapa", core.ptr(t.elem, "shared_cluster", t.align), p, i32(rank, "mapa rank"))
end

-- ---------------------------------------------------------------------------
-- mbarriers

--- Initialises the barrier to phase 0, expecting `count` arrivals a phase.
-- @param bar the mbarrier, a shared-memory pointer value (an i64 slot)
-- @param count the arrivals a phase expects
-- @usage cute.arch.mbarrier_init(bar, 1)
function arch.mbarrier_init(bar, count)
  need_trace("mbarrier_init")
  emit("mbarrier.init", nil, bar_ptr(bar, "mbarrier_init"), i32(count, "mbarrier_init count"))
end

--- fence.mbarrier_init.release.cluster: makes this thread's mbarrier_init
-- visible to the cluster and the async proxy; follow it with a (cluster) barrier.
-- @usage cute.arch.mbarrier_init_fence()
function arch.mbarrier_init_fence()
  need_trace("mbarrier_init_fence")
  emit("fence.mbarrier_init", nil)
end
arch.fence_barrier_init = arch.mbarrier_init_fence

--- Arrives on the barrier (on CTA `peer`'s copy of it when peer is given, or
-- on a shared_cluster barrier). opts: count (arrivals, default 1), scope
-- ("cta" default, "cluster": release at cluster scope), token (true: return
-- the phase's state token, an i64; local barriers only).
-- @param bar the mbarrier (a shared or shared_cluster pointer value)
-- @param peer optional: the CTA rank whose barrier to arrive on
-- @param opts optional: {count =, scope =, token =}
-- @return the state token with opts.token, else nothing
-- @usage cute.arch.mbarrier_arrive(empty_bar)
function arch.mbarrier_arrive(bar, peer, opts)
  need_trace("mbarrier_arrive")
  opts = opts or {}
  local b = target_bar(bar, peer, "mbarrier_arrive")
  local n = opts.count ~= nil and i32(opts.count, "mbarrier_arrive count") or nil
  return emit("mbarrier.arrive", opts.token and core.i64 or nil, b, n, nil,
    scope_imm(opts.scope, "mbarrier_arrive"))
end

--- Adds `bytes` to the barrier's transaction count, then arrives (the TMA
-- producer's arrive: the phase completes when the copies deliver the bytes).
-- @param bar the mbarrier
-- @param bytes the bytes the phase's copies will deliver
-- @param peer optional: the CTA rank whose barrier to use
-- @param opts optional: {scope =}
-- @usage cute.arch.mbarrier_arrive_and_expect_tx(full_bar, 2 * 64 * 64 * 2)
function arch.mbarrier_arrive_and_expect_tx(bar, bytes, peer, opts)
  need_trace("mbarrier_arrive_and_expect_tx")
  opts = opts or {}
  emit("mbarrier.arrive.expect_tx", nil, target_bar(bar, peer, "mbarrier_arrive_and_expect_tx"),
    i32(bytes, "mbarrier_arrive_and_expect_tx bytes"), nil, scope_imm(opts.scope, "mbarrier_arrive_and_expect_tx"))
end

--- Adds `bytes` to the barrier's transaction count without arriving.
-- @param bar the mbarrier
-- @param bytes the bytes to add
-- @param peer optional: the CTA rank whose barrier to use
-- @param opts optional: {scope =}
-- @usage cute.arch.mbarrier_expect_tx(full_bar, 8192)
function arch.mbarrier_expect_tx(bar, bytes, peer, opts)
  need_trace("mbarrier_expect_tx")
  opts = opts or {}
  emit("mbarrier.expect_tx", nil, target_bar(bar, peer, "mbarrier_expect_tx"),
    i32(bytes, "mbarrier_expect_tx bytes"), nil, scope_imm(opts.scope, "mbarrier_expect_tx"))
end

--- Whether the phase of parity `phase` (0 or 1) completed, waiting up to a
-- hardware time limit (a bool value). opts: suspend_ns (a suspend-time
-- hint), scope ("cluster": acquire at cluster scope).
-- @param bar the mbarrier
-- @param phase the parity, 0 or 1 (a number or value)
-- @param opts optional: {suspend_ns =, scope =}
-- @return a bool value
-- @usage local done = cute.arch.mbarrier_try_wait(bar, phase)
function arch.mbarrier_try_wait(bar, phase, opts)
  need_trace("mbarrier_try_wait")
  opts = opts or {}
  local hint = opts.suspend_ns ~= nil and i32(opts.suspend_ns, "mbarrier_try_wait suspend_ns") or nil
  return emit("mbarrier.try_wait", core.bool, bar_ptr(bar, "mbarrier_try_wait"),
    i32(phase, "mbarrier_try_wait phase"), hint, scope_imm(opts.scope, "mbarrier_try_wait"))
end

--- Whether the phase of parity `phase` completed, without waiting.
-- @param bar the mbarrier
-- @param phase the parity, 0 or 1
-- @param opts optional: {scope =}
-- @return a bool value
-- @usage local done = cute.arch.mbarrier_test_wait(bar, phase)
function arch.mbarrier_test_wait(bar, phase, opts)
  need_trace("mbarrier_test_wait")
  opts = opts or {}
  return emit("mbarrier.test_wait", core.bool, bar_ptr(bar, "mbarrier_test_wait"),
    i32(phase, "mbarrier_test_wait phase"), nil, scope_imm(opts.scope, "mbarrier_test_wait"))
end

--- Waits until the phase of parity `phase` completed (a loop on try_wait).
-- opts.max_tries (a number): give up after that many try_waits and return
-- a bool value, true when the phase completed (for tests that must not hang).
-- opts.suspend_ns: each try_wait's suspend-time hint (without it the
-- hardware's own time limit), so that a waiting thread tries less often.
-- @param bar the mbarrier
-- @param phase the parity, 0 or 1
-- @param opts optional: {max_tries =, suspend_ns =, scope =}
-- @return with opts.max_tries, a bool value (completed); else nothing
-- @usage cute.arch.mbarrier_wait(full_bar, phase)
function arch.mbarrier_wait(bar, phase, opts)
  need_trace("mbarrier_wait")
  opts = opts or {}
  bar = bar_ptr(bar, "mbarrier_wait")
  phase = i32(phase, "mbarrier_wait phase")
  if opts.max_tries == nil then
    local hint = opts.suspend_ns ~= nil and i32(opts.suspend_ns, "mbarrier_wait suspend_ns") or nil
    emit("mbarrier.wait", nil, bar, phase, hint, scope_imm(opts.scope, "mbarrier_wait"))
    return
  end
  local done = control.var(dtype.bool, false)
  local tries = control.var(dtype.i32, 0)
  control.while_(function() return ops.and_(ops.not_(done.value), tries.value:lt(opts.max_tries)) end, function()
    done.value = arch.mbarrier_try_wait(bar, phase, opts)
    tries.value = tries.value + 1
  end)
  return done.value
end

--- Invalidates the barrier before its memory is used for something else.
-- @param bar the mbarrier
-- @usage cute.arch.mbarrier_inval(bar)
function arch.mbarrier_inval(bar)
  need_trace("mbarrier_inval")
  emit("mbarrier.inval", nil, bar_ptr(bar, "mbarrier_inval"))
end

-- ---------------------------------------------------------------------------
-- Fences, named barriers, elect

local PROXY = { async = "fence.proxy.async", ["async.shared"] = "fence.proxy.async.shared",
  ["async.shared::cta"] = "fence.proxy.async.shared", ["async.global"] = "fence.proxy.async.global" }

--- fence.proxy: kind "async" (every space), "async.shared" (this CTA's
-- shared memory) or "async.global": orders this thread's generic-proxy
-- accesses with its async-proxy ones (TMA, bulk copies, wgmma operands).
-- space: "cta" with "async.shared" (CuTe DSL's fence_proxy(kind, space)).
-- @param kind "async", "async.shared" or "async.global"
-- @param space optional: "cta" with "async.shared"
-- @usage cute.arch.fence_proxy("async.shared", "cta")
function arch.fence_proxy(kind, space)
  need_trace("fence_proxy")
  if space ~= nil and not (space == "cta" and (kind == "async.shared" or kind == "async.shared::cta")) then
    err.raise("cute.arch.fence_proxy: space %s: only \"cta\", with kind \"async.shared\"", tostring(space))
  end
  local op = PROXY[kind or "async"]
  if not op then
    err.raise("cute.arch.fence_proxy: kind %s: \"async\", \"async.shared\" or \"async.global\"", tostring(kind))
  end
  emit(op, nil)
end
--- fence.proxy.async: orders this thread's generic-proxy accesses with its async-proxy ones, in every space.
-- @usage cute.arch.fence_proxy_async()
function arch.fence_proxy_async() arch.fence_proxy("async") end
--- fence.proxy.async.shared::cta: shared-memory writes (st.shared, stmatrix)
-- before a TMA store or wgmma reads them.
-- @usage cute.arch.fence_view_async_shared()
function arch.fence_view_async_shared() arch.fence_proxy("async.shared") end

--- griddepcontrol.wait (sm_90+): waits until the grids this one depends on
-- have completed and their memory writes are visible. Only a grid launched
-- with pdl = true (a programmatic dependent launch) can start before the
-- stream's previous kernel ends; for any other it returns at once. Call it
-- before the first read of what that kernel wrote.
-- @usage cute.arch.griddepcontrol_wait()
function arch.griddepcontrol_wait()
  need_trace("griddepcontrol_wait")
  emit("griddepcontrol.wait", nil)
end

--- griddepcontrol.launch_dependents (sm_90+): this CTA no longer holds back
-- the stream's next kernel when that one is launched with pdl = true (it may
-- start once every CTA of this grid has said so or exited; it still waits
-- for this grid's memory at griddepcontrol.wait).
-- @usage cute.arch.griddepcontrol_launch_dependents()
function arch.griddepcontrol_launch_dependents()
  need_trace("griddepcontrol_launch_dependents")
  emit("griddepcontrol.launch_dependents", nil)
end

--- bar.sync id, count: the named barrier `id` (0-15) over `count` threads
-- (a multiple of 32; default the whole block).
-- @param id the barrier, 0-15
-- @param count optional: the threads taking part (a multiple of 32)
-- @usage cute.arch.barrier(1, 256)
function arch.barrier(id, count)
  need_trace("barrier")
  id = i32(id or 0, "barrier id")
  if count ~= nil then
    emit("barrier.named", nil, id, i32(count, "barrier count"), nil, imm("B", "sync"))
  else
    emit("barrier.named", nil, id, nil, nil, imm("B", "sync"))
  end
end

--- bar.arrive id, count: signals the named barrier without waiting (the
-- producer side of a handshake); count is required.
-- @param id the barrier, 0-15
-- @param count the threads taking part (a multiple of 32)
-- @usage cute.arch.barrier_arrive(1, 256)
function arch.barrier_arrive(id, count)
  need_trace("barrier_arrive")
  if count == nil then err.raise("cute.arch.barrier_arrive(id, count): count (threads) is required") end
  emit("barrier.named", nil, i32(id, "barrier_arrive id"), i32(count, "barrier_arrive count"), nil, imm("B", "arrive"))
end

local FULL = 0xffffffff

--- elect.sync: true in one leader lane of the mask's lanes (all of which
-- execute it; default the whole warp).
-- @param mask optional: the lanes (default all)
-- @return a bool value
-- @usage cute.if_(cute.arch.elect_one(), function() ... end)
function arch.elect_one(mask)
  need_trace("elect_one")
  return emit("elect.sync", core.bool, core.coerce(mask or FULL, core.u32, "cute.arch.elect_one mask"))
end

--- elect.sync with the leader's lane: returns lane (i32), is_leader (bool).
-- @param mask optional: the lanes (default all)
-- @return the leader's lane (an i32 value) and is_leader (a bool value)
-- @usage local lane, leader = cute.arch.elect_sync()
function arch.elect_sync(mask)
  need_trace("elect_sync")
  local r = emit("elect.sync", core.struct { core.i32, core.bool },
    core.coerce(mask or FULL, core.u32, "cute.arch.elect_sync mask"))
  return emit("extract", core.i32, r, nil, nil, 0), emit("extract", core.bool, r, nil, nil, 1)
end

-- ---------------------------------------------------------------------------
-- Clusters and distributed shared memory

--- barrier.cluster.arrive (release): every thread of every CTA of the cluster arrives.
-- @usage cute.arch.cluster_arrive()
function arch.cluster_arrive()
  need_trace("cluster_arrive")
  emit("barrier.cluster.arrive", nil)
end
--- barrier.cluster.arrive.relaxed: no memory ordering (after mbarrier_init_fence).
-- @usage cute.arch.cluster_arrive_relaxed()
function arch.cluster_arrive_relaxed()
  need_trace("cluster_arrive_relaxed")
  emit("barrier.cluster.arrive.relaxed", nil)
end
--- barrier.cluster.wait (acquire).
-- @usage cute.arch.cluster_wait()
function arch.cluster_wait()
  need_trace("cluster_wait")
  emit("barrier.cluster.wait", nil)
end
--- cluster_arrive then cluster_wait: the cluster's threads meet here.
-- @usage cute.arch.cluster_sync()
function arch.cluster_sync()
  arch.cluster_arrive()
  arch.cluster_wait()
end

--- mapa: the address of shared pointer p in the shared memory of CTA `rank` of the cluster (a shared_cluster pointer).
-- @param p a shared-memory pointer value
-- @param rank the CTA's rank in the cluster
-- @return a shared_cluster pointer value
-- @usage local q = cute.arch.mapa(s:ptr_at(0), peer)
function arch.mapa(p, rank)
  need_trace("mapa")
  return M.mapa(p, rank)
end
arch.map_dsmem_ptr = arch.mapa

--- The rank in the cluster of the CTA a shared_cluster pointer belongs to.
-- @param p a shared_cluster pointer value
-- @return an i32 value
-- @usage local r = cute.arch.getctarank(q)
function arch.getctarank(p)
  need_trace("getctarank")
  if not is_value(p) or type_of(p).kind ~= "ptr" or type_of(p).space ~= "shared_cluster" then
    err.raise("cute.arch.getctarank: expected a shared_cluster pointer (from cute.arch.mapa), got %s",
      core.describe(p))
  end
  return emit("getctarank", core.i32, p)
end

-- A shared pointer mapped to CTA `rank` (or a shared_cluster pointer as it is).
local function remote(p, rank, what)
  if not is_value(p) or type_of(p).kind ~= "ptr" then
    err.raise("cute.arch.%s: expected a pointer value, got %s", what, core.describe(p))
  end
  local sp = type_of(p).space
  if sp == "shared_cluster" and rank == nil then return p end
  if sp ~= "shared" or rank == nil then
    err.raise("cute.arch.%s: expected a shared pointer and a CTA rank, or a shared_cluster pointer", what)
  end
  return M.mapa(p, rank)
end

--- ld.shared::cluster: the element at p in CTA `rank` (or at a shared_cluster p).
-- @param p a shared (with rank) or shared_cluster pointer value
-- @param rank optional: the CTA's rank
-- @return the element's value
-- @usage local v = cute.arch.dsmem_load(s:ptr_at(i), peer)
function arch.dsmem_load(p, rank)
  need_trace("dsmem_load")
  local q = remote(p, rank, "dsmem_load")
  return emit("load", type_of(q).elem, q, nil, nil, 0, 0, 0)
end

--- st.shared::cluster: v to p in CTA `rank` (or to a shared_cluster p).
-- @param p a shared (with rank) or shared_cluster pointer value
-- @param v the value
-- @param rank optional: the CTA's rank
-- @usage cute.arch.dsmem_store(s:ptr_at(i), v, peer)
function arch.dsmem_store(p, v, rank)
  need_trace("dsmem_store")
  local q = remote(p, rank, "dsmem_store")
  emit("store", nil, q, core.coerce(v, type_of(q).elem, "cute.arch.dsmem_store"), nil, 0, 0, 0)
end

--- atom.shared::cluster: old = *p; *p = old OP v in CTA `rank`; op "add"
-- (default), "min", "max", "and", "or", "xor", "exch", "inc", "dec".
-- @param p a shared (with rank) or shared_cluster pointer value
-- @param v the operand
-- @param rank optional: the CTA's rank
-- @param op optional: the operation (default "add")
-- @param opts optional: {order =, scope =}
-- @return the old value
-- @usage local old = cute.arch.dsmem_atomic(s:ptr_at(0), 1, 0, "add")
function arch.dsmem_atomic(p, v, rank, op, opts)
  need_trace("dsmem_atomic")
  opts = opts or {}
  local q = remote(p, rank, "dsmem_atomic")
  local et = type_of(q).elem
  local name = op or "add"
  if et.kind == "uint" and (name == "min" or name == "max") then name = "u" .. name end
  return emit("atom", et, q, core.coerce(v, et, "cute.arch.dsmem_atomic"), nil, imm("A", name, "dsmem_atomic op"),
    imm("O", opts.order or "relaxed", "dsmem_atomic order"), imm("S", opts.scope or "cluster", "dsmem_atomic scope"))
end
--- dsmem_atomic(p, v, rank, "add", opts).
-- @param p a shared (with rank) or shared_cluster pointer value
-- @param v the operand
-- @param rank optional: the CTA's rank
-- @param opts optional: {order =, scope =}
-- @return the old value
-- @usage cute.arch.dsmem_atomic_add(count:ptr_at(0), 1, 0)
function arch.dsmem_atomic_add(p, v, rank, opts) return arch.dsmem_atomic(p, v, rank, "add", opts) end

-- ---------------------------------------------------------------------------
-- Registers

local function setmaxnreg(op, what)
  return function(n)
    need_trace(what)
    if type(n) ~= "number" or n % 1 ~= 0 or n < 24 or n > 256 or n % 8 ~= 0 then
      err.raise("cute.arch.%s(n): n is a Lua number of registers from 24 to 256, a multiple of 8; got %s", what,
        tostring(n))
    end
    emit(op, nil, nil, nil, nil, n)
  end
end

--- setmaxnreg.inc n: this warpgroup's registers per thread rise to n (all
-- four warps execute it). The kernel needs a register cap at entry
-- (max_threads and min_blocks: cute.launch_bounds), and compiles through
-- the toolkit's ptxas (docs/compiler.md).
-- @function setmaxnreg_inc
-- @param n the registers per thread, 24-256, a multiple of 8 (a Lua number)
-- @usage cute.arch.setmaxnreg_inc(232)
arch.setmaxnreg_inc = setmaxnreg("setmaxnreg.inc", "setmaxnreg_inc")
--- setmaxnreg.dec n: registers per thread fall to n, returned to the CTA's pool.
-- @function setmaxnreg_dec
-- @param n the registers per thread, 24-256, a multiple of 8 (a Lua number)
-- @usage cute.arch.setmaxnreg_dec(40)
arch.setmaxnreg_dec = setmaxnreg("setmaxnreg.dec", "setmaxnreg_dec")
arch.warpgroup_reg_alloc = arch.setmaxnreg_inc
arch.warpgroup_reg_dealloc = arch.setmaxnreg_dec
arch.setmaxregister_increase = arch.setmaxnreg_inc
arch.setmaxregister_decrease = arch.setmaxnreg_dec

return M
