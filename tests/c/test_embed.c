/* Tests of the embedding API (include/cutelua.h): running code, errors,
 * calls and their types, attaching; function paths that meet raising
 * metamethods or values without fields (each in a child process: these once
 * ended the host with a LuaJIT PANIC); NULL arguments; a failed attach that
 * must leave the caller's stack alone; text-only mode. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
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

/* ---- function paths that raise or cannot be walked ------------------------ */

typedef struct PathCase {
  const char *what, *setup, *path;
  int status;
  const char *says;
} PathCase;

static int run_path_case(void *arg, int fd) {
  const PathCase *c = arg;
  cutelua *cl = cutelua_open();
  lua_State *L = cutelua_state(cl);
  static int x;
  lua_pushlightuserdata(L, &x);
  lua_setglobal(L, "lud");
  if (cutelua_dostring(cl, c->setup, "=setup") != CUTELUA_OK) {
    child_say(fd, "setup failed: ");
    child_say(fd, cutelua_errmsg(cl));
    return 1;
  }
  lua_pushinteger(L, 7); /* something of the caller's on the stack */
  int top = lua_gettop(L);
  int st = cutelua_call(cl, c->path, "");
  char head[96];
  snprintf(head, sizeof head, "status %d top %s\n", st, lua_gettop(L) == top ? "kept" : "changed");
  child_say(fd, head);
  child_say(fd, cutelua_errmsg(cl));
  /* the runtime still works */
  double d = 0;
  int again = cutelua_call(cl, "math.max", "dd>d", 1.0, 4.0, &d);
  child_say(fd, again == CUTELUA_OK && d == 4.0 ? "\nstill works" : "\nbroken after");
  cutelua_close(cl);
  return 0;
}

static void test_call_paths(void) {
  static const PathCase cases[] = {
      {"a strict _G", "setmetatable(_G, {__index = function(_, k) error('undeclared ' .. k, 2) end})", "missing_fn",
       CUTELUA_ERRRUN, "cutelua_call: looking up 'missing_fn' raised an error: undeclared missing_fn"},
      {"a strict _G, a path through it", "setmetatable(_G, {__index = function(_, k) error('undeclared ' .. k) end})",
       "lib.run", CUTELUA_ERRRUN, "undeclared lib"},
      {"a table whose __index raises", "t = setmetatable({}, {__index = function() error('no fields here', 0) end})",
       "t.f", CUTELUA_ERRRUN, "cutelua_call: looking up 't.f' raised an error: no fields here"},
      {"a light userdata", "", "lud.f", CUTELUA_ERRARG, "cutelua_call: no function 'lud.f' ('lud' is a userdata value)"},
      {"a full userdata without fields", "u = io.stdout", "u.nothing.f", CUTELUA_ERRARG,
       "no function 'u.nothing.f' ('u.nothing' is nil)"},
      {"a number", "n = 5", "n.f", CUTELUA_ERRARG, "no function 'n.f' ('n' is a number value)"},
      {"a missing name", "", "nosuch.fn", CUTELUA_ERRARG, "no function 'nosuch.fn' ('nosuch' is nil)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ChildResult c = child_run(run_path_case, (void *)&cases[i], 30000);
    CHECK_AT(child_clean(&c) && c.code == 0, "%s: %s\n%s", cases[i].what, child_describe(&c), c.out);
    char head[64];
    snprintf(head, sizeof head, "status %d top kept\n", cases[i].status);
    CHECK_AT(strstr(c.out, head) != NULL, "%s: %s", cases[i].what, c.out);
    CHECK_AT(strstr(c.out, cases[i].says) != NULL, "%s: expected \"%s\" in\n%s", cases[i].what, cases[i].says, c.out);
    CHECK_AT(strstr(c.out, "\nstill works") != NULL, "%s: %s", cases[i].what, c.out);
  }
  /* a strict _G does not stop calls to what exists */
  cutelua *cl = cutelua_open();
  CHECK_EQ_INT(cutelua_dostring(cl, "function present() return 3 end\n"
                                    "setmetatable(_G, {__index = function(_, k) error('undeclared ' .. k, 2) end})",
                                NULL),
               CUTELUA_OK);
  double d = 0;
  CHECK_EQ_INT(cutelua_call(cl, "present", ">d", &d), CUTELUA_OK);
  CHECK(d == 3);
  /* many lookups that fail leave the stack as it was */
  lua_State *L = cutelua_state(cl);
  int top = lua_gettop(L);
  for (int i = 0; i < 10000; i++) cutelua_call(cl, "missing", "");
  CHECK_EQ_INT(lua_gettop(L), top);
  cutelua_close(cl);
}

/* ---- arguments the API itself refuses -------------------------------------- */

static void test_bad_arguments(void) {
  cutelua *cl = cutelua_open();
  /* each sets its own message, not the previous failure's */
  static const struct {
    int which;
    const char *says;
  } cases[] = {{0, "cutelua_dofile: no file (the path is NULL)"},
               {1, "cutelua_dostring: no code (the string is NULL)"},
               {2, "cutelua_call: no function (the path is NULL)"},
               {3, "cutelua_call('f'): no signature (NULL"},
               {4, "cutelua_call: bad function path \"\""},
               {5, "cutelua_call: bad function path \"a..b\""},
               {6, "cutelua_call: bad function path \".a\""},
               {7, "cutelua_call: bad function path \"a.\""}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CHECK_EQ_INT(cutelua_dostring(cl, "error('the previous failure')", NULL), CUTELUA_ERRRUN);
    int st = -1;
    switch (cases[i].which) {
    case 0: st = cutelua_dofile(cl, NULL); break;
    case 1: st = cutelua_dostring(cl, NULL, NULL); break;
    case 2: st = cutelua_call(cl, NULL, ""); break;
    case 3: st = cutelua_call(cl, "f", NULL); break;
    case 4: st = cutelua_call(cl, "", ""); break;
    case 5: st = cutelua_call(cl, "a..b", ""); break;
    case 6: st = cutelua_call(cl, ".a", ""); break;
    case 7: st = cutelua_call(cl, "a.", ""); break;
    }
    CHECK_EQ_INT(st, CUTELUA_ERRARG);
    CHECK_CONTAINS(cutelua_errmsg(cl), cases[i].says);
    CHECK(strstr(cutelua_errmsg(cl), "previous failure") == NULL);
    CHECK_STR(cutelua_traceback(cl), "");
  }
  /* no runtime at all */
  CHECK_EQ_INT(cutelua_dofile(NULL, "x.lua"), CUTELUA_ERRARG);
  CHECK_EQ_INT(cutelua_call(NULL, "f", ""), CUTELUA_ERRARG);
  CHECK_EQ_INT(cutelua_set_text_only(NULL), CUTELUA_ERRARG);
  CHECK_STR(cutelua_errmsg(NULL), "");
  cutelua_close(cl);
}

/* ---- a failed attach ------------------------------------------------------- */

static void test_failed_attach(void) {
  setenv("CUTELUA_SOURCE_DIR", "/nonexistent-cutelua-checkout", 1);
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaders");
  size_t loaders = lua_objlen(L, -1);
  lua_pop(L, 2);
  lua_pushinteger(L, 10);
  lua_pushstring(L, "caller's");
  char err[512];
  CHECK(cutelua_attach_ex(L, err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "cannot read /nonexistent-cutelua-checkout/src/host/host.cdef (CUTELUA_SOURCE_DIR)");
  CHECK(cutelua_attach(L) == NULL);
  /* the caller's stack and package tables are as they were */
  CHECK_EQ_INT(lua_gettop(L), 2);
  CHECK_EQ_INT(lua_tointeger(L, 1), 10);
  CHECK_STR(lua_tostring(L, 2), "caller's");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaders");
  CHECK_EQ_INT(lua_objlen(L, -1), loaders);
  lua_getfield(L, -2, "loaded");
  lua_getfield(L, -1, "cute._capi");
  CHECK(lua_isnil(L, -1));
  lua_close(L);
  CHECK(cutelua_open_ex(err, sizeof err) == NULL);
  CHECK_CONTAINS(err, "cannot read /nonexistent-cutelua-checkout/");
  unsetenv("CUTELUA_SOURCE_DIR");
  cutelua *cl = cutelua_open_ex(err, sizeof err);
  CHECK(cl != NULL);
  CHECK_STR(err, "");
  cutelua_close(cl);
}

/* ---- text-only mode ------------------------------------------------------------ */

static void test_text_only(void) {
  char bc[128], mod_dir[128], mod[160];
  snprintf(bc, sizeof bc, "/tmp/cutelua-test-bc-%d.luac", (int)getpid());
  snprintf(mod_dir, sizeof mod_dir, "/tmp/cutelua-test-mods-%d", (int)getpid());
  snprintf(mod, sizeof mod, "%s/bcmod.lua", mod_dir);
  cutelua *cl = cutelua_open();
  /* a bytecode file, and a module on package.path that is bytecode */
  const char *p1 = bc, *p2 = mod, *p3 = mod_dir;
  CHECK_EQ_INT(cutelua_dostring(cl, "function write_bc(path, dir, mod)\n"
                                    "  local bc = string.dump(function() ran = (ran or 0) + 1 return 42 end)\n"
                                    "  local f = assert(io.open(path, 'wb')) f:write(bc) f:close()\n"
                                    "  os.execute('mkdir -p ' .. dir)\n"
                                    "  f = assert(io.open(mod, 'wb')) f:write(bc) f:close()\n"
                                    "  package.path = dir .. '/?.lua;' .. package.path\n"
                                    "end",
                                NULL),
               CUTELUA_OK);
  CHECK_EQ_INT(cutelua_call(cl, "write_bc", "sss", p1, p3, p2), CUTELUA_OK);
  /* by default bytecode runs, as in luajit */
  CHECK_EQ_INT(cutelua_dofile(cl, bc), CUTELUA_OK);
  CHECK_EQ_INT(cutelua_set_text_only(cl), CUTELUA_OK);
  CHECK_EQ_INT(cutelua_set_text_only(cl), CUTELUA_OK); /* twice is fine */
  CHECK_EQ_INT(cutelua_dofile(cl, bc), CUTELUA_ERRSYNTAX);
  CHECK_CONTAINS(cutelua_errmsg(cl), bc);
  CHECK_CONTAINS(cutelua_errmsg(cl), "is a precompiled (bytecode) chunk: this runtime loads only Lua source text");
  /* Lua's own loaders refuse it too; source text still loads */
  CHECK_EQ_INT(cutelua_dostring(cl, "local bc = string.dump(function() end)\n"
                                    "local f, e = load(bc) assert(f == nil and e:match('wrong mode'), e)\n"
                                    "f, e = load(bc, 'x', 'b') assert(f == nil and e:match('wrong mode'), e)\n"
                                    "f, e = loadstring(bc) assert(f == nil and e:match('wrong mode'), e)\n"
                                    "assert(load('return 1 + 1')() == 2)\n"
                                    "assert(loadstring('return 3')() == 3)\n",
                                NULL),
               CUTELUA_OK);
  CHECK_EQ_INT(cutelua_dostring(cl, "local ok, e = pcall(loadfile, 'x') -- just a missing file\n"
                                    "assert(ok)",
                                NULL),
               CUTELUA_OK);
  lua_State *L = cutelua_state(cl);
  lua_pushstring(L, bc);
  lua_setglobal(L, "bc_path");
  CHECK_EQ_INT(cutelua_dostring(cl, "local f, e = loadfile(bc_path) assert(f == nil and e:match('wrong mode'), e)\n"
                                    "local ok, e2 = pcall(dofile, bc_path) assert(not ok and e2:match('wrong mode'), e2)\n"
                                    "local ok3, e3 = pcall(require, 'bcmod')\n"
                                    "assert(not ok3 and e3:match(\"error loading module 'bcmod'\") and e3:match('wrong mode'), e3)\n"
                                    "assert(require('cute').version())\n"
                                    "assert(loadfile(bc_path, 'b') == nil)\n"
                                    "local ok4, e4 = pcall(require, 'no_such_module_here')\n"
                                    "assert(not ok4 and e4:match(\"module 'no_such_module_here' not found\"), e4)\n",
                                NULL),
               CUTELUA_OK);
  CHECK_STR(cutelua_errmsg(cl), "");
  if (*cutelua_errmsg(cl)) fprintf(stderr, "%s\n", cutelua_traceback(cl));
  cutelua_close(cl);
  remove(bc);
  remove(mod);
  rmdir(mod_dir);
}

/* A plain-Lua kernel (an `if` on a run-time value: the preprocessor rewrites
 * its source) defined in a string run by cutelua_dostring: the string's text
 * is kept under its chunk name, so the kernel compiles (for sm_90a: no GPU). */
static void test_plain_kernel_in_string(void) {
  cutelua *cl = cutelua_open();
  const char *code = "local cute = require 'cute'\n"
                     "local k = cute.kernel(function(x)\n"
                     "  local i = cute.thread_idx().x\n"
                     "  if i < cute.size(x) then x[i] = x[i] * 2 end\n"
                     "end)\n"
                     "ptx = k:with({ arch = 'sm_90a' }):compile(cute.fake_tensor(cute.f32, { 64 })):ptx()\n";
  CHECK_EQ_INT(cutelua_dostring(cl, code, "plain_kernel"), CUTELUA_OK);
  CHECK_STR(cutelua_errmsg(cl), "");
  /* the `if` became a predicate on the comparison */
  int yes = 0;
  CHECK_EQ_INT(cutelua_dostring(cl, "function has_setp() return ptx:find('setp%.') ~= nil end", NULL), CUTELUA_OK);
  CHECK_EQ_INT(cutelua_call(cl, "has_setp", ">b", &yes), CUTELUA_OK);
  CHECK(yes);
  cutelua_close(cl);
}

int main(void) {
  test_run();
  test_plain_kernel_in_string();
  test_errors();
  test_call_types();
  test_attach();
  test_call_paths();
  test_bad_arguments();
  test_failed_attach();
  test_text_only();
  return check_report();
}
