/* ir_verify.c: the verifier: structure, dominance, per-op rules and kernel
 * attributes of a whole module, reporting every violation.
 *
 * It trusts none of the builder's bookkeeping: it re-derives the regions from
 * the markers (for, if, else, while, while.cond, end), so it also checks IR
 * built raw (IR_OPT_CHECK off), where the builder accepted anything. The op
 * rules are ir_check_inst, the same ones the builder applies as ops are added;
 * ops the builder checked for the module's current target are not checked
 * again (each op is checked once), the rest are.
 * One pass per function, linear in its size. */
#include <stdlib.h>
#include <string.h>

#include "ir_impl.h"

typedef struct VRegion {
  int kind;    /* IrRegionKind */
  IrRef owner; /* the op that opened it */
  int terminated;
  int returns; /* every path through it ends in ret */
  int else_returns; /* for an if: the then-branch returned (set when else opens) */
} VRegion;

typedef struct V {
  IrFunc *f;
  IrModule *m;
  int rules; /* apply every op's rules (else only those the builder did not) */
  VRegion *stack;
  int depth, cap;
  uint32_t *region_of; /* per ref: the id of the region it was defined in */
  uint32_t *region_id; /* per stack level: the id of that region */
  uint32_t next_id;
  int oom;
} V;

static const char *kind_name(int k) {
  switch (k) {
    case IR_RK_FOR: return "for";
    case IR_RK_THEN: return "if";
    case IR_RK_ELSE: return "else";
    case IR_RK_WCOND: return "while condition";
    case IR_RK_WBODY: return "while";
    default: return "function body";
  }
}

static void push(V *s, int kind, IrRef owner) {
  if (s->depth + 1 >= s->cap) {
    int ncap = s->cap * 2;
    VRegion *ns = realloc(s->stack, (size_t)ncap * sizeof *ns);
    uint32_t *ni = realloc(s->region_id, (size_t)ncap * sizeof *ni);
    if (ns) s->stack = ns;
    if (ni) s->region_id = ni;
    if (!ns || !ni) {
      s->oom = 1;
      return;
    }
    s->cap = ncap;
  }
  s->depth++;
  s->stack[s->depth] = (VRegion){kind, owner, 0, 0, 0};
  s->region_id[s->depth] = s->next_id++;
}

static int region_visible(const V *s, uint32_t id) {
  for (int d = s->depth; d >= 0; d--)
    if (s->region_id[d] == id) return 1;
  return 0;
}

static void check_structure(V *s, IrRef v) {
  IrFunc *f = s->f;
  const IrInst *in = &f->insts[v];
  VRegion *top = &s->stack[s->depth];
  switch (in->op) {
    case IR_OP_FOR:
      push(s, IR_RK_FOR, v);
      if (v + 1 >= f->ninst || f->insts[v + 1].op != IR_OP_IV)
        ir_error(f, v, "for: its induction variable (iv) must follow it");
      break;
    case IR_OP_IV:
      if (v < 2 || f->insts[v - 1].op != IR_OP_FOR) ir_error(f, v, "iv: only right after a for");
      break;
    case IR_OP_IF: push(s, IR_RK_THEN, v); break;
    case IR_OP_ELSE:
      if (top->kind != IR_RK_THEN) {
        ir_error(f, v, "else: the innermost open region is the %s, not an if", kind_name(top->kind));
        break;
      }
      {
        int then_returns = top->returns;
        IrRef owner = top->owner;
        s->depth--;
        push(s, IR_RK_ELSE, owner);
        s->stack[s->depth].else_returns = then_returns;
      }
      break;
    case IR_OP_WHILE: push(s, IR_RK_WCOND, v); break;
    case IR_OP_WCOND:
      if (top->kind != IR_RK_WCOND) {
        ir_error(f, v, "while.cond: the innermost open region is the %s, not a while condition", kind_name(top->kind));
        break;
      }
      push(s, IR_RK_WBODY, top->owner);
      break;
    case IR_OP_END: {
      if (top->kind == IR_RK_BODY) {
        ir_error(f, v, "end: no region is open");
        break;
      }
      if (top->kind == IR_RK_WCOND) {
        ir_error(f, v, "end: the while condition has no while.cond");
        s->depth--;
        break;
      }
      /* an if/else both of whose branches return makes the enclosing path return */
      int returns = top->kind == IR_RK_ELSE && top->returns && top->else_returns;
      s->depth--;
      if (top->kind == IR_RK_WBODY) s->depth--;
      if (returns) s->stack[s->depth].returns = 1;
      break;
    }
    case IR_OP_BREAK:
    case IR_OP_CONTINUE: {
      int d = s->depth;
      while (d > 0 && s->stack[d].kind != IR_RK_FOR && s->stack[d].kind != IR_RK_WBODY &&
             s->stack[d].kind != IR_RK_WCOND)
        d--;
      if (d == 0 || s->stack[d].kind == IR_RK_WCOND)
        ir_error(f, v, "%s: %s", ir_op_info[in->op].name, d ? "inside a while condition" : "not inside a loop");
      top->terminated = 1;
      break;
    }
    case IR_OP_RET:
      top->terminated = 1;
      top->returns = 1;
      break;
    default: break;
  }
}

static void check_attrs(V *s) {
  IrFunc *f = s->f;
  int32_t(*a)[3] = f->attrs;
  int has_max = a[IR_ATTR_MAXNTID][0] > 0, has_req = a[IR_ATTR_REQNTID][0] > 0;
  long max = (long)a[IR_ATTR_MAXNTID][0] * a[IR_ATTR_MAXNTID][1] * a[IR_ATTR_MAXNTID][2];
  long req = (long)a[IR_ATTR_REQNTID][0] * a[IR_ATTR_REQNTID][1] * a[IR_ATTR_REQNTID][2];
  if (f->kind != IR_FUNC_KERNEL) {
    for (int i = 0; i < IR_ATTR__COUNT; i++)
      if (a[i][0]) ir_error(f, 0, "@%s is a device function: kernel attributes do not apply", ir_func_name(f));
    return;
  }
  if (has_max && max > 1024) ir_error(f, 0, "maxntid %ld threads: at most 1024 per block", max);
  if (has_req && req > 1024) ir_error(f, 0, "reqntid %ld threads: at most 1024 per block", req);
  if (has_max && has_req)
    for (int i = 0; i < 3; i++)
      if (a[IR_ATTR_REQNTID][i] > a[IR_ATTR_MAXNTID][i])
        ir_error(f, 0, "reqntid exceeds maxntid in dimension %c", "xyz"[i]);
  if (a[IR_ATTR_CLUSTER][0]) {
    long n = (long)a[IR_ATTR_CLUSTER][0] * a[IR_ATTR_CLUSTER][1] * a[IR_ATTR_CLUSTER][2];
    if (!cl_target_has(s->m->target, CL_FEAT_CLUSTER)) {
      ClBuf b = {0};
      cl_target_needs(s->m->target, CL_FEAT_CLUSTER, &b);
      ir_error(f, 0, "a cluster launch %s", cl_buf_str(&b));
      cl_buf_free(&b);
    }
    if (n > 16) ir_error(f, 0, "a cluster of %ld blocks: at most 16 (8 portable)", n);
  }
  int nreg = a[IR_ATTR_MAXNREG][0];
  if (nreg && (nreg < 16 || nreg > 255)) ir_error(f, 0, "maxnreg %d: 16 to 255", nreg);
  if (a[IR_ATTR_MINCTASM][0] > 32) ir_error(f, 0, "minctasm %d: at most 32", a[IR_ATTR_MINCTASM][0]);
  /* a warpgroup op (wgmma: feature WGMMA) runs on whole warpgroups: a block
     size bound that is not a multiple of 128 threads cannot hold one */
  long bound = has_req ? req : has_max ? max : 0;
  for (IrRef v = 1; bound && v < f->ninst; v++)
    if (ir_op_info[f->insts[v].op].feat == CL_FEAT_WGMMA && bound % 128 != 0) {
      ir_error(f, v, "%s is a warpgroup op, but kernel @%s has blocks of %s %ld threads (%s), not a multiple of 128",
               ir_op_info[f->insts[v].op].name, ir_func_name(f), has_req ? "exactly" : "at most", bound,
               has_req ? "reqntid" : "maxntid: launch bounds");
      break;
    }
  long smem = 0;
  for (IrRef v = 1; v < f->ninst; v++)
    if (f->insts[v].op == IR_OP_SMEM) smem += (long)ir_imms(f, &f->insts[v])[0];
  if (smem > 232448) ir_error(f, 0, "%ld bytes of static shared memory: at most 232448 (227 KiB)", smem);
  long dyn = a[IR_ATTR_DYN_SMEM][0];
  if (smem + dyn > 232448)
    ir_error(f, 0, "%ld static + %ld dynamic bytes of shared memory: at most 232448 (227 KiB)", smem, dyn);
}

/* An op's rules, unless the builder applied them when it appended it (with
   checking on, for the module's current target): then each op is checked
   once. The builder appends interned constants (folding results) and the
   markers iv, else and end without their rules; those are checked here. */
static void check_op(V *s, IrFunc *f, IrRef v) {
  int op = f->insts[v].op;
  if (s->rules || op == IR_OP_CONST || op == IR_OP_IV || op == IR_OP_ELSE || op == IR_OP_END) ir_check_inst(f, v);
}

static void verify_func(V *s) {
  IrFunc *f = s->f;
  s->depth = 0;
  s->next_id = 1;
  s->stack[0] = (VRegion){IR_RK_BODY, 0, 0, 0, 0};
  s->region_id[0] = 0;
  for (IrRef v = 1; v < f->ninst && !s->oom; v++) {
    const IrInst *in = &f->insts[v];
    if (in->op >= IR_OP__COUNT) {
      ir_error(f, 0, "%%%u has the unknown op id %u", v, in->op);
      continue;
    }
    unsigned fl = ir_op_info[in->op].flags;
    if (fl & IR_OPF_HOIST) {
      s->region_of[v] = 0;
      check_op(s, f, v);
      continue;
    }
    VRegion *top = &s->stack[s->depth];
    if (top->terminated && in->op != IR_OP_END && in->op != IR_OP_ELSE)
      ir_error(f, v, "unreachable: the %s region already ended with break, continue or ret", kind_name(top->kind));
    const IrRef *a = ir_args(f, in);
    int visible = 1;
    for (int i = 0; i < in->nargs; i++) {
      IrRef r = a[i];
      if (!ir_ref_ok(f, r) || r >= v) continue; /* reported by the op check */
      if (!region_visible(s, s->region_of[r])) {
        ir_error(f, v,
                 "%s: operand %d (%%%u) is defined in a region that does not enclose this op "
                 "(it ended before); carry the value through a variable",
                 ir_op_info[in->op].name, i + 1, r);
        visible = 0;
      }
    }
    (void)visible;
    /* markers that close a region belong to the enclosing one */
    check_structure(s, v);
    s->region_of[v] = s->region_id[s->depth];
    if (in->op == IR_OP_FOR || in->op == IR_OP_IF || in->op == IR_OP_WHILE || in->op == IR_OP_WCOND)
      s->region_of[v] = s->depth > 0 ? s->region_id[s->depth - 1] : 0;
    check_op(s, f, v);
  }
  if (s->depth > 0) {
    ClBuf where = {0};
    ir_loc_format(s->m, f->insts[s->stack[s->depth].owner].loc, &where);
    ir_error(f, 0, "%d region%s never closed (the innermost: the %s%s%s)", s->depth, s->depth == 1 ? " is" : "s are",
             kind_name(s->stack[s->depth].kind), where.len ? " at " : "", cl_buf_str(&where));
    cl_buf_free(&where);
  }
  if (f->ret != IR_T_VOID && s->depth == 0 && !s->stack[0].returns)
    ir_error(f, 0, "@%s returns %s but can reach its end without ret", ir_func_name(f), ir_type_name(s->m, f->ret));
  check_attrs(s);
}

int ir_verify(IrModule *m) {
  if (!m) return -1;
  int before = m->ndiag;
  uint32_t saved_loc = m->cur_loc;
  m->cur_loc = 0; /* function-level errors name where the function was made */
  V s = {0};
  s.m = m;
  s.rules = m->unchecked || m->oom;
  s.cap = 64;
  s.stack = malloc((size_t)s.cap * sizeof *s.stack);
  s.region_id = malloc((size_t)s.cap * sizeof *s.region_id);
  if (!s.stack || !s.region_id) s.oom = 1;
  for (uint32_t i = 0; i < m->nfunc && !s.oom; i++) {
    s.f = m->funcs[i];
    free(s.region_of);
    s.region_of = calloc(s.f->ninst + 1, sizeof *s.region_of);
    if (!s.region_of) {
      s.oom = 1;
      break;
    }
    verify_func(&s);
  }
  if (s.oom) ir_merror(m, "out of memory while verifying");
  if (m->oom) ir_merror(m, "the module ran out of memory while it was built; it is incomplete");
  free(s.stack);
  free(s.region_id);
  free(s.region_of);
  m->cur_loc = saved_loc;
  m->verified = m->ndiag == before;
  m->verified_at = m->changes;
  if (m->verified) m->unchecked = 0; /* every op has now been checked for this target */
  return m->ndiag - before;
}
