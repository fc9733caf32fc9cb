/* test_nv_compile: NVVM IR and PTX to cubin through libnvvm and nvJitLink,
 * for every target in the arch table; options reaching the tools;
 * diagnostics with the failing line marked; user libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "nv_compile.h"
#include "nv_testdata.h"

/* NVVM IR file -> PTX -> cubin; the result (caller frees). */
static NvResult compile_file(const char *file, const NvOptions *o) {
  ClBuf text = nv_test_file(file);
  NvResult r = {0};
  if (nv_compile(&r, text.data, text.len, NV_INPUT_UNKNOWN, o) != 0)
    fprintf(stderr, "%s: %s\n", file, cl_buf_str(&r.part[NV_PART_DIAG]));
  cl_buf_free(&text);
  return r;
}

static void test_every_arch(void) {
  ClBuf ir = nv_test_file("saxpy.ll");
  for (int i = 0; i < cl_target_count(); i++) {
    const ClTarget *a = cl_target_at(i);
    NvOptions o;
    nv_test_options(&o, a->name);
    ClBuf ptx = {0}, cubin = {0}, log = {0}, diag = {0};
    CHECK_EQ_INT(nv_nvvm_to_ptx(ir.data, ir.len, &o, &ptx, &diag), 0);
    char target[64];
    snprintf(target, sizeof target, "\n.target %s\n", a->name);
    CHECK_CONTAINS(cl_buf_str(&ptx), target);
    CHECK_CONTAINS(cl_buf_str(&ptx), "\n.version " CL_PTX_ISA_WRITTEN "\n");
    CHECK_CONTAINS(cl_buf_str(&ptx), ".visible .entry saxpy(");
    CHECK_EQ_INT(nv_ptx_to_cubin(ptx.data, ptx.len, &o, &cubin, &log, &diag), 0);
    CHECK(nv_test_has_kernel(&cubin, "saxpy"));
    char compiling[96];
    snprintf(compiling, sizeof compiling, "Compiling entry function 'saxpy' for '%s'", a->name);
    CHECK_CONTAINS(cl_buf_str(&log), compiling);
    CHECK_STR(cl_buf_str(&diag), "");
    /* The PTX ISA column: the version ptxas needs for this target. */
    ClBuf own = {0};
    cl_buf_printf(&own, ".version %s\n.target %s\n.address_size 64\n.visible .entry k() { ret; }\n", a->ptx_isa,
                  a->name);
    ClBuf c2 = {0};
    CHECK_EQ_INT(nv_ptx_to_cubin(own.data, own.len, &o, &c2, NULL, &diag), 0);
    CHECK(nv_test_has_kernel(&c2, "k"));
    cl_buf_free(&own);
    cl_buf_free(&c2);
    cl_buf_free(&ptx);
    cl_buf_free(&cubin);
    cl_buf_free(&log);
    cl_buf_free(&diag);
  }
  cl_buf_free(&ir);
}

static void test_kernels(void) {
  static const char *const archs[] = {"sm_80", "sm_90a"};
  for (int a = 0; a < 2; a++) {
    NvOptions o;
    nv_test_options(&o, archs[a]);
    /* libdevice: the calls are linked and inlined, nothing external is left */
    NvResult r = compile_file("libdevice.ll", &o);
    CHECK_EQ_INT(r.phase, NV_PHASE_NONE);
    CHECK(strstr(cl_buf_str(&r.part[NV_PART_PTX]), "__nv_") == NULL);
    CHECK(strstr(cl_buf_str(&r.part[NV_PART_PTX]), ".extern") == NULL);
    CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_PTX]), "ex2.approx");
    CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "gelu_exp"));
    nv_result_free(&r);

    /* tensor cores through inline asm */
    r = compile_file("mma.ll", &o);
    const char *ptx = cl_buf_str(&r.part[NV_PART_PTX]);
    CHECK_CONTAINS(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    CHECK_CONTAINS(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    CHECK_CONTAINS(ptx, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16");
    CHECK_CONTAINS(ptx, "st.global.v4.f32");
    CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "mma_tile"));
    nv_result_free(&r);

    /* a 128-byte grid_constant parameter stays in parameter space */
    r = compile_file("grid_constant.ll", &o);
    ptx = cl_buf_str(&r.part[NV_PART_PTX]);
    CHECK_CONTAINS(ptx, ".param .align 64 .b8 desc_copy_param_1[128]");
    CHECK_CONTAINS(ptx, "ld.param.u32");
    CHECK(strstr(ptx, ".local") == NULL);
    CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "desc_copy"));
    nv_result_free(&r);
  }
}

static void test_ptx_input(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  ClBuf ptx = nv_test_file("add_one.ptx");
  CHECK_EQ_INT(nv_input_kind(ptx.data, ptx.len), NV_INPUT_PTX);
  NvResult r = {0};
  CHECK_EQ_INT(nv_compile(&r, ptx.data, ptx.len, NV_INPUT_UNKNOWN, &o), 0);
  CHECK_EQ_INT(r.origin, NV_ORIGIN_COMPILED);
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "add_one"));
  CHECK_STR(cl_buf_str(&r.part[NV_PART_PTX]), cl_buf_str(&ptx));
  CHECK_EQ_INT(r.part[NV_PART_LL].len, 0);
  nv_result_free(&r);
  cl_buf_free(&ptx);

  ClBuf ir = nv_test_file("saxpy.ll");
  CHECK_EQ_INT(nv_input_kind(ir.data, ir.len), NV_INPUT_NVVM);
  cl_buf_free(&ir);
  CHECK_EQ_INT(nv_input_kind("BC\xc0\xde....", 8), NV_INPUT_NVVM);
  CHECK_EQ_INT(nv_input_kind("  // c\n\n.version 8.0\n", 21), NV_INPUT_PTX);
  CHECK_EQ_INT(nv_input_kind("hello", 5), NV_INPUT_UNKNOWN);
  CHECK_EQ_INT(nv_input_kind("", 0), NV_INPUT_UNKNOWN);
  CHECK_EQ_INT(nv_compile(&r, "hello", 5, NV_INPUT_UNKNOWN, &o), -1);
  CHECK_EQ_INT(r.phase, NV_PHASE_INPUT);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "cannot tell whether the input is NVVM IR or PTX");
  nv_result_free(&r);
}

static NvKernelReport report_of(const NvResult *r, const char *name) {
  NvKernelReport k[8];
  int n = nv_report_parse(r->part[NV_PART_LOG].data, r->part[NV_PART_LOG].len, k, 8);
  for (int i = 0; i < n && i < 8; i++)
    if (strcmp(k[i].name, name) == 0) return k[i];
  NvKernelReport none;
  memset(&none, 0, sizeof none);
  none.registers = -1;
  return none;
}

static void test_options_reach_tools(void) {
  NvOptions o;
  nv_test_options(&o, "sm_80");
  /* max registers: ptxas keeps to the limit (and spills to do so) */
  NvResult r = compile_file("pressure.ll", &o);
  NvKernelReport free_k = report_of(&r, "pressure");
  CHECK(free_k.registers > 40);
  CHECK_EQ_INT(free_k.spill_stores, 0);
  nv_result_free(&r);
  o.max_registers = 32;
  r = compile_file("pressure.ll", &o);
  NvKernelReport tight = report_of(&r, "pressure");
  CHECK(tight.registers > 0 && tight.registers <= 32);
  CHECK(tight.spill_stores > 0 && tight.spill_loads > 0);
  CHECK_EQ_INT(tight.entry, 1);
  CHECK_STR(tight.arch, "sm_80");
  ClBuf w = {0};
  CHECK_EQ_INT(nv_report_warnings(&tight, 1, &w), 1);
  CHECK_CONTAINS(cl_buf_str(&w), "kernel 'pressure' spills registers");
  cl_buf_free(&w);
  nv_result_free(&r);

  /* line info: .loc/.file in the PTX, a SASS line table in the cubin */
  nv_test_options(&o, "sm_90a");
  o.lineinfo = 1;
  r = compile_file("lineinfo.ll", &o);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_PTX]), ".loc\t1 8 5");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_PTX]), "kernels/scale.lua\"");
  CHECK_EQ_INT(nv_cubin_has_section(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, ".nv_debug_line_sass"), 1);
  nv_result_free(&r);
  /* (the emitter writes the debug metadata only with line info on; without
   * any, there is no line table) */
  o.lineinfo = 0;
  r = compile_file("saxpy.ll", &o);
  CHECK_EQ_INT(nv_cubin_has_section(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, ".nv_debug_line_sass"), 0);
  CHECK_EQ_INT(nv_cubin_has_section(r.part[NV_PART_CUBIN].data, r.part[NV_PART_CUBIN].len, ".text.saxpy"), 1);
  nv_result_free(&r);

  /* fast math: approximate division (div.full), ftz on f32 arithmetic */
  static const char div_ir[] =
      "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-"
      "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64\"\n"
      "target triple = \"nvptx64-nvidia-cuda\"\n"
      "declare float @llvm.nvvm.sqrt.f(float)\n"
      "define void @div(float addrspace(1)* %p, float %a, float %b) {\n"
      "  %q = fdiv float %a, %b\n"
      "  %r = call float @llvm.nvvm.sqrt.f(float %q)\n"
      "  store float %r, float addrspace(1)* %p, align 4\n"
      "  ret void\n}\n"
      "!nvvm.annotations = !{!0}\n"
      "!0 = !{void (float addrspace(1)*, float, float)* @div, !\"kernel\", i32 1}\n"
      "!nvvmir.version = !{!1}\n!1 = !{i32 2, i32 0, i32 3, i32 1}\n";
  ClBuf ptx = {0}, diag = {0};
  CHECK_EQ_INT(nv_nvvm_to_ptx(div_ir, strlen(div_ir), &o, &ptx, &diag), 0);
  CHECK_STR(cl_buf_str(&diag), "");
  CHECK_CONTAINS(cl_buf_str(&ptx), "div.rn.f32");
  CHECK_CONTAINS(cl_buf_str(&ptx), "sqrt.rn.f32");
  cl_buf_clear(&ptx);
  o.fast_math = 1;
  CHECK_EQ_INT(nv_nvvm_to_ptx(div_ir, strlen(div_ir), &o, &ptx, &diag), 0);
  CHECK_CONTAINS(cl_buf_str(&ptx), "div.full.ftz.f32");
  CHECK_CONTAINS(cl_buf_str(&ptx), "sqrt.approx.ftz.f32");
  cl_buf_clear(&ptx);
  o.ftz = 0; /* fast math without flushing */
  CHECK_EQ_INT(nv_nvvm_to_ptx(div_ir, strlen(div_ir), &o, &ptx, &diag), 0);
  CHECK_CONTAINS(cl_buf_str(&ptx), "div.full.f32");
  CHECK_CONTAINS(cl_buf_str(&ptx), "sqrt.approx.f32");
  CHECK(strstr(cl_buf_str(&ptx), ".ftz") == NULL);
  cl_buf_free(&ptx);
  cl_buf_free(&diag);

  /* opt level 0 reaches libnvvm: the unoptimised PTX keeps its local copies */
  nv_test_options(&o, "sm_80");
  o.opt_level = 0;
  r = compile_file("saxpy.ll", &o);
  size_t o0 = r.part[NV_PART_PTX].len;
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "saxpy"));
  nv_result_free(&r);
  o.opt_level = 3;
  r = compile_file("saxpy.ll", &o);
  CHECK(o0 > r.part[NV_PART_PTX].len);
  nv_result_free(&r);

  /* extra ptxas options go to ptxas: a bad one is ptxas's error */
  snprintf(o.ptxas_options, sizeof o.ptxas_options, "--no-such-ptxas-option");
  r = compile_file("saxpy.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_PTXAS);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_TOOL_LOG]), "no-such-ptxas-option");
  nv_result_free(&r);
  snprintf(o.ptxas_options, sizeof o.ptxas_options, "  -warn-spills   --def-load-cache=cg ");
  r = compile_file("saxpy.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_NONE);
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "saxpy"));
  nv_result_free(&r);
}

static void test_diagnostics(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  /* a parse error: libnvvm names line 12, column 22 */
  NvResult r = compile_file("bad_parse.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_NVVM);
  CHECK_EQ_INT(r.line, 12);
  CHECK_EQ_INT(r.col, 22);
  CHECK_EQ_INT(r.input_stage, NV_STAGE_LL);
  const char *d = cl_buf_str(&r.part[NV_PART_DIAG]);
  CHECK_CONTAINS(d, "libnvvm could not compile the NVVM IR for sm_90a");
  CHECK_CONTAINS(d, "parse use of undefined value '%undefined_value'");
  CHECK_CONTAINS(d, "at line 12, column 22 of the NVVM IR, from kernels/scale.lua:8:");
  CHECK_CONTAINS(d, ">     12 |   %m = fmul float %v, %undefined_value, !dbg !22\n"
                    "         |                      ^");
  CHECK_CONTAINS(d, "      11 |   %v = load float"); /* context, unmarked */
  CHECK_STR(cl_buf_str(&r.part[NV_PART_SOURCE]), "kernels/scale.lua:8");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_TOOL_LOG]), "nvvm-ir (12, 22)");
  CHECK_EQ_INT(r.part[NV_PART_CUBIN].len, 0);
  nv_result_free(&r);

  /* the verifier names no line: the offending instructions are found by text */
  r = compile_file("bad_verify.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_NVVM);
  CHECK_EQ_INT(r.line, 11);
  d = cl_buf_str(&r.part[NV_PART_DIAG]);
  CHECK_CONTAINS(d, "Instruction does not dominate all uses!");
  CHECK_CONTAINS(d, ">     14 |   store float %s, float addrspace(1)* %y, align 4");
  CHECK_CONTAINS(d, ">     11 |   %s = fadd float %v, %v");
  CHECK_CONTAINS(d, "      12 |   br label %exit");
  nv_result_free(&r);

  /* PTX that ptxas rejects */
  ClBuf bad = nv_test_file("bad.ptx");
  ClBuf cubin = {0}, log = {0}, diag = {0};
  CHECK_EQ_INT(nv_ptx_to_cubin(bad.data, bad.len, &o, &cubin, &log, &diag), -1);
  CHECK_CONTAINS(cl_buf_str(&diag), "ptxas could not compile the PTX for sm_90a (NVJITLINK_ERROR_PTX_COMPILE)");
  CHECK_CONTAINS(cl_buf_str(&diag), "Not a name of any known instruction: 'frobnicate'");
  CHECK_CONTAINS(cl_buf_str(&diag), "at line 13 of the PTX:");
  CHECK_CONTAINS(cl_buf_str(&diag), ">     13 | \tfrobnicate.u32 %r2, %r1;");
  CHECK_EQ_INT(cubin.len, 0);
  cl_buf_free(&bad);
  cl_buf_free(&cubin);
  cl_buf_free(&log);
  cl_buf_free(&diag);

  /* a failure on the last line, before the final newline: the excerpt ends there */
  static const char last[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { ret; }\n"
                             "bogus_directive\n";
  diag = (ClBuf){0};
  CHECK_EQ_INT(nv_ptx_to_cubin(last, strlen(last), &o, &cubin, NULL, &diag), -1);
  CHECK_CONTAINS(cl_buf_str(&diag), ">      5 | bogus_directive");
  CHECK(strstr(cl_buf_str(&diag), "bogus_directive\n\n") == NULL);
  CHECK_EQ_INT(cl_buf_str(&diag)[diag.len - 1], 'e'); /* the excerpt is the message's end */
  cl_buf_free(&diag);

  /* NVVM IR whose inline PTX ptxas rejects: the PTX line, and the Lua line
   * found through the PTX's .loc and .file */
  o.lineinfo = 1;
  r = compile_file("bad_asm.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_PTXAS);
  CHECK_EQ_INT(r.input_stage, NV_STAGE_PTX);
  CHECK(r.line > 0);
  CHECK_STR(cl_buf_str(&r.part[NV_PART_SOURCE]), "/work/kernels/scale.lua:8");
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_EXCERPT]), "frobnicate.b32 0;");
  CHECK(r.part[NV_PART_PTX].len > 0); /* the PTX stays, to look at */
  nv_result_free(&r);

  /* bad options are refused before any tool runs */
  nv_test_options(&o, "sm_80");
  o.opt_level = 7;
  r = compile_file("saxpy.ll", &o);
  CHECK_EQ_INT(r.phase, NV_PHASE_OPTIONS);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "bad opt level 7");
  nv_result_free(&r);
  nv_test_options(&o, "sm_80");
  o.arch = 1000;
  ClBuf ptx = {0};
  diag = (ClBuf){0};
  ClBuf ir = nv_test_file("saxpy.ll");
  CHECK_EQ_INT(nv_nvvm_to_ptx(ir.data, ir.len, &o, &ptx, &diag), -1);
  CHECK_CONTAINS(cl_buf_str(&diag), "bad arch index 1000");
  CHECK_CONTAINS(cl_buf_str(&diag), "sm_80, sm_86, sm_89, sm_90, sm_90a");
  cl_buf_free(&ir);
  cl_buf_free(&diag);
}

/* Runs a toolkit program; 0 when it ran and succeeded. */
static int tool(const char *cmd) {
  char full[2100];
  const char *home = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
  snprintf(full, sizeof full, "'%s'/bin/%s >/dev/null 2>&1", home, cmd);
  return system(full);
}

static void test_link_inputs(void) {
  NvOptions o;
  nv_test_options(&o, "sm_80");
  ClBuf use = nv_test_file("use_square.ptx");
  char lib[1024];
  snprintf(lib, sizeof lib, "%s/tests/data/nvvm/lib_square.ptx", CUTELUA_SOURCE_DIR);

  /* without the library, the link fails and says what is missing */
  NvResult r = {0};
  CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), -1);
  CHECK_EQ_INT(r.phase, NV_PHASE_LINK);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "square");
  nv_result_free(&r);

  /* a PTX library, by path (kind from the extension) */
  o.nlink = 1;
  o.link[0] = (NvLinkInput){.kind = 0, .path = lib};
  CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), 0);
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "squares"));
  nv_result_free(&r);

  /* the same from memory, kind from the bytes */
  ClBuf libtext = nv_test_file("lib_square.ptx");
  o.link[0] = (NvLinkInput){.kind = 0, .data = libtext.data, .size = libtext.len, .name = "square-lib"};
  CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), 0);
  nv_result_free(&r);

  /* a relocatable cubin and a fatbin made by the toolkit's ptxas/fatbinary */
  char cmd[1800], cub[256], fat[256];
  snprintf(cub, sizeof cub, "/tmp/cutelua-test-square-%d.cubin", (int)getpid());
  snprintf(fat, sizeof fat, "/tmp/cutelua-test-square-%d.fatbin", (int)getpid());
  snprintf(cmd, sizeof cmd, "ptxas -c -arch=sm_80 '%s' -o '%s'", lib, cub);
  if (tool(cmd) == 0) {
    o.link[0] = (NvLinkInput){.kind = 0, .path = cub};
    CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), 0);
    CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "squares"));
    nv_result_free(&r);
    snprintf(cmd, sizeof cmd, "fatbinary --create='%s' --image3=kind=elf,sm=80,file='%s'", fat, cub);
    if (tool(cmd) == 0) {
      o.link[0] = (NvLinkInput){.kind = 4, .path = fat};
      CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), 0);
      CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "squares"));
      nv_result_free(&r);
    } else {
      printf("note: fatbinary not usable here; the fatbin link input is not tested\n");
    }
  } else {
    printf("note: ptxas not found under CUDA_HOME; cubin and fatbin link inputs are not tested\n");
  }
  remove(cub);
  remove(fat);

  /* an unreadable library is the input's error */
  o.link[0] = (NvLinkInput){.kind = 0, .path = "/nonexistent/lib.ptx"};
  CHECK_EQ_INT(nv_compile(&r, use.data, use.len, NV_INPUT_PTX, &o), -1);
  CHECK_EQ_INT(r.phase, NV_PHASE_INPUT);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "cannot read link input /nonexistent/lib.ptx");
  nv_result_free(&r);
  cl_buf_free(&use);
  cl_buf_free(&libtext);

  /* an NVVM library is linked by libnvvm: text whole, bitcode lazily (its
   * unused functions stay out; lib_cube.bc is lib_cube.ll through llvm-as) */
  ClBuf cubes = nv_test_file("use_cube.ll");
  snprintf(lib, sizeof lib, "%s/tests/data/nvvm/lib_cube.ll", CUTELUA_SOURCE_DIR);
  o.link[0] = (NvLinkInput){.kind = 0, .path = lib};
  CHECK_EQ_INT(nv_compile(&r, cubes.data, cubes.len, NV_INPUT_NVVM, &o), 0);
  CHECK_STR(cl_buf_str(&r.part[NV_PART_DIAG]), "");
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "cubes"));
  nv_result_free(&r);
  snprintf(lib, sizeof lib, "%s/tests/data/nvvm/lib_cube.bc", CUTELUA_SOURCE_DIR);
  CHECK_EQ_INT(nv_compile(&r, cubes.data, cubes.len, NV_INPUT_NVVM, &o), 0);
  CHECK(strstr(cl_buf_str(&r.part[NV_PART_PTX]), "unused_in_lib") == NULL);
  CHECK(nv_test_has_kernel(&r.part[NV_PART_CUBIN], "cubes"));
  nv_result_free(&r);
  /* ...and cannot be linked into PTX */
  ClBuf add = nv_test_file("add_one.ptx");
  CHECK_EQ_INT(nv_compile(&r, add.data, add.len, NV_INPUT_PTX, &o), -1);
  CHECK_EQ_INT(r.phase, NV_PHASE_INPUT);
  CHECK_CONTAINS(cl_buf_str(&r.part[NV_PART_DIAG]), "is NVVM IR, which only an NVVM IR compile can link");
  nv_result_free(&r);
  /* without it the call stays external and the link fails */
  o.nlink = 0;
  CHECK_EQ_INT(nv_compile(&r, cubes.data, cubes.len, NV_INPUT_NVVM, &o), -1);
  CHECK(r.phase == NV_PHASE_LINK || r.phase == NV_PHASE_PTXAS);
  nv_result_free(&r);
  cl_buf_free(&cubes);
  cl_buf_free(&add);
}

static void test_versions(void) {
  ClBuf v = {0}, err = {0};
  CHECK_EQ_INT(nv_tool_versions(&v, &err), 0);
  CHECK_CONTAINS(cl_buf_str(&v), "libnvvm 2.0 (NVVM IR 2.0, debug 3.");
  CHECK_CONTAINS(cl_buf_str(&v), "; nvJitLink 13.");
  CHECK_CONTAINS(cl_buf_str(&v), "; driver ");
  cl_buf_free(&v);
  cl_buf_free(&err);
}

/* NVVM IR that parses but breaks SSA crashed the process inside libnvvm's
 * compile; the verifier now runs first and names the problem. Each case runs
 * in a child, so that a regression fails here instead of killing the test. */
#define BROKEN_HEAD                                                                                         \
  "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-" \
  "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64\"\n"                                      \
  "target triple = \"nvptx64-nvidia-cuda\"\n"
#define BROKEN_TAIL "!nvvmir.version = !{!1}\n!1 = !{i32 2, i32 0, i32 3, i32 1}\n"
static const struct {
  const char *what, *ir, *expect, *marked;
} broken_ssa[] = {
    {"a phi missing a predecessor",
     BROKEN_HEAD "define void @k(float addrspace(1)* %y, i1 %c) {\n"
                 "a:\n  %v = load float, float addrspace(1)* %y, align 4\n  br i1 %c, label %b, label %m\n"
                 "b:\n  br label %m\n"
                 "m:\n  %p = phi float [ %v, %a ]\n  store float %p, float addrspace(1)* %y, align 4\n  ret void\n"
                 "}\n" BROKEN_TAIL,
     "PHINode should have one entry for each predecessor", "  %p = phi float [ %v, %a ]"},
    {"a use before its definition in a loop",
     BROKEN_HEAD "define void @k(float addrspace(1)* %y, i1 %c) {\n"
                 "entry:\n  br label %loop\n"
                 "loop:\n  %x = fadd float %acc, 1.000000e+00\n  %acc = fadd float %x, 1.000000e+00\n"
                 "  br i1 %c, label %loop, label %exit\n"
                 "exit:\n  store float %acc, float addrspace(1)* %y, align 4\n  ret void\n"
                 "}\n" BROKEN_TAIL,
     "Instruction does not dominate all uses!", "  %x = fadd float %acc, 1.000000e+00"},
    {"an instruction that uses itself",
     BROKEN_HEAD "define void @k(float addrspace(1)* %y) {\n"
                 "entry:\n  br label %b\n"
                 "b:\n  %x = fadd float %x, 1.000000e+00\n  store float %x, float addrspace(1)* %y, align 4\n  ret void\n"
                 "}\n" BROKEN_TAIL,
     "Only PHI nodes may reference their own value!", "  %x = fadd float %x, 1.000000e+00"},
};

static int compile_broken(void *arg, int fd) {
  const char *ir = arg;
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  NvResult r = {0};
  int st = nv_compile(&r, ir, strlen(ir), NV_INPUT_UNKNOWN, &o);
  char phase[64];
  snprintf(phase, sizeof phase, "status %d phase %s\n", st, nv_phase_name(r.phase));
  child_say(fd, phase);
  child_say(fd, cl_buf_str(&r.part[NV_PART_DIAG]));
  nv_result_free(&r);
  return 0;
}

static void test_broken_ssa(void) {
  for (size_t i = 0; i < sizeof broken_ssa / sizeof *broken_ssa; i++) {
    ChildResult c = child_run(compile_broken, (void *)broken_ssa[i].ir, 60000);
    CHECK_AT(child_clean(&c), "%s: the compile %s", broken_ssa[i].what, child_describe(&c));
    CHECK_CONTAINS(c.out, "status -1 phase libnvvm\n");
    CHECK_CONTAINS(c.out, "libnvvm could not compile the NVVM IR for sm_90a (NVVM_ERROR_INVALID_IR)");
    CHECK_CONTAINS(c.out, broken_ssa[i].expect);
    char marked[128];
    snprintf(marked, sizeof marked, "| %s", broken_ssa[i].marked);
    CHECK_CONTAINS(c.out, marked); /* the instruction, found in the input */
  }
  /* the verify's NVVM IR checks are stricter than the compile (it calls
   * llvm.fabs.f32 unsupported, which the compile takes): those alone do not
   * stop a compile */
  static const char fabs_ir[] =
      BROKEN_HEAD "declare float @llvm.fabs.f32(float)\n"
                  "define void @k(float addrspace(1)* %y) {\n"
                  "entry:\n  %v = load float, float addrspace(1)* %y, align 4\n"
                  "  %a = call float @llvm.fabs.f32(float %v)\n  store float %a, float addrspace(1)* %y, align 4\n"
                  "  ret void\n}\n" BROKEN_TAIL;
  ChildResult c = child_run(compile_broken, (void *)fabs_ir, 60000);
  CHECK_AT(child_clean(&c), "llvm.fabs.f32: the compile %s", child_describe(&c));
  CHECK_CONTAINS(c.out, "status 0 phase none\n");
}

int main(void) {
  test_every_arch();
  test_kernels();
  test_ptx_input();
  test_options_reach_tools();
  test_diagnostics();
  test_broken_ssa();
  test_link_inputs();
  test_versions();
  return check_report();
}
