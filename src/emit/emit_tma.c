/* emit_tma.c: the lowering of the Hopper (sm_90a) ops of one part:
 * the bulk tensor engine (cp.async.bulk.tensor loads, multicast loads, stores, reductions, prefetches) and non-tensor bulk copies
 * (the rows of IR_LOWERINGS_TMA in src/ir/ir_impl.h).
 *
 * Every op is one inline PTX instruction with side effects and a memory
 * clobber (libnvvm 13 has no intrinsics for them: hopper-facts 0, 4.3).
 * Shared addresses are 32-bit (`r`), global ones and the descriptor 64-bit
 * (`l`); the descriptor is the generic address of the tensor map (a
 * grid-constant parameter's becomes cvta.param). */
#include <stdio.h>

#include "emit_impl.h"

/* The descriptor operand: a generic 64-bit address of the tensor map. */
static void desc_addr(Em *e, EmAsm *as, IrRef p) {
  IrType pt = TY(e, p);
  int space = REC(e, pt)->space;
  if (space == IR_SPACE_PARAM || space == IR_SPACE_GENERIC) {
    em_asm_addr(e, as, p);
    return;
  }
  char g[32];
  em_keep(g, sizeof g, em_tmp(e));
  em_ll_ins(e, "%s = addrspacecast %s %s to i8*", g, LT(e, pt), VAL(e, p));
  const char *t = em_tmp(e);
  em_ll_ins(e, "%s = ptrtoint i8* %s to i64", t, g);
  em_asm_in(e, as, 'l', "i64", t);
}

/* "{$k, $k+1, ...}" for the rank coordinates starting at operand `from`. */
static void coords(Em *e, EmAsm *as, const IrRef *a, int from, int rank, int dollar) {
  em_asm_text(as, "{");
  for (int i = 0; i < rank; i++) {
    em_asm_text(as, "%s$%d", i ? ", " : "", dollar + i);
    em_asm_in(e, as, 'r', "i32", VAL(e, a[from + i]));
  }
  em_asm_text(as, "}");
}

static void emit_tma(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  int op = in->op;
  if (op == IR_OP_TMAPFDESC) {
    em_asm_text(&as, "prefetch.tensormap [$0];");
    desc_addr(e, &as, a[0]);
    em_asm_call(e, &as, NULL, "void", 1 | 4);
    return;
  }
  int rank = (int)IM(e, v)[0];
  if (op == IR_OP_TMALOAD || op == IR_OP_TMALOADMC) {
    int mc = op == IR_OP_TMALOADMC;
    em_asm_text(&as, "cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes%s [$0], [$1, ",
                rank, mc ? ".multicast::cluster" : "");
    em_asm_addr(e, &as, a[0]);
    desc_addr(e, &as, a[1]);
    coords(e, &as, a, 3, rank, 2);
    em_asm_text(&as, "], [$%d]", 2 + rank);
    em_asm_addr(e, &as, a[2]);
    if (mc) {
      em_asm_text(&as, ", $%d", 3 + rank);
      em_asm_in(e, &as, 'h', "i16", VAL(e, a[3 + rank]));
    }
    em_asm_text(&as, ";");
  } else if (op == IR_OP_TMASTORE || op == IR_OP_TMAREDUCE) {
    if (op == IR_OP_TMASTORE)
      em_asm_text(&as, "cp.async.bulk.tensor.%dd.global.shared::cta.tile.bulk_group [$0, ", rank);
    else
      em_asm_text(&as, "cp.reduce.async.bulk.tensor.%dd.global.shared::cta.%s.tile.bulk_group [$0, ", rank,
                  ir_imm_name('A', IM(e, v)[1]));
    desc_addr(e, &as, a[0]);
    coords(e, &as, a, 2, rank, 1);
    em_asm_text(&as, "], [$%d];", 1 + rank);
    em_asm_addr(e, &as, a[1]);
  } else { /* tma.prefetch */
    em_asm_text(&as, "cp.async.bulk.prefetch.tensor.%dd.L2.global.tile [$0, ", rank);
    desc_addr(e, &as, a[0]);
    coords(e, &as, a, 1, rank, 1);
    em_asm_text(&as, "];");
  }
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_bulk(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  switch (I(e, v)->op) {
    case IR_OP_BULKLOAD:
      em_asm_text(&as, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];");
      em_asm_addr(e, &as, a[0]);
      em_asm_addr(e, &as, a[1]);
      em_asm_in(e, &as, 'r', "i32", VAL(e, a[2]));
      em_asm_addr(e, &as, a[3]);
      break;
    case IR_OP_BULKSTORE:
      em_asm_text(&as, "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;");
      em_asm_addr(e, &as, a[0]);
      em_asm_addr(e, &as, a[1]);
      em_asm_in(e, &as, 'r', "i32", VAL(e, a[2]));
      break;
    default: /* bulk.prefetch */
      em_asm_text(&as, "cp.async.bulk.prefetch.L2.global [$0], $1;");
      em_asm_addr(e, &as, a[0]);
      em_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
      break;
  }
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_bulkwait(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "cp.async.bulk.wait_group%s %lld;", IM(e, v)[1] ? ".read" : "", (long long)IM(e, v)[0]);
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

int em_tma_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    case IR_LOW_TMA: emit_tma(e, v); return 1;
    case IR_LOW_BULK: emit_bulk(e, v); return 1;
    case IR_LOW_BULKWAIT: emit_bulkwait(e, v); return 1;
    default: return 0;
  }
}
