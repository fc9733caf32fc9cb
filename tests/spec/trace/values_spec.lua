-- Lua numbers that become values of a dtype (constants in kernels, scalar
-- arguments): an integer dtype takes an integral number in its range, a
-- float dtype any number that does not round to infinity, bool true, false,
-- 0 and 1. Anything else is an error naming the value, the dtype and the
-- user's line, never a silent wrap or truncation.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

local function fake(dt) return cute.fake_tensor(dt, 16) end

describe("Lua numbers as values of a dtype", function()
  it("refuses stores that the element type cannot hold, at the user's line", function()
    local cases = {
      { cute.i32, 2 ^ 40, "the Lua number 1099511627776 is out of range for i32 %(%-2147483648%.%.2147483647%)" },
      { cute.i32, 1.5, "the non%-integer 1%.5 does not fit i32" },
      { cute.i8, 300, "the Lua number 300 is out of range for i8 %(%-128%.%.127%)" },
      { cute.i8, -129, "the Lua number %-129 is out of range for i8" },
      { cute.u8, -1, "the Lua number %-1 is out of range for u8 %(0%.%.255%)" },
      { cute.u8, 256, "the Lua number 256 is out of range for u8" },
      { cute.u32, -1, "the Lua number %-1 is out of range for u32 %(0%.%.4294967295%)" },
      { cute.u16, 65536, "the Lua number 65536 is out of range for u16 %(0%.%.65535%)" },
      { cute.i64, 2 ^ 63,
        "the Lua number 9223372036854775808 is out of range for i64 %(%-9223372036854775808%.%.9223372036854775807%)" },
      { cute.u64, 2 ^ 64, "the Lua number 18446744073709551616 is out of range for u64 %(0%.%.18446744073709551615%)" },
      { cute.i32, 0 / 0, "NaN does not fit i32" },
      { cute.i32, math.huge, "the Lua number inf is out of range for i32" },
      { cute.u32, -math.huge, "the Lua number %-inf is out of range for u32" },
      { cute.f32, true, "the Lua boolean true is not a number %(f32 expected%)" },
      { cute.i32, false, "the Lua boolean false is not a number %(i32 expected%)" },
      { cute.f16, 1e6, "the Lua number 1000000 is out of range for f16: it would round to infinity %(the largest "
        .. "finite f16 is 65504%)" },
      { cute.f16, 65520, "the Lua number 65520 is out of range for f16" },
      { cute.f32, 1e39, "the Lua number 1e%+39 is out of range for f32: it would round to infinity" },
      { cute.bf16, -1e39, "the Lua number %-1e%+39 is out of range for bf16" },
      { cute.e4m3, 1000,
        "the Lua number 1000 is out of range for e4m3: e4m3 has no infinity %(the largest finite e4m3 is 448%)" },
      { cute.e4m3, math.huge, "the Lua number inf is out of range for e4m3: e4m3 has no infinity" },
      { cute.bool, 2, "the Lua number 2 is out of range for bool %(0 or 1%)" },
    }
    for _, c in ipairs(cases) do
      local dt, v, want = c[1], c[2], c[3]
      local msg = H.error_at(function() H.ir(function(x) x[0] = v end, { fake(dt) }) end)
      assert.matches("tensor store: " .. want, msg)
    end
  end)

  it("stores every number the element type holds", function()
    local cases = {
      { cute.i8, -128, "const %-128 : i8" }, { cute.i8, 127, "const 127 : i8" }, { cute.u8, 255, "const %-1 : i8" },
      { cute.u16, 65535, "const %-1 : i16" }, { cute.i32, -2 ^ 31, "const %-2147483648 : i32" },
      { cute.u32, 2 ^ 32 - 1, "const %-1 : i32" }, { cute.i64, -2 ^ 63, "const %-9223372036854775808 : i64" },
      { cute.u64, 0xFFFFFFFFFFFFFFFFULL, "const %-1 : i64" }, { cute.i64, -1LL, "const %-1 : i64" },
      { cute.f16, 65504, "const 65504%.0 : f16" }, { cute.f32, 3.4028235e38, "const 3%.4028234663852886e%+38 : f32" },
      { cute.f32, math.huge, "const inf : f32" }, { cute.f64, 1e300, "const 1e%+300 : f64" },
      { cute.bool, 1, "const 1 : i1" }, { cute.bool, true, "const 1 : i1" }, { cute.e4m3, 448, "const 448%.0 : e4m3" },
    }
    for _, c in ipairs(cases) do
      local ir = H.ir(function(x) x[0] = c[2] end, { fake(c[1]) })
      assert.matches(c[3], ir)
    end
  end)

  it("refuses 64-bit literals that a narrower type cannot hold", function()
    local msg = H.error_at(function() H.ir(function(x) x[0] = 0x100000000ULL end, { fake(cute.u32) }) end)
    assert.matches("the 64%-bit literal 4294967296ULL is out of range for u32", msg)
    assert.matches("const %-1 : i32", H.ir(function(x) x[0] = 0xFFFFFFFFULL end, { fake(cute.u32) }))
  end)

  it("refuses a Lua number that the other operand's type cannot hold", function()
    local msg = H.error_at(function() H.ir(function(x) x[0] = x[1] + 2 ^ 40 end, { fake(cute.i32) }) end)
    assert.matches("%+ of a i32 value and the Lua number 1099511627776, which is out of range for i32", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = x[1] * 3000000000 end, { fake(cute.i32) }) end)
    assert.matches("%* of a i32 value and the Lua number 3000000000, which is out of range", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = x[1] - 300 end, { fake(cute.u8) }) end)
    assert.matches("out of range for u8", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = x[1]:band(0xffffffff) end, { fake(cute.i32) }) end)
    assert.matches("band of a i32 value and the Lua number 4294967295, which is out of range", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = x[1] * 1e6 end, { fake(cute.f16) }) end)
    assert.matches("%* of a f16 value: the Lua number 1000000 is out of range for f16", msg)
    -- the same numbers in range, and widened values, are fine
    local ir = H.ir(function(x) x[0] = (x[1]:to(cute.i64) + 2 ^ 40):to(cute.i32) end, { fake(cute.i32) })
    assert.matches("const 1099511627776 : i64", ir)
    assert.matches("const %-2147483648 : i32", H.ir(function(x) x[0] = x[1] + (-2 ^ 31) end, { fake(cute.i32) }))
  end)

  it("checks cute.var, fill, the loop bounds and the other places numbers enter", function()
    local msg = H.error_at(function()
      H.ir(function(x) x[0] = cute.var(cute.i32, 2 ^ 40).value end, { fake(cute.i32) })
    end, 1)
    assert.matches("cute.var assignment: the Lua number 1099511627776 is out of range for i32", msg)
    msg = H.error_at(function()
      H.ir(function(x) cute.make_fragment_like(x):fill(1.5) end, { cute.static(fake(cute.i32)) })
    end, 1)
    assert.matches("the non%-integer 1%.5 does not fit i32", msg)
    msg = H.error_at(function() H.ir(function(x) cute.sync_warp(2 ^ 40); x[0] = 1 end, { fake(cute.i32) }) end)
    assert.matches("cute.sync_warp mask: the Lua number 1099511627776 is out of range for u32", msg)
    msg = H.error_at(function()
      H.ir(function(x) cute.atomic_add(x:ptr_at(0), -1) end, { fake(cute.u32) })
    end, 1)
    assert.matches("cute.atomic_add: the Lua number %-1 is out of range for u32", msg)
    msg = H.error_at(function() H.ir(function(x) x[0] = cute.to(300, cute.i8) end, { fake(cute.i8) }) end)
    assert.matches("to%(i8%): the Lua number 300 is out of range for i8", msg)
    -- explicit conversions of booleans are fine; a loop over Lua numbers past i32 runs in i64
    assert.matches("const 1 : i32", H.ir(function(x) x[0] = cute.to(true, cute.i32) end, { fake(cute.i32) }))
    local ir = H.ir(function(x) for i in cute.range(2 ^ 33, 2 ^ 33 + 4) do x[i] = 1 end end, { fake(cute.i32) })
    assert.matches("const 8589934592 : i64", ir)
  end)

  it("checks scalar kernel arguments when they are made", function()
    local cases = {
      { cute.i32, 2 ^ 40, "cute%.i32%(%): the Lua number 1099511627776 is out of range for i32" },
      { cute.i32, 1.5, "cute%.i32%(%): the non%-integer 1%.5 does not fit i32" },
      { cute.u32, -1, "cute%.u32%(%): the Lua number %-1 is out of range for u32" },
      { cute.u8, 256, "cute%.u8%(%): the Lua number 256 is out of range for u8" },
      { cute.bool, 5, "cute%.bool%(%): the Lua number 5 is out of range for bool" },
      { cute.f16, 1e6, "cute%.f16%(%): the Lua number 1000000 is out of range for f16" },
      { cute.u32, 0x100000000ULL, "cute%.u32%(%): the 64%-bit literal 4294967296ULL is out of range" },
      { cute.i32, "7", "cute%.i32%(%): expected a number, got string" },
    }
    for _, c in ipairs(cases) do
      assert.matches(c[3], H.error_at(function() local s = c[1](c[2]) return s end))
    end
    local good = { { cute.i32, -2 ^ 31 }, { cute.u32, 2 ^ 32 - 1 }, { cute.u64, 0xFFFFFFFFFFFFFFFFULL },
      { cute.f32, math.huge }, { cute.f16, -65504 }, { cute.bool, true }, { cute.bool, 0 } }
    for _, c in ipairs(good) do
      local s = c[1](c[2])
      assert.equal(c[1], s.dtype)
      assert.equal(c[2], s.value)
    end
  end)

  it("checks plain numbers given to annotated parameters", function()
    local k = cute.kernel(function(x, n) x[0] = n end, { params = { n = cute.i32 } })
    assert.matches("kernel @kernel_values_spec_%d+%(%%1: ptr<i32, global, 16>, %%2: i32, %%3: i32%)",
      k:compile(fake(cute.i32), 5):ir())
    local msg = H.error_at(function() k:compile(fake(cute.i32), 2 ^ 40) end)
    assert.matches("argument 'n' %(#2%) %(i32%): the Lua number 1099511627776 is out of range for i32", msg)
    msg = H.error_at(function() k:compile(fake(cute.i32), -0.5) end)
    assert.matches("the non%-integer %-0%.5 does not fit i32", msg)
  end)
end)
