/* embed_demo: a C program that runs cutelua.
 *
 * It loads a Lua file, calls a Lua function with a pointer to its own memory
 * (which the Lua side fills through the FFI) and checks the result, then
 * shows what an error looks like.
 *
 *   embed_demo kernels.lua */
#include <cutelua.h>
#include <stdio.h>

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "kernels.lua";
  cutelua *cl = cutelua_open();
  if (!cl) {
    fprintf(stderr, "cannot create a cutelua runtime\n");
    return 1;
  }
  if (cutelua_dofile(cl, file) != CUTELUA_OK) {
    fprintf(stderr, "%s\n%s\n", cutelua_errmsg(cl), cutelua_traceback(cl));
    cutelua_close(cl);
    return 1;
  }

  /* Lua fills our buffer with i * scale and returns the sum. */
  float data[16];
  double sum = 0;
  if (cutelua_call(cl, "fill_ramp", "pid>d", (void *)data, 16, 0.5, &sum) != CUTELUA_OK) {
    fprintf(stderr, "fill_ramp: %s\n", cutelua_errmsg(cl));
    cutelua_close(cl);
    return 1;
  }
  double expect = 0;
  int bad = 0;
  for (int i = 0; i < 16; i++) {
    expect += 0.5 * i;
    if (data[i] != 0.5f * (float)i) bad = 1;
  }
  printf("fill_ramp: sum %.1f (expected %.1f), buffer %s\n", sum, expect, bad ? "WRONG" : "ok");

  const char *version = NULL;
  cutelua_call(cl, "describe", ">s", &version);
  printf("describe: %s\n", version);

  /* A Lua error comes back as a status and a message with the Lua line. */
  int st = cutelua_call(cl, "fill_ramp", "pid>d", (void *)data, -1, 1.0, &sum);
  printf("bad call: status %d, message: %s\n", st, cutelua_errmsg(cl));

  cutelua_close(cl);
  return (bad || sum != expect || st == CUTELUA_OK) ? 1 : 0;
}
