/* rt_driver: loading the CUDA driver and its entry points (see rt_driver.h). */
#include "rt_driver.h"

#include <stdio.h>
#include <string.h>

#include "cl_dl.h"

static RtDriver drv;
static ClBuf load_error; /* why the last attempt failed; retried on the next call */

typedef CUresult (*GetProcAddressFn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

const RtDriver *rt_driver(ClBuf *err) {
  if (drv.loaded) return &drv;
  cl_buf_clear(&load_error);
  void *lib = cl_dl_lib(CL_LIB_CUDA, &load_error);
  if (!lib) goto fail;
  GetProcAddressFn gpa = (GetProcAddressFn)cl_dl_sym(lib, "cuGetProcAddress_v2");
  if (!gpa) {
    cl_buf_printf(&load_error, "the CUDA driver at %s is too old: it lacks cuGetProcAddress_v2 (CUDA 12 or newer needed)",
                  cl_dl_path(CL_LIB_CUDA));
    goto fail;
  }
  RtDriver d;
  memset(&d, 0, sizeof d);
#define RT_DRIVER_LOAD(name)                                                                      \
  {                                                                                               \
    void *p = NULL;                                                                               \
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                      \
    if (gpa(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !p) {    \
      cl_buf_printf(&load_error, "the CUDA driver at %s has no %s for CUDA %d.%d (driver too old?)", \
                    cl_dl_path(CL_LIB_CUDA), #name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10); \
      goto fail;                                                                                  \
    }                                                                                             \
    d.f_##name = (__typeof__(d.f_##name))p;                                                       \
  }
  RT_DRIVER_FUNCS(RT_DRIVER_LOAD)
#undef RT_DRIVER_LOAD
  CUresult r = d.f_cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = NULL;
    d.f_cuGetErrorName(r, &name);
    if (r == CUDA_ERROR_NO_DEVICE)
      cl_buf_printf(&load_error, "no CUDA GPU is visible (cuInit: %s)", name ? name : "?");
    else
      cl_buf_printf(&load_error, "cuInit failed: %s", name ? name : "?");
    goto fail;
  }
  d.f_cuDriverGetVersion(&d.version);
  d.loaded = 1;
  drv = d;
  return &drv;
fail:
  if (err) cl_buf_puts(err, cl_buf_str(&load_error));
  return NULL;
}

const char *rt_cu_error_name(CUresult r) {
  const char *s = NULL;
  if (drv.loaded && drv.f_cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN_CODE";
}

const char *rt_cu_error_string(CUresult r) {
  const char *s = NULL;
  if (drv.loaded && drv.f_cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown error";
}
