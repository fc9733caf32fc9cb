/* tma_main: the exported TMA kernel (tests/aot/kernels.lua's tma_tile, as
 * tests/spec/aot/interop_spec.lua exports it under the prefix tt) called from
 * C: B = 2 * A for a W x H f32 matrix with rows padded to P elements, the
 * descriptors encoded by the wrapper from the pointers, extents and strides.
 * Built everywhere (it must compile and link); run with a GPU of sm_90. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "tt.h"

enum { W = 100, H = 70, P = 112 };

int main(void) {
  char err[512];
  tt_module *m = NULL;
  CUdeviceptr da = 0, db = 0;
  float *a = malloc(sizeof(float) * P * H), *b = malloc(sizeof(float) * P * H);
  int i, bad = 0, rc;
  if (!a || !b) return 2;
  if (tt_load(&m, err, sizeof err) != 0) {
    fprintf(stderr, "tt_load: %s\n", err);
    return 1;
  }
  for (i = 0; i < P * H; i++) a[i] = (float)((i * 7919) % 2001 - 1000) / 8.0f, b[i] = -1.0f;
  if (cuMemAlloc(&da, sizeof(float) * P * H) || cuMemAlloc(&db, sizeof(float) * P * H) ||
      cuMemcpyHtoD(da, a, sizeof(float) * P * H) || cuMemcpyHtoD(db, b, sizeof(float) * P * H)) {
    fprintf(stderr, "allocation or copy failed\n");
    return 1;
  }
  rc = tt_tma_tile(m, (uint64_t)da, W, H, P, (uint64_t)db, W, H, P, NULL);
  if (rc != 0) {
    fprintf(stderr, "tt_tma_tile: %s\n", tt_error_name(rc));
    return 1;
  }
  if (cuCtxSynchronize() || cuMemcpyDtoH(b, db, sizeof(float) * P * H)) {
    fprintf(stderr, "synchronize or copy back failed\n");
    return 1;
  }
  for (i = 0; i < P * H; i++) {
    float want = (i % P) < W ? 2.0f * a[i] : -1.0f; /* the padding is not written */
    if (b[i] != want && bad++ < 5) fprintf(stderr, "B[%d] = %g, want %g\n", i, (double)b[i], (double)want);
  }
  cuMemFree(da);
  cuMemFree(db);
  tt_unload(m);
  free(a);
  free(b);
  if (bad) return 1;
  printf("tma_main: B = 2 A for %d x %d: ok\n", W, H);
  return 0;
}
