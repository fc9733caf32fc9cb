-- Static bounds: an access whose coordinate and extent are both known when
-- tracing, and out of range, is an error at the user's line (reads and
-- writes, global and shared memory, fragments); the shared memory of a block
-- is bounded when it is allocated.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local function static16() return cute.static(cute.fake_tensor(cute.f32, 16)) end

describe("static bounds", function()
  it("refuses an index past a static tensor, reads and writes", function()
    local msg = H.error_at(function() H.ir(function(x) x[16] = 1 end, { static16() }) end)
    assert.matches("index 16 is out of bounds of tensor 'x' %(shape 16, f32%), which has 16 elements %(0%.%.15%)", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = x[-1] end, { static16() }) end)
    assert.matches("index %-1 is out of bounds of tensor 'x' %(shape 16, f32%)", msg)
    assert.matches("store", H.ir(function(x) x[15] = x[0] end, { static16() }))
  end)

  it("refuses an index past a static shared memory tensor", function()
    local msg = H.error_at(function()
      H.ir(function(_) cute.make_smem_tensor(cute.f32, cute.make_layout(32))[32] = 1 end, { H.f32() })
    end, 1)
    assert.matches("index 32 is out of bounds of tensor<shared f32> o 32:1, which has 32 elements %(0%.%.31%)", msg)
    msg = H.error_at(function()
      H.ir(function(_)
        local s = cute.smem_allocator():tensor(cute.f32, cute.make_layout({ 4, 8 }))
        s[{ 1, 8 }] = 1 -- the user's line
      end, { H.f32() })
    end, 3)
    assert.matches("coordinate %(1,8%) is out of bounds of tensor<shared f32> o %(4,8%):%(1,4%): 8 is not in 0%.%.7, "
      .. "the extent of its mode", msg)
  end)

  it("checks the static modes of a coordinate with run-time parts, and slices", function()
    local msg = H.error_at(function()
      H.ir(function(_)
        local s = cute.make_smem_tensor(cute.f32, cute.make_layout({ 4, 8 }))
        s[{ cute.thread_idx().x, 9 }] = 1
      end, { H.f32() })
    end, 3)
    assert.matches("9 is not in 0%.%.7", msg)
    msg = H.error_at(function()
      H.ir(function(x) local col = x[{ cute._, 4 }]; col[0] = 1 end, { cute.static(H.f32({ 8, 4 })) })
    end, 1)
    assert.matches("coordinate %(_,4%) is out of bounds", msg)
    -- a run-time extent cannot be checked when tracing (checked kernels do it on the GPU)
    assert.matches("store", H.ir(function(x) x[16] = 1 end, { cute.fake_tensor(cute.f32, 16) }))
  end)

  it("refuses an index past a register fragment at the user's line", function()
    local msg = H.error_at(function()
      H.ir(function(_) cute.make_fragment(cute.make_layout(4), cute.f32)[4] = 1 end, { H.f32() })
    end, 1)
    assert.matches("index 4 is out of bounds of tensor<rmem f32> o 4:1, which has 4 elements", msg)
  end)

  it("refuses more shared memory than a block has, where it is allocated", function()
    local msg = H.error_at(function()
      H.ir(function(_) cute.make_smem_tensor(cute.f32, 60000)[0] = 1 end, { H.f32() })
    end, 1)
    assert.matches("a shared memory tensor of 240000 bytes brings the kernel's shared memory to 240000 bytes %(240000 "
      .. "static, 0 dynamic%); a block has at most 232448 %(227 KiB%)", msg)
    msg = H.error_at(function()
      H.ir(function(_)
        local smem = cute.smem_allocator()
        smem:tensor(cute.f32, 50000)
        smem:tensor(cute.f32, 10000)[0] = 1 -- this one
      end, { H.f32() })
    end, 4)
    assert.matches("a dynamic shared memory tensor of 40000 bytes brings the kernel's shared memory to 240064 bytes",
      msg)
    -- up to the limit is fine
    assert.matches("store", H.ir(function(_) cute.make_smem_tensor(cute.f32, 58112)[0] = 1 end, { H.f32() }))
  end)
end)
