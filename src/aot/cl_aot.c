/* cl_aot: the C runtime API of exported modules (include/cutelua_aot.h):
 * check a shared library made by cute.export (its file before dlopen:
 * aot_file.c; its descriptor after), load it, launch. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_file.h"
#include "cutelua_aot.h"

struct cutelua_aot {
  void *lib;
  const cutelua_aot_module *desc;
  void *module;
};

#define FAIL(...)                                     \
  do {                                                \
    if (err && errlen) snprintf(err, errlen, __VA_ARGS__); \
    return -1;                                        \
  } while (0)

int cutelua_aot_open(const char *path, cutelua_aot **out, char *err, size_t errlen) {
  if (!out) FAIL("cutelua_aot_open: no output pointer");
  *out = NULL;
  if (!path) FAIL("cutelua_aot_open: no path");
  char why[768];
  if (aot_file_check(path, why, sizeof why) != 0) FAIL("cutelua_aot_open: %s", why);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    FAIL("cutelua_aot_open: cannot load %s: %s", path, e ? e : "dlopen failed");
  }
  const cutelua_aot_module *(*entry)(void);
  *(void **)&entry = dlsym(lib, "cutelua_aot_entry");
  if (!entry) {
    dlclose(lib);
    FAIL("cutelua_aot_open: %s is not a module exported by cutelua (no cutelua_aot_entry)", path);
  }
  const cutelua_aot_module *d = entry();
  if (!d) {
    dlclose(lib);
    FAIL("cutelua_aot_open: %s: its cutelua_aot_entry returned no descriptor: not a module exported by cutelua", path);
  }
  if (d->abi != CUTELUA_AOT_ABI) {
    int abi = d->abi;
    dlclose(lib);
    FAIL("cutelua_aot_open: %s has descriptor ABI %d; this cutelua reads %d: export it again", path, abi,
         CUTELUA_AOT_ABI);
  }
  if (d->check(err, errlen) != 0) {
    dlclose(lib);
    return -1;
  }
  cutelua_aot *m = calloc(1, sizeof *m);
  if (!m) {
    dlclose(lib);
    FAIL("cutelua_aot_open: out of memory");
  }
  m->lib = lib;
  m->desc = d;
  if (d->load(&m->module, err, errlen) != 0) {
    dlclose(lib);
    free(m);
    return -1;
  }
  *out = m;
  return 0;
}

const char *cutelua_aot_metadata(const cutelua_aot *m) { return m ? m->desc->metadata : NULL; }

int cutelua_aot_count(const cutelua_aot *m) { return m ? m->desc->nkernels : 0; }

const cutelua_aot_kernel *cutelua_aot_kernel_at(const cutelua_aot *m, int i) {
  return (m && i >= 0 && i < m->desc->nkernels) ? &m->desc->kernels[i] : NULL;
}

const cutelua_aot_kernel *cutelua_aot_find(const cutelua_aot *m, const char *name) {
  if (!m || !name) return NULL;
  for (int i = 0; i < m->desc->nkernels; i++)
    if (strcmp(m->desc->kernels[i].name, name) == 0) return &m->desc->kernels[i];
  return NULL;
}

int cutelua_aot_launch(cutelua_aot *m, const cutelua_aot_kernel *k, void *const *args, void *stream, char *err,
                       size_t errlen) {
  if (!m || !k) FAIL("cutelua_aot_launch: no module or kernel");
  int rc = k->launch_packed(m->module, args, stream);
  if (rc != 0) FAIL("cutelua_aot_launch: %s: %s", k->name, m->desc->error_name(rc));
  return 0;
}

void cutelua_aot_close(cutelua_aot *m) {
  if (!m) return;
  m->desc->unload(m->module);
  dlclose(m->lib);
  free(m);
}

int cutelua_aot_check_file(const char *path, char *err, size_t errlen) {
  char why[768];
  if (aot_file_check(path, why, sizeof why) != 0) FAIL("cutelua_aot_check_file: %s", why);
  return 0;
}
