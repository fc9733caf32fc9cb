/* test_ir_types: interned types (equality is id equality), the printed form
 * read back by the parser for a whole domain of types, sizes and alignments,
 * the errors for types that cannot exist, and the small float encodings
 * (f16, bf16, fp8, tf32) the folder and the emitter use, checked over every
 * bit pattern. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ir_impl.h"

static void test_scalars(IrModule *m) {
  static const struct {
    IrType t;
    const char *name;
    int size;
  } s[] = {{IR_T_I1, "i1", 1}, {IR_T_I8, "i8", 1}, {IR_T_I16, "i16", 2}, {IR_T_I32, "i32", 4},
           {IR_T_I64, "i64", 8}, {IR_T_F16, "f16", 2}, {IR_T_BF16, "bf16", 2}, {IR_T_TF32, "tf32", 4},
           {IR_T_F32, "f32", 4}, {IR_T_F64, "f64", 8}, {IR_T_E4M3, "e4m3", 1}, {IR_T_E5M2, "e5m2", 1}};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
    CHECK_STR(ir_type_name(m, s[i].t), s[i].name);
    CHECK_EQ_INT(ir_type_parse(m, s[i].name), s[i].t);
    IrTypeInfo info;
    CHECK_EQ_INT(ir_type_info(m, s[i].t, &info), 0);
    CHECK_EQ_INT(info.size, s[i].size);
    CHECK_EQ_INT(info.natural, s[i].size);
    CHECK_EQ_INT(info.len, 0);
  }
  CHECK_STR(ir_type_name(m, IR_T_VOID), "void");
  CHECK(ir_type_is_arith_float(m, IR_T_F16) && !ir_type_is_arith_float(m, IR_T_BF16));
}

/* Every combination of a set of elements with vectors, pointers (all spaces,
   several alignments), structs and arrays: made twice gives the same id;
   printed and parsed gives the same id. */
static void test_roundtrip(IrModule *m) {
  IrType elems[] = {IR_T_I1, IR_T_I8, IR_T_I32, IR_T_I64, IR_T_F16, IR_T_BF16, IR_T_F32, IR_T_F64, IR_T_E4M3};
  int n = 0, bad = 0;
  IrType made[4096];
  for (size_t e = 0; e < sizeof elems / sizeof *elems; e++) {
    IrType t = elems[e];
    made[n++] = t;
    for (int len = 2; len <= 16; len *= 2) made[n++] = ir_type_vec(m, t, len);
    for (int sp = 0; sp < IR_SPACE__COUNT; sp++)
      for (int al = 1; al <= 256; al *= 4) made[n++] = ir_type_ptr(m, t, sp, al);
    IrType two[2] = {t, IR_T_F32};
    made[n++] = ir_type_struct(m, two, 2);
    made[n++] = ir_type_array(m, t, 128);
  }
  /* nested: pointers to vectors, structs of pointers and vectors, {128 x f32} */
  IrType v4 = ir_type_vec(m, IR_T_F32, 4);
  IrType pv4 = ir_type_ptr(m, v4, IR_SPACE_GLOBAL, 16);
  made[n++] = pv4;
  made[n++] = ir_type_ptr(m, pv4, IR_SPACE_GENERIC, 8);
  IrType mix[3] = {v4, ir_type_ptr(m, IR_T_I8, IR_SPACE_SHARED, 128), IR_T_I64};
  made[n++] = ir_type_struct(m, mix, 3);
  IrType acc[128];
  for (int i = 0; i < 128; i++) acc[i] = IR_T_F32;
  made[n++] = ir_type_struct(m, acc, 128);
  for (int i = 0; i < n; i++) {
    CHECK(made[i] != IR_NONE);
    const char *name = ir_type_name(m, made[i]);
    IrType back = ir_type_parse(m, name);
    if (back != made[i]) {
      fprintf(stderr, "roundtrip: %s -> %u, made %u\n", name, back, made[i]);
      bad++;
    }
    for (int j = 0; j < i; j++) /* distinct types, distinct ids (made[] has no repeats) */
      if (made[j] == made[i]) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  /* the same construction again: the same ids, no new records */
  int count = ir_type_count(m);
  CHECK_EQ_INT(ir_type_vec(m, IR_T_F32, 4), v4);
  CHECK_EQ_INT(ir_type_struct(m, acc, 128), made[n - 1]);
  CHECK_EQ_INT(ir_type_count(m), count);
  /* printed forms, and whitespace that the parser forgives */
  CHECK_STR(ir_type_name(m, made[n - 1]), "{128 x f32}");
  CHECK_STR(ir_type_name(m, made[n - 2]), "{<4 x f32>, ptr<i8, shared, 128>, i64}");
  CHECK_EQ_INT(ir_type_parse(m, "  ptr< <4 x f32> ,global,16 > "), ir_type_ptr(m, v4, IR_SPACE_GLOBAL, 16));
  CHECK_EQ_INT(ir_type_parse(m, "{f32, f32}"), ir_type_parse(m, "{2 x f32}"));
  /* a pointer with no alignment gets its element's natural one */
  CHECK_EQ_INT(ir_type_parse(m, "ptr<f64, local>"), ir_type_ptr(m, IR_T_F64, IR_SPACE_LOCAL, 8));
}

static void test_layout(IrModule *m) {
  IrTypeInfo info;
  IrType s[3] = {IR_T_I8, IR_T_F64, IR_T_I16};
  ir_type_info(m, ir_type_struct(m, s, 3), &info); /* C layout: 0, 8, 16; size 24 */
  CHECK_EQ_INT(info.size, 24);
  CHECK_EQ_INT(info.natural, 8);
  CHECK_EQ_INT(info.len, 3);
  ir_type_info(m, ir_type_vec(m, IR_T_F16, 8), &info);
  CHECK_EQ_INT(info.size, 16);
  CHECK_EQ_INT(info.natural, 16);
  ir_type_info(m, ir_type_ptr(m, IR_T_F32, IR_SPACE_SHARED_CLUSTER, 4), &info);
  CHECK_EQ_INT(info.size, 4);
  CHECK_EQ_INT(info.space, IR_SPACE_SHARED_CLUSTER);
  ir_type_info(m, ir_type_array(m, IR_T_I8, 128), &info);
  CHECK_EQ_INT(info.size, 128);
  CHECK_EQ_INT(info.kind, IR_TK_ARRAY);
}

static void expect_error(IrModule *m, IrType got, const char *msg) {
  CHECK_EQ_INT(got, IR_NONE);
  CHECK_CONTAINS(ir_diag(m), msg);
  ir_diag_clear(m);
}

static void test_errors(IrModule *m) {
  expect_error(m, ir_type_vec(m, IR_T_F32, 3), "power of two from 2 to 64");
  expect_error(m, ir_type_vec(m, ir_type_struct(m, (IrType[]){IR_T_F32}, 1), 2), "vector of '{1 x f32}'");
  expect_error(m, ir_type_ptr(m, IR_T_F32, IR_SPACE_GLOBAL, 3), "alignment 3 is not a power of two");
  expect_error(m, ir_type_ptr(m, IR_T_VOID, IR_SPACE_GLOBAL, 4), "use i8 for bytes");
  expect_error(m, ir_type_struct(m, NULL, 0), "struct of 0 fields");
  expect_error(m, ir_type_parse(m, "f31"), "bad type 'f31': unknown type name");
  expect_error(m, ir_type_parse(m, "ptr<f32, nowhere, 4>"), "unknown address space");
  expect_error(m, ir_type_parse(m, "<4 x f32"), "expected <N x T>");
  expect_error(m, ir_type_parse(m, "f32 f32"), "unexpected text after the type at column 5");
}

/* --- small float encodings ------------------------------------------------------------------------------------- */
static int is_nan_f16(uint16_t h) { return ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff); }

static void test_minifloats(void) {
  /* every f16 and bf16 pattern decodes and encodes back to itself (NaNs to NaN) */
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double d = ir_f16_to_double((uint16_t)h);
    if (is_nan_f16((uint16_t)h) ? !isnan(d) : ir_f16_from_double(d) != h) bad++;
    double b = ir_bf16_to_double((uint16_t)h);
    int bnan = ((h >> 7) & 0xff) == 0xff && (h & 0x7f);
    if (bnan ? !isnan(b) : ir_bf16_from_double(b) != h) bad++;
    /* bf16 is the top half of an f32 */
    uint32_t u = h << 16;
    float fv;
    memcpy(&fv, &u, 4);
    if (!bnan && (double)fv != b) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  /* rounding to nearest, ties to even, at the midpoint between neighbours */
  for (uint32_t h = 0; h < 0x7bff; h++) {
    double lo = ir_f16_to_double((uint16_t)h), hi = ir_f16_to_double((uint16_t)(h + 1));
    uint16_t mid = ir_f16_from_double((lo + hi) / 2);
    if (mid != ((h & 1) ? h + 1 : h)) bad++;
    if (ir_f16_from_double(lo + (hi - lo) * 0.25) != h || ir_f16_from_double(lo + (hi - lo) * 0.75) != h + 1) bad++;
  }
  CHECK_EQ_INT(bad, 0);
#ifdef __FLT16_MAX__
  /* against the compiler's own conversion, over a spread of doubles */
  for (int i = -300; i <= 300; i++)
    for (int j = 0; j < 64; j++) {
      double d = ldexp(1.0 + j / 64.0 + j * 1e-9, i / 10) * (i & 1 ? -1 : 1);
      _Float16 x = (_Float16)d;
      uint16_t hb;
      memcpy(&hb, &x, 2);
      if (ir_f16_from_double(d) != hb) bad++;
    }
  CHECK_EQ_INT(bad, 0);
#endif
  CHECK_EQ_INT(ir_f16_from_double(1.0), 0x3c00);
  CHECK_EQ_INT(ir_f16_from_double(65504.0), 0x7bff);
  CHECK_EQ_INT(ir_f16_from_double(65520.0), 0x7c00); /* rounds to infinity */
  CHECK_EQ_INT(ir_f16_from_double(ldexp(1, -24)), 0x0001);
  CHECK_EQ_INT(ir_f16_from_double(ldexp(1, -26)), 0x0000);
  CHECK_EQ_INT(ir_f16_from_double(-0.0), 0x8000);
  CHECK_EQ_INT(ir_bf16_from_double(1.0), 0x3f80);
  CHECK_EQ_INT(ir_bf16_from_double(-2.0), 0xc000);
  /* fp8: every pattern round trips; out of range saturates (PTX .satfinite) */
  for (int b = 0; b < 256; b++) {
    double e4 = ir_fp8_to_double((uint8_t)b, 0), e5 = ir_fp8_to_double((uint8_t)b, 1);
    if (!isnan(e4) && ir_fp8_from_double(e4, 0) != b) bad++;
    if (!isnan(e5) && !isinf(e5) && ir_fp8_from_double(e5, 1) != b) bad++;
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(ir_fp8_from_double(1.0, 0), 0x38);
  CHECK_EQ_INT(ir_fp8_from_double(1.0, 1), 0x3c);
  CHECK(ir_fp8_to_double(0x7e, 0) == 448.0);
  CHECK_EQ_INT(ir_fp8_from_double(1e6, 0), 0x7e);
  CHECK_EQ_INT(ir_fp8_from_double(-1e6, 0), 0xfe);
  CHECK_EQ_INT(ir_fp8_from_double(1e6, 1), 0x7b);
  CHECK(ir_fp8_to_double(0x7b, 1) == 57344.0);
  CHECK_EQ_INT(ir_fp8_from_double(INFINITY, 0), 0x7e);
  CHECK(isnan(ir_fp8_to_double(ir_fp8_from_double(NAN, 0), 0)));
  CHECK(ir_fp8_to_double(0x01, 0) == ldexp(1, -9)); /* the smallest e4m3 subnormal */
  /* payloads: each rounded to its type */
  double x = 1.0 + ldexp(1, -12) + ldexp(1, -30);
  CHECK(ir_bits_float(IR_T_F32, ir_float_bits(IR_T_F32, x)) == (double)(float)x);
  CHECK(ir_bits_float(IR_T_TF32, ir_float_bits(IR_T_TF32, 1.0 + ldexp(1, -11))) == 1.0 + ldexp(1, -10)); /* rna */
  CHECK(ir_bits_float(IR_T_F16, ir_float_bits(IR_T_F16, 1e5)) == INFINITY);
  CHECK_EQ_INT(ir_int_wrap(8, 200), -56);
  CHECK_EQ_INT(ir_int_wrap(1, 3), 1);
  CHECK_EQ_INT(ir_int_wrap(16, -1), -1);
  CHECK_EQ_INT(ir_int_wrap(32, 0x80000000ll), INT32_MIN);
}

int main(void) {
  IrModule *m = ir_module_new();
  test_scalars(m);
  test_roundtrip(m);
  test_layout(m);
  test_errors(m);
  ir_module_free(m);
  test_minifloats();
  return check_report();
}
