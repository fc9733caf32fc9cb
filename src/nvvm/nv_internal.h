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

/* ftz as the tools get it (ftz -1 follows fast_math). */
int nv_options_ftz(const NvOptions *o);

#endif
