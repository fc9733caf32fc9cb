/* rt: cutelua's CUDA runtime (devices, memory, modules, launches, streams,
 * events, TMA descriptors), over the driver API loaded at run time.
 *
 * The public types and the function table are declared in rt.cdef (shared
 * with the FFI). This header adds what the C files of the runtime share.
 *
 * Error model: every function returns RT_OK, RT_ERROR or RT_FAULT and leaves a
 * message (naming the call, the kernel and the CUDA error) for rt_last_error().
 * A fault in a kernel (illegal address, trap, assertion...) is sticky: the CUDA
 * driver then refuses all further work on that device in the process. We
 * measured every way back on driver 580 (resetting the primary context,
 * releasing it until inactive, creating a new context): each one fails with the
 * fault's error. So the device is marked lost, every later call fails at once
 * with a message that says why, and recovery is a new process (the REPL
 * restarts itself). A voluntary reset (rt_reset_device) frees everything and
 * bumps the context generation; handles made before are then refused. */
#ifndef RT_H
#define RT_H

#include <stddef.h>
#include <stdint.h>

#include "rt.cdef"
#include "rt_driver.h"

#define RT_ABI 1
enum { RT_OK = 0, RT_ERROR = 1, RT_FAULT = 2 };
#define RT_MAX_DEVICES 16

const void *cl_rt_api(void);
const char *rt_last_error(void);
int rt_available(void);

/* Sets the error message (printf-style) and returns RT_ERROR. */
int rt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Makes the device's primary context current (retaining it on first use).
 * Returns the driver, or NULL with the error set. */
const RtDriver *rt_enter(int32_t device);
/* The current device (0 until set_device). */
int32_t rt_current_device(void);
uint32_t rt_generation(int32_t device);
/* RT_OK when the handle's context is still the live one; else an error saying so. */
int rt_check_handle(const char *what, int32_t device, uint32_t gen);

/* Turns a driver result into RT_OK / RT_ERROR / RT_FAULT with a message.
 * `call` names the driver call, `context` adds what it was doing (may be NULL). */
int rt_result(int32_t device, CUresult r, const char *call, const char *context);

/* Records the last launch on a device, so a fault found later can name it. */
void rt_note_launch(int32_t device, const RtFunction *f, const RtLaunch *cfg);
int rt_sync_launches(void);

const RtDeviceInfo *rt_device_props(int32_t device);

/* the API functions implemented in the rt_*.c files */
int rt_device_count(int32_t *n);
int rt_device_lost(int32_t device); /* -1: any device */
int rt_reset_device(int32_t device);
int rt_set_device(int32_t ordinal);
int rt_get_device(int32_t *ordinal);
int rt_device_info(int32_t ordinal, RtDeviceInfo *out);
int rt_synchronize(void);
void rt_set_sync_launches(int32_t on);
int rt_buffer_alloc(RtBuffer *b, uint64_t bytes);
int rt_buffer_wrap(RtBuffer *b, uint64_t ptr, uint64_t bytes);
void rt_buffer_release(RtBuffer *b);
int rt_buffer_check(const RtBuffer *b, uint64_t offset, uint64_t bytes);
int rt_copy_htod(const RtBuffer *dst, uint64_t offset, const void *src, uint64_t bytes, void *stream);
int rt_copy_dtoh(void *dst, const RtBuffer *src, uint64_t offset, uint64_t bytes, void *stream);
int rt_copy_dtod(const RtBuffer *dst, uint64_t doff, const RtBuffer *src, uint64_t soff, uint64_t bytes, void *stream);
int rt_memset(const RtBuffer *dst, uint64_t offset, uint64_t value, int32_t width, uint64_t count, void *stream);
int rt_mem_info(uint64_t *free_bytes, uint64_t *total_bytes);
int rt_module_load(RtModule *m, const void *image, uint64_t size);
void rt_module_release(RtModule *m);
int rt_module_function(const RtModule *m, const char *name, RtFunction *f);
int rt_launch(RtFunction *f, const RtLaunch *cfg, void **args);
int rt_launch_check(RtFunction *f, const RtLaunch *cfg);
/* Clusters: at most 16 blocks (beyond 8 the kernel opts in to non-portable
 * sizes). The size of a launch's cluster in blocks (a dimension 0 counts as
 * 1; saturates at UINT64_MAX), and the cluster checks of a launch against a
 * device: 0, or -1 with why (no GPU needed: unit-tested). */
#define RT_MAX_CLUSTER 16
#define RT_PORTABLE_CLUSTER 8
uint64_t rt_cluster_size(const RtLaunch *c);
int rt_cluster_check(const RtLaunch *c, const RtDeviceInfo *p, ClBuf *why);
int rt_launch_raw_ns(RtFunction *f, const RtLaunch *c, void **args, int32_t count, double *ns_per_launch);
int rt_occupancy(const RtFunction *f, int32_t block_threads, uint32_t smem, int32_t *blocks_per_sm);
int rt_stream_create(RtStream *s);
void rt_stream_release(RtStream *s);
int rt_stream_synchronize(const RtStream *s);
int rt_event_create(RtEvent *e, int32_t timing);
void rt_event_release(RtEvent *e);
int rt_event_record(const RtEvent *e, void *stream);
int rt_event_synchronize(const RtEvent *e);
int rt_event_elapsed_ms(const RtEvent *start, const RtEvent *stop, float *ms);
int rt_tensormap_tiled(void *out, int32_t dtype, int32_t rank, uint64_t addr, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, const uint32_t *elem_strides, int32_t interleave,
                       int32_t swizzle, int32_t l2_promotion, int32_t oob_fill);

int32_t rt_dtype_count(void);
int rt_dtype_info(int32_t code, RtDtypeInfo *out);
uint64_t rt_convert(void *dst, int32_t dst_type, const void *src, int32_t src_type, uint64_t n);
uint64_t rt_from_doubles(void *dst, int32_t dst_type, const double *src, uint64_t n);
uint64_t rt_to_doubles(double *dst, const void *src, int32_t src_type, uint64_t n);
int rt_cublas_gemm(const RtGemm *g);
int rt_cublaslt_matmul(const RtLtMatmul *g);
int rt_host_random(void *dst, int32_t dtype, uint64_t n, int32_t normal, double a, double b, uint64_t seed);

#endif
