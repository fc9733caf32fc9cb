-- A pipeline stress test: a producer warp fills STAGES shared-memory stages
-- with non-tensor bulk copies (cp.async.bulk global -> shared, completing on
-- the stage's full barrier: the TMA producer's protocol) for KB k-blocks,
-- and two consumer warpgroups fold every stage into an order-sensitive hash
-- (acc = acc * 3 + x, 32-bit). A wrong phase lets a consumer read a stage
-- before it is filled or a producer overwrite one still being read (a wrong
-- hash); a wrong expect-tx count never completes a phase (a hang, which the
-- bounded waits turn into a failure count). On the CPU the same kernels are
-- compiled to PTX and checked for the protocol's instructions.
local cute = require "cute"
local bit = require "bit"
local P = cute.pipeline
local A = cute.arch

local STAGE = 1024 -- i32 elements a stage (4 KB)
local CONSUMERS = 256 -- two warpgroups
local MAX_TRIES = 2 ^ 22

-- The kernel: warpgroup 0 is the producer (its warp 0 issues), warpgroups 1
-- and 2 consume. `producer` is "warp" (an elected lane issues) or "thread".
-- With a cluster of `csize` CTAs (along x), the CTAs of a cluster work on
-- the same k-blocks (cluster c reads blocks from c * kb on): CTA r copies the
-- r-th 1/csize of each stage and multicasts it into every CTA of the
-- cluster, so a stage may only be refilled once the consumers of all of them
-- released it (the cluster's empty-barrier protocol). out[cta * 256 + c].
local function stress_kernel(stages, kb, producer, csize)
  csize = csize or 1
  local part = STAGE / csize
  return cute.kernel("pipe_stress", function(src, out, fails)
    local tid = cute.thread_idx().x
    local warp = tid / 32
    local buf = cute.make_smem_tensor(cute.i32, cute.make_layout(stages * STAGE), 128)
    local pgroup = producer == "warp" and P.CooperativeGroup(P.Agent.Warp, 1) or P.CooperativeGroup(P.Agent.Thread, 1)
    local pipe = P.PipelineTmaAsync.create {
      num_stages = stages, tx_count = STAGE * 4, producer_group = pgroup,
      consumer_group = P.CooperativeGroup(P.Agent.Thread, CONSUMERS), max_tries = MAX_TRIES,
      cluster_shape = csize > 1 and { csize, 1 } or nil,
    }
    local cta = cute.block_idx().x
    local rank = csize > 1 and cute.block_rank_in_cluster() or 0
    local first = (cta / csize) * kb -- this cluster's first k-block
    local is_producer = producer == "warp" and warp:eq(0) or tid:eq(0)
    cute.if_(is_producer, function()
      local ps = P.make_pipeline_state(P.PipelineUserType.Producer, stages)
      cute.range(0, kb, function(k)
        local ok = pipe:producer_acquire(ps)
        cute.if_(cute.not_(ok), function() cute.atomic_add(fails:ptr_at(0), 1) end)
        local issue = function()
          local dst = buf:ptr_at(ps.index * STAGE + rank * part):addr()
          local from = src:ptr_at((first + k) * STAGE + rank * part):cast("generic"):addr()
          local bar = pipe:producer_get_barrier(ps):addr()
          if csize == 1 then
            cute.asm("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
              "r,l,r,r", { dst, from, cute.to(part * 4, cute.i32), bar }, { memory = true })
          else
            cute.asm("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
              .. " [$0], [$1], $2, [$3], $4;", "r,l,r,r,h",
              { dst, from, cute.to(part * 4, cute.i32), bar, cute.to(2 ^ csize - 1, cute.i16) }, { memory = true })
          end
        end
        if producer == "warp" then cute.if_(A.elect_one(), issue) else issue() end
        pipe:producer_commit(ps)
        ps:advance()
      end)
      pipe:producer_tail(ps)
    end)
    cute.if_(tid:ge(128), function()
      local c = tid - 128
      local cs = P.make_pipeline_state(P.PipelineUserType.Consumer, stages)
      local acc = cute.var(cute.i32, 0)
      cute.range(0, kb, function()
        local ok = pipe:consumer_wait(cs)
        cute.if_(cute.not_(ok), function() cute.atomic_add(fails:ptr_at(1), 1) end)
        for j = 0, STAGE / CONSUMERS - 1 do
          acc.value = acc.value * 3 + buf[cs.index * STAGE + c + CONSUMERS * j]
        end
        pipe:consumer_release(cs)
        cs:advance()
      end)
      out[cta * CONSUMERS + c] = acc.value
    end)
    if csize > 1 then A.cluster_sync() end -- no CTA leaves while peers may still write into it
  end, { max_threads = 384, min_blocks = 1, cluster = csize > 1 and { csize, 1, 1 } or nil })
end

-- The hash each consumer thread should find, for k-blocks first .. first + kb - 1.
local function reference(vals, first, kb)
  local want = {}
  for c = 0, CONSUMERS - 1 do
    local acc = 0
    for k = first, first + kb - 1 do
      for j = 0, STAGE / CONSUMERS - 1 do acc = bit.tobit(acc * 3 + vals[k * STAGE + c + CONSUMERS * j + 1]) end
    end
    want[c + 1] = acc
  end
  return want
end

-- Runs the kernel over `clusters` clusters of csize CTAs and checks every
-- consumer's hash and that no wait gave up.
local function run(stages, kb, producer, csize, clusters)
  csize, clusters = csize or 1, clusters or 1
  local ctas = csize * clusters
  local src = cute.tensor(cute.i32, clusters * kb * STAGE):uniform(-100000, 100000, os.time() + stages * 7 + kb)
  local vals = src:to_table()
  local out = cute.tensor(cute.i32, ctas * CONSUMERS):fill(-12345)
  local fails = cute.tensor(cute.i32, 2):fill(0)
  stress_kernel(stages, kb, producer, csize) { grid = ctas, block = 384 }(src, out, fails)
  local f = fails:to_table()
  assert.same({ 0, 0 }, f, "waits that gave up (producer, consumers)")
  local got = out:to_table()
  for cta = 0, ctas - 1 do
    local want = reference(vals, math.floor(cta / csize) * kb, kb)
    for c = 1, CONSUMERS do
      if got[cta * CONSUMERS + c] ~= want[c] then
        error(string.format("%d stages, %d k-blocks, cluster %d: CTA %d consumer %d has %d, expected %d", stages, kb,
          csize, cta, c - 1, got[cta * CONSUMERS + c], want[c]))
      end
    end
  end
end

local function need_sm90()
  local info = cute.device_info()
  if info.compute_capability[1] < 9 then
    pending("needs sm_90")
    return false
  end
  return true
end

describe("cute.pipeline stress", function()
  it("compiles a warp-specialised TMA pipeline with the protocol's instructions", function()
    local h = stress_kernel(6, 100, "warp"):with { arch = "sm_90a" }:compile(cute.fake_tensor(cute.i32, 100 * STAGE),
      cute.fake_tensor(cute.i32, CONSUMERS), cute.fake_tensor(cute.i32, 2))
    local ptx = h:ptx()
    -- 12 barriers initialised: 6 full expecting 1 arrival, 6 empty expecting 256
    local full, empty = 0, 0
    for n in ptx:gmatch("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], (%d+);") do
      if n == "1" then full = full + 1 elseif n == "256" then empty = empty + 1 end
    end
    assert.same({ 6, 6 }, { full, empty })
    assert.matches("fence%.mbarrier_init%.release%.cluster;", ptx)
    assert.matches("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%%r%d+%], 4096;", ptx)
    -- bounded waits (max_tries): try_wait with the pipeline's suspend hint
    assert.matches("mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[%%r%d+%], %%r%d+, 1000;", ptx)
    assert.matches("elect%.sync", ptx)
    assert.matches("cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes", ptx)
  end)

  it("compiles the cluster version with multicast bulk copies and remote releases", function()
    for _, cs in ipairs { 2, 4 } do
      local h = stress_kernel(4, 40, "thread", cs):with { arch = "sm_90a" }:compile(
        cute.fake_tensor(cute.i32, 40 * STAGE), cute.fake_tensor(cute.i32, cs * CONSUMERS),
        cute.fake_tensor(cute.i32, 2))
      local ptx = h:ptx()
      assert.matches("%.reqnctapercluster " .. cs .. ", 1, 1", ptx)
      assert.matches("mapa%.shared::cluster%.u32", ptx)
      assert.matches("mbarrier%.arrive%.shared::cluster%.b64 _, %[%%r%d+%];", ptx)
      assert.matches("barrier%.cluster%.arrive%.relaxed%.aligned;", ptx)
      assert.matches("multicast::cluster", ptx)
      assert.matches("bar%.warp%.sync", ptx) -- a lane releases for its warp: the warp's reads ordered first
      -- the empty barriers expect (cs + 1 - 1) * 8 consumer warps arrivals
      assert.matches("mbarrier%.init%.shared::cta%.b64 %[%%r%d+%], " .. cs * 8 .. ";", ptx)
    end
  end)

  it("passes every k-block through few and many stages, a warp or a thread producing #gpu", function()
    if not need_sm90() then return end
    run(1, 37, "thread")
    run(2, 64, "warp")
    run(6, 257, "warp")
    run(8, 1000, "thread")
  end)

  it("passes every k-block across clusters of 2 and 4 with multicast #gpu", function()
    if not need_sm90() then return end
    run(4, 203, "warp", 2, 3)
    run(3, 150, "thread", 4, 2)
  end)
end)

