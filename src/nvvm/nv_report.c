/* nv_report: the per-function resource report, parsed from ptxas's `-v`
 * output in nvJitLink's info log.
 *
 * ptxas writes, per function:
 *   ptxas info    : Compiling entry function 'k' for 'sm_90a'     (kernels only)
 *   ptxas info    : Function properties for k
 *   ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
 *   ptxas info    : Used 24 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
 *   ptxas info    : Compile time = 2.940 ms
 * A device function that was not inlined gets "Function properties" (and a
 * compile time) without the "Compiling entry function" line. Each line
 * applies to the function named last. Unknown lines are skipped, so a new
 * ptxas that says more does not break the parse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_compile.h"

static void blank(NvKernelReport *k, const char *name, size_t n) {
  memset(k, 0, sizeof *k);
  if (n >= sizeof k->name) n = sizeof k->name - 1;
  memcpy(k->name, name, n);
  k->registers = k->barriers = -1;
  k->stack_frame = k->spill_stores = k->spill_loads = k->smem = k->cmem0 = -1;
  k->compile_ms = -1;
}

/* The record a header line names: the current one when it names the same
 * function (the entry line and the properties line of one kernel), else a
 * new one. Returns its index, which may be past max (then it is counted but
 * not written). */
static int record(NvKernelReport *out, int *n, int max, char *cur, int cur_index, const char *name, size_t len) {
  if (len >= 256) len = 255;
  if (cur_index >= 0 && strlen(cur) == len && memcmp(cur, name, len) == 0) return cur_index;
  memcpy(cur, name, len);
  cur[len] = 0;
  if (*n < max) blank(&out[*n], name, len);
  return (*n)++;
}

/* "<number> <what>" anywhere in [p, e): the number, or -1. */
static long long number_before(const char *p, const char *e, const char *what) {
  size_t wn = strlen(what);
  for (const char *q = p; q + wn <= e; q++) {
    if (memcmp(q, what, wn) != 0) continue;
    const char *d = q;
    while (d > p && d[-1] == ' ') d--;
    const char *s = d;
    while (s > p && s[-1] >= '0' && s[-1] <= '9') s--;
    if (s < d) return strtoll(s, NULL, 10);
  }
  return -1;
}

int nv_report_parse(const char *log, size_t len, NvKernelReport *out, int max) {
  int n = 0, cur = -1;
  char cur_name[256] = "";
  const char *p = log, *end = log + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *e = eol ? eol : end;
    const char *q;
    char line[1024];
    size_t ln = (size_t)(e - p) < sizeof line - 1 ? (size_t)(e - p) : sizeof line - 1;
    memcpy(line, p, ln);
    line[ln] = 0;
    if ((q = strstr(line, "Compiling entry function '"))) {
      const char *name = q + 26, *close = strchr(name, '\'');
      if (close) {
        cur = record(out, &n, max, cur_name, cur, name, (size_t)(close - name));
        const char *arch = strstr(close, "for '");
        if (cur < max) {
          out[cur].entry = 1;
          if (arch) {
            const char *ae = strchr(arch + 5, '\'');
            if (ae) snprintf(out[cur].arch, sizeof out[cur].arch, "%.*s", (int)(ae - arch - 5), arch + 5);
          }
        }
      }
    } else if ((q = strstr(line, "Function properties for "))) {
      const char *name = q + 24;
      size_t nl = strcspn(name, " \r");
      if (nl) cur = record(out, &n, max, cur_name, cur, name, nl);
    } else if (cur >= 0 && cur < max) {
      NvKernelReport *k = &out[cur];
      const char *le = line + ln;
      long long v;
      if ((v = number_before(line, le, "bytes stack frame")) >= 0) k->stack_frame = v;
      if ((v = number_before(line, le, "bytes spill stores")) >= 0) k->spill_stores = v;
      if ((v = number_before(line, le, "bytes spill loads")) >= 0) k->spill_loads = v;
      if ((v = number_before(line, le, "registers")) >= 0 && strstr(line, "Used ")) {
        k->registers = (int32_t)v;
        /* ptxas leaves out the memories a function does not use */
        if (k->smem < 0) k->smem = 0;
        if (k->cmem0 < 0) k->cmem0 = 0;
      }
      if ((v = number_before(line, le, "barriers")) >= 0) k->barriers = (int32_t)v;
      if ((v = number_before(line, le, "bytes smem")) >= 0) k->smem = v;
      if ((v = number_before(line, le, "bytes cmem[0]")) >= 0) k->cmem0 = v;
      if ((q = strstr(line, "Compile time = "))) k->compile_ms = strtod(q + 15, NULL);
    }
    p = eol ? eol + 1 : end;
  }
  return n;
}

static void num(ClBuf *out, long long v, int width) {
  if (v < 0) cl_buf_printf(out, " %*s", width, "-");
  else cl_buf_printf(out, " %*lld", width, v);
}

void nv_report_format(const NvKernelReport *k, int n, ClBuf *out) {
  int w = 8;
  for (int i = 0; i < n; i++)
    if ((int)strlen(k[i].name) > w) w = (int)strlen(k[i].name);
  cl_buf_printf(out, "%-*s %-8s %4s %4s %8s %6s %7s %7s %9s\n", w, "function", "arch", "regs", "bars", "smem", "stack",
                "spill>", "spill<", "ptxas ms");
  for (int i = 0; i < n; i++) {
    cl_buf_printf(out, "%-*s %-8s", w, k[i].name, k[i].entry ? k[i].arch : "(device)");
    num(out, k[i].registers, 4);
    num(out, k[i].barriers, 4);
    num(out, k[i].smem, 8);
    num(out, k[i].stack_frame, 6);
    num(out, k[i].spill_stores, 7);
    num(out, k[i].spill_loads, 7);
    if (k[i].compile_ms >= 0) cl_buf_printf(out, " %9.1f\n", k[i].compile_ms);
    else cl_buf_printf(out, " %9s\n", "-");
  }
}

int nv_report_warnings(const NvKernelReport *k, int n, ClBuf *out) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    if (k[i].spill_stores <= 0 && k[i].spill_loads <= 0) continue;
    count++;
    cl_buf_printf(out, "%s '%s' spills registers to local memory: %lld bytes stored, %lld bytes loaded",
                  k[i].entry ? "kernel" : "device function", k[i].name, (long long)(k[i].spill_stores < 0 ? 0 : k[i].spill_stores),
                  (long long)(k[i].spill_loads < 0 ? 0 : k[i].spill_loads));
    if (k[i].registers >= 0) cl_buf_printf(out, " (%d registers", (int)k[i].registers);
    if (k[i].entry && k[i].arch[0]) cl_buf_printf(out, "%s%s", k[i].registers >= 0 ? ", " : " (", k[i].arch);
    if (k[i].registers >= 0 || (k[i].entry && k[i].arch[0])) cl_buf_putc(out, ')');
    cl_buf_putc(out, '\n');
  }
  return count;
}

int nv_report_text(NvResult *r) {
  const ClBuf *log = &r->part[NV_PART_LOG];
  int n = nv_report_parse(cl_buf_str(log), log->len, NULL, 0);
  NvKernelReport *k = n ? calloc((size_t)n, sizeof *k) : NULL;
  if (n && !k) return -1;
  nv_report_parse(cl_buf_str(log), log->len, k, n);
  cl_buf_clear(&r->part[NV_PART_REPORT]);
  cl_buf_clear(&r->part[NV_PART_WARNINGS]);
  nv_report_format(k, n, &r->part[NV_PART_REPORT]);
  int w = nv_report_warnings(k, n, &r->part[NV_PART_WARNINGS]);
  free(k);
  r->warnings = w;
  return w;
}
