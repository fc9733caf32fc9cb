/* target.h: the targets cutelua compiles for, in one table, with what each
 * one has (feature bits).
 *
 * Everything that depends on the target reads this table: the IR (a module
 * holds its target's row; an op of the op table names the feature it needs,
 * and the verifier refuses it on a target that lacks it, saying which
 * targets have it), the emitter (its options name the target), the compiler
 * options and tool flags (src/nvvm), the AOT export and Lua (through the
 * CLTargetApi table). Nothing here needs a GPU or another layer: src/target
 * sits with src/util at the bottom.
 *
 * An "a" target (sm_90a, sm_100a, ...) has the architecture-specific
 * instructions (wgmma, setmaxnreg, tcgen05, TMA multicast) and runs only on
 * that exact compute capability; a plain target runs on its own and later
 * minors of the same major (sm_80 code runs on 8.6 and 8.9). So sm_90 and
 * sm_90a are two rows with different features, never the same target. */
#ifndef CL_TARGET_H
#define CL_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "cl_buf.h"

/* X(id, what): the features. What each one is, and the lowest target of the
 * PTX ISA (9.0) that has it, checked against the CCCL cuda::ptx tables of
 * CUDA 13 and the ptxas of CUDA 13.0 where noted in docs/compiler.md. */
#define CL_FEATURES(X)                                                                                    \
  X(MMA_SYNC, "mma.sync of f16, bf16, tf32, f64 m8n8k4, integer and b1 types (sm_80)")                    \
  X(LDMATRIX, "ldmatrix (sm_75)")                                                                         \
  X(CP_ASYNC, "cp.async and its groups (sm_80)")                                                          \
  X(REDUX, "redux.sync (sm_80)")                                                                          \
  X(BF16, "bf16 conversions (sm_80)")                                                                     \
  X(TF32, "tf32 conversions (sm_80)")                                                                     \
  X(FP8, "e4m3/e5m2 conversions and mma.sync (sm_89)")                                                    \
  X(MMA_F64_M16, "mma.sync f64 m16n8k4/k8/k16 (sm_90)")                                                   \
  X(STMATRIX, "stmatrix (sm_90)")                                                                         \
  X(TMA, "bulk tensor copies: cp.async.bulk.tensor, its prefetch and reductions (sm_90)")                 \
  X(BULK_COPY, "non-tensor bulk copies: cp.async.bulk, bulk groups (sm_90)")                              \
  X(MBARRIER_TX, "mbarrier transaction counts: expect_tx, complete_tx, try_wait (sm_90)")                 \
  X(CLUSTER, "thread block clusters: cluster launch, barrier.cluster, cluster scope and registers (sm_90)") \
  X(ELECT, "elect.sync (sm_90)")                                                                          \
  X(DSMEM, "distributed shared memory: shared::cluster accesses, mapa, getctarank (sm_90)")              \
  X(WGMMA, "wgmma.mma_async, wgmma.fence, commit_group, wait_group (sm_90a only)")                        \
  X(SETMAXNREG, "setmaxnreg (sm_90a, sm_100a, sm_103a, sm_120a)")                                         \
  X(TMA_MULTICAST, "bulk tensor copies with .multicast::cluster (sm_90a, sm_100a, sm_103a)")              \
  X(TCGEN05, "tcgen05: tensor memory and its mma (sm_100a, sm_103a)")                                     \
  X(GRIDDEP, "griddepcontrol: programmatic dependent launches, wait and launch_dependents (sm_90)")

typedef enum ClFeature {
  CL_FEAT_NONE = -1, /* an op that every target has */
#define CL_FEATURE_ENUM(id, what) CL_FEAT_##id,
  CL_FEATURES(CL_FEATURE_ENUM)
#undef CL_FEATURE_ENUM
  CL_FEAT__COUNT
} ClFeature;
#define CL_F(id) (UINT64_C(1) << CL_FEAT_##id)

/* What each generation has, built up. */
#define CL_FEATURES_SM80 (CL_F(MMA_SYNC) | CL_F(LDMATRIX) | CL_F(CP_ASYNC) | CL_F(REDUX) | CL_F(BF16) | CL_F(TF32))
#define CL_FEATURES_SM89 (CL_FEATURES_SM80 | CL_F(FP8))
#define CL_FEATURES_SM90                                                                                  \
  (CL_FEATURES_SM89 | CL_F(MMA_F64_M16) | CL_F(STMATRIX) | CL_F(TMA) | CL_F(BULK_COPY) | CL_F(MBARRIER_TX) | \
   CL_F(CLUSTER) | CL_F(ELECT) | CL_F(DSMEM) | CL_F(GRIDDEP))
#define CL_FEATURES_SM90A (CL_FEATURES_SM90 | CL_F(WGMMA) | CL_F(SETMAXNREG) | CL_F(TMA_MULTICAST))
#define CL_FEATURES_SM100A (CL_FEATURES_SM90 | CL_F(SETMAXNREG) | CL_F(TMA_MULTICAST) | CL_F(TCGEN05))
#define CL_FEATURES_SM120A (CL_FEATURES_SM90 | CL_F(SETMAXNREG))

/* X(id, cc, arch_specific, ptx_isa, features, description)
 *   id             the name without "sm_" (a pp-number: 90a); the name is
 *                  "sm_<id>", libnvvm gets -arch=compute_<id> and nvJitLink
 *                  -arch=sm_<id>, so that the three cannot disagree
 *   cc             compute capability * 10 (86 for 8.6)
 *   arch_specific  1 for an "a" target
 *   ptx_isa        oldest PTX ISA version that has this target ("8.0")
 * Every row was checked against the CUDA 13.0 tools: libnvvm accepts the
 * -arch option and writes `.target <name>`, nvJitLink links for it, and
 * ptxas accepts PTX of version ptx_isa and rejects the version before
 * (tests/c/test_nv_compile.c). libnvvm 13.0 writes `.version 9.0` for every
 * row (CL_PTX_ISA_WRITTEN). */
#define CL_TARGETS(X)                                                                                \
  X(80, 80, 0, "7.0", CL_FEATURES_SM80, "Ampere A100")                                               \
  X(86, 86, 0, "7.1", CL_FEATURES_SM80, "Ampere GA10x (RTX 30, A40)")                                \
  X(89, 89, 0, "7.8", CL_FEATURES_SM89, "Ada (RTX 40, L4, L40)")                                     \
  X(90, 90, 0, "7.8", CL_FEATURES_SM90, "Hopper H100/H200, portable subset")                        \
  X(90a, 90, 1, "8.0", CL_FEATURES_SM90A, "Hopper H100/H200 with wgmma, setmaxnreg")                \
  X(100, 100, 0, "8.6", CL_FEATURES_SM90, "Blackwell B200, portable subset")                        \
  X(100a, 100, 1, "8.6", CL_FEATURES_SM100A, "Blackwell B200 with tcgen05")                         \
  X(103a, 103, 1, "8.8", CL_FEATURES_SM100A, "Blackwell B300 with tcgen05")                         \
  X(120, 120, 0, "8.7", CL_FEATURES_SM90, "Blackwell RTX 50 / RTX PRO, portable")                   \
  X(120a, 120, 1, "8.7", CL_FEATURES_SM120A, "Blackwell RTX 50 / RTX PRO")

/* The PTX ISA version libnvvm 13.0 writes, whatever the target. */
#define CL_PTX_ISA_WRITTEN "9.0"
/* The target used when no GPU (or nothing else) says otherwise; also a new
   IR module's. */
#define CL_TARGET_FALLBACK "sm_90a"

typedef struct ClTarget {
  const char *name;        /* "sm_90a" */
  int cc;                  /* 90 */
  int arch_specific;       /* 1 for "a" targets */
  const char *ptx_isa;     /* "8.0" */
  uint64_t features;       /* CL_F(...) bits */
  const char *description;
  const char *nvvm_arch;   /* "-arch=compute_90a" (libnvvm) */
  const char *link_arch;   /* "-arch=sm_90a" (nvJitLink) */
} ClTarget;

int cl_target_count(void);
/* Row i (0-based), or NULL out of range. */
const ClTarget *cl_target_at(int i);
/* The index of a row (cl_target_at(cl_target_index(t)) == t), -1 for NULL. */
int cl_target_index(const ClTarget *t);
/* The row of a name ("sm_90a"), or NULL. */
const ClTarget *cl_target_find(const char *name);
/* The names of all rows, comma-separated, for error messages. */
const char *cl_target_list(void);
/* The row that best fits a compute capability (cc = major*10 + minor): the
 * "a" row of exactly that cc, else the plain row of the same major with the
 * highest minor not above it; NULL when none fits. */
const ClTarget *cl_target_for_cc(int cc);
/* The plain row of exactly that compute capability (90 -> sm_90), or NULL. */
const ClTarget *cl_target_plain(int cc);
/* Whether t has feature f (CL_FEAT_NONE: always). */
int cl_target_has(const ClTarget *t, ClFeature f);

/* The features by name ("WGMMA") and what each is. */
const char *cl_feature_name(int f);
const char *cl_feature_what(int f);
int cl_feature_find(const char *name); /* CL_FEAT_NONE when unknown */

/* Appends "needs F, which T lacks (X has it)" or "... (X, Y and Z have it)"
   (or "(no target has it)") for a refusal. */
void cl_target_needs(const ClTarget *t, ClFeature f, ClBuf *out);
/* Appends the names of the targets that have f, as above ("sm_90a" or
   "sm_90, sm_90a and sm_100"). */
void cl_target_with(ClFeature f, ClBuf *out);

/* ClTargetInfo and the Lua-facing table CLTargetApi: shared with ffi.cdef. */
#include "target.cdef"
#define CL_TARGET_ABI 1
const void *cl_target_api(void);

#endif
