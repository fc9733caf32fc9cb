/* test_ir_verify: every rule of the verifier has a case that breaks it, and the
 * message it reports is checked, with the op printed and its source location.
 * Modules are built raw (IR_OPT_CHECK off: the builder accepts anything) or,
 * for structure the builder never produces, with ir_append directly. Also:
 * every violation is reported (not just the first), and the builder, checking,
 * refuses the same ops at the call that makes them. */
#include <string.h>

#include "check.h"
#include "ir_impl.h"

static IrModule *m;
static IrFunc *k;
static IrRef pi, pj, pf, ph, pb, pd, pl, pg, pgi, ps, pgen, pv;

static IrRef c32(int64_t v) { return ir_const_int(k, IR_T_I32, v); }
static IrRef op(IrOp o, IrType t, IrRef a, IrRef b, IrRef c, int64_t i0, int64_t i1, int64_t i2) {
  return ir_op3(k, o, t, a, b, c, i0, i1, i2);
}
static IrType T(const char *s) { return ir_type_parse(m, s); }

/* A raw module with a kernel @k and parameters of many types. */
static void setup(const char *target) {
  if (m) ir_module_free(m);
  m = ir_module_new();
  ir_module_set(m, IR_OPT_CHECK, 0);
  ir_module_set_target(m, target);
  ir_set_loc(m, "v.lua", 7, "case");
  k = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  pi = ir_param(k, IR_T_I32);
  pj = ir_param(k, IR_T_I32);
  pf = ir_param(k, IR_T_F32);
  ph = ir_param(k, IR_T_F16);
  pb = ir_param(k, IR_T_BF16);
  pd = ir_param(k, IR_T_F64);
  pl = ir_param(k, IR_T_I64);
  pg = ir_param(k, T("ptr<f32, global, 4>"));
  pgi = ir_param(k, T("ptr<i32, global, 4>"));
  ps = ir_param(k, T("ptr<i32, shared, 4>"));
  pgen = ir_param(k, T("ptr<f32, generic, 4>"));
  pv = ir_param(k, T("<4 x f32>"));
  ir_set_loc(m, "v.lua", 12, "case");
}

typedef struct Case {
  const char *name;
  const char *target;
  void (*build)(void);
  const char *expect;
} Case;

/* --- structure and dominance -------------------------------------------------------------------------------- */
static void b_dominance(void) {
  ir_if_begin(k, ir_op3(k, IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_SLT, 0, 0));
  IrRef inner = op(IR_OP_ADD, 0, pi, pj, 0, 0, 0, 0);
  ir_region_end(k);
  op(IR_OP_MUL, 0, inner, pi, 0, 0, 0, 0);
}
static void b_dominance_else(void) {
  ir_if_begin(k, ir_op3(k, IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_SLT, 0, 0));
  IrRef inner = op(IR_OP_ADD, 0, pi, pj, 0, 0, 0, 0);
  ir_else_begin(k);
  op(IR_OP_MUL, 0, inner, pi, 0, 0, 0, 0);
  ir_region_end(k);
}
static void b_dominance_loop(void) {
  IrRef iv = ir_for_begin(k, c32(0), pi, c32(1), 0);
  ir_region_end(k);
  op(IR_OP_ADD, 0, iv, pi, 0, 0, 0, 0);
}
static void b_unreachable(void) {
  ir_for_begin(k, c32(0), pi, c32(1), 0);
  ir_break(k);
  op(IR_OP_ADD, 0, pi, pj, 0, 0, 0, 0);
  ir_region_end(k);
}
static void b_break_outside(void) { ir_break(k); }
static void b_continue_in_cond(void) {
  ir_while_begin(k);
  ir_continue(k);
  ir_while_cond(k, ir_op3(k, IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_SLT, 0, 0));
  ir_region_end(k);
}
static void b_unclosed(void) {
  ir_for_begin(k, c32(0), pi, c32(1), 0);
  ir_if_begin(k, ir_op3(k, IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_SLT, 0, 0));
}
static void b_stray_else(void) { ir_append(k, IR_OP_ELSE, IR_T_VOID, NULL, 0, NULL); }
static void b_stray_end(void) { ir_append(k, IR_OP_END, IR_T_VOID, NULL, 0, NULL); }
static void b_stray_cond(void) {
  IrRef c = ir_op3(k, IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_SLT, 0, 0);
  ir_append(k, IR_OP_WCOND, IR_T_VOID, &c, 1, NULL);
}
static void b_while_no_cond(void) {
  ir_append(k, IR_OP_WHILE, IR_T_VOID, NULL, 0, NULL);
  ir_append(k, IR_OP_END, IR_T_VOID, NULL, 0, NULL);
}
static void b_for_no_iv(void) {
  IrRef a[3] = {c32(0), pi, c32(1)};
  ir_append(k, IR_OP_FOR, IR_T_VOID, a, 3, NULL);
  ir_append(k, IR_OP_END, IR_T_VOID, NULL, 0, NULL);
}
static void b_iv_alone(void) { ir_append(k, IR_OP_IV, IR_T_I32, NULL, 0, NULL); }
static void b_falls_off(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_I32);
  IrRef x = ir_param(g, IR_T_I32);
  ir_if_begin(g, ir_op3(g, IR_OP_ICMP, 0, x, x, 0, IR_ICMP_EQ, 0, 0));
  ir_return(g, x);
  ir_region_end(g);
}
static void b_use_before_def(void) {
  IrRef args[2] = {pi, 0x7fff};
  ir_append(k, IR_OP_ADD, IR_T_I32, args, 2, NULL);
}
static void b_arity(void) { ir_append(k, IR_OP_ADD, IR_T_I32, &pi, 1, NULL); }
static void b_unknown_op(void) {
  IrRef v = ir_append(k, IR_OP_ADD, IR_T_I32, (IrRef[]){pi, pj}, 2, NULL);
  k->insts[v].op = 999;
}

/* --- immediates, result types, targets ---------------------------------------------------------------------- */
static void b_pred_range(void) { op(IR_OP_ICMP, 0, pi, pj, 0, 99, 0, 0); }
static void b_flags(void) { op(IR_OP_SQRT, 0, pf, 0, 0, IR_FLAG_TRANS, 0, 0); }
static void b_no_type(void) { op(IR_OP_BITCAST, 0, pi, 0, 0, 0, 0, 0); }
static void b_wrong_result(void) { op(IR_OP_ADD, IR_T_I64, pi, pj, 0, 0, 0, 0); }
static void b_var_missing(void) {
  int64_t imm[2] = {9, 0};
  ir_append(k, IR_OP_VLOAD, IR_T_I32, NULL, 0, imm);
}
static void b_string_missing(void) {
  int64_t imm[1] = {4000};
  ir_append(k, IR_OP_PRINTF, IR_T_VOID, NULL, 0, imm);
}
static void b_func_missing(void) { op(IR_OP_CALL, 0, 0, 0, 0, 77, 0, 0); }

/* --- per family --------------------------------------------------------------------------------------------- */
static void b_const(void) {
  int64_t v = 300;
  ir_append(k, IR_OP_CONST, IR_T_I8, NULL, 0, &v);
}
static void b_const_float(void) {
  double d = 1.0 + 1e-12;
  int64_t v;
  memcpy(&v, &d, 8);
  ir_append(k, IR_OP_CONST, IR_T_F32, NULL, 0, &v);
}
static void b_undef(void) { op(IR_OP_UNDEF, IR_T_VOID, 0, 0, 0, 0, 0, 0); }
static void b_blob_device(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_VOID);
  ir_param_blob(g, 128, 64);
}
static void b_param_struct(void) { ir_param(k, T("{f32, f32}")); }
static void b_smem_align(void) { op(IR_OP_SMEM, T("ptr<f32, shared, 16>"), 0, 0, 0, 256, 3, 0); }
static void b_smem_claims(void) { op(IR_OP_SMEM, T("ptr<f32, shared, 64>"), 0, 0, 0, 256, 16, 0); }
static void b_smem_global(void) { op(IR_OP_SMEM, T("ptr<f32, global, 16>"), 0, 0, 0, 256, 16, 0); }
static void b_smem_size(void) { op(IR_OP_SMEM, T("ptr<f32, shared, 16>"), 0, 0, 0, 300000, 16, 0); }
static void b_arith_mixed(void) { op(IR_OP_ADD, 0, pi, pf, 0, 0, 0, 0); }
static void b_arith_bf16(void) { op(IR_OP_MUL, 0, pb, pb, 0, 0, 0, 0); }
static void b_arith_ptr(void) { op(IR_OP_ADD, 0, pg, pg, 0, 0, 0, 0); }
static void b_abs_vec(void) { op(IR_OP_ABS, 0, pv, 0, 0, 0, 0, 0); }
static void b_int_float(void) { op(IR_OP_SHL, 0, pf, pf, 0, 0, 0, 0); }
static void b_intw(void) { op(IR_OP_POPC, 0, ir_const_int(k, IR_T_I16, 1), 0, 0, 0, 0, 0); }
static void b_float_int(void) { op(IR_OP_FDIV, 0, pi, pi, 0, 0, 0, 0); }
static void b_fast_f64(void) { op(IR_OP_FDIV, 0, pd, pd, 0, IR_FLAG_FAST, 0, 0); }
static void b_fmin_f16(void) { op(IR_OP_FMIN, 0, ph, ph, 0, 0, 0, 0); }
static void b_math_f16(void) { op(IR_OP_EXP2, 0, ph, 0, 0, 0, 0, 0); }
static void b_math_fast_f64(void) { op(IR_OP_SIN, 0, pd, 0, 0, IR_FLAG_FAST, 0, 0); }
static void b_icmp_float(void) { op(IR_OP_ICMP, 0, pf, pf, 0, IR_ICMP_EQ, 0, 0); }
static void b_fcmp_int(void) { op(IR_OP_FCMP, 0, pi, pi, 0, IR_FCMP_OEQ, 0, 0); }
static void b_select_cond(void) { op(IR_OP_SELECT, 0, pi, pf, pf, 0, 0, 0); }
static void b_select_types(void) {
  op(IR_OP_SELECT, 0, op(IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_EQ, 0, 0), pf, pi, 0, 0, 0);
}
static void b_cvt_same(void) { op(IR_OP_CVT, IR_T_F32, pf, 0, 0, 0, 0, 0); }
static void b_cvt_bf16_f16(void) { op(IR_OP_CVT, IR_T_F16, pb, 0, 0, 0, 0, 0); }
static void b_cvt_exact_rounding(void) { op(IR_OP_CVT, IR_T_F64, pf, 0, 0, IR_ROUND_RZ, 0, 0); }
static void b_cvt_int_rounding(void) { op(IR_OP_CVT, IR_T_I64, pi, 0, 0, IR_ROUND_RN, 0, 0); }
static void b_cvt_sat_widen(void) { op(IR_OP_CVT, IR_T_I64, pi, 0, 0, 0, IR_FLAG_SAT, 0); }
static void b_cvt_int_bf16(void) { op(IR_OP_CVT, IR_T_BF16, pi, 0, 0, 0, 0, 0); }
static void b_cvt_fp8_sm80(void) { op(IR_OP_CVT, IR_T_E4M3, pf, 0, 0, 0, 0, 0); }
static void b_cvt_tf32_rn(void) { op(IR_OP_CVT, IR_T_TF32, pf, 0, 0, IR_ROUND_RZ, 0, 0); }
static void b_cvt_i1(void) { op(IR_OP_CVT, IR_T_F32, op(IR_OP_ICMP, 0, pi, pj, 0, 0, 0, 0), 0, 0, 0, 0, 0); }
static void b_bitcast_size(void) { op(IR_OP_BITCAST, IR_T_I64, pf, 0, 0, 0, 0, 0); }
static void b_bitcast_ptr(void) { op(IR_OP_BITCAST, IR_T_I64, pg, 0, 0, 0, 0, 0); }
static void b_ptrtoint_i32(void) { op(IR_OP_PTRTOINT, IR_T_I32, pg, 0, 0, 0, 0, 0); }
static void b_inttoptr_param(void) { op(IR_OP_INTTOPTR, T("ptr<i8, param, 8>"), pl, 0, 0, 0, 0, 0); }
static void b_ptrcast_spaces(void) { op(IR_OP_PTRCAST, T("ptr<i32, shared, 4>"), pgi, 0, 0, 0, 0, 0); }
static void b_ptrcast_cluster(void) { op(IR_OP_PTRCAST, T("ptr<i32, shared_cluster, 4>"), ps, 0, 0, 0, 0, 0); }
static void b_prmt(void) { op(IR_OP_PRMT, 0, pi, pl, pi, 0, 0, 0); }
static void b_gep_index(void) { op(IR_OP_GEP, 0, pg, pf, 0, 0, 0, 0); }
static void b_gep_raise(void) { op(IR_OP_GEP, T("ptr<f32, global, 16>"), pg, pi, 0, 0, 0, 0); }
static void b_gep_elem(void) { op(IR_OP_GEP, T("ptr<i32, global, 4>"), pg, pi, 0, 0, 0, 0); }
static void b_load_align(void) { op(IR_OP_LOAD, T("<4 x f32>"), pg, 0, 0, 0, 0, 0); }
static void b_load_wide(void) {
  IrRef p32 = op(IR_OP_PTRCAST, T("ptr<f32, global, 32>"), pg, 0, 0, 0, 0, 0);
  op(IR_OP_LOAD, T("<8 x f32>"), p32, 0, 0, 0, 0, 0);
}
static void b_load_type(void) { op(IR_OP_LOAD, IR_T_I32, pg, 0, 0, 0, 0, 0); }
static void b_load_release(void) { op(IR_OP_LOAD, 0, pg, 0, 0, IR_ORDER_RELEASE, 0, 0); }
static void b_load_scope_weak(void) { op(IR_OP_LOAD, 0, pg, 0, 0, IR_ORDER_WEAK, IR_SCOPE_CTA, 0); }
static void b_load_ordered_vec(void) {
  op(IR_OP_LOAD, T("<2 x f32>"), op(IR_OP_PTRCAST, T("ptr<f32, global, 8>"), pg, 0, 0, 0, 0, 0), 0, 0, IR_ORDER_ACQUIRE, 0, 0);
}
static void b_load_cluster_sm80(void) { op(IR_OP_LOAD, 0, pg, 0, 0, IR_ORDER_RELAXED, IR_SCOPE_CLUSTER, 0); }
static void b_load_hint_shared(void) { op(IR_OP_LOAD, 0, ps, 0, 0, 0, 0, IR_CACHE_CG); }
static void b_load_hint_store(void) { op(IR_OP_LOAD, 0, pg, 0, 0, 0, 0, IR_CACHE_WB); }
static void b_store_param(void) {
  IrRef blob = ir_param_blob(k, 128, 64);
  op(IR_OP_STORE, 0, blob, ir_const_int(k, IR_T_I8, 1), 0, 0, 0, 0);
}
static void b_store_acquire(void) { op(IR_OP_STORE, 0, pg, pf, 0, IR_ORDER_ACQUIRE, 0, 0); }
static void b_store_not_ptr(void) { op(IR_OP_STORE, 0, pf, pf, 0, 0, 0, 0); }
static void b_var_index(void) {
  uint32_t v = ir_var_new(k, IR_T_F32, 4);
  ir_var_load(k, v, 4);
}
static void b_var_type(void) {
  uint32_t v = ir_var_new(k, IR_T_F32, 4);
  ir_var_store(k, v, 0, pi);
}
static void b_var_dyn_index(void) {
  uint32_t v = ir_var_new(k, IR_T_F32, 4);
  ir_var_loadx(k, v, pf);
}
static void b_var_dyn_const(void) {
  uint32_t v = ir_var_new(k, IR_T_F32, 4);
  ir_var_storex(k, v, c32(9), pf);
}
static void b_atom_local(void) {
  op(IR_OP_ATOM, 0, op(IR_OP_PTRCAST, T("ptr<f32, local, 4>"), pgen, 0, 0, 0, 0, 0), pf, 0, IR_REDOP_ADD, 0, 0);
}
static void b_atom_inc_f32(void) { op(IR_OP_ATOM, 0, pg, pf, 0, IR_REDOP_INC, 0, 0); }
static void b_atom_value(void) { op(IR_OP_ATOM, 0, pg, pi, 0, IR_REDOP_ADD, 0, 0); }
static void b_atom_volatile(void) { op(IR_OP_ATOM, 0, pgi, pi, 0, IR_REDOP_ADD, IR_ORDER_VOLATILE, 0); }
static void b_cas_float(void) { op(IR_OP_CAS, 0, pg, pf, pf, 0, 0, 0); }
static void b_sreg_cluster(void) { op(IR_OP_SREG, 0, 0, 0, 0, IR_SREG_CLUSTER_CTARANK, 0, 0); }
static void b_bar_id(void) { op(IR_OP_BARNAMED, 0, c32(16), 0, 0, 0, 0, 0); }
static void b_bar_count(void) { op(IR_OP_BARNAMED, 0, c32(1), c32(33), 0, 0, 0, 0); }
static void b_bar_arrive(void) { op(IR_OP_BARNAMED, 0, c32(1), 0, 0, IR_BAR_ARRIVE, 0, 0); }
static void b_syncwarp(void) { op(IR_OP_SYNCWARP, 0, pl, 0, 0, 0, 0, 0); }
static void b_shfl_value(void) { op(IR_OP_SHFL, 0, c32(-1), pd, c32(1), IR_SHFL_BFLY, 0, 0); }
static void b_shfl_width(void) { op(IR_OP_SHFL, 0, c32(-1), pi, c32(1), IR_SHFL_BFLY, 12, 0); }
static void b_vote_pred(void) { op(IR_OP_VOTE, 0, c32(-1), pi, 0, IR_VOTE_ALL, 0, 0); }
static void b_redux_op(void) { op(IR_OP_REDUX, 0, c32(-1), pi, 0, IR_REDOP_EXCH, 0, 0); }
static void b_printf_count(void) {
  IrRef a[1] = {pi};
  int64_t s = ir_str(m, "%d %d\n");
  ir_op(k, IR_OP_PRINTF, 0, a, 1, &s, 1);
}
static void b_printf_kind(void) {
  IrRef a[1] = {pi};
  int64_t s = ir_str(m, "%f\n");
  ir_op(k, IR_OP_PRINTF, 0, a, 1, &s, 1);
}
static void b_asm_inputs(void) {
  IrRef a[1] = {pi};
  int64_t imm[3] = {ir_str(m, "mov.b32 $0, $1;"), ir_str(m, "=r,r,r"), 0};
  ir_op(k, IR_OP_ASM, IR_T_I32, a, 1, imm, 3);
}
static void b_asm_type(void) {
  IrRef a[1] = {pf};
  int64_t imm[3] = {ir_str(m, "mov.b32 $0, $1;"), ir_str(m, "=r,r"), 0};
  ir_op(k, IR_OP_ASM, IR_T_I32, a, 1, imm, 3);
}
static void b_asm_outputs(void) {
  IrRef a[1] = {pi};
  int64_t imm[3] = {ir_str(m, "mov.b32 $0, $1;"), ir_str(m, "=r,r"), 0};
  ir_op(k, IR_OP_ASM, T("{i32, i32}"), a, 1, imm, 3);
}
static void b_asm_dollar(void) {
  int64_t imm[3] = {ir_str(m, "mov.b32 $0, $5;"), ir_str(m, "=r"), 0};
  ir_op(k, IR_OP_ASM, IR_T_I32, NULL, 0, imm, 3);
}
static void b_call_kernel(void) {
  IrFunc *g = ir_func_new(m, "other", IR_FUNC_KERNEL, IR_T_VOID);
  op(IR_OP_CALL, 0, 0, 0, 0, ir_func_index(g), 0, 0);
}
static void b_call_args(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_VOID);
  ir_param(g, IR_T_F32);
  op(IR_OP_CALL, 0, pi, 0, 0, ir_func_index(g), 0, 0);
}
static void b_call_count(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_VOID);
  ir_param(g, IR_T_F32);
  op(IR_OP_CALL, 0, 0, 0, 0, ir_func_index(g), 0, 0);
}
static void b_extract_range(void) { op(IR_OP_EXTRACT, 0, pv, 0, 0, 4, 0, 0); }
static void b_extract_scalar(void) { op(IR_OP_EXTRACT, 0, pf, 0, 0, 0, 0, 0); }
static void b_insert_type(void) { op(IR_OP_INSERT, 0, pv, pi, 0, 0, 0, 0); }
static void b_pack_count(void) { op(IR_OP_PACK, T("<4 x f32>"), pf, pf, 0, 0, 0, 0); }
static void b_pack_scalar(void) { op(IR_OP_PACK, IR_T_F32, pf, 0, 0, 0, 0, 0); }
static IrRef frag(int n, IrType reg) {
  IrRef a[8];
  IrRef v = reg == IR_T_F32 ? pf : reg == IR_T_F64 ? pd : pi;
  for (int i = 0; i < n; i++) a[i] = v;
  if (n == 1) return v;
  IrType fs[8];
  for (int i = 0; i < n; i++) fs[i] = reg;
  return ir_op(k, IR_OP_PACK, ir_type_struct(m, fs, n), a, n, NULL, 0);
}
static void mma(int64_t shape, int64_t ta, int64_t tb, int64_t tc, int64_t td, int64_t fl, IrRef a, IrRef b, IrRef c) {
  IrRef args[3] = {a, b, c};
  int64_t imm[6] = {shape, ta, tb, tc, td, fl};
  ir_op(k, IR_OP_MMA, 0, args, 3, imm, 6);
}
static void b_mma_combo(void) {
  mma(IR_MMA_M16N8K16, IR_MT_TF32, IR_MT_TF32, IR_MT_F32, IR_MT_F32, 0, frag(4, IR_T_I32), frag(2, IR_T_I32),
      frag(4, IR_T_F32));
}
static void b_mma_sm(void) {
  mma(IR_MMA_M16N8K32, IR_MT_E4M3, IR_MT_E4M3, IR_MT_F32, IR_MT_F32, 0, frag(4, IR_T_I32), frag(2, IR_T_I32),
      frag(4, IR_T_F32));
}
static void b_mma_frag(void) {
  mma(IR_MMA_M16N8K16, IR_MT_F16, IR_MT_F16, IR_MT_F32, IR_MT_F32, 0, frag(2, IR_T_I32), frag(2, IR_T_I32),
      frag(4, IR_T_F32));
}
static void b_mma_sat(void) {
  mma(IR_MMA_M16N8K16, IR_MT_F16, IR_MT_F16, IR_MT_F32, IR_MT_F32, IR_FLAG_SAT, frag(4, IR_T_I32), frag(2, IR_T_I32),
      frag(4, IR_T_F32));
}
static void b_ldmatrix_space(void) { op(IR_OP_LDMATRIX, 0, pgi, 0, 0, 4, 0, 0); }
static void b_ldmatrix_align(void) { op(IR_OP_LDMATRIX, 0, ps, 0, 0, 4, 0, 0); }
static void b_ldmatrix_count(void) {
  op(IR_OP_LDMATRIX, 0, op(IR_OP_PTRCAST, T("ptr<i32, shared, 16>"), ps, 0, 0, 0, 0, 0), 0, 0, 3, 0, 0);
}
static void b_stmatrix_sm(void) {
  op(IR_OP_STMATRIX, 0, op(IR_OP_PTRCAST, T("ptr<i32, shared, 16>"), ps, 0, 0, 0, 0, 0), pi, 0, 1, 0, 0);
}
static void b_cpasync_bytes(void) {
  op(IR_OP_CPASYNC, 0, op(IR_OP_PTRCAST, T("ptr<i32, shared, 16>"), ps, 0, 0, 0, 0, 0),
     op(IR_OP_PTRCAST, T("ptr<i32, global, 16>"), pgi, 0, 0, 0, 0, 0), 0, 12, 0, 0);
}
static void b_cpasync_cg(void) {
  op(IR_OP_CPASYNC, 0, op(IR_OP_PTRCAST, T("ptr<i32, shared, 16>"), ps, 0, 0, 0, 0, 0),
     op(IR_OP_PTRCAST, T("ptr<i32, global, 16>"), pgi, 0, 0, 0, 0, 0), 0, 8, IR_CACHE_CG, 0);
}
static void b_cpasync_align(void) { op(IR_OP_CPASYNC, 0, ps, pgi, 0, 16, 0, 0); }
static void b_cpasync_dir(void) { op(IR_OP_CPASYNC, 0, pgi, ps, 0, 4, 0, 0); }
static void b_cpwait(void) { op(IR_OP_CPWAIT, 0, 0, 0, 0, 100, 0, 0); }
static void b_for_types(void) { ir_for_begin(k, c32(0), pl, c32(1), 0), ir_region_end(k); }
static void b_for_step0(void) { ir_for_begin(k, c32(0), pi, c32(0), 0), ir_region_end(k); }
static void b_for_float(void) {
  IrRef z = ir_const_float(k, IR_T_F32, 0);
  ir_for_begin(k, z, pf, z, 0), ir_region_end(k);
}
static void b_if_cond(void) { ir_if_begin(k, pi), ir_region_end(k); }
static void b_ret_kernel(void) { ir_return(k, pi); }
static void b_ret_missing(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_F32);
  ir_return(g, 0);
}
static void b_ret_type(void) {
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, IR_T_F32);
  ir_return(g, ir_const_int(g, IR_T_I32, 1));
}
/* kernel attributes */
static void b_maxntid(void) { ir_func_attr(k, IR_ATTR_MAXNTID, 64, 32, 1); }
static void b_reqntid(void) {
  ir_func_attr(k, IR_ATTR_MAXNTID, 128, 1, 1);
  ir_func_attr(k, IR_ATTR_REQNTID, 256, 1, 1);
}
static void b_wgmma_fence(void) { op(IR_OP_WGFENCE, 0, 0, 0, 0, 0, 0, 0); }
/* TMA and bulk copies (src/emit/emit_tma.c) */
static IrRef smem_at(int align) {
  return op(IR_OP_SMEM, ir_type_ptr(m, IR_T_I8, IR_SPACE_SHARED, align), 0, 0, 0, 1024, align, 0);
}
static void tma_load(int rank, int ncoords, IrType ct) {
  IrRef a[8] = {smem_at(128), ir_param_blob(k, 128, 64), smem_at(8)};
  for (int i = 0; i < ncoords; i++) a[3 + i] = ct == IR_T_I32 ? c32(i) : pl;
  int64_t imm = rank;
  ir_op(k, IR_OP_TMALOAD, 0, a, 3 + ncoords, &imm, 1);
}
static void b_tma_sm80(void) { tma_load(2, 2, IR_T_I32); }
static void b_tma_coords(void) { tma_load(3, 2, IR_T_I32); }
static void b_tma_coord_type(void) { tma_load(1, 1, IR_T_I64); }
static void b_tma_desc(void) { op(IR_OP_TMAPFDESC, 0, ps, 0, 0, 0, 0, 0); }
static void b_bulk_size(void) {
  op(IR_OP_BULKSTORE, 0, op(IR_OP_PTRCAST, T("ptr<i32, global, 16>"), pgi, 0, 0, 0, 0, 0), smem_at(16), c32(40), 0, 0,
     0);
}
static void b_bulk_wait(void) { op(IR_OP_BULKWAIT, 0, 0, 0, 0, 64, 0, 0); }
static void b_cluster_sm80(void) { ir_func_attr(k, IR_ATTR_CLUSTER, 2, 1, 1); }
static void b_cluster_big(void) { ir_func_attr(k, IR_ATTR_CLUSTER, 4, 4, 2); }
static void b_maxnreg(void) { ir_func_attr(k, IR_ATTR_MAXNREG, 300, 0, 0); }
static void b_minctasm(void) { ir_func_attr(k, IR_ATTR_MINCTASM, 64, 0, 0); }
static void b_smem_total(void) {
  op(IR_OP_SMEM, T("ptr<i8, shared, 16>"), 0, 0, 0, 200000, 16, 0);
  ir_func_attr(k, IR_ATTR_DYN_SMEM, 40000, 0, 0);
}

static const Case cases[] = {
    {"dominance", "sm_80", b_dominance, "mul: operand 1 (%"},
    {"dominance (else)", "sm_80", b_dominance_else, "is defined in a region that does not enclose this op"},
    {"dominance (loop)", "sm_80", b_dominance_loop, "carry the value through a variable"},
    {"unreachable", "sm_80", b_unreachable, "unreachable: the for region already ended with break"},
    {"break outside", "sm_80", b_break_outside, "break: not inside a loop"},
    {"continue in a condition", "sm_80", b_continue_in_cond, "continue: inside a while condition"},
    {"unclosed", "sm_80", b_unclosed, "2 regions are never closed (the innermost: the if at v.lua:12 (case))"},
    {"stray else", "sm_80", b_stray_else, "else: the innermost open region is the function body, not an if"},
    {"stray end", "sm_80", b_stray_end, "end: no region is open"},
    {"stray while.cond", "sm_80", b_stray_cond, "while.cond: the innermost open region is the function body"},
    {"while without cond", "sm_80", b_while_no_cond, "end: the while condition has no while.cond"},
    {"for without iv", "sm_80", b_for_no_iv, "for: its induction variable (iv) must follow it"},
    {"iv alone", "sm_80", b_iv_alone, "iv: only right after a for"},
    {"falls off", "sm_80", b_falls_off, "@g returns i32 but can reach its end without ret"},
    {"use before def", "sm_80", b_use_before_def, "operand 2 (%32767) is not defined before this op"},
    {"arity", "sm_80", b_arity, "add: takes 2 to 2 operands, has 1"},
    {"unknown op", "sm_80", b_unknown_op, "has the unknown op id 999"},
    {"predicate", "sm_80", b_pred_range, "icmp: icmp predicate 99 is out of range (0 to 9)"},
    {"flags", "sm_80", b_flags, "sqrt: flags 0x4: this op accepts 0x1"},
    {"result type needed", "sm_80", b_no_type, "bitcast: needs a result type"},
    {"result type by rule", "sm_80", b_wrong_result, "add: the result type is i64, by its rule it is i32"},
    {"target", "sm_89", b_stmatrix_sm,
     "stmatrix needs STMATRIX, which sm_89 lacks (sm_90, sm_90a, sm_100, sm_100a, sm_103a, sm_120 and sm_120a have it)"},
    {"variable", "sm_80", b_var_missing, "variable $9 does not exist in @k"},
    {"string", "sm_80", b_string_missing, "string id 4000 does not exist"},
    {"function", "sm_80", b_func_missing, "function #77 does not exist"},
    {"const canonical", "sm_80", b_const, "300 is not a canonical i8 value"},
    {"const representable", "sm_80", b_const_float, "the value is not representable in f32"},
    {"undef", "sm_80", b_undef, "undef: needs a result type"},
    {"blob param", "sm_80", b_blob_device, "by-value blobs are kernel parameters"},
    {"struct param", "sm_80", b_param_struct, "parameters are scalars, vectors or pointers (blobs for the rest; structs for device"},
    {"smem alignment", "sm_80", b_smem_align, "alignment 3: a power of two from 1 to 1024"},
    {"smem claim", "sm_80", b_smem_claims, "the pointer type claims 64-byte alignment, the memory has 16"},
    {"smem type", "sm_80", b_smem_global, "the type must be a shared pointer"},
    {"smem size", "sm_80", b_smem_size, "300000 bytes: static shared memory is 1 to 232448 bytes"},
    {"same types", "sm_80", b_arith_mixed, "operand 1 is i32, operand 2 is f32: they must have the same type"},
    {"storage types", "sm_80", b_arith_bf16, "bf16, tf32 and fp8 are storage types: cvt to f32 first"},
    {"arith on pointers", "sm_80", b_arith_ptr, "expected an integer or f16/f32/f64"},
    {"abs of a vector", "sm_80", b_abs_vec, "vectors are not accepted here"},
    {"int op on floats", "sm_80", b_int_float, "shl: operand 1 is f32, expected an integer"},
    {"i32 or i64", "sm_80", b_intw, "popc: operand 1 is i16, expected i32 or i64"},
    {"float op on ints", "sm_80", b_float_int, "fdiv: operand 1 is i32, expected f16, f32 or f64"},
    {"fast division", "sm_80", b_fast_f64, "fast division is for f32, not f64"},
    {"fmin of f16", "sm_80", b_fmin_f16, "fmin: operand 1 is f16, expected f32 or f64"},
    {"math of f16", "sm_80", b_math_f16, "exp2: operand 1 is f16, expected f32 or f64"},
    {"fast f64", "sm_80", b_math_fast_f64, "the fast approximations are for f32, not f64"},
    {"icmp of floats", "sm_80", b_icmp_float, "icmp: operand 1 is f32, expected an integer"},
    {"fcmp of ints", "sm_80", b_fcmp_int, "fcmp: operand 1 is i32, expected f16, f32 or f64"},
    {"select condition", "sm_80", b_select_cond, "the condition is i32, expected i1"},
    {"select choices", "sm_80", b_select_types, "the choices are f32 and i32: they must have the same type"},
    {"cvt to itself", "sm_80", b_cvt_same, "converting f32 to itself"},
    {"cvt bf16 f16", "sm_80", b_cvt_bf16_f16, "bf16 to f16: bf16, tf32 and fp8 convert to and from f32 only"},
    {"cvt exact", "sm_80", b_cvt_exact_rounding, "f32 to f64 is exact and takes no rounding mode"},
    {"cvt int rounding", "sm_80", b_cvt_int_rounding, "integer to integer takes no rounding mode"},
    {"cvt sat", "sm_80", b_cvt_sat_widen, "sat clamps a narrowing integer conversion; i32 to i64 widens"},
    {"cvt int to bf16", "sm_80", b_cvt_int_bf16, "integers convert to and from f16, f32, f64"},
    {"cvt fp8 target", "sm_80", b_cvt_fp8_sm80, "cvt: an fp8 conversion needs FP8, which sm_80 lacks (sm_89, sm_90, sm_90a,"},
    {"cvt tf32", "sm_80", b_cvt_tf32_rn, "f32 to tf32 rounds rna"},
    {"cvt i1", "sm_80", b_cvt_i1, "i1 does not convert to or from floats"},
    {"bitcast size", "sm_80", b_bitcast_size, "f32 (32 bits) to i64 (64 bits): the sizes differ"},
    {"bitcast pointer", "sm_80", b_bitcast_ptr, "bitcast is for scalars and vectors (ptrcast, ptrtoint for pointers)"},
    {"ptrtoint i32", "sm_80", b_ptrtoint_i32, "addresses are i64 (or i32 for shared, shared_cluster and local)"},
    {"inttoptr param", "sm_80", b_inttoptr_param, "param-space pointers come from ir_param_blob"},
    {"ptrcast spaces", "sm_80", b_ptrcast_spaces, "global to shared: address spaces convert to or from generic only"},
    {"ptrcast cluster", "sm_80", b_ptrcast_cluster, "shared_cluster addresses are not cast (they come from mapa)"},
    {"prmt", "sm_80", b_prmt, "prmt: operand 2 is i64, expected i32"},
    {"gep index", "sm_80", b_gep_index, "the index is f32, expected i32 or i64"},
    {"gep alignment", "sm_80", b_gep_raise, "the result claims 16-byte alignment, more than the 4 of ptr<f32, global, 4>"},
    {"gep element", "sm_80", b_gep_elem, "must point to the same element in the same space"},
    {"load alignment", "sm_80", b_load_align, "load of <4 x f32> needs 16-byte alignment; the pointer ptr<f32, global, 4> is 4-byte aligned"},
    {"load width", "sm_80", b_load_wide, "vector accesses are at most 16 bytes"},
    {"load type", "sm_80", b_load_type, "load i32 through ptr<f32, global, 4>: the type must be the element f32"},
    {"load order", "sm_80", b_load_release, "order release is not for a load"},
    {"scope without order", "sm_80", b_load_scope_weak, "scope cta needs order relaxed, acquire or release"},
    {"ordered vectors", "sm_80", b_load_ordered_vec, "acquire accesses are scalar; <2 x f32> is a vector"},
    {"cluster scope", "sm_80", b_load_cluster_sm80, "load: scope cluster needs CLUSTER, which sm_80 lacks (sm_90, sm_90a,"},
    {"cache hint space", "sm_80", b_load_hint_shared, "cache hints apply to global pointers; this one is shared"},
    {"cache hint kind", "sm_80", b_load_hint_store, "cache hint wb is not for a load"},
    {"read-only space", "sm_80", b_store_param, "store through a param pointer: that space is read-only"},
    {"store order", "sm_80", b_store_acquire, "order acquire is not for a store"},
    {"store pointer", "sm_80", b_store_not_ptr, "store: operand 1 is f32, expected a pointer"},
    {"variable index", "sm_80", b_var_index, "index 4 of $1, which has 4 elements"},
    {"variable type", "sm_80", b_var_type, "storing i32 into $1 of f32"},
    {"variable dynamic index", "sm_80", b_var_dyn_index, "the index is f32, expected i32 or i64"},
    {"variable constant index", "sm_80", b_var_dyn_const, "index 9 of $1, which has 4 elements"},
    {"atomic space", "sm_80", b_atom_local, "atomics work on global, shared or generic pointers, not local"},
    {"atomic op", "sm_80", b_atom_inc_f32, "atom.inc does not take f32"},
    {"atomic value", "sm_80", b_atom_value, "operand 2 is i32; the pointer's element is f32"},
    {"atomic order", "sm_80", b_atom_volatile, "atomics are weak (relaxed), relaxed, acquire, release or acq_rel"},
    {"cas type", "sm_80", b_cas_float, "compare-and-swap is for i32 and i64, not f32"},
    {"cluster register", "sm_80", b_sreg_cluster, "sreg: %cluster_ctarank needs CLUSTER, which sm_80 lacks (sm_90,"},
    {"barrier id", "sm_80", b_bar_id, "barrier id 16: 0 to 15"},
    {"barrier count", "sm_80", b_bar_count, "thread count 33: a multiple of 32 from 32 to 1024"},
    {"barrier arrive", "sm_80", b_bar_arrive, "arrive needs the thread count"},
    {"warp mask", "sm_80", b_syncwarp, "syncwarp: the mask is i64, expected i32"},
    {"shuffle value", "sm_80", b_shfl_value, "the value is f64; shuffles move i32 or f32"},
    {"shuffle width", "sm_80", b_shfl_width, "width 12: a power of two up to 32 (0: 32)"},
    {"vote predicate", "sm_80", b_vote_pred, "the predicate is i32, expected i1"},
    {"redux op", "sm_80", b_redux_op, "redux does not do exch"},
    {"printf count", "sm_80", b_printf_count, "the format has 2 conversions for 1 values"},
    {"printf kind", "sm_80", b_printf_kind, "%f takes a float; value 1 is i32"},
    {"asm inputs", "sm_80", b_asm_inputs, "constraints name more inputs than the 1 operands"},
    {"asm types", "sm_80", b_asm_type, "operand 1 is f32, which constraint 'r' does not take"},
    {"asm outputs", "sm_80", b_asm_outputs, "constraints have 1 outputs, the result type {2 x i32} has 2"},
    {"asm operands", "sm_80", b_asm_dollar, "the text uses $5; there are 1 operands"},
    {"call a kernel", "sm_80", b_call_kernel, "@other is a kernel; calls go to device functions"},
    {"call types", "sm_80", b_call_args, "argument 1 is i32; @g takes f32"},
    {"call count", "sm_80", b_call_count, "@g takes 1 arguments, got 0"},
    {"extract range", "sm_80", b_extract_range, "index 4 of <4 x f32>, which has 4 elements"},
    {"extract scalar", "sm_80", b_extract_scalar, "operand 1 is f32, expected a vector or struct"},
    {"insert type", "sm_80", b_insert_type, "inserting i32 as element 0 of <4 x f32>, which is f32"},
    {"pack count", "sm_80", b_pack_count, "<4 x f32> has 4 elements, got 2 operands"},
    {"pack type", "sm_80", b_pack_scalar, "the result type f32 is not a vector or struct"},
    {"mma combination", "sm_80", b_mma_combo,
     "mma.sync m16n8k16 with D=f32 A=tf32 B=tf32 C=f32 does not exist; m16n8k16 has: m16n8k16 f16.f16.f16.f16 (sm_80)"},
    {"mma target", "sm_80", b_mma_sm, "this mma.sync needs FP8, which sm_80 lacks (sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_103a, sm_120 and sm_120a have it); sm_80 has: m16n8k8 f16.f16.f16.f16 (sm_75)"},
    {"mma fragment", "sm_80", b_mma_frag, "the A fragment is {2 x i32}, expected {4 x i32}"},
    {"mma sat", "sm_80", b_mma_sat, "sat (satfinite) is for integer mma"},
    {"ldmatrix space", "sm_80", b_ldmatrix_space, "operand 1 is ptr<i32, global, 4>, expected a shared pointer"},
    {"ldmatrix alignment", "sm_80", b_ldmatrix_align, "each row is 16 bytes: the pointer must be 16-byte aligned"},
    {"ldmatrix count", "sm_80", b_ldmatrix_count, "count 3: 1, 2 or 4 matrices"},
    {"wgmma on sm_90", "sm_90", b_wgmma_fence, "wgmma.fence needs WGMMA, which sm_90 lacks (sm_90a has it)"},
    {"wgmma on sm_100a", "sm_100a", b_wgmma_fence, "wgmma.fence needs WGMMA, which sm_100a lacks (sm_90a has it)"},
    {"stmatrix target", "sm_80", b_stmatrix_sm, "stmatrix needs STMATRIX, which sm_80 lacks (sm_90,"},
    {"cp.async size", "sm_80", b_cpasync_bytes, "12 bytes: cp.async copies 4, 8 or 16"},
    {"cp.async cg", "sm_80", b_cpasync_cg, "cg copies 16 bytes, not 8"},
    {"cp.async alignment", "sm_80", b_cpasync_align, "the destination ptr<i32, shared, 4> is less than 16-byte aligned"},
    {"cp.async direction", "sm_80", b_cpasync_dir, "the destination is ptr<i32, global, 4>, expected a shared pointer"},
    {"cp.async.wait", "sm_80", b_cpwait, "100 pending groups: 0 to 63"},
    {"for types", "sm_80", b_for_types, "operand 1 is i32, operand 2 is i64"},
    {"for step", "sm_80", b_for_step0, "for: the step is 0"},
    {"for floats", "sm_80", b_for_float, "bounds and step are f32, expected i32 or i64"},
    {"if condition", "sm_80", b_if_cond, "if: the condition is i32, expected i1"},
    {"kernel return", "sm_80", b_ret_kernel, "ret: @k returns nothing"},
    {"return value", "sm_80", b_ret_missing, "@g returns f32: give a value"},
    {"return type", "sm_80", b_ret_type, "returning i32 from @g, which returns f32"},
    {"maxntid", "sm_80", b_maxntid, "maxntid 2048 threads: at most 1024 per block"},
    {"reqntid", "sm_80", b_reqntid, "reqntid exceeds maxntid in dimension x"},
    {"tma target", "sm_80", b_tma_sm80, "tma.load needs TMA, which sm_80 lacks"},
    {"tma coordinates", "sm_90", b_tma_coords, "2 coordinates for a rank-3 box"},
    {"tma coordinate type", "sm_90", b_tma_coord_type, "coordinate 0 (operand 4) is i64, expected i32"},
    {"tma descriptor", "sm_90", b_tma_desc, "the descriptor (operand 1) is ptr<i32, shared, 4>, expected a pointer"},
    {"bulk size", "sm_90", b_bulk_size, "40 bytes: a bulk copy moves a positive multiple of 16 bytes"},
    {"bulk wait", "sm_90", b_bulk_wait, "64 pending groups: 0 to 63"},
    {"cluster target", "sm_80", b_cluster_sm80, "a cluster launch needs CLUSTER, which sm_80 lacks (sm_90,"},
    {"cluster size", "sm_90", b_cluster_big, "a cluster of 32 blocks: at most 16 (8 portable)"},
    {"maxnreg", "sm_80", b_maxnreg, "maxnreg 300: 16 to 255"},
    {"minctasm", "sm_80", b_minctasm, "minctasm 64: at most 32"},
    {"shared memory total", "sm_80", b_smem_total, "200000 static + 40000 dynamic bytes of shared memory"},
};

static void test_cases(void) {
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    setup(cases[i].target);
    cases[i].build();
    int n = ir_verify(m);
    const char *d = ir_diag(m);
    if (n < 1 || !strstr(d, cases[i].expect)) {
      fprintf(stderr, "case '%s': %d errors, expected \"%s\" in:\n%s\n", cases[i].name, n, cases[i].expect, d);
      check_failed++;
      continue;
    }
    check_passed++;
    /* each report names where: the op's Lua line, or the function's */
    CHECK_CONTAINS(d, "v.lua:");
    CHECK_CONTAINS(d, "error: ");
    CHECK_CONTAINS(d, "\n  in @");
  }
}

/* The module's target: a row of the target table by name; the old option
   IR_OPT_SM names the plain row of a compute capability. */
static void test_target(void) {
  IrModule *t = ir_module_new();
  CHECK_STR(ir_module_target(t)->name, CL_TARGET_FALLBACK);
  CHECK_EQ_INT(ir_module_set_target(t, "sm_90"), 0);
  CHECK_STR(ir_module_target(t)->name, "sm_90");
  CHECK_EQ_INT(ir_module_get(t, IR_OPT_SM), 90);
  CHECK_EQ_INT(ir_module_set_target(t, "sm_90a"), 0);
  CHECK_STR(ir_module_target(t)->name, "sm_90a");
  CHECK_EQ_INT(ir_module_set_target(t, "sm_91"), -1);
  CHECK_CONTAINS(ir_diag(t), "unknown target 'sm_91' (known: sm_80, sm_86, sm_89, sm_90, sm_90a,");
  CHECK_STR(ir_module_target(t)->name, "sm_90a"); /* unchanged */
  ir_diag_clear(t);
  ir_module_set(t, IR_OPT_SM, 89);
  CHECK_STR(ir_module_target(t)->name, "sm_89");
  ir_module_set(t, IR_OPT_SM, 75);
  CHECK_CONTAINS(ir_diag(t), "no plain target has compute capability 7.5");
  CHECK_STR(ir_module_target(t)->name, "sm_89");
  ir_module_free(t);
}

/* Each op is checked once: the builder checks it as it is appended, and the
   verifier then checks structure and only the ops the builder did not
   (interned constants, iv, else, end); after a change of target, or ops
   appended raw, it checks them all again. */
static void test_checked_once(void) {
  IrModule *t = ir_module_new();
  ir_module_set_target(t, "sm_90a");
  IrFunc *g = ir_func_new(t, "g", IR_FUNC_KERNEL, IR_T_VOID);
  IrRef sp = ir_param(g, ir_type_parse(t, "ptr<i32, shared, 16>"));
  IrRef x = ir_param(g, IR_T_I32);
  IrRef acc = x;
  for (int i = 0; i < 100; i++) acc = ir_op3(g, IR_OP_MUL, 0, acc, x, 0, 0, 0, 0);
  IrRef iv = ir_for_begin(g, ir_const_int(g, IR_T_I32, 0), x, ir_const_int(g, IR_T_I32, 1), 0);
  IrRef in = iv;
  for (int i = 0; i < 100; i++) in = ir_op3(g, IR_OP_ADD, 0, in, acc, 0, 0, 0, 0);
  ir_op3(g, IR_OP_STORE, 0, sp, in, 0, 0, 0, 0);
  ir_region_end(g);
  IrRef frag[2] = {acc, acc};
  IrType pair = ir_type_struct(t, (IrType[]){IR_T_I32, IR_T_I32}, 2);
  IrRef st = ir_op(g, IR_OP_PACK, pair, frag, 2, NULL, 0);
  ir_op3(g, IR_OP_STMATRIX, 0, sp, st, 0, 2, 0, 0);
  CHECK_EQ_INT(ir_diag_count(t), 0);
  int ops = ir_inst_count(g);
  uint64_t before = t->rule_checks;
  CHECK_EQ_INT(ir_verify(t), 0);
  uint64_t again = t->rule_checks - before;
  CHECK_AT(again <= 8, "the verifier checked %llu of %d ops again", (unsigned long long)again, ops);
  /* another target: every op is checked for it (stmatrix needs sm_90) */
  ir_module_set_target(t, "sm_89");
  before = t->rule_checks;
  CHECK_EQ_INT(ir_verify(t), 1);
  CHECK_CONTAINS(ir_diag(t), "stmatrix needs STMATRIX, which sm_89 lacks");
  CHECK((int)(t->rule_checks - before) >= ops);
  ir_diag_clear(t);
  ir_module_set_target(t, "sm_90");
  CHECK_EQ_INT(ir_verify(t), 0); /* checked in full, and found valid: once is enough again */
  before = t->rule_checks;
  CHECK_EQ_INT(ir_verify(t), 0);
  CHECK((int)(t->rule_checks - before) <= 8);
  ir_module_free(t);
}

/* Every violation, not just the first; each with its op printed and location. */
static void test_all_reported(void) {
  setup("sm_80");
  ir_set_loc(m, "v.lua", 20, "first");
  op(IR_OP_ADD, 0, pi, pf, 0, 0, 0, 0);
  ir_set_loc(m, "v.lua", 21, "second");
  op(IR_OP_SHL, 0, pf, pf, 0, 0, 0, 0);
  ir_set_loc(m, "v.lua", 22, "third");
  op(IR_OP_LOAD, T("<4 x f32>"), pg, 0, 0, IR_ORDER_RELEASE, 0, 0);
  CHECK_EQ_INT(ir_verify(m), 5); /* the load breaks three rules */
  const char *d = ir_diag(m);
  CHECK_CONTAINS(d, "v.lua:20 (first): error: add: operand 1 is i32, operand 2 is f32");
  CHECK_CONTAINS(d, "\n  in @k: %");
  CHECK_CONTAINS(d, " = add %1, %3 : i32\n");
  CHECK_CONTAINS(d, "v.lua:21 (second): error: shl: operand 1 is f32, expected an integer");
  CHECK_CONTAINS(d, "v.lua:22 (third): error: load: load of <4 x f32> needs 16-byte alignment");
  CHECK_CONTAINS(d, "v.lua:22 (third): error: load: order release is not for a load");
  CHECK_CONTAINS(d, "v.lua:22 (third): error: load: release accesses are scalar; <4 x f32> is a vector");
  CHECK_CONTAINS(d, " = load.release %8 : <4 x f32>\n");
  /* a clean module has none, and verifying does not change it */
  setup("sm_80");
  op(IR_OP_ADD, 0, pi, pj, 0, 0, 0, 0);
  CHECK_EQ_INT(ir_verify(m), 0);
  CHECK_STR(ir_diag(m), "");
}

/* With checking on (the default), the builder refuses the same ops at the call. */
static void test_builder_checks(void) {
  setup("sm_80");
  ir_module_set(m, IR_OPT_CHECK, 1);
  int before = ir_inst_count(k);
  CHECK_EQ_INT(op(IR_OP_ADD, 0, pi, pf, 0, 0, 0, 0), 0);
  CHECK_EQ_INT(ir_inst_count(k), before); /* nothing was appended */
  CHECK_CONTAINS(ir_diag(m), "v.lua:12 (case): error: add: operand 1 is i32, operand 2 is f32");
  ir_diag_clear(m);
  ir_if_begin(k, op(IR_OP_ICMP, 0, pi, pj, 0, IR_ICMP_EQ, 0, 0));
  IrRef inner = op(IR_OP_ADD, 0, pi, pj, 0, 0, 0, 0);
  ir_region_end(k);
  CHECK_EQ_INT(op(IR_OP_MUL, 0, inner, pi, 0, 0, 0, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "was defined inside a if region that has ended at v.lua:12 (case); carry it out");
  ir_diag_clear(m);
  IrRef iv = ir_for_begin(k, c32(0), pi, c32(1), 0);
  CHECK(iv != 0);
  CHECK_EQ_INT(ir_break(k), 0);
  CHECK_EQ_INT(op(IR_OP_ADD, 0, iv, pj, 0, 0, 0, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "add: unreachable: the for region already ended with break, continue or return");
  ir_diag_clear(m);
  ir_region_end(k);
  CHECK_EQ_INT(ir_break(k), -1);
  CHECK_CONTAINS(ir_diag(m), "break: not inside a loop");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_else_begin(k), -1);
  CHECK_CONTAINS(ir_diag(m), "else: the innermost open region is the function body, not the then-branch of an if");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_region_end(k), -1);
  CHECK_CONTAINS(ir_diag(m), "region_end: no region is open");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_while_cond(k, pi), -1);
  CHECK_CONTAINS(ir_diag(m), "while_cond: the innermost open region is the function body");
  ir_diag_clear(m);
  ir_while_begin(k);
  CHECK_EQ_INT(ir_region_end(k), -1);
  CHECK_CONTAINS(ir_diag(m), "the while has no condition yet (call while_cond first)");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_op3(k, IR_OP_FOR, 0, pi, pi, pi, 0, 0, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "for: made by its own builder call");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_op3(k, IR_OP_ADD, 0, pi, 0, pj, 0, 0, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "add: operand missing before a given one");
  ir_diag_clear(m);
  IrRef args[2] = {pi, 9999};
  CHECK_EQ_INT(ir_op(k, IR_OP_ADD, 0, args, 2, NULL, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "add: operand 2 is %9999, not a value of @k");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_op(k, (IrOp)500, 0, args, 2, NULL, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "unknown op id 500");
  ir_diag_clear(m);
  int64_t many[7] = {0};
  CHECK_EQ_INT(ir_op(k, IR_OP_ICMP, 0, args, 1, many, 7), 0);
  CHECK_CONTAINS(ir_diag(m), "icmp: takes 2 operands, got 1");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_op(k, IR_OP_ICMP, 0, (IrRef[]){pi, pj}, 2, many, 7), 0);
  CHECK_CONTAINS(ir_diag(m), "icmp: takes 1 immediate (P), got 7");
  ir_diag_clear(m);
  /* functions, parameters, attributes */
  CHECK(ir_func_new(m, "k", IR_FUNC_DEVICE, 0) == NULL);
  CHECK_CONTAINS(ir_diag(m), "function 'k' is already defined in this module");
  CHECK(ir_func_new(m, "9lives", IR_FUNC_DEVICE, 0) == NULL);
  CHECK_CONTAINS(ir_diag(m), "function name '9lives': use letters, digits and '_'");
  CHECK(ir_func_new(m, "vprintf", IR_FUNC_DEVICE, 0) == NULL);
  CHECK_CONTAINS(ir_diag(m), "function name 'vprintf' is reserved");
  CHECK(ir_func_new(m, "r", IR_FUNC_KERNEL, IR_T_F32) == NULL);
  CHECK_CONTAINS(ir_diag(m), "kernel 'r' returns f32: kernels return nothing");
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_param_blob(k, 0, 8), 0);
  CHECK_CONTAINS(ir_diag(m), "param blob of 0 bytes");
  IrFunc *g = ir_func_new(m, "g", IR_FUNC_DEVICE, 0);
  CHECK_EQ_INT(ir_func_attr(g, IR_ATTR_MAXNTID, 32, 1, 1), -1);
  CHECK_CONTAINS(ir_diag(m), "kernel attributes apply to kernels; @g is a device function");
  CHECK_EQ_INT(ir_var_new(k, IR_T_F32, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "var_new: 0 elements; from 1 to 65536");
  CHECK_EQ_INT(ir_var_new(k, T("[4 x f32]"), 1), 0);
  CHECK_CONTAINS(ir_diag(m), "var_new: type [4 x f32] cannot be a variable");
}

int main(void) {
  test_target();
  test_checked_once();
  test_cases();
  test_all_reported();
  test_builder_checks();
  ir_module_free(m);
  return check_report();
}
