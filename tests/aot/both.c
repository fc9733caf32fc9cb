/* Links two exported modules (ma_, mb_) into one program: no duplicate
 * symbols; their checksums hold. With a GPU (argument "run"), runs their
 * kernels and checks the results against the CPU. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mod_a.h"
#include "mod_b.h"

static int check_cuda(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s\n", what, name);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  char err[512];
  if (ma_check(err, sizeof err) != 0 || mb_check(err, sizeof err) != 0) {
    fprintf(stderr, "check: %s\n", err);
    return 1;
  }
  printf("checks ok\n%s", ma_metadata());
  if (argc < 2 || strcmp(argv[1], "run") != 0) return 0;

  ma_module *ma;
  mb_module *mb;
  if (ma_load(&ma, err, sizeof err) != 0 || mb_load(&mb, err, sizeof err) != 0) {
    fprintf(stderr, "load: %s\n", err);
    return 1;
  }
  /* vadd through module a, scale and reverse through module b */
  enum { N = 100003, R = 300, C = 70 };
  float *ha = malloc(N * sizeof *ha), *hb = malloc(N * sizeof *hb), *hc = malloc(N * sizeof *hc);
  float *hx = malloc(R * C * sizeof *hx), *hy = malloc(N * sizeof *hy);
  int i, bad = 0;
  for (i = 0; i < N; i++) {
    ha[i] = (float)(i % 97) * 0.25f;
    hb[i] = (float)(i % 13) - 6.0f;
  }
  for (i = 0; i < R * C; i++) hx[i] = (float)(i % 31) - 15.0f;
  CUdeviceptr da, db, dc, dx, dy;
  if (check_cuda(cuMemAlloc(&da, N * 4), "alloc") || check_cuda(cuMemAlloc(&db, N * 4), "alloc") ||
      check_cuda(cuMemAlloc(&dc, N * 4), "alloc") || check_cuda(cuMemAlloc(&dx, R * C * 4), "alloc") ||
      check_cuda(cuMemAlloc(&dy, N * 4), "alloc"))
    return 1;
  cuMemcpyHtoD(da, ha, N * 4);
  cuMemcpyHtoD(db, hb, N * 4);
  cuMemsetD32(dc, 0x7fc00000, N); /* NaN: every element must be written */
  cuMemcpyHtoD(dx, hx, R * C * 4);
  int rc = ma_vadd_f32(ma, da, N, db, N, dc, N, NULL);
  if (rc) return fprintf(stderr, "vadd: %s\n", ma_error_name(rc)), 1;
  rc = mb_scale_rows(mb, dx, R, C, C, 3.0f, NULL); /* row-major R x C: row stride C */
  if (rc) return fprintf(stderr, "scale: %s\n", mb_error_name(rc)), 1;
  rc = mb_reverse256(mb, da, N - 3, dy, N - 3, NULL);
  if (rc) return fprintf(stderr, "reverse: %s\n", mb_error_name(rc)), 1;
  if (check_cuda(cuCtxSynchronize(), "synchronize")) return 1;
  cuMemcpyDtoH(hc, dc, N * 4);
  for (i = 0; i < N; i++)
    if (hc[i] != ha[i] + hb[i]) bad++;
  float *hx2 = malloc(R * C * sizeof *hx2);
  cuMemcpyDtoH(hx2, dx, R * C * 4);
  for (i = 0; i < R * C; i++)
    if (hx2[i] != hx[i] * 3.0f) bad++;
  cuMemcpyDtoH(hy, dy, (N - 3) * 4);
  for (i = 0; i < N - 3; i++) {
    int blk = i / 256, t = i % 256, src = blk * 256 + 255 - t;
    if (src < N - 3 && hy[i] != ha[src]) bad++;
  }
  printf("run: %d wrong\n", bad);
  ma_unload(ma);
  mb_unload(mb);
  return bad != 0;
}
