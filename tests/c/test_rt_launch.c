/* test_rt_launch: the launch checks that need no GPU (src/rt/rt_module.c):
 * cluster sizes computed in 64 bits (their product in int overflowed for
 * dimensions of 2^16 and more, and every cluster check was skipped), and
 * refused with a message past 16 blocks, on a device without clusters, or
 * when the grid is not a multiple of the cluster. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rt.h"

static RtLaunch launch(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t cx, uint32_t cy, uint32_t cz) {
  RtLaunch c;
  memset(&c, 0, sizeof c);
  c.grid[0] = gx, c.grid[1] = gy, c.grid[2] = gz;
  c.block[0] = c.block[1] = c.block[2] = 1;
  c.cluster[0] = cx, c.cluster[1] = cy, c.cluster[2] = cz;
  return c;
}

/* rt_cluster_check's message, or "ok" */
static const char *check(const RtLaunch *c, const RtDeviceInfo *p) {
  static char out[512];
  ClBuf why = {0};
  int st = rt_cluster_check(c, p, &why);
  snprintf(out, sizeof out, "%s", st == 0 ? "ok" : cl_buf_str(&why));
  if (st != 0 && !why.len) snprintf(out, sizeof out, "(refused without a message)");
  cl_buf_free(&why);
  return out;
}

static void test_cluster_size(void) {
  RtLaunch c = launch(1, 1, 1, 0, 0, 0);
  CHECK_EQ_INT(rt_cluster_size(&c), 1);
  c = launch(1, 1, 1, 2, 4, 2);
  CHECK_EQ_INT(rt_cluster_size(&c), 16);
  c = launch(1, 1, 1, 65536, 65536, 1); /* 2^32: 0 in 32-bit int arithmetic */
  CHECK(rt_cluster_size(&c) == (uint64_t)1 << 32);
  c = launch(1, 1, 1, 0x80000000u, 2, 1); /* 2^32 again, through a dimension >= 2^31 */
  CHECK(rt_cluster_size(&c) == (uint64_t)1 << 32);
  c = launch(1, 1, 1, 0xffffffffu, 0xffffffffu, 0xffffffffu); /* 2^96: saturates */
  CHECK(rt_cluster_size(&c) == UINT64_MAX);
}

static void test_cluster_check(void) {
  RtDeviceInfo h100;
  memset(&h100, 0, sizeof h100);
  h100.cc_major = 9, h100.cc_minor = 0, h100.cluster_launch = 1;
  RtDeviceInfo a100 = h100;
  a100.cc_major = 8, a100.cluster_launch = 0;

  RtLaunch c = launch(64, 1, 1, 0, 0, 0);
  CHECK_STR(check(&c, &a100), "ok"); /* no cluster: nothing to check */
  c = launch(64, 1, 1, 1, 1, 1);
  CHECK_STR(check(&c, &a100), "ok");
  c = launch(64, 4, 1, 2, 2, 1);
  CHECK_STR(check(&c, &h100), "ok");
  c = launch(64, 4, 2, 4, 2, 2);
  CHECK_STR(check(&c, &h100), "ok"); /* 16: the non-portable maximum */
  c = launch(64, 1, 1, 2, 1, 1);
  CHECK_STR(check(&c, &a100), "thread block clusters need sm_90 or newer (this is sm_80)");
  c = launch(68, 1, 1, 17, 1, 1);
  CHECK_STR(check(&c, &h100), "a cluster of 17 x 1 x 1 = 17 blocks; at most 16 are possible (8 portable)");
  /* the sizes that overflowed int are refused, not launched without their cluster */
  c = launch(65536, 65536, 1, 65536, 65536, 1);
  CHECK_STR(check(&c, &h100),
            "a cluster of 65536 x 65536 x 1 = 4294967296 blocks; at most 16 are possible (8 portable)");
  c = launch(0x80000000u, 2, 1, 0x80000000u, 2, 1);
  CHECK_CONTAINS(check(&c, &h100), "= 4294967296 blocks; at most 16");
  c = launch(1, 1, 1, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  CHECK_CONTAINS(check(&c, &h100), "= 18446744073709551615 blocks; at most 16");
  c = launch(6, 1, 1, 4, 1, 1);
  CHECK_STR(check(&c, &h100), "grid.x = 6 is not a multiple of the cluster's 4");
  c = launch(8, 3, 1, 2, 2, 1);
  CHECK_STR(check(&c, &h100), "grid.y = 3 is not a multiple of the cluster's 2");
}

int main(void) {
  test_cluster_size();
  test_cluster_check();
  return check_report();
}
