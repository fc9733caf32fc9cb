/* test_aot_file: exported libraries that are damaged, truncated or not
 * libraries at all are refused with a message by cutelua_aot_open (and by
 * cutelua_aot_check_file) instead of crashing the process inside dlopen; a
 * descriptor table altered inside the library is caught by its own check.
 *
 * Exports the test kernels (tests/aot/export.lua, through the cutelua
 * binary; needs a C compiler like cute.export does), then mutates the shared
 * library: truncations at many offsets, random bit flips, and flips in the
 * descriptor tables with the file sealed again. Every case is opened in a
 * child process: each must be refused with a message or load and validate
 * (its descriptor the same as the original's), never end in a signal.
 * CUTELUA_FUZZ_LONG=1 runs 20x more random cases. Without a GPU the driver
 * stub stands in (so that dlopen finds libcuda), and loading stops at
 * cuInit, after every check. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aot_file.h"
#include "check.h"
#include "child.h"
#include "cl_buf.h"
#include "cl_dl.h"
#include "cutelua_aot.h"

static char dir[256];
static char so[400];
static ClBuf good;        /* the exported library's bytes */
static char reference[4096]; /* its descriptor, as describe() prints it */

static int long_run(void) {
  const char *v = getenv("CUTELUA_FUZZ_LONG");
  return v && strcmp(v, "1") == 0;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(2);
  }
  if (n && fwrite(data, 1, n, f) != n) exit(2);
  fclose(f);
}

/* The descriptor as text: what a loader trusts from it. */
static void describe(const cutelua_aot_module *d, char *out, size_t cap) {
  size_t n = 0;
#define PUT(...) (n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__))
  PUT("abi %d kernels %d\n%s", d->abi, d->nkernels, d->metadata);
  for (int k = 0; k < d->nkernels && k < 8; k++) {
    const cutelua_aot_kernel *kd = &d->kernels[k];
    PUT("kernel %s %d\n", kd->name, kd->nparams);
    for (int j = 0; j < kd->nparams && j < 32; j++) {
      const cutelua_aot_param *p = &kd->params[j];
      PUT("  %s %s %d %d %d %d\n", p->name, p->ctype, p->size, p->kind, p->arg, p->leaf);
    }
  }
#undef PUT
}

/* ---- what a child does with one file --------------------------------------- */

/* Opens the file as cutelua_aot_open would, stopping short of the GPU:
 * "refused <message>" or "valid <descriptor>", then what cutelua_aot_open
 * itself says. */
static int open_case(void *arg, int fd) {
  const char *path = arg;
  char err[1024] = "";
  if (cutelua_aot_check_file(path, err, sizeof err) != 0) {
    child_say(fd, "refused ");
    child_say(fd, err);
  } else {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const cutelua_aot_module *(*entry)(void) = NULL;
    if (lib) *(void **)&entry = dlsym(lib, "cutelua_aot_entry");
    const cutelua_aot_module *d = entry ? entry() : NULL;
    if (!lib) {
      child_say(fd, "refused dlopen: ");
      child_say(fd, dlerror());
    } else if (!d) {
      child_say(fd, "refused no descriptor");
    } else if (d->abi != CUTELUA_AOT_ABI) {
      child_say(fd, "refused abi");
    } else if (d->check(err, sizeof err) != 0) {
      child_say(fd, "refused ");
      child_say(fd, err);
    } else {
      static char text[4096];
      describe(d, text, sizeof text);
      child_say(fd, "valid ");
      child_say(fd, text);
    }
  }
  /* and the real entry point, which must agree (it fails at cuInit without a GPU) */
  cutelua_aot *m = NULL;
  int rc = cutelua_aot_open(path, &m, err, sizeof err);
  child_say(fd, rc == 0 ? "\nopen: ok" : "\nopen: ");
  if (rc != 0) child_say(fd, err);
  if (m) cutelua_aot_close(m);
  return 0;
}

typedef struct Outcome {
  ChildResult c;
  int refused, valid, same;
} Outcome;

static Outcome try_file(const char *path) {
  Outcome o;
  memset(&o, 0, sizeof o);
  o.c = child_run(open_case, (void *)path, 30000);
  o.refused = strncmp(o.c.out, "refused ", 8) == 0 && o.c.out[8] && o.c.out[8] != '\n';
  o.valid = strncmp(o.c.out, "valid ", 6) == 0;
  if (o.valid) {
    const char *end = strstr(o.c.out, "\nopen: ");
    size_t n = end ? (size_t)(end - o.c.out - 6) : 0;
    o.same = n == strlen(reference) && memcmp(o.c.out + 6, reference, n) == 0;
  }
  return o;
}

/* The outcome every mutated file must have: refused with a message, or
 * valid with the original's descriptor; and never a signal or a hang. */
static int acceptable(const Outcome *o) {
  const char *open = strstr(o->c.out, "\nopen: ");
  return child_clean(&o->c) && (o->refused || (o->valid && o->same)) && open && open[7];
}

/* ---- setup -------------------------------------------------------------------- */

static int export_modules(void) {
  snprintf(dir, sizeof dir, "/tmp/cutelua-aot-test-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s/cutelua' tests/aot/export.lua '%s' sm_80 > '%s/export.log' 2>&1", CUTELUA_BINARY_DIR,
           dir, dir);
  if (system(cmd) != 0) {
    snprintf(cmd, sizeof cmd, "cat '%s/export.log'", dir);
    if (system(cmd) != 0) return -1;
    return -1;
  }
  snprintf(so, sizeof so, "%s/mod_a.so", dir);
  return cl_buf_read_file(&good, so) == 0 ? 0 : -1;
}

/* libcuda for the module's DT_NEEDED: the driver, else the toolkit's stub */
static void preload_driver(void) {
  if (cl_dl_lib(CL_LIB_CUDA, NULL)) return;
  char stub[600];
  snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", cl_dl_cuda_home());
  if (!dlopen(stub, RTLD_NOW | RTLD_GLOBAL)) printf("note: no libcuda, not even the stub: dlopen refuses the module\n");
}

/* ---- the cases ---------------------------------------------------------------- */

static void expect_refused(const char *what, const char *path, const char *says) {
  Outcome o = try_file(path);
  CHECK_AT(child_clean(&o.c), "%s: %s", what, child_describe(&o.c));
  CHECK_AT(o.refused && strstr(o.c.out, says), "%s: expected a refusal saying \"%s\", got:\n%s", what, says, o.c.out);
  /* cutelua_aot_open says the same, with its own prefix */
  const char *open = strstr(o.c.out, "\nopen: cutelua_aot_open: ");
  CHECK_AT(open && strstr(open, says), "%s: cutelua_aot_open: %s", what, o.c.out);
}

static void test_not_libraries(void) {
  char path[512], says[700];
  expect_refused("a missing file", "/nonexistent/mod.so", "cannot read /nonexistent/mod.so: No such file or directory");
  snprintf(path, sizeof path, "%s/text.so", dir);
  write_file(path, "not a library\n", 14);
  snprintf(says, sizeof says, "%s is not a loadable shared library: not an ELF file", path);
  expect_refused("a text file", path, says);
  snprintf(says, sizeof says, "%s is a directory, not a regular file", dir);
  expect_refused("a directory", dir, says);
  expect_refused("/dev/zero", "/dev/zero", "/dev/zero is a character device, not a regular file");
  snprintf(path, sizeof path, "%s/fifo.so", dir);
  if (mkfifo(path, 0600) == 0) {
    snprintf(says, sizeof says, "%s is a FIFO, not a regular file", path);
    expect_refused("a FIFO", path, says);
  }
  /* an ELF object that is not a shared library: this test's own object is
   * an executable or a PIE; a relocatable one from the export */
  snprintf(path, sizeof path, "%s/mod_a.o", dir);
  snprintf(says, sizeof says, "%s is not a loadable shared library: not a shared library (ELF type 1)", path);
  expect_refused("an object file", path, says);
}

static void test_seal(void) {
  char path[512], says[700], err[1024];
  CHECK_EQ_INT(cutelua_aot_check_file(so, err, sizeof err), 0);
  Outcome o = try_file(so);
  CHECK_AT(child_clean(&o.c) && o.valid && o.same, "the exported library: %s\n%s", child_describe(&o.c), o.c.out);
  /* without its seal */
  snprintf(path, sizeof path, "%s/unsealed.so", dir);
  write_file(path, good.data, good.len - AOT_SEAL_LEN);
  snprintf(says, sizeof says, "%s carries no cutelua seal", path);
  expect_refused("a library without its seal", path, says);
  /* sealed again, it is accepted: the seal is over the bytes, whatever made them */
  CHECK_EQ_INT(aot_file_seal(path, err, sizeof err), 0);
  ClBuf again = {0};
  cl_buf_read_file(&again, path);
  CHECK(again.len == good.len && memcmp(again.data, good.data, good.len) == 0);
  cl_buf_free(&again);
  /* a sealed library that is no export: no entry, or an entry with no descriptor */
  snprintf(path, sizeof path, "%s/null.c", dir);
  static const char null_c[] = "const void *cutelua_aot_entry(void);\nconst void *cutelua_aot_entry(void) { return 0; }\n";
  write_file(path, null_c, sizeof null_c - 1);
  char cmd[2400];
  snprintf(cmd, sizeof cmd, "${CC:-cc} -shared -fPIC -o '%s/null.so' '%s' && ${CC:-cc} -shared -fPIC -o '%s/none.so' '%s'"
           " -Dcutelua_aot_entry=other_entry", dir, path, dir, path);
  if (system(cmd) == 0) {
    snprintf(path, sizeof path, "%s/null.so", dir);
    expect_refused("a library that is not sealed", path, "carries no cutelua seal");
    CHECK_EQ_INT(aot_file_seal(path, err, sizeof err), 0);
    o = try_file(path);
    CHECK_AT(child_clean(&o.c) && strstr(o.c.out, "refused no descriptor"), "null entry: %s", o.c.out);
    CHECK_AT(strstr(o.c.out, "its cutelua_aot_entry returned no descriptor: not a module exported by cutelua") != NULL,
             "null entry: %s", o.c.out);
    snprintf(path, sizeof path, "%s/none.so", dir);
    CHECK_EQ_INT(aot_file_seal(path, err, sizeof err), 0);
    o = try_file(path);
    CHECK_AT(child_clean(&o.c) && strstr(o.c.out, "is not a module exported by cutelua (no cutelua_aot_entry)"),
             "no entry: %s", o.c.out);
  } else {
    CHECK_AT(0, "cannot build the test libraries with the C compiler");
  }
  /* sealing refuses what is not a shared library */
  snprintf(path, sizeof path, "%s/text.so", dir);
  CHECK_EQ_INT(aot_file_seal(path, err, sizeof err), -1);
  CHECK_CONTAINS(err, "cannot seal");
  CHECK_CONTAINS(err, "not an ELF file");
}

static void test_truncations(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/truncated.so", dir);
  /* the reviewer's offsets (1000, 4096, ... crashed dlopen with SIGBUS),
   * then every 1/64 of the file, then the edges of the seal */
  size_t cuts[128];
  int n = 0;
  static const size_t fixed[] = {0, 1, 63, 64, 100, 1000, 4096, 8192, 11552};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    if (fixed[i] < good.len) cuts[n++] = fixed[i];
  int steps = long_run() ? 100 : 64;
  for (int i = 1; i < steps && n < 120; i++) cuts[n++] = good.len * (size_t)i / (size_t)steps;
  cuts[n++] = good.len - AOT_SEAL_LEN;
  cuts[n++] = good.len - 1;
  int bad = 0, structural = 0;
  for (int i = 0; i < n; i++) {
    write_file(path, good.data, cuts[i]);
    Outcome o = try_file(path);
    if (!acceptable(&o) || o.valid) {
      if (bad++ < 5) CHECK_AT(0, "truncated at %zu: %s\n%s", cuts[i], child_describe(&o.c), o.c.out);
    }
    structural += strstr(o.c.out, ": truncated") != NULL || strstr(o.c.out, "too short") != NULL;
  }
  CHECK_EQ_INT(bad, 0);
  /* most cuts land inside a segment or a header table, and say so */
  CHECK_AT(structural > n / 2, "%d of %d truncations named as such", structural, n);
  /* one inside the first loaded segment's bytes names that segment */
  write_file(path, good.data, 4096);
  Outcome o = try_file(path);
  CHECK_AT(strstr(o.c.out, "(PT_LOAD) needs file bytes") && strstr(o.c.out, "and the file has 4096: truncated"),
           "cut at 4096: %s", o.c.out);
  printf("aot: %d truncations of an exported library, each refused\n", n);
}

static void test_bit_flips(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/flipped.so", dir);
  int cases = long_run() ? 6000 : 300, bad = 0;
  ClBuf b = {0};
  for (int i = 0; i < cases; i++) {
    cl_buf_clear(&b);
    cl_buf_add(&b, good.data, good.len);
    int flips = 1 + (int)(next_rand() % 3);
    for (int f = 0; f < flips; f++) b.data[next_rand() % good.len] ^= (char)(1u << (next_rand() % 8));
    if (memcmp(b.data, good.data, good.len) == 0) continue; /* flips that cancel */
    write_file(path, b.data, b.len);
    Outcome o = try_file(path);
    if (!acceptable(&o) || o.valid) {
      if (bad++ < 5) CHECK_AT(0, "random flips, case %d: %s\n%s", i, child_describe(&o.c), o.c.out);
    }
  }
  cl_buf_free(&b);
  CHECK_EQ_INT(bad, 0);
  printf("aot: %d random bit flips of an exported library, each refused\n", cases);
}

/* ---- the descriptor tables inside the library --------------------------------- */

typedef struct Range {
  char name[64];
  size_t off, size;
} Range;

/* The file ranges of the module's data symbols (its .symtab, as linked). */
static int data_symbols(Range *out, int cap) {
  const unsigned char *d = (const unsigned char *)good.data;
  Elf64_Ehdr eh;
  memcpy(&eh, d, sizeof eh);
  if (!eh.e_shoff || eh.e_shentsize != sizeof(Elf64_Shdr)) return 0;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh.e_shoff);
  int n = 0;
  for (int s = 0; s < eh.e_shnum; s++) {
    if (sh[s].sh_type != SHT_SYMTAB) continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(d + sh[s].sh_offset);
    const char *names = (const char *)(d + sh[sh[s].sh_link].sh_offset);
    size_t count = sh[s].sh_size / sizeof *sym;
    for (size_t i = 0; i < count && n < cap; i++) {
      const char *nm = names + sym[i].st_name;
      if (ELF64_ST_TYPE(sym[i].st_info) != STT_OBJECT || !sym[i].st_size || sym[i].st_shndx >= eh.e_shnum) continue;
      if (strncmp(nm, "ma_", 3) != 0) continue;
      const Elf64_Shdr *in = &sh[sym[i].st_shndx];
      if (in->sh_type == SHT_NOBITS) continue;
      snprintf(out[n].name, sizeof out[n].name, "%s", nm);
      out[n].off = in->sh_offset + (sym[i].st_value - in->sh_addr);
      out[n].size = sym[i].st_size;
      n++;
    }
  }
  return n;
}

static void test_descriptor_flips(void) {
  Range r[64];
  int n = data_symbols(r, 64), have_params = 0, have_desc = 0;
  for (int i = 0; i < n; i++) {
    have_params += strstr(r[i].name, "_params") != NULL;
    have_desc += strcmp(r[i].name, "ma_desc") == 0 || strcmp(r[i].name, "ma_images") == 0;
  }
  CHECK_AT(have_params >= 3 && have_desc == 2, "the module's symbols: %d data symbols, %d parameter tables", n,
           have_params);
  if (n == 0) return;
  char path[512], err[1024];
  snprintf(path, sizeof path, "%s/desc.so", dir);
  int cases = long_run() ? 2000 : 150, bad = 0, refused = 0, same = 0;
  ClBuf b = {0};
  for (int i = 0; i < cases; i++) {
    const Range *x = &r[i % n]; /* every table in turn */
    cl_buf_clear(&b);
    cl_buf_add(&b, good.data, good.len - AOT_SEAL_LEN);
    size_t at = x->off + (size_t)(next_rand() % x->size);
    b.data[at] ^= (char)(1u << (next_rand() % 8));
    write_file(path, b.data, b.len);
    /* sealed again: the file is intact as far as its seal knows, so only the
     * library's own check stands between these bytes and their use */
    if (aot_file_seal(path, err, sizeof err) != 0) {
      CHECK_AT(0, "cannot seal: %s", err);
      break;
    }
    Outcome o = try_file(path);
    refused += o.refused;
    same += o.valid && o.same;
    if (!acceptable(&o) && bad++ < 5)
      CHECK_AT(0, "a flip in %s (+%zu): %s\n%s", x->name, at - x->off, child_describe(&o.c), o.c.out);
  }
  cl_buf_free(&b);
  CHECK_EQ_INT(bad, 0);
  /* flips in pointers change nothing (relocations rewrite them); the rest are caught */
  CHECK_AT(refused > cases / 2, "%d of %d flips in the descriptor tables refused", refused, cases);
  printf("aot: %d flips in %d descriptor tables and data arrays (sealed again): %d refused by the library's check, "
         "%d harmless (relocated pointers)\n", cases, n, refused, same);
}

int main(void) {
  if (export_modules() != 0) {
    CHECK_AT(0, "cannot export the test modules (tests/aot/export.lua; a C compiler is needed)");
    return check_report();
  }
  preload_driver();
  /* the reference descriptor */
  void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  const cutelua_aot_module *(*entry)(void) = NULL;
  if (lib) *(void **)&entry = dlsym(lib, "cutelua_aot_entry");
  if (!entry) {
    CHECK_AT(0, "cannot open the exported library: %s", dlerror());
    return check_report();
  }
  describe(entry(), reference, sizeof reference);
  CHECK_CONTAINS(reference, "kernel vadd_f32 6\n  a uint64_t 8 0 0 0\n  a_shape_0 int32_t 4 1 0 0\n");
  test_not_libraries();
  test_seal();
  test_truncations();
  test_bit_flips();
  test_descriptor_flips();
  if (check_failed == 0) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  }
  cl_buf_free(&good);
  return check_report();
}
