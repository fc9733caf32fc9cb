-- Arithmetic, promotion rules, comparisons and conversions in kernels.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("tracer arithmetic", function()
  it("emits C semantics for integer / and %", function()
    local ir = H.ir(function(a, n)
      local i = cute.thread_idx().x
      a[i] = (n / i + n % i):to(cute.f32)
    end, { H.f32(), cute.i32(7) })
    assert.matches("sdiv", ir)
    assert.matches("srem", ir)
    local ir_u = H.ir(function(a, n)
      a[0] = (n / 3 + n % 3):to(cute.f32)
    end, { H.f32(), cute.u32(7) })
    assert.matches("udiv", ir_u)
    assert.matches("urem", ir_u)
    assert.matches("cvtu", ir_u)
  end)

  it("folds constants at trace time", function()
    local ir = H.ir(function(a)
      local x = cute.thread_idx().x * 0 + (3 + 4)
      a[x] = 1
    end, { H.f32() })
    assert.is_nil(ir:find("mul", 1, true))
    assert.matches("const 7 : i32", ir)
  end)

  it("takes Lua numbers at the other operand's type", function()
    local ir = H.ir(function(a, x)
      a[0] = x * 2.5 + 1
    end, { H.f32(), cute.f32(1) })
    assert.matches("const 2.5 : f32", ir)
  end)

  it("widens integers of the same signedness and floats that contain each other", function()
    local ir = H.ir(function(a, x, y, h)
      local w = x + y -- i32 + i64 -> i64
      a[0] = w:to(cute.f32) + h:to(cute.f32)
    end, { H.f32(), cute.i32(1), cute.i64(2), cute.f16(1) })
    assert.matches("add %%%d+, %%%d+ : i64", ir)
  end)

  it("refuses ambiguous mixes, naming the types", function()
    local cases = {
      { function(_, i, u) return i + u end, "ambiguous", { cute.i32(1), cute.u32(1) } },
      { function(_, i, f) return i * f end, "ambiguous", { cute.i32(1), cute.f32(1) } },
      { function(_, i) return i + 1.5 end, "non%-integer 1.5", { cute.i32(1) } },
      { function(_, u) return u - (-1) end, "negative number", { cute.u32(1) } },
      { function(_, b) return b + b end, "storage type", { cute.bf16(1) } },
    }
    for _, c in ipairs(cases) do
      local msg = H.error_of(function() H.ir(function(a, ...) c[1](a, ...) end, { H.f32(), unpack(c[3]) }) end)
      assert.matches(c[2], msg)
    end
  end)

  -- (plain tracing: the preprocessor, the default, makes these run-time comparisons)
  it("says that Lua comparisons decide at compile time, at the user's line", function()
    local msg = H.error_of(function()
      H.ir(function(a)
        local i = cute.thread_idx().x
        if i < 4 then a[i] = 1 end -- the line reported
      end, { H.f32() }, { preprocess = false })
    end)
    assert.matches("decides at compile time", msg)
    assert.matches("use a:lt%(b%)", msg)
    assert.matches("arith_spec%.lua:%d+:", msg)
    msg = H.error_of(function()
      H.ir(function(a)
        if cute.thread_idx().x == 0 then a[0] = 1 end
      end, { H.f32() }, { preprocess = false })
    end)
    assert.matches("use a:eq%(b%)", msg)
    -- > is Lua's < with the operands swapped: the message offers gt too
    msg = H.error_of(function()
      H.ir(function(a)
        if cute.thread_idx().x > 4 then a[0] = 1 end
      end, { H.f32() }, { preprocess = false })
    end)
    assert.matches("< (or >) on a traced value", msg, 1, true)
    assert.matches("a:lt(b) (a:gt(b))", msg, 1, true)
  end)

  it("compares with methods, typed by kind", function()
    local ir = H.ir(function(a, x, u)
      local p = cute.and_(cute.thread_idx().x:lt(4), x:ge(0.5), u:gt(3))
      a[0] = cute.where(p, x, 0)
    end, { H.f32(), cute.f32(1), cute.u32(1) })
    assert.matches("icmp.slt", ir)
    assert.matches("fcmp.oge", ir)
    assert.matches("icmp.ugt", ir)
    assert.matches("select", ir)
  end)

  it("converts with rounding and saturation, and bitcasts", function()
    local ptx = H.ptx(function(a, x)
      local h = x:to(cute.bf16)
      local e = x:to(cute.e4m3)
      local i = x:to(cute.i32, { round = "rz" })
      a[0] = h:to(cute.f32) + e:to(cute.f32) + i:to(cute.f32) + x:bitcast(cute.u32):to(cute.f32)
    end, { H.f32(), cute.f32(1) })
    assert.matches("cvt.rn.bf16.f32", ptx)
    assert.matches("e4m3x2", ptx)
    assert.matches("cvt.rzi.s32.f32", ptx)
  end)

  it("has bit operations as methods", function()
    local ir = H.ir(function(a, x, u)
      a[0] = (x:band(3):bor(4):bxor(1):shl(2):shr(1) + u:shr(1):to(cute.i32) + x:bnot()):to(cute.f32)
    end, { H.f32(), cute.i32(1), cute.u32(8) })
    for _, op in ipairs { "and", "or", "xor", "shl", "ashr", "lshr", "not" } do assert.matches(op, ir) end
  end)

  it("lowers math with and without fast approximations", function()
    local ptx = H.ptx(function(a, x)
      a[0] = cute.exp2(x, { fast = true }) + cute.sqrt(x) + cute.rsqrt(x) + cute.tanh(x, { fast = true })
        + cute.fma(x, x, 1) + cute.max(x, 0) + cute.min(x, 1) + cute.abs(x)
    end, { H.f32(), cute.f32(1) })
    assert.matches("ex2.approx", ptx)
    assert.matches("sqrt.rn.f32", ptx)
    assert.matches("rsqrt.approx", ptx)
    assert.matches("tanh.approx", ptx)
    assert.matches("fma.rn.f32", ptx)
    assert.matches("max.f32", ptx)
  end)

  it("applies the kernel option fast_math to f32 math only", function()
    local names = { "sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "exp2", "log2", "rsqrt", "rcp", "erf" }
    local d = cute.fake_tensor(cute.f64, 16)
    local f = cute.fake_tensor(cute.f32, 16)
    for _, name in ipairs(names) do
      -- f64 under fast_math: the exact functions (no approximations exist)
      local ir = H.ir(function(x) x[0] = cute[name](x[1]) end, { d }, { fast_math = true })
      assert.matches("= " .. name .. " %%%d+ : f64", ir)
      -- f32 under fast_math: the fast flag
      ir = H.ir(function(x) x[0] = cute[name](x[1]) end, { f }, { fast_math = true })
      assert.matches("= " .. name .. "%.fast %%%d+ : f32", ir)
    end
    -- both in one kernel, compiled to PTX: approximations for f32, libdevice for f64
    local ptx = H.ptx(function(x, y)
      x[0] = cute.sqrt(x[1]) + cute.exp(x[2])
      y[0] = cute.sqrt(y[1]) + cute.exp(y[2])
    end, { d, f }, { fast_math = true })
    assert.matches("sqrt%.rn%.f64", ptx)
    assert.matches("sqrt%.approx", ptx)
    -- an explicit request on f64 stays an error, at the user's line
    local msg = H.error_at(function() H.ir(function(x) x[0] = cute.sqrt(x[1], { fast = true }) end, { d }) end)
    assert.matches("cute.sqrt: {fast = true} is for f32 values (PTX approximates f32 only); this value is f64", msg, 1,
      true)
  end)

  it("names cute.where as the ternary when a comparison is misused", function()
    local msg = H.error_at(function()
      H.ir(function(x) if x[0] < 1 then x[1] = 1 end end, { cute.fake_tensor(cute.f32, 16) }, { preprocess = false })
    end, 1)
    assert.matches("cute%.if_ / cute%.where", msg)
    assert.is_nil(msg:find("select", 1, true))
    -- what the docs' table of C operators gives for c ? a : b is the ternary
    local doc = assert(io.open("docs/tracer.md")):read("*a")
    local fn = doc:match("| `c %? a : b` | `cute%.(%w+)%(c, a, b%)` |")
    assert.equal("where", fn)
    local ir = H.ir(function(x) x[0] = cute[fn](x[1]:lt(0), x[2], x[3]) end, { cute.fake_tensor(cute.f32, 16) })
    assert.matches("select %%%d+, %%%d+, %%%d+ : f32", ir)
  end)

  it("takes min and max of f16 values (through f32, exactly)", function()
    local h = cute.fake_tensor(cute.f16, 16)
    local ir = H.ir(function(x) x[0] = cute.max(cute.min(x[1], x[2]), 0.5) end, { h })
    assert.matches("fmin %%%d+, %%%d+ : f32", ir)
    assert.matches("fmax %%%d+, %%%d+ : f32", ir)
    assert.matches("store %%1, %%%d+", ir)
    assert.matches("max%.f32", H.ptx(function(x) x[0] = cute.max(x[1], x[2]) end, { h }))
  end)

  it("computes on Lua numbers at trace time", function()
    assert.equal(3, cute.max(1, 3))
    assert.equal(2, cute.sqrt(4))
  end)
end)
