-- Kernels past LuaJIT's limits for one function (a loop body over 32767
-- bytecode instructions: cute.lib.gemm's 128 x 256 x 64 tile) are compiled in
-- the big form: every value in a table, each run of straight-line code a
-- function of its own. Every kernel of lib_kernels.lua and an mma tile give
-- the same results in that form; the large GEMM tile compiles and is right.
package.path = "tests/spec/sim/?.lua;tests/spec/atom/?.lua;" .. package.path
local cute = require "cute"
local K = require "lib_kernels"
local compile = require "cute.sim.compile"

describe("the simulator's big form", function()
  local old
  setup(function()
    old = cute.current_device()
    cute.set_device("sim")
  end)
  teardown(function()
    compile.big = false
    cute.set_device(old)
  end)

  it("gives every lib kernel's results", function()
    compile.big = true
    for _, c in ipairs(K.cases) do
      local got, want = c.check(c.run())
      local worst, at = K.max_error(got, want)
      assert.is_true(worst ~= nil and worst <= (c.tol or 0),
        c.name .. ": " .. tostring(worst) .. " at " .. tostring(at))
    end
    compile.big = false
  end)

  it("runs cute.lib.gemm's largest tile (128 x 256 x 64, 8 warps), which needs it", function()
    local G = require "cute.lib.gemm"
    local M, N, Kk = 128, 256, 64
    local A = cute.tensor(cute.bf16, { M, Kk }, "row"):uniform(-1, 1, 1)
    local B = cute.tensor(cute.bf16, { Kk, N }, "row"):uniform(-1, 1, 2)
    local C = cute.tensor(cute.f32, { M, N }, "row"):fill(0 / 0)
    local cfg = {}
    for k, v in pairs(G.CONFIGS.large16) do cfg[k] = v end
    G.gemm(A, B, C, { config = cfg })
    local k = G._last_kernel
    assert.equal("gemm_bf16_128x256x64", k.name)
    assert.matches("SEG%[1%]", require("cute.sim.launch").source(k, k.last)) -- compiled in the big form
    assert.equal(M * N, cute.testing.check_gemm(A, B, C).checked)
  end)
end)
