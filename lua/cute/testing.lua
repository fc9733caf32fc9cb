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
--   T.check_attention(Q, K, V, O, LSE, { causal = true })  -- attention, in float64
--
-- Tensors are compared in coordinate order (CuTe's colexicographic order of
-- the tensor's shape, the order of `t:to_table()`), whatever their strides.
local err = require "cute._err"
local int_tuple = require "cute.int_tuple"

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
  if is_table(x) and x.lazy_doubles and x.layout then
    -- (the span converted once, elements found by their layout: no gathered copy)
    local get, size, span, offset = x:lazy_doubles()
    return get, size, x.layout.shape, x.dtype, span, offset
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

-- For reading tensor x along its mode `mode` (fn: the check, for messages):
-- its values converted once (span), offset(i) (flat index -> span index), the
-- mode's stride and x's dtype.
local function strided(x, what, mode, fn)
  local _, _, _, dt, span, offset = values(x, what)
  if not span then err.raise("cute.testing.%s: %s must be a device or host tensor", fn, what) end
  return span, offset, x.layout.stride[mode], dt
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
  -- A's row i and B's column j of batch bb read along K from the converted spans:
  -- element kk at span[base + kk * step] (step: the K mode's stride)
  local aspan, aoff, astep, adt = strided(A, "A", 2, "check_gemm")
  local bspan, boff, bstep = strided(B, "B", 1, "check_gemm")
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
    local ab, bb0 = aoff(i + m * k * bb), boff(k * j + k * n * bb)
    for kk = 0, k - 1 do
      local p = aspan[ab + kk * astep] * bspan[bb0 + kk * bstep]
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

-- The rank-r shape of an attention operand, integer modes.
local function attn_shape(t, what, r, names)
  if not (is_table(t) and t.layout) then
    err.raise("cute.testing.check_attention: %s is %s, expected a tensor %s", what, type(t), names)
  end
  local s = t.layout.shape
  if type(s) ~= "table" or #s ~= r then
    err.raise("cute.testing.check_attention: %s has shape %s: expected %s", what, int_tuple.pretty_str(s), names)
  end
  for i = 1, r do
    if type(s[i]) ~= "number" then
      err.raise("cute.testing.check_attention: %s has shape %s: expected integer modes %s", what,
        int_tuple.pretty_str(s), names)
    end
  end
  return s
end

-- Offsets (a Lua list or a tensor of B + 1 i32) as a Lua list.
local function offset_list(x, what, min)
  if is_table(x) and x.layout then
    local get, n = values(x, what)
    local t = {}
    for i = 0, n - 1 do t[i + 1] = get(i) end
    return t
  end
  if not is_table(x) or #x < (min or 2) then
    err.raise("cute.testing.check_attention: %s must be %s (a list or a tensor)", what,
      min and "B lengths" or "B + 1 offsets")
  end
  return x
end

--- Checks an attention forward against float64: for each checked query row,
-- the scores scale * q . k over the keys the mask allows (causal and window
-- bottom-right aligned: key j is seen by query i when i + sk - sq - left <= j
-- <= i + sk - sq + right, causal meaning right = 0), their softmax, and O's row
-- sum_j p_j v_j. An element of O passes when |O - ref| <= rtol * (sum_j p_j
-- |v_j| + |ref|) + atol (the error of P and O stored in 16 bits: rtol 2^-7 for
-- bf16, 2^-9 for f16 by default; atol 2^-12); LSE (natural log) when |LSE - ref| <=
-- lse_tol * max(1, |ref|) (1e-3). A row that sees no key must have O = 0 and LSE =
-- -inf. Shapes as cute.lib.attention.forward's: Q, O (B, Sq, Hq, D), K, V (B, Sk,
-- Hkv, D), LSE (B, Hq, Sq); varlen (cu_seqlens_q/k): Q (total_q, Hq, D), K, V
-- (total_k, Hkv, D), LSE (Hq, total_q). LSE may be nil (not checked). Options:
-- scale (1/sqrt(D)), causal, window {left, right}, cu_seqlens_q, cu_seqlens_k,
-- cache_seqlens (decode: B lengths, sequence b's keys the first of its cache),
-- block_table (paged caches K, V (pages, page_size, Hkv, D): a (B, max_pages)
-- tensor or a list of lists of page numbers; needs cache_seqlens), rtol, atol,
-- lse_tol, samples (rows checked, spread over all; default all), what (a name
-- for messages).
-- @param Q the queries (device or host tensor)
-- @param K the keys
-- @param V the values
-- @param O the output to check
-- @param LSE the log-sum-exp to check, or nil
-- @param opts optional: {scale =, causal =, window =, cu_seqlens_q =, cu_seqlens_k =, cache_seqlens =,
-- block_table =, rtol =, atol =, lse_tol =, samples =, what =}
-- @return {max_rel =, rows =, masked_rows =} when every checked row passes
-- @usage cute.testing.check_attention(Q, K, V, O, lse, { causal = true })
function M.check_attention(Q, K, V, O, LSE, opts)
  opts = check_opts(opts, "check_attention", { scale = "scalar", causal = "boolean", window = true,
    cu_seqlens_q = true, cu_seqlens_k = true, cache_seqlens = true, block_table = true, rtol = "number",
    atol = "number", lse_tol = "number", samples = "number", what = "string" })
  local varlen = opts.cu_seqlens_q ~= nil
  if varlen ~= (opts.cu_seqlens_k ~= nil) then
    err.raise("cute.testing.check_attention: give both cu_seqlens_q and cu_seqlens_k, or neither")
  end
  local r = varlen and 3 or 4
  local qn = varlen and "(total_q, Hq, D)" or "(B, Sq, Hq, D)"
  local kn = varlen and "(total_k, Hkv, D)" or "(B, Sk, Hkv, D)"
  local qs = attn_shape(Q, "Q", r, qn)
  local ks = attn_shape(K, "K", r, kn)
  local vs = attn_shape(V, "V", r, kn)
  local os_ = attn_shape(O, "O", r, qn)
  local paged = opts.block_table ~= nil
  if paged and (varlen or opts.cache_seqlens == nil) then
    err.raise("cute.testing.check_attention: block_table (paged caches) needs cache_seqlens, and no cu_seqlens")
  end
  for i = 1, r do
    if ks[i] ~= vs[i] or qs[i] ~= os_[i] or (i ~= r - 1 and i ~= (varlen and 1 or 2) and not (paged and i == 1)
        and qs[i] ~= ks[i]) then
      err.raise("cute.testing.check_attention: shapes do not match: Q %s, K %s, V %s, O %s (expected %s, %s)",
        int_tuple.pretty_str(qs), int_tuple.pretty_str(ks), int_tuple.pretty_str(vs), int_tuple.pretty_str(os_), qn,
        kn)
    end
  end
  local d, hq, hkv = qs[r], qs[r - 1], ks[r - 1]
  if hq % hkv ~= 0 then
    err.raise("cute.testing.check_attention: Q has %d heads, K %d: not a multiple", hq, hkv)
  end
  local cq, ck
  local nb
  if varlen then
    cq, ck = offset_list(opts.cu_seqlens_q, "cu_seqlens_q"), offset_list(opts.cu_seqlens_k, "cu_seqlens_k")
    if #cq ~= #ck then err.raise("cute.testing.check_attention: cu_seqlens_q and cu_seqlens_k differ in length") end
    nb = #cq - 1
  else
    nb = qs[1]
  end
  local lens, bt = nil, nil
  if opts.cache_seqlens ~= nil then
    lens = offset_list(opts.cache_seqlens, "cache_seqlens", 1)
    if #lens ~= nb or varlen then
      err.raise("cute.testing.check_attention: cache_seqlens must be %d lengths (and no cu_seqlens)", nb)
    end
  end
  if paged then
    bt = opts.block_table
    if is_table(bt) and bt.layout then -- a (B, max_pages) tensor
      local get, _, shape = values(bt, "block_table")
      local rows_ = {}
      for b = 0, nb - 1 do
        rows_[b + 1] = {}
        for j = 0, shape[2] - 1 do rows_[b + 1][j + 1] = get(b + shape[1] * j) end
      end
      bt = rows_
    end
  end
  local lse_shape = varlen and { hq, qs[1] } or { nb, hq, qs[2] }
  if LSE ~= nil then attn_shape(LSE, "LSE", #lse_shape, varlen and "(Hq, total_q)" or "(B, Hq, Sq)") end
  -- flat (colexicographic) indices of Q/O, K/V and LSE elements
  local qi, ki, li
  if varlen then
    local tq, tk = qs[1], ks[1]
    qi = function(_, row, h, e) return row + tq * (h + hq * e) end
    ki = function(_, row, h, e) return row + tk * (h + hkv * e) end
    li = function(_, row, h) return h + hq * row end
  else
    local sq0, sk0 = qs[2], ks[2]
    qi = function(b, row, h, e) return b + nb * (row + sq0 * (h + hq * e)) end
    ki = function(b, row, h, e) return b + nb * (row + sk0 * (h + hkv * e)) end
    if paged then -- K (pages, page_size, Hkv, D): token t of sequence b in page bt[b][t // page_size]
      local np, ps = ks[1], ks[2]
      ki = function(b, row, h, e)
        local pg = bt[b + 1][math.floor(row / ps) + 1]
        return pg + np * (row % ps + ps * (h + hkv * e))
      end
    end
    li = function(b, row, h) return b + nb * (h + hq * row) end
  end
  -- Q, K, V read a row (the D values of a (batch, row, head)) at a time:
  -- xrow(b, i, h) -> span, base, step, element e at span[base + e * step] (the
  -- converted span and the D mode's stride)
  local function reader(x, what, idx)
    local span, offset, st, dt = strided(x, what, r, "check_attention")
    return function(b, i, h) return span, offset(idx(b, i, h, 0)), st end, dt
  end
  local qrow, qdt = reader(Q, "Q", qi)
  local krow = reader(K, "K", ki)
  local vrow = reader(V, "V", ki)
  local o = values(O, "O")
  local lse = LSE ~= nil and values(LSE, "LSE") or nil
  local scale = opts.scale or 1 / math.sqrt(d)
  local left, right = -1, -1
  if opts.window ~= nil then
    if not is_table(opts.window) or #opts.window ~= 2 then
      err.raise("cute.testing.check_attention: window must be {left, right}")
    end
    left, right = opts.window[1], opts.window[2]
  end
  if opts.causal then right = 0 end
  local dname = qdt and qdt.name
  local rtol = opts.rtol or (dname == "f16" and 2 ^ -9 or dname == "bf16" and 2 ^ -7 or 1e-6)
  local atol = opts.atol or 2 ^ -12
  local lse_tol = opts.lse_tol or 1e-3
  local what = opts.what or "O"
  -- the rows: (b, i, h) with i a row of sequence b (its global row for varlen)
  local rows = {}
  for b = 0, nb - 1 do
    local q0, q1 = varlen and cq[b + 1] or 0, varlen and cq[b + 2] or qs[2]
    local k0, k1 = varlen and ck[b + 1] or 0, varlen and ck[b + 2] or (lens and lens[b + 1]) or ks[2]
    for h = 0, hq - 1 do
      for i = q0, q1 - 1 do rows[#rows + 1] = { b, i, h, q0, q1, k0, k1 } end
    end
  end
  local total = #rows
  local count = opts.samples and math.min(math.floor(opts.samples), total) or total
  local max_rel, masked = 0, 0
  local s, p, qv, refs, mags = {}, {}, {}, {}, {}
  for t = 0, count - 1 do
    local row = rows[(count == total and t or (t * 7919) % total) + 1]
    local b, i, h, q0, q1, k0, k1 = row[1], row[2], row[3], row[4], row[5], row[6], row[7]
    local hk = math.floor(h / (hq / hkv))
    local sq, sk, ii = q1 - q0, k1 - k0, i - q0
    local lo, hi = 0, sk - 1
    if left >= 0 then lo = math.max(lo, ii + sk - sq - left) end
    if right >= 0 then hi = math.min(hi, ii + sk - sq + right) end
    local mx = -math.huge
    local qa, qb, qst = qrow(b, i, h)
    for e = 0, d - 1 do qv[e] = qa[qb + e * qst] end
    for j = lo, hi do
      local acc = 0
      local ka, kb, kst = krow(b, k0 + j, hk)
      for e = 0, d - 1 do acc = acc + qv[e] * ka[kb + e * kst] end
      s[j] = acc * scale
      if s[j] > mx then mx = s[j] end
    end
    local where = varlen and string.format("(%d, %d, :)", i, h) or string.format("(%d, %d, %d, :)", b, i, h)
    if hi < lo then
      masked = masked + 1
      for e = 0, d - 1 do
        local got = o(qi(b, i, h, e))
        if got ~= 0 then
          err.raise("cute.testing.check_attention: %s%s sees no key (masked out), so O must be 0; element %d is %s",
            what, where, e, fmt(got))
        end
      end
      if lse and lse(li(b, i, h)) ~= -math.huge then
        err.raise("cute.testing.check_attention: LSE of the masked row %s is %s, expected -inf", where,
          fmt(lse(li(b, i, h))))
      end
    else
      local sum = 0
      for j = lo, hi do
        p[j] = math.exp(s[j] - mx)
        sum = sum + p[j]
      end
      -- (each column's sum over the keys in key order, the keys' V rows read once)
      for e = 0, d - 1 do refs[e], mags[e] = 0, 0 end
      for j = lo, hi do
        local va, vb, vst = vrow(b, k0 + j, hk)
        local pj = p[j]
        for e = 0, d - 1 do
          local x = pj * va[vb + e * vst]
          refs[e], mags[e] = refs[e] + x, mags[e] + math.abs(x)
        end
      end
      for e = 0, d - 1 do
        local ref, mag = refs[e] / sum, mags[e] / sum
        local got = o(qi(b, i, h, e))
        local lim = rtol * (mag + math.abs(ref)) + atol
        local diff = math.abs(got - ref)
        if got ~= got or diff > lim then
          err.raise("cute.testing.check_attention: %s%s element %d = %s, expected %s (|difference| %s, allowed %s)",
            what, where, e, fmt(got), fmt(ref), got ~= got and "NaN" or fmt(diff), fmt(lim))
        end
        if mag > 0 and diff / mag > max_rel then max_rel = diff / mag end
      end
      if lse then
        local want, got = mx + math.log(sum), lse(li(b, i, h))
        if got ~= got or math.abs(got - want) > lse_tol * math.max(1, math.abs(want)) then
          err.raise("cute.testing.check_attention: LSE%s = %s, expected %s (tolerance %g relative)",
            where:gsub(", :%)", ")"), fmt(got), fmt(want), lse_tol)
        end
      end
    end
  end
  return { max_rel = max_rel, rows = count, masked_rows = masked }
end

return M
