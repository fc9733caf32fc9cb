/* test_ir_fold: constant folding against C arithmetic over whole grids of
 * values and every integer width; the cases folding must leave alone; exact
 * identities; float folding that rounds like the GPU; conversions; CSE, where
 * it may reuse a value (dominating regions) and where it may not (a region that
 * ended, an if's other branch, ops with effects); and the raw switch. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "ir_impl.h"

static IrModule *m;
static IrFunc *f;

static void fresh(int fold) {
  if (m) ir_module_free(m);
  m = ir_module_new();
  ir_module_set(m, IR_OPT_FOLD, fold);
  f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
}

static IrRef op2(IrOp op, IrRef a, IrRef b) { return ir_op3(f, op, 0, a, b, 0, 0, 0, 0); }
static IrRef c32(int64_t v) { return ir_const_int(f, IR_T_I32, v); }
static int is_const_val(IrRef r, int64_t want) {
  int64_t got;
  return ir_inst_op(f, r) == IR_OP_CONST && ir_const_value(f, r, &got, NULL) && got == want;
}

/* The reference: C arithmetic in the type of each width. */
static int ref_int(IrOp op, int bits, int64_t x, int64_t y, int64_t *out) {
#define REF(T, UT)                                                                                     \
  {                                                                                                    \
    T a = (T)x, b = (T)y;                                                                              \
    UT ua = (UT)a, ub = (UT)b;                                                                         \
    switch (op) {                                                                                      \
      case IR_OP_ADD: *out = (T)(UT)(ua + ub); return 1;                                               \
      case IR_OP_SUB: *out = (T)(UT)(ua - ub); return 1;                                               \
      case IR_OP_MUL: *out = (T)(UT)((uint64_t)ua * ub); return 1;                                     \
      case IR_OP_AND: *out = (T)(a & b); return 1;                                                     \
      case IR_OP_OR: *out = (T)(a | b); return 1;                                                      \
      case IR_OP_XOR: *out = (T)(a ^ b); return 1;                                                     \
      case IR_OP_SMIN: *out = a < b ? a : b; return 1;                                                 \
      case IR_OP_SMAX: *out = a > b ? a : b; return 1;                                                 \
      case IR_OP_UMIN: *out = (T)(ua < ub ? ua : ub); return 1;                                        \
      case IR_OP_UMAX: *out = (T)(ua > ub ? ua : ub); return 1;                                        \
      case IR_OP_SDIV: if (b == 0 || (b == -1 && a == (T)((UT)1 << (sizeof(T) * 8 - 1)))) return 0;   \
        *out = (T)(a / b); return 1;                                                                   \
      case IR_OP_SREM: if (b == 0 || (b == -1 && a == (T)((UT)1 << (sizeof(T) * 8 - 1)))) return 0;   \
        *out = (T)(a % b); return 1;                                                                   \
      case IR_OP_UDIV: if (ub == 0) return 0; *out = (T)(UT)(ua / ub); return 1;                       \
      case IR_OP_UREM: if (ub == 0) return 0; *out = (T)(UT)(ua % ub); return 1;                       \
      case IR_OP_SHL: if (ub >= sizeof(T) * 8) return 0; *out = (T)(UT)((uint64_t)ua << ub); return 1; \
      case IR_OP_LSHR: if (ub >= sizeof(T) * 8) return 0; *out = (T)(UT)(ua >> ub); return 1;          \
      case IR_OP_ASHR: if (ub >= sizeof(T) * 8) return 0; *out = (T)(a >> ub); return 1;               \
      default: return 0;                                                                               \
    }                                                                                                  \
  }
  switch (bits) {
    case 8: REF(int8_t, uint8_t)
    case 16: REF(int16_t, uint16_t)
    case 32: REF(int32_t, uint32_t)
    default: REF(int64_t, uint64_t)
  }
#undef REF
}

static void test_int_grid(void) {
  static const IrOp ops[] = {IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_AND, IR_OP_OR, IR_OP_XOR, IR_OP_SMIN,
                             IR_OP_SMAX, IR_OP_UMIN, IR_OP_UMAX, IR_OP_SDIV, IR_OP_SREM, IR_OP_UDIV, IR_OP_UREM,
                             IR_OP_SHL, IR_OP_LSHR, IR_OP_ASHR};
  static const int64_t vals[] = {0, 1, -1, 2, 3, 7, -7, 31, 63, 64, 100, 127, -128, 255, 32767, -32768, 65535,
                                 INT32_MAX, INT32_MIN, 0x123456789ll, INT64_MAX, INT64_MIN};
  static const IrType types[] = {IR_T_I8, IR_T_I16, IR_T_I32, IR_T_I64};
  int bad = 0, folded = 0, kept = 0;
  fresh(1);
  for (size_t t = 0; t < 4; t++) {
    int bits = ir_trec(m, types[t])->bits;
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        for (size_t j = 0; j < sizeof vals / sizeof *vals; j++) {
          int64_t x = ir_int_wrap(bits, vals[i]), y = ir_int_wrap(bits, vals[j]), want;
          IrRef a = ir_const_int(f, types[t], x), b = ir_const_int(f, types[t], y);
          IrRef r = ir_op3(f, ops[o], 0, a, b, 0, 0, 0, 0);
          if (ref_int(ops[o], bits, x, y, &want)) {
            folded++;
            if (!is_const_val(r, want)) {
              bad++;
              fprintf(stderr, "%s i%d %lld %lld: want %lld\n", ir_op_name(ops[o]), bits, (long long)x, (long long)y,
                      (long long)want);
            }
          } else { /* division by zero, INT_MIN / -1, shifts past the width: left to the GPU */
            kept++;
            if (ir_inst_op(f, r) != ops[o]) bad++;
          }
        }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(folded > 5000 && kept > 100);
  /* comparisons over the same grid */
  bad = 0;
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
    for (size_t j = 0; j < sizeof vals / sizeof *vals; j++) {
      int32_t x = (int32_t)vals[i], y = (int32_t)vals[j];
      uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
      int want[] = {x == y, x != y, x < y, x <= y, x > y, x >= y, ux < uy, ux <= uy, ux > uy, ux >= uy};
      for (int p = 0; p < IR_ICMP__COUNT; p++) {
        IrRef r = ir_op3(f, IR_OP_ICMP, 0, c32(x), c32(y), 0, p, 0, 0);
        if (!is_const_val(r, want[p])) bad++;
      }
    }
  CHECK_EQ_INT(bad, 0);
  /* unary and bit counting */
  CHECK(is_const_val(ir_op3(f, IR_OP_NEG, 0, c32(INT32_MIN), 0, 0, 0, 0, 0), INT32_MIN));
  CHECK(is_const_val(ir_op3(f, IR_OP_NOT, 0, c32(0), 0, 0, 0, 0, 0), -1));
  CHECK(is_const_val(ir_op3(f, IR_OP_ABS, 0, c32(-5), 0, 0, 0, 0, 0), 5));
  CHECK(is_const_val(ir_op3(f, IR_OP_ABS, 0, c32(INT32_MIN), 0, 0, 0, 0, 0), INT32_MIN));
  CHECK(is_const_val(ir_op3(f, IR_OP_POPC, 0, c32(-1), 0, 0, 0, 0, 0), 32));
  CHECK(is_const_val(ir_op3(f, IR_OP_CLZ, 0, c32(1), 0, 0, 0, 0, 0), 31));
  CHECK(is_const_val(ir_op3(f, IR_OP_CLZ, 0, c32(0), 0, 0, 0, 0, 0), 32));
  CHECK(is_const_val(ir_op3(f, IR_OP_BREV, 0, c32(1), 0, 0, 0, 0, 0), INT32_MIN));
  CHECK(is_const_val(ir_op3(f, IR_OP_POPC, 0, ir_const_int(f, IR_T_I64, -1), 0, 0, 0, 0, 0), 64));
  CHECK(is_const_val(ir_op3(f, IR_OP_SMULHI, 0, c32(-2), c32(INT32_MAX), 0, 0, 0, 0), -1));
  CHECK(is_const_val(ir_op3(f, IR_OP_UMULHI, 0, c32(-1), c32(-1), 0, 0, 0, 0), -2));
  IrRef big = ir_const_int(f, IR_T_I64, INT64_MIN);
  CHECK(is_const_val(ir_op3(f, IR_OP_UMULHI, 0, big, ir_const_int(f, IR_T_I64, 4), 0, 0, 0, 0), 2));
  /* i1 is 0/1; as a signed value 1 is -1 */
  IrRef t = ir_const_int(f, IR_T_I1, 1), z = ir_const_int(f, IR_T_I1, 0);
  CHECK(is_const_val(ir_op3(f, IR_OP_ICMP, 0, t, z, 0, IR_ICMP_SLT, 0, 0), 1));
  CHECK(is_const_val(ir_op3(f, IR_OP_ICMP, 0, t, z, 0, IR_ICMP_UGT, 0, 0), 1));
  CHECK(is_const_val(op2(IR_OP_XOR, t, t), 0));
}

static void test_identities(void) {
  fresh(1);
  IrRef x = ir_param(f, IR_T_I32), y = ir_param(f, IR_T_I32);
  IrRef fx = ir_param(f, IR_T_F32);
  CHECK_EQ_INT(op2(IR_OP_ADD, x, c32(0)), x);
  CHECK_EQ_INT(op2(IR_OP_ADD, c32(0), x), x); /* constants go second first */
  CHECK_EQ_INT(op2(IR_OP_MUL, c32(1), x), x);
  CHECK(is_const_val(op2(IR_OP_MUL, x, c32(0)), 0));
  CHECK(is_const_val(op2(IR_OP_SUB, x, x), 0));
  CHECK(is_const_val(op2(IR_OP_XOR, x, x), 0));
  CHECK_EQ_INT(op2(IR_OP_AND, x, x), x);
  CHECK_EQ_INT(op2(IR_OP_AND, x, c32(-1)), x);
  CHECK(is_const_val(op2(IR_OP_OR, x, c32(-1)), -1));
  CHECK_EQ_INT(op2(IR_OP_SHL, x, c32(0)), x);
  CHECK_EQ_INT(op2(IR_OP_SDIV, x, c32(1)), x);
  CHECK(is_const_val(op2(IR_OP_UREM, x, c32(1)), 0));
  CHECK_EQ_INT(op2(IR_OP_SMAX, x, x), x);
  CHECK(is_const_val(ir_op3(f, IR_OP_ICMP, 0, x, x, 0, IR_ICMP_SLE, 0, 0), 1));
  CHECK(is_const_val(ir_op3(f, IR_OP_ICMP, 0, x, x, 0, IR_ICMP_NE, 0, 0), 0));
  IrRef c = ir_op3(f, IR_OP_ICMP, 0, x, y, 0, IR_ICMP_SLT, 0, 0);
  CHECK_EQ_INT(ir_op3(f, IR_OP_SELECT, 0, c, x, x, 0, 0, 0), x);
  CHECK_EQ_INT(ir_op3(f, IR_OP_SELECT, 0, ir_const_int(f, IR_T_I1, 1), x, y, 0, 0, 0), x);
  CHECK_EQ_INT(ir_op3(f, IR_OP_SELECT, 0, ir_const_int(f, IR_T_I1, 0), x, y, 0, 0, 0), y);
  CHECK_EQ_INT(ir_op3(f, IR_OP_SELECT, 0, c, ir_const_int(f, IR_T_I1, 1), ir_const_int(f, IR_T_I1, 0), 0, 0, 0), c);
  /* integer chains with constants reassociate (integers wrap, so exactly) */
  IrRef x3 = op2(IR_OP_ADD, x, c32(3));
  CHECK_EQ_INT(op2(IR_OP_ADD, x3, c32(4)), op2(IR_OP_ADD, x, c32(7)));
  CHECK_EQ_INT(op2(IR_OP_ADD, x3, c32(-3)), x);
  CHECK_EQ_INT(op2(IR_OP_SUB, x, c32(5)), op2(IR_OP_ADD, x, c32(-5)));
  CHECK_EQ_INT(op2(IR_OP_SUB, x3, c32(3)), x);
  CHECK_EQ_INT(op2(IR_OP_SUB, x, c32(INT32_MIN)), op2(IR_OP_ADD, x, c32(INT32_MIN)));
  CHECK_EQ_INT(op2(IR_OP_MUL, op2(IR_OP_MUL, x, c32(3)), c32(5)), op2(IR_OP_MUL, x, c32(15)));
  CHECK_EQ_INT(op2(IR_OP_AND, op2(IR_OP_AND, x, c32(12)), c32(10)), op2(IR_OP_AND, x, c32(8)));
  CHECK_EQ_INT(op2(IR_OP_XOR, op2(IR_OP_XOR, x, c32(6)), c32(6)), x);
  CHECK(op2(IR_OP_SUB, c32(5), x) != op2(IR_OP_ADD, x, c32(-5))); /* 5 - x stays */
  /* floats: only the exact ones */
  IrRef mz = ir_const_float(f, IR_T_F32, -0.0), pz = ir_const_float(f, IR_T_F32, 0.0);
  CHECK(mz != pz); /* -0.0 and +0.0 are different constants */
  CHECK_EQ_INT(op2(IR_OP_ADD, fx, mz), fx);
  CHECK(op2(IR_OP_ADD, fx, pz) != fx); /* -0 + 0 = +0: not an identity */
  CHECK_EQ_INT(op2(IR_OP_SUB, fx, pz), fx);
  CHECK_EQ_INT(op2(IR_OP_MUL, fx, ir_const_float(f, IR_T_F32, 1.0)), fx);
  CHECK(op2(IR_OP_MUL, fx, pz) != pz); /* x * 0 is not 0 for NaN, inf, -x */
  CHECK(op2(IR_OP_SUB, fx, fx) != pz);
  /* casts to the same type, gep by 0, extract of a pack or an insert */
  CHECK_EQ_INT(ir_op3(f, IR_OP_BITCAST, IR_T_I32, x, 0, 0, 0, 0, 0), x);
  IrType p4 = ir_type_ptr(m, IR_T_F32, IR_SPACE_GLOBAL, 4);
  IrRef p = ir_param(f, p4);
  CHECK_EQ_INT(op2(IR_OP_GEP, p, c32(0)), p);
  IrType st = ir_type_struct(m, (IrType[]){IR_T_I32, IR_T_F32}, 2);
  IrRef args[2] = {x, fx};
  IrRef pk = ir_op(f, IR_OP_PACK, st, args, 2, NULL, 0);
  CHECK_EQ_INT(ir_op3(f, IR_OP_EXTRACT, 0, pk, 0, 0, 1, 0, 0), fx);
  IrRef ins = ir_op3(f, IR_OP_INSERT, 0, pk, y, 0, 0, 0, 0);
  CHECK_EQ_INT(ir_op3(f, IR_OP_EXTRACT, 0, ins, 0, 0, 0, 0, 0), y);
  CHECK(ir_op3(f, IR_OP_EXTRACT, 0, ins, 0, 0, 1, 0, 0) != fx); /* not looked through (not needed) */
  CHECK_EQ_INT(ir_diag_count(m), 0);
}

static double fconst(IrRef r) {
  double d = NAN;
  if (ir_inst_op(f, r) != IR_OP_CONST || !ir_const_value(f, r, NULL, &d)) return NAN;
  return d;
}

static void test_floats(void) {
  fresh(1);
  IrRef one = ir_const_float(f, IR_T_F32, 1.0), tiny = ir_const_float(f, IR_T_F32, 1e-8);
  CHECK(fconst(op2(IR_OP_ADD, one, tiny)) == 1.0); /* rounded to f32 */
  IrRef third = op2(IR_OP_FDIV, one, ir_const_float(f, IR_T_F32, 3.0));
  CHECK(fconst(third) == (double)(1.0f / 3.0f));
  IrRef a = ir_const_float(f, IR_T_F32, 1.0 + ldexp(1, -23)), b = ir_const_float(f, IR_T_F32, 1.0 - ldexp(1, -24));
  IrRef nc = ir_const_float(f, IR_T_F32, -1.0);
  /* fma rounds once: the product's low bits survive where mul then add would lose them */
  CHECK(fconst(ir_op3(f, IR_OP_FMA, 0, a, b, nc, 0, 0, 0)) == (double)fmaf(1.0f + 0x1p-23f, 1.0f - 0x1p-24f, -1.0f));
  CHECK(fconst(ir_op3(f, IR_OP_FMA, 0, a, b, nc, 0, 0, 0)) != 0.0);
  IrRef nan = ir_const_float(f, IR_T_F32, NAN);
  CHECK(fconst(op2(IR_OP_FMIN, nan, one)) == 1.0); /* min.f32: NaN yields the other */
  CHECK(fconst(op2(IR_OP_FMAX, ir_const_float(f, IR_T_F32, -0.0), ir_const_float(f, IR_T_F32, 0.0))) == 0.0);
  CHECK(!signbit(fconst(op2(IR_OP_FMAX, ir_const_float(f, IR_T_F32, -0.0), ir_const_float(f, IR_T_F32, 0.0)))));
  CHECK(fconst(ir_op3(f, IR_OP_FCMP, 0, nan, one, 0, IR_FCMP_UNO, 0, 0)) == 1.0 ||
        is_const_val(ir_op3(f, IR_OP_FCMP, 0, nan, one, 0, IR_FCMP_UNO, 0, 0), 1));
  CHECK(is_const_val(ir_op3(f, IR_OP_FCMP, 0, nan, one, 0, IR_FCMP_OLT, 0, 0), 0));
  CHECK(is_const_val(ir_op3(f, IR_OP_FCMP, 0, nan, one, 0, IR_FCMP_ULT, 0, 0), 1));
  /* f16 arithmetic through double rounds once */
  IrRef h = ir_const_float(f, IR_T_F16, 2048.0), h1 = ir_const_float(f, IR_T_F16, 1.0);
  CHECK(fconst(op2(IR_OP_ADD, h, h1)) == 2048.0); /* 2049 ties to even */
  CHECK(fconst(op2(IR_OP_ADD, ir_const_float(f, IR_T_F16, 2050.0), h1)) == 2052.0);
  /* not folded: fast division, math functions */
  IrRef fast = ir_op3(f, IR_OP_FDIV, 0, one, ir_const_float(f, IR_T_F32, 3.0), 0, IR_FLAG_FAST, 0, 0);
  CHECK_EQ_INT(ir_inst_op(f, fast), IR_OP_FDIV);
  CHECK_EQ_INT(ir_inst_op(f, ir_op3(f, IR_OP_SQRT, 0, one, 0, 0, 0, 0, 0)), IR_OP_SQRT);
  CHECK_EQ_INT(ir_diag_count(m), 0);
}

static void test_conversions(void) {
  fresh(1);
  IrRef big = ir_const_float(f, IR_T_F32, 1e10), neg = ir_const_float(f, IR_T_F32, -2.5);
  IrRef nan = ir_const_float(f, IR_T_F32, NAN);
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I32, big, 0, 0, 0, 0, 0), INT32_MAX)); /* saturates */
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I32, nan, 0, 0, 0, 0, 0), 0));
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I32, neg, 0, 0, 0, 0, 0), -2));              /* toward zero */
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I32, neg, 0, 0, IR_ROUND_RM, 0, 0), -3));    /* rmi */
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I32, neg, 0, 0, IR_ROUND_RN, 0, 0), -2));    /* rni: ties even */
  CHECK(is_const_val(ir_op3(f, IR_OP_CVTU, IR_T_I32, neg, 0, 0, 0, 0, 0), 0));
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I8, c32(300), 0, 0, 0, IR_FLAG_SAT, 0), 127));
  CHECK(is_const_val(ir_op3(f, IR_OP_CVTU, IR_T_I8, c32(300), 0, 0, 0, IR_FLAG_SAT, 0), -1)); /* 255 */
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I8, c32(300), 0, 0, 0, 0, 0), 44));
  CHECK(is_const_val(ir_op3(f, IR_OP_CVTU, IR_T_I64, c32(-1), 0, 0, 0, 0, 0), 0xffffffffll));
  CHECK(is_const_val(ir_op3(f, IR_OP_CVT, IR_T_I64, c32(-1), 0, 0, 0, 0, 0), -1));
  CHECK(fconst(ir_op3(f, IR_OP_CVT, IR_T_F32, c32(16777217), 0, 0, 0, 0, 0)) == 16777216.0);
  CHECK(fconst(ir_op3(f, IR_OP_CVTU, IR_T_F32, c32(-1), 0, 0, 0, 0, 0)) == 4294967296.0);
  IrRef third = ir_const_float(f, IR_T_F64, 1.0 / 3.0);
  CHECK(fconst(ir_op3(f, IR_OP_CVT, IR_T_F32, third, 0, 0, 0, 0, 0)) == (double)(float)(1.0 / 3.0));
  CHECK(fconst(ir_op3(f, IR_OP_CVT, IR_T_F32, ir_const_float(f, IR_T_F64, 7.5), 0, 0, IR_ROUND_RN, IR_FLAG_SAT, 0)) ==
        1.0);
  CHECK(fconst(ir_op3(f, IR_OP_CVT, IR_T_BF16, ir_const_float(f, IR_T_F32, 1.0 + ldexp(1, -9)), 0, 0, 0, 0, 0)) ==
        1.0);
  /* directed rounding to float is the GPU's to do */
  CHECK_EQ_INT(ir_inst_op(f, ir_op3(f, IR_OP_CVT, IR_T_F32, third, 0, 0, IR_ROUND_RZ, 0, 0)), IR_OP_CVT);
  IrRef fone = ir_const_float(f, IR_T_F32, 1.0);
  CHECK(is_const_val(ir_op3(f, IR_OP_BITCAST, IR_T_I32, fone, 0, 0, 0, 0, 0), 0x3f800000));
  CHECK(fconst(ir_op3(f, IR_OP_BITCAST, IR_T_F32, c32(0x40400000), 0, 0, 0, 0, 0)) == 3.0);
  CHECK(is_const_val(ir_op3(f, IR_OP_BITCAST, IR_T_I16, ir_const_float(f, IR_T_F16, -2.0), 0, 0, 0, 0, 0),
                     (int16_t)0xc000));
  CHECK_EQ_INT(ir_diag_count(m), 0);
}

static void test_cse(void) {
  fresh(1);
  IrRef x = ir_param(f, IR_T_I32), y = ir_param(f, IR_T_I32);
  IrType gp = ir_type_ptr(m, IR_T_I32, IR_SPACE_GLOBAL, 4);
  IrRef p = ir_param(f, gp);
  IrRef s = op2(IR_OP_ADD, x, y);
  CHECK_EQ_INT(op2(IR_OP_ADD, x, y), s);
  CHECK_EQ_INT(op2(IR_OP_ADD, y, x), s); /* commutative: one canonical order */
  CHECK(op2(IR_OP_SUB, x, y) != op2(IR_OP_SUB, y, x));
  IrRef tid = ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_TID_X, 0, 0);
  CHECK_EQ_INT(ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_TID_X, 0, 0), tid);
  CHECK(ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_TID_Y, 0, 0) != tid);
  /* not reused: memory reads, clocks, warp shuffles */
  IrRef l1 = ir_op3(f, IR_OP_LOAD, 0, p, 0, 0, 0, 0, 0);
  CHECK(ir_op3(f, IR_OP_LOAD, 0, p, 0, 0, 0, 0, 0) != l1);
  IrRef c1 = ir_op3(f, IR_OP_TIMER, 0, 0, 0, 0, IR_TIMER_CLOCK, 0, 0);
  CHECK(ir_op3(f, IR_OP_TIMER, 0, 0, 0, 0, IR_TIMER_CLOCK, 0, 0) != c1);
  IrRef sh = ir_op3(f, IR_OP_SHFL, 0, c32(-1), x, c32(1), IR_SHFL_BFLY, 0, 0);
  CHECK(ir_op3(f, IR_OP_SHFL, 0, c32(-1), x, c32(1), IR_SHFL_BFLY, 0, 0) != sh);
  /* a value computed before a region is reused inside it */
  IrRef cond = ir_op3(f, IR_OP_ICMP, 0, x, y, 0, IR_ICMP_SLT, 0, 0);
  ir_if_begin(f, cond);
  CHECK_EQ_INT(op2(IR_OP_ADD, x, y), s);
  IrRef inner = op2(IR_OP_MUL, x, y);
  CHECK_EQ_INT(op2(IR_OP_MUL, y, x), inner);
  ir_else_begin(f);
  IrRef other = op2(IR_OP_MUL, x, y); /* not the then-branch's */
  CHECK(other != inner);
  ir_region_end(f);
  IrRef after = op2(IR_OP_MUL, x, y); /* neither branch's value dominates here */
  CHECK(after != inner && after != other);
  CHECK_EQ_INT(op2(IR_OP_MUL, x, y), after);
  /* loops: a value made in the body is not reused after the loop */
  IrRef iv = ir_for_begin(f, c32(0), x, c32(1), 0);
  IrRef body = op2(IR_OP_SHL, x, c32(3));
  CHECK_EQ_INT(op2(IR_OP_SHL, x, c32(3)), body);
  IrRef uses_iv = op2(IR_OP_ADD, iv, x);
  CHECK(uses_iv != s);
  ir_region_end(f);
  IrRef later = op2(IR_OP_SHL, x, c32(3));
  CHECK(later != body);
  /* while: the condition region's values are visible in the body */
  ir_while_begin(f);
  IrRef wv = op2(IR_OP_OR, x, c32(5));
  ir_while_cond(f, ir_op3(f, IR_OP_ICMP, 0, wv, y, 0, IR_ICMP_ULT, 0, 0));
  CHECK_EQ_INT(op2(IR_OP_OR, x, c32(5)), wv);
  ir_break(f);
  ir_region_end(f);
  CHECK(op2(IR_OP_OR, x, c32(5)) != wv);
  CHECK_EQ_INT(ir_diag_count(m), 0);
  CHECK_EQ_INT(ir_verify(m), 0);
  /* constants are interned in the prologue: the same constant is one value anywhere */
  ir_if_begin(f, cond);
  IrRef k7 = c32(7);
  ir_region_end(f);
  CHECK_EQ_INT(c32(7), k7);
}

static void test_raw(void) {
  fresh(0);
  IrRef x = ir_param(f, IR_T_I32);
  IrRef two = c32(2), three = c32(3);
  IrRef a = op2(IR_OP_ADD, two, three);
  CHECK_EQ_INT(ir_inst_op(f, a), IR_OP_ADD);    /* not folded */
  CHECK(op2(IR_OP_ADD, two, three) != a); /* not reused */
  CHECK(op2(IR_OP_ADD, x, c32(0)) != x);
  CHECK_EQ_INT(c32(2), c32(2)); /* constants stay interned */
  ClBuf b = {0};
  ir_print_func(f, &b, 0);
  CHECK_CONTAINS(cl_buf_str(&b), "%4 = add %2, %3 : i32\n  %5 = add %2, %3 : i32");
  cl_buf_free(&b);
  CHECK_EQ_INT(ir_verify(m), 0);
}

int main(void) {
  test_int_grid();
  test_identities();
  test_floats();
  test_conversions();
  test_cse();
  test_raw();
  ir_module_free(m);
  return check_report();
}
