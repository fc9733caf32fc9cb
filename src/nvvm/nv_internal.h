/* nv_internal: what the files of src/nvvm share and nothing else sees. */
#ifndef NV_INTERNAL_H
#define NV_INTERNAL_H

#include "nv_compile.h"

/* X(id, name, jitlink input type or -1 for libnvvm): the kinds of link
 * input, in NvLinkInput.kind order (nvvm.cdef documents the numbers). */
#define NV_LINK_KINDS(X)  \
  X(AUTO, "auto", -1)     \
  X(NVVM, "nvvm", -1)     \
  X(PTX, "ptx", 2)        \
  X(CUBIN, "cubin", 1)    \
  X(FATBIN, "fatbin", 4)  \
  X(LTOIR, "ltoir", 3)    \
  X(OBJECT, "object", 5)  \
  X(LIBRARY, "library", 6)
typedef enum NvLinkKind {
#define NV_LINK_ENUM(id, name, type) NV_LINK_##id,
  NV_LINK_KINDS(NV_LINK_ENUM)
#undef NV_LINK_ENUM
  NV_LINK__COUNT
} NvLinkKind;
const char *nv_link_kind_name(int kind);
int nv_link_kind_find(const char *name);
/* nvJitLink's input type for a kind, -1 for NVVM. */
int nv_link_jit_type(int kind);

/* A link input's bytes, read (path) or borrowed (data), with its kind
 * resolved from AUTO and a name for logs. */
typedef struct NvLinkData {
  int kind;
  const void *data;
  size_t size;
  ClBuf owned;
  char name[256];
} NvLinkData;
int nv_link_load(const NvLinkInput *in, int index, NvLinkData *d, ClBuf *err);
void nv_link_data_free(NvLinkData *d);

/* The name the main NVVM module has in libnvvm's log lines. */
extern const char nv_nvvm_module_name[];

/* mkdir -p with mode 0755; -1 with errno. */
int nv_mkdirs(const char *path);

/* ptxas notes that fail the compile (nv_ptxas_diag.c: serialized wgmma):
   -1 with r's diagnostic filled when the info log has one, else 0. */
int nv_ptxas_diag(NvResult *r, const char *log, const char *ptx, size_t len);

/* The toolkit's bin directories ($CUDA_HOME/bin, $CUDA_PATH/bin,
 * /usr/local/cuda/bin), then $PATH, each once (nv_dump.c). */
int nv_tool_dirs(char dirs[][512], int cap);
/* Runs argv (argv[0] a path) with stdout and stderr into out; the exit
 * status, or -1 with a message in err (nv_dump.c). */
int nv_run_tool(char *const argv[], ClBuf *out, ClBuf *err);

/* PTX that uses setmaxnreg, compiled whole-program by the toolkit's ptxas
 * executable (nv_setmaxnreg.c): 1 if the PTX needs it. */
int nv_setmaxnreg_needed(const char *ptx, size_t len);
/* Compiles such PTX into r's cubin and log (0), or fills r's diagnostic
 * (-1): a kernel without a register cap at entry, link inputs, no ptxas, or
 * a ptxas that still ignores setmaxnreg. after_nvvm: NVVM link inputs were
 * linked by libnvvm already. */
int nv_setmaxnreg_compile(NvResult *r, const char *ptx, size_t len, const NvOptions *o, int after_nvvm);

/* ftz as the tools get it (ftz -1 follows fast_math). */
int nv_options_ftz(const NvOptions *o);
/* libnvvm's -opt level: nvvm_opt, or opt_level when nvvm_opt is -1. */
int nv_options_nvvm_opt(const NvOptions *o);

#endif
