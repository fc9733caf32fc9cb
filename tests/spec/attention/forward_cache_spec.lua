-- cute.lib.attention.forward's plan cache on the simulator, with the sm_80
-- kernel and (the simulator as sm_90a) the Hopper module's: a repeated call
-- launches the same kernel with the same arguments without planning and
-- sees new contents, other options miss, a freed tensor is refused with
-- plan's error, calls without O or opts.lse are not cached, and dropped
-- tensors drop their plans (no entry keeps its own key alive).
local cute = require "cute"
local ffi = require "ffi"
local H = require "tests.spec.trace.helper"
local A = require "cute.lib.attention"
local tensor = require "cute.tensor"

-- Q, K, V, O (B, S, H, D) bf16 and LSE (B, H, S), fresh contents.
local function make(b, sq, sk, h, d, seed)
  local Q = cute.tensor(cute.bf16, { b, sq, h, d }, "row"):uniform(-1, 1, seed)
  local K = cute.tensor(cute.bf16, { b, sk, h, d }, "row"):uniform(-1, 1, seed + 1)
  local V = cute.tensor(cute.bf16, { b, sk, h, d }, "row"):uniform(-1, 1, seed + 2)
  local O = cute.tensor(cute.bf16, { b, sq, h, d }, "row"):fill(0 / 0)
  local lse = cute.tensor(cute.f32, { b, h, sq }, "row"):fill(0 / 0)
  return Q, K, V, O, lse
end

-- The arguments kernel k gets at the next forward call (the launch replaced by a recorder).
local function launched_args(k, call)
  local got
  k.launch = function(_, cfg, ...) got = { cfg = cfg, n = select("#", ...), ... } end
  local ok, why = pcall(call)
  k.launch = nil
  assert(ok, why)
  assert(got, "the plan's kernel was not launched")
  return got
end

-- Asserts two launches' arguments are the same: tensors the same object or
-- views of the same memory and layout, descriptors the same bytes, scalars equal.
local function same_args(want, got)
  assert.equal(table.maxn(want), got.n)
  for i = 1, got.n do
    local a, b = want[i], got[i]
    if tensor.is_device_tensor(a) then
      assert.is_true(tensor.is_device_tensor(b), "argument " .. i)
      assert.is_true(rawequal(a, b) or (a:data_ptr() == b:data_ptr() and tostring(a.layout) == tostring(b.layout)),
        "argument " .. i)
    elseif type(a) == "cdata" and ffi.istype("CuteTmaDesc", a) then
      assert.equal(ffi.string(a, ffi.sizeof(a)), ffi.string(b, ffi.sizeof(b)), "argument " .. i)
    else
      assert.equal(tostring(a), tostring(b), "argument " .. i)
    end
  end
end

for _, arch in ipairs { "sm_80", "sm_90a" } do
  local kernel_name = arch == "sm_80" and "sm80" or "sm90"
  describe("cute.lib.attention.forward's plan cache (the simulator as " .. arch .. ")", function()
    local sim = H.simulator({ arch = arch })
    setup(function()
      sim.enter()
      A.forward_cache(true)
    end)
    teardown(function()
      A.forward_cache(true)
      sim.leave()
    end)

    it("launches a repeated call from the cache: the same kernel and arguments, new contents seen", function()
      A.forward_cache(true)
      local Q, K, V, O, lse = make(1, 70, 90, 2, 64, 11)
      local opts = { lse = lse, causal = true }
      local p = A.plan(Q, K, V, O, opts)
      assert.equal(kernel_name, p.kernel_name, p.why)
      A.forward(Q, K, V, O, opts)
      cute.testing.check_attention(Q, K, V, O, lse, { causal = true, what = "first call" })
      assert.same({ entries = 1, tensors = 1, plans = 1, hits = 0 }, A.forward_cache())
      Q:uniform(-1, 1, 21) -- new contents, poisoned outputs: the cached plan, the new result
      O:fill(0 / 0)
      lse:fill(0 / 0)
      local o, l = A.forward(Q, K, V, O, opts)
      assert.equal(O, o)
      assert.equal(lse, l)
      cute.testing.check_attention(Q, K, V, O, lse, { causal = true, what = "a hit" })
      assert.same({ entries = 1, tensors = 1, plans = 1, hits = 1 }, A.forward_cache())
      -- the hit's launch is the plan's: its kernel, launch configuration and arguments
      local got = launched_args(p.kernel, function() A.forward(Q, K, V, O, opts) end)
      assert.same(p.grid, got.cfg.grid)
      assert.same(p.block, got.cfg.block)
      assert.same(p.cluster, got.cfg.cluster)
      same_args(p.args, got)
      assert.equal(2, A.forward_cache().hits)
    end)

    it("misses on other options: causal, scale, config, another lse, a stream", function()
      A.forward_cache(true)
      local Q, K, V, O, lse = make(1, 64, 64, 2, 64, 31)
      local base = { lse = lse }
      A.forward(Q, K, V, O, base)
      local config = arch == "sm_80" and { bm = 64, bn = 32, warps = 4 } or { persistent = true, max_ctas = 2 }
      local lse2 = cute.tensor(cute.f32, { 1, 2, 64 }, "row")
      local variants = {
        { lse = lse, causal = true },
        { lse = lse, scale = 0.1 },
        { lse = lse, config = config },
        { lse = lse2 },
        { lse = lse, stream = cute.stream() },
      }
      for i, opts in ipairs(variants) do
        O:fill(0 / 0)
        opts.lse:fill(0 / 0)
        A.forward(Q, K, V, O, opts)
        if opts.stream then opts.stream:synchronize() end
        cute.testing.check_attention(Q, K, V, O, opts.lse, { causal = opts.causal, scale = opts.scale,
          what = "variant " .. i })
        assert.same({ entries = i + 1, tensors = 1, plans = i + 1, hits = 0 }, A.forward_cache(), "variant " .. i)
      end
      -- the same contents in new tables: hits (a config is keyed by its contents)
      local copy = {}
      for k, v in pairs(config) do copy[k] = v end
      A.forward(Q, K, V, O, { lse = lse, config = copy })
      A.forward(Q, K, V, O, { lse = lse, scale = 0.1 })
      assert.same({ entries = 6, tensors = 1, plans = 6, hits = 2 }, A.forward_cache())
      -- (the table changed: a plan of its own)
      if arch == "sm_80" then config.bn = 64 else config.max_ctas = 3 end
      O:fill(0 / 0)
      A.forward(Q, K, V, O, { lse = lse, config = config })
      cute.testing.check_attention(Q, K, V, O, lse, { what = "the config changed" })
      assert.same({ entries = 7, tensors = 1, plans = 7, hits = 2 }, A.forward_cache())
    end)

    it("refuses a freed tensor with plan's error; calls without O or lse are not cached", function()
      A.forward_cache(true)
      local Q, K, V, O, lse = make(1, 64, 64, 1, 64, 41)
      local opts = { lse = lse }
      A.forward(Q, K, V, O, opts)
      assert.equal(1, A.forward_cache().entries)
      K:free()
      assert.matches("K was freed", H.error_of(function() A.forward(Q, K, V, O, opts) end), 1, true)
      lse:free()
      local K2 = cute.tensor(cute.bf16, { 1, 64, 1, 64 }, "row"):uniform(-1, 1, 42)
      assert.matches("opts.lse was freed", H.error_of(function() A.forward(Q, K2, V, O, opts) end), 1, true)
      assert.equal(0, A.forward_cache().hits)
      -- no O, no lse, a function in the options: planned each call (O and LSE made and returned)
      local before = A.forward_cache()
      local o1 = A.forward(Q, K2, V)
      local o2 = A.forward(Q, K2, V)
      assert.are_not.equal(o1, o2)
      local lse2 = cute.tensor(cute.f32, { 1, 1, 64 }, "row")
      local o3, l3 = A.forward(Q, K2, V, nil, { lse = lse2 })
      assert.equal(lse2, l3)
      local _, l4 = A.forward(Q, K2, V, O, {})
      local _, l5 = A.forward(Q, K2, V, O, {})
      assert.are_not.equal(l4, l5)
      cute.testing.check_attention(Q, K2, V, o3, l3, { what = "not cached" })
      assert.same(before, A.forward_cache())
    end)

    it("varlen: Lua offsets keyed by their values; device offsets with max_seqlen by identity", function()
      A.forward_cache(true)
      local cu_q, cu_k = { 0, 40, 100 }, { 0, 70, 130 }
      local Q = cute.tensor(cute.bf16, { 100, 2, 64 }, "row"):uniform(-1, 1, 51)
      local K = cute.tensor(cute.bf16, { 130, 2, 64 }, "row"):uniform(-1, 1, 52)
      local V = cute.tensor(cute.bf16, { 130, 2, 64 }, "row"):uniform(-1, 1, 53)
      local O = cute.tensor(cute.bf16, { 100, 2, 64 }, "row")
      local lse = cute.tensor(cute.f32, { 2, 100 }, "row")
      local check = { causal = true, cu_seqlens_q = cu_q, cu_seqlens_k = cu_k }
      for i = 1, 2 do
        O:fill(0 / 0)
        check.what = "Lua offsets, call " .. i
        A.forward(Q, K, V, O, { lse = lse, causal = true, cu_seqlens_q = { 0, 40, 100 }, cu_seqlens_k = cu_k })
        cute.testing.check_attention(Q, K, V, O, lse, check)
      end
      assert.same({ entries = 1, tensors = 1, plans = 1, hits = 1 }, A.forward_cache())
      local dq, dk = cute.tensor(cute.i32, 3), cute.tensor(cute.i32, 3)
      dq:copy_from(cu_q)
      dk:copy_from(cu_k)
      local opts = { lse = lse, causal = true, cu_seqlens_q = dq, cu_seqlens_k = dk, max_seqlen_q = 60,
        max_seqlen_k = 70 }
      for i = 1, 2 do
        O:fill(0 / 0)
        check.what = "device offsets, call " .. i
        A.forward(Q, K, V, O, opts)
        cute.testing.check_attention(Q, K, V, O, lse, check)
      end
      assert.same({ entries = 2, tensors = 1, plans = 2, hits = 2 }, A.forward_cache())
      -- without max_seqlen the plan reads the lengths from the tensor: planned each call
      opts.max_seqlen_q, opts.max_seqlen_k = nil, nil
      A.forward(Q, K, V, O, opts)
      A.forward(Q, K, V, O, opts)
      assert.same({ entries = 2, tensors = 1, plans = 2, hits = 2 }, A.forward_cache())
      dk:free()
      opts.max_seqlen_q, opts.max_seqlen_k = 60, 70
      assert.matches("freed", H.error_of(function() A.forward(Q, K, V, O, opts) end), 1, true)
    end)

    it("keeps no tensor alive: dropped tensors drop their plans", function()
      A.forward_cache(true)
      local alive = setmetatable({}, { __mode = "v" }) -- (weak: sees whether they were collected)
      local function use() -- (its locals gone with its frame)
        local Q, K, V, O, lse = make(1, 64, 64, 1, 64, 61)
        local opts = { lse = lse, causal = true }
        A.forward(Q, K, V, O, opts)
        A.forward(Q, K, V, O, opts)
        assert.same({ entries = 1, tensors = 1, plans = 1, hits = 1 }, A.forward_cache())
        alive.Q, alive.K, alive.V, alive.O, alive.lse = Q, K, V, O, lse
      end
      use()
      -- (one cycle must do: an entry that held Q would keep it for one more, and one
      -- that held O for ever, O being the innermost weak key)
      for cycle = 1, 2 do
        collectgarbage()
        for _, name in ipairs { "Q", "K", "V", "O", "lse" } do
          assert.is_nil(alive[name], name .. " was kept alive (cycle " .. cycle .. ")")
        end
        local s = A.forward_cache()
        assert.equal(0, s.entries)
        assert.equal(0, s.tensors)
      end
    end)
  end)
end
