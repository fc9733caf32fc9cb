--- cute.pipeline: producer/consumer pipelines over mbarriers (CuTe DSL's
-- pipeline module, sm_90): a circular buffer of `num_stages` stages, each
-- with a "full" barrier (the producer filled it) and an "empty" barrier (the
-- consumers are done with it), and the states that walk it.
--
--   local pipe = cute.pipeline.PipelineTmaAsync.create {
--     num_stages = 4, tx_count = bytes_per_stage,
--     producer_group = cute.pipeline.CooperativeGroup(cute.pipeline.Agent.Thread, 1),
--     consumer_group = cute.pipeline.CooperativeGroup(cute.pipeline.Agent.Thread, 256),
--   }
--   -- producer (one thread):
--   local ps = cute.pipeline.make_pipeline_state(cute.pipeline.PipelineUserType.Producer, 4)
--   for k ... do pipe:producer_acquire(ps); <TMA into stage ps.index on pipe:producer_get_barrier(ps)>;
--     pipe:producer_commit(ps); ps:advance() end
--   -- consumers:
--   local cs = cute.pipeline.make_pipeline_state(cute.pipeline.PipelineUserType.Consumer, 4)
--   for k ... do pipe:consumer_wait(cs); <read stage cs.index>; pipe:consumer_release(cs); cs:advance() end
--
-- Phases (docs/notes/hopper-facts.md 5.1, 7.3): a fresh barrier is in phase 0, and a
-- wait for parity 1 passes at once; consumers start at phase 0 on the full
-- barriers, producers at phase 1 on the empty ones (the first num_stages
-- acquires pass), and a state flips its phase each time its index wraps.
--
-- Across a cluster (cluster_shape = {cm, cn}): CTA (m, n) of the cluster
-- (rank m + n*cm) receives multicast data from the CTAs of its row and
-- column, so a consumer release arrives on the empty barrier of each of those
-- cm + cn - 1 CTAs (lane r of each consumer warp signals the CTA of rank r),
-- and the empty barrier expects (cm + cn - 1) * consumer warps arrivals.
local core = require "cute.trace.core"
local ops = require "cute.trace.ops"
local control = require "cute.trace.control"
local sync = require "cute.trace.sync"
local sync90 = require "cute.trace.sync90"
local tensor = require "cute.trace.tensor"
local dtype = require "cute.dtype"
local L = require "cute.layout"
local err = require "cute._err"

local M = {}

local arch = sync90.arch
local emit, is_value = core.emit, core.is_value

local function need_trace(what) core.need_trace("cute.pipeline: " .. what) end

local function whole(x, lo, hi) return type(x) == "number" and x % 1 == 0 and x >= lo and x <= hi end

-- ---------------------------------------------------------------------------
-- Agents and cooperative groups

--- Who takes part in one side of a pipeline.
M.Agent = { Thread = "thread", Warp = "warp", ThreadBlock = "threadblock", ThreadBlockCluster = "cluster" }
local THREADS = { thread = 1, warp = 32 }

--- A side of a pipeline: `size` agents (threads or warps) that each arrive
-- (threads) or arrive once through an elected lane (warps).
-- @param agent cute.pipeline.Agent.Thread or Agent.Warp
-- @param size the number of agents
-- @return a group (a table)
-- @usage local producer = cute.pipeline.CooperativeGroup(cute.pipeline.Agent.Thread, 1)
function M.CooperativeGroup(agent, size)
  if agent ~= "thread" and agent ~= "warp" then
    err.raise("cute.pipeline.CooperativeGroup: agent %s: cute.pipeline.Agent.Thread or Agent.Warp", tostring(agent))
  end
  size = size or 1
  if not whole(size, 1, 1024) then
    err.raise("cute.pipeline.CooperativeGroup: size %s: a whole number of %ss from 1", tostring(size), agent)
  end
  return { agent = agent, size = size, threads = size * THREADS[agent] }
end

M.PipelineUserType = { Producer = "producer", Consumer = "consumer" }

-- ---------------------------------------------------------------------------
-- PipelineState: a stage index and a phase, walking the circular buffer

local PipelineState = {}
PipelineState.__index = function(s, k)
  if k == "index" then return s._index.value end
  if k == "phase" then return s._phase.value end
  if k == "count" then return s._count.value end
  return PipelineState[k]
end

--- The next stage: the index wraps at the number of stages, flipping the phase.
function PipelineState:advance()
  local i1 = self._index.value + 1
  local wrap = i1:eq(self.stages)
  self._index.value = ops.where(wrap, core.const(core.i32, 0), i1)
  self._phase.value = self._phase.value:bxor(ops.to(wrap, dtype.i32))
  self._count.value = self._count.value + 1
end

--- A copy that advances on its own.
function PipelineState:clone()
  return M.make_state(self.stages, self._index.value, self._phase.value, self._count.value)
end

PipelineState.__tostring = function(s) return "cute.pipeline.PipelineState(" .. s.stages .. " stages)" end

--- A state of `stages` stages at index, phase, count (values or numbers).
-- @param stages the number of stages
-- @param index the stage index
-- @param phase the phase bit (0 or 1)
-- @param count the number of advances so far
-- @return a pipeline state (state:advance(), state.index, state.phase)
-- @usage local st = cute.pipeline.make_state(4, 0, 0, 0)
function M.make_state(stages, index, phase, count)
  need_trace("a PipelineState")
  if not whole(stages, 1, 1024) then
    err.raise("cute.pipeline: the number of stages is %s, expected a whole number from 1", tostring(stages))
  end
  return setmetatable({ stages = stages, _index = control.var(dtype.i32, index or 0),
    _phase = control.var(dtype.i32, phase or 0), _count = control.var(dtype.i32, count or 0) }, PipelineState)
end

--- CuTe DSL's constructor: PipelineState(stages, count, index, phase).
-- @param stages the number of stages
-- @param count the number of advances so far
-- @param index the stage index
-- @param phase the phase bit
-- @return a pipeline state
-- @usage local st = cute.pipeline.PipelineState(4, 0, 0, 0)
function M.PipelineState(stages, count, index, phase) return M.make_state(stages, index, phase, count) end

--- The start state of a producer (index 0, phase 1: its first num_stages
-- acquires pass) or of a consumer (index 0, phase 0).
-- @param user cute.pipeline.PipelineUserType.Producer or .Consumer
-- @param stages the number of stages
-- @return a pipeline state
-- @usage local prod = cute.pipeline.make_pipeline_state(cute.pipeline.PipelineUserType.Producer, 4)
function M.make_pipeline_state(user, stages)
  if user == "producer" then return M.make_state(stages, 0, 1, 0) end
  if user == "consumer" then return M.make_state(stages, 0, 0, 0) end
  err.raise("cute.pipeline.make_pipeline_state: %s: PipelineUserType.Producer or PipelineUserType.Consumer",
    tostring(user))
end

-- ---------------------------------------------------------------------------
-- The barriers

--- i64 words of barrier storage a pipeline of num_stages stages uses (a full
-- and an empty barrier a stage).
-- @param num_stages the number of stages
-- @return a number of i64 words
-- @usage cute.pipeline.barrier_storage_size(4)  -- 8
function M.barrier_storage_size(num_stages) return 2 * num_stages end

local function linear_tid()
  local t, d = sync.thread_idx(), sync.block_dim()
  return t.x + d.x * (t.y + d.y * t.z)
end

local Pipeline = {}
Pipeline.__index = Pipeline

-- barrier i (0-based; i32 value or number) of the storage
local function bar_at(p, i)
  if type(i) == "number" and i == 0 then return p.base end
  return emit("gep", core.ptr(core.i64, "shared", 8), p.base, core.coerce(i, core.i32, "cute.pipeline stage"))
end

function Pipeline:full_barrier(s) return bar_at(self, s) end
function Pipeline:empty_barrier(s) return bar_at(self, ops.to(s, dtype.i32) + self.num_stages) end

-- A wait, bounded when the pipeline was made with max_tries (then a bool
-- value). Once a wait of this thread gave up, its later ones return false at
-- once: a broken pipeline costs one time-out a thread, not one a k-block.
function Pipeline:_wait(bar, phase)
  if not self.max_tries then
    return arch.mbarrier_wait(bar, phase, self.suspend_ns and { suspend_ns = self.suspend_ns } or nil)
  end
  local ok = control.var(dtype.bool, false)
  control.if_(ops.not_(self.failed.value), function()
    ok.value = arch.mbarrier_wait(bar, phase, { max_tries = self.max_tries, suspend_ns = self.suspend_ns })
    self.failed.value = ops.not_(ok.value)
  end)
  return ok.value
end

local function check_group(g, what, name)
  if type(g) ~= "table" or not g.agent then
    err.raise("cute.pipeline.%s.create: %s must be a cute.pipeline.CooperativeGroup", name, what)
  end
end

local function make(kind, name, o)
  need_trace(name .. ".create")
  if type(o) ~= "table" then err.raise("cute.pipeline.%s.create{...}: takes a table of options", name) end
  local stages = o.num_stages
  if not whole(stages, 1, 64) then
    err.raise("cute.pipeline.%s.create: num_stages is %s, expected a whole number from 1 to 64", name, tostring(stages))
  end
  check_group(o.producer_group, "producer_group", name)
  check_group(o.consumer_group, "consumer_group", name)
  local cs = o.cluster_shape or { 1, 1 }
  if type(cs) == "number" then cs = { cs, 1 } end
  local cm, cn = cs[1] or 1, cs[2] or 1
  if not whole(cm, 1, 16) or not whole(cn, 1, 16) or cm * cn > 16 then
    err.raise("cute.pipeline.%s.create: cluster_shape {%s, %s}: at most 16 CTAs", name, tostring(cm), tostring(cn))
  end
  if cm * cn > 1 and kind ~= "tma" then
    err.raise("cute.pipeline.%s.create: a cluster_shape is for PipelineTmaAsync (multicast consumers)", name)
  end
  local p = setmetatable({ kind = kind, name = name, num_stages = stages, producer_group = o.producer_group,
    consumer_group = o.consumer_group, cm = cm, cn = cn, max_tries = o.max_tries }, Pipeline)
  if o.suspend_ns ~= nil and not whole(o.suspend_ns, 0, 2 ^ 31 - 1) then
    err.raise("cute.pipeline.%s.create: suspend_ns %s: a whole number of nanoseconds from 0", name,
      tostring(o.suspend_ns))
  end
  p.suspend_ns = o.suspend_ns
  if o.max_tries ~= nil then
    if not whole(o.max_tries, 1, 2 ^ 31 - 1) then
      err.raise("cute.pipeline.%s.create: max_tries %s: a whole number of try_waits from 1", name,
        tostring(o.max_tries))
    end
    p.suspend_ns = o.suspend_ns or 1000 -- each try then suspends at most about a microsecond
    p.failed = control.var(dtype.bool, false)
  end
  if kind == "tma" then
    if o.tx_count == nil then
      err.raise("cute.pipeline.PipelineTmaAsync.create: tx_count (bytes a stage) is required")
    end
    if type(o.tx_count) == "number" and not whole(o.tx_count, 1, 2 ^ 20 - 1) then
      err.raise("cute.pipeline.PipelineTmaAsync.create: tx_count %s: 1 to 2^20-1 bytes a stage",
        tostring(o.tx_count))
    end
    p.tx_count = o.tx_count
    p.full_count = 1
    if cm * cn > 1 then
      if o.consumer_group.threads % 32 ~= 0 then
        err.raise("cute.pipeline.PipelineTmaAsync.create: across a cluster the consumers are whole warps (%d threads)",
          o.consumer_group.threads)
      end
      p.empty_count = (cm + cn - 1) * (o.consumer_group.threads / 32)
    else
      p.empty_count = o.consumer_group.agent == "warp" and o.consumer_group.size or o.consumer_group.threads
    end
  else
    p.full_count = o.producer_group.agent == "warp" and o.producer_group.size or o.producer_group.threads
    p.empty_count = o.consumer_group.agent == "warp" and o.consumer_group.size or o.consumer_group.threads
  end
  -- the storage: given, or a new static shared array
  if o.barrier_storage ~= nil then
    local b = o.barrier_storage
    if tensor.is_tensor(b) then b = b:ptr_at(0) end
    if not is_value(b) or core.type_of(b).kind ~= "ptr" or core.type_of(b).space ~= "shared" then
      err.raise("cute.pipeline.%s.create: barrier_storage must be a shared pointer (or smem tensor) of %d i64 words",
        name, 2 * stages)
    end
    local t = core.type_of(b)
    p.base = t.elem.name == "i64" and b or emit("ptrcast", core.ptr(core.i64, "shared", t.align), b)
  else
    p.base = tensor.make_smem_tensor(dtype.i64, L.make_layout(2 * stages), 8):ptr_at(0)
  end
  -- one thread initialises every barrier; then the fence and a barrier
  -- before anyone (or any peer CTA) uses them
  control.if_(linear_tid():eq(0), function()
    for s = 0, stages - 1 do
      arch.mbarrier_init(bar_at(p, s), p.full_count)
      arch.mbarrier_init(bar_at(p, stages + s), p.empty_count)
    end
  end)
  arch.mbarrier_init_fence()
  if o.init_sync ~= false then
    if cm * cn > 1 then
      arch.cluster_arrive_relaxed()
      arch.cluster_wait()
    else
      sync.sync_threads()
    end
  end
  return p
end

-- Runs f in one thread of the producer: the caller itself for a thread
-- agent; an elected lane for a warp agent.
local function producer_one(p, f)
  if p.producer_group.agent == "warp" then control.if_(arch.elect_one(), f) else f() end
end

--- The producer waits until stage state.index is free (the consumers released it);
-- a TMA pipeline then arms the full barrier with the stage's bytes.
function Pipeline:producer_acquire(state)
  need_trace("producer_acquire")
  local ok = self:_wait(self:empty_barrier(state.index), state.phase)
  if self.kind == "tma" then
    producer_one(self, function() arch.mbarrier_arrive_and_expect_tx(self:full_barrier(state.index), self.tx_count) end)
  end
  return ok
end

--- Whether stage state.index is free, without waiting (a bool value).
function Pipeline:producer_try_acquire(state)
  return arch.mbarrier_try_wait(self:empty_barrier(state.index), state.phase)
end

--- The producer filled stage state.index: for a TMA pipeline nothing (the
-- copies complete the transaction); otherwise each producer arrives.
function Pipeline:producer_commit(state)
  need_trace("producer_commit")
  if self.kind == "tma" then return end
  local bar = self:full_barrier(state.index)
  if self.producer_group.agent == "warp" then
    sync.sync_warp() -- the lanes' writes ordered before the one lane's arrive (its release)
    producer_one(self, function() arch.mbarrier_arrive(bar) end)
  else
    arch.mbarrier_arrive(bar)
  end
end

--- The barrier a TMA load into stage state.index completes on.
function Pipeline:producer_get_barrier(state) return self:full_barrier(state.index) end

--- The producer, before it exits, waits until the consumers released every
-- stage (so that no consumer arrives on the barriers of an exited CTA).
function Pipeline:producer_tail(state)
  need_trace("producer_tail")
  local s = state:clone()
  for _ = 1, self.num_stages do
    self:_wait(self:empty_barrier(s.index), s.phase)
    s:advance()
  end
end

--- The consumers wait until stage state.index is full.
function Pipeline:consumer_wait(state)
  need_trace("consumer_wait")
  return self:_wait(self:full_barrier(state.index), state.phase)
end

--- Whether stage state.index is full, without waiting (a bool value).
function Pipeline:consumer_try_wait(state)
  return arch.mbarrier_try_wait(self:full_barrier(state.index), state.phase)
end

--- The consumers are done with stage state.index: each arrives on its empty
-- barrier (across a cluster: on that of each CTA that multicasts into this one).
function Pipeline:consumer_release(state)
  need_trace("consumer_release")
  local bar = self:empty_barrier(state.index)
  if self.cm * self.cn == 1 then
    if self.consumer_group.agent == "warp" then
      sync.sync_warp() -- every lane's reads ordered before the one lane's arrive (its release)
      control.if_(arch.elect_one(), function() arch.mbarrier_arrive(bar) end)
    else
      arch.mbarrier_arrive(bar)
    end
    return
  end
  sync.sync_warp() -- as above: a lane arrives for the whole warp
  local cm, n = self.cm, self.cm * self.cn
  local lane, me = sync.lane_idx(), sync.block_rank_in_cluster()
  local same_row = (lane % cm):eq(me % cm)
  local same_col = (lane / cm):eq(me / cm)
  local signal = ops.and_(lane:lt(n), ops.or_(same_row, same_col))
  control.if_(signal, function() arch.mbarrier_arrive(bar, lane) end)
end

Pipeline.__tostring = function(p) return string.format("cute.pipeline.%s(%d stages)", p.name, p.num_stages) end

--- A TMA producer (arrive_expect_tx of tx_count bytes a stage, the copies
-- completing the full barriers) and thread consumers (wgmma warpgroups).
-- create{num_stages, producer_group, consumer_group, tx_count,
-- barrier_storage (optional), cluster_shape = {cm, cn} (optional),
-- max_tries (optional: bounded waits that return a bool), suspend_ns
-- (optional: each try_wait's suspend-time hint in ns; with max_tries 1000 by
-- default, else the hardware's limit), init_sync}.
-- @function PipelineTmaAsync.create
-- @param o the fields (above)
-- @return a pipeline (producer_acquire, producer_commit, consumer_wait, consumer_release, ...)
-- @usage local p = cute.pipeline.PipelineTmaAsync.create({num_stages = 4, producer_group = g1, ...})
M.PipelineTmaAsync = { create = function(o) return make("tma", "PipelineTmaAsync", o) end }

--- Async threads on both sides: producers arrive on the full barrier when
-- they filled a stage, consumers on the empty one when done with it.
-- @function PipelineAsync.create
-- @param o {num_stages, producer_group, consumer_group, barrier_storage, ...}
-- @return a pipeline
-- @usage local p = cute.pipeline.PipelineAsync.create({num_stages = 2, producer_group = g1, consumer_group = g2})
M.PipelineAsync = { create = function(o) return make("async", "PipelineAsync", o) end }

-- ---------------------------------------------------------------------------
-- Named barriers

local NamedBarrier = {}
NamedBarrier.__index = NamedBarrier

--- A named barrier (bar.sync/bar.arrive) of num_threads threads, id 1-15
-- (0 is the block's __syncthreads).
-- @param barrier_id the barrier, 1-15
-- @param num_threads the threads taking part (a multiple of 32)
-- @return a barrier (arrive, wait, arrive_and_wait)
-- @usage local nb = cute.pipeline.NamedBarrier(1, 256)
function M.NamedBarrier(barrier_id, num_threads)
  if not whole(barrier_id, 0, 15) then
    err.raise("cute.pipeline.NamedBarrier: barrier_id %s: 0 to 15", tostring(barrier_id))
  end
  if not whole(num_threads, 32, 1024) or num_threads % 32 ~= 0 then
    err.raise("cute.pipeline.NamedBarrier: num_threads %s: a multiple of 32 up to 1024", tostring(num_threads))
  end
  return setmetatable({ barrier_id = barrier_id, num_threads = num_threads }, NamedBarrier)
end
function NamedBarrier:arrive() arch.barrier_arrive(self.barrier_id, self.num_threads) end
function NamedBarrier:wait() arch.barrier(self.barrier_id, self.num_threads) end
NamedBarrier.arrive_and_wait = NamedBarrier.wait

return M
