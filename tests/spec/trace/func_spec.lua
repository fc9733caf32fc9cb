-- cute.func: real device functions.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("cute.func", function()
  it("emits a call to a device function and infers its result", function()
    local sq = cute.func(function(x) return x * x end, { name = "square" })
    local ir = H.ir(function(a, v)
      a[0] = sq(v) + sq(v * 2)
    end, { H.f32(), cute.f32(3) })
    assert.matches("func @square_%d+%(%%1: f32%) %-> f32", ir)
    assert.equal(2, H.count(ir, "call @square"))
    -- a real function in the PTX too (noinline), called twice
    local ptx = H.ptx(function(a, v) a[0] = sq(v) + sq(v * 2) end, { H.f32(), cute.f32(3) })
    assert.matches("%.func%s+%(%.param %.b32 func_retval0%) square_%d+", ptx)
    assert.equal(2, H.count(ptx, "call.uni"))
  end)

  it("specialises on compile-time arguments", function()
    local scale = cute.func(function(x, s) return x * s end, { name = "scale" })
    local ir = H.ir(function(a, v) a[0] = scale(v, 2) + scale(v, 3) end, { H.f32(), cute.f32(1) })
    assert.equal(2, H.count(ir, "func @scale"))
  end)

  it("must be called while tracing", function()
    local f = cute.func(function() end)
    assert.matches("called from kernels", H.error_of(function() f() end))
  end)
end)
