/* ir_wgmma.c: the wgmma.mma_async forms that exist on sm_90a (M = 64 always),
 * and the accumulator registers each one takes.
 *
 * From the PTX ISA's wgmma.mma_async tables, every form compiled by ptxas
 * 13.0 (and the others refused): f16 x f16 -> f32 or f16 (k16), bf16 x bf16 ->
 * f32 (k16), tf32 x tf32 -> f32 (k8), e4m3/e5m2 x e4m3/e5m2 -> f32 or f16
 * (k32), s8/u8 x s8/u8 -> s32 (k32); N = 8..256 step 8, except for the
 * 8-bit integers: 8, 16, 24, 32, then 48..256 step 16. Only 16-bit inputs
 * may be MN-major in shared memory. Per thread of the warpgroup, the
 * accumulator is 64*N/128 = N/2 values: N/2 f32 or s32 registers, or N/4
 * 32-bit registers each holding two f16. */
#include "ir_impl.h"

static int is8f(int t) { return t == IR_MT_E4M3 || t == IR_MT_E5M2; }
static int is8i(int t) { return t == IR_MT_S8 || t == IR_MT_U8; }

const char *ir_wgmma_forms(void) {
  return "wgmma.mma_async forms (m64nNkK): f16 x f16 -> f32 or f16 (k16), bf16 x bf16 -> f32 (k16), "
         "tf32 x tf32 -> f32 (k8), e4m3/e5m2 x e4m3/e5m2 -> f32 or f16 (k32), s8/u8 x s8/u8 -> s32 (k32); "
         "N = 8..256 step 8 (s8/u8: 8, 16, 24, 32, 48..256 step 16); only f16 and bf16 inputs may be MN-major";
}

int ir_wgmma_form(int ta, int tb, int td, int n, IrWgmmaForm *out, const char **why) {
  IrWgmmaForm f = {0, 0, IR_T_F32, 0, 0};
  const char *no = NULL;
  if (ta == IR_MT_F16 || ta == IR_MT_BF16) {
    f.k = 16;
    f.mn_major = 1;
    if (tb != ta) no = "16-bit inputs are f16 x f16 or bf16 x bf16";
    else if (td != IR_MT_F32 && !(ta == IR_MT_F16 && td == IR_MT_F16))
      no = ta == IR_MT_F16 ? "f16 inputs accumulate in f32 or f16" : "bf16 inputs accumulate in f32 only";
  } else if (ta == IR_MT_TF32) {
    f.k = 8;
    if (tb != IR_MT_TF32) no = "tf32 inputs are tf32 x tf32";
    else if (td != IR_MT_F32) no = "tf32 inputs accumulate in f32 only";
  } else if (is8f(ta)) {
    f.k = 32;
    if (!is8f(tb)) no = "fp8 inputs are e4m3 or e5m2 each";
    else if (td != IR_MT_F32 && td != IR_MT_F16) no = "fp8 inputs accumulate in f32 or f16";
  } else if (is8i(ta)) {
    f.k = 32;
    f.integer = 1;
    f.d_reg = IR_T_I32;
    if (!is8i(tb)) no = "8-bit integer inputs are s8 or u8 each";
    else if (td != IR_MT_S32) no = "8-bit integer inputs accumulate in s32 only";
  } else {
    no = "the input types are f16, bf16, tf32, e4m3, e5m2, s8 and u8";
  }
  if (!no) {
    int ok = n >= 8 && n <= 256 && n % 8 == 0;
    if (ok && f.integer) ok = n <= 32 || n % 16 == 0;
    if (!ok) no = f.integer ? "N is 8, 16, 24, 32 or 48..256 step 16 for 8-bit integers" : "N is 8..256 step 8";
  }
  if (no) {
    if (why) *why = no;
    return 0;
  }
  if (td == IR_MT_F16) {
    f.d_regs = n / 4;
    f.d_reg = IR_T_I32;
  } else {
    f.d_regs = n / 2;
  }
  if (out) *out = f;
  return 1;
}
