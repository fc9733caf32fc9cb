/* emit_tma.c: the lowering of the Hopper (sm_90a) ops of one part:
 * the bulk tensor engine (cp.async.bulk.tensor loads, multicast loads, stores, reductions, prefetches) and non-tensor bulk copies
 * (the rows of IR_LOWERINGS_TMA in src/ir/ir_impl.h). */
#include "emit_impl.h"

int em_tma_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    default: return 0;
  }
}
