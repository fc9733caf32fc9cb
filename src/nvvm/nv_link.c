/* nv_link: extra link inputs (user libraries) and what kind each one is.
 *
 * NVVM IR (text or bitcode) goes to libnvvm, which links only the functions
 * the module uses; everything else goes to nvJitLink. A kind left AUTO is
 * decided by the file name's extension, else by the first bytes. */
#include <stdio.h>
#include <string.h>

#include "nv_internal.h"

static const struct {
  const char *name;
  int jit_type;
} kinds[] = {
#define NV_LINK_ROW(id, name, type) {name, type},
    NV_LINK_KINDS(NV_LINK_ROW)
#undef NV_LINK_ROW
};

const char *nv_link_kind_name(int kind) { return kind >= 0 && kind < NV_LINK__COUNT ? kinds[kind].name : "?"; }
int nv_link_jit_type(int kind) { return kind >= 0 && kind < NV_LINK__COUNT ? kinds[kind].jit_type : -1; }

int nv_link_kind_find(const char *name) {
  for (int i = 0; name && i < NV_LINK__COUNT; i++)
    if (strcmp(kinds[i].name, name) == 0) return i;
  return -1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int kind_from_name(const char *name) {
  static const struct {
    const char *ext;
    int kind;
  } exts[] = {{".bc", NV_LINK_NVVM}, {".ll", NV_LINK_NVVM}, {".nvvm", NV_LINK_NVVM}, {".ptx", NV_LINK_PTX},
              {".cubin", NV_LINK_CUBIN}, {".fatbin", NV_LINK_FATBIN}, {".ltoir", NV_LINK_LTOIR},
              {".o", NV_LINK_OBJECT}, {".a", NV_LINK_LIBRARY}};
  for (size_t i = 0; name && i < sizeof exts / sizeof *exts; i++)
    if (ends_with(name, exts[i].ext)) return exts[i].kind;
  return NV_LINK_AUTO;
}

static int kind_from_bytes(const unsigned char *p, size_t n) {
  if (n >= 4 && memcmp(p, "BC\xc0\xde", 4) == 0) return NV_LINK_NVVM;         /* LLVM bitcode */
  if (n >= 4 && memcmp(p, "\xde\xc0\x17\x0b", 4) == 0) return NV_LINK_NVVM;   /* bitcode wrapper */
  if (n >= 4 && memcmp(p, "\x50\xed\x55\xba", 4) == 0) return NV_LINK_FATBIN; /* fatbin magic 0xba55ed50 */
  if (n >= 8 && memcmp(p, "!<arch>\n", 8) == 0) return NV_LINK_LIBRARY;
  if (n >= 20 && memcmp(p, "\x7f" "ELF", 4) == 0) {
    /* e_machine 190 is EM_CUDA: a cubin; any other ELF is a host object. */
    int machine = p[18] | p[19] << 8;
    return machine == 190 ? NV_LINK_CUBIN : NV_LINK_OBJECT;
  }
  int k = nv_input_kind((const char *)p, n);
  return k == NV_INPUT_PTX ? NV_LINK_PTX : k == NV_INPUT_NVVM ? NV_LINK_NVVM : NV_LINK_AUTO;
}

int nv_link_load(const NvLinkInput *in, int index, NvLinkData *d, ClBuf *err) {
  memset(d, 0, sizeof *d);
  const char *label = in->name ? in->name : in->path;
  if (label) snprintf(d->name, sizeof d->name, "%s", label);
  else snprintf(d->name, sizeof d->name, "link input %d", index + 1);
  if (in->path) {
    int e = cl_buf_read_file(&d->owned, in->path);
    if (e) {
      cl_buf_printf(err, "cannot read link input %s: %s", in->path, strerror(e));
      return -1;
    }
    d->data = d->owned.data ? d->owned.data : "";
    d->size = d->owned.len;
  } else {
    d->data = in->data;
    d->size = in->size;
  }
  d->kind = in->kind;
  if (d->kind == NV_LINK_AUTO) d->kind = kind_from_name(in->path ? in->path : in->name);
  if (d->kind == NV_LINK_AUTO) d->kind = kind_from_bytes(d->data, d->size);
  if (d->kind == NV_LINK_AUTO) {
    cl_buf_printf(err, "link input %s: cannot tell what it is from its name or its first bytes; give its kind "
                       "(nvvm, ptx, cubin, fatbin, ltoir, object, library)", d->name);
    nv_link_data_free(d);
    return -1;
  }
  return 0;
}

void nv_link_data_free(NvLinkData *d) { cl_buf_free(&d->owned); }
