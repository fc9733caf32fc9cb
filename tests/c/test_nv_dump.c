/* test_nv_dump: stage dumps with their names, SASS through a disassembler
 * (the real one where the toolkit has it, else a stand-in on PATH that shows
 * what cutelua hands it), the message when there is none, and reading
 * cubins, including truncated and damaged ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nv_compile.h"
#include "nv_testdata.h"

static char tmpdir[256];

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static NvResult compiled(const char *file, const char *arch) {
  NvOptions o;
  nv_test_options(&o, arch);
  ClBuf text = nv_test_file(file);
  NvResult r = {0};
  if (nv_compile(&r, text.data, text.len, NV_INPUT_UNKNOWN, &o) != 0)
    fprintf(stderr, "%s\n", cl_buf_str(&r.part[NV_PART_DIAG]));
  cl_buf_free(&text);
  return r;
}

static int file_equals(const char *path, const ClBuf *want) {
  ClBuf got = {0};
  int same = cl_buf_read_file(&got, path) == 0 && got.len == want->len && memcmp(got.data, want->data, got.len) == 0;
  cl_buf_free(&got);
  return same;
}

static int have_real_disassembler(void) {
  ClBuf out = {0}, err = {0};
  int st = nv_sass("", 0, &out, &err);
  /* without a tool, the error is about finding it, not about the input */
  int missing = st != 0 && strstr(cl_buf_str(&err), "neither was found") != NULL;
  cl_buf_free(&out);
  cl_buf_free(&err);
  return !missing;
}

static void test_dumps(int real_sass) {
  NvResult r = compiled("saxpy.ll", "sm_80");
  cl_buf_puts(&r.part[NV_PART_IR], "func @saxpy ... (the caller's IR)\n");
  NvOptions o;
  nv_test_options(&o, "sm_80");
  snprintf(o.dump_dir, sizeof o.dump_dir, "%s/dumps/deeper", tmpdir);
  ClBuf err = {0};
  CHECK_EQ_INT(nv_keep_parse("ir,ll,ptx,cubin,log", &o.keep, &err), 0);
  CHECK_EQ_INT(nv_dump(&r, &o, "saxpy", &err), 0);
  static const struct {
    const char *suffix;
    int part;
  } files[] = {{"ir", NV_PART_IR}, {"ll", NV_PART_LL}, {"ptx", NV_PART_PTX}, {"cubin", NV_PART_CUBIN},
               {"log", NV_PART_LOG}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/saxpy.sm_80.%s", o.dump_dir, files[i].suffix);
    CHECK(file_equals(path, &r.part[files[i].part]));
    CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DUMPED]), path);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/saxpy.sm_80.sass", o.dump_dir);
  CHECK(access(path, F_OK) != 0); /* not asked for */

  /* a stage the result does not have is a note, not a failure */
  NvResult p = compiled("add_one.ptx", "sm_80");
  CHECK_EQ_INT(nv_dump(&p, &o, "add/one", &err), 0);
  CHECK_CONTAINS(cl_buf_str(&p.part[NV_PART_NOTE]), "ll not dumped: this compile does not have it");
  CHECK_CONTAINS(cl_buf_str(&p.part[NV_PART_NOTE]), "ir not dumped");
  snprintf(path, sizeof path, "%s/add_one.sm_80.ptx", o.dump_dir); /* a '/' cannot escape the directory */
  CHECK(file_equals(path, &p.part[NV_PART_PTX]));
  nv_result_free(&p);

  /* sass: written when a disassembler exists, else a note naming what was looked for */
  CHECK_EQ_INT(nv_keep_parse("sass", &o.keep, &err), 0);
  CHECK_EQ_INT(nv_dump(&r, &o, "saxpy", &err), 0);
  snprintf(path, sizeof path, "%s/saxpy.sm_80.sass", o.dump_dir);
  if (real_sass) {
    CHECK(file_equals(path, &r.part[NV_PART_SASS]));
    CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_SASS]), "saxpy");
  } else {
    CHECK(access(path, F_OK) != 0);
    CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_NOTE]), "sass not dumped: SASS needs nvdisasm or cuobjdump");
  }

  /* the dump directory must be creatable */
  snprintf(o.dump_dir, sizeof o.dump_dir, "/proc/cutelua-no");
  o.keep = 1u << NV_STAGE_PTX;
  CHECK_EQ_INT(nv_dump(&r, &o, "saxpy", &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "cannot create the dump directory /proc/cutelua-no");
  nv_result_free(&r);
  cl_buf_free(&err);
}

static void write_script(const char *path, const char *body) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(body, f);
  fclose(f);
  chmod(path, 0755);
}

static void test_sass(int real_sass) {
  NvResult r = compiled("saxpy.ll", "sm_90a");
  ClBuf out = {0}, err = {0};
  if (real_sass) {
    CHECK_EQ_INT(nv_sass(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, &out, &err), 0);
    CHECK_CONTAINS(cl_buf_str(&out), "saxpy");
    CHECK_CONTAINS(cl_buf_str(&out), "EXIT");
  } else {
    /* no tool: the message names every place looked at */
    CHECK_EQ_INT(nv_sass(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, &out, &err), -1);
    CHECK_CONTAINS(cl_buf_str(&err), "SASS needs nvdisasm or cuobjdump (CUDA toolkit), and neither was found");
    CHECK_CONTAINS(cl_buf_str(&err), "/usr/local/cuda/bin");

    /* a stand-in nvdisasm on PATH: it gets "-c <file>" and the file holds
     * the cubin; its output comes back whole */
    char bin[512], script[600];
    snprintf(bin, sizeof bin, "%s/bin", tmpdir);
    mkdir(bin, 0755);
    snprintf(script, sizeof script, "%s/nvdisasm", bin);
    write_script(script, "#!/bin/sh\necho \"args: $1\"\necho \"bytes: $(wc -c < \"$2\")\"\n"
                         "cmp -s \"$2\" \"$CUTELUA_TEST_CUBIN\" && echo same-cubin\necho to-stderr >&2\n");
    char cubin_copy[600];
    snprintf(cubin_copy, sizeof cubin_copy, "%s/expected.cubin", tmpdir);
    FILE *f = fopen(cubin_copy, "wb");
    fwrite(r.part[NV_PART_CUBIN].data, 1, r.part[NV_PART_CUBIN].len, f);
    fclose(f);
    setenv("CUTELUA_TEST_CUBIN", cubin_copy, 1);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", saved, bin);
    setenv("PATH", path, 1);
    cl_buf_clear(&err);
    CHECK_EQ_INT(nv_sass(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, &out, &err), 0);
    char want[128];
    snprintf(want, sizeof want, "args: -c\nbytes: %zu\nsame-cubin\nto-stderr\n", r.part[NV_PART_CUBIN].len);
    CHECK_STR(cl_buf_str(&out), want);
    /* a tool that fails: its exit status and output are the error */
    write_script(script, "#!/bin/sh\necho 'nvdisasm fatal: bad input'\nexit 3\n");
    cl_buf_clear(&err);
    CHECK_EQ_INT(nv_sass(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, &out, &err), -1);
    CHECK_CONTAINS(cl_buf_str(&err), "nvdisasm failed (exit status 3):\nnvdisasm fatal: bad input");
    setenv("PATH", saved, 1);
    free(saved);
  }
  nv_result_free(&r);
  cl_buf_free(&out);
  cl_buf_free(&err);
}

static void test_elf(void) {
  /* two kernels and a device function: only kernels are listed */
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  static const char two[] =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .func (.param .b32 r) helper(.param .b32 x) { .reg .b32 %r<2>; ld.param.b32 %r1, [x]; "
      "st.param.b32 [r], %r1; ret; }\n"
      ".visible .entry first() { ret; }\n.visible .entry second() { ret; }\n";
  NvResult r = {0};
  CHECK_EQ_INT(nv_compile(&r, two, strlen(two), NV_INPUT_PTX, &o), 0);
  ClBuf k = {0}, err = {0};
  CHECK_EQ_INT(nv_cubin_kernels(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, &k, &err), 0);
  CHECK(strstr(cl_buf_str(&k), "first\n") && strstr(cl_buf_str(&k), "second\n"));
  CHECK(strstr(cl_buf_str(&k), "helper") == NULL);

  /* not a cubin */
  cl_buf_clear(&k);
  CHECK_EQ_INT(nv_cubin_kernels("hello", 5, &k, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "not a cubin");
  CHECK_EQ_INT(nv_cubin_has_section("hello", 5, ".text"), -1);
  /* a host ELF (this test program) is an ELF but not a cubin */
  ClBuf self = {0};
  if (cl_buf_read_file(&self, "/proc/self/exe") == 0) {
    cl_buf_clear(&err);
    CHECK_EQ_INT(nv_cubin_kernels(self.data, self.len, &k, &err), -1);
    CHECK_CONTAINS(cl_buf_str(&err), "not EM_CUDA");
  }
  cl_buf_free(&self);

  /* every truncation and every damaged byte: an answer or an error, never a
   * read outside the buffer (each copy is exactly its length) */
  const ClBuf *c = &r.part[NV_PART_CUBIN];
  int answered = 1;
  for (size_t cut = 0; cut < c->len; cut += 3) {
    char *p = malloc(cut ? cut : 1);
    memcpy(p, c->data, cut);
    ClBuf kk = {0}, ee = {0};
    int st = nv_cubin_kernels(p, cut, &kk, &ee);
    answered &= st == 0 || ee.len > 0;
    nv_cubin_has_section(p, cut, ".text.first");
    cl_buf_free(&kk);
    cl_buf_free(&ee);
    free(p);
  }
  for (size_t at = 0; at < c->len; at += 5) {
    char *p = malloc(c->len);
    memcpy(p, c->data, c->len);
    p[at] = (char)0xff;
    ClBuf kk = {0}, ee = {0};
    int st = nv_cubin_kernels(p, c->len, &kk, &ee);
    answered &= st == 0 || ee.len > 0;
    nv_cubin_has_section(p, c->len, ".text.first");
    cl_buf_free(&kk);
    cl_buf_free(&ee);
    free(p);
  }
  CHECK(answered);
  nv_result_free(&r);
  cl_buf_free(&k);
  cl_buf_free(&err);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/cutelua-dump-test-XXXXXX");
  if (!mkdtemp(tmpdir)) return 2;
  int real = have_real_disassembler();
  printf("note: %s\n", real ? "a disassembler was found: SASS tested for real"
                            : "no nvdisasm/cuobjdump here: SASS tested through a stand-in");
  test_dumps(real);
  test_sass(real);
  test_elf();
  remove_tree(tmpdir);
  return check_report();
}
