/* ir_sample.h: sample kernels built through the IR's builder, for the C tests
 * (tests/c/support/ir_sample.c; the goldens tests/golden/ir/sample_*). */
#ifndef IR_SAMPLE_H
#define IR_SAMPLE_H

#include "ir.h"

/* saxpy: y[i] = a * x[i] + y[i] for i < n. */
IrFunc *ir_sample_saxpy(IrModule *m);
/* A fully unrolled warp tile: n_ldm ldmatrix.x4 and n_mma mma.sync.m16n8k16
   (f16 -> f32) with the address arithmetic, stored to global at the end. */
IrFunc *ir_sample_mma_unrolled(IrModule *m, int n_mma, int n_ldm);

#endif
