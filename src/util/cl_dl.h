/* cl_dl: the CUDA libraries cutelua opens at run time.
 *
 * Nothing in cutelua links against libcuda, libnvvm, nvJitLink or cuBLAS: the
 * binary starts (REPL, layout algebra, scripts that compile nothing) on a
 * machine with neither toolkit nor GPU. A library is opened the first time
 * something needs it, and stays open for the life of the process. When it
 * cannot be found, the error names the library and every place searched.
 *
 * Search order for toolkit libraries: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda
 * (each: nvvm/lib64, lib64, targets/x86_64-linux/lib), then the loader path.
 * The driver (libcuda.so.1) comes from the loader path first: it belongs to the
 * installed driver, not to the toolkit (whose lib64/stubs copy never runs). */
#ifndef CL_DL_H
#define CL_DL_H

#include "cl_buf.h"

/* X(id, key, description, soname, where): where is TOOLKIT or DRIVER. */
#define CL_LIBS(X)                                                         \
  X(CUDA, "cuda", "the CUDA driver", "libcuda.so.1", DRIVER)              \
  X(NVVM, "nvvm", "libnvvm (NVVM IR to PTX)", "libnvvm.so.4", TOOLKIT)    \
  X(NVJITLINK, "nvjitlink", "nvJitLink (PTX to cubin)", "libnvJitLink.so.13", TOOLKIT) \
  X(CUBLAS, "cublas", "cuBLAS", "libcublas.so.13", TOOLKIT)               \
  X(CUBLASLT, "cublaslt", "cuBLASLt", "libcublasLt.so.13", TOOLKIT)

typedef enum ClLibId {
#define CL_LIB_ENUM(id, key, desc, soname, where) CL_LIB_##id,
  CL_LIBS(CL_LIB_ENUM)
#undef CL_LIB_ENUM
  CL_LIB__COUNT
} ClLibId;

/* Returns the dlopen handle of a library, opening it on first use. On failure
 * returns NULL and appends a message to err (when err is not NULL). */
void *cl_dl_lib(ClLibId id, ClBuf *err);
/* The path the library was loaded from, or NULL when not loaded. */
const char *cl_dl_path(ClLibId id);
/* Looks a library up by key ("cuda", "nvvm", ...); -1 when unknown. */
int cl_dl_find(const char *key);
const char *cl_dl_key(ClLibId id);
/* The CUDA toolkit root in use ($CUDA_HOME, $CUDA_PATH or /usr/local/cuda). */
const char *cl_dl_cuda_home(void);
/* A symbol of a loaded library, or NULL. */
void *cl_dl_sym(void *handle, const char *name);

#endif
