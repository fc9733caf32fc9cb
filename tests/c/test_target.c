/* The target table (src/target): every row's name, tool flags and compute
 * capability agree; look-ups; the GPU -> target mapping; the features, with
 * sm_90 and sm_90a told apart; the wording of a refusal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "target.h"

static void test_rows(void) {
  static const char *const required[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a"};
  for (size_t i = 0; i < sizeof required / sizeof *required; i++) CHECK(cl_target_find(required[i]) != NULL);
  for (int i = 0; i < cl_target_count(); i++) {
    const ClTarget *a = cl_target_at(i);
    char want[64];
    CHECK(cl_target_find(a->name) == a);
    CHECK_EQ_INT(cl_target_index(a), i);
    snprintf(want, sizeof want, "-arch=compute_%s", a->name + 3);
    CHECK_STR(a->nvvm_arch, want);
    snprintf(want, sizeof want, "-arch=%s", a->name);
    CHECK_STR(a->link_arch, want);
    CHECK_EQ_INT(a->arch_specific, a->name[strlen(a->name) - 1] == 'a');
    CHECK_EQ_INT(atoi(a->name + 3), a->cc);
    CHECK_CONTAINS(cl_target_list(), a->name);
    /* an "a" target has what the plain one of its cc has (where there is one), and more */
    const ClTarget *plain = cl_target_plain(a->cc);
    if (a->arch_specific && plain) CHECK((a->features & plain->features) == plain->features && a->features != plain->features);
  }
  CHECK(strncmp(cl_target_list(), "sm_80, sm_86", 12) == 0);
  CHECK(cl_target_list()[strlen(cl_target_list()) - 1] != ' ');
  CHECK(cl_target_at(-1) == NULL);
  CHECK(cl_target_at(cl_target_count()) == NULL);
  CHECK(cl_target_find("sm_91") == NULL);
  CHECK(cl_target_find("compute_90a") == NULL);
  CHECK(cl_target_find(NULL) == NULL);
  CHECK_EQ_INT(cl_target_index(NULL), -1);
  CHECK(cl_target_find(CL_TARGET_FALLBACK) != NULL);

  /* compute capability -> target */
  static const struct {
    int cc;
    const char *arch;
  } fits[] = {{80, "sm_80"}, {86, "sm_86"}, {87, "sm_86"}, {89, "sm_89"},  {90, "sm_90a"},  {100, "sm_100a"},
              {103, "sm_103a"}, {110, "-"},  {120, "sm_120a"}, {121, "sm_120"}, {75, "-"}, {70, "-"}};
  for (size_t i = 0; i < sizeof fits / sizeof *fits; i++) {
    const ClTarget *got = cl_target_for_cc(fits[i].cc);
    CHECK_STR(got ? got->name : "-", fits[i].arch);
  }
  CHECK_STR(cl_target_plain(90)->name, "sm_90");
  CHECK_STR(cl_target_plain(100)->name, "sm_100");
  CHECK(cl_target_plain(103) == NULL);
  CHECK(cl_target_plain(75) == NULL);
}

/* One row per (target, feature) that the PTX ISA decides (docs/compiler.md). */
static void test_features(void) {
  static const struct {
    const char *target;
    ClFeature f;
    int has;
  } cases[] = {
      {"sm_80", CL_FEAT_MMA_SYNC, 1},     {"sm_80", CL_FEAT_CP_ASYNC, 1},     {"sm_80", CL_FEAT_BF16, 1},
      {"sm_80", CL_FEAT_TF32, 1},         {"sm_80", CL_FEAT_FP8, 0},          {"sm_86", CL_FEAT_FP8, 0},
      {"sm_89", CL_FEAT_FP8, 1},          {"sm_89", CL_FEAT_STMATRIX, 0},     {"sm_89", CL_FEAT_CLUSTER, 0},
      {"sm_90", CL_FEAT_STMATRIX, 1},     {"sm_90", CL_FEAT_TMA, 1},          {"sm_90", CL_FEAT_MBARRIER_TX, 1},
      {"sm_90", CL_FEAT_CLUSTER, 1},      {"sm_90", CL_FEAT_ELECT, 1},        {"sm_90", CL_FEAT_DSMEM, 1},
      {"sm_90", CL_FEAT_WGMMA, 0},        {"sm_90", CL_FEAT_SETMAXNREG, 0},   {"sm_90", CL_FEAT_TMA_MULTICAST, 0},
      {"sm_90a", CL_FEAT_WGMMA, 1},       {"sm_90a", CL_FEAT_SETMAXNREG, 1},  {"sm_90a", CL_FEAT_TMA_MULTICAST, 1},
      {"sm_90a", CL_FEAT_TCGEN05, 0},     {"sm_100", CL_FEAT_WGMMA, 0},       {"sm_100", CL_FEAT_TCGEN05, 0},
      {"sm_100a", CL_FEAT_WGMMA, 0},      {"sm_100a", CL_FEAT_TCGEN05, 1},    {"sm_100a", CL_FEAT_SETMAXNREG, 1},
      {"sm_103a", CL_FEAT_TCGEN05, 1},    {"sm_120", CL_FEAT_TMA, 1},         {"sm_120", CL_FEAT_SETMAXNREG, 0},
      {"sm_120a", CL_FEAT_SETMAXNREG, 1}, {"sm_120a", CL_FEAT_WGMMA, 0},      {"sm_120a", CL_FEAT_TCGEN05, 0},
      {"sm_89", CL_FEAT_GRIDDEP, 0},      {"sm_90", CL_FEAT_GRIDDEP, 1},      {"sm_120", CL_FEAT_GRIDDEP, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_AT(cl_target_has(cl_target_find(cases[i].target), cases[i].f) == cases[i].has, "%s %s %d", cases[i].target,
             cl_feature_name(cases[i].f), cases[i].has);
  for (int i = 0; i < cl_target_count(); i++) CHECK(cl_target_has(cl_target_at(i), CL_FEAT_NONE));
  CHECK(!cl_target_has(NULL, CL_FEAT_MMA_SYNC));
  /* names both ways, and what each is */
  for (int f = 0; f < CL_FEAT__COUNT; f++) {
    CHECK_EQ_INT(cl_feature_find(cl_feature_name(f)), f);
    CHECK(cl_feature_what(f) && strlen(cl_feature_what(f)) > 8);
  }
  CHECK_EQ_INT(cl_feature_find("WARP_DRIVE"), CL_FEAT_NONE);
  CHECK(cl_feature_name(CL_FEAT__COUNT) == NULL);
}

static void test_wording(void) {
  ClBuf b = {0};
  cl_target_needs(cl_target_find("sm_90"), CL_FEAT_WGMMA, &b);
  CHECK_STR(cl_buf_str(&b), "needs WGMMA, which sm_90 lacks (sm_90a has it)");
  cl_buf_clear(&b);
  cl_target_needs(cl_target_find("sm_80"), CL_FEAT_TCGEN05, &b);
  CHECK_STR(cl_buf_str(&b), "needs TCGEN05, which sm_80 lacks (sm_100a and sm_103a have it)");
  cl_buf_clear(&b);
  cl_target_needs(cl_target_find("sm_86"), CL_FEAT_SETMAXNREG, &b);
  CHECK_STR(cl_buf_str(&b), "needs SETMAXNREG, which sm_86 lacks (sm_90a, sm_100a, sm_103a and sm_120a have it)");
  cl_buf_clear(&b);
  cl_target_with(CL_FEAT_FP8, &b);
  CHECK_STR(cl_buf_str(&b), "sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_103a, sm_120 and sm_120a");
  cl_buf_free(&b);
}

int main(void) {
  test_rows();
  test_features();
  test_wording();
  return check_report();
}
