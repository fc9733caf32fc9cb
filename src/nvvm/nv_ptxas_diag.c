/* nv_ptxas_diag.c: ptxas notes that cutelua does not let pass silently.
 *
 * ptxas prints some performance losses as plain info lines and still builds
 * the cubin: when it serializes wgmma.mma_async (each HGMMA then waits for
 * the one before; 2-3x slower for the whole function), it says
 *   ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async
 *   instructions are serialized due to ... in the function 'k'
 * (hopper-facts 1.7). A table maps such codes to an error (or not) with what
 * happened and what to do; any other line saying wgmma is "serialized" is an
 * error too (codes this ptxas did not show us). One call from the link step
 * (nv_compile.c) after ptxas ran; it fails the compile with a diagnostic
 * quoting ptxas's lines when a row says error. Another note is a new row. */
#include <string.h>

#include "nv_internal.h"

typedef struct PtxasCode {
  const char *code; /* "C7514" */
  int error;        /* 1: fail the compile */
  const char *what; /* what happened and what to do */
} PtxasCode;

#define SERIALIZED "ptxas serialized wgmma.mma_async (every wgmma waits for the one before it: a 2-3x slower function): "

static const PtxasCode codes[] = {
    {"C7509", 1, SERIALIZED "a call to a function that is not inlined (an extern call) is in a function with wgmma: inline it"},
    {"C7511", 1,
     SERIALIZED "an instruction other than wgmma wrote an accumulator (or the accumulators do not fit in the "
                "registers) between warpgroup_fence() and the warpgroup_wait_group() that covers the batch: do not "
                "touch the accumulator in that window (cute.arch.warpgroup_fence_operand(acc) before the fence and "
                "after the wait keeps the compiler from moving accesses into it), or use a smaller N"},
    {"C7514", 1,
     SERIALIZED "an instruction other than wgmma read an accumulator between warpgroup_fence() and the "
                "warpgroup_wait_group() that covers the batch: read it only after the wait "
                "(cute.arch.warpgroup_fence_operand(acc) after the wait keeps reads there)"},
};

/* A wgmma serialization note of a code not in the table. */
static const char other_serialized[] =
    SERIALIZED "see ptxas's note below; keep the accumulators untouched between warpgroup_fence() and "
               "warpgroup_wait_group()";

/* The table row of a log line, or NULL. */
static const PtxasCode *row_of(const char *line, size_t n) {
  for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
    size_t cl = strlen(codes[i].code);
    for (size_t j = 0; j + cl + 2 <= n; j++)
      if (line[j] == '(' && memcmp(line + j + 1, codes[i].code, cl) == 0 && line[j + 1 + cl] == ')') return &codes[i];
  }
  return NULL;
}

static int mentions(const char *line, size_t n, const char *word) {
  size_t wl = strlen(word);
  for (size_t j = 0; j + wl <= n; j++)
    if (memcmp(line + j, word, wl) == 0) return 1;
  return 0;
}

int nv_ptxas_diag(NvResult *r, const char *log, const char *ptx, size_t len) {
  if (!log) return 0;
  ClBuf what = {0}, lines = {0};
  int errors = 0;
  for (const char *p = log; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const PtxasCode *c = row_of(p, n);
    int serialized = mentions(p, n, "wgmma") && mentions(p, n, "serialized");
    if ((c && c->error) || (!c && serialized)) {
      if (!errors++) cl_buf_puts(&what, c ? c->what : other_serialized); /* the first one's */
      cl_buf_printf(&lines, "%.*s\n", (int)n, p);
    }
    p = e ? e + 1 : p + n;
  }
  if (errors) nv_diag_fill(r, NV_PHASE_PTXAS, cl_buf_str(&what), cl_buf_str(&lines), ptx, len, NV_STAGE_PTX);
  cl_buf_free(&what);
  cl_buf_free(&lines);
  return errors ? -1 : 0;
}
