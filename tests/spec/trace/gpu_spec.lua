-- Traced kernels on the GPU, each result checked against the CPU on fresh
-- random inputs, with outputs poisoned first (every element must be written).
local cute = require "cute"
local K = require "tests.spec.trace.kernels"

local function poison(t)
  if t.dtype.is_float then t:fill(0 / 0) else t:fill(t.dtype.kind == "uint" and 0xAB or -77) end
  return t
end

local function random_ints(n, lo, hi)
  local v = {}
  for i = 1, n do v[i] = math.random(lo, hi) end
  return v
end

-- C's truncating division and remainder, for the reference
local function cdiv(a, b)
  local q = a / b
  return q >= 0 and math.floor(q) or -math.floor(-q)
end
local function crem(a, b) return a - cdiv(a, b) * b end

describe("traced kernels on the GPU", function()
  it("divide and take remainders as C does, negative numbers included #gpu", function()
    local n = 4099
    local k = K.divmod()
    local av, bv = random_ints(n, -100000, 100000), random_ints(n, -300, 300)
    for i = 1, n do if bv[i] == 0 then bv[i] = 7 end end
    local a, b = cute.tensor(cute.i32, n):copy_from(av), cute.tensor(cute.i32, n):copy_from(bv)
    local q, r = poison(cute.tensor(cute.i32, n)), poison(cute.tensor(cute.i32, n))
    k { grid = cute.ceil_div(n, 128), block = 128 }(a, b, q, r)
    local hq, hr = q:to_table(), r:to_table()
    for i = 1, n do
      if hq[i] ~= cdiv(av[i], bv[i]) or hr[i] ~= crem(av[i], bv[i]) then
        error(string.format("%d / %d: got %d rem %d", av[i], bv[i], hq[i], hr[i]))
      end
    end
  end)

  it("converts to bf16, f16 and e4m3 exactly as the host does #gpu", function()
    local n = 8192
    local k = K.convert()
    local x = cute.tensor(cute.f32, n):normal(0, 100)
    local h, b, e = cute.tensor(cute.f16, n), cute.tensor(cute.bf16, n), cute.tensor(cute.e4m3, n)
    k { grid = n / 256, block = 256 }(x, h, b, e)
    local hx = x:to_table()
    -- the host conversions (rt_host.c) round to nearest even, fp8 saturating
    for _, pair in ipairs { { h, cute.f16 }, { b, cute.bf16 }, { e, cute.e4m3 } } do
      local ref = cute.tensor(pair[2], n):copy_from(hx)
      local got, want = pair[1]:to_host(), ref:to_host()
      for i = 0, n - 1 do
        if got.data[i] ~= want.data[i] then
          error(string.format("%s of %.9g: GPU bits %x, host bits %x", pair[2].name, hx[i + 1], got.data[i],
            want.data[i]))
        end
      end
    end
  end)

  it("runs loops with break and continue, and while loops #gpu", function()
    local n = 1000
    local k = K.loops()
    local av = {}
    for i = 1, n do av[i] = math.random(-8, 8) end -- small integers: float sums are exact
    local a = cute.tensor(cute.f32, n):copy_from(av)
    local out = poison(cute.tensor(cute.f32, n))
    local lim = 37
    k { grid = 4, block = 256 }(a, out, cute.i32(lim))
    local got = out:to_table()
    for t = 0, n - 1 do
      local s = 0
      for j = t, n - 1 do
        if j % 2 == 0 then
          if j >= t + lim then break end
          s = s + av[j + 1]
        end
      end
      s = s + t % 8
      if got[t + 1] ~= s then error(string.format("thread %d: %g, expected %g", t, got[t + 1], s)) end
    end
  end)

  it("reduces with warp shuffles and atomics #gpu", function()
    local n = 65536
    local k = K.reduce()
    local av = random_ints(n, -1000, 1000)
    local a = cute.tensor(cute.i32, n):copy_from(av)
    local out = cute.tensor(cute.i32, 1):fill(0)
    k { grid = n / 256, block = 256 }(a, out)
    local want = 0
    for _, x in ipairs(av) do want = want + x end
    assert.equal(want, out:to_table()[1])
  end)

  it("reverses blocks through shared memory #gpu", function()
    local n = 256 * 40
    local k = K.reverse()
    local a = cute.tensor(cute.f32, n):uniform(-1, 1)
    local b = poison(cute.tensor(cute.f32, n))
    k { grid = n / 256, block = 256 }(a, b)
    local ha, hb = a:to_table(), b:to_table()
    for i = 0, n - 1 do
      local blk, t = math.floor(i / 256), i % 256
      assert.equal(ha[blk * 256 + (255 - t) + 1], hb[i + 1])
    end
  end)

  it("copies tiles with vectors and predicates the edge #gpu", function()
    local M, N = 333, 190 -- not multiples of the 32 x 8 tile
    local k = K.tilecopy(M, N)
    local a = cute.tensor(cute.f32, { M, N }):uniform(-1, 1)
    local b = poison(cute.tensor(cute.f32, { M, N }))
    k { grid = { cute.ceil_div(M, 32), cute.ceil_div(N, 8) }, block = 32 }(a, b)
    local ha, hb = a:to_table(), b:to_table()
    for i = 1, M * N do assert.equal(ha[i] * 2, hb[i]) end
  end)

  it("calls device functions #gpu", function()
    local k = K.usefunc()
    local n = 1024
    local a = cute.tensor(cute.f64, n):uniform(-2, 2)
    local b = poison(cute.tensor(cute.f64, n))
    k { grid = 4, block = 256 }(a, b)
    local ha, hb = a:to_table(), b:to_table()
    local function p(x) return x * x * 3 + x * 2 + 1 end
    for i = 1, n do assert.near(p(ha[i]) + p(ha[i] * 2), hb[i], 1e-12 * (1 + math.abs(hb[i]))) end
  end)
end)
