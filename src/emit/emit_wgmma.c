/* emit_wgmma.c: the lowering of the Hopper (sm_90a) ops of one part:
 * the warpgroup MMA: wgmma.mma_async (SS and RS), its commit and wait groups,
 * and fence_operand (the rows of IR_LOWERINGS_WGMMA in src/ir/ir_impl.h).
 *
 * libnvvm 13 has no wgmma intrinsics, so each is inline PTX. LLVM IR has no
 * "+f" constraint: the accumulator is N outputs ("=f" or "=r") and the same
 * registers again as inputs tied to them ("0".."N-1"), so the asm's result
 * (a struct) is the new accumulator and the old one flows into it. scale_d
 * (an i1) is passed as an i32 and turned into the predicate inside the asm.
 * An m64n256 f32 asm has 128 + 128 + 3 operands: its text, constraints and
 * arguments are built in growable buffers, not in an EmAsm. */
#include <stdio.h>
#include <string.h>

#include "emit_impl.h"

/* The same mode bits as the check rule (ir_rules.c). */
enum { WG_TRANS_A = 1, WG_TRANS_B = 2, WG_NEG_A = 4, WG_NEG_B = 8, WG_SAT = 16 };

typedef struct WgAsm {
  ClBuf text, cons, args;
  int nargs;
} WgAsm;

static void wg_in(WgAsm *w, const char *cons, const char *ll, const char *val) {
  cl_buf_printf(&w->cons, "%s%s", cl_buf_str(&w->cons)[0] ? "," : "", cons);
  cl_buf_printf(&w->args, "%s%s %s", w->nargs++ ? ", " : "", ll, val);
}

/* Writes the call (text without characters to escape) and frees the buffers. */
static void wg_call(Em *e, WgAsm *w, const char *dst, const char *ret, int memory) {
  if (memory) cl_buf_printf(&w->cons, "%s~{memory}", cl_buf_str(&w->cons)[0] ? "," : "");
  e->uses_convergent = 1;
  em_ll_ins(e, "%s%scall %s asm sideeffect \"%s\", \"%s\"(%s) #0", dst ? dst : "", dst ? " = " : "", ret,
            cl_buf_str(&w->text), cl_buf_str(&w->cons), cl_buf_str(&w->args));
  cl_buf_free(&w->text);
  cl_buf_free(&w->cons);
  cl_buf_free(&w->args);
}

static char letter(IrType t) { return t == IR_T_F32 ? 'f' : 'r'; }
static const char *ll_of(IrType t) { return t == IR_T_F32 ? "float" : "i32"; }

/* The register texts of an accumulator struct (or a scalar), in the emitter's arena. */
static const char *reg_text(Em *e, IrRef v, int i, int n) {
  const char *s = em_frag_reg(e, v, i, n);
  return em_keep_str(e, s, strlen(s));
}

static void emit_wgmma(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  int n = (int)imm[0], ta = (int)imm[1], tb = (int)imm[2], td = (int)imm[3];
  int64_t mode = imm[4];
  IrWgmmaForm fm;
  if (!ir_wgmma_form(ta, tb, td, n, &fm, NULL)) {
    em_ll_fail(e, v, "wgmma form not in the table");
    return;
  }
  const char *const *tn = ir_mma_type_names;
  int rs = TY(e, a[0]) != IR_T_I64;
  int nd = fm.d_regs, at = nd;
  WgAsm w = {{0}, {0}, {0}, 0};
  /* the text: the predicate from $scale, then the instruction */
  int ia = at, ib = at + (rs ? 4 : 1), is = ib + 1;
  cl_buf_printf(&w.text, "{ .reg .pred p; setp.ne.b32 p, $%d, 0; wgmma.mma_async.sync.aligned.m64n%dk%d%s.%s.%s.%s {",
                is, n, fm.k, (mode & WG_SAT) ? ".satfinite" : "", tn[td], tn[ta], tn[tb]);
  for (int i = 0; i < nd; i++) cl_buf_printf(&w.text, "%s$%d", i ? ", " : "", i);
  if (rs) cl_buf_printf(&w.text, "}, {$%d, $%d, $%d, $%d}, $%d, p", ia, ia + 1, ia + 2, ia + 3, ib);
  else cl_buf_printf(&w.text, "}, $%d, $%d, p", ia, ib);
  if (!fm.integer) cl_buf_printf(&w.text, ", %d, %d", (mode & WG_NEG_A) ? -1 : 1, (mode & WG_NEG_B) ? -1 : 1);
  if (fm.mn_major) {
    if (!rs) cl_buf_printf(&w.text, ", %d", (mode & WG_TRANS_A) ? 1 : 0);
    cl_buf_printf(&w.text, ", %d", (mode & WG_TRANS_B) ? 1 : 0);
  }
  cl_buf_puts(&w.text, "; }");
  /* outputs, then A, B, scale, then the accumulator tied to the outputs */
  char c[8] = {'=', letter(fm.d_reg), 0};
  for (int i = 0; i < nd; i++) cl_buf_printf(&w.cons, "%s%s", i ? "," : "", c);
  if (rs)
    for (int i = 0; i < 4; i++) wg_in(&w, "r", "i32", reg_text(e, a[0], i, 4));
  else
    wg_in(&w, "l", "i64", reg_text(e, a[0], 0, 1));
  wg_in(&w, "l", "i64", reg_text(e, a[1], 0, 1));
  const char *scale = em_tmp(e);
  char sc[40];
  em_keep(sc, sizeof sc, scale);
  em_ll_ins(e, "%s = zext i1 %s to i32", sc, VAL(e, a[3]));
  wg_in(&w, "r", "i32", sc);
  for (int i = 0; i < nd; i++) {
    char tie[16];
    snprintf(tie, sizeof tie, "%d", i);
    wg_in(&w, tie, ll_of(fm.d_reg), reg_text(e, a[2], i, nd));
  }
  wg_call(e, &w, em_def(e, v), LT(e, TY(e, v)), 1);
  em_split(e, v);
}

static void emit_wgwait(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "wgmma.wait_group.sync.aligned %lld;", (long long)IM(e, v)[0]);
  em_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

/* An empty asm with the registers tied in and out: the compiler keeps every
   read and write of them on its side of this point. */
static void emit_wgfenceop(Em *e, IrRef v) {
  IrRef x = A(e, v)[0];
  IrType t = TY(e, x);
  const IrTypeRec *r = REC(e, t);
  int n = r->kind == IR_TK_STRUCT ? (int)r->len : 1;
  WgAsm w = {{0}, {0}, {0}, 0};
  for (int i = 0; i < n; i++) {
    IrType ft = n == 1 && r->kind != IR_TK_STRUCT ? t : r->fields[i];
    char c[8] = {'=', letter(ft), 0};
    cl_buf_printf(&w.cons, "%s%s", i ? "," : "", c);
  }
  for (int i = 0; i < n; i++) {
    IrType ft = n == 1 && r->kind != IR_TK_STRUCT ? t : r->fields[i];
    char tie[16];
    snprintf(tie, sizeof tie, "%d", i);
    wg_in(&w, tie, ll_of(ft), r->kind == IR_TK_STRUCT ? reg_text(e, x, i, n) : reg_text(e, x, 0, 1));
  }
  wg_call(e, &w, em_def(e, v), LT(e, t), 1);
  em_split(e, v);
}

int em_wgmma_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    case IR_LOW_WGMMA: emit_wgmma(e, v); break;
    case IR_LOW_WGWAIT: emit_wgwait(e, v); break;
    case IR_LOW_WGFENCEOP: emit_wgfenceop(e, v); break;
    default: return 0;
  }
  return 1;
}
