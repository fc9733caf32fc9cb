/* nv_api: the NVVM backend's FFI table (nvvm.cdef), for lua/cute/compiler.lua.
 *
 * Lua holds an NvResult per compile and reads its parts; every failure is
 * reported through the result's diagnostic parts, never by raising (only the
 * Lua binding raises). */
#include <stdlib.h>
#include <string.h>

#include "nv_internal.h"
#include "nv_hash.h"

static int32_t options_from_env(NvOptions *o, NvResult *r) {
  ClBuf err = {0};
  int st = nv_options_from_env(o, &err);
  if (st) nv_diag_simple(r, NV_PHASE_OPTIONS, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t options_set_arch(NvOptions *o, const char *arch) { return nv_options_set_arch(o, arch); }

static int32_t options_check(const NvOptions *o, NvResult *r) {
  ClBuf err = {0};
  int st = nv_options_check(o, &err);
  if (st) nv_diag_simple(r, NV_PHASE_OPTIONS, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

/* The target table is src/target's (CLTargetApi); these two stay for the ABI. */
static int32_t arch_count(void) { return cl_target_count(); }

static int32_t arch_info(int32_t i, const char **name, int32_t *cc, int32_t *arch_specific, const char **ptx_isa,
                         const char **description) {
  const ClTarget *a = cl_target_at(i);
  if (!a) return -1;
  *name = a->name;
  *cc = a->cc;
  *arch_specific = a->arch_specific;
  *ptx_isa = a->ptx_isa;
  *description = a->description;
  return 0;
}

static int32_t arch_detect(char *why, size_t whylen) { return nv_arch_detect(why, whylen); }

static int32_t keep_parse(const char *list, uint32_t *mask, NvResult *r) {
  ClBuf err = {0};
  int st = nv_keep_parse(list, mask, &err);
  if (st) nv_diag_simple(r, NV_PHASE_OPTIONS, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static const char *stage_name(int32_t s) { return nv_stage_name(s); }
static int32_t part_find(const char *name) { return nv_part_find(name); }

static const char *part(const NvResult *r, int32_t p, size_t *len) {
  if (p < 0 || p >= NV_PART__COUNT) {
    *len = 0;
    return "";
  }
  *len = r->part[p].len;
  return cl_buf_str(&r->part[p]);
}

static void set_part(NvResult *r, int32_t p, const char *data, size_t len) {
  if (p < 0 || p >= NV_PART__COUNT) return;
  cl_buf_clear(&r->part[p]);
  cl_buf_add(&r->part[p], data, len);
  /* A caller that fills in the Lua location wants it in the message too. */
  if (p == NV_PART_SOURCE && r->phase != NV_PHASE_NONE) nv_diag_format(r);
}

static int32_t info(const NvResult *r, int32_t field) { return nv_result_info(r, field); }
static const char *key(const NvResult *r) { return r->key; }
static int32_t input_kind(const char *text, size_t len) { return nv_input_kind(text, len); }

static int32_t nvvm_to_ptx(NvResult *r, const char *ir, size_t len, const NvOptions *o) {
  return nv_compile_nvvm_to_ptx(r, ir, len, o);
}
static int32_t ptx_to_cubin(NvResult *r, const char *ptx, size_t len, const NvOptions *o) {
  return nv_compile_ptx_to_cubin(r, ptx, len, o);
}
static int32_t compile(NvResult *r, const char *text, size_t len, int32_t kind, const NvOptions *o) {
  return nv_compile(r, text, len, kind, o);
}

static int32_t report(const NvResult *r, NvKernelReport *out, int32_t max) {
  return nv_report_parse(cl_buf_str(&r->part[NV_PART_LOG]), r->part[NV_PART_LOG].len, out, max);
}

static int32_t report_text(NvResult *r) { return nv_report_text(r); }
static const char *option_name(int32_t i) { return nv_option_name(i); }
static int32_t option_in_key(int32_t i) { return nv_option_in_key(i); }

static int32_t cache_key(NvResult *r, const char *material, size_t len, const char *salt, const NvOptions *o) {
  ClBuf err = {0};
  int st = nv_cache_key(material, len, salt, o, r->key, &err);
  if (st) nv_diag_simple(r, NV_PHASE_CACHE, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t cache_get(NvResult *r, const NvOptions *o) { return nv_cache_get(r, o); }

/* A failed disk write does not fail a compile: it becomes a note. */
static int32_t cache_put(NvResult *r, const NvOptions *o) {
  ClBuf err = {0};
  int st = nv_cache_put(r, o, &err);
  if (st) cl_buf_printf(&r->part[NV_PART_NOTE], "%s\n", cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t cache_clear(NvResult *r, const NvOptions *o, int32_t memory, int32_t disk) {
  ClBuf err = {0};
  int st = nv_cache_clear(o, memory, disk, &err);
  if (st) nv_diag_simple(r, NV_PHASE_CACHE, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t dump(NvResult *r, const NvOptions *o, const char *name) {
  ClBuf err = {0};
  int st = nv_dump(r, o, name, &err);
  if (st) nv_diag_simple(r, NV_PHASE_DUMP, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t sass(NvResult *r) {
  ClBuf err = {0};
  const ClBuf *c = &r->part[NV_PART_CUBIN];
  int st = nv_sass(c->data, c->len, &r->part[NV_PART_SASS], &err);
  if (st) nv_diag_simple(r, NV_PHASE_SASS, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t cubin_kernels(NvResult *r) {
  ClBuf err = {0};
  const ClBuf *c = &r->part[NV_PART_CUBIN];
  cl_buf_clear(&r->part[NV_PART_KERNELS]);
  int st = nv_cubin_kernels(c->data, c->len, &r->part[NV_PART_KERNELS], &err);
  if (st) nv_diag_simple(r, NV_PHASE_LINK, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static int32_t cubin_has_section(const NvResult *r, const char *name) {
  return nv_cubin_has_section(r->part[NV_PART_CUBIN].data, r->part[NV_PART_CUBIN].len, name);
}

static int32_t versions(NvResult *r) {
  ClBuf err = {0};
  cl_buf_clear(&r->part[NV_PART_VERSIONS]);
  int st = nv_tool_versions(&r->part[NV_PART_VERSIONS], &err);
  if (st) nv_diag_simple(r, NV_PHASE_LOAD, cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static const char *phase_name(int32_t p) { return nv_phase_name(p); }
static const char *origin_name(int32_t o) { return nv_origin_name(o); }
static const char *link_kind_name(int32_t k) { return nv_link_kind_name(k); }
static int32_t link_kind_find(const char *name) { return nv_link_kind_find(name); }

static void sha256_hex(const void *data, size_t len, char *hex65) { nv_sha256_hex(data, len, hex65); }

static const CLNvApi api = {
    .abi = NV_API_ABI,
    .options_base = nv_options_base,
    .compile_module = nv_compile_module,
    .module_lookup = nv_module_lookup,
    .module_print = nv_module_print,
    .module_emit = nv_module_emit,
    .module_finish = nv_module_finish,
    .info_find = nv_info_find,
    .option_name = option_name,
    .option_in_key = option_in_key,
    .options_default = nv_options_default,
    .options_from_env = options_from_env,
    .options_set_arch = options_set_arch,
    .options_check = options_check,
    .arch_count = arch_count,
    .arch_info = arch_info,
    .arch_detect = arch_detect,
    .keep_parse = keep_parse,
    .stage_name = stage_name,
    .result_new = nv_result_new,
    .result_free = nv_result_delete,
    .part_find = part_find,
    .part = part,
    .set_part = set_part,
    .info = info,
    .key = key,
    .input_kind = input_kind,
    .nvvm_to_ptx = nvvm_to_ptx,
    .ptx_to_cubin = ptx_to_cubin,
    .compile = compile,
    .report = report,
    .report_text = report_text,
    .cache_key = cache_key,
    .cache_get = cache_get,
    .cache_put = cache_put,
    .cache_stats = nv_cache_stats,
    .cache_clear = cache_clear,
    .dump = dump,
    .sass = sass,
    .cubin_kernels = cubin_kernels,
    .cubin_has_section = cubin_has_section,
    .versions = versions,
    .default_cache_dir = nv_default_cache_dir,
    .phase_name = phase_name,
    .origin_name = origin_name,
    .link_kind_name = link_kind_name,
    .link_kind_find = link_kind_find,
    .cache_set_memory_limit = nv_cache_set_memory_limit,
    .sha256_hex = sha256_hex,
};

const void *cl_nv_api(void) { return &api; }
