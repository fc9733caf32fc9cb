/* test_ir_compile: IR built in C through the whole path: printed IR and NVVM IR
 * against the goldens kept in tests/golden/ir (sample_*.ir, sample_*.ll), then
 * libnvvm -> PTX -> nvJitLink -> cubin for sm_80 and sm_90a with the PTX
 * instructions checked; the large unrolled tile (512 mma.sync, 128 ldmatrix.x4)
 * compiles too; a PTX error in inline asm comes back with the Lua line of the op.
 * CUTELUA_UPDATE_GOLDEN=1 rewrites the goldens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "emit.h"
#include "ir_sample.h"
#include "nv_compile.h"

static ClBuf read_golden(const char *name) {
  char path[1024];
  ClBuf b = {0};
  snprintf(path, sizeof path, "%s/tests/golden/ir/%s", CUTELUA_SOURCE_DIR, name);
  if (cl_buf_read_file(&b, path) != 0) cl_buf_puts(&b, "(missing)");
  return b;
}

static void golden(const char *name, const ClBuf *got) {
  const char *update = getenv("CUTELUA_UPDATE_GOLDEN");
  if (update && strcmp(update, "1") == 0) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/ir/%s", CUTELUA_SOURCE_DIR, name);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(got->data, 1, got->len, f);
      fclose(f);
    }
  }
  ClBuf want = read_golden(name);
  CHECK_AT(strcmp(cl_buf_str(got), cl_buf_str(&want)) == 0, "%s differs from the golden", name);
  cl_buf_free(&want);
}

/* NVVM IR -> cubin for arch; returns the PTX (caller frees) or an empty buffer. */
static ClBuf compile(const ClBuf *ll, const char *arch, int lineinfo, ClBuf *diag_out) {
  NvOptions o;
  nv_options_default(&o);
  nv_options_set_arch(&o, arch);
  o.cache = 0;
  o.cache_dir[0] = 0;
  o.keep = 0;
  o.lineinfo = lineinfo;
  NvResult r = {0};
  ClBuf ptx = {0};
  int rc = nv_compile(&r, ll->data, ll->len, NV_INPUT_NVVM, &o);
  if (rc == 0 && r.part[NV_PART_CUBIN].len > 0) {
    cl_buf_add(&ptx, r.part[NV_PART_PTX].data, r.part[NV_PART_PTX].len);
  } else if (diag_out) {
    cl_buf_puts(diag_out, cl_buf_str(&r.part[NV_PART_DIAG]));
    cl_buf_puts(diag_out, "\nSOURCE: ");
    cl_buf_puts(diag_out, cl_buf_str(&r.part[NV_PART_SOURCE]));
  } else {
    fprintf(stderr, "compile for %s failed:\n%s\n", arch, cl_buf_str(&r.part[NV_PART_DIAG]));
  }
  nv_result_free(&r);
  return ptx;
}

/* Verifies m for target sm, then emits it (the emitter takes verified IR). */
static int emit(IrModule *m, int sm, int line_info, ClBuf *ll) {
  ir_module_set(m, IR_OPT_SM, sm);
  if (ir_verify(m) != 0) {
    fprintf(stderr, "%s", ir_diag(m));
    return -1;
  }
  EmOptions o = {0, 0, line_info, NULL};
  ClBuf err = {0};
  int rc = em_nvvm(m, &o, ll, &err);
  if (rc) fprintf(stderr, "%s", cl_buf_str(&err));
  cl_buf_free(&err);
  return rc;
}

static void test_saxpy(void) {
  IrModule *m = ir_module_new();
  CHECK(ir_sample_saxpy(m) != NULL);
  ClBuf text = {0}, ll = {0};
  ir_print_module(m, &text, IR_PRINT_LOCS);
  golden("sample_saxpy.ir", &text);
  CHECK_EQ_INT(emit(m, 80, 0, &ll), 0);
  golden("sample_saxpy.ll", &ll);
  static const char *const archs[] = {"sm_80", "sm_90a"};
  for (int a = 0; a < 2; a++) {
    ClBuf ptx = compile(&ll, archs[a], 0, NULL);
    CHECK_CONTAINS(cl_buf_str(&ptx), ".visible .entry saxpy(");
    CHECK_CONTAINS(cl_buf_str(&ptx), "fma.rn.f32");
    CHECK_CONTAINS(cl_buf_str(&ptx), ".maxntid 256, 1, 1");
    CHECK_CONTAINS(cl_buf_str(&ptx), "ld.global.f32");
    CHECK_CONTAINS(cl_buf_str(&ptx), "st.global.f32");
    cl_buf_free(&ptx);
  }
  cl_buf_free(&text);
  cl_buf_free(&ll);
  ir_module_free(m);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static void test_big_tile(void) {
  IrModule *m = ir_module_new();
  IrFunc *f = ir_sample_mma_unrolled(m, 512, 128);
  CHECK(f != NULL);
  ClBuf ll = {0};
  CHECK_EQ_INT(emit(m, 90, 1, &ll), 0);
  static const char *const archs[] = {"sm_80", "sm_90a"};
  for (int a = 0; a < 2; a++) {
    ClBuf ptx = compile(&ll, archs[a], 1, NULL);
    const char *p = cl_buf_str(&ptx);
    CHECK_EQ_INT(count(p, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 512);
    CHECK_EQ_INT(count(p, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 128);
    CHECK_EQ_INT(count(p, "st.global.v4.f32"), 16);
    CHECK_CONTAINS(p, ".file\t1 \"mma_tile.lua\"");
    CHECK_CONTAINS(p, ".loc\t1 20 0");
    cl_buf_free(&ptx);
  }
  cl_buf_free(&ll);
  ir_module_free(m);
}

/* A PTX error in an op's inline asm: ptxas names a PTX line; the driver maps
   it back through .loc to the Lua line recorded on the op. */
static void test_error_source(void) {
  IrModule *m = ir_module_new();
  ir_set_loc(m, "kern.lua", 3, "k");
  IrFunc *f = ir_func_new(m, "bad_asm", IR_FUNC_KERNEL, IR_T_VOID);
  IrRef out = ir_param(f, ir_type_parse(m, "ptr<i32, global, 4>"));
  ir_set_loc(m, "kern.lua", 33, "k");
  int64_t imm[3] = {ir_str(m, "bogus.instruction.b32 $0;"), ir_str(m, "=r"), IR_FLAG_SIDEEFFECT};
  IrRef v = ir_op(f, IR_OP_ASM, IR_T_I32, NULL, 0, imm, 3);
  ir_set_loc(m, "kern.lua", 34, "k");
  ir_op3(f, IR_OP_STORE, 0, out, v, 0, 0, 0, 0);
  ClBuf ll = {0}, diag = {0};
  CHECK_EQ_INT(emit(m, 80, 1, &ll), 0);
  ClBuf ptx = compile(&ll, "sm_80", 1, &diag);
  CHECK_EQ_INT(ptx.len, 0);
  CHECK_CONTAINS(cl_buf_str(&diag), "bogus.instruction");
  CHECK_CONTAINS(cl_buf_str(&diag), "kern.lua:33");
  cl_buf_free(&diag);
  cl_buf_free(&ptx);
  cl_buf_free(&ll);
  ir_module_free(m);
}

int main(void) {
  test_saxpy();
  test_big_tile();
  test_error_source();
  return check_report();
}
