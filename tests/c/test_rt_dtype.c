/* Host-side dtype conversions and random numbers of the runtime (src/rt/rt_host.c).
 * No GPU needed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "rt.h"
#include "rt_dtype.h"

static uint32_t enc(int t, double x) {
  uint32_t v = 0;
  rt_dtype_encode(t, x, &v);
  return v;
}

static double dec(int t, uint32_t bits) { return rt_dtype_decode(t, &bits); }

/* Every non-NaN bit pattern of a narrow format decodes and re-encodes to itself
 * (the fp8 formats saturate infinities to their largest finite value, as
 * cvt.rn.satfinite does on the GPU, so e5m2's infinities are skipped there). */
static void check_roundtrip(int t, int nbits, const char *name) {
  int bad = 0;
  for (uint32_t b = 0; b < (1u << nbits); b++) {
    double x = dec(t, b);
    if (isnan(x) || (isinf(x) && nbits == 8)) continue;
    uint32_t back = enc(t, x);
    if (back != b && !(x == 0 && b != back && ((back ^ b) == (1u << (nbits - 1))))) bad++;
  }
  CHECK_AT(bad == 0, "%s: %d bit patterns do not round-trip", name, bad);
}

/* Encoding picks the nearest value, ties to an even last bit, checked against
 * the neighbours of the chosen pattern, for many random doubles. */
static void check_nearest(int t, int nbits, double range, const char *name) {
  srand(12345);
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    double x = ((double)rand() / RAND_MAX * 2 - 1) * range * ldexp(1.0, -(rand() % 20));
    uint32_t b = enc(t, x);
    double y = dec(t, b);
    if (isinf(y)) continue; /* overflow is checked separately */
    double err = fabs(y - x);
    uint32_t mag = b & ((1u << (nbits - 1)) - 1), sign = b & (1u << (nbits - 1));
    for (int dlt = -1; dlt <= 1; dlt += 2) {
      if (mag == 0 && dlt < 0) continue;
      double z = dec(t, sign | (mag + (uint32_t)dlt));
      if (isnan(z) || isinf(z)) continue;
      double ez = fabs(z - x);
      if (ez < err || (ez == err && (b & 1))) bad++;
    }
  }
  CHECK_AT(bad == 0, "%s: %d encodings are not the nearest (ties to even)", name, bad);
}

static void test_known_values(void) {
  CHECK_EQ_INT(enc(RT_DT_F16, 1.0), 0x3c00);
  CHECK_EQ_INT(enc(RT_DT_F16, -2.0), 0xc000);
  CHECK_EQ_INT(enc(RT_DT_F16, 65504.0), 0x7bff);
  CHECK_EQ_INT(enc(RT_DT_F16, 65520.0), 0x7c00); /* rounds to infinity */
  CHECK_EQ_INT(enc(RT_DT_F16, ldexp(1.0, -24)), 0x0001);
  CHECK_EQ_INT(enc(RT_DT_F16, ldexp(1.0, -26)), 0x0000); /* below half the smallest subnormal */
  CHECK_EQ_INT(enc(RT_DT_F16, INFINITY), 0x7c00);
  CHECK_EQ_INT(enc(RT_DT_F16, NAN), 0x7e00);
  CHECK_EQ_INT(enc(RT_DT_BF16, 1.0), 0x3f80);
  CHECK_EQ_INT(enc(RT_DT_BF16, 3.140625), 0x4049);
  CHECK_EQ_INT(enc(RT_DT_BF16, 1.0 + ldexp(1.0, -8)), 0x3f80); /* tie: to even */
  CHECK_EQ_INT(enc(RT_DT_BF16, 1.0 + 3 * ldexp(1.0, -8)), 0x3f82); /* tie: to even (up) */
  CHECK_EQ_INT(enc(RT_DT_E4M3, 1.0), 0x38);
  CHECK_EQ_INT(enc(RT_DT_E4M3, 448.0), 0x7e);
  CHECK_EQ_INT(enc(RT_DT_E4M3, 1000.0), 0x7e); /* saturates */
  CHECK_EQ_INT(enc(RT_DT_E4M3, -INFINITY), 0xfe);
  CHECK_EQ_INT(enc(RT_DT_E4M3, ldexp(1.0, -9)), 0x01);
  CHECK_EQ_INT(enc(RT_DT_E4M3, NAN), 0x7f);
  CHECK(dec(RT_DT_E4M3, 0x7e) == 448.0);
  CHECK(isnan(dec(RT_DT_E4M3, 0x7f)));
  CHECK_EQ_INT(enc(RT_DT_E5M2, 1.0), 0x3c);
  CHECK_EQ_INT(enc(RT_DT_E5M2, 57344.0), 0x7b);
  CHECK_EQ_INT(enc(RT_DT_E5M2, 1e9), 0x7b); /* saturates */
  CHECK(isinf(dec(RT_DT_E5M2, 0x7c)));
  /* tf32: 10 mantissa bits kept, the low 13 bits of the f32 cleared */
  uint32_t t = enc(RT_DT_TF32, 1.0 + ldexp(1.0, -10) + ldexp(1.0, -12));
  CHECK_EQ_INT(t, 0x3f802000);
  CHECK_EQ_INT(t & 0x1fff, 0);
  CHECK(dec(RT_DT_TF32, t) == 1.0 + ldexp(1.0, -10));
}

static void test_integers(void) {
  uint64_t v = 0;
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I8, -128, &v), 0);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I8, 128, &v), 1); /* saturated: not exact */
  CHECK_EQ_INT((int8_t)v, 127);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_U8, -1, &v), 1);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I32, 2.5, &v), 1);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I32, -7, &v), 0);
  CHECK_EQ_INT((int32_t)v, -7);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_U32, 4294967295.0, &v), 0);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I64, 9007199254740993.0, &v), 0);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_BOOL, 2, &v), 1);
  CHECK_EQ_INT(rt_dtype_encode(RT_DT_I16, NAN, &v), 1);
  /* convert reports the first element an integer dtype cannot hold */
  double src[4] = {1, 2, 3.5, 300};
  int8_t dst[4];
  CHECK_EQ_INT(rt_from_doubles(dst, RT_DT_I8, src, 4), 3);
  double back[4];
  CHECK_EQ_INT(rt_to_doubles(back, dst, RT_DT_I8, 4), 0);
  CHECK(back[0] == 1 && back[2] == 3 && back[3] == 127);
}

static void test_table(void) {
  int n = rt_dtype_count();
  CHECK(n >= 16);
  RtDtypeInfo info;
  int found_bf16 = 0;
  for (int i = 0; i < n; i++) {
    CHECK_EQ_INT(rt_dtype_info(i, &info), 0);
    CHECK_EQ_INT(info.code, i);
    if (strcmp(info.name, "bf16") == 0) found_bf16 = info.bytes == 2 && info.kind == RT_KIND_FLOAT;
  }
  CHECK(found_bf16);
  CHECK(rt_dtype_info(n, &info) != 0);
  CHECK_CONTAINS(rt_last_error(), "no dtype");
}

static void test_random(void) {
  enum { N = 100000 };
  static float a[N], b[N];
  CHECK_EQ_INT(rt_host_random(a, RT_DT_F32, N, 0, -1.0, 1.0, 7), 0);
  CHECK_EQ_INT(rt_host_random(b, RT_DT_F32, N, 0, -1.0, 1.0, 7), 0);
  CHECK(memcmp(a, b, sizeof a) == 0); /* reproducible */
  double sum = 0, mn = 1, mx = -1;
  for (int i = 0; i < N; i++) {
    sum += a[i];
    mn = fmin(mn, a[i]);
    mx = fmax(mx, a[i]);
  }
  CHECK(mn >= -1.0 && mx < 1.0);
  CHECK(fabs(sum / N) < 0.02);
  CHECK_EQ_INT(rt_host_random(b, RT_DT_F32, N, 1, 3.0, 2.0, 8), 0);
  double s = 0, s2 = 0;
  for (int i = 0; i < N; i++) {
    s += b[i];
    s2 += (double)b[i] * b[i];
  }
  double mean = s / N, var = s2 / N - mean * mean;
  CHECK_AT(fabs(mean - 3.0) < 0.05 && fabs(sqrt(var) - 2.0) < 0.05, "normal: mean %g sd %g", mean, sqrt(var));
  int32_t ints[1000];
  CHECK_EQ_INT(rt_host_random(ints, RT_DT_I32, 1000, 0, -5, 5, 1), 0);
  int ok = 1;
  for (int i = 0; i < 1000; i++) ok &= ints[i] >= -5 && ints[i] < 5;
  CHECK(ok);
}

int main(void) {
  check_roundtrip(RT_DT_F16, 16, "f16");
  check_roundtrip(RT_DT_BF16, 16, "bf16");
  check_roundtrip(RT_DT_E4M3, 8, "e4m3");
  check_roundtrip(RT_DT_E5M2, 8, "e5m2");
  check_nearest(RT_DT_F16, 16, 60000, "f16");
  check_nearest(RT_DT_BF16, 16, 1e30, "bf16");
  check_nearest(RT_DT_E4M3, 8, 440, "e4m3");
  check_nearest(RT_DT_E5M2, 8, 50000, "e5m2");
  test_known_values();
  test_integers();
  test_table();
  test_random();
  return check_report();
}
