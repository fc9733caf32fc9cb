/* nv_diag: structured diagnostics from libnvvm's and ptxas's logs.
 *
 * The tools name the failing place in their own formats:
 *   libnvvm   "nvvm-ir (25, 22): parse use of undefined value '%zz'"
 *   ptxas     "ptxas application ptx input, line 77; error   : Unknown modifier"
 *   verifier  "Instruction does not dominate all uses!" followed by the
 *             offending instructions, indented, with no line number.
 * From those, a diagnostic keeps the tool's log, marks the named lines in an
 * excerpt of the input (with a caret under the column when there is one), and
 * finds the Lua line the failing line came from: NVVM IR through its `!dbg`
 * DILocation and DIFile, PTX through the nearest `.loc` and its `.file`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_internal.h"

/* The name the main NVVM module is given in libnvvm (it prefixes log lines). */
const char nv_nvvm_module_name[] = "nvvm-ir";

enum { MAX_MARKS = 16, CONTEXT_BEFORE = 5, CONTEXT_AFTER = 3, MAX_SHOWN = 200 };

typedef struct Lines {
  const char *text;
  size_t len;
  size_t *start; /* start[i]: offset of line i+1; start[n] = len + 1 */
  int n;
} Lines;

static int lines_index(Lines *l, const char *text, size_t len) {
  l->text = text, l->len = len, l->n = 0;
  size_t cap = 1024, pos = 0;
  l->start = malloc(cap * sizeof *l->start);
  if (!l->start) return -1;
  for (;;) {
    if ((size_t)l->n + 2 > cap) {
      size_t *p = realloc(l->start, (cap *= 2) * sizeof *p);
      if (!p) return -1;
      l->start = p;
    }
    l->start[l->n++] = pos;
    const char *nl = pos < len ? memchr(text + pos, '\n', len - pos) : NULL;
    if (!nl) {
      l->start[l->n] = len + 1; /* the last line ends at the end of the text */
      return 0;
    }
    pos = (size_t)(nl - text) + 1;
    if (pos == len) {
      l->start[l->n] = len; /* a final newline ends the last line; it starts none */
      return 0;
    }
  }
}

/* Line i (1-based) without its newline. */
static const char *line_at(const Lines *l, int i, size_t *n) {
  size_t s = l->start[i - 1], e = l->start[i] - 1;
  if (e > l->len) e = l->len;
  *n = e - s;
  return l->text + s;
}

static int add_mark(int *marks, int *nmarks, int line) {
  for (int i = 0; i < *nmarks; i++)
    if (marks[i] == line) return 0;
  if (*nmarks < MAX_MARKS) marks[(*nmarks)++] = line;
  return 1;
}

/* Lines named by a log: "<module> (L, C):" (libnvvm) or "ptx input, line L;" (ptxas). */
static void find_named_lines(const char *log, int stage, int *marks, int *nmarks, int *col) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s (", nv_nvvm_module_name);
  for (const char *p = log; p && *p;) {
    const char *eol = strchr(p, '\n');
    int line = 0, c = 0;
    const char *hit;
    if (stage == NV_STAGE_LL && (hit = strstr(p, pat)) && (!eol || hit < eol)) {
      if (sscanf(hit + strlen(pat), "%d, %d)", &line, &c) < 1) line = 0;
    } else if (stage == NV_STAGE_PTX && (hit = strstr(p, "ptx input, line ")) && (!eol || hit < eol)) {
      /* Errors first: a warning's line is marked only when no error names one. */
      const char *semi = strchr(hit, ';');
      int is_error = semi && (!eol || semi < eol) && strncmp(semi + 1, " error", 6) == 0;
      if (sscanf(hit + 16, "%d", &line) < 1 || (!is_error && *nmarks)) line = 0;
    }
    if (line > 0 && add_mark(marks, nmarks, line) && *nmarks == 1) *col = c;
    p = eol ? eol + 1 : NULL;
  }
}

static const char *skip_blank(const char *s, const char *e) {
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  return s;
}

/* The LLVM verifier prints offending instructions (indented) without line
 * numbers: find each in the input by its text. */
static void find_verifier_lines(const char *log, const Lines *l, int *marks, int *nmarks) {
  for (const char *p = log; p && *p;) {
    const char *eol = strchr(p, '\n'), *e = eol ? eol : p + strlen(p);
    if (p[0] == ' ' && p[1] == ' ') {
      const char *s = skip_blank(p, e);
      size_t want = (size_t)(e - s);
      for (int i = 1; want && i <= l->n; i++) {
        size_t n;
        const char *t = line_at(l, i, &n), *te = t + n;
        t = skip_blank(t, te);
        if ((size_t)(te - t) == want && memcmp(t, s, want) == 0) {
          add_mark(marks, nmarks, i);
          break;
        }
      }
    }
    p = eol ? eol + 1 : NULL;
  }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void excerpt(ClBuf *out, const Lines *l, const int *marks, int nmarks, int first, int col) {
  int lo = first - CONTEXT_BEFORE, hi = first + CONTEXT_AFTER;
  if (lo < 1) lo = 1;
  if (hi > l->n) hi = l->n;
  for (int i = lo; i <= hi; i++) {
    int marked = 0;
    for (int m = 0; m < nmarks; m++) marked |= marks[m] == i;
    size_t n;
    const char *t = line_at(l, i, &n);
    int shown = n > MAX_SHOWN ? MAX_SHOWN : (int)n;
    cl_buf_printf(out, "%s %6d | %.*s%s\n", marked ? ">" : " ", i, shown, t, (int)n > shown ? " ..." : "");
    if (i == first && col > 0 && col <= shown) {
      cl_buf_puts(out, "         | ");
      for (int k = 1; k < col; k++) cl_buf_putc(out, t[k - 1] == '\t' ? '\t' : ' ');
      cl_buf_puts(out, "^\n");
    }
  }
}

/* ---- Lua locations ------------------------------------------------------------- */

/* Finds the metadata line "!<id> = ..." and returns it (its length in *n). */
static const char *metadata(const Lines *l, long id, size_t *n) {
  char head[32];
  int hn = snprintf(head, sizeof head, "!%ld = ", id);
  for (int i = l->n; i >= 1; i--) { /* metadata sits at the end of a module */
    const char *t = line_at(l, i, n);
    if (*n >= (size_t)hn && memcmp(t, head, (size_t)hn) == 0) return t;
  }
  return NULL;
}

/* The value of `key: !N` or `key: N` inside a metadata line; -1 when absent. */
static long md_field(const char *t, size_t n, const char *key) {
  char k[32];
  snprintf(k, sizeof k, "%s: ", key);
  size_t kn = strlen(k);
  for (size_t i = 0; i + kn < n; i++)
    if ((i == 0 || t[i - 1] == ' ' || t[i - 1] == '(') && memcmp(t + i, k, kn) == 0) {
      const char *v = t + i + kn;
      if (*v == '!') v++;
      return strtol(v, NULL, 10);
    }
  return -1;
}

/* The quoted string value of `key: "..."`, copied into out. */
static int md_string(const char *t, size_t n, const char *key, char *out, size_t cap) {
  char k[32];
  snprintf(k, sizeof k, "%s: \"", key);
  size_t kn = strlen(k);
  for (size_t i = 0; i + kn < n; i++)
    if (memcmp(t + i, k, kn) == 0) {
      const char *v = t + i + kn, *end = memchr(v, '"', n - i - kn);
      if (!end) return -1;
      snprintf(out, cap, "%.*s", (int)(end - v), v);
      return 0;
    }
  return -1;
}

/* NVVM IR: "!dbg !N" on the failing line (or the nearest line above it in the
 * same function) -> DILocation line and scope -> the scope's file. */
static int nvvm_source(const Lines *l, int line, ClBuf *out) {
  for (int i = line; i >= 1 && i > line - 50; i--) {
    size_t n;
    const char *t = line_at(l, i, &n);
    if (n >= 6 && memcmp(t, "define", 6) == 0 && i != line) break;
    const char *dbg = NULL;
    for (size_t k = 0; k + 6 < n; k++)
      if (memcmp(t + k, "!dbg !", 6) == 0) dbg = t + k + 6;
    if (!dbg) continue;
    size_t mn, sn, fn;
    const char *loc = metadata(l, strtol(dbg, NULL, 10), &mn);
    if (!loc || !strstr(loc, "DILocation")) return -1;
    long lua_line = md_field(loc, mn, "line"), scope = md_field(loc, mn, "scope");
    const char *sc = scope >= 0 ? metadata(l, scope, &sn) : NULL;
    long file = sc ? md_field(sc, sn, "file") : -1;
    const char *f = file >= 0 ? metadata(l, file, &fn) : NULL;
    char name[512];
    if (!f || lua_line < 0 || md_string(f, fn, "filename", name, sizeof name) != 0) return -1;
    cl_buf_printf(out, "%s:%ld", name, lua_line);
    return 0;
  }
  return -1;
}

/* PTX: the nearest ".loc F L C" at or above the failing line -> ".file F". */
static int ptx_source(const Lines *l, int line, ClBuf *out) {
  for (int i = line; i >= 1; i--) {
    size_t n;
    const char *t = line_at(l, i, &n), *e = t + n;
    t = skip_blank(t, e);
    long file, lua_line;
    if ((size_t)(e - t) > 5 && memcmp(t, ".loc", 4) == 0 && sscanf(t + 4, "%ld %ld", &file, &lua_line) == 2) {
      char name[512];
      for (int j = 1; j <= l->n; j++) {
        const char *u = line_at(l, j, &n), *ue = u + n;
        u = skip_blank(u, ue);
        /* ".file 1 \"x\"" with a tab or a space after .file */
        if ((size_t)(ue - u) > 6 && memcmp(u, ".file", 5) == 0 && (u[5] == '\t' || u[5] == ' ')) {
          long id = strtol(u + 6, NULL, 10);
          const char *q = memchr(u, '"', (size_t)(ue - u));
          if (id == file && q) {
            const char *qe = memchr(q + 1, '"', (size_t)(ue - q - 1));
            if (!qe) return -1;
            snprintf(name, sizeof name, "%.*s", (int)(qe - q - 1), q + 1);
            cl_buf_printf(out, "%s:%ld", name, lua_line);
            return 0;
          }
        }
      }
      return -1;
    }
  }
  return -1;
}

/* ---- filling and formatting --------------------------------------------------------- */

void nv_diag_format(NvResult *r) {
  ClBuf *d = &r->part[NV_PART_DIAG];
  cl_buf_clear(d);
  cl_buf_puts(d, cl_buf_str(&r->part[NV_PART_MESSAGE]));
  const ClBuf *log = &r->part[NV_PART_TOOL_LOG];
  if (log->len) {
    cl_buf_puts(d, ":\n");
    /* The log, indented, without trailing blank lines. */
    const char *p = cl_buf_str(log), *end = p + log->len;
    while (end > p && (end[-1] == '\n' || end[-1] == ' ')) end--;
    while (p < end) {
      const char *eol = memchr(p, '\n', (size_t)(end - p));
      const char *e = eol ? eol : end;
      cl_buf_printf(d, "  %.*s\n", (int)(e - p), p);
      p = eol ? eol + 1 : end;
    }
  } else {
    cl_buf_putc(d, '\n');
  }
  if (r->line > 0) {
    const char *in = r->input_stage == NV_STAGE_PTX ? "PTX" : "NVVM IR";
    if (r->col > 0) cl_buf_printf(d, "at line %d, column %d of the %s", r->line, r->col, in);
    else cl_buf_printf(d, "at line %d of the %s", r->line, in);
    if (r->part[NV_PART_SOURCE].len) cl_buf_printf(d, ", from %s", cl_buf_str(&r->part[NV_PART_SOURCE]));
    cl_buf_puts(d, ":\n");
    cl_buf_puts(d, cl_buf_str(&r->part[NV_PART_EXCERPT]));
  }
  /* Without a trailing newline: Lua appends it to error messages itself. */
  while (d->len && d->data[d->len - 1] == '\n') d->data[--d->len] = 0;
}

void nv_diag_fill(NvResult *r, int phase, const char *what, const char *log, const char *text, size_t len,
                  int input_stage) {
  nv_result_clear_diag(r);
  r->phase = phase;
  r->input_stage = input_stage;
  cl_buf_puts(&r->part[NV_PART_MESSAGE], what);
  if (log) cl_buf_puts(&r->part[NV_PART_TOOL_LOG], log);
  int marks[MAX_MARKS], nmarks = 0, col = 0;
  Lines l = {0};
  if (text && log && lines_index(&l, text, len) == 0) {
    find_named_lines(log, input_stage, marks, &nmarks, &col);
    if (!nmarks && input_stage == NV_STAGE_LL) find_verifier_lines(log, &l, marks, &nmarks);
    int first = nmarks ? marks[0] : 0;
    if (first > l.n) first = 0, nmarks = 0; /* a line past the end: the log named another input */
    if (first) {
      int sorted[MAX_MARKS];
      memcpy(sorted, marks, sizeof marks);
      qsort(sorted, (size_t)nmarks, sizeof *sorted, cmp_int);
      r->line = first;
      r->col = col;
      excerpt(&r->part[NV_PART_EXCERPT], &l, sorted, nmarks, first, col);
      if (input_stage == NV_STAGE_LL) nvvm_source(&l, first, &r->part[NV_PART_SOURCE]);
      else ptx_source(&l, first, &r->part[NV_PART_SOURCE]);
    }
  }
  free(l.start);
  nv_diag_format(r);
}

void nv_diag_simple(NvResult *r, int phase, const char *message) {
  nv_diag_fill(r, phase, message, NULL, NULL, 0, NV_STAGE_LL);
}
