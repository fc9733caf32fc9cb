/* ir_print.c: the IR as deterministic text (the oracle of the IR tests).
 *
 *   kernel @saxpy(%1: f32, %2: ptr<f32, global, 4>, %3: i32) maxntid(256, 1, 1) {
 *     $1: f32 x 4                          local variables
 *     %4 = const 0 : i32                   the prologue: const, undef, smem
 *     %5 = sreg.tid.x : i32                body ops in program order
 *     %6 = icmp.slt %5, %3 : i1
 *     if %6 {
 *       store %9, %8
 *     }
 *     for %11 = %4 to %3 step %10 unroll 4 {
 *     }
 *     while {
 *       ...
 *     } do %14 {
 *     }
 *   }
 *
 * An op prints as `%N = name.e1.e2 operands, other immediates : type`, where
 * e1, e2 are its enumerated immediates by name (left out when they are the
 * default 0 of a kind that has a default), then strings, variables ($N) and
 * functions (@f) before the operands, numbers after. The same function gives
 * one op for diagnostics. Floats print in the shortest form that reads back to
 * the same value, so the text depends only on the IR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_impl.h"

void ir_print_float(ClBuf *out, IrType t, double v) {
  if (isnan(v)) {
    cl_buf_puts(out, "nan");
    return;
  }
  if (isinf(v)) {
    cl_buf_puts(out, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  cl_buf_puts(out, buf);
  /* a float constant always shows it is one: 1 -> 1.0 */
  if (!strpbrk(buf, ".en")) cl_buf_puts(out, ".0");
  (void)t;
}

static void print_string(ClBuf *out, const char *s) {
  cl_buf_putc(out, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') cl_buf_printf(out, "\\%c", c);
    else if (c == '\n') cl_buf_puts(out, "\\n");
    else if (c == '\t') cl_buf_puts(out, "\\t");
    else if (c < 32 || c >= 127) cl_buf_printf(out, "\\x%02x", c);
    else cl_buf_putc(out, (char)c);
  }
  cl_buf_putc(out, '"');
}

static void print_const_value(const IrFunc *f, const IrInst *in, ClBuf *out) {
  int64_t bits = ir_imms(f, in)[0];
  if (ir_type_is_float(f->m, in->type)) ir_print_float(out, in->type, ir_bits_float(in->type, bits));
  else cl_buf_printf(out, "%lld", (long long)bits);
}

/* name plus enumerated immediates: "load.acquire.cta" */
static void print_name(const IrFunc *f, const IrInst *in, ClBuf *out) {
  const IrOpInfo *oi = &ir_op_info[in->op];
  const int64_t *imm = ir_imms(f, in);
  cl_buf_puts(out, oi->name);
  for (int i = 0; oi->imms[i]; i++) {
    const IrImmKind *k = ir_imm_kind(oi->imms[i]);
    if (!k || !k->names) continue;
    int64_t x = imm[i];
    if (k->letter == 'F') {
      for (int b = 0; b < k->count; b++)
        if (x >> b & 1) cl_buf_printf(out, ".%s", k->names[b]);
      if (x >> k->count) cl_buf_printf(out, ".flags%llx", (unsigned long long)x);
      continue;
    }
    if (x == 0 && k->omit_zero) continue;
    if (x >= 0 && x < k->count) cl_buf_printf(out, ".%s", k->names[x]);
    else cl_buf_printf(out, ".<%s %lld>", k->what, (long long)x);
  }
}

static void sep(ClBuf *out, int *first) {
  cl_buf_puts(out, *first ? " " : ", ");
  *first = 0;
}

/* strings, variables, functions; operands; numbers */
static void print_operands(const IrFunc *f, const IrInst *in, ClBuf *out) {
  const IrOpInfo *oi = &ir_op_info[in->op];
  const int64_t *imm = ir_imms(f, in);
  const IrRef *a = ir_args(f, in);
  int first = 1;
  for (int i = 0; oi->imms[i]; i++) {
    char k = oi->imms[i];
    if (k == 's') {
      sep(out, &first);
      print_string(out, ir_str_get(f->m, (uint32_t)imm[i]));
    } else if (k == 'v') {
      sep(out, &first);
      cl_buf_printf(out, "$%lld", (long long)imm[i]);
    } else if (k == 'f') {
      sep(out, &first);
      const IrFunc *g = ir_func_at(f->m, (int)imm[i]);
      cl_buf_printf(out, "@%s", g ? ir_func_name(g) : "?");
    }
  }
  for (int i = 0; i < in->nargs; i++) {
    sep(out, &first);
    cl_buf_printf(out, "%%%u", a[i]);
  }
  for (int i = 0; oi->imms[i]; i++)
    if (oi->imms[i] == 'n') {
      sep(out, &first);
      cl_buf_printf(out, "%lld", (long long)imm[i]);
    }
}

static IrRef iv_of(const IrFunc *f, IrRef v) {
  return (v + 1 < f->ninst && f->insts[v + 1].op == IR_OP_IV) ? v + 1 : 0;
}

void ir_print_inst_text(const IrFunc *f, IrRef v, ClBuf *out) {
  const IrInst *in = &f->insts[v];
  const IrRef *a = ir_args(f, in);
  const int64_t *imm = ir_imms(f, in);
  switch (in->op) {
    case IR_OP_FOR: {
      IrRef iv = iv_of(f, v);
      cl_buf_puts(out, "for ");
      if (iv) cl_buf_printf(out, "%%%u = ", iv);
      if (in->nargs == 3) cl_buf_printf(out, "%%%u to %%%u step %%%u", a[0], a[1], a[2]);
      if (imm[0]) cl_buf_printf(out, " unroll %lld", (long long)imm[0]);
      return;
    }
    case IR_OP_IF: cl_buf_printf(out, "if %%%u", in->nargs ? a[0] : 0); return;
    case IR_OP_WCOND: cl_buf_printf(out, "do %%%u", in->nargs ? a[0] : 0); return;
    case IR_OP_PARAM:
      cl_buf_printf(out, "%%%u = param %lld", v, (long long)imm[0]);
      if (imm[1]) cl_buf_printf(out, " byval %lld", (long long)imm[1]);
      cl_buf_printf(out, " : %s", ir_type_name(f->m, in->type));
      return;
    case IR_OP_VOPAQUE: cl_buf_printf(out, "var.opaque $%lld", (long long)imm[0]); return;
    case IR_OP_VLOAD:
    case IR_OP_VLOADX:
    case IR_OP_VSTORE:
    case IR_OP_VLOADV:
    case IR_OP_VSTOREV:
    case IR_OP_VSTOREX: { /* $1[2], $1[%5] */
      int load = in->op == IR_OP_VLOAD || in->op == IR_OP_VLOADX || in->op == IR_OP_VLOADV;
      int dyn = in->op == IR_OP_VLOADX || in->op == IR_OP_VSTOREX;
      if (load) cl_buf_printf(out, "%%%u = ", v);
      cl_buf_printf(out, "%s $%lld[", ir_op_info[in->op].name, (long long)imm[0]);
      if (dyn) cl_buf_printf(out, "%%%u]", in->nargs ? a[0] : 0);
      else cl_buf_printf(out, "%lld]", (long long)imm[1]);
      if (!load && in->nargs) cl_buf_printf(out, ", %%%u", a[in->nargs - 1]);
      if (load) cl_buf_printf(out, " : %s", in->type ? ir_type_name(f->m, in->type) : "?");
      return;
    }
    case IR_OP_CALL: {
      const IrFunc *g = ir_func_at(f->m, (int)imm[0]);
      if (in->type && in->type != IR_T_VOID) cl_buf_printf(out, "%%%u = ", v);
      cl_buf_printf(out, "call @%s(", g ? ir_func_name(g) : "?");
      for (int i = 0; i < in->nargs; i++) cl_buf_printf(out, "%s%%%u", i ? ", " : "", a[i]);
      cl_buf_putc(out, ')');
      if (in->type && in->type != IR_T_VOID) cl_buf_printf(out, " : %s", ir_type_name(f->m, in->type));
      return;
    }
    default: break;
  }
  int has_value = in->type != IR_T_VOID && !(ir_op_info[in->op].res == IR_RES_NONE);
  if (has_value) cl_buf_printf(out, "%%%u = ", v);
  print_name(f, in, out);
  if (in->op == IR_OP_CONST) {
    cl_buf_putc(out, ' ');
    print_const_value(f, in, out);
  } else {
    print_operands(f, in, out);
  }
  if (has_value) cl_buf_printf(out, " : %s", in->type ? ir_type_name(f->m, in->type) : "?");
}

void ir_print_inst(IrFunc *f, IrRef v, ClBuf *out) {
  if (f && ir_ref_ok(f, v)) ir_print_inst_text(f, v, out);
}

static void indent(ClBuf *out, int depth) {
  for (int i = 0; i < depth; i++) cl_buf_puts(out, "  ");
}

static void line_end(const IrFunc *f, const IrInst *in, ClBuf *out, int flags) {
  if ((flags & IR_PRINT_LOCS) && in->loc) {
    cl_buf_puts(out, "  ; ");
    ir_loc_format(f->m, in->loc, out);
  }
  cl_buf_putc(out, '\n');
}

static void print_header(IrFunc *f, ClBuf *out) {
  IrModule *m = f->m;
  cl_buf_printf(out, "%s @%s(", f->kind == IR_FUNC_KERNEL ? "kernel" : "func", ir_str_get(m, f->name));
  for (uint32_t i = 0; i < f->nparam; i++) {
    const IrInst *p = &f->insts[f->params[i]];
    int64_t blob = ir_imms(f, p)[1];
    cl_buf_printf(out, "%s%%%u: ", i ? ", " : "", f->params[i]);
    if (blob) cl_buf_printf(out, "byval %lld ", (long long)blob);
    cl_buf_puts(out, ir_type_name(m, p->type));
  }
  cl_buf_putc(out, ')');
  if (f->ret != IR_T_VOID) cl_buf_printf(out, " -> %s", ir_type_name(m, f->ret));
  static const char *const attr_names[] = {
#define IR_ATTR_NAME(id, name, n) name,
      IR_ATTRS(IR_ATTR_NAME)
#undef IR_ATTR_NAME
  };
  for (int a = 0; a < IR_ATTR__COUNT; a++) {
    if (!f->attrs[a][0]) continue;
    if (f->attrs[a][1]) cl_buf_printf(out, " %s(%d, %d, %d)", attr_names[a], f->attrs[a][0], f->attrs[a][1], f->attrs[a][2]);
    else cl_buf_printf(out, " %s(%d)", attr_names[a], f->attrs[a][0]);
  }
  cl_buf_puts(out, " {\n");
}

void ir_print_func(IrFunc *f, ClBuf *out, int flags) {
  if (!f) return;
  IrModule *m = f->m;
  print_header(f, out);
  for (uint32_t i = 1; i < f->nvar; i++) {
    cl_buf_printf(out, "  $%u: %s x %d", i, ir_type_name(m, f->vars[i].type), f->vars[i].count);
    if ((flags & IR_PRINT_LOCS) && f->vars[i].loc) {
      cl_buf_puts(out, "  ; ");
      ir_loc_format(m, f->vars[i].loc, out);
    }
    cl_buf_putc(out, '\n');
  }
  for (IrRef v = 1; v < f->ninst; v++) {
    const IrInst *in = &f->insts[v];
    if (!(ir_op_info[in->op].flags & IR_OPF_HOIST) || in->op == IR_OP_PARAM) continue;
    cl_buf_puts(out, "  ");
    ir_print_inst_text(f, v, out);
    line_end(f, in, out, flags);
  }
  int depth = 1;
  for (IrRef v = 1; v < f->ninst; v++) {
    const IrInst *in = &f->insts[v];
    unsigned fl = ir_op_info[in->op].flags;
    if ((fl & IR_OPF_HOIST) || in->op == IR_OP_IV) continue;
    switch (in->op) {
      case IR_OP_FOR:
      case IR_OP_IF:
        indent(out, depth);
        ir_print_inst_text(f, v, out);
        cl_buf_puts(out, " {");
        line_end(f, in, out, flags);
        depth++;
        break;
      case IR_OP_WHILE:
        indent(out, depth);
        cl_buf_puts(out, "while {");
        line_end(f, in, out, flags);
        depth++;
        break;
      case IR_OP_ELSE:
        indent(out, depth - 1);
        cl_buf_puts(out, "} else {");
        line_end(f, in, out, flags);
        break;
      case IR_OP_WCOND:
        indent(out, depth - 1);
        cl_buf_puts(out, "} ");
        ir_print_inst_text(f, v, out);
        cl_buf_puts(out, " {");
        line_end(f, in, out, flags);
        break;
      case IR_OP_END:
        if (depth > 1) depth--;
        indent(out, depth);
        cl_buf_puts(out, "}\n");
        break;
      default:
        indent(out, depth);
        ir_print_inst_text(f, v, out);
        line_end(f, in, out, flags);
        break;
    }
  }
  cl_buf_puts(out, "}\n");
}

void ir_print_module(IrModule *m, ClBuf *out, int flags) {
  if (!m) return;
  for (uint32_t i = 0; i < m->nfunc; i++) {
    if (i) cl_buf_putc(out, '\n');
    ir_print_func(m->funcs[i], out, flags);
  }
}
