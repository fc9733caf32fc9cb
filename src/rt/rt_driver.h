/* rt_driver: the CUDA driver API, opened at run time.
 *
 * libcuda.so.1 is found through cl_dl; every entry point is fetched with
 * cuGetProcAddress_v2 for the CUDA version of the headers we build against,
 * and typed from the header's own prototype (`cuMemAlloc` is a macro for
 * `cuMemAlloc_v2` there), so the version of each call matches cuda.h: a
 * hand-written table could bind an older ABI silently. */
#ifndef RT_DRIVER_H
#define RT_DRIVER_H

#include <cuda.h>

#include "cl_buf.h"

/* Every driver function cutelua calls. X(name): `name` as cuda.h spells it. */
#define RT_DRIVER_FUNCS(X)                                                               \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceTotalMem)            \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)     \
  X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) \
  X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH)           \
  X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)       \
  X(cuMemsetD8) X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD8Async) X(cuMemsetD16Async)   \
  X(cuMemsetD32Async) X(cuMemsetD2D32) X(cuMemsetD2D32Async) X(cuMemHostAlloc) X(cuMemFreeHost)                                \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) \
  X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)                           \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery)         \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)            \
  X(cuEventElapsedTime) X(cuTensorMapEncodeTiled) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

typedef struct RtDriver {
  int loaded;
  int version; /* cuDriverGetVersion, e.g. 13000 */
#define RT_DRIVER_FIELD(name) __typeof__(&name) f_##name;
  RT_DRIVER_FUNCS(RT_DRIVER_FIELD)
#undef RT_DRIVER_FIELD
} RtDriver;

/* Loads the driver and calls cuInit once. Returns the table, or NULL with the
 * reason in err (no libcuda, no GPU, entry point missing). */
const RtDriver *rt_driver(ClBuf *err);

/* The driver's name for an error code ("CUDA_ERROR_ILLEGAL_ADDRESS"). */
const char *rt_cu_error_name(CUresult r);
const char *rt_cu_error_string(CUresult r);

#endif
