/* ir_rules.c: the rules of each op family, one named function per family:
 * the operand and immediate rules (the chk column of ir_ops.h, dispatched
 * through ir_check_rules[]) and the result-type rules (the res column,
 * ir_result_rules[]). Both tables are made from the family lists of
 * ir_impl.h (IR_CHECK_FAMILIES, IR_RESULT_RULES), so a family is its list
 * entry and its function, and a new op of an existing family is one row of
 * ir_ops.h. The driver that runs them is ir_check.c. */
#include <stdlib.h>
#include <string.h>

#include "ir_rules.h"

/* --- result rules (the res column): the result type, or IR_NONE when the
   rule needs what is missing ------------------------------------------------------------------------------ */
static IrType arg0_type(IrFunc *f, const IrInst *in) { return in->nargs > 0 ? f->insts[ir_args(f, in)[0]].type : IR_NONE; }

static IrType res_NONE(IrFunc *f, const IrInst *in) {
  (void)f;
  (void)in;
  return IR_T_VOID;
}
static IrType res_GIVEN(IrFunc *f, const IrInst *in) {
  (void)f;
  return in->type;
}
static IrType res_ARG0(IrFunc *f, const IrInst *in) { return arg0_type(f, in); }
static IrType res_ARG1(IrFunc *f, const IrInst *in) {
  return in->nargs > 1 ? f->insts[ir_args(f, in)[1]].type : IR_NONE;
}
static IrType res_BOOL(IrFunc *f, const IrInst *in) {
  const IrTypeRec *r = ir_trec(f->m, arg0_type(f, in));
  return r->kind == IR_TK_VEC ? ir_type_vec(f->m, IR_T_I1, (int)r->len) : IR_T_I1;
}
static IrType res_I32(IrFunc *f, const IrInst *in) {
  (void)f;
  (void)in;
  return IR_T_I32;
}
/* A gep narrows the alignment to what its offset keeps, or takes a given type. */
static IrType res_GEP(IrFunc *f, const IrInst *in) {
  if (in->type) return in->type;
  IrModule *m = f->m;
  const IrTypeRec *p = ir_trec(m, arg0_type(f, in));
  if (p->kind != IR_TK_PTR) return IR_NONE;
  uint32_t size = ir_trec(m, p->elem)->size, step = size;
  const IrInst *ii = &f->insts[ir_args(f, in)[1]];
  if (ii->op == IR_OP_CONST) step = (uint32_t)((uint64_t)f->immpool[ii->imms] * size);
  uint32_t al = p->align;
  if (step) {
    uint32_t low = step & (~step + 1);
    if (low < al) al = low;
  }
  return ir_type_ptr(m, p->elem, p->space, (int)al);
}
static IrType res_LOAD(IrFunc *f, const IrInst *in) {
  if (in->type) return in->type;
  const IrTypeRec *p = ir_trec(f->m, arg0_type(f, in));
  return p->kind == IR_TK_PTR ? p->elem : IR_NONE;
}
static IrType res_VAR(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  return (imm[0] > 0 && (uint64_t)imm[0] < f->nvar) ? f->vars[imm[0]].type : IR_NONE;
}
static IrType res_SREG(IrFunc *f, const IrInst *in) { return res_I32(f, in); }
static IrType res_TIMER(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  return (imm[0] >= 0 && imm[0] < IR_TIMER__COUNT && ir_timer_info[imm[0]].bits == 64) ? IR_T_I64 : IR_T_I32;
}
static IrType res_VOTE(IrFunc *f, const IrInst *in) { return ir_imms(f, in)[0] == IR_VOTE_BALLOT ? IR_T_I32 : IR_T_I1; }
static IrType res_CALL(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  return (imm[0] >= 0 && (uint64_t)imm[0] < f->m->nfunc) ? f->m->funcs[imm[0]]->ret : IR_NONE;
}
static IrType res_EXTRACT(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  const IrTypeRec *r = ir_trec(f->m, arg0_type(f, in));
  if (imm[0] < 0 || (uint64_t)imm[0] >= r->len) return IR_NONE;
  if (r->kind == IR_TK_VEC) return r->elem;
  if (r->kind == IR_TK_STRUCT) return r->fields[imm[0]];
  return IR_NONE;
}
static IrType res_MMA(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  IrMmaFrag fr;
  if (!ir_mma_lookup((int)imm[0], (int)imm[1], (int)imm[2], (int)imm[3], (int)imm[4], &fr)) return IR_NONE;
  return fragment_type(f->m, fr.d_regs, fr.d_reg);
}
static IrType res_LDMATRIX(IrFunc *f, const IrInst *in) {
  const int64_t *imm = ir_imms(f, in);
  return (imm[0] == 1 || imm[0] == 2 || imm[0] == 4) ? fragment_type(f->m, (int)imm[0], IR_T_I32) : IR_NONE;
}

/* Hopper sync results (the rest of the sync rules are at the end, in their block). */
/* The result of mbarrier.arrive: the state token (i64) when asked for, else nothing ("_"). */
static IrType res_MBTOKEN(IrFunc *f, const IrInst *in) {
  (void)f;
  return in->type == IR_T_I64 ? IR_T_I64 : IR_T_VOID;
}
static IrType res_MBWAIT(IrFunc *f, const IrInst *in) {
  (void)f;
  (void)in;
  return IR_T_I1;
}
/* mapa: the operand's pointer, in shared_cluster space. */
static IrType res_MAPA(IrFunc *f, const IrInst *in) {
  const IrTypeRec *p = ir_trec(f->m, arg0_type(f, in));
  if (p->kind != IR_TK_PTR) return IR_NONE;
  return ir_type_ptr(f->m, p->elem, IR_SPACE_SHARED_CLUSTER, (int)p->align);
}

const IrResultRule ir_result_rules[IR_RES__COUNT] = {
#define IR_RES_ROW(id) [IR_RES_##id] = res_##id,
    IR_RESULT_RULES(IR_RES_ROW)
#undef IR_RES_ROW
};

/* --- conversions ------------------------------------------------------------------------------------------ */
static int float_rank(IrType t) { return t == IR_T_F64 ? 3 : t == IR_T_F32 ? 2 : 1; }

static void check_cvt(Ck *c, IrType to) {
  IrType from = T(c, 0);
  int rnd = (int)c->imm[0];
  int sat = (int)(c->imm[1] & IR_FLAG_SAT);
  int fi = is_int(c, from), ff = kind(c, from) == IR_TK_FLOAT;
  int ti = is_int(c, to), tf = kind(c, to) == IR_TK_FLOAT;
  if (!(fi || ff) || !(ti || tf)) {
    fail(c, "converts scalars: %s to %s", TN(c, from), TN(c, to));
    return;
  }
  if (from == to) {
    fail(c, "converting %s to itself", TN(c, from));
    return;
  }
  if (fi && ti) {
    if (rnd) fail(c, "integer to integer takes no rounding mode");
    if (sat && R(c, to)->bits >= R(c, from)->bits) fail(c, "sat clamps a narrowing integer conversion; %s to %s widens", TN(c, from), TN(c, to));
    return;
  }
  if (fi || ti) { /* int <-> float */
    IrType fl = fi ? to : from;
    if (!is_afloat(fl)) fail(c, "%s to %s: integers convert to and from f16, f32, f64%s", TN(c, from), TN(c, to), storage_hint(fl));
    if (rnd == IR_ROUND_RNA) fail(c, "rounding rna is only for f32 to tf32");
    if (sat) fail(c, "sat applies to float-to-float and integer narrowing (float to integer always saturates)");
    if (from == IR_T_I1 || to == IR_T_I1) fail(c, "i1 does not convert to or from floats (use select)");
    return;
  }
  /* float <-> float */
  int storage_from = !is_afloat(from), storage_to = !is_afloat(to);
  if ((storage_from || storage_to) && from != IR_T_F32 && to != IR_T_F32) {
    fail(c, "%s to %s: bf16, tf32 and fp8 convert to and from f32 only", TN(c, from), TN(c, to));
    return;
  }
  int narrowing = storage_to || (!storage_from && float_rank(to) < float_rank(from));
  if (!narrowing && rnd) fail(c, "%s to %s is exact and takes no rounding mode", TN(c, from), TN(c, to));
  if (to == IR_T_TF32) {
    if (rnd != IR_ROUND_DEFAULT && rnd != IR_ROUND_RNA) fail(c, "f32 to tf32 rounds rna (the default)");
    has(c, CL_FEAT_TF32, "a tf32 conversion");
  } else if (rnd == IR_ROUND_RNA) {
    fail(c, "rounding rna is only for f32 to tf32");
  }
  if (to == IR_T_BF16 && rnd != IR_ROUND_DEFAULT && rnd != IR_ROUND_RN && rnd != IR_ROUND_RZ)
    fail(c, "f32 to bf16 rounds rn or rz");
  if ((to == IR_T_E4M3 || to == IR_T_E5M2) && rnd != IR_ROUND_DEFAULT && rnd != IR_ROUND_RN)
    fail(c, "f32 to %s rounds rn (and saturates to finite values)", TN(c, to));
  if (to == IR_T_E4M3 || to == IR_T_E5M2 || from == IR_T_E4M3 || from == IR_T_E5M2)
    has(c, CL_FEAT_FP8, "an fp8 conversion");
  if (to == IR_T_BF16 || from == IR_T_BF16) has(c, CL_FEAT_BF16, "a bf16 conversion");
  if (sat && (storage_to || storage_from || !narrowing))
    fail(c, "sat (clamp to [0, 1]) applies to f64/f32 to f32/f16 conversions");
}

/* --- memory ----------------------------------------------------------------------------------------------- */
/* The type accessed through pointer type p (T or <n x T> of its element). */
static void check_access(Ck *c, IrType p, IrType t, const char *what) {
  const IrTypeRec *pr = R(c, p);
  IrType e = pr->elem;
  int k = kind(c, t);
  if (t != e && !(k == IR_TK_VEC && R(c, t)->elem == e)) {
    fail(c, "%s %s through %s: the type must be the element %s or a vector of it", what, TN(c, t), TN(c, p), TN(c, e));
    return;
  }
  if (k == IR_TK_STRUCT || k == IR_TK_ARRAY) {
    fail(c, "%s of %s: load and store scalars and vectors (extract fields or use ldmatrix)", what, TN(c, t));
    return;
  }
  uint32_t size = R(c, t)->size;
  if (k == IR_TK_VEC && size > 16) fail(c, "%s of %s: vector accesses are at most 16 bytes", what, TN(c, t));
  if (pr->align < size && (size & (size - 1)) == 0)
    fail(c, "%s of %s needs %u-byte alignment; the pointer %s is %u-byte aligned", what, TN(c, t), size,
         TN(c, p), pr->align);
}

static void check_order_scope(Ck *c, int order, int scope, int store, IrType t) {
  if (order == (store ? IR_ORDER_ACQUIRE : IR_ORDER_RELEASE) || order == IR_ORDER_ACQ_REL)
    fail(c, "order %s is not for a %s", ir_imm_name('O', order), store ? "store" : "load");
  int ordered = order == IR_ORDER_RELAXED || order == IR_ORDER_ACQUIRE || order == IR_ORDER_RELEASE;
  if (!ordered && scope != IR_SCOPE_GPU) fail(c, "scope %s needs order relaxed, acquire or release", ir_imm_name('S', scope));
  if (ordered && kind(c, t) == IR_TK_VEC) fail(c, "%s accesses are scalar; %s is a vector", ir_imm_name('O', order), TN(c, t));
  /* (memory orders need sm_70: every target of the table has them) */
  if (scope == IR_SCOPE_CLUSTER) has(c, CL_FEAT_CLUSTER, "scope cluster");
}

static void check_load_store(Ck *c, int store, IrType t) {
  IrType p = T(c, 0);
  if (!is_ptr(c, p)) {
    fail(c, "operand 1 is %s, expected a pointer", TN(c, p));
    return;
  }
  int space = R(c, p)->space;
  if (store && (space == IR_SPACE_PARAM || space == IR_SPACE_CONST))
    fail(c, "store through a %s pointer: that space is read-only", space_name(space));
  check_access(c, p, t, store ? "store" : "load");
  int order = (int)c->imm[0], scope = (int)c->imm[1], cache = (int)c->imm[2];
  check_order_scope(c, order, scope, store, t);
  if (cache) {
    int ok = store ? (cache == IR_CACHE_WB || cache == IR_CACHE_CG || cache == IR_CACHE_CS || cache == IR_CACHE_WT)
                   : (cache != IR_CACHE_WB && cache != IR_CACHE_WT);
    if (!ok) fail(c, "cache hint %s is not for a %s", ir_imm_name('C', cache), store ? "store" : "load");
    if (space != IR_SPACE_GLOBAL) fail(c, "cache hints apply to global pointers; this one is %s", space_name(space));
    if (order != IR_ORDER_WEAK) fail(c, "cache hints apply to weak accesses");
  }
}

/* --- inline asm constraints ------------------------------------------------------------------------------- */
/* Whether constraint letter takes type t (operand index arg for 'n', else -1). */
static int constraint_fits(const Ck *c, char letter, IrType t, int arg) {
  switch (letter) {
    case 'r': return t == IR_T_I32 || t == IR_T_TF32;
    case 'h': return t == IR_T_I16 || t == IR_T_F16 || t == IR_T_BF16;
    case 'c': return t == IR_T_I8 || t == IR_T_E4M3 || t == IR_T_E5M2;
    case 'l': return t == IR_T_I64 || is_ptr(c, t);
    case 'f': return t == IR_T_F32;
    case 'd': return t == IR_T_F64;
    case 'n': return arg >= 0 && is_int(c, t) && c->f->insts[c->a[arg]].op == IR_OP_CONST;
    default: return 0;
  }
}

static void check_asm(Ck *c, IrType t) {
  const char *text = ir_str_get(c->m, (uint32_t)c->imm[0]);
  const char *cons = ir_str_get(c->m, (uint32_t)c->imm[1]);
  if (!*text) fail(c, "empty PTX text");
  IrType outs[128];
  int nout = 0, nin = 0;
  const char *p = cons;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len >= 2 && p[0] == '~' && p[1] == '{') {
      /* a clobber: ~{memory} */
    } else if (len == 2 && p[0] == '=') {
      if (nout == 128) { fail(c, "too many outputs"); return; }
      outs[nout++] = (IrType)p[1];
      if (!strchr("rhclfd", p[1])) fail(c, "constraint '%.*s': outputs are =r =h =c =l =f =d", (int)len, p);
    } else if (len == 1) {
      if (nin >= c->in->nargs) {
        fail(c, "constraints name more inputs than the %d operands", c->in->nargs);
        return;
      }
      IrType at = T(c, nin);
      if (!strchr("rhclfdn", p[0]))
        fail(c, "constraint '%c': inputs are r h c l f d n", p[0]);
      else if (!constraint_fits(c, p[0], at, nin))
        fail(c, "operand %d is %s, which constraint '%c' does not take", nin + 1, TN(c, at), p[0]);
      nin++;
    } else {
      fail(c, "constraint '%.*s' not understood (outputs =r, inputs r, clobbers ~{memory})", (int)len, p);
    }
    p = end ? end + 1 : p + len;
  }
  if (nin != c->in->nargs) fail(c, "constraints name %d inputs, the op has %d operands", nin, c->in->nargs);
  /* result: void, the one output, or a struct of the outputs */
  const IrTypeRec *tr = R(c, t);
  int nres = t == IR_T_VOID || !t ? 0 : tr->kind == IR_TK_STRUCT ? (int)tr->len : 1;
  if (nres != nout) {
    fail(c, "constraints have %d outputs, the result type %s has %d", nout, t ? TN(c, t) : "(none)", nres);
    return;
  }
  for (int i = 0; i < nout; i++) {
    IrType ft = tr->kind == IR_TK_STRUCT ? tr->fields[i] : t;
    if (!constraint_fits(c, (char)outs[i], ft, -1))
      fail(c, "output %d is %s, which constraint '=%c' does not take", i + 1, TN(c, ft), (char)outs[i]);
  }
  /* $N references */
  for (const char *q = text; (q = strchr(q, '$')) != NULL; q++) {
    if (q[1] == '$') { q++; continue; }
    if (q[1] >= '0' && q[1] <= '9') {
      int n = (int)strtol(q + 1, NULL, 10);
      if (n >= nout + nin) fail(c, "the text uses $%d; there are %d operands", n, nout + nin);
    }
  }
}

/* --- printf ----------------------------------------------------------------------------------------------- */
static void check_printf(Ck *c) {
  const char *fmt = ir_str_get(c->m, (uint32_t)c->imm[0]);
  int n = 0;
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') continue;
    p++;
    if (*p == '%') continue;
    while (*p && strchr("-+ #0123456789.*", *p)) {
      if (*p == '*') {
        fail(c, "'*' widths are not supported");
        return;
      }
      p++;
    }
    while (*p && strchr("hlLqjzt", *p)) p++;
    if (!*p) {
      fail(c, "the format ends inside a conversion");
      return;
    }
    if (n >= c->in->nargs) { n++; continue; }
    IrType t = T(c, n);
    int kf = strchr("feEgGaA", *p) != NULL, ki = strchr("diouxXc", *p) != NULL;
    if (kf && !is_afloat(t)) fail(c, "%%%c takes a float; value %d is %s", *p, n + 1, TN(c, t));
    else if (ki && !is_int(c, t)) fail(c, "%%%c takes an integer; value %d is %s", *p, n + 1, TN(c, t));
    else if (*p == 'p' && !is_ptr(c, t)) fail(c, "%%p takes a pointer; value %d is %s", n + 1, TN(c, t));
    else if (*p == 's' && !is_ptr(c, t)) fail(c, "%%s takes a pointer; value %d is %s", n + 1, TN(c, t));
    else if (!kf && !ki && !strchr("ps", *p)) fail(c, "conversion %%%c is not supported", *p);
    n++;
  }
  if (n != c->in->nargs) fail(c, "the format has %d conversions for %d values", n, c->in->nargs);
}

/* --- check rules (the chk column) ---------------------------------------------------------------------------- */
#define IR_RULE_DECL(id) static void rule_##id(Ck *c);
IR_CHECK_FAMILIES(IR_RULE_DECL)
#undef IR_RULE_DECL

static void rule_NONE(Ck *c) { (void)c; }

static void rule_CONST(Ck *c) {
  IrType t = c->given;
  int k = kind(c, t);
  if (k != IR_TK_INT && k != IR_TK_FLOAT) {
    fail(c, "constants are integer or float scalars, not %s", TN(c, t));
    return;
  }
  int64_t bits = c->imm[0];
  if (k == IR_TK_INT && ir_int_wrap(R(c, t)->bits, bits) != bits)
    fail(c, "%lld is not a canonical %s value", (long long)bits, TN(c, t));
  if (k == IR_TK_FLOAT && ir_float_bits(t, ir_bits_float(t, bits)) != bits)
    fail(c, "the value is not representable in %s", TN(c, t));
}

static void rule_ANYVAL(Ck *c) {
  IrType t = c->given;
  if (!t || t == IR_T_VOID || kind(c, t) == IR_TK_ARRAY) fail(c, "needs a value type, not %s", t ? TN(c, t) : "(none)");
}

static void rule_PARAM(Ck *c) {
  IrType t = c->given;
  int64_t idx = c->imm[0], blob = c->imm[1];
  if (idx < 0 || (uint64_t)idx > c->f->nparam || (idx < (int64_t)c->f->nparam && c->f->params[idx] != c->v))
    fail(c, "parameter index %lld does not match its position", (long long)idx);
  int k = kind(c, t);
  if (blob) {
    if (c->f->kind != IR_FUNC_KERNEL) fail(c, "by-value blobs are kernel parameters");
    if (k != IR_TK_PTR || R(c, t)->space != IR_SPACE_PARAM || R(c, t)->elem != IR_T_I8)
      fail(c, "a by-value blob is seen as ptr<i8, param, A>, not %s", TN(c, t));
    if (blob < 1 || blob > 32764) fail(c, "blob of %lld bytes (1 to 32764)", (long long)blob);
  } else if (k == IR_TK_STRUCT && c->f->kind == IR_FUNC_DEVICE) {
    /* device functions take register fragments whole */
  } else if (k != IR_TK_INT && k != IR_TK_FLOAT && k != IR_TK_VEC && k != IR_TK_PTR) {
    fail(c, "parameters are scalars, vectors or pointers (blobs for the rest; structs for device functions), not %s",
         t ? TN(c, t) : "(none)");
  } else if (k == IR_TK_PTR && R(c, t)->space == IR_SPACE_PARAM) {
    fail(c, "param-space pointers come from ir_param_blob");
  }
}

static void rule_SMEM(Ck *c) {
  const IrInst *in = c->in;
  IrType t = c->given;
  if (!is_ptr(c, t) || R(c, t)->space != IR_SPACE_SHARED) {
    fail(c, "the type must be a shared pointer, not %s", t ? TN(c, t) : "(none)");
    return;
  }
  int64_t align = in->op == IR_OP_SMEM ? c->imm[1] : c->imm[0];
  if (align < 1 || align > 1024 || (align & (align - 1))) fail(c, "alignment %lld: a power of two from 1 to 1024", (long long)align);
  else if (R(c, t)->align > (uint64_t)align)
    fail(c, "the pointer type claims %u-byte alignment, the memory has %lld", R(c, t)->align, (long long)align);
  if (in->op == IR_OP_SMEM && (c->imm[0] < 1 || c->imm[0] > 232448))
    fail(c, "%lld bytes: static shared memory is 1 to 232448 bytes (227 KiB)", (long long)c->imm[0]);
}

static void rule_ARITH(Ck *c) {
  if (same_types(c, 0)) want_numeric(c, 0, 1, 1, 1);
}

static void rule_ARITHS(Ck *c) {
  if (same_types(c, 0)) want_numeric(c, 0, 1, 1, 0);
}

static void rule_INT(Ck *c) {
  if (same_types(c, 0)) want_numeric(c, 0, 1, 0, 1);
}

static void rule_INTW(Ck *c) {
  if (same_types(c, 0) && T(c, 0) != IR_T_I32 && T(c, 0) != IR_T_I64)
    fail(c, "operand 1 is %s, expected i32 or i64", TN(c, T(c, 0)));
}

static void rule_FLOAT(Ck *c) {
  const IrInst *in = c->in;
  if (same_types(c, 0)) want_numeric(c, 0, 0, 1, 1);
  if (in->op == IR_OP_FDIV && (c->imm[0] & IR_FLAG_FAST) && T(c, 0) != IR_T_F32)
    fail(c, "fast division is for f32, not %s", TN(c, T(c, 0)));
}

static void rule_FLOATS(Ck *c) {
  if (same_types(c, 0) && T(c, 0) != IR_T_F32 && T(c, 0) != IR_T_F64)
    fail(c, "operand 1 is %s, expected f32 or f64%s", TN(c, T(c, 0)), storage_hint(T(c, 0)));
}

static void rule_MATH(Ck *c) {
  if (T(c, 0) != IR_T_F32 && T(c, 0) != IR_T_F64)
    fail(c, "operand 1 is %s, expected f32 or f64%s", TN(c, T(c, 0)), storage_hint(T(c, 0)));
  else if ((c->imm[0] & IR_FLAG_FAST) && T(c, 0) == IR_T_F64)
    fail(c, "the fast approximations are for f32, not f64");
}

static void rule_ICMP(Ck *c) {
  if (same_types(c, 0) && !is_ptr(c, T(c, 0))) want_numeric(c, 0, 1, 0, 1);
}

static void rule_FCMP(Ck *c) {
  if (same_types(c, 0)) want_numeric(c, 0, 0, 1, 1);
}

static void rule_SELECT(Ck *c) {
  IrType ct = T(c, 0), at = T(c, 1);
  if (T(c, 1) != T(c, 2)) {
    fail(c, "the choices are %s and %s: they must have the same type", TN(c, at), TN(c, T(c, 2)));
    return;
  }
  if (ct == IR_T_I1) return;
  if (kind(c, ct) == IR_TK_VEC && R(c, ct)->elem == IR_T_I1 && kind(c, at) == IR_TK_VEC &&
      R(c, at)->len == R(c, ct)->len)
    return;
  fail(c, "the condition is %s, expected i1 (or <n x i1> for <n x T> choices)", TN(c, ct));
}

static void rule_CVT(Ck *c) {
  IrType t = c->given;
  if (!t) fail(c, "needs the type to convert to");
  else check_cvt(c, t);
}

static void rule_BITCAST(Ck *c) {
  IrModule *m = c->m;
  IrType t = c->given;
  IrType from = T(c, 0);
  int kf = kind(c, from), kt = kind(c, t);
  if (!t) fail(c, "needs the type to cast to");
  else if (!(kf == IR_TK_INT || kf == IR_TK_FLOAT || kf == IR_TK_VEC) ||
           !(kt == IR_TK_INT || kt == IR_TK_FLOAT || kt == IR_TK_VEC))
    fail(c, "%s to %s: bitcast is for scalars and vectors (ptrcast, ptrtoint for pointers)", TN(c, from), TN(c, t));
  else if (ir_type_bits(m, from) != ir_type_bits(m, t) || from == IR_T_I1 || t == IR_T_I1)
    fail(c, "%s (%d bits) to %s (%d bits): the sizes differ", TN(c, from), ir_type_bits(m, from), TN(c, t),
         ir_type_bits(m, t));
}

static void rule_PTRTOINT(Ck *c) {
  IrType t = c->given;
  IrType p = T(c, 0);
  if (!is_ptr(c, p)) fail(c, "operand 1 is %s, expected a pointer", TN(c, p));
  else if (t != IR_T_I64 && !(t == IR_T_I32 && (R(c, p)->space == IR_SPACE_SHARED ||
                                             R(c, p)->space == IR_SPACE_SHARED_CLUSTER ||
                                             R(c, p)->space == IR_SPACE_LOCAL)))
    fail(c, "to %s: addresses are i64 (or i32 for shared, shared_cluster and local)", t ? TN(c, t) : "(none)");
}

static void rule_INTTOPTR(Ck *c) {
  IrType t = c->given;
  IrType i = T(c, 0);
  if (!is_ptr(c, t)) fail(c, "the result type %s is not a pointer", t ? TN(c, t) : "(none)");
  else if (R(c, t)->space == IR_SPACE_PARAM) fail(c, "param-space pointers come from ir_param_blob");
  else if (i != IR_T_I64 && !(i == IR_T_I32 && (R(c, t)->space == IR_SPACE_SHARED ||
                                               R(c, t)->space == IR_SPACE_SHARED_CLUSTER ||
                                               R(c, t)->space == IR_SPACE_LOCAL)))
    fail(c, "from %s: addresses are i64 (or i32 for shared, shared_cluster and local)", TN(c, i));
}

static void rule_PTRCAST(Ck *c) {
  IrType t = c->given;
  IrType p = T(c, 0);
  if (!is_ptr(c, p) || !is_ptr(c, t)) {
    fail(c, "%s to %s: both must be pointers", TN(c, p), t ? TN(c, t) : "(none)");
    return;
  }
  int sf = R(c, p)->space, st = R(c, t)->space;
  if (sf != st && sf != IR_SPACE_GENERIC && st != IR_SPACE_GENERIC)
    fail(c, "%s to %s: address spaces convert to or from generic only", space_name(sf), space_name(st));
  if (st == IR_SPACE_PARAM && sf != IR_SPACE_PARAM) fail(c, "nothing converts to param space");
  if ((sf == IR_SPACE_SHARED_CLUSTER) != (st == IR_SPACE_SHARED_CLUSTER))
    fail(c, "shared_cluster addresses are not cast (they come from mapa)");
}

static void rule_PRMT(Ck *c) {
  for (int i = 0; i < 3; i++)
    if (!is_i32(T(c, i))) fail(c, "operand %d is %s, expected i32", i + 1, TN(c, T(c, i)));
}

static void rule_GEP(Ck *c) {
  const IrInst *in = c->in;
  IrType p = T(c, 0), i = T(c, 1);
  if (!is_ptr(c, p)) {
    fail(c, "operand 1 is %s, expected a pointer", TN(c, p));
    return;
  }
  if (i != IR_T_I32 && i != IR_T_I64) fail(c, "the index is %s, expected i32 or i64", TN(c, i));
  if (R(c, p)->space == IR_SPACE_SHARED_CLUSTER) fail(c, "shared_cluster addresses take no arithmetic here");
  if (in->type) {
    const IrTypeRec *r = R(c, in->type);
    if (r->kind != IR_TK_PTR || r->elem != R(c, p)->elem || r->space != R(c, p)->space)
      fail(c, "the result type %s must point to the same element in the same space as %s", TN(c, in->type), TN(c, p));
    else if (r->align > R(c, p)->align)
      fail(c, "the result claims %u-byte alignment, more than the %u of %s (ptrcast can assert more)", r->align,
           R(c, p)->align, TN(c, p));
  }
}

static void rule_LOAD(Ck *c) {
  const IrInst *in = c->in;
  IrType t = c->given;
  check_load_store(c, 0, t ? t : ir_result_type(c->f, in));
}

static void rule_STORE(Ck *c) {
  check_load_store(c, 1, T(c, 1));
}

static void rule_VAR(Ck *c) {
  const IrInst *in = c->in;
  int n = c->in->nargs;
  int64_t var = c->imm[0];
  if (var <= 0 || (uint64_t)var >= c->f->nvar) return; /* reported with the immediates */
  const IrVarInfo *vi = &c->f->vars[var];
  int op = in->op;
  if (op == IR_OP_VOPAQUE) return;
  if (op == IR_OP_VLOADV || op == IR_OP_VSTOREV) {
    IrType vt = op == IR_OP_VLOADV ? in->type : T(c, 0);
    const IrTypeRec *r = ir_trec(c->f->m, vt);
    if (!r || r->kind != IR_TK_VEC || r->elem != vi->type)
      fail(c, "%s %s: expected a vector of $%lld's %s", op == IR_OP_VLOADV ? "loading" : "storing", TN(c, vt),
           (long long)var, TN(c, vi->type));
    else if (c->imm[1] < 0 || c->imm[1] + (int64_t)r->len > vi->count)
      fail(c, "elements %lld..%lld of $%lld, which has %d element%s", (long long)c->imm[1],
           (long long)(c->imm[1] + r->len - 1), (long long)var, vi->count, vi->count == 1 ? "" : "s");
    return;
  }
  if (op == IR_OP_VLOAD || op == IR_OP_VSTORE) {
    if (c->imm[1] < 0 || c->imm[1] >= vi->count)
      fail(c, "index %lld of $%lld, which has %d element%s", (long long)c->imm[1], (long long)var, vi->count,
           vi->count == 1 ? "" : "s");
  } else {
    IrType it = T(c, 0);
    int64_t k;
    if (it != IR_T_I32 && it != IR_T_I64) fail(c, "the index is %s, expected i32 or i64", TN(c, it));
    else if (const_arg(c, 0, &k) && (k < 0 || k >= vi->count))
      fail(c, "index %lld of $%lld, which has %d elements", (long long)k, (long long)var, vi->count);
  }
  if (op == IR_OP_VSTORE || op == IR_OP_VSTOREX) {
    IrType vt = T(c, n - 1);
    if (vt != vi->type) fail(c, "storing %s into $%lld of %s", TN(c, vt), (long long)var, TN(c, vi->type));
  }
}

/* atom and atom.cas: a global, shared or generic pointer to the operands' type. */
static void atomic_rule(Ck *c) {
  int n = c->in->nargs;
  IrType p = T(c, 0);
  if (!is_ptr(c, p)) {
    fail(c, "operand 1 is %s, expected a pointer", TN(c, p));
    return;
  }
  int space = R(c, p)->space;
  if (space == IR_SPACE_SHARED_CLUSTER) has(c, CL_FEAT_DSMEM, "an atomic on a shared_cluster address");
  else if (space != IR_SPACE_GLOBAL && space != IR_SPACE_SHARED && space != IR_SPACE_GENERIC)
    fail(c, "atomics work on global, shared or generic pointers, not %s", space_name(space));
  IrType e = R(c, p)->elem;
  for (int i = 1; i < n; i++)
    if (T(c, i) != e) fail(c, "operand %d is %s; the pointer's element is %s", i + 1, TN(c, T(c, i)), TN(c, e));
  int order = (int)c->imm[c->oi->chk == IR_CHK_ATOM ? 1 : 0];
  int scope = (int)c->imm[c->oi->chk == IR_CHK_ATOM ? 2 : 1];
  if (order == IR_ORDER_VOLATILE) fail(c, "atomics are weak (relaxed), relaxed, acquire, release or acq_rel");
  if (scope == IR_SCOPE_CLUSTER) has(c, CL_FEAT_CLUSTER, "scope cluster");
  if (c->oi->chk == IR_CHK_CAS) {
    if (e != IR_T_I32 && e != IR_T_I64) fail(c, "compare-and-swap is for i32 and i64, not %s", TN(c, e));
    return;
  }
  int op = (int)c->imm[0];
  int ok;
  switch (op) {
    case IR_REDOP_ADD: ok = e == IR_T_I32 || e == IR_T_I64 || e == IR_T_F32 || e == IR_T_F64; break;
    case IR_REDOP_INC: case IR_REDOP_DEC: ok = e == IR_T_I32; break;
    case IR_REDOP_EXCH: ok = e == IR_T_I32 || e == IR_T_I64 || e == IR_T_F32 || e == IR_T_F64; break;
    default: ok = e == IR_T_I32 || e == IR_T_I64; break;
  }
  if (!ok && op >= 0 && op < IR_REDOP__COUNT)
    fail(c, "atom.%s does not take %s", ir_imm_name('A', op), TN(c, e));
}

static void rule_ATOM(Ck *c) { atomic_rule(c); }

static void rule_CAS(Ck *c) { atomic_rule(c); }

static void rule_SREG(Ck *c) {
  int64_t s = c->imm[0];
  if (s >= 0 && s < IR_SREG__COUNT) {
    char what[64];
    snprintf(what, sizeof what, "%%%s", ir_sreg_info[s].name);
    has(c, (ClFeature)ir_sreg_info[s].feat, what);
  }
}

static void rule_BARNAMED(Ck *c) {
  int n = c->in->nargs;
  int64_t k;
  if (!is_i32(T(c, 0))) fail(c, "the barrier id is %s, expected i32", TN(c, T(c, 0)));
  else if (const_arg(c, 0, &k) && (k < 0 || k > 15)) fail(c, "barrier id %lld: 0 to 15", (long long)k);
  if (n > 1) {
    if (!is_i32(T(c, 1))) fail(c, "the thread count is %s, expected i32", TN(c, T(c, 1)));
    else if (const_arg(c, 1, &k) && (k <= 0 || k % 32 || k > 1024))
      fail(c, "thread count %lld: a multiple of 32 from 32 to 1024", (long long)k);
  } else if (c->imm[0] == IR_BAR_ARRIVE) {
    fail(c, "arrive needs the thread count");
  }
}

static void rule_MASK(Ck *c) {
  if (!is_i32(T(c, 0))) fail(c, "the mask is %s, expected i32", TN(c, T(c, 0)));
}

static void rule_SHFL(Ck *c) {
  int64_t w = c->imm[1];
  if (!is_i32(T(c, 0))) fail(c, "the mask is %s, expected i32", TN(c, T(c, 0)));
  if (T(c, 1) != IR_T_I32 && T(c, 1) != IR_T_F32) fail(c, "the value is %s; shuffles move i32 or f32", TN(c, T(c, 1)));
  if (!is_i32(T(c, 2))) fail(c, "the lane operand is %s, expected i32", TN(c, T(c, 2)));
  if (w < 0 || w > 32 || (w & (w - 1))) fail(c, "width %lld: a power of two up to 32 (0: 32)", (long long)w);
}

static void rule_VOTE(Ck *c) {
  if (!is_i32(T(c, 0))) fail(c, "the mask is %s, expected i32", TN(c, T(c, 0)));
  if (T(c, 1) != IR_T_I1) fail(c, "the predicate is %s, expected i1", TN(c, T(c, 1)));
}

static void rule_REDUX(Ck *c) {
  int64_t op = c->imm[0];
  if (!is_i32(T(c, 0))) fail(c, "the mask is %s, expected i32", TN(c, T(c, 0)));
  if (!is_i32(T(c, 1))) fail(c, "the value is %s; redux.sync reduces i32", TN(c, T(c, 1)));
  if (op == IR_REDOP_INC || op == IR_REDOP_DEC || op == IR_REDOP_EXCH)
    fail(c, "redux does not do %s (add min max umin umax and or xor)", ir_imm_name('A', op));
}

static void rule_PRINTF(Ck *c) {
  int n = c->in->nargs;
  for (int i = 0; i < n; i++) {
    int k = kind(c, T(c, i));
    if (!(k == IR_TK_INT || k == IR_TK_PTR || is_afloat(T(c, i))))
      fail(c, "value %d is %s; printf takes integers, f16/f32/f64 and pointers", i + 1, TN(c, T(c, i)));
  }
  if (!c->bad) check_printf(c);
}

static void rule_ASM(Ck *c) {
  IrType t = c->given;
  check_asm(c, t);
}

static void rule_CALL(Ck *c) {
  IrModule *m = c->m;
  int n = c->in->nargs;
  int64_t fi = c->imm[0];
  if (fi < 0 || (uint64_t)fi >= m->nfunc) return;
  IrFunc *g = m->funcs[fi];
  if (g->kind == IR_FUNC_KERNEL) {
    fail(c, "@%s is a kernel; calls go to device functions", ir_str_get(m, g->name));
    return;
  }
  if ((uint32_t)n != g->nparam) {
    fail(c, "@%s takes %u arguments, got %d", ir_str_get(m, g->name), g->nparam, n);
    return;
  }
  for (int i = 0; i < n; i++) {
    IrType pt = g->insts[g->params[i]].type;
    if (T(c, i) != pt) fail(c, "argument %d is %s; @%s takes %s", i + 1, TN(c, T(c, i)), ir_str_get(m, g->name), TN(c, pt));
  }
}

/* extract and insert: an element of a vector or struct. */
static void aggregate_rule(Ck *c) {
  IrType a = T(c, 0);
  const IrTypeRec *r = R(c, a);
  int64_t i = c->imm[0];
  if (r->kind != IR_TK_VEC && r->kind != IR_TK_STRUCT) {
    fail(c, "operand 1 is %s, expected a vector or struct", TN(c, a));
    return;
  }
  if (i < 0 || (uint64_t)i >= r->len) {
    fail(c, "index %lld of %s, which has %u elements", (long long)i, TN(c, a), r->len);
    return;
  }
  IrType et = r->kind == IR_TK_VEC ? r->elem : r->fields[i];
  if (c->oi->chk == IR_CHK_INSERT && T(c, 1) != et)
    fail(c, "inserting %s as element %lld of %s, which is %s", TN(c, T(c, 1)), (long long)i, TN(c, a), TN(c, et));
}

static void rule_EXTRACT(Ck *c) { aggregate_rule(c); }

static void rule_INSERT(Ck *c) { aggregate_rule(c); }

static void rule_PACK(Ck *c) {
  int n = c->in->nargs;
  IrType t = c->given;
  const IrTypeRec *r = R(c, t);
  if (r->kind != IR_TK_VEC && r->kind != IR_TK_STRUCT) {
    fail(c, "the result type %s is not a vector or struct", t ? TN(c, t) : "(none)");
    return;
  }
  if ((uint32_t)n != r->len) {
    fail(c, "%s has %u elements, got %d operands", TN(c, t), r->len, n);
    return;
  }
  for (int i = 0; i < n; i++) {
    IrType et = r->kind == IR_TK_VEC ? r->elem : r->fields[i];
    if (T(c, i) != et) fail(c, "operand %d is %s; element %d of %s is %s", i + 1, TN(c, T(c, i)), i, TN(c, t), TN(c, et));
  }
}

static void rule_MMA(Ck *c) {
  IrModule *m = c->m;
  IrMmaFrag fr;
  int shape = (int)c->imm[0];
  if (c->bad) return; /* immediates out of range: reported already */
  if (!ir_mma_lookup(shape, (int)c->imm[1], (int)c->imm[2], (int)c->imm[3], (int)c->imm[4], &fr)) {
    ClBuf list = {0};
    ir_mma_list(&list, shape, 0);
    fail(c, "mma.sync %s with D=%s A=%s B=%s C=%s does not exist; %s has: %s", ir_imm_name('M', shape),
         ir_mma_type_names[c->imm[4]], ir_mma_type_names[c->imm[1]], ir_mma_type_names[c->imm[2]],
         ir_mma_type_names[c->imm[3]], ir_imm_name('M', shape), cl_buf_str(&list));
    cl_buf_free(&list);
    return;
  }
  if (!cl_target_has(c->target, (ClFeature)fr.feat)) {
    ClBuf list = {0}, needs = {0};
    ir_mma_list(&list, -1, c->target);
    cl_target_needs(c->target, (ClFeature)fr.feat, &needs);
    fail(c, "this mma.sync %s; %s has: %s", cl_buf_str(&needs), c->target->name, cl_buf_str(&list));
    cl_buf_free(&list);
    cl_buf_free(&needs);
  }
  int integer = c->imm[3] == IR_MT_S32;
  if ((c->imm[5] & IR_FLAG_SAT) && !integer) fail(c, "sat (satfinite) is for integer mma");
  IrType want[3] = {fragment_type(m, fr.a_regs, fr.ab_reg), fragment_type(m, fr.b_regs, fr.ab_reg),
                    fragment_type(m, fr.c_regs, fr.c_reg)};
  static const char *const fname[3] = {"A", "B", "C"};
  for (int i = 0; i < 3; i++)
    if (T(c, i) != want[i]) fail(c, "the %s fragment is %s, expected %s", fname[i], TN(c, T(c, i)), TN(c, want[i]));
}

/* ldmatrix and stmatrix: 16-byte rows in shared memory, 1, 2 or 4 matrices. */
static void matrix_rule(Ck *c) {
  IrModule *m = c->m;
  IrType p = T(c, 0);
  int64_t cnt = c->imm[0];
  if (!is_ptr(c, p) || R(c, p)->space != IR_SPACE_SHARED)
    fail(c, "operand 1 is %s, expected a shared pointer", TN(c, p));
  else if (R(c, p)->align < 16)
    fail(c, "each row is 16 bytes: the pointer must be 16-byte aligned, %s is %u", TN(c, p), R(c, p)->align);
  if (cnt != 1 && cnt != 2 && cnt != 4) {
    fail(c, "count %lld: 1, 2 or 4 matrices", (long long)cnt);
    return;
  }
  if (c->oi->chk == IR_CHK_STMATRIX) {
    IrType want = fragment_type(m, (int)cnt, IR_T_I32);
    if (T(c, 1) != want) fail(c, "the value is %s, expected %s", TN(c, T(c, 1)), TN(c, want));
  }
}

static void rule_LDMATRIX(Ck *c) { matrix_rule(c); }

static void rule_STMATRIX(Ck *c) { matrix_rule(c); }

static void rule_CPASYNC(Ck *c) {
  int n = c->in->nargs;
  IrType d = T(c, 0), s = T(c, 1);
  int64_t bytes = c->imm[0], cache = c->imm[1];
  if (!is_ptr(c, d) || R(c, d)->space != IR_SPACE_SHARED) fail(c, "the destination is %s, expected a shared pointer", TN(c, d));
  if (!is_ptr(c, s) || R(c, s)->space != IR_SPACE_GLOBAL) fail(c, "the source is %s, expected a global pointer", TN(c, s));
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    fail(c, "%lld bytes: cp.async copies 4, 8 or 16", (long long)bytes);
    return;
  }
  if (cache != IR_CACHE_NONE && cache != IR_CACHE_CA && cache != IR_CACHE_CG)
    fail(c, "cache hint %s: cp.async takes ca or cg", ir_imm_name('C', cache));
  if (cache == IR_CACHE_CG && bytes != 16) fail(c, "cg copies 16 bytes, not %lld", (long long)bytes);
  if (c->bad) return;
  if (R(c, d)->align < bytes) fail(c, "the destination %s is less than %lld-byte aligned", TN(c, d), (long long)bytes);
  if (R(c, s)->align < bytes) fail(c, "the source %s is less than %lld-byte aligned", TN(c, s), (long long)bytes);
  if (n > 2 && !is_i32(T(c, 2))) fail(c, "the source size is %s, expected i32", TN(c, T(c, 2)));
}

static void rule_CPWAIT(Ck *c) {
  if (c->imm[0] < 0 || c->imm[0] > 63) fail(c, "%lld pending groups: 0 to 63", (long long)c->imm[0]);
}

static void rule_FOR(Ck *c) {
  int64_t k;
  if (same_types(c, 0) && T(c, 0) != IR_T_I32 && T(c, 0) != IR_T_I64)
    fail(c, "bounds and step are %s, expected i32 or i64", TN(c, T(c, 0)));
  if (const_arg(c, 2, &k) && k == 0) fail(c, "the step is 0");
  if (c->imm[0] < -1 || c->imm[0] > 1024) fail(c, "unroll %lld: -1 (full), 0 (auto), 1 (none) or a count to 1024", (long long)c->imm[0]);
}

static void rule_COND(Ck *c) {
  if (T(c, 0) != IR_T_I1) fail(c, "the condition is %s, expected i1", TN(c, T(c, 0)));
}

static void rule_RET(Ck *c) {
  IrModule *m = c->m;
  int n = c->in->nargs;
  if (c->f->ret == IR_T_VOID && n) fail(c, "@%s returns nothing", ir_str_get(m, c->f->name));
  else if (c->f->ret != IR_T_VOID && !n) fail(c, "@%s returns %s: give a value", ir_str_get(m, c->f->name), TN(c, c->f->ret));
  else if (n && T(c, 0) != c->f->ret) fail(c, "returning %s from @%s, which returns %s", TN(c, T(c, 0)), ir_str_get(m, c->f->name), TN(c, c->f->ret));
}

/* --- Hopper: the warpgroup MMA (wgmma) ---------------------------------------------------------------------- */

/* wgmma.mma_async: the form exists (ir_wgmma.c), A is a descriptor (i64) or
   four 32-bit registers (RS, K-major only), B a descriptor, the accumulator
   and the result the form's struct, scale_d an i1; the mode bits as the
   form allows (MN-major for 16-bit inputs, negation for floats, satfinite
   for integers). */
enum { WG_TRANS_A = 1, WG_TRANS_B = 2, WG_NEG_A = 4, WG_NEG_B = 8, WG_SAT = 16 };

static void rule_WGMMA(Ck *c) {
  IrModule *m = c->m;
  int64_t n = c->imm[0], mode = c->imm[4];
  int ta = (int)c->imm[1], tb = (int)c->imm[2], td = (int)c->imm[3];
  const char *why = NULL;
  IrWgmmaForm fm;
  if (c->bad) return;
  if (n < 1 || n > 256 || !ir_wgmma_form(ta, tb, td, (int)n, &fm, &why)) {
    fail(c, "there is no wgmma.mma_async m64n%lldk* %s.%s.%s: %s; %s", (long long)n, ir_mma_type_names[td],
         ir_mma_type_names[ta], ir_mma_type_names[tb], why ? why : "N is 8..256 step 8", ir_wgmma_forms());
    return;
  }
  if (mode & ~(int64_t)(WG_TRANS_A | WG_TRANS_B | WG_NEG_A | WG_NEG_B | WG_SAT))
    fail(c, "mode %lld: the bits are 1 (A MN-major), 2 (B MN-major), 4 (negate A), 8 (negate B), 16 (satfinite)",
         (long long)mode);
  int rs = T(c, 0) != IR_T_I64;
  if (rs && T(c, 0) != fragment_type(m, 4, IR_T_I32))
    fail(c, "A is %s, expected an i64 shared-memory descriptor or {i32 x 4} registers", TN(c, T(c, 0)));
  if (T(c, 1) != IR_T_I64) fail(c, "B is %s, expected an i64 shared-memory descriptor", TN(c, T(c, 1)));
  if ((mode & (WG_TRANS_A | WG_TRANS_B)) && !fm.mn_major)
    fail(c, "%s inputs are read K-major only: only f16 and bf16 operands can be MN-major (transposed)",
         ir_mma_type_names[ta]);
  else if (rs && (mode & WG_TRANS_A))
    fail(c, "A from registers is K-major: an MN-major (transposed) A needs A in shared memory");
  if ((mode & (WG_NEG_A | WG_NEG_B)) && fm.integer) fail(c, "integer wgmma takes no negation of A or B");
  if ((mode & WG_SAT) && !fm.integer) fail(c, "satfinite is for integer wgmma");
  IrType want = fragment_type(m, fm.d_regs, fm.d_reg);
  if (T(c, 2) != want) fail(c, "the accumulator is %s, expected %s", TN(c, T(c, 2)), TN(c, want));
  if (c->in->type != want)
    fail(c, "the result type is %s, expected the accumulator's %s", c->in->type ? TN(c, c->in->type) : "(none)",
         TN(c, want));
  if (T(c, 3) != IR_T_I1) fail(c, "scale_d is %s, expected i1 (false: D = A*B, ignoring the accumulator)",
                               TN(c, T(c, 3)));
}

/* wgmma.fence_operand: f32 or i32 registers, one or a struct of them. */
static void rule_WGFENCEOP(Ck *c) {
  IrType t = T(c, 0);
  const IrTypeRec *r = R(c, t);
  if (t == IR_T_F32 || t == IR_T_I32) return;
  if (r->kind == IR_TK_STRUCT && r->len >= 1 && r->len <= 128) {
    for (uint32_t i = 0; i < r->len; i++)
      if (r->fields[i] != IR_T_F32 && r->fields[i] != IR_T_I32) {
        fail(c, "field %u of %s is %s: the registers are f32 or i32", i, TN(c, t), TN(c, r->fields[i]));
        return;
      }
    return;
  }
  fail(c, "the operand is %s, expected f32 or i32 registers (a scalar or a struct of 1 to 128)", TN(c, t));
}

/* (end of the wgmma rules) */

/* --- Hopper: the bulk tensor engine (TMA) and bulk copies ----------------------------------------------------- */

/* Operand i is a pointer into shared memory, at least `align` bytes aligned. */
static void tma_shared(Ck *c, int i, unsigned align, const char *what) {
  IrType t = T(c, i);
  if (!is_ptr(c, t) || R(c, t)->space != IR_SPACE_SHARED)
    fail(c, "the %s (operand %d) is %s, expected a shared pointer", what, i + 1, TN(c, t));
  else if (R(c, t)->align < align)
    fail(c, "the %s (operand %d) %s is %u-byte aligned; it must be %u-byte aligned", what, i + 1, TN(c, t),
         R(c, t)->align, align);
}

/* Operand i is a TMA descriptor: a pointer to the 128-byte map, 64-byte
   aligned, in param (a grid-constant parameter), generic, const or global memory. */
static void tma_desc(Ck *c, int i) {
  IrType t = T(c, i);
  int sp = is_ptr(c, t) ? (int)R(c, t)->space : -1;
  if (sp != IR_SPACE_PARAM && sp != IR_SPACE_GENERIC && sp != IR_SPACE_CONST && sp != IR_SPACE_GLOBAL)
    fail(c, "the descriptor (operand %d) is %s, expected a pointer to the 128-byte tensor map in param, generic, "
         "const or global memory", i + 1, TN(c, t));
  else if (R(c, t)->align < 64)
    fail(c, "the descriptor (operand %d) %s is %u-byte aligned; a tensor map is 64-byte aligned", i + 1, TN(c, t),
         R(c, t)->align);
}

/* The bulk tensor ops: operands before the coordinates, the coordinates
   (rank of them, i32), and the multicast mask. */
static void rule_TMA(Ck *c) {
  int op = c->in->op, n = c->in->nargs, first = 0, extra = 0;
  switch (op) {
    case IR_OP_TMALOAD: first = 3; break;
    case IR_OP_TMALOADMC: first = 3; extra = 1; break;
    case IR_OP_TMASTORE: case IR_OP_TMAREDUCE: first = 2; break;
    case IR_OP_TMAPREFETCH: first = 1; break;
    default: first = 1; break; /* tma.prefetch_desc */
  }
  if (op == IR_OP_TMALOAD || op == IR_OP_TMALOADMC) {
    tma_shared(c, 0, 128, "destination");
    tma_desc(c, 1);
    tma_shared(c, 2, 8, "mbarrier");
  } else if (op == IR_OP_TMASTORE || op == IR_OP_TMAREDUCE) {
    tma_desc(c, 0);
    tma_shared(c, 1, 128, "source");
  } else {
    tma_desc(c, 0);
  }
  if (op == IR_OP_TMAPFDESC) return;
  int64_t rank = c->imm[0];
  if (rank < 1 || rank > 5) {
    fail(c, "rank %lld: a tensor map has 1 to 5 dimensions", (long long)rank);
    return;
  }
  if (n - first - extra != rank) {
    fail(c, "%d coordinate%s for a rank-%lld box: one i32 coordinate per dimension", n - first - extra,
         n - first - extra == 1 ? "" : "s", (long long)rank);
    return;
  }
  for (int i = first; i < first + rank; i++)
    if (!is_i32(T(c, i))) fail(c, "coordinate %d (operand %d) is %s, expected i32", i - first, i + 1, TN(c, T(c, i)));
  if (extra && T(c, n - 1) != IR_T_I16)
    fail(c, "the CTA mask (operand %d) is %s, expected i16 (bit i: the CTA of %%cluster_ctarank i)", n,
         TN(c, T(c, n - 1)));
  if (op == IR_OP_TMAREDUCE) {
    int64_t r = c->imm[1];
    if (r != IR_REDOP_ADD && r != IR_REDOP_MIN && r != IR_REDOP_MAX && r != IR_REDOP_INC && r != IR_REDOP_DEC &&
        r != IR_REDOP_AND && r != IR_REDOP_OR && r != IR_REDOP_XOR)
      fail(c, "reduction %s: cp.reduce.async.bulk.tensor has add, min, max, inc, dec, and, or, xor",
           ir_imm_name('A', r));
  }
}

/* Non-tensor bulk copies: 16-byte aligned addresses, a size that is a
   multiple of 16 bytes. */
static void rule_BULK(Ck *c) {
  int op = c->in->op, size_at;
  if (op == IR_OP_BULKLOAD) {
    tma_shared(c, 0, 16, "destination");
    tma_shared(c, 3, 8, "mbarrier");
    size_at = 2;
  } else if (op == IR_OP_BULKSTORE) {
    tma_shared(c, 1, 16, "source");
    size_at = 2;
  } else {
    size_at = 1;
  }
  int g = op == IR_OP_BULKSTORE ? 0 : op == IR_OP_BULKLOAD ? 1 : 0;
  IrType gt = T(c, g);
  if (!is_ptr(c, gt) || R(c, gt)->space != IR_SPACE_GLOBAL)
    fail(c, "the %s (operand %d) is %s, expected a global pointer", op == IR_OP_BULKSTORE ? "destination" : "source",
         g + 1, TN(c, gt));
  else if (R(c, gt)->align < 16)
    fail(c, "the global address (operand %d) %s is %u-byte aligned; bulk copies need 16", g + 1, TN(c, gt),
         R(c, gt)->align);
  int64_t k;
  if (!is_i32(T(c, size_at))) fail(c, "the size (operand %d) is %s, expected i32 bytes", size_at + 1, TN(c, T(c, size_at)));
  else if (const_arg(c, size_at, &k) && (k <= 0 || k % 16 != 0))
    fail(c, "%lld bytes: a bulk copy moves a positive multiple of 16 bytes", (long long)k);
}

static void rule_BULKWAIT(Ck *c) {
  if (c->imm[0] < 0 || c->imm[0] > 63) fail(c, "%lld pending groups: 0 to 63", (long long)c->imm[0]);
  if (c->imm[1] != 0 && c->imm[1] != 1) fail(c, "read is 0 (complete) or 1 (sources read), not %lld", (long long)c->imm[1]);
}

/* (end of the TMA rules) */

/* --- Hopper: mbarriers, fences, named barriers, elect, clusters, DSMEM, setmaxnreg ------------------------------ */

/* The mbarrier operand: an 8-byte, 8-aligned object in shared memory (or, where
   remote is allowed, a peer CTA's, as a shared_cluster address from mapa). */
static int mbar_operand(Ck *c, int remote) {
  IrType p = T(c, 0);
  int space = is_ptr(c, p) ? R(c, p)->space : -1;
  if (space != IR_SPACE_SHARED && !(remote && space == IR_SPACE_SHARED_CLUSTER)) {
    fail(c, "the barrier is %s, expected a shared pointer%s", TN(c, p),
         remote ? " (or a shared_cluster one from mapa, for a peer CTA's barrier)"
                : space == IR_SPACE_SHARED_CLUSTER ? ": this op works on the CTA's own barriers only" : "");
    return -1;
  }
  IrType e = R(c, p)->elem;
  if (e != IR_T_I64)
    fail(c, "the barrier is %s: an mbarrier is a 64-bit object (a pointer to i64)", TN(c, p));
  else if (R(c, p)->align < 8)
    fail(c, "the barrier %s is %u-byte aligned: an mbarrier needs 8", TN(c, p), R(c, p)->align);
  return space;
}

static void want_i32(Ck *c, int i, const char *what) {
  if (!is_i32(T(c, i))) fail(c, "%s is %s, expected i32", what, TN(c, T(c, i)));
}

static void rule_MBAR(Ck *c) {
  int op = c->in->op, n = c->in->nargs;
  int remote_ok = op == IR_OP_MBARRIVE || op == IR_OP_MBARRIVETX || op == IR_OP_MBEXPECTTX;
  int space = mbar_operand(c, remote_ok);
  int64_t k;
  if (strchr(c->oi->imms, 'S')) {
    int64_t scope = c->imm[0];
    if (scope != IR_SCOPE_CTA && scope != IR_SCOPE_CLUSTER)
      fail(c, "scope %s: an mbarrier's scope is cta or cluster", ir_imm_name('S', scope));
    else if (scope == IR_SCOPE_CLUSTER) has(c, CL_FEAT_CLUSTER, "scope cluster");
  }
  switch (op) {
    case IR_OP_MBINIT:
      want_i32(c, 1, "the arrival count");
      if (const_arg(c, 1, &k) && (k < 1 || k > (1 << 20) - 1))
        fail(c, "arrival count %lld: 1 to 2^20-1 (1048575)", (long long)k);
      break;
    case IR_OP_MBARRIVE:
      if (n > 1) {
        want_i32(c, 1, "the arrival count");
        if (const_arg(c, 1, &k) && (k < 1 || k > (1 << 20) - 1))
          fail(c, "arrival count %lld: 1 to 2^20-1 (1048575)", (long long)k);
      }
      if (c->given && c->given != IR_T_VOID && c->given != IR_T_I64)
        fail(c, "the result is %s: the state token is i64 (or ask for none)", TN(c, c->given));
      else if (c->given == IR_T_I64 && space == IR_SPACE_SHARED_CLUSTER)
        fail(c, "an arrive on a peer CTA's barrier (shared_cluster) gives no state token: ask for none");
      break;
    case IR_OP_MBARRIVETX:
    case IR_OP_MBEXPECTTX:
      want_i32(c, 1, "the transaction byte count");
      if (const_arg(c, 1, &k) && (k < 0 || k > (1 << 20) - 1))
        fail(c, "%lld transaction bytes: 0 to 2^20-1 (1048575) per update", (long long)k);
      break;
    case IR_OP_MBTRYWAIT:
    case IR_OP_MBTESTWAIT:
    case IR_OP_MBWAIT:
      want_i32(c, 1, "the parity");
      if (const_arg(c, 1, &k) && k != 0 && k != 1) fail(c, "parity %lld: 0 or 1", (long long)k);
      if (n > 2) want_i32(c, 2, "the suspend-time hint");
      break;
    default: break;
  }
}

static void rule_ELECT(Ck *c) {
  want_i32(c, 0, "the mask");
  IrType t = c->given;
  if (t == IR_T_I1) return;
  const IrTypeRec *r = t ? R(c, t) : NULL;
  if (!r || r->kind != IR_TK_STRUCT || r->len != 2 || r->fields[0] != IR_T_I32 || r->fields[1] != IR_T_I1)
    fail(c, "the result is %s: i1 (the leader) or {i32, i1} (the leader's lane, the leader)", t ? TN(c, t) : "(none)");
}

static void rule_MAPA(Ck *c) {
  IrType p = T(c, 0);
  if (!is_ptr(c, p) || R(c, p)->space != IR_SPACE_SHARED)
    fail(c, "operand 1 is %s, expected a shared pointer (this CTA's address to map)", TN(c, p));
  want_i32(c, 1, "the CTA rank");
}

static void rule_CTARANK(Ck *c) {
  IrType p = T(c, 0);
  if (!is_ptr(c, p) || R(c, p)->space != IR_SPACE_SHARED_CLUSTER)
    fail(c, "operand 1 is %s, expected a shared_cluster pointer (from mapa)", TN(c, p));
}

static void rule_SETMAXNREG(Ck *c) {
  int64_t n = c->imm[0];
  if (n < 24 || n > 256 || n % 8)
    fail(c, "%lld registers: setmaxnreg takes 24 to 256, a multiple of 8", (long long)n);
}

/* (end of the sync rules) */

const IrCheckRule ir_check_rules[IR_CHK__COUNT] = {
#define IR_RULE_ROW(id) [IR_CHK_##id] = rule_##id,
    IR_CHECK_FAMILIES(IR_RULE_ROW)
#undef IR_RULE_ROW
};
