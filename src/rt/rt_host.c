/* rt_host: host-side element conversions and random numbers (see rt_dtype.h).
 *
 * Narrow float formats are described by (exponent bits, mantissa bits, has
 * infinities). Encoding rounds |x| to the format's grid in one step: the
 * quantum at x's binade is a power of two, so x / quantum is exact in double
 * and nearbyint gives round-to-nearest-even. Overflow: IEEE formats (f16,
 * bf16, tf32) become infinity; the fp8 formats saturate to their largest
 * finite value, as cvt.rn.satfinite does on the GPU. */
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rt.h"
#include "rt_dtype.h"

typedef struct Mini {
  int ebits, mbits, has_inf;
  uint32_t nan; /* the canonical NaN pattern */
} Mini;

static const Mini F16 = {5, 10, 1, 0x7e00};
static const Mini BF16 = {8, 7, 1, 0x7fc0};
static const Mini TF32 = {8, 10, 1, 0x3fe00}; /* 19 bits, placed in the top of an f32 */
static const Mini E4M3 = {4, 3, 0, 0x7f};
static const Mini E5M2 = {5, 2, 1, 0x7e};

static uint32_t mini_encode(const Mini *f, double x) {
  uint32_t sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
  if (isnan(x)) return f->nan;
  int bias = (1 << (f->ebits - 1)) - 1;
  int emax_field = f->has_inf ? (1 << f->ebits) - 2 : (1 << f->ebits) - 1;
  /* e4m3 (no infinities): the all-ones exponent holds normals except mantissa all-ones (NaN) */
  uint32_t max_mant = f->has_inf ? (1u << f->mbits) - 1 : (1u << f->mbits) - 2;
  uint32_t max_bits = ((uint32_t)emax_field << f->mbits) | max_mant;
  uint32_t inf_bits = f->has_inf ? (uint32_t)((1 << f->ebits) - 1) << f->mbits : max_bits;
  int saturate = f == &E4M3 || f == &E5M2;
  double a = fabs(x);
  if (isinf(a)) return sign | (saturate ? max_bits : inf_bits);
  if (a == 0) return sign;
  int k;
  frexp(a, &k);
  int e = k - 1; /* a in [2^e, 2^(e+1)) */
  int emin = 1 - bias;
  if (e < emin) e = emin; /* subnormal range: fixed quantum */
  double q = ldexp(1.0, e - f->mbits);
  double n = nearbyint(a / q); /* round to nearest even (default mode) */
  uint64_t bits;
  if (n >= ldexp(1.0, f->mbits + 1)) { /* rounded up into the next binade */
    e++;
    n = ldexp(n, -1);
  }
  if (n < ldexp(1.0, f->mbits)) {
    bits = (uint64_t)n; /* subnormal (or zero) */
  } else {
    uint64_t ef = (uint64_t)(e + bias);
    bits = (ef << f->mbits) | ((uint64_t)n - ((uint64_t)1 << f->mbits));
  }
  if (bits > max_bits) return sign | (saturate ? max_bits : inf_bits);
  return sign | (uint32_t)bits;
}

static double mini_decode(const Mini *f, uint32_t v) {
  int bias = (1 << (f->ebits - 1)) - 1;
  uint32_t mmask = (1u << f->mbits) - 1;
  uint32_t emask = (1u << f->ebits) - 1;
  int neg = (v >> (f->ebits + f->mbits)) & 1;
  uint32_t ef = (v >> f->mbits) & emask, m = v & mmask;
  double r;
  if (ef == emask && f->has_inf) r = m ? NAN : INFINITY;
  else if (ef == emask && !f->has_inf && m == mmask) r = NAN;
  else if (ef == 0) r = ldexp((double)m, 1 - bias - f->mbits);
  else r = ldexp((double)(m | (1u << f->mbits)), (int)ef - bias - f->mbits);
  return neg ? -r : r;
}

/* Integers: truncate toward zero, saturate, and say whether that was exact. */
static int to_int(double x, double lo, double hi, double *out) {
  if (isnan(x)) {
    *out = 0;
    return 1;
  }
  double t = trunc(x);
  int inexact = t != x;
  if (t < lo) t = lo, inexact = 1;
  if (t > hi) t = hi, inexact = 1;
  *out = t;
  return inexact;
}

int rt_dtype_encode(int t, double x, void *dst) {
  double v;
  int bad = 0;
  switch (t) {
  case RT_DT_BOOL: {
    uint8_t b = x != 0;
    bad = !(x == 0 || x == 1);
    memcpy(dst, &b, 1);
    return bad;
  }
#define INT_CASE(id, ctype, lo, hi) \
  case RT_DT_##id: {                \
    bad = to_int(x, lo, hi, &v);    \
    ctype c = (ctype)v;             \
    memcpy(dst, &c, sizeof c);      \
    return bad;                     \
  }
    INT_CASE(I8, int8_t, -128.0, 127.0)
    INT_CASE(U8, uint8_t, 0.0, 255.0)
    INT_CASE(I16, int16_t, -32768.0, 32767.0)
    INT_CASE(U16, uint16_t, 0.0, 65535.0)
    INT_CASE(I32, int32_t, -2147483648.0, 2147483647.0)
    INT_CASE(U32, uint32_t, 0.0, 4294967295.0)
    /* 64-bit: the largest doubles below 2^63 / 2^64 */
    INT_CASE(I64, int64_t, -9223372036854775808.0, 9223372036854774784.0)
    INT_CASE(U64, uint64_t, 0.0, 18446744073709549568.0)
#undef INT_CASE
  case RT_DT_F16: {
    uint16_t h = (uint16_t)mini_encode(&F16, x);
    memcpy(dst, &h, 2);
    return 0;
  }
  case RT_DT_BF16: {
    uint16_t h = (uint16_t)mini_encode(&BF16, x);
    memcpy(dst, &h, 2);
    return 0;
  }
  case RT_DT_TF32: {
    uint32_t b = mini_encode(&TF32, x) << 13;
    memcpy(dst, &b, 4);
    return 0;
  }
  case RT_DT_F32: {
    float f = (float)x; /* C's conversion rounds to nearest even */
    memcpy(dst, &f, 4);
    return 0;
  }
  case RT_DT_F64: memcpy(dst, &x, 8); return 0;
  case RT_DT_E4M3: {
    uint8_t b = (uint8_t)mini_encode(&E4M3, x);
    memcpy(dst, &b, 1);
    return 0;
  }
  case RT_DT_E5M2: {
    uint8_t b = (uint8_t)mini_encode(&E5M2, x);
    memcpy(dst, &b, 1);
    return 0;
  }
  default: return 1;
  }
}

double rt_dtype_decode(int t, const void *src) {
  switch (t) {
#define DEC(id, ctype)            \
  case RT_DT_##id: {              \
    ctype c;                      \
    memcpy(&c, src, sizeof c);    \
    return (double)c;             \
  }
    DEC(BOOL, uint8_t)
    DEC(I8, int8_t)
    DEC(U8, uint8_t)
    DEC(I16, int16_t)
    DEC(U16, uint16_t)
    DEC(I32, int32_t)
    DEC(U32, uint32_t)
    DEC(I64, int64_t)
    DEC(U64, uint64_t)
    DEC(F32, float)
    DEC(F64, double)
#undef DEC
  case RT_DT_F16: {
    uint16_t h;
    memcpy(&h, src, 2);
    return mini_decode(&F16, h);
  }
  case RT_DT_BF16: {
    uint16_t h;
    memcpy(&h, src, 2);
    return mini_decode(&BF16, h);
  }
  case RT_DT_TF32: {
    float f;
    memcpy(&f, src, 4);
    return f;
  }
  case RT_DT_E4M3: return mini_decode(&E4M3, *(const uint8_t *)src);
  case RT_DT_E5M2: return mini_decode(&E5M2, *(const uint8_t *)src);
  default: return NAN;
  }
}

static const struct {
  const char *name;
  int bytes, kind, tma;
  const char *storage, *ir, *cute;
} dtypes[RT_DT__COUNT] = {
#define RT_DTYPE_ROW(id, name, bytes, kind, tma, storage, ir, cute) {name, bytes, kind, tma, storage, ir, cute},
    RT_DTYPES(RT_DTYPE_ROW)
#undef RT_DTYPE_ROW
};

int rt_dtype_info(int32_t i, RtDtypeInfo *out) {
  if (i < 0 || i >= RT_DT__COUNT) return rt_fail("no dtype %d", i);
  memset(out, 0, sizeof *out);
  strncpy(out->name, dtypes[i].name, sizeof out->name - 1);
  out->code = i;
  out->bytes = dtypes[i].bytes;
  out->kind = dtypes[i].kind;
  out->tma = (dtypes[i].kind == RT_KIND_FLOAT && dtypes[i].tma == 0) ? -1 : dtypes[i].tma;
  out->storage = dtypes[i].storage;
  out->ir = dtypes[i].ir;
  out->cute_name = dtypes[i].cute;
  /* fp8 and bool move through TMA as raw bytes */
  if (i == RT_DT_E4M3 || i == RT_DT_E5M2 || i == RT_DT_BOOL || i == RT_DT_I8 || i == RT_DT_U8) out->tma = 0;
  return RT_OK;
}

int32_t rt_dtype_count(void) { return RT_DT__COUNT; }

uint64_t rt_convert(void *dst, int32_t dst_type, const void *src, int32_t src_type, uint64_t n) {
  if (dst_type < 0 || dst_type >= RT_DT__COUNT || src_type < 0 || src_type >= RT_DT__COUNT) return n + 1;
  int db = dtypes[dst_type].bytes, sb = dtypes[src_type].bytes;
  uint64_t first_bad = 0;
  for (uint64_t i = 0; i < n; i++) {
    double v = rt_dtype_decode(src_type, (const char *)src + i * (uint64_t)sb);
    if (rt_dtype_encode(dst_type, v, (char *)dst + i * (uint64_t)db) && !first_bad) first_bad = i + 1;
  }
  return first_bad;
}

uint64_t rt_from_doubles(void *dst, int32_t dst_type, const double *src, uint64_t n) {
  return rt_convert(dst, dst_type, src, RT_DT_F64, n);
}

uint64_t rt_to_doubles(double *dst, const void *src, int32_t src_type, uint64_t n) {
  return rt_convert(dst, RT_DT_F64, src, src_type, n);
}

/* A counter-based generator: element i of stream `seed` is a pure function of
 * (seed, i), so fills are reproducible whatever the order. splitmix64 mixing. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double unit(uint64_t seed, uint64_t i, uint64_t lane) {
  uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ULL + mix64(i * 4 + lane + 1));
  return (double)(r >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) with 53 bits */
}

int rt_host_random(void *dst, int32_t dtype, uint64_t n, int32_t normal, double a, double b, uint64_t seed) {
  if (dtype < 0 || dtype >= RT_DT__COUNT) return rt_fail("no dtype %d", dtype);
  int bytes = dtypes[dtype].bytes, kind = dtypes[dtype].kind;
  for (uint64_t i = 0; i < n; i++) {
    double v;
    if (normal) { /* Box-Muller: mean a, standard deviation b */
      double u1 = 1.0 - unit(seed, i, 0), u2 = unit(seed, i, 1);
      v = a + b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    } else {
      v = a + (b - a) * unit(seed, i, 0);
      if (kind != RT_KIND_FLOAT) v = floor(v); /* integers uniform in [a, b) */
    }
    rt_dtype_encode(dtype, v, (char *)dst + i * (uint64_t)bytes);
  }
  return RT_OK;
}
