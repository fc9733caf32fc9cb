/* rt_core: devices, primary contexts, errors and recovery after faults. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

typedef struct RtDevice {
  CUdevice dev;
  CUcontext ctx;
  int retained;
  uint32_t gen; /* context generation, starts at 1; bumped by every reset */
  int props_loaded;
  RtDeviceInfo props;
  /* the last launch, to name the kernel when a fault shows up later */
  char last_kernel[128];
  RtLaunch last_cfg;
  int have_last;
  /* After a sticky fault the driver refuses all further work on the device in
   * this process (measured: no reset, release or new context brings it back),
   * so the device is marked lost and every call fails at once, saying why. */
  int lost;
  char lost_reason[512];
} RtDevice;

static RtDevice devices[RT_MAX_DEVICES];
static int32_t current_device;
static int32_t sync_launches;
static _Thread_local ClBuf err_msg;

const char *rt_last_error(void) { return cl_buf_str(&err_msg); }

int rt_fail(const char *fmt, ...) {
  cl_buf_clear(&err_msg);
  va_list ap;
  va_start(ap, fmt);
  cl_buf_vprintf(&err_msg, fmt, ap);
  va_end(ap);
  return RT_ERROR;
}

int rt_available(void) {
  ClBuf e = {0};
  const RtDriver *d = rt_driver(&e);
  int n = 0;
  if (d && d->f_cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0) {
    cl_buf_free(&e);
    return 1;
  }
  if (d) rt_fail("the CUDA driver sees no GPU");
  else rt_fail("%s", cl_buf_str(&e));
  cl_buf_free(&e);
  return 0;
}

static const RtDriver *driver_or_fail(void) {
  ClBuf e = {0};
  const RtDriver *d = rt_driver(&e);
  if (!d) rt_fail("%s", cl_buf_str(&e));
  cl_buf_free(&e);
  return d;
}

int rt_device_count(int32_t *n) {
  const RtDriver *d = driver_or_fail();
  if (!d) return RT_ERROR;
  int c = 0;
  CUresult r = d->f_cuDeviceGetCount(&c);
  if (r != CUDA_SUCCESS) return rt_result(-1, r, "cuDeviceGetCount", NULL);
  *n = c;
  return RT_OK;
}

static int check_ordinal(const RtDriver *d, int32_t ordinal) {
  static int n = -1; /* the device count does not change within a process */
  if (n < 0 && d->f_cuDeviceGetCount(&n) != CUDA_SUCCESS) n = -1;
  if (ordinal < 0 || ordinal >= n || ordinal >= RT_MAX_DEVICES)
    return rt_fail("no CUDA device %d (this machine has %d)", ordinal, n);
  return RT_OK;
}

const RtDriver *rt_enter(int32_t device) {
  const RtDriver *d = driver_or_fail();
  if (!d) return NULL;
  if ((unsigned)device >= RT_MAX_DEVICES || !devices[device].retained) {
    if (check_ordinal(d, device)) return NULL;
  }
  RtDevice *dv = &devices[device];
  if (dv->lost) {
    rt_fail("device %d cannot be used again in this process: %s\n"
            "(the CUDA driver refuses all work in a process after such a fault; start a new process: "
            "the REPL restarts itself)",
            device, dv->lost_reason);
    return NULL;
  }
  CUresult r;
  if (!dv->retained) {
    if ((r = d->f_cuDeviceGet(&dv->dev, device)) != CUDA_SUCCESS ||
        (r = d->f_cuDevicePrimaryCtxRetain(&dv->ctx, dv->dev)) != CUDA_SUCCESS) {
      rt_result(device, r, "cuDevicePrimaryCtxRetain", "opening the device");
      return NULL;
    }
    dv->retained = 1;
    if (dv->gen == 0) dv->gen = 1;
  }
  CUcontext cur = NULL;
  d->f_cuCtxGetCurrent(&cur);
  if (cur != dv->ctx && (r = d->f_cuCtxSetCurrent(dv->ctx)) != CUDA_SUCCESS) {
    rt_result(device, r, "cuCtxSetCurrent", NULL);
    return NULL;
  }
  return d;
}

int32_t rt_current_device(void) { return current_device; }

uint32_t rt_generation(int32_t device) {
  if (device < 0 || device >= RT_MAX_DEVICES) return 0;
  return devices[device].gen;
}

int rt_check_handle(const char *what, int32_t device, uint32_t gen) {
  if (device < 0 || device >= RT_MAX_DEVICES || gen == 0)
    return rt_fail("this %s was never created (or was already released)", what);
  if (devices[device].gen != gen)
    return rt_fail("this %s belongs to a CUDA context that was reset (cute.reset_device) on device %d; "
                   "create it again",
                   what, device);
  return RT_OK;
}

int rt_set_device(int32_t ordinal) {
  if (!rt_enter(ordinal)) return RT_ERROR;
  current_device = ordinal;
  return RT_OK;
}

int rt_get_device(int32_t *ordinal) {
  *ordinal = current_device;
  return RT_OK;
}

void rt_set_sync_launches(int32_t on) { sync_launches = on; }
int rt_sync_launches(void) { return sync_launches; }

void rt_note_launch(int32_t device, const RtFunction *f, const RtLaunch *cfg) {
  RtDevice *dv = &devices[device];
  memcpy(dv->last_kernel, f->name, sizeof dv->last_kernel);
  dv->last_cfg = *cfg;
  dv->have_last = 1;
}

/* Errors after which the context is unusable: every later call fails with them. */
static int is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    return 1;
  default:
    return 0;
  }
}

int rt_device_lost(int32_t device) {
  if (device < 0) {
    for (int i = 0; i < RT_MAX_DEVICES; i++)
      if (devices[i].lost) return 1;
    return 0;
  }
  return device < RT_MAX_DEVICES && devices[device].lost;
}

/* A voluntary reset (cudaDeviceReset): frees everything made on the device;
 * handles made before are refused from then on (their generation is old). */
int rt_reset_device(int32_t device) {
  const RtDriver *d = rt_enter(device);
  if (!d) return RT_ERROR;
  RtDevice *dv = &devices[device];
  CUresult r = d->f_cuDevicePrimaryCtxReset(dv->dev);
  dv->gen++;
  dv->have_last = 0;
  if (r != CUDA_SUCCESS) return rt_result(device, r, "cuDevicePrimaryCtxReset", NULL);
  /* the reset destroyed the context behind our handle: retain a fresh one
   * (releasing the extra reference at once keeps the count unchanged) */
  CUcontext fresh = NULL;
  r = d->f_cuDevicePrimaryCtxRetain(&fresh, dv->dev);
  if (r != CUDA_SUCCESS) {
    dv->retained = 0;
    return rt_result(device, r, "cuDevicePrimaryCtxRetain", "after a device reset");
  }
  d->f_cuDevicePrimaryCtxRelease(dv->dev);
  dv->ctx = fresh;
  return rt_result(device, d->f_cuCtxSetCurrent(fresh), "cuCtxSetCurrent", "after a device reset");
}

int rt_result(int32_t device, CUresult r, const char *call, const char *context) {
  if (r == CUDA_SUCCESS) return RT_OK;
  cl_buf_clear(&err_msg);
  cl_buf_printf(&err_msg, "%s failed: %s (%s)", call, rt_cu_error_name(r), rt_cu_error_string(r));
  if (context) cl_buf_printf(&err_msg, " while %s", context);
  if (!is_sticky(r) || device < 0) return RT_ERROR;
  RtDevice *dv = &devices[device];
  size_t mark = err_msg.len;
  cl_buf_printf(&err_msg, "\na kernel faulted on device %d", device);
  if (dv->have_last) {
    const RtLaunch *c = &dv->last_cfg;
    cl_buf_printf(&err_msg, "; the last kernel launched there was '%s' with grid (%u,%u,%u), block (%u,%u,%u)",
                  dv->last_kernel, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2]);
    if (c->smem) cl_buf_printf(&err_msg, ", %u bytes of dynamic shared memory", c->smem);
    if (!sync_launches)
      cl_buf_puts(&err_msg, " (launches are asynchronous: with cute.set_sync_launches(true) the fault names its kernel)");
  }
  if (!dv->lost) {
    dv->lost = 1;
    snprintf(dv->lost_reason, sizeof dv->lost_reason, "%s%s", rt_cu_error_name(r), cl_buf_str(&err_msg) + mark);
    cl_buf_puts(&err_msg, "\nthe device cannot be used again in this process (the CUDA driver refuses all further "
                          "work after this kind of fault); start a new process (the REPL restarts itself)");
  }
  return RT_FAULT;
}

int rt_synchronize(void) {
  const RtDriver *d = rt_enter(current_device);
  if (!d) return RT_ERROR;
  return rt_result(current_device, d->f_cuCtxSynchronize(), "cuCtxSynchronize", NULL);
}

const RtDeviceInfo *rt_device_props(int32_t device) {
  const RtDriver *d = rt_enter(device);
  if (!d) return NULL;
  RtDevice *dv = &devices[device];
  if (dv->props_loaded) return &dv->props;
  RtDeviceInfo *p = &dv->props;
  memset(p, 0, sizeof *p);
  p->ordinal = device;
  d->f_cuDeviceGetName(p->name, sizeof p->name, dv->dev);
  size_t total = 0;
  d->f_cuDeviceTotalMem(&total, dv->dev);
  p->total_mem = total;
  struct {
    int32_t *out;
    CUdevice_attribute attr;
  } attrs[] = {
      {&p->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&p->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&p->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&p->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&p->max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&p->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&p->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&p->regs_per_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
      {&p->smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&p->smem_per_block_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&p->smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&p->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {&p->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE},
      {&p->mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE},
      {&p->mem_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
      {&p->max_grid[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&p->max_grid[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&p->max_grid[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&p->max_block[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&p->max_block[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&p->max_block[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&p->cluster_launch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH},
      {&p->async_engines, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT},
      {&p->unified_addressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
    int v = 0;
    d->f_cuDeviceGetAttribute(&v, attrs[i].attr, dv->dev);
    *attrs[i].out = v;
  }
  p->driver_version = d->version;
  p->cuda_headers_version = CUDA_VERSION;
  dv->props_loaded = 1;
  return p;
}

int rt_device_info(int32_t ordinal, RtDeviceInfo *out) {
  const RtDeviceInfo *p = rt_device_props(ordinal);
  if (!p) return RT_ERROR;
  *out = *p;
  return RT_OK;
}
