/* ir_emit.h: state shared by the NVVM emitter's two files: ir_emit_nvvm.c (the
 * module, functions, control flow, values, metadata) and ir_emit_ops.c (the
 * lowering of each op family to LLVM 7 instructions or inline PTX).
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
#ifndef IR_EMIT_H
#define IR_EMIT_H

#include "ir_impl.h"

/* An edge into a block where control flow meets, with the values of the
 * promoted variables on it (ir_emit_promote.c). */
typedef struct IrEdge {
  char label[40];
  const char **state; /* per slot */
} IrEdge;
typedef struct IrEdges {
  IrEdge *edge;
  uint32_t n, cap;
} IrEdges;

typedef struct IrCtl {
  int kind;   /* IR_OP_FOR, IR_OP_IF, IR_OP_WHILE */
  int id;     /* label number */
  IrRef iv;   /* for: the induction variable */
  IrRef step; /* for: its step */
  int unroll;
  int has_else;
  /* promoted variables: */
  IrEdges back, exits;  /* loops: edges to the latch (for) or the header (while); to the exit */
  IrEdges ends;         /* if: the ends of its arms */
  const char **at_if;   /* if: the state at the branch */
  const char **pre;     /* loops: the state entering the header, from pre_label */
  char pre_label[40];
  size_t phi_at;        /* loops: where the header's phis go in the body text */
  uint32_t *hslot;      /* loops: the slots with a header phi, and its name */
  const char **hname;
  uint32_t nh;
} IrCtl;

typedef struct IrEmit {
  IrModule *m;
  IrFunc *f;
  int sm, fast, ftz, line_info;
  ClBuf *out;
  ClBuf globals, decls, funcs, meta, entry, body;
  /* declared names (intrinsics, libdevice), a small set */
  const char **declared;
  uint32_t ndeclared, capdeclared;
  int tmp, label, strings;
  int terminated;
  IrCtl *ctl;
  uint32_t nctl, capctl;
  IrRef *alias;        /* per ref of the function: the ref it stands for, or 0 */
  IrRef *field_src;    /* per ref: an extract that names field field_idx of a split value */
  uint32_t *field_idx;
  uint8_t *vflags;     /* per ref: IR_EV_* */
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
  /* local variables promoted to SSA values (ir_emit_promote.c) */
  uint32_t *pr_base;   /* per variable: its first slot, UINT32_MAX when it stays in memory */
  uint32_t pr_nslot;
  const char **pr_cur; /* per slot: its value now (text) */
  const char **pr_type; /* per slot: its LLVM type */
  uint32_t *pr_mark, pr_stamp;
  const char **pr_vtext; /* per ref: the value text a var.load or an extract stands for */
  const char ***sv_el;  /* per ref: the element (or word) texts of a split vector */
  uint16_t *sv_n;       /* how many */
  uint8_t *sv_words;    /* 1: they are the 32-bit words of a vector of narrower elements */
} IrEmit;

/* vflags bits */
#define IR_EV_SPLIT 1    /* its fields exist as %vN.i */
#define IR_EV_NEED_AGG 2 /* some use needs the aggregate value itself */
#define IR_EV_VNEED 4    /* a vector some use needs whole (else it may stay split) */

/* Text helpers (ir_emit_nvvm.c). */
const char *ir_ll_type(IrEmit *e, IrType t);           /* LLVM type of an IR type */
const char *ir_ll_val(IrEmit *e, IrRef v);             /* value text of a ref */
const char *ir_ll_const(IrEmit *e, IrType t, int64_t bits); /* literal of a constant */
void ir_ll_ins(IrEmit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* one instruction */
int ir_ll_tmp(IrEmit *e);                              /* a new %tN number */
void ir_ll_declare(IrEmit *e, const char *name, const char *decl); /* once per module */
void ir_ll_fail(IrEmit *e, IrRef v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* LLVM intrinsic type suffix: f32, f64, i32, v2f32, ... */
const char *ir_ll_mangle(IrEmit *e, IrType t);

/* Short accessors for the lowering code. */
static inline const IrInst *I(IrEmit *e, IrRef v) { return &e->f->insts[v]; }
static inline const IrRef *A(IrEmit *e, IrRef v) { return ir_args(e->f, I(e, v)); }
static inline const int64_t *IM(IrEmit *e, IrRef v) { return ir_imms(e->f, I(e, v)); }
static inline IrType TY(IrEmit *e, IrRef v) { return I(e, v)->type; }
static inline const char *LT(IrEmit *e, IrType t) { return ir_ll_type(e, t); }
static inline const char *VAL(IrEmit *e, IrRef v) { return ir_ll_val(e, v); }
static inline const IrTypeRec *REC(IrEmit *e, IrType t) { return ir_trec(e->m, t); }

/* Names and small pieces (ir_emit_asm.c). Returned names live in a ring of 8
   buffers: copy one (ir_e_keep) before asking for more than a few. */
const char *ir_e_tname(IrEmit *e, int n);       /* "%tN" */
const char *ir_e_tmp(IrEmit *e);                /* a new "%tN" */
int ir_var_paired(IrEmit *e, uint32_t var);      /* a 16- or 8-bit variable packed in 32-bit words */
int ir_var_per_word(IrEmit *e, uint32_t var);    /* elements a word (2, 4), or 0 */
const char *ir_e_def(IrEmit *e, IrRef v);       /* "%vN" */
char *ir_e_keep(char *buf, size_t n, const char *s);
void ir_e_splat(IrEmit *e, IrType t, const char *scalar, char *out, size_t n); /* scalar or <...> splat */
const char *ir_e_declare(IrEmit *e, const char *name, const char *ret, const char *params);
IrRef ir_e_resolve(IrEmit *e, IrRef v);          /* through aliases */
void ir_e_split(IrEmit *e, IrRef v);             /* struct result -> %vN.0, %vN.1, ... */
const char *ir_e_frag_reg(IrEmit *e, IrRef v, int i, int n); /* register i of a fragment */

/* Inline PTX: writes `<def> = call <ret> asm [sideeffect] "text", "cons"(args) [#0]`. */
typedef struct IrAsm {
  char text[1024];
  char cons[512];
  char args[2048];
  int nout, nin;
} IrAsm;
/* How a value of an IR type sits in a PTX register for inline asm. */
typedef struct IrReg {
  char letter;     /* constraint */
  const char *ll;  /* LLVM type of the asm operand */
  const char *ptx; /* PTX type for ld/st/atom */
  int conv;        /* 0 as is, 1 zext/trunc via i16, 2 half<->i16 bitcast, 3 ptr<->i64 */
} IrReg;

void ir_asm_text(IrAsm *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ir_asm_cons(IrAsm *a, const char *c);
void ir_asm_out(IrAsm *a, char letter);
void ir_asm_in(IrEmit *e, IrAsm *a, char letter, const char *ll_type, const char *val);
/* flags: 1 sideeffect, 2 convergent, 4 memory clobber; dst NULL for no result. */
void ir_asm_call(IrEmit *e, IrAsm *a, const char *dst, const char *ret, int flags);
void ir_asm_regs(IrAsm *a, int first, int n, int braced); /* "$0" or "{$0, $1}" */
void ir_asm_addr(IrEmit *e, IrAsm *a, IrRef p);           /* a pointer operand: r (shared) or l */
long long ir_asm_addr_split(IrEmit *e, IrAsm *a, IrRef p); /* same, a constant byte offset split off */
long long ir_index_split(IrEmit *e, IrRef idx, char *out, size_t n); /* index = out + constant (returned) */
IrReg ir_asm_reg(IrEmit *e, IrType t);
const char *ir_asm_to_reg(IrEmit *e, IrReg r, IrType t, const char *val);
void ir_asm_from_reg(IrEmit *e, IrReg r, IrType t, const char *regval, const char *dst);
const char *ir_ptx_space(int space); /* ".global", ".shared", ... "" for generic */

/* Promoted local variables (ir_emit_promote.c). Slots are elements, or 32-bit
   words of packed variables (ir_var_per_word). */
int ir_pr_begin(IrEmit *e);
void ir_pr_end(IrEmit *e);
int ir_pr_is(IrEmit *e, uint32_t var);
const char *ir_pr_keep(IrEmit *e, const char *s);
const char *ir_pr_get(IrEmit *e, uint32_t var, long long slot);
void ir_pr_set(IrEmit *e, uint32_t var, long long slot, const char *val);
void ir_pr_edge(IrEmit *e, IrEdges *j); /* the current block's end (unless terminated) */
void ir_pr_edge_from(IrEmit *e, IrEdges *j, const char *label, const char **state);
const char **ir_pr_snap(IrEmit *e);
void ir_pr_restore(IrEmit *e, const char **state);
void ir_pr_join(IrEmit *e, IrEdges *j);
void ir_pr_loop_open(IrEmit *e, IrCtl *c, IrRef v, const char *pre_label);
const char **ir_pr_header_state(IrEmit *e, IrCtl *c);
void ir_pr_loop_close(IrEmit *e, IrCtl *c, IrEdges *back);
void ir_pr_ctl_free(IrCtl *c);
/* Split vectors (ir_emit_promote.c). */
void ir_sv_plan(IrEmit *e);
int ir_sv_is(IrEmit *e, IrRef v);
int ir_sv_wanted(IrEmit *e, IrRef v); /* a vector no use needs whole */
void ir_sv_set(IrEmit *e, IrRef v, const char *const *texts, int n, int words);
const char *ir_sv_elem(IrEmit *e, IrRef v, int i);
const char *ir_sv_build(IrEmit *e, IrRef v);
int ir_sv_pack(IrEmit *e, IrRef v);
int ir_sv_bitcast(IrEmit *e, IrRef v);
int ir_sv_extract(IrEmit *e, IrRef v);

/* Lowers one body op (not control flow): ir_emit_ops.c for values, casts,
   aggregates, calls; ir_emit_mem.c for memory, synchronisation, warp and
   tensor-core ops (ir_emit_mem_op returns 0 for an op it does not lower). */
void ir_emit_op(IrEmit *e, IrRef v);
int ir_emit_mem_op(IrEmit *e, IrRef v);

#endif
