/* emit.h: the NVVM emitter, the cutelua IR's backend (public C API).
 *
 * em_nvvm writes a module as NVVM IR text in the dialect the CUDA 13 libnvvm
 * reads (LLVM 7). It takes a module that was verified since it last changed
 * (ir_verify; it refuses any other) and never writes to it: the same module
 * emits the same text every time, and may be emitted with other options
 * again. It reads the IR's representation (ir_impl.h) and nothing else of
 * the layers above it; src/nvvm calls it. Nothing here prints, exits or
 * longjmps: -1 comes with the reason in the caller's buffer. */
#ifndef EMIT_H
#define EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "cl_buf.h"
#include "ir.h"

/* EmOptions, EmText and the Lua-facing table CLEmitApi: shared with ffi.cdef. */
#include "emit.cdef"

#define CL_EMIT_ABI 1
const void *cl_emit_api(void);

/* NVVM IR of m into out (appended), 0; or -1 with the reason (formatted as
   the IR's diagnostics: the op and its location) appended to err (may be NULL).
   opt NULL: the defaults (no fast math, no ftz, no line info, no target). */
int em_nvvm(const IrModule *m, const EmOptions *opt, ClBuf *out, ClBuf *err);

#endif
