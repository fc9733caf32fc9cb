/* ir_impl.h: the IR's internal representation, shared by the files of src/ir.
 *
 * Invariants:
 *  - Everything a module owns comes from its arena (ir_arena_*) and is released
 *    by ir_module_free in one walk over the arena's chunks. Growing arrays are
 *    re-allocated from the arena (the old copy is simply abandoned).
 *  - A function's instructions are one array indexed by ref (index 0 unused).
 *    Body instructions appear in program order; hoisted ones (const, undef,
 *    param, smem) are printed and emitted in the prologue.
 *  - Operands live in f->argpool, immediates in f->immpool; an instruction
 *    stores offsets into them. The number of immediates is the op's imm count.
 *  - Region 0 is the function body. f->open[0..depth] is the stack of open
 *    regions (the cursor is the end of open[depth]); each region records its
 *    depth, so "is region r open" is open[depth(r)] == r. */
#ifndef IR_IMPL_H
#define IR_IMPL_H

#include <stdarg.h>
#include <stdint.h>

#include "ir.h"

/* --- the op table, as data -------------------------------------------------------------------------------- */
/* The families of the op table's columns. Each list makes its enum here and,
   for res and chk, the table of rule functions in ir_rules.c (a family is its
   entry and one named function there); the lowering families are the
   emitter's (src/emit: em_op, em_mem_op). */
#define IR_RESULT_RULES(X) \
  X(NONE) X(GIVEN) X(ARG0) X(ARG1) X(BOOL) X(I32) X(GEP) X(LOAD) X(VAR) X(SREG) X(TIMER) X(VOTE) X(CALL) \
  X(EXTRACT) X(MMA) X(LDMATRIX) IR_RESULT_RULES_WGMMA(X) IR_RESULT_RULES_TMA(X) IR_RESULT_RULES_SYNC90(X)
#define IR_CHECK_FAMILIES(X) \
  X(NONE) X(CONST) X(ANYVAL) X(PARAM) X(SMEM) X(ARITH) X(ARITHS) X(INT) X(INTW) X(FLOAT) X(FLOATS) X(ICMP) \
  X(FCMP) X(SELECT) X(CVT) X(BITCAST) X(PTRTOINT) X(INTTOPTR) X(PTRCAST) X(PRMT) X(MATH) X(GEP) X(LOAD)      \
  X(STORE) X(VAR) X(ATOM) X(CAS) X(SREG) X(BARNAMED) X(MASK) X(SHFL) X(VOTE) X(REDUX) X(PRINTF) X(ASM)      \
  X(CALL) X(EXTRACT) X(INSERT) X(PACK) X(MMA) X(LDMATRIX) X(STMATRIX) X(CPASYNC) X(CPWAIT) X(FOR) X(COND)  \
  X(RET) IR_CHECK_FAMILIES_WGMMA(X) IR_CHECK_FAMILIES_TMA(X) IR_CHECK_FAMILIES_SYNC90(X)
#define IR_LOWERINGS(X) \
  X(NONE) X(CONST) X(SMEM) X(DSMEM) X(BIN) X(IBIN) X(NEG) X(MULHI) X(FDIV) X(MINMAX) X(FMINMAX) X(ABS)    \
  X(FMA) X(ICMP) X(FCMP) X(SELECT) X(CVT) X(BITCAST) X(PTRTOINT) X(INTTOPTR) X(PTRCAST) X(NOT) X(BITCOUNT) \
  X(PRMT) X(MATH) X(GEP) X(LOAD) X(STORE) X(VAR) X(ATOM) X(CAS) X(SREG) X(TIMER) X(CALL0) X(BARNAMED)     \
  X(SYNCWARP) X(FENCE) X(SHFL) X(VOTE) X(REDUX) X(PRINTF) X(ASM) X(CALL) X(EXTRACT) X(INSERT) X(PACK)      \
  X(MMA) X(LDMATRIX) X(STMATRIX) X(CPASYNC) X(ASM0) X(CPWAIT) IR_LOWERINGS_WGMMA(X) IR_LOWERINGS_TMA(X)  \
  IR_LOWERINGS_SYNC90(X)

/* The Hopper (sm_90a) families, one list of each kind per part, so that each
   part is its own lines: the warpgroup MMA (wgmma) ... */
#define IR_RESULT_RULES_WGMMA(X)
#define IR_CHECK_FAMILIES_WGMMA(X) X(WGMMA) X(WGFENCEOP)
#define IR_LOWERINGS_WGMMA(X) X(WGMMA) X(WGWAIT) X(WGFENCEOP)

/* ... the bulk tensor engine (TMA) and bulk copies ... */
#define IR_RESULT_RULES_TMA(X)
#define IR_CHECK_FAMILIES_TMA(X) X(TMA) X(BULK) X(BULKWAIT)
#define IR_LOWERINGS_TMA(X) X(TMA) X(BULK) X(BULKWAIT)

/* ... and mbarriers, fences, named barriers, elect, clusters, DSMEM, setmaxnreg. */
#define IR_RESULT_RULES_SYNC90(X) X(MBTOKEN) X(MBWAIT) X(MAPA)
#define IR_CHECK_FAMILIES_SYNC90(X) X(MBAR) X(ELECT) X(MAPA) X(CTARANK) X(SETMAXNREG)
#define IR_LOWERINGS_SYNC90(X) X(MBAR) X(ELECT) X(MAPA) X(CTARANK) X(SETMAXNREG)

typedef enum IrRes {
#define IR_RES_ENUM(id) IR_RES_##id,
  IR_RESULT_RULES(IR_RES_ENUM)
#undef IR_RES_ENUM
  IR_RES__COUNT
} IrRes;

typedef enum IrChk {
#define IR_CHK_ENUM(id) IR_CHK_##id,
  IR_CHECK_FAMILIES(IR_CHK_ENUM)
#undef IR_CHK_ENUM
  IR_CHK__COUNT
} IrChk;

typedef enum IrLow {
#define IR_LOW_ENUM(id) IR_LOW_##id,
  IR_LOWERINGS(IR_LOW_ENUM)
#undef IR_LOW_ENUM
  IR_LOW__COUNT
} IrLow;

typedef struct IrOpInfo {
  const char *name;
  uint8_t amin, amax, nimm;
  const char *imms;
  uint8_t res, chk, low;
  uint16_t flags;
  int8_t feat; /* ClFeature the op needs; CL_FEAT_NONE: every target */
  const char *ll;
  const char *doc;
} IrOpInfo;

extern const IrOpInfo ir_op_info[IR_OP__COUNT];

/* An immediate kind's enumeration (NULL names for numbers, strings, ...). */
typedef struct IrImmKind {
  char letter;
  const char *what;
  const char *const *names;
  int count;
  int omit_zero;
} IrImmKind;
const IrImmKind *ir_imm_kind(char letter);

/* Tables behind some enumerations. */
typedef struct IrSregInfo { const char *name, *reg, *intr; int feat; } IrSregInfo; /* feat: ClFeature */
extern const IrSregInfo ir_sreg_info[IR_SREG__COUNT];
typedef struct IrTimerInfo { const char *name; int bits; const char *reg; } IrTimerInfo;
extern const IrTimerInfo ir_timer_info[IR_TIMER__COUNT];
extern const char *const ir_mma_type_names[IR_MT__COUNT];
extern const int ir_mma_type_bits[IR_MT__COUNT];

/* --- arena ------------------------------------------------------------------------------------------------ */
typedef struct IrChunk IrChunk;
typedef struct IrArena {
  IrChunk *head;
  char *cur, *end;
  size_t bytes; /* allocated from the system, all chunks */
} IrArena;
void *ir_arena_alloc(IrArena *a, size_t n);
void ir_arena_free(IrArena *a);
/* Ensures *cap >= need elements of size elem for *arr (doubling); 0 on OOM. */
int ir_arena_grow(IrArena *a, void **arr, uint32_t *cap, uint32_t need, size_t elem);
#define IR_GROW(m, arr, cap, need) ir_arena_grow(&(m)->arena, (void **)&(arr), &(cap), (need), sizeof *(arr))

/* --- types ------------------------------------------------------------------------------------------------ */
typedef struct IrTypeRec {
  uint8_t kind;   /* IrTypeKind */
  uint8_t space;  /* ptr */
  uint16_t bits;  /* scalars */
  IrType elem;    /* vec, ptr, array */
  uint32_t len;   /* vec, array: length; struct: field count */
  uint32_t align; /* ptr */
  uint32_t size, natural;
  const IrType *fields; /* struct */
  const char *name;     /* printed form, made on first request */
  const char *llvm;     /* LLVM form, made on first request by the emitter */
} IrTypeRec;

void ir_types_init(IrModule *m);
static inline const IrTypeRec *ir_trec(const IrModule *m, IrType t);

/* --- instructions, regions, variables --------------------------------------------------------------------- */
typedef struct IrInst {
  uint16_t op;
  uint16_t nargs;
  IrType type;
  uint32_t region; /* the region it was appended to */
  uint32_t loc;
  uint32_t args;   /* offset in f->argpool */
  uint32_t imms;   /* offset in f->immpool */
} IrInst;

typedef enum IrRegionKind {
  IR_RK_BODY, IR_RK_FOR, IR_RK_THEN, IR_RK_ELSE, IR_RK_WCOND, IR_RK_WBODY
} IrRegionKind;

typedef struct IrRegion {
  uint32_t parent;
  IrRef owner; /* the for / if / while that opened it */
  uint16_t kind;
  uint16_t depth;
  uint8_t terminated; /* a break/continue/ret was appended to it */
} IrRegion;

typedef struct IrVarInfo {
  IrType type;
  int count;
  uint32_t loc;
  int dynamic; /* indexed by a value somewhere: must stay in memory */
} IrVarInfo;

struct IrFunc {
  IrModule *m;
  int index;
  uint32_t name; /* string id */
  IrFuncKind kind;
  IrType ret;
  uint32_t loc;  /* where the function was created */
  IrInst *insts;
  uint32_t ninst, capinst; /* refs 1..ninst-1 */
  IrRef *argpool;
  uint32_t nargp, capargp;
  int64_t *immpool;
  uint32_t nimmp, capimmp;
  IrRegion *regions;
  uint32_t nregion, capregion;
  uint32_t *open;
  uint32_t depth, capopen;
  IrVarInfo *vars;
  uint32_t nvar, capvar; /* ids 1..nvar-1 */
  IrRef *params;
  uint32_t nparam, capparam;
  uint32_t *cse; /* open-addressing table of refs (0: empty) */
  uint32_t csecap, csecount;
  int32_t attrs[IR_ATTR__COUNT][3];
};

typedef struct IrLoc {
  uint32_t file, line, fn;
} IrLoc;

struct IrModule {
  IrArena arena;
  int opt[IR_OPT__COUNT];
  const ClTarget *target; /* the row of the target table the op rules follow (never NULL) */
  /* changes: bumped by everything that can change what the verifier says
     (an op, a function, a parameter, an attribute, a variable, an option);
     verified_at: its value when ir_verify last found nothing */
  uint64_t changes, verified_at;
  int verified;
  /* unchecked: some op was not checked against the rules of the current
     target when it was appended (appended raw, or the target changed since):
     ir_verify then applies every op's rules, else only structure (each op is
     checked once). rule_checks counts ir_check_inst calls (tests). */
  int unchecked;
  uint64_t rule_checks;
  uint32_t nops; /* instructions of all its functions (IR_OPT_MAX_OPS bounds it) */
  /* strings: ids 1..nstr-1 */
  const char **strs;
  uint32_t nstr, capstr;
  uint32_t *strtab;
  uint32_t strtabcap;
  /* types: ids 1..ntype-1 */
  IrTypeRec *types;
  uint32_t ntype, captype;
  uint32_t *typetab;
  uint32_t typetabcap;
  /* locations: ids 1..nloc-1; cur is recorded on each new op */
  IrLoc *locs;
  uint32_t nloc, caploc;
  uint32_t *loctab;
  uint32_t loctabcap;
  uint32_t cur_loc;
  /* functions */
  IrFunc **funcs;
  uint32_t nfunc, capfunc;
  /* diagnostics */
  ClBuf diag;
  int ndiag;
  int oom;
  /* the last text handed to Lua (print, emit) */
  ClBuf text;
};

static inline const IrTypeRec *ir_trec(const IrModule *m, IrType t) {
  return (t > 0 && t < m->ntype) ? &m->types[t] : &m->types[0];
}
static inline const IrInst *ir_inst(const IrFunc *f, IrRef r) { return &f->insts[r]; }
static inline const IrRef *ir_args(const IrFunc *f, const IrInst *in) { return f->argpool + in->args; }
static inline const int64_t *ir_imms(const IrFunc *f, const IrInst *in) { return f->immpool + in->imms; }
static inline int ir_ref_ok(const IrFunc *f, IrRef r) { return r > 0 && r < f->ninst; }

/* --- type helpers ----------------------------------------------------------------------------------------- */
int ir_type_is_int(const IrModule *m, IrType t);       /* scalar integer, incl. i1 */
int ir_type_is_float(const IrModule *m, IrType t);     /* any float scalar (storage ones too) */
int ir_type_is_arith_float(const IrModule *m, IrType t); /* f16, f32, f64 */
IrType ir_type_scalar_of(const IrModule *m, IrType t); /* element of a vector, else t */
int ir_type_bits(const IrModule *m, IrType t);          /* scalars and vectors: total bits */
int ir_type_valid(const IrModule *m, IrType t);

/* --- diagnostics ------------------------------------------------------------------------------------------ */
/* Records an error about op v of f (printed with its location); v 0: about f. */
void ir_error(IrFunc *f, IrRef v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ir_verror(IrFunc *f, IrRef v, const char *fmt, va_list ap);
/* Records an error with no op (bad module-level request). */
void ir_merror(IrModule *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "file:line (fn)" of a location, or "" */
void ir_loc_format(const IrModule *m, uint32_t loc, ClBuf *out);

/* --- check (ir_check.c, ir_rules.c): the operand and result rules of every op ----------------------------- */
/* Checks op v of f against its rules (operand count, types, immediates, the
   module's target) and returns the result type the op has (the one it
   carries, or the inferred one when it carries IR_NONE). Each violation is
   reported with ir_error; the return is IR_NONE if there was any. */
IrType ir_check_inst(IrFunc *f, IrRef v);
/* The result type rule alone, without checks (raw building); of an op, or of
   an instruction record. */
IrType ir_infer_type(IrFunc *f, IrRef v);
IrType ir_result_type(IrFunc *f, const IrInst *in);
/* Flags an op accepts in its 'F' immediate. */
unsigned ir_op_allowed_flags(int op);
/* mma: fragment register counts and kinds for a valid combination, or 0. */
typedef struct IrMmaFrag {
  int a_regs, b_regs, c_regs, d_regs;
  IrType ab_reg, c_reg, d_reg; /* IR_T_I32, IR_T_F32 or IR_T_F64 */
  int sm;                      /* the lowest sm of the PTX ISA that has it (for messages) */
  int feat;                    /* the target feature it needs (ClFeature) */
} IrMmaFrag;
int ir_mma_lookup(int shape, int ta, int tb, int tc, int td, IrMmaFrag *out);
/* The valid combinations as text ("m16n8k16 f32.f16.f16.f32 (sm_80), ..."),
   for errors: of one shape (-1: all), that target t has (NULL: all). */
void ir_mma_list(ClBuf *out, int shape, const ClTarget *t);

/* wgmma.mma_async (ir_wgmma.c): the form of A x B -> D with N columns, or 0
   with why it does not exist (a sentence) in *why when why is not NULL. */
typedef struct IrWgmmaForm {
  int k;          /* K of one instruction: 32 bytes of the input type */
  int d_regs;     /* 32-bit accumulator registers a thread: N/2, or N/4 for f16 pairs */
  IrType d_reg;   /* IR_T_F32 (f32), IR_T_I32 (s32, and f16 pairs) */
  int mn_major;   /* A and B may be MN-major (16-bit inputs) */
  int integer;    /* 8-bit integer inputs: satfinite, no negation */
} IrWgmmaForm;
int ir_wgmma_form(int ta, int tb, int td, int n, IrWgmmaForm *out, const char **why);
/* The forms that exist, as text (for errors). */
const char *ir_wgmma_forms(void);

/* --- fold (ir_fold.c) ------------------------------------------------------------------------------------- */
typedef struct IrFoldResult {
  IrRef ref;       /* an existing value equals the op */
  int is_const;    /* or a constant of the op's type with this payload */
  int64_t bits;
  int rewrite_op;  /* or the op rewrite_op(rewrite_a, constant bits): (x + c1) + c2 -> x + (c1 + c2) */
  IrRef rewrite_a;
} IrFoldResult;
int ir_fold(IrFunc *f, IrRef v, IrFoldResult *out);
/* Canonical operand order for commutative ops (constants second). */
void ir_canon(IrFunc *f, IrRef v);
IrRef ir_cse_find(IrFunc *f, IrRef v);
void ir_cse_insert(IrFunc *f, IrRef v);
int ir_region_open(const IrFunc *f, uint32_t region);
/* Numeric helpers: a float constant's payload for a type (rounded to it). */
int64_t ir_float_bits(IrType t, double v);
double ir_bits_float(IrType t, int64_t bits);
int64_t ir_int_wrap(int bits, int64_t v);
/* Minifloat encodings (round to nearest even; fp8 e4m3 saturates to finite). */
uint16_t ir_f16_from_double(double v);
double ir_f16_to_double(uint16_t h);
uint16_t ir_bf16_from_double(double v);
double ir_bf16_to_double(uint16_t h);
uint8_t ir_fp8_from_double(double v, int e5m2);
double ir_fp8_to_double(uint8_t b, int e5m2);

/* --- builder internals (ir_builder.c) ---------------------------------------------------------------------- */
IrRef ir_append(IrFunc *f, IrOp op, IrType type, const IrRef *args, int nargs, const int64_t *imms);
void ir_rollback(IrFunc *f, IrRef v);
IrRef ir_intern_const(IrFunc *f, IrType type, int64_t bits);

/* --- printer internals ------------------------------------------------------------------------------------ */
void ir_print_inst_text(const IrFunc *f, IrRef v, ClBuf *out); /* one line, no indent, no newline */
void ir_print_float(ClBuf *out, IrType t, double v);

#endif
