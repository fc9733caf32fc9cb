-- The Hopper (sm_90a) primitives on the CPU simulator, op by op against host
-- references: the simulated device's architecture; TMA's byte placement in
-- shared memory for every swizzle mode and its out-of-bounds fill (negative
-- coordinates included); the wgmma matrix descriptor's decoding against the
-- shared-memory layouts cutelua builds; mbarrier phases, parities, tokens
-- and transaction counts; elect.sync; the cluster's special registers; and
-- each mbarrier check firing on its bad kernel, beside a good one where it
-- stays silent. (The GPU specs of tests/spec/hopper run on the simulator too:
-- tests/spec/sim/gpu_specs_spec.lua.)
local bit = require "bit"
local cute = require "cute"
local hopper = require "cute.sim.hopper"
local wg = cute.nvgpu.warpgroup
local A = cute.arch

local function launch_error(f)
  local ok, e = pcall(f)
  assert.is_false(ok, "expected the launch to fail")
  return tostring(e)
end

describe("the simulator as an sm_90a device", function()
  local old
  setup(function() old = cute.current_device() end)
  teardown(function()
    cute.set_device("sim", { arch = "sm_80" })
    cute.set_device(old)
  end)

  it("reports sm_90a (compute capability 9.0, an H100's 132 SMs) when asked, sm_80 by default", function()
    cute.set_device("sim", { arch = "sm_80" })
    assert.equal("sm_80", cute.device_info().arch)
    cute.set_device("sim", { arch = "sm_90a" })
    local info = cute.device_info()
    assert.equal("sm_90a", info.arch)
    assert.same({ 9, 0 }, info.compute_capability)
    assert.equal(132, info.sm_count)
    assert.is_true(info.cluster_launch)
    cute.set_device("sim", { arch = "sm_90" }) -- taken as sm_90a
    assert.equal("sm_90a", cute.device_info().arch)
    assert.matches("the simulator is \"sm_80\" or \"sm_90a\"", select(2, pcall(cute.set_device, "sim",
      { arch = "sm_75" })))
  end)

  it("refuses a Hopper kernel while it simulates sm_80, saying how to ask for sm_90a", function()
    cute.set_device("sim", { arch = "sm_80" })
    local k = cute.kernel(function(out)
      local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
      A.mbarrier_init(bar, 1)
      out[0] = 1
    end, { arch = "sm_90a" })
    local e = launch_error(function() k { grid = 1, block = 1 }(cute.tensor(cute.i32, 1)) end)
    assert.matches("Hopper %(sm_90a%) instructions and the simulated device is sm_80", e)
    assert.matches("CUTELUA_SIM_ARCH=sm_90a", e, 1, true)
  end)
end)

describe("Hopper ops on the simulator", function()
  local old
  setup(function()
    old = cute.current_device()
    cute.set_device("sim", { arch = "sm_90a" })
  end)
  teardown(function()
    cute.set_device("sim", { arch = "sm_80" })
    cute.set_device(old)
  end)

  -- -------------------------------------------------------------------------
  -- TMA: a box of f32 (values 1, 2, ...) loaded into shared memory, whose
  -- words go out in shared-memory order

  local W, H = 40, 10 -- the tensor: W x H f32, rows of 48 (192-byte strides)
  local tma_box = cute.kernel(function(desc, out, x0, y0, bytes)
    local s = cute.make_smem_tensor(cute.f32, cute.make_layout(256), 1024)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
    local tid = cute.thread_idx().x
    cute.if_(tid:eq(0), function() A.mbarrier_init(bar, 1) end)
    cute.sync_threads()
    cute.if_(tid:eq(0), function()
      A.mbarrier_arrive_and_expect_tx(bar, bytes)
      A.tma_load(desc, s:ptr_at(0), bar, { x0, y0 })
    end)
    A.mbarrier_wait(bar, 0)
    cute.if_(tid:lt(bytes / 4), function() out[tid] = s[tid] end)
  end, { arch = "sm_90a" })

  -- where TMA puts byte o of a dense box: the 16-byte chunk bits 4-6 XOR the
  -- 128-byte row bits 7-9, masked to 1, 2 or 3 bits (written here from the
  -- PTX ISA's description, independently of cute.sim.tma)
  local function placed(o, span)
    if span == 0 then return o end
    local bits = ({ [32] = 1, [64] = 3, [128] = 7 })[span]
    return bit.bxor(o, bit.band(math.floor(o / 128), bits) * 16)
  end

  for _, swz in ipairs { { "none", 0 }, { "32B", 32 }, { "64B", 64 }, { "128B", 128 } } do
    for _, at in ipairs { { 0, 0 }, { 16, 4 }, { -3, -2 }, { 36, 9 } } do
      it(string.format("TMA places a %s-swizzled box exactly, out-of-bounds elements zero (box at %d, %d)", swz[1],
        at[1], at[2]), function()
        local src = cute.tensor(cute.f32, 48 * H) -- W x H, rows 48 apart
        local host = {}
        for y = 0, H - 1 do for x = 0, 47 do host[y * 48 + x + 1] = y * W + x + 1 end end
        src:copy_from(host)
        local bw = swz[2] == 0 and 32 or swz[2] / 4 -- the box: bw x 8 f32
        local bytes = bw * 8 * 4
        local desc = cute.tma_descriptor { dtype = cute.f32, address = src:data_ptr(), dims = { W, H },
          strides = { 192 }, box = { bw, 8 }, swizzle = swz[1] }
        local out = cute.tensor(cute.f32, 256):fill(-1)
        tma_box { grid = 1, block = 256 }(desc, out, cute.i32(at[1]), cute.i32(at[2]), cute.i32(bytes))
        local got = out:to_host()
        for l = 0, bw * 8 - 1 do
          local x, y = at[1] + l % bw, at[2] + math.floor(l / bw)
          local want = (x >= 0 and x < W and y >= 0 and y < H) and (y * W + x + 1) or 0
          local word = placed(l * 4, swz[2]) / 4
          assert.equal(want, got[word], string.format("element %d (x %d, y %d) at word %d", l, x, y, word))
        end
      end)
    end
  end

  it("refuses a TMA descriptor the simulator did not make, naming the argument", function()
    local k = cute.kernel(function(desc, out)
      A.prefetch_descriptor(desc)
      out[0] = 1
    end, { arch = "sm_90a" })
    local bogus = require("ffi").new("CuteTmaDesc")
    local e = launch_error(function() k { grid = 1, block = 1 }(bogus, cute.tensor(cute.i32, 1)) end)
    assert.matches("argument 'desc' %(#1%): it is not a simulator's TMA descriptor", e)
  end)

  -- -------------------------------------------------------------------------
  -- wgmma's matrix descriptors: the byte the simulator reads for element
  -- (mn, k) is the byte the layout cutelua builds puts it at

  local cases = {
    { "K", cute.bf16, 64 }, { "K", cute.bf16, 32 }, { "K", cute.bf16, 16 }, { "K", cute.bf16, 8 },
    { "MN", cute.bf16, 64 }, { "MN", cute.bf16, 32 }, { "MN", cute.bf16, 16 }, { "MN", cute.bf16, 8 },
    { "K", cute.e4m3, 128 }, { "K", cute.e4m3, 64 }, { "K", cute.e4m3, 32 }, { "K", cute.tf32, 32 },
    { "K", cute.tf32, 64 },
  }
  for _, c in ipairs(cases) do
    local major, dt, ext = c[1], c[2], c[3]
    it(string.format("decodes the descriptor of a %s-major %s operand (contiguous extent %d)", major, dt.name, ext),
      function()
        local e = dt.bits / 8
        local K = 32 / e -- one wgmma's K
        local mn, k = 64, K * 2 -- two k-blocks
        if major == "K" then k = math.max(ext, K) else mn = math.max(ext, 64) end
        local layout = wg.make_smem_layout_a(major, { mn, 64, k }, dt)
        local d = wg.make_smem_desc(layout, dt, major, { mn = 64 })
        for kb = 0, k / K - 1 do
          local start = 1024 + d.k_offsets_bytes[kb + 1] -- a buffer at byte 1024 (the 128B repeat)
          local lo, hi = d:words(start)
          local f = hopper.decode_desc(bit.bor(bit.lshift(0ULL + hi, 32), 0ULL + bit.band(lo, 0xffffffff) % 2 ^ 32))
          for r = 0, 63 do
            for kk = 0, K - 1 do
              local want = 1024 + layout({ r, kb * K + kk }) * e
              local got = hopper.desc_offset(f, e, major == "MN", r, kk)
              assert.equal(want, got, string.format("k-block %d, element (%d, %d)", kb, r, kk))
            end
          end
        end
      end)
  end

  -- -------------------------------------------------------------------------
  -- mbarriers: phases and parities, the token, arrival counts, transactions

  it("completes a phase on its count of arrivals and its bytes; parities and tokens as the PTX ISA has them", function()
    local k = cute.kernel(function(src, out)
      local s = cute.make_smem_tensor(cute.f32, cute.make_layout(64), 128)
      local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
      local tid = cute.thread_idx().x
      cute.if_(tid:eq(0), function()
        A.mbarrier_init(bar, 3)
        -- the phase "before" phase 0 (parity 1) counts as complete; phase 0 is not
        out[0] = A.mbarrier_test_wait(bar, 1):to(cute.i32)
      end)
      cute.sync_threads()
      -- three arrivals (one with expect_tx) and 256 bytes complete phase 0
      local tok = cute.var(cute.i64, -1)
      cute.if_(tid:eq(1), function() tok.value = A.mbarrier_arrive(bar, nil, { token = true }) end)
      cute.if_(tid:eq(2), function() A.mbarrier_arrive(bar, nil, { count = 1 }) end)
      cute.if_(tid:eq(0), function()
        A.mbarrier_arrive_and_expect_tx(bar, 256)
        A.cp_async_bulk_g2s(s:ptr_at(0), src:ptr_at(0), 256, bar)
      end)
      A.mbarrier_wait(bar, 0)
      cute.if_(tid:eq(1), function() out[1] = tok.value:to(cute.i32) end)
      cute.if_(tid:lt(64), function() out[2 + tid] = s[tid]:to(cute.i32) end)
      cute.sync_threads()
      -- phase 1: two arrivals of count 2 and 1 with no bytes; its token is 1
      cute.if_(tid:eq(0), function()
        out[66] = A.mbarrier_arrive(bar, nil, { count = 2, token = true }):to(cute.i32)
      end)
      cute.if_(tid:eq(5), function() A.mbarrier_arrive(bar) end)
      A.mbarrier_wait(bar, 1)
      cute.if_(tid:eq(0), function() out[67] = A.mbarrier_test_wait(bar, 1):to(cute.i32) end)
    end, { arch = "sm_90a" })
    local src = cute.tensor(cute.f32, 64)
    local vals = {}
    for i = 1, 64 do vals[i] = math.random(-1000, 1000) end
    src:copy_from(vals)
    local out = cute.tensor(cute.i32, 68):fill(-7)
    k { grid = 1, block = 64 }(src, out)
    local got = out:to_host()
    assert.equal(1, got[0])
    assert.equal(0, got[1]) -- phase 0's token
    for i = 0, 63 do assert.equal(vals[i + 1], got[2 + i]) end
    assert.equal(1, got[66])
    assert.equal(1, got[67])
  end)

  local function one_bar(body, block)
    return cute.kernel(function(out)
      local s = cute.make_smem_tensor(cute.f32, cute.make_layout(64), 128)
      local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
      body(cute.thread_idx().x, bar, s, out)
    end, { arch = "sm_90a", max_threads = block or 32 })
  end

  it("names a wait that can never complete (a hang on the GPU), the barrier's state and the line", function()
    local good = one_bar(function(tid, bar, _, out)
      cute.if_(tid:eq(0), function() A.mbarrier_init(bar, 2) end)
      cute.sync_threads()
      cute.if_(tid:lt(2), function() A.mbarrier_arrive(bar) end)
      A.mbarrier_wait(bar, 0)
      out[tid] = 1
    end)
    local out = cute.tensor(cute.i32, 32)
    good { grid = 1, block = 32 }(out)
    assert.equal(1, out:to_host()[31])
    local bad = one_bar(function(tid, bar, _, out2)
      cute.if_(tid:eq(0), function() A.mbarrier_init(bar, 2) end)
      cute.sync_threads()
      cute.if_(tid:eq(0), function() A.mbarrier_arrive(bar) end) -- one of the two arrivals
      A.mbarrier_wait(bar, 0)
      out2[tid] = 1
    end)
    local e = launch_error(function() bad { grid = 1, block = 32 }(out) end)
    assert.matches("deadlock in block %(0,0,0%): thread %(%d+,0,0%) waits at .*hopper_ops_spec%.lua:%d+ " ..
      "%(mbarrier%.wait%) for the phase of parity 0 of the mbarrier at shared offset %d+ %(phase 0, parity 0: " ..
      "1 of 2 arrivals pending, transaction count 0 bytes%)", e)
  end)

  it("names an arrival beyond the phase's count", function()
    local bad = one_bar(function(tid, bar, _, out)
      cute.if_(tid:eq(0), function()
        A.mbarrier_init(bar, 2)
        A.mbarrier_arrive(bar, nil, { count = 3 })
      end)
      out[tid] = 1
    end)
    local e = launch_error(function() bad { grid = 1, block = 32 }(cute.tensor(cute.i32, 32)) end)
    assert.matches("mbarrier%.arrive at .*hopper_ops_spec%.lua:%d+, in block %(0,0,0%) thread %(0,0,0%): 3 " ..
      "arrival%(s%) on the mbarrier at shared offset %d+ %(phase 0, parity 0: 2 of 2 arrivals pending", e)
    assert.matches("more arrivals than the phase expects", e)
  end)

  it("names a barrier used before its init", function()
    local bad = one_bar(function(tid, bar, _, out)
      A.mbarrier_arrive(bar)
      out[tid] = 1
    end)
    local e = launch_error(function() bad { grid = 1, block = 32 }(cute.tensor(cute.i32, 32)) end)
    assert.matches("mbarrier%.arrive at .*hopper_ops_spec%.lua:%d+.* on the mbarrier at shared offset %d+, which is " ..
      "not initialised", e)
  end)

  it("names copies delivering more bytes than expect_tx announced (a transaction-count underflow)", function()
    local function kernel(announced)
      return cute.kernel(function(src, out)
        local s = cute.make_smem_tensor(cute.f32, cute.make_layout(64), 128)
        local bar = cute.make_smem_tensor(cute.u64, cute.make_layout(1), 8):ptr_at(0)
        local tid = cute.thread_idx().x
        cute.if_(tid:eq(0), function()
          A.mbarrier_init(bar, 1)
          A.mbarrier_arrive_and_expect_tx(bar, announced)
          A.cp_async_bulk_g2s(s:ptr_at(0), src:ptr_at(0), 128, bar)
          A.cp_async_bulk_g2s(s:ptr_at(32), src:ptr_at(32), 128, bar)
        end)
        cute.sync_threads()
        A.mbarrier_wait(bar, 0)
        out[tid] = s[tid]
      end, { arch = "sm_90a" })
    end
    local src = cute.tensor(cute.f32, 64):uniform(-1, 1)
    local out = cute.tensor(cute.f32, 64)
    kernel(256) { grid = 1, block = 64 }(src, out)
    assert.same(src:to_table(), out:to_table())
    local e = launch_error(function() kernel(192) { grid = 1, block = 64 }(src, out) end)
    assert.matches("bulk%.load at .*hopper_ops_spec%.lua:%d+, in block %(0,0,0%) thread %(0,0,0%) delivers 128 " ..
      "bytes to the mbarrier at shared offset %d+ %(phase 0, parity 0: 0 of 1 arrivals pending, transaction count " ..
      "64 bytes%): more bytes than its expect_tx announced", e)
  end)

  it("names a wgmma that not all 128 threads of the warpgroup reach, and one with non-uniform descriptors", function()
    local K = require "tests.spec.hopper.wgmma_kernels"
    local c = K.case { ab = "bf16", n = 16 }
    local Am = cute.tensor(cute.bf16, { c.m, c.k }):uniform(-1, 1)
    local Bm = cute.tensor(cute.bf16, { c.ntile, c.k }):uniform(-1, 1)
    local C, D = cute.tensor(cute.f32, { c.m, c.ntile }), cute.tensor(cute.f32, { c.m, c.ntile }):fill(0 / 0)
    K.kernel(c) { grid = 1, block = 128 }(Am, Bm, C, D) -- the good launch: silent, D written
    for _, v in ipairs(D:to_table()) do assert.is_true(v == v) end
    local e = launch_error(function() K.kernel(c) { grid = 1, block = 96 }(Am, Bm, C, D) end)
    assert.matches("wgmma at .*wgmma_kernels%.lua:%d+ %(wgmma%.mma_async%) in block %(0,0,0%): thread 96 of the " ..
      "warpgroup %(threads 0%-127%) has exited or does not exist", e)
    local atom = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 8, 16 }))
    -- unswizzled K-major descriptors (LBO 128 B between the two K core matrices, SBO 256 B between 8-row
    -- groups): A at byte 0, B at byte 2048
    local desc_a = 16 * 2 ^ 32 + 8 * 65536
    local desc_b = desc_a + 128
    local k = cute.kernel(function(out)
      local s = cute.make_smem_tensor(cute.bf16, cute.make_layout(64 * 16 + 8 * 16), 1024)
      local tid = cute.thread_idx().x
      for j = 0, 8 do s[tid + 128 * j] = 1.0 end
      cute.sync_threads()
      local db = tid:eq(5):to(cute.i64) + desc_b -- thread 5: a start 16 bytes further
      local acc = cute.arch.mma_async(atom, { 0.0, 0.0, 0.0, 0.0 }, tid:to(cute.i64) * 0 + desc_a, db, false)
      out[tid] = acc[1]
    end, { arch = "sm_90a" })
    local e2 = select(2, pcall(function() k { grid = 1, block = 128 }(cute.tensor(cute.f32, 128)) end))
    assert.is_not_nil(e2)
    assert.matches("thread 5 of the warpgroup gives other descriptors than thread 0", tostring(e2))
  end)

  it("elect.sync picks the lowest lane of the mask; the leader's lane comes with it", function()
    local k = cute.kernel(function(out)
      local tid = cute.thread_idx().x
      local lane, leader = A.elect_sync()
      out[tid] = leader:to(cute.i32) + lane * 10
      cute.if_(cute.lane_idx():ge(4), function()
        out[64 + tid] = A.elect_one(0xfffffff0):to(cute.i32)
      end)
    end, { arch = "sm_90a" })
    local out = cute.tensor(cute.i32, 128):fill(-1)
    k { grid = 1, block = 64 }(out)
    local got = out:to_host()
    for t = 0, 63 do
      assert.equal(t % 32 == 0 and 1 or 0, got[t], "elect_sync in thread " .. t)
      if t % 32 >= 4 then assert.equal(t % 32 == 4 and 1 or 0, got[64 + t], "elect_one in thread " .. t) end
    end
  end)

  it("runs the CTAs of a cluster together: special registers, DSMEM stores, the cluster barrier", function()
    local k = cute.kernel(function(out)
      local s = cute.make_smem_tensor(cute.i32, cute.make_layout(32), 16)
      local tid = cute.thread_idx().x
      local rank = cute.block_rank_in_cluster()
      local n = cute.cluster_shape().x * cute.cluster_shape().y
      -- each CTA writes its rank and thread into the next CTA's shared memory
      A.cluster_sync()
      A.dsmem_store(s:ptr_at(tid), rank * 100 + tid, (rank + 1) % n)
      A.cluster_sync()
      local b = cute.block_idx().x + cute.grid_dim().x * cute.block_idx().y
      out[b * 32 + tid] = s[tid]
      cute.if_(tid:eq(0), function()
        out[256 + b] = rank + 10 * cute.cluster_idx().x + 1000 * cute.cluster_dim().x
      end)
    end, { arch = "sm_90a", cluster = { 2, 2, 1 } })
    local out = cute.tensor(cute.i32, 264):fill(-1)
    k { grid = { 4, 2 }, block = 32, cluster = { 2, 2, 1 } }(out)
    local got = out:to_host()
    for by = 0, 1 do
      for bx = 0, 3 do
        local b = bx + 4 * by
        local rank = bx % 2 + 2 * (by % 2)
        local from = (rank + 3) % 4
        for t = 0, 31 do assert.equal(from * 100 + t, got[b * 32 + t], string.format("block (%d,%d) %d", bx, by, t)) end
        assert.equal(rank + 10 * math.floor(bx / 2) + 2000, got[256 + b])
      end
    end
  end)
end)
