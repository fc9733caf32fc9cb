-- What the simulator computes, op by op, against references made here on the
-- host with C's arithmetic (LuaJIT's 64-bit integers, the C library's fmaf,
-- cutelua's C conversions to bf16 and f16): integer wrap-around, signed and
-- unsigned division and shifts, i64, f32 rounding and fma contraction,
-- narrow-float rounding, saturating float-to-int conversion, control flow,
-- warp collectives, atomics, device functions and printf.
local cute = require "cute"
local H = require "tests.spec.trace.helper"
local ffi = require "ffi"

local I32S = { 0, 1, -1, 7, -7, 123456789, -987654321, 2147483647, -2147483648, 65535, 40000, -3, 31, 32, 100, 17 }

local function i32(x) return tonumber(ffi.cast("int32_t", ffi.cast("int64_t", x))) end
local function u32(x) return tonumber(ffi.cast("uint32_t", ffi.cast("int64_t", x))) end

local function run(k, n, ...)
  k { grid = 1, block = n }(...)
end

describe("the simulator's arithmetic", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("i32 and u32: wrap-around, division toward zero, remainders, shifts, unsigned compares", function()
    local n = #I32S
    local a = cute.tensor(cute.i32, n):copy_from(I32S)
    local bvals = {}
    for i = 1, n do bvals[i] = I32S[(i * 7) % n + 1] end
    local b = cute.tensor(cute.i32, n):copy_from(bvals)
    local NOUT = 11
    local out = cute.tensor(cute.i32, { n, NOUT })
    local k = cute.kernel(function(A, B, O)
      local i = cute.thread_idx().x
      local x, y = A[i], B[i]
      local safe = cute.where(y:eq(0), 1, y)
      local ux, uy = x:to(cute.u32), cute.where(y:eq(0), 1, y):to(cute.u32)
      local r = { x + y, x - y, x * y, x / safe, x % safe, x:band(y), x:bxor(y), x:shr(y:band(31)),
        x:shl(y:band(31)), (ux / uy):to(cute.i32), ux:lt(uy):to(cute.i32) }
      for j = 1, #r do O[{ i, j - 1 }] = r[j] end
    end)
    run(k, n, a, b, out)
    local h = out:to_host()
    for i = 0, n - 1 do
      local x, y = I32S[i + 1], bvals[i + 1]
      local X, Y = ffi.cast("int64_t", x), ffi.cast("int64_t", y)
      local safe = y == 0 and 1 or y
      local q = (x == -2147483648 and safe == -1) and x or i32(X / safe)
      local rem = (x == -2147483648 and safe == -1) and 0 or i32(X % safe)
      local want = { i32(X + Y), i32(X - Y), i32(X * Y), q, rem, bit.band(x, y), bit.bxor(x, y),
        bit.arshift(x, bit.band(y, 31)), bit.lshift(x, bit.band(y, 31)), i32(math.floor(u32(x) / u32(safe))),
        u32(x) < u32(safe) and 1 or 0 }
      for j = 1, #want do
        assert.equal(want[j], h[{ i, j - 1 }], string.format("op %d of %d, %d", j, x, y))
      end
    end
  end)

  it("i64: multiply and add wrapping at 64 bits, division, shifts, conversions to and from i32", function()
    local vals = { 3, -5, 4611686018427387904, -1, 9007199254740993, 123456789012 }
    local n = #vals
    local a = cute.tensor(cute.i64, n)
    local raw = ffi.new("int64_t[?]", n)
    for i = 1, n do raw[i - 1] = vals[i] == 9007199254740993 and 9007199254740993LL or vals[i] end
    a:copy_from(raw)
    local out = cute.tensor(cute.i64, { n, 5 })
    local k = cute.kernel(function(A, O)
      local i = cute.thread_idx().x
      local x = A[i]
      local y = A[(i + 1) % n]
      O[{ i, 0 }] = x * y + x
      O[{ i, 1 }] = x / cute.where(y:eq(0), 1, y)
      O[{ i, 2 }] = x:shr(3)
      O[{ i, 3 }] = x:to(cute.i32):to(cute.i64)
      O[{ i, 4 }] = (x:to(cute.u64):shr(60)):to(cute.i64)
    end)
    run(k, n, a, out)
    local h = ffi.new("int64_t[?]", n * 5)
    out:copy_to(h)
    for i = 0, n - 1 do
      local x, y = raw[i], raw[(i + 1) % n]
      local want = { x * y + x, x / y, bit.arshift(x, 3), ffi.cast("int64_t", ffi.cast("int32_t", x)),
        ffi.cast("int64_t", bit.rshift(ffi.cast("uint64_t", x), 60)) }
      for j = 1, 5 do assert.equal(want[j], h[i + (j - 1) * n], string.format("op %d of %s", j, tostring(x))) end
    end
  end)

  it("f32: each op rounded to f32, a*b+c contracted to one fma as NVVM does; bf16 and f16 round to nearest even; "
    .. "float to int saturates", function()
    local xs, ys = {}, {}
    for i = 1, 64 do
      xs[i] = (i * 0.37 - 11.3) * (i % 3 == 0 and 1e3 or 1)
      ys[i] = 1 / 3 + i * 1e-7
    end
    xs[1], xs[2], xs[3] = 1e10, -1e10, 0 / 0
    local x = cute.tensor(cute.f32, 64):copy_from(xs)
    local y = cute.tensor(cute.f32, 64):copy_from(ys)
    local of = cute.tensor(cute.f32, { 64, 4 })
    local ob = cute.tensor(cute.bf16, 64)
    local oh = cute.tensor(cute.f16, 64)
    local oi = cute.tensor(cute.i32, 64)
    local k = cute.kernel(function(X, Yv, F, Bo, Ho, Io)
      local i = cute.thread_idx().x
      local a, b = X[i], Yv[i]
      F[{ i, 0 }] = a * b + b
      F[{ i, 1 }] = a / b
      F[{ i, 2 }] = cute.sqrt(cute.abs(a))
      F[{ i, 3 }] = a + b
      Bo[i] = a:to(cute.bf16)
      Ho[i] = a:to(cute.f16)
      Io[i] = a:to(cute.i32)
    end)
    run(k, 64, x, y, of, ob, oh, oi)
    local hx, hy = x:to_host(), y:to_host()
    local hf, hb, hh, hi = of:to_host(), ob:to_host(), oh:to_host(), oi:to_host()
    local cell = ffi.new("float[1]")
    local function f32(v)
      cell[0] = v
      return cell[0]
    end
    ffi.cdef "float fmaf(float, float, float);"
    -- references: the host's conversions (cutelua's C code) into tensors of those dtypes
    local all = {}
    for i = 0, 63 do all[i + 1] = hx[i] end
    local rb = cute.tensor(cute.bf16, 64):copy_from(all):to_host()
    local rh = cute.tensor(cute.f16, 64):copy_from(all):to_host()
    local function same(p, q) return p == q or (p ~= p and q ~= q) end
    for i = 0, 63 do
      local a, b = hx[i], hy[i]
      assert.is_true(same(ffi.C.fmaf(a, b, b), hf[{ i, 0 }]), "fma at " .. i)
      assert.is_true(same(f32(a / b), hf[{ i, 1 }]), "div at " .. i)
      assert.is_true(same(f32(math.sqrt(math.abs(a))), hf[{ i, 2 }]), "sqrt at " .. i)
      assert.is_true(same(f32(a + b), hf[{ i, 3 }]), "add at " .. i)
      assert.is_true(same(rb[i], hb[i]), string.format("bf16 of %.9g: %.9g, expected %.9g", a, hb[i], rb[i]))
      assert.is_true(same(rh[i], hh[i]), string.format("f16 of %.9g: %.9g, expected %.9g", a, hh[i], rh[i]))
      local wi = a ~= a and 0 or math.max(-2147483648, math.min(2147483647, a >= 0 and math.floor(a) or math.ceil(a)))
      assert.equal(wi, hi[i])
    end
    assert.equal(math.huge, hh[0]) -- 1e10 overflows f16
  end)
end)

describe("the simulator's memory", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("reads floats of any bits: NaNs with payloads (an integer -1 seen as f32 or f64) are NaN", function()
    local raw32 = ffi.new("uint32_t[4]", { 0xffffffff, 0x7fffffff, 0xff800001, 0x3f800000 })
    local raw64 = ffi.new("uint64_t[2]", { 0xffffffffffffffffULL, 0x3ff0000000000000ULL })
    local x = cute.tensor(cute.f32, 4):copy_from(raw32)
    local d = cute.tensor(cute.f64, 2):copy_from(raw64)
    local y, e = cute.tensor(cute.f32, 4), cute.tensor(cute.f64, 2)
    local k = cute.kernel(function(X, D, Yo, Eo)
      local i = cute.thread_idx().x
      Yo[i] = X[i] + 1
      cute.if_(i:lt(2), function() Eo[i] = D[i] * 2 end)
    end)
    run(k, 4, x, d, y, e)
    local hy, he = y:to_host(), e:to_host()
    for i = 0, 2 do assert.is_true(hy[i] ~= hy[i], "f32 element " .. i) end
    assert.equal(2, hy[3])
    assert.is_true(he[0] ~= he[0])
    assert.equal(2, he[1])
  end)
end)

describe("the simulator's control flow and warp-level ops", function()
  local sim = H.simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("loops with break and continue, early return, device functions", function()
    local twice = cute.func(function(v) return v * 2 end)
    local k = cute.kernel(function(O)
      local i = cute.thread_idx().x
      cute.if_(i:eq(63), function() cute.return_() end)
      local acc = cute.var(cute.i32, 0)
      for j in cute.range(0, 100) do
        cute.if_(j:eq(i), function() cute.break_() end)
        cute.if_((j % 2):eq(1), function() cute.continue_() end)
        acc.value = acc.value + j
      end
      local w = cute.var(cute.i32, i)
      cute.while_(function() return w.value:gt(0) end, function() w.value = w.value - 3 end)
      O[i] = twice(acc.value) * 1000 + w.value
    end)
    local o = cute.tensor(cute.i32, 64):fill(-5)
    run(k, 64, o)
    local h = o:to_host()
    for i = 0, 62 do
      local acc = 0
      for j = 0, i - 1 do if j % 2 == 0 then acc = acc + j end end
      local w = i
      while w > 0 do w = w - 3 end
      assert.equal(acc * 2 * 1000 + w, h[i], "thread " .. i)
    end
    assert.equal(-5, h[63])
  end)

  it("shuffles (idx, up, down, xor, width), votes, ballot, redux, atomics", function()
    local k = cute.kernel(function(O, C)
      local i = cute.thread_idx().x
      local lane = i % 32
      local v = i * 10
      O[{ i, 0 }] = cute.shuffle(v, 5)
      O[{ i, 1 }] = cute.shuffle_up(v, 3)
      O[{ i, 2 }] = cute.shuffle_down(v, 3)
      O[{ i, 3 }] = cute.shuffle_xor(v, 9)
      O[{ i, 4 }] = cute.shuffle_xor(v, 2, 4)
      O[{ i, 5 }] = cute.vote_any(lane:eq(7)):to(cute.i32) + cute.vote_all(lane:lt(31)):to(cute.i32) * 2
      O[{ i, 6 }] = cute.ballot((lane % 3):eq(0)):to(cute.i32)
      O[{ i, 7 }] = cute.warp_reduce(i, "add")
      O[{ i, 8 }] = cute.warp_reduce(i, "max")
      cute.atomic_add(C:ptr_at(0), 1)
      cute.atomic_max(C:ptr_at(1), i)
    end)
    local o = cute.tensor(cute.i32, { 64, 9 })
    local c = cute.tensor(cute.i32, 2):fill(0)
    run(k, 64, o, c)
    local h, hc = o:to_host(), c:to_host()
    local ballot = 0
    for l = 0, 31 do if l % 3 == 0 then ballot = ballot + 2 ^ l end end
    for i = 0, 63 do
      local base, lane = i - i % 32, i % 32
      local function at(l) return (base + l) * 10 end
      assert.equal(at(5), h[{ i, 0 }])
      assert.equal(lane >= 3 and at(lane - 3) or at(lane), h[{ i, 1 }])
      assert.equal(lane + 3 < 32 and at(lane + 3) or at(lane), h[{ i, 2 }])
      assert.equal(at(bit.bxor(lane, 9)), h[{ i, 3 }])
      assert.equal(at(bit.bxor(lane, 2)), h[{ i, 4 }])
      assert.equal(1, h[{ i, 5 }])
      assert.equal(bit.tobit(ballot), h[{ i, 6 }])
      local sum = 0
      for l = 0, 31 do sum = sum + base + l end
      assert.equal(sum, h[{ i, 7 }])
      assert.equal(base + 31, h[{ i, 8 }])
    end
    assert.equal(64, hc[0])
    assert.equal(63, hc[1])
  end)

  it("dynamic shared memory, stmatrix and ldmatrix.trans (an 8 x 8 matrix out and back transposed), named "
    .. "barriers", function()
    local k = cute.kernel(function(O)
      local l = cute.thread_idx().x
      local s = cute.smem_allocator():tensor(cute.u16, cute.make_layout({ 8, 8 }, { 8, 1 }), 16)
      local r, c = l / 4, (l % 4) * 2
      local reg = (r * 8 + c) + (r * 8 + c + 1) * 65536
      cute.arch.stmatrix(s:ptr_at({ l % 8, 0 }), { reg })
      local out = cute.arch.ldmatrix(s:ptr_at({ l % 8, 0 }), 1, true)
      O[l] = out[1]
      cute.barrier(1, 32)
    end)
    local o = cute.tensor(cute.i32, 32)
    run(k, 32, o)
    local h = o:to_host()
    for l = 0, 31 do
      local lo, hi = 2 * (l % 4) * 8 + math.floor(l / 4), (2 * (l % 4) + 1) * 8 + math.floor(l / 4)
      assert.equal(lo + hi * 65536, h[l], "lane " .. l)
    end
  end)

  it("printf writes from every thread, in thread order", function()
    local k = cute.kernel(function()
      local i = cute.thread_idx().x
      cute.printf("t%d x=%.2f u=%u\n", i, i:to(cute.f32) / 4, (i - 2):to(cute.u32))
    end)
    local lines = {}
    local write = io.write
    io.write = function(s) lines[#lines + 1] = s end -- luacheck: ignore 122
    local ok, e = pcall(run, k, 3)
    io.write = write -- luacheck: ignore 122
    assert.is_true(ok, e)
    assert.same({ "t0 x=0.00 u=4294967294\n", "t1 x=0.25 u=4294967295\n", "t2 x=0.50 u=0\n" }, lines)
  end)
end)
