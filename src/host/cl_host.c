/* cl_host: lua_State setup shared by the CLI and the embedding API (see cl_host.h). */
#include "cl_host.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "cl_api.h"
#include "cl_fnv.h"

#define REG_SOURCE_DIR "cutelua.source_dir"
#define REG_TRACEBACK "cutelua.traceback"

static const char *source_dir(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, REG_SOURCE_DIR);
  const char *dir = lua_tostring(L, -1); /* anchored in the registry */
  lua_pop(L, 1);
  return dir;
}

static const ClBundleFile *find_by_module(const char *name) {
  for (size_t i = 0; i < cl_bundle_count; i++)
    if (cl_bundle_files[i].module && strcmp(cl_bundle_files[i].module, name) == 0) return &cl_bundle_files[i];
  return NULL;
}

static const ClBundleFile *find_by_path(const char *path) {
  for (size_t i = 0; i < cl_bundle_count; i++)
    if (strcmp(cl_bundle_files[i].path, path) == 0) return &cl_bundle_files[i];
  return NULL;
}

/* Pushes the file's text and its chunk name. Returns 0 and pushes an error
 * message when the development copy cannot be read. */
static int push_source(lua_State *L, const ClBundleFile *f, int want_chunkname) {
  const char *dir = source_dir(L);
  if (!dir) {
    lua_pushlstring(L, (const char *)f->data, f->len);
    if (want_chunkname) lua_pushfstring(L, "@%s", f->path);
    return 1;
  }
  ClBuf b = {0};
  lua_pushfstring(L, "%s/%s", dir, f->path);
  const char *full = lua_tostring(L, -1);
  int e = cl_buf_read_file(&b, full);
  if (e) {
    lua_pushfstring(L, "cannot read %s (CUTELUA_SOURCE_DIR): %s", full, strerror(e));
    lua_remove(L, -2);
    cl_buf_free(&b);
    return 0;
  }
  lua_pushlstring(L, cl_buf_str(&b), b.len);
  cl_buf_free(&b);
  if (want_chunkname) {
    lua_pushfstring(L, "@%s", full);
    lua_remove(L, -3);
  } else {
    lua_remove(L, -2);
  }
  return 1;
}

int cl_host_push_file(lua_State *L, const char *path) {
  const ClBundleFile *f = find_by_path(path);
  if (!f) return 0;
  if (!push_source(L, f, 0)) {
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

const char *cl_host_bundled_file(const char *path, size_t *len) {
  const ClBundleFile *f = path ? find_by_path(path) : NULL;
  if (!f) return NULL;
  if (len) *len = f->len;
  return (const char *)f->data;
}

int cl_host_build_id(const char *dir, uint64_t *id, ClBuf *err) {
  if (!dir || !*dir) {
    *id = cl_build_id;
    return 0;
  }
  uint64_t h = CL_FNV_OFFSET;
  ClBuf path = {0}, b = {0};
  int st = 0;
  for (size_t i = 0; i < cl_bundle_count && st == 0; i++) {
    cl_buf_clear(&path);
    cl_buf_printf(&path, "%s/%s", dir, cl_bundle_files[i].path);
    cl_buf_clear(&b);
    int e = cl_buf_read_file(&b, cl_buf_str(&path));
    if (e) {
      cl_buf_printf(err, "cannot read %s (CUTELUA_SOURCE_DIR) for the build id: %s", cl_buf_str(&path), strerror(e));
      st = -1;
    } else {
      h = cl_fnv_file(h, cl_bundle_files[i].path, b.data ? b.data : "", b.len);
    }
  }
  cl_buf_free(&path);
  cl_buf_free(&b);
  if (st == 0) *id = cl_fnv_build_id(h, cl_source_hash);
  return st;
}

/* package.loaders entry: finds bundled modules. Like the standard searchers it
 * returns a loader function, or a string saying why it found nothing. */
static int bundle_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const ClBundleFile *f = find_by_module(name);
  if (!f) {
    lua_pushfstring(L, "\n\tno module '%s' bundled in cutelua", name);
    return 1;
  }
  if (!push_source(L, f, 1)) return lua_error(L);
  size_t len;
  const char *src = lua_tolstring(L, -2, &len);
  if (luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t") != 0) /* cutelua's modules are source text */
    return luaL_error(L, "error loading module '%s':\n\t%s", name, lua_tostring(L, -1));
  return 1;
}

/* Inserts the bundle searcher at package.loaders[2]: after package.preload,
 * before package.path. */
static void install_searcher(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaders");
  int n = (int)lua_objlen(L, -1);
  for (int i = n; i >= 2; i--) {
    lua_rawgeti(L, -1, i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushcfunction(L, bundle_searcher);
  lua_rawseti(L, -2, 2);
  lua_pop(L, 1);

  /* Development mode: also put the checkout's lua/ first on package.path, so
   * modules added since the last build are found too. */
  const char *dir = source_dir(L);
  if (dir) {
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* Pushes package.loaded["cute._capi"]'s new value: per subsystem its table
 * pointer, C type and declarations. Raises (inside setup's protected call)
 * when a declaration file cannot be read. */
static void push_api(lua_State *L) {
  lua_newtable(L);
  for (size_t i = 0; i < cl_api_entry_count; i++) {
    const ClApiEntry *e = &cl_api_entries[i];
    lua_newtable(L);
    lua_pushlightuserdata(L, (void *)e->get());
    lua_setfield(L, -2, "ptr");
    lua_pushstring(L, e->ctype);
    lua_setfield(L, -2, "ctype");
    const ClBundleFile *f = find_by_path(e->cdef_path);
    if (!f) luaL_error(L, "the declarations of the '%s' API (%s) are not bundled (a broken build)", e->name, e->cdef_path);
    if (!push_source(L, f, 0)) {
      lua_pushfstring(L, "the declarations of the '%s' API are missing: %s", e->name, lua_tostring(L, -1));
      lua_error(L);
    }
    lua_setfield(L, -2, "cdef");
    lua_setfield(L, -2, e->name);
  }
}

/* The body of cl_host_setup, in a protected call: the caller's state may
 * have metatables that raise, and memory may run out. Nothing is changed
 * until everything that can fail for cutelua's own reasons has succeeded. */
static int setup_body(lua_State *L) {
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1))
    return luaL_error(L, "the Lua state has no 'package' library (call luaL_openlibs first)");
  lua_getfield(L, -1, "loaders");
  lua_getfield(L, -2, "loaded");
  if (!lua_istable(L, -1) || !lua_istable(L, -2))
    return luaL_error(L, "package.loaders or package.loaded is missing (call luaL_openlibs first)");
  const char *dir = getenv("CUTELUA_SOURCE_DIR");
  if (dir && *dir) {
    lua_pushstring(L, dir);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_SOURCE_DIR);
  }
  push_api(L);
  lua_setfield(L, -2, "cute._capi");
  lua_settop(L, 0);
  install_searcher(L);
  return 0;
}

int cl_host_setup(lua_State *L, ClBuf *err) {
  int top = lua_gettop(L);
  int st = lua_cpcall(L, setup_body, NULL);
  if (st != 0) {
    const char *msg = lua_tostring(L, -1);
    cl_buf_puts(err, st == LUA_ERRMEM ? "out of memory" : msg ? msg : "setting up the Lua state failed");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_SOURCE_DIR);
  }
  lua_settop(L, top);
  return st ? -1 : 0;
}

/* The message handler: a string message gets a traceback; an object with
 * __tostring is converted; nil is passed through untouched. */
static int msgh(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_TRACEBACK);
    lua_pushnil(L);
    return 1;
  }
  if (!lua_isstring(L, 1)) {
    if (!(luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING))
      lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    lua_replace(L, 1);
    lua_settop(L, 1);
  }
  luaL_traceback(L, L, NULL, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, REG_TRACEBACK);
  lua_settop(L, 1);
  return 1;
}

int cl_host_pcall(lua_State *L, int nargs, int nresults) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msgh);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  return status;
}

const char *cl_host_traceback(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, REG_TRACEBACK);
  const char *tb = lua_tostring(L, -1);
  lua_pop(L, 1);
  return tb;
}

const char *cl_host_render_error(lua_State *L, const char *msg, const char *tb) {
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cute._err");
  if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, -1)) goto fail;
  lua_getfield(L, -1, "render");
  if (!lua_isfunction(L, -1)) goto fail;
  lua_pushstring(L, msg);
  if (tb) lua_pushstring(L, tb); else lua_pushnil(L);
  if (lua_pcall(L, 2, 1, 0) != 0 || lua_type(L, -1) != LUA_TSTRING) goto fail;
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return lua_tostring(L, -1);
fail:
  lua_settop(L, top);
  return NULL;
}

void cl_host_keep_chunk(lua_State *L, const char *code, size_t len, const char *name) {
  lua_getfield(L, LUA_REGISTRYINDEX, "cutelua_chunks");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "cutelua_chunks");
  }
  lua_pushlstring(L, code, len);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

int cl_host_dobuffer(lua_State *L, const char *code, size_t len, const char *chunkname) {
  int status = luaL_loadbuffer(L, code, len, chunkname);
  if (status == 0) status = cl_host_pcall(L, 0, LUA_MULTRET);
  return status;
}
