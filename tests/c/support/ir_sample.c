/* ir_sample.c: sample kernels built through the public builder API, as the
 * tracer would build them, for the C tests (test support, not part of
 * libcutelua; the Lua tests build the same kernels with cute.ir:
 * tests/spec/ir/samples.lua).
 *
 * Both return NULL (with the module's diagnostics) if anything fails. */
#include <stdio.h>

#include "ir_impl.h"
#include "ir_sample.h"

#define CHECK_REF(x)        \
  do {                      \
    if (!(x)) return NULL;  \
  } while (0)

IrFunc *ir_sample_saxpy(IrModule *m) {
  ir_set_loc(m, "saxpy.lua", 1, "saxpy");
  IrFunc *f = ir_func_new(m, "saxpy", IR_FUNC_KERNEL, IR_T_VOID);
  CHECK_REF(f);
  IrType gp = ir_type_ptr(m, IR_T_F32, IR_SPACE_GLOBAL, 4);
  IrRef a = ir_param(f, IR_T_F32), x = ir_param(f, gp), y = ir_param(f, gp), n = ir_param(f, IR_T_I32);
  CHECK_REF(a && x && y && n);
  ir_func_attr(f, IR_ATTR_MAXNTID, 256, 1, 1);
  ir_set_loc(m, "saxpy.lua", 2, "saxpy");
  IrRef tid = ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_TID_X, 0, 0);
  IrRef bid = ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_CTAID_X, 0, 0);
  IrRef bdim = ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_NTID_X, 0, 0);
  IrRef i = ir_op3(f, IR_OP_ADD, 0, ir_op3(f, IR_OP_MUL, 0, bid, bdim, 0, 0, 0, 0), tid, 0, 0, 0, 0);
  ir_set_loc(m, "saxpy.lua", 3, "saxpy");
  IrRef c = ir_op3(f, IR_OP_ICMP, 0, i, n, 0, IR_ICMP_SLT, 0, 0);
  CHECK_REF(c);
  if (ir_if_begin(f, c) < 0) return NULL;
  ir_set_loc(m, "saxpy.lua", 4, "saxpy");
  IrRef px = ir_op3(f, IR_OP_GEP, 0, x, i, 0, 0, 0, 0);
  IrRef py = ir_op3(f, IR_OP_GEP, 0, y, i, 0, 0, 0, 0);
  IrRef xv = ir_op3(f, IR_OP_LOAD, 0, px, 0, 0, 0, 0, 0);
  IrRef yv = ir_op3(f, IR_OP_LOAD, 0, py, 0, 0, 0, 0, 0);
  IrRef r = ir_op3(f, IR_OP_FMA, 0, a, xv, yv, 0, 0, 0);
  CHECK_REF(ir_op3(f, IR_OP_STORE, 0, py, r, 0, 0, 0, 0));
  if (ir_region_end(f) < 0) return NULL;
  ir_set_loc(m, NULL, 0, NULL);
  return ir_diag_count(m) ? NULL : f;
}

IrFunc *ir_sample_mma_unrolled(IrModule *m, int n_mma, int n_ldm) {
  if (n_mma < 1 || n_ldm < 2) {
    ir_merror(m, "sample: at least 1 mma and 2 ldmatrix");
    return NULL;
  }
  char name[64];
  snprintf(name, sizeof name, "mma_tile_%d_%d", n_mma, n_ldm);
  ir_set_loc(m, "mma_tile.lua", 1, "mma_tile");
  IrFunc *f = ir_func_new(m, name, IR_FUNC_KERNEL, IR_T_VOID);
  CHECK_REF(f);
  IrType outp = ir_type_ptr(m, IR_T_F32, IR_SPACE_GLOBAL, 16);
  IrType sp128 = ir_type_ptr(m, IR_T_I8, IR_SPACE_SHARED, 128);
  IrType sp16 = ir_type_ptr(m, IR_T_I8, IR_SPACE_SHARED, 16);
  IrType f32x4 = ir_type_vec(m, IR_T_F32, 4);
  IrType b2[2] = {IR_T_I32, IR_T_I32};
  IrType bfrag = ir_type_struct(m, b2, 2);
  IrType c4[4] = {IR_T_F32, IR_T_F32, IR_T_F32, IR_T_F32};
  IrType cfrag = ir_type_struct(m, c4, 4);
  IrRef out = ir_param(f, outp);
  CHECK_REF(out && f32x4 && bfrag && cfrag);
  ir_func_attr(f, IR_ATTR_MAXNTID, 32, 1, 1);
  int smem_bytes = n_ldm * 512 > 1024 ? n_ldm * 512 : 1024;
  if (smem_bytes > 48 * 1024) smem_bytes = 48 * 1024;
  int64_t simm[2] = {smem_bytes, 128};
  IrRef smem = ir_op(f, IR_OP_SMEM, sp128, NULL, 0, simm, 2);
  ir_set_loc(m, "mma_tile.lua", 2, "mma_tile");
  IrRef lane = ir_op3(f, IR_OP_SREG, 0, 0, 0, 0, IR_SREG_LANEID, 0, 0);
  IrRef lane16 = ir_op3(f, IR_OP_MUL, 0, lane, ir_const_int(f, IR_T_I32, 16), 0, 0, 0, 0);
  CHECK_REF(smem && lane16);
  /* the fragments: n_ldm ldmatrix.x4 from shared memory */
  IrRef frag[1024];
  if (n_ldm > 1024) n_ldm = 1024;
  for (int i = 0; i < n_ldm; i++) {
    ir_set_loc(m, "mma_tile.lua", 10, "load_fragments");
    int off = (i * 512) % smem_bytes;
    IrRef o = ir_op3(f, IR_OP_ADD, 0, lane16, ir_const_int(f, IR_T_I32, off), 0, 0, 0, 0);
    IrRef p = ir_op3(f, IR_OP_GEP, sp16, smem, o, 0, 0, 0, 0);
    frag[i] = ir_op3(f, IR_OP_LDMATRIX, 0, p, 0, 0, 4, 0, 0);
    CHECK_REF(frag[i]);
  }
  /* the accumulators: 16 m16n8 tiles of f32, zero to start */
  enum { NACC = 16 };
  IrRef acc[NACC];
  IrRef zero = ir_const_float(f, IR_T_F32, 0.0);
  IrRef zargs[4] = {zero, zero, zero, zero};
  for (int k = 0; k < NACC; k++) acc[k] = ir_op(f, IR_OP_PACK, cfrag, zargs, 4, NULL, 0);
  for (int j = 0; j < n_mma; j++) {
    ir_set_loc(m, "mma_tile.lua", 20, "mainloop");
    IrRef a = frag[j % n_ldm];
    IrRef bsrc = frag[(j + 1) % n_ldm];
    IrRef b0 = ir_op3(f, IR_OP_EXTRACT, 0, bsrc, 0, 0, (j / n_ldm) % 2 * 2, 0, 0);
    IrRef b1 = ir_op3(f, IR_OP_EXTRACT, 0, bsrc, 0, 0, (j / n_ldm) % 2 * 2 + 1, 0, 0);
    IrRef bargs[2] = {b0, b1};
    IrRef b = ir_op(f, IR_OP_PACK, bfrag, bargs, 2, NULL, 0);
    int64_t mimm[6] = {IR_MMA_M16N8K16, IR_MT_F16, IR_MT_F16, IR_MT_F32, IR_MT_F32, 0};
    IrRef margs[3] = {a, b, acc[j % NACC]};
    acc[j % NACC] = ir_op(f, IR_OP_MMA, 0, margs, 3, mimm, 6);
    CHECK_REF(acc[j % NACC]);
  }
  /* store every accumulator as one st.global.v4 */
  ir_set_loc(m, "mma_tile.lua", 30, "epilogue");
  IrRef base = ir_op3(f, IR_OP_MUL, 0, lane, ir_const_int(f, IR_T_I32, NACC * 4), 0, 0, 0, 0);
  for (int k = 0; k < NACC; k++) {
    IrRef el[4];
    for (int q = 0; q < 4; q++) el[q] = ir_op3(f, IR_OP_EXTRACT, 0, acc[k], 0, 0, q, 0, 0);
    IrRef vec = ir_op(f, IR_OP_PACK, f32x4, el, 4, NULL, 0);
    IrRef idx = ir_op3(f, IR_OP_ADD, 0, base, ir_const_int(f, IR_T_I32, k * 4), 0, 0, 0, 0);
    IrRef p = ir_op3(f, IR_OP_GEP, outp, out, idx, 0, 0, 0, 0);
    ir_op3(f, IR_OP_STORE, 0, p, vec, 0, 0, 0, 0);
  }
  ir_set_loc(m, NULL, 0, NULL);
  return ir_diag_count(m) ? NULL : f;
}
