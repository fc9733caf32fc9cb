/* target_api.c: the target table's function table for Lua (CLTargetApi,
 * target.cdef): rows and features by number. */
#include <stdio.h>

#include "target.h"

static int32_t api_count(void) { return cl_target_count(); }
static int32_t api_find(const char *name) { return cl_target_index(cl_target_find(name)); }

static int32_t api_info(int32_t i, ClTargetInfo *out) {
  const ClTarget *t = cl_target_at(i);
  if (!t || !out) return -1;
  *out = (ClTargetInfo){t->name, t->cc, t->arch_specific, t->ptx_isa, t->description};
  return 0;
}

static int32_t api_feature_count(void) { return CL_FEAT__COUNT; }
static const char *api_feature_name(int32_t f) { return cl_feature_name(f); }
static const char *api_feature_what(int32_t f) { return cl_feature_what(f); }
static int32_t api_feature_find(const char *name) { return cl_feature_find(name); }

static int32_t api_has(int32_t target, int32_t feature) {
  if (feature < 0 || feature >= CL_FEAT__COUNT) return 0;
  return cl_target_has(cl_target_at(target), (ClFeature)feature);
}

static int32_t api_for_cc(int32_t cc) { return cl_target_index(cl_target_for_cc(cc)); }

static int32_t api_needs(int32_t target, int32_t feature, char *buf, size_t len) {
  ClBuf b = {0};
  cl_target_needs(cl_target_at(target), feature >= 0 && feature < CL_FEAT__COUNT ? (ClFeature)feature : CL_FEAT_NONE,
                  &b);
  if (buf && len) snprintf(buf, len, "%s", cl_buf_str(&b));
  int32_t n = (int32_t)b.len;
  cl_buf_free(&b);
  return n;
}

static const CLTargetApi api = {
    .abi = CL_TARGET_ABI,
    .count = api_count,
    .find = api_find,
    .info = api_info,
    .feature_count = api_feature_count,
    .feature_name = api_feature_name,
    .feature_what = api_feature_what,
    .feature_find = api_feature_find,
    .has = api_has,
    .for_cc = api_for_cc,
    .list = cl_target_list,
    .needs = api_needs,
};

const void *cl_target_api(void) { return &api; }
