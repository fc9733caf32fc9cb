-- The GPU specs whose kernels the simulator runs pass on it, GPU-tagged tests
-- included, where CI has no GPU: the tracer's GPU kernels (integer division,
-- conversions, loops, block reductions with atomics, shared-memory reversal,
-- tiled copies, device functions), its generated code's results,
-- cute.testing's checks of a cute.gemm result (the mma.sync GEMM of cute.lib),
-- the one-tile GEMMs of every MMA atom family in every major order, the
-- preprocessor's kernels, Philox's device streams against the host's, and
-- .npy files of device tensors; and the Hopper specs below. (atom/gemm_spec
-- passes too, in ~90 s: left to the GPU machine; hopper/gemm_sm90_spec's GPU
-- tests take shapes up to 4096^3, far too large for the simulator:
-- tests/spec/sim/hopper_gemm_spec.lua runs the Hopper GEMM at small shapes.)
local SPECS = { "tests/spec/trace/gpu_spec.lua", "tests/spec/trace/codegen_spec.lua",
  "tests/spec/testing/testing_spec.lua", "tests/spec/atom/mma_spec.lua", "tests/spec/pre/gpu_spec.lua",
  "tests/spec/interop/random_spec.lua", "tests/spec/interop/npy_spec.lua" }
-- The Hopper specs, on the simulator as an sm_90a device: wgmma for every
-- type, shape family, major and operand source against float64; TMA loads
-- (zero fill), stores (clipped), reductions, bulk copies and multicast;
-- mbarriers, elect, clusters and DSMEM; setmaxnreg; cute.pipeline across
-- clusters with multicast.
local HOPPER = { "tests/spec/hopper/wgmma_gpu_spec.lua", "tests/spec/hopper/tma_spec.lua",
  "tests/spec/hopper/tma_kernel_spec.lua", "tests/spec/hopper/sync_ops_spec.lua",
  "tests/spec/hopper/sync_cluster_spec.lua", "tests/spec/hopper/sync_setmaxnreg_spec.lua",
  "tests/spec/hopper/pipeline_api_spec.lua", "tests/spec/hopper/pipeline_stress_spec.lua" }
for _, h in ipairs(HOPPER) do SPECS[#SPECS + 1] = h end
-- (atom/mma_spec too: its stmatrix test needs sm_90, the mma.sync ones run on either)
local IS_HOPPER = { ["tests/spec/atom/mma_spec.lua"] = true }
for _, h in ipairs(HOPPER) do IS_HOPPER[h] = true end

describe("GPU specs on the simulator", function()
  for _, spec in ipairs(SPECS) do
    it(spec .. (IS_HOPPER[spec] and " (sm_90a)" or ""), function()
      local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"
      local env = IS_HOPPER[spec] and "CUTELUA_SIM_ARCH=sm_90a " or "CUTELUA_SIM_ARCH=sm_80 "
      local p = assert(io.popen(env .. bin .. " tests/spec/sim/on_sim.lua " .. spec .. " 2>&1"))
      local out = p:read("*a")
      local ok = p:close()
      local successes, failures, errors = out:match("(%d+) successes? / (%d+) failures? / (%d+) errors?")
      assert.is_not_nil(successes, out)
      assert.is_true(ok and tonumber(failures) == 0 and tonumber(errors) == 0, out)
      assert.is_true(tonumber(successes) > 0, out)
    end)
  end
end)
