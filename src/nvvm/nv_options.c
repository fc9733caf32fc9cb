/* nv_options: compile options, their environment variables, the target of
 * the current GPU, and the names of stages, parts, phases and origins (see
 * nv_compile.h). The target table itself is src/target. */
#include <ctype.h>
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_compile.h"
#include "nv_hash.h"
#include "nv_internal.h"
#include "rt_driver.h"

/* ---- the target of the current GPU (the table is src/target) -------------------- */

/* The GPU is asked once: cuInit can take a while, and the answer does not change. */
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int detected = -1;
static char detect_why[256];

static void detect(void) {
  /* The runtime's driver binding (src/rt): loaded once, cuInit called. */
  ClBuf err = {0};
  const RtDriver *d = rt_driver(&err);
  int n = 0, major = 0, minor = 0;
  CUdevice dev;
  if (!d) {
    snprintf(detect_why, sizeof detect_why, "%s", err.len ? cl_buf_str(&err) : "no CUDA driver");
  } else if (d->f_cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    snprintf(detect_why, sizeof detect_why, "the CUDA driver sees no GPU");
  } else if (d->f_cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
             d->f_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
             d->f_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS) {
    snprintf(detect_why, sizeof detect_why, "cannot read GPU 0's compute capability");
  } else if ((detected = cl_target_index(cl_target_for_cc(major * 10 + minor))) < 0) {
    snprintf(detect_why, sizeof detect_why, "GPU 0 has compute capability %d.%d, which no target in the table fits",
             major, minor);
  }
  cl_buf_free(&err);
}

int nv_arch_detect(char *why, size_t whylen) {
  pthread_once(&detect_once, detect);
  if (detected < 0 && why && whylen) snprintf(why, whylen, "%s", detect_why);
  return detected;
}

/* ---- the options' names ----------------------------------------------------------------- */

static const struct { const char *name; int in_key; } option_names[] = {
#define NV_OPTION_ROW(name, in_key) {name, in_key},
    NV_OPTION_NAMES(NV_OPTION_ROW)
#undef NV_OPTION_ROW
};
enum { OPTION_COUNT = sizeof option_names / sizeof *option_names };
const char *nv_option_name(int i) { return i >= 0 && i < OPTION_COUNT ? option_names[i].name : NULL; }
int nv_option_in_key(int i) { return i >= 0 && i < OPTION_COUNT ? option_names[i].in_key : -1; }

/* ---- defaults and checks ------------------------------------------------------------ */

const char *nv_default_cache_dir(void) {
  static _Thread_local char dir[512]; /* per thread: the variables are read each call */
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg == '/') snprintf(dir, sizeof dir, "%s/cutelua", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/cutelua", home);
  else dir[0] = 0;
  return dir;
}

void nv_options_base(NvOptions *o) {
  memset(o, 0, sizeof *o);
  o->arch = cl_target_index(cl_target_find(CL_TARGET_FALLBACK));
  o->opt_level = 3;
  o->nvvm_opt = -1;
  o->ftz = -1;
  o->cache = 1;
  snprintf(o->cache_dir, sizeof o->cache_dir, "%s", nv_default_cache_dir());
}

void nv_options_default(NvOptions *o) {
  nv_options_base(o);
  int a = nv_arch_detect(NULL, 0);
  if (a >= 0) o->arch = a;
}

int nv_options_set_arch(NvOptions *o, const char *arch) {
  int i = cl_target_index(cl_target_find(arch));
  if (i < 0) return -1;
  o->arch = i;
  return 0;
}

int nv_options_check(const NvOptions *o, ClBuf *err) {
  if (!cl_target_at(o->arch)) {
    cl_buf_printf(err, "bad arch index %d (the table has %d rows: %s)", (int)o->arch, cl_target_count(),
                  cl_target_list());
    return -1;
  }
  if (o->opt_level < 0 || o->opt_level > 3) {
    cl_buf_printf(err, "bad opt level %d (expected 0, 1, 2 or 3)", (int)o->opt_level);
    return -1;
  }
  if (o->nvvm_opt < -1 || o->nvvm_opt > 3) {
    cl_buf_printf(err, "bad nvvm_opt %d (expected 0, 1, 2 or 3, or -1: as opt)", (int)o->nvvm_opt);
    return -1;
  }
  if (o->ftz < -1 || o->ftz > 1 || o->fast_math < 0 || o->fast_math > 1 || o->lineinfo < 0 || o->lineinfo > 1) {
    cl_buf_puts(err, "bad flag: fast_math, lineinfo must be 0 or 1, ftz -1, 0 or 1");
    return -1;
  }
  if (o->max_registers < 0 || o->max_registers > 255) {
    cl_buf_printf(err, "bad max_registers %d (expected 0 for no limit, or 1 to 255)", (int)o->max_registers);
    return -1;
  }
  if (o->nlink < 0 || o->nlink > NV_MAX_LINK) {
    cl_buf_printf(err, "bad link input count %d (at most %d)", (int)o->nlink, NV_MAX_LINK);
    return -1;
  }
  for (int i = 0; i < o->nlink; i++) {
    const NvLinkInput *in = &o->link[i];
    if (in->kind < 0 || in->kind >= NV_LINK__COUNT) {
      cl_buf_printf(err, "link input %d: bad kind %d", i + 1, (int)in->kind);
      return -1;
    }
    if (!in->path && !in->data) {
      cl_buf_printf(err, "link input %d has neither a path nor data", i + 1);
      return -1;
    }
  }
  if (!memchr(o->ptxas_options, 0, sizeof o->ptxas_options) || !memchr(o->dump_dir, 0, sizeof o->dump_dir) ||
      !memchr(o->cache_dir, 0, sizeof o->cache_dir)) {
    cl_buf_puts(err, "an option string is not NUL-terminated");
    return -1;
  }
  return 0;
}

int nv_options_ftz(const NvOptions *o) { return o->ftz < 0 ? o->fast_math : o->ftz; }
int nv_options_nvvm_opt(const NvOptions *o) { return o->nvvm_opt < 0 ? o->opt_level : o->nvvm_opt; }

int nv_options_canonical(const NvOptions *o, ClBuf *out, ClBuf *err) {
  const ClTarget *a = cl_target_at(o->arch);
  cl_buf_printf(out, "arch %s\nopt %d\n", a ? a->name : "?", (int)o->opt_level);
  /* libnvvm's own level only where it differs from opt's (the keys of compiles
   * without it are what they were) */
  if (nv_options_nvvm_opt(o) != o->opt_level) cl_buf_printf(out, "nvvm_opt %d\n", nv_options_nvvm_opt(o));
  cl_buf_printf(out, "fast_math %d\nftz %d\nlineinfo %d\nmax_registers %d\nptxas_options", (int)o->fast_math,
                nv_options_ftz(o), (int)o->lineinfo, (int)o->max_registers);
  /* Blank runs do not change what ptxas gets, so they do not change the key. */
  for (const char *p = o->ptxas_options; *p;) {
    while (*p && isspace((unsigned char)*p)) p++;
    const char *s = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (p > s) cl_buf_printf(out, " %.*s", (int)(p - s), s);
  }
  cl_buf_putc(out, '\n');
  for (int i = 0; i < o->nlink; i++) {
    NvLinkData d;
    if (nv_link_load(&o->link[i], i, &d, err) != 0) return -1;
    char hex[65];
    nv_sha256_hex(d.data, d.size, hex);
    cl_buf_printf(out, "link %s %s\n", nv_link_kind_name(d.kind), hex);
    nv_link_data_free(&d);
  }
  return 0;
}

/* ---- environment variables ---------------------------------------------------------- */

static int parse_bool(const char *v, int *out) {
  static const char *const yes[] = {"1", "true", "on", "yes"}, *const no[] = {"0", "false", "off", "no"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

static int parse_int(const char *v, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi) return -1;
  *out = (int)n;
  return 0;
}

static int copy_string(char *dst, size_t cap, const char *v) {
  if (strlen(v) >= cap) return -1;
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

int nv_options_from_env(NvOptions *o, ClBuf *err) {
  int status = 0;
  const char *v;
  int n;
#define BAD(var, why)                                                      \
  do {                                                                     \
    if (status == 0) cl_buf_printf(err, "%s=%s: %s", var, v, why);         \
    status = -1;                                                           \
  } while (0)
  if ((v = getenv("CUTELUA_ARCH")) && *v && nv_options_set_arch(o, v) != 0) {
    char why[600];
    snprintf(why, sizeof why, "unknown arch (known: %s)", cl_target_list());
    BAD("CUTELUA_ARCH", why);
  }
  if ((v = getenv("CUTELUA_OPT_LEVEL")) && *v) {
    if (parse_int(v, 0, 3, &n) == 0) o->opt_level = n;
    else BAD("CUTELUA_OPT_LEVEL", "expected 0, 1, 2 or 3");
  }
  if ((v = getenv("CUTELUA_NVVM_OPT")) && *v) {
    if (parse_int(v, 0, 3, &n) == 0) o->nvvm_opt = n;
    else BAD("CUTELUA_NVVM_OPT", "expected 0, 1, 2 or 3");
  }
  if ((v = getenv("CUTELUA_FAST_MATH")) && *v) {
    if (parse_bool(v, &n) == 0) o->fast_math = n;
    else BAD("CUTELUA_FAST_MATH", "expected 0 or 1");
  }
  if ((v = getenv("CUTELUA_FTZ")) && *v) {
    if (parse_bool(v, &n) == 0) o->ftz = n;
    else BAD("CUTELUA_FTZ", "expected 0 or 1");
  }
  if ((v = getenv("CUTELUA_LINEINFO")) && *v) {
    if (parse_bool(v, &n) == 0) o->lineinfo = n;
    else BAD("CUTELUA_LINEINFO", "expected 0 or 1");
  }
  if ((v = getenv("CUTELUA_MAX_REGISTERS")) && *v) {
    if (parse_int(v, 0, 255, &n) == 0) o->max_registers = n;
    else BAD("CUTELUA_MAX_REGISTERS", "expected 0 (no limit) or a register count up to 255");
  }
  if ((v = getenv("CUTELUA_PTXAS_OPTIONS")) && copy_string(o->ptxas_options, sizeof o->ptxas_options, v) != 0)
    BAD("CUTELUA_PTXAS_OPTIONS", "too long (511 bytes at most)");
  if ((v = getenv("CUTELUA_KEEP")) && *v) {
    uint32_t mask;
    ClBuf why = {0};
    if (nv_keep_parse(v, &mask, &why) == 0) o->keep = mask;
    else BAD("CUTELUA_KEEP", cl_buf_str(&why));
    cl_buf_free(&why);
  }
  if ((v = getenv("CUTELUA_DUMP_DIR")) && copy_string(o->dump_dir, sizeof o->dump_dir, v) != 0)
    BAD("CUTELUA_DUMP_DIR", "path too long (511 bytes at most)");
  if ((v = getenv("CUTELUA_CACHE")) && *v) {
    if (parse_bool(v, &n) == 0) o->cache = n;
    else BAD("CUTELUA_CACHE", "expected 0 (off) or 1 (on)");
  }
  if ((v = getenv("CUTELUA_CACHE_DIR")) && *v && copy_string(o->cache_dir, sizeof o->cache_dir, v) != 0)
    BAD("CUTELUA_CACHE_DIR", "path too long (511 bytes at most)");
#undef BAD
  return status;
}

/* ---- names ---------------------------------------------------------------------------- */

static const char *const stage_names[] = {
#define NV_STAGE_NAME(id, name) name,
    NV_STAGES(NV_STAGE_NAME)
#undef NV_STAGE_NAME
};
static const char *const part_names[] = {
#define NV_PART_NAME(id, name, what) name,
    NV_PARTS(NV_PART_NAME)
#undef NV_PART_NAME
};
static const char *const phase_names[] = {
#define NV_PHASE_NAME(id, name) name,
    NV_PHASES(NV_PHASE_NAME)
#undef NV_PHASE_NAME
};
static const char *const origin_names[] = {
#define NV_ORIGIN_NAME(id, name) name,
    NV_ORIGINS(NV_ORIGIN_NAME)
#undef NV_ORIGIN_NAME
};

/* The stages are the first parts, in the same order (nv_dump relies on it). */
#define NV_STAGE_IS_PART(id, name) _Static_assert((int)NV_STAGE_##id == (int)NV_PART_##id, "stage " name);
NV_STAGES(NV_STAGE_IS_PART)
#undef NV_STAGE_IS_PART

const char *nv_stage_name(int s) { return s >= 0 && s < NV_STAGE__COUNT ? stage_names[s] : NULL; }
const char *nv_part_name(int p) { return p >= 0 && p < NV_PART__COUNT ? part_names[p] : NULL; }
const char *nv_phase_name(int p) { return p >= 0 && p < NV_PHASE__COUNT ? phase_names[p] : "?"; }
const char *nv_origin_name(int o) { return o >= 0 && o < NV_ORIGIN__COUNT ? origin_names[o] : "?"; }

int nv_part_find(const char *name) {
  for (int i = 0; name && i < NV_PART__COUNT; i++)
    if (strcmp(part_names[i], name) == 0) return i;
  return -1;
}

int nv_keep_parse(const char *list, uint32_t *mask, ClBuf *err) {
  uint32_t m = 0;
  const char *p = list ? list : "";
  if (strcmp(p, "0") == 0) p = "";
  while (*p) {
    while (*p == ',' || isspace((unsigned char)*p)) p++;
    const char *s = p;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) p++;
    size_t n = (size_t)(p - s);
    if (!n) continue;
    int found = -1;
    if (n == 3 && strncmp(s, "all", 3) == 0) {
      m = (1u << NV_STAGE__COUNT) - 1;
      continue;
    }
    for (int i = 0; i < NV_STAGE__COUNT; i++)
      if (strlen(stage_names[i]) == n && strncmp(stage_names[i], s, n) == 0) found = i;
    if (found < 0) {
      cl_buf_printf(err, "unknown stage '%.*s' (known: ir, ll, ptx, cubin, sass, log, all)", (int)n, s);
      return -1;
    }
    m |= 1u << found;
  }
  *mask = m;
  return 0;
}
