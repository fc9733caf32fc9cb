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

/* Files that another process may have put in place (cache entries, exported
 * libraries) are read through these: a FIFO there would block a plain open
 * forever, and a link to /dev/zero would be read until memory runs out. */
/* Opens path for reading only when it is a regular file: opened
 * non-blocking (a FIFO with no writer does not wait), then checked with
 * fstat. Returns the descriptor, or -1 with errno; for something that is not
 * a regular file errno is EINVAL and *kind (when given) names what it is
 * ("a FIFO", "a directory", "a character device", ...). */
int cl_file_open_regular(const char *path, const char **kind);
/* Appends what fd holds, up to max bytes (stops at end of file). 0 on
 * success, else errno (ENOMEM when the buffer could not grow). */
int cl_buf_read_fd(ClBuf *b, int fd, size_t max);
/* A whole regular file of at most max bytes (cl_file_open_regular, then
 * cl_buf_read_fd): 0, or errno as above, EFBIG when it holds more than max
 * bytes (buffer left cleared on failure). */
int cl_buf_read_regular(ClBuf *b, const char *path, size_t max, const char **kind);

#endif
