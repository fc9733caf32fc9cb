--- cute.testing: checks for the tests of kernels, usable from busted or a
-- plain script. Each raises at the caller's line with the worst element, its
-- coordinate, and how many elements are off; each returns a table of figures
-- when the check holds.
--
--   local T = cute.testing
--   T.assert_close(out, ref)                        -- tolerances from out's dtype
--   T.assert_close(out, ref, { rtol = 1e-3, atol = 1e-5, what = "softmax" })
--   T.check_gemm(A, B, C)                           -- C = A @ B, in float64
--   T.check_gemm(A, B, C, { alpha = 2, beta = 1, c0 = C_before })
--
-- Tensors are compared in coordinate order (CuTe's colexicographic order of
-- the tensor's shape, the order of `t:to_table()`), whatever their strides.
local err = require "cute._err"
local int_tuple = require "cute.int_tuple"
local L = require "cute.layout"

local M = {}

-- Default tolerances by dtype (rtol, atol): an element passes when
-- |got - want| <= atol + rtol * |want|. For the narrow floats, a couple of
-- units in the last place of the stored value; integers exactly.
local DEFAULT_TOL = {
  f64 = { 1e-12, 1e-12 }, f32 = { 1.3e-6, 1e-5 }, tf32 = { 2 ^ -10, 1e-5 }, f16 = { 2 ^ -10, 1e-5 },
  bf16 = { 2 ^ -7, 1e-5 }, e4m3 = { 2 ^ -3, 2 ^ -9 }, e5m2 = { 2 ^ -2, 2 ^ -16 },
}

local function is_table(x) return type(x) == "table" end

-- The values of x in coordinate order: (get, n, shape, dtype). get(i) is
-- 0-based. x: a device tensor (to_host), a host tensor (doubles), a Lua list
-- (1-based), or a number (every element, when n is given).
local function values(x, what, n)
  if type(x) == "number" then
    if not n then err.raise("cute.testing: %s is a number, and there is nothing to broadcast it to", what) end
    return function() return x end, n, nil, nil
  end
  if not is_table(x) and type(x) ~= "userdata" then
    err.raise("cute.testing: %s is %s: expected a tensor, a host tensor (t:to_host()) or a list of numbers", what,
      type(x))
  end
  if is_table(x) and x.to_host and x.layout then x = x:to_host() end
  if is_table(x) and x.doubles and x.layout then
    local d = x:doubles()
    local size = L.size(x.layout)
    return function(i) return d[i] end, size, x.layout.shape, x.dtype
  end
  if is_table(x) then
    for i = 1, #x do
      if type(x[i]) ~= "number" then
        err.raise("cute.testing: %s[%d] is %s, expected a number", what, i, type(x[i]))
      end
    end
    return function(i) return x[i + 1] end, #x, nil, nil
  end
  err.raise("cute.testing: %s is %s: expected a tensor, a host tensor or a list of numbers", what, tostring(x))
end

-- The coordinate of flat index i in shape (or "[i]" without one).
local function coord(i, shape)
  if shape == nil then return string.format("[%d]", i) end
  if type(shape) == "number" then return string.format("(%d)", i) end
  return int_tuple.pretty_str(int_tuple.idx2crd(i, shape))
end

local function check_opts(opts, fn, known)
  if opts == nil then return {} end
  if not is_table(opts) then err.raise("cute.testing.%s: options are %s, expected a table", fn, type(opts)) end
  local names = {}
  for k in pairs(known) do names[#names + 1] = k end
  table.sort(names)
  for k, v in pairs(opts) do
    if not known[k] then
      err.raise("cute.testing.%s: unknown option '%s'%s (options: %s)", fn, tostring(k), err.did_you_mean(k, names),
        table.concat(names, ", "))
    end
    if known[k] == "number" and (type(v) ~= "number" or v < 0 or v ~= v) then
      err.raise("cute.testing.%s: %s = %s, expected a number >= 0", fn, k, tostring(v))
    elseif known[k] == "scalar" and (type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge) then
      err.raise("cute.testing.%s: %s = %s, expected a finite number", fn, k, tostring(v))
    end
  end
  return opts
end

local function fmt(v) return string.format("%.9g", v) end

--- Asserts that `got` is close to `want` element by element:
-- |got - want| <= atol + rtol * |want|, with NaN equal to NaN only with
-- equal_nan. got: a tensor (device or host) or a list; want: the same, or a
-- number for every element. Options: rtol, atol (default: by got's dtype, or
-- f64's for a list), equal_nan (false), what (a name for messages).
-- @return {max_abs =, max_rel =, n =} when every element is close
-- @param got a device tensor, host tensor or list
-- @param want the same kind of values, or a number
-- @param opts optional: {rtol =, atol =, equal_nan =, what =}
-- @usage cute.testing.assert_close(y, ref, {rtol = 1e-3})
function M.assert_close(got, want, opts)
  opts = check_opts(opts, "assert_close", { rtol = "number", atol = "number", equal_nan = "boolean",
    what = "string" })
  local what = opts.what or "got"
  local g, n, shape, dt = values(got, what, nil)
  local w, nw = values(want, "the reference", n)
  if nw ~= n then
    err.raise("cute.testing.assert_close: %s has %d elements, the reference %d", what, n, nw)
  end
  local tol = DEFAULT_TOL[dt and dt.name or "f64"] or { 0, 0 } -- integers: exact
  local rtol, atol = opts.rtol or tol[1], opts.atol or tol[2]
  local bad, worst, worst_i, worst_excess = 0, nil, nil, -1
  local max_abs, max_rel = 0, 0
  for i = 0, n - 1 do
    local a, b = g(i), w(i)
    local ok, excess
    if a ~= a or b ~= b then
      ok = opts.equal_nan and a ~= a and b ~= b
      excess = math.huge
    else
      local d = math.abs(a - b)
      local lim = atol + rtol * math.abs(b)
      ok = d <= lim
      excess = lim > 0 and d / lim or (d > 0 and math.huge or 0)
      if d > max_abs then max_abs = d end
      if b ~= 0 and d / math.abs(b) > max_rel then max_rel = d / math.abs(b) end
    end
    if not ok then
      bad = bad + 1
      if excess > worst_excess then worst, worst_i, worst_excess = { a, b }, i, excess end
    end
  end
  if bad > 0 then
    local a, b = worst[1], worst[2]
    err.raise("cute.testing.assert_close: %d of %d elements of %s differ (rtol %g, atol %g); the worst, at %s: "
      .. "%s, expected %s (|difference| %s)", bad, n, what, rtol, atol, coord(worst_i, shape), fmt(a), fmt(b),
      (a ~= a or b ~= b) and "NaN" or fmt(math.abs(a - b)))
  end
  return { max_abs = max_abs, max_rel = max_rel, n = n }
end

-- The shape (r, c[, l]) of a GEMM operand.
local function gemm_shape(t, what)
  if not (is_table(t) and t.layout) then
    err.raise("cute.testing.check_gemm: %s is %s, expected a tensor", what, type(t))
  end
  local s = t.layout.shape
  local r = type(s) == "table" and #s or 1
  if r ~= 2 and r ~= 3 then
    err.raise("cute.testing.check_gemm: %s has shape %s: expected rank 2 or 3 (rows, columns[, batch])", what,
      int_tuple.pretty_str(s))
  end
  for i = 1, r do
    if type(s[i]) ~= "number" then
      err.raise("cute.testing.check_gemm: %s has shape %s: expected integer modes", what, int_tuple.pretty_str(s))
    end
  end
  return s[1], s[2], s[3] or 1
end

--- Checks C = alpha * A @ B + beta * C0 against float64, as a GEMM wrote C.
-- A: M x K, B: K x N, C: M x N, each [x L] (device or host tensors). An
-- element passes when |C - ref| <= rtol * (|alpha| * sum_k |a b| + |beta c0|)
-- (+ atol): the error a sum of K rounded products may carry. A NaN in C (a
-- poisoned element not written) fails. Options: alpha (1), beta (0), c0 (C's
-- values before the GEMM, a tensor or list; needed when beta ~= 0), rtol
-- (default by A's dtype), atol (0), samples (check that many elements spread
-- over C; default all), what (a name for messages).
-- @return {max_rel =, checked =} when every checked element passes
-- @param A the device tensor A (M x K)
-- @param B the device tensor B (K x N)
-- @param C the device tensor C (M x N), the GEMM's result
-- @param opts optional: {alpha =, beta =, c0 =, rtol =, atol =, samples =, what =}
-- @usage cute.testing.check_gemm(A, B, cute.gemm(A, B))
function M.check_gemm(A, B, C, opts)
  opts = check_opts(opts, "check_gemm", { alpha = "scalar", beta = "scalar", c0 = true, rtol = "number",
    atol = "number", samples = "number", what = "string" })
  local m, k, l = gemm_shape(A, "A")
  local k2, n, l2 = gemm_shape(B, "B")
  local m3, n3, l3 = gemm_shape(C, "C")
  if k2 ~= k or m3 ~= m or n3 ~= n or l2 ~= l or l3 ~= l then
    err.raise("cute.testing.check_gemm: shapes do not chain: A %dx%dx%d, B %dx%dx%d, C %dx%dx%d (expected M x K, "
      .. "K x N, M x N, each x L)", m, k, l, k2, n, l2, m3, n3, l3)
  end
  local alpha, beta = opts.alpha or 1, opts.beta or 0
  local a, _, _, adt = values(A, "A")
  local b = values(B, "B")
  local c = values(C, "C")
  local c0
  if beta ~= 0 then
    if opts.c0 == nil then
      err.raise("cute.testing.check_gemm: beta = %g needs c0, C's values before the GEMM", beta)
    end
    c0 = values(opts.c0, "c0", m * n * l)
  end
  local tol = DEFAULT_TOL[adt and adt.name or "f64"] or { 0, 0 }
  local rtol, atol = opts.rtol or tol[1], opts.atol or 0
  local total = m * n * l
  local count = opts.samples and math.min(math.floor(opts.samples), total) or total
  local what = opts.what or "C"
  local max_rel = 0
  for t = 0, count - 1 do
    -- all elements, or `count` spread over C by a stride coprime to it
    local idx = count == total and t or (t * 7919) % total
    local i, j, bb = idx % m, math.floor(idx / m) % n, math.floor(idx / (m * n))
    local ref, mag = 0, 0
    for kk = 0, k - 1 do
      local p = a(i + m * kk + m * k * bb) * b(kk + k * j + k * n * bb)
      ref, mag = ref + p, mag + math.abs(p)
    end
    ref, mag = alpha * ref, math.abs(alpha) * mag
    if c0 then
      local v = c0(idx)
      ref, mag = ref + beta * v, mag + math.abs(beta * v)
    end
    local got = c(idx)
    local lim = rtol * mag + atol
    local d = math.abs(got - ref)
    if got ~= got or d > lim then
      err.raise("cute.testing.check_gemm: %s(%d,%d,%d) = %s, expected %s (|difference| %s, allowed %s: rtol %g "
        .. "times the sum of |products| %s)", what, i, j, bb, fmt(got), fmt(ref), got ~= got and "NaN" or fmt(d),
        fmt(lim), rtol, fmt(mag))
    end
    if mag > 0 and d / mag > max_rel then max_rel = d / mag end
  end
  return { max_rel = max_rel, checked = count }
end

--- Checks a grouped GEMM (cute.lib.gemm.grouped) against float64: the rows
-- of A (T x K) and C (T x N) split into problems by `offsets` (G + 1 row
-- numbers from 0 to T, a Lua list), problem e's rows multiplied by matrix e
-- of B (K x N x G): C[r, :] = alpha * A[r, :] @ B[:, :, e] (+ bias[j]). An
-- element passes as in check_gemm (rtol times the sum of |products|, + atol).
-- Options: alpha (1), bias (N values added by column: a tensor or list),
-- rtol (default by A's dtype), atol (0), samples (default all), what.
-- @param A the tokens (T x K)
-- @param B the problems' matrices (K x N x G)
-- @param C the result (T x N)
-- @param offsets the G + 1 row offsets
-- @param opts optional: {alpha =, bias =, rtol =, atol =, samples =, what =}
-- @return {max_rel =, checked =} when every checked element passes
-- @usage cute.testing.check_grouped_gemm(X, W, Y, { 0, 100, 256 }, { samples = 500 })
function M.check_grouped_gemm(A, B, C, offsets, opts)
  opts = check_opts(opts, "check_grouped_gemm", { alpha = "scalar", bias = true, rtol = "number", atol = "number",
    samples = "number", what = "string" })
  local t, k = gemm_shape(A, "A")
  local k2, n, g = gemm_shape(B, "B")
  local t3, n3 = gemm_shape(C, "C")
  if k2 ~= k or t3 ~= t or n3 ~= n then
    err.raise("cute.testing.check_grouped_gemm: shapes do not chain: A %dx%d, B %dx%dx%d, C %dx%d (expected T x K, "
      .. "K x N x G, T x N)", t, k, k2, n, g, t3, n3)
  end
  if type(offsets) ~= "table" or #offsets ~= g + 1 or offsets[1] ~= 0 or offsets[g + 1] ~= t then
    err.raise("cute.testing.check_grouped_gemm: offsets must be %d row numbers from 0 to %d", g + 1, t)
  end
  local alpha = opts.alpha or 1
  local a, _, _, adt = values(A, "A")
  local b = values(B, "B")
  local c = values(C, "C")
  local bias = opts.bias ~= nil and values(opts.bias, "bias", n) or nil
  local tol = DEFAULT_TOL[adt and adt.name or "f64"] or { 0, 0 }
  local rtol, atol = opts.rtol or tol[1], opts.atol or 0
  local total = t * n
  local count = opts.samples and math.min(math.floor(opts.samples), total) or total
  local what = opts.what or "C"
  local max_rel = 0
  for s = 0, count - 1 do
    local idx = count == total and s or (s * 7919) % total
    local i, j = idx % t, math.floor(idx / t)
    local e = 0
    while offsets[e + 2] <= i do e = e + 1 end
    local ref, mag = 0, 0
    for kk = 0, k - 1 do
      local p = a(i + t * kk) * b(kk + k * j + k * n * e)
      ref, mag = ref + p, mag + math.abs(p)
    end
    ref, mag = alpha * ref, math.abs(alpha) * mag
    if bias then ref, mag = ref + bias(j), mag + math.abs(bias(j)) end
    local got = c(idx)
    local lim = rtol * mag + atol
    local d = math.abs(got - ref)
    if got ~= got or d > lim then
      err.raise("cute.testing.check_grouped_gemm: %s(%d,%d) (problem %d) = %s, expected %s (|difference| %s, allowed "
        .. "%s)", what, i, j, e, fmt(got), fmt(ref), got ~= got and "NaN" or fmt(d), fmt(lim))
    end
    if mag > 0 and d / mag > max_rel then max_rel = d / mag end
  end
  return { max_rel = max_rel, checked = count }
end

return M
