/* embed: the public embedding API (include/cutelua.h). */
#include "cutelua.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_host.h"
#include "cl_version.h"

struct cutelua {
  lua_State *L;
  int owned;       /* close L in cutelua_close */
  int text_only;   /* cutelua_set_text_only: chunks must be source text */
  int results_ref; /* registry ref of the last call's results (keeps strings alive) */
  ClBuf errmsg, traceback;
};

#define EXACT_INT_LIMIT 9007199254740992.0 /* 2^53: doubles are exact below it */

const char *cutelua_version(void) { return CUTELUA_VERSION_STRING; }

static void clear_error(cutelua *cl) {
  cl_buf_clear(&cl->errmsg);
  cl_buf_clear(&cl->traceback);
}

static int fail(cutelua *cl, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cutelua *cl, int status, const char *fmt, ...) {
  clear_error(cl);
  va_list ap;
  va_start(ap, fmt);
  cl_buf_vprintf(&cl->errmsg, fmt, ap);
  va_end(ap);
  return status;
}

/* Takes the error left by a failed load or pcall (message on top of stack). */
static int take_error(cutelua *cl, int lstatus) {
  lua_State *L = cl->L;
  clear_error(cl);
  const char *msg = lua_tostring(L, -1);
  cl_buf_puts(&cl->errmsg, msg ? msg : "(error object is nil)");
  const char *tb = lstatus == LUA_ERRRUN ? cl_host_traceback(L) : NULL;
  if (tb) cl_buf_puts(&cl->traceback, tb);
  lua_pop(L, 1);
  switch (lstatus) {
  case LUA_ERRSYNTAX: return CUTELUA_ERRSYNTAX;
  case LUA_ERRMEM: return CUTELUA_ERRMEM;
  case LUA_ERRFILE: return CUTELUA_ERRFILE;
  default: return CUTELUA_ERRRUN;
  }
}

static void set_reason(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static cutelua *setup(lua_State *L, int owned, char *why, size_t whylen) {
  cutelua *cl = calloc(1, sizeof *cl);
  if (!cl) {
    set_reason(why, whylen, "out of memory");
    return NULL;
  }
  cl->L = L;
  cl->owned = owned;
  cl->results_ref = LUA_NOREF;
  ClBuf err = {0};
  if (cl_host_setup(L, &err) != 0) {
    set_reason(why, whylen, cl_buf_str(&err));
    cl_buf_free(&err);
    free(cl);
    return NULL;
  }
  cl_buf_free(&err);
  set_reason(why, whylen, "");
  return cl;
}

cutelua *cutelua_open_ex(char *err, size_t errlen) {
  lua_State *L = luaL_newstate();
  if (!L) {
    set_reason(err, errlen, "out of memory (no Lua state)");
    return NULL;
  }
  lua_gc(L, LUA_GCSTOP, 0); /* as luajit.c does: no collections while opening libraries */
  luaL_openlibs(L);
  lua_gc(L, LUA_GCRESTART, -1);
  cutelua *cl = setup(L, 1, err, errlen);
  if (!cl) lua_close(L);
  return cl;
}

cutelua *cutelua_open(void) { return cutelua_open_ex(NULL, 0); }

cutelua *cutelua_attach_ex(lua_State *L, char *err, size_t errlen) {
  if (!L) {
    set_reason(err, errlen, "no lua_State (NULL)");
    return NULL;
  }
  return setup(L, 0, err, errlen);
}

cutelua *cutelua_attach(lua_State *L) { return cutelua_attach_ex(L, NULL, 0); }

void cutelua_close(cutelua *cl) {
  if (!cl) return;
  if (cl->owned) {
    lua_close(cl->L);
  } else {
    luaL_unref(cl->L, LUA_REGISTRYINDEX, cl->results_ref);
  }
  cl_buf_free(&cl->errmsg);
  cl_buf_free(&cl->traceback);
  free(cl);
}

lua_State *cutelua_state(cutelua *cl) { return cl ? cl->L : NULL; }

const char *cutelua_errmsg(const cutelua *cl) { return cl ? cl_buf_str(&cl->errmsg) : ""; }
const char *cutelua_traceback(const cutelua *cl) { return cl ? cl_buf_str(&cl->traceback) : ""; }

/* The load mode: "t" (source only) in text-only mode, else both. */
static const char *load_mode(const cutelua *cl) { return cl->text_only ? "t" : "bt"; }

/* A load refused for its mode gets a message that says what and why. */
static int take_load_error(cutelua *cl, int st, const char *what) {
  const char *msg = lua_tostring(cl->L, -1);
  if (cl->text_only && st == LUA_ERRSYNTAX && msg && strstr(msg, "wrong mode")) {
    lua_pop(cl->L, 1);
    return fail(cl, CUTELUA_ERRSYNTAX,
                "%s is a precompiled (bytecode) chunk: this runtime loads only Lua source text "
                "(cutelua_set_text_only)", what);
  }
  return take_error(cl, st);
}

int cutelua_dofile(cutelua *cl, const char *path) {
  if (!cl) return CUTELUA_ERRARG;
  if (!path) return fail(cl, CUTELUA_ERRARG, "cutelua_dofile: no file (the path is NULL)");
  clear_error(cl);
  int top = lua_gettop(cl->L);
  int st = luaL_loadfilex(cl->L, path, load_mode(cl));
  if (st == 0) st = cl_host_pcall(cl->L, 0, 0);
  int r = st ? take_load_error(cl, st, path) : CUTELUA_OK;
  lua_settop(cl->L, top);
  return r;
}

int cutelua_dostring(cutelua *cl, const char *code, const char *chunkname) {
  if (!cl) return CUTELUA_ERRARG;
  if (!code) return fail(cl, CUTELUA_ERRARG, "cutelua_dostring: no code (the string is NULL)");
  clear_error(cl);
  int top = lua_gettop(cl->L);
  const char *name = chunkname ? chunkname : "=cutelua_dostring";
  cl_host_keep_chunk(cl->L, code, strlen(code), name); /* plain-Lua kernels defined in it are preprocessed */
  int st = luaL_loadbufferx(cl->L, code, strlen(code), name, load_mode(cl));
  if (st == 0) st = cl_host_pcall(cl->L, 0, 0);
  int r = st ? take_load_error(cl, st, "the string") : CUTELUA_OK;
  lua_settop(cl->L, top);
  return r;
}

/* Lua's own ways to load a chunk, made text-only: load, loadstring, loadfile
 * and dofile force mode "t", and a searcher ahead of Lua's file searcher
 * loads the modules it finds on package.path as text (and reports those that
 * are bytecode). Run once, by cutelua_set_text_only. */
static const char text_only_chunk[] =
    "local G, select, unpack, max = _G, select, unpack, math.max\n"
    "local function text(f, at)\n"
    "  return function(...)\n"
    "    local n, a = select('#', ...), { ... }\n"
    "    a[at] = 't'\n"
    "    return f(unpack(a, 1, max(n, at)))\n"
    "  end\n"
    "end\n"
    "local loadfile = text(G.loadfile, 2)\n"
    "G.load, G.loadstring, G.loadfile = text(G.load, 3), text(G.loadstring, 3), loadfile\n"
    "function G.dofile(name)\n"
    "  local f, e = loadfile(name)\n"
    "  if not f then error(e, 2) end\n"
    "  return f()\n"
    "end\n"
    "local package, error, format = package, error, string.format\n"
    "local function searcher(name)\n"
    "  local path = package.searchpath(name, package.path)\n"
    "  if not path then return '' end -- Lua's own searcher lists the places\n"
    "  local f, e = loadfile(path)\n"
    "  if not f then error(format(\"error loading module '%s' from file '%s':\\n\\t%s\", name, path, e), 0) end\n"
    "  return f\n"
    "end\n"
    "table.insert(package.loaders, 3, searcher)\n";

int cutelua_set_text_only(cutelua *cl) {
  if (!cl) return CUTELUA_ERRARG;
  clear_error(cl);
  if (cl->text_only) return CUTELUA_OK;
  int top = lua_gettop(cl->L);
  int st = luaL_loadbufferx(cl->L, text_only_chunk, sizeof text_only_chunk - 1, "=cutelua_set_text_only", "t");
  if (st == 0) st = cl_host_pcall(cl->L, 0, 0);
  int r = st ? take_error(cl, st) : CUTELUA_OK;
  lua_settop(cl->L, top);
  if (r == CUTELUA_OK) cl->text_only = 1;
  return r;
}

/* The function to call: the value at a dotted path from the globals, looked
 * up inside a protected call, since indexing runs __index metamethods that
 * may raise (a strict _G that errors on unknown names). Argument 1: the path.
 * Returns the value and nil, or nil and what stopped the walk. */
static int lookup_path(lua_State *L) {
  const char *path = lua_tostring(L, 1);
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  for (const char *p = path;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    int t = lua_type(L, -1);
    if (t != LUA_TTABLE && t != LUA_TUSERDATA) { /* not indexable (a light userdata has no fields) */
      lua_pushnil(L);
      lua_pushlstring(L, path, p > path ? (size_t)(p - path - 1) : 0);
      lua_pushfstring(L, "'%s' is a %s value", lua_tostring(L, -1), lua_typename(L, t));
      lua_remove(L, -2);
      return 2;
    }
    lua_pushlstring(L, p, n);
    lua_gettable(L, -2);
    lua_remove(L, -2);
    if (lua_isnil(L, -1)) {
      lua_pushlstring(L, path, (size_t)(p + n - path));
      lua_pushfstring(L, "'%s' is nil", lua_tostring(L, -1));
      lua_remove(L, -2);
      return 2;
    }
    if (!dot) break;
    p = dot + 1;
  }
  lua_pushnil(L);
  return 2;
}

/* A path is names joined by dots: no empty name. */
static int good_path(const char *path) {
  if (!*path || *path == '.') return 0;
  for (const char *p = path; *p; p++)
    if (*p == '.' && (p[1] == '.' || p[1] == 0)) return 0;
  return 1;
}

/* A 'p' result: light userdata, an integer address, or an FFI pointer (through
 * a Lua helper, since the C API cannot read a cdata payload). */
static int to_pointer(cutelua *cl, int idx, void **out) {
  lua_State *L = cl->L;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: *out = NULL; return 1;
  case LUA_TLIGHTUSERDATA: *out = lua_touserdata(L, idx); return 1;
  case LUA_TNUMBER: {
    double d = lua_tonumber(L, idx);
    if (d < 0 || d != floor(d) || d >= EXACT_INT_LIMIT) return 0;
    *out = (void *)(uintptr_t)d;
    return 1;
  }
  case 10: { /* LUA_TCDATA */
    static const char conv[] =
        "local ffi = require 'ffi'\n"
        "return function(v) local ok, a = pcall(ffi.cast, 'uintptr_t', v)\n"
        "  if ok then return tostring(a):gsub('ULL$', '') end end";
    lua_getfield(L, LUA_REGISTRYINDEX, "cutelua.topointer");
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      if (luaL_loadstring(L, conv) || lua_pcall(L, 0, 1, 0)) {
        lua_pop(L, 1);
        return 0;
      }
      lua_pushvalue(L, -1);
      lua_setfield(L, LUA_REGISTRYINDEX, "cutelua.topointer");
    }
    lua_pushvalue(L, idx < 0 ? idx - 1 : idx);
    if (lua_pcall(L, 1, 1, 0) || !lua_isstring(L, -1)) {
      lua_pop(L, 1);
      return 0;
    }
    *out = (void *)(uintptr_t)strtoull(lua_tostring(L, -1), NULL, 10);
    lua_pop(L, 1);
    return 1;
  }
  default: return 0;
  }
}

static int is_exact_int(double d, double lo, double hi) { return d == floor(d) && d >= lo && d <= hi; }

int cutelua_call(cutelua *cl, const char *func, const char *sig, ...) {
  if (!cl) return CUTELUA_ERRARG;
  if (!func) return fail(cl, CUTELUA_ERRARG, "cutelua_call: no function (the path is NULL)");
  if (!sig)
    return fail(cl, CUTELUA_ERRARG, "cutelua_call('%s'): no signature (NULL; \"\" is none: no arguments, no results)",
                func);
  if (!good_path(func))
    return fail(cl, CUTELUA_ERRARG,
                "cutelua_call: bad function path \"%s\" (names joined by dots, such as \"f\" or \"lib.run\")", func);
  lua_State *L = cl->L;
  clear_error(cl);
  int top = lua_gettop(L);
  int status = CUTELUA_OK;
  va_list ap;
  va_start(ap, sig);

  if (!lua_checkstack(L, (int)strlen(sig) + 8)) {
    status = fail(cl, CUTELUA_ERRMEM, "cutelua_call: too many arguments");
    goto done;
  }
  lua_pushcfunction(L, lookup_path);
  lua_pushstring(L, func);
  int found = cl_host_pcall(L, 1, 2);
  if (found != 0) {
    status = take_error(cl, found);
    ClBuf msg = cl->errmsg;
    cl->errmsg = (ClBuf){0};
    cl_buf_printf(&cl->errmsg, "cutelua_call: looking up '%s' raised an error: %s", func, cl_buf_str(&msg));
    cl_buf_free(&msg);
    goto done;
  }
  if (lua_isnil(L, -2)) {
    status = fail(cl, CUTELUA_ERRARG, "cutelua_call: no function '%s' (%s)", func, lua_tostring(L, -1));
    goto done;
  }
  lua_pop(L, 1);
  int nargs = 0;
  const char *s = sig;
  for (; *s && *s != '>'; s++, nargs++) {
    switch (*s) {
    case 'd': lua_pushnumber(L, va_arg(ap, double)); break;
    case 'i': lua_pushnumber(L, va_arg(ap, int)); break;
    case 'b': lua_pushboolean(L, va_arg(ap, int)); break;
    case 's': {
      const char *str = va_arg(ap, const char *);
      if (str) lua_pushstring(L, str);
      else lua_pushnil(L);
      break;
    }
    case 'p': {
      void *p = va_arg(ap, void *);
      if (p) lua_pushlightuserdata(L, p);
      else lua_pushnil(L);
      break;
    }
    case 'l': {
      int64_t v = va_arg(ap, int64_t);
      if ((double)v >= EXACT_INT_LIMIT || (double)v <= -EXACT_INT_LIMIT) {
        status = fail(cl, CUTELUA_ERRARG, "cutelua_call('%s'): argument #%d (%lld) does not fit a Lua number exactly",
                      func, nargs + 1, (long long)v);
        goto done;
      }
      lua_pushnumber(L, (double)v);
      break;
    }
    default:
      status = fail(cl, CUTELUA_ERRARG, "cutelua_call('%s'): bad signature character '%c' in \"%s\"", func, *s, sig);
      goto done;
    }
  }
  const char *res = *s == '>' ? s + 1 : "";
  int nres = (int)strlen(res);
  int st = cl_host_pcall(L, nargs, nres);
  if (st) {
    status = take_error(cl, st);
    goto done;
  }
  /* Keep the results alive (strings) until the next call. */
  lua_createtable(L, nres, 0);
  for (int i = 0; i < nres; i++) {
    lua_pushvalue(L, -nres - 1 + i);
    lua_rawseti(L, -2, i + 1);
  }
  luaL_unref(L, LUA_REGISTRYINDEX, cl->results_ref);
  cl->results_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  for (int i = 0; i < nres; i++) {
    int idx = -nres + i;
    int t = lua_type(L, idx);
    const char *tn = lua_typename(L, t);
    switch (res[i]) {
    case 'd':
      if (t != LUA_TNUMBER) goto type_error;
      *va_arg(ap, double *) = lua_tonumber(L, idx);
      break;
    case 'i': {
      double d = lua_tonumber(L, idx);
      if (t != LUA_TNUMBER || !is_exact_int(d, -2147483648.0, 2147483647.0)) goto type_error;
      *va_arg(ap, int *) = (int)d;
      break;
    }
    case 'l': {
      double d = lua_tonumber(L, idx);
      if (t != LUA_TNUMBER || !is_exact_int(d, -EXACT_INT_LIMIT, EXACT_INT_LIMIT)) goto type_error;
      *va_arg(ap, int64_t *) = (int64_t)d;
      break;
    }
    case 'b': *va_arg(ap, int *) = lua_toboolean(L, idx); break;
    case 's':
      if (t != LUA_TSTRING && t != LUA_TNIL) goto type_error;
      *va_arg(ap, const char **) = lua_tostring(L, idx);
      break;
    case 'p':
      if (!to_pointer(cl, idx, va_arg(ap, void **))) goto type_error;
      break;
    default:
      status = fail(cl, CUTELUA_ERRARG, "cutelua_call('%s'): bad signature character '%c' in \"%s\"", func, res[i], sig);
      goto done;
    }
    continue;
  type_error:
    status = fail(cl, CUTELUA_ERRTYPE, "cutelua_call('%s'): result #%d is a %s, which does not fit '%c'", func, i + 1,
                  t == LUA_TNUMBER ? "non-integral or out-of-range number" : tn, res[i]);
    goto done;
  }
done:
  va_end(ap);
  lua_settop(L, top);
  return status;
}
