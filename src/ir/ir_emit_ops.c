/* ir_emit_ops.c: the lowering of each op family (the low column of ir_ops.h) to
 * LLVM 7 instructions, libdevice calls or inline PTX.
 *
 * Plain LLVM where libnvvm's optimiser understands it (arithmetic, compares,
 * casts, weak loads and stores, the special registers with intrinsics);
 * inline PTX where there is no intrinsic in the LLVM 7 dialect or where the
 * exact PTX instruction matters (mma, ldmatrix, cp.async, ordered and cached
 * memory accesses, atomics with scopes, bf16/fp8/tf32 conversions, approximate
 * math). Inline PTX that touches memory is `sideeffect` with a memory clobber;
 * warp-synchronous ops carry the convergent attribute (#0) so LLVM does not
 * move them across divergent control flow. libnvvm does not reject unknown
 * intrinsics (they fail later in ptxas), so intrinsics here are only the ones
 * full compiles have exercised. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir_emit.h"

/* --- small helpers ------------------------------------------------------------------------------------------ */
static const IrInst *I(IrEmit *e, IrRef v) { return &e->f->insts[v]; }
static const IrRef *A(IrEmit *e, IrRef v) { return ir_args(e->f, I(e, v)); }
static const int64_t *IM(IrEmit *e, IrRef v) { return ir_imms(e->f, I(e, v)); }
static IrType TY(IrEmit *e, IrRef v) { return I(e, v)->type; }
static const char *LT(IrEmit *e, IrType t) { return ir_ll_type(e, t); }
static const char *VAL(IrEmit *e, IrRef v) { return ir_ll_val(e, v); }
static const IrTypeRec *REC(IrEmit *e, IrType t) { return ir_trec(e->m, t); }

/* "%tN" in a rotating buffer */
static const char *tname(IrEmit *e, int n) {
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%t%d", n);
  return s;
}
static const char *newtmp(IrEmit *e) { return tname(e, ir_ll_tmp(e)); }
/* "%vN" of the op being lowered */
static const char *def(IrEmit *e, IrRef v) {
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%v%u", v);
  return s;
}
static char *keep(char *buf, size_t n, const char *s) {
  snprintf(buf, n, "%s", s);
  return buf;
}

/* An all-ones / zero / minus-zero value of a (vector) type. */
static void splat(IrEmit *e, IrType t, const char *scalar, char *out, size_t n) {
  const IrTypeRec *r = REC(e, t);
  if (r->kind != IR_TK_VEC) {
    snprintf(out, n, "%s", scalar);
    return;
  }
  size_t len = (size_t)snprintf(out, n, "<");
  for (uint32_t i = 0; i < r->len && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, "%s%s %s", i ? ", " : "", LT(e, r->elem), scalar);
  if (len < n) snprintf(out + len, n - len, ">");
}

static const char *fn_decl(IrEmit *e, const char *name, const char *ret, const char *params) {
  char decl[512];
  snprintf(decl, sizeof decl, "declare %s @%s(%s)", ret, name, params);
  ir_ll_declare(e, name, decl);
  return name;
}

/* --- inline PTX ----------------------------------------------------------------------------------------------- */
static void asm_text(IrAsm *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void asm_text(IrAsm *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t len = strlen(a->text);
  vsnprintf(a->text + len, sizeof a->text - len, fmt, ap);
  va_end(ap);
}

static void asm_cons(IrAsm *a, const char *c) {
  size_t len = strlen(a->cons);
  snprintf(a->cons + len, sizeof a->cons - len, "%s%s", len ? "," : "", c);
}

static void asm_out(IrAsm *a, char letter) {
  char c[4] = {'=', letter, 0, 0};
  asm_cons(a, c);
  a->nout++;
}

void ir_asm_in(IrEmit *e, IrAsm *a, char letter, const char *ll_type, const char *val) {
  (void)e;
  char c[2] = {letter, 0};
  asm_cons(a, c);
  size_t len = strlen(a->args);
  snprintf(a->args + len, sizeof a->args - len, "%s%s %s", a->nin ? ", " : "", ll_type, val);
  a->nin++;
}

/* Writes the call; dst NULL for a void result. flags: 1 sideeffect, 2 convergent, 4 memory clobber. */
static void asm_call(IrEmit *e, IrAsm *a, const char *dst, const char *ret, int flags) {
  if (flags & 4) asm_cons(a, "~{memory}");
  ClBuf esc = {0};
  const char *text = a->text;
  int plain = 1; /* the usual case: nothing to escape, no copy */
  for (const unsigned char *p = (const unsigned char *)text; *p && plain; p++)
    plain = !(*p == '"' || *p == '\\' || *p < 32 || *p >= 127);
  if (!plain) {
    for (const char *p = a->text; *p; p++) {
      unsigned char ch = (unsigned char)*p;
      if (ch == '"' || ch == '\\' || ch < 32 || ch >= 127) cl_buf_printf(&esc, "\\%02X", ch);
      else cl_buf_putc(&esc, (char)ch);
    }
    text = cl_buf_str(&esc);
  }
  if (flags & 2) e->uses_convergent = 1;
  ir_ll_ins(e, "%s%scall %s asm %s\"%s\", \"%s\"(%s)%s", dst ? dst : "", dst ? " = " : "", ret,
            (flags & 1) ? "sideeffect " : "", text, a->cons, a->args, (flags & 2) ? " #0" : "");
  cl_buf_free(&esc);
}

/* How a value of an IR type sits in a PTX register for inline asm. */
typedef struct Reg {
  char letter;     /* constraint */
  const char *ll;  /* LLVM type of the asm operand */
  const char *ptx; /* PTX type for ld/st/atom */
  int conv;        /* 0 as is, 1 zext/trunc via i16, 2 half<->i16 bitcast, 3 ptr<->i64 */
} Reg;

static Reg reg_of(IrEmit *e, IrType t) {
  switch (t) {
    case IR_T_I1: case IR_T_I8: case IR_T_E4M3: case IR_T_E5M2: return (Reg){'h', "i16", "b8", 1};
    case IR_T_I16: case IR_T_BF16: return (Reg){'h', "i16", "b16", 0};
    case IR_T_F16: return (Reg){'h', "i16", "b16", 2};
    case IR_T_I32: case IR_T_TF32: return (Reg){'r', "i32", "b32", 0};
    case IR_T_F32: return (Reg){'f', "float", "f32", 0};
    case IR_T_I64: return (Reg){'l', "i64", "b64", 0};
    case IR_T_F64: return (Reg){'d', "double", "f64", 0};
    default: break;
  }
  if (REC(e, t)->kind == IR_TK_PTR) {
    if (REC(e, t)->space == IR_SPACE_SHARED_CLUSTER) return (Reg){'r', "i32", "b32", 0};
    return (Reg){'l', "i64", "b64", 3};
  }
  return (Reg){'r', "i32", "b32", 0};
}

/* A value as its asm register operand (conversion emitted if needed). */
static const char *to_reg(IrEmit *e, Reg r, IrType t, const char *val) {
  if (!r.conv) return val;
  const char *tmp = newtmp(e);
  if (r.conv == 1) ir_ll_ins(e, "%s = zext %s %s to i16", tmp, LT(e, t), val);
  else if (r.conv == 2) ir_ll_ins(e, "%s = bitcast half %s to i16", tmp, val);
  else ir_ll_ins(e, "%s = ptrtoint %s %s to i64", tmp, LT(e, t), val);
  return tmp;
}

/* An asm register result into dst as type t. */
static void from_reg(IrEmit *e, Reg r, IrType t, const char *regval, const char *dst) {
  switch (r.conv) {
    case 0: ir_ll_ins(e, "%s = bitcast %s %s to %s", dst, r.ll, regval, LT(e, t)); break;
    case 1: ir_ll_ins(e, "%s = trunc i16 %s to %s", dst, regval, LT(e, t)); break;
    case 2: ir_ll_ins(e, "%s = bitcast i16 %s to half", dst, regval); break;
    default: ir_ll_ins(e, "%s = inttoptr i64 %s to %s", dst, regval, LT(e, t)); break;
  }
}

static const char *ptx_space(int space) {
  switch (space) {
    case IR_SPACE_GLOBAL: return ".global";
    case IR_SPACE_SHARED: return ".shared";
    case IR_SPACE_SHARED_CLUSTER: return ".shared::cluster";
    case IR_SPACE_LOCAL: return ".local";
    case IR_SPACE_CONST: return ".const";
    default: return "";
  }
}

/* The address operand of a pointer: 32-bit for shared spaces, else 64-bit. */
static void asm_addr(IrEmit *e, IrAsm *a, IrRef p) {
  IrType pt = TY(e, p);
  int space = REC(e, pt)->space;
  if (space == IR_SPACE_SHARED_CLUSTER) {
    ir_asm_in(e, a, 'r', "i32", VAL(e, p));
    return;
  }
  const char *tmp = newtmp(e);
  int narrow = space == IR_SPACE_SHARED;
  ir_ll_ins(e, "%s = ptrtoint %s %s to %s", tmp, LT(e, pt), VAL(e, p), narrow ? "i32" : "i64");
  ir_asm_in(e, a, narrow ? 'r' : 'l', narrow ? "i32" : "i64", tmp);
}

/* "{$0, $1}" for n registers from $first; a single one bare ("$0") unless
   braced (mma and ldmatrix operands are vectors even of one register). */
static void asm_regs_b(IrAsm *a, int first, int n, int braced) {
  if (n == 1 && !braced) {
    asm_text(a, "$%d", first);
    return;
  }
  asm_text(a, "{");
  for (int i = 0; i < n; i++) asm_text(a, "%s$%d", i ? ", " : "", first + i);
  asm_text(a, "}");
}
static void asm_regs(IrAsm *a, int first, int n) { asm_regs_b(a, first, n, 0); }

static IrRef resolve(IrEmit *e, IrRef v) {
  while (e->alias[v]) v = e->alias[v];
  return v;
}

/* Splits a struct result into %vN.0, %vN.1, ... (see ir_emit.h). */
static void split(IrEmit *e, IrRef v) {
  const IrTypeRec *r = REC(e, TY(e, v));
  if (r->kind != IR_TK_STRUCT) return;
  for (uint32_t i = 0; i < r->len; i++)
    ir_ll_ins(e, "%%v%u.%u = extractvalue %s %%v%u, %u", v, i, LT(e, TY(e, v)), v, i);
  e->vflags[v] |= IR_EV_SPLIT;
}

/* The i-th register of a fragment (a struct, or the value itself when n == 1). */
static const char *frag_reg(IrEmit *e, IrRef v, int i, int n) {
  if (n == 1) return VAL(e, v);
  v = resolve(e, v);
  if (I(e, v)->op == IR_OP_PACK) return VAL(e, A(e, v)[i]);
  if (e->vflags[v] & IR_EV_SPLIT) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "%%v%u.%d", v, i);
    return s;
  }
  const char *tmp = newtmp(e);
  ir_ll_ins(e, "%s = extractvalue %s %s, %d", tmp, LT(e, TY(e, v)), VAL(e, v), i);
  return tmp;
}

/* --- arithmetic ------------------------------------------------------------------------------------------------ */
static void emit_bin(IrEmit *e, IrRef v, const char *mnem, int float_prefix) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, a[0]);
  int fl = float_prefix && ir_type_is_float(e->m, ir_type_scalar_of(e->m, t));
  char x[80];
  ir_ll_ins(e, "%s = %s%s %s %s, %s", def(e, v), fl ? "f" : "", mnem, LT(e, t), keep(x, sizeof x, VAL(e, a[0])),
            VAL(e, a[1]));
}

static void emit_neg(IrEmit *e, IrRef v) {
  IrType t = TY(e, v);
  int fl = ir_type_is_float(e->m, ir_type_scalar_of(e->m, t));
  char zero[2048];
  const char *z = fl ? (ir_type_scalar_of(e->m, t) == IR_T_F16 ? "0xH8000" : "0x8000000000000000") : "0";
  splat(e, t, z, zero, sizeof zero);
  ir_ll_ins(e, "%s = %s %s %s, %s", def(e, v), fl ? "fsub" : "sub", LT(e, t), zero, VAL(e, A(e, v)[0]));
}

static void emit_not(IrEmit *e, IrRef v) {
  IrType t = TY(e, v);
  char ones[2048];
  splat(e, t, ir_type_scalar_of(e->m, t) == IR_T_I1 ? "true" : "-1", ones, sizeof ones);
  ir_ll_ins(e, "%s = xor %s %s, %s", def(e, v), LT(e, t), VAL(e, A(e, v)[0]), ones);
}

/* llvm.nvvm.mulhi.{i,ui,ll,ull}: mul.hi.{s,u}{32,64} */
static void emit_mulhi(IrEmit *e, IrRef v, const char *ext) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const char *T = LT(e, t);
  int uns = ext[0] == 'z', wide = t == IR_T_I64;
  char name[48], params[32], x[80];
  snprintf(name, sizeof name, "llvm.nvvm.mulhi.%s%s", uns ? "u" : "", wide ? "ll" : "i");
  snprintf(params, sizeof params, "%s, %s", T, T);
  fn_decl(e, name, T, params);
  keep(x, sizeof x, VAL(e, a[0]));
  ir_ll_ins(e, "%s = call %s @%s(%s %s, %s %s)", def(e, v), T, name, T, x, T, VAL(e, a[1]));
}

static void emit_minmax(IrEmit *e, IrRef v, const char *pred) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const IrTypeRec *r = REC(e, t);
  char c[32], x[80], y[80];
  keep(c, sizeof c, newtmp(e));
  keep(x, sizeof x, VAL(e, a[0]));
  keep(y, sizeof y, VAL(e, a[1]));
  ir_ll_ins(e, "%s = icmp %s %s %s, %s", c, pred, LT(e, t), x, y);
  if (r->kind == IR_TK_VEC)
    ir_ll_ins(e, "%s = select <%u x i1> %s, %s %s, %s %s", def(e, v), r->len, c, LT(e, t), x, LT(e, t), y);
  else ir_ll_ins(e, "%s = select i1 %s, %s %s, %s %s", def(e, v), c, LT(e, t), x, LT(e, t), y);
}

static void emit_fminmax(IrEmit *e, IrRef v, const char *which) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  char name[64], params[64], x[80];
  int f64 = t == IR_T_F64;
  snprintf(name, sizeof name, "llvm.nvvm.f%s.%s%s", which, (e->ftz && !f64) ? "ftz." : "", f64 ? "d" : "f");
  snprintf(params, sizeof params, "%s, %s", LT(e, t), LT(e, t));
  fn_decl(e, name, LT(e, t), params);
  ir_ll_ins(e, "%s = call %s @%s(%s %s, %s %s)", def(e, v), LT(e, t), name, LT(e, t), keep(x, sizeof x, VAL(e, a[0])),
            LT(e, t), VAL(e, a[1]));
}

static void emit_abs(IrEmit *e, IrRef v) {
  IrType t = TY(e, v);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80];
  keep(xs, sizeof xs, x);
  if (ir_type_is_float(e->m, t)) {
    char name[32];
    snprintf(name, sizeof name, "llvm.fabs.%s", ir_ll_mangle(e, t));
    fn_decl(e, name, LT(e, t), LT(e, t));
    ir_ll_ins(e, "%s = call %s @%s(%s %s)", def(e, v), LT(e, t), name, LT(e, t), xs);
    return;
  }
  char c[32], n[32];
  keep(c, sizeof c, newtmp(e));
  keep(n, sizeof n, newtmp(e));
  ir_ll_ins(e, "%s = icmp slt %s %s, 0", c, LT(e, t), xs);
  ir_ll_ins(e, "%s = sub %s 0, %s", n, LT(e, t), xs);
  ir_ll_ins(e, "%s = select i1 %s, %s %s, %s %s", def(e, v), c, LT(e, t), n, LT(e, t), xs);
}

static void emit_fma(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const char *T = LT(e, t);
  char name[48], params[256], x[80], y[80];
  snprintf(name, sizeof name, "llvm.fma.%s", ir_ll_mangle(e, t));
  snprintf(params, sizeof params, "%s, %s, %s", T, T, T);
  fn_decl(e, name, T, params);
  keep(x, sizeof x, VAL(e, a[0]));
  keep(y, sizeof y, VAL(e, a[1]));
  ir_ll_ins(e, "%s = call %s @%s(%s %s, %s %s, %s %s)", def(e, v), T, name, T, x, T, y, T, VAL(e, a[2]));
}

static void emit_fdiv(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  char x[80];
  keep(x, sizeof x, VAL(e, a[0]));
  if (((IM(e, v)[0] & IR_FLAG_FAST) || e->fast) && t == IR_T_F32) {
    IrAsm as = {{0}, {0}, {0}, 0, 0};
    asm_text(&as, "div.approx%s.f32 $0, $1, $2;", e->ftz ? ".ftz" : "");
    asm_out(&as, 'f');
    ir_asm_in(e, &as, 'f', "float", x);
    ir_asm_in(e, &as, 'f', "float", VAL(e, a[1]));
    asm_call(e, &as, def(e, v), "float", 0);
    return;
  }
  ir_ll_ins(e, "%s = fdiv %s %s, %s", def(e, v), LT(e, t), x, VAL(e, a[1]));
}

static void emit_math(IrEmit *e, IrRef v) {
  IrType t = TY(e, v);
  const char *ll = ir_op_info[I(e, v)->op].ll;
  const char *bar = strchr(ll, '|');
  char base[32], fast[64];
  snprintf(base, sizeof base, "%.*s", (int)(bar - ll), ll);
  snprintf(fast, sizeof fast, "%s", bar + 1);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80];
  keep(xs, sizeof xs, x);
  int want_fast = ((IM(e, v)[0] & IR_FLAG_FAST) || e->fast) && t == IR_T_F32 && fast[0];
  if (want_fast && strncmp(fast, "__nv_", 5) != 0) { /* a PTX approximation */
    IrAsm as = {{0}, {0}, {0}, 0, 0};
    char *f32 = strstr(fast, ".f32");
    int ftz = e->ftz && I(e, v)->op != IR_OP_TANH;
    if (f32) *f32 = 0;
    asm_text(&as, "%s%s.f32 $0, $1;", fast, ftz ? ".ftz" : "");
    asm_out(&as, 'f');
    ir_asm_in(e, &as, 'f', "float", xs);
    asm_call(e, &as, def(e, v), "float", 0);
    return;
  }
  char name[80];
  if (want_fast) snprintf(name, sizeof name, "%s", fast);
  else if (!base[0]) { /* rcp: an IEEE division */
    ir_ll_ins(e, "%s = fdiv %s %s, %s", def(e, v), LT(e, t), "1.0", xs);
    return;
  } else snprintf(name, sizeof name, "__nv_%s%s", base, t == IR_T_F32 ? "f" : "");
  fn_decl(e, name, LT(e, t), LT(e, t));
  ir_ll_ins(e, "%s = call %s @%s(%s %s)", def(e, v), LT(e, t), name, LT(e, t), xs);
}

static void emit_bitcount(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, a[0]);
  const char *T = LT(e, t);
  const char *base = ir_op_info[I(e, v)->op].ll;
  char name[48], params[32], x[80];
  snprintf(name, sizeof name, "%s.%s", base, T);
  int clz = I(e, v)->op == IR_OP_CLZ;
  snprintf(params, sizeof params, clz ? "%s, i1" : "%s", T);
  fn_decl(e, name, T, params);
  keep(x, sizeof x, VAL(e, a[0]));
  int narrow = TY(e, v) != t; /* popc/clz of i64 give i32 */
  const char *dst = narrow ? newtmp(e) : def(e, v);
  char d[32];
  keep(d, sizeof d, dst);
  ir_ll_ins(e, "%s = call %s @%s(%s %s%s)", d, T, name, T, x, clz ? ", i1 false" : "");
  if (narrow) ir_ll_ins(e, "%s = trunc %s %s to i32", def(e, v), T, d);
}

static void emit_prmt(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "prmt.b32 $0, $1, $2, $3;");
  asm_out(&as, 'r');
  for (int i = 0; i < 3; i++) ir_asm_in(e, &as, 'r', "i32", VAL(e, a[i]));
  asm_call(e, &as, def(e, v), "i32", 0);
}

/* --- conversions ------------------------------------------------------------------------------------------------ */
static const char *ptx_num(IrType t, int uns) {
  switch (t) {
    case IR_T_I8: return uns ? "u8" : "s8";
    case IR_T_I16: return uns ? "u16" : "s16";
    case IR_T_I32: return uns ? "u32" : "s32";
    case IR_T_I64: return uns ? "u64" : "s64";
    case IR_T_F16: return "f16";
    case IR_T_F32: return "f32";
    case IR_T_F64: return "f64";
    default: return "b32";
  }
}

static void cvt_asm(IrEmit *e, IrRef v, const char *text, IrType from, IrType to) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  Reg rf = reg_of(e, from), rt = reg_of(e, to);
  snprintf(as.text, sizeof as.text, "%s", text);
  asm_out(&as, rt.letter);
  ir_asm_in(e, &as, rf.letter, rf.ll, to_reg(e, rf, from, VAL(e, A(e, v)[0])));
  if (rt.conv || strcmp(rt.ll, LT(e, to)) != 0) {
    char r[32];
    keep(r, sizeof r, newtmp(e));
    asm_call(e, &as, r, rt.ll, 0);
    from_reg(e, rt, to, r, def(e, v));
  } else {
    asm_call(e, &as, def(e, v), rt.ll, 0);
  }
}

static void emit_cvt(IrEmit *e, IrRef v) {
  IrModule *m = e->m;
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  int rnd = (int)IM(e, v)[0], sat = (int)(IM(e, v)[1] & IR_FLAG_SAT), uns = I(e, v)->op == IR_OP_CVTU;
  int fb = REC(e, from)->bits, tb = REC(e, to)->bits;
  int fi = ir_type_is_int(m, from), ti = ir_type_is_int(m, to);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80], text[128];
  keep(xs, sizeof xs, x);
  static const char *const rname[] = {"", ".rn", ".rz", ".rm", ".rp", ".rna"};
  static const char *const iname[] = {"", ".rni", ".rzi", ".rmi", ".rpi", ""};
  if (fi && ti) {
    const char *val = xs;
    char clamped[32];
    if (sat && tb < fb) { /* clamp into the narrower range, then truncate */
      char c1[32], c2[32], s1[32];
      long long hi = uns ? (long long)((1ull << tb) - 1) : (long long)((1ull << (tb - 1)) - 1);
      long long lo = uns ? 0 : -hi - 1;
      const char *T = LT(e, from);
      keep(c1, sizeof c1, newtmp(e));
      keep(s1, sizeof s1, newtmp(e));
      ir_ll_ins(e, "%s = icmp %s %s %s, %lld", c1, uns ? "ugt" : "sgt", T, xs, hi);
      ir_ll_ins(e, "%s = select i1 %s, %s %lld, %s %s", s1, c1, T, hi, T, xs);
      if (!uns) {
        keep(c2, sizeof c2, newtmp(e));
        keep(clamped, sizeof clamped, newtmp(e));
        ir_ll_ins(e, "%s = icmp slt %s %s, %lld", c2, T, s1, lo);
        ir_ll_ins(e, "%s = select i1 %s, %s %lld, %s %s", clamped, c2, T, lo, T, s1);
      } else {
        keep(clamped, sizeof clamped, s1);
      }
      val = clamped;
    }
    const char *op = tb < fb ? "trunc" : (uns || fb == 1) ? "zext" : "sext";
    ir_ll_ins(e, "%s = %s %s %s to %s", def(e, v), op, LT(e, from), val, LT(e, to));
    return;
  }
  if (fi) { /* int -> f16/f32/f64 */
    if (rnd == IR_ROUND_DEFAULT || rnd == IR_ROUND_RN) {
      ir_ll_ins(e, "%s = %s %s %s to %s", def(e, v), uns ? "uitofp" : "sitofp", LT(e, from), xs, LT(e, to));
      return;
    }
    snprintf(text, sizeof text, "cvt%s.%s.%s $0, $1;", rname[rnd], ptx_num(to, 0), ptx_num(from, uns));
    cvt_asm(e, v, text, from, to);
    return;
  }
  if (ti) { /* float -> int: saturating like PTX */
    if (rnd == IR_ROUND_DEFAULT && from != IR_T_F16) {
      ir_ll_ins(e, "%s = %s %s %s to %s", def(e, v), uns ? "fptoui" : "fptosi", LT(e, from), xs, LT(e, to));
      return;
    }
    snprintf(text, sizeof text, "cvt%s.%s.%s $0, $1;", rnd ? iname[rnd] : ".rzi", ptx_num(to, uns), ptx_num(from, 0));
    cvt_asm(e, v, text, from, to);
    return;
  }
  /* float -> float */
  if (from == IR_T_BF16) { /* exact: the bf16 bits are the top half of an f32 */
    char w[32], s[32];
    keep(w, sizeof w, newtmp(e));
    keep(s, sizeof s, newtmp(e));
    ir_ll_ins(e, "%s = zext i16 %s to i32", w, xs);
    ir_ll_ins(e, "%s = shl i32 %s, 16", s, w);
    ir_ll_ins(e, "%s = bitcast i32 %s to float", def(e, v), s);
    return;
  }
  if (from == IR_T_TF32) {
    ir_ll_ins(e, "%s = bitcast i32 %s to float", def(e, v), xs);
    return;
  }
  if (from == IR_T_E4M3 || from == IR_T_E5M2) {
    snprintf(text, sizeof text,
             "{ .reg .b32 t; .reg .b16 lo, hi; cvt.rn.f16x2.%s t, $1; mov.b32 {lo, hi}, t; cvt.f32.f16 $0, lo; }",
             from == IR_T_E4M3 ? "e4m3x2" : "e5m2x2");
    cvt_asm(e, v, text, from, to);
    return;
  }
  if (to == IR_T_BF16) {
    snprintf(text, sizeof text, "cvt%s.bf16.f32 $0, $1;", rnd == IR_ROUND_RZ ? ".rz" : ".rn");
    cvt_asm(e, v, text, from, to);
    return;
  }
  if (to == IR_T_TF32) {
    cvt_asm(e, v, "cvt.rna.tf32.f32 $0, $1;", from, to);
    return;
  }
  if (to == IR_T_E4M3 || to == IR_T_E5M2) { /* both halves of the pair from x: the low byte is cvt(x) */
    snprintf(text, sizeof text, "cvt.rn.satfinite.%s.f32 $0, $1, $1;", to == IR_T_E4M3 ? "e4m3x2" : "e5m2x2");
    cvt_asm(e, v, text, from, to);
    return;
  }
  int narrowing = tb < fb;
  if (!sat && (rnd == IR_ROUND_DEFAULT || rnd == IR_ROUND_RN)) {
    ir_ll_ins(e, "%s = %s %s %s to %s", def(e, v), narrowing ? "fptrunc" : "fpext", LT(e, from), xs, LT(e, to));
    return;
  }
  snprintf(text, sizeof text, "cvt%s%s.%s.%s $0, $1;", rnd ? rname[rnd] : ".rn", sat ? ".sat" : "", ptx_num(to, 0),
           ptx_num(from, 0));
  cvt_asm(e, v, text, from, to);
}

static void emit_cast(IrEmit *e, IrRef v, const char *op) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  const char *lf = LT(e, from), *lt = LT(e, to);
  if (strcmp(lf, lt) == 0) { /* same LLVM type (bf16 <-> i16, an alignment-only cast): nothing to do */
    e->alias[v] = A(e, v)[0];
    return;
  }
  ir_ll_ins(e, "%s = %s %s %s to %s", def(e, v), op, lf, VAL(e, A(e, v)[0]), lt);
}

static void emit_ptrcast(IrEmit *e, IrRef v) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  const IrTypeRec *rf = REC(e, from), *rt = REC(e, to);
  const char *lf = LT(e, from), *lt = LT(e, to);
  if (strcmp(lf, lt) == 0) {
    e->alias[v] = A(e, v)[0];
    return;
  }
  int as_f = rf->space == IR_SPACE_PARAM ? IR_SPACE_GENERIC : rf->space;
  int as_t = rt->space == IR_SPACE_PARAM ? IR_SPACE_GENERIC : rt->space;
  if (as_f == as_t) {
    ir_ll_ins(e, "%s = bitcast %s %s to %s", def(e, v), lf, VAL(e, A(e, v)[0]), lt);
    return;
  }
  /* change the element in the source space, then the space */
  IrType mid = ir_type_ptr(e->m, rt->elem, rf->space, (int)rf->align);
  const char *lm = LT(e, mid);
  const char *src = VAL(e, A(e, v)[0]);
  char s[80];
  keep(s, sizeof s, src);
  if (strcmp(lm, lf) != 0) {
    keep(s, sizeof s, newtmp(e));
    ir_ll_ins(e, "%s = bitcast %s %s to %s", s, lf, VAL(e, A(e, v)[0]), lm);
  }
  ir_ll_ins(e, "%s = addrspacecast %s %s to %s", def(e, v), lm, s, lt);
}

static void emit_inttoptr(IrEmit *e, IrRef v) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  if (REC(e, to)->space == IR_SPACE_SHARED_CLUSTER) { /* a 32-bit address already */
    if (from == IR_T_I32) e->alias[v] = A(e, v)[0];
    else ir_ll_ins(e, "%s = trunc i64 %s to i32", def(e, v), VAL(e, A(e, v)[0]));
    return;
  }
  emit_cast(e, v, "inttoptr");
}

static void emit_ptrtoint(IrEmit *e, IrRef v) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  if (REC(e, from)->space == IR_SPACE_SHARED_CLUSTER) {
    if (to == IR_T_I32) e->alias[v] = A(e, v)[0];
    else ir_ll_ins(e, "%s = zext i32 %s to i64", def(e, v), VAL(e, A(e, v)[0]));
    return;
  }
  emit_cast(e, v, "ptrtoint");
}

/* --- memory ----------------------------------------------------------------------------------------------------- */
/* A pointer to `want` in the space of p (bitcast when the element differs). */
static const char *ptr_as(IrEmit *e, IrRef p, const char *want_ptr) {
  const char *lp = LT(e, TY(e, p));
  if (strcmp(lp, want_ptr) == 0) return VAL(e, p);
  int n = ir_ll_tmp(e);
  ir_ll_ins(e, "%%t%d = bitcast %s %s to %s", n, lp, VAL(e, p), want_ptr);
  return tname(e, n);
}

static void ptr_type_text(IrEmit *e, IrType elem, int space, char *out, size_t n) {
  int as = space == IR_SPACE_GLOBAL ? 1 : space == IR_SPACE_SHARED ? 3 : space == IR_SPACE_LOCAL ? 5
           : space == IR_SPACE_CONST ? 4 : 0;
  if (as) snprintf(out, n, "%s addrspace(%d)*", LT(e, elem), as);
  else snprintf(out, n, "%s*", LT(e, elem));
}

/* ld/st through inline PTX: ordered, cache-hinted or shared_cluster accesses. */
static void mem_asm(IrEmit *e, IrRef v, int store, IrRef p, IrType t, IrRef val) {
  const int64_t *imm = IM(e, v);
  int order = (int)imm[0], scope = (int)imm[1], cache = (int)imm[2];
  const IrTypeRec *tr = REC(e, t);
  int n = tr->kind == IR_TK_VEC ? (int)tr->len : 1;
  IrType et = tr->kind == IR_TK_VEC ? tr->elem : t;
  Reg r = reg_of(e, et);
  int space = REC(e, TY(e, p))->space;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "%s", store ? "st" : "ld");
  if (order == IR_ORDER_VOLATILE) asm_text(&as, ".volatile");
  else if (order != IR_ORDER_WEAK) asm_text(&as, ".%s.%s", ir_imm_name('O', order), ir_imm_name('S', scope));
  asm_text(&as, "%s", ptx_space(space));
  if (cache) asm_text(&as, ".%s", ir_imm_name('C', cache));
  if (n > 1) asm_text(&as, ".v%d", n);
  asm_text(&as, ".%s ", r.ptx);
  if (store) {
    asm_text(&as, "[$0], ");
    asm_regs(&as, 1, n);
    asm_text(&as, ";");
    asm_addr(e, &as, p);
    for (int i = 0; i < n; i++) {
      const char *x = VAL(e, val);
      char xs[80];
      keep(xs, sizeof xs, x);
      if (n > 1) {
        keep(xs, sizeof xs, newtmp(e));
        ir_ll_ins(e, "%s = extractelement %s %s, i32 %d", xs, LT(e, t), VAL(e, val), i);
      }
      char rv[80];
      keep(rv, sizeof rv, to_reg(e, r, et, xs));
      ir_asm_in(e, &as, r.letter, r.ll, rv);
    }
    asm_call(e, &as, NULL, "void", 1 | 4);
    return;
  }
  asm_regs(&as, 0, n);
  asm_text(&as, ", [$%d];", n);
  for (int i = 0; i < n; i++) asm_out(&as, r.letter);
  asm_addr(e, &as, p);
  char res[32], ret[1024];
  keep(res, sizeof res, newtmp(e));
  if (n == 1) {
    snprintf(ret, sizeof ret, "%s", r.ll);
    asm_call(e, &as, res, ret, 1 | 4);
    from_reg(e, r, et, res, def(e, v));
    return;
  }
  size_t len = (size_t)snprintf(ret, sizeof ret, "{");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(ret + len, sizeof ret - len, "%s%s", i ? ", " : "", r.ll);
  snprintf(ret + len, sizeof ret - len, "}");
  asm_call(e, &as, res, ret, 1 | 4);
  char acc[32] = "undef";
  for (int i = 0; i < n; i++) {
    char x[32], y[32];
    keep(x, sizeof x, newtmp(e));
    ir_ll_ins(e, "%s = extractvalue %s %s, %d", x, ret, res, i);
    keep(y, sizeof y, newtmp(e));
    from_reg(e, r, et, x, y);
    const char *dst = i == n - 1 ? def(e, v) : newtmp(e);
    char d[32];
    keep(d, sizeof d, dst);
    ir_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, LT(e, t), acc, LT(e, et), y, i);
    keep(acc, sizeof acc, d);
  }
}

static void emit_load(IrEmit *e, IrRef v) {
  IrRef p = A(e, v)[0];
  IrType t = TY(e, v);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 0, p, t, 0);
    return;
  }
  char pt[256], ps[80];
  ptr_type_text(e, t, space, pt, sizeof pt);
  keep(ps, sizeof ps, ptr_as(e, p, pt));
  ir_ll_ins(e, "%s = load %s%s, %s %s, align %u", def(e, v), imm[0] == IR_ORDER_VOLATILE ? "volatile " : "",
            LT(e, t), pt, ps, REC(e, TY(e, p))->align);
}

static void emit_store(IrEmit *e, IrRef v) {
  IrRef p = A(e, v)[0], x = A(e, v)[1];
  IrType t = TY(e, x);
  const int64_t *imm = IM(e, v);
  int space = REC(e, TY(e, p))->space;
  if ((imm[0] != IR_ORDER_WEAK && imm[0] != IR_ORDER_VOLATILE) || imm[2] || space == IR_SPACE_SHARED_CLUSTER) {
    mem_asm(e, v, 1, p, t, x);
    return;
  }
  char pt[256], ps[80];
  ptr_type_text(e, t, space, pt, sizeof pt);
  keep(ps, sizeof ps, ptr_as(e, p, pt));
  ir_ll_ins(e, "store %s%s %s, %s %s, align %u", imm[0] == IR_ORDER_VOLATILE ? "volatile " : "", LT(e, t),
            VAL(e, x), pt, ps, REC(e, TY(e, p))->align);
}

static void emit_gep(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType pt = TY(e, a[0]);
  const char *lp = LT(e, pt);
  if (strcmp(lp, LT(e, TY(e, v))) != 0) {
    ir_ll_fail(e, v, "gep changes the LLVM pointer type");
    return;
  }
  char p[80];
  keep(p, sizeof p, VAL(e, a[0]));
  ir_ll_ins(e, "%s = getelementptr %s, %s %s, %s %s", def(e, v), LT(e, REC(e, pt)->elem), lp, p, LT(e, TY(e, a[1])),
            VAL(e, a[1]));
}

/* The address of element idx (text, with its LLVM type) of a variable. */
static void var_slot(IrEmit *e, uint32_t var, const char *idx_type, const char *idx, char *out, size_t n) {
  const IrVarInfo *vi = &e->f->vars[var];
  if (vi->count == 1 && !vi->dynamic) {
    snprintf(out, n, "%%var%u", var);
    return;
  }
  const char *t = newtmp(e);
  snprintf(out, n, "%s", t);
  ir_ll_ins(e, "%s = getelementptr [%d x %s], [%d x %s]* %%var%u, i32 0, %s %s", out, vi->count, LT(e, vi->type),
            vi->count, LT(e, vi->type), var, idx_type, idx);
}

static void emit_var(IrEmit *e, IrRef v) {
  const IrInst *in = I(e, v);
  const int64_t *imm = IM(e, v);
  const IrRef *a = A(e, v);
  uint32_t var = (uint32_t)imm[0];
  const IrVarInfo *vi = &e->f->vars[var];
  const char *T = LT(e, vi->type);
  unsigned al = REC(e, vi->type)->natural;
  char slot[64], idx[80];
  int dyn = in->op == IR_OP_VLOADX || in->op == IR_OP_VSTOREX;
  if (dyn) {
    keep(idx, sizeof idx, VAL(e, a[0]));
    var_slot(e, var, LT(e, TY(e, a[0])), idx, slot, sizeof slot);
  } else {
    snprintf(idx, sizeof idx, "%lld", (long long)imm[1]);
    var_slot(e, var, "i32", idx, slot, sizeof slot);
  }
  if (in->op == IR_OP_VLOAD || in->op == IR_OP_VLOADX)
    ir_ll_ins(e, "%s = load %s, %s* %s, align %u", def(e, v), T, T, slot, al);
  else ir_ll_ins(e, "store %s %s, %s* %s, align %u", T, VAL(e, a[in->nargs - 1]), T, slot, al);
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

static void emit_atom(IrEmit *e, IrRef v, int cas) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  int op = cas ? -1 : (int)imm[0];
  int order = (int)imm[cas ? 0 : 1], scope = (int)imm[cas ? 1 : 2];
  IrType t = TY(e, v);
  Reg r = reg_of(e, t);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "atom");
  if (order != IR_ORDER_WEAK) asm_text(&as, ".%s", ir_imm_name('O', order));
  if (order != IR_ORDER_WEAK || scope != IR_SCOPE_GPU) asm_text(&as, ".%s", ir_imm_name('S', scope));
  asm_text(&as, "%s", ptx_space(REC(e, TY(e, a[0]))->space));
  static const char *const opn[] = {"add", "min", "max", "min", "max", "inc", "dec", "and", "or", "xor", "exch"};
  if (cas) asm_text(&as, ".cas.%s $0, [$1], $2, $3;", t == IR_T_I64 ? "b64" : "b32");
  else asm_text(&as, ".%s.%s $0, [$1], $2;", opn[op], atom_type(t, op));
  asm_out(&as, r.letter);
  asm_addr(e, &as, a[0]);
  for (int i = 1; i < I(e, v)->nargs; i++) ir_asm_in(e, &as, r.letter, r.ll, VAL(e, a[i]));
  asm_call(e, &as, def(e, v), r.ll, 1 | 4);
}

/* --- special registers, synchronisation, warp ops ---------------------------------------------------------------- */
static void emit_sreg(IrEmit *e, IrRef v) {
  const IrSregInfo *s = &ir_sreg_info[IM(e, v)[0]];
  if (s->intr[0]) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", s->intr);
    fn_decl(e, name, "i32", "");
    ir_ll_ins(e, "%s = call i32 @%s()", def(e, v), name);
    return;
  }
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "mov.u32 $0, %s;", s->reg);
  asm_out(&as, 'r');
  asm_call(e, &as, def(e, v), "i32", 0);
}

static void emit_timer(IrEmit *e, IrRef v) {
  const IrTimerInfo *t = &ir_timer_info[IM(e, v)[0]];
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "mov.u%d $0, %s;", t->bits, t->reg);
  asm_out(&as, t->bits == 64 ? 'l' : 'r');
  asm_call(e, &as, def(e, v), t->bits == 64 ? "i64" : "i32", 1);
}

static void emit_call0(IrEmit *e, IrRef v) {
  const char *name = ir_op_info[I(e, v)->op].ll;
  fn_decl(e, name, "void", "");
  int conv = (ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) != 0;
  if (conv) e->uses_convergent = 1;
  ir_ll_ins(e, "call void @%s()%s", name, conv ? " #0" : "");
}

static void emit_barnamed(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  int n = I(e, v)->nargs;
  asm_text(&as, "bar.%s $0%s;", IM(e, v)[0] == IR_BAR_ARRIVE ? "arrive" : "sync", n > 1 ? ", $1" : "");
  for (int i = 0; i < n; i++) ir_asm_in(e, &as, 'r', "i32", VAL(e, a[i]));
  asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_syncwarp(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "bar.warp.sync $0;");
  ir_asm_in(e, &as, 'r', "i32", VAL(e, A(e, v)[0]));
  asm_call(e, &as, NULL, "void", 1 | 2 | 4);
}

static void emit_fence(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "fence.%s.%s;", ir_imm_name('Y', IM(e, v)[0]), ir_imm_name('S', IM(e, v)[1]));
  asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_shfl(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  int width = IM(e, v)[1] ? (int)IM(e, v)[1] : 32;
  int c = ((32 - width) << 8) | (mode == IR_SHFL_UP ? 0 : 0x1f);
  IrType t = TY(e, v);
  char name[64], m[80], x[80];
  snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", ir_imm_name('H', mode), t == IR_T_F32 ? "f32" : "i32");
  fn_decl(e, name, LT(e, t), t == IR_T_F32 ? "i32, float, i32, i32" : "i32, i32, i32, i32");
  keep(m, sizeof m, VAL(e, a[0]));
  keep(x, sizeof x, VAL(e, a[1]));
  e->uses_convergent = 1;
  ir_ll_ins(e, "%s = call %s @%s(i32 %s, %s %s, i32 %s, i32 %d) #0", def(e, v), LT(e, t), name, m, LT(e, t), x,
            VAL(e, a[2]), c);
}

static void emit_vote(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int mode = (int)IM(e, v)[0];
  const char *ret = mode == IR_VOTE_BALLOT ? "i32" : "i1";
  char name[64], m[80];
  snprintf(name, sizeof name, "llvm.nvvm.vote.%s.sync", ir_imm_name('V', mode));
  fn_decl(e, name, ret, "i32, i1");
  keep(m, sizeof m, VAL(e, a[0]));
  e->uses_convergent = 1;
  ir_ll_ins(e, "%s = call %s @%s(i32 %s, i1 %s) #0", def(e, v), ret, name, m, VAL(e, a[1]));
}

static void emit_redux(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int op = (int)IM(e, v)[0];
  static const char *const opn[] = {"add.s32", "min.s32", "max.s32", "min.u32", "max.u32", "", "", "and.b32",
                                    "or.b32", "xor.b32", ""};
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "redux.sync.%s $0, $1, $2;", opn[op]);
  asm_out(&as, 'r');
  ir_asm_in(e, &as, 'r', "i32", VAL(e, a[1]));
  ir_asm_in(e, &as, 'r', "i32", VAL(e, a[0]));
  asm_call(e, &as, def(e, v), "i32", 2);
}

/* --- printf, user asm, calls ------------------------------------------------------------------------------------- */
static void emit_printf(IrEmit *e, IrRef v) {
  IrFunc *f = e->f;
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  const char *fmt = ir_str_get(e->m, (uint32_t)IM(e, v)[0]);
  size_t len = strlen(fmt) + 1;
  int sid = e->strings++;
  cl_buf_printf(&e->globals, "@.str%d = private unnamed_addr addrspace(1) constant [%zu x i8] c\"", sid, len);
  for (const char *p = fmt; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\' || c < 32 || c >= 127) cl_buf_printf(&e->globals, "\\%02X", c);
    else cl_buf_putc(&e->globals, (char)c);
  }
  cl_buf_puts(&e->globals, "\\00\", align 1\n");
  fn_decl(e, "vprintf", "i32", "i8*, i8*");
  char g[32], s[32];
  keep(g, sizeof g, newtmp(e));
  ir_ll_ins(e, "%s = getelementptr [%zu x i8], [%zu x i8] addrspace(1)* @.str%d, i64 0, i64 0", g, len, len, sid);
  keep(s, sizeof s, newtmp(e));
  ir_ll_ins(e, "%s = addrspacecast i8 addrspace(1)* %s to i8*", s, g);
  if (!in->nargs) {
    ir_ll_ins(e, "%s = call i32 @vprintf(i8* %s, i8* null)", newtmp(e), s);
    return;
  }
  /* the arguments, promoted as C varargs are, in a local struct */
  ClBuf st = {0};
  cl_buf_putc(&st, '{');
  for (int i = 0; i < in->nargs; i++) {
    IrType t = TY(e, a[i]);
    const char *pt = (t == IR_T_F16 || t == IR_T_F32 || t == IR_T_F64) ? "double"
                     : (REC(e, t)->kind == IR_TK_PTR || t == IR_T_I64) ? "i64"
                                                                       : "i32";
    cl_buf_printf(&st, "%s%s", i ? ", " : "", pt);
  }
  cl_buf_putc(&st, '}');
  const char *S = cl_buf_str(&st);
  int buf = ir_ll_tmp(e);
  cl_buf_printf(&e->entry, "  %%t%d = alloca %s, align 8\n", buf, S);
  for (int i = 0; i < in->nargs; i++) {
    IrType t = TY(e, a[i]);
    char x[80], slot[32];
    keep(x, sizeof x, VAL(e, a[i]));
    const char *val = x;
    char w[32];
    const char *pt = "i32";
    if (t == IR_T_F16 || t == IR_T_F32) {
      keep(w, sizeof w, newtmp(e));
      ir_ll_ins(e, "%s = fpext %s %s to double", w, LT(e, t), x);
      val = w;
      pt = "double";
    } else if (t == IR_T_F64) {
      pt = "double";
    } else if (REC(e, t)->kind == IR_TK_PTR) {
      keep(w, sizeof w, newtmp(e));
      if (REC(e, t)->space == IR_SPACE_SHARED_CLUSTER) ir_ll_ins(e, "%s = zext i32 %s to i64", w, x);
      else ir_ll_ins(e, "%s = ptrtoint %s %s to i64", w, LT(e, t), x);
      val = w;
      pt = "i64";
    } else if (t == IR_T_I64) {
      pt = "i64";
    } else if (t != IR_T_I32) {
      keep(w, sizeof w, newtmp(e));
      ir_ll_ins(e, "%s = %s %s %s to i32", w, t == IR_T_I1 ? "zext" : "sext", LT(e, t), x);
      val = w;
    }
    keep(slot, sizeof slot, newtmp(e));
    ir_ll_ins(e, "%s = getelementptr %s, %s* %%t%d, i32 0, i32 %d", slot, S, S, buf, i);
    ir_ll_ins(e, "store %s %s, %s* %s, align %d", pt, val, pt, slot, strcmp(pt, "i32") ? 8 : 4);
  }
  char p[32];
  keep(p, sizeof p, newtmp(e));
  ir_ll_ins(e, "%s = bitcast %s* %%t%d to i8*", p, S, buf);
  ir_ll_ins(e, "%s = call i32 @vprintf(i8* %s, i8* %s)", newtmp(e), s, p);
  cl_buf_free(&st);
  (void)f;
}

static void emit_user_asm(IrEmit *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  snprintf(as.text, sizeof as.text, "%s", ir_str_get(e->m, (uint32_t)imm[0]));
  snprintf(as.cons, sizeof as.cons, "%s", ir_str_get(e->m, (uint32_t)imm[1]));
  for (int i = 0; i < in->nargs; i++) {
    size_t len = strlen(as.args);
    snprintf(as.args + len, sizeof as.args - len, "%s%s %s", i ? ", " : "", LT(e, TY(e, a[i])), VAL(e, a[i]));
  }
  int fl = (imm[2] & IR_FLAG_SIDEEFFECT ? 1 : 0) | (imm[2] & IR_FLAG_CONVERGENT ? 2 : 0) |
           ((imm[2] & IR_FLAG_MEMORY) && !strstr(as.cons, "~{memory}") ? 4 : 0);
  int has = in->type && in->type != IR_T_VOID;
  asm_call(e, &as, has ? def(e, v) : NULL, has ? LT(e, in->type) : "void", fl);
}

static void emit_call(IrEmit *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  IrFunc *g = ir_func_at(e->m, (int)IM(e, v)[0]);
  ClBuf args = {0};
  for (int i = 0; i < in->nargs; i++)
    cl_buf_printf(&args, "%s%s %s", i ? ", " : "", LT(e, TY(e, a[i])), VAL(e, a[i]));
  if (g->ret == IR_T_VOID) ir_ll_ins(e, "call void @%s(%s)", ir_func_name(g), cl_buf_str(&args));
  else ir_ll_ins(e, "%s = call %s @%s(%s)", def(e, v), LT(e, g->ret), ir_func_name(g), cl_buf_str(&args));
  cl_buf_free(&args);
}

/* --- aggregates ---------------------------------------------------------------------------------------------------- */
static void emit_extract(IrEmit *e, IrRef v) {
  IrRef x = resolve(e, A(e, v)[0]);
  IrType t = TY(e, x);
  long long i = (long long)IM(e, v)[0];
  if (REC(e, t)->kind == IR_TK_STRUCT && I(e, x)->op == IR_OP_PACK) { /* the operand it was made of */
    e->alias[v] = A(e, x)[i];
    return;
  }
  if (e->vflags[x] & IR_EV_SPLIT) {
    e->field_src[v] = x;
    e->field_idx[v] = (uint32_t)i;
    return;
  }
  if (REC(e, t)->kind == IR_TK_VEC) ir_ll_ins(e, "%s = extractelement %s %s, i32 %lld", def(e, v), LT(e, t), VAL(e, x), i);
  else ir_ll_ins(e, "%s = extractvalue %s %s, %lld", def(e, v), LT(e, t), VAL(e, x), i);
}

static void emit_insert(IrEmit *e, IrRef v) {
  IrRef x = A(e, v)[0], y = A(e, v)[1];
  IrType t = TY(e, x);
  long long i = (long long)IM(e, v)[0];
  char xs[80];
  keep(xs, sizeof xs, VAL(e, x));
  if (REC(e, t)->kind == IR_TK_VEC)
    ir_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %lld", def(e, v), LT(e, t), xs, LT(e, TY(e, y)), VAL(e, y), i);
  else ir_ll_ins(e, "%s = insertvalue %s %s, %s %s, %lld", def(e, v), LT(e, t), xs, LT(e, TY(e, y)), VAL(e, y), i);
}

static void emit_pack(IrEmit *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  IrType t = in->type;
  int vec = REC(e, t)->kind == IR_TK_VEC;
  if (!vec && !(e->vflags[v] & IR_EV_NEED_AGG)) return; /* only taken apart again */
  char acc[32] = "undef";
  for (int i = 0; i < in->nargs; i++) {
    char d[32], x[80];
    keep(d, sizeof d, i == in->nargs - 1 ? def(e, v) : newtmp(e));
    keep(x, sizeof x, VAL(e, a[i]));
    if (vec) ir_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, LT(e, t), acc, LT(e, TY(e, a[i])), x, i);
    else ir_ll_ins(e, "%s = insertvalue %s %s, %s %s, %d", d, LT(e, t), acc, LT(e, TY(e, a[i])), x, i);
    keep(acc, sizeof acc, d);
  }
}

/* --- tensor cores and asynchronous copies ---------------------------------------------------------------------------- */
static char reg_letter(IrType t) { return t == IR_T_F32 ? 'f' : t == IR_T_F64 ? 'd' : 'r'; }
static const char *reg_ll(IrType t) { return t == IR_T_F32 ? "float" : t == IR_T_F64 ? "double" : "i32"; }

static void emit_mma(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  IrMmaFrag fr;
  if (!ir_mma_lookup((int)imm[0], (int)imm[1], (int)imm[2], (int)imm[3], (int)imm[4], &fr)) {
    ir_ll_fail(e, v, "mma combination not in the table");
    return;
  }
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  const char *const *tn = ir_mma_type_names;
  asm_text(&as, "mma.sync.aligned.%s.row.col%s.%s.%s.%s.%s ", ir_imm_name('M', imm[0]),
           (imm[5] & IR_FLAG_SAT) ? ".satfinite" : "", tn[imm[4]], tn[imm[1]], tn[imm[2]], tn[imm[3]]);
  if (imm[1] == IR_MT_B1) { /* b1: the bit operation follows the types */
    as.text[strlen(as.text) - 1] = 0;
    asm_text(&as, ".and.popc ");
  }
  int n[4] = {fr.d_regs, fr.a_regs, fr.b_regs, fr.c_regs};
  int at = 0;
  for (int i = 0; i < 4; i++) {
    asm_text(&as, "%s", i ? ", " : "");
    asm_regs_b(&as, at, n[i], 1);
    at += n[i];
  }
  asm_text(&as, ";");
  for (int i = 0; i < fr.d_regs; i++) asm_out(&as, reg_letter(fr.d_reg));
  IrType kinds[3] = {fr.ab_reg, fr.ab_reg, fr.c_reg};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n[k + 1]; i++) {
      char x[80];
      keep(x, sizeof x, frag_reg(e, a[k], i, n[k + 1]));
      ir_asm_in(e, &as, reg_letter(kinds[k]), reg_ll(kinds[k]), x);
    }
  asm_call(e, &as, def(e, v), LT(e, TY(e, v)), 2);
  split(e, v);
}

static void emit_ldstmatrix(IrEmit *e, IrRef v, int store) {
  const IrRef *a = A(e, v);
  int n = (int)IM(e, v)[0];
  int trans = (IM(e, v)[1] & IR_FLAG_TRANS) != 0;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "%s.sync.aligned.m8n8.x%d%s.shared.b16 ", store ? "stmatrix" : "ldmatrix", n, trans ? ".trans" : "");
  if (store) {
    asm_text(&as, "[$0], ");
    asm_regs_b(&as, 1, n, 1);
    asm_text(&as, ";");
    asm_addr(e, &as, a[0]);
    for (int i = 0; i < n; i++) {
      char x[80];
      keep(x, sizeof x, frag_reg(e, a[1], i, n));
      ir_asm_in(e, &as, 'r', "i32", x);
    }
    asm_call(e, &as, NULL, "void", 1 | 2 | 4);
    return;
  }
  asm_regs_b(&as, 0, n, 1);
  asm_text(&as, ", [$%d];", n);
  for (int i = 0; i < n; i++) asm_out(&as, 'r');
  asm_addr(e, &as, a[0]);
  asm_call(e, &as, def(e, v), LT(e, TY(e, v)), 1 | 2 | 4);
  split(e, v);
}

static void emit_cpasync(IrEmit *e, IrRef v) {
  const IrRef *a = A(e, v);
  int bytes = (int)IM(e, v)[0];
  int cg = IM(e, v)[1] == IR_CACHE_CG;
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "cp.async.%s.shared.global [$0], [$1], %d%s;", cg ? "cg" : "ca", bytes, I(e, v)->nargs > 2 ? ", $2" : "");
  asm_addr(e, &as, a[0]);
  asm_addr(e, &as, a[1]);
  if (I(e, v)->nargs > 2) ir_asm_in(e, &as, 'r', "i32", VAL(e, a[2]));
  asm_call(e, &as, NULL, "void", 1 | 4);
}

static void emit_asm0(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "%s", ir_op_info[I(e, v)->op].ll);
  asm_call(e, &as, NULL, "void", 1 | 4 | ((ir_op_info[I(e, v)->op].flags & IR_OPF_CONV) ? 2 : 0));
}

static void emit_cpwait(IrEmit *e, IrRef v) {
  IrAsm as = {{0}, {0}, {0}, 0, 0};
  asm_text(&as, "cp.async.wait_group %lld;", (long long)IM(e, v)[0]);
  asm_call(e, &as, NULL, "void", 1 | 4);
}

/* --- dispatch ---------------------------------------------------------------------------------------------------------- */
void ir_emit_op(IrEmit *e, IrRef v) {
  const IrOpInfo *oi = &ir_op_info[I(e, v)->op];
  switch ((IrLow)oi->low) {
    case IR_LOW_NONE: case IR_LOW_CONST: case IR_LOW_SMEM: case IR_LOW_DSMEM: break;
    case IR_LOW_BIN: emit_bin(e, v, oi->ll, 1); break;
    case IR_LOW_IBIN: emit_bin(e, v, oi->ll, 0); break;
    case IR_LOW_NEG: emit_neg(e, v); break;
    case IR_LOW_MULHI: emit_mulhi(e, v, oi->ll); break;
    case IR_LOW_FDIV: emit_fdiv(e, v); break;
    case IR_LOW_MINMAX: emit_minmax(e, v, oi->ll); break;
    case IR_LOW_FMINMAX: emit_fminmax(e, v, oi->ll); break;
    case IR_LOW_ABS: emit_abs(e, v); break;
    case IR_LOW_FMA: emit_fma(e, v); break;
    case IR_LOW_ICMP: {
      const IrRef *a = A(e, v);
      char x[80];
      keep(x, sizeof x, VAL(e, a[0]));
      ir_ll_ins(e, "%s = icmp %s %s %s, %s", def(e, v), ir_imm_name('P', IM(e, v)[0]), LT(e, TY(e, a[0])), x, VAL(e, a[1]));
      break;
    }
    case IR_LOW_FCMP: {
      const IrRef *a = A(e, v);
      char x[80];
      keep(x, sizeof x, VAL(e, a[0]));
      ir_ll_ins(e, "%s = fcmp %s %s %s, %s", def(e, v), ir_imm_name('Q', IM(e, v)[0]), LT(e, TY(e, a[0])), x, VAL(e, a[1]));
      break;
    }
    case IR_LOW_SELECT: {
      const IrRef *a = A(e, v);
      char c[80], x[80];
      keep(c, sizeof c, VAL(e, a[0]));
      keep(x, sizeof x, VAL(e, a[1]));
      ir_ll_ins(e, "%s = select %s %s, %s %s, %s %s", def(e, v), LT(e, TY(e, a[0])), c, LT(e, TY(e, a[1])), x,
                LT(e, TY(e, a[2])), VAL(e, a[2]));
      break;
    }
    case IR_LOW_CVT: emit_cvt(e, v); break;
    case IR_LOW_BITCAST: emit_cast(e, v, "bitcast"); break;
    case IR_LOW_PTRTOINT: emit_ptrtoint(e, v); break;
    case IR_LOW_INTTOPTR: emit_inttoptr(e, v); break;
    case IR_LOW_PTRCAST: emit_ptrcast(e, v); break;
    case IR_LOW_NOT: emit_not(e, v); break;
    case IR_LOW_BITCOUNT: emit_bitcount(e, v); break;
    case IR_LOW_PRMT: emit_prmt(e, v); break;
    case IR_LOW_MATH: emit_math(e, v); break;
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
    case IR_LOW_PRINTF: emit_printf(e, v); break;
    case IR_LOW_ASM: emit_user_asm(e, v); break;
    case IR_LOW_CALL: emit_call(e, v); break;
    case IR_LOW_EXTRACT: emit_extract(e, v); break;
    case IR_LOW_INSERT: emit_insert(e, v); break;
    case IR_LOW_PACK: emit_pack(e, v); break;
    case IR_LOW_MMA: emit_mma(e, v); break;
    case IR_LOW_LDMATRIX: emit_ldstmatrix(e, v, 0); break;
    case IR_LOW_STMATRIX: emit_ldstmatrix(e, v, 1); break;
    case IR_LOW_CPASYNC: emit_cpasync(e, v); break;
    case IR_LOW_ASM0: emit_asm0(e, v); break;
    case IR_LOW_CPWAIT: emit_cpwait(e, v); break;
  }
}
