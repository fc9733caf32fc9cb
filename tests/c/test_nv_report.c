/* test_nv_report: parsing ptxas's resource report out of nvJitLink's info
 * log (logs below were captured from nvJitLink 13.0), the printed table and
 * the spill warnings; robustness on every prefix of a log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nv_compile.h"

/* Two kernels, a non-inlined device function with static shared memory, and
 * a register limit that made one kernel spill. */
static const char log_mixed[] =
    "ptxas info    : Overriding maximum register limit 256 for 'big' with  64 of maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Function properties for helper\n"
    "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Compile time = 13.615 ms\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n"
    "ptxas info    : Compile time = 2.940 ms\n"
    "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
    "ptxas info    : Function properties for big\n"
    "ptxas         .     5208 bytes stack frame, 5860 bytes spill stores, 7204 bytes spill loads\n"
    "ptxas info    : Used 64 registers, used 0 barriers, 16384 bytes smem\n"
    "ptxas info    : Compile time = 214.973 ms\n";

static void test_parse(void) {
  NvKernelReport k[8];
  int n = nv_report_parse(log_mixed, strlen(log_mixed), k, 8);
  CHECK_EQ_INT(n, 3);
  CHECK_STR(k[0].name, "helper");
  CHECK_EQ_INT(k[0].entry, 0);
  CHECK_STR(k[0].arch, "");
  CHECK_EQ_INT(k[0].registers, -1); /* not reported for device functions */
  CHECK_EQ_INT(k[0].stack_frame, 16);
  CHECK_EQ_INT(k[0].spill_stores, 0);
  CHECK(k[0].compile_ms > 13.6 && k[0].compile_ms < 13.62);

  CHECK_STR(k[1].name, "k");
  CHECK_EQ_INT(k[1].entry, 1);
  CHECK_STR(k[1].arch, "sm_90a");
  CHECK_EQ_INT(k[1].registers, 24);
  CHECK_EQ_INT(k[1].barriers, 1);
  CHECK_EQ_INT(k[1].smem, 1024);
  CHECK_EQ_INT(k[1].cmem0, 380);
  CHECK_EQ_INT(k[1].stack_frame, 0);
  CHECK_EQ_INT(k[1].spill_loads, 0);

  CHECK_STR(k[2].name, "big");
  CHECK_EQ_INT(k[2].registers, 64);
  CHECK_EQ_INT(k[2].stack_frame, 5208);
  CHECK_EQ_INT(k[2].spill_stores, 5860);
  CHECK_EQ_INT(k[2].spill_loads, 7204);
  CHECK_EQ_INT(k[2].smem, 16384);
  CHECK_EQ_INT(k[2].cmem0, 0); /* not reported: none used */
  CHECK(k[2].compile_ms > 214.9 && k[2].compile_ms < 215.0);

  /* fewer slots than functions: the count is still right, nothing overflows */
  NvKernelReport one[2];
  memset(one, 0x5a, sizeof one);
  CHECK_EQ_INT(nv_report_parse(log_mixed, strlen(log_mixed), one, 1), 3);
  CHECK_STR(one[0].name, "helper");
  CHECK_EQ_INT(((unsigned char *)&one[1])[0], 0x5a);
  CHECK_EQ_INT(nv_report_parse(log_mixed, strlen(log_mixed), NULL, 0), 3);

  /* nothing to report */
  CHECK_EQ_INT(nv_report_parse("", 0, k, 8), 0);
  CHECK_EQ_INT(nv_report_parse("ptxas info    : 0 bytes gmem\n", 28, k, 8), 0);
}

static void test_format(void) {
  NvKernelReport k[8];
  int n = nv_report_parse(log_mixed, strlen(log_mixed), k, 8);
  ClBuf t = {0};
  nv_report_format(k, n, &t);
  CHECK_STR(cl_buf_str(&t),
            "function arch     regs bars     smem  stack  spill>  spill<  ptxas ms\n"
            "helper   (device)    -    -        -     16       0       0      13.6\n"
            "k        sm_90a     24    1     1024      0       0       0       2.9\n"
            "big      sm_90a     64    0    16384   5208    5860    7204     215.0\n");
  ClBuf w = {0};
  CHECK_EQ_INT(nv_report_warnings(k, n, &w), 1);
  CHECK_STR(cl_buf_str(&w), "kernel 'big' spills registers to local memory: 5860 bytes stored, 7204 bytes loaded "
                            "(64 registers, sm_90a)\n");
  /* a device function that spills is named as one */
  k[0].spill_stores = 8;
  cl_buf_clear(&w);
  CHECK_EQ_INT(nv_report_warnings(k, n, &w), 2);
  CHECK_CONTAINS(cl_buf_str(&w), "device function 'helper' spills registers to local memory: 8 bytes stored, 0 bytes "
                                 "loaded\n");
  cl_buf_free(&t);
  cl_buf_free(&w);
}

/* Every prefix of a log parses without reading past it, and never reports a
 * function the prefix does not name (a name cut short is a name too). */
static void test_prefixes(void) {
  size_t len = strlen(log_mixed);
  int ok = 1;
  for (size_t cut = 0; cut <= len; cut++) {
    char *p = malloc(cut ? cut : 1); /* exactly cut bytes: ASan-style bounds */
    memcpy(p, log_mixed, cut);
    NvKernelReport k[4];
    int n = nv_report_parse(p, cut, k, 4);
    for (int i = 0; i < n && i < 4; i++)
      if (!memmem(p, cut, k[i].name, strlen(k[i].name))) ok = 0;
    if (n > 6) ok = 0; /* a cut name may add one record per header line */
    free(p);
  }
  CHECK(ok);
}

int main(void) {
  test_parse();
  test_format();
  test_prefixes();
  return check_report();
}
