/* emit_asm.c: the inline-PTX builder: operands, constraints, escaping,
 * the registers of each IR type, addresses with their constant offsets split
 * off, and register fragments (see emit_impl.h).
 *
 * Inline PTX is built in an EmAsm: the text with $N operands, the constraint
 * list (outputs first) and the typed argument list; em_asm_call writes the call,
 * with sideeffect, a memory clobber and the convergent attribute as asked. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emit_impl.h"

/* --- inline PTX ----------------------------------------------------------------------------------------------- */
void em_asm_text(EmAsm *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t len = strlen(a->text);
  vsnprintf(a->text + len, sizeof a->text - len, fmt, ap);
  va_end(ap);
}

void em_asm_cons(EmAsm *a, const char *c) {
  size_t len = strlen(a->cons);
  snprintf(a->cons + len, sizeof a->cons - len, "%s%s", len ? "," : "", c);
}

void em_asm_out(EmAsm *a, char letter) {
  char c[4] = {'=', letter, 0, 0};
  em_asm_cons(a, c);
  a->nout++;
}

void em_asm_in(Em *e, EmAsm *a, char letter, const char *ll_type, const char *val) {
  (void)e;
  char c[2] = {letter, 0};
  em_asm_cons(a, c);
  size_t len = strlen(a->args);
  snprintf(a->args + len, sizeof a->args - len, "%s%s %s", a->nin ? ", " : "", ll_type, val);
  a->nin++;
}

/* Writes the call; dst NULL for a void result. flags: 1 sideeffect, 2 convergent, 4 memory clobber. */
void em_asm_call(Em *e, EmAsm *a, const char *dst, const char *ret, int flags) {
  if (flags & 4) em_asm_cons(a, "~{memory}");
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
  em_ll_ins(e, "%s%scall %s asm %s\"%s\", \"%s\"(%s)%s", dst ? dst : "", dst ? " = " : "", ret,
            (flags & 1) ? "sideeffect " : "", text, a->cons, a->args, (flags & 2) ? " #0" : "");
  cl_buf_free(&esc);
}

/* How a value of type t sits in a PTX register (EmReg, emit_impl.h). */
EmReg em_asm_reg(Em *e, IrType t) {
  switch (t) {
    case IR_T_I1: case IR_T_I8: case IR_T_E4M3: case IR_T_E5M2: return (EmReg){'h', "i16", "b8", 1};
    case IR_T_I16: case IR_T_BF16: return (EmReg){'h', "i16", "b16", 0};
    case IR_T_F16: return (EmReg){'h', "i16", "b16", 2};
    case IR_T_I32: case IR_T_TF32: return (EmReg){'r', "i32", "b32", 0};
    case IR_T_F32: return (EmReg){'f', "float", "f32", 0};
    case IR_T_I64: return (EmReg){'l', "i64", "b64", 0};
    case IR_T_F64: return (EmReg){'d', "double", "f64", 0};
    default: break;
  }
  if (REC(e, t)->kind == IR_TK_PTR) {
    if (REC(e, t)->space == IR_SPACE_SHARED_CLUSTER) return (EmReg){'r', "i32", "b32", 0};
    return (EmReg){'l', "i64", "b64", 3};
  }
  return (EmReg){'r', "i32", "b32", 0};
}

/* A value as its asm register operand (conversion emitted if needed). */
const char *em_asm_to_reg(Em *e, EmReg r, IrType t, const char *val) {
  if (!r.conv) return val;
  const char *tmp = em_tmp(e);
  if (r.conv == 1) em_ll_ins(e, "%s = zext %s %s to i16", tmp, LT(e, t), val);
  else if (r.conv == 2) em_ll_ins(e, "%s = bitcast half %s to i16", tmp, val);
  else em_ll_ins(e, "%s = ptrtoint %s %s to i64", tmp, LT(e, t), val);
  return tmp;
}

/* An asm register result into dst as type t. */
void em_asm_from_reg(Em *e, EmReg r, IrType t, const char *regval, const char *dst) {
  switch (r.conv) {
    case 0: em_ll_ins(e, "%s = bitcast %s %s to %s", dst, r.ll, regval, LT(e, t)); break;
    case 1: em_ll_ins(e, "%s = trunc i16 %s to %s", dst, regval, LT(e, t)); break;
    case 2: em_ll_ins(e, "%s = bitcast i16 %s to half", dst, regval); break;
    default: em_ll_ins(e, "%s = inttoptr i64 %s to %s", dst, regval, LT(e, t)); break;
  }
}

const char *em_ptx_space(int space) {
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
void em_asm_addr(Em *e, EmAsm *a, IrRef p) {
  IrType pt = TY(e, p);
  int space = REC(e, pt)->space;
  if (space == IR_SPACE_SHARED_CLUSTER) {
    em_asm_in(e, a, 'r', "i32", VAL(e, p));
    return;
  }
  const char *tmp = em_tmp(e);
  int narrow = space == IR_SPACE_SHARED;
  em_ll_ins(e, "%s = ptrtoint %s %s to %s", tmp, LT(e, pt), VAL(e, p), narrow ? "i32" : "i64");
  em_asm_in(e, a, narrow ? 'r' : 'l', narrow ? "i32" : "i64", tmp);
}

static int const_int(Em *e, IrRef v, long long *k) {
  if (I(e, v)->op != IR_OP_CONST) return 0;
  *k = (long long)IM(e, v)[0];
  return 1;
}

/* Splits an integer index into t + c, c a constant: x + c, (x + c1) * c2
 * (emitting x * c2: c is c1 * c2), (x + c1) << c2, and nestings of these.
 * t is written to `out` (LLVM text); 0 when there is no constant part (out
 * is then the index itself). The split is exact in wrapping arithmetic. */
long long em_index_split(Em *e, IrRef idx, char *out, size_t n) {
  const IrInst *in = I(e, idx);
  long long k, c;
  char t[80];
  if (in->nargs == 2 && (in->op == IR_OP_ADD || in->op == IR_OP_MUL || in->op == IR_OP_SHL)) {
    const IrRef *a = A(e, idx);
    int ki = const_int(e, a[1], &k) ? 1 : (in->op != IR_OP_SHL && const_int(e, a[0], &k)) ? 0 : -1;
    if (ki >= 0) {
      c = em_index_split(e, a[1 - ki], t, sizeof t);
      if (in->op == IR_OP_ADD) {
        snprintf(out, n, "%s", t);
        return c + k;
      }
      if (c != 0 && (in->op == IR_OP_MUL || (k >= 0 && k < 63))) {
        const char *ty = LT(e, in->type);
        snprintf(out, n, "%s", em_tmp(e));
        em_ll_ins(e, "%s = %s %s %s, %lld", out, in->op == IR_OP_MUL ? "mul" : "shl", ty, t, k);
        return in->op == IR_OP_MUL ? (long long)((unsigned long long)c * (unsigned long long)k)
                                   : (long long)((unsigned long long)c << k);
      }
    }
  }
  em_keep(out, n, VAL(e, idx));
  return 0;
}

/* em_asm_addr for p = (ptrcasts of) gep(base, i) where i = t + c (c a
 * constant, em_index_split): the operand is base + t and c, in bytes, is
 * returned for the caller to write as the instruction's immediate offset
 * ("[$n+c]"), so that accesses at constant distances from one base share its
 * register. 0 (and the plain operand) otherwise. */
long long em_asm_addr_split(Em *e, EmAsm *a, IrRef p) {
  IrRef q = p;
  while (I(e, q)->op == IR_OP_PTRCAST) q = A(e, q)[0];
  int space = REC(e, TY(e, p))->space;
  if (I(e, q)->op == IR_OP_GEP && space != IR_SPACE_SHARED_CLUSTER) {
    IrRef idx = A(e, q)[1];
    IrType qt = TY(e, q);
    long long bytes = (long long)REC(e, REC(e, qt)->elem)->size;
    char x[80];
    long long c = em_index_split(e, idx, x, sizeof x) * bytes;
    if (c != 0 && c > -(1LL << 31) && c < (1LL << 31)) {
      char base[80], g[32];
      em_keep(base, sizeof base, VAL(e, A(e, q)[0]));
      snprintf(g, sizeof g, "%s", em_tmp(e));
      em_ll_ins(e, "%s = getelementptr %s, %s %s, %s %s", g, LT(e, REC(e, qt)->elem), LT(e, qt), base,
                LT(e, TY(e, idx)), x);
      const char *tmp = em_tmp(e);
      int narrow = space == IR_SPACE_SHARED;
      em_ll_ins(e, "%s = ptrtoint %s %s to %s", tmp, LT(e, qt), g, narrow ? "i32" : "i64");
      em_asm_in(e, a, narrow ? 'r' : 'l', narrow ? "i32" : "i64", tmp);
      return c;
    }
  }
  em_asm_addr(e, a, p);
  return 0;
}

/* "{$0, $1}" for n registers from $first; a single one bare ("$0") unless
   braced (mma and ldmatrix operands are vectors even of one register). */
void em_asm_regs(EmAsm *a, int first, int n, int braced) {
  if (n == 1 && !braced) {
    em_asm_text(a, "$%d", first);
    return;
  }
  em_asm_text(a, "{");
  for (int i = 0; i < n; i++) em_asm_text(a, "%s$%d", i ? ", " : "", first + i);
  em_asm_text(a, "}");
}

/* Splits a struct result into %vN.0, %vN.1, ... (see emit_impl.h). */
void em_split(Em *e, IrRef v) {
  const IrTypeRec *r = REC(e, TY(e, v));
  if (r->kind != IR_TK_STRUCT) return;
  for (uint32_t i = 0; i < r->len; i++)
    em_ll_ins(e, "%%v%u.%u = extractvalue %s %%v%u, %u", v, i, LT(e, TY(e, v)), v, i);
  e->vflags[v] |= EM_V_SPLIT;
}

/* The i-th register of a fragment (a struct, or the value itself when n == 1). */
const char *em_frag_reg(Em *e, IrRef v, int i, int n) {
  if (n == 1) return VAL(e, v);
  v = em_resolve(e, v);
  if (I(e, v)->op == IR_OP_PACK) return VAL(e, A(e, v)[i]);
  if (e->vflags[v] & EM_V_SPLIT) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "%%v%u.%d", v, i);
    return s;
  }
  const char *tmp = em_tmp(e);
  em_ll_ins(e, "%s = extractvalue %s %s, %d", tmp, LT(e, TY(e, v)), VAL(e, v), i);
  return tmp;
}
