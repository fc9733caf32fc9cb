/* ir_emit_mem.c: the lowering of memory, synchronisation, warp and
 * tensor-core ops: weak loads and stores as LLVM instructions, ordered and
 * cache-hinted ones and atomics as inline PTX (so the memory order and scope
 * are exactly the PTX ones), local variables through allocas, special registers
 * (intrinsics where LLVM 7 knows them), barriers, fences, shuffles, votes,
 * reductions, mma.sync, ldmatrix/stmatrix and cp.async.
 *
 * Hopper ops (wgmma, TMA, mbarrier, ...) land here: most are an IrAsm with
 * their operands, like emit_mma and emit_cpasync; the fixed ones need only the
 * ASM0 row in ir_ops.h. */
#include <stdio.h>
#include <string.h>

#include "ir_emit.h"

/* --- memory ----------------------------------------------------------------------------------------------------- */
/* A pointer to `want` in the space of p (bitcast when the element differs). */
static const char *ptr_as(IrEmit *e, IrRef p, const char *want_ptr) {
  const char *lp = LT(e, TY(e, p));
  if (strcmp(lp, want_ptr) == 0) return VAL(e, p);
  int n = ir_ll_tmp(e);
  ir_ll_ins(e, "%%t%d = bitcast %s %s to %s", n, lp, VAL(e, p), want_ptr);
  return ir_e_tname(e, n);
}

static void ptr_type_text(IrEmit *e, IrType elem, int space, char *out, size_t n) {
  int as = space == IR_SPACE_GLOBAL ? 1 : space == IR_SPACE_SHARED ? 3 : space == IR_SPACE_LOCAL ? 5
           : space == IR_SPACE_CONST ? 4 : 0;
  if (as) snprintf(out, n, "%s addrspace(%d)*", LT(e, elem), as);
  else snprintf(out, n, "%s*", LT(e, elem));
}

/* ld/st through inline PTX: ordered, cache-hinted or shared_cluster accesses. */
static void mem_asm(IrEmit *e, IrRef v, int store, IrRef p, IrType t, IrRef val) {
  const int64_t *imm = IM(e, v);
  int order = (int)imm[0], scope = (int)imm[1], cache = (int)imm[2];
  const IrTypeRec *tr = REC(e, t);
  int n = tr->kind == IR_TK_VEC ? (int)tr->len : 1;
  IrType et = tr->kind == IR_TK_VEC ? tr->elem : t;
  IrReg r = ir_asm_reg(e, et);
  int space = REC(e, TY(e, p))->space;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "%s", store ? "st" : "ld");
  if (order == IR_ORDER_VOLATILE) ir_asm_text(&as, ".volatile");
  else if (order != IR_ORDER_WEAK) ir_asm_text(&as, ".%s.%s", ir_imm_name('O', order), ir_imm_name('S', scope));
  ir_asm_text(&as, "%s", ir_ptx_space(space));
  if (cache) ir_asm_text(&as, ".%s", ir_imm_name('C', cache));
  if (n > 1) ir_asm_text(&as, ".v%d", n);
  ir_asm_text(&as, ".%s ", r.ptx);
  if (store) {
    ir_asm_text(&as, "[$0], ");
    ir_asm_regs(&as, 1, n, 0);
    ir_asm_text(&as, ";");
    ir_asm_addr(e, &as, p);
    for (int i = 0; i < n; i++) {
      const char *x = VAL(e, val);
      char xs[80];
      ir_e_keep(xs, sizeof xs, x);
      if (n > 1) {
        ir_e_keep(xs, sizeof xs, ir_e_tmp(e));
        ir_ll_ins(e, "%s = extractelement %s %s, i32 %d", xs, LT(e, t), VAL(e, val), i);
      }
      char rv[80];
      ir_e_keep(rv, sizeof rv, ir_asm_to_reg(e, r, et, xs));
      ir_asm_in(e, &as, r.letter, r.ll, rv);
    }
    ir_asm_call(e, &as, NULL, "void", 1 | 4);
    return;
  }
  ir_asm_regs(&as, 0, n, 0);
  ir_asm_text(&as, ", [$%d];", n);
  for (int i = 0; i < n; i++) ir_asm_out(&as, r.letter);
  ir_asm_addr(e, &as, p);
  char res[32], ret[1024];
  ir_e_keep(res, sizeof res, ir_e_tmp(e));
  if (n == 1) {
    snprintf(ret, sizeof ret, "%s", r.ll);
    ir_asm_call(e, &as, res, ret, 1 | 4);
    ir_asm_from_reg(e, r, et, res, ir_e_def(e, v));
    return;
  }
  size_t len = (size_t)snprintf(ret, sizeof ret, "{");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(ret + len, sizeof ret - len, "%s%s", i ? ", " : "", r.ll);
  snprintf(ret + len, sizeof ret - len, "}");
  ir_asm_call(e, &as, res, ret, 1 | 4);
  char acc[32] = "undef";
  for (int i = 0; i < n; i++) {
    char x[32], y[32];
    ir_e_keep(x, sizeof x, ir_e_tmp(e));
    ir_ll_ins(e, "%s = extractvalue %s %s, %d", x, ret, res, i);
    ir_e_keep(y, sizeof y, ir_e_tmp(e));
    ir_asm_from_reg(e, r, et, x, y);
    const char *dst = i == n - 1 ? ir_e_def(e, v) : ir_e_tmp(e);
    char d[32];
    ir_e_keep(d, sizeof d, dst);
    ir_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, LT(e, t), acc, LT(e, et), y, i);
    ir_e_keep(acc, sizeof acc, d);
  }
}

static void emit_load(IrEmit *e, IrRef v) {
  IrRef p = A(e, v)[0];
  IrType t = TY(e, v);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 0, p, t, 0);
    return;
  }
  char pt[256], ps[80];
  ptr_type_text(e, t, space, pt, sizeof pt);
  ir_e_keep(ps, sizeof ps, ptr_as(e, p, pt));
  ir_ll_ins(e, "%s = load %s%s, %s %s, align %u", ir_e_def(e, v), imm[0] == IR_ORDER_VOLATILE ? "volatile " : "",
            LT(e, t), pt, ps, REC(e, TY(e, p))->align);
}

static void emit_store(IrEmit *e, IrRef v) {
  IrRef p = A(e, v)[0], x = A(e, v)[1];
  IrType t = TY(e, x);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 1, p, t, x);
    return;
  }
  char pt[256], ps[80];
  ptr_type_text(e, t, space, pt, sizeof pt);
  ir_e_keep(ps, sizeof ps, ptr_as(e, p, pt));
  ir_ll_ins(e, "store %s%s %s, %s %s, align %u", imm[0] == IR_ORDER_VOLATILE ? "volatile " : "", LT(e, t),
            VAL(e, x), pt, ps, REC(e, TY(e, p))->align);
}

static void emit_gep(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType pt = TY(e, a[0]);
  const char *lp = LT(e, pt);
  if (strcmp(lp, LT(e, TY(e, v))) != 0) {
    ir_ll_fail(e, v, "gep changes the LLVM pointer type");
    return;
  }
  char p[80];
  ir_e_keep(p, sizeof p, VAL(e, a[0]));
  ir_ll_ins(e, "%s = getelementptr %s, %s %s, %s %s", ir_e_def(e, v), LT(e, REC(e, pt)->elem), lp, p, LT(e, TY(e, a[1])),
            VAL(e, a[1]));
}

/* The address of element idx (text, with its LLVM type) of a variable. */
static void var_slot(IrEmit *e, uint32_t var, const char *idx_type, const char *idx, char *out, size_t n) {
  const IrVarInfo *vi = &e->f->vars[var];
  if (vi->count == 1) { /* a scalar alloca: any valid index is 0 */
    snprintf(out, n, "%%var%u", var);
    return;
  }
  const char *t = ir_e_tmp(e);
  snprintf(out, n, "%s", t);
  ir_ll_ins(e, "%s = getelementptr [%d x %s], [%d x %s]* %%var%u, i32 0, %s %s", out, vi->count, LT(e, vi->type),
            vi->count, LT(e, vi->type), var, idx_type, idx);
}

static void emit_var(IrEmit *e, IrRef v) {
  const IrInst *in = I(e, v);
  const int64_t *imm = IM(e, v);
  const IrRef *a = A(e, v);
  uint32_t var = (uint32_t)imm[0];
  const IrVarInfo *vi = &e->f->vars[var];
  const char *T = LT(e, vi->type);
  unsigned al = REC(e, vi->type)->natural;
  char slot[64], idx[80];
  int dyn = in->op == IR_OP_VLOADX || in->op == IR_OP_VSTOREX;
  if (dyn) {
    ir_e_keep(idx, sizeof idx, VAL(e, a[0]));
    var_slot(e, var, LT(e, TY(e, a[0])), idx, slot, sizeof slot);
  } else {
    snprintf(idx, sizeof idx, "%lld", (long long)imm[1]);
    var_slot(e, var, "i32", idx, slot, sizeof slot);
  }
  if (in->op == IR_OP_VLOAD || in->op == IR_OP_VLOADX)
    ir_ll_ins(e, "%s = load %s, %s* %s, align %u", ir_e_def(e, v), T, T, slot, al);
  else ir_ll_ins(e, "store %s %s, %s* %s, align %u", T, VAL(e, a[in->nargs - 1]), T, slot, al);
}

static const char *atom_type(IrType t, int op) {
  int f = t == IR_T_F32 || t == IR_T_F64, w = (t == IR_T_I64 || t == IR_T_F64) ? 64 : 32;
  switch (op) {
    case IR_REDOP_ADD: return f ? (w == 64 ? "f64" : "f32") : (w == 64 ? "u64" : "u32");
    case IR_REDOP_MIN: case IR_REDOP_MAX: return w == 64 ? "s64" : "s32";
    case IR_REDOP_UMIN: case IR_REDOP_UMAX: case IR_REDOP_INC: case IR_REDOP_DEC: return w == 64 ? "u64" : "u32";
    default: return w == 64 ? "b64" : "b32";
  }
}

static void emit_atom(IrEmit *e, IrRef v, int cas) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  int op = cas ? -1 : (int)imm[0];
  int order = (int)imm[cas ? 0 : 1], scope = (int)imm[cas ? 1 : 2];
  IrType t = TY(e, v);
  IrReg r = ir_asm_reg(e, t);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "atom");
  if (order != IR_ORDER_WEAK) ir_asm_text(&as, ".%s", ir_imm_name('O', order));
  if (order != IR_ORDER_WEAK || scope != IR_SCOPE_GPU) ir_asm_text(&as, ".%s", ir_imm_name('S', scope));
  ir_asm_text(&as, "%s", ir_ptx_space(REC(e, TY(e, a[0]))->space));
  static const char *const opn[] = {"add", "min", "max", "min", "max", "inc", "dec", "and", "or", "xor", "exch"};
  if (cas) ir_asm_text(&as, ".cas.%s $0, [$1], $2, $3;", t == IR_T_I64 ? "b64" : "b32");
  else ir_asm_text(&as, ".%s.%s $0, [$1], $2;", opn[op], atom_type(t, op));
  ir_asm_out(&as, r.letter);
  ir_asm_addr(e, &as, a[0]);
  for (int i = 1; i < I(e, v)->nargs; i++) ir_asm_in(e, &as, r.letter, r.ll, VAL(e, a[i]));
  ir_asm_call(e, &as, ir_e_def(e, v), r.ll, 1 | 4);
}

/* --- special registers, synchronisation, warp ops ---------------------------------------------------------------- */
static void emit_sreg(IrEmit *e, IrRef v) {
  const IrSregInfo *s = &ir_sreg_info[IM(e, v)[0]];
  if (s->intr[0]) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", s->intr);
    ir_e_declare(e, name, "i32", "");
    ir_ll_ins(e, "%s = call i32 @%s()", ir_e_def(e, v), name);
    return;
  }
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "mov.u32 $0, %s;", s->reg);
  ir_asm_out(&as, 'r');
  ir_asm_call(e, &as, ir_e_def(e, v), "i32", 0);
}

static void emit_timer(IrEmit *e, IrRef v) {
  const IrTimerInfo *t = &ir_timer_info[IM(e, v)[0]];
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "mov.u%d $0, %s;", t->bits, t->reg);
  ir_asm_out(&as, t->bits == 64 ? 'l' : 'r');
  ir_asm_call(e, &as, ir_e_def(e, v), t->bits == 64 ? "i64" : "i32", 1);
}

static void emit_call0(IrEmit *e, IrRef v) {
  const char *name = ir_op_info[I(e, v)->op].ll;
  ir_e_declare(e, name, "void", "");
  int conv = (ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) != 0;
  if (conv) e->uses_convergent = 1;
  ir_ll_ins(e, "call void @%s()%s", name, conv ? " #0" : "");
}

static void emit_barnamed(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  int n = I(e, v)->nargs;
  ir_asm_text(&as, "bar.%s $0%s;", IM(e, v)[0] == IR_BAR_ARRIVE ? "arrive" : "sync", n > 1 ? ", $1" : "");
  for (int i = 0; i < n; i++) ir_asm_in(e, &as, 'r', "i32", VAL(e, a[i]));
  ir_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_syncwarp(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "bar.warp.sync $0;");
  ir_asm_in(e, &as, 'r', "i32", VAL(e, A(e, v)[0]));
  ir_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_fence(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "fence.%s.%s;", ir_imm_name('Y', IM(e, v)[0]), ir_imm_name('S', IM(e, v)[1]));
  ir_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_shfl(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  int width = IM(e, v)[1] ? (int)IM(e, v)[1] : 32;
  int c = ((32 - width) << 8) | (mode == IR_SHFL_UP ? 0 : 0x1f);
  IrType t = TY(e, v);
  char name[64], m[80], x[80];
  snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", ir_imm_name('H', mode), t == IR_T_F32 ? "f32" : "i32");
  ir_e_declare(e, name, LT(e, t), t == IR_T_F32 ? "i32, float, i32, i32" : "i32, i32, i32, i32");
  ir_e_keep(m, sizeof m, VAL(e, a[0]));
  ir_e_keep(x, sizeof x, VAL(e, a[1]));
  e->uses_convergent = 1;
  ir_ll_ins(e, "%s = call %s @%s(i32 %s, %s %s, i32 %s, i32 %d) #0", ir_e_def(e, v), LT(e, t), name, m, LT(e, t), x,
            VAL(e, a[2]), c);
}

static void emit_vote(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  const char *ret = mode == IR_VOTE_BALLOT ? "i32" : "i1";
  char name[64], m[80];
  snprintf(name, sizeof name, "llvm.nvvm.vote.%s.sync", ir_imm_name('V', mode));
  ir_e_declare(e, name, ret, "i32, i1");
  ir_e_keep(m, sizeof m, VAL(e, a[0]));
  e->uses_convergent = 1;
  ir_ll_ins(e, "%s = call %s @%s(i32 %s, i1 %s) #0", ir_e_def(e, v), ret, name, m, VAL(e, a[1]));
}

static void emit_redux(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int op = (int)IM(e, v)[0];
  static const char *const opn[] = {"add.s32", "min.s32", "max.s32", "min.u32", "max.u32", "", "", "and.b32",
                                    "or.b32", "xor.b32", ""};
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "redux.sync.%s $0, $1, $2;", opn[op]);
  ir_asm_out(&as, 'r');
  ir_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
  ir_asm_in(e, &as, 'r', "i32", VAL(e, a[0]));
  ir_asm_call(e, &as, ir_e_def(e, v), "i32", 2);
}

/* --- tensor cores and asynchronous copies ---------------------------------------------------------------------------- */
static char reg_letter(IrType t) { return t == IR_T_F32 ? 'f' : t == IR_T_F64 ? 'd' : 'r'; }
static const char *reg_ll(IrType t) { return t == IR_T_F32 ? "float" : t == IR_T_F64 ? "double" : "i32"; }

static void emit_mma(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  IrMmaFrag fr;
  if (!ir_mma_lookup((int)imm[0], (int)imm[1], (int)imm[2], (int)imm[3], (int)imm[4], &fr)) {
    ir_ll_fail(e, v, "mma combination not in the table");
    return;
  }
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  const char *const *tn = ir_mma_type_names;
  ir_asm_text(&as, "mma.sync.aligned.%s.row.col%s.%s.%s.%s.%s ", ir_imm_name('M', imm[0]),
           (imm[5] & IR_FLAG_SAT) ? ".satfinite" : "", tn[imm[4]], tn[imm[1]], tn[imm[2]], tn[imm[3]]);
  if (imm[1] == IR_MT_B1) { /* b1: the bit operation follows the types */
    as.text[strlen(as.text) - 1] = 0;
    ir_asm_text(&as, ".and.popc ");
  }
  int n[4] = {fr.d_regs, fr.a_regs, fr.b_regs, fr.c_regs};
  int at = 0;
  for (int i = 0; i < 4; i++) {
    ir_asm_text(&as, "%s", i ? ", " : "");
    ir_asm_regs(&as, at, n[i], 1);
    at += n[i];
  }
  ir_asm_text(&as, ";");
  for (int i = 0; i < fr.d_regs; i++) ir_asm_out(&as, reg_letter(fr.d_reg));
  IrType kinds[3] = {fr.ab_reg, fr.ab_reg, fr.c_reg};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n[k + 1]; i++) {
      char x[80];
      ir_e_keep(x, sizeof x, ir_e_frag_reg(e, a[k], i, n[k + 1]));
      ir_asm_in(e, &as, reg_letter(kinds[k]), reg_ll(kinds[k]), x);
    }
  ir_asm_call(e, &as, ir_e_def(e, v), LT(e, TY(e, v)), 2);
  ir_e_split(e, v);
}

static void emit_ldstmatrix(IrEmit *e, IrRef v, int store) {
  const IrRef *a = A(e, v);
  int n = (int)IM(e, v)[0];
  int trans = (IM(e, v)[1] & IR_FLAG_TRANS) != 0;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "%s.sync.aligned.m8n8.x%d%s.shared.b16 ", store ? "stmatrix" : "ldmatrix", n, trans ? ".trans" : "");
  if (store) {
    ir_asm_text(&as, "[$0], ");
    ir_asm_regs(&as, 1, n, 1);
    ir_asm_text(&as, ";");
    ir_asm_addr(e, &as, a[0]);
    for (int i = 0; i < n; i++) {
      char x[80];
      ir_e_keep(x, sizeof x, ir_e_frag_reg(e, a[1], i, n));
      ir_asm_in(e, &as, 'r', "i32", x);
    }
    ir_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
    return;
  }
  ir_asm_regs(&as, 0, n, 1);
  ir_asm_text(&as, ", [$%d];", n);
  for (int i = 0; i < n; i++) ir_asm_out(&as, 'r');
  ir_asm_addr(e, &as, a[0]);
  ir_asm_call(e, &as, ir_e_def(e, v), LT(e, TY(e, v)), 1 | 2 | 4);
  ir_e_split(e, v);
}

static void emit_cpasync(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int bytes = (int)IM(e, v)[0];
  int cg = IM(e, v)[1] == IR_CACHE_CG;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "cp.async.%s.shared.global [$0], [$1], %d%s;", cg ? "cg" : "ca", bytes, I(e, v)->nargs > 2 ? ", $2" : "");
  ir_asm_addr(e, &as, a[0]);
  ir_asm_addr(e, &as, a[1]);
  if (I(e, v)->nargs > 2) ir_asm_in(e, &as, 'r', "i32", VAL(e, a[2]));
  ir_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_asm0(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "%s", ir_op_info[I(e, v)->op].ll);
  ir_asm_call(e, &as, NULL, "void", 1 | 4 | ((ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) ? 2 : 0));
}

static void emit_cpwait(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  ir_asm_text(&as, "cp.async.wait_group %lld;", (long long)IM(e, v)[0]);
  ir_asm_call(e, &as, NULL, "void", 1 | 4);
}

int ir_emit_mem_op(IrEmit *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    case IR_LOW_GEP: emit_gep(e, v); break;
    case IR_LOW_LOAD: emit_load(e, v); break;
    case IR_LOW_STORE: emit_store(e, v); break;
    case IR_LOW_VAR: emit_var(e, v); break;
    case IR_LOW_ATOM: emit_atom(e, v, 0); break;
    case IR_LOW_CAS: emit_atom(e, v, 1); break;
    case IR_LOW_SREG: emit_sreg(e, v); break;
    case IR_LOW_TIMER: emit_timer(e, v); break;
    case IR_LOW_CALL0: emit_call0(e, v); break;
    case IR_LOW_BARNAMED: emit_barnamed(e, v); break;
    case IR_LOW_SYNCWARP: emit_syncwarp(e, v); break;
    case IR_LOW_FENCE: emit_fence(e, v); break;
    case IR_LOW_SHFL: emit_shfl(e, v); break;
    case IR_LOW_VOTE: emit_vote(e, v); break;
    case IR_LOW_REDUX: emit_redux(e, v); break;
    case IR_LOW_MMA: emit_mma(e, v); break;
    case IR_LOW_LDMATRIX: emit_ldstmatrix(e, v, 0); break;
    case IR_LOW_STMATRIX: emit_ldstmatrix(e, v, 1); break;
    case IR_LOW_CPASYNC: emit_cpasync(e, v); break;
    case IR_LOW_ASM0: emit_asm0(e, v); break;
    case IR_LOW_CPWAIT: emit_cpwait(e, v); break;
    default: return 0;
  }
  return 1;
}
