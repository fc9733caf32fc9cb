/* aot_file: checks of an exported library's file before dlopen, and the seal
 * cute.export appends (aot_file.c explains both). Also reached from Lua
 * through the "aot" table (aot.cdef) and from C as cutelua_aot_check_file. */
#ifndef AOT_FILE_H
#define AOT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "aot.cdef"

#define AOT_API_ABI 1
/* the seal: "cutelua-aot-sha256 " + 64 hex digits + "\n" */
#define AOT_SEAL_LEN 84
/* larger files are not exported modules (a module's cubins are megabytes) */
#define AOT_MAX_FILE ((size_t)1 << 30)
#define AOT_MAX_SEGMENT ((unsigned long long)1 << 32)

/* 0 when path is a regular file, a well-formed ELF shared library for this
 * machine whose segments lie inside the file, and carries a seal that matches
 * its bytes; else -1 with a message naming path and what is wrong. */
int aot_file_check(const char *path, char *err, size_t errlen);
/* Appends the seal (replacing one already there), atomically (a temporary
 * file renamed over path). 0, or -1 with why. */
int aot_file_seal(const char *path, char *err, size_t errlen);

const void *cl_aot_api(void);

#endif
