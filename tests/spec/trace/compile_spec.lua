-- Every kernel of the GPU specs traces and compiles without a GPU, for sm_80 and sm_90a.
local K = require "tests.spec.trace.kernels"

describe("the GPU specs' kernels", function()
  for name, entry in pairs(K.fake_args()) do
    it("compile: " .. name, function()
      for _, arch in ipairs { "sm_90a", "sm_80" } do
        local k = entry[1]():with { arch = arch }
        if name == "convert" and arch == "sm_80" then
          -- fp8 conversions do not exist before sm_89: refused while tracing, at the kernel's line
          local ok, msg = pcall(k.compile, k, unpack(entry, 2))
          assert.is_false(ok)
          assert.matches("kernels%.lua:%d+:.*an fp8 conversion needs FP8, which sm_80 lacks %(sm_89, sm_90, ", msg)
        else
          local h = k:compile(unpack(entry, 2))
          assert.equal("\127ELF", h:cubin():sub(1, 4))
          assert.matches("%.target " .. arch, h:ptx())
        end
      end
    end)
  end
end)
