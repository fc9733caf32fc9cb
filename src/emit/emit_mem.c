/* emit_mem.c: the lowering of memory, synchronisation, warp and
 * tensor-core ops: weak loads and stores as LLVM instructions, ordered and
 * cache-hinted ones and atomics as inline PTX (so the memory order and scope
 * are exactly the PTX ones), local variables through allocas, special registers
 * (intrinsics where LLVM 7 knows them), barriers, fences, shuffles, votes,
 * reductions, mma.sync, ldmatrix/stmatrix and cp.async.
 *
 * The Hopper ops have a file per part: emit_wgmma.c, emit_tma.c, emit_sync90.c
 * (most are an EmAsm with their operands, like emit_mma and emit_cpasync; the
 * fixed ones need only an ASM0 row in ir_ops.h). */
#include <stdio.h>
#include <string.h>

#include "emit_impl.h"

/* --- memory ----------------------------------------------------------------------------------------------------- */
/* A pointer to `want` in the space of p (bitcast when the element differs). */
static const char *ptr_as(Em *e, IrRef p, const char *want_ptr) {
  const char *lp = LT(e, TY(e, p));
  if (strcmp(lp, want_ptr) == 0) return VAL(e, p);
  int n = em_ll_tmp(e);
  em_ll_ins(e, "%%t%d = bitcast %s %s to %s", n, lp, VAL(e, p), want_ptr);
  return em_tname(e, n);
}


/* ld/st through inline PTX: ordered, cache-hinted or shared_cluster accesses. */
static void mem_asm(Em *e, IrRef v, int store, IrRef p, IrType t, IrRef val) {
  const int64_t *imm = IM(e, v);
  int order = (int)imm[0], scope = (int)imm[1], cache = (int)imm[2];
  const IrTypeRec *tr = REC(e, t);
  int n = tr->kind == IR_TK_VEC ? (int)tr->len : 1;
  IrType et = tr->kind == IR_TK_VEC ? tr->elem : t;
  EmReg r = em_asm_reg(e, et);
  int space = REC(e, TY(e, p))->space;
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "%s", store ? "st" : "ld");
  if (order == IR_ORDER_VOLATILE) em_asm_text(&as, ".volatile");
  else if (order != IR_ORDER_WEAK) em_asm_text(&as, ".%s.%s", ir_imm_name('O', order), ir_imm_name('S', scope));
  em_asm_text(&as, "%s", em_ptx_space(space));
  if (cache) em_asm_text(&as, ".%s", ir_imm_name('C', cache));
  if (n > 1) em_asm_text(&as, ".v%d", n);
  em_asm_text(&as, ".%s ", r.ptx);
  if (store) {
    em_asm_text(&as, "[$0], ");
    em_asm_regs(&as, 1, n, 0);
    em_asm_text(&as, ";");
    em_asm_addr(e, &as, p);
    for (int i = 0; i < n; i++) {
      const char *x = VAL(e, val);
      char xs[80];
      em_keep(xs, sizeof xs, x);
      if (n > 1) {
        em_keep(xs, sizeof xs, em_tmp(e));
        em_ll_ins(e, "%s = extractelement %s %s, i32 %d", xs, LT(e, t), VAL(e, val), i);
      }
      char rv[80];
      em_keep(rv, sizeof rv, em_asm_to_reg(e, r, et, xs));
      em_asm_in(e, &as, r.letter, r.ll, rv);
    }
    em_asm_call(e, &as, NULL, "void", 1 | 4);
    return;
  }
  em_asm_regs(&as, 0, n, 0);
  em_asm_text(&as, ", [$%d];", n);
  for (int i = 0; i < n; i++) em_asm_out(&as, r.letter);
  em_asm_addr(e, &as, p);
  char res[32], ret[1024];
  em_keep(res, sizeof res, em_tmp(e));
  if (n == 1) {
    snprintf(ret, sizeof ret, "%s", r.ll);
    em_asm_call(e, &as, res, ret, 1 | 4);
    em_asm_from_reg(e, r, et, res, em_def(e, v));
    return;
  }
  size_t len = (size_t)snprintf(ret, sizeof ret, "{");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(ret + len, sizeof ret - len, "%s%s", i ? ", " : "", r.ll);
  snprintf(ret + len, sizeof ret - len, "}");
  em_asm_call(e, &as, res, ret, 1 | 4);
  char acc[32] = "undef";
  for (int i = 0; i < n; i++) {
    char x[32], y[32];
    em_keep(x, sizeof x, em_tmp(e));
    em_ll_ins(e, "%s = extractvalue %s %s, %d", x, ret, res, i);
    em_keep(y, sizeof y, em_tmp(e));
    em_asm_from_reg(e, r, et, x, y);
    const char *dst = i == n - 1 ? em_def(e, v) : em_tmp(e);
    char d[32];
    em_keep(d, sizeof d, dst);
    em_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, LT(e, t), acc, LT(e, et), y, i);
    em_keep(acc, sizeof acc, d);
  }
}

/* Vectors of 8- or 16-bit elements move as 32-bit words (<W x i32>): NVPTX
 * would otherwise split a 16-byte <8 x i16> access into two 8-byte ones, and
 * the words are what registers hold (two 16-bit elements each). Returns W,
 * with the LLVM type in ll; 0 when the type moves as it is. */
static int word_count(Em *e, IrType t, char *ll, size_t n) {
  const IrTypeRec *r = REC(e, t);
  if (r->kind != IR_TK_VEC) return 0;
  const IrTypeRec *el = REC(e, r->elem);
  if ((el->kind != IR_TK_INT && el->kind != IR_TK_FLOAT) || el->bits >= 32 || el->bits < 8) return 0;
  int bits = (int)(el->bits * r->len);
  if (bits % 32 != 0 || bits == 32) return 0; /* one word: LLVM handles it */
  snprintf(ll, n, "<%d x i32>", bits / 32);
  return bits / 32;
}

static void emit_load(Em *e, IrRef v) {
  IrRef p = A(e, v)[0];
  IrType t = TY(e, v);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 0, p, t, 0);
    return;
  }
  char pt[256], ps[80], wl[32];
  int n = word_count(e, t, wl, sizeof wl);
  em_ll_ptr(n ? wl : LT(e, t), space, pt, sizeof pt);
  em_keep(ps, sizeof ps, ptr_as(e, p, pt));
  if (n && imm[0] == IR_ORDER_WEAK && (space == IR_SPACE_GLOBAL || space == IR_SPACE_SHARED)) {
    /* through PTX, so that LLVM cannot fold the words back into a split access */
    EmAsm as = {{0}, {0}, {0}, 0, 0};
    em_asm_text(&as, "ld%s%s.b32 ", em_ptx_space(space), n > 1 ? (n == 2 ? ".v2" : ".v4") : "");
    em_asm_regs(&as, 0, n, 0);
    for (int i = 0; i < n; i++) em_asm_out(&as, 'r');
    long long off = em_asm_addr_split(e, &as, p);
    if (off) em_asm_text(&as, ", [$%d+%lld];", n, off);
    else em_asm_text(&as, ", [$%d];", n);
    char res[32], ret[128], acc[32] = "undef";
    em_keep(res, sizeof res, em_tmp(e));
    if (n == 1) {
      em_asm_call(e, &as, res, "i32", 1);
      em_ll_ins(e, "%s = bitcast i32 %s to %s", em_def(e, v), res, LT(e, t));
      return;
    }
    snprintf(ret, sizeof ret, n == 2 ? "{i32, i32}" : "{i32, i32, i32, i32}");
    em_asm_call(e, &as, res, ret, 1);
    for (int i = 0; i < n; i++) {
      char x[32], d[32];
      em_keep(x, sizeof x, em_tmp(e));
      em_ll_ins(e, "%s = extractvalue %s %s, %d", x, ret, res, i);
      em_keep(d, sizeof d, em_tmp(e));
      em_ll_ins(e, "%s = insertelement %s %s, i32 %s, i32 %d", d, wl, acc, x, i);
      em_keep(acc, sizeof acc, d);
    }
    em_ll_ins(e, "%s = bitcast %s %s to %s", em_def(e, v), wl, acc, LT(e, t));
    return;
  }
  em_ll_ins(e, "%s = load %s%s, %s %s, align %u", em_def(e, v), imm[0] == IR_ORDER_VOLATILE ? "volatile " : "",
            LT(e, t), pt, ps, REC(e, TY(e, p))->align);
}

static void emit_store(Em *e, IrRef v) {
  IrRef p = A(e, v)[0], x = A(e, v)[1];
  IrType t = TY(e, x);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 1, p, t, x);
    return;
  }
  char pt[256], ps[80], val[80], wl[32];
  int n = word_count(e, t, wl, sizeof wl);
  em_ll_ptr(n ? wl : LT(e, t), space, pt, sizeof pt);
  em_keep(ps, sizeof ps, ptr_as(e, p, pt));
  em_keep(val, sizeof val, VAL(e, x));
  if (n && imm[0] == IR_ORDER_WEAK && (space == IR_SPACE_GLOBAL || space == IR_SPACE_SHARED)) {
    /* through PTX, as loads are (emit_load) */
    char words[32];
    em_keep(words, sizeof words, em_tmp(e));
    em_ll_ins(e, "%s = bitcast %s %s to %s", words, LT(e, t), val, wl);
    EmAsm as = {{0}, {0}, {0}, 0, 0};
    long long off = em_asm_addr_split(e, &as, p);
    if (off) em_asm_text(&as, "st%s%s.b32 [$0+%lld], ", em_ptx_space(space), n > 1 ? (n == 2 ? ".v2" : ".v4") : "", off);
    else em_asm_text(&as, "st%s%s.b32 [$0], ", em_ptx_space(space), n > 1 ? (n == 2 ? ".v2" : ".v4") : "");
    em_asm_regs(&as, 1, n, 0);
    em_asm_text(&as, ";");
    for (int i = 0; i < n; i++) {
      char wi[32];
      if (n > 1) {
        em_keep(wi, sizeof wi, em_tmp(e));
        em_ll_ins(e, "%s = extractelement %s %s, i32 %d", wi, wl, words, i);
      } else {
        em_keep(wi, sizeof wi, words);
      }
      em_asm_in(e, &as, 'r', "i32", wi);
    }
    em_asm_call(e, &as, NULL, "void", 1);
    return;
  }
  em_ll_ins(e, "store %s%s %s, %s %s, align %u", imm[0] == IR_ORDER_VOLATILE ? "volatile " : "", LT(e, t), val, pt,
            ps, REC(e, TY(e, p))->align);
}

static void emit_gep(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType pt = TY(e, a[0]);
  const char *lp = LT(e, pt);
  if (strcmp(lp, LT(e, TY(e, v))) != 0) {
    em_ll_fail(e, v, "gep changes the LLVM pointer type");
    return;
  }
  char p[80];
  em_keep(p, sizeof p, VAL(e, a[0]));
  const char *et = LT(e, REC(e, pt)->elem), *it = LT(e, TY(e, a[1]));
  /* An index t + c (c a constant, em_index_split) is split: p + t, then + c.
   * LLVM cannot do it itself (the i32 arithmetic may wrap; an address
   * computed from a wrapped index is meaningless anyway), and the constant
   * then lands in the instruction's immediate offset: accesses at constant
   * distances from one base cost no register each. */
  char x[80];
  long long c = em_index_split(e, a[1], x, sizeof x);
  if (c != 0) {
    char q[32];
    snprintf(q, sizeof q, "%s", em_tmp(e));
    em_ll_ins(e, "%s = getelementptr %s, %s %s, %s %s", q, et, lp, p, it, x);
    em_ll_ins(e, "%s = getelementptr %s, %s %s, %s %lld", em_def(e, v), et, lp, q, it, c);
    return;
  }
  em_ll_ins(e, "%s = getelementptr %s, %s %s, %s %s", em_def(e, v), et, lp, p, it, VAL(e, a[1]));
}

/* How many elements of a variable share a 32-bit word: 2 for 16-bit
 * elements, 4 for 8-bit ones, when the count is a multiple of that (and more
 * than one); 0 otherwise (one alloca slot an element). Packed variables keep
 * each word in one register once promoted, where element-wise allocas would
 * give every element its own (a row of bf16 in registers, an int8 MMA
 * fragment). */
int em_var_per_word(Em *e, uint32_t var) {
  const IrVarInfo *vi = &e->f->vars[var];
  const IrTypeRec *r = ir_trec(e->m, vi->type);
  if (vi->count < 2 || (r->kind != IR_TK_INT && r->kind != IR_TK_FLOAT)) return 0;
  int per = r->bits == 16 ? 2 : r->bits == 8 ? 4 : 0;
  return per && vi->count % per == 0 ? per : 0;
}

int em_var_paired(Em *e, uint32_t var) { return em_var_per_word(e, var) != 0; }

/* The address of element idx (text, with its LLVM type) of a variable. */
static void var_slot(Em *e, uint32_t var, const char *idx_type, const char *idx, int64_t cidx, char *out,
                     size_t n) {
  const IrVarInfo *vi = &e->f->vars[var];
  if (vi->count == 1) { /* a scalar alloca: any valid index is 0 */
    snprintf(out, n, "%%var%u", var);
    return;
  }
  const char *T = LT(e, vi->type);
  if (em_var_paired(e, var)) {
    const char *t = em_tmp(e);
    snprintf(out, n, "%s", t);
    (void)cidx; /* constant indexes are handled by emit_var */
    char flat[32];
    snprintf(flat, sizeof flat, "%s", em_tmp(e));
    em_ll_ins(e, "%s = bitcast [%d x i32]* %%var%u to [%d x %s]*", flat, vi->count / em_var_per_word(e, var), var,
              vi->count, T);
    em_ll_ins(e, "%s = getelementptr [%d x %s], [%d x %s]* %s, i32 0, %s %s", out, vi->count, T, vi->count, T, flat,
              idx_type, idx);
    return;
  }
  const char *t = em_tmp(e);
  snprintf(out, n, "%s", t);
  em_ll_ins(e, "%s = getelementptr [%d x %s], [%d x %s]* %%var%u, i32 0, %s %s", out, vi->count, T, vi->count, T, var,
            idx_type, idx);
}

/* The address of word w of a packed variable kept in memory. */
static void var_word(Em *e, uint32_t var, long long w, char *out, size_t n) {
  int words = e->f->vars[var].count / em_var_per_word(e, var);
  snprintf(out, n, "%s", em_tmp(e));
  em_ll_ins(e, "%s = getelementptr [%d x i32], [%d x i32]* %%var%u, i32 0, i32 %lld", out, words, words, var, w);
}

/* Slot s (an element, or a word of a packed variable) of a variable, as
 * value text in `out`: the SSA value of a promoted variable (no code), else
 * a load. */
static void var_read(Em *e, uint32_t var, long long s, char *out, size_t n) {
  if (em_pr_is(e, var)) {
    snprintf(out, n, "%s", em_pr_get(e, var, s));
    return;
  }
  const IrVarInfo *vi = &e->f->vars[var];
  char p[64];
  if (em_var_paired(e, var)) {
    var_word(e, var, s, p, sizeof p);
    snprintf(out, n, "%s", em_tmp(e));
    em_ll_ins(e, "%s = load i32, i32* %s, align 4", out, p);
    return;
  }
  const char *T = LT(e, vi->type);
  char idxs[32];
  snprintf(idxs, sizeof idxs, "%lld", s);
  var_slot(e, var, "i32", idxs, s, p, sizeof p);
  snprintf(out, n, "%s", em_tmp(e));
  em_ll_ins(e, "%s = load %s, %s* %s, align %u", out, T, T, p, REC(e, vi->type)->natural);
}

/* `val` (text) into slot s of a variable. */
static void var_write(Em *e, uint32_t var, long long s, const char *val) {
  if (em_pr_is(e, var)) {
    em_pr_set(e, var, s, val);
    return;
  }
  const IrVarInfo *vi = &e->f->vars[var];
  char p[64];
  if (em_var_paired(e, var)) {
    var_word(e, var, s, p, sizeof p);
    em_ll_ins(e, "store i32 %s, i32* %s, align 4", val, p);
    return;
  }
  const char *T = LT(e, vi->type);
  char idxs[32];
  snprintf(idxs, sizeof idxs, "%lld", s);
  var_slot(e, var, "i32", idxs, s, p, sizeof p);
  em_ll_ins(e, "store %s %s, %s* %s, align %u", T, val, T, p, REC(e, vi->type)->natural);
}

/* Element idx (static) of a variable, as value text in `out`. Packed
 * variables are read a whole word at a time, so that each word stays in one
 * register. */
static void var_elem_load(Em *e, uint32_t var, long long idx, char *out, size_t n) {
  int per = em_var_per_word(e, var);
  if (!per) {
    var_read(e, var, idx, out, n);
    return;
  }
  const char *T = LT(e, e->f->vars[var].type);
  int bits = 32 / per;
  char I[8];
  snprintf(I, sizeof I, "i%d", bits);
  char word[80], x[32], h[32];
  var_read(e, var, idx / per, word, sizeof word);
  snprintf(x, sizeof x, "%s", em_tmp(e));
  em_ll_ins(e, "%s = lshr i32 %s, %d", x, word, (int)(idx % per) * bits);
  snprintf(h, sizeof h, "%s", em_tmp(e));
  em_ll_ins(e, "%s = trunc i32 %s to %s", h, x, I);
  if (strcmp(T, I) == 0) {
    snprintf(out, n, "%s", h);
    return;
  }
  snprintf(out, n, "%s", em_tmp(e));
  em_ll_ins(e, "%s = bitcast %s %s to %s", out, I, h, T);
}

/* `val` (text) into element idx (static) of a variable; packed variables: a
 * read-modify-write of the word. */
static void var_elem_store(Em *e, uint32_t var, long long idx, const char *val) {
  int per = em_var_per_word(e, var);
  if (!per) {
    var_write(e, var, idx, val);
    return;
  }
  const char *T = LT(e, e->f->vars[var].type);
  int bits = 32 / per, sh = (int)(idx % per) * bits;
  char I[8];
  snprintf(I, sizeof I, "i%d", bits);
  char word[80], x[80], h[32], z[32], m[32], o[32];
  var_read(e, var, idx / per, word, sizeof word);
  snprintf(x, sizeof x, "%s", val);
  if (strcmp(T, I) != 0) {
    snprintf(h, sizeof h, "%s", em_tmp(e));
    em_ll_ins(e, "%s = bitcast %s %s to %s", h, T, x, I);
    snprintf(x, sizeof x, "%s", h);
  }
  snprintf(z, sizeof z, "%s", em_tmp(e));
  em_ll_ins(e, "%s = zext %s %s to i32", z, I, x);
  if (sh) {
    snprintf(h, sizeof h, "%s", em_tmp(e));
    em_ll_ins(e, "%s = shl i32 %s, %d", h, z, sh);
    snprintf(z, sizeof z, "%s", h);
  }
  unsigned keep = ~(((1u << bits) - 1u) << sh);
  snprintf(m, sizeof m, "%s", em_tmp(e));
  em_ll_ins(e, "%s = and i32 %s, %d", m, word, (int)keep);
  snprintf(o, sizeof o, "%s", em_tmp(e));
  em_ll_ins(e, "%s = or i32 %s, %s", o, m, z);
  var_write(e, var, idx / per, o);
}

/* var.loadv / var.storev: whole words where the vector covers them (a paired
 * variable, an even first index and length), element by element otherwise. */
static void emit_var_vec(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const int64_t *imm = IM(e, v);
  uint32_t var = (uint32_t)imm[0];
  long long first = (long long)imm[1];
  int load = in->op == IR_OP_VLOADV;
  IrType vt = load ? TY(e, v) : TY(e, A(e, v)[0]);
  int len = (int)REC(e, vt)->len;
  const char *VT = LT(e, vt), *T = LT(e, e->f->vars[var].type);
  char acc[80], x[80];
  int per = em_var_per_word(e, var);
  int whole = per && first % per == 0 && len % per == 0; /* whole words */
  if (load && em_sv_wanted(e, v) && len <= 256) { /* a split vector: no code but for unpacking */
    const char *el[256];
    int n = whole ? len / per : len;
    for (int i = 0; i < n; i++) {
      if (whole) var_read(e, var, first / per + i, x, sizeof x);
      else var_elem_load(e, var, first + i, x, sizeof x);
      el[i] = em_pr_keep(e, x);
    }
    em_sv_set(e, v, el, n, whole);
    return;
  }
  IrRef src = load ? 0 : em_resolve(e, A(e, v)[0]);
  if (!load && em_sv_is(e, src) && (e->sv_words[src] ? whole : strcmp(LT(e, REC(e, vt)->elem), T) == 0)) {
    if (e->sv_words[src])
      for (int i = 0; i < len / per; i++) var_write(e, var, first / per + i, e->sv_el[src][i]);
    else
      for (int i = 0; i < len; i++) var_elem_store(e, var, first + i, e->sv_el[src][i]);
    return;
  }
  if (whole) {
    int words = len / per;
    char WT[32];
    snprintf(WT, sizeof WT, "<%d x i32>", words);
    if (load) {
      snprintf(acc, sizeof acc, "undef");
      for (int i = 0; i < words; i++) {
        char w[80], d[32];
        var_read(e, var, first / per + i, w, sizeof w);
        snprintf(d, sizeof d, "%s", em_tmp(e));
        em_ll_ins(e, "%s = insertelement %s %s, i32 %s, i32 %d", d, WT, acc, w, i);
        snprintf(acc, sizeof acc, "%s", d);
      }
      em_ll_ins(e, "%s = bitcast %s %s to %s", em_def(e, v), WT, acc, VT);
      return;
    }
    char ws[32];
    snprintf(ws, sizeof ws, "%s", em_tmp(e));
    em_ll_ins(e, "%s = bitcast %s %s to %s", ws, VT, VAL(e, A(e, v)[0]), WT);
    for (int i = 0; i < words; i++) {
      snprintf(x, sizeof x, "%s", em_tmp(e));
      em_ll_ins(e, "%s = extractelement %s %s, i32 %d", x, WT, ws, i);
      var_write(e, var, first / per + i, x);
    }
    return;
  }
  if (load) {
    snprintf(acc, sizeof acc, "undef");
    for (int i = 0; i < len; i++) {
      char d[32];
      var_elem_load(e, var, first + i, x, sizeof x);
      snprintf(d, sizeof d, "%s", i == len - 1 ? em_def(e, v) : em_tmp(e));
      em_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, VT, acc, T, x, i);
      snprintf(acc, sizeof acc, "%s", d);
    }
    return;
  }
  char val[80];
  em_keep(val, sizeof val, VAL(e, A(e, v)[0]));
  for (int i = 0; i < len; i++) {
    snprintf(x, sizeof x, "%s", em_tmp(e));
    em_ll_ins(e, "%s = extractelement %s %s, i32 %d", x, VT, val, i);
    var_elem_store(e, var, first + i, x);
  }
}

/* var.opaque: every word (paired) or element passes through an empty asm
 * with side effects, so LLVM sees new values: what it computed from the old
 * ones is recomputed from these rather than kept live across. Elements PTX
 * has no register for (i1, structs, vectors) are left as they are. */
static void emit_var_opaque(Em *e, uint32_t var) {
  const IrVarInfo *vi = &e->f->vars[var];
  int paired = em_var_paired(e, var);
  int n = paired ? vi->count / em_var_per_word(e, var) : vi->count;
  const IrTypeRec *r = REC(e, vi->type);
  if (!paired && ((r->kind != IR_TK_INT && r->kind != IR_TK_FLOAT) || r->bits < 16)) return;
  char letter = 'r';
  const char *T = paired ? "i32" : LT(e, vi->type);
  if (!paired) {
    EmReg reg = em_asm_reg(e, vi->type);
    letter = reg.letter;
    if (strcmp(reg.ll, T) != 0) return; /* would need conversions: leave it */
  }
  for (int i = 0; i < n; i++) {
    char x[80], y[32];
    var_read(e, var, i, x, sizeof x);
    snprintf(y, sizeof y, "%s", em_tmp(e));
    em_ll_ins(e, "%s = call %s asm sideeffect \"\", \"=%c,0\"(%s %s)", y, T, letter, T, x);
    var_write(e, var, i, y);
  }
}

static void emit_var(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const int64_t *imm = IM(e, v);
  const IrRef *a = A(e, v);
  uint32_t var = (uint32_t)imm[0];
  if (in->op == IR_OP_VOPAQUE) {
    emit_var_opaque(e, var);
    return;
  }
  if (in->op == IR_OP_VLOADV || in->op == IR_OP_VSTOREV) {
    emit_var_vec(e, v);
    return;
  }
  if (in->op == IR_OP_VLOAD) { /* the value stands for the load: no name of its own */
    char x[80];
    var_elem_load(e, var, (long long)imm[1], x, sizeof x);
    e->pr_vtext[v] = em_pr_keep(e, x);
    return;
  }
  if (in->op == IR_OP_VSTORE) {
    char val[80];
    em_keep(val, sizeof val, VAL(e, a[0]));
    var_elem_store(e, var, (long long)imm[1], val);
    return;
  }
  /* run-time indexes: through memory */
  const IrVarInfo *vi = &e->f->vars[var];
  const char *T = LT(e, vi->type);
  unsigned al = REC(e, vi->type)->natural;
  char slot[64], idx[80];
  em_keep(idx, sizeof idx, VAL(e, a[0]));
  var_slot(e, var, LT(e, TY(e, a[0])), idx, -1, slot, sizeof slot);
  if (in->op == IR_OP_VLOADX) em_ll_ins(e, "%s = load %s, %s* %s, align %u", em_def(e, v), T, T, slot, al);
  else em_ll_ins(e, "store %s %s, %s* %s, align %u", T, VAL(e, a[1]), T, slot, al);
}

static const char *atom_type(IrType t, int op) {
  int f = t == IR_T_F32 || t == IR_T_F64, w = (t == IR_T_I64 || t == IR_T_F64) ? 64 : 32;
  switch (op) {
    case IR_REDOP_ADD: return f ? (w == 64 ? "f64" : "f32") : (w == 64 ? "u64" : "u32");
    case IR_REDOP_MIN: case IR_REDOP_MAX: return w == 64 ? "s64" : "s32";
    case IR_REDOP_UMIN: case IR_REDOP_UMAX: case IR_REDOP_INC: case IR_REDOP_DEC: return w == 64 ? "u64" : "u32";
    default: return w == 64 ? "b64" : "b32";
  }
}

static void emit_atom(Em *e, IrRef v, int cas) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  int op = cas ? -1 : (int)imm[0];
  int order = (int)imm[cas ? 0 : 1], scope = (int)imm[cas ? 1 : 2];
  IrType t = TY(e, v);
  EmReg r = em_asm_reg(e, t);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "atom");
  if (order != IR_ORDER_WEAK) em_asm_text(&as, ".%s", ir_imm_name('O', order));
  if (order != IR_ORDER_WEAK || scope != IR_SCOPE_GPU) em_asm_text(&as, ".%s", ir_imm_name('S', scope));
  em_asm_text(&as, "%s", em_ptx_space(REC(e, TY(e, a[0]))->space));
  static const char *const opn[] = {"add", "min", "max", "min", "max", "inc", "dec", "and", "or", "xor", "exch"};
  if (cas) em_asm_text(&as, ".cas.%s $0, [$1], $2, $3;", t == IR_T_I64 ? "b64" : "b32");
  else em_asm_text(&as, ".%s.%s $0, [$1], $2;", opn[op], atom_type(t, op));
  em_asm_out(&as, r.letter);
  em_asm_addr(e, &as, a[0]);
  for (int i = 1; i < I(e, v)->nargs; i++) em_asm_in(e, &as, r.letter, r.ll, VAL(e, a[i]));
  em_asm_call(e, &as, em_def(e, v), r.ll, 1 | 4);
}

/* --- special registers, synchronisation, warp ops ---------------------------------------------------------------- */
static void emit_sreg(Em *e, IrRef v) {
  const IrSregInfo *s = &ir_sreg_info[IM(e, v)[0]];
  if (s->intr[0]) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", s->intr);
    em_declare(e, name, "i32", "");
    em_ll_ins(e, "%s = call i32 @%s()", em_def(e, v), name);
    return;
  }
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "mov.u32 $0, %s;", s->reg);
  em_asm_out(&as, 'r');
  em_asm_call(e, &as, em_def(e, v), "i32", 0);
}

static void emit_timer(Em *e, IrRef v) {
  const IrTimerInfo *t = &ir_timer_info[IM(e, v)[0]];
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "mov.u%d $0, %s;", t->bits, t->reg);
  em_asm_out(&as, t->bits == 64 ? 'l' : 'r');
  em_asm_call(e, &as, em_def(e, v), t->bits == 64 ? "i64" : "i32", 1);
}

static void emit_call0(Em *e, IrRef v) {
  const char *name = ir_op_info[I(e, v)->op].ll;
  em_declare(e, name, "void", "");
  int conv = (ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) != 0;
  if (conv) e->uses_convergent = 1;
  em_ll_ins(e, "call void @%s()%s", name, conv ? " #0" : "");
}

static void emit_barnamed(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  int n = I(e, v)->nargs;
  em_asm_text(&as, "bar.%s $0%s;", IM(e, v)[0] == IR_BAR_ARRIVE ? "arrive" : "sync", n > 1 ? ", $1" : "");
  for (int i = 0; i < n; i++) em_asm_in(e, &as, 'r', "i32", VAL(e, a[i]));
  em_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_syncwarp(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "bar.warp.sync $0;");
  em_asm_in(e, &as, 'r', "i32", VAL(e, A(e, v)[0]));
  em_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_fence(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "fence.%s.%s;", ir_imm_name('Y', IM(e, v)[0]), ir_imm_name('S', IM(e, v)[1]));
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_shfl(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  int width = IM(e, v)[1] ? (int)IM(e, v)[1] : 32;
  int c = ((32 - width) << 8) | (mode == IR_SHFL_UP ? 0 : 0x1f);
  IrType t = TY(e, v);
  char name[64], m[80], x[80];
  snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", ir_imm_name('H', mode), t == IR_T_F32 ? "f32" : "i32");
  em_declare(e, name, LT(e, t), t == IR_T_F32 ? "i32, float, i32, i32" : "i32, i32, i32, i32");
  em_keep(m, sizeof m, VAL(e, a[0]));
  em_keep(x, sizeof x, VAL(e, a[1]));
  e->uses_convergent = 1;
  em_ll_ins(e, "%s = call %s @%s(i32 %s, %s %s, i32 %s, i32 %d) #0", em_def(e, v), LT(e, t), name, m, LT(e, t), x,
            VAL(e, a[2]), c);
}

static void emit_vote(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  const char *ret = mode == IR_VOTE_BALLOT ? "i32" : "i1";
  char name[64], m[80];
  snprintf(name, sizeof name, "llvm.nvvm.vote.%s.sync", ir_imm_name('V', mode));
  em_declare(e, name, ret, "i32, i1");
  em_keep(m, sizeof m, VAL(e, a[0]));
  e->uses_convergent = 1;
  em_ll_ins(e, "%s = call %s @%s(i32 %s, i1 %s) #0", em_def(e, v), ret, name, m, VAL(e, a[1]));
}

static void emit_redux(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  int op = (int)IM(e, v)[0];
  static const char *const opn[] = {"add.s32", "min.s32", "max.s32", "min.u32", "max.u32", "", "", "and.b32",
                                    "or.b32", "xor.b32", ""};
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "redux.sync.%s $0, $1, $2;", opn[op]);
  em_asm_out(&as, 'r');
  em_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
  em_asm_in(e, &as, 'r', "i32", VAL(e, a[0]));
  em_asm_call(e, &as, em_def(e, v), "i32", 2);
}

/* --- tensor cores and asynchronous copies ---------------------------------------------------------------------------- */
static char reg_letter(IrType t) { return t == IR_T_F32 ? 'f' : t == IR_T_F64 ? 'd' : 'r'; }
static const char *reg_ll(IrType t) { return t == IR_T_F32 ? "float" : t == IR_T_F64 ? "double" : "i32"; }

static void emit_mma(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  IrMmaFrag fr;
  if (!ir_mma_lookup((int)imm[0], (int)imm[1], (int)imm[2], (int)imm[3], (int)imm[4], &fr)) {
    em_ll_fail(e, v, "mma combination not in the table");
    return;
  }
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  const char *const *tn = ir_mma_type_names;
  em_asm_text(&as, "mma.sync.aligned.%s.row.col%s.%s.%s.%s.%s ", ir_imm_name('M', imm[0]),
           (imm[5] & IR_FLAG_SAT) ? ".satfinite" : "", tn[imm[4]], tn[imm[1]], tn[imm[2]], tn[imm[3]]);
  if (imm[1] == IR_MT_B1) { /* b1: the bit operation follows the types */
    as.text[strlen(as.text) - 1] = 0;
    em_asm_text(&as, ".and.popc ");
  }
  int n[4] = {fr.d_regs, fr.a_regs, fr.b_regs, fr.c_regs};
  int at = 0;
  for (int i = 0; i < 4; i++) {
    em_asm_text(&as, "%s", i ? ", " : "");
    em_asm_regs(&as, at, n[i], 1);
    at += n[i];
  }
  em_asm_text(&as, ";");
  for (int i = 0; i < fr.d_regs; i++) em_asm_out(&as, reg_letter(fr.d_reg));
  IrType kinds[3] = {fr.ab_reg, fr.ab_reg, fr.c_reg};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n[k + 1]; i++) {
      char x[80];
      em_keep(x, sizeof x, em_frag_reg(e, a[k], i, n[k + 1]));
      em_asm_in(e, &as, reg_letter(kinds[k]), reg_ll(kinds[k]), x);
    }
  em_asm_call(e, &as, em_def(e, v), LT(e, TY(e, v)), 2);
  em_split(e, v);
}

static void emit_ldstmatrix(Em *e, IrRef v, int store) {
  const IrRef *a = A(e, v);
  int n = (int)IM(e, v)[0];
  int trans = (IM(e, v)[1] & IR_FLAG_TRANS) != 0;
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "%s.sync.aligned.m8n8.x%d%s.shared.b16 ", store ? "stmatrix" : "ldmatrix", n, trans ? ".trans" : "");
  if (store) {
    em_asm_text(&as, "[$0], ");
    em_asm_regs(&as, 1, n, 1);
    em_asm_text(&as, ";");
    em_asm_addr(e, &as, a[0]);
    for (int i = 0; i < n; i++) {
      char x[80];
      em_keep(x, sizeof x, em_frag_reg(e, a[1], i, n));
      em_asm_in(e, &as, 'r', "i32", x);
    }
    em_asm_call(e, &as, NULL, "void", 1 | 2 | 4);
    return;
  }
  em_asm_regs(&as, 0, n, 1);
  for (int i = 0; i < n; i++) em_asm_out(&as, 'r');
  long long off = em_asm_addr_split(e, &as, a[0]); /* a constant part as the immediate offset */
  if (off) em_asm_text(&as, ", [$%d+%lld];", n, off);
  else em_asm_text(&as, ", [$%d];", n);
  em_asm_call(e, &as, em_def(e, v), LT(e, TY(e, v)), 1 | 2 | 4);
  em_split(e, v);
}

static void emit_cpasync(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  int bytes = (int)IM(e, v)[0];
  int cg = IM(e, v)[1] == IR_CACHE_CG;
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  /* constant parts of both addresses as immediate offsets */
  long long od = em_asm_addr_split(e, &as, a[0]);
  long long os = em_asm_addr_split(e, &as, a[1]);
  char d[32] = "", sr[32] = "";
  if (od) snprintf(d, sizeof d, "+%lld", od);
  if (os) snprintf(sr, sizeof sr, "+%lld", os);
  em_asm_text(&as, "cp.async.%s.shared.global [$0%s], [$1%s], %d%s;", cg ? "cg" : "ca", d, sr, bytes,
              I(e, v)->nargs > 2 ? ", $2" : "");
  if (I(e, v)->nargs > 2) em_asm_in(e, &as, 'r', "i32", VAL(e, a[2]));
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_asm0(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "%s", ir_op_info[I(e, v)->op].ll);
  em_asm_call(e, &as, NULL, "void", 1 | 4 | ((ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) ? 2 : 0));
}

static void emit_cpwait(Em *e, IrRef v) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "cp.async.wait_group %lld;", (long long)IM(e, v)[0]);
  em_asm_call(e, &as, NULL, "void", 1 | 4);
}

int em_mem_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    case IR_LOW_GEP: emit_gep(e, v); break;
    case IR_LOW_LOAD: emit_load(e, v); break;
    case IR_LOW_STORE: emit_store(e, v); break;
    case IR_LOW_VAR: emit_var(e, v); break;
    case IR_LOW_ATOM: emit_atom(e, v, 0); break;
    case IR_LOW_CAS: emit_atom(e, v, 1); break;
    case IR_LOW_SREG: emit_sreg(e, v); break;
    case IR_LOW_TIMER: emit_timer(e, v); break;
    case IR_LOW_CALL0: emit_call0(e, v); break;
    case IR_LOW_BARNAMED: emit_barnamed(e, v); break;
    case IR_LOW_SYNCWARP: emit_syncwarp(e, v); break;
    case IR_LOW_FENCE: emit_fence(e, v); break;
    case IR_LOW_SHFL: emit_shfl(e, v); break;
    case IR_LOW_VOTE: emit_vote(e, v); break;
    case IR_LOW_REDUX: emit_redux(e, v); break;
    case IR_LOW_MMA: emit_mma(e, v); break;
    case IR_LOW_LDMATRIX: emit_ldstmatrix(e, v, 0); break;
    case IR_LOW_STMATRIX: emit_ldstmatrix(e, v, 1); break;
    case IR_LOW_CPASYNC: emit_cpasync(e, v); break;
    case IR_LOW_ASM0: emit_asm0(e, v); break;
    case IR_LOW_CPWAIT: emit_cpwait(e, v); break;
    default: return em_wgmma_op(e, v) || em_tma_op(e, v) || em_sync90_op(e, v);
  }
  return 1;
}
