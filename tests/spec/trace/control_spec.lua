-- Run-time control flow in kernels: loops, branches, break/continue/return,
-- variables, and the misuses the tracer reports.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("tracer control flow", function()
  it("makes a dynamic loop from the generic-for form, with an unroll hint", function()
    local ir = H.ir(function(a, n)
      for i in cute.range(2, n, 3, { unroll = 4 }) do a[i] = 1 end
    end, { H.f32(), cute.i32(100) })
    assert.matches("for %%%d+ = %%%d+ to %%%d+ step %%%d+ unroll 4 {", ir)
  end)

  it("widens an i32 start and step to an i64 bound (a grid-stride loop over 2^31 elements or more)", function()
    local ir = H.ir(function(a, n)
      local start = cute.block_idx().x * 256 + cute.thread_idx().x
      for i in cute.range(start, n, cute.grid_dim().x * 256) do a[i] = 1 end
    end, { H.f32(), cute.i64(2 ^ 32) })
    assert.matches("for %%%d+ = %%%d+ to %%%d+ step %%%d+", ir)
    assert.matches("cvt %%%d+ : i64", ir)
    -- a signed value does not widen to an unsigned bound (a negative start would wrap)
    local e = H.error_of(function()
      H.ir(function(a, n)
        for i in cute.range(cute.thread_idx().x:to(cute.i32) - 1, n) do a[i] = 1 end
      end, { H.f32(), cute.u64(2 ^ 32) })
    end)
    assert.matches("cute.range start: expected a u64, got a i32", e)
  end)

  it("has a callback form too", function()
    local ir = H.ir(function(a, n)
      cute.range(n, function(i) a[i] = 2 end)
    end, { H.f32(), cute.i32(100) })
    assert.matches("for ", ir)
  end)

  it("unrolls plain Lua loops at trace time", function()
    local ir = H.ir(function(a)
      for i = 0, 3 do a[i] = i end
    end, { H.f32() })
    assert.is_nil(ir:find("for ", 1, true))
    assert.equal(4, H.count(ir, "store "))
  end)

  it("supports if/else, while, break, continue and early return", function()
    local ptx = H.ptx(function(a, n)
      local x = cute.var(cute.i32, 0)
      cute.while_(function() return x.value:lt(n) end, function()
        x.value = x.value + 1
        cute.if_(x.value:eq(5), function() cute.continue_() end)
        cute.if_(x.value:gt(50), function() cute.break_() end, function() a[x.value] = 1 end)
      end)
      cute.if_(cute.thread_idx().x:gt(0), function() cute.return_() end)
      a[0] = x.value:to(cute.f32)
    end, { H.f32(), cute.i32(100) })
    assert.matches("bra", ptx)
    assert.matches("ret;", ptx)
  end)

  it("decides Lua booleans and constant conditions at trace time", function()
    local ir = H.ir(function(a)
      cute.if_(true, function() a[0] = 1 end, function() a[0] = 2 end)
      cute.if_(cute.thread_idx().x:bor(1):band(0):eq(1), function() a[1] = 3 end) -- folds to false
    end, { H.f32() })
    assert.is_nil(ir:find("if ", 1, true))
    assert.equal(1, H.count(ir, "store "))
  end)

  it("refuses code after break in the same region", function()
    local msg = H.error_of(function()
      H.ir(function(a, n)
        for _ in cute.range(n) do
          cute.break_()
          a[0] = 1
        end
      end, { H.f32(), cute.i32(4) })
    end)
    assert.matches("would never run", msg)
  end)

  it("refuses break outside a dynamic loop", function()
    local msg = H.error_of(function() H.ir(function(_) cute.break_() end, { H.f32() }) end)
    assert.matches("outside a dynamic loop", msg)
  end)

  it("names a value read after the region that made it", function()
    local msg = H.error_of(function()
      H.ir(function(a, n)
        local last
        for i in cute.range(n) do last = i * 2 end
        a[0] = last:to(cute.f32) -- read after the loop
      end, { H.f32(), cute.i32(4) }, { preprocess = false })
    end)
    assert.matches("created inside the dynamic loop at .*control_spec%.lua:%d+ is read after", msg)
    assert.matches("cute%.var", msg)
  end)

  it("names a dynamic loop left by a Lua break", function()
    local msg = H.error_of(function()
      H.ir(function(a, n)
        -- luacheck: push ignore 512 (the loop is left by a Lua break on purpose)
        for i in cute.range(n) do
          a[i] = 1
          break
        end
        -- luacheck: pop
      end, { H.f32(), cute.i32(4) }, { preprocess = false })
    end)
    assert.matches("never closed", msg)
    assert.matches("cute%.break_", msg)
  end)

  it("carries values through variables", function()
    local ir = H.ir(function(a, n)
      local acc = cute.var(cute.f32, 0)
      for i in cute.range(n) do acc.value = acc.value + a[i] end
      a[0] = acc.value
    end, { H.f32(), cute.i32(4) })
    assert.matches("var.store", ir)
    assert.matches("var.load", ir)
  end)

  it("refuses a condition that is not a bool", function()
    local msg = H.error_of(function()
      H.ir(function(a) cute.if_(cute.thread_idx().x, function() a[0] = 1 end) end, { H.f32() })
    end)
    assert.matches("must be a bool value", msg)
  end)
end)
