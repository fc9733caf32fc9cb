--- cute.cublas: cuBLAS GEMMs as peers for benchmarks and references for tests.
--
--   cute.cublas.gemm_rowmajor{a = A, b = B, c = C, m = M, n = N, k = K,
--                             dtype = cute.bf16, c_dtype = cute.f32}
-- computes C = alpha * A @ B + beta * C for row-major A (M x K), B (K x N) and
-- C (M x N) (B given as K x N, or N x K with b_trans = true; A likewise with
-- a_trans). Operands are device buffers, tensors, or device addresses.
-- cute.cublas.gemm{...} is the raw column-major call (cuBLAS's own convention).
--
--   cute.cublas.lt_matmul{a =, b =, d =, m =, n =, k =, a_dtype = cute.e4m3,
--                         b_dtype = cute.e4m3, d_dtype = cute.bf16,
--                         trans_a = true, scale_a = sa, scale_b = sb}
-- is cuBLASLt's matmul (column-major): D = alpha op(A) op(B) + beta C, f32
-- accumulation, the heuristic's best algorithm. See M.lt_matmul.
local ffi = require "ffi"
local rt = require("cute._c").rt
local runtime = require "cute.runtime"
local dtype = require "cute.dtype"
local err = require "cute._err"

local M = {}

local function address(x, what)
  if type(x) == "number" then return x end
  if type(x) == "cdata" and ffi.istype("RtBuffer", x) then return x.ptr end
  if type(x) == "table" and x.data_ptr then return x:data_ptr() end
  err.raise("cublas: %s must be a device buffer, tensor or address, got %s", what, type(x))
end

local g = ffi.new("RtGemm")

--- The column-major cuBLAS call: C (m x n, ldc) = alpha op(A) op(B) + beta C.
-- spec: a, b, c, m, n, k, lda, ldb, ldc, trans_a, trans_b, dtype (of A and B),
-- c_dtype (default: dtype; i32 for i8), alpha (1), beta (0), tf32 (false),
-- batch, stride_a, stride_b, stride_c (elements), stream.
-- @param spec the call's fields (above)
-- @usage cute.cublas.gemm({a = A, b = B, c = C, m = m, n = n, k = k, lda = m, ldb = k, ldc = m, dtype = cute.f32})
function M.gemm(spec)
  local t = dtype.get(spec.dtype or "f32")
  local tc = dtype.get(spec.c_dtype or (t == dtype.i8 and "i32" or t))
  g.a_dtype, g.b_dtype, g.c_dtype = t.code, t.code, tc.code
  g.trans_a, g.trans_b, g.tf32 = spec.trans_a and 1 or 0, spec.trans_b and 1 or 0, spec.tf32 and 1 or 0
  g.m, g.n, g.k = spec.m, spec.n, spec.k
  g.lda = spec.lda or (spec.trans_a and spec.k or spec.m)
  g.ldb = spec.ldb or (spec.trans_b and spec.n or spec.k)
  g.ldc = spec.ldc or spec.m
  g.a, g.b, g.c = address(spec.a, "a"), address(spec.b, "b"), address(spec.c, "c")
  g.alpha, g.beta = spec.alpha or 1, spec.beta or 0
  g.batch = spec.batch or 1
  g.stride_a, g.stride_b, g.stride_c = spec.stride_a or 0, spec.stride_b or 0, spec.stride_c or 0
  g.stream = runtime.internal.stream_handle(spec.stream, "cublas.gemm")
  runtime.internal.check(rt.cublas_gemm(g), "cublas gemm")
end

--- Row-major C = alpha * op(A) @ op(B) + beta * C (see the module comment).
-- Row-major X is column-major X^T, so this computes C^T = op(B)^T op(A)^T.
-- @param spec {a =, b =, c =, m =, n =, k =, trans_a =, trans_b =, alpha =, beta =, dtype =, ...}
-- @usage cute.cublas.gemm_rowmajor({a = A, b = B, c = C, m = m, n = n, k = k, dtype = cute.f16})
function M.gemm_rowmajor(spec)
  local m, n, k = spec.m, spec.n, spec.k
  M.gemm {
    a = spec.b, b = spec.a, c = spec.c,
    m = n, n = m, k = k,
    trans_a = spec.b_trans, trans_b = spec.a_trans,
    lda = spec.b_trans and k or n, ldb = spec.a_trans and m or k, ldc = n,
    dtype = spec.dtype, c_dtype = spec.c_dtype, alpha = spec.alpha, beta = spec.beta, tf32 = spec.tf32,
    batch = spec.batch, stride_a = spec.stride_b, stride_b = spec.stride_a, stride_c = spec.stride_c,
    stream = spec.stream,
  }
end

-- ---- cuBLASLt --------------------------------------------------------------

local lt = ffi.new("RtLtMatmul")
local lt_workspace = {} -- device -> a 32 MiB buffer, the default workspace

local LT_IN = { bf16 = true, f16 = true, e4m3 = true, e5m2 = true }
local FP8 = { e4m3 = true, e5m2 = true }

local function lt_dtype(spec, field, default)
  local v = spec[field]
  if v == nil then v = default end
  if v == nil then err.raise("cublas.lt_matmul: %s is missing (bf16, f16, e4m3 or e5m2)", field) end
  local ok, t = pcall(dtype.get, v)
  if not ok then err.raise("cublas.lt_matmul: %s: %s", field, tostring(t)) end
  return t
end

local function lt_extent(spec, field)
  local v = spec[field]
  if type(v) ~= "number" or v < 1 or v ~= math.floor(v) then
    err.raise("cublas.lt_matmul: %s must be a positive integer, got %s", field, tostring(v))
  end
  return v
end

--- Checks a cuBLASLt matmul spec and returns the filled RtLtMatmul fields as a
-- table (no GPU needed): the rules cuBLASLt has, named by field.
-- @param spec the matmul's fields, as for lt_matmul
-- @return a table of the RtLtMatmul fields
-- @usage local f = cute.cublas.lt_check({a = A, b = B, d = D, m = m, n = n, k = k, dtype = cute.e4m3})
function M.lt_check(spec)
  if type(spec) ~= "table" then err.raise("cublas.lt_matmul: expected a table, got %s", type(spec)) end
  local m, n, k = lt_extent(spec, "m"), lt_extent(spec, "n"), lt_extent(spec, "k")
  local ta = lt_dtype(spec, "a_dtype")
  local tb = lt_dtype(spec, "b_dtype", ta)
  for _, f in ipairs { { "a_dtype", ta }, { "b_dtype", tb } } do
    if not LT_IN[f[2].name] then
      err.raise("cublas.lt_matmul: %s is %s; cuBLASLt matmul here takes bf16, f16, e4m3 or e5m2", f[1], f[2].name)
    end
  end
  local fp8 = FP8[ta.name] or FP8[tb.name]
  if fp8 and not (FP8[ta.name] and FP8[tb.name]) then
    err.raise("cublas.lt_matmul: a_dtype is %s and b_dtype %s; fp8 inputs must both be fp8", ta.name, tb.name)
  end
  if not fp8 and ta ~= tb then
    err.raise("cublas.lt_matmul: a_dtype is %s and b_dtype %s; 16-bit inputs must have one dtype", ta.name, tb.name)
  end
  if ta.name == "e5m2" and tb.name == "e5m2" then
    err.raise("cublas.lt_matmul: e5m2 x e5m2 is not supported by cuBLASLt (one of A, B must be e4m3)")
  end
  local td = lt_dtype(spec, "d_dtype", fp8 and "bf16" or ta)
  if fp8 then
    if not (td.name == "bf16" or td.name == "f16" or td.name == "f32") then
      err.raise("cublas.lt_matmul: d_dtype is %s; with fp8 inputs D is bf16, f16 or f32", td.name)
    end
  elseif not (td == ta or td.name == "f32") then
    err.raise("cublas.lt_matmul: d_dtype is %s; with %s inputs D is %s or f32", td.name, ta.name, ta.name)
  end
  local tc = lt_dtype(spec, "c_dtype", td)
  if tc ~= td then err.raise("cublas.lt_matmul: c_dtype is %s but d_dtype %s; they must match", tc.name, td.name) end
  if spec.compute ~= nil and spec.compute ~= "f32" and spec.compute ~= dtype.f32 then
    err.raise("cublas.lt_matmul: compute is %s; only f32 accumulation is supported", tostring(spec.compute))
  end
  local trans_a, trans_b = spec.trans_a and true or false, spec.trans_b and true or false
  if fp8 and not (trans_a and not trans_b) then
    err.raise("cublas.lt_matmul: fp8 needs trans_a = true and trans_b = false (\"TN\": A and B both K-major), "
      .. "got trans_a = %s, trans_b = %s", tostring(trans_a), tostring(trans_b))
  end
  if not fp8 then
    for _, f in ipairs { "scale_a", "scale_b", "scale_d" } do
      if spec[f] ~= nil then err.raise("cublas.lt_matmul: %s is for fp8 inputs; a_dtype is %s", f, ta.name) end
    end
  end
  if spec.d == nil then err.raise("cublas.lt_matmul: d (the output) is missing") end
  for _, f in ipairs { "a", "b" } do
    if spec[f] == nil then err.raise("cublas.lt_matmul: %s is missing", f) end
  end
  local beta = spec.beta or 0
  if beta ~= 0 and spec.c == nil then err.raise("cublas.lt_matmul: beta is %s but c is missing", tostring(beta)) end
  local r = {
    m = m, n = n, k = k, a_dtype = ta, b_dtype = tb, c_dtype = tc, d_dtype = td, trans_a = trans_a,
    trans_b = trans_b, alpha = spec.alpha or 1, beta = beta,
    lda = spec.lda or (trans_a and k or m), ldb = spec.ldb or (trans_b and n or k),
    ldc = spec.ldc or m, ldd = spec.ldd or m,
  }
  if r.lda < (trans_a and k or m) then err.raise("cublas.lt_matmul: lda = %d is less than the rows of A", r.lda) end
  if r.ldb < (trans_b and n or k) then err.raise("cublas.lt_matmul: ldb = %d is less than the rows of B", r.ldb) end
  if r.ldc < m or r.ldd < m then err.raise("cublas.lt_matmul: ldc and ldd must be at least m = %d", m) end
  if fp8 and (r.lda % 16 ~= 0 or r.ldb % 16 ~= 0) then
    err.raise("cublas.lt_matmul: fp8 needs lda and ldb multiples of 16 (16-byte rows), got %d and %d", r.lda, r.ldb)
  end
  return r
end

--- cuBLASLt matmul, column-major (cuBLAS's convention): D (m x n, ldd) =
-- alpha op(A) op(B) + beta C. spec: a, b, c (default d), d (device buffers,
-- tensors or addresses), m, n, k, a_dtype, b_dtype (default a_dtype),
-- c_dtype, d_dtype (default: bf16 for fp8, else a_dtype), compute ("f32", the
-- only one), trans_a, trans_b, lda, ldb, ldc, ldd, alpha (1), beta (0),
-- scale_a, scale_b, scale_d (fp8 only: device pointers to one f32 each),
-- fast_accum (fp8), workspace (a device buffer; default 32 MiB per device,
-- made once), workspace_bytes, stream. fp8 (e4m3, e5m2) needs trans_a = true
-- and trans_b = false ("TN"). A row-major GEMM C = A @ B (A: M x K, B: K x N
-- stored N x K) is lt_matmul{a = B, b = A, m = N, n = M, trans_a = true}.
-- @param spec the matmul's fields (above)
-- @usage cute.cublas.lt_matmul({a = B, b = A, d = C, m = N, n = M, k = K, trans_a = true, dtype = cute.bf16})
function M.lt_matmul(spec)
  local r = M.lt_check(spec)
  lt.a_dtype, lt.b_dtype, lt.c_dtype, lt.d_dtype = r.a_dtype.code, r.b_dtype.code, r.c_dtype.code, r.d_dtype.code
  lt.trans_a, lt.trans_b, lt.fast_accum = r.trans_a and 1 or 0, r.trans_b and 1 or 0, spec.fast_accum and 1 or 0
  lt.m, lt.n, lt.k = r.m, r.n, r.k
  lt.lda, lt.ldb, lt.ldc, lt.ldd = r.lda, r.ldb, r.ldc, r.ldd
  lt.a, lt.b, lt.d = address(spec.a, "a"), address(spec.b, "b"), address(spec.d, "d")
  lt.c = spec.c ~= nil and address(spec.c, "c") or lt.d
  lt.scale_a = spec.scale_a ~= nil and address(spec.scale_a, "scale_a") or 0
  lt.scale_b = spec.scale_b ~= nil and address(spec.scale_b, "scale_b") or 0
  lt.scale_d = spec.scale_d ~= nil and address(spec.scale_d, "scale_d") or 0
  lt.alpha, lt.beta = r.alpha, r.beta
  local ws, ws_bytes = spec.workspace, spec.workspace_bytes
  if ws == nil then
    local dev = runtime.current_device()
    if not lt_workspace[dev] then lt_workspace[dev] = runtime.alloc(32 * 1024 * 1024) end
    ws = lt_workspace[dev]
  end
  if ws_bytes == nil then
    if type(ws) == "cdata" and ffi.istype("RtBuffer", ws) then ws_bytes = tonumber(ws.bytes)
    else err.raise("cublas.lt_matmul: workspace_bytes is needed with a workspace that is not a device buffer") end
  end
  lt.workspace, lt.workspace_bytes = address(ws, "workspace"), ws_bytes
  lt.stream = runtime.internal.stream_handle(spec.stream, "cublas.lt_matmul")
  runtime.internal.check(rt.cublaslt_matmul(lt), "cublas lt_matmul")
end

return M
