-- cute.testing: assert_close and check_gemm on host tensors (no GPU needed:
-- host tensors are made here from FFI arrays, as t:to_host() makes them).
local cute = require "cute"
local ffi = require "ffi"
local T = cute.testing

-- A host tensor of dtype dt (f32, f64, i32) over layout, from values in
-- coordinate order.
local function host(dt, layout, vals)
  local ctype = ({ f32 = "float", f64 = "double", i32 = "int32_t" })[dt.name]
  local data = ffi.new(ctype .. "[?]", cute.cosize(layout))
  for i = 0, cute.size(layout) - 1 do data[layout(i)] = vals[i + 1] end
  return setmetatable({ data = data, dtype = dt, layout = layout }, require("cute.tensor").HostTensor)
end

local function random_list(n, seed)
  math.randomseed(seed)
  local t = {}
  for i = 1, n do t[i] = math.random() * 2 - 1 end
  return t
end

local function raises(fn)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error")
  return tostring(msg)
end

describe("cute.testing.assert_close", function()
  it("passes close tensors and returns the largest differences", function()
    local vals = random_list(12, 1)
    local near = {}
    for i, v in ipairs(vals) do near[i] = v * (1 + 1e-7) end
    local r = T.assert_close(host(cute.f32, cute.make_layout({ 4, 3 }), near), vals)
    assert.equal(12, r.n)
    assert.is_true(r.max_abs > 0 and r.max_abs < 1e-6, tostring(r.max_abs))
    -- a number is every element
    assert.equal(12, T.assert_close(host(cute.i32, cute.make_layout({ 4, 3 }), { 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7 }),
      7).n)
  end)

  it("names the worst element by its coordinate, the count, and the caller's line", function()
    local vals = random_list(12, 2)
    local got = {}
    for i, v in ipairs(vals) do got[i] = v end
    got[2 + 4 * 1 + 1] = vals[2 + 4 * 1 + 1] + 0.5 -- (2,1) of a 4 x 3 tensor, the worst
    got[1] = vals[1] + 0.01                       -- (0,0), off too
    -- stored row-major: the coordinate is the tensor's, not the memory offset
    local t = host(cute.f64, cute.make_layout({ 4, 3 }, { 3, 1 }), got)
    local msg = raises(function() T.assert_close(t, vals, { what = "out" }) end)
    assert.matches("2 of 12 elements of out differ", msg, 1, true)
    assert.matches("the worst, at (2,1)", msg, 1, true)
    assert.matches("testing_spec.lua:%d+:", msg)
  end)

  it("takes tolerances from the dtype, or from the options", function()
    local one = host(cute.f32, cute.make_layout(4), { 1, 1, 1, 1 })
    assert.has_no.errors(function() T.assert_close(one, { 1, 1, 1 + 1e-6, 1 }) end)
    raises(function() T.assert_close(one, { 1, 1, 1 + 1e-4, 1 }) end)
    assert.has_no.errors(function() T.assert_close(one, { 1, 1, 1 + 1e-4, 1 }, { rtol = 1e-3 }) end)
    -- integers: exactly
    raises(function() T.assert_close(host(cute.i32, cute.make_layout(2), { 3, 4 }), { 3, 5 }) end)
  end)

  it("fails on NaN (a poisoned element never written) unless equal_nan", function()
    local t = host(cute.f32, cute.make_layout(3), { 1, 0 / 0, 3 })
    local msg = raises(function() T.assert_close(t, { 1, 2, 3 }) end)
    assert.matches("at (1): nan, expected 2", msg:lower(), 1, true)
    raises(function() T.assert_close(t, { 1, 0 / 0, 3 }) end)
    assert.has_no.errors(function() T.assert_close(t, { 1, 0 / 0, 3 }, { equal_nan = true }) end)
  end)

  it("refuses what it cannot compare, saying what", function()
    assert.matches("has 3 elements, the reference 2",
      raises(function() T.assert_close(host(cute.f32, cute.make_layout(3), { 1, 2, 3 }), { 1, 2 }) end), 1, true)
    assert.matches("unknown option 'rtl' (did you mean 'rtol'?)",
      raises(function() T.assert_close({ 1 }, { 1 }, { rtl = 1 }) end), 1, true)
    assert.matches("rtol = -1, expected a number >= 0",
      raises(function() T.assert_close({ 1 }, { 1 }, { rtol = -1 }) end), 1, true)
    assert.matches("expected a number", raises(function() T.assert_close({ 1, "x" }, { 1, 2 }) end))
  end)
end)

describe("cute.testing.check_gemm", function()
  -- A (m x k), B (k x n) random; C = alpha A B + beta C0 in Lua, column-major lists
  local function case(m, n, k, l, alpha, beta, seed)
    local a, b, c0 = random_list(m * k * l, seed), random_list(k * n * l, seed + 1), random_list(m * n * l, seed + 2)
    local c = {}
    for bb = 0, l - 1 do
      for j = 0, n - 1 do
        for i = 0, m - 1 do
          local s = 0
          for kk = 0, k - 1 do s = s + a[i + m * kk + m * k * bb + 1] * b[kk + k * j + k * n * bb + 1] end
          local idx = i + m * j + m * n * bb + 1
          c[idx] = alpha * s + beta * c0[idx]
        end
      end
    end
    local shape = function(r, cc) return l > 1 and { r, cc, l } or { r, cc } end
    return host(cute.f64, cute.make_layout(shape(m, k)), a), host(cute.f64, cute.make_layout(shape(k, n)), b),
      c, c0, shape(m, n)
  end

  it("passes a correct product, batched, with alpha and beta", function()
    -- negative alpha and beta are numbers like any other
    local A1, B1, c1, c01, cs1 = case(3, 4, 5, 1, -2, -1, 40)
    assert.equal(12, T.check_gemm(A1, B1, host(cute.f64, cute.make_layout(cs1), c1), { alpha = -2, beta = -1,
      c0 = c01 }).checked)
    local A, B, c, c0, cs = case(5, 7, 9, 2, 1.5, 0.5, 10)
    -- C row-major: compared by coordinate
    local C = host(cute.f64, cute.make_layout(cs, { 7, 1, 35 }), c)
    local r = T.check_gemm(A, B, C, { alpha = 1.5, beta = 0.5, c0 = c0 })
    assert.equal(70, r.checked)
    assert.is_true(r.max_rel < 1e-12)
    assert.equal(10, T.check_gemm(A, B, C, { alpha = 1.5, beta = 0.5, c0 = c0, samples = 10 }).checked)
  end)

  it("names the wrong element, and refuses a poisoned one", function()
    local A, B, c, _, cs = case(4, 3, 8, 1, 1, 0, 20)
    c[1 + 4 * 2 + 1] = c[1 + 4 * 2 + 1] + 1e-3 -- C(1,2)
    local msg = raises(function() T.check_gemm(A, B, host(cute.f64, cute.make_layout(cs), c)) end)
    assert.matches("C(1,2,0) = ", msg, 1, true)
    assert.matches("testing_spec.lua:%d+:", msg)
    c[1 + 4 * 2 + 1] = 0 / 0
    assert.matches("|difference| NaN",
      raises(function() T.check_gemm(A, B, host(cute.f64, cute.make_layout(cs), c)) end), 1, true)
  end)

  it("refuses shapes that do not chain and a beta without c0", function()
    local A, B, c, _, cs = case(4, 3, 8, 1, 1, 0, 30)
    local C = host(cute.f64, cute.make_layout(cs), c)
    assert.matches("shapes do not chain", raises(function() T.check_gemm(B, A, C) end), 1, true)
    assert.matches("beta = 2 needs c0", raises(function() T.check_gemm(A, B, C, { beta = 2 }) end), 1, true)
    assert.matches("expected rank 2 or 3", raises(function()
      T.check_gemm(host(cute.f64, cute.make_layout(4), { 1, 2, 3, 4 }), B, C)
    end), 1, true)
  end)
end)

describe("cute.testing on device tensors", function()
  it("compares a device tensor by coordinate and checks a GEMM cute.gemm wrote #gpu", function()
    local t = cute.tensor(cute.f32, cute.make_layout({ 33, 17 }, { 17, 1 })):uniform(-1, 1, 5)
    local ref = t:to_table()
    assert.equal(33 * 17, T.assert_close(t, ref).n)
    ref[33 * 3 + 4] = ref[33 * 3 + 4] + 1 -- (3,3)
    assert.matches("the worst, at (3,3)", raises(function() T.assert_close(t, ref) end), 1, true)
    local A = cute.tensor(cute.bf16, { 70, 40 }):uniform(-1, 1, 6)
    local B = cute.tensor(cute.bf16, { 40, 50 }):uniform(-1, 1, 7)
    local C = cute.tensor(cute.f32, { 70, 50 }):fill(0 / 0)
    cute.gemm(A, B, C)
    assert.equal(3500, T.check_gemm(A, B, C).checked)
    C:fill(0 / 0)
    assert.matches("|difference| NaN", raises(function() T.check_gemm(A, B, C) end), 1, true)
    t:free(); A:free(); B:free(); C:free()
  end)
end)

describe("cute.testing.check_grouped_gemm", function()
  -- T rows of A split by offsets, problem e's rows times matrix e of B (K x N x G)
  local function case(offsets, k, n, alpha, with_bias, seed)
    local t, g = offsets[#offsets], #offsets - 1
    local a, b = random_list(t * k, seed), random_list(k * n * g, seed + 1)
    local bias = with_bias and random_list(n, seed + 2) or nil
    local c = {}
    for i = 0, t - 1 do
      local e = 0
      while offsets[e + 2] <= i do e = e + 1 end
      for j = 0, n - 1 do
        local s = 0
        for kk = 0, k - 1 do s = s + a[i + t * kk + 1] * b[kk + k * j + k * n * e + 1] end
        c[i + t * j + 1] = alpha * s + (bias and bias[j + 1] or 0)
      end
    end
    return host(cute.f64, cute.make_layout({ t, k }), a), host(cute.f64, cute.make_layout({ k, n, g }), b),
      host(cute.f64, cute.make_layout({ t, n }), c), c, bias
  end

  it("passes a correct grouped product (empty problems, alpha, a column bias) and fails a wrong one", function()
    local off = { 0, 3, 3, 7, 10 }
    local A, B, C, c = case(off, 5, 4, 1, false, 7)
    assert.equal(40, T.check_grouped_gemm(A, B, C, off).checked)
    local A2, B2, C2, _, bias = case(off, 6, 3, -1.5, true, 9)
    assert.equal(30, T.check_grouped_gemm(A2, B2, C2, off, { alpha = -1.5, bias = bias }).checked)
    -- row 5 belongs to problem 2 (rows 3-6): a wrong value there is named with its problem
    c[5 + 10 * 2 + 1] = c[5 + 10 * 2 + 1] + 0.5
    local bad = host(cute.f64, cute.make_layout({ 10, 4 }), c)
    assert.matches("C%(5,2%) %(problem 2%) = .*expected", raises(function() T.check_grouped_gemm(A, B, bad, off) end))
    -- the same rows checked against the wrong split fail too
    assert.matches("check_grouped_gemm", raises(function() T.check_grouped_gemm(A, B, C, { 0, 4, 4, 7, 10 }) end))
    assert.matches("offsets must be 5 row numbers from 0 to 10", raises(function()
      T.check_grouped_gemm(A, B, C, { 0, 10 }) end))
  end)
end)
