/* emit_ssa.c: local variables as SSA values in the emitted NVVM IR.
 *
 * The tracer keeps mutable state (register fragments, accumulators, loop
 * counters written by Lua code) in local variables. Written as allocas, a
 * tensor-core GEMM's NVVM IR is mostly getelementptr/load/store around each
 * mma, which libnvvm's SROA and mem2reg must take apart again: about half of
 * its time. Every access to a variable the tracer indexed only with constants
 * names an element (a 32-bit word for packed 8- and 16-bit variables) known
 * here, and control flow is structured, so the emitter builds SSA form itself:
 *
 *  - each element ("slot") has a current value, the text of an SSA value or a
 *    constant ("undef" before the first store); a store replaces it, a load
 *    reads it (var.load of an unpacked element emits nothing at all);
 *  - a branch records the state on its edge (a snapshot); the block where
 *    edges meet (if.end, a loop's latch and exit) gets a phi for each slot
 *    whose values differ, and the others keep the common value;
 *  - a loop header gets a phi for each slot stored anywhere in the loop
 *    (found by a scan of its body); its back-edge values are known only at
 *    the loop's end, so the phis are written into the header then.
 *
 * Variables indexed by a run-time value (var.loadx/var.storex) stay allocas
 * (see emit_mem.c), as do variables of types a phi cannot carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

#define NOT_PROMOTED UINT32_MAX
#define MAX_SLOTS 65536u

static int promotable_type(Em *e, IrType t) {
  const IrTypeRec *r = REC(e, t);
  return r->kind == IR_TK_INT || r->kind == IR_TK_FLOAT || r->kind == IR_TK_PTR || r->kind == IR_TK_VEC;
}

int em_pr_begin(Em *e) {
  const IrFunc *f = e->f;
  e->pr_base = calloc(f->nvar + 1, sizeof *e->pr_base);
  e->pr_vtext = calloc(f->ninst + 1, sizeof *e->pr_vtext);
  e->sv_el = calloc(f->ninst + 1, sizeof *e->sv_el);
  e->sv_n = calloc(f->ninst + 1, sizeof *e->sv_n);
  e->sv_words = calloc(f->ninst + 1, sizeof *e->sv_words);
  if (!e->pr_base || !e->pr_vtext || !e->sv_el || !e->sv_n || !e->sv_words) return -1;
  em_sv_plan(e);
  uint32_t n = 0;
  for (uint32_t i = 1; i < f->nvar; i++) {
    const IrVarInfo *vi = &f->vars[i];
    int per = em_var_per_word(e, i);
    uint32_t slots = (uint32_t)(per ? vi->count / per : vi->count);
    if (vi->dynamic || vi->count < 1 || !promotable_type(e, vi->type) || n + slots > MAX_SLOTS) {
      e->pr_base[i] = NOT_PROMOTED;
      continue;
    }
    e->pr_base[i] = n;
    n += slots;
  }
  e->pr_nslot = n;
  if (!n) return 0;
  e->pr_cur = malloc(n * sizeof *e->pr_cur);
  e->pr_type = malloc(n * sizeof *e->pr_type);
  e->pr_mark = calloc(n, sizeof *e->pr_mark);
  if (!e->pr_cur || !e->pr_type || !e->pr_mark) return -1;
  for (uint32_t i = 1; i < f->nvar; i++) {
    if (e->pr_base[i] == NOT_PROMOTED) continue;
    const IrVarInfo *vi = &f->vars[i];
    int per = em_var_per_word(e, i);
    uint32_t slots = (uint32_t)(per ? vi->count / per : vi->count);
    const char *T = per ? "i32" : em_ll_type(e, vi->type);
    for (uint32_t s = 0; s < slots; s++) {
      e->pr_cur[e->pr_base[i] + s] = "undef";
      e->pr_type[e->pr_base[i] + s] = T;
    }
  }
  return 0;
}

void em_pr_end(Em *e) {
  free(e->pr_base);
  free(e->pr_vtext);
  free(e->pr_cur);
  free(e->pr_type);
  free(e->pr_mark);
  free(e->sv_el);
  free(e->sv_n);
  free(e->sv_words);
  e->sv_el = NULL;
  e->sv_n = NULL;
  e->sv_words = NULL;
  e->pr_base = NULL;
  e->pr_vtext = NULL;
  e->pr_cur = e->pr_type = NULL;
  e->pr_mark = NULL;
  e->pr_nslot = 0;
}

int em_pr_is(Em *e, uint32_t var) { return e->pr_base && e->pr_base[var] != NOT_PROMOTED; }

/* A copy of `s` that lives until the emitter returns (its arena). */
const char *em_pr_keep(Em *e, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ir_arena_alloc(&e->arena, n);
  if (!p) {
    e->failed = 1;
    return "undef";
  }
  memcpy(p, s, n);
  return p;
}

const char *em_pr_get(Em *e, uint32_t var, long long slot) { return e->pr_cur[e->pr_base[var] + slot]; }

void em_pr_set(Em *e, uint32_t var, long long slot, const char *val) {
  e->pr_cur[e->pr_base[var] + slot] = em_pr_keep(e, val);
}

/* --- states on edges --------------------------------------------------------------------------------------------- */
static const char **snap(Em *e) {
  if (!e->pr_nslot) return NULL;
  const char **s = malloc(e->pr_nslot * sizeof *s);
  if (!s) {
    e->failed = 1;
    return NULL;
  }
  memcpy(s, e->pr_cur, e->pr_nslot * sizeof *s);
  return s;
}

static void edges_add(Em *e, EmEdges *j, const char *label, const char **state) {
  if (j->n == j->cap) {
    uint32_t cap = j->cap ? j->cap * 2 : 4;
    EmEdge *p = realloc(j->edge, cap * sizeof *p);
    if (!p) {
      free(state);
      e->failed = 1;
      return;
    }
    j->edge = p;
    j->cap = cap;
  }
  EmEdge *d = &j->edge[j->n++];
  snprintf(d->label, sizeof d->label, "%s", label);
  d->state = state;
}

void em_pr_edge(Em *e, EmEdges *j) {
  if (!e->pr_nslot || e->terminated) return;
  const char **s = snap(e);
  if (s) edges_add(e, j, e->cur_label, s);
}

void em_pr_edge_from(Em *e, EmEdges *j, const char *label, const char **state) {
  if (!e->pr_nslot) return;
  const char **s = malloc(e->pr_nslot * sizeof *s);
  if (!s) {
    e->failed = 1;
    return;
  }
  memcpy(s, state, e->pr_nslot * sizeof *s);
  edges_add(e, j, label, s);
}

static void edges_free(EmEdges *j) {
  for (uint32_t i = 0; i < j->n; i++) free(j->edge[i].state);
  free(j->edge);
  memset(j, 0, sizeof *j);
}

const char **em_pr_snap(Em *e) { return snap(e); }

void em_pr_restore(Em *e, const char **s) {
  if (s) memcpy(e->pr_cur, s, e->pr_nslot * sizeof *s);
}

/* Right after the label of a block where the edges meet. */
void em_pr_join(Em *e, EmEdges *j) {
  if (!e->pr_nslot || !j->n) {
    edges_free(j);
    return;
  }
  for (uint32_t s = 0; s < e->pr_nslot; s++) {
    const char *v0 = j->edge[0].state[s];
    int same = 1;
    for (uint32_t i = 1; i < j->n && same; i++) {
      const char *vi = j->edge[i].state[s];
      same = vi == v0 || strcmp(vi, v0) == 0;
    }
    if (same) {
      e->pr_cur[s] = v0;
      continue;
    }
    ClBuf b = {0};
    const char *name = em_tmp(e);
    cl_buf_printf(&b, "%s = phi %s ", name, e->pr_type[s]);
    for (uint32_t i = 0; i < j->n; i++)
      cl_buf_printf(&b, "%s[ %s, %%%s ]", i ? ", " : "", j->edge[i].state[s], j->edge[i].label);
    e->pr_cur[s] = em_pr_keep(e, name);
    em_ll_ins(e, "%s", cl_buf_str(&b));
    if (b.oom) e->failed = 1;
    cl_buf_free(&b);
  }
  edges_free(j);
}

/* --- loops ---------------------------------------------------------------------------------------------------------- */
/* Marks the slots stored anywhere between the loop op v and its end; returns
 * how many. pr_mark[s] == stamp for a marked slot. */
static uint32_t stored_in_loop(Em *e, IrRef v, uint32_t stamp) {
  const IrFunc *f = e->f;
  uint32_t n = 0;
  int depth = 0;
  for (IrRef w = v + 1; w < f->ninst; w++) {
    const IrInst *in = &f->insts[w];
    if (in->op == IR_OP_FOR || in->op == IR_OP_IF || in->op == IR_OP_WHILE) {
      depth++;
      continue;
    }
    if (in->op == IR_OP_END) {
      if (depth-- == 0) break;
      continue;
    }
    if (in->op != IR_OP_VSTORE && in->op != IR_OP_VSTOREV && in->op != IR_OP_VOPAQUE) continue;
    const int64_t *imm = ir_imms(f, in);
    uint32_t var = (uint32_t)imm[0];
    if (!em_pr_is(e, var)) continue;
    int per = em_var_per_word(e, var);
    long long lo, hi; /* elements [lo, hi) */
    if (in->op == IR_OP_VOPAQUE) {
      lo = 0;
      hi = f->vars[var].count;
    } else if (in->op == IR_OP_VSTORE) {
      lo = imm[1];
      hi = lo + 1;
    } else {
      lo = imm[1];
      hi = lo + ir_trec(e->m, f->insts[ir_args(f, in)[0]].type)->len;
    }
    if (per) {
      lo /= per;
      hi = (hi + per - 1) / per;
    }
    for (long long s = lo; s < hi; s++) {
      uint32_t slot = e->pr_base[var] + (uint32_t)s;
      if (e->pr_mark[slot] != stamp) {
        e->pr_mark[slot] = stamp;
        n++;
      }
    }
  }
  return n;
}

/* Right after the label of a loop header: the state entering it (from
 * `pre_label`) is kept, and every slot the loop stores gets a phi, written
 * when the loop closes. */
void em_pr_loop_open(Em *e, EmCtl *c, IrRef v, const char *pre_label) {
  if (!e->pr_nslot) return;
  snprintf(c->pre_label, sizeof c->pre_label, "%s", pre_label);
  c->pre = snap(e);
  c->phi_at = e->body.len;
  uint32_t stamp = ++e->pr_stamp;
  uint32_t n = stored_in_loop(e, v, stamp);
  c->nh = 0;
  if (!n) return;
  c->hslot = malloc(n * sizeof *c->hslot);
  c->hname = malloc(n * sizeof *c->hname);
  if (!c->hslot || !c->hname) {
    e->failed = 1;
    return;
  }
  for (uint32_t s = 0; s < e->pr_nslot; s++) {
    if (e->pr_mark[s] != stamp) continue;
    c->hslot[c->nh] = s;
    c->hname[c->nh] = em_pr_keep(e, em_tmp(e));
    e->pr_cur[s] = c->hname[c->nh];
    c->nh++;
  }
}

/* The state on the loop's exit edge from its header (the header's values). */
const char **em_pr_header_state(Em *e, EmCtl *c) {
  if (!e->pr_nslot || !c->pre) return NULL;
  const char **s = malloc(e->pr_nslot * sizeof *s);
  if (!s) {
    e->failed = 1;
    return NULL;
  }
  memcpy(s, c->pre, e->pr_nslot * sizeof *s);
  for (uint32_t i = 0; i < c->nh; i++) s[c->hslot[i]] = c->hname[i];
  return s;
}

/* At the loop's end: writes the header phis, with the entry edge and the
 * back edges in `back`, at the place kept by em_pr_loop_open. */
void em_pr_loop_close(Em *e, EmCtl *c, EmEdges *back) {
  if (!e->pr_nslot) return;
  ClBuf b = {0};
  for (uint32_t i = 0; i < c->nh; i++) {
    uint32_t s = c->hslot[i];
    cl_buf_printf(&b, "  %s = phi %s ", c->hname[i], e->pr_type[s]);
    int first = 1;
    if (c->pre_label[0]) {
      cl_buf_printf(&b, "[ %s, %%%s ]", c->pre[s], c->pre_label);
      first = 0;
    }
    for (uint32_t k = 0; k < back->n; k++, first = 0)
      cl_buf_printf(&b, "%s[ %s, %%%s ]", first ? "" : ", ", back->edge[k].state[s], back->edge[k].label);
    cl_buf_putc(&b, '\n');
  }
  if (b.len && cl_buf_reserve(&e->body, b.len)) {
    char *at = e->body.data + c->phi_at;
    memmove(at + b.len, at, e->body.len - c->phi_at + 1);
    memcpy(at, b.data, b.len);
    e->body.len += b.len;
  }
  if (b.oom || e->body.oom) e->failed = 1;
  cl_buf_free(&b);
  edges_free(back);
}

void em_pr_ctl_free(EmCtl *c) {
  free(c->pre);
  free(c->hslot);
  free(c->hname);
  free(c->at_if);
  c->pre = c->at_if = NULL;
  c->hslot = NULL;
  c->hname = NULL;
  c->nh = 0;
  edges_free(&c->back);
  edges_free(&c->exits);
  edges_free(&c->ends);
}

/* --- split vectors ----------------------------------------------------------------------------------------------- *
 * Fragments travel as short vectors: a var.loadv of an mma operand, bitcast to
 * 32-bit registers and taken apart by extracts; an mma result packed into a
 * vector and stored with var.storev. Where every use of a vector only takes it
 * apart again (extract, var.storev, a bitcast that is itself split), the
 * vector is never built: the emitter keeps the text of each element, or of
 * each 32-bit word for vectors of 8- and 16-bit elements loaded from a packed
 * variable, and the uses read those. */

/* Marks the vectors some use needs whole (EM_V_VNEED); uses come after
 * definitions, so one backward walk sees a bitcast's own need before its
 * operand's. */
void em_sv_plan(Em *e) {
  const IrFunc *f = e->f;
  for (IrRef v = f->ninst; v-- > 1;) {
    const IrInst *in = &f->insts[v];
    const IrRef *a = ir_args(f, in);
    for (int i = 0; i < in->nargs; i++) {
      IrRef x = a[i];
      if (REC(e, f->insts[x].type)->kind != IR_TK_VEC) continue;
      int ok = in->op == IR_OP_EXTRACT || (in->op == IR_OP_VSTOREV && i == 0) ||
               (in->op == IR_OP_BITCAST && REC(e, in->type)->kind == IR_TK_VEC && !(e->vflags[v] & EM_V_VNEED));
      if (!ok) e->vflags[x] |= EM_V_VNEED;
    }
  }
}

int em_sv_is(Em *e, IrRef v) { return e->sv_el && e->sv_el[v] != NULL; }
int em_sv_wanted(Em *e, IrRef v) {
  return e->sv_el && REC(e, TY(e, v))->kind == IR_TK_VEC && !(e->vflags[v] & EM_V_VNEED);
}

/* Records the n texts of v's elements (words: 32-bit words of a vector of
 * narrower elements). */
void em_sv_set(Em *e, IrRef v, const char *const *texts, int n, int words) {
  const char **el = ir_arena_alloc(&e->arena, (size_t)n * sizeof *el);
  if (!el) {
    e->failed = 1;
    return;
  }
  for (int i = 0; i < n; i++) el[i] = em_pr_keep(e, texts[i]);
  e->sv_el[v] = el;
  e->sv_n[v] = (uint16_t)n;
  e->sv_words[v] = (uint8_t)words;
}

/* Element i of a split vector, as text (code only to take a word apart). */
const char *em_sv_elem(Em *e, IrRef v, int i) {
  if (!e->sv_words[v]) return e->sv_el[v][i];
  const IrTypeRec *r = REC(e, TY(e, v));
  int bits = REC(e, r->elem)->bits, per = 32 / bits;
  char x[32], h[32];
  snprintf(x, sizeof x, "%s", em_tmp(e));
  em_ll_ins(e, "%s = lshr i32 %s, %d", x, e->sv_el[v][i / per], (i % per) * bits);
  snprintf(h, sizeof h, "%s", em_tmp(e));
  em_ll_ins(e, "%s = trunc i32 %s to i%d", h, x, bits);
  const char *T = LT(e, r->elem);
  char I[8];
  snprintf(I, sizeof I, "i%d", bits);
  if (strcmp(T, I) == 0) return em_pr_keep(e, h);
  const char *d = em_pr_keep(e, em_tmp(e));
  em_ll_ins(e, "%s = bitcast %s %s to %s", d, I, h, T);
  return d;
}

/* A split vector built whole at this point (for a use that needs it). */
const char *em_sv_build(Em *e, IrRef v) {
  const IrTypeRec *r = REC(e, TY(e, v));
  const char *VT = LT(e, TY(e, v));
  if (e->sv_words[v]) {
    int words = e->sv_n[v];
    char acc[64] = "undef", WT[32];
    snprintf(WT, sizeof WT, "<%d x i32>", words);
    for (int i = 0; i < words; i++) {
      const char *d = em_pr_keep(e, em_tmp(e));
      em_ll_ins(e, "%s = insertelement %s %s, i32 %s, i32 %d", d, WT, acc, e->sv_el[v][i], i);
      snprintf(acc, sizeof acc, "%s", d);
    }
    const char *d = em_pr_keep(e, em_tmp(e));
    em_ll_ins(e, "%s = bitcast %s %s to %s", d, WT, acc, VT);
    return d;
  }
  const char *acc = "undef", *T = LT(e, r->elem);
  for (uint32_t i = 0; i < r->len; i++) {
    const char *d = em_pr_keep(e, em_tmp(e));
    em_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %u", d, VT, acc, T, e->sv_el[v][i], i);
    acc = d;
  }
  return acc;
}

/* A pack into a vector: its operands are the elements. */
int em_sv_pack(Em *e, IrRef v) {
  if (!em_sv_wanted(e, v)) return 0;
  const IrInst *in = I(e, v);
  const char *el[256];
  if (in->nargs > 256) return 0;
  for (int i = 0; i < in->nargs; i++) el[i] = em_pr_keep(e, VAL(e, A(e, v)[i]));
  em_sv_set(e, v, el, in->nargs, 0);
  return 1;
}

/* A 32-bit value as `to` (i32 or float): a bitcast where the types differ. */
static const char *as32(Em *e, const char *val, const char *from, const char *to) {
  if (strcmp(from, to) == 0) return val;
  const char *d = em_pr_keep(e, em_tmp(e));
  em_ll_ins(e, "%s = bitcast %s %s to %s", d, from, val, to);
  return d;
}

/* A bitcast between vectors of a split vector: split too, where the
 * elements or words line up. */
int em_sv_bitcast(Em *e, IrRef v) {
  IrRef x = em_resolve(e, A(e, v)[0]);
  if (!em_sv_is(e, x) || !em_sv_wanted(e, v)) return 0;
  const IrTypeRec *rf = REC(e, TY(e, x)), *rt = REC(e, TY(e, v));
  int fb = REC(e, rf->elem)->bits, tb = REC(e, rt->elem)->bits;
  const char *FT = LT(e, rf->elem), *TT = LT(e, rt->elem);
  const char *el[256];
  int n = e->sv_n[x];
  if (n > 256) return 0;
  /* the source as 32-bit words, where it is made of them */
  int words = e->sv_words[x] || fb == 32;
  if (words && (tb == 32 || tb == 16 || tb == 8)) {
    for (int i = 0; i < n; i++) el[i] = e->sv_words[x] ? e->sv_el[x][i] : as32(e, e->sv_el[x][i], FT, "i32");
    if (tb == 32)
      for (int i = 0; i < n; i++) el[i] = as32(e, el[i], "i32", TT);
    em_sv_set(e, v, el, n, tb != 32);
    return 1;
  }
  if (!e->sv_words[x] && fb == tb && rf->len == rt->len && strcmp(FT, TT) == 0) { /* bf16 <-> i16 */
    em_sv_set(e, v, e->sv_el[x], n, 0);
    return 1;
  }
  return 0;
}

/* An extract from a split vector: the element's text. */
int em_sv_extract(Em *e, IrRef v) {
  IrRef x = em_resolve(e, A(e, v)[0]);
  if (!em_sv_is(e, x)) return 0;
  e->pr_vtext[v] = em_sv_elem(e, x, (int)IM(e, v)[0]);
  return 1;
}
