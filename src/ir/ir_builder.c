/* ir_builder.c: functions, parameters, the cursor and its regions, variables,
 * and appending ops (with checking, folding and CSE).
 *
 * Every op goes through one path: append it tentatively at the cursor, check
 * it against its rules (so a diagnostic can print the op itself), then fold it
 * or find an identical pure op already visible; in those cases the tentative op
 * is rolled back (it is the last one, so that is a few counters) and the
 * existing value is returned. The tracer calls this once per op, so the path
 * allocates nothing in the common case. */
#include <string.h>

#include "ir_impl.h"

/* --- functions -------------------------------------------------------------------------------------------- */
static int name_ok(const char *s) {
  if (!s || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'))) return 0;
  size_t n = 0;
  for (const char *p = s; *p; p++, n++)
    if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
      return 0;
  return n <= 200;
}

static int name_reserved(const char *s) {
  return strncmp(s, "__nv_", 5) == 0 || strncmp(s, "llvm", 4) == 0 || strcmp(s, "vprintf") == 0 ||
         strncmp(s, "__cl_", 5) == 0;
}

IrFunc *ir_func_new(IrModule *m, const char *name, IrFuncKind kind, IrType ret) {
  if (!m) return NULL;
  if (!name_ok(name)) {
    ir_merror(m, "function name '%s': use letters, digits and '_' (not starting with a digit), at most 200",
              name ? name : "(null)");
    return NULL;
  }
  if (name_reserved(name)) {
    ir_merror(m, "function name '%s' is reserved (__nv_*, llvm*, vprintf, __cl_*)", name);
    return NULL;
  }
  if (ir_func_find(m, name)) {
    ir_merror(m, "function '%s' is already defined in this module", name);
    return NULL;
  }
  if (kind != IR_FUNC_KERNEL && kind != IR_FUNC_DEVICE) {
    ir_merror(m, "function '%s': unknown kind %d (0 kernel, 1 device)", name, (int)kind);
    return NULL;
  }
  if (ret == IR_NONE) ret = IR_T_VOID;
  if (!ir_type_valid(m, ret) || ir_trec(m, ret)->kind == IR_TK_ARRAY) {
    ir_merror(m, "function '%s': bad return type", name);
    return NULL;
  }
  if (kind == IR_FUNC_KERNEL && ret != IR_T_VOID) {
    ir_merror(m, "kernel '%s' returns %s: kernels return nothing", name, ir_type_name(m, ret));
    return NULL;
  }
  IrFunc *f = ir_arena_alloc(&m->arena, sizeof *f);
  if (!f || !IR_GROW(m, m->funcs, m->capfunc, m->nfunc + 1)) goto oom;
  memset(f, 0, sizeof *f);
  f->m = m;
  f->index = (int)m->nfunc;
  f->name = ir_str(m, name);
  f->kind = kind;
  f->ret = ret;
  f->loc = m->cur_loc;
  f->ninst = 1; /* ref 0 is "none" */
  if (!IR_GROW(m, f->insts, f->capinst, 256) || !IR_GROW(m, f->regions, f->capregion, 16) ||
      !IR_GROW(m, f->open, f->capopen, 16) || !IR_GROW(m, f->vars, f->capvar, 8))
    goto oom;
  memset(&f->insts[0], 0, sizeof f->insts[0]);
  f->nregion = 1; /* region 0: the body */
  f->regions[0] = (IrRegion){0, 0, IR_RK_BODY, 0, 0};
  f->open[0] = 0;
  f->depth = 0;
  f->nvar = 1;
  for (int a = 0; a < IR_ATTR__COUNT; a++) f->attrs[a][0] = f->attrs[a][1] = f->attrs[a][2] = 0;
  m->funcs[m->nfunc++] = f;
  m->changes++;
  return f;
oom:
  m->oom = 1;
  ir_merror(m, "out of memory creating function '%s'", name);
  return NULL;
}

int ir_func_count(const IrModule *m) { return m ? (int)m->nfunc : 0; }
IrFunc *ir_func_at(const IrModule *m, int i) { return (m && i >= 0 && (uint32_t)i < m->nfunc) ? m->funcs[i] : NULL; }
IrFunc *ir_func_find(const IrModule *m, const char *name) {
  if (!m || !name) return NULL;
  for (uint32_t i = 0; i < m->nfunc; i++)
    if (strcmp(ir_str_get(m, m->funcs[i]->name), name) == 0) return m->funcs[i];
  return NULL;
}
const char *ir_func_name(const IrFunc *f) { return f ? ir_str_get(f->m, f->name) : ""; }
int ir_func_index(const IrFunc *f) { return f ? f->index : -1; }
IrModule *ir_func_module(const IrFunc *f) { return f ? f->m : NULL; }

/* --- appending -------------------------------------------------------------------------------------------- */
IrRef ir_append(IrFunc *f, IrOp op, IrType type, const IrRef *args, int nargs, const int64_t *imms) {
  IrModule *m = f->m;
  int nimm = ir_op_info[op].nimm;
  int limit = m->opt[IR_OPT_MAX_OPS];
  if (limit > 0 && m->nops >= (uint32_t)limit) {
    /* the wording "instruction limit" is what the tracer recognises */
    ir_error(f, 0, "'%s' would be instruction %u of the module, past its instruction limit of %d (a trace that never "
             "ends, or a kernel far larger than usual)", ir_op_info[op].name, m->nops + 1, limit);
    return IR_NONE;
  }
  if (!IR_GROW(m, f->insts, f->capinst, f->ninst + 1) ||
      !IR_GROW(m, f->argpool, f->capargp, f->nargp + (uint32_t)nargs + 1) ||
      !IR_GROW(m, f->immpool, f->capimmp, f->nimmp + (uint32_t)nimm + 1)) {
    m->oom = 1;
    ir_merror(m, "out of memory appending '%s' to @%s", ir_op_info[op].name, ir_str_get(m, f->name));
    return IR_NONE;
  }
  IrRef v = f->ninst++;
  m->nops++;
  m->changes++;
  if (!m->opt[IR_OPT_CHECK]) m->unchecked = 1;
  IrInst *in = &f->insts[v];
  in->op = (uint16_t)op;
  in->nargs = (uint16_t)nargs;
  in->type = type;
  in->region = (ir_op_info[op].flags & IR_OPF_HOIST) ? 0 : f->open[f->depth];
  in->loc = m->cur_loc;
  in->args = f->nargp;
  in->imms = f->nimmp;
  if (nargs) memcpy(f->argpool + f->nargp, args, (size_t)nargs * sizeof *args);
  f->nargp += (uint32_t)nargs;
  for (int i = 0; i < nimm; i++) f->immpool[f->nimmp + (uint32_t)i] = imms ? imms[i] : 0;
  f->nimmp += (uint32_t)nimm;
  return v;
}

void ir_rollback(IrFunc *f, IrRef v) {
  if (v + 1 != f->ninst) return; /* only the last op can be taken back */
  f->nargp = f->insts[v].args;
  f->nimmp = f->insts[v].imms;
  f->ninst = v;
  f->m->nops--;
  f->m->changes++;
}

int ir_region_open(const IrFunc *f, uint32_t region) {
  if (region >= f->nregion) return 0;
  uint32_t d = f->regions[region].depth;
  return d <= f->depth && f->open[d] == region;
}

static const char *region_what(int kind) {
  switch (kind) {
    case IR_RK_FOR: return "for";
    case IR_RK_THEN: return "if";
    case IR_RK_ELSE: return "else";
    case IR_RK_WCOND: return "while condition";
    case IR_RK_WBODY: return "while";
    default: return "function";
  }
}

/* Operand sanity every op needs, even raw: refs exist and are values. With
   checking on, also that each is visible here (defined in an open region). */
static int operands_ok(IrFunc *f, IrOp op, const IrRef *args, int nargs) {
  IrModule *m = f->m;
  int ok = 1;
  for (int i = 0; i < nargs; i++) {
    IrRef a = args[i];
    if (!ir_ref_ok(f, a)) {
      ir_error(f, 0, "%s: operand %d is %s%u, not a value of @%s", ir_op_info[op].name, i + 1, a ? "%" : "ref ",
               a, ir_str_get(m, f->name));
      ok = 0;
      continue;
    }
    const IrInst *ai = &f->insts[a];
    if (ai->type == IR_NONE || ai->type == IR_T_VOID) {
      ir_error(f, 0, "%s: operand %d (%%%u, %s) has no value", ir_op_info[op].name, i + 1, a,
               ir_op_info[ai->op].name);
      ok = 0;
      continue;
    }
    if (m->opt[IR_OPT_CHECK] && !ir_region_open(f, ai->region)) {
      const IrRegion *r = &f->regions[ai->region];
      ClBuf where = {0};
      ir_loc_format(m, f->insts[r->owner].loc, &where);
      ir_error(f, 0,
               "%s: operand %d (%%%u) was defined inside a %s region that has ended%s%s; "
               "carry it out through a variable",
               ir_op_info[op].name, i + 1, a, region_what(r->kind), where.len ? " at " : "", cl_buf_str(&where));
      cl_buf_free(&where);
      ok = 0;
    }
  }
  return ok;
}

static int cursor_ok(IrFunc *f, const char *what) {
  if (f->m->opt[IR_OPT_CHECK] && f->regions[f->open[f->depth]].terminated) {
    ir_error(f, 0, "%s: unreachable: the %s region already ended with break, continue or return", what,
             region_what(f->regions[f->open[f->depth]].kind));
    return 0;
  }
  return 1;
}

/* Checks (or, raw, infers the type of) the tentatively appended v, then folds
   it or reuses an identical value. */
static IrRef finish(IrFunc *f, IrRef v) {
  IrModule *m = f->m;
  IrInst *in = &f->insts[v];
  IrType t;
  if (m->opt[IR_OPT_CHECK]) {
    t = ir_check_inst(f, v);
    if (!t) {
      ir_rollback(f, v);
      return IR_NONE;
    }
  } else {
    t = in->type ? in->type : ir_infer_type(f, v);
  }
  in->type = t;
  if (!(ir_op_info[in->op].flags & IR_OPF_PURE)) return v;
  /* only checked ops are folded or reused: raw building (checks off) keeps
     every op as it came, so the verifier sees what was asked for */
  int fold = m->opt[IR_OPT_FOLD] && m->opt[IR_OPT_CHECK];
  if (fold) {
    IrFoldResult fr;
    ir_canon(f, v);
    if (ir_fold(f, v, &fr)) {
      ir_rollback(f, v);
      if (fr.ref) return fr.ref;
      IrRef c = ir_intern_const(f, t, fr.bits);
      if (!fr.rewrite_op || !c) return c;
      IrRef args[2] = {fr.rewrite_a, c}; /* the simpler op goes through the same path */
      return ir_op(f, (IrOp)fr.rewrite_op, t, args, 2, NULL, 0);
    }
  }
  if (fold || in->op == IR_OP_CONST) {
    IrRef e = ir_cse_find(f, v);
    if (e) {
      ir_rollback(f, v);
      return e;
    }
    ir_cse_insert(f, v);
  }
  return v;
}

IrRef ir_intern_const(IrFunc *f, IrType type, int64_t bits) {
  int64_t imm = bits;
  IrRef v = ir_append(f, IR_OP_CONST, type, NULL, 0, &imm);
  if (!v) return IR_NONE;
  IrRef e = ir_cse_find(f, v);
  if (e) {
    ir_rollback(f, v);
    return e;
  }
  ir_cse_insert(f, v);
  return v;
}

IrRef ir_op(IrFunc *f, IrOp op, IrType type, const IrRef *args, int nargs, const int64_t *imms, int nimm) {
  if (!f) return IR_NONE;
  IrModule *m = f->m;
  if ((unsigned)op >= IR_OP__COUNT) {
    ir_error(f, 0, "unknown op id %d", (int)op);
    return IR_NONE;
  }
  const IrOpInfo *oi = &ir_op_info[op];
  if (oi->flags & IR_OPF_INTERNAL) {
    ir_error(f, 0, "%s: made by its own builder call (for_begin, if_begin, var_load, ir_param, ...), not ir_op",
             oi->name);
    return IR_NONE;
  }
  if (nargs < oi->amin || nargs > oi->amax || nargs < 0) {
    if (oi->amin == oi->amax)
      ir_error(f, 0, "%s: takes %d operand%s, got %d", oi->name, oi->amin, oi->amin == 1 ? "" : "s", nargs);
    else
      ir_error(f, 0, "%s: takes %d to %d operands, got %d", oi->name, oi->amin, oi->amax, nargs);
    return IR_NONE;
  }
  if (nimm > oi->nimm || nimm < 0) {
    ir_error(f, 0, "%s: takes %d immediate%s (%s), got %d", oi->name, oi->nimm, oi->nimm == 1 ? "" : "s",
             oi->nimm ? oi->imms : "none", nimm);
    return IR_NONE;
  }
  if (type && !ir_type_valid(m, type)) {
    ir_error(f, 0, "%s: result type id %u does not exist", oi->name, type);
    return IR_NONE;
  }
  if (!operands_ok(f, op, args, nargs)) return IR_NONE;
  if (!(oi->flags & IR_OPF_HOIST) && !cursor_ok(f, oi->name)) return IR_NONE;
  int64_t full[8] = {0};
  for (int i = 0; i < nimm; i++) full[i] = imms[i];
  IrRef v = ir_append(f, op, type, args, nargs, full);
  return v ? finish(f, v) : IR_NONE;
}

IrRef ir_op3(IrFunc *f, IrOp op, IrType type, IrRef a, IrRef b, IrRef c, int64_t i0, int64_t i1, int64_t i2) {
  IrRef args[3] = {a, b, c};
  int n = c ? 3 : b ? 2 : a ? 1 : 0;
  if (!f) return IR_NONE;
  if ((!a && (b || c)) || (!b && c)) {
    ir_error(f, 0, "%s: operand missing before a given one", ir_op_name(op) ? ir_op_name(op) : "?");
    return IR_NONE;
  }
  int64_t imms[3] = {i0, i1, i2};
  int nimm = (unsigned)op < IR_OP__COUNT ? ir_op_info[op].nimm : 0;
  if (nimm > 3) nimm = 3;
  return ir_op(f, op, type, args, n, imms, nimm);
}

/* --- values ----------------------------------------------------------------------------------------------- */
IrRef ir_const_int(IrFunc *f, IrType type, int64_t value) {
  if (!f) return IR_NONE;
  IrModule *m = f->m;
  if (ir_type_is_float(m, type)) return ir_const_float(f, type, (double)value);
  if (!ir_type_is_int(m, type)) {
    ir_error(f, 0, "const: %s is not an integer or float type", ir_type_name(m, type));
    return IR_NONE;
  }
  return ir_intern_const(f, type, ir_int_wrap(ir_trec(m, type)->bits, value));
}

IrRef ir_const_float(IrFunc *f, IrType type, double value) {
  if (!f) return IR_NONE;
  if (!ir_type_is_float(f->m, type)) {
    if (ir_type_is_int(f->m, type) && value == (double)(int64_t)value)
      return ir_const_int(f, type, (int64_t)value);
    ir_error(f, 0, "const: %g does not fit %s", value, ir_type_name(f->m, type));
    return IR_NONE;
  }
  return ir_intern_const(f, type, ir_float_bits(type, value));
}

IrType ir_value_type(const IrFunc *f, IrRef v) { return (f && ir_ref_ok(f, v)) ? f->insts[v].type : IR_NONE; }
IrOp ir_inst_op(const IrFunc *f, IrRef v) { return (f && ir_ref_ok(f, v)) ? (IrOp)f->insts[v].op : (IrOp)-1; }
int ir_inst_nargs(const IrFunc *f, IrRef v) { return (f && ir_ref_ok(f, v)) ? f->insts[v].nargs : -1; }
IrRef ir_inst_arg(const IrFunc *f, IrRef v, int i) {
  if (!f || !ir_ref_ok(f, v) || i < 0 || i >= f->insts[v].nargs) return IR_NONE;
  return f->argpool[f->insts[v].args + (uint32_t)i];
}
int64_t ir_inst_imm(const IrFunc *f, IrRef v, int i) {
  if (!f || !ir_ref_ok(f, v) || i < 0 || i >= ir_op_info[f->insts[v].op].nimm) return 0;
  return f->immpool[f->insts[v].imms + (uint32_t)i];
}
int ir_inst_count(const IrFunc *f) { return f ? (int)f->ninst - 1 : 0; }
int ir_inst_loc(const IrFunc *f, IrRef v, const char **file) {
  if (file) *file = "";
  if (!f || !ir_ref_ok(f, v)) return 0;
  uint32_t loc = f->insts[v].loc;
  if (!loc || loc >= f->m->nloc) return 0;
  if (file) *file = ir_str_get(f->m, f->m->locs[loc].file);
  return (int)f->m->locs[loc].line;
}

int ir_const_value(const IrFunc *f, IrRef v, int64_t *i, double *d) {
  if (!f || !ir_ref_ok(f, v) || f->insts[v].op != IR_OP_CONST) return 0;
  int64_t bits = f->immpool[f->insts[v].imms];
  IrType t = f->insts[v].type;
  if (ir_type_is_float(f->m, t)) {
    double x = ir_bits_float(t, bits);
    if (d) *d = x;
    if (i) *i = (int64_t)x;
  } else {
    if (i) *i = bits;
    if (d) *d = (double)bits;
  }
  return 1;
}

/* --- parameters and attributes ---------------------------------------------------------------------------- */
static IrRef add_param(IrFunc *f, IrType type, int64_t blob) {
  IrModule *m = f->m;
  int64_t imms[2] = {(int64_t)f->nparam, blob};
  if (!IR_GROW(m, f->params, f->capparam, f->nparam + 1)) {
    m->oom = 1;
    return IR_NONE;
  }
  IrRef v = ir_append(f, IR_OP_PARAM, type, NULL, 0, imms);
  if (!v) return IR_NONE;
  if (m->opt[IR_OPT_CHECK] && !ir_check_inst(f, v)) {
    ir_rollback(f, v);
    return IR_NONE;
  }
  f->params[f->nparam++] = v;
  return v;
}

IrRef ir_param(IrFunc *f, IrType type) {
  if (!f) return IR_NONE;
  return add_param(f, type, 0);
}

IrRef ir_param_blob(IrFunc *f, int size, int align) {
  if (!f) return IR_NONE;
  IrModule *m = f->m;
  if (size < 1 || size > 32764) {
    ir_error(f, 0, "param blob of %d bytes: from 1 to 32764 (the kernel parameter limit)", size);
    return IR_NONE;
  }
  IrType t = ir_type_ptr(m, IR_T_I8, IR_SPACE_PARAM, align);
  if (!t) return IR_NONE;
  return add_param(f, t, size);
}

int ir_func_attr(IrFunc *f, IrAttr attr, int x, int y, int z) {
  if (!f) return -1;
  if ((unsigned)attr >= IR_ATTR__COUNT) {
    ir_error(f, 0, "unknown kernel attribute %d", (int)attr);
    return -1;
  }
  static const int nvals[] = {
#define IR_ATTR_N(id, name, n) n,
      IR_ATTRS(IR_ATTR_N)
#undef IR_ATTR_N
  };
  if (nvals[attr] == 3) {
    if (y <= 0) y = 1;
    if (z <= 0) z = 1;
  }
  if (x < 0 || (nvals[attr] == 3 && x == 0)) {
    ir_error(f, 0, "kernel attribute: bad value %d", x);
    return -1;
  }
  if (f->kind != IR_FUNC_KERNEL) {
    ir_error(f, 0, "kernel attributes apply to kernels; @%s is a device function", ir_str_get(f->m, f->name));
    return -1;
  }
  f->m->changes++;
  f->attrs[attr][0] = x;
  f->attrs[attr][1] = nvals[attr] == 3 ? y : 0;
  f->attrs[attr][2] = nvals[attr] == 3 ? z : 0;
  return 0;
}

int ir_func_attr_get(const IrFunc *f, IrAttr attr, int i) {
  if (!f || (unsigned)attr >= IR_ATTR__COUNT || i < 0 || i > 2) return 0;
  return f->attrs[attr][i];
}

/* --- regions ---------------------------------------------------------------------------------------------- */
static int open_region(IrFunc *f, int kind, IrRef owner) {
  IrModule *m = f->m;
  if (!IR_GROW(m, f->regions, f->capregion, f->nregion + 1) || !IR_GROW(m, f->open, f->capopen, f->depth + 2)) {
    m->oom = 1;
    return -1;
  }
  if (f->depth >= 60000) {
    ir_error(f, 0, "regions nested too deeply");
    return -1;
  }
  uint32_t r = f->nregion++;
  f->regions[r] = (IrRegion){f->open[f->depth], owner, (uint16_t)kind, (uint16_t)(f->depth + 1), 0};
  f->open[++f->depth] = r;
  return 0;
}

static IrRegion *cur_region(IrFunc *f) { return &f->regions[f->open[f->depth]]; }

/* Appends a control marker after checking its operands. */
static IrRef control(IrFunc *f, IrOp op, const IrRef *args, int nargs, int64_t imm) {
  if (!operands_ok(f, op, args, nargs) || !cursor_ok(f, ir_op_info[op].name)) return IR_NONE;
  IrRef v = ir_append(f, op, IR_T_VOID, args, nargs, &imm);
  if (!v) return IR_NONE;
  if (f->m->opt[IR_OPT_CHECK] && !ir_check_inst(f, v)) {
    ir_rollback(f, v);
    return IR_NONE;
  }
  return v;
}

IrRef ir_for_begin(IrFunc *f, IrRef lo, IrRef hi, IrRef step, int unroll) {
  if (!f) return IR_NONE;
  IrRef args[3] = {lo, hi, step};
  IrRef v = control(f, IR_OP_FOR, args, 3, unroll);
  if (!v || open_region(f, IR_RK_FOR, v) < 0) return IR_NONE;
  IrRef iv = ir_append(f, IR_OP_IV, f->insts[lo].type, NULL, 0, NULL);
  return iv;
}

int ir_if_begin(IrFunc *f, IrRef cond) {
  if (!f) return -1;
  IrRef v = control(f, IR_OP_IF, &cond, 1, 0);
  if (!v || open_region(f, IR_RK_THEN, v) < 0) return -1;
  return 0;
}

int ir_else_begin(IrFunc *f) {
  if (!f) return -1;
  IrRegion *r = cur_region(f);
  if (r->kind != IR_RK_THEN) {
    ir_error(f, 0, "else: the innermost open region is %s, not the then-branch of an if",
             f->depth ? region_what(r->kind) : "the function body");
    return -1;
  }
  IrRef owner = r->owner;
  f->depth--;
  IrRef v = ir_append(f, IR_OP_ELSE, IR_T_VOID, NULL, 0, NULL);
  if (!v || open_region(f, IR_RK_ELSE, owner) < 0) return -1;
  return 0;
}

int ir_while_begin(IrFunc *f) {
  if (!f) return -1;
  IrRef v = control(f, IR_OP_WHILE, NULL, 0, 0);
  if (!v || open_region(f, IR_RK_WCOND, v) < 0) return -1;
  return 0;
}

int ir_while_cond(IrFunc *f, IrRef cond) {
  if (!f) return -1;
  IrRegion *r = cur_region(f);
  if (r->kind != IR_RK_WCOND) {
    ir_error(f, 0, "while_cond: the innermost open region is %s, not the condition of a while",
             f->depth ? region_what(r->kind) : "the function body");
    return -1;
  }
  IrRef owner = r->owner;
  IrRef v = control(f, IR_OP_WCOND, &cond, 1, 0);
  if (!v || open_region(f, IR_RK_WBODY, owner) < 0) return -1;
  return 0;
}

int ir_region_end(IrFunc *f) {
  if (!f) return -1;
  IrRegion *r = cur_region(f);
  if (f->depth == 0) {
    ir_error(f, 0, "region_end: no region is open");
    return -1;
  }
  if (r->kind == IR_RK_WCOND) {
    ir_error(f, 0, "region_end: the while has no condition yet (call while_cond first)");
    return -1;
  }
  f->depth--;
  if (r->kind == IR_RK_WBODY) f->depth--; /* the condition region closes with its body */
  return ir_append(f, IR_OP_END, IR_T_VOID, NULL, 0, NULL) ? 0 : -1;
}

static int loop_exit(IrFunc *f, IrOp op) {
  if (!f) return -1;
  if (f->m->opt[IR_OPT_CHECK]) {
    for (uint32_t d = f->depth;; d--) {
      int k = f->regions[f->open[d]].kind;
      if (k == IR_RK_FOR || k == IR_RK_WBODY) break;
      if (k == IR_RK_WCOND || d == 0) {
        ir_error(f, 0, "%s: %s", ir_op_info[op].name,
                 k == IR_RK_WCOND ? "inside a while condition" : "not inside a loop");
        return -1;
      }
    }
  }
  if (!control(f, op, NULL, 0, 0)) return -1;
  cur_region(f)->terminated = 1;
  return 0;
}

int ir_break(IrFunc *f) { return loop_exit(f, IR_OP_BREAK); }
int ir_continue(IrFunc *f) { return loop_exit(f, IR_OP_CONTINUE); }

int ir_return(IrFunc *f, IrRef value) {
  if (!f) return -1;
  if (!control(f, IR_OP_RET, &value, value ? 1 : 0, 0)) return -1;
  cur_region(f)->terminated = 1;
  return 0;
}

int ir_depth(const IrFunc *f) { return f ? (int)f->depth : -1; }

/* --- variables -------------------------------------------------------------------------------------------- */
uint32_t ir_var_new(IrFunc *f, IrType type, int count) {
  if (!f) return 0;
  IrModule *m = f->m;
  int k = ir_trec(m, type)->kind;
  if (k == IR_TK_NONE || k == IR_TK_VOID || k == IR_TK_ARRAY) {
    ir_error(f, 0, "var_new: type %s cannot be a variable (scalars, vectors, pointers, structs)",
             ir_type_name(m, type));
    return 0;
  }
  if (count < 1 || count > 65536) {
    ir_error(f, 0, "var_new: %d elements; from 1 to 65536", count);
    return 0;
  }
  if (!IR_GROW(m, f->vars, f->capvar, f->nvar + 1)) {
    m->oom = 1;
    return 0;
  }
  uint32_t id = f->nvar++;
  m->changes++;
  f->vars[id] = (IrVarInfo){type, count, m->cur_loc, 0};
  return id;
}

int ir_var_count(const IrFunc *f) { return f ? (int)f->nvar - 1 : 0; }
int ir_var_info(const IrFunc *f, uint32_t var, IrType *type) {
  if (type) *type = IR_NONE;
  if (!f || var == 0 || var >= f->nvar) return 0;
  if (type) *type = f->vars[var].type;
  return f->vars[var].count;
}

static IrRef var_op(IrFunc *f, IrOp op, const IrRef *args, int nargs, int64_t var, int64_t index) {
  if (!operands_ok(f, op, args, nargs) || !cursor_ok(f, ir_op_info[op].name)) return IR_NONE;
  int64_t imms[2] = {var, index};
  IrRef v = ir_append(f, op, IR_NONE, args, nargs, imms);
  if (!v) return IR_NONE;
  v = finish(f, v);
  if (v && (op == IR_OP_VLOADX || op == IR_OP_VSTOREX) && var > 0 && (uint32_t)var < f->nvar)
    f->vars[var].dynamic = 1;
  return v;
}

IrRef ir_var_load(IrFunc *f, uint32_t var, int index) {
  return f ? var_op(f, IR_OP_VLOAD, NULL, 0, var, index) : IR_NONE;
}
IrRef ir_var_loadx(IrFunc *f, uint32_t var, IrRef index) {
  return f ? var_op(f, IR_OP_VLOADX, &index, 1, var, 0) : IR_NONE;
}
int ir_var_store(IrFunc *f, uint32_t var, int index, IrRef value) {
  return (f && var_op(f, IR_OP_VSTORE, &value, 1, var, index)) ? 0 : -1;
}
IrRef ir_var_loadv(IrFunc *f, uint32_t var, int index, int count) {
  if (!f || !cursor_ok(f, "var.loadv")) return IR_NONE;
  if (var == 0 || var >= f->nvar || count < 1) {
    ir_error(f, 0, "var.loadv: no variable $%u or a count of %d", var, count);
    return IR_NONE;
  }
  IrType t = ir_type_vec(f->m, f->vars[var].type, count);
  if (!t) return IR_NONE;
  int64_t imms[2] = {var, index};
  IrRef v = ir_append(f, IR_OP_VLOADV, t, NULL, 0, imms);
  return v ? finish(f, v) : IR_NONE;
}
int ir_var_opaque(IrFunc *f, uint32_t var) {
  return (f && var_op(f, IR_OP_VOPAQUE, NULL, 0, var, 0)) ? 0 : -1;
}
int ir_var_storev(IrFunc *f, uint32_t var, int index, IrRef value) {
  return (f && var_op(f, IR_OP_VSTOREV, &value, 1, var, index)) ? 0 : -1;
}
int ir_var_storex(IrFunc *f, uint32_t var, IrRef index, IrRef value) {
  IrRef args[2] = {index, value};
  return (f && var_op(f, IR_OP_VSTOREX, args, 2, var, 0)) ? 0 : -1;
}
