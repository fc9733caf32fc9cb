/* ir_rules.h: what the op rules share (internal to src/ir): the state of one
 * op's check (Ck) and the small helpers every rule uses. The driver is
 * ir_check.c (ir_check_inst: operand count, operands, immediates, the
 * target's feature, the result type); the rules of each family are
 * ir_rules.c, one named function each, dispatched through ir_check_rules[]
 * (the chk column of ir_ops.h) and ir_result_rules[] (the res column). */
#ifndef IR_RULES_H
#define IR_RULES_H

#include <stdarg.h>
#include <stdio.h>

#include "ir_impl.h"

typedef struct Ck {
  IrFunc *f;
  IrModule *m;
  IrRef v;
  const IrInst *in;
  const IrOpInfo *oi;
  const IrRef *a;
  const int64_t *imm;
  const ClTarget *target;
  IrType given; /* the result type the op carries (IR_NONE: by its rule) */
  int bad;
} Ck;

/* The rules of the families (ir_rules.c), by chk and res column. */
typedef void (*IrCheckRule)(Ck *c);
typedef IrType (*IrResultRule)(IrFunc *f, const IrInst *in);
extern const IrCheckRule ir_check_rules[IR_CHK__COUNT];
extern const IrResultRule ir_result_rules[IR_RES__COUNT];

static inline void fail(Ck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fail(Ck *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ir_error(c->f, c->v, "%s: %s", c->oi->name, msg);
  c->bad = 1;
}

/* Whether the target has feature f; if not, the failure "<what> needs F,
   which T lacks (X has it)". */
static inline int has(Ck *c, ClFeature f, const char *what) {
  if (cl_target_has(c->target, f)) return 1;
  ClBuf b = {0};
  cl_target_needs(c->target, f, &b);
  fail(c, "%s %s", what, cl_buf_str(&b));
  cl_buf_free(&b);
  return 0;
}

static inline IrType T(const Ck *c, int i) { return c->f->insts[c->a[i]].type; }
static inline const char *TN(const Ck *c, IrType t) { return ir_type_name(c->m, t); }
static inline const IrTypeRec *R(const Ck *c, IrType t) { return ir_trec(c->m, t); }
static inline int kind(const Ck *c, IrType t) { return R(c, t)->kind; }
static inline int is_int(const Ck *c, IrType t) { return kind(c, t) == IR_TK_INT; }
static inline int is_ptr(const Ck *c, IrType t) { return kind(c, t) == IR_TK_PTR; }
static inline int is_afloat(IrType t) { return t == IR_T_F16 || t == IR_T_F32 || t == IR_T_F64; }
static inline IrType elem_of(const Ck *c, IrType t) { return ir_type_scalar_of(c->m, t); }
static inline int is_i32(IrType t) { return t == IR_T_I32; }
static inline const char *space_name(int s) { return ir_space_name(s) ? ir_space_name(s) : "?"; }

/* The value of a const operand, if it is one. */
static inline int const_arg(const Ck *c, int i, int64_t *out) {
  const IrInst *ai = &c->f->insts[c->a[i]];
  if (ai->op != IR_OP_CONST || !is_int(c, ai->type)) return 0;
  *out = c->f->immpool[ai->imms];
  return 1;
}

/* All operands from `from` on have the type of operand `from`. */
static inline int same_types(Ck *c, int from) {
  int ok = 1;
  for (int i = from + 1; i < c->in->nargs; i++)
    if (T(c, i) != T(c, from)) {
      fail(c, "operand %d is %s, operand %d is %s: they must have the same type", from + 1, TN(c, T(c, from)),
           i + 1, TN(c, T(c, i)));
      ok = 0;
    }
  return ok;
}

static inline const char *storage_hint(IrType t) {
  return (t == IR_T_BF16 || t == IR_T_TF32 || t == IR_T_E4M3 || t == IR_T_E5M2)
             ? " (bf16, tf32 and fp8 are storage types: cvt to f32 first)"
             : "";
}

/* Scalars or vectors of integers, or of f16/f32/f64. */
static inline void want_numeric(Ck *c, int i, int ints, int floats, int vectors) {
  IrType t = T(c, i), e = elem_of(c, t);
  if (!vectors && kind(c, t) == IR_TK_VEC) {
    fail(c, "operand %d is %s: vectors are not accepted here", i + 1, TN(c, t));
    return;
  }
  if ((ints && is_int(c, e)) || (floats && is_afloat(e))) return;
  fail(c, "operand %d is %s, expected %s%s", i + 1, TN(c, t),
       ints && floats ? "an integer or f16/f32/f64" : ints ? "an integer" : "f16, f32 or f64",
       storage_hint(e));
}

static inline IrType fragment_type(IrModule *m, int n, IrType reg) {
  if (n == 1) return reg;
  IrType fields[128];
  for (int i = 0; i < n && i < 128; i++) fields[i] = reg;
  return ir_type_struct(m, fields, n);
}

#endif
