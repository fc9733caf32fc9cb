/* emit_sync90.c: the lowering of the Hopper (sm_90a) ops of one part:
 * mbarriers, proxy fences, named barriers, elect.sync, cluster barriers, distributed shared memory and setmaxnreg
 * (the rows of IR_LOWERINGS_SYNC90 in src/ir/ir_impl.h).
 *
 * Everything is inline PTX (libnvvm 13 rejects its mbarrier intrinsics and
 * deletes its setmaxnreg one). A PTX predicate cannot leave an asm statement
 * as i1 through NVVM's constraints, so predicates come out as 0/1 in a 32-bit
 * register (selp) and are compared here. The fences and the cluster barrier
 * are ASM0 rows of the op table; this file has the ops with operands. */
#include <stdio.h>

#include "emit_impl.h"

/* ".shared::cta" or ".shared::cluster": where the barrier operand lives. */
static const char *mbar_space(Em *e, IrRef p) {
  return REC(e, TY(e, p))->space == IR_SPACE_SHARED_CLUSTER ? ".shared::cluster" : ".shared::cta";
}

/* An i32 operand of the text: a constant inline (counts and byte counts read
   best as immediates: `mbarrier.init [%r1], 256;`), else the next $N input. */
static void int_arg(Em *e, EmAsm *as, IrRef x, char *text, size_t n) {
  if (I(e, x)->op == IR_OP_CONST) {
    snprintf(text, n, "%lld", (long long)(int32_t)IM(e, x)[0]);
    return;
  }
  snprintf(text, n, "$%d", as->nout + as->nin);
  em_asm_in(e, as, 'r', "i32", VAL(e, x));
}

/* A 0/1 i32 asm result as the op's i1. */
static void pred_result(Em *e, IrRef v, EmAsm *as) {
  char r[32];
  em_keep(r, sizeof r, em_tmp(e));
  em_asm_call(e, as, r, "i32", 1 | 4);
  em_ll_ins(e, "%s = icmp ne i32 %s, 0", em_def(e, v), r);
}

static void emit_mbar(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  int op = in->op, n = in->nargs;
  int cluster = ir_op_info[op].imms[0] == 'S' && IM(e, v)[0] == IR_SCOPE_CLUSTER;
  const char *sp = mbar_space(e, a[0]);
  char k[32];
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  switch (op) {
    case IR_OP_MBINIT:
      em_asm_addr(e, &as, a[0]);
      int_arg(e, &as, a[1], k, sizeof k);
      em_asm_text(&as, "mbarrier.init.shared::cta.b64 [$0], %s;", k);
      em_asm_call(e, &as, NULL, "void", 1 | 4);
      return;
    case IR_OP_MBINVAL:
      em_asm_text(&as, "mbarrier.inval.shared::cta.b64 [$0];");
      em_asm_addr(e, &as, a[0]);
      em_asm_call(e, &as, NULL, "void", 1 | 4);
      return;
    case IR_OP_MBARRIVE: {
      int token = in->type == IR_T_I64;
      int remote = REC(e, TY(e, a[0]))->space == IR_SPACE_SHARED_CLUSTER;
      const char *sem = cluster ? ".release.cluster" : "";
      int first = token ? 1 : 0;
      if (token) em_asm_text(&as, "mbarrier.arrive%s%s.b64 $0, [$1]", sem, sp);
      else if (remote) em_asm_text(&as, "mbarrier.arrive%s%s.b64 _, [$0]", sem, sp);
      else em_asm_text(&as, "{ .reg .b64 st; mbarrier.arrive%s%s.b64 st, [$0]", sem, sp);
      if (n > 1) em_asm_text(&as, ", $%d", first + 1);
      em_asm_text(&as, token || remote ? ";" : "; }");
      if (token) em_asm_out(&as, 'l');
      em_asm_addr(e, &as, a[0]);
      if (n > 1) em_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
      em_asm_call(e, &as, token ? em_def(e, v) : NULL, token ? "i64" : "void", 1 | 4);
      return;
    }
    case IR_OP_MBARRIVETX:
      em_asm_addr(e, &as, a[0]);
      int_arg(e, &as, a[1], k, sizeof k);
      em_asm_text(&as, "mbarrier.arrive.expect_tx%s%s.b64 _, [$0], %s;", cluster ? ".release.cluster" : "", sp, k);
      em_asm_call(e, &as, NULL, "void", 1 | 4);
      return;
    case IR_OP_MBEXPECTTX:
      em_asm_addr(e, &as, a[0]);
      int_arg(e, &as, a[1], k, sizeof k);
      em_asm_text(&as, "mbarrier.expect_tx.relaxed.%s%s.b64 [$0], %s;", cluster ? "cluster" : "cta", sp, k);
      em_asm_call(e, &as, NULL, "void", 1 | 4);
      return;
    case IR_OP_MBTRYWAIT:
    case IR_OP_MBTESTWAIT: {
      char hint[40] = "";
      em_asm_out(&as, 'r');
      em_asm_addr(e, &as, a[0]);
      em_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
      if (n > 2) {
        int_arg(e, &as, a[2], k, sizeof k);
        snprintf(hint, sizeof hint, ", %s", k);
      }
      em_asm_text(&as, "{ .reg .pred p; mbarrier.%s.parity%s.shared::cta.b64 p, [$1], $2%s; selp.u32 $0, 1, 0, p; }",
                  op == IR_OP_MBTRYWAIT ? "try_wait" : "test_wait", cluster ? ".acquire.cluster" : "", hint);
      pred_result(e, v, &as);
      return;
    }
    case IR_OP_MBWAIT: { /* the label is local to the braces; ${:uid} keeps copies apart anyway */
      char hint[40] = "";
      em_asm_addr(e, &as, a[0]);
      em_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
      if (n > 2) { /* each try may suspend the thread up to the hint (ns) before it tries again */
        int_arg(e, &as, a[2], k, sizeof k);
        snprintf(hint, sizeof hint, ", %s", k);
      }
      em_asm_text(&as, "{ .reg .pred p; MBWAIT${:uid}: mbarrier.try_wait.parity%s.shared::cta.b64 p, [$0], $1%s; "
                       "@!p bra MBWAIT${:uid}; }", cluster ? ".acquire.cluster" : "", hint);
      em_asm_call(e, &as, NULL, "void", 1 | 4);
      return;
    }
    default: em_ll_fail(e, v, "no mbarrier lowering for %s", ir_op_info[op].name); return;
  }
}

/* elect.sync: the leader's lane and whether this lane is the leader. */
static void emit_elect(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "{ .reg .pred p; .reg .b32 l; elect.sync l|p, $2; selp.u32 $1, 1, 0, p; mov.u32 $0, l; }");
  em_asm_out(&as, 'r');
  em_asm_out(&as, 'r');
  em_asm_in(e, &as, 'r', "i32", VAL(e, A(e, v)[0]));
  char r[32], lane[32], pr[32], leader[32];
  em_keep(r, sizeof r, em_tmp(e));
  em_asm_call(e, &as, r, "{i32, i32}", 1 | 2);
  em_keep(lane, sizeof lane, em_tmp(e));
  em_ll_ins(e, "%s = extractvalue {i32, i32} %s, 0", lane, r);
  em_keep(pr, sizeof pr, em_tmp(e));
  em_ll_ins(e, "%s = extractvalue {i32, i32} %s, 1", pr, r);
  if (TY(e, v) == IR_T_I1) {
    em_ll_ins(e, "%s = icmp ne i32 %s, 0", em_def(e, v), pr);
    return;
  }
  em_keep(leader, sizeof leader, em_tmp(e));
  em_ll_ins(e, "%s = icmp ne i32 %s, 0", leader, pr);
  char agg[32];
  em_keep(agg, sizeof agg, em_tmp(e));
  em_ll_ins(e, "%s = insertvalue {i32, i1} undef, i32 %s, 0", agg, lane);
  em_ll_ins(e, "%s = insertvalue {i32, i1} %s, i1 %s, 1", em_def(e, v), agg, leader);
  em_split(e, v);
}

/* mapa: a shared address to the shared_cluster address of the same offset in CTA `rank`. */
static void emit_mapa(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "mapa.shared::cluster.u32 $0, $1, $2;");
  em_asm_out(&as, 'r');
  em_asm_addr(e, &as, A(e, v)[0]);
  em_asm_in(e, &as, 'r', "i32", VAL(e, A(e, v)[1]));
  em_asm_call(e, &as, em_def(e, v), "i32", 0);
}

static void emit_ctarank(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "getctarank.shared::cluster.u32 $0, $1;");
  em_asm_out(&as, 'r');
  em_asm_addr(e, &as, A(e, v)[0]);
  em_asm_call(e, &as, em_def(e, v), "i32", 0);
}

/* setmaxnreg.inc/dec n: the count is an immediate of the instruction. */
static void emit_setmaxnreg(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, ir_op_info[I(e, v)->op].ll, (long long)IM(e, v)[0]);
  em_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

int em_sync90_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    case IR_LOW_MBAR: emit_mbar(e, v); return 1;
    case IR_LOW_ELECT: emit_elect(e, v); return 1;
    case IR_LOW_MAPA: emit_mapa(e, v); return 1;
    case IR_LOW_CTARANK: emit_ctarank(e, v); return 1;
    case IR_LOW_SETMAXNREG: emit_setmaxnreg(e, v); return 1;
    default: return 0;
  }
}
