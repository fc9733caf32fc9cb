/* emit_text.c: the emitter's text helpers: LLVM 7 types, constants and
 * pointer types of IR types, value names (%vN, %tN and what aliases,
 * promoted variables and split values stand for), instructions with their
 * !dbg, declarations (once a module), splats, and errors.
 *
 * Everything the emitter writes down is made here or from pieces made here;
 * nothing here writes to the module: cached type texts, declared names and
 * kept strings live in the emitter's own arena (Em.arena). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

static const int space_as[] = {
#define IR_SPACE_AS(id, name, as) as,
    IR_SPACES(IR_SPACE_AS)
#undef IR_SPACE_AS
};

static const char *const scalar_ll[] = {
    "",
#define IR_SCALAR_LL(id, name, bits, ll, storage) ll,
    IR_SCALARS(IR_SCALAR_LL)
#undef IR_SCALAR_LL
};

/* --- types --------------------------------------------------------------------------------------------- */
/* A copy of s in the emitter's arena ("" when out of memory: e->failed). */
const char *em_keep_str(Em *e, const char *s, size_t len) {
  char *p = ir_arena_alloc(&e->arena, len + 1);
  if (!p) {
    e->failed = 1;
    return "";
  }
  memcpy(p, s, len);
  p[len] = 0;
  return p;
}

/* The LLVM address space of an IR space: the IR_SPACES column, except that
   by-value blobs (param) are reached through generic pointers. */
static int ll_space(int space) {
  if (space < 0 || space >= IR_SPACE__COUNT || space == IR_SPACE_PARAM) return 0;
  return space_as[space];
}

void em_ll_ptr(const char *elem, int space, char *out, size_t n) {
  int as = ll_space(space);
  if (as) snprintf(out, n, "%s addrspace(%d)*", elem, as);
  else snprintf(out, n, "%s*", elem);
}

static void ll_type_write(Em *e, IrType t, ClBuf *b) {
  const IrTypeRec *r = ir_trec(e->m, t);
  switch (r->kind) {
    case IR_TK_VEC: cl_buf_printf(b, "<%u x %s>", r->len, em_ll_type(e, r->elem)); break;
    case IR_TK_ARRAY: cl_buf_printf(b, "[%u x %s]", r->len, em_ll_type(e, r->elem)); break;
    case IR_TK_PTR: {
      if (r->space == IR_SPACE_SHARED_CLUSTER) { /* a 32-bit address, used through inline PTX */
        cl_buf_puts(b, "i32");
        break;
      }
      char text[512];
      em_ll_ptr(em_ll_type(e, r->elem), r->space, text, sizeof text);
      cl_buf_puts(b, text);
      break;
    }
    case IR_TK_STRUCT:
      cl_buf_putc(b, '{');
      for (uint32_t i = 0; i < r->len; i++) cl_buf_printf(b, "%s%s", i ? ", " : "", em_ll_type(e, r->fields[i]));
      cl_buf_putc(b, '}');
      break;
    default: cl_buf_puts(b, t < IR_T__NSCALAR ? scalar_ll[t] : "void"); break;
  }
}

/* A struct type whose literal text is longer than this is written once, as a
   named type (`%cl.sN = type {...}` at the top of the module), and called by
   its name: a wgmma accumulator of 128 floats is 940 characters, repeated in
   every extractvalue that takes it apart, which made 2.9 of a GEMM's 3 MB of
   NVVM IR (and libnvvm's time went into parsing it). Each literal text gets
   one name, so two types are the same LLVM type after naming exactly when
   they were before (LLVM's literal structs are equal when their texts are);
   type names do not reach the PTX. */
#define EM_NAMED_STRUCT_MIN 64

static const char *named_struct(Em *e, const char *lit, size_t len) {
  for (uint32_t i = 0; i < e->nnamed; i++)
    if (strcmp(e->named_lit[i], lit) == 0) {
      char name[32];
      int n = snprintf(name, sizeof name, "%%cl.s%u", i);
      return em_keep_str(e, name, (size_t)n);
    }
  if (!EM_GROW(e, e->named_lit, e->capnamed, e->nnamed + 1)) {
    e->failed = 1;
    return "void";
  }
  uint32_t id = e->nnamed;
  e->named_lit[e->nnamed++] = em_keep_str(e, lit, len);
  cl_buf_printf(&e->types, "%%cl.s%u = type %s\n", id, lit);
  char name[32];
  int n = snprintf(name, sizeof name, "%%cl.s%u", id);
  return em_keep_str(e, name, (size_t)n);
}

/* Cached per type id in e->type_ll (the module's types do not change while
   it is emitted). */
const char *em_ll_type(Em *e, IrType t) {
  if (!ir_type_valid(e->m, t) || t >= e->ntype_ll) return "void";
  if (!e->type_ll[t]) {
    if (t < IR_T__NSCALAR) {
      e->type_ll[t] = scalar_ll[t];
    } else {
      ClBuf b = {0};
      ll_type_write(e, t, &b);
      if (b.oom) e->type_ll[t] = "void";
      else if (ir_trec(e->m, t)->kind == IR_TK_STRUCT && b.len > EM_NAMED_STRUCT_MIN)
        e->type_ll[t] = named_struct(e, cl_buf_str(&b), b.len);
      else e->type_ll[t] = em_keep_str(e, cl_buf_str(&b), b.len);
      if (b.oom) e->failed = 1;
      cl_buf_free(&b);
    }
  }
  return e->type_ll[t];
}

const char *em_ll_mangle(Em *e, IrType t) {
  static const char *const names[] = {"", "", "i1", "i8", "i16", "i32", "i64", "f16", "i16", "i32", "f32", "f64", "i8", "i8"};
  const IrTypeRec *r = ir_trec(e->m, t);
  if (r->kind == IR_TK_VEC) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "v%u%s", r->len, em_ll_mangle(e, r->elem));
    return s;
  }
  return t < IR_T__NSCALAR ? names[t] : "?";
}

static uint64_t dbl_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

const char *em_ll_const(Em *e, IrType t, int64_t bits) {
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

const char *em_ll_val(Em *e, IrRef v) {
  while (e->alias[v]) v = e->alias[v];
  if (e->pr_vtext && e->pr_vtext[v]) return e->pr_vtext[v];
  if (e->sv_el && e->sv_el[v]) return em_sv_build(e, v); /* a split vector some use needs whole after all */
  if (e->field_src[v]) {
    char *s = e->vbuf[e->vnext++ & 7];
    snprintf(s, sizeof e->vbuf[0], "%%v%u.%u", e->field_src[v], e->field_idx[v]);
    return s;
  }
  const IrInst *in = &e->f->insts[v];
  if (in->op == IR_OP_CONST) return em_ll_const(e, in->type, ir_imms(e->f, in)[0]);
  if (in->op == IR_OP_UNDEF) return "undef";
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%v%u", v);
  return s;
}

int em_ll_tmp(Em *e) { return e->tmp++; }

void em_ll_ins(Em *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cl_buf_puts(&e->body, "  ");
  cl_buf_vprintf(&e->body, fmt, ap);
  va_end(ap);
  if (e->cur_dbg) cl_buf_printf(&e->body, ", !dbg !%u", e->cur_dbg);
  cl_buf_putc(&e->body, '\n');
}

void em_ll_declare(Em *e, const char *name, const char *decl) {
  for (uint32_t i = 0; i < e->ndeclared; i++)
    if (strcmp(e->declared[i], name) == 0) return;
  if (!EM_GROW(e, e->declared, e->capdeclared, e->ndeclared + 1)) {
    e->failed = 1;
    return;
  }
  e->declared[e->ndeclared++] = em_keep_str(e, name, strlen(name));
  cl_buf_puts(&e->decls, decl);
  cl_buf_putc(&e->decls, '\n');
}

/* Errors go to the caller's buffer, formatted as the IR's diagnostics are
   (the op printed, its location), never into the module. */
void em_ll_fail(Em *e, IrRef v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char full[560];
  snprintf(full, sizeof full, "emit: %s", msg);
  if (e->err) ir_format_error(e->f, v, full, e->err);
  e->failed = 1;
}

/* --- names and small pieces ---------------------------------------------------------------------------- */
/* "%tN" in a rotating buffer */
const char *em_tname(Em *e, int n) {
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%t%d", n);
  return s;
}
const char *em_tmp(Em *e) { return em_tname(e, em_ll_tmp(e)); }
/* "%vN" of the op being lowered */
const char *em_def(Em *e, IrRef v) {
  char *s = e->vbuf[e->vnext++ & 7];
  snprintf(s, sizeof e->vbuf[0], "%%v%u", v);
  return s;
}
char *em_keep(char *buf, size_t n, const char *s) {
  snprintf(buf, n, "%s", s);
  return buf;
}

/* An all-ones / zero / minus-zero value of a (vector) type. */
void em_splat(Em *e, IrType t, const char *scalar, char *out, size_t n) {
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

const char *em_declare(Em *e, const char *name, const char *ret, const char *params) {
  char decl[512];
  snprintf(decl, sizeof decl, "declare %s @%s(%s)", ret, name, params);
  em_ll_declare(e, name, decl);
  return name;
}

IrRef em_resolve(Em *e, IrRef v) {
  while (e->alias[v]) v = e->alias[v];
  return v;
}

