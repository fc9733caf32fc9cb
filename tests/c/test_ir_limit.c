/* test_ir_limit: the bound on a module's instructions (IR_OPT_MAX_OPS): the
 * default, the op past the limit refused with a diagnostic that names it and
 * the limit, folded and reused ops not counted, all functions of a module
 * counted together, 0 for no limit, and an endless append loop that stops. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "ir_impl.h"

static int instructions(IrModule *m) {
  int n = 0;
  for (int i = 0; i < ir_func_count(m); i++) n += ir_inst_count(ir_func_at(m, i));
  return n;
}

static void test_default(void) {
  IrModule *m = ir_module_new();
  CHECK_EQ_INT(ir_module_get(m, IR_OPT_MAX_OPS), IR_MAX_OPS_DEFAULT);
  CHECK_EQ_INT(IR_MAX_OPS_DEFAULT, 500000);
  ir_module_set(m, IR_OPT_MAX_OPS, 1234);
  CHECK_EQ_INT(ir_module_get(m, IR_OPT_MAX_OPS), 1234);
  CHECK_EQ_INT(ir_module_get(m, (IrOption)IR_OPT__COUNT), -1);
  ir_module_free(m);
}

static void test_limit(void) {
  IrModule *m = ir_module_new();
  ir_module_set(m, IR_OPT_MAX_OPS, 100);
  IrFunc *f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  IrRef x = ir_param(f, IR_T_I32);
  CHECK(x != 0);
  /* folded and reused ops take nothing: 1 + 2 folds, x + 0 is x, the same add again is reused */
  IrRef one = ir_const_int(f, IR_T_I32, 1), two = ir_const_int(f, IR_T_I32, 2);
  IrRef s = ir_op3(f, IR_OP_ADD, 0, x, one, 0, 0, 0, 0);
  int before = instructions(m);
  CHECK(ir_op3(f, IR_OP_ADD, 0, one, two, 0, 0, 0, 0) != 0); /* a new const 3 */
  CHECK_EQ_INT(instructions(m), before + 1);
  CHECK_EQ_INT(ir_op3(f, IR_OP_ADD, 0, x, ir_const_int(f, IR_T_I32, 0), 0, 0, 0, 0), x);
  CHECK_EQ_INT(ir_op3(f, IR_OP_ADD, 0, x, one, 0, 0, 0, 0), s);
  CHECK_EQ_INT(instructions(m), before + 2); /* + the const 0 */
  /* a second function counts toward the same module limit */
  IrFunc *g = ir_func_new(m, "d", IR_FUNC_DEVICE, IR_T_VOID);
  ir_param(g, IR_T_I32);
  IrRef last = s;
  int made = instructions(m), refused = 0;
  for (int i = 0; i < 200; i++) {
    IrRef r = ir_op3(f, IR_OP_MUL, 0, last, x, 0, 0, 0, 0);
    if (!r) {
      refused = 1;
      break;
    }
    last = r;
    made++;
  }
  CHECK(refused);
  CHECK_EQ_INT(made, 100);
  CHECK_EQ_INT(instructions(m), 100);
  CHECK_CONTAINS(ir_diag(m), "'mul' would be instruction 101 of the module, past its instruction limit of 100");
  CHECK_EQ_INT(m->oom, 0); /* not an out-of-memory */
  /* every builder call that appends is refused the same way */
  ir_diag_clear(m);
  CHECK_EQ_INT(ir_const_int(f, IR_T_I32, 77), 0);
  CHECK_EQ_INT(ir_param(g, IR_T_I32), 0);
  CHECK_EQ_INT(ir_for_begin(f, one, two, one, 0), 0);
  CHECK_CONTAINS(ir_diag(m), "instruction limit of 100");
  CHECK_EQ_INT(instructions(m), 100);
  /* raised, appending goes on; 0 is no limit */
  ir_module_set(m, IR_OPT_MAX_OPS, 0);
  CHECK(ir_op3(f, IR_OP_MUL, 0, last, x, 0, 0, 0, 0) != 0);
  ir_module_free(m);
}

/* An append loop that would never end stops at the limit (the tracer's
   endless trace), with memory bounded by the limit. */
static void test_endless(void) {
  IrModule *m = ir_module_new();
  ir_module_set(m, IR_OPT_MAX_OPS, 200000);
  IrFunc *f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  IrRef v = ir_param(f, IR_T_I64), p = ir_param(f, IR_T_I64);
  long steps = 0;
  for (;;) {
    IrRef r = ir_op3(f, IR_OP_ADD, 0, v, p, 0, 0, 0, 0);
    if (!r) break;
    v = r;
    steps++;
  }
  CHECK_EQ_INT(steps, 200000 - 2);
  CHECK_EQ_INT(instructions(m), 200000);
  CHECK(m->arena.bytes < (size_t)64 << 20);
  CHECK_CONTAINS(ir_diag(m), "'add' would be instruction 200001 of the module, past its instruction limit of 200000");
  ir_module_free(m);
}

int main(void) {
  test_default();
  test_limit();
  test_endless();
  return check_report();
}
