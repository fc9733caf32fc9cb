/* nv_tools: run-time binding of libnvvm, nvJitLink and the driver (see nv_tools.h). */
#include "nv_tools.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cl_dl.h"
#include "rt_driver.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static NvNvvm nvvm;
static int nvvm_ready;
static NvJitLink jitlink;
static int jitlink_ready;

/* Looks up every name of a {offset, name, fallback} list into a table. */
typedef struct Sym {
  size_t offset;
  const char *name;
  const char *fallback;
} Sym;

static int bind(void *handle, void *table, const Sym *syms, size_t n, const char *lib, ClBuf *err) {
  for (size_t i = 0; i < n; i++) {
    void *p = cl_dl_sym(handle, syms[i].name);
    if (!p && syms[i].fallback) p = cl_dl_sym(handle, syms[i].fallback);
    if (!p) {
      if (err) cl_buf_printf(err, "%s has no symbol %s: is it the CUDA 13 toolkit's?", lib, syms[i].name);
      return -1;
    }
    memcpy((char *)table + syms[i].offset, &p, sizeof p);
  }
  return 0;
}

#define NVVM_SYM(field, name) {offsetof(NvNvvm, field), name, NULL}
static const Sym nvvm_syms[] = {
    NVVM_SYM(version, "nvvmVersion"),
    NVVM_SYM(ir_version, "nvvmIRVersion"),
    NVVM_SYM(error_string, "nvvmGetErrorString"),
    NVVM_SYM(create, "nvvmCreateProgram"),
    NVVM_SYM(destroy, "nvvmDestroyProgram"),
    NVVM_SYM(add_module, "nvvmAddModuleToProgram"),
    NVVM_SYM(lazy_add_module, "nvvmLazyAddModuleToProgram"),
    NVVM_SYM(compile, "nvvmCompileProgram"),
    NVVM_SYM(verify, "nvvmVerifyProgram"),
    NVVM_SYM(result_size, "nvvmGetCompiledResultSize"),
    NVVM_SYM(result, "nvvmGetCompiledResult"),
    NVVM_SYM(log_size, "nvvmGetProgramLogSize"),
    NVVM_SYM(log, "nvvmGetProgramLog"),
};

/* The versioned names are what the 13.0 header's inline wrappers call. */
#define JIT_SYM(field, name) {offsetof(NvJitLink, field), "__" name "_13_0", name}
static const Sym jitlink_syms[] = {
    JIT_SYM(create, "nvJitLinkCreate"),
    JIT_SYM(destroy, "nvJitLinkDestroy"),
    JIT_SYM(add_data, "nvJitLinkAddData"),
    JIT_SYM(complete, "nvJitLinkComplete"),
    JIT_SYM(cubin_size, "nvJitLinkGetLinkedCubinSize"),
    JIT_SYM(cubin, "nvJitLinkGetLinkedCubin"),
    JIT_SYM(error_log_size, "nvJitLinkGetErrorLogSize"),
    JIT_SYM(error_log, "nvJitLinkGetErrorLog"),
    JIT_SYM(info_log_size, "nvJitLinkGetInfoLogSize"),
    JIT_SYM(info_log, "nvJitLinkGetInfoLog"),
    {offsetof(NvJitLink, version), "nvJitLinkVersion", NULL},
};

const NvNvvm *nv_nvvm(ClBuf *err) {
  pthread_mutex_lock(&lock);
  if (!nvvm_ready) {
    void *h = cl_dl_lib(CL_LIB_NVVM, err);
    NvNvvm t;
    if (h && bind(h, &t, nvvm_syms, sizeof nvvm_syms / sizeof *nvvm_syms, cl_dl_path(CL_LIB_NVVM), err) == 0) {
      nvvm = t;
      nvvm_ready = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return nvvm_ready ? &nvvm : NULL;
}

const NvJitLink *nv_jitlink(ClBuf *err) {
  pthread_mutex_lock(&lock);
  if (!jitlink_ready) {
    void *h = cl_dl_lib(CL_LIB_NVJITLINK, err);
    NvJitLink t;
    if (h && bind(h, &t, jitlink_syms, sizeof jitlink_syms / sizeof *jitlink_syms, cl_dl_path(CL_LIB_NVJITLINK),
                  err) == 0) {
      jitlink = t;
      jitlink_ready = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return jitlink_ready ? &jitlink : NULL;
}

const char *nv_jitlink_error_name(int code) {
  /* In nvJitLink.h order (values 0..18). */
  static const char *const names[] = {
      "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
      "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
      "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL", "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
      "NVJITLINK_ERROR_FINALIZE", "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
      "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH", "NVJITLINK_ERROR_OUTDATED_LIBRARY",
      "NVJITLINK_ERROR_MISSING_FATBIN", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
      "NVJITLINK_ERROR_LTO_NOT_ENABLED"};
  if (code >= 0 && (size_t)code < sizeof names / sizeof *names) return names[code];
  return "NVJITLINK_ERROR_(unknown)";
}

/* ---- the driver's version ---------------------------------------------------- */

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_version;

/* cuDriverGetVersion needs no cuInit: a process that compiles from the cache
   and never launches does not pay for initialising the driver. */
static void ask_driver(void) {
  ClBuf err = {0};
  void *lib = cl_dl_lib(CL_LIB_CUDA, &err);
  cl_buf_free(&err);
  if (!lib) return;
  int (*get)(int *) = (int (*)(int *))cl_dl_sym(lib, "cuDriverGetVersion");
  int v = 0;
  if (get && get(&v) == 0) driver_version = v;
}

int nv_driver_version(void) {
  pthread_once(&driver_once, ask_driver);
  return driver_version;
}

/* ---- toolkit files --------------------------------------------------------------- */

/* The roots cl_dl searches, in its order. */
static int toolkit_roots(const char *roots[3]) {
  int n = 0;
  const char *env[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
  for (int i = 0; i < 2; i++)
    if (env[i] && *env[i]) roots[n++] = env[i];
  roots[n++] = "/usr/local/cuda";
  return n;
}

void nv_lib_identity(int lib, ClBuf *out) {
  /* The same subdirectories, in the same order, as cl_dl.c's toolkit search. */
  static const char *const subdirs[] = {"nvvm/lib64", "lib64", "targets/x86_64-linux/lib", "lib"};
  const char *soname = lib == CL_LIB_NVVM ? "libnvvm.so.4" : "libnvJitLink.so.13";
  const char *roots[3];
  int nroots = toolkit_roots(roots);
  char path[1024];
  for (int r = 0; r < nroots; r++)
    for (size_t s = 0; s < sizeof subdirs / sizeof *subdirs; s++) {
      snprintf(path, sizeof path, "%s/%s/%s", roots[r], subdirs[s], soname);
      struct stat st;
      if (stat(path, &st) == 0) {
        cl_buf_printf(out, "%s %lld %lld.%09ld", path, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                      st.st_mtim.tv_nsec);
        return;
      }
    }
  cl_buf_printf(out, "%s (loader path)", soname);
}

static pthread_mutex_t libdevice_lock = PTHREAD_MUTEX_INITIALIZER;
static ClBuf libdevice;
static int libdevice_ready;

const ClBuf *nv_libdevice(ClBuf *err) {
  pthread_mutex_lock(&libdevice_lock);
  if (!libdevice_ready) {
    ClBuf tried = {0};
    char path[1100];
    const char *roots[4];
    int n = toolkit_roots(roots);
    /* Next to the libnvvm actually loaded (<root>/nvvm/lib64/../libdevice). */
    const char *loaded = cl_dl_path(CL_LIB_NVVM);
    char near[1024] = ""; /* the loaded library's directory: path has room for it and the suffix */
    if (loaded) {
      snprintf(near, sizeof near, "%s", loaded);
      char *slash = strrchr(near, '/');
      if (slash) {
        *slash = 0;
        snprintf(path, sizeof path, "%s/../libdevice/libdevice.10.bc", near);
        if (cl_buf_read_file(&libdevice, path) == 0) libdevice_ready = 1;
        else cl_buf_printf(&tried, "\n  %s", path);
      }
    }
    for (int i = 0; !libdevice_ready && i < n; i++) {
      snprintf(path, sizeof path, "%s/nvvm/libdevice/libdevice.10.bc", roots[i]);
      if (cl_buf_read_file(&libdevice, path) == 0) libdevice_ready = 1;
      else cl_buf_printf(&tried, "\n  %s", path);
    }
    if (!libdevice_ready && err)
      cl_buf_printf(err, "cannot find libdevice (libdevice.10.bc, needed for the __nv_ math functions); tried:%s\n"
                         "  (set CUDA_HOME to the CUDA 13 toolkit directory)",
                    cl_buf_str(&tried));
    cl_buf_free(&tried);
  }
  pthread_mutex_unlock(&libdevice_lock);
  return libdevice_ready ? &libdevice : NULL;
}
