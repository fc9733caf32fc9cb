--- cute.lib: cutelua's library of kernels, written against the cute namespace
-- as a user's kernels are. Each is a module, loaded on first use:
--
--   cute.lib.attention     fused attention (FlashAttention-2 forward, decode)
--   cute.lib.gemm          the tensor-core GEMM (cute.gemm on device tensors)
--   cute.lib.sgemm         a SIMT f32 GEMM
--   cute.lib.elementwise   copy, a*x + b, broadcast add at the bandwidth limit
--   cute.lib.reduce        sums and maxima of vectors and rows
--   cute.lib.rowwise       softmax, RMSNorm, LayerNorm over rows
--   cute.lib.transpose     out = in^T through swizzled shared memory
--   cute.lib.fill          device fills (cute.tensor's large fills)
--   cute.lib.common        pieces the kernels share
local MODULES = { "attention", "common", "elementwise", "fill", "gemm", "reduce", "rowwise", "sgemm", "transpose" }

local lib = {}
return setmetatable(lib, {
  __index = function(t, k)
    for _, m in ipairs(MODULES) do
      if m == k then
        local mod = require("cute.lib." .. k)
        rawset(t, k, mod)
        return mod
      end
    end
  end,
  -- for the REPL's Tab completion, without loading anything
  __complete = function() return MODULES end,
})
