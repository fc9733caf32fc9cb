-- cute.cublas.lt_matmul: the argument rules on the CPU (each error names the
-- field), and results against float64 on the GPU (bf16 and fp8 with scales).
local cute = require "cute"
local lt = cute.cublas

local function spec(t)
  local s = { a = 0x1000, b = 0x2000, d = 0x3000, m = 64, n = 32, k = 128, a_dtype = "bf16" }
  for k, v in pairs(t or {}) do s[k] = v end
  return s
end

local function fails(t, pattern)
  local ok, e = pcall(lt.lt_check, spec(t))
  assert.is_false(ok, "expected an error matching " .. pattern)
  assert.matches(pattern, tostring(e))
end

describe("cute.cublas.lt_matmul arguments", function()
  it("fills the defaults: leading dimensions, C and D dtypes, b_dtype", function()
    local r = lt.lt_check(spec())
    assert.equal("bf16", r.b_dtype.name)
    assert.equal("bf16", r.d_dtype.name)
    assert.equal("bf16", r.c_dtype.name)
    assert.same({ 64, 128, 64, 64 }, { r.lda, r.ldb, r.ldc, r.ldd })
    local f = lt.lt_check(spec { a_dtype = cute.e4m3, b_dtype = "e5m2", trans_a = true, k = 64 })
    assert.equal("bf16", f.d_dtype.name) -- fp8's default output
    assert.same({ 64, 64 }, { f.lda, f.ldb })
    assert.is_true(f.trans_a)
    assert.equal("f32", lt.lt_check(spec { d_dtype = "f32" }).c_dtype.name)
  end)

  it("names the field that is wrong", function()
    fails({ m = 0 }, "lt_matmul: m must be a positive integer, got 0")
    fails({ k = 1.5 }, "lt_matmul: k must be a positive integer, got 1.5")
    fails({ a_dtype = "f32" }, "a_dtype is f32; cuBLASLt matmul here takes bf16, f16, e4m3 or e5m2")
    fails({ a_dtype = "nope" }, "a_dtype: .*unknown dtype nope")
    fails({ b_dtype = "f16" }, "a_dtype is bf16 and b_dtype f16; 16%-bit inputs must have one dtype")
    fails({ a_dtype = "e4m3", b_dtype = "bf16", trans_a = true }, "fp8 inputs must both be fp8")
    fails({ a_dtype = "e5m2", trans_a = true }, "e5m2 x e5m2 is not supported")
    fails({ a_dtype = "e4m3" }, "fp8 needs trans_a = true and trans_b = false %(\"TN\"")
    fails({ a_dtype = "e4m3", trans_a = true, trans_b = true }, "trans_b = true")
    fails({ a_dtype = "e4m3", trans_a = true, d_dtype = "e4m3" },
      "d_dtype is e4m3; with fp8 inputs D is bf16, f16 or f32")
    fails({ d_dtype = "f16" }, "d_dtype is f16; with bf16 inputs D is bf16 or f32")
    fails({ d_dtype = "f32", c_dtype = "bf16" }, "c_dtype is bf16 but d_dtype f32; they must match")
    fails({ compute = "f16" }, "compute is f16; only f32 accumulation")
    fails({ scale_a = 0x10 }, "scale_a is for fp8 inputs; a_dtype is bf16")
    local no_d = spec()
    no_d.d = nil
    local okd, ed = pcall(lt.lt_check, no_d)
    assert.is_false(okd)
    assert.matches("d %(the output%) is missing", tostring(ed))
    fails({ beta = 1 }, "beta is 1 but c is missing")
    fails({ lda = 10 }, "lda = 10 is less than the rows of A")
    fails({ a_dtype = "e4m3", trans_a = true, k = 40 }, "fp8 needs lda and ldb multiples of 16")
    local ok, e = pcall(lt.lt_matmul, 42)
    assert.is_false(ok)
    assert.matches("lt_matmul: expected a table, got number", tostring(e))
  end)
end)

-- The column-major reference: D[i, j] = alpha * sa * sb * sum_kk op(A)[i, kk] op(B)[kk, j].
local function check(a, b, d, m, n, k, trans_a, scale, tol)
  local worst = 0
  for j = 0, n - 1 do
    for i = 0, m - 1 do
      local ref, mag = 0, 0
      for kk = 0, k - 1 do
        local x = trans_a and a[kk + i * k] or a[i + kk * m]
        local p = x * b[kk + j * k]
        ref, mag = ref + p, mag + math.abs(p)
      end
      local got = d[i + j * m]
      assert.is_true(got == got, string.format("D(%d,%d) was not written (still NaN)", i, j))
      worst = math.max(worst, math.abs(got - scale * ref) / math.max(scale * mag, 1e-30))
    end
  end
  assert.is_true(worst < tol, string.format("worst relative error %.3g (tolerance %.3g)", worst, tol))
end

describe("cute.cublas.lt_matmul on the GPU", function()
  it("bf16 x bf16 -> f32 against float64 #gpu", function()
    local m, n, k = 96, 80, 256
    local A = cute.tensor(cute.bf16, { m, k }):uniform(-1, 1, 21)
    local B = cute.tensor(cute.bf16, { k, n }):uniform(-1, 1, 22)
    local D = cute.tensor(cute.f32, { m, n }):fill(0 / 0)
    lt.lt_matmul { a = A, b = B, d = D, m = m, n = n, k = k, a_dtype = cute.bf16, d_dtype = cute.f32 }
    cute.synchronize()
    check(A:to_host():doubles(), B:to_host():doubles(), D:to_host():doubles(), m, n, k, false, 1, 1e-4)
  end)

  for _, combo in ipairs { { "e4m3", "e4m3", "bf16", 2 ^ -7 }, { "e4m3", "e5m2", "f32", 1e-4 },
    { "e5m2", "e4m3", "f16", 2 ^ -9 } } do
    it(string.format("fp8 %s x %s -> %s with per-tensor scales (TN) against float64 #gpu", combo[1], combo[2],
      combo[3]), function()
      local m, n, k = 128, 64, 192
      local ta, tb, td = cute.dtype.get(combo[1]), cute.dtype.get(combo[2]), cute.dtype.get(combo[3])
      -- A stored k x m (op(A) = A^T, K-major), B stored k x n (K-major); both quantized on the host
      local A = cute.tensor(ta, { k, m }):uniform(-4, 4, 31)
      local B = cute.tensor(tb, { k, n }):uniform(-4, 4, 32)
      local D = cute.tensor(td, { m, n }):fill(0 / 0)
      local sa, sb = cute.tensor(cute.f32, 1):fill(0.5), cute.tensor(cute.f32, 1):fill(0.25)
      lt.lt_matmul { a = A, b = B, d = D, m = m, n = n, k = k, a_dtype = ta, b_dtype = tb, d_dtype = td,
        trans_a = true, scale_a = sa, scale_b = sb }
      cute.synchronize()
      check(A:to_host():doubles(), B:to_host():doubles(), D:to_host():doubles(), m, n, k, true, 0.125, combo[4])
    end)
  end
end)
