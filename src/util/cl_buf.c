/* cl_buf: growable NUL-terminated byte buffer (see cl_buf.h). */
#include "cl_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

int cl_file_open_regular(const char *path, const char **kind) {
  if (kind) *kind = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    if (kind) *kind = file_kind(st.st_mode);
    close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

int cl_buf_read_fd(ClBuf *b, int fd, size_t max) {
  char chunk[65536];
  while (max > 0) {
    ssize_t n = read(fd, chunk, max < sizeof chunk ? max : sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno ? errno : EIO;
    if (n == 0) break;
    cl_buf_add(b, chunk, (size_t)n);
    if (b->oom) return ENOMEM;
    max -= (size_t)n;
  }
  return 0;
}

int cl_buf_read_regular(ClBuf *b, const char *path, size_t max, const char **kind) {
  cl_buf_clear(b);
  int fd = cl_file_open_regular(path, kind);
  if (fd < 0) return errno ? errno : EIO;
  /* one byte past the cap tells a file that is too long */
  int err = cl_buf_read_fd(b, fd, max < (size_t)-1 ? max + 1 : max);
  close(fd);
  if (!err && b->len > max) err = EFBIG;
  if (err) cl_buf_clear(b);
  return err;
}
