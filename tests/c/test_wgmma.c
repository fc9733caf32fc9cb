/* test_wgmma: the wgmma forms table (src/ir/ir_wgmma.c: exactly the forms
 * of the PTX ISA, the accumulator registers of each) and ptxas's
 * serialization notes made errors (src/nvvm/nv_ptxas_diag.c: each code of
 * its table, a "serialized" line of another code, notes that are not
 * errors, logs without any). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ir_impl.h"
#include "nv_internal.h"

static void test_forms(void) {
  IrWgmmaForm f;
  const char *why = NULL;
  int count = 0;
  /* every (A, B, D, N) of the IR's mma types: exactly the ISA's forms exist */
  for (int a = 0; a < IR_MT__COUNT; a++)
    for (int b = 0; b < IR_MT__COUNT; b++)
      for (int d = 0; d < IR_MT__COUNT; d++)
        for (int n = 1; n <= 264; n++) {
          if (!ir_wgmma_form(a, b, d, n, &f, &why)) {
            CHECK(why != NULL && why[0] != 0);
            continue;
          }
          count++;
          int f16in = (a == IR_MT_F16 && b == a && (d == IR_MT_F32 || d == IR_MT_F16));
          int bf16in = (a == IR_MT_BF16 && b == a && d == IR_MT_F32);
          int tf32in = (a == IR_MT_TF32 && b == a && d == IR_MT_F32);
          int f8 = (a == IR_MT_E4M3 || a == IR_MT_E5M2) && (b == IR_MT_E4M3 || b == IR_MT_E5M2) &&
                   (d == IR_MT_F32 || d == IR_MT_F16);
          int i8 = (a == IR_MT_S8 || a == IR_MT_U8) && (b == IR_MT_S8 || b == IR_MT_U8) && d == IR_MT_S32;
          CHECK_AT(f16in || bf16in || tf32in || f8 || i8, "form %d %d %d n%d should not exist", a, b, d, n);
          CHECK(n % 8 == 0 && n >= 8 && n <= 256);
          if (i8) CHECK_AT(n <= 32 || n % 16 == 0, "s8/u8 n%d", n);
          CHECK_EQ_INT(f.k, f16in || bf16in ? 16 : tf32in ? 8 : 32);
          CHECK_EQ_INT(f.d_regs, d == IR_MT_F16 ? n / 4 : n / 2);
          CHECK(f.d_reg == (d == IR_MT_F32 ? IR_T_F32 : IR_T_I32));
          CHECK_EQ_INT(f.mn_major, f16in || bf16in);
          CHECK_EQ_INT(f.integer, i8);
        }
  /* f16: 2 accumulators x 32 N; bf16, tf32: 32; fp8: 4 pairs x 2 x 32; int8: 4 pairs x 18 */
  CHECK_EQ_INT(count, 64 + 32 + 32 + 256 + 72);
  CHECK(!ir_wgmma_form(IR_MT_BF16, IR_MT_BF16, IR_MT_F16, 64, NULL, &why));
  CHECK_STR(why, "bf16 inputs accumulate in f32 only");
  CHECK(!ir_wgmma_form(IR_MT_S8, IR_MT_U8, IR_MT_S32, 40, NULL, &why));
  CHECK_STR(why, "N is 8, 16, 24, 32 or 48..256 step 16 for 8-bit integers");
}

static const char log_ok[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : (C7519) warpgroup.arrive is injected in around line 181 by compiler to allow use of "
    "registers in GMMA in function 'k'\n"
    "ptxas info    : Used 154 registers, used 0 barriers\n";

static void expect(const char *log, int fails, const char *code, const char *advice) {
  NvResult r = {0};
  static const char ptx[] = ".version 9.0\n.target sm_90a\n";
  int st = nv_ptxas_diag(&r, log, ptx, sizeof ptx - 1);
  CHECK_EQ_INT(st, fails ? -1 : 0);
  const char *diag = cl_buf_str(&r.part[NV_PART_DIAG]);
  if (fails) {
    CHECK_CONTAINS(diag, "ptxas serialized wgmma.mma_async");
    CHECK_CONTAINS(diag, code);
    CHECK_CONTAINS(diag, advice);
  } else {
    CHECK_EQ_INT((int)strlen(diag), 0);
  }
  nv_result_free(&r);
}

static void test_ptxas_notes(void) {
  expect(log_ok, 0, NULL, NULL);
  expect("", 0, NULL, NULL);
  expect(NULL, 0, NULL, NULL);
  char log[1024];
  static const char *const cases[][2] = {
      {"(C7509) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of "
       "Extern calls in the function 'k'", "inline it"},
      {"(C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient "
       "register resources for the wgmma pipeline in the function 'k'", "do not touch the accumulator"},
      {"(C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma "
       "instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in "
       "the function 'k'", "read it only after the wait"},
      {"(C7599) Potential Performance Loss: wgmma.mma_async instructions are serialized due to ill formed "
       "pipeline stage in the function 'k'", "see ptxas's note below"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(log, sizeof log, "%sptxas info    : %s\n", log_ok, cases[i][0]);
    char code[8];
    memcpy(code, cases[i][0] + 1, 5);
    code[5] = 0;
    expect(log, 1, code, cases[i][1]);
  }
  /* a log whose last line has no newline */
  expect("ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized", 1,
         "C7514", "read it only after the wait");
}

int main(void) {
  test_forms();
  test_ptxas_notes();
  return check_report();
}
