/* nv_elf: reading a cubin (an ELF64 file, machine EM_CUDA = 190).
 *
 * Only what cutelua needs: the section names (to see line tables) and the
 * kernels in the symbol table (FUNC symbols whose st_other carries the CUDA
 * entry flag 0x10). Every offset is checked against the size, so a truncated
 * or corrupted cubin gives an error, never a read past the end. */
#include <stdint.h>
#include <string.h>

#include "nv_compile.h"

enum { EM_CUDA = 190, SHT_SYMTAB = 2, STT_FUNC = 2, STO_CUDA_ENTRY = 0x10 };

typedef struct Elf {
  const uint8_t *p;
  size_t n;
  uint64_t shoff;
  uint16_t shentsize, shnum, shstrndx;
} Elf;

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t u64(const uint8_t *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }

static int elf_open(Elf *e, const void *data, size_t n, ClBuf *err) {
  const uint8_t *p = data;
  e->p = p, e->n = n;
  if (n < 64 || memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || p[5] != 1) {
    if (err) cl_buf_puts(err, "not a cubin: no 64-bit little-endian ELF header");
    return -1;
  }
  if (u16(p + 18) != EM_CUDA) {
    if (err) cl_buf_printf(err, "not a cubin: ELF machine %u, not EM_CUDA (190)", u16(p + 18));
    return -1;
  }
  e->shoff = u64(p + 40);
  e->shentsize = u16(p + 58);
  e->shnum = u16(p + 60);
  e->shstrndx = u16(p + 62);
  if (e->shentsize < 64 || e->shoff > n || (uint64_t)e->shnum * e->shentsize > n - e->shoff || e->shstrndx >= e->shnum) {
    if (err) cl_buf_puts(err, "corrupt cubin: section headers out of bounds");
    return -1;
  }
  return 0;
}

typedef struct Section {
  uint32_t name, type, link;
  uint64_t offset, size, entsize;
} Section;

static int section(const Elf *e, unsigned i, Section *s) {
  const uint8_t *h = e->p + e->shoff + (uint64_t)i * e->shentsize;
  s->name = u32(h);
  s->type = u32(h + 4);
  s->offset = u64(h + 24);
  s->size = u64(h + 32);
  s->link = u32(h + 40);
  s->entsize = u64(h + 56);
  return s->type == 8 /* NOBITS */ || (s->offset <= e->n && s->size <= e->n - s->offset) ? 0 : -1;
}

/* A NUL-terminated string at offset off of a string section, or NULL. */
static const char *string_at(const Elf *e, const Section *strtab, uint64_t off) {
  if (off >= strtab->size) return NULL;
  const char *s = (const char *)e->p + strtab->offset + off;
  return memchr(s, 0, strtab->size - off) ? s : NULL;
}

int nv_cubin_has_section(const void *cubin, size_t len, const char *name) {
  Elf e;
  Section strs, s;
  if (elf_open(&e, cubin, len, NULL) != 0 || section(&e, e.shstrndx, &strs) != 0) return -1;
  for (unsigned i = 0; i < e.shnum; i++) {
    if (section(&e, i, &s) != 0) return -1;
    const char *n = string_at(&e, &strs, s.name);
    if (n && strcmp(n, name) == 0) return 1;
  }
  return 0;
}

int nv_cubin_kernels(const void *cubin, size_t len, ClBuf *out, ClBuf *err) {
  Elf e;
  if (elf_open(&e, cubin, len, err) != 0) return -1;
  for (unsigned i = 0; i < e.shnum; i++) {
    Section sym, str;
    if (section(&e, i, &sym) != 0) goto corrupt;
    if (sym.type != SHT_SYMTAB) continue;
    if (sym.entsize < 24 || sym.link >= e.shnum || section(&e, sym.link, &str) != 0) goto corrupt;
    for (uint64_t k = 0; k + 1 <= sym.size / sym.entsize; k++) {
      const uint8_t *s = e.p + sym.offset + k * sym.entsize;
      uint8_t info = s[4], other = s[5];
      if ((info & 15) != STT_FUNC || !(other & STO_CUDA_ENTRY)) continue;
      const char *name = string_at(&e, &str, u32(s));
      if (!name) goto corrupt;
      cl_buf_printf(out, "%s\n", name);
    }
  }
  return 0;
corrupt:
  if (err) cl_buf_puts(err, "corrupt cubin: a section or symbol lies outside the file");
  return -1;
}
