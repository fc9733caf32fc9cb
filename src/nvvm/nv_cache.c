/* nv_cache: compiled artefacts by content, in memory and on disk.
 *
 * The key is the SHA-256 of everything that decides the output: the key
 * material (the printed IR, or the NVVM IR or PTX text handed in), a caller's
 * salt, the canonical options (nv_options_canonical, which hashes the
 * contents of link inputs), the build of cutelua itself (its GNU build id:
 * any change to the C core, the emitter included, changes it), and the
 * identities of libnvvm and nvJitLink (path, size and mtime of the files the
 * search would load: they change with every toolkit update, and reading them
 * needs no dlopen, which costs ~10 ms) and the driver's version.
 *
 * Memory: a hash table of copies, capped in bytes, evicting the least
 * recently used. Disk: one file per key, <dir>/<k0k1>/<key>.entry:
 *
 *   0   "CLNVCACH"             magic
 *   8   u32 version (1), u32 part count (4)
 *   16  u64 payload bytes
 *   24  32 bytes: SHA-256 of the payload
 *   56  64 bytes: the key (hex)
 *   120 payload: per part (PTX, CUBIN, LOG, META) a u64 length and the bytes
 *
 * All integers little-endian. A writer writes a temporary file in the same
 * directory and renames it over the entry (atomic in POSIX), so a reader sees
 * a whole old file or a whole new one; several processes compiling the same
 * kernel each rename a complete, identical entry. A reader checks the magic,
 * version, sizes, key and checksum; an entry that fails is removed and
 * counted as a miss, so it is rebuilt. Entries are not fsynced: after a crash
 * an entry may be empty or partial, which the checks catch. An entry is read
 * only when it is a regular file (opened non-blocking: a FIFO in its place
 * would block the compile, a link to /dev/zero would be read until memory
 * runs out), and no further than its header says. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_dl.h"
#include "cl_version.h"
#include "nv_hash.h"
#include "nv_internal.h"
#include "nv_tools.h"

enum { HEADER = 120, VERSION = 1, NPARTS = 4 };
/* No entry is larger (cubins are megabytes): a header that says more is corrupt. */
#define MAX_PAYLOAD ((uint64_t)1 << 30)
static const int stored_parts[NPARTS] = {NV_PART_PTX, NV_PART_CUBIN, NV_PART_LOG, NV_PART_META};

/* ---- the key ---------------------------------------------------------------------- */

static pthread_once_t ident_once = PTHREAD_ONCE_INIT;
static ClBuf ident; /* build, libraries, driver: fixed for the process */

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t self = (uintptr_t)&find_build_id;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + 12 <= end) {
      uint32_t namesz, descsz, type;
      memcpy(&namesz, p, 4), memcpy(&descsz, p + 4, 4), memcpy(&type, p + 8, 4);
      const uint8_t *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
      if (desc + descsz > end) break;
      if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz <= 64) {
        char hex[129];
        nv_hex(desc, descsz, hex);
        cl_buf_printf(data, "%s", hex);
        return 1;
      }
      p = desc + ((descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void make_ident(void) {
  ClBuf build = {0};
  dl_iterate_phdr(find_build_id, &build);
  cl_buf_printf(&ident, "cutelua %s build %s\nlibnvvm ", CUTELUA_VERSION_STRING,
                build.len ? cl_buf_str(&build) : "(no build id)");
  nv_lib_identity(CL_LIB_NVVM, &ident);
  cl_buf_puts(&ident, "\nnvjitlink ");
  nv_lib_identity(CL_LIB_NVJITLINK, &ident);
  cl_buf_printf(&ident, "\ndriver %d\n", nv_driver_version());
  cl_buf_free(&build);
}

int nv_cache_key(const char *material, size_t len, const char *salt, const NvOptions *o, char key[72], ClBuf *err) {
  ClBuf head = {0};
  key[0] = 0;
  if (nv_options_check(o, err) != 0) return -1;
  pthread_once(&ident_once, make_ident);
  cl_buf_printf(&head, "cutelua compile cache %d\n%s", VERSION, cl_buf_str(&ident));
  cl_buf_printf(&head, "salt %zu %s\n", salt ? strlen(salt) : 0, salt ? salt : "");
  if (nv_options_canonical(o, &head, err) != 0) {
    cl_buf_free(&head);
    return -1;
  }
  cl_buf_printf(&head, "material %zu\n", len);
  NvSha256 s;
  uint8_t d[32];
  nv_sha256_init(&s);
  nv_sha256_update(&s, head.data, head.len);
  nv_sha256_update(&s, material, len);
  nv_sha256_final(&s, d);
  nv_hex(d, 32, key);
  cl_buf_free(&head);
  return 0;
}

/* ---- memory ------------------------------------------------------------------------ */

typedef struct Entry {
  char key[72];
  ClBuf part[NPARTS];
  size_t bytes;
  uint64_t used; /* tick of the last get or put */
  struct Entry *next;
} Entry;

enum { BUCKETS = 1024 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Entry *table[BUCKETS];
static size_t mem_bytes, mem_entries, mem_limit = (size_t)256 << 20;
static uint64_t tick;
static NvCacheStats stats;

/* Keys are hex digests: their first three digits spread evenly. */
static unsigned bucket(const char *key) {
  unsigned h = 0;
  for (int i = 0; i < 3 && key[i]; i++) h = h * 16 + (unsigned)(key[i] <= '9' ? key[i] - '0' : key[i] - 'a' + 10);
  return h % BUCKETS;
}

static void entry_free(Entry *e) {
  for (int i = 0; i < NPARTS; i++) cl_buf_free(&e->part[i]);
  free(e);
}

/* With the lock held. */
static Entry **find(const char *key) {
  Entry **pp = &table[bucket(key)];
  while (*pp && strcmp((*pp)->key, key) != 0) pp = &(*pp)->next;
  return pp;
}

static void unlink_entry(Entry **pp) {
  Entry *e = *pp;
  *pp = e->next;
  mem_bytes -= e->bytes;
  mem_entries--;
  entry_free(e);
}

static void evict(void) {
  while (mem_bytes > mem_limit && mem_entries > 0) {
    Entry **oldest = NULL;
    for (int b = 0; b < BUCKETS; b++)
      for (Entry **pp = &table[b]; *pp; pp = &(*pp)->next)
        if (!oldest || (*pp)->used < (*oldest)->used) oldest = pp;
    unlink_entry(oldest);
  }
}

static void mem_put(const char *key, const ClBuf *parts[NPARTS]) {
  Entry *e = calloc(1, sizeof *e);
  if (!e) return;
  snprintf(e->key, sizeof e->key, "%s", key);
  for (int i = 0; i < NPARTS; i++) {
    cl_buf_add(&e->part[i], parts[i]->data ? parts[i]->data : "", parts[i]->len);
    if (e->part[i].oom) {
      entry_free(e);
      return;
    }
    e->bytes += parts[i]->len;
  }
  pthread_mutex_lock(&lock);
  Entry **pp = find(key);
  if (*pp) unlink_entry(pp);
  e->used = ++tick;
  e->next = table[bucket(key)];
  table[bucket(key)] = e;
  mem_bytes += e->bytes;
  mem_entries++;
  evict();
  pthread_mutex_unlock(&lock);
}

void nv_cache_set_memory_limit(size_t bytes) {
  pthread_mutex_lock(&lock);
  mem_limit = bytes;
  evict();
  pthread_mutex_unlock(&lock);
}

void nv_cache_stats(NvCacheStats *s) {
  pthread_mutex_lock(&lock);
  *s = stats;
  s->memory_entries = mem_entries;
  s->memory_bytes = mem_bytes;
  pthread_mutex_unlock(&lock);
}

static void count(uint64_t *counter) {
  pthread_mutex_lock(&lock);
  (*counter)++;
  pthread_mutex_unlock(&lock);
}

/* ---- disk ----------------------------------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i);
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int valid_key(const char *key) {
  size_t n = strlen(key);
  if (n != 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return 0;
  return 1;
}

static void entry_path(char *out, size_t cap, const char *dir, const char *key) {
  snprintf(out, cap, "%s/%.2s/%s.entry", dir, key, key);
}

/* Checks a file's bytes; on success fills r's stored parts. NULL or why not. */
static const char *decode(const ClBuf *f, const char *key, NvResult *r) {
  const uint8_t *p = (const uint8_t *)f->data;
  if (f->len < HEADER) return f->len ? "shorter than its header (truncated)" : "empty";
  if (memcmp(p, "CLNVCACH", 8) != 0) return "bad magic";
  if (get_u32(p + 8) != VERSION || get_u32(p + 12) != NPARTS) return "another format version";
  uint64_t payload = get_u64(p + 16);
  if (payload > MAX_PAYLOAD) return "its header gives an impossible size";
  if (payload != f->len - HEADER) return payload > f->len - HEADER ? "truncated" : "longer than its header says";
  if (memcmp(p + 56, key, 64) != 0) return "holds another key";
  uint8_t sum[32];
  NvSha256 s;
  nv_sha256_init(&s);
  nv_sha256_update(&s, p + HEADER, payload);
  nv_sha256_final(&s, sum);
  if (memcmp(sum, p + 24, 32) != 0) return "checksum mismatch (corrupted bytes)";
  const uint8_t *q = p + HEADER, *end = p + f->len;
  for (int i = 0; i < NPARTS; i++) {
    if (end - q < 8) return "bad part table";
    uint64_t n = get_u64(q);
    q += 8;
    if (n > (uint64_t)(end - q)) return "bad part length";
    ClBuf *b = &r->part[stored_parts[i]];
    cl_buf_clear(b);
    cl_buf_add(b, q, (size_t)n);
    q += n;
  }
  if (q != end) return "trailing bytes";
  return NULL;
}

/* An entry's bytes: the header, then as many bytes as it says and one more
 * (which tells an entry longer than its header). 0 or errno; EINVAL with
 * *kind for what is not a regular file. */
static int read_entry(const char *path, ClBuf *f, const char **kind) {
  int fd = cl_file_open_regular(path, kind);
  if (fd < 0) return errno ? errno : EIO;
  int e = cl_buf_read_fd(f, fd, HEADER);
  if (!e && f->len == HEADER) {
    uint64_t payload = get_u64((const uint8_t *)f->data + 16);
    if (payload <= MAX_PAYLOAD) e = cl_buf_read_fd(f, fd, (size_t)payload + 1);
  }
  close(fd);
  return e;
}

/* Removes an unusable entry; what happened, for the note. */
static const char *remove_entry(const char *path, char *why, size_t cap) {
  struct stat st;
  int st_ok = lstat(path, &st) == 0;
  int gone = st_ok && S_ISDIR(st.st_mode) ? rmdir(path) == 0 : unlink(path) == 0;
  if (gone || errno == ENOENT) return "removed";
  snprintf(why, cap, "could not remove it: %s", strerror(errno));
  return why;
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

static int disk_put(const char *dir, const char *key, const ClBuf *parts[NPARTS], ClBuf *err) {
  char sub[1100], path[1200], tmp[1300];
  snprintf(sub, sizeof sub, "%s/%.2s", dir, key);
  if (nv_mkdirs(sub) != 0) {
    cl_buf_printf(err, "cannot create the cache directory %s: %s", sub, strerror(errno));
    return -1;
  }
  entry_path(path, sizeof path, dir, key);
  static unsigned counter;
  unsigned c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), c);
  ClBuf payload = {0};
  for (int i = 0; i < NPARTS; i++) {
    uint8_t n[8];
    put_u64(n, parts[i]->len);
    cl_buf_add(&payload, n, 8);
    cl_buf_add(&payload, parts[i]->data ? parts[i]->data : "", parts[i]->len);
  }
  uint8_t head[HEADER] = "CLNVCACH";
  put_u32(head + 8, VERSION);
  put_u32(head + 12, NPARTS);
  put_u64(head + 16, payload.len);
  NvSha256 s;
  nv_sha256_init(&s);
  nv_sha256_update(&s, payload.data, payload.len);
  nv_sha256_final(&s, head + 24);
  memcpy(head + 56, key, 64);
  int st = -1;
  int fd = payload.oom ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    cl_buf_printf(err, "cannot write the cache entry %s: %s", tmp, payload.oom ? "out of memory" : strerror(errno));
  } else if (write_all(fd, head, HEADER) != 0 || write_all(fd, payload.data, payload.len) != 0) {
    cl_buf_printf(err, "cannot write the cache entry %s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
  } else if (close(fd) != 0 || rename(tmp, path) != 0) {
    cl_buf_printf(err, "cannot store the cache entry %s: %s", path, strerror(errno));
    unlink(tmp);
  } else {
    st = 0;
  }
  cl_buf_free(&payload);
  return st;
}

/* ---- get and put ------------------------------------------------------------------------ */

int nv_cache_get(NvResult *r, const NvOptions *o) {
  if (!o->cache || !valid_key(r->key)) return 0;
  pthread_mutex_lock(&lock);
  Entry **pp = find(r->key);
  if (*pp) {
    Entry *e = *pp;
    e->used = ++tick;
    for (int i = 0; i < NPARTS; i++) {
      ClBuf *b = &r->part[stored_parts[i]];
      cl_buf_clear(b);
      cl_buf_add(b, e->part[i].data ? e->part[i].data : "", e->part[i].len);
    }
    stats.memory_hits++;
    pthread_mutex_unlock(&lock);
    r->origin = NV_ORIGIN_MEMORY;
    return 1;
  }
  pthread_mutex_unlock(&lock);
  if (o->cache_dir[0]) {
    char path[1200];
    entry_path(path, sizeof path, o->cache_dir, r->key);
    ClBuf f = {0};
    const char *kind = NULL;
    char fate[160];
    int e = read_entry(path, &f, &kind);
    if (e == 0) {
      const char *why = decode(&f, r->key, r);
      cl_buf_free(&f);
      if (!why) {
        const ClBuf *parts[NPARTS];
        for (int i = 0; i < NPARTS; i++) parts[i] = &r->part[stored_parts[i]];
        mem_put(r->key, parts);
        count(&stats.disk_hits);
        r->origin = NV_ORIGIN_DISK;
        return 1;
      }
      for (int i = 0; i < NPARTS; i++) cl_buf_clear(&r->part[stored_parts[i]]);
      cl_buf_printf(&r->part[NV_PART_NOTE], "cache entry %s was unusable (%s): %s, compiling again\n", path, why,
                    remove_entry(path, fate, sizeof fate));
      count(&stats.corrupt);
    } else if (kind) {
      cl_buf_free(&f);
      cl_buf_printf(&r->part[NV_PART_NOTE], "cache entry %s was unusable (%s, not a regular file): %s, compiling again\n",
                    path, kind, remove_entry(path, fate, sizeof fate));
      count(&stats.corrupt);
    } else if (e != ENOENT) {
      cl_buf_free(&f);
      cl_buf_printf(&r->part[NV_PART_NOTE], "cannot read cache entry %s: %s\n", path, strerror(e));
    }
  }
  count(&stats.misses);
  return 0;
}

int nv_cache_put(const NvResult *r, const NvOptions *o, ClBuf *err) {
  if (!o->cache) return 0;
  if (!valid_key(r->key)) {
    cl_buf_puts(err, "cannot cache a result without a key (nv_cache_key first)");
    return -1;
  }
  const ClBuf *parts[NPARTS];
  for (int i = 0; i < NPARTS; i++) parts[i] = &r->part[stored_parts[i]];
  mem_put(r->key, parts);
  count(&stats.stores);
  if (!o->cache_dir[0]) return 0;
  if (disk_put(o->cache_dir, r->key, parts, err) != 0) {
    count(&stats.write_errors);
    return -1;
  }
  count(&stats.disk_writes);
  return 0;
}

static int hex2(const char *s) {
  return strlen(s) == 2 && strspn(s, "0123456789abcdef") == 2;
}

/* Deletes <key>.entry and <key>.entry.tmp.* files in one shard directory. */
static int clear_shard(const char *dir, ClBuf *err) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  int st = 0;
  char path[1400];
  while ((de = readdir(d))) {
    const char *n = de->d_name, *dot = strchr(n, '.');
    if (!dot || dot - n != 64 || strncmp(dot, ".entry", 6) != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, n);
    if (unlink(path) != 0 && errno != ENOENT) {
      if (!st) cl_buf_printf(err, "cannot remove %s: %s", path, strerror(errno));
      st = -1;
    }
  }
  closedir(d);
  rmdir(dir); /* only when empty: anything else in it stays */
  return st;
}

int nv_cache_clear(const NvOptions *o, int memory, int disk, ClBuf *err) {
  if (memory) {
    pthread_mutex_lock(&lock);
    for (int b = 0; b < BUCKETS; b++)
      while (table[b]) unlink_entry(&table[b]);
    pthread_mutex_unlock(&lock);
  }
  if (!disk || !o->cache_dir[0]) return 0;
  DIR *d = opendir(o->cache_dir);
  if (!d) return errno == ENOENT ? 0 : (cl_buf_printf(err, "cannot open %s: %s", o->cache_dir, strerror(errno)), -1);
  struct dirent *de;
  int st = 0;
  char sub[1100];
  while ((de = readdir(d))) {
    if (!hex2(de->d_name)) continue; /* only the cache's own shard directories */
    snprintf(sub, sizeof sub, "%s/%s", o->cache_dir, de->d_name);
    if (clear_shard(sub, err) != 0) st = -1;
  }
  closedir(d);
  return st;
}
