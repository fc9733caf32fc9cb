/* rt_cublaslt: cuBLASLt matmul (bf16/f16 and fp8 with per-tensor scales) as a
 * peer for benchmarks and a reference for tests.
 *
 * libcublasLt is opened at run time (cl_dl), like libcublas in rt_cublas.c;
 * its entry points are typed from the toolkit's cublasLt.h. One handle per
 * device, made on first use in the device's primary context. Each call builds
 * the operation and layout descriptors, asks the heuristic for the best
 * algorithm within the given workspace, runs it and frees the descriptors.
 * Argument rules (fp8 needs "TN", ...) are checked in Lua (cute.cublas),
 * which names the wrong field; what cuBLASLt still refuses comes back as its
 * status name. */
#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

#include "cl_dl.h"
#include "rt.h"
#include "rt_dtype.h"

#define RT_CUBLASLT_FUNCS(X)                                                                                  \
  X(cublasLtCreate) X(cublasLtGetStatusName) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)         \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)              \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

static struct {
  int loaded;
#define FIELD(name) __typeof__(&name) f_##name;
  RT_CUBLASLT_FUNCS(FIELD)
#undef FIELD
  cublasLtHandle_t handle[RT_MAX_DEVICES];
} lt;

static int load(void) {
  if (lt.loaded) return RT_OK;
  ClBuf e = {0};
  void *lib = cl_dl_lib(CL_LIB_CUBLASLT, &e);
  if (!lib) {
    rt_fail("%s", cl_buf_str(&e));
    cl_buf_free(&e);
    return RT_ERROR;
  }
  cl_buf_free(&e);
#define LOAD(name)                                                                              \
  lt.f_##name = (__typeof__(lt.f_##name))cl_dl_sym(lib, #name);                                 \
  if (!lt.f_##name) return rt_fail("%s has no %s", cl_dl_path(CL_LIB_CUBLASLT), #name);
  RT_CUBLASLT_FUNCS(LOAD)
#undef LOAD
  lt.loaded = 1;
  return RT_OK;
}

static int lt_fail(cublasStatus_t s, const char *call) {
  return rt_fail("%s failed: %s", call, lt.f_cublasLtGetStatusName ? lt.f_cublasLtGetStatusName(s) : "?");
}

static int data_type(int32_t dt, cudaDataType *out) {
  switch (dt) {
  case RT_DT_F32: *out = CUDA_R_32F; return 1;
  case RT_DT_F16: *out = CUDA_R_16F; return 1;
  case RT_DT_BF16: *out = CUDA_R_16BF; return 1;
  case RT_DT_E4M3: *out = CUDA_R_8F_E4M3; return 1;
  case RT_DT_E5M2: *out = CUDA_R_8F_E5M2; return 1;
  default: return 0;
  }
}

/* The descriptors of one call, freed together. */
typedef struct {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c, d;
  cublasLtMatmulPreference_t pref;
} Descs;

static void free_descs(Descs *x) {
  if (x->pref) lt.f_cublasLtMatmulPreferenceDestroy(x->pref);
  if (x->d) lt.f_cublasLtMatrixLayoutDestroy(x->d);
  if (x->c) lt.f_cublasLtMatrixLayoutDestroy(x->c);
  if (x->b) lt.f_cublasLtMatrixLayoutDestroy(x->b);
  if (x->a) lt.f_cublasLtMatrixLayoutDestroy(x->a);
  if (x->op) lt.f_cublasLtMatmulDescDestroy(x->op);
}

#define TRY(call, name)                         \
  do {                                          \
    cublasStatus_t st_ = (call);                \
    if (st_ != CUBLAS_STATUS_SUCCESS) {         \
      free_descs(&x);                           \
      return lt_fail(st_, name);                \
    }                                           \
  } while (0)

static cublasStatus_t set_op(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const void *v, size_t n) {
  return lt.f_cublasLtMatmulDescSetAttribute(op, attr, v, n);
}

int rt_cublaslt_matmul(const RtLtMatmul *g) {
  if (load()) return RT_ERROR;
  int32_t dev = rt_current_device();
  if (!rt_enter(dev)) return RT_ERROR;
  if (!lt.handle[dev]) {
    cublasStatus_t s = lt.f_cublasLtCreate(&lt.handle[dev]);
    if (s != CUBLAS_STATUS_SUCCESS) return lt_fail(s, "cublasLtCreate");
  }
  cudaDataType ta, tb, tc, td;
  if (!data_type(g->a_dtype, &ta) || !data_type(g->b_dtype, &tb) || !data_type(g->c_dtype, &tc) ||
      !data_type(g->d_dtype, &td))
    return rt_fail("cublasLt matmul: unsupported dtypes (a %d, b %d, c %d, d %d)", g->a_dtype, g->b_dtype,
                   g->c_dtype, g->d_dtype);
  Descs x;
  memset(&x, 0, sizeof x);
  TRY(lt.f_cublasLtMatmulDescCreate(&x.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), "cublasLtMatmulDescSetAttribute(TRANSA)");
  TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), "cublasLtMatmulDescSetAttribute(TRANSB)");
  const void *sa = (const void *)(uintptr_t)g->scale_a, *sb = (const void *)(uintptr_t)g->scale_b;
  const void *sd = (const void *)(uintptr_t)g->scale_d;
  if (sa) TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa), "setting the A scale");
  if (sb) TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb), "setting the B scale");
  if (sd) TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof sd), "setting the D scale");
  if (g->fast_accum) {
    int8_t on = 1;
    TRY(set_op(x.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on), "setting fast accumulation");
  }
  uint64_t ar = g->trans_a ? (uint64_t)g->k : (uint64_t)g->m, ac = g->trans_a ? (uint64_t)g->m : (uint64_t)g->k;
  uint64_t br = g->trans_b ? (uint64_t)g->n : (uint64_t)g->k, bc = g->trans_b ? (uint64_t)g->k : (uint64_t)g->n;
  TRY(lt.f_cublasLtMatrixLayoutCreate(&x.a, ta, ar, ac, g->lda), "cublasLtMatrixLayoutCreate(A)");
  TRY(lt.f_cublasLtMatrixLayoutCreate(&x.b, tb, br, bc, g->ldb), "cublasLtMatrixLayoutCreate(B)");
  TRY(lt.f_cublasLtMatrixLayoutCreate(&x.c, tc, (uint64_t)g->m, (uint64_t)g->n, g->ldc), "cublasLtMatrixLayoutCreate(C)");
  TRY(lt.f_cublasLtMatrixLayoutCreate(&x.d, td, (uint64_t)g->m, (uint64_t)g->n, g->ldd), "cublasLtMatrixLayoutCreate(D)");
  TRY(lt.f_cublasLtMatmulPreferenceCreate(&x.pref), "cublasLtMatmulPreferenceCreate");
  uint64_t ws = g->workspace ? g->workspace_bytes : 0;
  TRY(lt.f_cublasLtMatmulPreferenceSetAttribute(x.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
      "setting the workspace size");
  cublasLtMatmulHeuristicResult_t h;
  int found = 0;
  memset(&h, 0, sizeof h);
  TRY(lt.f_cublasLtMatmulAlgoGetHeuristic(lt.handle[dev], x.op, x.a, x.b, x.c, x.d, x.pref, 1, &h, &found),
      "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1) {
    free_descs(&x);
    return rt_fail("cublasLt matmul: the heuristic found no algorithm for %lldx%lldx%lld (dtypes a %d, b %d, d %d; "
                   "workspace %llu bytes)",
                   (long long)g->m, (long long)g->n, (long long)g->k, g->a_dtype, g->b_dtype, g->d_dtype,
                   (unsigned long long)ws);
  }
  float alpha = (float)g->alpha, beta = (float)g->beta;
  TRY(lt.f_cublasLtMatmul(lt.handle[dev], x.op, &alpha, (const void *)(uintptr_t)g->a, x.a,
                          (const void *)(uintptr_t)g->b, x.b, &beta, (const void *)(uintptr_t)g->c, x.c,
                          (void *)(uintptr_t)g->d, x.d, &h.algo, (void *)(uintptr_t)g->workspace, ws,
                          (cudaStream_t)g->stream),
      "cublasLtMatmul");
  free_descs(&x);
  return RT_OK;
}
