-- cute.gemm's plan cache, exercised on the simulator (device tensors without a
-- GPU): a repeated call reuses its plan and sees new contents, other options
-- get their own plan, opts.config is keyed by its contents, a C made by the call is not cached,
-- a freed tensor is refused, and dropped tensors drop their plans.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local G = require "cute.lib.gemm"

describe("cute.gemm's plan cache (on the simulator)", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  local function count(t)
    local n = 0
    for _ in pairs(t or {}) do n = n + 1 end
    return n
  end

  it("reuses a call's plan, keyed by the tensors and the options", function()
    local cache = G._plan_cache
    local A = cute.tensor(cute.bf16, { 64, 32 }, "row"):uniform(-1, 1, 1)
    local B = cute.tensor(cute.bf16, { 32, 48 }, "row"):uniform(-1, 1, 2)
    local C = cute.tensor(cute.f32, { 64, 48 }, "row"):fill(0 / 0)
    cute.gemm(A, B, C)
    cute.testing.check_gemm(A, B, C, { what = "first call" })
    local key, plan = next(cache[A][B][C])
    A:uniform(-1, 1, 3) -- new contents: the same plan, the new product
    C:fill(0 / 0)
    cute.gemm(A, B, C)
    assert.equal(plan, cache[A][B][C][key])
    cute.testing.check_gemm(A, B, C, { what = "second call" })
    cute.gemm(A, B, C, { alpha = 2 }) -- other options: a plan of their own
    cute.testing.check_gemm(A, B, C, { alpha = 2, what = "alpha 2" })
    assert.equal(2, count(cache[A][B][C]))
    -- opts.config: keyed by its contents at the call (the same contents in a new table, the same plan;
    -- the table changed, a plan of its own)
    local config = { bm = 64, bn = 64, bk = 32, stages = 2, wm = 2, wn = 2 }
    C:fill(0 / 0)
    cute.gemm(A, B, C, { kernel = "sm80", config = config })
    cute.testing.check_gemm(A, B, C, { what = "configured" })
    assert.equal(3, count(cache[A][B][C]))
    cute.gemm(A, B, C, { kernel = "sm80", config = { bm = 64, bn = 64, bk = 32, stages = 2, wm = 2, wn = 2 } })
    assert.equal(3, count(cache[A][B][C]))
    config.stages = 3
    C:fill(0 / 0)
    cute.gemm(A, B, C, { kernel = "sm80", config = config })
    cute.testing.check_gemm(A, B, C, { what = "configured, 3 stages" })
    assert.equal(4, count(cache[A][B][C]))
    -- a misspelt field is refused, not ignored
    assert.has_error(function()
      cute.gemm(A, B, C, { kernel = "sm80", config = { bm = 64, bn = 64, bk = 32, stagse = 2, wm = 2, wn = 2 } })
    end, "cute.gemm: opts.config.stagse is not one of the mma.sync kernel's fields (did you mean 'stages'?) (they are: "
      .. "bk, bm, bn, copy_branch, copy_late, frag_buffers, group, ldmatrix, min_blocks, persistent, smem_epilogue, "
      .. "stages, wm, wn)")
    assert.equal(4, count(cache[A][B][C]))
    local made = cute.gemm(A, B) -- C made by the call: nothing kept for it
    cute.testing.check_gemm(A, B, made, { what = "made C" })
    assert.equal(1, count(cache[A][B]))
    local C2 = cute.tensor(cute.f32, { 64, 48 }, "row")
    C2:free()
    assert.has_error(function() cute.gemm(A, B, C2) end, "cute.gemm: C was freed (or its device was reset)")
    A, B, C, C2, made = nil, nil, nil, nil, nil -- luacheck: ignore 311 (dropped so that the GC takes them)
    collectgarbage()
    collectgarbage()
    assert.equal(0, count(cache))
  end)

  it("refuses a C that overlaps A or B (other tiles still read them), before planning", function()
    local A = cute.tensor(cute.f32, { 32, 32 }, "row"):uniform(-1, 1, 5)
    local B = cute.tensor(cute.f32, { 32, 32 }, "col"):uniform(-1, 1, 6)
    for _, c in ipairs {
      { function() cute.gemm(A, B, A) end, "C overlaps A in memory" },
      { function() cute.gemm(A, B, cute.tensor.from_ptr(B:data_ptr() + 128, cute.f32, { 32, 32 }, "row")) end,
        "C overlaps B in memory" },
    } do
      local ok, msg = pcall(c[1])
      assert.is_false(ok)
      assert.matches("cute%.gemm: " .. c[2] .. ": the kernel writes C while other threads still read", msg)
      assert.matches("gemm_cache_spec%.lua:%d+:", msg)
    end
    local C = cute.tensor(cute.f32, { 32, 32 }, "row")
    cute.gemm(A, B, C) -- (beside them: fine)
    A:free(); B:free(); C:free()
  end)
end)
