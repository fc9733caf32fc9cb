/* The emitter (src/emit) as a reader of the IR: it refuses a module that was
 * not verified since it last changed, and it leaves the module exactly as it
 * found it (no types, strings, locations, arena memory or diagnostics added,
 * still verified), emitting the same text each time. */
#include <string.h>

#include "check.h"
#include "emit.h"
#include "ir_impl.h"
#include "ir_sample.h"

/* What of a module an emitter could change. */
typedef struct Shape {
  int types;
  uint32_t nstr, nloc, cur_loc, func_loc;
  size_t arena;
  int ndiag, verified;
  uint64_t changes;
} Shape;

static Shape shape(const IrModule *m) {
  Shape s = {ir_type_count(m), m->nstr, m->nloc, m->cur_loc, m->nfunc ? m->funcs[0]->loc : 0, m->arena.bytes,
             ir_diag_count(m), ir_module_verified(m), m->changes};
  return s;
}

static void same_shape(Shape a, Shape b) {
  CHECK_EQ_INT(a.types, b.types);
  CHECK_EQ_INT((int)a.nstr, (int)b.nstr);
  CHECK_EQ_INT((int)a.nloc, (int)b.nloc);
  CHECK_EQ_INT((int)a.cur_loc, (int)b.cur_loc);
  CHECK_EQ_INT((int)a.func_loc, (int)b.func_loc);
  CHECK_EQ_INT((int)a.arena, (int)b.arena);
  CHECK_EQ_INT(a.ndiag, b.ndiag);
  CHECK_EQ_INT(a.verified, b.verified);
  CHECK(a.changes == b.changes);
}

/* A kernel with no location at all (line info then names "<cutelua>"), a
   ptrcast across spaces (an intermediate pointer type) and a vector of
   halves loaded and stored as words (a <2 x i32> type): each once made a
   type or a location in the module. */
static IrModule *no_loc_kernel(void) {
  IrModule *m = ir_module_new();
  IrFunc *f = ir_func_new(m, "k", IR_FUNC_KERNEL, IR_T_VOID);
  IrRef g = ir_param(f, ir_type_parse(m, "ptr<f16, generic, 8>"));
  IrRef p = ir_op3(f, IR_OP_PTRCAST, ir_type_parse(m, "ptr<i32, global, 8>"), g, 0, 0, 0, 0, 0);
  IrRef h = ir_op3(f, IR_OP_PTRCAST, ir_type_parse(m, "ptr<f16, global, 8>"), p, 0, 0, 0, 0, 0);
  IrRef v = ir_op3(f, IR_OP_LOAD, ir_type_parse(m, "<4 x f16>"), h, 0, 0, 0, 0, 0);
  CHECK(v != 0);
  ir_op3(f, IR_OP_STORE, 0, h, v, 0, 0, 0, 0);
  CHECK_EQ_INT(ir_diag_count(m), 0);
  return m;
}

static void test_refuses_unverified(void) {
  IrModule *m = ir_module_new();
  CHECK(ir_sample_saxpy(m) != NULL);
  ClBuf ll = {0}, err = {0};
  CHECK_EQ_INT(em_nvvm(m, NULL, &ll, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "not verified");
  CHECK_EQ_INT(ir_diag_count(m), 0); /* said to the caller, not recorded in the module */
  CHECK_EQ_INT(ir_verify(m), 0);
  CHECK(ir_module_verified(m));
  cl_buf_clear(&err);
  CHECK_EQ_INT(em_nvvm(m, NULL, &ll, &err), 0);
  CHECK_EQ_INT((int)err.len, 0);
  /* a change after the verify: refused again until verified again */
  IrFunc *f = ir_func_at(m, 0);
  ir_func_attr(f, IR_ATTR_MINCTASM, 2, 0, 0);
  CHECK(!ir_module_verified(m));
  cl_buf_clear(&ll);
  CHECK_EQ_INT(em_nvvm(m, NULL, &ll, &err), -1);
  CHECK_EQ_INT(ir_verify(m), 0);
  ir_module_set(m, IR_OPT_SM, 80); /* another target: what is valid may differ */
  CHECK(!ir_module_verified(m));
  CHECK_EQ_INT(ir_verify(m), 0);
  cl_buf_clear(&err);
  CHECK_EQ_INT(em_nvvm(m, NULL, &ll, &err), 0);
  CHECK_CONTAINS(cl_buf_str(&ll), "!\"minctasm\", i32 2}");
  cl_buf_free(&ll);
  cl_buf_free(&err);
  ir_module_free(m);
}

static void test_leaves_module_alone(void) {
  IrModule *mods[3] = {ir_module_new(), ir_module_new(), no_loc_kernel()};
  CHECK(ir_sample_saxpy(mods[0]) != NULL);
  CHECK(ir_sample_mma_unrolled(mods[1], 64, 16) != NULL);
  for (int i = 0; i < 3; i++) {
    IrModule *m = mods[i];
    CHECK_EQ_INT(ir_verify(m), 0);
    for (int li = 0; li < 2; li++) {
      EmOptions o = {li, li, li, "sm_90a"};
      Shape before = shape(m);
      ClBuf a = {0}, b = {0}, err = {0};
      CHECK_EQ_INT(em_nvvm(m, &o, &a, &err), 0);
      same_shape(before, shape(m));
      CHECK_EQ_INT(em_nvvm(m, &o, &b, &err), 0);
      same_shape(before, shape(m));
      CHECK(a.len > 0 && a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
      CHECK_EQ_INT((int)err.len, 0);
      if (i == 2 && li) CHECK_CONTAINS(cl_buf_str(&a), "!DIFile(filename: \"<cutelua>\"");
      if (i == 2) CHECK_CONTAINS(cl_buf_str(&a), "<2 x i32>");
      cl_buf_free(&a);
      cl_buf_free(&b);
      cl_buf_free(&err);
    }
    ir_module_free(m);
  }
}

/* A module whose function has no location but whose strings include
   "<cutelua>" already: the file node is that string's. */
static void test_syn_file_shared(void) {
  IrModule *m = no_loc_kernel();
  ir_str(m, "<cutelua>");
  CHECK_EQ_INT(ir_verify(m), 0);
  Shape before = shape(m);
  EmOptions o = {0, 0, 1, NULL};
  ClBuf ll = {0};
  CHECK_EQ_INT(em_nvvm(m, &o, &ll, NULL), 0);
  same_shape(before, shape(m));
  const char *s = cl_buf_str(&ll);
  const char *first = strstr(s, "!DIFile(");
  CHECK(first != NULL && strstr(first + 1, "!DIFile(") == NULL); /* one file node */
  cl_buf_free(&ll);
  ir_module_free(m);
}

int main(void) {
  test_refuses_unverified();
  test_leaves_module_alone();
  test_syn_file_shared();
  return check_report();
}
