/* rt_module: loading cubins/PTX, kernel handles, and launching. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt.h"

int rt_module_load(RtModule *m, const void *image, uint64_t size) {
  memset(m, 0, sizeof *m);
  (void)size;
  int32_t dev = rt_current_device();
  const RtDriver *d = rt_enter(dev);
  if (!d) return RT_ERROR;
  /* For PTX the driver JIT-compiles; keep its error log for the message. */
  char log[8192];
  log[0] = 0;
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule mod = NULL;
  CUresult r = d->f_cuModuleLoadDataEx(&mod, image, 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    int st = rt_result(dev, r, "cuModuleLoadDataEx", "loading a module");
    if (st == RT_ERROR && r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
      const RtDeviceInfo *p = rt_device_props(dev);
      ClBuf b = {0};
      cl_buf_printf(&b, "%s\nthe module has no code for this GPU (%s, sm_%d%d): compile it for that arch", rt_last_error(),
                    p ? p->name : "?", p ? p->cc_major : 0, p ? p->cc_minor : 0);
      rt_fail("%s", cl_buf_str(&b));
      cl_buf_free(&b);
    } else if (st == RT_ERROR && log[0]) {
      ClBuf b = {0};
      cl_buf_printf(&b, "%s\n%s", rt_last_error(), log);
      rt_fail("%s", cl_buf_str(&b));
      cl_buf_free(&b);
    }
    return st;
  }
  m->handle = mod;
  m->device = dev;
  m->gen = rt_generation(dev);
  return RT_OK;
}

void rt_module_release(RtModule *m) {
  if (!m || m->released) return;
  m->released = 1;
  if (!m->handle || rt_generation(m->device) != m->gen) return;
  const RtDriver *d = rt_enter(m->device);
  if (d) d->f_cuModuleUnload((CUmodule)m->handle);
}

static int func_attr(const RtDriver *d, CUfunction fn, CUfunction_attribute a) {
  int v = 0;
  d->f_cuFuncGetAttribute(&v, a, fn);
  return v;
}

int rt_module_function(const RtModule *m, const char *name, RtFunction *f) {
  memset(f, 0, sizeof *f);
  if (m->released) return rt_fail("the module was unloaded");
  if (rt_check_handle("module", m->device, m->gen)) return RT_ERROR;
  const RtDriver *d = rt_enter(m->device);
  if (!d) return RT_ERROR;
  CUfunction fn = NULL;
  CUresult r = d->f_cuModuleGetFunction(&fn, (CUmodule)m->handle, name);
  if (r == CUDA_ERROR_NOT_FOUND) return rt_fail("the module has no kernel named '%s'", name);
  if (r != CUDA_SUCCESS) return rt_result(m->device, r, "cuModuleGetFunction", name);
  const RtDeviceInfo *p = rt_device_props(m->device);
  f->handle = fn;
  f->device = m->device;
  f->gen = m->gen;
  f->max_threads = func_attr(d, fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  f->static_smem = func_attr(d, fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  f->num_regs = func_attr(d, fn, CU_FUNC_ATTRIBUTE_NUM_REGS);
  f->local_bytes = func_attr(d, fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  f->const_bytes = func_attr(d, fn, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  f->dyn_smem_set = func_attr(d, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  f->dyn_smem_limit = (p ? p->smem_per_block_optin : 49152) - f->static_smem;
  snprintf(f->name, sizeof f->name, "%s", name);
  return RT_OK;
}

static int bad_launch(const RtFunction *f, const RtLaunch *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_launch(const RtFunction *f, const RtLaunch *c, const char *fmt, ...) {
  ClBuf b = {0};
  cl_buf_printf(&b, "invalid launch of kernel '%s' (grid (%u,%u,%u), block (%u,%u,%u)", f->name, c->grid[0],
                c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2]);
  if (c->smem) cl_buf_printf(&b, ", %u bytes of dynamic shared memory", c->smem);
  cl_buf_puts(&b, "): ");
  va_list ap;
  va_start(ap, fmt);
  cl_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  rt_fail("%s", cl_buf_str(&b));
  cl_buf_free(&b);
  return RT_ERROR;
}

/* In 64 bits: each dimension may be up to 2^32 - 1 (their product in int
 * overflowed, to 0 or less, and the launch then skipped every cluster check
 * and dropped the cluster). */
uint64_t rt_cluster_size(const RtLaunch *c) {
  uint64_t n = 1;
  for (int i = 0; i < 3; i++) {
    uint64_t d = c->cluster[i] ? c->cluster[i] : 1;
    n = n > UINT64_MAX / d ? UINT64_MAX : n * d; /* saturates: 2^96 does not fit */
  }
  return n;
}

int rt_cluster_check(const RtLaunch *c, const RtDeviceInfo *p, ClBuf *why) {
  static const char axis[] = "xyz";
  uint64_t cs = rt_cluster_size(c);
  if (cs <= 1) return 0;
  if (!p->cluster_launch) {
    cl_buf_printf(why, "thread block clusters need sm_90 or newer (this is sm_%d%d)", p->cc_major, p->cc_minor);
    return -1;
  }
  if (cs > RT_MAX_CLUSTER) {
    cl_buf_printf(why, "a cluster of %u x %u x %u = %llu blocks; at most %d are possible (%d portable)",
                  c->cluster[0] ? c->cluster[0] : 1, c->cluster[1] ? c->cluster[1] : 1,
                  c->cluster[2] ? c->cluster[2] : 1, (unsigned long long)cs, RT_MAX_CLUSTER, RT_PORTABLE_CLUSTER);
    return -1;
  }
  for (int i = 0; i < 3; i++) {
    uint32_t ci = c->cluster[i] ? c->cluster[i] : 1;
    if (c->grid[i] % ci) {
      cl_buf_printf(why, "grid.%c = %u is not a multiple of the cluster's %u", axis[i], c->grid[i], ci);
      return -1;
    }
  }
  return 0;
}

int rt_launch_check(RtFunction *f, const RtLaunch *c) {
  if (rt_check_handle("kernel", f->device, f->gen)) return RT_ERROR;
  const RtDeviceInfo *p = rt_device_props(f->device);
  if (!p) return RT_ERROR;
  static const char axis[] = "xyz";
  for (int i = 0; i < 3; i++) {
    if (c->grid[i] < 1 || c->grid[i] > (uint32_t)p->max_grid[i])
      return bad_launch(f, c, "grid.%c = %u is outside 1..%d", axis[i], c->grid[i], p->max_grid[i]);
    if (c->block[i] < 1 || c->block[i] > (uint32_t)p->max_block[i])
      return bad_launch(f, c, "block.%c = %u is outside 1..%d", axis[i], c->block[i], p->max_block[i]);
  }
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  if (threads > (uint64_t)f->max_threads) {
    if (f->max_threads < p->max_threads_per_block)
      return bad_launch(f, c, "%llu threads per block; this kernel allows at most %d (it uses %d registers per thread)",
                        (unsigned long long)threads, f->max_threads, f->num_regs);
    return bad_launch(f, c, "%llu threads per block; the device allows at most %d", (unsigned long long)threads,
                      f->max_threads);
  }
  if ((int64_t)c->smem > (int64_t)f->dyn_smem_limit)
    return bad_launch(f, c,
                      "%u bytes of dynamic shared memory; at most %d are available (the device's per-block limit %d "
                      "minus %d bytes of static shared memory)",
                      c->smem, f->dyn_smem_limit, p->smem_per_block_optin, f->static_smem);
  ClBuf why = {0};
  if (rt_cluster_check(c, p, &why) != 0) {
    bad_launch(f, c, "%s", cl_buf_str(&why));
    cl_buf_free(&why);
    return RT_ERROR;
  }
  return RT_OK;
}

/* Raises the kernel's dynamic-smem and cluster-size attributes when a launch needs it. */
static int prepare(const RtDriver *d, RtFunction *f, const RtLaunch *c) {
  CUresult r;
  if ((int32_t)c->smem > f->dyn_smem_set) {
    r = d->f_cuFuncSetAttribute((CUfunction)f->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)c->smem);
    if (r != CUDA_SUCCESS) return rt_result(f->device, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", f->name);
    f->dyn_smem_set = (int32_t)c->smem;
  }
  if (rt_cluster_size(c) > RT_PORTABLE_CLUSTER && !f->nonportable_cluster) {
    r = d->f_cuFuncSetAttribute((CUfunction)f->handle, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r != CUDA_SUCCESS) return rt_result(f->device, r, "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", f->name);
    f->nonportable_cluster = 1;
  }
  return RT_OK;
}

int rt_launch(RtFunction *f, const RtLaunch *c, void **args) {
  if (rt_launch_check(f, c)) return RT_ERROR;
  const RtDriver *d = rt_enter(f->device);
  if (!d || prepare(d, f, c)) return RT_ERROR;
  CUresult r;
  const RtDeviceInfo *props = c->pdl ? rt_device_props(f->device) : NULL;
  int pdl = props && props->cc_major >= 9;
  int cluster = rt_cluster_size(c) > 1;
  int ex = cluster || pdl;
  if (ex) {
    CUlaunchAttribute attr[2];
    unsigned n = 0;
    memset(attr, 0, sizeof attr);
    if (cluster) {
      attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attr[n].value.clusterDim.x = c->cluster[0] ? c->cluster[0] : 1;
      attr[n].value.clusterDim.y = c->cluster[1] ? c->cluster[1] : 1;
      attr[n].value.clusterDim.z = c->cluster[2] ? c->cluster[2] : 1;
      n++;
    }
    if (pdl) {
      attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr[n].value.programmaticStreamSerializationAllowed = 1;
      n++;
    }
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = c->grid[0];
    cfg.gridDimY = c->grid[1];
    cfg.gridDimZ = c->grid[2];
    cfg.blockDimX = c->block[0];
    cfg.blockDimY = c->block[1];
    cfg.blockDimZ = c->block[2];
    cfg.sharedMemBytes = c->smem;
    cfg.hStream = (CUstream)c->stream;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    r = d->f_cuLaunchKernelEx(&cfg, (CUfunction)f->handle, args, NULL);
  } else {
    r = d->f_cuLaunchKernel((CUfunction)f->handle, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                            c->block[2], c->smem, (CUstream)c->stream, args, NULL);
  }
  rt_note_launch(f->device, f, c);
  if (r != CUDA_SUCCESS) {
    char what[200];
    snprintf(what, sizeof what, "launching kernel '%s'", f->name);
    return rt_result(f->device, r, ex ? "cuLaunchKernelEx" : "cuLaunchKernel", what);
  }
  if (rt_sync_launches()) {
    char what[200];
    snprintf(what, sizeof what, "running kernel '%s'", f->name);
    return rt_result(f->device, d->f_cuStreamSynchronize((CUstream)c->stream), "cuStreamSynchronize", what);
  }
  return RT_OK;
}

int rt_occupancy(const RtFunction *f, int32_t block_threads, uint32_t smem, int32_t *blocks_per_sm) {
  if (rt_check_handle("kernel", f->device, f->gen)) return RT_ERROR;
  const RtDriver *d = rt_enter(f->device);
  if (!d) return RT_ERROR;
  int n = 0;
  CUresult r = d->f_cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, (CUfunction)f->handle, block_threads, smem);
  *blocks_per_sm = n;
  return rt_result(f->device, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor", f->name);
}

/* Host time of `count` back-to-back cuLaunchKernel calls of f (no checks, no
 * synchronisation in between): the floor a launch path can be compared with.
 * The GPU work is synchronised after the clock stops. */
int rt_launch_raw_ns(RtFunction *f, const RtLaunch *c, void **args, int32_t count, double *ns_per_launch) {
  if (rt_launch_check(f, c)) return RT_ERROR;
  const RtDriver *d = rt_enter(f->device);
  if (!d || prepare(d, f, c)) return RT_ERROR;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CUresult r = CUDA_SUCCESS;
  for (int32_t i = 0; i < count && r == CUDA_SUCCESS; i++)
    r = d->f_cuLaunchKernel((CUfunction)f->handle, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                            c->block[2], c->smem, (CUstream)c->stream, args, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (r != CUDA_SUCCESS) return rt_result(f->device, r, "cuLaunchKernel", f->name);
  *ns_per_launch = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (count > 0 ? count : 1);
  return rt_result(f->device, d->f_cuStreamSynchronize((CUstream)c->stream), "cuStreamSynchronize", f->name);
}
