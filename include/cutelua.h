/* cutelua.h: embedding cutelua in a C program.
 *
 * A cutelua runtime is a Lua state (LuaJIT) with cutelua's modules available:
 * `require "cute"` works, kernels can be traced, compiled and launched. Create
 * one, run Lua files or strings in it, call Lua functions with numbers,
 * strings and pointers, and read the last error. Nothing here exits the
 * process or prints; every failure is a status code plus a message.
 *
 *   cutelua *cl = cutelua_open();
 *   if (cutelua_dofile(cl, "kernels.lua") != CUTELUA_OK)
 *     fprintf(stderr, "%s\n%s\n", cutelua_errmsg(cl), cutelua_traceback(cl));
 *   double r;
 *   cutelua_call(cl, "scale", "pd>d", dev_ptr, 2.0, &r);
 *   cutelua_close(cl);
 *
 * Link with libcutelua (shared: links the shared LuaJIT; static: add LuaJIT
 * yourself), or through CMake: find_package(cutelua) and cutelua::cutelua.
 *
 * A runtime is not thread-safe: use one per thread. */
#ifndef CUTELUA_H
#define CUTELUA_H

#include <stddef.h>
#include <stdint.h>

#include "cutelua_version.h" /* CUTELUA_VERSION_MAJOR, ..._STRING, ..._NUMBER */

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;
typedef struct cutelua cutelua;

typedef enum cutelua_status {
  CUTELUA_OK = 0,
  CUTELUA_ERRRUN = 1,    /* a Lua error while running */
  CUTELUA_ERRSYNTAX = 2, /* the chunk does not compile */
  CUTELUA_ERRMEM = 3,    /* out of memory */
  CUTELUA_ERRFILE = 4,   /* the file cannot be read */
  CUTELUA_ERRTYPE = 5,   /* a result has the wrong type for the signature */
  CUTELUA_ERRARG = 6     /* bad arguments to the API itself (bad signature, no such function) */
} cutelua_status;

/* A new runtime with its own lua_State (standard libraries opened).
 * Returns NULL when memory is exhausted or cutelua's own files cannot be read
 * (in development mode, CUTELUA_SOURCE_DIR naming a directory without them);
 * cutelua_open_ex says which. */
cutelua *cutelua_open(void);

/* A runtime on a lua_State the caller made (with luaL_openlibs done). The
 * state is not closed by cutelua_close. Returns NULL when the state lacks the
 * package library, memory is exhausted or cutelua's files cannot be read; the
 * caller's stack and package tables are then as they were. */
cutelua *cutelua_attach(struct lua_State *L);

/* The same, with the reason for a NULL result written into err (at most
 * errlen bytes, NUL-terminated; "" on success). */
cutelua *cutelua_open_ex(char *err, size_t errlen);
cutelua *cutelua_attach_ex(struct lua_State *L, char *err, size_t errlen);

/* Text-only mode, for good: from now on every chunk this runtime loads must
 * be Lua source text. LuaJIT bytecode (string.dump, luajit -b) is not
 * verified when it is loaded: a damaged or malicious bytecode file can crash
 * the process or corrupt its memory, where a damaged source file only fails
 * to compile. In text-only mode cutelua_dofile and cutelua_dostring refuse a
 * bytecode chunk (CUTELUA_ERRSYNTAX, "... is a precompiled (bytecode) chunk:
 * this runtime loads only Lua source text"), and so do Lua's load,
 * loadstring, loadfile, dofile and require (for modules on package.path).
 * Use it whenever a runtime may be handed files it did not write. It is not
 * a sandbox: Lua code that runs can still do anything Lua can (the FFI, C
 * modules through require). Returns CUTELUA_OK. */
int cutelua_set_text_only(cutelua *cl);

/* Frees the runtime; closes the lua_State if cutelua_open made it. NULL is fine. */
void cutelua_close(cutelua *cl);

/* The runtime's lua_State, for use with the Lua C API. */
struct lua_State *cutelua_state(cutelua *cl);

/* Runs a Lua file / a string of Lua code. chunkname names the string in error
 * messages ("=name" for a plain name, "@file.lua" for a file); NULL for a default. */
int cutelua_dofile(cutelua *cl, const char *path);
int cutelua_dostring(cutelua *cl, const char *code, const char *chunkname);

/* Calls a Lua function found by a dotted path from the globals ("f",
 * "mylib.run"). sig lists the arguments, then '>' and the results:
 *   d double     i int        l int64_t     b int (boolean)
 *   s const char* (NUL-terminated)          p void* (light userdata)
 * Results are written through pointers of the matching type (double*, int*,
 * int64_t*, int*, const char**, void**). A string result stays valid until the
 * next call on this runtime. A 'p' result accepts a light userdata, an FFI
 * pointer or an integer address. nil gives 0, NULL or false for p, s and b
 * results; for numbers it is a type error.
 *   cutelua_call(cl, "add", "dd>d", 1.0, 2.0, &sum); */
int cutelua_call(cutelua *cl, const char *func, const char *sig, ...);

/* The message and the traceback of the last failure ("" when none). Valid
 * until the next call on this runtime. */
const char *cutelua_errmsg(const cutelua *cl);
const char *cutelua_traceback(const cutelua *cl);

/* "0.1.0" */
const char *cutelua_version(void);

#ifdef __cplusplus
}
#endif

#endif
