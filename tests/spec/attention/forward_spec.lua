-- cute.lib.attention.forward: the sm_80 FlashAttention-2 kernel on the CPU
-- simulator at small shapes (every option, ragged lengths, masked rows,
-- varlen), and the same kinds of problem at larger shapes on the GPU (#gpu),
-- each against the float64 reference with fresh inputs and poisoned outputs.
package.path = "tests/spec/attention/?.lua;" .. package.path
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local C = require "cases"

describe("cute.lib.attention.forward on the simulator", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  for _, c in ipairs(C.small) do
    it(c.name, function()
      local r = C.run(c)
      assert.is_true(r.rows > 0)
      if c.masked then assert.is_true(r.masked_rows > 0, "expected rows that see no key") end
    end)
  end

  it("makes O and LSE when not given", function()
    local Q = cute.tensor(cute.bf16, { 1, 20, 1, 64 }, "row"):uniform(-1, 1, 7)
    local K = cute.tensor(cute.bf16, { 1, 30, 1, 64 }, "row"):uniform(-1, 1, 8)
    local O, lse = cute.lib.attention.forward(Q, K, K)
    assert.same({ 1, 20, 1, 64 }, O.layout.shape)
    assert.same({ 1, 1, 20 }, lse.layout.shape)
    cute.testing.check_attention(Q, K, K, O, lse)
  end)

  it("runs in place (O = Q, the same view) and refuses outputs that overlap what other tiles read", function()
    local function inputs()
      return cute.tensor(cute.bf16, { 2, 70, 2, 64 }, "row"):uniform(-1, 1, 11),
        cute.tensor(cute.bf16, { 2, 90, 2, 64 }, "row"):uniform(-1, 1, 12),
        cute.tensor(cute.bf16, { 2, 90, 2, 64 }, "row"):uniform(-1, 1, 13)
    end
    local Q, K, V = inputs()
    local O = cute.tensor(cute.bf16, { 2, 70, 2, 64 }, "row"):fill(0 / 0)
    cute.lib.attention.forward(Q, K, V, O, { causal = true })
    local want = O:to_table()
    cute.lib.attention.forward(Q, K, V, Q, { causal = true }) -- each tile reads its Q rows, then writes them
    assert.same(want, Q:to_table())
    Q, K, V = inputs()
    local A = cute.lib.attention
    local function over(t, bytes) -- an O-shaped tensor over t's memory, from byte `bytes`
      return cute.tensor.from_ptr(t:data_ptr() + (bytes or 0), cute.bf16, { 2, 70, 2, 64 }, "row")
    end
    for _, c in ipairs {
      { function() A.forward(Q, K, V, over(K)) end, "O overlaps K in memory: the kernel writes O while other threads" },
      { function() A.forward(Q, K, V, over(V, 1024)) end, "O overlaps V in memory" },
      { function() A.forward(Q, K, V, Q:view(cute.make_layout({ 2, 70, 2, 64 }, { 8960, 64, 4480, 1 }))) end,
        "O overlaps Q in memory" }, -- (the same memory in another layout: rows that other tiles read)
      { function() A.forward(Q, K, V, nil, { lse = cute.tensor.from_ptr(K:data_ptr(), cute.f32, { 2, 2, 70 }) }) end,
        "the LSE overlaps K in memory" },
      { function()
        local O2 = cute.tensor(cute.bf16, { 2, 70, 2, 64 }, "row")
        A.forward(Q, K, V, O2, { lse = cute.tensor.from_ptr(O2:data_ptr() + 64, cute.f32, { 2, 2, 70 }) })
      end, "the LSE overlaps O in memory: the kernel writes both" },
    } do
      local ok, msg = pcall(c[1])
      assert.is_false(ok)
      assert.matches("cute%.lib%.attention: " .. c[2], msg)
      assert.matches("forward_spec%.lua:%d+:", msg)
    end
  end)
end)

describe("cute.lib.attention.forward on the GPU", function()
  -- each case with the kernel the plan picks (on an H100 the Hopper module's,
  -- where it takes the problem) and with the sm_80 kernel forced
  for _, c in ipairs(C.large) do
    it(c.name .. " #gpu", function()
      local r = C.run(c)
      assert.is_true(r.rows > 0)
    end)
    it(c.name .. ", the sm_80 kernel #gpu", function() C.run(c, "sm80") end)
  end
  for _, c in ipairs(C.small) do
    it("small: " .. c.name .. " #gpu", function() C.run(c) end)
  end

  it("runs in place (O = Q) as it runs out of place, bit for bit, on the device's default plans #gpu", function()
    for _, c in ipairs { { 64, false, 512, 32 }, { 128, true, 1000, 8 }, { 64, true, 2048, 4 } } do
      local d, causal, s, b = c[1], c[2], c[3], c[4]
      local shape = { b, s, 8, d }
      local Q = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 21)
      local K = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 22)
      local V = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 23)
      local O = cute.tensor(cute.bf16, shape, "row"):fill(0 / 0)
      cute.lib.attention.forward(Q, K, V, O, { causal = causal })
      cute.lib.attention.forward(Q, K, V, Q, { causal = causal })
      local want, got = O:to_host():doubles(), Q:to_host():doubles()
      for i = 0, cute.size(O.layout) - 1 do
        if want[i] ~= got[i] then error(string.format("d %d S %d element %d: %g in place, %g not", d, s, i, got[i],
          want[i])) end
      end
      Q:free(); K:free(); V:free(); O:free()
    end
  end)
end)
