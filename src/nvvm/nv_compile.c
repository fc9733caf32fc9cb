/* nv_compile: NVVM IR -> PTX (libnvvm) -> cubin (nvJitLink), see nv_compile.h.
 *
 * Every call makes its own libnvvm program and nvJitLink handle and destroys
 * them before returning, so calls are independent and thread-safe. libdevice
 * is added to the program only when the IR names an __nv_ function, and then
 * lazily (libnvvm links only the functions used): parsing its 500 KB of
 * bitcode for every kernel would cost time for nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_internal.h"
#include "nv_tools.h"

/* ---- results -------------------------------------------------------------------- */

void nv_result_free(NvResult *r) {
  for (int i = 0; i < NV_PART__COUNT; i++) cl_buf_free(&r->part[i]);
  memset(r, 0, sizeof *r);
}

NvResult *nv_result_new(void) { return calloc(1, sizeof(NvResult)); }

void nv_result_delete(NvResult *r) {
  if (!r) return;
  nv_result_free(r);
  free(r);
}

void nv_result_clear_diag(NvResult *r) {
  static const int diag_parts[] = {NV_PART_MESSAGE, NV_PART_DIAG, NV_PART_TOOL_LOG, NV_PART_EXCERPT, NV_PART_SOURCE};
  for (size_t i = 0; i < sizeof diag_parts / sizeof *diag_parts; i++) cl_buf_free(&r->part[diag_parts[i]]);
  r->phase = NV_PHASE_NONE;
  r->line = r->col = 0;
}

int nv_result_info(const NvResult *r, int field) {
  switch (field) {
  case NV_INFO_PHASE: return r->phase;
  case NV_INFO_LINE: return r->line;
  case NV_INFO_COL: return r->col;
  case NV_INFO_ORIGIN: return r->origin;
  case NV_INFO_STAGE_INPUT: return r->input_stage;
  case NV_INFO_WARNINGS: return r->warnings;
  default: return -1;
  }
}

int nv_info_find(const char *name) {
  static const char *const names[] = {
#define NV_INFO_NAME(id, n) n,
      NV_INFOS(NV_INFO_NAME)
#undef NV_INFO_NAME
  };
  for (int i = 0; name && i < NV_INFO__COUNT; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

static void set_part(NvResult *r, int part, const void *data, size_t len) {
  cl_buf_clear(&r->part[part]);
  cl_buf_add(&r->part[part], data, len);
}

/* ---- what a text is ----------------------------------------------------------------- */

int nv_input_kind(const char *text, size_t len) {
  if (len >= 4 && (memcmp(text, "BC\xc0\xde", 4) == 0 || memcmp(text, "\xde\xc0\x17\x0b", 4) == 0))
    return NV_INPUT_NVVM;
  /* The first line that is neither blank nor a comment decides. */
  const char *p = text, *end = text + len;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    if (p >= end) break;
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    if (*p == ';' || (end - p >= 2 && p[0] == '/' && p[1] == '/')) {
      p = eol;
      continue;
    }
    if (*p == '.') return NV_INPUT_PTX;
    static const char *const nvvm_starts[] = {"target ", "define ", "declare ", "source_filename", "@", "%", "!",
                                              "attributes "};
    for (size_t i = 0; i < sizeof nvvm_starts / sizeof *nvvm_starts; i++) {
      size_t n = strlen(nvvm_starts[i]);
      if ((size_t)(eol - p) >= n && memcmp(p, nvvm_starts[i], n) == 0) return NV_INPUT_NVVM;
    }
    return NV_INPUT_UNKNOWN;
  }
  return NV_INPUT_UNKNOWN;
}

static int check(NvResult *r, const NvOptions *o) {
  ClBuf err = {0};
  int st = nv_options_check(o, &err);
  if (st) {
    ClBuf msg = {0};
    cl_buf_printf(&msg, "bad compile options: %s", cl_buf_str(&err));
    nv_diag_simple(r, NV_PHASE_OPTIONS, cl_buf_str(&msg));
    cl_buf_free(&msg);
  }
  cl_buf_free(&err);
  return st;
}

/* ---- NVVM IR -> PTX ---------------------------------------------------------------------- */

static int uses_libdevice(const char *ir, size_t len) { return memmem(ir, len, "@__nv_", 6) != NULL; }

static char *program_log(const NvNvvm *nv, nvvmProgram p) {
  size_t n = 0;
  if (nv->log_size(p, &n) != NVVM_SUCCESS || n == 0) return NULL;
  char *log = malloc(n + 1);
  if (log && nv->log(p, log) != NVVM_SUCCESS) log[0] = 0;
  if (log) log[n] = 0;
  return log;
}

/* Whether a failed verify's log holds only the NVVM IR checks' errors
 * ("error: Error: : Function `k' ...: Unsupported intrinsic: llvm.fabs.f32"),
 * which the verify runs only on IR that passed the LLVM verifier (whose
 * messages start a line with their own words: "Instruction does not
 * dominate all uses!"; parse errors with "nvvm-ir (line, col)"). Those
 * checks are stricter than the compile, which takes llvm.fabs.f32. */
static int nvvm_checks_only(const char *log) {
  int errors = 0;
  for (const char *l = log; *l;) {
    const char *eol = strchr(l, '\n');
    size_t n = eol ? (size_t)(eol - l) : strlen(l);
    if (n && l[0] != ' ' && l[0] != '\t') {
      if (strncmp(l, "error: ", 7) != 0) return 0;
      errors++;
    }
    l += n + (eol ? 1 : 0);
  }
  return errors > 0;
}

int nv_compile_nvvm_to_ptx(NvResult *r, const char *ir, size_t len, const NvOptions *o) {
  if (check(r, o)) return -1;
  ClBuf err = {0}, what = {0};
  const ClTarget *arch = cl_target_at(o->arch);
  int status = -1;
  nvvmProgram p = NULL;
  const NvNvvm *nv = nv_nvvm(&err);
  NvLinkData libs[NV_MAX_LINK];
  int nlibs = 0;
  if (!nv) {
    nv_diag_simple(r, NV_PHASE_LOAD, cl_buf_str(&err));
    goto done;
  }
  for (int i = 0; i < o->nlink; i++) {
    NvLinkData d;
    if (nv_link_load(&o->link[i], i, &d, &err) != 0) {
      nv_diag_simple(r, NV_PHASE_INPUT, cl_buf_str(&err));
      goto done;
    }
    if (d.kind == NV_LINK_NVVM) libs[nlibs++] = d;
    else nv_link_data_free(&d);
  }
  if (nv->create(&p) != NVVM_SUCCESS) {
    nv_diag_simple(r, NV_PHASE_NVVM, "libnvvm could not create a program (out of memory?)");
    goto done;
  }
  nvvmResult e = nv->add_module(p, ir, len, nv_nvvm_module_name);
  /* Bitcode libraries are added lazily (only the functions used are linked);
   * libnvvm's lazy add fails on text, so text libraries are linked whole. */
  for (int i = 0; e == NVVM_SUCCESS && i < nlibs; i++) {
    int bitcode = libs[i].size >= 4 && (memcmp(libs[i].data, "BC\xc0\xde", 4) == 0 ||
                                        memcmp(libs[i].data, "\xde\xc0\x17\x0b", 4) == 0);
    e = (bitcode ? nv->lazy_add_module : nv->add_module)(p, libs[i].data, libs[i].size, libs[i].name);
    if (e != NVVM_SUCCESS) cl_buf_printf(&what, "libnvvm rejected the NVVM library %s (%s)", libs[i].name,
                                         nv->error_string(e));
  }
  if (e == NVVM_SUCCESS && (nlibs || uses_libdevice(ir, len))) {
    const ClBuf *ld = nv_libdevice(&err);
    if (!ld) {
      nv_diag_simple(r, NV_PHASE_LOAD, cl_buf_str(&err));
      goto done;
    }
    e = nv->lazy_add_module(p, ld->data, ld->len, "libdevice.10.bc");
    if (e != NVVM_SUCCESS) cl_buf_printf(&what, "libnvvm rejected libdevice (%s)", nv->error_string(e));
  } else if (e != NVVM_SUCCESS && !what.len) {
    cl_buf_printf(&what, "libnvvm rejected the NVVM IR (%s)", nv->error_string(e));
  }
  if (e != NVVM_SUCCESS) {
    char *log = program_log(nv, p);
    nv_diag_fill(r, NV_PHASE_NVVM, cl_buf_str(&what), log, ir, len, NV_STAGE_LL);
    free(log);
    goto done;
  }
  int ftz = nv_options_ftz(o);
  char opt[16], ftzs[16], div[24], sqrt[24];
  snprintf(opt, sizeof opt, "-opt=%d", nv_options_nvvm_opt(o));
  snprintf(ftzs, sizeof ftzs, "-ftz=%d", ftz);
  snprintf(div, sizeof div, "-prec-div=%d", !o->fast_math);
  snprintf(sqrt, sizeof sqrt, "-prec-sqrt=%d", !o->fast_math);
  const char *opts[8] = {arch->nvvm_arch, opt, ftzs, div, sqrt, "-fma=1"};
  int nopt = 6;
  if (o->lineinfo) opts[nopt++] = "-generate-line-info";
  /* The LLVM verifier runs on every program before its compile: libnvvm's
   * compile assumes valid IR, and on NVVM IR that parses but breaks SSA (a
   * phi that misses a predecessor, a use its definition does not dominate,
   * an instruction that uses itself) it crashes the process instead of
   * failing. The verifier names the problem in its log ("PHINode should have
   * one entry for each predecessor ..."), and parse errors with their line
   * and column as the compile would. It costs about 2% of a cold compile
   * (13-20 ms of 860 ms for the GEMM's 3,000 lines; docs/compiler.md), so
   * the emitter's own text is verified too. */
  e = nv->verify(p, nopt, opts);
  if (e != NVVM_SUCCESS) {
    char *log = program_log(nv, p);
    if (log && nvvm_checks_only(log)) e = NVVM_SUCCESS; /* the compile decides, as it always did */
    free(log);
  }
  if (e == NVVM_SUCCESS) e = nv->compile(p, nopt, opts);
  if (e != NVVM_SUCCESS) {
    char *log = program_log(nv, p);
    cl_buf_printf(&what, "libnvvm could not compile the NVVM IR for %s (%s)", arch->name, nv->error_string(e));
    nv_diag_fill(r, NV_PHASE_NVVM, cl_buf_str(&what), log, ir, len, NV_STAGE_LL);
    free(log);
    goto done;
  }
  size_t n = 0;
  ClBuf *ptx = &r->part[NV_PART_PTX];
  cl_buf_clear(ptx);
  if (nv->result_size(p, &n) != NVVM_SUCCESS || !cl_buf_reserve(ptx, n + 1) ||
      nv->result(p, ptx->data) != NVVM_SUCCESS) {
    nv_diag_simple(r, NV_PHASE_NVVM, "libnvvm could not hand back the PTX (out of memory?)");
    goto done;
  }
  ptx->data[n] = 0;
  ptx->len = strlen(ptx->data); /* the size counts the terminator */
  status = 0;
done:
  for (int i = 0; i < nlibs; i++) nv_link_data_free(&libs[i]);
  if (p) nv->destroy(&p);
  cl_buf_free(&err);
  cl_buf_free(&what);
  return status;
}

/* ---- PTX -> cubin ------------------------------------------------------------------------- */

static char *link_log(const NvJitLink *jl, nvJitLinkHandle h, int info) {
  size_t n = 0;
  if ((info ? jl->info_log_size(h, &n) : jl->error_log_size(h, &n)) != NVJITLINK_SUCCESS) return NULL;
  char *log = malloc(n + 1);
  if (!log) return NULL;
  log[0] = 0;
  if (n && (info ? jl->info_log(h, log) : jl->error_log(h, log)) != NVJITLINK_SUCCESS) log[0] = 0;
  log[n] = 0;
  return log;
}

/* The option strings for nvJitLink, in `store` (which must outlive opts). */
static int link_options(const NvOptions *o, int lto, char store[][96], int cap, const char **opts) {
  const ClTarget *arch = cl_target_at(o->arch);
  int n = 0;
#define ADD(...) (snprintf(store[n], sizeof store[n], __VA_ARGS__), opts[n] = store[n], n++)
  ADD("%s", arch->link_arch);
  /* nvJitLink's own -O takes only 0 or 3; ptxas gets other levels itself.
   * Not -O3 though (ptxas's default): ptxas refuses an explicit level for
   * PTX with full debug information (".target sm_90a, debug"). */
  ADD("-O%d", o->opt_level ? 3 : 0);
  if (o->opt_level != 3) ADD("-Xptxas=-O%d", (int)o->opt_level);
  ADD("-Xptxas=-v"); /* the resource report, in the info log */
  /* Once the process has loaded the CUDA driver, nvJitLink answers from the
   * driver's compute cache (~/.nv/ComputeCache) when it can, and a cached
   * answer comes with an empty info log: no resource report, no spill
   * warning. cutelua caches compiles itself (nv_cache.c). Measured on the GPU
   * machine (nvJitLink 13.0.88, driver 580). */
  ADD("-no-cache");
  if (o->lineinfo) ADD("-lineinfo");
  if (o->max_registers > 0) ADD("-maxrregcount=%d", (int)o->max_registers);
  if (lto) {
    ADD("-lto");
    ADD("-ftz=%d", nv_options_ftz(o));
    ADD("-prec-div=%d", !o->fast_math);
    ADD("-prec-sqrt=%d", !o->fast_math);
  }
  for (const char *p = o->ptxas_options; *p && n < cap;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    const char *s = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
    if (p > s) {
      if (p - s > 80) return -1;
      ADD("-Xptxas=%.*s", (int)(p - s), s);
    }
  }
#undef ADD
  return n;
}

enum { MAX_LINK_OPTS = 48 };

static int ptx_to_cubin(NvResult *r, const char *ptx, size_t len, const NvOptions *o, int after_nvvm) {
  if (check(r, o)) return -1;
  if (nv_setmaxnreg_needed(ptx, len)) { /* whole-program ptxas; its notes are checked the same way */
    if (nv_setmaxnreg_compile(r, ptx, len, o, after_nvvm) != 0) return -1;
    return nv_ptxas_diag(r, cl_buf_str(&r->part[NV_PART_LOG]), ptx, len) != 0 ? -1 : 0;
  }
  ClBuf err = {0}, what = {0};
  const ClTarget *arch = cl_target_at(o->arch);
  int status = -1, nin = 0, lto = 0;
  nvJitLinkHandle h = NULL;
  NvLinkData ins[NV_MAX_LINK];
  const NvJitLink *jl = nv_jitlink(&err);
  if (!jl) {
    nv_diag_simple(r, NV_PHASE_LOAD, cl_buf_str(&err));
    goto done;
  }
  for (int i = 0; i < o->nlink; i++) {
    NvLinkData d;
    if (nv_link_load(&o->link[i], i, &d, &err) != 0) {
      nv_diag_simple(r, NV_PHASE_INPUT, cl_buf_str(&err));
      goto done;
    }
    if (d.kind == NV_LINK_NVVM) {
      nv_link_data_free(&d);
      if (after_nvvm) continue; /* libnvvm linked it already */
      cl_buf_printf(&err, "link input %s is NVVM IR, which only an NVVM IR compile can link (libnvvm); "
                          "link PTX, cubin, fatbin, LTO-IR, objects or libraries with PTX input", d.name);
      nv_diag_simple(r, NV_PHASE_INPUT, cl_buf_str(&err));
      goto done;
    }
    lto |= d.kind == NV_LINK_LTOIR;
    ins[nin++] = d;
  }
  char store[MAX_LINK_OPTS][96];
  const char *opts[MAX_LINK_OPTS];
  int nopt = link_options(o, lto, store, MAX_LINK_OPTS, opts);
  if (nopt < 0) {
    nv_diag_simple(r, NV_PHASE_OPTIONS, "bad compile options: a ptxas option is longer than 80 characters");
    goto done;
  }
  nvJitLinkResult e = jl->create(&h, (uint32_t)nopt, opts);
  if (e != NVJITLINK_SUCCESS) {
    cl_buf_printf(&what, "nvJitLink rejected its options (%s):", nv_jitlink_error_name(e));
    for (int i = 0; i < nopt; i++) cl_buf_printf(&what, " %s", opts[i]);
    nv_diag_simple(r, NV_PHASE_LINK, cl_buf_str(&what));
    h = NULL;
    goto done;
  }
  /* Adding PTX runs ptxas on it at once: a PTX error surfaces here. */
  e = jl->add_data(h, NVJITLINK_INPUT_PTX, ptx, len, "input.ptx");
  if (e != NVJITLINK_SUCCESS) {
    char *log = link_log(jl, h, 0);
    cl_buf_printf(&what, "ptxas could not compile the PTX for %s (%s)", arch->name, nv_jitlink_error_name(e));
    nv_diag_fill(r, NV_PHASE_PTXAS, cl_buf_str(&what), log, ptx, len, NV_STAGE_PTX);
    free(log);
    goto done;
  }
  for (int i = 0; i < nin; i++) {
    e = jl->add_data(h, (nvJitLinkInputType)nv_link_jit_type(ins[i].kind), ins[i].data, ins[i].size, ins[i].name);
    if (e != NVJITLINK_SUCCESS) {
      char *log = link_log(jl, h, 0);
      cl_buf_printf(&what, "nvJitLink rejected link input %s (%s, as %s)", ins[i].name, nv_jitlink_error_name(e),
                    nv_link_kind_name(ins[i].kind));
      int is_ptx = ins[i].kind == NV_LINK_PTX;
      nv_diag_fill(r, is_ptx ? NV_PHASE_PTXAS : NV_PHASE_LINK, cl_buf_str(&what), log,
                   is_ptx ? ins[i].data : NULL, ins[i].size, NV_STAGE_PTX);
      free(log);
      goto done;
    }
  }
  e = jl->complete(h);
  if (e != NVJITLINK_SUCCESS) {
    char *log = link_log(jl, h, 0);
    cl_buf_printf(&what, "nvJitLink could not link for %s (%s)", arch->name, nv_jitlink_error_name(e));
    nv_diag_fill(r, NV_PHASE_LINK, cl_buf_str(&what), log, ptx, len, NV_STAGE_PTX);
    free(log);
    goto done;
  }
  size_t n = 0;
  ClBuf *cubin = &r->part[NV_PART_CUBIN];
  cl_buf_clear(cubin);
  if (jl->cubin_size(h, &n) != NVJITLINK_SUCCESS || !cl_buf_reserve(cubin, n + 1) ||
      jl->cubin(h, cubin->data) != NVJITLINK_SUCCESS) {
    nv_diag_simple(r, NV_PHASE_LINK, "nvJitLink could not hand back the cubin (out of memory?)");
    goto done;
  }
  cubin->len = n;
  cubin->data[n] = 0;
  char *info = link_log(jl, h, 1);
  cl_buf_clear(&r->part[NV_PART_LOG]);
  if (info) cl_buf_puts(&r->part[NV_PART_LOG], info);
  free(info);
  if (nv_ptxas_diag(r, cl_buf_str(&r->part[NV_PART_LOG]), ptx, len) != 0) goto done; /* nv_ptxas_diag.c */
  status = 0;
done:
  for (int i = 0; i < nin; i++) nv_link_data_free(&ins[i]);
  if (h) jl->destroy(&h);
  cl_buf_free(&err);
  cl_buf_free(&what);
  return status;
}

int nv_compile_ptx_to_cubin(NvResult *r, const char *ptx, size_t len, const NvOptions *o) {
  return ptx_to_cubin(r, ptx, len, o, 0);
}

int nv_compile(NvResult *r, const char *text, size_t len, int kind, const NvOptions *o) {
  if (kind == NV_INPUT_UNKNOWN) kind = nv_input_kind(text, len);
  r->origin = NV_ORIGIN_NONE;
  if (kind == NV_INPUT_NVVM) {
    set_part(r, NV_PART_LL, text, len);
    if (nv_compile_nvvm_to_ptx(r, text, len, o) != 0) return -1;
    const ClBuf *ptx = &r->part[NV_PART_PTX];
    if (ptx_to_cubin(r, ptx->data, ptx->len, o, 1) != 0) return -1;
  } else if (kind == NV_INPUT_PTX) {
    set_part(r, NV_PART_PTX, text, len);
    if (ptx_to_cubin(r, text, len, o, 0) != 0) return -1;
  } else {
    nv_diag_simple(r, NV_PHASE_INPUT,
                   "cannot tell whether the input is NVVM IR or PTX (NVVM IR starts with `target`, `define`, "
                   "`declare`...; PTX with `.version`, `.target`...)");
    return -1;
  }
  r->origin = NV_ORIGIN_COMPILED;
  return 0;
}

/* ---- the plain C interface ---------------------------------------------------------------- */

static void move_part(NvResult *r, int part, ClBuf *out) {
  if (!out) return;
  cl_buf_free(out);
  *out = r->part[part];
  memset(&r->part[part], 0, sizeof r->part[part]);
}

int nv_nvvm_to_ptx(const char *ir, size_t len, const NvOptions *o, ClBuf *ptx, ClBuf *diag) {
  NvResult r = {0};
  int st = nv_compile_nvvm_to_ptx(&r, ir, len, o);
  if (st == 0) move_part(&r, NV_PART_PTX, ptx);
  else if (diag) cl_buf_puts(diag, cl_buf_str(&r.part[NV_PART_DIAG]));
  nv_result_free(&r);
  return st;
}

int nv_ptx_to_cubin(const char *ptx, size_t len, const NvOptions *o, ClBuf *cubin, ClBuf *log, ClBuf *diag) {
  NvResult r = {0};
  int st = nv_compile_ptx_to_cubin(&r, ptx, len, o);
  if (st == 0) {
    move_part(&r, NV_PART_CUBIN, cubin);
    move_part(&r, NV_PART_LOG, log);
  } else if (diag) {
    cl_buf_puts(diag, cl_buf_str(&r.part[NV_PART_DIAG]));
  }
  nv_result_free(&r);
  return st;
}

int nv_tool_versions(ClBuf *out, ClBuf *err) {
  const NvNvvm *nv = nv_nvvm(err);
  const NvJitLink *jl = nv_jitlink(err);
  if (!nv || !jl) return -1;
  int major = 0, minor = 0, irmaj = 0, irmin = 0, dbgmaj = 0, dbgmin = 0;
  unsigned jmaj = 0, jmin = 0;
  nv->version(&major, &minor);
  nv->ir_version(&irmaj, &irmin, &dbgmaj, &dbgmin);
  jl->version(&jmaj, &jmin);
  int drv = nv_driver_version();
  cl_buf_printf(out, "libnvvm %d.%d (NVVM IR %d.%d, debug %d.%d); nvJitLink %u.%u; driver ", major, minor, irmaj,
                irmin, dbgmaj, dbgmin, jmaj, jmin);
  if (drv) cl_buf_printf(out, "%d.%d", drv / 1000, drv % 1000 / 10);
  else cl_buf_puts(out, "none");
  return 0;
}
