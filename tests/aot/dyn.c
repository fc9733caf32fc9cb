/* Loads an exported shared library through libcutelua's cutelua_aot API:
 *   dyn LIB.so          open it; print the outcome
 *   dyn LIB.so run      and run vadd_f32 (needs a GPU) */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cutelua_aot.h"

int main(int argc, char **argv) {
  char err[512];
  cutelua_aot *m;
  if (argc < 2) return 2;
  if (cutelua_aot_open(argv[1], &m, err, sizeof err) != 0) {
    printf("open failed: %s\n", err);
    return 1;
  }
  printf("opened: %d kernels\n", cutelua_aot_count(m));
  if (argc > 2 && strcmp(argv[2], "run") == 0) {
    const cutelua_aot_kernel *k = cutelua_aot_find(m, "vadd_f32");
    enum { N = 4099 };
    float h[N], out[N];
    int i, n = N, bad = 0;
    CUdeviceptr a, c;
    for (i = 0; i < N; i++) h[i] = (float)i * 0.5f;
    cuMemAlloc(&a, N * 4);
    cuMemAlloc(&c, N * 4);
    cuMemcpyHtoD(a, h, N * 4);
    void *args[] = {&a, &n, &a, &n, &c, &n};
    if (!k || cutelua_aot_launch(m, k, args, NULL, err, sizeof err) != 0) {
      printf("launch failed: %s\n", k ? err : "no vadd_f32");
      return 1;
    }
    cuCtxSynchronize();
    cuMemcpyDtoH(out, c, N * 4);
    for (i = 0; i < N; i++)
      if (out[i] != h[i] * 2.0f) bad++;
    printf("run: %d wrong\n", bad);
    if (bad) return 1;
  }
  cutelua_aot_close(m);
  return 0;
}
