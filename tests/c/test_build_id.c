/* cutelua's build id (src/host/cl_fnv.h): FNV-1a vectors, the constants that
 * embedgen wrote against the same hash computed here, and development mode
 * (the bundled files read from a directory). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cl_fnv.h"
#include "cl_host.h"

#define CHECK_EQ_U64(a, b)                                                                    \
  do {                                                                                        \
    unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);            \
    CHECK_AT(a_ == b_, "%s == %s (%016llx vs %016llx)", #a, #b, a_, b_);                      \
  } while (0)

static void test_fnv(void) {
  /* the published FNV-1a 64-bit vectors */
  CHECK_EQ_U64(cl_fnv_bytes(CL_FNV_OFFSET, "", 0), 0xcbf29ce484222325ULL);
  CHECK_EQ_U64(cl_fnv_bytes(CL_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cULL);
  CHECK_EQ_U64(cl_fnv_bytes(CL_FNV_OFFSET, "foobar", 6), 0x85944171f73967e8ULL);
  /* a file's path and contents do not run together */
  uint64_t a = cl_fnv_file(CL_FNV_OFFSET, "ab", "c", 1), b = cl_fnv_file(CL_FNV_OFFSET, "a", "bc", 2);
  CHECK(a != b);
  CHECK(cl_fnv_build_id(1, 2) != cl_fnv_build_id(2, 1));
}

static void test_constants(void) {
  /* embedgen's hash of the bundle is the one computed here over the same bytes */
  uint64_t h = CL_FNV_OFFSET;
  for (size_t i = 0; i < cl_bundle_count; i++)
    h = cl_fnv_file(h, cl_bundle_files[i].path, cl_bundle_files[i].data, cl_bundle_files[i].len);
  CHECK_EQ_U64(h, cl_bundle_hash);
  CHECK_EQ_U64(cl_fnv_build_id(cl_bundle_hash, cl_source_hash), cl_build_id);
  uint64_t id = 0;
  ClBuf err = {0};
  CHECK_EQ_INT(cl_host_build_id(NULL, &id, &err), 0);
  CHECK_EQ_U64(id, cl_build_id);
  CHECK_EQ_INT(cl_host_build_id("", &id, &err), 0);
  CHECK_EQ_U64(id, cl_build_id);
  cl_buf_free(&err);
}

static void test_source_dir(void) {
  /* the checkout the build was made from: the same id */
  uint64_t id = 0;
  ClBuf err = {0};
  CHECK_EQ_INT(cl_host_build_id(CUTELUA_SOURCE_DIR, &id, &err), 0);
  CHECK_EQ_U64(id, cl_build_id);
  /* a copy with one file changed: another id; with one file missing: an error naming it */
  char dir[] = "/tmp/cutelua-build-id-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ClBuf cmd = {0};
  cl_buf_printf(&cmd, "cd '%s' && for f in", CUTELUA_SOURCE_DIR);
  for (size_t i = 0; i < cl_bundle_count; i++) cl_buf_printf(&cmd, " '%s'", cl_bundle_files[i].path);
  cl_buf_printf(&cmd, "; do mkdir -p \"%s/$(dirname \"$f\")\" && cp \"$f\" \"%s/$f\" || exit 1; done", dir, dir);
  CHECK_EQ_INT(system(cl_buf_str(&cmd)), 0);
  CHECK_EQ_INT(cl_host_build_id(dir, &id, &err), 0);
  CHECK_EQ_U64(id, cl_build_id);
  ClBuf path = {0};
  cl_buf_printf(&path, "%s/%s", dir, cl_bundle_files[0].path);
  FILE *f = fopen(cl_buf_str(&path), "ab");
  CHECK(f != NULL);
  if (f) {
    fputc('\n', f);
    fclose(f);
  }
  CHECK_EQ_INT(cl_host_build_id(dir, &id, &err), 0);
  CHECK(id != cl_build_id);
  CHECK_EQ_INT(remove(cl_buf_str(&path)), 0);
  CHECK_EQ_INT(cl_host_build_id(dir, &id, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "cannot read");
  CHECK_CONTAINS(cl_buf_str(&err), cl_bundle_files[0].path);
  cl_buf_clear(&cmd);
  cl_buf_printf(&cmd, "rm -rf '%s'", dir);
  CHECK_EQ_INT(system(cl_buf_str(&cmd)), 0);
  cl_buf_free(&cmd);
  cl_buf_free(&path);
  cl_buf_free(&err);
}

int main(void) {
  test_fnv();
  test_constants();
  test_source_dir();
  return check_report();
}
