--- cute.cublas: cuBLAS GEMMs as peers for benchmarks and references for tests.
--
--   cute.cublas.gemm_rowmajor{a = A, b = B, c = C, m = M, n = N, k = K,
--                             dtype = cute.bf16, c_dtype = cute.f32}
-- computes C = alpha * A @ B + beta * C for row-major A (M x K), B (K x N) and
-- C (M x N) (B given as K x N, or N x K with b_trans = true; A likewise with
-- a_trans). Operands are device buffers, tensors, or device addresses.
-- cute.cublas.gemm{...} is the raw column-major call (cuBLAS's own convention).
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
  g.stream = spec.stream and spec.stream.handle or nil
  runtime.internal.check(rt.cublas_gemm(g), "cublas gemm")
end

--- Row-major C = alpha * op(A) @ op(B) + beta * C (see the module comment).
-- Row-major X is column-major X^T, so this computes C^T = op(B)^T op(A)^T.
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

return M
