/* rt_cublas: cuBLAS as a peer for benchmarks and a reference for tests.
 *
 * libcublas is opened at run time (cl_dl) like everything CUDA; its entry
 * points are typed from the toolkit's own header (cublas_v2.h maps
 * cublasCreate to cublasCreate_v2, ...). One handle per device, made on first
 * use in the device's primary context (the one the rest of cutelua uses). */
#include <cublas_v2.h>
#include <stdio.h>
#include <string.h>

#include "cl_dl.h"
#include "rt.h"
#include "rt_dtype.h"

#define RT_CUBLAS_FUNCS(X) X(cublasCreate) X(cublasSetStream) X(cublasGemmEx) X(cublasGetStatusName) \
  X(cublasGemmStridedBatchedEx)

static struct {
  int loaded;
#define FIELD(name) __typeof__(&name) f_##name;
  RT_CUBLAS_FUNCS(FIELD)
#undef FIELD
  cublasHandle_t handle[RT_MAX_DEVICES];
} cb;

static int load(void) {
  if (cb.loaded) return RT_OK;
  ClBuf e = {0};
  void *lib = cl_dl_lib(CL_LIB_CUBLAS, &e);
  if (!lib) {
    rt_fail("%s", cl_buf_str(&e));
    cl_buf_free(&e);
    return RT_ERROR;
  }
  cl_buf_free(&e);
  /* the exported names are the versioned ones the header's macros produce */
#define STR2(x) #x
#define STR(x) STR2(x)
#define LOAD(name)                                                                                  \
  cb.f_##name = (__typeof__(cb.f_##name))cl_dl_sym(lib, STR(name));                                 \
  if (!cb.f_##name) return rt_fail("%s has no %s", cl_dl_path(CL_LIB_CUBLAS), STR(name));
  RT_CUBLAS_FUNCS(LOAD)
#undef LOAD
  cb.loaded = 1;
  return RT_OK;
}

static int cb_fail(cublasStatus_t s, const char *call) {
  return rt_fail("%s failed: %s", call, cb.f_cublasGetStatusName ? cb.f_cublasGetStatusName(s) : "?");
}

static int handle_for(int32_t dev, cublasHandle_t *h) {
  if (load()) return RT_ERROR;
  if (!rt_enter(dev)) return RT_ERROR;
  if (!cb.handle[dev]) {
    cublasStatus_t s = cb.f_cublasCreate(&cb.handle[dev]);
    if (s != CUBLAS_STATUS_SUCCESS) return cb_fail(s, "cublasCreate");
  }
  *h = cb.handle[dev];
  return RT_OK;
}

static int data_type(int32_t dt, cudaDataType *out) {
  switch (dt) {
  case RT_DT_F32: *out = CUDA_R_32F; return 1;
  case RT_DT_F16: *out = CUDA_R_16F; return 1;
  case RT_DT_BF16: *out = CUDA_R_16BF; return 1;
  case RT_DT_F64: *out = CUDA_R_64F; return 1;
  case RT_DT_I8: *out = CUDA_R_8I; return 1;
  case RT_DT_I32: *out = CUDA_R_32I; return 1;
  default: return 0;
  }
}

int rt_cublas_gemm(const RtGemm *g) {
  int32_t dev = rt_current_device();
  cublasHandle_t h = NULL;
  if (handle_for(dev, &h)) return RT_ERROR;
  cudaDataType ta, tb, tc;
  if (!data_type(g->a_dtype, &ta) || !data_type(g->b_dtype, &tb) || !data_type(g->c_dtype, &tc))
    return rt_fail("cublas gemm: unsupported dtypes (a %d, b %d, c %d)", g->a_dtype, g->b_dtype, g->c_dtype);
  cublasComputeType_t ct;
  float alpha_f = (float)g->alpha, beta_f = (float)g->beta;
  double alpha_d = g->alpha, beta_d = g->beta;
  int32_t alpha_i = (int32_t)g->alpha, beta_i = (int32_t)g->beta;
  const void *alpha = &alpha_f, *beta = &beta_f;
  if (g->a_dtype == RT_DT_I8) {
    ct = CUBLAS_COMPUTE_32I;
    alpha = &alpha_i;
    beta = &beta_i;
  } else if (g->a_dtype == RT_DT_F64) {
    ct = CUBLAS_COMPUTE_64F;
    alpha = &alpha_d;
    beta = &beta_d;
  } else {
    ct = g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
  cublasStatus_t s = cb.f_cublasSetStream(h, (cudaStream_t)g->stream);
  if (s != CUBLAS_STATUS_SUCCESS) return cb_fail(s, "cublasSetStream");
  cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g->batch > 1) {
    s = cb.f_cublasGemmStridedBatchedEx(h, opa, opb, (int)g->m, (int)g->n, (int)g->k, alpha, (const void *)g->a, ta,
                                        (int)g->lda, g->stride_a, (const void *)g->b, tb, (int)g->ldb, g->stride_b,
                                        beta, (void *)g->c, tc, (int)g->ldc, g->stride_c, (int)g->batch, ct,
                                        CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) return cb_fail(s, "cublasGemmStridedBatchedEx");
    return RT_OK;
  }
  s = cb.f_cublasGemmEx(h, opa, opb, (int)g->m, (int)g->n, (int)g->k, alpha, (const void *)g->a, ta, (int)g->lda,
                        (const void *)g->b, tb, (int)g->ldb, beta, (void *)g->c, tc, (int)g->ldc, ct,
                        CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) return cb_fail(s, "cublasGemmEx");
  return RT_OK;
}
