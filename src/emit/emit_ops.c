/* emit_ops.c: the lowering of the value ops (the low column of ir_ops.h):
 * arithmetic, math, conversions and casts, aggregates, calls, printf and user
 * inline PTX; the memory, synchronisation and tensor-core families are in
 * emit_mem.c.
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

#include "emit_impl.h"

/* --- arithmetic ------------------------------------------------------------------------------------------------ */
static void emit_bin(Em *e, IrRef v, const char *mnem, int float_prefix) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, a[0]);
  int fl = float_prefix && ir_type_is_float(e->m, ir_type_scalar_of(e->m, t));
  char x[80];
  em_ll_ins(e, "%s = %s%s %s %s, %s", em_def(e, v), fl ? "f" : "", mnem, LT(e, t), em_keep(x, sizeof x, VAL(e, a[0])),
            VAL(e, a[1]));
}

static void emit_neg(Em *e, IrRef v) {
  IrType t = TY(e, v);
  int fl = ir_type_is_float(e->m, ir_type_scalar_of(e->m, t));
  char zero[2048];
  const char *z = fl ? (ir_type_scalar_of(e->m, t) == IR_T_F16 ? "0xH8000" : "0x8000000000000000") : "0";
  em_splat(e, t, z, zero, sizeof zero);
  em_ll_ins(e, "%s = %s %s %s, %s", em_def(e, v), fl ? "fsub" : "sub", LT(e, t), zero, VAL(e, A(e, v)[0]));
}

static void emit_not(Em *e, IrRef v) {
  IrType t = TY(e, v);
  char ones[2048];
  em_splat(e, t, ir_type_scalar_of(e->m, t) == IR_T_I1 ? "true" : "-1", ones, sizeof ones);
  em_ll_ins(e, "%s = xor %s %s, %s", em_def(e, v), LT(e, t), VAL(e, A(e, v)[0]), ones);
}

/* llvm.nvvm.mulhi.{i,ui,ll,ull}: mul.hi.{s,u}{32,64} */
static void emit_mulhi(Em *e, IrRef v, const char *ext) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const char *T = LT(e, t);
  int uns = ext[0] == 'z', wide = t == IR_T_I64;
  char name[48], params[32], x[80];
  snprintf(name, sizeof name, "llvm.nvvm.mulhi.%s%s", uns ? "u" : "", wide ? "ll" : "i");
  snprintf(params, sizeof params, "%s, %s", T, T);
  em_declare(e, name, T, params);
  em_keep(x, sizeof x, VAL(e, a[0]));
  em_ll_ins(e, "%s = call %s @%s(%s %s, %s %s)", em_def(e, v), T, name, T, x, T, VAL(e, a[1]));
}

static void emit_minmax(Em *e, IrRef v, const char *pred) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const IrTypeRec *r = REC(e, t);
  char c[32], x[80], y[80];
  em_keep(c, sizeof c, em_tmp(e));
  em_keep(x, sizeof x, VAL(e, a[0]));
  em_keep(y, sizeof y, VAL(e, a[1]));
  em_ll_ins(e, "%s = icmp %s %s %s, %s", c, pred, LT(e, t), x, y);
  if (r->kind == IR_TK_VEC)
    em_ll_ins(e, "%s = select <%u x i1> %s, %s %s, %s %s", em_def(e, v), r->len, c, LT(e, t), x, LT(e, t), y);
  else em_ll_ins(e, "%s = select i1 %s, %s %s, %s %s", em_def(e, v), c, LT(e, t), x, LT(e, t), y);
}

static void emit_fminmax(Em *e, IrRef v, const char *which) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  char name[64], params[64], x[80];
  int f64 = t == IR_T_F64;
  snprintf(name, sizeof name, "llvm.nvvm.f%s.%s%s", which, (e->ftz && !f64) ? "ftz." : "", f64 ? "d" : "f");
  snprintf(params, sizeof params, "%s, %s", LT(e, t), LT(e, t));
  em_declare(e, name, LT(e, t), params);
  em_ll_ins(e, "%s = call %s @%s(%s %s, %s %s)", em_def(e, v), LT(e, t), name, LT(e, t), em_keep(x, sizeof x, VAL(e, a[0])),
            LT(e, t), VAL(e, a[1]));
}

static void emit_abs(Em *e, IrRef v) {
  IrType t = TY(e, v);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80];
  em_keep(xs, sizeof xs, x);
  if (ir_type_is_float(e->m, t)) {
    char name[32];
    snprintf(name, sizeof name, "llvm.fabs.%s", em_ll_mangle(e, t));
    em_declare(e, name, LT(e, t), LT(e, t));
    em_ll_ins(e, "%s = call %s @%s(%s %s)", em_def(e, v), LT(e, t), name, LT(e, t), xs);
    return;
  }
  char c[32], n[32];
  em_keep(c, sizeof c, em_tmp(e));
  em_keep(n, sizeof n, em_tmp(e));
  em_ll_ins(e, "%s = icmp slt %s %s, 0", c, LT(e, t), xs);
  em_ll_ins(e, "%s = sub %s 0, %s", n, LT(e, t), xs);
  em_ll_ins(e, "%s = select i1 %s, %s %s, %s %s", em_def(e, v), c, LT(e, t), n, LT(e, t), xs);
}

static void emit_fma(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  const char *T = LT(e, t);
  char name[48], params[256], x[80], y[80];
  snprintf(name, sizeof name, "llvm.fma.%s", em_ll_mangle(e, t));
  snprintf(params, sizeof params, "%s, %s, %s", T, T, T);
  em_declare(e, name, T, params);
  em_keep(x, sizeof x, VAL(e, a[0]));
  em_keep(y, sizeof y, VAL(e, a[1]));
  em_ll_ins(e, "%s = call %s @%s(%s %s, %s %s, %s %s)", em_def(e, v), T, name, T, x, T, y, T, VAL(e, a[2]));
}

static void emit_fdiv(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, v);
  char x[80];
  em_keep(x, sizeof x, VAL(e, a[0]));
  if (((IM(e, v)[0] & IR_FLAG_FAST) || e->fast) && t == IR_T_F32) {
    EmAsm as = {{0}, {0}, {0}, 0, 0};
    em_asm_text(&as, "div.approx%s.f32 $0, $1, $2;", e->ftz ? ".ftz" : "");
    em_asm_out(&as, 'f');
    em_asm_in(e, &as, 'f', "float", x);
    em_asm_in(e, &as, 'f', "float", VAL(e, a[1]));
    em_asm_call(e, &as, em_def(e, v), "float", 0);
    return;
  }
  em_ll_ins(e, "%s = fdiv %s %s, %s", em_def(e, v), LT(e, t), x, VAL(e, a[1]));
}

static void emit_math(Em *e, IrRef v) {
  IrType t = TY(e, v);
  const char *ll = ir_op_info[I(e, v)->op].ll;
  const char *bar = strchr(ll, '|');
  char base[32], fast[64];
  snprintf(base, sizeof base, "%.*s", (int)(bar - ll), ll);
  snprintf(fast, sizeof fast, "%s", bar + 1);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80];
  em_keep(xs, sizeof xs, x);
  int want_fast = ((IM(e, v)[0] & IR_FLAG_FAST) || e->fast) && t == IR_T_F32 && fast[0];
  if (want_fast && strncmp(fast, "__nv_", 5) != 0) { /* a PTX approximation */
    EmAsm as = {{0}, {0}, {0}, 0, 0};
    char *f32 = strstr(fast, ".f32");
    int ftz = e->ftz && I(e, v)->op != IR_OP_TANH;
    if (f32) *f32 = 0;
    em_asm_text(&as, "%s%s.f32 $0, $1;", fast, ftz ? ".ftz" : "");
    em_asm_out(&as, 'f');
    em_asm_in(e, &as, 'f', "float", xs);
    em_asm_call(e, &as, em_def(e, v), "float", 0);
    return;
  }
  char name[80];
  if (want_fast) snprintf(name, sizeof name, "%s", fast);
  else if (!base[0]) { /* rcp: an IEEE division */
    em_ll_ins(e, "%s = fdiv %s %s, %s", em_def(e, v), LT(e, t), "1.0", xs);
    return;
  } else snprintf(name, sizeof name, "__nv_%s%s", base, t == IR_T_F32 ? "f" : "");
  em_declare(e, name, LT(e, t), LT(e, t));
  em_ll_ins(e, "%s = call %s @%s(%s %s)", em_def(e, v), LT(e, t), name, LT(e, t), xs);
}

static void emit_bitcount(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  IrType t = TY(e, a[0]);
  const char *T = LT(e, t);
  const char *base = ir_op_info[I(e, v)->op].ll;
  char name[48], params[32], x[80];
  snprintf(name, sizeof name, "%s.%s", base, T);
  int clz = I(e, v)->op == IR_OP_CLZ;
  snprintf(params, sizeof params, clz ? "%s, i1" : "%s", T);
  em_declare(e, name, T, params);
  em_keep(x, sizeof x, VAL(e, a[0]));
  int narrow = TY(e, v) != t; /* popc/clz of i64 give i32 */
  const char *dst = narrow ? em_tmp(e) : em_def(e, v);
  char d[32];
  em_keep(d, sizeof d, dst);
  em_ll_ins(e, "%s = call %s @%s(%s %s%s)", d, T, name, T, x, clz ? ", i1 false" : "");
  if (narrow) em_ll_ins(e, "%s = trunc %s %s to i32", em_def(e, v), T, d);
}

static void emit_prmt(Em *e, IrRef v) {
  const IrRef *a = A(e, v);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  em_asm_text(&as, "prmt.b32 $0, $1, $2, $3;");
  em_asm_out(&as, 'r');
  for (int i = 0; i < 3; i++) em_asm_in(e, &as, 'r', "i32", VAL(e, a[i]));
  em_asm_call(e, &as, em_def(e, v), "i32", 0);
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

static void cvt_asm(Em *e, IrRef v, const char *text, IrType from, IrType to) {
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  EmReg rf = em_asm_reg(e, from), rt = em_asm_reg(e, to);
  snprintf(as.text, sizeof as.text, "%s", text);
  em_asm_out(&as, rt.letter);
  em_asm_in(e, &as, rf.letter, rf.ll, em_asm_to_reg(e, rf, from, VAL(e, A(e, v)[0])));
  if (rt.conv || strcmp(rt.ll, LT(e, to)) != 0) {
    char r[32];
    em_keep(r, sizeof r, em_tmp(e));
    em_asm_call(e, &as, r, rt.ll, 0);
    em_asm_from_reg(e, rt, to, r, em_def(e, v));
  } else {
    em_asm_call(e, &as, em_def(e, v), rt.ll, 0);
  }
}

static void emit_cvt(Em *e, IrRef v) {
  const IrModule *m = e->m;
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  int rnd = (int)IM(e, v)[0], sat = (int)(IM(e, v)[1] & IR_FLAG_SAT), uns = I(e, v)->op == IR_OP_CVTU;
  int fb = REC(e, from)->bits, tb = REC(e, to)->bits;
  int fi = ir_type_is_int(m, from), ti = ir_type_is_int(m, to);
  const char *x = VAL(e, A(e, v)[0]);
  char xs[80], text[128];
  em_keep(xs, sizeof xs, x);
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
      em_keep(c1, sizeof c1, em_tmp(e));
      em_keep(s1, sizeof s1, em_tmp(e));
      em_ll_ins(e, "%s = icmp %s %s %s, %lld", c1, uns ? "ugt" : "sgt", T, xs, hi);
      em_ll_ins(e, "%s = select i1 %s, %s %lld, %s %s", s1, c1, T, hi, T, xs);
      if (!uns) {
        em_keep(c2, sizeof c2, em_tmp(e));
        em_keep(clamped, sizeof clamped, em_tmp(e));
        em_ll_ins(e, "%s = icmp slt %s %s, %lld", c2, T, s1, lo);
        em_ll_ins(e, "%s = select i1 %s, %s %lld, %s %s", clamped, c2, T, lo, T, s1);
      } else {
        em_keep(clamped, sizeof clamped, s1);
      }
      val = clamped;
    }
    const char *op = tb < fb ? "trunc" : (uns || fb == 1) ? "zext" : "sext";
    em_ll_ins(e, "%s = %s %s %s to %s", em_def(e, v), op, LT(e, from), val, LT(e, to));
    return;
  }
  if (fi) { /* int -> f16/f32/f64 */
    if (rnd == IR_ROUND_DEFAULT || rnd == IR_ROUND_RN) {
      em_ll_ins(e, "%s = %s %s %s to %s", em_def(e, v), uns ? "uitofp" : "sitofp", LT(e, from), xs, LT(e, to));
      return;
    }
    snprintf(text, sizeof text, "cvt%s.%s.%s $0, $1;", rname[rnd], ptx_num(to, 0), ptx_num(from, uns));
    cvt_asm(e, v, text, from, to);
    return;
  }
  if (ti) { /* float -> int: saturating like PTX */
    if (rnd == IR_ROUND_DEFAULT && from != IR_T_F16) {
      em_ll_ins(e, "%s = %s %s %s to %s", em_def(e, v), uns ? "fptoui" : "fptosi", LT(e, from), xs, LT(e, to));
      return;
    }
    snprintf(text, sizeof text, "cvt%s.%s.%s $0, $1;", rnd ? iname[rnd] : ".rzi", ptx_num(to, uns), ptx_num(from, 0));
    cvt_asm(e, v, text, from, to);
    return;
  }
  /* float -> float */
  if (from == IR_T_BF16) { /* exact: the bf16 bits are the top half of an f32 */
    char w[32], s[32];
    em_keep(w, sizeof w, em_tmp(e));
    em_keep(s, sizeof s, em_tmp(e));
    em_ll_ins(e, "%s = zext i16 %s to i32", w, xs);
    em_ll_ins(e, "%s = shl i32 %s, 16", s, w);
    em_ll_ins(e, "%s = bitcast i32 %s to float", em_def(e, v), s);
    return;
  }
  if (from == IR_T_TF32) {
    em_ll_ins(e, "%s = bitcast i32 %s to float", em_def(e, v), xs);
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
    em_ll_ins(e, "%s = %s %s %s to %s", em_def(e, v), narrowing ? "fptrunc" : "fpext", LT(e, from), xs, LT(e, to));
    return;
  }
  snprintf(text, sizeof text, "cvt%s%s.%s.%s $0, $1;", rnd ? rname[rnd] : ".rn", sat ? ".sat" : "", ptx_num(to, 0),
           ptx_num(from, 0));
  cvt_asm(e, v, text, from, to);
}

static void emit_cast(Em *e, IrRef v, const char *op) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  const char *lf = LT(e, from), *lt = LT(e, to);
  if (strcmp(lf, lt) == 0) { /* same LLVM type (bf16 <-> i16, an alignment-only cast): nothing to do */
    e->alias[v] = A(e, v)[0];
    return;
  }
  em_ll_ins(e, "%s = %s %s %s to %s", em_def(e, v), op, lf, VAL(e, A(e, v)[0]), lt);
}

static void emit_ptrcast(Em *e, IrRef v) {
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
    em_ll_ins(e, "%s = bitcast %s %s to %s", em_def(e, v), lf, VAL(e, A(e, v)[0]), lt);
    return;
  }
  /* change the element in the source space, then the space */
  char lm[512];
  em_ll_ptr(LT(e, rt->elem), rf->space, lm, sizeof lm);
  const char *src = VAL(e, A(e, v)[0]);
  char s[80];
  em_keep(s, sizeof s, src);
  if (strcmp(lm, lf) != 0) {
    em_keep(s, sizeof s, em_tmp(e));
    em_ll_ins(e, "%s = bitcast %s %s to %s", s, lf, VAL(e, A(e, v)[0]), lm);
  }
  em_ll_ins(e, "%s = addrspacecast %s %s to %s", em_def(e, v), lm, s, lt);
}

static void emit_inttoptr(Em *e, IrRef v) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  if (REC(e, to)->space == IR_SPACE_SHARED_CLUSTER) { /* a 32-bit address already */
    if (from == IR_T_I32) e->alias[v] = A(e, v)[0];
    else em_ll_ins(e, "%s = trunc i64 %s to i32", em_def(e, v), VAL(e, A(e, v)[0]));
    return;
  }
  emit_cast(e, v, "inttoptr");
}

static void emit_ptrtoint(Em *e, IrRef v) {
  IrType from = TY(e, A(e, v)[0]), to = TY(e, v);
  if (REC(e, from)->space == IR_SPACE_SHARED_CLUSTER) {
    if (to == IR_T_I32) e->alias[v] = A(e, v)[0];
    else em_ll_ins(e, "%s = zext i32 %s to i64", em_def(e, v), VAL(e, A(e, v)[0]));
    return;
  }
  emit_cast(e, v, "ptrtoint");
}

/* --- printf, user asm, calls ------------------------------------------------------------------------------------- */
static void emit_printf(Em *e, IrRef v) {
  const IrFunc *f = e->f;
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
  em_declare(e, "vprintf", "i32", "i8*, i8*");
  char g[32], s[32];
  em_keep(g, sizeof g, em_tmp(e));
  em_ll_ins(e, "%s = getelementptr [%zu x i8], [%zu x i8] addrspace(1)* @.str%d, i64 0, i64 0", g, len, len, sid);
  em_keep(s, sizeof s, em_tmp(e));
  em_ll_ins(e, "%s = addrspacecast i8 addrspace(1)* %s to i8*", s, g);
  if (!in->nargs) {
    em_ll_ins(e, "%s = call i32 @vprintf(i8* %s, i8* null)", em_tmp(e), s);
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
  int buf = em_ll_tmp(e);
  cl_buf_printf(&e->entry, "  %%t%d = alloca %s, align 8\n", buf, S);
  for (int i = 0; i < in->nargs; i++) {
    IrType t = TY(e, a[i]);
    char x[80], slot[32];
    em_keep(x, sizeof x, VAL(e, a[i]));
    const char *val = x;
    char w[32];
    const char *pt = "i32";
    if (t == IR_T_F16 || t == IR_T_F32) {
      em_keep(w, sizeof w, em_tmp(e));
      em_ll_ins(e, "%s = fpext %s %s to double", w, LT(e, t), x);
      val = w;
      pt = "double";
    } else if (t == IR_T_F64) {
      pt = "double";
    } else if (REC(e, t)->kind == IR_TK_PTR) {
      em_keep(w, sizeof w, em_tmp(e));
      if (REC(e, t)->space == IR_SPACE_SHARED_CLUSTER) em_ll_ins(e, "%s = zext i32 %s to i64", w, x);
      else em_ll_ins(e, "%s = ptrtoint %s %s to i64", w, LT(e, t), x);
      val = w;
      pt = "i64";
    } else if (t == IR_T_I64) {
      pt = "i64";
    } else if (t != IR_T_I32) {
      em_keep(w, sizeof w, em_tmp(e));
      em_ll_ins(e, "%s = %s %s %s to i32", w, t == IR_T_I1 ? "zext" : "sext", LT(e, t), x);
      val = w;
    }
    em_keep(slot, sizeof slot, em_tmp(e));
    em_ll_ins(e, "%s = getelementptr %s, %s* %%t%d, i32 0, i32 %d", slot, S, S, buf, i);
    em_ll_ins(e, "store %s %s, %s* %s, align %d", pt, val, pt, slot, strcmp(pt, "i32") ? 8 : 4);
  }
  char p[32];
  em_keep(p, sizeof p, em_tmp(e));
  em_ll_ins(e, "%s = bitcast %s* %%t%d to i8*", p, S, buf);
  em_ll_ins(e, "%s = call i32 @vprintf(i8* %s, i8* %s)", em_tmp(e), s, p);
  cl_buf_free(&st);
  (void)f;
}

static void emit_user_asm(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  const int64_t *imm = IM(e, v);
  EmAsm as = {{0}, {0}, {0}, 0, 0};
  snprintf(as.text, sizeof as.text, "%s", ir_str_get(e->m, (uint32_t)imm[0]));
  snprintf(as.cons, sizeof as.cons, "%s", ir_str_get(e->m, (uint32_t)imm[1]));
  for (int i = 0; i < in->nargs; i++) {
    size_t len = strlen(as.args);
    snprintf(as.args + len, sizeof as.args - len, "%s%s %s", i ? ", " : "", LT(e, TY(e, a[i])), VAL(e, a[i]));
  }
  int fl = (imm[2] & IR_FLAG_SIDEEFFECT ? 1 : 0) | (imm[2] & IR_FLAG_CONVERGENT ? 2 : 0) |
           ((imm[2] & IR_FLAG_MEMORY) && !strstr(as.cons, "~{memory}") ? 4 : 0);
  int has = in->type && in->type != IR_T_VOID;
  em_asm_call(e, &as, has ? em_def(e, v) : NULL, has ? LT(e, in->type) : "void", fl);
}

static void emit_call(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  const IrFunc *g = ir_func_at(e->m, (int)IM(e, v)[0]);
  ClBuf args = {0};
  for (int i = 0; i < in->nargs; i++)
    cl_buf_printf(&args, "%s%s %s", i ? ", " : "", LT(e, TY(e, a[i])), VAL(e, a[i]));
  if (g->ret == IR_T_VOID) em_ll_ins(e, "call void @%s(%s)", ir_func_name(g), cl_buf_str(&args));
  else em_ll_ins(e, "%s = call %s @%s(%s)", em_def(e, v), LT(e, g->ret), ir_func_name(g), cl_buf_str(&args));
  cl_buf_free(&args);
}

/* --- aggregates ---------------------------------------------------------------------------------------------------- */
static void emit_extract(Em *e, IrRef v) {
  if (em_sv_extract(e, v)) return;
  IrRef x = em_resolve(e, A(e, v)[0]);
  IrType t = TY(e, x);
  long long i = (long long)IM(e, v)[0];
  if (REC(e, t)->kind == IR_TK_STRUCT && I(e, x)->op == IR_OP_PACK) { /* the operand it was made of */
    e->alias[v] = A(e, x)[i];
    return;
  }
  if (e->vflags[x] & EM_V_SPLIT) {
    e->field_src[v] = x;
    e->field_idx[v] = (uint32_t)i;
    return;
  }
  if (REC(e, t)->kind == IR_TK_VEC) em_ll_ins(e, "%s = extractelement %s %s, i32 %lld", em_def(e, v), LT(e, t), VAL(e, x), i);
  else em_ll_ins(e, "%s = extractvalue %s %s, %lld", em_def(e, v), LT(e, t), VAL(e, x), i);
}

static void emit_insert(Em *e, IrRef v) {
  IrRef x = A(e, v)[0], y = A(e, v)[1];
  IrType t = TY(e, x);
  long long i = (long long)IM(e, v)[0];
  char xs[80];
  em_keep(xs, sizeof xs, VAL(e, x));
  if (REC(e, t)->kind == IR_TK_VEC)
    em_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %lld", em_def(e, v), LT(e, t), xs, LT(e, TY(e, y)), VAL(e, y), i);
  else em_ll_ins(e, "%s = insertvalue %s %s, %s %s, %lld", em_def(e, v), LT(e, t), xs, LT(e, TY(e, y)), VAL(e, y), i);
}

static void emit_pack(Em *e, IrRef v) {
  const IrInst *in = I(e, v);
  const IrRef *a = A(e, v);
  IrType t = in->type;
  int vec = REC(e, t)->kind == IR_TK_VEC;
  if (!vec && !(e->vflags[v] & EM_V_NEED_AGG)) return; /* only taken apart again */
  if (vec && em_sv_pack(e, v)) return;                    /* a split vector */
  char acc[32] = "undef";
  for (int i = 0; i < in->nargs; i++) {
    char d[32], x[80];
    em_keep(d, sizeof d, i == in->nargs - 1 ? em_def(e, v) : em_tmp(e));
    em_keep(x, sizeof x, VAL(e, a[i]));
    if (vec) em_ll_ins(e, "%s = insertelement %s %s, %s %s, i32 %d", d, LT(e, t), acc, LT(e, TY(e, a[i])), x, i);
    else em_ll_ins(e, "%s = insertvalue %s %s, %s %s, %d", d, LT(e, t), acc, LT(e, TY(e, a[i])), x, i);
    em_keep(acc, sizeof acc, d);
  }
}

/* --- dispatch ---------------------------------------------------------------------------------------------------------- */
void em_op(Em *e, IrRef v) {
  const IrOpInfo *oi = &ir_op_info[I(e, v)->op];
  switch ((IrLow)oi->low) {
    case IR_LOW_NONE: case IR_LOW_CONST: case IR_LOW_SMEM: case IR_LOW_DSMEM: break;
    default:
      if (!em_mem_op(e, v)) em_ll_fail(e, v, "no lowering for %s", oi->name);
      break;
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
      em_keep(x, sizeof x, VAL(e, a[0]));
      em_ll_ins(e, "%s = icmp %s %s %s, %s", em_def(e, v), ir_imm_name('P', IM(e, v)[0]), LT(e, TY(e, a[0])), x, VAL(e, a[1]));
      break;
    }
    case IR_LOW_FCMP: {
      const IrRef *a = A(e, v);
      char x[80];
      em_keep(x, sizeof x, VAL(e, a[0]));
      em_ll_ins(e, "%s = fcmp %s %s %s, %s", em_def(e, v), ir_imm_name('Q', IM(e, v)[0]), LT(e, TY(e, a[0])), x, VAL(e, a[1]));
      break;
    }
    case IR_LOW_SELECT: {
      const IrRef *a = A(e, v);
      char c[80], x[80];
      em_keep(c, sizeof c, VAL(e, a[0]));
      em_keep(x, sizeof x, VAL(e, a[1]));
      em_ll_ins(e, "%s = select %s %s, %s %s, %s %s", em_def(e, v), LT(e, TY(e, a[0])), c, LT(e, TY(e, a[1])), x,
                LT(e, TY(e, a[2])), VAL(e, a[2]));
      break;
    }
    case IR_LOW_CVT: emit_cvt(e, v); break;
    case IR_LOW_BITCAST:
      if (!em_sv_bitcast(e, v)) emit_cast(e, v, "bitcast");
      break;
    case IR_LOW_PTRTOINT: emit_ptrtoint(e, v); break;
    case IR_LOW_INTTOPTR: emit_inttoptr(e, v); break;
    case IR_LOW_PTRCAST: emit_ptrcast(e, v); break;
    case IR_LOW_NOT: emit_not(e, v); break;
    case IR_LOW_BITCOUNT: emit_bitcount(e, v); break;
    case IR_LOW_PRMT: emit_prmt(e, v); break;
    case IR_LOW_MATH: emit_math(e, v); break;
    case IR_LOW_PRINTF: emit_printf(e, v); break;
    case IR_LOW_ASM: emit_user_asm(e, v); break;
    case IR_LOW_CALL: emit_call(e, v); break;
    case IR_LOW_EXTRACT: emit_extract(e, v); break;
    case IR_LOW_INSERT: emit_insert(e, v); break;
    case IR_LOW_PACK: emit_pack(e, v); break;
  }
}
