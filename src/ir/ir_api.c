/* ir_api.c: the IR's function table for Lua (CLIrApi, declared in ir.cdef).
 *
 * Mostly the functions of ir.h as they are; thin wrappers where the FFI wants
 * plain ints (enums, chars) or a string instead of a ClBuf. Text returned to
 * Lua lives in the module's `text` buffer until the next such call, so Lua
 * copies it (ffi.string) and nothing needs freeing. */
#include <stdio.h>
#include <string.h>

#include "ir_impl.h"

static int api_op_count(void) { return IR_OP__COUNT; }
static int api_imm_find(int kind, const char *name) { return ir_imm_find((char)kind, name); }
static const char *api_imm_name(int kind, int64_t v) { return ir_imm_name((char)kind, v); }
static int api_imm_count(int kind) { return ir_imm_count((char)kind); }
static const char *api_imm_kind_name(int kind) { return ir_imm_kind_name((char)kind); }
static void api_module_set(IrModule *m, int opt, int value) { ir_module_set(m, (IrOption)opt, value); }
static int api_module_get(const IrModule *m, int opt) { return ir_module_get(m, (IrOption)opt); }
static IrFunc *api_func_new(IrModule *m, const char *name, int kind, IrType ret) {
  return ir_func_new(m, name, (IrFuncKind)kind, ret);
}
static int api_func_attr(IrFunc *f, int attr, int x, int y, int z) { return ir_func_attr(f, (IrAttr)attr, x, y, z); }
static int api_func_attr_get(const IrFunc *f, int attr, int i) { return ir_func_attr_get(f, (IrAttr)attr, i); }
static IrRef api_op(IrFunc *f, int op, IrType type, const IrRef *args, int nargs, const int64_t *imms, int nimm) {
  return ir_op(f, (IrOp)op, type, args, nargs, imms, nimm);
}
static IrRef api_op3(IrFunc *f, int op, IrType type, IrRef a, IrRef b, IrRef c, int64_t i0, int64_t i1, int64_t i2) {
  return ir_op3(f, (IrOp)op, type, a, b, c, i0, i1, i2);
}
static int api_inst_op(const IrFunc *f, IrRef v) { return (int)ir_inst_op(f, v); }
static int api_ops_in_family(const char *family, char *buf, size_t len) {
  ClBuf b = {0};
  for (int i = 0; family && i < IR_OP__COUNT; i++)
    if (strcmp(ir_op_lowering(i), family) == 0) cl_buf_printf(&b, "%s%s", b.len ? " " : "", ir_op_name(i));
  if (buf && len) snprintf(buf, len, "%s", cl_buf_str(&b));
  int n = (int)b.len;
  cl_buf_free(&b);
  return n;
}
static const char *api_module_target(const IrModule *m) {
  const ClTarget *t = ir_module_target(m);
  return t ? t->name : "";
}

static const char *text_of(IrModule *m, size_t *len) {
  if (len) *len = m->text.len;
  return cl_buf_str(&m->text);
}
static const char *api_print(IrModule *m, int flags, size_t *len) {
  if (!m) return NULL;
  cl_buf_clear(&m->text);
  ir_print_module(m, &m->text, flags);
  return text_of(m, len);
}
static const char *api_print_func(IrFunc *f, int flags, size_t *len) {
  if (!f) return NULL;
  cl_buf_clear(&f->m->text);
  ir_print_func(f, &f->m->text, flags);
  return text_of(f->m, len);
}
static const char *api_print_inst(IrFunc *f, IrRef v, size_t *len) {
  if (!f) return NULL;
  cl_buf_clear(&f->m->text);
  ir_print_inst(f, v, &f->m->text);
  return text_of(f->m, len);
}
/* The emitter left the IR (src/emit, its own table CLEmitApi): the slot stays
   for the ABI and refuses, saying where it went. */
static const char *api_emit_nvvm(IrModule *m, const IrEmitOptions *opt, size_t *len) {
  (void)opt;
  if (len) *len = 0;
  if (m) ir_merror(m, "emit_nvvm moved out of the IR: the emitter's table (CLEmitApi, src/emit/emit.cdef; Lua: "
                      "require(\"cute._c\").emit.nvvm, or cute.ir's Module:emit_nvvm)");
  return NULL;
}

/* The sample kernels moved out of the library into the C tests
   (tests/c/support/ir_sample.c); their slots stay for the ABI and refuse. */
static IrFunc *api_sample_gone(IrModule *m) {
  if (m) ir_merror(m, "the sample kernels are test code now (tests/c/support/ir_sample.c; Lua: tests/spec/ir/samples.lua)");
  return NULL;
}
static IrFunc *api_sample_saxpy(IrModule *m) { return api_sample_gone(m); }
static IrFunc *api_sample_mma_unrolled(IrModule *m, int n_mma, int n_ldm) {
  (void)n_mma;
  (void)n_ldm;
  return api_sample_gone(m);
}

static const CLIrApi ir_api = {
    .abi = CL_IR_ABI,
    .op_count = api_op_count,
    .op_name = ir_op_name,
    .op_find = ir_op_find,
    .op_imms = ir_op_imms,
    .op_doc = ir_op_doc,
    .op_arity = ir_op_arity,
    .op_flags = ir_op_flags,
    .op_min_sm = ir_op_min_sm,
    .imm_find = api_imm_find,
    .imm_name = api_imm_name,
    .imm_count = api_imm_count,
    .imm_kind_name = api_imm_kind_name,
    .module_new = ir_module_new,
    .module_free = ir_module_free,
    .module_set = api_module_set,
    .module_get = api_module_get,
    .diag = ir_diag,
    .diag_count = ir_diag_count,
    .diag_clear = ir_diag_clear,
    .str = ir_str,
    .type_parse = ir_type_parse,
    .type_vec = ir_type_vec,
    .type_ptr = ir_type_ptr,
    .type_struct = ir_type_struct,
    .type_array = ir_type_array,
    .type_name = ir_type_name,
    .type_info = ir_type_info,
    .func_new = api_func_new,
    .func_count = ir_func_count,
    .func_at = ir_func_at,
    .func_name = ir_func_name,
    .func_index = ir_func_index,
    .param = ir_param,
    .param_blob = ir_param_blob,
    .func_attr = api_func_attr,
    .func_attr_get = api_func_attr_get,
    .set_loc = ir_set_loc,
    .set_loc_id = ir_set_loc_id,
    .const_int = ir_const_int,
    .const_float = ir_const_float,
    .op = api_op,
    .op3 = api_op3,
    .value_type = ir_value_type,
    .inst_op = api_inst_op,
    .inst_count = ir_inst_count,
    .const_value = ir_const_value,
    .for_begin = ir_for_begin,
    .if_begin = ir_if_begin,
    .else_begin = ir_else_begin,
    .while_begin = ir_while_begin,
    .while_cond = ir_while_cond,
    .region_end = ir_region_end,
    .brk = ir_break,
    .cont = ir_continue,
    .ret = ir_return,
    .depth = ir_depth,
    .var_new = ir_var_new,
    .var_load = ir_var_load,
    .var_loadx = ir_var_loadx,
    .var_store = ir_var_store,
    .var_storex = ir_var_storex,
    .verify = ir_verify,
    .print = api_print,
    .print_func = api_print_func,
    .print_inst = api_print_inst,
    .emit_nvvm = api_emit_nvvm,
    .sample_saxpy = api_sample_saxpy,
    .sample_mma_unrolled = api_sample_mma_unrolled,
    .var_loadv = ir_var_loadv,
    .var_storev = ir_var_storev,
    .var_opaque = ir_var_opaque,
    .inst_arg = ir_inst_arg,
    .module_verified = ir_module_verified,
    .module_set_target = ir_module_set_target,
    .module_target = api_module_target,
    .op_feature = ir_op_feature,
    .op_lowering = ir_op_lowering,
    .space_name = ir_space_name,
    .attr_name = ir_attr_name,
    .attr_arity = ir_attr_arity,
    .option_name = ir_option_name,
    .scalar_name = ir_scalar_name,
    .scalar_storage_only = ir_scalar_storage_only,
    .type_kind_name = ir_type_kind_name,
    .ops_in_family = api_ops_in_family,
    .inst_nargs = ir_inst_nargs,
    .inst_imm = ir_inst_imm,
    .inst_loc = ir_inst_loc,
    .str_get = ir_str_get,
    .var_info = ir_var_info,
    .var_count = ir_var_count,
};

const void *cl_ir_api(void) { return &ir_api; }
