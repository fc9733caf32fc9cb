/* ir_ops.h: THE op table of the cutelua IR, and the enumerations its immediates use.
 *
 * Every op is one row of IR_OPS. The builder, the checker (ir_check.c), the
 * printer, the emitter and the Lua side (through op_count/op_name/op_find/op_doc)
 * all read this table, so an op cannot exist in one place and not another.
 * Adding an op is: one row here, its operand rule in ir_check.c (often an
 * existing family) and its lowering in src/emit (often an existing family,
 * e.g. IR_LOW_ASM0 needs nothing but the PTX text in the `ll` column).
 *
 * Columns of IR_OPS:
 *   ID     enum suffix: IR_OP_<ID>
 *   name   printed name, also what Lua passes to op_find
 *   amin   fewest value operands
 *   amax   most value operands (255: variadic)
 *   imms   one letter per immediate (see IR_IMM_KINDS); their count is fixed
 *   res    result-type rule, IR_RES_<res> (ir_check.c)
 *   chk    operand rule family, IR_CHK_<chk> (ir_check.c)
 *   fl     properties, IR_OPF_* (PURE ops fold and are reused by CSE)
 *   feat   the target feature the op needs (ClFeature of src/target/target.h:
 *          STMATRIX, WGMMA, ...); NONE = every target has it. The verifier
 *          refuses the op on a target that lacks it, naming the targets that have it.
 *   low    lowering family, IR_LOW_<low> (ir_emit_*.c)
 *   ll     the family's argument: LLVM mnemonic, libdevice name, PTX text
 *   doc    operands and immediates, for docs and Lua error messages
 *
 * Immediates are int64 values stored with the op. Enumerated kinds print by
 * name (`icmp slt`, `load.acquire.gpu`); numbers, strings, variables and
 * functions print after the operands. */
#ifndef IR_OPS_H
#define IR_OPS_H

/* Op properties (the fl column). */
#define IR_OPF_PURE 0x01u     /* no side effect, no memory: folds, CSE reuses it */
#define IR_OPF_HOIST 0x02u    /* lives in the function prologue, visible everywhere */
#define IR_OPF_COMM 0x04u     /* commutative in its two operands */
#define IR_OPF_TERM 0x08u     /* ends its region (nothing may follow it there) */
#define IR_OPF_REGION 0x10u   /* opens/continues/closes a structured region */
#define IR_OPF_MEM 0x20u      /* reads or writes memory */
#define IR_OPF_SIDE 0x40u     /* has an effect besides its result */
#define IR_OPF_CONV 0x80u     /* warp-synchronous: all lanes of the warp take part */
#define IR_OPF_INTERNAL 0x100u /* made only by dedicated builder calls, not ir_op() */

/* clang-format off */
#define IR_OPS(X) \
/* ID        name               amin amax imms      res       chk        fl                         feat      low       ll   doc */ \
/* --- values of the function prologue ----------------------------------------------------------------------- */ \
X(CONST,     "const",           0, 0,   "k",      GIVEN,    CONST,     PURE|HOIST,                NONE,     CONST,    "",  "a constant of a scalar type; imm: the value (integer, or a double for float types)") \
X(UNDEF,     "undef",           0, 0,   "",       GIVEN,    ANYVAL,    PURE|HOIST,                NONE,     CONST,    "",  "an undefined value of any type (seed of insert/pack chains)") \
X(PARAM,     "param",           0, 0,   "nn",     GIVEN,    PARAM,     HOIST|INTERNAL,            NONE,     NONE,     "",  "function parameter; imms: index (0-based), by-value blob size (0: a plain value)") \
X(SMEM,      "smem",            0, 0,   "nn",     GIVEN,    SMEM,      HOIST,                     NONE,     SMEM,     "",  "a new static shared array; imms: bytes, alignment; type ptr<T, shared, A>") \
X(DSMEM,     "smem.dyn",        0, 0,   "n",      GIVEN,    SMEM,      PURE|HOIST,                NONE,     DSMEM,    "",  "base of the dynamic shared memory; imm: alignment; type ptr<T, shared, A>") \
/* --- integer and float arithmetic -------------------------------------------------------------------------- */ \
X(ADD,       "add",             2, 2,   "",       ARG0,     ARITH,     PURE|COMM,                 NONE,     BIN,      "add", "a + b (integers wrap)") \
X(SUB,       "sub",             2, 2,   "",       ARG0,     ARITH,     PURE,                      NONE,     BIN,      "sub", "a - b") \
X(MUL,       "mul",             2, 2,   "",       ARG0,     ARITH,     PURE|COMM,                 NONE,     BIN,      "mul", "a * b (low half for integers)") \
X(NEG,       "neg",             1, 1,   "",       ARG0,     ARITH,     PURE,                      NONE,     NEG,      "",  "-a") \
X(SDIV,      "sdiv",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "sdiv", "signed a / b, toward zero") \
X(UDIV,      "udiv",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "udiv", "unsigned a / b") \
X(SREM,      "srem",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "srem", "signed remainder (sign of a)") \
X(UREM,      "urem",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "urem", "unsigned remainder") \
X(SMULHI,    "smulhi",          2, 2,   "",       ARG0,     INTW,      PURE|COMM,                 NONE,     MULHI,    "sext", "high half of the signed product (i32, i64)") \
X(UMULHI,    "umulhi",          2, 2,   "",       ARG0,     INTW,      PURE|COMM,                 NONE,     MULHI,    "zext", "high half of the unsigned product (i32, i64)") \
X(FDIV,      "fdiv",            2, 2,   "F",      ARG0,     FLOAT,     PURE,                      NONE,     FDIV,     "",  "a / b, IEEE; flag fast: div.approx (f32)") \
X(SMIN,      "smin",            2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     MINMAX,   "slt", "signed minimum") \
X(SMAX,      "smax",            2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     MINMAX,   "sgt", "signed maximum") \
X(UMIN,      "umin",            2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     MINMAX,   "ult", "unsigned minimum") \
X(UMAX,      "umax",            2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     MINMAX,   "ugt", "unsigned maximum") \
X(FMIN,      "fmin",            2, 2,   "",       ARG0,     FLOATS,    PURE|COMM,                 NONE,     FMINMAX,  "min", "minimum; a NaN operand yields the other (min.f32)") \
X(FMAX,      "fmax",            2, 2,   "",       ARG0,     FLOATS,    PURE|COMM,                 NONE,     FMINMAX,  "max", "maximum; a NaN operand yields the other") \
X(ABS,       "abs",             1, 1,   "",       ARG0,     ARITHS,    PURE,                      NONE,     ABS,      "",  "|a|") \
X(FMA,       "fma",             3, 3,   "",       ARG0,     FLOAT,     PURE,                      NONE,     FMA,      "",  "a * b + c, rounded once") \
/* --- comparisons and select -------------------------------------------------------------------------------- */ \
X(ICMP,      "icmp",            2, 2,   "P",      BOOL,     ICMP,      PURE,                      NONE,     ICMP,     "",  "integer or pointer comparison; imm: predicate (eq ne slt sle sgt sge ult ule ugt uge)") \
X(FCMP,      "fcmp",            2, 2,   "Q",      BOOL,     FCMP,      PURE,                      NONE,     FCMP,     "",  "float comparison; imm: predicate (o..: ordered, u..: true on NaN)") \
X(SELECT,    "select",          3, 3,   "",       ARG1,     SELECT,    PURE,                      NONE,     SELECT,   "",  "c ? a : b") \
/* --- conversions ------------------------------------------------------------------------------------------- */ \
X(CVT,       "cvt",             1, 1,   "RF",     GIVEN,    CVT,       PURE,                      NONE,     CVT,      "s", "numeric conversion, integers signed; imms: rounding, flags (sat)") \
X(CVTU,      "cvtu",            1, 1,   "RF",     GIVEN,    CVT,       PURE,                      NONE,     CVT,      "u", "numeric conversion, integers unsigned; imms: rounding, flags (sat)") \
X(BITCAST,   "bitcast",         1, 1,   "",       GIVEN,    BITCAST,   PURE,                      NONE,     BITCAST,  "",  "the same bits as another type of the same size") \
X(PTRTOINT,  "ptrtoint",        1, 1,   "",       GIVEN,    PTRTOINT,  PURE,                      NONE,     PTRTOINT, "",  "the address of a pointer as i32 or i64") \
X(INTTOPTR,  "inttoptr",        1, 1,   "",       GIVEN,    INTTOPTR,  PURE,                      NONE,     INTTOPTR, "",  "an i64 (or i32 for shared/local) address as a pointer") \
X(PTRCAST,   "ptrcast",         1, 1,   "",       GIVEN,    PTRCAST,   PURE,                      NONE,     PTRCAST,  "",  "another element type, alignment or address space (to or from generic)") \
/* --- bit operations ---------------------------------------------------------------------------------------- */ \
X(AND,       "and",             2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     IBIN,     "and", "a & b (i1 too)") \
X(OR,        "or",              2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     IBIN,     "or",  "a | b") \
X(XOR,       "xor",             2, 2,   "",       ARG0,     INT,       PURE|COMM,                 NONE,     IBIN,     "xor", "a ^ b") \
X(NOT,       "not",             1, 1,   "",       ARG0,     INT,       PURE,                      NONE,     NOT,      "",  "~a") \
X(SHL,       "shl",             2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "shl", "a << b; b must be below the bit width") \
X(LSHR,      "lshr",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "lshr", "logical a >> b") \
X(ASHR,      "ashr",            2, 2,   "",       ARG0,     INT,       PURE,                      NONE,     IBIN,     "ashr", "arithmetic a >> b") \
X(POPC,      "popc",            1, 1,   "",       I32,      INTW,      PURE,                      NONE,     BITCOUNT, "llvm.ctpop", "number of set bits, as i32") \
X(CLZ,       "clz",             1, 1,   "",       I32,      INTW,      PURE,                      NONE,     BITCOUNT, "llvm.ctlz", "number of leading zero bits, as i32") \
X(BREV,      "brev",            1, 1,   "",       ARG0,     INTW,      PURE,                      NONE,     BITCOUNT, "llvm.bitreverse", "bits reversed") \
X(PRMT,      "prmt",            3, 3,   "",       ARG0,     PRMT,      PURE,                      NONE,     PRMT,     "",  "bytes of b:a picked by selector c (PTX prmt.b32), all i32") \
/* --- math (f32, f64); flag fast: PTX approximations for f32 ------------------------------------------------ */ \
X(SQRT,      "sqrt",            1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "sqrt|sqrt.approx.f32", "square root") \
X(RSQRT,     "rsqrt",           1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "rsqrt|rsqrt.approx.f32", "1 / sqrt(a)") \
X(RCP,       "rcp",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "|rcp.approx.f32", "1 / a") \
X(EXP2,      "exp2",            1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "exp2|ex2.approx.f32", "2^a") \
X(LOG2,      "log2",            1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "log2|lg2.approx.f32", "log2(a)") \
X(EXP,       "exp",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "exp|__nv_fast_expf", "e^a") \
X(LOG,       "log",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "log|__nv_fast_logf", "ln(a)") \
X(SIN,       "sin",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "sin|sin.approx.f32", "sine") \
X(COS,       "cos",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "cos|cos.approx.f32", "cosine") \
X(TANH,      "tanh",            1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "tanh|tanh.approx.f32", "hyperbolic tangent (fast: sm_75+)") \
X(ERF,       "erf",             1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "erf|", "error function") \
X(FLOOR,     "floor",           1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "floor|", "round toward -inf") \
X(CEIL,      "ceil",            1, 1,   "F",      ARG0,     MATH,      PURE,                      NONE,     MATH,     "ceil|", "round toward +inf") \
/* --- addresses and memory ---------------------------------------------------------------------------------- */ \
X(GEP,       "gep",             2, 2,   "",       GEP,      GEP,       PURE,                      NONE,     GEP,      "",  "p + i elements (i: i32 or i64); type may narrow the alignment") \
X(LOAD,      "load",            1, 1,   "OSC",    LOAD,     LOAD,      MEM,                       NONE,     LOAD,     "",  "*p as T or <n x T>; imms: order (weak volatile relaxed acquire), scope, cache hint") \
X(STORE,     "store",           2, 2,   "OSC",    NONE,     STORE,     MEM|SIDE,                  NONE,     STORE,    "",  "*p = v; imms: order (weak volatile relaxed release), scope, cache hint") \
X(VLOAD,     "var.load",        0, 0,   "vn",     VAR,      VAR,       MEM|INTERNAL,              NONE,     VAR,      "",  "element of a local variable; imms: variable, static index") \
X(VSTORE,    "var.store",       1, 1,   "vn",     NONE,     VAR,       MEM|SIDE|INTERNAL,         NONE,     VAR,      "",  "v into a local variable; imms: variable, static index") \
X(VLOADX,    "var.loadx",       1, 1,   "v",      VAR,      VAR,       MEM|INTERNAL,              NONE,     VAR,      "",  "element i (an operand) of a local variable; imm: variable") \
X(VSTOREX,   "var.storex",      2, 2,   "v",      NONE,     VAR,       MEM|SIDE|INTERNAL,         NONE,     VAR,      "",  "v into element i (operands i, v) of a local variable; imm: variable") \
X(VLOADV,    "var.loadv",       0, 0,   "vn",     GIVEN,    VAR,       MEM|INTERNAL,              NONE,     VAR,      "",  "consecutive elements of a local variable as a vector <n x T>; imms: variable, first index") \
X(VOPAQUE,   "var.opaque",      0, 0,   "v",      NONE,     VAR,       MEM|SIDE|INTERNAL,         NONE,     VAR,      "",  "an optimisation barrier on a local variable: values computed from it before are not reused after (they are recomputed); imm: variable") \
X(VSTOREV,   "var.storev",      1, 1,   "vn",     NONE,     VAR,       MEM|SIDE|INTERNAL,         NONE,     VAR,      "",  "a vector <n x T> into consecutive elements of a local variable; imms: variable, first index") \
X(ATOM,      "atom",            2, 2,   "AOS",    ARG1,     ATOM,      MEM|SIDE,                  NONE,     ATOM,     "",  "old = *p; *p = old OP v; imms: op, order (relaxed acquire release acq_rel), scope") \
X(CAS,       "atom.cas",        3, 3,   "OS",     ARG1,     CAS,       MEM|SIDE,                  NONE,     CAS,      "",  "old = *p; if old == c then *p = v; operands p, c, v; imms: order, scope") \
/* --- special registers, timers ----------------------------------------------------------------------------- */ \
X(SREG,      "sreg",            0, 0,   "G",      SREG,     SREG,      PURE,                      NONE,     SREG,     "",  "special register; imm: which (tid.x, ctaid.y, laneid, smid, cluster_ctarank, ...)") \
X(TIMER,     "timer",           0, 0,   "W",      TIMER,    NONE,      SIDE,                      NONE,     TIMER,    "",  "clock (i32), clock64, globaltimer (i64)") \
/* --- barriers, fences, warp collectives -------------------------------------------------------------------- */ \
X(BARRIER,   "barrier",         0, 0,   "",       NONE,     NONE,      SIDE|CONV,                 NONE,     CALL0,    "llvm.nvvm.barrier0", "block barrier (bar.sync 0)") \
X(BARNAMED,  "barrier.named",   1, 2,   "B",      NONE,     BARNAMED,  SIDE|CONV,                 NONE,     BARNAMED, "",  "named barrier; operands: id (0-15), thread count (optional); imm: sync or arrive") \
X(SYNCWARP,  "syncwarp",        1, 1,   "",       NONE,     MASK,      SIDE|CONV,                 NONE,     SYNCWARP, "",  "warp barrier over the lanes of a mask") \
X(FENCE,     "fence",           0, 0,   "YS",     NONE,     NONE,      SIDE,                      NONE,     FENCE,    "",  "memory fence; imms: semantics (acq_rel, sc), scope") \
X(SHFL,      "shfl",            3, 3,   "Hn",     ARG1,     SHFL,      CONV,                      NONE,     SHFL,     "",  "warp shuffle; operands: mask, value (i32, f32), lane/delta/xor mask; imms: mode, width (0: 32)") \
X(VOTE,      "vote",            2, 2,   "V",      VOTE,     VOTE,      CONV,                      NONE,     VOTE,     "",  "warp vote; operands: mask, i1; imm: all any uni (i1) or ballot (i32)") \
X(REDUX,     "redux",           2, 2,   "A",      ARG1,     REDUX,     CONV,                      REDUX,    REDUX,    "",  "warp reduction of an i32; operands: mask, value; imm: add min max umin umax and or xor") \
/* --- miscellaneous ----------------------------------------------------------------------------------------- */ \
X(PRINTF,    "printf",          0, 32,  "s",      NONE,     PRINTF,    SIDE,                      NONE,     PRINTF,   "",  "device printf (vprintf); imm: the format string; operands: the values") \
X(TRAP,      "trap",            0, 0,   "",       NONE,     NONE,      SIDE,                      NONE,     CALL0,    "llvm.trap", "abort the kernel") \
X(ASM,       "asm",             0, 255, "ssF",    GIVEN,    ASM,       0,                         NONE,     ASM,      "",  "inline PTX; imms: text ($0.. operands), constraints, flags (sideeffect convergent memory)") \
X(CALL,      "call",            0, 255, "f",      CALL,     CALL,      SIDE,                      NONE,     CALL,     "",  "call a device function; imm: the function") \
/* --- aggregates (vectors, structs) ------------------------------------------------------------------------- */ \
X(EXTRACT,   "extract",         1, 1,   "n",      EXTRACT,  EXTRACT,   PURE,                      NONE,     EXTRACT,  "",  "element i of a vector or struct; imm: i") \
X(INSERT,    "insert",          2, 2,   "n",      ARG0,     INSERT,    PURE,                      NONE,     INSERT,   "",  "a copy of a with element i replaced by v; imm: i") \
X(PACK,      "pack",            1, 255, "",       GIVEN,    PACK,      PURE,                      NONE,     PACK,     "",  "a vector or struct made of the operands") \
/* --- tensor cores and asynchronous copies (sm_75/sm_80/sm_89) ---------------------------------------------- */ \
X(MMA,       "mma",             3, 3,   "MEEEEF", MMA,      MMA,       CONV,                      NONE,     MMA,      "",  "mma.sync row.col D = A*B + C; operands: A, B, C fragments; imms: shape, types of A B C D, flags (sat)") \
X(LDMATRIX,  "ldmatrix",        1, 1,   "nF",     LDMATRIX, LDMATRIX,  MEM|CONV,                  LDMATRIX, LDMATRIX, "",  "ldmatrix m8n8 b16 from a shared pointer; imms: count (1 2 4), flags (trans)") \
X(STMATRIX,  "stmatrix",        2, 2,   "nF",     NONE,     STMATRIX,  MEM|SIDE|CONV,             STMATRIX, STMATRIX, "",  "stmatrix m8n8 b16 to a shared pointer; imms: count (1 2 4), flags (trans)") \
X(CPASYNC,   "cp.async",        2, 3,   "nC",     NONE,     CPASYNC,   MEM|SIDE,                  CP_ASYNC, CPASYNC,  "",  "copy global -> shared; operands: dst, src, source bytes (optional, rest zero-filled); imms: bytes (4 8 16), cache (ca cg)") \
X(CPCOMMIT,  "cp.async.commit", 0, 0,   "",       NONE,     NONE,      SIDE,                      CP_ASYNC, ASM0,     "cp.async.commit_group;", "close a group of cp.async") \
X(CPWAIT,    "cp.async.wait",   0, 0,   "n",      NONE,     CPWAIT,    SIDE,                      CP_ASYNC, CPWAIT,   "",  "wait until at most n groups are pending; imm: n") \
/* --- Hopper (sm_90a) ------------------------------------------------------------------------------------- */ \
X(WGFENCE,   "wgmma.fence",     0, 0,   "",       NONE,     NONE,      SIDE|CONV,                 WGMMA,    ASM0,     "wgmma.fence.sync.aligned;", "order this warpgroup's register accesses before its later wgmma.mma_async (all four warps execute it)") \
/* --- Hopper: the warpgroup MMA (wgmma rows) ------------------------------------------------------------------ */ \
X(WGMMA,     "wgmma.mma_async", 4, 4,   "nEEEn",  GIVEN,    WGMMA,     MEM|SIDE|CONV,             WGMMA,    WGMMA,    "",  "D = A*B + (scale_d ? D : 0), m64nNk(32 bytes), issued asynchronously by a warpgroup; operands: A (an i64 shared-memory descriptor, or {i32 x 4} registers), B (an i64 descriptor), the accumulator (a struct: N/2 f32 or i32, or N/4 i32 holding f16 pairs), scale_d (i1); imms: N, types of A B D, mode (1 A MN-major, 2 B MN-major, 4 negate A, 8 negate B, 16 satfinite); result: the accumulator") \
X(WGCOMMIT,  "wgmma.commit",    0, 0,   "",       NONE,     NONE,      SIDE|CONV,                 WGMMA,    ASM0,     "wgmma.commit_group.sync.aligned;", "close this warpgroup's uncommitted wgmma.mma_async into one wgmma-group") \
X(WGWAIT,    "wgmma.wait",      0, 0,   "n",      NONE,     CPWAIT,    SIDE|CONV,                 WGMMA,    WGWAIT,   "",  "wait until at most n wgmma-groups of this warpgroup are pending; imm: n") \
X(WGFENCEOP, "wgmma.fence_operand", 1, 1, "",     ARG0,     WGFENCEOP, SIDE,                      NONE,     WGFENCEOP, "", "the same f32/i32 registers (a scalar or a struct), kept as they are here: an empty asm with tied operands, so no access of an accumulator moves into a wgmma's asynchronous window") \
/* (end of the wgmma rows) */ \
/* --- Hopper: the bulk tensor engine (TMA) and bulk copies ---------------------------------------------------- */ \
X(TMALOAD,   "tma.load",        4, 8,   "n",      NONE,     TMA,       MEM|SIDE,                  TMA,      TMA,      "",  "cp.async.bulk.tensor global -> shared::cluster, completing on an mbarrier (complete_tx::bytes); operands: dst (shared), descriptor (param/generic/const/global ptr, 64-byte aligned), mbarrier (shared, 8-byte aligned), rank i32 coordinates; imm: rank (1-5)") \
X(TMALOADMC, "tma.load.multicast", 5, 9, "n",      NONE,     TMA,       MEM|SIDE,                  TMA_MULTICAST, TMA, "", "tma.load written into every CTA of a cluster mask (.multicast::cluster); operands: as tma.load, then the 16-bit CTA mask (i16); imm: rank") \
X(TMASTORE,  "tma.store",       3, 7,   "n",      NONE,     TMA,       MEM|SIDE,                  TMA,      TMA,      "",  "cp.async.bulk.tensor shared::cta -> global (bulk_group; clipped at the tensor's edges); operands: descriptor, src (shared), rank i32 coordinates; imm: rank") \
X(TMAREDUCE, "tma.reduce",      3, 7,   "nA",     NONE,     TMA,       MEM|SIDE,                  TMA,      TMA,      "",  "cp.reduce.async.bulk.tensor shared::cta -> global (bulk_group); operands: as tma.store; imms: rank, reduction (add min max inc dec and or xor)") \
X(TMAPREFETCH, "tma.prefetch",  2, 6,   "n",      NONE,     TMA,       MEM|SIDE,                  TMA,      TMA,      "",  "cp.async.bulk.prefetch.tensor of a box into L2; operands: descriptor, rank i32 coordinates; imm: rank") \
X(TMAPFDESC, "tma.prefetch_desc", 1, 1, "",       NONE,     TMA,       MEM|SIDE,                  TMA,      TMA,      "",  "prefetch.tensormap: warm the descriptor cache; operand: descriptor") \
X(BULKLOAD,  "bulk.load",       4, 4,   "",       NONE,     BULK,      MEM|SIDE,                  BULK_COPY, BULK,    "",  "cp.async.bulk global -> shared::cluster, completing on an mbarrier; operands: dst (shared), src (global), bytes (i32, a multiple of 16), mbarrier (shared); addresses 16-byte aligned") \
X(BULKSTORE, "bulk.store",      3, 3,   "",       NONE,     BULK,      MEM|SIDE,                  BULK_COPY, BULK,    "",  "cp.async.bulk shared::cta -> global (bulk_group); operands: dst (global), src (shared), bytes (i32, a multiple of 16)") \
X(BULKPREFETCH, "bulk.prefetch", 2, 2,  "",       NONE,     BULK,      MEM|SIDE,                  BULK_COPY, BULK,    "",  "cp.async.bulk.prefetch.L2 of global bytes; operands: src (global), bytes (i32, a multiple of 16)") \
X(BULKCOMMIT, "bulk.commit",    0, 0,   "",       NONE,     NONE,      SIDE,                      BULK_COPY, ASM0,    "cp.async.bulk.commit_group;", "close the bulk_group of the bulk and TMA stores issued since the last commit") \
X(BULKWAIT,  "bulk.wait",       0, 0,   "nn",     NONE,     BULKWAIT,  SIDE,                      BULK_COPY, BULKWAIT, "", "cp.async.bulk.wait_group(.read) n: until at most n bulk groups are pending (read: only their reads of shared memory); imms: n (0-63), read (0 or 1)") \
/* (end of the TMA rows) */ \
/* --- Hopper: mbarriers, fences, named barriers, elect, clusters, DSMEM, setmaxnreg ----------------------------- */ \
X(MBINIT,    "mbarrier.init",   2, 2,   "",       NONE,     MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "initialise an mbarrier (8 bytes of shared memory, 8-aligned) to phase 0 expecting count arrivals; operands: bar, count (i32, 1 to 2^20-1)") \
X(MBARRIVE,  "mbarrier.arrive", 1, 2,   "S",      MBTOKEN,  MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "arrive (release) on an mbarrier: a shared one gives the phase's state token (i64) or nothing; a shared_cluster one (a peer CTA's, from mapa) gives nothing; operands: bar, count (optional i32); imm: scope (cta cluster)") \
X(MBARRIVETX, "mbarrier.arrive.expect_tx", 2, 2, "S", NONE,   MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "add tx bytes to the mbarrier's transaction count, then arrive; operands: bar (shared or shared_cluster), bytes (i32); imm: scope (cta cluster)") \
X(MBEXPECTTX, "mbarrier.expect_tx", 2, 2, "S",      NONE,     MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "add tx bytes to the mbarrier's transaction count without arriving; operands: bar (shared or shared_cluster), bytes (i32); imm: scope (cta cluster)") \
X(MBTRYWAIT, "mbarrier.try_wait", 2, 3,   "S",      MBWAIT,   MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "whether the phase of the given parity has completed, waiting up to a time limit; operands: bar, parity (i32, 0 or 1), suspend-time hint in ns (optional i32); imm: scope of the acquire (cta cluster)") \
X(MBTESTWAIT, "mbarrier.test_wait", 2, 2, "S",      MBWAIT,   MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "whether the phase of the given parity has completed, without waiting; operands: bar, parity (i32, 0 or 1); imm: scope of the acquire (cta cluster)") \
X(MBWAIT,    "mbarrier.wait",   2, 3,   "S",      NONE,     MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "wait until the phase of the given parity has completed (a try_wait loop inside one asm); operands: bar, parity (i32, 0 or 1), suspend-time hint in ns for each try (optional i32); imm: scope of the acquire (cta cluster)") \
X(MBINVAL,   "mbarrier.inval",  1, 1,   "",       NONE,     MBAR,      MEM|SIDE,                  MBARRIER_TX, MBAR,  "",  "invalidate an mbarrier before its memory is used for something else; operand: bar") \
X(FENCEMBINIT, "fence.mbarrier_init", 0, 0, "",     NONE,     NONE,      SIDE,                      MBARRIER_TX, ASM0,  "fence.mbarrier_init.release.cluster;", "make this thread's mbarrier.init visible to the cluster (and the async proxy) before a cluster barrier") \
X(FENCEPROXY, "fence.proxy.async", 0, 0,  "",       NONE,     NONE,      SIDE,                      BULK_COPY, ASM0,    "fence.proxy.async;", "order this thread's generic-proxy memory accesses (every space) with its async-proxy ones (TMA, bulk copies, wgmma operands)") \
X(FENCEPROXYS, "fence.proxy.async.shared", 0, 0, "", NONE,    NONE,      SIDE,                      BULK_COPY, ASM0,    "fence.proxy.async.shared::cta;", "fence.proxy.async for this CTA's shared memory (CuTe's fence_view_async_shared)") \
X(FENCEPROXYG, "fence.proxy.async.global", 0, 0, "", NONE,    NONE,      SIDE,                      BULK_COPY, ASM0,    "fence.proxy.async.global;", "fence.proxy.async for global memory") \
X(GDWAIT,    "griddepcontrol.wait", 0, 0, "",       NONE,     NONE,      MEM|SIDE,                  GRIDDEP,  ASM0,     "griddepcontrol.wait;", "wait until the grids this one depends on (a programmatic dependent launch's previous kernel) have completed and their writes are visible; at once in a grid launched otherwise") \
X(GDLAUNCH,  "griddepcontrol.launch_dependents", 0, 0, "", NONE, NONE,   SIDE,                      GRIDDEP,  ASM0,     "griddepcontrol.launch_dependents;", "this CTA no longer holds back the stream's next kernel launched as a programmatic dependent launch") \
X(ELECT,     "elect.sync",      1, 1,   "",       GIVEN,    ELECT,     SIDE|CONV,                 ELECT,    ELECT,    "",  "elect one leader among the lanes of a mask (all of them execute it); operand: mask (i32); result: i1 (true in the leader) or {i32 leader lane, i1}") \
X(CLARRIVE,  "barrier.cluster.arrive", 0, 0, "",    NONE,     NONE,      SIDE|CONV,                 CLUSTER,  ASM0,     "barrier.cluster.arrive.release.aligned;", "arrive on the cluster barrier, releasing this thread's memory accesses (every thread of the cluster's CTAs arrives)") \
X(CLARRIVER, "barrier.cluster.arrive.relaxed", 0, 0, "", NONE, NONE,     SIDE|CONV,                 CLUSTER,  ASM0,     "barrier.cluster.arrive.relaxed.aligned;", "arrive on the cluster barrier without memory ordering") \
X(CLWAIT,    "barrier.cluster.wait", 0, 0, "",      NONE,     NONE,      SIDE|CONV,                 CLUSTER,  ASM0,     "barrier.cluster.wait.acquire.aligned;", "wait until every thread of the cluster arrived, acquiring their released accesses") \
X(MAPA,      "mapa",            2, 2,   "",       MAPA,     MAPA,      PURE,                      DSMEM,    MAPA,     "",  "the same shared-memory address in the CTA of a given rank of the cluster; operands: p (shared pointer), rank (i32); result: a shared_cluster pointer") \
X(CTARANK,   "getctarank",      1, 1,   "",       I32,      CTARANK,   PURE,                      DSMEM,    CTARANK,  "",  "the rank in the cluster of the CTA a shared_cluster address belongs to") \
X(SETMAXINC, "setmaxnreg.inc", 0, 0,   "n",      NONE,     SETMAXNREG, SIDE|CONV,                SETMAXNREG, SETMAXNREG, "setmaxnreg.inc.sync.aligned.u32 %lld;", "raise this warpgroup's registers per thread to n, from the CTA's pool (all its warps execute it); imm: n (24 to 256, a multiple of 8); needs a register cap at entry") \
X(SETMAXDEC, "setmaxnreg.dec", 0, 0,   "n",      NONE,     SETMAXNREG, SIDE|CONV,                SETMAXNREG, SETMAXNREG, "setmaxnreg.dec.sync.aligned.u32 %lld;", "lower this warpgroup's registers per thread to n, returning the rest to the CTA's pool; imm: n (24 to 256, a multiple of 8)") \
/* (end of the sync rows) */ \
/* --- structured control flow (builder calls: for_begin, if_begin, ... region_end) --------------------------- */ \
X(FOR,       "for",             3, 3,   "n",      NONE,     FOR,       REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "for iv = lo; iv < hi (or > hi if step < 0); iv += step; imm: unroll (0 auto, 1 none, n, -1 full)") \
X(IV,        "iv",              0, 0,   "",       GIVEN,    NONE,      INTERNAL,                  NONE,     NONE,     "",  "the induction variable of the enclosing for") \
X(IF,        "if",              1, 1,   "",       NONE,     COND,      REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "if c (i1)") \
X(ELSE,      "else",            0, 0,   "",       NONE,     NONE,      REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "else branch of the open if") \
X(WHILE,     "while",           0, 0,   "",       NONE,     NONE,      REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "while loop: its condition region comes first") \
X(WCOND,     "while.cond",      1, 1,   "",       NONE,     COND,      REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "ends the condition region: loop while c (i1); the body follows") \
X(END,       "end",             0, 0,   "",       NONE,     NONE,      REGION|SIDE|INTERNAL,      NONE,     NONE,     "",  "closes the innermost region") \
X(BREAK,     "break",           0, 0,   "",       NONE,     NONE,      TERM|SIDE|INTERNAL,        NONE,     NONE,     "",  "leave the innermost loop") \
X(CONTINUE,  "continue",        0, 0,   "",       NONE,     NONE,      TERM|SIDE|INTERNAL,        NONE,     NONE,     "",  "next iteration of the innermost loop") \
X(RET,       "ret",             0, 1,   "",       NONE,     RET,       TERM|SIDE|INTERNAL,        NONE,     NONE,     "",  "return (a value from a device function)")
/* clang-format on */

/* --- the immediates' enumerations ------------------------------------------------------------------------- */

/* Integer comparison predicates (imm kind 'P'). */
#define IR_ICMP_PREDS(X) \
  X(EQ, "eq") X(NE, "ne") X(SLT, "slt") X(SLE, "sle") X(SGT, "sgt") X(SGE, "sge") \
  X(ULT, "ult") X(ULE, "ule") X(UGT, "ugt") X(UGE, "uge")
/* Float comparison predicates (imm kind 'Q'): o = ordered (false on NaN), u = unordered. */
#define IR_FCMP_PREDS(X) \
  X(OEQ, "oeq") X(ONE, "one") X(OLT, "olt") X(OLE, "ole") X(OGT, "ogt") X(OGE, "oge") \
  X(ORD, "ord") X(UNO, "uno") X(UEQ, "ueq") X(UNE, "une") X(ULT, "ult") X(ULE, "ule") \
  X(UGT, "ugt") X(UGE, "uge")
/* Rounding (imm kind 'R'); DEFAULT is the PTX default of the conversion:
   nearest-even to float, toward zero to integer. RNA only for f32 -> tf32. */
#define IR_ROUNDINGS(X) X(DEFAULT, "") X(RN, "rn") X(RZ, "rz") X(RM, "rm") X(RP, "rp") X(RNA, "rna")
/* Memory order (imm kind 'O'). */
#define IR_ORDERS(X) \
  X(WEAK, "weak") X(VOLATILE, "volatile") X(RELAXED, "relaxed") X(ACQUIRE, "acquire") \
  X(RELEASE, "release") X(ACQ_REL, "acq_rel")
/* Scope (imm kind 'S'); GPU is PTX's default. */
#define IR_SCOPES(X) X(GPU, "gpu") X(CTA, "cta") X(CLUSTER, "cluster") X(SYS, "sys")
/* Cache hints (imm kind 'C'): loads ca cg cs lu cv nc, stores wb cg cs wt. */
#define IR_CACHES(X) \
  X(NONE, "") X(CA, "ca") X(CG, "cg") X(CS, "cs") X(LU, "lu") X(CV, "cv") X(NC, "nc") \
  X(WB, "wb") X(WT, "wt")
/* Reduction / atomic operations (imm kind 'A'). */
#define IR_REDOPS(X) \
  X(ADD, "add") X(MIN, "min") X(MAX, "max") X(UMIN, "umin") X(UMAX, "umax") X(INC, "inc") \
  X(DEC, "dec") X(AND, "and") X(OR, "or") X(XOR, "xor") X(EXCH, "exch")
/* Shuffle modes (imm kind 'H'). */
#define IR_SHFL_MODES(X) X(IDX, "idx") X(UP, "up") X(DOWN, "down") X(BFLY, "bfly")
/* Vote modes (imm kind 'V'). */
#define IR_VOTE_MODES(X) X(ALL, "all") X(ANY, "any") X(UNI, "uni") X(BALLOT, "ballot")
/* Fence semantics (imm kind 'Y'). */
#define IR_FENCE_SEMS(X) X(ACQ_REL, "acq_rel") X(SC, "sc")
/* Named barrier modes (imm kind 'B'). */
#define IR_BAR_MODES(X) X(SYNC, "sync") X(ARRIVE, "arrive")
/* Timers (imm kind 'W'): id, name, result bits, PTX register. */
#define IR_TIMERS(X) \
  X(CLOCK, "clock", 32, "%clock") X(CLOCK64, "clock64", 64, "%clock64") \
  X(GLOBALTIMER, "globaltimer", 64, "%globaltimer")
/* Special registers (imm kind 'G'): id, name, PTX register, LLVM intrinsic
   (llvm.nvvm.read.ptx.sreg.<it>; "" = read through inline PTX), the target
   feature it needs (NONE: every target). All i32. */
#define IR_SREGS(X) \
  X(TID_X, "tid.x", "%tid.x", "tid.x", NONE) X(TID_Y, "tid.y", "%tid.y", "tid.y", NONE) \
  X(TID_Z, "tid.z", "%tid.z", "tid.z", NONE) \
  X(NTID_X, "ntid.x", "%ntid.x", "ntid.x", NONE) X(NTID_Y, "ntid.y", "%ntid.y", "ntid.y", NONE) \
  X(NTID_Z, "ntid.z", "%ntid.z", "ntid.z", NONE) \
  X(CTAID_X, "ctaid.x", "%ctaid.x", "ctaid.x", NONE) X(CTAID_Y, "ctaid.y", "%ctaid.y", "ctaid.y", NONE) \
  X(CTAID_Z, "ctaid.z", "%ctaid.z", "ctaid.z", NONE) \
  X(NCTAID_X, "nctaid.x", "%nctaid.x", "nctaid.x", NONE) X(NCTAID_Y, "nctaid.y", "%nctaid.y", "nctaid.y", NONE) \
  X(NCTAID_Z, "nctaid.z", "%nctaid.z", "nctaid.z", NONE) \
  X(LANEID, "laneid", "%laneid", "laneid", NONE) X(WARPID, "warpid", "%warpid", "warpid", NONE) \
  X(NWARPID, "nwarpid", "%nwarpid", "", NONE) X(SMID, "smid", "%smid", "", NONE) \
  X(NSMID, "nsmid", "%nsmid", "", NONE) \
  X(LANEMASK_EQ, "lanemask_eq", "%lanemask_eq", "", NONE) X(LANEMASK_LT, "lanemask_lt", "%lanemask_lt", "", NONE) \
  X(LANEMASK_LE, "lanemask_le", "%lanemask_le", "", NONE) X(LANEMASK_GT, "lanemask_gt", "%lanemask_gt", "", NONE) \
  X(LANEMASK_GE, "lanemask_ge", "%lanemask_ge", "", NONE) \
  X(DYN_SMEM_SIZE, "dynamic_smem_size", "%dynamic_smem_size", "", NONE) \
  X(TOTAL_SMEM_SIZE, "total_smem_size", "%total_smem_size", "", NONE) \
  X(CLUSTERID_X, "clusterid.x", "%clusterid.x", "", CLUSTER) X(CLUSTERID_Y, "clusterid.y", "%clusterid.y", "", CLUSTER) \
  X(CLUSTERID_Z, "clusterid.z", "%clusterid.z", "", CLUSTER) \
  X(NCLUSTERID_X, "nclusterid.x", "%nclusterid.x", "", CLUSTER) \
  X(NCLUSTERID_Y, "nclusterid.y", "%nclusterid.y", "", CLUSTER) \
  X(NCLUSTERID_Z, "nclusterid.z", "%nclusterid.z", "", CLUSTER) \
  X(CLUSTER_CTAID_X, "cluster_ctaid.x", "%cluster_ctaid.x", "", CLUSTER) \
  X(CLUSTER_CTAID_Y, "cluster_ctaid.y", "%cluster_ctaid.y", "", CLUSTER) \
  X(CLUSTER_CTAID_Z, "cluster_ctaid.z", "%cluster_ctaid.z", "", CLUSTER) \
  X(CLUSTER_NCTAID_X, "cluster_nctaid.x", "%cluster_nctaid.x", "", CLUSTER) \
  X(CLUSTER_NCTAID_Y, "cluster_nctaid.y", "%cluster_nctaid.y", "", CLUSTER) \
  X(CLUSTER_NCTAID_Z, "cluster_nctaid.z", "%cluster_nctaid.z", "", CLUSTER) \
  X(CLUSTER_CTARANK, "cluster_ctarank", "%cluster_ctarank", "", CLUSTER) \
  X(CLUSTER_NCTARANK, "cluster_nctarank", "%cluster_nctarank", "", CLUSTER)
/* mma.sync shapes (imm kind 'M'): id, name, m, n, k. */
#define IR_MMA_SHAPES(X) \
  X(M8N8K4, "m8n8k4", 8, 8, 4) X(M8N8K16, "m8n8k16", 8, 8, 16) X(M8N8K32, "m8n8k32", 8, 8, 32) \
  X(M16N8K4, "m16n8k4", 16, 8, 4) X(M16N8K8, "m16n8k8", 16, 8, 8) X(M16N8K16, "m16n8k16", 16, 8, 16) \
  X(M16N8K32, "m16n8k32", 16, 8, 32) X(M16N8K64, "m16n8k64", 16, 8, 64) \
  X(M8N8K128, "m8n8k128", 8, 8, 128) X(M16N8K128, "m16n8k128", 16, 8, 128) \
  X(M16N8K256, "m16n8k256", 16, 8, 256)
/* mma.sync element types (imm kind 'E'): id, name, bits. */
#define IR_MMA_TYPES(X) \
  X(F16, "f16", 16) X(BF16, "bf16", 16) X(TF32, "tf32", 32) X(F32, "f32", 32) X(F64, "f64", 64) \
  X(S8, "s8", 8) X(U8, "u8", 8) X(S4, "s4", 4) X(U4, "u4", 4) X(B1, "b1", 1) X(E4M3, "e4m3", 8) \
  X(E5M2, "e5m2", 8) X(S32, "s32", 32)
/* Flag bits (imm kind 'F'); which ones an op accepts is part of its rule. */
#define IR_FLAGS(X) \
  X(FAST, "fast", 0x1) X(SAT, "sat", 0x2) X(TRANS, "trans", 0x4) X(SIDEEFFECT, "sideeffect", 0x8) \
  X(CONVERGENT, "convergent", 0x10) X(MEMORY, "memory", 0x20)

/* Immediate kinds: letter, what it is, its enumeration (NULL: not enumerated),
   whether value 0 is left out when printing (it is the default). Kinds without
   an enumeration: k constant, n number, s string, v variable, f function. */
#define IR_IMM_KINDS(X)                        \
  X('P', "icmp predicate", ICMP, 0)            \
  X('Q', "fcmp predicate", FCMP, 0)            \
  X('R', "rounding", ROUND, 1)                 \
  X('O', "memory order", ORDER, 1)             \
  X('S', "scope", SCOPE, 1)                    \
  X('C', "cache hint", CACHE, 1)               \
  X('A', "reduction op", REDOP, 0)             \
  X('H', "shuffle mode", SHFL, 0)              \
  X('V', "vote mode", VOTE, 0)                 \
  X('Y', "fence semantics", FENCE, 1)          \
  X('B', "barrier mode", BAR, 1)               \
  X('W', "timer", TIMER, 0)                    \
  X('G', "special register", SREG, 0)         \
  X('M', "mma shape", MMASHAPE, 0)             \
  X('E', "mma type", MMATYPE, 0)               \
  X('F', "flags", FLAG, 1)                     \
  X('k', "constant", NONE, 0)                  \
  X('n', "number", NONE, 0)                    \
  X('s', "string", NONE, 0)                    \
  X('v', "variable", NONE, 0)                  \
  X('f', "function", NONE, 0)

#endif
