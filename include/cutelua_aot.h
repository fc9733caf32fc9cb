/* cutelua_aot.h: loading kernels exported by cutelua (cute.export{..., shared = true})
 * at run time, from C, without LuaJIT or any compiler.
 *
 *   cutelua_aot *m;
 *   char err[512];
 *   if (cutelua_aot_open("vadd.so", &m, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); ... }
 *   const cutelua_aot_kernel *k = cutelua_aot_find(m, "vadd_f32");
 *   void *args[] = { &a, &a_n, &b, &b_n, &c, &c_n };     (pointers to each C parameter: k->params)
 *   cutelua_aot_launch(m, k, args, stream, err, sizeof err);
 *   cutelua_aot_close(m);
 *
 * cutelua_aot_open first checks the file (cutelua_aot_check_file below: no
 * truncated or altered library reaches dlopen, where it could crash the
 * process), then dlopens it, checks its descriptor's ABI and its embedded
 * checksum (metadata, descriptor tables and cubins unaltered), and loads it
 * on the current CUDA context's device (device 0's primary context when none
 * is current), picking the cubin by compute capability. Link with libcutelua
 * (and -ldl on older C libraries). Functions return 0 on success; on failure
 * a message is written into err. */
#ifndef CUTELUA_AOT_H
#define CUTELUA_AOT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The descriptors every exported module carries (also in each generated header). */
#ifndef CUTELUA_AOT_TYPES_DEFINED
#define CUTELUA_AOT_TYPES_DEFINED
#define CUTELUA_AOT_ABI 1
struct CUstream_st; /* a CUstream is a struct CUstream_st * (cuda.h) */
typedef struct cutelua_aot_param {
  const char *name;  /* the C parameter */
  const char *ctype; /* its C type */
  int size;          /* bytes */
  int kind; /* 0 device pointer, 1 extent, 2 stride, 3 scalar, 4 run-time leaf of an IntTuple, 5 TMA descriptor pointer */
  int arg;           /* the kernel argument it comes from (0-based) */
  int leaf;          /* which leaf of its shape, stride or IntTuple (0-based; static tuple leaves counted) */
} cutelua_aot_param;
typedef struct cutelua_aot_kernel { /* an exported kernel, or a host function (several launches) */
  const char *name;
  int nparams;
  const cutelua_aot_param *params;
  int (*launch_packed)(void *module, void *const *args, void *stream); /* args: pointers to each parameter */
} cutelua_aot_kernel;
typedef struct cutelua_aot_module {
  int abi;                 /* CUTELUA_AOT_ABI */
  const char *metadata;    /* 'key value' lines: cutelua, cuda, archs, kernels, ir hashes */
  int nkernels; /* entries: kernels and host functions */
  const cutelua_aot_kernel *kernels;
  int (*check)(char *err, size_t errlen);                  /* the embedded checksum */
  int (*load)(void **module, char *err, size_t errlen);
  void (*unload)(void *module);
  const char *(*error_name)(int code);
} cutelua_aot_module;
#endif

typedef struct cutelua_aot cutelua_aot;

int cutelua_aot_open(const char *path, cutelua_aot **out, char *err, size_t errlen);
/* The checks of the file alone, without loading it: a regular file; a 64-bit
 * ELF shared library for this machine whose program headers and segments lie
 * inside the file; and the seal cute.export appended (a SHA-256 of all its
 * bytes) matching them, so that any change since export, a truncation or one
 * flipped bit, is refused. The seal detects corruption, not forgery: load
 * only libraries from a directory that only trusted users can write. */
int cutelua_aot_check_file(const char *path, char *err, size_t errlen);
/* The metadata text (cutelua and CUDA versions, archs, kernels and their IR hashes). */
const char *cutelua_aot_metadata(const cutelua_aot *m);
/* A kernel by name, or NULL; cutelua_aot_kernel_at(m, i) for i < cutelua_aot_count(m). */
const cutelua_aot_kernel *cutelua_aot_find(const cutelua_aot *m, const char *name);
int cutelua_aot_count(const cutelua_aot *m);
const cutelua_aot_kernel *cutelua_aot_kernel_at(const cutelua_aot *m, int i);
/* Launches with args[i] pointing at the value of parameter i (k->params[i]). */
int cutelua_aot_launch(cutelua_aot *m, const cutelua_aot_kernel *k, void *const *args, void *stream, char *err,
                       size_t errlen);
void cutelua_aot_close(cutelua_aot *m);

#ifdef __cplusplus
}
#endif
#endif
