-- The Hopper synchronisation ops (cute.arch.mbarrier_*, fences, named
-- barriers, elect, cluster barriers, mapa/DSMEM, setmaxnreg): each one in the
-- PTX with its operands, the cubin built by ptxas; every verifier rejection,
-- as the IR is built and from the verifier on a raw module; the Lua names'
-- own errors at the user's line.
local cute = require "cute"
local ir = require "cute.ir"
local H = require "tests.spec.trace.helper"
local A = cute.arch

-- One kernel with every primitive; its PTX is read below.
local function all_ops(out)
  local bars = cute.make_smem_tensor(cute.i64, cute.make_layout(2), 8)
  local data = cute.make_smem_tensor(cute.i32, cute.make_layout(32), 16)
  local b0, b1 = bars:ptr_at(0), bars:ptr_at(1)
  local tid = cute.thread_idx().x
  cute.if_(tid:eq(0), function()
    A.mbarrier_init(b0, 128)
    A.mbarrier_init(b1, tid + 1)
  end)
  A.mbarrier_init_fence()
  A.cluster_arrive_relaxed()
  A.cluster_wait()
  local tok = A.mbarrier_arrive(b0, nil, { token = true })
  A.mbarrier_arrive(b0, nil, { count = 3 })
  A.mbarrier_arrive(b0, nil, { scope = "cluster" })
  A.mbarrier_arrive(b1, 1) -- on CTA 1's b1
  A.mbarrier_arrive_and_expect_tx(b0, 4096)
  A.mbarrier_arrive_and_expect_tx(b1, tid, 0) -- CTA 0's b1, a byte count in a register
  A.mbarrier_expect_tx(b0, 256)
  local ok = A.mbarrier_try_wait(b0, 0, { suspend_ns = 1000 })
  local ok2 = A.mbarrier_test_wait(b0, 1, { scope = "cluster" })
  A.mbarrier_wait(b1, tid:band(1))
  A.mbarrier_wait(b1, 1, { suspend_ns = 10000000 }) -- a constant hint
  A.mbarrier_wait(b0, 0, { suspend_ns = tid }) -- a hint in a register
  local r = A.mbarrier_wait(b0, 1, { max_tries = 100 })
  A.fence_proxy("async")
  A.fence_view_async_shared()
  A.fence_proxy("async.global")
  A.fence_proxy("async.shared", "cta")
  A.barrier(1, 128)
  A.barrier_arrive(2, 64)
  local e = A.elect_one()
  local lane, lead = A.elect_sync(0xffff)
  local pp = A.mapa(data:ptr_at(3), 1)
  local rk = A.getctarank(pp)
  local v = A.dsmem_load(data:ptr_at(0), 1)
  A.dsmem_store(data:ptr_at(1), v + 1, 0)
  local old = A.dsmem_atomic_add(data:ptr_at(2), 5, 1)
  local mx = A.dsmem_atomic(pp, 7, nil, "max")
  A.mbarrier_inval(b0)
  A.griddepcontrol_launch_dependents()
  A.griddepcontrol_wait()
  A.cluster_arrive()
  A.cluster_sync()
  out[tid] = cute.to(ok, cute.i32) + cute.to(ok2, cute.i32) * 2 + cute.to(r, cute.i32) * 4
    + cute.to(e, cute.i32) * 8 + lane + cute.to(lead, cute.i32) * 16 + rk + old + mx + tok:to(cute.i32)
end

local ptx_cache
local function ptx()
  if not ptx_cache then
    local h = H.compile(all_ops, { cute.fake_tensor(cute.i32, 128) },
      { arch = "sm_90a", cluster = { 2, 1, 1 }, max_threads = 128, cache = false })
    assert.equal("\127ELF", h:cubin():sub(1, 4))
    ptx_cache = h:ptx()
  end
  return ptx_cache
end

local R, N = "%%r%d+", "%%rd%d+"
local function has(pattern, count)
  local p = ptx()
  local n = 0
  for _ in p:gmatch(pattern) do n = n + 1 end
  if count then assert.equal(count, n, pattern) else assert.is_true(n > 0, "no " .. pattern .. " in the PTX") end
end

describe("Hopper sync primitives in the PTX (sm_90a)", function()
  it("mbarrier.init with constant and register counts, and its fence", function()
    has("mbarrier%.init%.shared::cta%.b64 %[" .. R .. "%], 128;", 1)
    has("mbarrier%.init%.shared::cta%.b64 %[" .. R .. "%], " .. R .. ";", 1)
    has("fence%.mbarrier_init%.release%.cluster;", 1)
  end)

  it("mbarrier.arrive: the token, `_`, a count, release at cluster scope, a peer CTA's barrier", function()
    has("mbarrier%.arrive%.shared::cta%.b64 " .. N .. ", %[" .. R .. "%];", 1)
    has("{ %.reg %.b64 st; mbarrier%.arrive%.shared::cta%.b64 st, %[" .. R .. "%], " .. R .. "; }", 1)
    has("{ %.reg %.b64 st; mbarrier%.arrive%.release%.cluster%.shared::cta%.b64 st, %[" .. R .. "%]; }", 1)
    has("mbarrier%.arrive%.shared::cluster%.b64 _, %[" .. R .. "%];", 1)
  end)

  it("arrive.expect_tx (local and peer), expect_tx", function()
    has("mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[" .. R .. "%], 4096;", 1)
    has("mbarrier%.arrive%.expect_tx%.shared::cluster%.b64 _, %[" .. R .. "%], " .. R .. ";", 1)
    has("mbarrier%.expect_tx%.relaxed%.cta%.shared::cta%.b64 %[" .. R .. "%], 256;", 1)
  end)

  it("try_wait.parity with a suspend hint, test_wait with cluster acquire, the wait loops, inval", function()
    has("mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[" .. R .. "%], " .. R .. ", 1000;", 1)
    has("mbarrier%.test_wait%.parity%.acquire%.cluster%.shared::cta%.b64 p, %[" .. R .. "%], " .. R .. ";", 1)
    has("mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[" .. R .. "%], " .. R .. ";", 2) -- the two waits
    -- the unbounded wait: one asm looping on try_wait; the bounded one: a loop of try_waits in the IR
    has("{ %.reg %.pred p; MBWAIT%d+: mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[" .. R .. "%], " .. R
      .. "; @!p bra MBWAIT%d+; }", 1)
    -- the unbounded waits with a suspend-time hint (opts.suspend_ns): a constant, a register
    has("{ %.reg %.pred p; MBWAIT%d+: mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[" .. R .. "%], " .. R
      .. ", 10000000; @!p bra MBWAIT%d+; }", 1)
    has("{ %.reg %.pred p; MBWAIT%d+: mbarrier%.try_wait%.parity%.shared::cta%.b64 p, %[" .. R .. "%], " .. R
      .. ", " .. R .. "; @!p bra MBWAIT%d+; }", 1)
    has("mbarrier%.inval%.shared::cta%.b64 %[" .. R .. "%];", 1)
  end)

  it("griddepcontrol (programmatic dependent launches)", function()
    has("griddepcontrol%.launch_dependents;", 1)
    has("griddepcontrol%.wait;", 1)
  end)

  it("proxy fences, named barriers, elect.sync", function()
    has("fence%.proxy%.async;", 1)
    has("fence%.proxy%.async%.shared::cta;", 2)
    has("fence%.proxy%.async%.global;", 1)
    has("bar%.sync " .. R .. ", " .. R .. ";", 1)
    has("bar%.arrive " .. R .. ", " .. R .. ";", 1)
    has("elect%.sync l|p, " .. R .. ";", 2)
  end)

  it("cluster barriers, mapa, getctarank, ld/st/atom on shared::cluster", function()
    has("barrier%.cluster%.arrive%.relaxed%.aligned;", 1)
    has("barrier%.cluster%.arrive%.release%.aligned;", 2)
    has("barrier%.cluster%.wait%.acquire%.aligned;", 2)
    has("mapa%.shared::cluster%.u32 " .. R .. ", " .. R .. ", " .. R .. ";")
    has("getctarank%.shared::cluster%.u32 " .. R .. ", " .. R .. ";", 1)
    has("ld%.shared::cluster%.b32 " .. R .. ", %[" .. R .. "%];", 1)
    has("st%.shared::cluster%.b32 %[" .. R .. "%], " .. R .. ";", 1)
    has("atom%.relaxed%.cluster%.shared::cluster%.add%.u32 " .. R .. ", %[" .. R .. "%], " .. R .. ";", 1)
    has("atom%.relaxed%.cluster%.shared::cluster%.max%.s32 " .. R .. ", %[" .. R .. "%], " .. R .. ";", 1)
  end)

  it("setmaxnreg.inc/dec with their immediates (and the CuTe DSL aliases)", function()
    local h = H.compile(function(out)
      local wg = cute.thread_idx().x / 128
      cute.if_(wg:eq(0), function() A.warpgroup_reg_dealloc(40) end, function() A.setmaxnreg_inc(232) end)
      cute.if_(wg:eq(1), function() A.setmaxregister_decrease(24) end)
      out[cute.thread_idx().x] = 1
    end, { cute.fake_tensor(cute.i32, 384) }, { arch = "sm_90a", max_threads = 384, min_blocks = 1, cache = false })
    local p = h:ptx()
    assert.equal(1, H.count(p, "setmaxnreg.dec.sync.aligned.u32 40;"))
    assert.equal(1, H.count(p, "setmaxnreg.inc.sync.aligned.u32 232;"))
    assert.equal(1, H.count(p, "setmaxnreg.dec.sync.aligned.u32 24;"))
  end)
end)

-- Builds one op in a fresh sm_90a kernel (or `target`) and returns its error.
local function refuse(build, target)
  local m = ir.module { target = target or "sm_90a" }
  local k = m:kernel("k")
  m:set_loc("sync.lua", 7, "k")
  local v = {
    bar = k:op("smem", "ptr<i64, shared, 8>", { 16, 8 }),
    bar4 = k:op("smem", "ptr<i64, shared, 4>", { 16, 4 }),
    wbar = k:op("smem", "ptr<i32, shared, 8>", { 16, 8 }),
    gbar = k:param("ptr<i64, global, 8>"),
    cbar = k:param("ptr<i64, shared_cluster, 8>"),
    i32 = k:const("i32", 1), i64 = k:const("i64", 1), f32 = k:const("f32", 1),
  }
  local ok, msg = pcall(build, k, v)
  assert.is_false(ok, "expected a refusal")
  assert.matches("sync%.lua:7 %(k%): error: ", msg)
  m:free()
  return msg
end

describe("the verifier refuses", function()
  local cases = {
    { "a barrier that is not a shared pointer", "the barrier is ptr<i64, global, 8>, expected a shared pointer",
      function(k, v) k:op("mbarrier.init", nil, v.gbar, v.i32) end },
    { "a peer's barrier for init", "this op works on the CTA's own barriers only",
      function(k, v) k:op("mbarrier.init", nil, v.cbar, v.i32) end },
    { "a peer's barrier for try_wait", "this op works on the CTA's own barriers only",
      function(k, v) k:op("mbarrier.try_wait", nil, v.cbar, v.i32, { "cta" }) end },
    { "a barrier that is not 64-bit", "an mbarrier is a 64-bit object",
      function(k, v) k:op("mbarrier.inval", nil, v.wbar) end },
    { "a barrier less than 8-byte aligned", "is 4-byte aligned: an mbarrier needs 8",
      function(k, v) k:op("mbarrier.init", nil, v.bar4, v.i32) end },
    { "an arrival count of 0", "arrival count 0: 1 to 2^20-1",
      function(k, v) k:op("mbarrier.init", nil, v.bar, k:const("i32", 0)) end },
    { "an arrival count of 2^20", "arrival count 1048576: 1 to 2^20-1",
      function(k, v) k:op("mbarrier.arrive", nil, v.bar, k:const("i32", 2 ^ 20), { "cta" }) end },
    { "an i64 arrival count", "the arrival count is i64, expected i32",
      function(k, v) k:op("mbarrier.init", nil, v.bar, v.i64) end },
    { "a gpu-scope mbarrier op", "scope gpu: an mbarrier's scope is cta or cluster",
      function(k, v) k:op("mbarrier.arrive", nil, v.bar, { "gpu" }) end },
    { "a state token that is not i64", "the result is f32: the state token is i64",
      function(k, v) k:op("mbarrier.arrive", "f32", v.bar, { "cta" }) end },
    { "a state token from a peer's barrier", "gives no state token",
      function(k, v) k:op("mbarrier.arrive", "i64", v.cbar, { "cta" }) end },
    { "2^20 transaction bytes", "1048576 transaction bytes: 0 to 2^20-1",
      function(k, v) k:op("mbarrier.arrive.expect_tx", nil, v.bar, k:const("i32", 2 ^ 20), { "cta" }) end },
    { "f32 transaction bytes", "the transaction byte count is f32, expected i32",
      function(k, v) k:op("mbarrier.expect_tx", nil, v.bar, v.f32, { "cta" }) end },
    { "parity 2", "parity 2: 0 or 1",
      function(k, v) k:op("mbarrier.test_wait", nil, v.bar, k:const("i32", 2), { "cta" }) end },
    { "a wait for parity 3", "parity 3: 0 or 1",
      function(k, v) k:op("mbarrier.wait", nil, v.bar, k:const("i32", 3), { "cta" }) end },
    { "a wait on a peer's barrier", "this op works on the CTA's own barriers only",
      function(k, v) k:op("mbarrier.wait", nil, v.cbar, v.i32, { "cluster" }) end },
    { "an i64 suspend hint", "the suspend-time hint is i64, expected i32",
      function(k, v) k:op("mbarrier.try_wait", nil, v.bar, v.i32, v.i64, { "cta" }) end },
    { "a wait's i64 suspend hint", "the suspend-time hint is i64, expected i32",
      function(k, v) k:op("mbarrier.wait", nil, v.bar, v.i32, v.i64, { "cta" }) end },
    { "elect.sync with an f32 result", "the result is f32: i1 (the leader) or {i32, i1}",
      function(k, v) k:op("elect.sync", "f32", v.i32) end },
    { "elect.sync with an i64 mask", "the mask is i64, expected i32",
      function(k, v) k:op("elect.sync", "i1", v.i64) end },
    { "mapa of a global pointer", "expected a shared pointer (this CTA's address to map)",
      function(k, v) k:op("mapa", nil, v.gbar, v.i32) end },
    { "mapa with an i64 rank", "the CTA rank is i64, expected i32",
      function(k, v) k:op("mapa", nil, v.bar, v.i64) end },
    { "getctarank of a shared pointer", "expected a shared_cluster pointer (from mapa)",
      function(k, v) k:op("getctarank", nil, v.bar) end },
    { "setmaxnreg 16", "16 registers: setmaxnreg takes 24 to 256, a multiple of 8",
      function(k) k:op("setmaxnreg.dec", nil, { 16 }) end },
    { "setmaxnreg 264", "264 registers: setmaxnreg takes 24 to 256, a multiple of 8",
      function(k) k:op("setmaxnreg.inc", nil, { 264 }) end },
    { "setmaxnreg 100", "100 registers: setmaxnreg takes 24 to 256, a multiple of 8",
      function(k) k:op("setmaxnreg.inc", nil, { 100 }) end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() assert.matches(c[2], refuse(c[3]), 1, true) end)
  end

  local features = {
    { "mbarrier.init", "sm_80", "MBARRIER_TX", "(sm_90, sm_90a",
      function(k, v) k:op("mbarrier.init", nil, v.bar, v.i32) end },
    { "mbarrier.try_wait", "sm_80", "MBARRIER_TX", "(sm_90, sm_90a",
      function(k, v) k:op("mbarrier.try_wait", nil, v.bar, v.i32, { "cta" }) end },
    { "fence.proxy.async", "sm_80", "BULK_COPY", "(sm_90, sm_90a", function(k) k:op("fence.proxy.async", nil) end },
    { "elect.sync", "sm_89", "ELECT", "(sm_90, sm_90a", function(k, v) k:op("elect.sync", "i1", v.i32) end },
    { "barrier.cluster.wait", "sm_80", "CLUSTER", "(sm_90, sm_90a", function(k) k:op("barrier.cluster.wait", nil) end },
    { "mapa", "sm_80", "DSMEM", "(sm_90, sm_90a", function(k, v) k:op("mapa", nil, v.bar, v.i32) end },
    { "griddepcontrol.wait", "sm_89", "GRIDDEP", "(sm_90, sm_90a", function(k) k:op("griddepcontrol.wait", nil) end },
    { "griddepcontrol.launch_dependents", "sm_80", "GRIDDEP", "(sm_90, sm_90a",
      function(k) k:op("griddepcontrol.launch_dependents", nil) end },
    { "setmaxnreg.inc", "sm_90", "SETMAXNREG", "(sm_90a, sm_100a",
      function(k) k:op("setmaxnreg.inc", nil, { 232 }) end },
  }
  for _, c in ipairs(features) do
    it(c[1] .. " on " .. c[2] .. ", naming " .. c[3], function()
      local msg = refuse(c[5], c[2])
      assert.matches(c[1] .. " needs " .. c[3] .. ", which " .. c[2] .. " lacks (", msg, 1, true)
      assert.matches(c[4], msg, 1, true)
    end)
  end

  it("the same ops from the verifier when built raw", function()
    local raw = ir.module { target = "sm_90a", check = false }
    local k = raw:kernel("r")
    local b = k:op("smem", "ptr<i64, shared, 4>", { 16, 4 })
    k:op("mbarrier.init", nil, b, k:const("i32", 0))
    k:op("setmaxnreg.inc", nil, { 20 })
    local ok, msg = pcall(raw.verify, raw)
    assert.is_false(ok)
    assert.matches("is 4-byte aligned: an mbarrier needs 8", msg, 1, true)
    assert.matches("arrival count 0", msg, 1, true)
    assert.matches("20 registers: setmaxnreg takes 24 to 256", msg, 1, true)
    raw:free()
  end)
end)

-- The error of compiling a kernel whose body is fn, which must point at this
-- file's line `line` (where fn calls the refused function).
local function error_at_line(fn, line, target)
  local msg = H.error_of(function()
    H.compile(fn, { cute.fake_tensor(cute.i32, 128) }, { arch = target or "sm_90a", cache = false })
  end)
  assert.matches("sync_ops_spec%.lua:" .. line .. ": ", msg)
  return msg
end
local function here() return debug.getinfo(2, "l").currentline end

describe("cute.arch sync functions refuse at the user's line", function()
  it("setmaxnreg counts that are not 24..256 in steps of 8", function()
    local line = here() + 1
    local msg = error_at_line(function(_) A.setmaxnreg_dec(30) end, line)
    assert.matches("cute.arch.setmaxnreg_dec(n): n is a Lua number of registers from 24 to 256, a multiple of 8; "
      .. "got 30", msg, 1, true)
  end)
  it("a barrier that is not a 64-bit integer in shared memory", function()
    local line = here() + 1
    local msg = error_at_line(function(x) A.mbarrier_init(x:ptr_at(0), 1) end, line)
    assert.matches("the barrier is a global pointer; mbarriers live in shared memory", msg, 1, true)
    line = here() + 2
    msg = error_at_line(function(_)
      A.mbarrier_init(cute.make_smem_tensor(cute.f64, cute.make_layout(1), 8):ptr_at(0), 1)
    end, line)
    assert.matches("the barrier points to f64; an mbarrier is a 64-bit integer", msg, 1, true)
  end)
  it("a barrier less than 8-byte aligned, from the verifier", function()
    local line = here() + 3
    local msg = error_at_line(function(_)
      local t = cute.make_smem_tensor(cute.i32, cute.make_layout(4), 4)
      A.mbarrier_init(t:ptr_at(0):cast(nil, cute.i64), 1)
    end, line)
    assert.matches("mbarrier.init: the barrier ptr<i64, shared, 4> is 4-byte aligned: an mbarrier needs 8", msg, 1,
      true)
  end)
  it("bar.arrive without a thread count, an unknown proxy, a peer rank on a peer address", function()
    local line = here() + 1
    local msg = error_at_line(function(_) A.barrier_arrive(3) end, line)
    assert.matches("count (threads) is required", msg, 1, true)
    line = here() + 1
    msg = error_at_line(function(_) A.fence_proxy("tensormap") end, line)
    assert.matches("kind tensormap: \"async\", \"async.shared\" or \"async.global\"", msg, 1, true)
    line = here() + 3
    msg = error_at_line(function(_)
      local b = cute.make_smem_tensor(cute.i64, cute.make_layout(1), 8):ptr_at(0)
      A.mbarrier_arrive(A.mapa(b, 1), 0)
    end, line)
    assert.matches("already a shared_cluster address", msg, 1, true)
  end)
  it("an mbarrier op for a target without it (sm_80), naming the feature", function()
    local line = here() + 2
    local msg = error_at_line(function(_)
      A.mbarrier_init(cute.make_smem_tensor(cute.i64, cute.make_layout(1), 8):ptr_at(0), 1)
    end, line, "sm_80")
    assert.matches("mbarrier.init needs MBARRIER_TX, which sm_80 lacks", msg, 1, true)
  end)
  it("griddepcontrol for a target without it (sm_80), at the user's line", function()
    local line = here() + 1
    local msg = error_at_line(function(_) A.griddepcontrol_wait() end, line, "sm_80")
    assert.matches("griddepcontrol.wait needs GRIDDEP, which sm_80 lacks", msg, 1, true)
  end)
end)
