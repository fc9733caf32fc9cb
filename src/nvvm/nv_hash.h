/* nv_hash: SHA-256 (FIPS 180-4), for cache keys and cache entry checksums.
 *
 * A cryptographic hash because a cache key collision would silently hand back
 * the wrong cubin: 256 bits make that impossible in practice, and the cost
 * (~2-3 ns per byte) is small next to compiling. */
#ifndef NV_HASH_H
#define NV_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct NvSha256 {
  uint32_t h[8];
  uint64_t bytes;
  uint8_t block[64];
  size_t used;
} NvSha256;

void nv_sha256_init(NvSha256 *s);
void nv_sha256_update(NvSha256 *s, const void *data, size_t len);
void nv_sha256_final(NvSha256 *s, uint8_t out[32]);
/* One call: the 64 lowercase hex digits (and a NUL) of data's hash. */
void nv_sha256_hex(const void *data, size_t len, char hex[65]);
void nv_hex(const uint8_t *bytes, size_t n, char *out);

#endif
