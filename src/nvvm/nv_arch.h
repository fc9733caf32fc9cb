/* nv_arch: the target architectures cutelua compiles for, in one table.
 *
 * Each row names a target and everything the tools need for it. Every row was
 * checked against the CUDA 13.0 tools: libnvvm accepts the -arch option and
 * writes `.target <name>`, nvJitLink links for the -arch option, and ptxas
 * accepts PTX of version `ptx_isa` (the oldest PTX ISA that knows the target)
 * and rejects the version before it. libnvvm 13.0 itself writes `.version 9.0`
 * for every row (NV_PTX_ISA_WRITTEN).
 *
 * An "a" target (sm_90a, sm_100a, ...) unlocks the architecture-specific
 * instructions (wgmma, setmaxnreg, tcgen05) but runs only on that exact
 * compute capability; a plain target runs on its own and later minors of the
 * same major (sm_80 code runs on 8.6 and 8.9). */
#ifndef NV_ARCH_H
#define NV_ARCH_H

#include <stddef.h>

/* X(name, cc, arch_specific, ptx_isa, description)
 *   name           the option value and the `.target` (sm_XY[a])
 *   cc             compute capability * 10 (86 for 8.6)
 *   arch_specific  1 for an "a" target
 *   ptx_isa        oldest PTX ISA version that has this target ("8.0")
 * libnvvm gets -arch=compute_XY[a] and nvJitLink -arch=sm_XY[a], derived
 * from the name so that they cannot disagree. */
#define NV_ARCHS(X)                                                     \
  X("sm_80", 80, 0, "7.0", "Ampere A100")                               \
  X("sm_86", 86, 0, "7.1", "Ampere GA10x (RTX 30, A40)")                \
  X("sm_89", 89, 0, "7.8", "Ada (RTX 40, L4, L40)")                     \
  X("sm_90", 90, 0, "7.8", "Hopper H100/H200, portable subset")        \
  X("sm_90a", 90, 1, "8.0", "Hopper H100/H200 with wgmma, setmaxnreg") \
  X("sm_100", 100, 0, "8.6", "Blackwell B200, portable subset")        \
  X("sm_100a", 100, 1, "8.6", "Blackwell B200 with tcgen05")           \
  X("sm_103a", 103, 1, "8.8", "Blackwell B300 with tcgen05")           \
  X("sm_120", 120, 0, "8.7", "Blackwell RTX 50 / RTX PRO, portable")   \
  X("sm_120a", 120, 1, "8.7", "Blackwell RTX 50 / RTX PRO")

/* The PTX ISA version libnvvm 13.0 writes, whatever the target. */
#define NV_PTX_ISA_WRITTEN "9.0"
/* The target used when no GPU says otherwise. */
#define NV_ARCH_FALLBACK "sm_90a"

typedef struct NvArch {
  const char *name;        /* "sm_90a" */
  int cc;                  /* 90 */
  int arch_specific;       /* 1 for "a" targets */
  const char *ptx_isa;     /* "8.0" */
  const char *description;
  const char *nvvm_arch;   /* "-arch=compute_90a" (libnvvm) */
  const char *link_arch;   /* "-arch=sm_90a" (nvJitLink) */
} NvArch;

int nv_arch_count(void);
/* The row i (0-based), or NULL out of range. */
const NvArch *nv_arch_get(int i);
/* The row index of a name ("sm_90a"), or -1. */
int nv_arch_find(const char *name);
/* The names of all rows, comma-separated, for error messages. */
const char *nv_arch_list(void);
/* The row that best fits a compute capability (cc = major*10 + minor): the
 * "a" row of exactly that cc, else the plain row of the same major with the
 * highest minor not above it; -1 when none fits. */
int nv_arch_for_cc(int cc);
/* The row of the current GPU (device 0) when the driver can tell, else -1
 * with the reason in why. Asked once per process. */
int nv_arch_detect(char *why, size_t whylen);

#endif
