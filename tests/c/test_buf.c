/* Unit tests of src/util: cl_buf and cl_dl. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "cl_buf.h"
#include "cl_dl.h"

static void test_buf(void) {
  ClBuf b = {0};
  CHECK_STR(cl_buf_str(&b), "");
  cl_buf_puts(&b, "abc");
  cl_buf_putc(&b, '-');
  cl_buf_printf(&b, "%d:%s", 42, "x");
  CHECK_STR(cl_buf_str(&b), "abc-42:x");
  CHECK_EQ_INT(b.len, 8);
  /* Longer than the printf fast path (256 bytes). */
  char big[1000];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = 0;
  cl_buf_clear(&b);
  cl_buf_printf(&b, "<%s>", big);
  CHECK_EQ_INT(b.len, 1001);
  CHECK(b.data[0] == '<' && b.data[1000] == '>' && b.data[1001] == 0);
  cl_buf_free(&b);
  CHECK(b.data == NULL && b.len == 0);
}

static void test_read_file(void) {
  ClBuf b = {0};
  CHECK_EQ_INT(cl_buf_read_file(&b, "tests/c/test_buf.c"), 0);
  CHECK_CONTAINS(cl_buf_str(&b), "Unit tests of src/util");
  CHECK(cl_buf_read_file(&b, "tests/c/no-such-file") != 0);
  CHECK_EQ_INT(b.len, 0);
  cl_buf_free(&b);
}

static int read_fifo(void *path, int fd) {
  ClBuf b = {0};
  const char *kind = NULL;
  int e = cl_buf_read_regular(&b, path, 1 << 20, &kind);
  char out[128];
  snprintf(out, sizeof out, "%s %s", e == EINVAL ? "EINVAL" : strerror(e), kind ? kind : "-");
  child_say(fd, out);
  cl_buf_free(&b);
  return 0;
}

/* Files put in place by someone else: a FIFO must not block, a device must
 * not be read without end, and nothing past the cap is read. */
static void test_read_regular(void) {
  ClBuf b = {0};
  const char *kind = NULL;
  CHECK_EQ_INT(cl_buf_read_regular(&b, "tests/c/test_buf.c", 1 << 20, &kind), 0);
  CHECK_CONTAINS(cl_buf_str(&b), "Unit tests of src/util");
  CHECK(kind == NULL);
  size_t whole = b.len;
  CHECK_EQ_INT(cl_buf_read_regular(&b, "tests/c/test_buf.c", whole, NULL), 0);
  CHECK_EQ_INT(b.len, whole);
  CHECK_EQ_INT(cl_buf_read_regular(&b, "tests/c/test_buf.c", whole - 1, NULL), EFBIG);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(cl_buf_read_regular(&b, "tests/c/no-such-file", 100, &kind), ENOENT);
  CHECK_EQ_INT(cl_buf_read_regular(&b, "/dev/zero", 100, &kind), EINVAL);
  CHECK_STR(kind, "a character device");
  CHECK_EQ_INT(cl_buf_read_regular(&b, "tests/c", 100, &kind), EINVAL);
  CHECK_STR(kind, "a directory");
  char fifo[64];
  snprintf(fifo, sizeof fifo, "/tmp/cutelua-test-fifo-%d", (int)getpid());
  unlink(fifo);
  if (mkfifo(fifo, 0600) == 0) {
    /* in a child with a timeout: a blocking open would hang the test */
    ChildResult c = child_run(read_fifo, fifo, 10000);
    CHECK_AT(child_clean(&c), "reading a FIFO: %s", child_describe(&c));
    CHECK_STR(c.out, "EINVAL a FIFO");
    unlink(fifo);
  } else {
    CHECK_AT(0, "mkfifo %s: %s", fifo, strerror(errno));
  }
  /* a descriptor read up to a limit */
  int fd = cl_file_open_regular("tests/c/test_buf.c", NULL);
  CHECK(fd >= 0);
  CHECK_EQ_INT(cl_buf_read_fd(&b, fd, 10), 0);
  CHECK_EQ_INT(b.len, 10);
  close(fd);
  cl_buf_free(&b);
}

static void test_dl(void) {
  CHECK(cl_dl_find("nvvm") == CL_LIB_NVVM);
  CHECK(cl_dl_find("cuda") == CL_LIB_CUDA);
  CHECK(cl_dl_find("nope") == -1);
  CHECK_STR(cl_dl_key(CL_LIB_NVJITLINK), "nvjitlink");
  /* A toolkit library under a CUDA_HOME that has none: the message names the
   * library and the places searched (the fallback /usr/local/cuda may still
   * find it, which is fine: then the path must be reported). */
  setenv("CUDA_HOME", "/nonexistent-cuda", 1);
  ClBuf err = {0};
  void *h = cl_dl_lib(CL_LIB_NVVM, &err);
  if (h) {
    CHECK_CONTAINS(cl_dl_path(CL_LIB_NVVM), "libnvvm.so");
  } else {
    CHECK_CONTAINS(cl_buf_str(&err), "libnvvm.so.4");
    CHECK_CONTAINS(cl_buf_str(&err), "/nonexistent-cuda/nvvm/lib64/libnvvm.so.4");
    CHECK_CONTAINS(cl_buf_str(&err), "CUDA_HOME");
  }
  cl_buf_free(&err);
  /* The driver: either found (with a path) or a message naming libcuda.so.1. */
  h = cl_dl_lib(CL_LIB_CUDA, &err);
  if (h) CHECK(cl_dl_path(CL_LIB_CUDA) != NULL);
  else CHECK_CONTAINS(cl_buf_str(&err), "libcuda.so.1");
  cl_buf_free(&err);
}

int main(void) {
  test_buf();
  test_read_file();
  test_read_regular();
  test_dl();
  return check_report();
}
