/* ir_module.c: a module's lifetime, its arena, interned strings and locations,
 * and its diagnostics.
 *
 * The arena hands out memory in chunks (64 KiB, or one chunk per larger
 * request) and frees them all at once; arrays grow by doubling into new arena
 * memory. Strings and locations are interned through small open-addressing
 * tables of ids, so equal strings have equal ids and the tracer's set_loc is a
 * hash look-up, not an allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_impl.h"

/* --- arena ------------------------------------------------------------------------------------------------ */
struct IrChunk {
  IrChunk *next;
  size_t size;
  /* data follows, aligned to 16 */
};
#define IR_CHUNK_HDR ((sizeof(IrChunk) + 15) & ~(size_t)15)
#define IR_CHUNK_SIZE ((size_t)64 * 1024)

void *ir_arena_alloc(IrArena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  if ((size_t)(a->end - a->cur) < n) {
    size_t size = n > IR_CHUNK_SIZE / 4 ? n : IR_CHUNK_SIZE;
    IrChunk *c = malloc(IR_CHUNK_HDR + size);
    if (!c) return NULL;
    c->size = size;
    c->next = a->head;
    a->head = c;
    a->bytes += IR_CHUNK_HDR + size;
    char *data = (char *)c + IR_CHUNK_HDR;
    if (size != IR_CHUNK_SIZE) return data; /* a big block of its own: keep the current chunk */
    a->cur = data;
    a->end = data + size;
  }
  void *p = a->cur;
  a->cur += n;
  return p;
}

void ir_arena_free(IrArena *a) {
  IrChunk *c = a->head;
  while (c) {
    IrChunk *next = c->next;
    free(c);
    c = next;
  }
  memset(a, 0, sizeof *a);
}

int ir_arena_grow(IrArena *a, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 1;
  uint32_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > UINT32_MAX / 2) return 0;
    ncap *= 2;
  }
  void *p = ir_arena_alloc(a, (size_t)ncap * elem);
  if (!p) return 0;
  if (*arr && *cap) memcpy(p, *arr, (size_t)*cap * elem);
  memset((char *)p + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
  *arr = p;
  *cap = ncap;
  return 1;
}

/* --- hashing ---------------------------------------------------------------------------------------------- */
static uint32_t hash_bytes(const void *p, size_t n, uint32_t h) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
  return h;
}

/* Rebuilds an id table of capacity cap from ids 1..n-1 with hash function fn. */
static int table_rebuild(IrModule *m, uint32_t **tab, uint32_t *cap, uint32_t n, uint32_t (*fn)(IrModule *, uint32_t)) {
  uint32_t ncap = *cap ? *cap * 2 : 256;
  uint32_t *t = ir_arena_alloc(&m->arena, (size_t)ncap * sizeof *t);
  if (!t) return 0;
  memset(t, 0, (size_t)ncap * sizeof *t);
  for (uint32_t id = 1; id < n; id++) {
    uint32_t i = fn(m, id) & (ncap - 1);
    while (t[i]) i = (i + 1) & (ncap - 1);
    t[i] = id;
  }
  *tab = t;
  *cap = ncap;
  return 1;
}

/* --- strings ---------------------------------------------------------------------------------------------- */
static uint32_t str_hash_id(IrModule *m, uint32_t id) {
  return hash_bytes(m->strs[id], strlen(m->strs[id]), 2166136261u);
}

uint32_t ir_str(IrModule *m, const char *s) {
  if (!m || !s) return 0;
  size_t len = strlen(s);
  uint32_t h = hash_bytes(s, len, 2166136261u);
  if (m->strtabcap) {
    for (uint32_t i = h & (m->strtabcap - 1);; i = (i + 1) & (m->strtabcap - 1)) {
      uint32_t id = m->strtab[i];
      if (!id) break;
      if (strcmp(m->strs[id], s) == 0) return id;
    }
  }
  if (m->nstr == 0) m->nstr = 1; /* id 0 is "none" */
  if ((m->nstr + 1) * 2 > m->strtabcap &&
      !table_rebuild(m, &m->strtab, &m->strtabcap, m->nstr, str_hash_id))
    goto oom;
  if (!IR_GROW(m, m->strs, m->capstr, m->nstr + 1)) goto oom;
  char *copy = ir_arena_alloc(&m->arena, len + 1);
  if (!copy) goto oom;
  memcpy(copy, s, len + 1);
  uint32_t id = m->nstr++;
  m->strs[id] = copy;
  uint32_t i = h & (m->strtabcap - 1);
  while (m->strtab[i]) i = (i + 1) & (m->strtabcap - 1);
  m->strtab[i] = id;
  return id;
oom:
  m->oom = 1;
  return 0;
}

uint32_t ir_str_find(const IrModule *m, const char *s) {
  if (!m || !s || !m->strtabcap) return 0;
  uint32_t h = hash_bytes(s, strlen(s), 2166136261u);
  for (uint32_t i = h & (m->strtabcap - 1);; i = (i + 1) & (m->strtabcap - 1)) {
    uint32_t id = m->strtab[i];
    if (!id) return 0;
    if (strcmp(m->strs[id], s) == 0) return id;
  }
}

const char *ir_str_get(const IrModule *m, uint32_t id) {
  return (m && id > 0 && id < m->nstr) ? m->strs[id] : "";
}

/* --- locations -------------------------------------------------------------------------------------------- */
static uint32_t loc_hash(const IrLoc *l) { return hash_bytes(l, sizeof *l, 2166136261u); }
static uint32_t loc_hash_id(IrModule *m, uint32_t id) { return loc_hash(&m->locs[id]); }

uint32_t ir_set_loc(IrModule *m, const char *file, int line, const char *function) {
  if (!m) return 0;
  if (line <= 0 && (!file || !*file)) {
    m->cur_loc = 0;
    return 0;
  }
  IrLoc l = {ir_str(m, file ? file : "?"), (uint32_t)(line > 0 ? line : 0), function ? ir_str(m, function) : 0};
  uint32_t h = loc_hash(&l);
  if (m->loctabcap) {
    for (uint32_t i = h & (m->loctabcap - 1);; i = (i + 1) & (m->loctabcap - 1)) {
      uint32_t id = m->loctab[i];
      if (!id) break;
      if (memcmp(&m->locs[id], &l, sizeof l) == 0) return m->cur_loc = id;
    }
  }
  if (m->nloc == 0) m->nloc = 1;
  if ((m->nloc + 1) * 2 > m->loctabcap &&
      !table_rebuild(m, &m->loctab, &m->loctabcap, m->nloc, loc_hash_id))
    goto oom;
  if (!IR_GROW(m, m->locs, m->caploc, m->nloc + 1)) goto oom;
  uint32_t id = m->nloc++;
  m->locs[id] = l;
  uint32_t i = h & (m->loctabcap - 1);
  while (m->loctab[i]) i = (i + 1) & (m->loctabcap - 1);
  m->loctab[i] = id;
  return m->cur_loc = id;
oom:
  m->oom = 1;
  return 0;
}

void ir_set_loc_id(IrModule *m, uint32_t loc) {
  if (m) m->cur_loc = loc < m->nloc ? loc : 0;
}

void ir_loc_format(const IrModule *m, uint32_t loc, ClBuf *out) {
  if (!loc || loc >= m->nloc) return;
  const IrLoc *l = &m->locs[loc];
  cl_buf_printf(out, "%s:%u", ir_str_get(m, l->file), l->line);
  if (l->fn) cl_buf_printf(out, " (%s)", ir_str_get(m, l->fn));
}

/* --- module ----------------------------------------------------------------------------------------------- */
IrModule *ir_module_new(void) {
  IrModule *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->opt[IR_OPT_FOLD] = 1;
  m->opt[IR_OPT_CHECK] = 1;
  m->target = cl_target_find(CL_TARGET_FALLBACK);
  m->opt[IR_OPT_SM] = m->target->cc;
  m->opt[IR_OPT_MAX_OPS] = IR_MAX_OPS_DEFAULT;
  ir_types_init(m);
  if (m->oom) {
    ir_module_free(m);
    return NULL;
  }
  return m;
}

void ir_module_free(IrModule *m) {
  if (!m) return;
  ir_arena_free(&m->arena);
  cl_buf_free(&m->diag);
  cl_buf_free(&m->text);
  free(m);
}

void ir_module_set(IrModule *m, IrOption opt, int value) {
  if (!m || (unsigned)opt >= IR_OPT__COUNT) return;
  if (opt == IR_OPT_SM) { /* the plain target of that compute capability */
    const ClTarget *t = cl_target_plain(value);
    if (!t) {
      ir_merror(m, "no plain target has compute capability %d.%d (targets: %s)", value / 10, value % 10,
                cl_target_list());
      return;
    }
    if (t != m->target && m->nops) m->unchecked = 1;
    m->target = t;
  }
  m->opt[opt] = value;
  m->changes++;
}

int ir_module_set_target(IrModule *m, const char *name) {
  if (!m) return -1;
  const ClTarget *t = cl_target_find(name);
  if (!t) {
    ir_merror(m, "unknown target '%s' (known: %s)", name ? name : "(null)", cl_target_list());
    return -1;
  }
  if (t != m->target && m->nops) m->unchecked = 1; /* the ops' rules are the old target's */
  m->target = t;
  m->opt[IR_OPT_SM] = t->cc;
  m->changes++;
  return 0;
}

const ClTarget *ir_module_target(const IrModule *m) { return m ? m->target : NULL; }

int ir_module_verified(const IrModule *m) { return m && m->verified && m->verified_at == m->changes; }

int ir_module_get(const IrModule *m, IrOption opt) {
  return (m && (unsigned)opt < IR_OPT__COUNT) ? m->opt[opt] : -1;
}

/* --- diagnostics ------------------------------------------------------------------------------------------ */
const char *ir_diag(const IrModule *m) { return m ? cl_buf_str(&m->diag) : ""; }
int ir_diag_count(const IrModule *m) { return m ? m->ndiag : 0; }
void ir_diag_clear(IrModule *m) {
  if (!m) return;
  cl_buf_clear(&m->diag);
  m->ndiag = 0;
}

void ir_merror(IrModule *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cl_buf_puts(&m->diag, "error: ");
  cl_buf_vprintf(&m->diag, fmt, ap);
  cl_buf_putc(&m->diag, '\n');
  va_end(ap);
  m->ndiag++;
}

/* "file:line (fn): error: message\n  in @f: <op>\n" at location loc. */
static void format_error(const IrFunc *f, IrRef v, uint32_t loc, ClBuf *d, const char *fmt, va_list ap) {
  const IrModule *m = f->m;
  size_t start = d->len;
  ir_loc_format(m, loc, d);
  if (d->len > start) cl_buf_puts(d, ": ");
  cl_buf_puts(d, "error: ");
  cl_buf_vprintf(d, fmt, ap);
  cl_buf_printf(d, "\n  in @%s", ir_str_get(m, f->name));
  if (v && ir_ref_ok(f, v)) {
    cl_buf_puts(d, ": ");
    ir_print_inst_text(f, v, d);
  }
  cl_buf_putc(d, '\n');
}

static void format_error_at(const IrFunc *f, IrRef v, uint32_t loc, ClBuf *d, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void format_error_at(const IrFunc *f, IrRef v, uint32_t loc, ClBuf *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  format_error(f, v, loc, d, fmt, ap);
  va_end(ap);
}

void ir_verror(IrFunc *f, IrRef v, const char *fmt, va_list ap) {
  IrModule *m = f->m;
  /* an op's own location; with no op (a builder call that made none) the
     current one, else where the function was made */
  uint32_t loc = (v && ir_ref_ok(f, v)) ? f->insts[v].loc : m->cur_loc;
  if (!loc) loc = f->loc;
  format_error(f, v, loc, &m->diag, fmt, ap);
  m->ndiag++;
}

void ir_format_error(const IrFunc *f, IrRef v, const char *msg, ClBuf *out) {
  if (!f || !out) return;
  uint32_t loc = (v && ir_ref_ok(f, v)) ? f->insts[v].loc : 0;
  if (!loc) loc = f->loc;
  format_error_at(f, v, loc, out, "%s", msg);
}

void ir_error(IrFunc *f, IrRef v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_verror(f, v, fmt, ap);
  va_end(ap);
}
