/* aot_file: the checks an exported shared library's file passes before
 * anything dlopens it, and the seal cute.export puts on it.
 *
 * dlopen trusts the file: a library truncated inside a segment it maps kills
 * the process with SIGBUS when the loader touches the missing page, and a
 * flipped byte in its dynamic section, relocations or code crashes it (or
 * worse) before any check in the library could run. So the file is read and
 * checked first:
 *   - it is a regular file (a FIFO would block, a device never end) of at
 *     most AOT_MAX_FILE bytes;
 *   - it is a 64-bit little-endian ELF shared object for this machine whose
 *     program header table and every segment's file bytes lie inside the
 *     file, with sane sizes and a dynamic segment inside a loaded one;
 *   - its last AOT_SEAL_LEN bytes are the seal: "cutelua-aot-sha256 ", the
 *     SHA-256 (64 hex digits) of every byte before the seal, and "\n".
 *     cute.export seals what it links (aot_file_seal); any change to the
 *     file after export, one bit or a truncation, breaks the seal.
 * The seal detects corruption, not forgery: anyone who can write the file can
 * recompute it (docs/aot.md, "Trust"). Between this check and dlopen the file
 * could be replaced; the directory must be trusted for that reason too. */
#include "aot_file.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_buf.h"
#include "nv_hash.h"

static const char seal_magic[] = "cutelua-aot-sha256 ";
enum { MAGIC_LEN = sizeof seal_magic - 1 };

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#endif

static const char *segment_name(uint32_t type) {
  switch (type) {
  case PT_LOAD: return "PT_LOAD";
  case PT_DYNAMIC: return "PT_DYNAMIC";
  case PT_INTERP: return "PT_INTERP";
  case PT_NOTE: return "PT_NOTE";
  case PT_TLS: return "PT_TLS";
  case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
  case PT_GNU_RELRO: return "PT_GNU_RELRO";
  default: return "segment";
  }
}

/* the ELF structure of data[0..len): 0, or -1 with why (no path) */
static int check_elf(const unsigned char *data, size_t len, char *why, size_t whylen) {
  Elf64_Ehdr eh;
  if (len < SELFMAG || memcmp(data, ELFMAG, SELFMAG) != 0) return fail(why, whylen, "not an ELF file");
  if (len < sizeof eh) return fail(why, whylen, "too short for an ELF file (%zu bytes): truncated", len);
  memcpy(&eh, data, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT)
    return fail(why, whylen, "not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN) return fail(why, whylen, "not a shared library (ELF type %u)", (unsigned)eh.e_type);
#ifdef HOST_MACHINE
  if (eh.e_machine != HOST_MACHINE)
    return fail(why, whylen, "built for another machine (ELF machine %u; this one is %u)", (unsigned)eh.e_machine,
                (unsigned)HOST_MACHINE);
#endif
  if (eh.e_ehsize != sizeof eh || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum >= PN_XNUM)
    return fail(why, whylen, "a corrupt ELF header (header size %u, %u program headers of %u bytes)",
                (unsigned)eh.e_ehsize, (unsigned)eh.e_phnum, (unsigned)eh.e_phentsize);
  uint64_t table = (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
  if (eh.e_phoff < sizeof eh || eh.e_phoff > len || table > len - eh.e_phoff)
    return fail(why, whylen, "its program header table (bytes %llu..%llu) lies outside the file (%zu bytes): truncated",
                (unsigned long long)eh.e_phoff, (unsigned long long)(eh.e_phoff + table), len);
  int loads = 0, dynamic = -1;
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, data + eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
    if (ph.p_filesz && (ph.p_offset > len || ph.p_filesz > len - ph.p_offset))
      return fail(why, whylen, "segment %d (%s) needs file bytes %llu..%llu, and the file has %zu: truncated", i,
                  segment_name(ph.p_type), (unsigned long long)ph.p_offset,
                  (unsigned long long)ph.p_offset + (unsigned long long)ph.p_filesz, len);
    if (ph.p_type == PT_LOAD) {
      loads++;
      if (ph.p_filesz > ph.p_memsz || ph.p_memsz > AOT_MAX_SEGMENT)
        return fail(why, whylen, "segment %d (PT_LOAD) has %llu bytes in the file and %llu in memory: corrupt", i,
                    (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_memsz);
      if (ph.p_align > 1 && ((ph.p_align & (ph.p_align - 1)) || ph.p_offset % ph.p_align != ph.p_vaddr % ph.p_align))
        return fail(why, whylen, "segment %d (PT_LOAD) has alignment %llu, which its addresses do not keep: corrupt",
                    i, (unsigned long long)ph.p_align);
    } else if (ph.p_type == PT_DYNAMIC) {
      dynamic = i;
    }
  }
  if (!loads) return fail(why, whylen, "no loadable segment");
  if (dynamic < 0) return fail(why, whylen, "no dynamic segment: not a shared library");
  /* the loader reads the dynamic section from memory: it must be mapped */
  Elf64_Phdr dyn;
  memcpy(&dyn, data + eh.e_phoff + (size_t)dynamic * sizeof dyn, sizeof dyn);
  int inside = 0;
  for (int i = 0; i < eh.e_phnum && !inside; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, data + eh.e_phoff + (size_t)i * sizeof ph, sizeof ph);
    inside = ph.p_type == PT_LOAD && dyn.p_vaddr >= ph.p_vaddr && dyn.p_memsz <= ph.p_memsz &&
             dyn.p_vaddr - ph.p_vaddr <= ph.p_memsz - dyn.p_memsz;
  }
  if (!inside) return fail(why, whylen, "its dynamic segment lies outside every loaded segment: corrupt");
  /* the loader does not read sections; a table past the end still means a cut file */
  if (eh.e_shnum && (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
                     (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff))
    return fail(why, whylen, "its section header table (%u entries at byte %llu) lies outside the file (%zu bytes): "
                "truncated", (unsigned)eh.e_shnum, (unsigned long long)eh.e_shoff, len);
  return 0;
}

/* 1 when data ends with something shaped like a seal */
static int has_seal(const unsigned char *data, size_t len) {
  if (len < AOT_SEAL_LEN) return 0;
  const unsigned char *s = data + len - AOT_SEAL_LEN;
  if (memcmp(s, seal_magic, MAGIC_LEN) != 0 || s[AOT_SEAL_LEN - 1] != '\n') return 0;
  for (int i = 0; i < 64; i++)
    if (!s[MAGIC_LEN + i] || !strchr("0123456789abcdef", s[MAGIC_LEN + i])) return 0;
  return 1;
}

static void make_seal(const unsigned char *data, size_t len, char out[AOT_SEAL_LEN + 1]) {
  char hex[65];
  nv_sha256_hex(data, len, hex);
  snprintf(out, AOT_SEAL_LEN + 1, "%s%s\n", seal_magic, hex);
}

static int read_file(const char *path, ClBuf *f, char *err, size_t errlen) {
  const char *kind = NULL;
  int e = cl_buf_read_regular(f, path, AOT_MAX_FILE, &kind);
  if (e == 0) return 0;
  if (kind) return fail(err, errlen, "%s is %s, not a regular file", path, kind);
  if (e == EFBIG) return fail(err, errlen, "%s is larger than %d MiB: not a library exported by cutelua", path,
                              (int)(AOT_MAX_FILE >> 20));
  return fail(err, errlen, "cannot read %s: %s", path, strerror(e));
}

int aot_file_check(const char *path, char *err, size_t errlen) {
  if (!path) return fail(err, errlen, "no path");
  ClBuf f = {0};
  if (read_file(path, &f, err, errlen) != 0) return -1;
  const unsigned char *data = (const unsigned char *)f.data;
  char why[256];
  int st = 0;
  if (check_elf(data, f.len, why, sizeof why) != 0) {
    st = fail(err, errlen, "%s is not a loadable shared library: %s", path, why);
  } else if (!has_seal(data, f.len)) {
    st = fail(err, errlen,
              "%s carries no cutelua seal (its last %d bytes): not made by cute.export, made by an older "
              "cutelua, or changed since (truncated, stripped, patched); export it again",
              path, AOT_SEAL_LEN);
  } else {
    char seal[AOT_SEAL_LEN + 1];
    make_seal(data, f.len - AOT_SEAL_LEN, seal);
    if (memcmp(seal, data + f.len - AOT_SEAL_LEN, AOT_SEAL_LEN) != 0)
      st = fail(err, errlen,
                "%s was altered after export (the SHA-256 of its bytes is not the one in its seal): export it again",
                path);
  }
  cl_buf_free(&f);
  return st;
}

int aot_file_seal(const char *path, char *err, size_t errlen) {
  if (!path) return fail(err, errlen, "no path");
  ClBuf f = {0};
  if (read_file(path, &f, err, errlen) != 0) return -1;
  const unsigned char *data = (const unsigned char *)f.data;
  size_t body = has_seal(data, f.len) ? f.len - AOT_SEAL_LEN : f.len; /* sealed again: the old seal goes */
  char why[256];
  if (check_elf(data, body, why, sizeof why) != 0) {
    cl_buf_free(&f);
    return fail(err, errlen, "cannot seal %s: %s", path, why);
  }
  char seal[AOT_SEAL_LEN + 1];
  make_seal(data, body, seal);
  struct stat st;
  int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : 0644;
  ClBuf tmp = {0};
  cl_buf_printf(&tmp, "%s.seal.%ld", path, (long)getpid());
  int fd = open(cl_buf_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  int ok = fd >= 0;
  for (size_t off = 0; ok && off < body;) {
    ssize_t w = write(fd, data + off, body - off);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) off += (size_t)w;
  }
  ok = ok && write(fd, seal, AOT_SEAL_LEN) == AOT_SEAL_LEN;
  int e = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = 0, e = errno;
  if (ok && rename(cl_buf_str(&tmp), path) != 0) ok = 0, e = errno;
  if (!ok) unlink(cl_buf_str(&tmp));
  cl_buf_free(&tmp);
  cl_buf_free(&f);
  return ok ? 0 : fail(err, errlen, "cannot seal %s: %s", path, strerror(e));
}
