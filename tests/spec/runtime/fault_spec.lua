-- A kernel that faults: the error names the fault and the kernel, and every
-- later call says the device is lost for this process (the CUDA driver refuses
-- all work after a sticky fault). Its own spec file, so its own process: the
-- other GPU specs keep a working device. tests/repl/gpu_fault.sh checks that
-- the REPL restarts itself and launches again.
local cute = require "cute"
local ffi = require "ffi"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

describe("a faulting kernel", function()
  it("raises an error naming the fault and the kernel, then refuses all work #gpu", function()
    local m = cute.load_module(read("tests/spec/runtime/kernels.ptx"), "kernels.ptx")
    local victim = cute.alloc(1024)
    assert.is_false(cute.device_lost())
    cute.set_sync_launches(true) -- so the launch itself reports the fault, naming its kernel
    local ok, msg = pcall(function() m:kernel("oob_write"):launch({ grid = 1, block = 1 }, victim) end)
    cute.set_sync_launches(false)
    assert.is_false(ok)
    assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", msg)
    assert.matches("running kernel 'oob_write'", msg)
    assert.matches("fault_spec%.lua:%d+:", msg)
    assert.is_true(cute.device_lost())
    -- later calls fail at once, with the reason, never crash or hang
    for _, f in ipairs {
      function() victim:copy_to_host(ffi.new("uint8_t[4]"), 4) end,
      function() cute.alloc(16) end,
      function() cute.synchronize() end,
      function() m:kernel("add_one") end,
    } do
      local ok2, msg2 = pcall(f)
      assert.is_false(ok2)
      assert.matches("cannot be used again in this process", msg2)
      assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", msg2)
    end
    victim:free() -- harmless
  end)
end)
