/* ir_emit_nvvm.c: IR -> NVVM IR text for the CUDA 13 libnvvm (LLVM 7 dialect).
 *
 * The dialect, as checked against libnvvm (../shared/docs/toolchain.md): typed
 * pointers (`float addrspace(1)*`), `byval` without a type, kernels listed in
 * !nvvm.annotations (with maxntid/reqntid/minctasm/maxnreg/cluster_dim_* and
 * grid_constant for by-value blobs), !nvvmir.version 2.0, and for line info
 * DICompileUnit/DISubprogram/DILocation metadata in LLVM 7 syntax, one
 * DILexicalBlockFile per Lua file so PTX .loc names each file. The compile
 * unit's emissionKind is DebugDirectivesOnly: .file/.loc lines and no DWARF
 * sections; LineTablesOnly would make the PTX `.target sm_XX, debug`, which
 * ptxas refuses to optimise ("Optimized debugging not supported").
 *
 * Structured control flow becomes blocks, with a phi for each for loop's
 * induction variable; local variables become SSA values with phis where
 * control flow meets (ir_emit_promote.c), or allocas where the tracer indexed
 * them with run-time values. This file holds the module
 * and function frame, control flow, values and metadata; ir_emit_ops.c lowers
 * the ops. The module is verified first: the emitter assumes valid IR. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_emit.h"

static const char *const datalayout =
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-"
    "v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

static const int space_as[] = {
#define IR_SPACE_AS(id, name, as) as,
    IR_SPACES(IR_SPACE_AS)
#undef IR_SPACE_AS
};

static const char *const scalar_ll[] = {
    "",
#define IR_SCALAR_LL(id, name, bits, ll) ll,
    IR_SCALARS(IR_SCALAR_LL)
#undef IR_SCALAR_LL
};

/* --- text helpers ----------------------------------------------------------------------------------------- */
static const char *arena_str(IrEmit *e, const ClBuf *b) {
  char *s = ir_arena_alloc(&e->m->arena, b->len + 1);
  if (!s) return "";
  memcpy(s, cl_buf_str(b), b->len + 1);
  return s;
}

static void ll_type_write(IrEmit *e, IrType t, ClBuf *b) {
  const IrTypeRec *r = ir_trec(e->m, t);
  switch (r->kind) {
    case IR_TK_VEC: cl_buf_printf(b, "<%u x %s>", r->len, ir_ll_type(e, r->elem)); break;
    case IR_TK_ARRAY: cl_buf_printf(b, "[%u x %s]", r->len, ir_ll_type(e, r->elem)); break;
    case IR_TK_PTR: {
      if (r->space == IR_SPACE_SHARED_CLUSTER) {
        cl_buf_puts(b, "i32");
        break;
      }
      int as = space_as[r->space];
      if (r->space == IR_SPACE_PARAM) as = 0; /* by-value blobs are reached through generic pointers */
      if (as) cl_buf_printf(b, "%s addrspace(%d)*", ir_ll_type(e, r->elem), as);
      else cl_buf_printf(b, "%s*", ir_ll_type(e, r->elem));
      break;
    }
    case IR_TK_STRUCT:
      cl_buf_putc(b, '{');
      for (uint32_t i = 0; i < r->len; i++) cl_buf_printf(b, "%s%s", i ? ", " : "", ir_ll_type(e, r->fields[i]));
      cl_buf_putc(b, '}');
      break;
    default: cl_buf_puts(b, t < IR_T__NSCALAR ? scalar_ll[t] : "void"); break;
  }
}

const char *ir_ll_type(IrEmit *e, IrType t) {
  if (!ir_type_valid(e->m, t)) return "void";
  IrTypeRec *r = &e->m->types[t];
  if (!r->llvm) {
    if (t < IR_T__NSCALAR) {
      r->llvm = scalar_ll[t];
    } else {
      ClBuf b = {0};
      ll_type_write(e, t, &b);
      r->llvm = arena_str(e, &b);
      cl_buf_free(&b);
    }
  }
  return r->llvm;
}

const char *ir_ll_mangle(IrEmit *e, IrType t) {
  static const char *const names[] = {"", "", "i1", "i8", "i16", "i32", "i64", "f16", "i16", "i32", "f32", "f64", "i8", "i8"};
  const IrTypeRec *r = ir_trec(e->m, t);
  if (r->kind == IR_TK_VEC) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "v%u%s", r->len, ir_ll_mangle(e, r->elem));
    return s;
  }
  return t < IR_T__NSCALAR ? names[t] : "?";
}

static uint64_t dbl_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

const char *ir_ll_const(IrEmit *e, IrType t, int64_t bits) {
  char *s = e->vbuf[e->vnext++ & 7];
  size_t n = sizeof e->vbuf[0];
  double d;
  memcpy(&d, &bits, sizeof d);
  switch (t) {
    case IR_T_I1: snprintf(s, n, "%s", bits ? "true" : "false"); break;
    case IR_T_F16: snprintf(s, n, "0xH%04X", ir_f16_from_double(d)); break;
    case IR_T_F32: snprintf(s, n, "0x%016llX", (unsigned long long)dbl_bits((double)(float)d)); break;
    case IR_T_F64: snprintf(s, n, "0x%016llX", (unsigned long long)(uint64_t)bits); break;
    case IR_T_BF16: snprintf(s, n, "%d", (int)(int16_t)ir_bf16_from_double(d)); break;
    case IR_T_E4M3: snprintf(s, n, "%d", (int)(int8_t)ir_fp8_from_double(d, 0)); break;
    case IR_T_E5M2: snprintf(s, n, "%d", (int)(int8_t)ir_fp8_from_double(d, 1)); break;
    case IR_T_TF32: {
      float fv = (float)d;
      int32_t u;
      memcpy(&u, &fv, 4);
      snprintf(s, n, "%d", u);
      break;
    }
    default: snprintf(s, n, "%lld", (long long)bits); break;
  }
  return s;
}

const char *ir_ll_val(IrEmit *e, IrRef v) {
  while (e->alias[v]) v = e->alias[v];
  if (e->pr_vtext && e->pr_vtext[v]) return e->pr_vtext[v];
  if (e->sv_el && e->sv_el[v]) return ir_sv_build(e, v); /* a split vector some use needs whole after all */
  if (e->field_src[v]) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "%%v%u.%u", e->field_src[v], e->field_idx[v]);
    return s;
  }
  const IrInst *in = &e->f->insts[v];
  if (in->op == IR_OP_CONST) return ir_ll_const(e, in->type, ir_imms(e->f, in)[0]);
  if (in->op == IR_OP_UNDEF) return "undef";
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%v%u", v);
  return s;
}

int ir_ll_tmp(IrEmit *e) { return e->tmp++; }

void ir_ll_ins(IrEmit *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cl_buf_puts(&e->body, "  ");
  cl_buf_vprintf(&e->body, fmt, ap);
  va_end(ap);
  if (e->cur_dbg) cl_buf_printf(&e->body, ", !dbg !%u", e->cur_dbg);
  cl_buf_putc(&e->body, '\n');
}

void ir_ll_declare(IrEmit *e, const char *name, const char *decl) {
  for (uint32_t i = 0; i < e->ndeclared; i++)
    if (strcmp(e->declared[i], name) == 0) return;
  if (!IR_GROW(e->m, e->declared, e->capdeclared, e->ndeclared + 1)) {
    e->failed = 1;
    return;
  }
  ClBuf b = {0};
  cl_buf_puts(&b, name);
  e->declared[e->ndeclared++] = arena_str(e, &b);
  cl_buf_free(&b);
  cl_buf_puts(&e->decls, decl);
  cl_buf_putc(&e->decls, '\n');
}

void ir_ll_fail(IrEmit *e, IrRef v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ir_error(e->f, v, "emit: %s", msg);
  e->failed = 1;
}

static void label(IrEmit *e, const char *kind, int id, const char *part) {
  cl_buf_printf(&e->body, "%s%d.%s:\n", kind, id, part);
  snprintf(e->cur_label, sizeof e->cur_label, "%s%d.%s", kind, id, part);
  e->terminated = 0;
}

static void branch(IrEmit *e, const char *kind, int id, const char *part) {
  if (e->terminated) return;
  ir_ll_ins(e, "br label %%%s%d.%s", kind, id, part);
  e->terminated = 1;
}

/* --- debug metadata ------------------------------------------------------------------------------------------ */
static int md(IrEmit *e) { return e->meta_next++; }

static uint32_t file_node(IrEmit *e, uint32_t str) {
  if (str >= e->nfile_md) return 0;
  if (!e->file_md[str]) {
    uint32_t id = (uint32_t)md(e);
    const char *path = ir_str_get(e->m, str);
    cl_buf_printf(&e->meta, "!%u = !DIFile(filename: \"", id);
    for (const char *p = path; *p; p++) {
      if (*p == '"' || *p == '\\' || (unsigned char)*p < 32) cl_buf_printf(&e->meta, "\\%02X", (unsigned char)*p);
      else cl_buf_putc(&e->meta, *p);
    }
    cl_buf_puts(&e->meta, "\", directory: \"\")\n");
    e->file_md[str] = id;
  }
  return e->file_md[str];
}

/* The DILocation of a location id within the current function. */
static uint32_t loc_node(IrEmit *e, uint32_t loc) {
  if (!e->line_info) return 0;
  if (!loc || loc >= e->m->nloc) loc = e->f->loc;
  if (!loc) return 0;
  if (e->loc_md[loc]) return e->loc_md[loc];
  const IrLoc *l = &e->m->locs[loc];
  uint32_t fn_file = e->f->loc ? e->m->locs[e->f->loc].file : l->file;
  uint32_t scope = (uint32_t)e->sp_md;
  if (l->file != fn_file) {
    if (!e->lexblock_md[l->file]) {
      uint32_t id = (uint32_t)md(e);
      cl_buf_printf(&e->meta, "!%u = !DILexicalBlockFile(scope: !%d, file: !%u, discriminator: 0)\n", id, e->sp_md,
                    file_node(e, l->file));
      e->lexblock_md[l->file] = id;
    }
    scope = e->lexblock_md[l->file];
  }
  uint32_t id = (uint32_t)md(e);
  cl_buf_printf(&e->meta, "!%u = !DILocation(line: %u, column: 0, scope: !%u)\n", id, l->line, scope);
  e->loc_md[loc] = id;
  return id;
}

static void debug_function(IrEmit *e) {
  IrModule *m = e->m;
  IrFunc *f = e->f;
  uint32_t file = m->locs[f->loc].file, line = m->locs[f->loc].line;
  if (!e->cu_md) {
    e->cu_md = md(e);
    uint32_t cu_file = file_node(e, file);
    e->st_md = md(e);
    int types = md(e);
    cl_buf_printf(&e->meta,
                  "!%d = distinct !DICompileUnit(language: DW_LANG_C99, file: !%u, producer: \"cutelua\", "
                  "isOptimized: true, runtimeVersion: 0, emissionKind: DebugDirectivesOnly)\n"
                  "!%d = !DISubroutineType(types: !%d)\n!%d = !{null}\n",
                  e->cu_md, cu_file, e->st_md, types, types);
  }
  e->sp_md = md(e);
  cl_buf_printf(&e->meta,
                "!%d = distinct !DISubprogram(name: \"%s\", scope: !%u, file: !%u, line: %u, type: !%d, "
                "isLocal: %s, isDefinition: true, scopeLine: %u, isOptimized: true, unit: !%d)\n",
                e->sp_md, ir_str_get(m, f->name), file_node(e, file), file_node(e, file), line, e->st_md,
                f->kind == IR_FUNC_KERNEL ? "false" : "true", line, e->cu_md);
  memset(e->loc_md, 0, m->nloc * sizeof *e->loc_md);
  memset(e->lexblock_md, 0, e->nfile_md * sizeof *e->lexblock_md);
}

/* --- control flow ------------------------------------------------------------------------------------------ */
static IrCtl *ctl_push(IrEmit *e, int kind) {
  if (!IR_GROW(e->m, e->ctl, e->capctl, e->nctl + 1)) {
    e->failed = 1;
    return NULL;
  }
  IrCtl *c = &e->ctl[e->nctl++];
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->id = e->label++;
  return c;
}

/* The innermost loop, for break and continue. */
static IrCtl *loop_ctl(IrEmit *e) {
  for (uint32_t i = e->nctl; i-- > 0;)
    if (e->ctl[i].kind == IR_OP_FOR || e->ctl[i].kind == IR_OP_WHILE) return &e->ctl[i];
  return NULL;
}

static int loop_md(IrEmit *e, int unroll) {
  if (!unroll) return 0;
  int loop = md(e), hint = md(e);
  cl_buf_printf(&e->meta, "!%d = distinct !{!%d, !%d}\n", loop, loop, hint);
  if (unroll < 0) cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.full\"}\n", hint);
  else if (unroll == 1) cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.disable\"}\n", hint);
  else cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.count\", i32 %d}\n", hint, unroll);
  return loop;
}

static void emit_for(IrEmit *e, IrRef v) {
  IrFunc *f = e->f;
  const IrInst *in = &f->insts[v];
  const IrRef *a = ir_args(f, in);
  IrCtl *c = ctl_push(e, IR_OP_FOR);
  if (!c) return;
  c->iv = v + 1;
  c->step = a[2];
  c->unroll = (int)ir_imms(f, in)[0];
  const char *T = ir_ll_type(e, in->nargs ? f->insts[a[0]].type : IR_T_I32);
  int id = c->id;
  branch(e, "for", id, "pre");
  label(e, "for", id, "pre");
  const IrInst *si = &f->insts[a[2]];
  int sign = 0; /* +1, -1, or 0 when the step is not a constant */
  if (si->op == IR_OP_CONST) sign = ir_imms(f, si)[0] > 0 ? 1 : -1;
  if (!sign) ir_ll_ins(e, "%%for%d.up = icmp sgt %s %s, 0", id, T, ir_ll_val(e, a[2]));
  ir_ll_ins(e, "br label %%for%d.head", id);
  char pre[40];
  snprintf(pre, sizeof pre, "%s", e->cur_label);
  label(e, "for", id, "head");
  ir_pr_loop_open(e, c, v, pre);
  ir_ll_ins(e, "%%v%u = phi %s [ %s, %%for%d.pre ], [ %%for%d.next, %%for%d.latch ]", c->iv, T, ir_ll_val(e, a[0]),
            id, id, id);
  if (sign > 0) ir_ll_ins(e, "%%for%d.go = icmp slt %s %%v%u, %s", id, T, c->iv, ir_ll_val(e, a[1]));
  else if (sign < 0) ir_ll_ins(e, "%%for%d.go = icmp sgt %s %%v%u, %s", id, T, c->iv, ir_ll_val(e, a[1]));
  else {
    ir_ll_ins(e, "%%for%d.lt = icmp slt %s %%v%u, %s", id, T, c->iv, ir_ll_val(e, a[1]));
    ir_ll_ins(e, "%%for%d.gt = icmp sgt %s %%v%u, %s", id, T, c->iv, ir_ll_val(e, a[1]));
    ir_ll_ins(e, "%%for%d.go = select i1 %%for%d.up, i1 %%for%d.lt, i1 %%for%d.gt", id, id, id, id);
  }
  ir_pr_edge(e, &c->exits);
  ir_ll_ins(e, "br i1 %%for%d.go, label %%for%d.body, label %%for%d.exit", id, id, id);
  label(e, "for", id, "body");
}

static void emit_end(IrEmit *e) {
  if (!e->nctl) return;
  IrCtl *c = &e->ctl[e->nctl - 1];
  int id = c->id;
  if (c->kind == IR_OP_FOR) {
    IrFunc *f = e->f;
    const char *T = ir_ll_type(e, f->insts[c->iv].type);
    ir_pr_edge(e, &c->back);
    branch(e, "for", id, "latch");
    label(e, "for", id, "latch");
    ir_pr_join(e, &c->back);
    IrEdges latch = {0};
    ir_pr_edge(e, &latch);
    ir_pr_loop_close(e, c, &latch);
    ir_ll_ins(e, "%%for%d.next = add %s %%v%u, %s", id, T, c->iv, ir_ll_val(e, c->step));
    int lm = loop_md(e, c->unroll);
    if (lm) ir_ll_ins(e, "br label %%for%d.head, !llvm.loop !%d", id, lm);
    else ir_ll_ins(e, "br label %%for%d.head", id);
    e->terminated = 1;
    label(e, "for", id, "exit");
    ir_pr_join(e, &c->exits);
  } else if (c->kind == IR_OP_IF) {
    ir_pr_edge(e, &c->ends);
    branch(e, "if", id, "end");
    if (!c->has_else) {
      label(e, "if", id, "else");
      ir_pr_restore(e, c->at_if);
      ir_pr_edge(e, &c->ends);
      branch(e, "if", id, "end");
    }
    label(e, "if", id, "end");
    ir_pr_join(e, &c->ends);
  } else {
    ir_pr_edge(e, &c->back);
    branch(e, "wh", id, "cond");
    ir_pr_loop_close(e, c, &c->back);
    label(e, "wh", id, "exit");
    ir_pr_join(e, &c->exits);
  }
  ir_pr_ctl_free(c);
  e->nctl--;
}

static void emit_control(IrEmit *e, IrRef v) {
  IrFunc *f = e->f;
  const IrInst *in = &f->insts[v];
  const IrRef *a = ir_args(f, in);
  IrCtl *c;
  switch (in->op) {
    case IR_OP_FOR: emit_for(e, v); break;
    case IR_OP_IF:
      if (!(c = ctl_push(e, IR_OP_IF))) return;
      c->at_if = ir_pr_snap(e);
      ir_ll_ins(e, "br i1 %s, label %%if%d.then, label %%if%d.else", ir_ll_val(e, a[0]), c->id, c->id);
      e->terminated = 1;
      label(e, "if", c->id, "then");
      break;
    case IR_OP_ELSE:
      c = &e->ctl[e->nctl - 1];
      c->has_else = 1;
      ir_pr_edge(e, &c->ends);
      branch(e, "if", c->id, "end");
      label(e, "if", c->id, "else");
      ir_pr_restore(e, c->at_if);
      break;
    case IR_OP_WHILE: {
      if (!(c = ctl_push(e, IR_OP_WHILE))) return;
      /* a block of its own before the header, so that the header's entry edge
         always exists, even after a return */
      branch(e, "wh", c->id, "pre");
      label(e, "wh", c->id, "pre");
      branch(e, "wh", c->id, "cond");
      char pre[40];
      snprintf(pre, sizeof pre, "%s", e->cur_label);
      label(e, "wh", c->id, "cond");
      ir_pr_loop_open(e, c, v, pre);
      break;
    }
    case IR_OP_WCOND:
      c = &e->ctl[e->nctl - 1];
      ir_pr_edge(e, &c->exits);
      ir_ll_ins(e, "br i1 %s, label %%wh%d.body, label %%wh%d.exit", ir_ll_val(e, a[0]), c->id, c->id);
      e->terminated = 1;
      label(e, "wh", c->id, "body");
      break;
    case IR_OP_END: emit_end(e); break;
    case IR_OP_BREAK:
    case IR_OP_CONTINUE:
      if (!(c = loop_ctl(e))) return;
      ir_pr_edge(e, in->op == IR_OP_BREAK ? &c->exits : &c->back);
      if (c->kind == IR_OP_FOR) branch(e, "for", c->id, in->op == IR_OP_BREAK ? "exit" : "latch");
      else branch(e, "wh", c->id, in->op == IR_OP_BREAK ? "exit" : "cond");
      break;
    case IR_OP_RET:
      if (e->terminated) break;
      if (in->nargs) ir_ll_ins(e, "ret %s %s", ir_ll_type(e, f->insts[a[0]].type), ir_ll_val(e, a[0]));
      else ir_ll_ins(e, "ret void");
      e->terminated = 1;
      break;
    default: break;
  }
}

/* --- functions --------------------------------------------------------------------------------------------- */
static void emit_prologue(IrEmit *e) {
  IrFunc *f = e->f;
  for (uint32_t i = 1; i < f->nvar; i++) {
    const IrVarInfo *vi = &f->vars[i];
    const IrTypeRec *r = ir_trec(e->m, vi->type);
    if (ir_pr_is(e, i)) continue; /* an SSA value (ir_emit_promote.c) */
    if (vi->count == 1) cl_buf_printf(&e->entry, "  %%var%u = alloca %s, align %u\n", i, ir_ll_type(e, vi->type), r->natural);
    else if (ir_var_paired(e, i))
      cl_buf_printf(&e->entry, "  %%var%u = alloca [%d x i32], align 4\n", i, vi->count / ir_var_per_word(e, i));
    else cl_buf_printf(&e->entry, "  %%var%u = alloca [%d x %s], align %u\n", i, vi->count, ir_ll_type(e, vi->type), r->natural);
  }
  for (IrRef v = 1; v < f->ninst; v++) {
    const IrInst *in = &f->insts[v];
    const int64_t *imm = ir_imms(f, in);
    switch (in->op) {
      case IR_OP_PARAM:
        if (imm[1])
          cl_buf_printf(&e->entry, "  %%v%u = getelementptr [%lld x i8], [%lld x i8]* %%p%u, i64 0, i64 0\n", v,
                        (long long)imm[1], (long long)imm[1], v);
        break;
      case IR_OP_SMEM:
        cl_buf_printf(&e->globals, "@%s.smem%u = internal addrspace(3) global [%lld x i8] undef, align %lld\n",
                      ir_func_name(f), v, (long long)imm[0], (long long)imm[1]);
        cl_buf_printf(&e->entry, "  %%v%u = bitcast [%lld x i8] addrspace(3)* @%s.smem%u to %s\n", v,
                      (long long)imm[0], ir_func_name(f), v, ir_ll_type(e, in->type));
        break;
      case IR_OP_DSMEM:
        cl_buf_printf(&e->entry, "  %%v%u = bitcast [0 x i8] addrspace(3)* @__cl_dsmem to %s\n", v,
                      ir_ll_type(e, in->type));
        break;
      default: break;
    }
  }
}

/* "float, i32 addrspace(1)*" or the definition's "float %v1, ..." */
static void param_list(IrEmit *e, ClBuf *b, int names) {
  IrFunc *f = e->f;
  for (uint32_t i = 0; i < f->nparam; i++) {
    IrRef p = f->params[i];
    int64_t blob = ir_imms(f, &f->insts[p])[1];
    if (i) cl_buf_puts(b, ", ");
    if (blob) {
      cl_buf_printf(b, "[%lld x i8]*", (long long)blob);
      if (names) cl_buf_printf(b, " byval align %u %%p%u", ir_trec(e->m, f->insts[p].type)->align, p);
    } else {
      cl_buf_puts(b, ir_ll_type(e, f->insts[p].type));
      if (names) cl_buf_printf(b, " %%v%u", p);
    }
  }
}

static void annotate(IrEmit *e, ClBuf *annots, const char *fnref, const char *key, int value) {
  int id = md(e);
  cl_buf_printf(&e->meta, "!%d = !{%s, !\"%s\", i32 %d}\n", id, fnref, key, value);
  cl_buf_printf(annots, "%s!%d", annots->len ? ", " : "", id);
}

static void emit_function(IrEmit *e, ClBuf *annots) {
  IrFunc *f = e->f;
  IrModule *m = e->m;
  const char *name = ir_func_name(f);
  e->tmp = 0;
  e->nctl = 0;
  e->terminated = 0;
  e->cur_dbg = 0;
  cl_buf_clear(&e->entry);
  cl_buf_clear(&e->body);
  e->alias = calloc(f->ninst + 1, sizeof *e->alias);
  e->field_src = calloc(f->ninst + 1, sizeof *e->field_src);
  e->field_idx = calloc(f->ninst + 1, sizeof *e->field_idx);
  e->vflags = calloc(f->ninst + 1, 1);
  snprintf(e->cur_label, sizeof e->cur_label, "entry");
  if (!e->alias || !e->field_src || !e->field_idx || !e->vflags || ir_pr_begin(e) != 0) {
    e->failed = 1;
    goto done;
  }
  /* which aggregates must exist as values (see ir_emit.h) */
  for (IrRef v = 1; v < f->ninst; v++) {
    const IrInst *in = &f->insts[v];
    int takes_apart = in->op == IR_OP_MMA || in->op == IR_OP_EXTRACT || in->op == IR_OP_STMATRIX;
    const IrRef *a = ir_args(f, in);
    for (int i = 0; i < in->nargs; i++)
      if (!takes_apart || (in->op == IR_OP_STMATRIX && i == 0)) e->vflags[a[i]] |= IR_EV_NEED_AGG;
  }
  if (e->line_info) debug_function(e);
  emit_prologue(e);
  for (IrRef v = 1; v < f->ninst && !e->failed; v++) {
    const IrInst *in = &f->insts[v];
    unsigned fl = ir_op_info[in->op].flags;
    if ((fl & IR_OPF_HOIST) || in->op == IR_OP_IV) continue;
    e->cur_dbg = loc_node(e, in->loc);
    if (fl & (IR_OPF_REGION | IR_OPF_TERM)) emit_control(e, v);
    else ir_emit_op(e, v);
  }
  e->cur_dbg = loc_node(e, f->loc);
  if (!e->terminated) {
    if (f->ret == IR_T_VOID) ir_ll_ins(e, "ret void");
    else ir_ll_ins(e, "unreachable");
  }
  ClBuf *o = &e->funcs;
  cl_buf_printf(o, "define %s%s @%s(", f->kind == IR_FUNC_KERNEL ? "" : "internal ", ir_ll_type(e, f->ret), name);
  param_list(e, o, 1);
  cl_buf_puts(o, ")");
  /* A device function is a real function (cute.func asks for one): the
   * optimiser must not inline it away. */
  if (f->kind != IR_FUNC_KERNEL) cl_buf_puts(o, " noinline");
  if (e->line_info) cl_buf_printf(o, " !dbg !%d", e->sp_md);
  cl_buf_puts(o, " {\nentry:\n");
  cl_buf_add(o, e->entry.data ? e->entry.data : "", e->entry.len);
  cl_buf_add(o, e->body.data ? e->body.data : "", e->body.len);
  cl_buf_puts(o, "}\n\n");
done:
  for (uint32_t i = 0; i < e->nctl; i++) ir_pr_ctl_free(&e->ctl[i]); /* left open by a failure */
  e->nctl = 0;
  ir_pr_end(e);
  free(e->alias);
  free(e->field_src);
  free(e->field_idx);
  free(e->vflags);
  e->alias = e->field_src = NULL;
  e->field_idx = NULL;
  e->vflags = NULL;
  if (e->failed || f->kind != IR_FUNC_KERNEL) return;
  /* the kernel's annotations */
  ClBuf fnref = {0};
  cl_buf_puts(&fnref, "void (");
  param_list(e, &fnref, 0);
  cl_buf_printf(&fnref, ")* @%s", name);
  const char *fr = cl_buf_str(&fnref);
  annotate(e, annots, fr, "kernel", 1);
  static const char *const xyz[] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++) {
    char key[32];
    if (f->attrs[IR_ATTR_MAXNTID][0]) {
      snprintf(key, sizeof key, "maxntid%s", xyz[i]);
      annotate(e, annots, fr, key, f->attrs[IR_ATTR_MAXNTID][i]);
    }
    if (f->attrs[IR_ATTR_REQNTID][0]) {
      snprintf(key, sizeof key, "reqntid%s", xyz[i]);
      annotate(e, annots, fr, key, f->attrs[IR_ATTR_REQNTID][i]);
    }
    if (f->attrs[IR_ATTR_CLUSTER][0]) {
      snprintf(key, sizeof key, "cluster_dim_%s", xyz[i]);
      annotate(e, annots, fr, key, f->attrs[IR_ATTR_CLUSTER][i]);
    }
  }
  if (f->attrs[IR_ATTR_MINCTASM][0]) annotate(e, annots, fr, "minctasm", f->attrs[IR_ATTR_MINCTASM][0]);
  if (f->attrs[IR_ATTR_MAXNREG][0]) annotate(e, annots, fr, "maxnreg", f->attrs[IR_ATTR_MAXNREG][0]);
  /* by-value blobs stay in param space: grid_constant lists their 1-based indices */
  ClBuf gc = {0};
  for (uint32_t i = 0; i < f->nparam; i++)
    if (ir_imms(f, &f->insts[f->params[i]])[1]) cl_buf_printf(&gc, "%si32 %u", gc.len ? ", " : "", i + 1);
  if (gc.len) {
    int list = md(e), id = md(e);
    cl_buf_printf(&e->meta, "!%d = !{%s}\n!%d = !{%s, !\"grid_constant\", !%d}\n", list, cl_buf_str(&gc), id, fr, list);
    cl_buf_printf(annots, "%s!%d", annots->len ? ", " : "", id);
  }
  cl_buf_free(&gc);
  cl_buf_free(&fnref);
  (void)m;
}

int ir_emit_nvvm(IrModule *m, const IrEmitOptions *opt, ClBuf *out) {
  if (!m || !out) return -1;
  IrEmitOptions dflt = {0, 0, 0, 0};
  if (!opt) opt = &dflt;
  int saved_sm = m->opt[IR_OPT_SM];
  if (opt->sm > 0) m->opt[IR_OPT_SM] = opt->sm;
  int nerr = ir_verify(m);
  if (nerr) {
    m->opt[IR_OPT_SM] = saved_sm;
    return -1;
  }
  IrEmit e;
  memset(&e, 0, sizeof e);
  e.m = m;
  e.sm = m->opt[IR_OPT_SM];
  e.fast = opt->fast_math;
  e.ftz = opt->ftz;
  e.line_info = opt->line_info;
  e.out = out;
  e.meta_next = 1; /* 0 means "none" below */
  if (e.line_info) { /* every function needs a location for its DISubprogram */
    uint32_t saved_loc = m->cur_loc;
    for (uint32_t i = 0; i < m->nfunc; i++) {
      IrFunc *f = m->funcs[i];
      for (IrRef v = 1; v < f->ninst && !f->loc; v++) f->loc = f->insts[v].loc;
      if (!f->loc) f->loc = ir_set_loc(m, "<cutelua>", 1, NULL);
    }
    m->cur_loc = saved_loc;
  }
  e.nfile_md = m->nstr + 1;
  e.file_md = calloc(e.nfile_md, sizeof *e.file_md);
  e.lexblock_md = calloc(e.nfile_md, sizeof *e.lexblock_md);
  e.loc_md = calloc(m->nloc + 1, sizeof *e.loc_md);
  if (!e.file_md || !e.lexblock_md || !e.loc_md) e.failed = 1;
  /* one extern array for dynamic shared memory, aligned for its most demanding use */
  e.dsmem_align = 0;
  for (uint32_t i = 0; i < m->nfunc; i++) {
    IrFunc *f = m->funcs[i];
    for (IrRef v = 1; v < f->ninst; v++)
      if (f->insts[v].op == IR_OP_DSMEM && ir_imms(f, &f->insts[v])[0] > e.dsmem_align)
        e.dsmem_align = (int)ir_imms(f, &f->insts[v])[0];
  }
  if (e.dsmem_align)
    cl_buf_printf(&e.globals, "@__cl_dsmem = external addrspace(3) global [0 x i8], align %d\n", e.dsmem_align);
  ClBuf annots = {0};
  for (uint32_t i = 0; i < m->nfunc && !e.failed; i++) {
    e.f = m->funcs[i];
    emit_function(&e, &annots);
  }
  int rc = e.failed ? -1 : 0;
  if (!e.failed) {
    cl_buf_printf(out, "; generated by cutelua\ntarget datalayout = \"%s\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n",
                  datalayout);
    if (e.globals.len) {
      cl_buf_add(out, e.globals.data, e.globals.len);
      cl_buf_putc(out, '\n');
    }
    if (e.decls.len) {
      cl_buf_add(out, e.decls.data, e.decls.len);
      cl_buf_putc(out, '\n');
    }
    cl_buf_add(out, cl_buf_str(&e.funcs), e.funcs.len);
    if (e.uses_convergent) cl_buf_puts(out, "attributes #0 = { convergent nounwind }\n\n");
    cl_buf_printf(out, "!nvvm.annotations = !{%s}\n", cl_buf_str(&annots));
    int ver = md(&e);
    cl_buf_printf(out, "!nvvmir.version = !{!%d}\n", ver);
    cl_buf_printf(&e.meta, "!%d = !{i32 2, i32 0, i32 3, i32 1}\n", ver);
    if (e.line_info && e.cu_md) {
      int flags = md(&e);
      cl_buf_printf(out, "!llvm.dbg.cu = !{!%d}\n!llvm.module.flags = !{!%d}\n", e.cu_md, flags);
      cl_buf_printf(&e.meta, "!%d = !{i32 2, !\"Debug Info Version\", i32 3}\n", flags);
    }
    cl_buf_putc(out, '\n');
    cl_buf_add(out, cl_buf_str(&e.meta), e.meta.len);
    if (out->oom) {
      ir_merror(m, "out of memory writing NVVM IR");
      rc = -1;
    }
  }
  cl_buf_free(&annots);
  cl_buf_free(&e.globals);
  cl_buf_free(&e.decls);
  cl_buf_free(&e.funcs);
  cl_buf_free(&e.meta);
  cl_buf_free(&e.entry);
  cl_buf_free(&e.body);
  free(e.file_md);
  free(e.lexblock_md);
  free(e.loc_md);
  m->opt[IR_OPT_SM] = saved_sm;
  return rc;
}
