/* emit.c: IR -> NVVM IR text for the CUDA 13 libnvvm (LLVM 7 dialect).
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
 * control flow meets (emit_ssa.c), or allocas where the tracer indexed them
 * with run-time values. This file holds the module and function frame,
 * control flow and debug metadata; emit_ops.c and emit_mem.c lower the ops.
 * The caller verifies (ir_verify): the emitter takes valid IR, refuses a
 * module changed since it was verified, and never writes to the module. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

static const char *const datalayout =
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-"
    "v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

static void label(Em *e, const char *kind, int id, const char *part) {
  cl_buf_printf(&e->body, "%s%d.%s:\n", kind, id, part);
  snprintf(e->cur_label, sizeof e->cur_label, "%s%d.%s", kind, id, part);
  e->terminated = 0;
}

static void branch(Em *e, const char *kind, int id, const char *part) {
  if (e->terminated) return;
  em_ll_ins(e, "br label %%%s%d.%s", kind, id, part);
  e->terminated = 1;
}

/* --- debug metadata ------------------------------------------------------------------------------------------ */
static int md(Em *e) { return e->meta_next++; }

/* Locations: the module's, and one more (e->syn_loc) for a function that
   has none: "<cutelua>" line 1, its file a string the module may not have
   (e->syn_file), so that nothing is added to the module. */
static IrLoc loc_of(Em *e, uint32_t loc) {
  if (loc == e->syn_loc) return (IrLoc){e->syn_file, 1, 0};
  return e->m->locs[loc];
}

static uint32_t file_node(Em *e, uint32_t str) {
  if (str >= e->nfile_md) return 0;
  if (!e->file_md[str]) {
    uint32_t id = (uint32_t)md(e);
    const char *path = str == e->syn_file && str >= e->m->nstr ? "<cutelua>" : ir_str_get(e->m, str);
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
static uint32_t loc_node(Em *e, uint32_t loc) {
  if (!e->line_info) return 0;
  if (!loc || (loc >= e->m->nloc && loc != e->syn_loc)) loc = e->fn_loc;
  if (!loc) return 0;
  if (e->loc_md[loc]) return e->loc_md[loc];
  IrLoc lv = loc_of(e, loc);
  const IrLoc *l = &lv;
  uint32_t fn_file = e->fn_loc ? loc_of(e, e->fn_loc).file : l->file;
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

static void debug_function(Em *e) {
  const IrModule *m = e->m;
  const IrFunc *f = e->f;
  IrLoc fl = loc_of(e, e->fn_loc);
  uint32_t file = fl.file, line = fl.line;
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
  memset(e->loc_md, 0, (e->syn_loc + 1) * sizeof *e->loc_md);
  memset(e->lexblock_md, 0, e->nfile_md * sizeof *e->lexblock_md);
}

/* --- control flow ------------------------------------------------------------------------------------------ */
static EmCtl *ctl_push(Em *e, int kind) {
  if (!EM_GROW(e, e->ctl, e->capctl, e->nctl + 1)) {
    e->failed = 1;
    return NULL;
  }
  EmCtl *c = &e->ctl[e->nctl++];
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->id = e->label++;
  return c;
}

/* The innermost loop, for break and continue. */
static EmCtl *loop_ctl(Em *e) {
  for (uint32_t i = e->nctl; i-- > 0;)
    if (e->ctl[i].kind == IR_OP_FOR || e->ctl[i].kind == IR_OP_WHILE) return &e->ctl[i];
  return NULL;
}

static int loop_md(Em *e, int unroll) {
  if (!unroll) return 0;
  int loop = md(e), hint = md(e);
  cl_buf_printf(&e->meta, "!%d = distinct !{!%d, !%d}\n", loop, loop, hint);
  if (unroll < 0) cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.full\"}\n", hint);
  else if (unroll == 1) cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.disable\"}\n", hint);
  else cl_buf_printf(&e->meta, "!%d = !{!\"llvm.loop.unroll.count\", i32 %d}\n", hint, unroll);
  return loop;
}

static void emit_for(Em *e, IrRef v) {
  const IrFunc *f = e->f;
  const IrInst *in = &f->insts[v];
  const IrRef *a = ir_args(f, in);
  EmCtl *c = ctl_push(e, IR_OP_FOR);
  if (!c) return;
  c->iv = v + 1;
  c->step = a[2];
  c->unroll = (int)ir_imms(f, in)[0];
  const char *T = em_ll_type(e, in->nargs ? f->insts[a[0]].type : IR_T_I32);
  int id = c->id;
  branch(e, "for", id, "pre");
  label(e, "for", id, "pre");
  const IrInst *si = &f->insts[a[2]];
  int sign = 0; /* +1, -1, or 0 when the step is not a constant */
  if (si->op == IR_OP_CONST) sign = ir_imms(f, si)[0] > 0 ? 1 : -1;
  if (!sign) em_ll_ins(e, "%%for%d.up = icmp sgt %s %s, 0", id, T, em_ll_val(e, a[2]));
  em_ll_ins(e, "br label %%for%d.head", id);
  char pre[40];
  snprintf(pre, sizeof pre, "%s", e->cur_label);
  label(e, "for", id, "head");
  em_pr_loop_open(e, c, v, pre);
  em_ll_ins(e, "%%v%u = phi %s [ %s, %%for%d.pre ], [ %%for%d.next, %%for%d.latch ]", c->iv, T, em_ll_val(e, a[0]),
            id, id, id);
  if (sign > 0) em_ll_ins(e, "%%for%d.go = icmp slt %s %%v%u, %s", id, T, c->iv, em_ll_val(e, a[1]));
  else if (sign < 0) em_ll_ins(e, "%%for%d.go = icmp sgt %s %%v%u, %s", id, T, c->iv, em_ll_val(e, a[1]));
  else {
    em_ll_ins(e, "%%for%d.lt = icmp slt %s %%v%u, %s", id, T, c->iv, em_ll_val(e, a[1]));
    em_ll_ins(e, "%%for%d.gt = icmp sgt %s %%v%u, %s", id, T, c->iv, em_ll_val(e, a[1]));
    em_ll_ins(e, "%%for%d.go = select i1 %%for%d.up, i1 %%for%d.lt, i1 %%for%d.gt", id, id, id, id);
  }
  em_pr_edge(e, &c->exits);
  em_ll_ins(e, "br i1 %%for%d.go, label %%for%d.body, label %%for%d.exit", id, id, id);
  label(e, "for", id, "body");
}

static void emit_end(Em *e) {
  if (!e->nctl) return;
  EmCtl *c = &e->ctl[e->nctl - 1];
  int id = c->id;
  if (c->kind == IR_OP_FOR) {
    const IrFunc *f = e->f;
    const char *T = em_ll_type(e, f->insts[c->iv].type);
    em_pr_edge(e, &c->back);
    branch(e, "for", id, "latch");
    label(e, "for", id, "latch");
    em_pr_join(e, &c->back);
    EmEdges latch = {0};
    em_pr_edge(e, &latch);
    em_pr_loop_close(e, c, &latch);
    em_ll_ins(e, "%%for%d.next = add %s %%v%u, %s", id, T, c->iv, em_ll_val(e, c->step));
    int lm = loop_md(e, c->unroll);
    if (lm) em_ll_ins(e, "br label %%for%d.head, !llvm.loop !%d", id, lm);
    else em_ll_ins(e, "br label %%for%d.head", id);
    e->terminated = 1;
    label(e, "for", id, "exit");
    em_pr_join(e, &c->exits);
  } else if (c->kind == IR_OP_IF) {
    em_pr_edge(e, &c->ends);
    branch(e, "if", id, "end");
    if (!c->has_else) {
      label(e, "if", id, "else");
      em_pr_restore(e, c->at_if);
      em_pr_edge(e, &c->ends);
      branch(e, "if", id, "end");
    }
    label(e, "if", id, "end");
    em_pr_join(e, &c->ends);
  } else {
    em_pr_edge(e, &c->back);
    branch(e, "wh", id, "cond");
    em_pr_loop_close(e, c, &c->back);
    label(e, "wh", id, "exit");
    em_pr_join(e, &c->exits);
  }
  em_pr_ctl_free(c);
  e->nctl--;
}

static void emit_control(Em *e, IrRef v) {
  const IrFunc *f = e->f;
  const IrInst *in = &f->insts[v];
  const IrRef *a = ir_args(f, in);
  EmCtl *c;
  switch (in->op) {
    case IR_OP_FOR: emit_for(e, v); break;
    case IR_OP_IF:
      if (!(c = ctl_push(e, IR_OP_IF))) return;
      c->at_if = em_pr_snap(e);
      em_ll_ins(e, "br i1 %s, label %%if%d.then, label %%if%d.else", em_ll_val(e, a[0]), c->id, c->id);
      e->terminated = 1;
      label(e, "if", c->id, "then");
      break;
    case IR_OP_ELSE:
      c = &e->ctl[e->nctl - 1];
      c->has_else = 1;
      em_pr_edge(e, &c->ends);
      branch(e, "if", c->id, "end");
      label(e, "if", c->id, "else");
      em_pr_restore(e, c->at_if);
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
      em_pr_loop_open(e, c, v, pre);
      break;
    }
    case IR_OP_WCOND:
      c = &e->ctl[e->nctl - 1];
      em_pr_edge(e, &c->exits);
      em_ll_ins(e, "br i1 %s, label %%wh%d.body, label %%wh%d.exit", em_ll_val(e, a[0]), c->id, c->id);
      e->terminated = 1;
      label(e, "wh", c->id, "body");
      break;
    case IR_OP_END: emit_end(e); break;
    case IR_OP_BREAK:
    case IR_OP_CONTINUE:
      if (!(c = loop_ctl(e))) return;
      em_pr_edge(e, in->op == IR_OP_BREAK ? &c->exits : &c->back);
      if (c->kind == IR_OP_FOR) branch(e, "for", c->id, in->op == IR_OP_BREAK ? "exit" : "latch");
      else branch(e, "wh", c->id, in->op == IR_OP_BREAK ? "exit" : "cond");
      break;
    case IR_OP_RET:
      if (e->terminated) break;
      if (in->nargs) em_ll_ins(e, "ret %s %s", em_ll_type(e, f->insts[a[0]].type), em_ll_val(e, a[0]));
      else em_ll_ins(e, "ret void");
      e->terminated = 1;
      break;
    default: break;
  }
}

/* --- functions --------------------------------------------------------------------------------------------- */
static void emit_prologue(Em *e) {
  const IrFunc *f = e->f;
  for (uint32_t i = 1; i < f->nvar; i++) {
    const IrVarInfo *vi = &f->vars[i];
    const IrTypeRec *r = ir_trec(e->m, vi->type);
    if (em_pr_is(e, i)) continue; /* an SSA value (emit_ssa.c) */
    if (vi->count == 1) cl_buf_printf(&e->entry, "  %%var%u = alloca %s, align %u\n", i, em_ll_type(e, vi->type), r->natural);
    else if (em_var_paired(e, i))
      cl_buf_printf(&e->entry, "  %%var%u = alloca [%d x i32], align 4\n", i, vi->count / em_var_per_word(e, i));
    else cl_buf_printf(&e->entry, "  %%var%u = alloca [%d x %s], align %u\n", i, vi->count, em_ll_type(e, vi->type), r->natural);
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
                      (long long)imm[0], ir_func_name(f), v, em_ll_type(e, in->type));
        break;
      case IR_OP_DSMEM:
        cl_buf_printf(&e->entry, "  %%v%u = bitcast [0 x i8] addrspace(3)* @__cl_dsmem to %s\n", v,
                      em_ll_type(e, in->type));
        break;
      default: break;
    }
  }
}

/* "float, i32 addrspace(1)*" or the definition's "float %v1, ..." */
static void param_list(Em *e, ClBuf *b, int names) {
  const IrFunc *f = e->f;
  for (uint32_t i = 0; i < f->nparam; i++) {
    IrRef p = f->params[i];
    int64_t blob = ir_imms(f, &f->insts[p])[1];
    if (i) cl_buf_puts(b, ", ");
    if (blob) {
      cl_buf_printf(b, "[%lld x i8]*", (long long)blob);
      if (names) cl_buf_printf(b, " byval align %u %%p%u", ir_trec(e->m, f->insts[p].type)->align, p);
    } else {
      cl_buf_puts(b, em_ll_type(e, f->insts[p].type));
      if (names) cl_buf_printf(b, " %%v%u", p);
    }
  }
}

static void annotate(Em *e, ClBuf *annots, const char *fnref, const char *key, int value) {
  int id = md(e);
  cl_buf_printf(&e->meta, "!%d = !{%s, !\"%s\", i32 %d}\n", id, fnref, key, value);
  cl_buf_printf(annots, "%s!%d", annots->len ? ", " : "", id);
}

static void emit_function(Em *e, ClBuf *annots) {
  const IrFunc *f = e->f;
  const IrModule *m = e->m;
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
  if (!e->alias || !e->field_src || !e->field_idx || !e->vflags || em_pr_begin(e) != 0) {
    e->failed = 1;
    goto done;
  }
  /* which aggregates must exist as values (see emit_impl.h) */
  for (IrRef v = 1; v < f->ninst; v++) {
    const IrInst *in = &f->insts[v];
    /* these read each register of a fragment (em_frag_reg), never the struct value:
       wgmma's A registers and accumulator, fence_operand's registers */
    int takes_apart = in->op == IR_OP_MMA || in->op == IR_OP_EXTRACT || in->op == IR_OP_STMATRIX ||
                      in->op == IR_OP_WGMMA || in->op == IR_OP_WGFENCEOP;
    const IrRef *a = ir_args(f, in);
    for (int i = 0; i < in->nargs; i++)
      if (!takes_apart || (in->op == IR_OP_STMATRIX && i == 0)) e->vflags[a[i]] |= EM_V_NEED_AGG;
  }
  if (e->line_info) { /* every function needs a location for its DISubprogram */
    e->fn_loc = f->loc;
    for (IrRef v = 1; v < f->ninst && !e->fn_loc; v++) e->fn_loc = f->insts[v].loc;
    if (!e->fn_loc) e->fn_loc = e->syn_loc;
    debug_function(e);
  }
  emit_prologue(e);
  for (IrRef v = 1; v < f->ninst && !e->failed; v++) {
    const IrInst *in = &f->insts[v];
    unsigned fl = ir_op_info[in->op].flags;
    if ((fl & IR_OPF_HOIST) || in->op == IR_OP_IV) continue;
    e->cur_dbg = loc_node(e, in->loc);
    if (fl & (IR_OPF_REGION | IR_OPF_TERM)) emit_control(e, v);
    else em_op(e, v);
  }
  e->cur_dbg = loc_node(e, e->fn_loc);
  if (!e->terminated) {
    if (f->ret == IR_T_VOID) em_ll_ins(e, "ret void");
    else em_ll_ins(e, "unreachable");
  }
  ClBuf *o = &e->funcs;
  cl_buf_printf(o, "define %s%s @%s(", f->kind == IR_FUNC_KERNEL ? "" : "internal ", em_ll_type(e, f->ret), name);
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
  for (uint32_t i = 0; i < e->nctl; i++) em_pr_ctl_free(&e->ctl[i]); /* left open by a failure */
  e->nctl = 0;
  em_pr_end(e);
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

int em_nvvm(const IrModule *m, const EmOptions *opt, ClBuf *out, ClBuf *err) {
  if (!m || !out) return -1;
  if (!ir_module_verified(m)) {
    if (err)
      cl_buf_puts(err, "error: emit: the module was not verified since it last changed (verify it first: the "
                       "emitter takes valid IR)\n");
    return -1;
  }
  EmOptions dflt = {0, 0, 0, NULL};
  if (!opt) opt = &dflt;
  if (opt->target && !cl_target_find(opt->target)) {
    if (err) cl_buf_printf(err, "error: emit: unknown target '%s' (known: %s)\n", opt->target, cl_target_list());
    return -1;
  }
  Em e;
  memset(&e, 0, sizeof e);
  e.m = m;
  e.target = opt->target;
  e.fast = opt->fast_math;
  e.ftz = opt->ftz;
  e.line_info = opt->line_info;
  e.out = out;
  e.err = err;
  e.meta_next = 1; /* 0 means "none" below */
  /* a function with no location of its own gets "<cutelua>":1 (e.syn_loc) */
  e.syn_loc = m->nloc ? m->nloc : 1; /* ids from 1; 0 is "none" */
  e.syn_file = ir_str_find(m, "<cutelua>");
  if (!e.syn_file) e.syn_file = m->nstr ? m->nstr : 1;
  e.ntype_ll = (uint32_t)ir_type_count(m) + 1;
  e.type_ll = calloc(e.ntype_ll, sizeof *e.type_ll);
  e.nfile_md = (m->nstr > e.syn_file ? m->nstr : e.syn_file) + 1;
  e.file_md = calloc(e.nfile_md, sizeof *e.file_md);
  e.lexblock_md = calloc(e.nfile_md, sizeof *e.lexblock_md);
  e.loc_md = calloc(e.syn_loc + 1, sizeof *e.loc_md);
  if (!e.file_md || !e.lexblock_md || !e.loc_md || !e.type_ll) e.failed = 1;
  /* one extern array for dynamic shared memory, aligned for its most demanding use */
  e.dsmem_align = 0;
  for (uint32_t i = 0; i < m->nfunc; i++) {
    const IrFunc *f = m->funcs[i];
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
  if (e.types.oom) e.failed = 1;
  int rc = e.failed ? -1 : 0;
  if (!e.failed) {
    cl_buf_printf(out, "; generated by cutelua\ntarget datalayout = \"%s\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n",
                  datalayout);
    if (e.types.len) {
      cl_buf_add(out, e.types.data, e.types.len);
      cl_buf_putc(out, '\n');
    }
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
      if (err) cl_buf_puts(err, "error: emit: out of memory writing NVVM IR\n");
      rc = -1;
    }
  }
  cl_buf_free(&annots);
  cl_buf_free(&e.types);
  cl_buf_free(&e.globals);
  cl_buf_free(&e.decls);
  cl_buf_free(&e.funcs);
  cl_buf_free(&e.meta);
  cl_buf_free(&e.entry);
  cl_buf_free(&e.body);
  free(e.file_md);
  free(e.lexblock_md);
  free(e.loc_md);
  free(e.type_ll);
  ir_arena_free(&e.arena);
  if (rc && err && !err->len) cl_buf_puts(err, "error: emit: out of memory\n");
  return rc;
}
