-- Clusters, distributed shared memory and elect.sync on the GPU: round trips
-- through peers' shared memory (ld/st/atom on shared::cluster addresses from
-- mapa), remote mbarrier arrivals, the cluster barrier, getctarank; and
-- elect.sync electing one leader per warp (or per mask); a programmatic
-- dependent launch (griddepcontrol) ordering a consumer after its producer.
-- The kernels are compiled on the CPU too (sm_90a), checking their PTX.
local cute = require "cute"
local A = cute.arch

local T = 64 -- threads a CTA

-- Each CTA of a cluster of n (along x):
--  out[cta*8 + 0] = the value CTA (rank+1)%n put in its own smem (read remotely: 1000 * rank' + 7)
--  out[cta*8 + 1] = what the peers stored into this CTA's slots (sum over peers p of 100 + p, stored remotely)
--  out[cta*8 + 2] = the counter of CTA 0 after every thread of the cluster added 1 (CTA 0 only; else -1)
--  out[cta*8 + 3] = getctarank(mapa(p, r)) == r for every r (1) or not (0)
--  out[cta*8 + 4] = 1 if this CTA's barrier completed phase 0 after every CTA's thread 0 arrived on it remotely
--  out[cta*8 + 5] = this CTA's rank, out[cta*8 + 6] = the cluster's size (cluster_shape().x)
local function cluster_kernel(n)
  return cute.kernel("cluster_dsmem", function(out)
    local tid = cute.thread_idx().x
    local cta = cute.block_idx().x
    local rank = cute.block_rank_in_cluster()
    local own = cute.make_smem_tensor(cute.i32, cute.make_layout(1), 4)
    local slots = cute.make_smem_tensor(cute.i32, cute.make_layout(16), 4)
    local counter = cute.make_smem_tensor(cute.i32, cute.make_layout(1), 4)
    local bar = cute.make_smem_tensor(cute.i64, cute.make_layout(1), 8):ptr_at(0)
    cute.if_(tid:eq(0), function()
      own[0] = rank * 1000 + 7
      counter[0] = 0
      A.mbarrier_init(bar, n)
    end)
    cute.if_(tid:lt(16), function() slots[tid] = 0 end)
    A.mbarrier_init_fence()
    A.cluster_sync()
    -- remote reads, stores, atomics, arrivals
    local next_rank = (rank + 1) % n
    local peer_val = A.dsmem_load(own:ptr_at(0), next_rank)
    cute.if_(tid:lt(n), function() -- thread p stores into CTA p's slot for this rank
      A.dsmem_store(slots:ptr_at(rank), rank + 100, tid)
    end)
    A.dsmem_atomic_add(counter:ptr_at(0), 1, 0)
    local ranks_ok = cute.var(cute.i32, 1)
    for r = 0, n - 1 do
      cute.if_(cute.not_(A.getctarank(A.mapa(own:ptr_at(0), r)):eq(r)), function() ranks_ok.value = 0 end)
    end
    cute.if_(tid:eq(0), function()
      for r = 0, n - 1 do A.mbarrier_arrive(bar, r, { scope = "cluster" }) end
    end)
    local done = A.mbarrier_wait(bar, 0, { max_tries = 2 ^ 20, scope = "cluster" })
    A.cluster_sync() -- every remote access done before anyone reads the results or exits
    cute.if_(tid:eq(0), function()
      local sum = cute.var(cute.i32, 0)
      for p = 0, n - 1 do sum.value = sum.value + slots[p] end
      out[cta * 8 + 0] = peer_val
      out[cta * 8 + 1] = sum.value
      out[cta * 8 + 2] = cute.where(rank:eq(0), counter[0], cute.to(-1, cute.i32))
      out[cta * 8 + 3] = ranks_ok.value
      out[cta * 8 + 4] = cute.to(done, cute.i32)
      out[cta * 8 + 5] = rank
      out[cta * 8 + 6] = cute.cluster_shape().x
    end)
  end, { cluster = { n, 1, 1 }, max_threads = T })
end

-- elect.sync: out[tid] = the leader lane elect_sync returned; leaders[warp] =
-- how many lanes were told they lead; half[warp] = leaders among lanes 0-15
-- electing over mask 0xffff.
local function elect_kernel()
  return cute.kernel("elect", function(out, leaders, half, leader_lane)
    local tid = cute.thread_idx().x
    local warp, lane = tid / 32, cute.lane_idx()
    local l, is_leader = A.elect_sync()
    out[tid] = l
    cute.if_(is_leader, function()
      cute.atomic_add(leaders:ptr_at(warp), 1)
      leader_lane[warp] = lane
    end)
    cute.if_(A.elect_one(), function() cute.atomic_add(leaders:ptr_at(warp), 100) end)
    cute.if_(lane:lt(16), function()
      cute.if_(A.elect_one(0xffff), function() cute.atomic_add(half:ptr_at(warp), 1) end)
    end)
  end)
end

local function sm90()
  local info = cute.device_info()
  if info.compute_capability[1] < 9 or not info.cluster_launch then
    pending("needs sm_90 and cluster launch")
    return false
  end
  return true
end

describe("clusters and DSMEM", function()
  it("compile for sm_90a with the cluster shape, mapa, remote accesses and cluster barriers", function()
    for _, n in ipairs { 2, 4 } do
      local h = cluster_kernel(n):with { arch = "sm_90a", cache = false }:compile(cute.fake_tensor(cute.i32, 64))
      local ptx = h:ptx()
      assert.matches("%.reqnctapercluster " .. n .. ", 1, 1", ptx)
      assert.matches("ld%.shared::cluster%.b32", ptx)
      assert.matches("st%.shared::cluster%.b32", ptx)
      assert.matches("atom%.relaxed%.cluster%.shared::cluster%.add%.u32", ptx)
      assert.matches("mbarrier%.arrive%.release%.cluster%.shared::cluster%.b64 _", ptx)
      assert.matches("mbarrier%.try_wait%.parity%.acquire%.cluster%.shared::cta%.b64", ptx)
      assert.matches("getctarank%.shared::cluster%.u32", ptx)
      assert.matches("barrier%.cluster%.wait%.acquire%.aligned", ptx)
    end
    local h = elect_kernel():with { arch = "sm_90a", cache = false }:compile(cute.fake_tensor(cute.i32, 128),
      cute.fake_tensor(cute.i32, 4), cute.fake_tensor(cute.i32, 4), cute.fake_tensor(cute.i32, 4))
    assert.matches("elect%.sync l|p, %%r%d+;", h:ptx())
  end)

  for _, n in ipairs { 2, 4 } do
    it("round-trips through peers' shared memory in clusters of " .. n .. " #gpu", function()
      if not sm90() then return end
      local clusters = 3
      local out = cute.tensor(cute.i32, clusters * n * 8):fill(-99)
      cluster_kernel(n) { grid = clusters * n, block = T }(out)
      local got = out:to_table()
      for cta = 0, clusters * n - 1 do
        local r = cta % n
        local o = function(i) return got[cta * 8 + i + 1] end
        local sum = 0
        for p = 0, n - 1 do sum = sum + 100 + p end
        assert.same({ ((r + 1) % n) * 1000 + 7, sum, r == 0 and n * T or -1, 1, 1, r, n },
          { o(0), o(1), o(2), o(3), o(4), o(5), o(6) }, "CTA " .. cta)
      end
    end)
  end

  it("a programmatic dependent launch: the second kernel, launched early, waits for the first's writes #gpu",
    function()
      if not sm90() then return end
      -- the producer lets its dependent launch at once, then spins (globaltimer reads) before it writes
      local producer = cute.kernel("pdl_producer", function(x, iters)
        A.griddepcontrol_launch_dependents()
        local i = cute.block_idx().x * 64 + cute.thread_idx().x
        local t0 = cute.globaltimer()
        local late = 0
        for _ in cute.range(iters) do late = late + cute.to((cute.globaltimer() - t0):lt(0), cute.i32) end
        x[i] = i * 2 + 1 + late
      end, { params = { iters = cute.i32 } })
      local consumer = cute.kernel("pdl_consumer", function(x, y)
        A.griddepcontrol_wait()
        local i = cute.block_idx().x * 64 + cute.thread_idx().x
        y[i] = x[i] + 1
      end)
      local ptx = consumer:with({ arch = "sm_90a", cache = false }):compile(cute.fake_tensor(cute.i32, 128),
        cute.fake_tensor(cute.i32, 128)):ptx()
      assert.matches("griddepcontrol%.wait;", ptx)
      for round = 1, 3 do
        local x, y = cute.tensor(cute.i32, 128):fill(-7), cute.tensor(cute.i32, 128):fill(-9)
        producer { grid = 2, block = 64 }(x, require("cute.runtime").is_sim() and 20 or 2000)
        consumer { grid = 2, block = 64, pdl = true }(x, y)
        local got = y:to_table()
        for i = 0, 127 do assert.equal(i * 2 + 2, got[i + 1], "round " .. round .. ", element " .. i) end
      end
    end)

  it("elects one leader a warp, and one among the lanes of a mask #gpu", function()
    if not sm90() then return end
    local warps = 4
    local out = cute.tensor(cute.i32, 32 * warps):fill(-1)
    local leaders, half, lanes = cute.tensor(cute.i32, warps):fill(0), cute.tensor(cute.i32, warps):fill(0),
      cute.tensor(cute.i32, warps):fill(-1)
    elect_kernel() { grid = 1, block = 32 * warps }(out, leaders, half, lanes)
    local o, l, h, ll = out:to_table(), leaders:to_table(), half:to_table(), lanes:to_table()
    for w = 1, warps do
      assert.equal(101, l[w], "warp " .. (w - 1) .. ": one leader from each elect")
      assert.equal(1, h[w], "warp " .. (w - 1) .. ": one leader among lanes 0-15")
      assert.is_true(ll[w] >= 0 and ll[w] < 32)
      for lane = 0, 31 do assert.equal(ll[w], o[(w - 1) * 32 + lane + 1], "the leader's lane, told to every lane") end
    end
  end)
end)
