/* ir_check.c: checking one op against its rules: operand count, operands
 * defined before it, immediates in range and the flags it takes, the
 * target's feature, then its family's rule (ir_rules.c) and its result type.
 *
 * One function, ir_check_inst, used twice: by the builder on each op as it is
 * appended (so a bad call fails at the user's line) and by the verifier on the
 * whole module (the backstop, and the only check when the module was built raw).
 * It reports every violation it finds in the op, each through ir_error, which
 * prints the op and its location.
 *
 * Structure (regions, dominance, terminators) is not checked here but in the
 * builder's cursor logic and ir_verify.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_rules.h"

/* --- immediates ------------------------------------------------------------------------------------------- */
static void check_imms(Ck *c) {
  const char *k = c->oi->imms;
  for (int i = 0; k[i]; i++) {
    int64_t x = c->imm[i];
    const IrImmKind *ik = ir_imm_kind(k[i]);
    switch (k[i]) {
      case 'F': {
        unsigned allowed = ir_op_allowed_flags(c->in->op);
        if ((uint64_t)x & ~(uint64_t)allowed) fail(c, "flags 0x%llx: this op accepts 0x%x", (unsigned long long)x, allowed);
        break;
      }
      case 'k':
      case 'n': break; /* checked by the op's rule */
      case 's':
        if (x <= 0 || (uint64_t)x >= c->m->nstr) fail(c, "immediate %d: string id %lld does not exist", i + 1, (long long)x);
        break;
      case 'v':
        if (x <= 0 || (uint64_t)x >= c->f->nvar) fail(c, "variable $%lld does not exist in @%s", (long long)x, ir_str_get(c->m, c->f->name));
        break;
      case 'f':
        if (x < 0 || (uint64_t)x >= c->m->nfunc) fail(c, "function #%lld does not exist", (long long)x);
        break;
      default:
        if (ik && ik->names && (x < 0 || x >= ik->count))
          fail(c, "%s %lld is out of range (0 to %d)", ik->what, (long long)x, ik->count - 1);
        break;
    }
  }
}

unsigned ir_op_allowed_flags(int op) {
  switch (op) {
    case IR_OP_FDIV:
    case IR_OP_SQRT: case IR_OP_RSQRT: case IR_OP_RCP: case IR_OP_EXP2: case IR_OP_LOG2: case IR_OP_EXP:
    case IR_OP_LOG: case IR_OP_SIN: case IR_OP_COS: case IR_OP_TANH: case IR_OP_ERF: case IR_OP_FLOOR:
    case IR_OP_CEIL: return IR_FLAG_FAST;
    case IR_OP_CVT: case IR_OP_CVTU: return IR_FLAG_SAT;
    case IR_OP_MMA: return IR_FLAG_SAT;
    case IR_OP_LDMATRIX: case IR_OP_STMATRIX: return IR_FLAG_TRANS;
    case IR_OP_ASM: return IR_FLAG_SIDEEFFECT | IR_FLAG_CONVERGENT | IR_FLAG_MEMORY;
    default: return 0;
  }
}

IrType ir_result_type(IrFunc *f, const IrInst *in) { return ir_result_rules[ir_op_info[in->op].res](f, in); }
IrType ir_infer_type(IrFunc *f, IrRef v) { return ir_result_type(f, &f->insts[v]); }

IrType ir_check_inst(IrFunc *f, IrRef v) {
  const IrInst *in = &f->insts[v];
  f->m->rule_checks++;
  Ck c = {f, f->m, v, in, &ir_op_info[in->op], ir_args(f, in), ir_imms(f, in), f->m->target, in->type, 0};
  if (in->nargs < c.oi->amin || in->nargs > c.oi->amax) {
    fail(&c, "takes %d to %d operands, has %d", c.oi->amin, c.oi->amax, in->nargs);
    return IR_NONE;
  }
  for (int i = 0; i < in->nargs; i++) {
    if (!ir_ref_ok(f, c.a[i]) || c.a[i] >= v) {
      fail(&c, "operand %d (%%%u) is not defined before this op", i + 1, c.a[i]);
      return IR_NONE;
    }
    IrType at = f->insts[c.a[i]].type;
    if (!at || at == IR_T_VOID) {
      fail(&c, "operand %d (%%%u) has no value", i + 1, c.a[i]);
      return IR_NONE;
    }
  }
  if (!cl_target_has(c.target, (ClFeature)c.oi->feat)) { /* "wgmma.fence needs WGMMA, which sm_90 lacks (...)" */
    ClBuf b = {0};
    cl_target_needs(c.target, (ClFeature)c.oi->feat, &b);
    ir_error(f, v, "%s %s", c.oi->name, cl_buf_str(&b));
    cl_buf_free(&b);
    c.bad = 1;
  }
  if (c.oi->res == IR_RES_GIVEN && (!in->type || in->type == IR_T_VOID) && c.oi->chk != IR_CHK_ASM)
    fail(&c, "needs a result type");
  check_imms(&c);
  if (c.bad) return IR_NONE;
  ir_check_rules[c.oi->chk](&c); /* the family's rule (ir_rules.c) */
  if (c.bad) return IR_NONE;
  IrType want = ir_result_type(f, in);
  if (c.oi->chk == IR_CHK_ASM && !in->type) want = IR_T_VOID;
  if (!want) {
    fail(&c, "has no result type by its rule");
    return IR_NONE;
  }
  if (in->type && in->type != want && c.oi->res != IR_RES_GIVEN) {
    fail(&c, "the result type is %s, by its rule it is %s", ir_type_name(f->m, in->type), ir_type_name(f->m, want));
    return IR_NONE;
  }
  return want;
}
