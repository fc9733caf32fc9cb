/* ir_ops.c: the op table of ir_ops.h expanded into data, and its queries.
 *
 * Everything that needs to know about an op reads ir_op_info; the enumerations
 * of the immediates are expanded here into name arrays so that the printer,
 * the Lua side and error messages name them the same way. */
#include <string.h>

#include "ir_impl.h"

/* The fl column is written with these short names. */
#define PURE IR_OPF_PURE
#define HOIST IR_OPF_HOIST
#define COMM IR_OPF_COMM
#define TERM IR_OPF_TERM
#define REGION IR_OPF_REGION
#define MEM IR_OPF_MEM
#define SIDE IR_OPF_SIDE
#define CONV IR_OPF_CONV
#define INTERNAL IR_OPF_INTERNAL

const IrOpInfo ir_op_info[IR_OP__COUNT] = {
#define IR_OP_ROW(id, name, amin, amax, imms, res, chk, fl, feat, low, ll, doc)                         \
  [IR_OP_##id] = {name, amin, amax, (uint8_t)(sizeof(imms) - 1), imms, IR_RES_##res, IR_CHK_##chk, \
                  IR_LOW_##low, (uint16_t)(fl), CL_FEAT_##feat, ll, doc},
    IR_OPS(IR_OP_ROW)
#undef IR_OP_ROW
};

#undef PURE
#undef HOIST
#undef COMM
#undef TERM
#undef REGION
#undef MEM
#undef SIDE
#undef CONV
#undef INTERNAL

/* --- names of the immediates' enumerations ---------------------------------------------------------------- */
#define IR_NAME2(id, name) name,
#define IR_NAME_TIMER(id, name, bits, reg) name,
#define IR_NAME_SREG(id, name, reg, intr, feat) name,
#define IR_NAME_SHAPE(id, name, m, n, k) name,
#define IR_NAME_MT(id, name, bits) name,
#define IR_NAME_FLAG(id, name, bit) name,
static const char *const names_ICMP[] = {IR_ICMP_PREDS(IR_NAME2)};
static const char *const names_FCMP[] = {IR_FCMP_PREDS(IR_NAME2)};
static const char *const names_ROUND[] = {IR_ROUNDINGS(IR_NAME2)};
static const char *const names_ORDER[] = {IR_ORDERS(IR_NAME2)};
static const char *const names_SCOPE[] = {IR_SCOPES(IR_NAME2)};
static const char *const names_CACHE[] = {IR_CACHES(IR_NAME2)};
static const char *const names_REDOP[] = {IR_REDOPS(IR_NAME2)};
static const char *const names_SHFL[] = {IR_SHFL_MODES(IR_NAME2)};
static const char *const names_VOTE[] = {IR_VOTE_MODES(IR_NAME2)};
static const char *const names_FENCE[] = {IR_FENCE_SEMS(IR_NAME2)};
static const char *const names_BAR[] = {IR_BAR_MODES(IR_NAME2)};
static const char *const names_TIMER[] = {IR_TIMERS(IR_NAME_TIMER)};
static const char *const names_SREG[] = {IR_SREGS(IR_NAME_SREG)};
static const char *const names_MMASHAPE[] = {IR_MMA_SHAPES(IR_NAME_SHAPE)};
static const char *const names_MMATYPE[] = {IR_MMA_TYPES(IR_NAME_MT)};
/* Flags are bits: names_FLAG[i] is the name of bit i. */
static const char *const names_FLAG[] = {IR_FLAGS(IR_NAME_FLAG)};

const char *const ir_mma_type_names[IR_MT__COUNT] = {IR_MMA_TYPES(IR_NAME_MT)};
const int ir_mma_type_bits[IR_MT__COUNT] = {
#define IR_BITS_MT(id, name, bits) bits,
    IR_MMA_TYPES(IR_BITS_MT)
#undef IR_BITS_MT
};

const IrSregInfo ir_sreg_info[IR_SREG__COUNT] = {
#define IR_SREG_ROW(id, name, reg, intr, feat) {name, reg, intr, CL_FEAT_##feat},
    IR_SREGS(IR_SREG_ROW)
#undef IR_SREG_ROW
};
const IrTimerInfo ir_timer_info[IR_TIMER__COUNT] = {
#define IR_TIMER_ROW(id, name, bits, reg) {name, bits, reg},
    IR_TIMERS(IR_TIMER_ROW)
#undef IR_TIMER_ROW
};

#define names_NONE NULL
/* the number of names of each enumeration */
#define count_ICMP IR_ICMP__COUNT
#define count_FCMP IR_FCMP__COUNT
#define count_ROUND IR_ROUND__COUNT
#define count_ORDER IR_ORDER__COUNT
#define count_SCOPE IR_SCOPE__COUNT
#define count_CACHE IR_CACHE__COUNT
#define count_REDOP IR_REDOP__COUNT
#define count_SHFL IR_SHFL__COUNT
#define count_VOTE IR_VOTE__COUNT
#define count_FENCE IR_FENCE__COUNT
#define count_BAR IR_BAR__COUNT
#define count_TIMER IR_TIMER__COUNT
#define count_SREG IR_SREG__COUNT
#define count_MMASHAPE IR_MMA__COUNT
#define count_MMATYPE IR_MT__COUNT
#define count_FLAG ((int)(sizeof names_FLAG / sizeof *names_FLAG))
#define count_NONE 0
static const IrImmKind imm_kinds[] = {
#define IR_KIND_ROW(letter, what, table, omit) {letter, what, names_##table, count_##table, omit},
    IR_IMM_KINDS(IR_KIND_ROW)
#undef IR_KIND_ROW
};

const IrImmKind *ir_imm_kind(char letter) {
  for (size_t i = 0; i < sizeof imm_kinds / sizeof *imm_kinds; i++)
    if (imm_kinds[i].letter == letter) return &imm_kinds[i];
  return NULL;
}

/* --- queries ---------------------------------------------------------------------------------------------- */
static int op_ok(int op) { return op >= 0 && op < IR_OP__COUNT; }

const char *ir_op_name(int op) { return op_ok(op) ? ir_op_info[op].name : NULL; }
const char *ir_op_imms(int op) { return op_ok(op) ? ir_op_info[op].imms : NULL; }
const char *ir_op_doc(int op) { return op_ok(op) ? ir_op_info[op].doc : NULL; }
unsigned ir_op_flags(int op) { return op_ok(op) ? ir_op_info[op].flags : 0; }
int ir_op_feature(int op) { return op_ok(op) ? ir_op_info[op].feat : CL_FEAT_NONE; }

static const char *const lowering_names[] = {
#define IR_LOW_NAME(id) #id,
    IR_LOWERINGS(IR_LOW_NAME)
#undef IR_LOW_NAME
};
const char *ir_op_lowering(int op) { return op_ok(op) ? lowering_names[ir_op_info[op].low] : NULL; }

/* --- the other enumerations, by name (for Lua) -------------------------------------------------------------- */
static const char *const space_names[] = {
#define IR_SPACE_NAME(id, name, as) name,
    IR_SPACES(IR_SPACE_NAME)
#undef IR_SPACE_NAME
};
static const struct { const char *name; int arity; } attr_rows[] = {
#define IR_ATTR_ROW(id, name, n) {name, n},
    IR_ATTRS(IR_ATTR_ROW)
#undef IR_ATTR_ROW
};
static const char *const option_names[] = {
#define IR_OPTION_NAME(id, name) name,
    IR_OPTIONS(IR_OPTION_NAME)
#undef IR_OPTION_NAME
};
static const struct { const char *name; int storage; } scalar_rows[] = {
    {NULL, 0},
#define IR_SCALAR_NAME(id, name, bits, ll, storage) {name, storage},
    IR_SCALARS(IR_SCALAR_NAME)
#undef IR_SCALAR_NAME
};
static const char *const type_kind_names[] = {
#define IR_TK_NAME(id, name) name,
    IR_TYPE_KINDS(IR_TK_NAME)
#undef IR_TK_NAME
};
const char *ir_type_kind_name(int i) { return i >= 0 && i < IR_TK__COUNT ? type_kind_names[i] : NULL; }
const char *ir_space_name(int i) { return i >= 0 && i < IR_SPACE__COUNT ? space_names[i] : NULL; }
const char *ir_attr_name(int i) { return i >= 0 && i < IR_ATTR__COUNT ? attr_rows[i].name : NULL; }
int ir_attr_arity(int i) { return i >= 0 && i < IR_ATTR__COUNT ? attr_rows[i].arity : -1; }
const char *ir_option_name(int i) { return i >= 0 && i < IR_OPT__COUNT ? option_names[i] : NULL; }
const char *ir_scalar_name(int i) { return i >= 1 && i < IR_T__NSCALAR ? scalar_rows[i].name : NULL; }
int ir_scalar_storage_only(int i) { return i >= 1 && i < IR_T__NSCALAR ? scalar_rows[i].storage : 0; }

/* The lowest compute capability * 10 of a target that has the op (0: every
   target; -1: no op). What the old sm column said; the feature says more. */
int ir_op_min_sm(int op) {
  if (!op_ok(op)) return -1;
  if (ir_op_info[op].feat == CL_FEAT_NONE) return 0;
  int best = -1;
  for (int i = 0; i < cl_target_count(); i++) {
    const ClTarget *t = cl_target_at(i);
    if (cl_target_has(t, (ClFeature)ir_op_info[op].feat) && (best < 0 || t->cc < best)) best = t->cc;
  }
  return best;
}

int ir_op_find(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < IR_OP__COUNT; i++)
    if (strcmp(ir_op_info[i].name, name) == 0) return i;
  return -1;
}

int ir_op_arity(int op, int *amin, int *amax) {
  if (!op_ok(op)) return -1;
  if (amin) *amin = ir_op_info[op].amin;
  if (amax) *amax = ir_op_info[op].amax;
  return ir_op_info[op].nimm;
}

int ir_imm_find(char kind, const char *name) {
  const IrImmKind *k = ir_imm_kind(kind);
  if (!k || !k->names || !name) return -1;
  if (kind == 'F') { /* a flag name gives its bit */
    for (int i = 0; i < k->count; i++)
      if (strcmp(k->names[i], name) == 0) return 1 << i;
    return -1;
  }
  for (int i = 0; i < k->count; i++)
    if (strcmp(k->names[i], name) == 0) return i;
  /* the default of a kind whose 0 is unnamed ("") is also "default"/"none" */
  if (k->count > 0 && k->names[0][0] == '\0' && (strcmp(name, "default") == 0 || strcmp(name, "none") == 0))
    return 0;
  return -1;
}

const char *ir_imm_name(char kind, int64_t value) {
  const IrImmKind *k = ir_imm_kind(kind);
  if (!k || !k->names) return NULL;
  if (kind == 'F') {
    for (int i = 0; i < k->count; i++)
      if (value == (int64_t)1 << i) return k->names[i];
    return NULL;
  }
  return (value >= 0 && value < k->count) ? k->names[value] : NULL;
}

int ir_imm_count(char kind) {
  const IrImmKind *k = ir_imm_kind(kind);
  return k ? k->count : -1;
}

const char *ir_imm_kind_name(char kind) {
  const IrImmKind *k = ir_imm_kind(kind);
  return k ? k->what : NULL;
}

int ir_mma_shape_mnk(int shape, int *m, int *n, int *k) {
  static const int mnk[][3] = {
#define IR_MNK(id, name, M, N, K) {M, N, K},
      IR_MMA_SHAPES(IR_MNK)
#undef IR_MNK
  };
  if (shape < 0 || shape >= IR_MMA__COUNT) return -1;
  if (m) *m = mnk[shape][0];
  if (n) *n = mnk[shape][1];
  if (k) *k = mnk[shape][2];
  return 0;
}
