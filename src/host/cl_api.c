/* cl_api: the registry of C subsystem tables (see cl_api.h) and the host's own. */
#include "cl_api.h"

#include <stdio.h>
#include <time.h>

#include "aot_file.h"
#include "cl_dl.h"
#include "cl_host.h"
#include "rt.h"
#include "cl_version.h"
#include "nv_compile.h"
#include "ir.h"
#include "emit.h"
#include "target.h"

static const char *host_version(void) { return CUTELUA_VERSION_STRING; }

static int host_lib_status(const char *key, char *path, size_t pathlen, char *msg, size_t msglen) {
  int id = cl_dl_find(key);
  if (id < 0) return -1;
  ClBuf err = {0};
  void *h = cl_dl_lib((ClLibId)id, &err);
  if (h) {
    if (path && pathlen) snprintf(path, pathlen, "%s", cl_dl_path((ClLibId)id));
  } else if (msg && msglen) {
    snprintf(msg, msglen, "%s", cl_buf_str(&err));
  }
  cl_buf_free(&err);
  return h != NULL;
}

static uint64_t host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int host_build_id(const char *dir, char *hex17, char *msg, size_t msglen) {
  uint64_t id = 0;
  ClBuf err = {0};
  int st = cl_host_build_id(dir, &id, &err);
  if (st == 0 && hex17) snprintf(hex17, 17, "%016llx", (unsigned long long)id);
  if (st != 0 && msg && msglen) snprintf(msg, msglen, "%s", cl_buf_str(&err));
  cl_buf_free(&err);
  return st;
}

static const CLHostApi host_api = {
    .abi = CL_HOST_ABI,
    .version = host_version,
    .lib_status = host_lib_status,
    .now_ns = host_now_ns,
    .cuda_home = cl_dl_cuda_home,
    .build_id = host_build_id,
    .bundled_file = cl_host_bundled_file,
};

const void *cl_host_api(void) { return &host_api; }

/* One row per subsystem; each new subsystem adds its row here. */
const ClApiEntry cl_api_entries[] = {
    {"host", "CLHostApi", "src/host/host.cdef", cl_host_api},
    {"target", "CLTargetApi", "src/target/target.cdef", cl_target_api},
    {"rt", "CLRtApi", "src/rt/rt.cdef", cl_rt_api},
    {"nvvm", "CLNvApi", "src/nvvm/nvvm.cdef", cl_nv_api},
    {"ir", "CLIrApi", "src/ir/ir.cdef", cl_ir_api},
    {"emit", "CLEmitApi", "src/emit/emit.cdef", cl_emit_api},
    {"aot", "CLAotApi", "src/aot/aot.cdef", cl_aot_api},
};
const size_t cl_api_entry_count = sizeof cl_api_entries / sizeof *cl_api_entries;
