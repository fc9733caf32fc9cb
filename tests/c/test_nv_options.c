/* test_nv_options: setting the arch, option defaults and checks, the CUTELUA_*
 * environment variables, the keep list, canonical options (the cache key's
 * view of them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nv_compile.h"
#include "nv_testdata.h"

static void test_set_arch(void) {
  /* the table itself is src/target's (test_target.c); options hold a row of it */
  NvOptions o;
  nv_options_default(&o);
  int before = o.arch;
  CHECK_EQ_INT(nv_options_set_arch(&o, "sm_200"), -1);
  CHECK_EQ_INT(o.arch, before);
  CHECK_EQ_INT(nv_options_set_arch(&o, "sm_86"), 0);
  CHECK_STR(cl_target_at(o.arch)->name, "sm_86");
  CHECK_EQ_INT(nv_options_set_arch(&o, "sm_90"), 0);
  CHECK_STR(cl_target_at(o.arch)->name, "sm_90");
  CHECK_EQ_INT(nv_options_set_arch(&o, "sm_90a"), 0);
  CHECK_STR(cl_target_at(o.arch)->name, "sm_90a");
}

static void test_defaults(void) {
  NvOptions o;
  nv_options_default(&o);
  char why[256] = "";
  int gpu = nv_arch_detect(why, sizeof why);
  if (gpu >= 0) {
    printf("note: GPU found, default arch %s\n", cl_target_at(o.arch)->name);
    CHECK_EQ_INT(o.arch, gpu);
  } else {
    CHECK_STR(cl_target_at(o.arch)->name, CL_TARGET_FALLBACK);
    CHECK(strlen(why) > 0); /* says why there is no GPU */
  }
  CHECK_EQ_INT(o.opt_level, 3);
  CHECK_EQ_INT(o.fast_math, 0);
  CHECK_EQ_INT(o.ftz, -1);
  CHECK_EQ_INT(o.lineinfo, 0);
  CHECK_EQ_INT(o.max_registers, 0);
  CHECK_EQ_INT(o.nlink, 0);
  CHECK_EQ_INT(o.keep, 0);
  CHECK_EQ_INT(o.cache, 1);
  CHECK_STR(o.cache_dir, nv_default_cache_dir());
  ClBuf err = {0};
  CHECK_EQ_INT(nv_options_check(&o, &err), 0);

  /* each bad field is named */
  static const struct {
    int field, value;
    const char *msg;
  } bad[] = {{0, 99, "bad arch index 99"}, {1, 4, "bad opt level 4"}, {1, -1, "bad opt level -1"},
             {2, 2, "fast_math"}, {3, -2, "ftz"}, {4, 5, "lineinfo"}, {5, 256, "bad max_registers 256"},
             {5, -3, "bad max_registers -3"}, {6, 17, "bad link input count 17"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    NvOptions b = o;
    int32_t *fields[] = {&b.arch, &b.opt_level, &b.fast_math, &b.ftz, &b.lineinfo, &b.max_registers, &b.nlink};
    *fields[bad[i].field] = bad[i].value;
    cl_buf_clear(&err);
    CHECK_EQ_INT(nv_options_check(&b, &err), -1);
    CHECK_CONTAINS(cl_buf_str(&err), bad[i].msg);
  }
  NvOptions b = o;
  b.nlink = 1;
  b.link[0] = (NvLinkInput){0};
  cl_buf_clear(&err);
  CHECK_EQ_INT(nv_options_check(&b, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "link input 1 has neither a path nor data");
  b.link[0] = (NvLinkInput){.kind = 8, .path = "x"};
  cl_buf_clear(&err);
  CHECK_EQ_INT(nv_options_check(&b, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "link input 1: bad kind 8");
  cl_buf_free(&err);

  setenv("XDG_CACHE_HOME", "/var/cache/me", 1);
  CHECK_STR(nv_default_cache_dir(), "/var/cache/me/cutelua");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  CHECK_STR(nv_default_cache_dir(), "/home/someone/.cache/cutelua");
  setenv("XDG_CACHE_HOME", "relative/path", 1); /* the XDG spec ignores relative paths */
  CHECK_STR(nv_default_cache_dir(), "/home/someone/.cache/cutelua");
  unsetenv("XDG_CACHE_HOME");
}

static void clear_env(void) {
  static const char *const vars[] = {
#define NV_ENV_NAME(id, var, what) var,
      NV_ENV(NV_ENV_NAME)
#undef NV_ENV_NAME
  };
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

static void test_env(void) {
  clear_env();
  NvOptions o, d;
  nv_options_default(&d);
  o = d;
  ClBuf err = {0};
  CHECK_EQ_INT(nv_options_from_env(&o, &err), 0);
  CHECK(memcmp(&o, &d, sizeof o) == 0); /* nothing set: nothing changes */

  setenv("CUTELUA_ARCH", "sm_89", 1);
  setenv("CUTELUA_OPT_LEVEL", "1", 1);
  setenv("CUTELUA_FAST_MATH", "true", 1);
  setenv("CUTELUA_FTZ", "off", 1);
  setenv("CUTELUA_LINEINFO", "YES", 1);
  setenv("CUTELUA_MAX_REGISTERS", "128", 1);
  setenv("CUTELUA_PTXAS_OPTIONS", "-warn-spills -warn-lmem-usage", 1);
  setenv("CUTELUA_KEEP", "ptx, cubin", 1);
  setenv("CUTELUA_DUMP_DIR", "/tmp/dumps", 1);
  setenv("CUTELUA_CACHE", "0", 1);
  setenv("CUTELUA_CACHE_DIR", "/tmp/cache-here", 1);
  o = d;
  CHECK_EQ_INT(nv_options_from_env(&o, &err), 0);
  CHECK_STR(cl_target_at(o.arch)->name, "sm_89");
  CHECK_EQ_INT(o.opt_level, 1);
  CHECK_EQ_INT(o.fast_math, 1);
  CHECK_EQ_INT(o.ftz, 0);
  CHECK_EQ_INT(o.lineinfo, 1);
  CHECK_EQ_INT(o.max_registers, 128);
  CHECK_STR(o.ptxas_options, "-warn-spills -warn-lmem-usage");
  CHECK_EQ_INT(o.keep, (1u << NV_STAGE_PTX) | (1u << NV_STAGE_CUBIN));
  CHECK_STR(o.dump_dir, "/tmp/dumps");
  CHECK_EQ_INT(o.cache, 0);
  CHECK_STR(o.cache_dir, "/tmp/cache-here");

  /* a bad value names the variable and the value; the good ones still apply */
  static const struct {
    const char *var, *value, *msg;
  } bad[] = {
      {"CUTELUA_ARCH", "sm_91", "CUTELUA_ARCH=sm_91: unknown arch (known: sm_80, sm_86"},
      {"CUTELUA_OPT_LEVEL", "4", "CUTELUA_OPT_LEVEL=4: expected 0, 1, 2 or 3"},
      {"CUTELUA_OPT_LEVEL", "3x", "CUTELUA_OPT_LEVEL=3x: expected 0, 1, 2 or 3"},
      {"CUTELUA_FAST_MATH", "maybe", "CUTELUA_FAST_MATH=maybe: expected 0 or 1"},
      {"CUTELUA_FTZ", "2", "CUTELUA_FTZ=2: expected 0 or 1"},
      {"CUTELUA_LINEINFO", "y", "CUTELUA_LINEINFO=y: expected 0 or 1"},
      {"CUTELUA_MAX_REGISTERS", "300", "CUTELUA_MAX_REGISTERS=300: expected 0 (no limit)"},
      {"CUTELUA_MAX_REGISTERS", "-1", "CUTELUA_MAX_REGISTERS=-1"},
      {"CUTELUA_KEEP", "ptx,asm", "CUTELUA_KEEP=ptx,asm: unknown stage 'asm' (known: ir, ll, ptx, cubin, sass, log"},
      {"CUTELUA_CACHE", "nope", "CUTELUA_CACHE=nope: expected 0 (off) or 1 (on)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    clear_env();
    setenv("CUTELUA_LINEINFO", "1", 1);
    setenv(bad[i].var, bad[i].value, 1);
    o = d;
    cl_buf_clear(&err);
    CHECK_EQ_INT(nv_options_from_env(&o, &err), -1);
    CHECK_CONTAINS(cl_buf_str(&err), bad[i].msg);
    if (strcmp(bad[i].var, "CUTELUA_LINEINFO") != 0) CHECK_EQ_INT(o.lineinfo, 1);
  }
  char longv[600];
  memset(longv, 'x', sizeof longv - 1);
  longv[sizeof longv - 1] = 0;
  clear_env();
  setenv("CUTELUA_PTXAS_OPTIONS", longv, 1);
  cl_buf_clear(&err);
  CHECK_EQ_INT(nv_options_from_env(&o, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "CUTELUA_PTXAS_OPTIONS=xxx");
  CHECK_CONTAINS(cl_buf_str(&err), "too long (511 bytes at most)");
  clear_env();
  /* an empty variable counts as unset */
  setenv("CUTELUA_ARCH", "", 1);
  setenv("CUTELUA_CACHE_DIR", "", 1);
  o = d;
  CHECK_EQ_INT(nv_options_from_env(&o, &err), 0);
  CHECK_EQ_INT(o.arch, d.arch);
  CHECK_STR(o.cache_dir, d.cache_dir);
  clear_env();
  cl_buf_free(&err);
}

static void test_keep(void) {
  uint32_t m = 99;
  ClBuf err = {0};
  CHECK_EQ_INT(nv_keep_parse("", &m, &err), 0);
  CHECK_EQ_INT(m, 0);
  CHECK_EQ_INT(nv_keep_parse("0", &m, &err), 0);
  CHECK_EQ_INT(m, 0);
  CHECK_EQ_INT(nv_keep_parse("ir,ll,ptx,cubin,sass,log", &m, &err), 0);
  CHECK_EQ_INT(m, (1u << NV_STAGE__COUNT) - 1);
  CHECK_EQ_INT(nv_keep_parse("all", &m, &err), 0);
  CHECK_EQ_INT(m, (1u << NV_STAGE__COUNT) - 1);
  CHECK_EQ_INT(nv_keep_parse(" sass ,,ir ", &m, &err), 0);
  CHECK_EQ_INT(m, (1u << NV_STAGE_SASS) | (1u << NV_STAGE_IR));
  m = 5;
  CHECK_EQ_INT(nv_keep_parse("ptx,cubins", &m, &err), -1);
  CHECK_EQ_INT(m, 5);
  CHECK_CONTAINS(cl_buf_str(&err), "unknown stage 'cubins'");
  for (int s = 0; s < NV_STAGE__COUNT; s++) {
    CHECK_EQ_INT(nv_keep_parse(nv_stage_name(s), &m, &err), 0);
    CHECK_EQ_INT(m, 1u << s);
    CHECK_EQ_INT(nv_part_find(nv_stage_name(s)), s); /* stage id == part id */
  }
  CHECK(nv_stage_name(NV_STAGE__COUNT) == NULL);
  CHECK_EQ_INT(nv_part_find("nope"), -1);
  for (int p = 0; p < NV_PART__COUNT; p++) CHECK_EQ_INT(nv_part_find(nv_part_name(p)), p);
  cl_buf_free(&err);
}

static ClBuf canon(const NvOptions *o) {
  ClBuf b = {0}, err = {0};
  if (nv_options_canonical(o, &b, &err) != 0) cl_buf_printf(&b, "ERROR %s", cl_buf_str(&err));
  cl_buf_free(&err);
  return b;
}

static void test_canonical(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  ClBuf base = canon(&o);
  CHECK_STR(cl_buf_str(&base), "arch sm_90a\nopt 3\nfast_math 0\nftz 0\nlineinfo 0\nmax_registers 0\nptxas_options\n");
  /* every option that changes the output changes the text */
  for (int f = 0; f < 8; f++) {
    NvOptions v = o;
    switch (f) {
    case 0: nv_options_set_arch(&v, "sm_80"); break;
    case 1: v.opt_level = 2; break;
    case 2: v.fast_math = 1; break;
    case 3: v.ftz = 1; break;
    case 4: v.lineinfo = 1; break;
    case 5: v.max_registers = 64; break;
    case 6: snprintf(v.ptxas_options, sizeof v.ptxas_options, "-warn-spills"); break;
    case 7: v.nvvm_opt = 1; break;
    }
    ClBuf c = canon(&v);
    CHECK(strcmp(cl_buf_str(&c), cl_buf_str(&base)) != 0);
    cl_buf_free(&c);
  }
  /* ...and what does not, does not */
  NvOptions v = o;
  v.keep = 7;
  v.cache = 0;
  snprintf(v.dump_dir, sizeof v.dump_dir, "/elsewhere");
  snprintf(v.cache_dir, sizeof v.cache_dir, "/elsewhere");
  v.ftz = 0; /* the same as -1 without fast math */
  v.nvvm_opt = 3; /* the same as -1 at opt 3 */
  ClBuf c = canon(&v);
  CHECK_STR(cl_buf_str(&c), cl_buf_str(&base));
  cl_buf_free(&c);
  /* blank runs in ptxas options do not matter */
  NvOptions p1 = o, p2 = o;
  snprintf(p1.ptxas_options, sizeof p1.ptxas_options, "-a -b");
  snprintf(p2.ptxas_options, sizeof p2.ptxas_options, "  -a \t -b ");
  ClBuf c1 = canon(&p1), c2 = canon(&p2);
  CHECK_STR(cl_buf_str(&c1), cl_buf_str(&c2));
  CHECK_CONTAINS(cl_buf_str(&c1), "ptxas_options -a -b\n");
  cl_buf_free(&c1);
  cl_buf_free(&c2);
  /* link inputs count by content, not by name or path */
  NvOptions l1 = o, l2 = o;
  l1.nlink = l2.nlink = 1;
  l1.link[0] = (NvLinkInput){.kind = 2, .data = "abc", .size = 3, .name = "one"};
  l2.link[0] = (NvLinkInput){.kind = 2, .data = "abc", .size = 3, .name = "two"};
  c1 = canon(&l1);
  c2 = canon(&l2);
  CHECK_STR(cl_buf_str(&c1), cl_buf_str(&c2));
  CHECK_CONTAINS(cl_buf_str(&c1), "link ptx ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n");
  cl_buf_free(&c2);
  l2.link[0].data = "abd";
  c2 = canon(&l2);
  CHECK(strcmp(cl_buf_str(&c1), cl_buf_str(&c2)) != 0);
  cl_buf_free(&c1);
  cl_buf_free(&c2);
  l1.link[0] = (NvLinkInput){.kind = 0, .path = "/nonexistent/x.ptx"};
  ClBuf out = {0}, err = {0};
  CHECK_EQ_INT(nv_options_canonical(&l1, &out, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "cannot read link input /nonexistent/x.ptx");
  cl_buf_free(&out);
  cl_buf_free(&err);
  cl_buf_free(&base);
}

int main(void) {
  test_set_arch();
  test_defaults();
  test_env();
  test_keep();
  test_canonical();
  return check_report();
}
