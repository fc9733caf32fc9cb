/* cl_buf: a growable byte buffer, always NUL-terminated.
 *
 * Used for diagnostics, emitted text (IR, NVVM IR) and file contents. A zeroed
 * ClBuf is a valid empty buffer. On allocation failure the buffer sets `oom`
 * and further appends are ignored, so callers check once at the end instead of
 * after every append. */
#ifndef CL_BUF_H
#define CL_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ClBuf {
  char *data;   /* NUL-terminated when len > 0 or after any append */
  size_t len;   /* bytes in use, excluding the terminator */
  size_t cap;   /* bytes allocated */
  int oom;      /* set once an allocation failed */
} ClBuf;

void cl_buf_free(ClBuf *b);
void cl_buf_clear(ClBuf *b);
int cl_buf_reserve(ClBuf *b, size_t extra);
void cl_buf_add(ClBuf *b, const void *p, size_t n);
void cl_buf_puts(ClBuf *b, const char *s);
void cl_buf_putc(ClBuf *b, char c);
void cl_buf_printf(ClBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cl_buf_vprintf(ClBuf *b, const char *fmt, va_list ap);
/* The contents as a C string; "" for an empty buffer. */
const char *cl_buf_str(const ClBuf *b);
/* Reads a whole file; returns 0 on success, else errno (buffer left cleared). */
int cl_buf_read_file(ClBuf *b, const char *path);

#endif
