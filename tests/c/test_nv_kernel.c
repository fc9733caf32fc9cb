/* nv_compile_module (src/nvvm/nv_kernel.c): a traced module to a cubin in
 * one call; the key from the printed IR or the caller's material; a lookup
 * before tracing; hits from memory; the texts kept in the result; refusals
 * (another target, a module that does not verify) with the kernel named. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "emit.h"
#include "ir.h"
#include "ir_sample.h"
#include "nv_compile.h"
#include "nv_testdata.h"

static IrModule *saxpy(const char *target) {
  IrModule *m = ir_module_new();
  ir_module_set_target(m, target);
  CHECK(ir_sample_saxpy(m) != NULL);
  return m;
}

static void test_compile(void) {
  NvOptions o;
  nv_test_options(&o, "sm_80");
  o.cache = 1; /* memory only: nv_test_options sets no cache_dir */
  IrModule *m = saxpy("sm_80");
  NvModuleJob job = {"saxpy", NULL, 0, "test salt", "meta!", 5, 0, 0};
  NvResult r = {0};
  CHECK_EQ_INT(nv_compile_module(&r, m, &o, &job), 0);
  CHECK_EQ_INT(r.origin, NV_ORIGIN_COMPILED);
  CHECK(ir_module_verified(m)); /* verified on the way */
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "saxpy"));
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_PTX]), ".target sm_80");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_IR]), "kernel @saxpy(");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_IR]), "; saxpy.lua:4 (saxpy)"); /* printed with locations: the key */
  CHECK_STR(cl_buf_str(&r.part[NV_PART_META]), "meta!");
  /* the NVVM IR compiled is what the emitter writes */
  ClBuf ll = {0};
  EmOptions eo = {0, 0, 0, "sm_80"};
  CHECK_EQ_INT(em_nvvm(m, &eo, &ll, NULL), 0);
  CHECK_STR(cl_buf_str(&r.part[NV_PART_LL]), cl_buf_str(&ll));
  char key[72];
  memcpy(key, r.key, sizeof key);
  /* the same module again: a memory hit under the same key, meta back */
  NvResult r2 = {0};
  CHECK_EQ_INT(nv_compile_module(&r2, m, &o, &job), 0);
  CHECK_EQ_INT(r2.origin, NV_ORIGIN_MEMORY);
  CHECK_STR(r2.key, key);
  CHECK_STR(cl_buf_str(&r2.part[NV_PART_META]), "meta!");
  CHECK_EQ_INT((int)r2.part[NV_PART_LL].len, 0); /* not made on a hit... */
  CHECK_EQ_INT(nv_module_emit(&r2, m, &o, "saxpy"), 0); /* ...until asked for */
  CHECK_STR(cl_buf_str(&r2.part[NV_PART_LL]), cl_buf_str(&ll));
  /* another salt: another key */
  NvModuleJob other = job;
  other.salt = "another";
  NvResult r3 = {0};
  CHECK_EQ_INT(nv_compile_module(&r3, m, &o, &other), 0);
  CHECK(strcmp(r3.key, key) != 0);
  nv_result_free(&r);
  nv_result_free(&r2);
  nv_result_free(&r3);
  cl_buf_free(&ll);
  ir_module_free(m);
}

/* Keyed before tracing: the lookup misses, the module compiles under that key, the next lookup hits. */
static void test_lookup(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  o.cache = 1;
  const char *material = "a trace_key's material, test_nv_kernel";
  NvResult r = {0};
  CHECK_EQ_INT(nv_module_lookup(&r, material, strlen(material), "pretrace", &o), 0);
  IrModule *m = saxpy("sm_90a");
  NvModuleJob job = {"saxpy", NULL, 0, "pretrace", "launch meta", 11, 0, 1};
  CHECK_EQ_INT(nv_compile_module(&r, m, &o, &job), 0);
  CHECK_EQ_INT(r.origin, NV_ORIGIN_COMPILED);
  CHECK_EQ_INT((int)r.part[NV_PART_IR].len, 0); /* keyed by the material: no IR printed */
  NvResult hit = {0};
  CHECK_EQ_INT(nv_module_lookup(&hit, material, strlen(material), "pretrace", &o), 1);
  CHECK_STR(hit.key, r.key);
  CHECK_STR(cl_buf_str(&hit.part[NV_PART_META]), "launch meta");
  CHECK_EQ_INT(nv_module_print(&hit, m), 0);
  CHECK_CONTAINS(cl_buf_str(&hit.part[NV_PART_IR]), "kernel @saxpy(");
  CHECK_EQ_INT(nv_module_finish(&hit, &o, "saxpy"), 0); /* no spills: no warnings */
  nv_result_free(&r);
  nv_result_free(&hit);
  ir_module_free(m);
}

static void test_refusals(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  /* the module was built for another target than the options compile for */
  IrModule *m = saxpy("sm_80");
  NvModuleJob job = {"saxpy", NULL, 0, NULL, NULL, 0, 0, 0};
  NvResult r = {0};
  CHECK_EQ_INT(nv_compile_module(&r, m, &o, &job), -1);
  CHECK_STR(nv_phase_name(r.phase), "options");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "kernel saxpy: the module was built for sm_80, the options compile for sm_90a");
  nv_result_free(&r);
  ir_module_free(m);
  /* a module that does not verify: the verifier's report, the kernel named */
  m = ir_module_new();
  ir_module_set(m, IR_OPT_CHECK, 0);
  ir_set_loc(m, "bad.lua", 3, "k");
  IrFunc *f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  ir_op3(f, IR_OP_ADD, 0, ir_param(f, IR_T_I32), ir_param(f, IR_T_F32), 0, 0, 0, 0);
  job.name = "k";
  NvResult r2 = {0};
  CHECK_EQ_INT(nv_compile_module(&r2, m, &o, &job), -1);
  CHECK_STR(nv_phase_name(r2.phase), "verify");
  CHECK_CONTAINS(cl_buf_str(&r2.part[NV_PART_DIAG]), "kernel k does not verify");
  CHECK_CONTAINS(cl_buf_str(&r2.part[NV_PART_DIAG]), "bad.lua:3 (k): error: add: operand 1 is i32, operand 2 is f32");
  nv_result_free(&r2);
  ir_module_free(m);
}

int main(void) {
  test_compile();
  test_lookup();
  test_refusals();
  return check_report();
}
