-- Every simple kernel of cute.lib runs on the CPU simulator at small sizes
-- (edges included) and matches a reference computed here; the simulator's
-- checks (bounds, races, uninitialised shared memory, barriers) stay silent
-- on all of them.
package.path = "tests/spec/sim/?.lua;" .. package.path
local H = require "tests.spec.trace.helper"
local K = require "lib_kernels"

describe("cute.lib on the simulator", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  for _, c in ipairs(K.cases) do
    it(c.name, function()
      local got, want = c.check(c.run())
      local worst, at = K.max_error(got, want)
      assert.is_not_nil(worst, at)
      assert.is_true(#got > 0)
      assert.is_true(worst <= (c.tol or 0), string.format("%s: error %g at %d (tolerance %g)", c.name, worst, at,
        c.tol or 0))
    end)
  end
end)
