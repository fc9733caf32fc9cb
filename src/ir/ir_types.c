/* ir_types.c: interned types: scalars, vectors, pointers, structs, arrays.
 *
 * A type is a record in the module's type array; equal types are one record,
 * so type equality is id equality. Scalars occupy the fixed ids of IR_SCALARS.
 * The printed form ("ptr<f32, global, 16>", "{4 x f32}", "<2 x f16>") is also
 * what ir_type_parse reads, so Lua can name any type with a string.
 *
 * Pointers carry their element type (the emitter needs it for LLVM 7's typed
 * pointers), an address space and the alignment of the address in bytes (a
 * power of two; 0 when made means the element's natural alignment). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ir_impl.h"

static const struct {
  const char *name;
  int bits;
  uint8_t kind;
} scalar_info[] = {
    {"", 0, IR_TK_NONE},
#define IR_SCALAR_ROW(id, name, bits, ll, storage) \
  {name, bits, IR_T_##id == IR_T_VOID ? IR_TK_VOID : (name[0] == 'i' ? IR_TK_INT : IR_TK_FLOAT)},
    IR_SCALARS(IR_SCALAR_ROW)
#undef IR_SCALAR_ROW
};

static const char *const space_names[] = {
#define IR_SPACE_NAME(id, name, as) name,
    IR_SPACES(IR_SPACE_NAME)
#undef IR_SPACE_NAME
};

static uint32_t type_hash(const IrTypeRec *t) {
  uint32_t h = 2166136261u;
  uint32_t parts[6] = {t->kind, t->space, t->bits, t->elem, t->len, t->align};
  for (int i = 0; i < 6; i++) h = (h ^ parts[i]) * 16777619u;
  if (t->kind == IR_TK_STRUCT)
    for (uint32_t i = 0; i < t->len; i++) h = (h ^ t->fields[i]) * 16777619u;
  return h;
}

static int type_eq(const IrTypeRec *a, const IrTypeRec *b) {
  if (a->kind != b->kind || a->space != b->space || a->bits != b->bits || a->elem != b->elem ||
      a->len != b->len || a->align != b->align)
    return 0;
  if (a->kind == IR_TK_STRUCT) return memcmp(a->fields, b->fields, a->len * sizeof(IrType)) == 0;
  return 1;
}

static void table_insert(IrModule *m, IrType id) {
  uint32_t i = type_hash(&m->types[id]) & (m->typetabcap - 1);
  while (m->typetab[i]) i = (i + 1) & (m->typetabcap - 1);
  m->typetab[i] = id;
}

static int table_grow(IrModule *m) {
  uint32_t ncap = m->typetabcap ? m->typetabcap * 2 : 256;
  uint32_t *t = ir_arena_alloc(&m->arena, ncap * sizeof *t);
  if (!t) return 0;
  memset(t, 0, ncap * sizeof *t);
  m->typetab = t;
  m->typetabcap = ncap;
  for (IrType id = 1; id < m->ntype; id++) table_insert(m, id);
  return 1;
}

/* Finds or adds a type; the record's size and natural alignment are computed here. */
static IrType intern(IrModule *m, IrTypeRec *t) {
  uint32_t h = type_hash(t);
  if (m->typetabcap) {
    for (uint32_t i = h & (m->typetabcap - 1);; i = (i + 1) & (m->typetabcap - 1)) {
      IrType id = m->typetab[i];
      if (!id) break;
      if (type_eq(&m->types[id], t)) return id;
    }
  }
  if ((m->ntype + 1) * 2 > m->typetabcap && !table_grow(m)) goto oom;
  if (!IR_GROW(m, m->types, m->captype, m->ntype + 1)) goto oom;
  if (t->kind == IR_TK_STRUCT) { /* the caller's field array may be temporary */
    IrType *copy = ir_arena_alloc(&m->arena, t->len * sizeof *copy);
    if (!copy) goto oom;
    memcpy(copy, t->fields, t->len * sizeof *copy);
    t->fields = copy;
  }
  switch (t->kind) {
    case IR_TK_INT:
    case IR_TK_FLOAT: t->size = t->natural = t->bits < 8 ? 1 : t->bits / 8; break;
    case IR_TK_VEC: t->size = t->natural = t->len * m->types[t->elem].size; break;
    case IR_TK_PTR: t->size = t->natural = t->space == IR_SPACE_SHARED_CLUSTER ? 4 : 8; break;
    case IR_TK_ARRAY:
      t->size = t->len * m->types[t->elem].size;
      t->natural = m->types[t->elem].natural;
      break;
    case IR_TK_STRUCT: {
      uint32_t off = 0, al = 1;
      for (uint32_t i = 0; i < t->len; i++) {
        const IrTypeRec *ft = &m->types[t->fields[i]];
        uint32_t fa = ft->natural ? ft->natural : 1;
        off = (off + fa - 1) / fa * fa + ft->size;
        if (fa > al) al = fa;
      }
      t->size = (off + al - 1) / al * al;
      t->natural = al;
      break;
    }
    default: t->size = 0; t->natural = 1; break;
  }
  IrType id = m->ntype++;
  m->types[id] = *t;
  table_insert(m, id);
  return id;
oom:
  m->oom = 1;
  return IR_NONE;
}

void ir_types_init(IrModule *m) {
  m->ntype = 1; /* id 0: none */
  if (!IR_GROW(m, m->types, m->captype, 64)) {
    m->oom = 1;
    return;
  }
  memset(&m->types[0], 0, sizeof m->types[0]);
  for (int id = 1; id < IR_T__NSCALAR; id++) {
    IrTypeRec t = {0};
    t.kind = scalar_info[id].kind;
    t.bits = (uint16_t)scalar_info[id].bits;
    t.name = scalar_info[id].name;
    /* distinct same-width float kinds (f16, bf16): the name tells them apart in the hash */
    t.len = (uint32_t)id;
    intern(m, &t);
  }
}

int ir_type_valid(const IrModule *m, IrType t) { return m && t > 0 && t < m->ntype; }

static int is_value_type(const IrModule *m, IrType t) {
  return ir_type_valid(m, t) && m->types[t].kind != IR_TK_VOID;
}

IrType ir_type_vec(IrModule *m, IrType elem, int len) {
  if (!m) return IR_NONE;
  int k = ir_type_valid(m, elem) ? m->types[elem].kind : IR_TK_NONE;
  if (k != IR_TK_INT && k != IR_TK_FLOAT && k != IR_TK_PTR) {
    ir_merror(m, "vector of '%s': elements must be integers, floats or pointers",
              ir_type_valid(m, elem) ? ir_type_name(m, elem) : "?");
    return IR_NONE;
  }
  if (len < 2 || len > 64 || (len & (len - 1))) {
    ir_merror(m, "vector of %d elements: the length must be a power of two from 2 to 64", len);
    return IR_NONE;
  }
  IrTypeRec t = {0};
  t.kind = IR_TK_VEC;
  t.elem = elem;
  t.len = (uint32_t)len;
  return intern(m, &t);
}

IrType ir_type_ptr(IrModule *m, IrType elem, int space, int align) {
  if (!m) return IR_NONE;
  if (!is_value_type(m, elem)) {
    ir_merror(m, "pointer to '%s': the element must be a value type (use i8 for bytes)",
              ir_type_valid(m, elem) ? ir_type_name(m, elem) : "?");
    return IR_NONE;
  }
  if (space < 0 || space >= IR_SPACE__COUNT) {
    ir_merror(m, "pointer: unknown address space %d", space);
    return IR_NONE;
  }
  if (align == 0) align = (int)m->types[elem].natural;
  if (align < 1 || align > 65536 || (align & (align - 1))) {
    ir_merror(m, "pointer: alignment %d is not a power of two from 1 to 65536", align);
    return IR_NONE;
  }
  IrTypeRec t = {0};
  t.kind = IR_TK_PTR;
  t.elem = elem;
  t.space = (uint8_t)space;
  t.align = (uint32_t)align;
  return intern(m, &t);
}

IrType ir_type_struct(IrModule *m, const IrType *fields, int n) {
  if (!m) return IR_NONE;
  if (n < 1 || n > 1024) {
    ir_merror(m, "struct of %d fields: from 1 to 1024 fields", n);
    return IR_NONE;
  }
  for (int i = 0; i < n; i++)
    if (!is_value_type(m, fields[i])) {
      ir_merror(m, "struct field %d: not a value type", i + 1);
      return IR_NONE;
    }
  IrTypeRec t = {0};
  t.kind = IR_TK_STRUCT;
  t.len = (uint32_t)n;
  t.fields = fields;
  return intern(m, &t);
}

IrType ir_type_array(IrModule *m, IrType elem, int len) {
  if (!m) return IR_NONE;
  if (!is_value_type(m, elem) || len < 1) {
    ir_merror(m, "array of %d '%s': needs a value type and a positive length", len,
              ir_type_valid(m, elem) ? ir_type_name(m, elem) : "?");
    return IR_NONE;
  }
  IrTypeRec t = {0};
  t.kind = IR_TK_ARRAY;
  t.elem = elem;
  t.len = (uint32_t)len;
  return intern(m, &t);
}

/* --- printing --------------------------------------------------------------------------------------------- */
static void type_write(IrModule *m, IrType id, ClBuf *b) {
  const IrTypeRec *t = ir_trec(m, id);
  switch (t->kind) {
    case IR_TK_VEC:
      cl_buf_printf(b, "<%u x ", t->len);
      type_write(m, t->elem, b);
      cl_buf_putc(b, '>');
      break;
    case IR_TK_ARRAY:
      cl_buf_printf(b, "[%u x ", t->len);
      type_write(m, t->elem, b);
      cl_buf_putc(b, ']');
      break;
    case IR_TK_PTR:
      cl_buf_puts(b, "ptr<");
      type_write(m, t->elem, b);
      cl_buf_printf(b, ", %s, %u>", space_names[t->space], t->align);
      break;
    case IR_TK_STRUCT: {
      int same = 1;
      for (uint32_t i = 1; i < t->len; i++) same &= t->fields[i] == t->fields[0];
      cl_buf_putc(b, '{');
      if (same) {
        cl_buf_printf(b, "%u x ", t->len);
        type_write(m, t->fields[0], b);
      } else {
        for (uint32_t i = 0; i < t->len; i++) {
          if (i) cl_buf_puts(b, ", ");
          type_write(m, t->fields[i], b);
        }
      }
      cl_buf_putc(b, '}');
      break;
    }
    case IR_TK_NONE: cl_buf_puts(b, "?"); break;
    default: cl_buf_puts(b, t->name); break;
  }
}

const char *ir_type_name(IrModule *m, IrType t) {
  if (!ir_type_valid(m, t)) return "?";
  IrTypeRec *r = &m->types[t];
  if (!r->name) {
    ClBuf b = {0};
    type_write(m, t, &b);
    char *s = ir_arena_alloc(&m->arena, b.len + 1);
    if (!s) {
      cl_buf_free(&b);
      return "?";
    }
    memcpy(s, cl_buf_str(&b), b.len + 1);
    cl_buf_free(&b);
    r->name = s;
  }
  return r->name;
}

int ir_type_info(const IrModule *m, IrType t, IrTypeInfo *out) {
  if (!ir_type_valid(m, t) || !out) return -1;
  const IrTypeRec *r = &m->types[t];
  out->kind = r->kind;
  out->bits = r->kind == IR_TK_INT || r->kind == IR_TK_FLOAT ? r->bits : 0;
  out->elem = r->elem;
  out->len = (r->kind == IR_TK_VEC || r->kind == IR_TK_ARRAY || r->kind == IR_TK_STRUCT) ? (int)r->len : 0;
  out->space = r->kind == IR_TK_PTR ? r->space : -1;
  out->align = r->kind == IR_TK_PTR ? (int)r->align : 0;
  out->size = (int)r->size;
  out->natural = (int)r->natural;
  return 0;
}

int ir_type_count(const IrModule *m) { return m ? (int)m->ntype - 1 : 0; }

/* --- parsing ---------------------------------------------------------------------------------------------- */
typedef struct Parser {
  IrModule *m;
  const char *s, *p;
  const char *err;
} Parser;

static void skip(Parser *ps) {
  while (isspace((unsigned char)*ps->p)) ps->p++;
}
static int eat(Parser *ps, char c) {
  skip(ps);
  if (*ps->p != c) return 0;
  ps->p++;
  return 1;
}
static int number(Parser *ps, long *v) {
  skip(ps);
  if (!isdigit((unsigned char)*ps->p)) return 0;
  char *end;
  *v = strtol(ps->p, &end, 10);
  ps->p = end;
  return 1;
}
static int word(Parser *ps, char *buf, size_t n) {
  skip(ps);
  size_t i = 0;
  while ((isalnum((unsigned char)*ps->p) || *ps->p == '_') && i + 1 < n) buf[i++] = *ps->p++;
  buf[i] = 0;
  return i > 0;
}

static IrType parse_type(Parser *ps);

/* After "N x" inside <>, [] or {}. */
static IrType parse_counted(Parser *ps, long *n) {
  if (!number(ps, n)) return IR_NONE;
  skip(ps);
  if (*ps->p != 'x') return IR_NONE;
  ps->p++;
  return parse_type(ps);
}

static IrType parse_type(Parser *ps) {
  IrModule *m = ps->m;
  skip(ps);
  long n = 0;
  if (eat(ps, '<')) {
    IrType e = parse_counted(ps, &n);
    if (!e || !eat(ps, '>')) return ps->err = "expected <N x T>", IR_NONE;
    return ir_type_vec(m, e, (int)n);
  }
  if (eat(ps, '[')) {
    IrType e = parse_counted(ps, &n);
    if (!e || !eat(ps, ']')) return ps->err = "expected [N x T]", IR_NONE;
    return ir_type_array(m, e, (int)n);
  }
  if (eat(ps, '{')) {
    const char *save = ps->p;
    IrType e = IR_NONE;
    if (number(ps, &n)) { /* {N x T} */
      ps->p = save;
      e = parse_counted(ps, &n);
      if (!e || !eat(ps, '}') || n < 1 || n > 1024) return ps->err = "expected {N x T}", IR_NONE;
      IrType fields[1024];
      for (long i = 0; i < n; i++) fields[i] = e;
      return ir_type_struct(m, fields, (int)n);
    }
    IrType fields[1024];
    int nf = 0;
    do {
      if (nf == 1024) return ps->err = "too many struct fields", IR_NONE;
      if (!(fields[nf++] = parse_type(ps))) return IR_NONE;
    } while (eat(ps, ','));
    if (!eat(ps, '}')) return ps->err = "expected '}'", IR_NONE;
    return ir_type_struct(m, fields, nf);
  }
  char w[32];
  if (!word(ps, w, sizeof w)) return ps->err = "expected a type", IR_NONE;
  if (strcmp(w, "ptr") == 0) {
    if (!eat(ps, '<')) return ps->err = "expected ptr<T, space, align>", IR_NONE;
    IrType e = parse_type(ps);
    if (!e) return IR_NONE;
    char sp[32];
    if (!eat(ps, ',') || !word(ps, sp, sizeof sp)) return ps->err = "expected an address space", IR_NONE;
    int space = -1;
    for (int i = 0; i < IR_SPACE__COUNT; i++)
      if (strcmp(sp, space_names[i]) == 0) space = i;
    if (space < 0) return ps->err = "unknown address space", IR_NONE;
    long align = 0;
    if (eat(ps, ',') && !number(ps, &align)) return ps->err = "expected an alignment", IR_NONE;
    if (!eat(ps, '>')) return ps->err = "expected '>'", IR_NONE;
    return ir_type_ptr(m, e, space, (int)align);
  }
  for (int id = 1; id < IR_T__NSCALAR; id++)
    if (strcmp(w, scalar_info[id].name) == 0) return (IrType)id;
  return ps->err = "unknown type name", IR_NONE;
}

IrType ir_type_parse(IrModule *m, const char *text) {
  if (!m || !text) return IR_NONE;
  int before = m->ndiag;
  Parser ps = {m, text, text, NULL};
  IrType t = parse_type(&ps);
  skip(&ps);
  if (t && *ps.p) {
    ps.err = "unexpected text after the type";
    t = IR_NONE;
  }
  if (!t && m->ndiag == before)
    ir_merror(m, "bad type '%s': %s at column %d", text, ps.err ? ps.err : "syntax error", (int)(ps.p - ps.s) + 1);
  return t;
}

/* --- helpers for the checker and emitter ------------------------------------------------------------------ */
int ir_type_is_int(const IrModule *m, IrType t) { return ir_trec(m, t)->kind == IR_TK_INT; }
int ir_type_is_float(const IrModule *m, IrType t) { return ir_trec(m, t)->kind == IR_TK_FLOAT; }
int ir_type_is_arith_float(const IrModule *m, IrType t) {
  (void)m;
  return t == IR_T_F16 || t == IR_T_F32 || t == IR_T_F64;
}
IrType ir_type_scalar_of(const IrModule *m, IrType t) {
  const IrTypeRec *r = ir_trec(m, t);
  return r->kind == IR_TK_VEC ? r->elem : t;
}
int ir_type_bits(const IrModule *m, IrType t) {
  const IrTypeRec *r = ir_trec(m, t);
  if (r->kind == IR_TK_INT || r->kind == IR_TK_FLOAT) return r->bits;
  if (r->kind == IR_TK_VEC) return (int)r->len * m->types[r->elem].bits;
  if (r->kind == IR_TK_PTR) return (int)r->size * 8;
  return (int)r->size * 8;
}
