/* target.c: the target table (CL_TARGETS, target.h) as data, its look-ups,
 * and the wording of a refusal ("needs WGMMA, which sm_90 lacks (sm_90a has
 * it)"). Everything is static data: no initialisation, safe from any thread. */
#include <string.h>

#include "target.h"

static const ClTarget targets[] = {
#define CL_TARGET_ROW(id, cc, a, isa, feats, desc) \
  {"sm_" #id, cc, a, isa, (feats), desc, "-arch=compute_" #id, "-arch=sm_" #id},
    CL_TARGETS(CL_TARGET_ROW)
#undef CL_TARGET_ROW
};
enum { TARGET_COUNT = sizeof targets / sizeof *targets };

static const char *const feature_names[] = {
#define CL_FEATURE_NAME(id, what) #id,
    CL_FEATURES(CL_FEATURE_NAME)
#undef CL_FEATURE_NAME
};
static const char *const feature_whats[] = {
#define CL_FEATURE_WHAT(id, what) what,
    CL_FEATURES(CL_FEATURE_WHAT)
#undef CL_FEATURE_WHAT
};
_Static_assert(CL_FEAT__COUNT <= 64, "features are bits of a uint64_t");

/* ", sm_80, sm_86, ..." (the list starts 2 bytes in) */
static const char target_list[] =
#define CL_TARGET_NAME(id, cc, a, isa, feats, desc) ", sm_" #id
    CL_TARGETS(CL_TARGET_NAME)
#undef CL_TARGET_NAME
    ;

int cl_target_count(void) { return TARGET_COUNT; }
const ClTarget *cl_target_at(int i) { return i >= 0 && i < TARGET_COUNT ? &targets[i] : NULL; }
int cl_target_index(const ClTarget *t) { return t ? (int)(t - targets) : -1; }

const ClTarget *cl_target_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < TARGET_COUNT; i++)
    if (strcmp(targets[i].name, name) == 0) return &targets[i];
  return NULL;
}

const char *cl_target_list(void) { return target_list + 2; }

const ClTarget *cl_target_for_cc(int cc) {
  int best = -1;
  for (int i = 0; i < TARGET_COUNT; i++)
    if (targets[i].arch_specific && targets[i].cc == cc) return &targets[i];
  for (int i = 0; i < TARGET_COUNT; i++) {
    const ClTarget *a = &targets[i];
    if (a->arch_specific || a->cc / 10 != cc / 10 || a->cc > cc) continue;
    if (best < 0 || a->cc > targets[best].cc) best = i;
  }
  return best < 0 ? NULL : &targets[best];
}

const ClTarget *cl_target_plain(int cc) {
  for (int i = 0; i < TARGET_COUNT; i++)
    if (!targets[i].arch_specific && targets[i].cc == cc) return &targets[i];
  return NULL;
}

int cl_target_has(const ClTarget *t, ClFeature f) {
  if (f == CL_FEAT_NONE) return 1;
  if (!t || f < 0 || f >= CL_FEAT__COUNT) return 0;
  return (t->features >> f) & 1;
}

const char *cl_feature_name(int f) { return f >= 0 && f < CL_FEAT__COUNT ? feature_names[f] : NULL; }
const char *cl_feature_what(int f) { return f >= 0 && f < CL_FEAT__COUNT ? feature_whats[f] : NULL; }

int cl_feature_find(const char *name) {
  if (!name) return CL_FEAT_NONE;
  for (int f = 0; f < CL_FEAT__COUNT; f++)
    if (strcmp(feature_names[f], name) == 0) return f;
  return CL_FEAT_NONE;
}

void cl_target_with(ClFeature f, ClBuf *out) {
  int n = 0, total = 0;
  for (int i = 0; i < TARGET_COUNT; i++) total += cl_target_has(&targets[i], f);
  for (int i = 0; i < TARGET_COUNT; i++) {
    if (!cl_target_has(&targets[i], f)) continue;
    n++;
    cl_buf_printf(out, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", targets[i].name);
  }
  if (!total) cl_buf_puts(out, "no target");
}

void cl_target_needs(const ClTarget *t, ClFeature f, ClBuf *out) {
  int total = 0;
  for (int i = 0; i < TARGET_COUNT; i++) total += cl_target_has(&targets[i], f);
  cl_buf_printf(out, "needs %s, which %s lacks (", cl_feature_name(f) ? cl_feature_name(f) : "?",
                t ? t->name : "the target");
  cl_target_with(f, out);
  cl_buf_puts(out, total == 1 ? " has it)" : total ? " have it)" : " has it)");
}
