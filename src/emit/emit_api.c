/* emit_api.c: the emitter's function table for Lua (CLEmitApi, emit.cdef):
 * texts the caller owns, and em_nvvm writing into them. */
#include <stdlib.h>

#include "emit.h"

struct EmText {
  ClBuf buf;
};

static EmText *text_new(void) { return calloc(1, sizeof(EmText)); }

static void text_free(EmText *t) {
  if (!t) return;
  cl_buf_free(&t->buf);
  free(t);
}

static const char *text(const EmText *t, size_t *len) {
  if (len) *len = t ? t->buf.len : 0;
  return t ? cl_buf_str(&t->buf) : "";
}

static int32_t nvvm(const IrModule *m, const EmOptions *opt, EmText *out, EmText *err) {
  if (!out) return -1;
  cl_buf_clear(&out->buf);
  if (err) cl_buf_clear(&err->buf);
  return em_nvvm(m, opt, &out->buf, err ? &err->buf : NULL);
}

static const CLEmitApi api = {
    .abi = CL_EMIT_ABI,
    .text_new = text_new,
    .text_free = text_free,
    .text = text,
    .nvvm = nvvm,
};

const void *cl_emit_api(void) { return &api; }
