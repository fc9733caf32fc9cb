-- The GPU specs whose kernels the simulator runs pass on it, GPU-tagged tests
-- included, where CI has no GPU: the tracer's GPU kernels (integer division,
-- conversions, loops, block reductions with atomics, shared-memory reversal,
-- tiled copies, device functions), its generated code's results,
-- cute.testing's checks of a cute.gemm result (the mma.sync GEMM of cute.lib),
-- the one-tile GEMMs of every MMA atom family in every major order, the
-- preprocessor's kernels, Philox's device streams against the host's, and
-- .npy files of device tensors. (atom/gemm_spec passes too, in ~90 s: left
-- to the GPU machine.)
local SPECS = { "tests/spec/trace/gpu_spec.lua", "tests/spec/trace/codegen_spec.lua",
  "tests/spec/testing/testing_spec.lua", "tests/spec/atom/mma_spec.lua", "tests/spec/pre/gpu_spec.lua",
  "tests/spec/interop/random_spec.lua", "tests/spec/interop/npy_spec.lua" }

describe("GPU specs on the simulator", function()
  for _, spec in ipairs(SPECS) do
    it(spec, function()
      local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
      local p = assert(io.popen(bin .. " tests/spec/sim/on_sim.lua " .. spec .. " 2>&1"))
      local out = p:read("*a")
      local ok = p:close()
      local successes, failures, errors = out:match("(%d+) successes? / (%d+) failures? / (%d+) errors?")
      assert.is_not_nil(successes, out)
      assert.is_true(ok and tonumber(failures) == 0 and tonumber(errors) == 0, out)
      assert.is_true(tonumber(successes) > 0, out)
    end)
  end
end)
