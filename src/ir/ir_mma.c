/* ir_mma.c: the mma.sync shapes and types that exist (sm_75 to sm_90), and the
 * register fragments each one takes.
 *
 * One row per (shape, A, B, C, D) combination with the lowest sm that has it,
 * from the PTX ISA's mma.sync tables (row.col layouts only), and the target
 * feature (src/target) that gates it: MMA_SYNC for the sm_75 and sm_80
 * rows (every target has them), FP8 for sm_89's, MMA_F64_M16 for sm_90's. Fragment sizes are
 * not tabled: per thread, A holds M*K/32 elements, B K*N/32, C and D M*N/32,
 * packed into 32-bit registers (f64 elements take one f64 register each; f16
 * accumulators are packed in pairs). The verifier's error for a combination
 * that does not exist lists the ones that do. */
#include "ir_impl.h"

typedef struct MmaRow {
  unsigned char shape, a, b, c, d, sm;
  signed char feat;
} MmaRow;

#define MMA_FEAT_75 CL_FEAT_MMA_SYNC
#define MMA_FEAT_80 CL_FEAT_MMA_SYNC
#define MMA_FEAT_89 CL_FEAT_FP8
#define MMA_FEAT_90 CL_FEAT_MMA_F64_M16
#define R(s, a, b, c, d, sm) {IR_MMA_##s, IR_MT_##a, IR_MT_##b, IR_MT_##c, IR_MT_##d, sm, MMA_FEAT_##sm},
/* Four rows for the A/B type pairs of an integer or fp8 family. */
#define PAIRS(s, x, y, acc, sm) R(s, x, x, acc, acc, sm) R(s, x, y, acc, acc, sm) R(s, y, x, acc, acc, sm) R(s, y, y, acc, acc, sm)
/* Four rows for the C/D pairs of f16 inputs. */
#define F16ACC(s, sm) R(s, F16, F16, F16, F16, sm) R(s, F16, F16, F32, F32, sm) R(s, F16, F16, F16, F32, sm) R(s, F16, F16, F32, F16, sm)

static const MmaRow rows[] = {
    /* shape     A      B      C      D      sm */
    F16ACC(M16N8K8, 75)
    F16ACC(M16N8K16, 80)
    R(M16N8K8, BF16, BF16, F32, F32, 80)
    R(M16N8K16, BF16, BF16, F32, F32, 80)
    R(M16N8K4, TF32, TF32, F32, F32, 80)
    R(M16N8K8, TF32, TF32, F32, F32, 80)
    R(M8N8K4, F64, F64, F64, F64, 80)
    R(M16N8K4, F64, F64, F64, F64, 90)
    R(M16N8K8, F64, F64, F64, F64, 90)
    R(M16N8K16, F64, F64, F64, F64, 90)
    PAIRS(M8N8K16, S8, U8, S32, 75)
    PAIRS(M16N8K16, S8, U8, S32, 80)
    PAIRS(M16N8K32, S8, U8, S32, 80)
    PAIRS(M8N8K32, S4, U4, S32, 75)
    PAIRS(M16N8K32, S4, U4, S32, 80)
    PAIRS(M16N8K64, S4, U4, S32, 80)
    R(M8N8K128, B1, B1, S32, S32, 80)
    R(M16N8K128, B1, B1, S32, S32, 80)
    R(M16N8K256, B1, B1, S32, S32, 80)
    PAIRS(M16N8K32, E4M3, E5M2, F32, 89)
};
#undef R
#undef PAIRS
#undef F16ACC

static int frag_regs(int elems, int type, IrType *reg, int packed_acc) {
  int bits = ir_mma_type_bits[type];
  if (type == IR_MT_F64) {
    *reg = IR_T_F64;
    return elems;
  }
  if (type == IR_MT_F32 && packed_acc) {
    *reg = IR_T_F32;
    return elems;
  }
  *reg = IR_T_I32;
  return elems * bits / 32;
}

int ir_mma_lookup(int shape, int ta, int tb, int tc, int td, IrMmaFrag *out) {
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    const MmaRow *r = &rows[i];
    if (r->shape != shape || r->a != ta || r->b != tb || r->c != tc || r->d != td) continue;
    int m, n, k;
    ir_mma_shape_mnk(shape, &m, &n, &k);
    if (out) {
      out->a_regs = frag_regs(m * k / 32, ta, &out->ab_reg, 0);
      out->b_regs = frag_regs(k * n / 32, tb, &out->ab_reg, 0);
      out->c_regs = frag_regs(m * n / 32, tc, &out->c_reg, 1);
      out->d_regs = frag_regs(m * n / 32, td, &out->d_reg, 1);
      out->sm = r->sm;
      out->feat = r->feat;
    }
    return 1;
  }
  return 0;
}

void ir_mma_list(ClBuf *out, int shape, const ClTarget *t) {
  int n = 0;
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    const MmaRow *r = &rows[i];
    if (shape >= 0 && r->shape != shape) continue;
    if (t && !cl_target_has(t, (ClFeature)r->feat)) continue;
    cl_buf_printf(out, "%s%s %s.%s.%s.%s (sm_%d)", n++ ? ", " : "", ir_imm_name('M', r->shape),
                  ir_mma_type_names[r->d], ir_mma_type_names[r->a], ir_mma_type_names[r->b],
                  ir_mma_type_names[r->c], r->sm);
  }
  if (!n) cl_buf_puts(out, "none");
}
