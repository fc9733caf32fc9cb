/* main.c: calls the SAXPY kernel exported by export.lua, from plain C (no Lua,
 * no cutelua at run time: saxpy.o and -lcuda), and checks it on the CPU. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "saxpy.h"

#define CHECK(call)                                                   \
  do {                                                                \
    CUresult r_ = (call);                                             \
    if (r_ != CUDA_SUCCESS) {                                         \
      fprintf(stderr, "%s: %s\n", #call, saxpy_error_name((int)r_)); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(void) {
  enum { N = 1000003 };
  char err[512];
  saxpy_module *m;
  /* saxpy_load makes device 0's primary context current when none is */
  if (saxpy_load(&m, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  int i, bad = 0;
  for (i = 0; i < N; i++) {
    x[i] = (float)(i % 1000) * 0.001f;
    y[i] = (float)(i % 7);
  }
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, N * sizeof *x));
  CHECK(cuMemAlloc(&dy, N * sizeof *y));
  CHECK(cuMemcpyHtoD(dx, x, N * sizeof *x));
  CHECK(cuMemcpyHtoD(dy, y, N * sizeof *y));
  /* the arguments: the scalar, then each tensor's device pointer and length */
  CHECK((CUresult)saxpy_saxpy_f32(m, 2.0f, dx, N, dy, N, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, dy, N * sizeof *y));
  for (i = 0; i < N; i++) {
    float want = 2.0f * x[i] + y[i]; /* one rounding either way: fma or not, within an ulp */
    float d = out[i] - want;
    if (d > 1e-6f * (want > 0 ? want : -want) + 1e-6f || d < -(1e-6f * (want > 0 ? want : -want) + 1e-6f)) bad++;
  }
  printf("saxpy over %d elements: %d wrong\n%s", N, bad, saxpy_metadata());
  cuMemFree(dx);
  cuMemFree(dy);
  saxpy_unload(m);
  free(x);
  free(y);
  free(out);
  return bad != 0;
}
