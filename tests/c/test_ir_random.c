/* test_ir_random: random builder calls (mostly nonsense: random ops, operands,
 * types, immediates, regions, with checking on or off) never crash the builder,
 * the verifier or the printer; whatever verifies also emits, and the NVVM IR of
 * the first of those compiles to a cubin. A fixed seed, so failures repeat
 * (CUTELUA_FUZZ_SEED=n starts from another; CUTELUA_FUZZ_LONG=1 builds 10
 * times as many modules). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emit.h"
#include "ir_impl.h"
#include "nv_compile.h"

static unsigned long long state = 88172645463325252ull;
static unsigned rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (unsigned)state;
}

static const char *const type_names[] = {
    "i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "e4m3", "tf32", "<4 x f32>", "<2 x i32>",
    "ptr<f32, global, 16>", "ptr<i32, shared, 16>", "ptr<i8, shared, 128>", "{4 x f32}", "{4 x i32}", "{2 x i32}",
    "ptr<f32, generic, 4>", "ptr<i32, shared_cluster, 4>", "[8 x i8]"};
enum { NT = sizeof type_names / sizeof *type_names };

static IrModule *random_module(void) {
  IrModule *m = ir_module_new();
  ir_module_set(m, IR_OPT_CHECK, rnd() % 4 == 0);
  ir_module_set_target(m, (const char *[]){"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"}[rnd() % 7]);
  IrType types[NT];
  for (int i = 0; i < NT; i++) types[i] = ir_type_parse(m, type_names[i]);
  IrFunc *g = ir_func_new(m, "dev", IR_FUNC_DEVICE, rnd() % 2 ? IR_T_I32 : IR_T_VOID);
  ir_param(g, IR_T_I32);
  IrFunc *f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  for (int i = 0; i < 6; i++) ir_param(f, types[rnd() % NT]);
  ir_param_blob(f, 128, 64);
  uint32_t var = ir_var_new(f, types[rnd() % NT], 1 + (int)(rnd() % 4));
  for (int n = 0; n < 60; n++) {
    int r = (int)(rnd() % 100), cnt = ir_inst_count(f);
#define PICK ((IrRef)(cnt ? 1 + rnd() % (unsigned)cnt : 0))
    if (r < 4) ir_for_begin(f, PICK, PICK, PICK, (int)(rnd() % 5) - 1);
    else if (r < 8) ir_if_begin(f, PICK);
    else if (r < 10) ir_else_begin(f);
    else if (r < 12) ir_while_begin(f);
    else if (r < 14) ir_while_cond(f, PICK);
    else if (r < 20) ir_region_end(f);
    else if (r < 21) ir_break(f);
    else if (r < 22) ir_continue(f);
    else if (r < 23) ir_return(f, rnd() % 2 ? PICK : 0);
    else if (r < 26) ir_var_store(f, var, (int)(rnd() % 5), PICK);
    else if (r < 28) ir_var_load(f, var, (int)(rnd() % 5));
    else if (r < 30) ir_var_loadx(f, var, PICK);
    else if (r < 35) ir_const_int(f, types[rnd() % NT], (int64_t)rnd() - (1ll << 31));
    else if (r < 38) ir_const_float(f, types[rnd() % NT], (double)(int)rnd() / 1000.0);
    else {
      IrOp op = (IrOp)(rnd() % IR_OP__COUNT);
      IrRef args[4] = {PICK, PICK, PICK, PICK};
      int amin, amax, nimm = ir_op_arity(op, &amin, &amax);
      int extra = amax > amin ? (int)(rnd() % 4) : 0;
      int na = amin + extra > 4 ? 4 : amin + extra;
      if (na > amax) na = amax;
      int64_t imms[8];
      for (int i = 0; i < 8; i++) imms[i] = rnd() % 3 == 0 ? (int64_t)(rnd() % 40) - 2 : (int64_t)(rnd() % 4);
      if (op == IR_OP_CALL) imms[0] = 0;
      if (op == IR_OP_PRINTF || op == IR_OP_ASM) {
        imms[0] = ir_str(m, "%d $0");
        imms[1] = ir_str(m, "=r,r");
      }
      ir_op(f, op, rnd() % 2 ? types[rnd() % NT] : 0, args, na, imms, nimm);
    }
#undef PICK
  }
  while (ir_depth(f) > 0 && rnd() % 2) ir_region_end(f);
  return m;
}

int main(void) {
  int verified = 0, compiled = 0;
  NvOptions o;
  nv_options_default(&o);
  nv_options_set_arch(&o, "sm_90a");
  o.cache = 0;
  o.cache_dir[0] = 0;
  const char *seed = getenv("CUTELUA_FUZZ_SEED"), *lng = getenv("CUTELUA_FUZZ_LONG");
  if (seed && *seed) state = strtoull(seed, NULL, 10) | 1;
  int modules = lng && strcmp(lng, "1") == 0 ? 30000 : 3000;
  printf("seed %llu, %d modules\n", state, modules);
  for (int it = 0; it < modules; it++) {
    IrModule *m = random_module();
    int nerr = ir_verify(m);
    ClBuf text = {0};
    ir_print_module(m, &text, IR_PRINT_LOCS);
    CHECK(text.len > 0 && !text.oom);
    cl_buf_free(&text);
    if (nerr == 0) {
      verified++;
      ClBuf ll = {0};
      EmOptions eo = {(int)(rnd() % 2), (int)(rnd() % 2), (int)(rnd() % 2), NULL};
      ClBuf err = {0};
      int rc = em_nvvm(m, &eo, &ll, &err);
      CHECK_AT(rc == 0, "module %d verified but did not emit:\n%s", it, cl_buf_str(&err));
      cl_buf_free(&err);
      if (rc == 0 && compiled < 40) {
        NvResult r = {0};
        int crc = nv_compile(&r, ll.data, ll.len, NV_INPUT_NVVM, &o);
        CHECK_AT(crc == 0, "module %d emitted NVVM IR that does not compile:\n%s\n%s", it,
                 cl_buf_str(&r.part[NV_PART_DIAG]), cl_buf_str(&ll));
        nv_result_free(&r);
        compiled++;
      }
      cl_buf_free(&ll);
    } else {
      CHECK(ir_diag_count(m) >= nerr);
    }
    ir_module_free(m);
  }
  printf("%d of %d random modules verified, %d compiled\n", verified, modules, compiled);
  CHECK(verified > 50 && compiled == 40);
  return check_report();
}
