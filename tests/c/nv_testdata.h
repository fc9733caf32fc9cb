/* nv_testdata.h: helpers shared by the tests of src/nvvm (test_nv_*.c). */
#ifndef NV_TESTDATA_H
#define NV_TESTDATA_H

#include <stdlib.h>
#include <string.h>

#include "cl_buf.h"
#include "nv_compile.h"

/* tests/data/nvvm/<name>, read whole (the tests run in the source tree). */
static inline ClBuf nv_test_file(const char *name) {
  char path[1024];
  ClBuf b = {0};
  snprintf(path, sizeof path, "%s/tests/data/nvvm/%s", CUTELUA_SOURCE_DIR, name);
  if (cl_buf_read_file(&b, path) != 0) {
    fprintf(stderr, "cannot read test data %s\n", path);
    exit(2);
  }
  return b;
}

/* Options for tests: defaults with a fixed arch, no cache, no dumps, so the
 * environment and the machine do not change what a test sees. */
static inline void nv_test_options(NvOptions *o, const char *arch) {
  nv_options_default(o);
  nv_options_set_arch(o, arch);
  o->cache = 0;
  o->cache_dir[0] = 0;
}

static inline int nv_test_has_kernel(const ClBuf *cubin, const char *name) {
  ClBuf k = {0};
  int found = 0;
  if (nv_cubin_kernels(cubin->data, cubin->len, &k, NULL) == 0) {
    for (const char *p = cl_buf_str(&k); *p;) {
      const char *e = strchr(p, '\n');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      if (n == strlen(name) && memcmp(p, name, n) == 0) found = 1;
      p += n + (e ? 1 : 0);
    }
  }
  cl_buf_free(&k);
  return found;
}

#endif
