/* cl_host: what every lua_State that runs cutelua gets.
 *
 * - a searcher (package.loaders[2]) for the Lua modules bundled into the
 *   binary, with chunk names that keep their file and line ("@lua/cute/x.lua");
 *   with CUTELUA_SOURCE_DIR set they are read from that checkout instead;
 * - package.loaded["cute._capi"]: the C subsystem tables for the FFI;
 * - a message handler that turns any error into a message plus a traceback.
 *
 * Nothing here exits or prints. */
#ifndef CL_HOST_H
#define CL_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "cl_buf.h"

struct lua_State;

typedef struct ClBundleFile {
  const char *module; /* "cute.layout"; NULL for files that are not Lua modules */
  const char *path;   /* path in the source tree, e.g. "lua/cute/layout.lua" */
  const unsigned char *data;
  size_t len;
} ClBundleFile;

extern const ClBundleFile cl_bundle_files[];
extern const size_t cl_bundle_count;

/* cutelua's build id (src/host/cl_fnv.h), written by `embedgen --build-id`:
 * the hash of the bundled files, of the C sources of the compiler path
 * (src/target, src/ir, src/emit, src/nvvm, src/util, src/host), and the two combined. */
extern const uint64_t cl_bundle_hash;
extern const uint64_t cl_source_hash;
extern const uint64_t cl_build_id;

/* The build id. With dir NULL, the one built in; with dir (development mode,
 * CUTELUA_SOURCE_DIR), the bundled files' part is computed again from the
 * files as they are under dir now (files the build does not bundle yet are
 * not seen). Returns 0, or -1 with why in err when a file under dir cannot be
 * read. */
int cl_host_build_id(const char *dir, uint64_t *id, ClBuf *err);

/* Installs the searcher and the API table. Returns 0, or -1 with a message in err. */
int cl_host_setup(struct lua_State *L, ClBuf *err);
/* Pushes the text of a bundled file (from the source tree in development mode).
 * Returns 1, or 0 (nothing pushed) when there is no such file. */
int cl_host_push_file(struct lua_State *L, const char *path);
/* The bundled text of a file by its path in the source tree, and its length; NULL when not bundled. */
const char *cl_host_bundled_file(const char *path, size_t *len);
/* lua_pcall with the traceback handler. On error the message is on the stack
 * (nil for a nil error object, which busted uses to mean "exit 1 quietly") and
 * the traceback is available from cl_host_traceback until the next error. */
int cl_host_pcall(struct lua_State *L, int nargs, int nresults);
const char *cl_host_traceback(struct lua_State *L);
/* The message and traceback of an error as cute._err.render writes them for a
 * person (the source line with a caret, cutelua's frames left out), pushed on
 * the stack; NULL, with nothing pushed, when that fails (print them as they are). */
const char *cl_host_render_error(struct lua_State *L, const char *msg, const char *tb);
/* Keeps the text of a chunk loaded from a string under its chunk name (the
 * registry's cutelua_chunks), for kernels defined in it: cute.pre rewrites
 * their source and looks it up by the chunk's name. */
void cl_host_keep_chunk(struct lua_State *L, const char *code, size_t len, const char *name);
/* Loads and runs a chunk through cl_host_pcall; mirrors luaL_dostring. */
int cl_host_dobuffer(struct lua_State *L, const char *code, size_t len, const char *chunkname);

#endif
