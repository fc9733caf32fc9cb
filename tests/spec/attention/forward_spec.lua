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
end)
