/* ir_fold.c: constant folding, exact algebraic identities and CSE, applied to
 * each pure op as the builder appends it.
 *
 * Folding must not change what the kernel computes, so:
 *  - integers wrap at their width (no overflow assumptions); division by zero,
 *    INT_MIN / -1 and shifts by the width or more are left alone;
 *  - floats fold only where the result is the correctly rounded one the GPU
 *    gives (add, sub, mul, div, fma of f32/f64 and f16 through double, which is
 *    wide enough to round once); math functions are never folded;
 *  - identities are exact ones: x + 0, x * 1, x & -1, x - x (integers), and
 *    x + -0.0, x * 1.0 (floats; x + 0.0 is not exact: -0.0 + 0.0 = +0.0);
 *  - integer chains with constants reassociate, exactly because integers wrap:
 *    (x + c1) + c2 is x + (c1 + c2), x - c is x + -c (likewise *, &, |, ^), so
 *    unrolled address arithmetic from one base stays one add per address.
 * CSE reuses an identical pure op only where it is visible: defined in a region
 * that is still open, i.e. one that dominates the cursor.
 *
 * Constant payloads: integers are stored wrapped to their width (i1 as 0/1);
 * floats as the bits of the double equal to the value rounded to the type. */
#include <math.h>
#include <string.h>

#include "ir_impl.h"

/* --- numbers ---------------------------------------------------------------------------------------------- */
int64_t ir_int_wrap(int bits, int64_t v) {
  if (bits >= 64) return v;
  if (bits == 1) return v & 1;
  uint64_t mask = ((uint64_t)1 << bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (u >> (bits - 1)) u |= ~mask;
  return (int64_t)u;
}

static uint64_t umask(int bits) { return bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1); }

static int64_t dbits(double d) {
  int64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}
static double bitsd(int64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* A binary float format with ebits exponent and mbits mantissa bits. ieee: has
   infinities (f16, bf16); else values past the largest finite saturate (fp8 as
   PTX's .satfinite converts them). away: ties round away from zero (tf32 rna). */
static uint32_t mini_encode(double v, int ebits, int mbits, int ieee, int away, uint32_t nan, uint32_t maxfin) {
  uint32_t sign = signbit(v) ? 1u << (ebits + mbits) : 0;
  if (isnan(v)) return nan;
  double a = fabs(v);
  if (isinf(a)) return ieee ? sign | ((((1u << ebits) - 1)) << mbits) : sign | maxfin;
  if (a == 0) return sign;
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  int e;
  frexp(a, &e);
  e -= 1; /* a = 1.f * 2^e */
  if (e < emin) e = emin;
  double q = ldexp(a, mbits - e); /* in units of the quantum at exponent e */
  double n = away ? round(q) : rint(q);
  if (n >= ldexp(1.0, mbits + 1)) {
    n /= 2;
    e += 1;
  }
  uint32_t bits;
  if (n < ldexp(1.0, mbits)) { /* subnormal (or rounded to zero) */
    bits = (uint32_t)n;
  } else {
    bits = ((uint32_t)(e + bias) << mbits) | ((uint32_t)n - (1u << mbits));
  }
  uint32_t maxbits = ieee ? (((1u << ebits) - 1) << mbits) - 1 : maxfin;
  if (bits > maxbits) bits = ieee ? (((1u << ebits) - 1) << mbits) : maxfin;
  return sign | bits;
}

static double mini_decode(uint32_t b, int ebits, int mbits, int ieee) {
  int sign = (b >> (ebits + mbits)) & 1;
  uint32_t e = (b >> mbits) & ((1u << ebits) - 1), m = b & ((1u << mbits) - 1);
  int bias = (1 << (ebits - 1)) - 1;
  double v;
  if (ieee && e == (1u << ebits) - 1) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp((double)m, 1 - bias - mbits);
  else v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
  return sign ? -v : v;
}

uint16_t ir_f16_from_double(double v) { return (uint16_t)mini_encode(v, 5, 10, 1, 0, 0x7e00, 0); }
double ir_f16_to_double(uint16_t h) { return mini_decode(h, 5, 10, 1); }
uint16_t ir_bf16_from_double(double v) { return (uint16_t)mini_encode(v, 8, 7, 1, 0, 0x7fc0, 0); }
double ir_bf16_to_double(uint16_t h) { return mini_decode(h, 8, 7, 1); }
/* e4m3 (the "fn" variant): no infinities, 0x7f is NaN, 448 is the largest.
   e5m2: IEEE-like, but conversions saturate to 57344 (satfinite). */
uint8_t ir_fp8_from_double(double v, int e5m2) {
  if (e5m2) return (uint8_t)mini_encode(v, 5, 2, 0, 0, 0x7f, 0x7b);
  return (uint8_t)mini_encode(v, 4, 3, 0, 0, 0x7f, 0x7e);
}
double ir_fp8_to_double(uint8_t b, int e5m2) {
  if (e5m2) return mini_decode(b, 5, 2, 1);
  if ((b & 0x7f) == 0x7f) return NAN;
  return mini_decode(b, 4, 3, 0);
}

int64_t ir_float_bits(IrType t, double v) {
  if (isnan(v)) return dbits(NAN);
  switch (t) {
    case IR_T_F64: return dbits(v);
    case IR_T_F32: return dbits((double)(float)v);
    case IR_T_F16: return dbits(ir_f16_to_double(ir_f16_from_double(v)));
    case IR_T_BF16: return dbits(ir_bf16_to_double(ir_bf16_from_double(v)));
    case IR_T_E4M3: return dbits(ir_fp8_to_double(ir_fp8_from_double(v, 0), 0));
    case IR_T_E5M2: return dbits(ir_fp8_to_double(ir_fp8_from_double(v, 1), 1));
    case IR_T_TF32: return dbits(mini_decode(mini_encode(v, 8, 10, 1, 1, 0x7fc0 >> 3, 0), 8, 10, 1));
    default: return dbits(v);
  }
}

double ir_bits_float(IrType t, int64_t bits) {
  (void)t;
  return bitsd(bits);
}

/* --- CSE -------------------------------------------------------------------------------------------------- */
static uint32_t inst_hash(const IrFunc *f, const IrInst *in) {
  uint32_t h = 2166136261u;
  h = (h ^ in->op) * 16777619u;
  h = (h ^ in->type) * 16777619u;
  h = (h ^ in->nargs) * 16777619u;
  const IrRef *a = ir_args(f, in);
  for (int i = 0; i < in->nargs; i++) h = (h ^ a[i]) * 16777619u;
  const int64_t *im = ir_imms(f, in);
  for (int i = 0; i < ir_op_info[in->op].nimm; i++) {
    h = (h ^ (uint32_t)im[i]) * 16777619u;
    h = (h ^ (uint32_t)((uint64_t)im[i] >> 32)) * 16777619u;
  }
  return h;
}

static int inst_eq(const IrFunc *f, const IrInst *x, const IrInst *y) {
  if (x->op != y->op || x->type != y->type || x->nargs != y->nargs) return 0;
  if (memcmp(ir_args(f, x), ir_args(f, y), x->nargs * sizeof(IrRef))) return 0;
  return memcmp(ir_imms(f, x), ir_imms(f, y), ir_op_info[x->op].nimm * sizeof(int64_t)) == 0;
}

IrRef ir_cse_find(IrFunc *f, IrRef v) {
  if (!f->csecap) return IR_NONE;
  const IrInst *in = &f->insts[v];
  for (uint32_t i = inst_hash(f, in) & (f->csecap - 1);; i = (i + 1) & (f->csecap - 1)) {
    IrRef e = f->cse[i];
    if (!e) return IR_NONE;
    if (e != v && inst_eq(f, &f->insts[e], in)) return ir_region_open(f, f->insts[e].region) ? e : IR_NONE;
  }
}

void ir_cse_insert(IrFunc *f, IrRef v) {
  if ((f->csecount + 1) * 2 > f->csecap) {
    uint32_t ncap = f->csecap ? f->csecap * 2 : 512;
    uint32_t *t = ir_arena_alloc(&f->m->arena, ncap * sizeof *t);
    if (!t) return; /* CSE is an optimisation: without memory, skip it */
    memset(t, 0, ncap * sizeof *t);
    for (uint32_t i = 0; i < f->csecap; i++) {
      IrRef e = f->cse[i];
      if (!e) continue;
      uint32_t j = inst_hash(f, &f->insts[e]) & (ncap - 1);
      while (t[j]) j = (j + 1) & (ncap - 1);
      t[j] = e;
    }
    f->cse = t;
    f->csecap = ncap;
  }
  const IrInst *in = &f->insts[v];
  uint32_t i = inst_hash(f, in) & (f->csecap - 1);
  for (;; i = (i + 1) & (f->csecap - 1)) {
    IrRef e = f->cse[i];
    if (!e) break;
    if (inst_eq(f, &f->insts[e], in)) { /* a stale equal entry: the new op replaces it */
      f->cse[i] = v;
      return;
    }
  }
  f->cse[i] = v;
  f->csecount++;
}

/* --- folding ---------------------------------------------------------------------------------------------- */
static int is_const(const IrFunc *f, IrRef r, int64_t *bits) {
  const IrInst *in = &f->insts[r];
  if (in->op != IR_OP_CONST) return 0;
  *bits = f->immpool[in->imms];
  return 1;
}

void ir_canon(IrFunc *f, IrRef v) {
  IrInst *in = &f->insts[v];
  if (!(ir_op_info[in->op].flags & IR_OPF_COMM) || in->nargs != 2) return;
  IrRef *a = f->argpool + in->args;
  int64_t k;
  int c0 = is_const(f, a[0], &k), c1 = is_const(f, a[1], &k);
  if ((c0 && !c1) || (c0 == c1 && a[0] > a[1])) {
    IrRef t = a[0];
    a[0] = a[1];
    a[1] = t;
  }
}

static int res_ref(IrFoldResult *r, IrRef v) {
  r->ref = v;
  return 1;
}
static int res_const(IrFoldResult *r, int64_t bits) {
  r->is_const = 1;
  r->bits = bits;
  return 1;
}

static int fold_int_bin(int op, int bits, int64_t x, int64_t y, int64_t *out) {
  uint64_t m = umask(bits), ux = (uint64_t)x & m, uy = (uint64_t)y & m;
  int64_t smin = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  switch (op) {
    case IR_OP_ADD: *out = (int64_t)(ux + uy); break;
    case IR_OP_SUB: *out = (int64_t)(ux - uy); break;
    case IR_OP_MUL: *out = (int64_t)(ux * uy); break;
    case IR_OP_SDIV:
      if (y == 0 || (x == smin && y == -1) || bits == 1) return 0;
      *out = x / y;
      break;
    case IR_OP_SREM:
      if (y == 0 || (x == smin && y == -1) || bits == 1) return 0;
      *out = x % y;
      break;
    case IR_OP_UDIV:
      if (uy == 0) return 0;
      *out = (int64_t)(ux / uy);
      break;
    case IR_OP_UREM:
      if (uy == 0) return 0;
      *out = (int64_t)(ux % uy);
      break;
    case IR_OP_SMIN: *out = x < y ? x : y; break;
    case IR_OP_SMAX: *out = x > y ? x : y; break;
    case IR_OP_UMIN: *out = (int64_t)(ux < uy ? ux : uy); break;
    case IR_OP_UMAX: *out = (int64_t)(ux > uy ? ux : uy); break;
    case IR_OP_AND: *out = x & y; break;
    case IR_OP_OR: *out = x | y; break;
    case IR_OP_XOR: *out = x ^ y; break;
    case IR_OP_SHL:
      if (uy >= (uint64_t)bits) return 0;
      *out = (int64_t)(ux << uy);
      break;
    case IR_OP_LSHR:
      if (uy >= (uint64_t)bits) return 0;
      *out = (int64_t)(ux >> uy);
      break;
    case IR_OP_ASHR:
      if (uy >= (uint64_t)bits) return 0;
      *out = x >> uy; /* x is sign-extended: arithmetic shift of the wide value */
      break;
    case IR_OP_SMULHI:
      if (bits == 32) *out = (x * y) >> 32;
      else *out = (int64_t)(((__int128)x * (__int128)y) >> 64);
      break;
    case IR_OP_UMULHI:
      if (bits == 32) *out = (int64_t)((ux * uy) >> 32);
      else *out = (int64_t)(((unsigned __int128)ux * (unsigned __int128)uy) >> 64);
      break;
    default: return 0;
  }
  *out = ir_int_wrap(bits, *out);
  return 1;
}

static int icmp_eval(int pred, int bits, int64_t x, int64_t y) {
  uint64_t m = umask(bits), ux = (uint64_t)x & m, uy = (uint64_t)y & m;
  if (bits == 1) { /* i1 is stored 0/1; as signed, 1 is -1 */
    x = -x;
    y = -y;
  }
  switch (pred) {
    case IR_ICMP_EQ: return ux == uy;
    case IR_ICMP_NE: return ux != uy;
    case IR_ICMP_SLT: return x < y;
    case IR_ICMP_SLE: return x <= y;
    case IR_ICMP_SGT: return x > y;
    case IR_ICMP_SGE: return x >= y;
    case IR_ICMP_ULT: return ux < uy;
    case IR_ICMP_ULE: return ux <= uy;
    case IR_ICMP_UGT: return ux > uy;
    case IR_ICMP_UGE: return ux >= uy;
  }
  return 0;
}

static int fcmp_eval(int pred, double x, double y) {
  int uno = isnan(x) || isnan(y);
  switch (pred) {
    case IR_FCMP_OEQ: return !uno && x == y;
    case IR_FCMP_ONE: return !uno && x != y;
    case IR_FCMP_OLT: return !uno && x < y;
    case IR_FCMP_OLE: return !uno && x <= y;
    case IR_FCMP_OGT: return !uno && x > y;
    case IR_FCMP_OGE: return !uno && x >= y;
    case IR_FCMP_ORD: return !uno;
    case IR_FCMP_UNO: return uno;
    case IR_FCMP_UEQ: return uno || x == y;
    case IR_FCMP_UNE: return uno || x != y;
    case IR_FCMP_ULT: return uno || x < y;
    case IR_FCMP_ULE: return uno || x <= y;
    case IR_FCMP_UGT: return uno || x > y;
    case IR_FCMP_UGE: return uno || x >= y;
  }
  return 0;
}

/* Float result of op on constants, rounded to t; 0 when not folded. */
static int fold_float(int op, IrType t, double x, double y, double z, int nargs, double *out) {
  if (t != IR_T_F32 && t != IR_T_F64 && t != IR_T_F16) return 0;
  double r;
  switch (op) {
    case IR_OP_ADD: r = x + y; break;
    case IR_OP_SUB: r = x - y; break;
    case IR_OP_MUL: r = x * y; break;
    case IR_OP_FDIV: r = x / y; break;
    case IR_OP_NEG: r = -x; break;
    case IR_OP_ABS: r = fabs(x); break;
    case IR_OP_FMIN: r = isnan(x) ? y : isnan(y) ? x : (x < y || (x == y && signbit(x))) ? x : y; break;
    case IR_OP_FMAX: r = isnan(x) ? y : isnan(y) ? x : (x > y || (x == y && !signbit(x))) ? x : y; break;
    case IR_OP_FMA:
      if (nargs != 3) return 0;
      if (t == IR_T_F32) r = (double)fmaf((float)x, (float)y, (float)z);
      else if (t == IR_T_F64) r = fma(x, y, z);
      else return 0; /* f16 through double would round twice */
      break;
    default: return 0;
  }
  *out = r;
  return 1;
}

/* float -> integer as PTX cvt.rzi (and the other rounding modes) does it:
   NaN gives 0, out-of-range values saturate. */
static int64_t f2i(double x, int rnd, int bits, int is_unsigned) {
  if (isnan(x)) return 0;
  switch (rnd) {
    case IR_ROUND_RN: x = rint(x); break;
    case IR_ROUND_RM: x = floor(x); break;
    case IR_ROUND_RP: x = ceil(x); break;
    default: x = trunc(x); break;
  }
  if (is_unsigned) {
    double hi = ldexp(1.0, bits) - 1;
    if (x <= 0) return 0;
    if (x >= hi) return ir_int_wrap(bits, (int64_t)umask(bits));
    return ir_int_wrap(bits, (int64_t)(uint64_t)x);
  }
  double lo = -ldexp(1.0, bits - 1), hi = ldexp(1.0, bits - 1) - 1;
  if (x <= lo) return ir_int_wrap(bits, (int64_t)((uint64_t)1 << (bits - 1)));
  if (x >= hi) return (int64_t)(umask(bits) >> 1);
  return (int64_t)x;
}

static int fold_cvt(IrFunc *f, const IrInst *in, int64_t k, IrFoldResult *r) {
  IrModule *m = f->m;
  IrType from = f->insts[ir_args(f, in)[0]].type, to = in->type;
  const int64_t *imm = ir_imms(f, in);
  int rnd = (int)imm[0], sat = (int)(imm[1] & IR_FLAG_SAT), uns = in->op == IR_OP_CVTU;
  int fi = ir_type_is_int(m, from), ti = ir_type_is_int(m, to);
  int fb = ir_trec(m, from)->bits, tb = ir_trec(m, to)->bits;
  if (fi && ti) {
    int64_t x = uns || fb == 1 ? (int64_t)((uint64_t)k & umask(fb)) : k;
    if (sat && tb < fb) {
      if (uns) {
        if ((uint64_t)x > umask(tb)) x = (int64_t)umask(tb);
      } else {
        int64_t hi = (int64_t)(umask(tb) >> 1), lo = -hi - 1;
        x = x < lo ? lo : x > hi ? hi : x;
      }
    }
    return res_const(r, ir_int_wrap(tb, x));
  }
  if (fi) { /* int -> float: rounding other than nearest is left to the GPU */
    if (rnd != IR_ROUND_DEFAULT && rnd != IR_ROUND_RN) return 0;
    double x = (uns || fb == 1) ? (double)((uint64_t)k & umask(fb)) : (double)k;
    if (fb == 64 && (uns ? (uint64_t)k > (1ull << 53) : (k > (1ll << 53) || k < -(1ll << 53)))) return 0;
    return res_const(r, ir_float_bits(to, x));
  }
  double x = bitsd(k);
  if (ti) return res_const(r, f2i(x, rnd, tb, uns));
  if (rnd != IR_ROUND_DEFAULT && rnd != IR_ROUND_RN && !(to == IR_T_TF32 && rnd == IR_ROUND_RNA)) return 0;
  if (sat) x = isnan(x) ? 0 : x < 0 ? 0 : x > 1 ? 1 : x;
  return res_const(r, ir_float_bits(to, x));
}

static int fold_bitcast(IrFunc *f, const IrInst *in, int64_t k, IrFoldResult *r) {
  IrType from = f->insts[ir_args(f, in)[0]].type, to = in->type;
  uint64_t raw;
  double x = bitsd(k);
  switch (from) { /* the stored bits */
    case IR_T_F64: raw = (uint64_t)k; break;
    case IR_T_F32:
    case IR_T_TF32: {
      float fv = (float)x;
      uint32_t u;
      memcpy(&u, &fv, 4);
      raw = u;
      break;
    }
    case IR_T_F16: raw = ir_f16_from_double(x); break;
    case IR_T_BF16: raw = ir_bf16_from_double(x); break;
    case IR_T_E4M3: raw = ir_fp8_from_double(x, 0); break;
    case IR_T_E5M2: raw = ir_fp8_from_double(x, 1); break;
    case IR_T_I8: case IR_T_I16: case IR_T_I32: case IR_T_I64:
      raw = (uint64_t)k & umask(ir_trec(f->m, from)->bits);
      break;
    default: return 0;
  }
  switch (to) {
    case IR_T_F64: return res_const(r, (int64_t)raw);
    case IR_T_F32:
    case IR_T_TF32: {
      uint32_t u = (uint32_t)raw;
      float fv;
      memcpy(&fv, &u, 4);
      if (isnan(fv)) return 0; /* NaN payloads are not kept in constants */
      if (to == IR_T_TF32 && (u & 0x1fff)) return 0;
      return res_const(r, dbits((double)fv));
    }
    case IR_T_F16:
      if (((raw >> 10) & 0x1f) == 0x1f && (raw & 0x3ff)) return 0;
      return res_const(r, dbits(ir_f16_to_double((uint16_t)raw)));
    case IR_T_BF16:
      if (((raw >> 7) & 0xff) == 0xff && (raw & 0x7f)) return 0;
      return res_const(r, dbits(ir_bf16_to_double((uint16_t)raw)));
    case IR_T_I8: case IR_T_I16: case IR_T_I32: case IR_T_I64:
      return res_const(r, ir_int_wrap(ir_trec(f->m, to)->bits, (int64_t)raw));
    default: return 0; /* fp8 constants from bits: left to the GPU */
  }
}

int ir_fold(IrFunc *f, IrRef v, IrFoldResult *r) {
  IrModule *m = f->m;
  const IrInst *in = &f->insts[v];
  memset(r, 0, sizeof *r);
  int op = in->op, n = in->nargs;
  const IrRef *a = ir_args(f, in);
  const int64_t *imm = ir_imms(f, in);
  IrType t = in->type;
  IrType t0 = n ? f->insts[a[0]].type : IR_NONE;
  int64_t k0 = 0, k1 = 0, k2 = 0;
  int c0 = n > 0 && is_const(f, a[0], &k0);
  int c1 = n > 1 && is_const(f, a[1], &k1);
  int c2 = n > 2 && is_const(f, a[2], &k2);
  int scalar_int = ir_type_is_int(m, t0) && ir_trec(m, t0)->kind == IR_TK_INT;
  int bits = ir_trec(m, t0)->bits;

  switch (op) {
    case IR_OP_SELECT:
      if (c0) return res_ref(r, k0 ? a[1] : a[2]);
      if (a[1] == a[2]) return res_ref(r, a[1]);
      if (t == IR_T_I1 && c1 && c2 && k1 == 1 && k2 == 0) return res_ref(r, a[0]);
      return 0;
    case IR_OP_ICMP:
      if (c0 && c1 && scalar_int) return res_const(r, icmp_eval((int)imm[0], bits, k0, k1));
      if (a[0] == a[1] && ir_trec(m, t0)->kind != IR_TK_VEC) {
        int p = (int)imm[0];
        int eq = p == IR_ICMP_EQ || p == IR_ICMP_SLE || p == IR_ICMP_SGE || p == IR_ICMP_ULE || p == IR_ICMP_UGE;
        return res_const(r, eq);
      }
      return 0;
    case IR_OP_FCMP:
      if (c0 && c1) return res_const(r, fcmp_eval((int)imm[0], bitsd(k0), bitsd(k1)));
      return 0;
    case IR_OP_CVT:
    case IR_OP_CVTU:
      return c0 ? fold_cvt(f, in, k0, r) : 0;
    case IR_OP_BITCAST:
      if (t == t0) return res_ref(r, a[0]);
      return c0 ? fold_bitcast(f, in, k0, r) : 0;
    case IR_OP_EXTRACT: {
      const IrInst *src = &f->insts[a[0]];
      if (src->op == IR_OP_PACK) return res_ref(r, ir_args(f, src)[imm[0]]);
      if (src->op == IR_OP_INSERT && ir_imms(f, src)[0] == imm[0]) return res_ref(r, ir_args(f, src)[1]);
      return 0;
    }
    case IR_OP_GEP:
      if (c1 && k1 == 0 && t == t0) return res_ref(r, a[0]);
      return 0;
    case IR_OP_PTRCAST:
      if (t == t0) return res_ref(r, a[0]);
      return 0;
    default: break;
  }

  if (scalar_int) {
    if (n == 2 && c0 && c1) {
      int64_t out;
      return fold_int_bin(op, bits, k0, k1, &out) ? res_const(r, out) : 0;
    }
    if (n == 1 && c0) {
      uint64_t u = (uint64_t)k0 & umask(bits);
      switch (op) {
        case IR_OP_NEG: return res_const(r, ir_int_wrap(bits, (int64_t)(0 - u)));
        case IR_OP_NOT: return res_const(r, ir_int_wrap(bits, ~k0));
        case IR_OP_ABS:
          if (bits > 1 && k0 == ir_int_wrap(bits, (int64_t)((uint64_t)1 << (bits - 1)))) return res_const(r, k0);
          return res_const(r, k0 < 0 ? -k0 : k0);
        case IR_OP_POPC: return res_const(r, __builtin_popcountll(u));
        case IR_OP_CLZ: return res_const(r, u ? __builtin_clzll(u) - (64 - bits) : bits);
        case IR_OP_BREV: {
          uint64_t o = 0;
          for (int i = 0; i < bits; i++)
            if (u >> i & 1) o |= (uint64_t)1 << (bits - 1 - i);
          return res_const(r, ir_int_wrap(bits, (int64_t)o));
        }
        default: return 0;
      }
    }
    if (n == 2 && c1) { /* reassociation: (x op c1) op c2 -> x op (c1 op c2); x - c -> x + -c */
      const IrInst *inner = &f->insts[a[0]];
      int64_t kin;
      int assoc = op == IR_OP_ADD || op == IR_OP_MUL || op == IR_OP_AND || op == IR_OP_OR || op == IR_OP_XOR;
      if (assoc && inner->op == op && inner->nargs == 2 && is_const(f, ir_args(f, inner)[1], &kin) &&
          !is_const(f, ir_args(f, inner)[0], &kin)) {
        int64_t out;
        is_const(f, ir_args(f, inner)[1], &kin);
        if (fold_int_bin(op, bits, kin, k1, &out)) {
          r->rewrite_op = op;
          r->rewrite_a = ir_args(f, inner)[0];
          return res_const(r, out);
        }
      }
      if (op == IR_OP_SUB && k1 != 0) {
        r->rewrite_op = IR_OP_ADD;
        r->rewrite_a = a[0];
        return res_const(r, ir_int_wrap(bits, (int64_t)(0 - (uint64_t)k1)));
      }
    }
    if (n == 2) { /* identities with one constant (constants are second after ir_canon) */
      int64_t all = ir_int_wrap(bits, -1);
      if (c1) {
        switch (op) {
          case IR_OP_ADD: case IR_OP_SUB: case IR_OP_OR: case IR_OP_XOR: case IR_OP_SHL: case IR_OP_LSHR:
          case IR_OP_ASHR:
            if (k1 == 0) return res_ref(r, a[0]);
            break;
          case IR_OP_MUL:
            if (k1 == 1) return res_ref(r, a[0]);
            if (k1 == 0) return res_const(r, 0);
            break;
          case IR_OP_SDIV: case IR_OP_UDIV:
            if (k1 == 1) return res_ref(r, a[0]);
            break;
          case IR_OP_UREM:
            if (k1 == 1) return res_const(r, 0);
            break;
          case IR_OP_AND:
            if (k1 == all) return res_ref(r, a[0]);
            if (k1 == 0) return res_const(r, 0);
            break;
          default: break;
        }
        if (op == IR_OP_OR && k1 == all) return res_const(r, all);
      }
      if (a[0] == a[1]) {
        switch (op) {
          case IR_OP_SUB: case IR_OP_XOR: return res_const(r, 0);
          case IR_OP_AND: case IR_OP_OR: case IR_OP_SMIN: case IR_OP_SMAX: case IR_OP_UMIN: case IR_OP_UMAX:
            return res_ref(r, a[0]);
          default: break;
        }
      }
    }
    return 0;
  }

  if (t0 == IR_T_F32 || t0 == IR_T_F64 || t0 == IR_T_F16) {
    if (op == IR_OP_FDIV && (imm[0] & IR_FLAG_FAST)) return 0;
    int allc = (n >= 1 && c0) && (n < 2 || c1) && (n < 3 || c2);
    if (allc) {
      double x = bitsd(k0), y = n > 1 ? bitsd(k1) : 0, z = n > 2 ? bitsd(k2) : 0, out;
      if (fold_float(op, t0, x, y, z, n, &out)) return res_const(r, ir_float_bits(t0, out));
      return 0;
    }
    if (n == 2 && c1) {
      double y = bitsd(k1);
      if ((op == IR_OP_ADD && y == 0 && signbit(y)) || (op == IR_OP_SUB && y == 0 && !signbit(y)) ||
          (op == IR_OP_MUL && y == 1.0) || (op == IR_OP_FDIV && y == 1.0))
        return res_ref(r, a[0]);
    }
  }
  return 0;
}
