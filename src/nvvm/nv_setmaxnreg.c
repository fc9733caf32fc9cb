/* nv_setmaxnreg: PTX that uses setmaxnreg, compiled where ptxas honours it.
 *
 * nvJitLink (and the driver's cuLink) run ptxas in relocatable mode, which
 * drops every setmaxnreg with warning C7504 ("ignored to maintain
 * compatibility across compilation units"): the kernel runs, with the
 * registers of its entry, silently slower. ptxas run whole-program honours
 * it, so a module whose PTX has a setmaxnreg is compiled here by the
 * toolkit's `ptxas` executable instead of nvJitLink (the driver's PTX JIT
 * would honour it too, but then the cubin, the resource report and the
 * compile cache would only exist at load time; docs/notes/hopper-facts.md 5.7).
 *
 * ptxas also ignores setmaxnreg in a kernel with no register count known at
 * entry (C7508): each kernel that uses it must carry .maxnreg, or .maxntid or
 * .reqntid with .minnctapersm; that is checked first, naming the kernel and
 * the fix. Any "'setmaxnreg' ignored" that ptxas still prints (C7504, C7507,
 * C7508, "to allow debugging", ...) fails the compile: it is never a warning.
 * Link inputs cannot join a whole-program compile, so they are refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nv_internal.h"
#include "target.h"

int nv_setmaxnreg_needed(const char *ptx, size_t len) { return memmem(ptx, len, "setmaxnreg.", 11) != NULL; }

static const char *find_in(const char *s, const char *end, const char *what) {
  size_t n = strlen(what);
  return end > s ? memmem(s, (size_t)(end - s), what, n) : NULL;
}

/* The first kernel that uses setmaxnreg without a register cap at entry, its
   name into name; 0 when every one has a cap. */
static int uncapped_kernel(const char *ptx, size_t len, char *name, size_t cap) {
  const char *end = ptx + len, *p = ptx;
  while ((p = find_in(p, end, ".entry ")) != NULL) {
    const char *q = p + 7, *next = find_in(q, end, ".entry ");
    const char *stop = next ? next : end;
    const char *body = find_in(q, stop, "{");
    if (!body) body = stop;
    if (find_in(body, stop, "setmaxnreg.")) {
      int cap_ok = find_in(q, body, ".maxnreg") != NULL ||
                   ((find_in(q, body, ".maxntid") || find_in(q, body, ".reqntid")) && find_in(q, body, ".minnctapersm"));
      if (!cap_ok) {
        size_t n = strcspn(q, "( \t\n");
        snprintf(name, cap, "%.*s", (int)(n < 200 ? n : 200), q);
        return 1;
      }
    }
    p = q;
  }
  return 0;
}

/* The toolkit's ptxas: $CUTELUA_PTXAS, else the toolkit's bin directories and $PATH. */
static int find_ptxas(char *out, size_t cap, ClBuf *err) {
  const char *env = getenv("CUTELUA_PTXAS");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    if (access(out, X_OK) == 0) return 0;
    cl_buf_printf(err, "CUTELUA_PTXAS=%s is not an executable", env);
    return -1;
  }
  char dirs[64][512];
  int n = nv_tool_dirs(dirs, 64);
  for (int i = 0; i < n; i++) {
    if (snprintf(out, cap, "%s/ptxas", dirs[i]) >= (int)cap) continue;
    if (access(out, X_OK) == 0) return 0;
  }
  cl_buf_puts(err, "a kernel that uses setmaxnreg is compiled by the toolkit's ptxas executable (nvJitLink ignores "
                   "setmaxnreg), and none was found; looked in:");
  for (int i = 0; i < n; i++) cl_buf_printf(err, "\n  %s", dirs[i]);
  cl_buf_puts(err, "\n(set CUDA_HOME, PATH or CUTELUA_PTXAS)");
  return -1;
}

static int write_file(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, len, f);
  return (fclose(f) != 0 || w != len) ? -1 : 0;
}

/* ptxas's words when it drops a setmaxnreg (C7504, C7507, C7508 and the others). */
static const char *ignored_line(const char *log) {
  const char *p = strstr(log, "'setmaxnreg' ignored");
  if (!p) p = strstr(log, "setmaxnreg ignored");
  if (!p) return NULL;
  while (p > log && p[-1] != '\n') p--;
  return p;
}

int nv_setmaxnreg_compile(NvResult *r, const char *ptx, size_t len, const NvOptions *o, int after_nvvm) {
  ClBuf err = {0}, log = {0}, what = {0};
  int status = -1;
  const ClTarget *arch = cl_target_at(o->arch);
  char kname[256], tool[600], dir[600] = "", in[700], out[700];
  in[0] = out[0] = 0;
  if (uncapped_kernel(ptx, len, kname, sizeof kname)) {
    cl_buf_printf(&what, "kernel %s uses setmaxnreg but has no register count at entry, so ptxas would ignore it "
                         "(C7508): give it one with cute.launch_bounds(max_threads, min_blocks) in the kernel or "
                         "the kernel options max_threads and min_blocks (PTX .maxntid + .minnctapersm), or .maxnreg",
                  kname);
    nv_diag_simple(r, NV_PHASE_PTXAS, cl_buf_str(&what));
    goto done;
  }
  for (int i = 0; i < o->nlink; i++) {
    NvLinkData d;
    if (nv_link_load(&o->link[i], i, &d, &err) != 0) {
      nv_diag_simple(r, NV_PHASE_INPUT, cl_buf_str(&err));
      goto done;
    }
    int kind = d.kind;
    cl_buf_printf(&what, "%s", d.name);
    nv_link_data_free(&d);
    if (kind == NV_LINK_NVVM && after_nvvm) {
      cl_buf_clear(&what);
      continue;
    }
    ClBuf msg = {0};
    cl_buf_printf(&msg, "link input %s: a module that uses setmaxnreg is compiled whole-program by ptxas (nvJitLink "
                        "would ignore setmaxnreg), and a whole-program compile cannot take link inputs; link NVVM "
                        "IR, or leave setmaxnreg out",
                  cl_buf_str(&what));
    nv_diag_simple(r, NV_PHASE_INPUT, cl_buf_str(&msg));
    cl_buf_free(&msg);
    goto done;
  }
  if (find_ptxas(tool, sizeof tool, &err) != 0) {
    nv_diag_simple(r, NV_PHASE_LOAD, cl_buf_str(&err));
    goto done;
  }
  const char *tmpdir = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/cutelua-ptxas-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(dir)) {
    cl_buf_printf(&what, "cannot make a temporary directory for ptxas (%s): %s", dir, strerror(errno));
    dir[0] = 0;
    nv_diag_simple(r, NV_PHASE_PTXAS, cl_buf_str(&what));
    goto done;
  }
  snprintf(in, sizeof in, "%s/in.ptx", dir);
  snprintf(out, sizeof out, "%s/out.cubin", dir);
  if (write_file(in, ptx, len) != 0) {
    cl_buf_printf(&what, "cannot write %s: %s", in, strerror(errno));
    nv_diag_simple(r, NV_PHASE_PTXAS, cl_buf_str(&what));
    goto done;
  }
  /* The options nvJitLink would pass to its ptxas (nv_compile.c link_options). */
  enum { MAXARG = 40 };
  char store[MAXARG][96];
  char *argv[MAXARG + 1];
  int n = 0;
#define ARG(...) (snprintf(store[n], sizeof store[n], __VA_ARGS__), argv[n] = store[n], n++)
  argv[n++] = tool;
  ARG("%s", arch->link_arch);
  if (o->opt_level != 3) ARG("-O%d", (int)o->opt_level); /* not -O3: refused with debug PTX */
  ARG("-v");
  if (o->lineinfo) ARG("-lineinfo");
  if (o->max_registers > 0) ARG("-maxrregcount=%d", (int)o->max_registers);
  for (const char *p = o->ptxas_options; *p && n < MAXARG - 4;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    const char *s = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
    if (p > s) ARG("%.*s", (int)(p - s < 90 ? p - s : 90), s);
  }
  ARG("-o");
  argv[n++] = out;
  argv[n++] = in;
  argv[n] = NULL;
#undef ARG
  int rc = nv_run_tool(argv, &log, &err);
  if (rc != 0) {
    if (rc < 0) cl_buf_printf(&what, "could not run %s: %s", tool, cl_buf_str(&err));
    else cl_buf_printf(&what, "ptxas could not compile the PTX for %s (exit status %d)", arch->name, rc);
    nv_diag_fill(r, NV_PHASE_PTXAS, cl_buf_str(&what), cl_buf_str(&log), ptx, len, NV_STAGE_PTX);
    goto done;
  }
  const char *ign = ignored_line(cl_buf_str(&log));
  if (ign) {
    cl_buf_printf(&what, "ptxas ignored setmaxnreg (a silent slowdown, refused): %.*s", (int)strcspn(ign, "\n"), ign);
    nv_diag_fill(r, NV_PHASE_PTXAS, cl_buf_str(&what), cl_buf_str(&log), ptx, len, NV_STAGE_PTX);
    goto done;
  }
  ClBuf *cubin = &r->part[NV_PART_CUBIN];
  cl_buf_clear(cubin);
  if (cl_buf_read_file(cubin, out) != 0) {
    cl_buf_printf(&what, "ptxas wrote no cubin (%s)", out);
    nv_diag_fill(r, NV_PHASE_PTXAS, cl_buf_str(&what), cl_buf_str(&log), NULL, 0, NV_STAGE_PTX);
    goto done;
  }
  cl_buf_clear(&r->part[NV_PART_LOG]);
  cl_buf_add(&r->part[NV_PART_LOG], log.data ? log.data : "", log.len);
  status = 0;
done:
  if (in[0]) unlink(in);
  if (out[0]) unlink(out);
  if (dir[0]) rmdir(dir);
  cl_buf_free(&err);
  cl_buf_free(&log);
  cl_buf_free(&what);
  return status;
}
