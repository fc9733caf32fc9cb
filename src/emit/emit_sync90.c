/* emit_sync90.c: the lowering of the Hopper (sm_90a) ops of one part:
 * mbarriers, proxy fences, named barriers, elect.sync, cluster barriers, distributed shared memory and setmaxnreg
 * (the rows of IR_LOWERINGS_SYNC90 in src/ir/ir_impl.h). */
#include "emit_impl.h"

int em_sync90_op(Em *e, IrRef v) {
  switch ((IrLow)ir_op_info[I(e, v)->op].low) {
    default: return 0;
  }
}
