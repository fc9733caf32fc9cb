/* nv_tools: libnvvm, nvJitLink and the driver's version calls, opened at run
 * time (internal to src/nvvm).
 *
 * The function types come from the toolkit's own headers, so a mismatch is a
 * compile error. nvJitLink's header functions are inline wrappers around
 * versioned exports (__nvJitLinkCreate_13_0, ...): the versioned names are
 * looked up first, the plain ones as a fallback. Each table is filled once per
 * process and then only read, so lookups need no lock after the first. */
#ifndef NV_TOOLS_H
#define NV_TOOLS_H

#include <nvJitLink.h>
#include <nvvm.h>

#include "cl_buf.h"

typedef struct NvNvvm {
  nvvmResult (*version)(int *, int *);
  nvvmResult (*ir_version)(int *, int *, int *, int *);
  const char *(*error_string)(nvvmResult);
  nvvmResult (*create)(nvvmProgram *);
  nvvmResult (*destroy)(nvvmProgram *);
  nvvmResult (*add_module)(nvvmProgram, const char *, size_t, const char *);
  nvvmResult (*lazy_add_module)(nvvmProgram, const char *, size_t, const char *);
  nvvmResult (*compile)(nvvmProgram, int, const char **);
  nvvmResult (*verify)(nvvmProgram, int, const char **);
  nvvmResult (*result_size)(nvvmProgram, size_t *);
  nvvmResult (*result)(nvvmProgram, char *);
  nvvmResult (*log_size)(nvvmProgram, size_t *);
  nvvmResult (*log)(nvvmProgram, char *);
} NvNvvm;

typedef struct NvJitLink {
  nvJitLinkResult (*create)(nvJitLinkHandle *, uint32_t, const char **);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *);
  nvJitLinkResult (*add_data)(nvJitLinkHandle, nvJitLinkInputType, const void *, size_t, const char *);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*cubin_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*cubin)(nvJitLinkHandle, void *);
  nvJitLinkResult (*error_log_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*error_log)(nvJitLinkHandle, char *);
  nvJitLinkResult (*info_log_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*info_log)(nvJitLinkHandle, char *);
  nvJitLinkResult (*version)(unsigned int *, unsigned int *);
} NvJitLink;

/* The tables, or NULL with the search's message appended to err. */
const NvNvvm *nv_nvvm(ClBuf *err);
const NvJitLink *nv_jitlink(ClBuf *err);
/* The name of an nvJitLink result code ("NVJITLINK_ERROR_PTX_COMPILE"). */
const char *nv_jitlink_error_name(int code);
/* The driver's version (cuDriverGetVersion, e.g. 13000), or 0 with no driver.
 * Asked once per process. */
int nv_driver_version(void);
/* libdevice's bitcode, read once per process; NULL with a message naming the
 * places looked at. */
const ClBuf *nv_libdevice(ClBuf *err);
/* An identity of a library file that changes whenever the file does
 * ("<path> <size> <mtime>"), found without loading it (loading libnvvm and
 * nvJitLink costs ~10 ms, too much for a cache lookup). */
void nv_lib_identity(int lib, ClBuf *out);

#endif
