/* cl_luaopen: libcutelua as a Lua C module, for a stock `luajit` (or any Lua
 * 5.1 host) that did not go through cutelua_open/cutelua_attach.
 *
 *   luaopen_cute       require "cute" finding libcutelua.so as cute.so in
 *                      package.cpath: sets the state up (the bundled modules'
 *                      searcher, the C API tables) and returns the namespace,
 *                      run from the bundled lua/cute/init.lua.
 *   luaopen_cute_capi  require "cute.capi" (as cute/capi.so): the same set-up,
 *                      returning the C API tables; cute._c asks for it when the
 *                      Lua modules were found as files (share/lua/5.1/cute/)
 *                      in a state nothing set up.
 * Errors are Lua errors; nothing exits. */
#include <lauxlib.h>
#include <lua.h>

#include "cl_buf.h"
#include "cl_host.h"

int luaopen_cute(lua_State *L);
int luaopen_cute_capi(lua_State *L);

static void setup_or_raise(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "cute._capi");
  int ready = !lua_isnil(L, -1);
  lua_pop(L, 2);
  if (ready) return;
  ClBuf err = {0};
  if (cl_host_setup(L, &err) != 0) {
    lua_pushfstring(L, "cutelua: cannot set up this Lua state: %s", cl_buf_str(&err));
    cl_buf_free(&err);
    lua_error(L);
  }
  cl_buf_free(&err);
}

int luaopen_cute(lua_State *L) {
  setup_or_raise(L);
  if (!cl_host_push_file(L, "lua/cute/init.lua")) return luaL_error(L, "cutelua: lua/cute/init.lua is not bundled");
  size_t len;
  const char *text = lua_tostring(L, -1);
  len = lua_objlen(L, -1);
  if (luaL_loadbuffer(L, text, len, "@lua/cute/init.lua") != 0) return lua_error(L);
  lua_remove(L, -2);
  lua_pushliteral(L, "cute");
  lua_call(L, 1, 1);
  return 1;
}

int luaopen_cute_capi(lua_State *L) {
  setup_or_raise(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "cute._capi");
  return 1;
}
