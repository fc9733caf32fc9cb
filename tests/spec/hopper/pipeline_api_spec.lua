-- cute.pipeline's API: the barriers a pipeline makes (how many, which
-- counts), the states' walk (index, phase, count) checked on the GPU against
-- the rule, an async-thread pipeline (producer warp -> consumer warps through
-- st.shared) on the GPU, named barriers, and the errors of create.
local cute = require "cute"
local P = cute.pipeline

local function inits(ptx)
  local counts = {}
  for n in ptx:gmatch("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], (%d+);") do
    counts[#counts + 1] = tonumber(n)
  end
  table.sort(counts)
  return counts
end

-- An async pipeline: warp 0 (32 producer threads) writes stage s of k-block
-- k as k * 1000 + i (i = 0..63) with plain shared stores; warps 1 and 2 (64
-- consumers) sum their element over all k-blocks. out[c] for consumer c. With
-- `hint`, the waits are unbounded, each try_wait with that suspend-time hint
-- (fails stays 0).
local function async_kernel(stages, kb, hint)
  local function failed(ok, fails, i)
    if not hint then cute.if_(cute.not_(ok), function() cute.atomic_add(fails:ptr_at(i), 1) end) end
  end
  return cute.kernel(hint and "pipe_async_hinted" or "pipe_async", function(out, fails)
    local tid = cute.thread_idx().x
    local buf = cute.make_smem_tensor(cute.i32, cute.make_layout(stages * 64), 16)
    local pipe = P.PipelineAsync.create {
      num_stages = stages, producer_group = P.CooperativeGroup(P.Agent.Thread, 32),
      consumer_group = P.CooperativeGroup(P.Agent.Thread, 64), max_tries = not hint and 2 ^ 22 or nil,
      suspend_ns = hint,
    }
    cute.if_(tid:lt(32), function()
      local ps = P.make_pipeline_state(P.PipelineUserType.Producer, stages)
      cute.range(0, kb, function(k)
        failed(pipe:producer_acquire(ps), fails, 0)
        buf[ps.index * 64 + tid] = k * 1000 + tid
        buf[ps.index * 64 + tid + 32] = k * 1000 + tid + 32
        pipe:producer_commit(ps)
        ps:advance()
      end)
    end, function()
      local c = tid - 32
      local cs = P.make_pipeline_state(P.PipelineUserType.Consumer, stages)
      local acc = cute.var(cute.i32, 0)
      cute.range(0, kb, function()
        failed(pipe:consumer_wait(cs), fails, 1)
        acc.value = acc.value * 3 + buf[cs.index * 64 + c]
        pipe:consumer_release(cs)
        cs:advance()
      end)
      out[c] = acc.value
    end)
  end, { max_threads = 96 })
end

-- A state's walk: out[3 * j + 0..2] = index, phase, count after j advances.
local function walk_kernel(stages, steps, user)
  return cute.kernel("walk", function(out)
    local s = P.make_pipeline_state(user, stages)
    if user == "producer" then s = P.PipelineState(stages, 0, 0, 1) end -- the same start, CuTe DSL's way
    cute.range(0, steps + 1, function(j)
      out[j * 3] = s.index
      out[j * 3 + 1] = s.phase
      out[j * 3 + 2] = s.count
      s:advance()
    end)
  end)
end

local function fake(n) return cute.fake_tensor(cute.i32, n) end

describe("cute.pipeline", function()
  it("makes a full and an empty barrier a stage with the groups' arrival counts", function()
    local h = async_kernel(3, 10):with { arch = "sm_90a", cache = false }:compile(fake(64), fake(2))
    assert.same({ 32, 32, 32, 64, 64, 64 }, inits(h:ptx()))
    local tma = cute.kernel("tma_counts", function(out)
      local p = P.PipelineTmaAsync.create { num_stages = 2, tx_count = 8192,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
        consumer_group = P.CooperativeGroup(P.Agent.Warp, 8) }
      local s = P.make_pipeline_state(P.PipelineUserType.Consumer, 2)
      p:consumer_wait(s)
      p:consumer_release(s)
      out[0] = 1
    end)
    local ptx = tma:with { arch = "sm_90a", cache = false }:compile(fake(1)):ptx()
    assert.same({ 1, 1, 8, 8 }, inits(ptx)) -- warps arrive once each, through an elected lane
    assert.matches("elect%.sync", ptx)
    assert.matches("bar%.sync%s+0;", ptx) -- the init barrier (__syncthreads)
  end)

  it("suspend_ns: its waits' suspend-time hint, bounded or not", function()
    local function ptx_of(o)
      return cute.kernel("hinted", function(out)
        local p = P.PipelineTmaAsync.create { num_stages = 2, tx_count = 8192, suspend_ns = o.suspend_ns,
          max_tries = o.max_tries, producer_group = P.CooperativeGroup(P.Agent.Thread, 1),
          consumer_group = P.CooperativeGroup(P.Agent.Warp, 4) }
        local s = P.make_pipeline_state(P.PipelineUserType.Consumer, 2)
        p:consumer_wait(s)
        p:consumer_release(s)
        out[0] = 1
      end):with { arch = "sm_90a", cache = false }:compile(fake(1)):ptx()
    end
    local W = "mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[%%r%d+%], %%r%d+"
    -- unbounded: the one asm loop, with the hint or without
    assert.matches("MBWAIT%d+: " .. W .. ", 5000; @!p bra", ptx_of { suspend_ns = 5000 })
    assert.matches("MBWAIT%d+: " .. W .. "; @!p bra", ptx_of {})
    -- bounded (max_tries): the hint given, else 1000
    assert.matches(W .. ", 7000;", ptx_of { suspend_ns = 7000, max_tries = 4 })
    assert.matches(W .. ", 1000;", ptx_of { max_tries = 4 })
  end)

  it("takes its barriers from given storage (a tensor or a pointer)", function()
    local k = cute.kernel("given", function(out)
      local st = cute.make_smem_tensor(cute.i64, cute.make_layout(P.barrier_storage_size(4)), 8)
      local p = P.PipelineAsync.create { num_stages = 4, barrier_storage = st,
        producer_group = P.CooperativeGroup(P.Agent.Thread, 1), consumer_group = P.CooperativeGroup(P.Agent.Thread, 1) }
      out[0] = p.num_stages
    end)
    local h = k:with { arch = "sm_90a", cache = false }:compile(fake(1))
    assert.equal(8, #inits(h:ptx()))
    assert.matches("smem 64, 8", h:ir(), 1, true) -- one 64-byte array: the given one, nothing more
  end)

  it("has named barriers", function()
    local k = cute.kernel("named", function(out)
      local nb = P.NamedBarrier(3, 64)
      nb:arrive()
      nb:arrive_and_wait()
      out[0] = 1
    end)
    local ptx = k:with { arch = "sm_90a", cache = false }:compile(fake(1)):ptx()
    assert.matches("bar%.arrive %%r%d+, %%r%d+;", ptx)
    assert.matches("bar%.sync %%r%d+, %%r%d+;", ptx)
  end)

  local function create_error(o)
    local k = cute.kernel("bad", function(out)
      P.PipelineTmaAsync.create(o)
      out[0] = 1
    end)
    local ok, msg = pcall(function() return k:with { arch = "sm_90a", cache = false }:compile(fake(1)) end)
    assert.is_false(ok)
    return msg
  end
  local T1 = P.CooperativeGroup(P.Agent.Thread, 1)
  it("refuses bad options, naming them", function()
    assert.matches("num_stages is 0, expected a whole number from 1 to 64",
      create_error { num_stages = 0, producer_group = T1, consumer_group = T1, tx_count = 1 }, 1, true)
    assert.matches("tx_count (bytes a stage) is required",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1 }, 1, true)
    assert.matches("tx_count 2097152: 1 to 2^20-1 bytes a stage",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1, tx_count = 2 ^ 21 }, 1, true)
    assert.matches("consumer_group must be a cute.pipeline.CooperativeGroup",
      create_error { num_stages = 2, producer_group = T1, consumer_group = 128, tx_count = 64 }, 1, true)
    assert.matches("across a cluster the consumers are whole warps (1 threads)",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1, tx_count = 64,
        cluster_shape = { 2, 1 } },
      1, true)
    assert.matches("cluster_shape {8, 4}: at most 16 CTAs",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1, tx_count = 64,
        cluster_shape = { 8, 4 } },
      1, true)
    assert.matches("suspend_ns -1: a whole number of nanoseconds from 0",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1, tx_count = 64, suspend_ns = -1 }, 1,
      true)
    assert.matches("max_tries 0: a whole number of try_waits from 1",
      create_error { num_stages = 2, producer_group = T1, consumer_group = T1, tx_count = 64, max_tries = 0 }, 1, true)
    local ok, msg = pcall(P.CooperativeGroup, "block", 2)
    assert.is_false(ok)
    assert.matches("agent block: cute.pipeline.Agent.Thread or Agent.Warp", msg, 1, true)
    ok, msg = pcall(P.NamedBarrier, 2, 48)
    assert.is_false(ok)
    assert.matches("num_threads 48: a multiple of 32", msg, 1, true)
  end)

  it("walks index, phase and count by the rule #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 8 then pending("sm_80+") return end
    for _, c in ipairs { { 1, 5, "producer" }, { 3, 20, "consumer" }, { 4, 17, "producer" } } do
      local stages, steps, user = c[1], c[2], c[3]
      local out = cute.tensor(cute.i32, 3 * (steps + 1)):fill(-1)
      walk_kernel(stages, steps, user) { grid = 1, block = 1 }(out)
      local got = out:to_table()
      for j = 0, steps do
        local phase0 = user == "producer" and 1 or 0
        local want = { j % stages, (phase0 + math.floor(j / stages)) % 2, j }
        assert.same(want, { got[3 * j + 1], got[3 * j + 2], got[3 * j + 3] }, user .. " step " .. j)
      end
    end
  end)

  it("passes data from a producer warp to consumer warps through an async pipeline #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then pending("mbarrier try_wait needs sm_90") return end
    -- (the last: unbounded waits with a suspend-time hint, suspend_ns)
    for _, c in ipairs { { 1, 9 }, { 2, 40 }, { 5, 333 }, { 3, 50, 20000 } } do
      local stages, kb = c[1], c[2]
      local out, fails = cute.tensor(cute.i32, 64):fill(-5), cute.tensor(cute.i32, 2):fill(0)
      async_kernel(stages, kb, c[3]) { grid = 1, block = 96 }(out, fails)
      assert.same({ 0, 0 }, fails:to_table())
      local got = out:to_table()
      for cns = 0, 63 do
        local acc = 0
        for k = 0, kb - 1 do acc = require("bit").tobit(acc * 3 + k * 1000 + cns) end
        assert.equal(acc, got[cns + 1], string.format("%d stages, %d k-blocks, consumer %d", stages, kb, cns))
      end
    end
  end)
end)
