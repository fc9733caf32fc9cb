/* nv_compile: from NVVM IR text or PTX text to a cubin, and what surrounds it.
 *
 *   NVVM IR --libnvvm--> PTX --nvJitLink (ptxas)--> cubin
 *
 * libnvvm and nvJitLink are opened at run time (src/util/cl_dl.h); nothing
 * here needs a GPU. Around the two steps: options (with their environment
 * variables), the target table (src/target), libdevice and user libraries,
 * structured diagnostics, the per-kernel resource report, dumps, SASS, and a
 * content-addressed cache in memory and on disk.
 *
 * Conventions: functions return 0 on success and -1 on failure with a message
 * in the diagnostic they were given; they never print, exit or longjmp. The
 * compile functions are safe to call from several threads at once (each call
 * has its own libnvvm program and nvJitLink handle); the cache has a lock.
 *
 * The FFI table (nvvm.cdef, CLNvApi) wraps the same functions for Lua; its
 * declarations (NvOptions, NvLinkInput, NvKernelReport, NvCacheStats) are the
 * ones included below, so C and Lua share one definition. */
#ifndef NV_COMPILE_H
#define NV_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "cl_buf.h"
#include "target.h"
#include "nvvm.cdef"

/* The ABI number of CLNvApi (increase when a member is appended). */
#define NV_API_ABI 1
#define NV_MAX_LINK 16

/* ---- options --------------------------------------------------------------- */

/* The row of the target table (src/target) for the current GPU (device 0)
 * when the driver can tell, else -1 with the reason in why. Asked once per
 * process. */
int nv_arch_detect(char *why, size_t whylen);

/* Defaults: arch = the current GPU's when the driver can tell (never fails
 * without one), else sm_90a; opt 3; no fast math; no line info; no register
 * limit; cache on, in nv_default_cache_dir(); dumps to the current directory.
 * Environment variables are NOT read here (nv_options_from_env). */
void nv_options_default(NvOptions *o);
/* The same without asking the GPU (the arch is the fallback, sm_90a): for a
   caller that sets the arch itself, so that no cuInit is paid for nothing. */
void nv_options_base(NvOptions *o);
/* 0, or -1 for an arch not in the table (o unchanged). */
int nv_options_set_arch(NvOptions *o, const char *arch);
/* Applies the CUTELUA_* variables (NV_ENV below) over o. -1 with a message
 * naming the variable and its bad value in err; o keeps the valid ones. */
int nv_options_from_env(NvOptions *o, ClBuf *err);
/* Checks ranges and sizes; -1 with a message. */
int nv_options_check(const NvOptions *o, ClBuf *err);
/* The options that change the output, as canonical text (one `name value`
 * line each): part of the cache key, and readable. Link inputs appear with a
 * hash of their contents, so this reads their files; -1 when one is unreadable. */
int nv_options_canonical(const NvOptions *o, ClBuf *out, ClBuf *err);
/* The default disk cache: $XDG_CACHE_HOME/cutelua, else $HOME/.cache/cutelua
 * ("" when neither variable is set). */
const char *nv_default_cache_dir(void);

/* X(name, in_key): the options by their Lua names (compiler.options{...}),
 * in NvOptions order; in_key: 1 when the option changes what is compiled
 * (nv_options_canonical hashes it into the cache key; 2: by the contents of
 * the files it names, which the canonical text hashes). Lua reads the list:
 * nothing else names them. */
#define NV_OPTION_NAMES(X)                                                              \
  X("arch", 1) X("opt", 1) X("nvvm_opt", 1) X("fast_math", 1) X("ftz", 1) X("lineinfo", 1) X("max_registers", 1) \
  X("ptxas_options", 1) X("link", 2) X("keep", 0) X("dump_dir", 0) X("cache", 0) X("cache_dir", 0)
/* The name of option i (NULL past the end) and whether it is in the key (-1 past the end). */
const char *nv_option_name(int i);
int nv_option_in_key(int i);

/* X(name, variable, what): the environment variables nv_options_from_env reads. */
#define NV_ENV(X)                                                                     \
  X(ARCH, "CUTELUA_ARCH", "target arch (sm_80 ... sm_120a)")                          \
  X(OPT_LEVEL, "CUTELUA_OPT_LEVEL", "optimisation level 0-3")                         \
  X(NVVM_OPT, "CUTELUA_NVVM_OPT", "libnvvm's level alone, 0-3 (default: the opt level)") \
  X(FAST_MATH, "CUTELUA_FAST_MATH", "0/1: approximate division and square root, ftz") \
  X(FTZ, "CUTELUA_FTZ", "0/1: flush f32 denormals to zero")                           \
  X(LINEINFO, "CUTELUA_LINEINFO", "0/1: line tables")                                 \
  X(MAX_REGISTERS, "CUTELUA_MAX_REGISTERS", "register limit per thread (0: none)")    \
  X(PTXAS_OPTIONS, "CUTELUA_PTXAS_OPTIONS", "extra ptxas options")                    \
  X(KEEP, "CUTELUA_KEEP", "stages to dump: ir,ll,ptx,cubin,sass,log or all")          \
  X(DUMP_DIR, "CUTELUA_DUMP_DIR", "where dumps go (default: current directory)")      \
  X(CACHE, "CUTELUA_CACHE", "0 turns the compile cache off")                          \
  X(CACHE_DIR, "CUTELUA_CACHE_DIR", "the disk cache directory (empty: memory only)")

/* ---- stages (what can be dumped) and result parts ------------------------- */

/* X(id, name): the artefacts of a compile, in pipeline order. */
#define NV_STAGES(X) X(IR, "ir") X(LL, "ll") X(PTX, "ptx") X(CUBIN, "cubin") X(SASS, "sass") X(LOG, "log")
typedef enum NvStage {
#define NV_STAGE_ENUM(id, name) NV_STAGE_##id,
  NV_STAGES(NV_STAGE_ENUM)
#undef NV_STAGE_ENUM
  NV_STAGE__COUNT
} NvStage;
const char *nv_stage_name(int stage);
/* "ptx,cubin" -> mask of (1 << stage); "all" for every stage; "" or "0" none. */
int nv_keep_parse(const char *list, uint32_t *mask, ClBuf *err);

/* X(id, name, what): the byte strings a result holds. The first six are the
 * stages, in NV_STAGES order, so part id == stage id for them. */
#define NV_PARTS(X)                                                              \
  X(IR, "ir", "cutelua IR as printed (handed in by the caller)")                 \
  X(LL, "ll", "the NVVM IR compiled")                                            \
  X(PTX, "ptx", "PTX")                                                           \
  X(CUBIN, "cubin", "the linked cubin (ELF)")                                    \
  X(SASS, "sass", "SASS from nvdisasm or cuobjdump")                             \
  X(LOG, "log", "nvJitLink's info log: ptxas's resource report")                 \
  X(META, "meta", "the caller's bytes, stored with the cache entry")             \
  X(REPORT, "report", "the resource report as text")                             \
  X(WARNINGS, "warnings", "warnings, one per line (a kernel that spills)")        \
  X(KERNELS, "kernels", "the cubin's kernels, one per line")                     \
  X(MESSAGE, "message", "what failed, in one line")                            \
  X(DIAG, "diag", "the whole diagnostic, formatted")                             \
  X(TOOL_LOG, "tool_log", "the failing tool's own log")                          \
  X(EXCERPT, "excerpt", "input lines around the failure, failing lines marked") \
  X(SOURCE, "source", "Lua file:line of the failing line, where found")          \
  X(NOTE, "note", "notes: cache entries found corrupt, ...")                     \
  X(DUMPED, "dumped", "files written by nv_dump, one per line")                  \
  X(VERSIONS, "versions", "versions of the tools")
typedef enum NvPart {
#define NV_PART_ENUM(id, name, what) NV_PART_##id,
  NV_PARTS(NV_PART_ENUM)
#undef NV_PART_ENUM
  NV_PART__COUNT
} NvPart;
const char *nv_part_name(int part);
int nv_part_find(const char *name);

/* X(id, name): where a compile failed. */
#define NV_PHASES(X)                                                              \
  X(NONE, "none") X(OPTIONS, "options") X(LOAD, "load") X(INPUT, "input")         \
  X(NVVM, "libnvvm") X(PTXAS, "ptxas") X(LINK, "nvJitLink") X(CACHE, "cache")     \
  X(DUMP, "dump") X(SASS, "sass") X(VERIFY, "verify") X(EMIT, "emit")
typedef enum NvPhase {
#define NV_PHASE_ENUM(id, name) NV_PHASE_##id,
  NV_PHASES(NV_PHASE_ENUM)
#undef NV_PHASE_ENUM
  NV_PHASE__COUNT
} NvPhase;
const char *nv_phase_name(int phase);

/* X(id, name): where a result's artefacts came from. */
#define NV_ORIGINS(X) X(NONE, "none") X(COMPILED, "compiled") X(MEMORY, "memory") X(DISK, "disk")
typedef enum NvOrigin {
#define NV_ORIGIN_ENUM(id, name) NV_ORIGIN_##id,
  NV_ORIGINS(NV_ORIGIN_ENUM)
#undef NV_ORIGIN_ENUM
  NV_ORIGIN__COUNT
} NvOrigin;
const char *nv_origin_name(int origin);

/* X(id, name): the fields nv_result_info returns (Lua reads them by name). */
#define NV_INFOS(X)                                                                              \
  X(PHASE, "phase") X(LINE, "line") X(COL, "col") X(ORIGIN, "origin") X(STAGE_INPUT, "input_stage") \
  X(WARNINGS, "warnings")
enum {
#define NV_INFO_ENUM(id, name) NV_INFO_##id,
  NV_INFOS(NV_INFO_ENUM)
#undef NV_INFO_ENUM
  NV_INFO__COUNT
};
int nv_info_find(const char *name);

/* A compile's artefacts and, on failure, its structured diagnostic. A zeroed
 * NvResult is valid and empty; nv_result_free releases it (and may be called
 * twice). */
struct NvResult {
  ClBuf part[NV_PART__COUNT];
  int phase;        /* NvPhase of the failure, NV_PHASE_NONE on success */
  int line, col;    /* 1-based place the tool named, 0 when none */
  int input_stage;  /* NV_STAGE_LL or NV_STAGE_PTX: the text `line` refers to */
  int origin;       /* NvOrigin */
  int warnings;     /* warning lines of the last report (nv_report_text) */
  char key[72];     /* the cache key (hex), "" until computed */
};
void nv_result_free(NvResult *r);
NvResult *nv_result_new(void);    /* heap, zeroed; NULL when out of memory */
void nv_result_delete(NvResult *r);
/* Drops the diagnostic parts and fields (keeps the artefacts). */
void nv_result_clear_diag(NvResult *r);
int nv_result_info(const NvResult *r, int field);

/* ---- compiling -------------------------------------------------------------- */

enum { NV_INPUT_UNKNOWN = 0, NV_INPUT_NVVM = 1, NV_INPUT_PTX = 2 };
/* Guesses what a text is: PTX has `.target`/`.entry`/`.version` directives,
 * NVVM IR has `define`/`target triple` or starts with bitcode magic. */
int nv_input_kind(const char *text, size_t len);

/* NVVM IR text -> PTX. 0 on success; else -1 with libnvvm's log and the IR
 * lines around the failure (libnvvm logs name a line) in diag. libdevice is
 * linked lazily (only when the IR calls an __nv_ function), and so are NVVM
 * link inputs. */
int nv_nvvm_to_ptx(const char *ir, size_t len, const NvOptions *o, ClBuf *ptx, ClBuf *diag);
/* PTX -> cubin through nvJitLink (plus any extra link inputs in o); the info
 * log (ptxas's resource report) in log. */
int nv_ptx_to_cubin(const char *ptx, size_t len, const NvOptions *o, ClBuf *cubin, ClBuf *log, ClBuf *diag);

/* The same with structured results: on success fill the PTX (and LL), or
 * CUBIN and LOG parts; on failure set phase, line, col, input_stage and the
 * DIAG, TOOL_LOG, EXCERPT and (where found) SOURCE parts. */
int nv_compile_nvvm_to_ptx(NvResult *r, const char *ir, size_t len, const NvOptions *o);
int nv_compile_ptx_to_cubin(NvResult *r, const char *ptx, size_t len, const NvOptions *o);
/* Both steps (kind NV_INPUT_NVVM), or the second (NV_INPUT_PTX); 0 guesses. */
int nv_compile(NvResult *r, const char *text, size_t len, int kind, const NvOptions *o);

/* The versions of libnvvm, nvJitLink and the driver, loading the libraries:
 * "libnvvm 2.0 (NVVM IR 2.0, debug 3.2); nvJitLink 13.0; driver 13000". */
int nv_tool_versions(ClBuf *out, ClBuf *err);

/* ---- the resource report (nv_report.c) -------------------------------------- */

/* Parses ptxas's report in an info log: one entry per function, in log order.
 * Returns how many there are (which may exceed max; only max are written). */
int nv_report_parse(const char *log, size_t len, NvKernelReport *out, int max);
/* A table, one line per function. */
void nv_report_format(const NvKernelReport *k, int n, ClBuf *out);
/* One warning line per kernel that spills; returns how many. */
int nv_report_warnings(const NvKernelReport *k, int n, ClBuf *out);
/* The REPORT and WARNINGS parts of r from its LOG part; returns the number
   of warnings (also r->warnings), -1 when out of memory. */
int nv_report_text(NvResult *r);

/* ---- the cache (nv_cache.c) ------------------------------------------------- */

/* The key: SHA-256 (hex) of the key material (the printed IR, or the NVVM or
 * PTX text), a caller's salt (may be NULL), the canonical options, the build
 * of cutelua, and the identities of libnvvm, nvJitLink and the driver. */
int nv_cache_key(const char *material, size_t len, const char *salt, const NvOptions *o, char key[72], ClBuf *err);
/* Looks r->key up, in memory then on disk (o->cache_dir). 1 on a hit: the PTX,
 * CUBIN, LOG and META parts are filled and r->origin set. 0 on a miss. A
 * corrupt disk entry is removed, noted in the NOTE part, and is a miss. */
int nv_cache_get(NvResult *r, const NvOptions *o);
/* Stores r's PTX, CUBIN, LOG and META parts under r->key, in memory and (when
 * o->cache_dir is set) on disk, atomically. -1 with the reason in err when r
 * has no key, or when the disk write failed (the memory entry is kept). */
int nv_cache_put(const NvResult *r, const NvOptions *o, ClBuf *err);
void nv_cache_stats(NvCacheStats *s);
/* Empties the memory cache and/or deletes the disk entries under o->cache_dir. */
int nv_cache_clear(const NvOptions *o, int memory, int disk, ClBuf *err);
/* The byte cap of the memory cache (default 256 MiB); the oldest entries go first. */
void nv_cache_set_memory_limit(size_t bytes);

/* ---- dumps, SASS, cubins (nv_dump.c, nv_elf.c) ------------------------------ */

/* Writes each stage in o->keep that r holds to <dump_dir>/<name>.<arch>.<stage>
 * (SASS is produced first when asked for and possible); the paths written go
 * to the DUMPED part. -1 on the first failure, with the reason in err. */
int nv_dump(NvResult *r, const NvOptions *o, const char *name, ClBuf *err);
/* SASS of a cubin through nvdisasm, else cuobjdump, looked for in
 * $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin and $PATH. -1 with a
 * message naming every place looked at when neither exists. */
int nv_sass(const void *cubin, size_t len, ClBuf *out, ClBuf *err);
/* The names of the kernels (global functions) in a cubin, one per line. */
int nv_cubin_kernels(const void *cubin, size_t len, ClBuf *out, ClBuf *err);
/* 1 if the cubin has a section of that name, 0 if not, -1 if it is not an ELF. */
int nv_cubin_has_section(const void *cubin, size_t len, const char *section);

/* ---- diagnostics (nv_diag.c) ------------------------------------------------ */

/* Fills r's diagnostic from a tool's log about `text` (the input that stage
 * read): finds the lines the log names, excerpts them with a marker, resolves
 * a Lua location from debug metadata or .loc lines, formats DIAG. */
void nv_diag_fill(NvResult *r, int phase, const char *what, const char *log, const char *text, size_t len,
                  int input_stage);
/* Formats DIAG from the other parts (after SOURCE was changed by a caller). */
void nv_diag_format(NvResult *r);
/* A failure with no input to point at (options, loading, the cache...). */
void nv_diag_simple(NvResult *r, int phase, const char *message);

/* ---- a traced module (nv_kernel.c) ------------------------------------------- */

/* The whole pipeline for an IR module (src/ir), whose target must be the
 * options' arch: verify (unless verified since it changed) -> key (the
 * job's material, else the module printed with locations, into the IR
 * part) -> cache lookup (unless job->refresh or job->looked_up) -> on a miss
 * emit (src/emit), compile, store (with job->meta) -> the report's warnings
 * -> dumps (o->keep). 0 (r->origin says compiled, memory or disk), or -1
 * with the diagnostic (phases verify, emit, cache, libnvvm, ptxas, ...). */
int nv_compile_module(NvResult *r, IrModule *m, const NvOptions *o, const NvModuleJob *job);
/* The key of a material and a lookup (a kernel keyed before tracing): 1 hit,
 * 0 miss (r keeps the key: then nv_compile_module with job->looked_up), -1. */
int nv_module_lookup(NvResult *r, const char *material, size_t len, const char *salt, const NvOptions *o);
/* The IR part (the module printed with locations) and the LL part (its NVVM
 * IR for the options; the module is verified first if it must be). */
int nv_module_print(NvResult *r, IrModule *m);
int nv_module_emit(NvResult *r, IrModule *m, const NvOptions *o, const char *name);
/* The report's warnings, then the dumps of o->keep (a failure becomes a
 * note); returns the number of warnings. */
int nv_module_finish(NvResult *r, const NvOptions *o, const char *name);

const void *cl_nv_api(void);

#endif
