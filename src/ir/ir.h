/* ir.h: the cutelua IR, its builder, verifier and printer (public C API; the
 * NVVM emitter, its backend, is src/emit).
 *
 * A module (IrModule) owns one arena: types, strings, locations and every
 * function's instructions live in it and go with ir_module_free. Nothing here
 * prints, exits or longjmps: calls return 0 (IR_NONE) or -1 on a bad request and
 * record a diagnostic (message, the op printed, its source location) in the
 * module, read with ir_diag().
 *
 * Values are refs: small positive integers into the function's instruction array
 * (printed %N); 0 is "no value / error". Instructions are appended in program
 * order at the builder's cursor, the end of the innermost open region, so a ref
 * is always greater than the refs it uses. Constants, parameters and shared
 * memory live in the function prologue and are visible everywhere.
 *
 * Structured control flow is a flat sequence with markers: for/if/else/while/
 * while.cond/end. A value defined inside a region is visible in the regions
 * nested in it and nowhere after the region closes (checked by the builder and
 * the verifier). Mutable state lives in local variables (var_*), which the
 * emitter (src/emit) writes as SSA values, or allocas where they are indexed
 * with run-time values.
 *
 * Types are interned: equal types have equal ids (IrType). Scalars have fixed
 * ids (IR_T_F32 ...); vectors, pointers (element type, address space,
 * alignment), structs and arrays are made by ir_type_*. */
#ifndef IR_H
#define IR_H

#include <stddef.h>
#include <stdint.h>

#include "cl_buf.h"
#include "ir_ops.h"
#include "target.h"

/* IrRef, IrType, IrModule, IrFunc, IrTypeInfo, IrEmitOptions and the Lua-facing
   function table CLIrApi: shared with ffi.cdef. */
#include "ir.cdef"

#define CL_IR_ABI 1
const void *cl_ir_api(void);

#define IR_NONE 0u

/* --- the op table as an enum ------------------------------------------------------------------------------ */
typedef enum IrOp {
#define IR_OP_ENUM(id, ...) IR_OP_##id,
  IR_OPS(IR_OP_ENUM)
#undef IR_OP_ENUM
  IR_OP__COUNT
} IrOp;

/* --- types ------------------------------------------------------------------------------------------------ */
/* Scalars: id, name, bits, LLVM type, storage-only. bf16, tf32 and the fp8
   types are storage types: converted, loaded, stored, fed to mma; no
   arithmetic on them (Lua reads the column: scalar_storage_only). */
#define IR_SCALARS(X)                  \
  X(VOID, "void", 0, "void", 0)        \
  X(I1, "i1", 1, "i1", 0)              \
  X(I8, "i8", 8, "i8", 0)              \
  X(I16, "i16", 16, "i16", 0)          \
  X(I32, "i32", 32, "i32", 0)          \
  X(I64, "i64", 64, "i64", 0)          \
  X(F16, "f16", 16, "half", 0)         \
  X(BF16, "bf16", 16, "i16", 1)        \
  X(TF32, "tf32", 32, "i32", 1)        \
  X(F32, "f32", 32, "float", 0)        \
  X(F64, "f64", 64, "double", 0)       \
  X(E4M3, "e4m3", 8, "i8", 1)          \
  X(E5M2, "e5m2", 8, "i8", 1)

enum {
  IR_T_NONE = 0,
#define IR_T_ENUM(id, ...) IR_T_##id,
  IR_SCALARS(IR_T_ENUM)
#undef IR_T_ENUM
  IR_T__NSCALAR
};

/* Kinds of types: id, name (IrTypeInfo.kind; Lua reads the names: type_kind_name). */
#define IR_TYPE_KINDS(X) \
  X(NONE, "none") X(VOID, "void") X(INT, "int") X(FLOAT, "float") X(VEC, "vec") X(PTR, "ptr") X(STRUCT, "struct") \
  X(ARRAY, "array")
typedef enum IrTypeKind {
#define IR_TK_ENUM(id, name) IR_TK_##id,
  IR_TYPE_KINDS(IR_TK_ENUM)
#undef IR_TK_ENUM
  IR_TK__COUNT
} IrTypeKind;

/* Address spaces: id, name, LLVM address space. Pointers into param space come
   from by-value (grid_constant) parameters; shared_cluster pointers are 32-bit
   addresses in the cluster's shared window (used through inline PTX). */
#define IR_SPACES(X)                          \
  X(GENERIC, "generic", 0)                   \
  X(GLOBAL, "global", 1)                     \
  X(SHARED, "shared", 3)                     \
  X(SHARED_CLUSTER, "shared_cluster", 7)     \
  X(LOCAL, "local", 5)                       \
  X(PARAM, "param", 101)                     \
  X(CONST, "const", 4)

typedef enum IrSpace {
#define IR_SPACE_ENUM(id, ...) IR_SPACE_##id,
  IR_SPACES(IR_SPACE_ENUM)
#undef IR_SPACE_ENUM
  IR_SPACE__COUNT
} IrSpace;


/* --- enumerations of the immediates (see ir_ops.h) -------------------------------------------------------- */
#define IR_E_ICMP(id, name) IR_ICMP_##id,
#define IR_E_FCMP(id, name) IR_FCMP_##id,
#define IR_E_ROUND(id, name) IR_ROUND_##id,
#define IR_E_ORDER(id, name) IR_ORDER_##id,
#define IR_E_SCOPE(id, name) IR_SCOPE_##id,
#define IR_E_CACHE(id, name) IR_CACHE_##id,
#define IR_E_REDOP(id, name) IR_REDOP_##id,
#define IR_E_SHFL(id, name) IR_SHFL_##id,
#define IR_E_VOTE(id, name) IR_VOTE_##id,
#define IR_E_FENCE(id, name) IR_FENCE_##id,
#define IR_E_BAR(id, name) IR_BAR_##id,
#define IR_E_TIMER(id, name, bits, reg) IR_TIMER_##id,
#define IR_E_SREG(id, name, reg, intr, feat) IR_SREG_##id,
#define IR_E_MMASHAPE(id, name, m, n, k) IR_MMA_##id,
#define IR_E_MMATYPE(id, name, bits) IR_MT_##id,
#define IR_E_FLAG(id, name, bit) IR_FLAG_##id = bit,
enum { IR_ICMP_PREDS(IR_E_ICMP) IR_ICMP__COUNT };
enum { IR_FCMP_PREDS(IR_E_FCMP) IR_FCMP__COUNT };
enum { IR_ROUNDINGS(IR_E_ROUND) IR_ROUND__COUNT };
enum { IR_ORDERS(IR_E_ORDER) IR_ORDER__COUNT };
enum { IR_SCOPES(IR_E_SCOPE) IR_SCOPE__COUNT };
enum { IR_CACHES(IR_E_CACHE) IR_CACHE__COUNT };
enum { IR_REDOPS(IR_E_REDOP) IR_REDOP__COUNT };
enum { IR_SHFL_MODES(IR_E_SHFL) IR_SHFL__COUNT };
enum { IR_VOTE_MODES(IR_E_VOTE) IR_VOTE__COUNT };
enum { IR_FENCE_SEMS(IR_E_FENCE) IR_FENCE__COUNT };
enum { IR_BAR_MODES(IR_E_BAR) IR_BAR__COUNT };
enum { IR_TIMERS(IR_E_TIMER) IR_TIMER__COUNT };
enum { IR_SREGS(IR_E_SREG) IR_SREG__COUNT };
enum { IR_MMA_SHAPES(IR_E_MMASHAPE) IR_MMA__COUNT };
enum { IR_MMA_TYPES(IR_E_MMATYPE) IR_MT__COUNT };
enum { IR_FLAGS(IR_E_FLAG) IR_FLAG__ALL = 0x3f };

/* --- functions, attributes, options ----------------------------------------------------------------------- */
typedef enum IrFuncKind { IR_FUNC_KERNEL = 0, IR_FUNC_DEVICE = 1 } IrFuncKind;

/* Kernel attributes: id, name, value count. maxntid/reqntid/cluster take x, y, z. */
#define IR_ATTRS(X)                 \
  X(MAXNTID, "maxntid", 3)          \
  X(REQNTID, "reqntid", 3)          \
  X(MINCTASM, "minctasm", 1)        \
  X(CLUSTER, "cluster", 3)          \
  X(MAXNREG, "maxnreg", 1)          \
  X(DYN_SMEM, "dynamic_smem", 1)
typedef enum IrAttr {
#define IR_ATTR_ENUM(id, name, n) IR_ATTR_##id,
  IR_ATTRS(IR_ATTR_ENUM)
#undef IR_ATTR_ENUM
  IR_ATTR__COUNT
} IrAttr;

/* Module options (ir_module_set): id, name (Lua reads them: option_name).
 *   FOLD     1 (default): fold constants and reuse identical pure ops; 0: raw IR
 *   CHECK    1 (default): check each op as it is appended; 0: accept anything (verifier tests)
 *   SM       the plain target of a compute capability (80: sm_80, 90: sm_90); read: the
 *            target's cc. Kept for old callers: ir_module_set_target names any target.
 *   MAX_OPS  at most this many instructions in the module, all functions (default
 *            IR_MAX_OPS_DEFAULT; 0 or less: no limit): an endless trace stops with an error */
#define IR_OPTIONS(X) X(FOLD, "fold") X(CHECK, "check") X(SM, "sm") X(MAX_OPS, "max_ops")
typedef enum IrOption {
#define IR_OPTION_ENUM(id, name) IR_OPT_##id,
  IR_OPTIONS(IR_OPTION_ENUM)
#undef IR_OPTION_ENUM
  IR_OPT__COUNT
} IrOption;
#define IR_MAX_OPS_DEFAULT 500000

/* Printer flags. */
#define IR_PRINT_LOCS 1 /* append "; file:line (function)" to each op */


/* --- module ----------------------------------------------------------------------------------------------- */
IrModule *ir_module_new(void);
void ir_module_free(IrModule *m);
void ir_module_set(IrModule *m, IrOption opt, int value);
int ir_module_get(const IrModule *m, IrOption opt);
/* The target the op rules follow: a row of the target table (src/target),
   by name ("sm_90a"); sm_90 and sm_90a are different targets. The default is
   CL_TARGET_FALLBACK (sm_90a). 0, or -1 with a diagnostic naming the known
   targets (the target is then unchanged). */
int ir_module_set_target(IrModule *m, const char *name);
const ClTarget *ir_module_target(const IrModule *m);
/* Diagnostics recorded so far (builder errors, verifier reports). */
const char *ir_diag(const IrModule *m);
int ir_diag_count(const IrModule *m);
void ir_diag_clear(IrModule *m);
/* Interned strings (file names, printf formats, asm text): id >= 1. */
uint32_t ir_str(IrModule *m, const char *s);
const char *ir_str_get(const IrModule *m, uint32_t id);
uint32_t ir_str_find(const IrModule *m, const char *s); /* the id of a string interned already, else 0 */
/* 1 when ir_verify found nothing wrong and nothing changed since (no op,
   function, parameter, attribute, variable or option added or set). */
int ir_module_verified(const IrModule *m);
/* An error about op v of f (0: about f) formatted as the module's
   diagnostics are ("file:line (fn): error: msg\n  in @f: <op>\n"), appended
   to out; nothing is recorded in the module (for its readers, e.g. the emitter). */
void ir_format_error(const IrFunc *f, IrRef v, const char *msg, ClBuf *out);

/* --- types ------------------------------------------------------------------------------------------------ */
IrType ir_type_vec(IrModule *m, IrType elem, int len);
IrType ir_type_ptr(IrModule *m, IrType elem, int space, int align);
IrType ir_type_struct(IrModule *m, const IrType *fields, int n);
IrType ir_type_array(IrModule *m, IrType elem, int len);
/* Parses the printed form: "f32", "<4 x f16>", "ptr<f32, global, 16>",
   "{f32, i32}", "{4 x f32}", "[128 x i8]". IR_NONE (with a diagnostic) if bad. */
IrType ir_type_parse(IrModule *m, const char *text);
/* The printed form, owned by the module. */
const char *ir_type_name(IrModule *m, IrType t);
int ir_type_info(const IrModule *m, IrType t, IrTypeInfo *out);
int ir_type_count(const IrModule *m);

/* --- functions -------------------------------------------------------------------------------------------- */
/* A kernel (ret must be void or IR_NONE) or a device function. NULL if the name
   is taken or bad. */
IrFunc *ir_func_new(IrModule *m, const char *name, IrFuncKind kind, IrType ret);
int ir_func_count(const IrModule *m);
IrFunc *ir_func_at(const IrModule *m, int i);
IrFunc *ir_func_find(const IrModule *m, const char *name);
const char *ir_func_name(const IrFunc *f);
int ir_func_index(const IrFunc *f);
IrModule *ir_func_module(const IrFunc *f);
/* Appends a parameter of a value type (scalar, vector, pointer). */
IrRef ir_param(IrFunc *f, IrType type);
/* Appends a by-value blob parameter (e.g. a 128-byte TMA descriptor, align 64),
   kept in param space (grid_constant); its value is a ptr<i8, param, align>. */
IrRef ir_param_blob(IrFunc *f, int size, int align);
/* Sets a kernel attribute (unused values 0; y, z default to 1). 0 or -1. */
int ir_func_attr(IrFunc *f, IrAttr attr, int x, int y, int z);
int ir_func_attr_get(const IrFunc *f, IrAttr attr, int i);

/* --- source locations ------------------------------------------------------------------------------------- */
/* Sets the location recorded on every following op of the module. A line of 0
   clears it. Returns the location id. */
uint32_t ir_set_loc(IrModule *m, const char *file, int line, const char *function);
/* Sets a location id returned earlier (cheap: no string look-ups). */
void ir_set_loc_id(IrModule *m, uint32_t loc);

/* --- values and ops --------------------------------------------------------------------------------------- */
IrRef ir_const_int(IrFunc *f, IrType type, int64_t value);
IrRef ir_const_float(IrFunc *f, IrType type, double value);
/* Appends op at the cursor. type: the result type for rules that need one
   (IR_NONE to infer where the rule allows). imms: exactly as many as the op's
   imms column (fewer: the rest are 0). Folding and CSE may return an existing
   value. 0 on error (diagnostic recorded). */
IrRef ir_op(IrFunc *f, IrOp op, IrType type, const IrRef *args, int nargs, const int64_t *imms, int nimm);
/* The same with up to 3 operands (trailing zeros: absent) and 3 immediates. */
IrRef ir_op3(IrFunc *f, IrOp op, IrType type, IrRef a, IrRef b, IrRef c, int64_t i0, int64_t i1, int64_t i2);
IrType ir_value_type(const IrFunc *f, IrRef v);
/* Reads an appended op back (NULL/0/-1 for a bad ref). */
IrOp ir_inst_op(const IrFunc *f, IrRef v);
int ir_inst_nargs(const IrFunc *f, IrRef v);
IrRef ir_inst_arg(const IrFunc *f, IrRef v, int i);
int64_t ir_inst_imm(const IrFunc *f, IrRef v, int i);
int ir_inst_count(const IrFunc *f); /* refs are 1..count */
/* The line an op was traced at (0 when unknown), and its file in *file ("" when unknown). */
int ir_inst_loc(const IrFunc *f, IrRef v, const char **file);
/* For a const: 1 and its value (integer, or float as double). */
int ir_const_value(const IrFunc *f, IrRef v, int64_t *i, double *d);

/* --- structured control flow ------------------------------------------------------------------------------ */
/* for iv = lo; iv < hi; iv += step (iv > hi when step < 0). Returns iv. */
IrRef ir_for_begin(IrFunc *f, IrRef lo, IrRef hi, IrRef step, int unroll);
int ir_if_begin(IrFunc *f, IrRef cond);
int ir_else_begin(IrFunc *f);
/* while: ops for the condition, then ir_while_cond(c), then the body. */
int ir_while_begin(IrFunc *f);
int ir_while_cond(IrFunc *f, IrRef cond);
int ir_region_end(IrFunc *f);
int ir_break(IrFunc *f);
int ir_continue(IrFunc *f);
int ir_return(IrFunc *f, IrRef value); /* value 0: none */
int ir_depth(const IrFunc *f);         /* open regions below the function body */

/* --- local variables -------------------------------------------------------------------------------------- */
/* A function-scoped array of count elements of type; returns its id (>= 1). */
uint32_t ir_var_new(IrFunc *f, IrType type, int count);
IrRef ir_var_load(IrFunc *f, uint32_t var, int index);
IrRef ir_var_loadx(IrFunc *f, uint32_t var, IrRef index);
int ir_var_store(IrFunc *f, uint32_t var, int index, IrRef value);
int ir_var_storex(IrFunc *f, uint32_t var, IrRef index, IrRef value);
/* count consecutive elements from index as a vector <count x T>, and back */
IrRef ir_var_loadv(IrFunc *f, uint32_t var, int index, int count);
int ir_var_storev(IrFunc *f, uint32_t var, int index, IrRef value);
/* an optimisation barrier: what was computed from the variable is recomputed after it, not held */
int ir_var_opaque(IrFunc *f, uint32_t var);
int ir_var_count(const IrFunc *f);
/* A variable's element count, and its element type in *type (0 for a bad id). */
int ir_var_info(const IrFunc *f, uint32_t var, IrType *type);

/* --- op table queries (for Lua and docs) ------------------------------------------------------------------ */
const char *ir_op_name(int op);
int ir_op_find(const char *name);
const char *ir_op_imms(int op);
const char *ir_op_doc(int op);
int ir_op_arity(int op, int *amin, int *amax);
unsigned ir_op_flags(int op);
int ir_op_min_sm(int op);  /* lowest compute capability * 10 of a target that has the op (0: all) */
int ir_op_feature(int op); /* the target feature the op needs (ClFeature), CL_FEAT_NONE for none */
const char *ir_op_lowering(int op); /* its lowering family's name ("MATH", "ASM0", ...), NULL for no op */
/* The names of the other enumerations Lua needs (NULL past the end): address
   spaces, kernel attributes (and how many values each takes), module options,
   scalar types (and whether each is storage-only). */
const char *ir_space_name(int i);
const char *ir_type_kind_name(int i);
const char *ir_attr_name(int i);
int ir_attr_arity(int i);
const char *ir_option_name(int i);
const char *ir_scalar_name(int i); /* i: the type id, from 1 (void) */
int ir_scalar_storage_only(int i);
/* Immediate enumerations: the value of a name of kind letter k, or -1;
   the name of a value, or NULL. */
int ir_imm_find(char kind, const char *name);
const char *ir_imm_name(char kind, int64_t value);
int ir_imm_count(char kind);
const char *ir_imm_kind_name(char kind);
/* Special register and mma tables. */
int ir_mma_shape_mnk(int shape, int *m, int *n, int *k);

/* --- whole module ----------------------------------------------------------------------------------------- */
/* Checks everything (structure, dominance, types, op rules, targets) and reports
   every violation into the module's diagnostics. Returns the number found. */
int ir_verify(IrModule *m);
/* Deterministic text of the whole module, or of one function / op. */
void ir_print_module(IrModule *m, ClBuf *out, int flags);
void ir_print_func(IrFunc *f, ClBuf *out, int flags);
void ir_print_inst(IrFunc *f, IrRef v, ClBuf *out);

#endif
