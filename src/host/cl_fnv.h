/* cl_fnv: FNV-1a, 64 bits, for cutelua's build id (src/host/embedgen.c
 * computes it at build time, cl_api.c again at run time in development mode;
 * both include this header so the two cannot differ).
 *
 * A file enters the hash as its path, a 0 byte, its length (8 bytes, little
 * endian) and its contents, so that no two lists of (path, contents) give the
 * same byte stream. The build id is the hash of the tag "cutelua-build-id 1",
 * the hash of the bundled files and the hash of the C sources (each 8 bytes,
 * little endian). Not a cryptographic hash: it tells builds apart, nothing
 * more. */
#ifndef CL_FNV_H
#define CL_FNV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CL_FNV_OFFSET 0xcbf29ce484222325ULL
#define CL_FNV_PRIME 0x100000001b3ULL

static inline uint64_t cl_fnv_bytes(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= CL_FNV_PRIME;
  }
  return h;
}

static inline uint64_t cl_fnv_u64(uint64_t h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  return cl_fnv_bytes(h, b, sizeof b);
}

/* One file of a list: path, a 0 byte, length, contents. */
static inline uint64_t cl_fnv_file(uint64_t h, const char *path, const void *data, size_t len) {
  h = cl_fnv_bytes(h, path, strlen(path) + 1);
  h = cl_fnv_u64(h, (uint64_t)len);
  return cl_fnv_bytes(h, data, len);
}

/* The build id from the two list hashes. */
static inline uint64_t cl_fnv_build_id(uint64_t bundle_hash, uint64_t source_hash) {
  static const char tag[] = "cutelua-build-id 1";
  uint64_t h = cl_fnv_bytes(CL_FNV_OFFSET, tag, sizeof tag - 1);
  h = cl_fnv_u64(h, bundle_hash);
  return cl_fnv_u64(h, source_hash);
}

#endif
