/* cl_buf: growable NUL-terminated byte buffer (see cl_buf.h). */
#include "cl_buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cl_buf_free(ClBuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
}

void cl_buf_clear(ClBuf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

int cl_buf_reserve(ClBuf *b, size_t extra) {
  if (b->oom) return 0;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void cl_buf_add(ClBuf *b, const void *p, size_t n) {
  if (!cl_buf_reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void cl_buf_puts(ClBuf *b, const char *s) { cl_buf_add(b, s, strlen(s)); }

void cl_buf_putc(ClBuf *b, char c) { cl_buf_add(b, &c, 1); }

void cl_buf_vprintf(ClBuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    cl_buf_add(b, small, (size_t)n);
    return;
  }
  if (!cl_buf_reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void cl_buf_printf(ClBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cl_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *cl_buf_str(const ClBuf *b) { return b->data ? b->data : ""; }

int cl_buf_read_file(ClBuf *b, const char *path) {
  cl_buf_clear(b);
  FILE *f = fopen(path, "rb");
  if (!f) return errno ? errno : ENOENT;
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) cl_buf_add(b, chunk, n);
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (b->oom) err = ENOMEM;
  if (err) cl_buf_clear(b);
  return err;
}
