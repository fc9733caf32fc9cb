/* emit_impl.h: the NVVM emitter's state, shared by its files (internal to
 * src/emit; the public face is emit.h):
 *   emit.c       the module and function frame, control flow, debug metadata
 *   emit_text.c  LLVM types, constants, value names, instructions, declarations, errors
 *   emit_asm.c   inline PTX (operands, constraints, registers) and register fragments
 *   emit_ops.c   the value ops (arithmetic, casts, math, aggregates, calls, printf)
 *   emit_mem.c   memory, synchronisation, warp and tensor-core ops
 *   emit_ssa.c   local variables as SSA values, split vectors
 *
 * The emitter reads the IR's representation (ir_impl.h) and never writes to
 * it: the module is const here, and what the emitter keeps (type texts,
 * names, phi state) lives in its own arena and buffers. It does not verify
 * either: em_nvvm refuses a module that was not verified since it last
 * changed (ir_module_verified), and otherwise assumes valid IR.
 *
 * Naming in the emitted text: op %N of the IR is %vN; a by-value parameter is
 * %pN; temporaries are %tN; blocks are named after the construct that made them
 * (for3.head, if5.else, ...). Constants are written inline. An op that lowers
 * to nothing (a cast that only changes the alignment) aliases its operand.
 *
 * Aggregates (the register fragments of mma and ldmatrix) are kept apart where
 * that is cheaper: an mma or ldmatrix result is split into %vN.0, %vN.1, ...
 * right after it is made; an extract of it is one of those names; a struct
 * `pack` whose only uses take it apart again (mma operands, extracts) is not
 * built at all. A fully unrolled tile then emits about one line per register
 * it really moves. */
#ifndef EMIT_IMPL_H
#define EMIT_IMPL_H

#include "emit.h"
#include "ir_impl.h"

/* An edge into a block where control flow meets, with the values of the
 * promoted variables on it (emit_ssa.c). */
typedef struct EmEdge {
  char label[40];
  const char **state; /* per slot */
} EmEdge;
typedef struct EmEdges {
  EmEdge *edge;
  uint32_t n, cap;
} EmEdges;

typedef struct EmCtl {
  int kind;   /* IR_OP_FOR, IR_OP_IF, IR_OP_WHILE */
  int id;     /* label number */
  IrRef iv;   /* for: the induction variable */
  IrRef step; /* for: its step */
  int unroll;
  int has_else;
  /* promoted variables: */
  EmEdges back, exits;  /* loops: edges to the latch (for) or the header (while); to the exit */
  EmEdges ends;         /* if: the ends of its arms */
  const char **at_if;   /* if: the state at the branch */
  const char **pre;     /* loops: the state entering the header, from pre_label */
  char pre_label[40];
  size_t phi_at;        /* loops: where the header's phis go in the body text */
  uint32_t *hslot;      /* loops: the slots with a header phi, and its name */
  const char **hname;
  uint32_t nh;
} EmCtl;

typedef struct Em {
  const IrModule *m;
  const IrFunc *f;
  const char *target; /* the target named in the options (NULL: none); a row of src/target */
  int fast, ftz, line_info;
  ClBuf *out;
  ClBuf *err;          /* where errors go (NULL: nowhere) */
  IrArena arena;       /* what the emitter keeps until it returns */
  const char **type_ll; /* per type id: its LLVM text, made on first request */
  uint32_t ntype_ll;
  uint32_t fn_loc;     /* the location of the function being emitted (line info) */
  uint32_t syn_loc, syn_file; /* "<cutelua>":1, for a function with no location */
  ClBuf types, globals, decls, funcs, meta, entry, body; /* types: named struct types (em_ll_type) */
  const char **named_lit; /* the literal texts of the named struct types, in order (%cl.sN is N) */
  uint32_t nnamed, capnamed;
  /* declared names (intrinsics, libdevice), a small set */
  const char **declared;
  uint32_t ndeclared, capdeclared;
  int tmp, label, strings;
  int terminated;
  EmCtl *ctl;
  uint32_t nctl, capctl;
  IrRef *alias;        /* per ref of the function: the ref it stands for, or 0 */
  IrRef *field_src;    /* per ref: an extract that names field field_idx of a split value */
  uint32_t *field_idx;
  uint8_t *vflags;     /* per ref: EM_V_* */
  int meta_next;       /* next free metadata number */
  /* debug info */
  int cu_md, st_md, sp_md;        /* compile unit, subroutine type, current function */
  uint32_t *file_md;              /* per string id: its DIFile, 0 if none yet */
  uint32_t *lexblock_md;          /* per string id: DILexicalBlockFile in this function */
  uint32_t *loc_md;               /* per loc id: DILocation in this function */
  uint32_t nfile_md;
  uint32_t cur_dbg;               /* !dbg of the op being lowered (0: none) */
  int uses_convergent;
  int dsmem_align;
  char vbuf[8][80];
  int vnext;
  int failed;
  char cur_label[40];  /* the block being written */
  /* local variables promoted to SSA values (emit_ssa.c) */
  uint32_t *pr_base;   /* per variable: its first slot, UINT32_MAX when it stays in memory */
  uint32_t pr_nslot;
  const char **pr_cur; /* per slot: its value now (text) */
  const char **pr_type; /* per slot: its LLVM type */
  uint32_t *pr_mark, pr_stamp;
  const char **pr_vtext; /* per ref: the value text a var.load or an extract stands for */
  const char ***sv_el;  /* per ref: the element (or word) texts of a split vector */
  uint16_t *sv_n;       /* how many */
  uint8_t *sv_words;    /* 1: they are the 32-bit words of a vector of narrower elements */
} Em;

/* Grows an array of the emitter's arena (ir_arena_grow); 0 when out of memory. */
#define EM_GROW(e, arr, cap, need) ir_arena_grow(&(e)->arena, (void **)&(arr), &(cap), (need), sizeof *(arr))

/* vflags bits */
#define EM_V_SPLIT 1    /* its fields exist as %vN.i */
#define EM_V_NEED_AGG 2 /* some use needs the aggregate value itself */
#define EM_V_VNEED 4    /* a vector some use needs whole (else it may stay split) */

/* Text helpers (emit_text.c). */
const char *em_ll_type(Em *e, IrType t);           /* LLVM type of an IR type */
void em_ll_ptr(const char *elem, int space, char *out, size_t n); /* LLVM pointer to elem in an IR space */
const char *em_keep_str(Em *e, const char *s, size_t len); /* a copy in the emitter's arena */
const char *em_ll_val(Em *e, IrRef v);             /* value text of a ref */
const char *em_ll_const(Em *e, IrType t, int64_t bits); /* literal of a constant */
void em_ll_ins(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* one instruction */
int em_ll_tmp(Em *e);                              /* a new %tN number */
void em_ll_declare(Em *e, const char *name, const char *decl); /* once per module */
void em_ll_fail(Em *e, IrRef v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* LLVM intrinsic type suffix: f32, f64, i32, v2f32, ... */
const char *em_ll_mangle(Em *e, IrType t);

/* Short accessors for the lowering code. */
static inline const IrInst *I(Em *e, IrRef v) { return &e->f->insts[v]; }
static inline const IrRef *A(Em *e, IrRef v) { return ir_args(e->f, I(e, v)); }
static inline const int64_t *IM(Em *e, IrRef v) { return ir_imms(e->f, I(e, v)); }
static inline IrType TY(Em *e, IrRef v) { return I(e, v)->type; }
static inline const char *LT(Em *e, IrType t) { return em_ll_type(e, t); }
static inline const char *VAL(Em *e, IrRef v) { return em_ll_val(e, v); }
static inline const IrTypeRec *REC(Em *e, IrType t) { return ir_trec(e->m, t); }

/* Names and small pieces (emit_text.c; em_split, em_frag_reg: emit_asm.c).
   Returned names live in a ring of 8 buffers: copy one (em_keep) before
   asking for more than a few. */
const char *em_tname(Em *e, int n);       /* "%tN" */
const char *em_tmp(Em *e);                /* a new "%tN" */
int em_var_paired(Em *e, uint32_t var);      /* a 16- or 8-bit variable packed in 32-bit words */
int em_var_per_word(Em *e, uint32_t var);    /* elements a word (2, 4), or 0 */
const char *em_def(Em *e, IrRef v);       /* "%vN" */
char *em_keep(char *buf, size_t n, const char *s);
void em_splat(Em *e, IrType t, const char *scalar, char *out, size_t n); /* scalar or <...> splat */
const char *em_declare(Em *e, const char *name, const char *ret, const char *params);
IrRef em_resolve(Em *e, IrRef v);          /* through aliases */
void em_split(Em *e, IrRef v);             /* struct result -> %vN.0, %vN.1, ... */
const char *em_frag_reg(Em *e, IrRef v, int i, int n); /* register i of a fragment */

/* Inline PTX: writes `<def> = call <ret> asm [sideeffect] "text", "cons"(args) [#0]`. */
typedef struct EmAsm {
  char text[1024];
  char cons[512];
  char args[2048];
  int nout, nin;
} EmAsm;
/* How a value of an IR type sits in a PTX register for inline asm. */
typedef struct EmReg {
  char letter;     /* constraint */
  const char *ll;  /* LLVM type of the asm operand */
  const char *ptx; /* PTX type for ld/st/atom */
  int conv;        /* 0 as is, 1 zext/trunc via i16, 2 half<->i16 bitcast, 3 ptr<->i64 */
} EmReg;

void em_asm_text(EmAsm *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void em_asm_cons(EmAsm *a, const char *c);
void em_asm_out(EmAsm *a, char letter);
void em_asm_in(Em *e, EmAsm *a, char letter, const char *ll_type, const char *val);
/* flags: 1 sideeffect, 2 convergent, 4 memory clobber; dst NULL for no result. */
void em_asm_call(Em *e, EmAsm *a, const char *dst, const char *ret, int flags);
void em_asm_regs(EmAsm *a, int first, int n, int braced); /* "$0" or "{$0, $1}" */
void em_asm_addr(Em *e, EmAsm *a, IrRef p);           /* a pointer operand: r (shared) or l */
long long em_asm_addr_split(Em *e, EmAsm *a, IrRef p); /* same, a constant byte offset split off */
long long em_index_split(Em *e, IrRef idx, char *out, size_t n); /* index = out + constant (returned) */
EmReg em_asm_reg(Em *e, IrType t);
const char *em_asm_to_reg(Em *e, EmReg r, IrType t, const char *val);
void em_asm_from_reg(Em *e, EmReg r, IrType t, const char *regval, const char *dst);
const char *em_ptx_space(int space); /* ".global", ".shared", ... "" for generic */

/* Promoted local variables (emit_ssa.c). Slots are elements, or 32-bit
   words of packed variables (em_var_per_word). */
int em_pr_begin(Em *e);
void em_pr_end(Em *e);
int em_pr_is(Em *e, uint32_t var);
const char *em_pr_keep(Em *e, const char *s);
const char *em_pr_get(Em *e, uint32_t var, long long slot);
void em_pr_set(Em *e, uint32_t var, long long slot, const char *val);
void em_pr_edge(Em *e, EmEdges *j); /* the current block's end (unless terminated) */
void em_pr_edge_from(Em *e, EmEdges *j, const char *label, const char **state);
const char **em_pr_snap(Em *e);
void em_pr_restore(Em *e, const char **state);
void em_pr_join(Em *e, EmEdges *j);
void em_pr_loop_open(Em *e, EmCtl *c, IrRef v, const char *pre_label);
const char **em_pr_header_state(Em *e, EmCtl *c);
void em_pr_loop_close(Em *e, EmCtl *c, EmEdges *back);
void em_pr_ctl_free(EmCtl *c);
/* Split vectors (emit_ssa.c). */
void em_sv_plan(Em *e);
int em_sv_is(Em *e, IrRef v);
int em_sv_wanted(Em *e, IrRef v); /* a vector no use needs whole */
void em_sv_set(Em *e, IrRef v, const char *const *texts, int n, int words);
const char *em_sv_elem(Em *e, IrRef v, int i);
const char *em_sv_build(Em *e, IrRef v);
int em_sv_pack(Em *e, IrRef v);
int em_sv_bitcast(Em *e, IrRef v);
int em_sv_extract(Em *e, IrRef v);

/* Lowers one body op (not control flow): emit_ops.c for values, casts,
   aggregates, calls; emit_mem.c for memory, synchronisation, warp and
   tensor-core ops (em_mem_op returns 0 for an op it does not lower). */
void em_op(Em *e, IrRef v);
int em_mem_op(Em *e, IrRef v);

/* The Hopper parts' lowerings (each returns 0 for an op it does not lower):
   the warpgroup MMA (emit_wgmma.c), the bulk tensor engine and bulk copies
   (emit_tma.c), mbarriers, fences, clusters, DSMEM, setmaxnreg (emit_sync90.c). */
int em_wgmma_op(Em *e, IrRef v);
int em_tma_op(Em *e, IrRef v);
int em_sync90_op(Em *e, IrRef v);

#endif
