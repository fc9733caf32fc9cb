/* cl_dl: finding and opening the CUDA libraries at run time (see cl_dl.h). */
#include "cl_dl.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TOOLKIT, DRIVER };

typedef struct LibInfo {
  const char *key, *desc, *soname;
  int where;
} LibInfo;

static const LibInfo libs[CL_LIB__COUNT] = {
#define CL_LIB_INFO(id, key, desc, soname, where) {key, desc, soname, where},
    CL_LIBS(CL_LIB_INFO)
#undef CL_LIB_INFO
};

/* Opened handles and their paths. Opening happens at most once per library;
 * a failed search is retried on the next request (the user may fix CUDA_HOME). */
static void *handles[CL_LIB__COUNT];
static char paths[CL_LIB__COUNT][512];

static const char *const toolkit_subdirs[] = {"nvvm/lib64", "lib64", "targets/x86_64-linux/lib", "lib"};

const char *cl_dl_cuda_home(void) {
  const char *h = getenv("CUDA_HOME");
  if (h && *h) return h;
  h = getenv("CUDA_PATH");
  if (h && *h) return h;
  return "/usr/local/cuda";
}

int cl_dl_find(const char *key) {
  for (int i = 0; i < CL_LIB__COUNT; i++)
    if (strcmp(libs[i].key, key) == 0) return i;
  return -1;
}

const char *cl_dl_key(ClLibId id) { return libs[id].key; }

const char *cl_dl_path(ClLibId id) { return handles[id] ? paths[id] : NULL; }

void *cl_dl_sym(void *handle, const char *name) { return handle ? dlsym(handle, name) : NULL; }

/* Tries one candidate; on failure records why in `tried`. */
static void *try_open(ClLibId id, const char *path, ClBuf *tried) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) {
    /* Record where the loader found it (matters for names on the loader path). */
    struct link_map *lm = NULL;
    const char *where = path;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) where = lm->l_name;
    snprintf(paths[id], sizeof paths[id], "%s", where);
    return h;
  }
  if (tried) {
    const char *why = dlerror();
    if (access(path, F_OK) != 0 && strchr(path, '/')) why = "not present";
    cl_buf_printf(tried, "\n  %s (%s)", path, why ? why : "failed");
  }
  return NULL;
}

static void *search_toolkit(ClLibId id, const char *root, ClBuf *tried) {
  char path[1024];
  for (size_t i = 0; i < sizeof toolkit_subdirs / sizeof *toolkit_subdirs; i++) {
    snprintf(path, sizeof path, "%s/%s/%s", root, toolkit_subdirs[i], libs[id].soname);
    void *h = try_open(id, path, tried);
    if (h) return h;
  }
  return NULL;
}

void *cl_dl_lib(ClLibId id, ClBuf *err) {
  if (handles[id]) return handles[id];
  ClBuf tried = {0};
  void *h = NULL;
  const LibInfo *li = &libs[id];
  if (li->where == DRIVER) {
    h = try_open(id, li->soname, &tried);
    if (!h) {
      const char *dirs[] = {"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"};
      char path[1024];
      for (size_t i = 0; !h && i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", dirs[i], li->soname);
        h = try_open(id, path, &tried);
      }
    }
  } else {
    const char *env[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
    for (size_t i = 0; !h && i < 2; i++)
      if (env[i] && *env[i]) h = search_toolkit(id, env[i], &tried);
    if (!h) h = search_toolkit(id, "/usr/local/cuda", &tried);
    if (!h) h = try_open(id, li->soname, &tried);
  }
  if (h) {
    handles[id] = h;
  } else if (err) {
    cl_buf_printf(err, "cannot load %s (%s)\n  tried:%s", li->desc, li->soname, cl_buf_str(&tried));
    if (li->where == DRIVER)
      cl_buf_puts(err, "\n  (no NVIDIA driver is installed on this machine, or it is not on the loader path)");
    else
      cl_buf_puts(err, "\n  (set CUDA_HOME to the CUDA 13 toolkit directory)");
  }
  cl_buf_free(&tried);
  return h;
}
