/* test_nv_cache: SHA-256, cache keys, the memory cache, the disk cache with
 * its corruption checks (every single-byte flip and every truncation of an
 * entry is caught), hostile entries (a FIFO, a link to /dev/zero, a
 * directory, random mutations: each in a child with a timeout), eviction,
 * clearing, and processes racing on one entry. CUTELUA_FUZZ_LONG=1 runs
 * ~30x more random mutations. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "nv_compile.h"
#include "nv_hash.h"
#include "nv_testdata.h"

static void test_sha256(void) {
  static const struct {
    const char *in, *hex;
  } v[] = {{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
           {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
           {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
           {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"}};
  char hex[65];
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    nv_sha256_hex(v[i].in, strlen(v[i].in), hex);
    CHECK_STR(hex, v[i].hex);
  }
  /* a million 'a', fed in uneven pieces: the same as one piece */
  char *a = malloc(1000000);
  memset(a, 'a', 1000000);
  nv_sha256_hex(a, 1000000, hex);
  CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  NvSha256 s;
  uint8_t d[32];
  char hex2[65];
  nv_sha256_init(&s);
  size_t pos = 0, step = 1;
  while (pos < 1000000) {
    size_t n = step < 1000000 - pos ? step : 1000000 - pos;
    nv_sha256_update(&s, a + pos, n);
    pos += n;
    step = step * 7 % 1000 + 1; /* 1, 8, 57, 400, ... : every alignment */
  }
  nv_sha256_final(&s, d);
  nv_hex(d, 32, hex2);
  CHECK_STR(hex2, hex);
  /* every length from 0 to 200: incremental byte by byte == one shot */
  int same = 1;
  for (size_t n = 0; n <= 200; n++) {
    nv_sha256_init(&s);
    for (size_t i = 0; i < n; i++) nv_sha256_update(&s, a + i, 1);
    nv_sha256_final(&s, d);
    nv_hex(d, 32, hex2);
    nv_sha256_hex(a, n, hex);
    same &= strcmp(hex, hex2) == 0;
  }
  CHECK(same);
  free(a);
}

static void test_key(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  char k1[72], k2[72];
  ClBuf err = {0};
  CHECK_EQ_INT(nv_cache_key("ir text", 7, NULL, &o, k1, &err), 0);
  CHECK_EQ_INT(strlen(k1), 64);
  CHECK_EQ_INT(strspn(k1, "0123456789abcdef"), 64);
  CHECK_EQ_INT(nv_cache_key("ir text", 7, NULL, &o, k2, &err), 0);
  CHECK_STR(k1, k2);
  CHECK_EQ_INT(nv_cache_key("ir texT", 7, NULL, &o, k2, &err), 0);
  CHECK(strcmp(k1, k2) != 0);
  CHECK_EQ_INT(nv_cache_key("ir text", 7, "emitter 2", &o, k2, &err), 0);
  CHECK(strcmp(k1, k2) != 0);
  CHECK_EQ_INT(nv_cache_key("ir text", 7, "", &o, k2, &err), 0);
  CHECK_STR(k1, k2); /* no salt == empty salt */
  NvOptions v = o;
  v.max_registers = 128;
  CHECK_EQ_INT(nv_cache_key("ir text", 7, NULL, &v, k2, &err), 0);
  CHECK(strcmp(k1, k2) != 0);
  v = o;
  v.keep = 3;
  snprintf(v.dump_dir, sizeof v.dump_dir, "/x");
  CHECK_EQ_INT(nv_cache_key("ir text", 7, NULL, &v, k2, &err), 0);
  CHECK_STR(k1, k2);
  /* material and salt cannot run into each other */
  char k3[72];
  CHECK_EQ_INT(nv_cache_key("ab", 2, "c", &o, k2, &err), 0);
  CHECK_EQ_INT(nv_cache_key("b", 1, "ca", &o, k3, &err), 0);
  CHECK(strcmp(k2, k3) != 0);
  v.opt_level = 9;
  CHECK_EQ_INT(nv_cache_key("ir text", 7, NULL, &v, k2, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "bad opt level 9");
  CHECK_STR(k2, "");
  cl_buf_free(&err);
}

static void set_key(NvResult *r, const char *key) {
  size_t n = strlen(key) < sizeof r->key - 1 ? strlen(key) : sizeof r->key - 1;
  memcpy(r->key, key, n);
  r->key[n] = 0;
}

/* A result with the four stored parts set to recognisable bytes. */
static NvResult fake_result(const char *key, int size) {
  NvResult r = {0};
  set_key(&r, key);
  for (int i = 0; i < size; i++) cl_buf_putc(&r.part[NV_PART_CUBIN], (char)(i * 31 + 7));
  cl_buf_puts(&r.part[NV_PART_PTX], ".version 9.0\n.target sm_90a\n");
  cl_buf_puts(&r.part[NV_PART_LOG], "ptxas info    : Used 8 registers\n");
  cl_buf_add(&r.part[NV_PART_META], "m\0eta", 5); /* binary is fine */
  return r;
}

static int same_parts(const NvResult *a, const NvResult *b) {
  static const int parts[] = {NV_PART_PTX, NV_PART_CUBIN, NV_PART_LOG, NV_PART_META};
  for (int i = 0; i < 4; i++) {
    const ClBuf *x = &a->part[parts[i]], *y = &b->part[parts[i]];
    if (x->len != y->len || (x->len && memcmp(x->data, y->data, x->len) != 0)) return 0;
  }
  return 1;
}

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/cutelua-cache-test-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(2);
  }
}

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void test_memory(void) {
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  o.cache = 1; /* memory only: cache_dir is "" */
  ClBuf err = {0};
  nv_cache_clear(&o, 1, 0, &err);
  NvCacheStats s0, s1;
  nv_cache_stats(&s0);
  char key[72];
  nv_cache_key("memory test", 11, NULL, &o, key, &err);
  NvResult got = {0};
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 0);
  NvResult r = fake_result(key, 1000);
  CHECK_EQ_INT(nv_cache_put(&r, &o, &err), 0);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  CHECK_EQ_INT(got.origin, NV_ORIGIN_MEMORY);
  CHECK(same_parts(&got, &r));
  nv_cache_stats(&s1);
  CHECK_EQ_INT(s1.memory_hits - s0.memory_hits, 1);
  CHECK_EQ_INT(s1.misses - s0.misses, 1);
  CHECK_EQ_INT(s1.stores - s0.stores, 1);
  CHECK_EQ_INT(s1.disk_writes - s0.disk_writes, 0);
  CHECK_EQ_INT(s1.memory_entries, 1);
  /* off means off */
  o.cache = 0;
  nv_result_free(&got);
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 0);
  o.cache = 1;
  /* a key that is not a digest is never looked up, nor stored */
  NvResult nokey = fake_result("../../etc/passwd", 10);
  CHECK_EQ_INT(nv_cache_get(&nokey, &o), 0);
  CHECK_EQ_INT(nv_cache_put(&nokey, &o, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "without a key");
  nv_result_free(&nokey);

  /* eviction: the least recently used goes first, and the cap holds */
  nv_cache_clear(&o, 1, 0, &err);
  nv_cache_set_memory_limit(10000);
  char keys[6][72];
  for (int i = 0; i < 6; i++) {
    char m[16];
    snprintf(m, sizeof m, "evict %d", i);
    nv_cache_key(m, strlen(m), NULL, &o, keys[i], &err);
    NvResult e = fake_result(keys[i], 3000);
    nv_cache_put(&e, &o, &err);
    nv_result_free(&e);
    if (i == 2) { /* touch 0 so that 1 is the oldest */
      NvResult t = {0};
      snprintf(t.key, sizeof t.key, "%s", keys[0]);
      CHECK_EQ_INT(nv_cache_get(&t, &o), 1);
      nv_result_free(&t);
    }
  }
  nv_cache_stats(&s1);
  CHECK(s1.memory_bytes <= 10000);
  CHECK(s1.memory_entries >= 2);
  int present[6];
  for (int i = 0; i < 6; i++) {
    NvResult t = {0};
    set_key(&t, keys[i]);
    present[i] = nv_cache_get(&t, &o);
    nv_result_free(&t);
  }
  CHECK_EQ_INT(present[1], 0);
  CHECK_EQ_INT(present[5], 1);
  nv_cache_set_memory_limit((size_t)256 << 20);
  nv_cache_clear(&o, 1, 0, &err);
  nv_cache_stats(&s1);
  CHECK_EQ_INT(s1.memory_entries, 0);
  CHECK_EQ_INT(s1.memory_bytes, 0);
  nv_result_free(&got);
  nv_result_free(&r);
  cl_buf_free(&err);
}

static void entry_file(char *out, size_t cap, const char *dir, const char *key) {
  snprintf(out, cap, "%s/%.2s/%s.entry", dir, key, key);
}

static void write_bytes(const char *path, const ClBuf *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (n) fwrite(b->data, 1, n, f);
  fclose(f);
}

static void test_disk(void) {
  make_tmpdir();
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  o.cache = 1;
  snprintf(o.cache_dir, sizeof o.cache_dir, "%s/nested/cache", tmpdir); /* created on demand */
  ClBuf err = {0};
  char key[72], path[1024];
  nv_cache_key("disk test", 9, NULL, &o, key, &err);
  NvResult r = fake_result(key, 700);
  CHECK_EQ_INT(nv_cache_put(&r, &o, &err), 0);
  CHECK_STR(cl_buf_str(&err), "");
  entry_file(path, sizeof path, o.cache_dir, key);
  struct stat st;
  CHECK_EQ_INT(stat(path, &st), 0);
  /* a new process has only the disk: drop the memory copy */
  nv_cache_clear(&o, 1, 0, &err);
  NvResult got = {0};
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  CHECK_EQ_INT(got.origin, NV_ORIGIN_DISK);
  CHECK(same_parts(&got, &r));
  nv_result_free(&got);
  /* ...and the disk hit went to memory */
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  CHECK_EQ_INT(got.origin, NV_ORIGIN_MEMORY);
  nv_result_free(&got);

  /* corruption: every truncation and every single-byte change is caught,
   * the entry removed, and the lookup a miss; a new put then works */
  ClBuf good = {0};
  CHECK_EQ_INT(cl_buf_read_file(&good, path), 0);
  NvCacheStats s0, s1;
  nv_cache_stats(&s0);
  int caught = 0, tries = 0, removed = 0, noted = 0;
  for (size_t cut = 0; cut < good.len; cut += (cut < 130 ? 1 : 37)) {
    write_bytes(path, &good, cut);
    nv_cache_clear(&o, 1, 0, &err);
    set_key(&got, key);
    tries++;
    caught += nv_cache_get(&got, &o) == 0;
    removed += access(path, F_OK) != 0;
    noted += strstr(cl_buf_str(&got.part[NV_PART_NOTE]), "was unusable") != NULL;
    nv_result_free(&got);
  }
  for (size_t at = 0; at < good.len; at++) {
    ClBuf bad = {0};
    cl_buf_add(&bad, good.data, good.len);
    bad.data[at] ^= (char)(1 << (at % 8));
    write_bytes(path, &bad, bad.len);
    cl_buf_free(&bad);
    nv_cache_clear(&o, 1, 0, &err);
    set_key(&got, key);
    tries++;
    caught += nv_cache_get(&got, &o) == 0;
    removed += access(path, F_OK) != 0;
    nv_result_free(&got);
  }
  CHECK_EQ_INT(caught, tries);
  CHECK_EQ_INT(removed, tries);
  CHECK(noted > 0);
  nv_cache_stats(&s1);
  CHECK_EQ_INT(s1.corrupt - s0.corrupt, tries);
  /* one byte too many */
  ClBuf longer = {0};
  cl_buf_add(&longer, good.data, good.len);
  cl_buf_putc(&longer, 0);
  write_bytes(path, &longer, longer.len);
  nv_cache_clear(&o, 1, 0, &err);
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 0);
  CHECK_CONTAINS(cl_buf_str(&got.part[NV_PART_NOTE]), "longer than its header says");
  nv_result_free(&got);
  cl_buf_free(&longer);
  /* a valid entry of another key, copied in place of this one */
  char other[72], opath[1024];
  nv_cache_key("other", 5, NULL, &o, other, &err);
  NvResult ro = fake_result(other, 700);
  nv_cache_put(&ro, &o, &err);
  entry_file(opath, sizeof opath, o.cache_dir, other);
  ClBuf ob = {0};
  cl_buf_read_file(&ob, opath);
  write_bytes(path, &ob, ob.len);
  nv_cache_clear(&o, 1, 0, &err);
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 0);
  CHECK_CONTAINS(cl_buf_str(&got.part[NV_PART_NOTE]), "holds another key");
  nv_result_free(&got);
  cl_buf_free(&ob);
  nv_result_free(&ro);
  /* rebuilt */
  CHECK_EQ_INT(nv_cache_put(&r, &o, &err), 0);
  nv_cache_clear(&o, 1, 0, &err);
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  CHECK(same_parts(&got, &r));
  nv_result_free(&got);
  cl_buf_free(&good);

  /* clear removes entries, and only entries */
  char keep[1024];
  snprintf(keep, sizeof keep, "%s/README", o.cache_dir);
  FILE *f = fopen(keep, "w");
  if (f) fclose(f);
  CHECK_EQ_INT(nv_cache_clear(&o, 1, 1, &err), 0);
  CHECK(access(path, F_OK) != 0);
  CHECK(access(opath, F_OK) != 0);
  CHECK_EQ_INT(access(keep, F_OK), 0);
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 0);
  nv_result_free(&got);

  /* an unwritable directory: the put says why, and memory still serves */
  snprintf(o.cache_dir, sizeof o.cache_dir, "/proc/cutelua-cannot-be-here");
  cl_buf_clear(&err);
  CHECK_EQ_INT(nv_cache_put(&r, &o, &err), -1);
  CHECK_CONTAINS(cl_buf_str(&err), "cannot create the cache directory /proc/cutelua-cannot-be-here/");
  set_key(&got, key);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  CHECK_EQ_INT(got.origin, NV_ORIGIN_MEMORY);
  nv_result_free(&got);
  nv_result_free(&r);
  cl_buf_free(&err);
  remove_tree(tmpdir);
}

/* ---- hostile entries, each looked up in a child (a hang or a crash fails
 * the check instead of the test program) ---------------------------------- */

typedef struct Hostile {
  const NvOptions *o;
  const char *key;
  const NvResult *want;
} Hostile;

/* The child: a lookup (which must miss and say why), then a put and a lookup
 * (which must find the rebuilt entry, where the directory allows it). */
static int hostile_lookup(void *arg, int fd) {
  const Hostile *h = arg;
  ClBuf err = {0}, out = {0};
  NvResult got = {0};
  set_key(&got, h->key);
  int hit = nv_cache_get(&got, h->o);
  cl_buf_printf(&out, "get %d same %d\nnote %s", hit, hit && same_parts(&got, h->want),
                cl_buf_str(&got.part[NV_PART_NOTE]));
  nv_result_free(&got);
  int put = nv_cache_put(h->want, h->o, &err);
  nv_cache_clear(h->o, 1, 0, &err);
  set_key(&got, h->key);
  int again = nv_cache_get(&got, h->o);
  cl_buf_printf(&out, "put %d %s\nrebuilt %d same %d origin %s\n", put, put ? cl_buf_str(&err) : "", again,
                again && same_parts(&got, h->want), nv_origin_name(got.origin));
  child_say(fd, cl_buf_str(&out));
  nv_result_free(&got);
  cl_buf_free(&err);
  cl_buf_free(&out);
  return 0;
}

static ChildResult hostile_run(const Hostile *h) { return child_run(hostile_lookup, (void *)h, 20000); }

static uint64_t fuzz_rand(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

static void test_disk_hostile(void) {
  make_tmpdir();
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  o.cache = 1;
  snprintf(o.cache_dir, sizeof o.cache_dir, "%s", tmpdir);
  ClBuf err = {0};
  char key[72], path[1024];
  nv_cache_key("hostile", 7, NULL, &o, key, &err);
  NvResult want = fake_result(key, 3000);
  CHECK_EQ_INT(nv_cache_put(&want, &o, &err), 0);
  entry_file(path, sizeof path, o.cache_dir, key);
  ClBuf good = {0};
  CHECK_EQ_INT(cl_buf_read_file(&good, path), 0);
  nv_cache_clear(&o, 1, 0, &err);
  Hostile h = {&o, key, &want};

  /* things that are not files: each refused, named, removed, rebuilt */
  static const struct {
    const char *what, *target, *kind;
  } links[] = {{"a link to /dev/zero", "/dev/zero", "a character device"},
               {"a link to /dev/urandom", "/dev/urandom", "a character device"},
               {"a FIFO", NULL, "a FIFO"},
               {"an empty directory", NULL, "a directory"}};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    unlink(path);
    int made = links[i].target ? symlink(links[i].target, path)
               : strcmp(links[i].kind, "a FIFO") == 0 ? mkfifo(path, 0644)
                                                        : mkdir(path, 0755);
    CHECK_AT(made == 0, "%s: cannot make it", links[i].what);
    ChildResult c = hostile_run(&h);
    CHECK_AT(child_clean(&c), "%s in place of a cache entry: the lookup %s", links[i].what, child_describe(&c));
    CHECK_AT(strstr(c.out, "get 0 ") != NULL, "%s: %s", links[i].what, c.out);
    char note[160];
    snprintf(note, sizeof note, "was unusable (%s, not a regular file): removed, compiling again", links[i].kind);
    CHECK_AT(strstr(c.out, note) != NULL, "%s: %s", links[i].what, c.out);
    CHECK_AT(strstr(c.out, "rebuilt 1 same 1 origin disk") != NULL, "%s: %s", links[i].what, c.out);
  }
  /* a directory that cannot be removed: the note says so (not "removed"),
   * and the put says why it cannot store the entry */
  unlink(path);
  char inner[1100];
  mkdir(path, 0755);
  snprintf(inner, sizeof inner, "%s/x", path);
  mkdir(inner, 0755);
  ChildResult c = hostile_run(&h);
  CHECK_AT(child_clean(&c), "a full directory in place of a cache entry: %s", child_describe(&c));
  CHECK_CONTAINS(c.out, "a directory, not a regular file): could not remove it: Directory not empty, compiling again");
  CHECK_CONTAINS(c.out, "put -1 cannot store the cache entry");
  rmdir(inner);
  rmdir(path);
  /* a read-only shard directory (only where permissions bind: not as root) */
  if (geteuid() != 0) {
    write_bytes(path, &good, good.len / 2);
    char shard[1100];
    snprintf(shard, sizeof shard, "%s/%.2s", o.cache_dir, key);
    chmod(shard, 0555);
    c = hostile_run(&h);
    CHECK_AT(child_clean(&c), "a read-only directory: %s", child_describe(&c));
    CHECK_CONTAINS(c.out, "was unusable (truncated): could not remove it: Permission denied, compiling again");
    chmod(shard, 0755);
  }

  /* sizes in the header that the file does not have */
  static const uint64_t sizes[] = {(uint64_t)1 << 30, ((uint64_t)1 << 30) + 1, (uint64_t)1 << 62, ~(uint64_t)0};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    ClBuf bad = {0};
    cl_buf_add(&bad, good.data, good.len);
    for (int b = 0; b < 8; b++) bad.data[16 + b] = (char)(sizes[i] >> 8 * b);
    write_bytes(path, &bad, bad.len);
    cl_buf_free(&bad);
    c = hostile_run(&h);
    CHECK_AT(child_clean(&c), "payload size %llu: %s", (unsigned long long)sizes[i], child_describe(&c));
    CHECK_AT(strstr(c.out, "get 0 ") && strstr(c.out, "was unusable (") && strstr(c.out, "rebuilt 1 same 1"),
             "payload size %llu: %s", (unsigned long long)sizes[i], c.out);
  }

  /* random truncations and multi-bit flips */
  int cases = getenv("CUTELUA_FUZZ_LONG") && strcmp(getenv("CUTELUA_FUZZ_LONG"), "1") == 0 ? 3000 : 100;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int bad_cases = 0;
  for (int i = 0; i < cases; i++) {
    ClBuf bad = {0};
    cl_buf_add(&bad, good.data, good.len);
    size_t n = good.len;
    if (i % 3 == 0) n = (size_t)(fuzz_rand(&seed) % good.len);
    else
      for (int f = 1 + (int)(fuzz_rand(&seed) % 4); f > 0; f--) {
        uint64_t at = fuzz_rand(&seed) % good.len;
        bad.data[at] ^= (char)(1u << (fuzz_rand(&seed) % 8));
      }
    int same = n == good.len && memcmp(bad.data, good.data, n) == 0; /* two flips that cancel */
    write_bytes(path, &bad, n);
    cl_buf_free(&bad);
    if (same) continue;
    c = hostile_run(&h);
    int ok = child_clean(&c) && strstr(c.out, "get 0 ") && strstr(c.out, "was unusable (") &&
             strstr(c.out, "): removed, compiling again") && strstr(c.out, "rebuilt 1 same 1");
    if (!ok && bad_cases++ < 5) CHECK_AT(0, "random case %d: %s\n%s", i, child_describe(&c), c.out);
  }
  CHECK_EQ_INT(bad_cases, 0);
  printf("cache: %d random mutations of an entry, each caught and rebuilt\n", cases);
  nv_result_free(&want);
  cl_buf_free(&good);
  cl_buf_free(&err);
  remove_tree(tmpdir);
}

/* Processes racing on one disk entry: each reads (memory dropped, so always
 * from disk) and rewrites it many times. A reader must see a miss or exactly
 * the right bytes, never a torn or corrupt entry. */
static int racer(const NvOptions *o, const char *key, int rounds) {
  NvResult want = fake_result(key, 20000);
  ClBuf err = {0};
  int bad = 0, hits = 0;
  NvCacheStats s0;
  nv_cache_stats(&s0); /* counts inherited from the parent do not count */
  for (int i = 0; i < rounds; i++) {
    nv_cache_clear(o, 1, 0, &err);
    NvResult got = {0};
    set_key(&got, key);
    if (nv_cache_get(&got, o) == 1) bad += !same_parts(&got, &want), hits++;
    if (got.part[NV_PART_NOTE].len) bad++;
    nv_result_free(&got);
    if (i % 3 == 0 && nv_cache_put(&want, o, &err) != 0) bad++;
  }
  NvCacheStats s;
  nv_cache_stats(&s);
  bad += (int)(s.corrupt - s0.corrupt);
  nv_result_free(&want);
  cl_buf_free(&err);
  return bad || hits < rounds / 2; /* most reads must find the entry */
}

static void test_concurrent(void) {
  make_tmpdir();
  NvOptions o;
  nv_test_options(&o, "sm_90a");
  o.cache = 1;
  snprintf(o.cache_dir, sizeof o.cache_dir, "%s", tmpdir);
  char key[72];
  ClBuf err = {0};
  nv_cache_key("race", 4, NULL, &o, key, &err);
  enum { PROCS = 6, ROUNDS = 150 };
  pid_t pids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pids[p] = fork();
    if (pids[p] == 0) _exit(racer(&o, key, ROUNDS) ? 1 : 0);
  }
  int failed = 0;
  for (int p = 0; p < PROCS; p++) {
    int st;
    waitpid(pids[p], &st, 0);
    failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  CHECK_EQ_INT(failed, 0);
  /* the entry left is whole, and no temporary files are left behind */
  NvResult got = {0};
  set_key(&got, key);
  nv_cache_clear(&o, 1, 0, &err);
  CHECK_EQ_INT(nv_cache_get(&got, &o), 1);
  nv_result_free(&got);
  char shard[512];
  snprintf(shard, sizeof shard, "%s/%.2s", tmpdir, key);
  DIR *d = opendir(shard);
  int files = 0, temps = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') files++, temps += strstr(de->d_name, ".tmp.") != NULL;
  if (d) closedir(d);
  CHECK_EQ_INT(files, 1);
  CHECK_EQ_INT(temps, 0);
  cl_buf_free(&err);
  remove_tree(tmpdir);
}

/* The real thing: a compiled result round-trips through the disk. */
static void test_compiled(void) {
  make_tmpdir();
  NvOptions o;
  nv_test_options(&o, "sm_80");
  o.cache = 1;
  snprintf(o.cache_dir, sizeof o.cache_dir, "%s", tmpdir);
  ClBuf ptx = nv_test_file("add_one.ptx"), err = {0};
  NvResult r = {0};
  CHECK_EQ_INT(nv_cache_key(ptx.data, ptx.len, NULL, &o, r.key, &err), 0);
  CHECK_EQ_INT(nv_cache_get(&r, &o), 0);
  CHECK_EQ_INT(nv_compile(&r, ptx.data, ptx.len, NV_INPUT_PTX, &o), 0);
  CHECK_EQ_INT(nv_cache_put(&r, &o, &err), 0);
  nv_cache_clear(&o, 1, 0, &err);
  NvResult again = {0};
  CHECK_EQ_INT(nv_cache_key(ptx.data, ptx.len, NULL, &o, again.key, &err), 0);
  CHECK_STR(again.key, r.key);
  CHECK_EQ_INT(nv_cache_get(&again, &o), 1);
  CHECK_EQ_INT(again.origin, NV_ORIGIN_DISK);
  CHECK(same_parts(&again, &r));
  CHECK(nv_test_has_kernel(&again.part[NV_PART_CUBIN], "add_one"));
  nv_result_free(&again);
  nv_result_free(&r);
  cl_buf_free(&ptx);
  cl_buf_free(&err);
  remove_tree(tmpdir);
}

int main(void) {
  test_sha256();
  test_key();
  test_memory();
  test_disk();
  test_disk_hostile();
  test_concurrent();
  test_compiled();
  return check_report();
}
