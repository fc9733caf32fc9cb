/* Tests of the embedding API (include/cutelua.h). */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "cutelua.h"

static void test_run(void) {
  cutelua *cl = cutelua_open();
  CHECK(cl != NULL);
  CHECK_EQ_INT(cutelua_dostring(cl, "x = 40 + 2", NULL), CUTELUA_OK);
  CHECK_STR(cutelua_errmsg(cl), "");
  double d = 0;
  CHECK_EQ_INT(cutelua_call(cl, "math.max", "dd>d", 3.0, 7.5, &d), CUTELUA_OK);
  CHECK(d == 7.5);
  /* require "cute" works with no set-up */
  const char *v = NULL;
  CHECK_EQ_INT(cutelua_dostring(cl, "cute = require 'cute'", NULL), CUTELUA_OK);
  CHECK_EQ_INT(cutelua_call(cl, "cute.version", ">s", &v), CUTELUA_OK);
  CHECK_STR(v, cutelua_version());
  cutelua_close(cl);
}

static void test_errors(void) {
  cutelua *cl = cutelua_open();
  /* syntax error */
  CHECK_EQ_INT(cutelua_dostring(cl, "x = = 1", "=snippet"), CUTELUA_ERRSYNTAX);
  CHECK_CONTAINS(cutelua_errmsg(cl), "snippet:1:");
  /* runtime error: message and traceback with the chunk's line */
  int st = cutelua_dostring(cl, "local function f()\n  error('boom')\nend\nf()", "@kernels.lua");
  CHECK_EQ_INT(st, CUTELUA_ERRRUN);
  CHECK_CONTAINS(cutelua_errmsg(cl), "kernels.lua:2: boom");
  CHECK_CONTAINS(cutelua_traceback(cl), "kernels.lua:4: in main chunk");
  /* a missing file */
  CHECK_EQ_INT(cutelua_dofile(cl, "no/such/file.lua"), CUTELUA_ERRFILE);
  CHECK_CONTAINS(cutelua_errmsg(cl), "no/such/file.lua");
  /* a missing function, a bad signature, a wrong result type */
  CHECK_EQ_INT(cutelua_call(cl, "nosuch.fn", ""), CUTELUA_ERRARG);
  CHECK_CONTAINS(cutelua_errmsg(cl), "no function 'nosuch.fn'");
  CHECK_EQ_INT(cutelua_dostring(cl, "function two() return 'a', 2.5 end", NULL), CUTELUA_OK);
  int i = 0;
  const char *s = NULL;
  CHECK_EQ_INT(cutelua_call(cl, "two", ">sx", &s, &i), CUTELUA_ERRARG);
  CHECK_EQ_INT(cutelua_call(cl, "two", ">si", &s, &i), CUTELUA_ERRTYPE);
  CHECK_CONTAINS(cutelua_errmsg(cl), "result #2");
  /* error objects that are not strings */
  CHECK_EQ_INT(cutelua_dostring(cl, "error(setmetatable({}, {__tostring = function() return 'custom' end}))", NULL),
               CUTELUA_ERRRUN);
  CHECK_STR(cutelua_errmsg(cl), "custom");
  CHECK_EQ_INT(cutelua_dostring(cl, "error({})", NULL), CUTELUA_ERRRUN);
  CHECK_CONTAINS(cutelua_errmsg(cl), "error object is a table value");
  /* a success clears the last error */
  CHECK_EQ_INT(cutelua_dostring(cl, "y = 1", NULL), CUTELUA_OK);
  CHECK_STR(cutelua_errmsg(cl), "");
  CHECK_STR(cutelua_traceback(cl), "");
  cutelua_close(cl);
}

static void test_call_types(void) {
  cutelua *cl = cutelua_open();
  CHECK_EQ_INT(cutelua_dostring(cl,
                                "local ffi = require 'ffi'\n"
                                "lib = {}\n"
                                "function lib.echo(...) return ... end\n"
                                "function lib.ptr(p) return ffi.cast('char *', p) + 8 end\n"
                                "function lib.kinds(a, b, c, d, e, f) return type(a), type(b), type(c), type(d), type(e), type(f) end\n",
                                NULL),
               CUTELUA_OK);
  double d;
  int i, b;
  int64_t l;
  const char *s;
  void *p;
  char buf[16];
  CHECK_EQ_INT(cutelua_call(cl, "lib.echo", "dilsbp>dilsbp", 1.5, -7, (int64_t)1 << 40, "str", 1, (void *)buf, &d,
                            &i, &l, &s, &b, &p),
               CUTELUA_OK);
  CHECK(d == 1.5);
  CHECK_EQ_INT(i, -7);
  CHECK(l == (int64_t)1 << 40);
  CHECK_STR(s, "str");
  CHECK_EQ_INT(b, 1);
  CHECK(p == (void *)buf);
  /* an FFI pointer result */
  CHECK_EQ_INT(cutelua_call(cl, "lib.ptr", "p>p", (void *)buf, &p), CUTELUA_OK);
  CHECK(p == (void *)(buf + 8));
  /* what Lua sees */
  const char *k[6];
  CHECK_EQ_INT(cutelua_call(cl, "lib.kinds", "dslbip>ssssss", 1.0, "x", (int64_t)3, 0, 2, (void *)buf, &k[0], &k[1],
                            &k[2], &k[3], &k[4], &k[5]),
               CUTELUA_OK);
  CHECK_STR(k[0], "number");
  CHECK_STR(k[1], "string");
  CHECK_STR(k[2], "number");
  CHECK_STR(k[3], "boolean");
  CHECK_STR(k[5], "userdata");
  /* an int64 too large for a double is refused, not rounded */
  CHECK_EQ_INT(cutelua_call(cl, "lib.echo", "l>l", ((int64_t)1 << 60) + 1, &l), CUTELUA_ERRARG);
  cutelua_close(cl);
}

static void test_attach(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  cutelua *cl = cutelua_attach(L);
  CHECK(cl != NULL);
  CHECK(cutelua_state(cl) == L);
  CHECK_EQ_INT(cutelua_dostring(cl, "assert(require('cute').version())", NULL), CUTELUA_OK);
  cutelua_close(cl); /* does not close L */
  lua_pushinteger(L, 5);
  CHECK_EQ_INT(lua_tointeger(L, -1), 5);
  lua_close(L);
  /* a state without the package library is refused */
  lua_State *bare = luaL_newstate();
  CHECK(cutelua_attach(bare) == NULL);
  lua_close(bare);
}

int main(void) {
  test_run();
  test_errors();
  test_call_types();
  test_attach();
  return check_report();
}
