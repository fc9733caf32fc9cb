/* nv_kernel: a traced IR module to a cubin in one call, the whole pipeline
 * in the order it runs:
 *
 *   verify -> print (key material) -> key -> cache lookup
 *          -> (miss) emit NVVM IR -> libnvvm -> nvJitLink -> cache store
 *          -> report (warnings) -> dumps
 *
 * The texts stay in the NvResult (the caller's handle): the printed IR, the
 * NVVM IR, the PTX, the cubin and the log are parts that the caller asks for
 * when it wants them (Lua: compiler.Module:ir(), :ll(), :ptx() ...). Each op
 * is checked once on the way: when it was appended (the builder), the
 * verifier then checks structure and skips the op rules already applied
 * (ir_verify), and the emitter does not verify again.
 *
 * A kernel keyed before tracing (a trace_key) first asks nv_module_lookup
 * with its own key material; on a miss the caller traces and hands the module
 * to nv_compile_module with that key (job->looked_up). */
#include <string.h>

#include "emit.h"
#include "ir.h"
#include "nv_internal.h"

static void set_part(NvResult *r, int part, const void *data, size_t len) {
  cl_buf_clear(&r->part[part]);
  cl_buf_add(&r->part[part], data, len);
}

int nv_module_lookup(NvResult *r, const char *material, size_t len, const char *salt, const NvOptions *o) {
  ClBuf err = {0};
  int st = nv_cache_key(material, len, salt, o, r->key, &err);
  if (st) nv_diag_simple(r, NV_PHASE_CACHE, cl_buf_str(&err));
  cl_buf_free(&err);
  if (st) return -1;
  return nv_cache_get(r, o);
}

int nv_module_print(NvResult *r, IrModule *m) {
  cl_buf_clear(&r->part[NV_PART_IR]);
  ir_print_module(m, &r->part[NV_PART_IR], IR_PRINT_LOCS);
  return r->part[NV_PART_IR].oom ? -1 : 0;
}

/* The options' target must be the module's: it decided what the module may hold. */
static int same_target(NvResult *r, const IrModule *m, const NvOptions *o, const char *name) {
  const ClTarget *mt = ir_module_target(m), *ot = cl_target_at(o->arch);
  if (mt == ot) return 0;
  ClBuf msg = {0};
  cl_buf_printf(&msg, "kernel %s: the module was built for %s, the options compile for %s", name,
                mt ? mt->name : "?", ot ? ot->name : "?");
  nv_diag_simple(r, NV_PHASE_OPTIONS, cl_buf_str(&msg));
  cl_buf_free(&msg);
  return -1;
}

/* NVVM IR of a verified module for the options, into out. */
static int emit(NvResult *r, const IrModule *m, const NvOptions *o, const char *name, ClBuf *out) {
  const ClTarget *t = cl_target_at(o->arch);
  EmOptions eo = {o->fast_math, nv_options_ftz(o) == 1, o->lineinfo, t ? t->name : NULL};
  ClBuf err = {0};
  int st = em_nvvm(m, &eo, out, &err);
  if (st) {
    ClBuf msg = {0};
    cl_buf_printf(&msg, "kernel %s: the NVVM emitter failed:\n%s", name, cl_buf_str(&err));
    nv_diag_simple(r, NV_PHASE_EMIT, cl_buf_str(&msg));
    cl_buf_free(&msg);
  }
  cl_buf_free(&err);
  return st;
}

static int verify(NvResult *r, IrModule *m, const char *name) {
  if (ir_module_verified(m)) return 0;
  if (ir_verify(m) == 0) return 0;
  ClBuf msg = {0};
  cl_buf_printf(&msg, "kernel %s does not verify (an internal error of the tracer, please report it):\n%s", name,
                ir_diag(m));
  while (msg.len && msg.data[msg.len - 1] == '\n') msg.data[--msg.len] = 0;
  nv_diag_simple(r, NV_PHASE_VERIFY, cl_buf_str(&msg));
  cl_buf_free(&msg);
  return -1;
}

int nv_module_emit(NvResult *r, IrModule *m, const NvOptions *o, const char *name) {
  if (!name) name = "module";
  if (same_target(r, m, o, name) || verify(r, m, name)) return -1;
  ClBuf ll = {0};
  int st = emit(r, m, o, name, &ll);
  if (!st) {
    cl_buf_free(&r->part[NV_PART_LL]);
    r->part[NV_PART_LL] = ll; /* moved */
  } else {
    cl_buf_free(&ll);
  }
  return st;
}

int nv_module_finish(NvResult *r, const NvOptions *o, const char *name) {
  int warnings = nv_report_text(r);
  if (o->keep) {
    ClBuf err = {0};
    if (nv_dump(r, o, name, &err) != 0) cl_buf_printf(&r->part[NV_PART_NOTE], "dumps of %s failed: %s\n", name,
                                                      cl_buf_str(&err));
    cl_buf_free(&err);
  }
  return warnings;
}

int nv_compile_module(NvResult *r, IrModule *m, const NvOptions *o, const NvModuleJob *job) {
  NvModuleJob none;
  memset(&none, 0, sizeof none);
  if (!job) job = &none;
  const char *name = job->name ? job->name : "module";
  if (!r || !m || !o) return -1;
  if (same_target(r, m, o, name) || verify(r, m, name)) return -1;
  /* the key: the caller's material (a trace_key), else the printed IR */
  int hit = 0;
  if (!job->looked_up) {
    const char *material = job->key_text;
    size_t len = job->key_len;
    if (!material) {
      if (nv_module_print(r, m)) {
        nv_diag_simple(r, NV_PHASE_CACHE, "out of memory printing the IR");
        return -1;
      }
      material = r->part[NV_PART_IR].data ? r->part[NV_PART_IR].data : "";
      len = r->part[NV_PART_IR].len;
    }
    ClBuf err = {0};
    int st = nv_cache_key(material, len, job->salt, o, r->key, &err);
    if (st) nv_diag_simple(r, NV_PHASE_CACHE, cl_buf_str(&err));
    cl_buf_free(&err);
    if (st) return -1;
    hit = !job->refresh && nv_cache_get(r, o) == 1;
  }
  if (hit) {
    /* a dump of the NVVM IR wants it made again (the cache keeps PTX, cubin, log, meta) */
    if ((o->keep & (1u << NV_STAGE_LL)) && nv_module_emit(r, m, o, name)) return -1;
  } else {
    ClBuf ll = {0};
    if (emit(r, m, o, name, &ll)) {
      cl_buf_free(&ll);
      return -1;
    }
    if (job->meta) set_part(r, NV_PART_META, job->meta, job->meta_len);
    int st = nv_compile(r, ll.data ? ll.data : "", ll.len, NV_INPUT_NVVM, o);
    cl_buf_free(&ll);
    if (st) return -1;
    ClBuf err = {0};
    if (nv_cache_put(r, o, &err) != 0) cl_buf_printf(&r->part[NV_PART_NOTE], "%s\n", cl_buf_str(&err));
    cl_buf_free(&err);
  }
  if ((o->keep & (1u << NV_STAGE_IR)) && !r->part[NV_PART_IR].len && nv_module_print(r, m)) return -1;
  nv_module_finish(r, o, name);
  return 0;
}
