/* emit_wgmma.c: the lowering of the Hopper (sm_90a) ops of one part:
 * the warpgroup MMA: wgmma.mma_async (SS and RS), its commit and wait groups
 * (the rows of IR_LOWERINGS_WGMMA in src/ir/ir_impl.h). */
#include "emit_impl.h"

int em_wgmma_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    default: return 0;
  }
}
