-- cute.lib.attention.plan: the sm_80 kernel compiled for sm_80 and sm_90a
-- without a GPU (fake tensors), the Hopper module plugged in through
-- cute.lib.attention_sm90, and bad arguments refused with the user's line.
local cute = require "cute"
local A = cute.lib.attention

local function fake(dt, shape, layout)
  return cute.fake_tensor(dt, shape, layout or "row")
end

local function raises(fn)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(msg)
end

describe("cute.lib.attention.plan", function()
  it("compiles the sm_80 kernel for sm_80 and sm_90a (mma.sync, ldmatrix, cp.async; no spills at head dims 64, 128)",
    function()
      for _, d in ipairs { 64, 128 } do
        for _, arch in ipairs { "sm_80", "sm_90a" } do
          local Q = fake(cute.bf16, { 2, 4096, 16, d })
          local p = A.plan(Q, Q, Q, Q, { arch = arch, causal = d == 128, kernel = "sm80" })
          assert.equal("sm80", p.kernel_name)
          assert.same({ 32, 16, 2 }, p.grid)
          assert.equal(256, p.block)
          local h = p.kernel:compile(unpack(p.args))
          local ptx = h:ptx()
          assert.matches("mma%.sync%.aligned%.m16n8k16", ptx)
          assert.matches("ldmatrix%.sync%.aligned%.m8n8%.x4%.trans", ptx)
          assert.matches("cp%.async", ptx)
          assert.matches("ex2%.approx", ptx)
          local r = h:resources()[1]
          assert.equal(0, r.spill_stores, string.format("d %d %s: %d registers", d, arch, r.registers))
        end
      end
    end)

  it("plans every head dim, dtype and option; says why", function()
    for _, d in ipairs { 64, 128, 256 } do
      for _, dt in ipairs { cute.bf16, cute.f16 } do
        local Q = fake(dt, { 1, 100, 4, d })
        local K = fake(dt, { 1, 300, 2, d })
        local p = A.plan(Q, K, K, Q, { arch = "sm_80", window = { 64, -1 }, causal = true, scale = 0.5 })
        assert.equal(d, p.problem.d)
        assert.equal(2, p.problem.hkv)
        assert.same({ 64, 0 }, p.problem.window)
        assert.equal(0.5, p.problem.scale)
        assert.matches("sm_80 target; the sm_80 FlashAttention%-2 kernel", p.why)
      end
    end
    local Q = fake(cute.bf16, { 10, 4, 64 })
    local p = A.plan(Q, Q, Q, Q, { cu_seqlens_q = { 0, 3, 10 }, cu_seqlens_k = { 0, 5, 10 }, arch = "sm_80" })
    assert.is_true(p.problem.varlen)
    assert.equal(2, p.problem.batch)
    assert.equal(7, p.problem.sq)
    assert.same({ 4, 10 }, p.problem.lse.layout.shape)
  end)

  it("asks cute.lib.attention_sm90 on sm_90 targets, and falls back to sm_80 saying why", function()
    local saved = package.loaded["cute.lib.attention_sm90"]
    local seen
    package.loaded["cute.lib.attention_sm90"] = {
      plan = function(problem)
        seen = problem
        if problem.d == 256 then return nil, "head dim 256 is not tiled yet" end
        return { kernel = "k90", args = {}, grid = { 1, 1, 1 }, block = 384, why = "Hopper", config = {} }
      end,
    }
    local ok, e = pcall(function()
      local Q = fake(cute.bf16, { 1, 128, 2, 128 })
      local p = A.plan(Q, Q, Q, Q, { arch = "sm_90a", causal = true })
      assert.equal("k90", p.kernel)
      assert.equal("sm90", p.kernel_name)
      assert.equal(seen, p.problem)
      assert.is_true(seen.causal)
      assert.equal("sm_90a", seen.arch)
      local Q2 = fake(cute.bf16, { 1, 128, 2, 256 })
      local p2 = A.plan(Q2, Q2, Q2, Q2, { arch = "sm_90a" })
      assert.equal("sm80", p2.kernel_name)
      assert.matches("head dim 256 is not tiled yet", p2.why)
      -- sm_80 targets never ask it; opts.kernel = "sm80" forces the sm_80 kernel
      assert.equal("sm80", A.plan(Q, Q, Q, Q, { arch = "sm_80" }).kernel_name)
      assert.equal("sm80", A.plan(Q, Q, Q, Q, { arch = "sm_90a", kernel = "sm80" }).kernel_name)
      assert.matches("opts.kernel = \"sm90\"", raises(function() A.plan(Q2, Q2, Q2, Q2, { arch = "sm_90a",
        kernel = "sm90" }) end))
      -- a plan with launch(stream): forward calls it (tensors on the simulator: real memory)
      local launched
      package.loaded["cute.lib.attention_sm90"] = { plan = function(problem)
        return { launch = function(stream) launched = { problem = problem, stream = stream } end }
      end }
      local old = cute.current_device()
      cute.set_device("sim")
      local q = cute.tensor(cute.bf16, { 1, 16, 2, 64 }, "row")
      local o, lse = A.forward(q, q, q, nil, { arch = "sm_90a" })
      cute.set_device(old)
      assert.equal(o, launched.problem.o)
      assert.equal(lse, launched.problem.lse)
    end)
    package.loaded["cute.lib.attention_sm90"] = saved
    assert(ok, e)
  end)

  it("refuses bad arguments, naming what is wrong and the user's line", function()
    local Q = fake(cute.bf16, { 1, 64, 4, 64 })
    local K = fake(cute.bf16, { 1, 80, 2, 64 })
    local cases = {
      { function() A.plan(fake(cute.f32, { 1, 64, 4, 64 }), K, K) end, "Q is f32; attention takes bf16 or f16" },
      { function() A.plan(Q, fake(cute.f16, { 1, 80, 2, 64 }), K) end, "Q is bf16 and K is f16" },
      { function() A.plan(Q, K, fake(cute.bf16, { 1, 81, 2, 64 })) end,
        "K is %(1, 80, 2, 64%) and V is %(1, 81, 2, 64%)" },
      { function() A.plan(Q, fake(cute.bf16, { 1, 80, 3, 64 }), fake(cute.bf16, { 1, 80, 3, 64 })) end,
        "Q has 4 heads and K 3" },
      { function() A.plan(Q, fake(cute.bf16, { 1, 80, 2, 128 }), fake(cute.bf16, { 1, 80, 2, 128 })) end,
        "Q has head dimension 64 and K 128" },
      { function() A.plan(fake(cute.bf16, { 1, 64, 4, 64 }, "col"), K, K) end,
        "Q's head dimension D must be contiguous %(stride 1%)" },
      { function() A.plan(fake(cute.bf16, { 64, 4, 64 }), K, K) end, "Q must have 4 modes %(B, Sq, Hq, D%)" },
      { function() A.plan(Q, K, K, nil, { casual = true }) end,
        "unknown option 'casual' %(did you mean 'causal'%?%)" },
      { function() A.plan(Q, K, K, nil, { window = { 5 } }) end, "opts.window must be {left, right}" },
      { function() A.plan(Q, K, K, nil, { arch = "sm_80", config = { bmm = 64 } }) end,
        "opts.config.bmm is not one of the sm_80 kernel's fields %(did you mean 'bm'%?%) %(they are: bm, bn, "
          .. "fused_combine, pack, " },
      { function() A.plan(Q, K, K, nil, { arch = "sm_90a", config = { persistant = true } }) end,
        "opts.config.persistant is not one of the Hopper kernel's fields %(did you mean 'persistent'%?%)" },
      { function() A.plan(Q, K, K, nil, { window = { -2, 0 } }) end, "opts.window%[1%] must be an integer >= %-1" },
      { function() A.plan(Q, K, K, nil, { causal = 1 }) end, "opts.causal must be a boolean" },
      { function() A.plan(Q, K, K, nil, { scale = 0 / 0 }) end, "opts.scale must be a finite number" },
      { function() A.plan(Q, K, K, nil, { lse = fake(cute.f32, { 1, 4, 63 }) }) end,
        "opts.lse is %(1, 4, 63%); this problem's LSE is %(1, 4, 64%)" },
      { function() A.plan(Q, K, K, nil, { lse = fake(cute.f16, { 1, 4, 64 }) }) end, "opts.lse must be f32" },
      { function() A.plan(Q, K, K, nil, { cu_seqlens_q = { 0, 4 } }) end,
        "varlen attention needs both opts.cu_seqlens_q and" },
      { function()
        local q = fake(cute.bf16, { 10, 4, 64 })
        A.plan(q, q, q, nil, { cu_seqlens_q = { 0, 5, 11 }, cu_seqlens_k = { 0, 5, 10 } })
      end, "opts.cu_seqlens_q ends at 11, past the 10 rows of its tensor" },
      { function()
        local q = fake(cute.bf16, { 10, 4, 64 })
        A.plan(q, q, q, nil, { cu_seqlens_q = { 0, 6, 5 }, cu_seqlens_k = { 0, 5, 10 } })
      end, "opts.cu_seqlens_q must go up from 0 without going down; entry 3 is 5" },
      { function()
        local q = fake(cute.bf16, { 1, 64, 4, 96 })
        A.plan(q, q, q, nil, { arch = "sm_80" })
      end, "head dimension 96 is not supported by the sm_80 kernel %(it takes 64, 128 and 256%)" },
      { function() A.plan(Q, K, K, nil, { arch = "ampere" }) end, "opts.arch must be a target name" },
      { function() A.plan(Q, K, K, nil, { arch = "sm_91" }) end,
        "opts%.arch: unknown arch 'sm_91' %(known: sm_80, " },
      { function() A.forward(Q, K, K) end, "forward needs real tensors" },
    }
    for i, c in ipairs(cases) do
      local msg = raises(c[1])
      assert.matches("plan_spec%.lua:%d+: cute%.lib%.attention: " .. c[2], msg, nil, "case " .. i)
    end
  end)
end)
