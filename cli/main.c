/* main: the cutelua command. Behaves like `luajit` where the two overlap:
 *
 *   cutelua [options] [script [args...]]
 *
 * Exit status: 0 on success, 1 on a Lua error (message and traceback on
 * stderr), 2 on a usage error. With no script and no -e, it starts the REPL
 * (line editing on a terminal; plain statement-by-statement reading when stdin
 * is a pipe or file). */
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_host.h"
#include "cl_repl.h"
#include "cl_version.h"
#include "cutelua.h"

static const char *progname = "cutelua";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s [options]... [script [args]...]\n"
          "Options:\n"
          "  -e chunk        Execute the string 'chunk'.\n"
          "  -l name         Require library 'name' (as a global of that name).\n"
          "  -i              Enter the REPL after running 'script'.\n"
          "  -v              Show version information.\n"
          "  --busted ARGS   Run the busted test runner with ARGS (e.g. --busted tests/spec).\n"
          "  --source-dir D  Load cutelua's own Lua modules from the checkout D (development;\n"
          "                  same as CUTELUA_SOURCE_DIR=D).\n"
          "  -h, --help      Show this help.\n"
          "  --              Stop handling options.\n"
          "  -               Execute stdin and stop handling options.\n"
          "With no script and no -e, cutelua starts the REPL.\n",
          progname);
}

static void report_error(lua_State *L, int status) {
  const char *msg = lua_tostring(L, -1);
  if (msg) {
    const char *tb = status == LUA_ERRRUN ? cl_host_traceback(L) : NULL;
    const char *text = status == LUA_ERRRUN ? cl_host_render_error(L, msg, tb) : NULL;
    if (text) {
      fprintf(stderr, "%s: %s\n", progname, text);
      lua_pop(L, 1);
    } else {
      fprintf(stderr, "%s: %s\n", progname, msg);
      if (tb) fprintf(stderr, "%s\n", tb);
    }
    fflush(stderr);
  } /* a nil error object (busted's way to say "exit 1") prints nothing */
  lua_pop(L, 1);
}

static int run_chunk(lua_State *L, int status, int nargs) {
  if (status == 0) {
    status = cl_host_pcall(L, nargs, 0); /* the chunk lies below its arguments */
  } else {
    lua_pop(L, nargs);
  }
  if (status) report_error(L, status);
  return status;
}

static int do_string(lua_State *L, const char *code, const char *name) {
  cl_host_keep_chunk(L, code, strlen(code), name);
  return run_chunk(L, luaL_loadbuffer(L, code, strlen(code), name), 0);
}

/* Loads standard input as a chunk named "=stdin", keeping its text (as for -e);
 * a first line starting with '#' is blanked, as luaL_loadfile skips it. */
static int load_stdin(lua_State *L) {
  size_t cap = 1 << 16, len = 0, got;
  char *buf = malloc(cap);
  if (!buf) return luaL_error(L, "out of memory reading stdin");
  while ((got = fread(buf + len, 1, cap - len, stdin)) > 0) {
    len += got;
    if (len == cap) {
      char *more = realloc(buf, cap * 2);
      if (!more) {
        free(buf);
        return luaL_error(L, "out of memory reading stdin");
      }
      buf = more;
      cap *= 2;
    }
  }
  if (len > 0 && buf[0] == '#') {
    for (size_t i = 0; i < len && buf[i] != '\n'; i++) buf[i] = ' ';
  }
  cl_host_keep_chunk(L, buf, len, "=stdin");
  int status = luaL_loadbuffer(L, buf, len, "=stdin");
  free(buf);
  return status;
}

static int do_require(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  int status = cl_host_pcall(L, 1, 1);
  if (status) {
    report_error(L, status);
    return status;
  }
  lua_setglobal(L, name);
  return 0;
}

/* arg table as lua.c makes it: arg[0] is the script, negative indices the
 * interpreter and its options, positive ones the script's arguments. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  if (script < 0) script = argc; /* no script: everything is "before" it */
  lua_createtable(L, argc - script, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int push_script_args(lua_State *L, char **argv, int argc, int script) {
  int n = argc - script - 1;
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
  return n;
}

static int run_script(lua_State *L, char **argv, int argc, int script) {
  const char *fname = argv[script];
  int from_stdin = strcmp(fname, "-") == 0 && strcmp(argv[script - 1], "--") != 0;
  int status = from_stdin ? load_stdin(L) : luaL_loadfile(L, fname);
  int nargs = push_script_args(L, argv, argc, script);
  return run_chunk(L, status, nargs);
}

static int run_busted(lua_State *L, char **argv, int argc, int first) {
  /* busted reads its command line from the global `arg`. */
  lua_createtable(L, argc - first, 1);
  lua_pushstring(L, "busted");
  lua_rawseti(L, -2, 0);
  for (int i = first; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - first + 1);
  }
  lua_setglobal(L, "arg");
  static const char code[] =
      "local ok, runner = pcall(require, 'busted.runner')\n"
      "if not ok then error('busted is not installed (Debian package lua-busted): ' .. tostring(runner), 0) end\n"
      "runner({ standalone = false })\n";
  return do_string(L, code, "=busted");
}

int main(int argc, char **argv) {
  if (argv[0] && argv[0][0]) progname = argv[0];
  /* First pass: find the script and the flags, check the syntax. */
  int script = -1, has_e = 0, has_i = 0, has_v = 0, busted = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') {
      script = i;
      break;
    }
    if (strcmp(a, "--") == 0) {
      if (i + 1 < argc) script = i + 1;
      break;
    }
    if (strcmp(a, "-") == 0) {
      script = i;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--busted") == 0) {
      busted = i + 1;
      break;
    }
    if (strcmp(a, "-i") == 0) {
      has_i = has_v = 1;
    } else if (strcmp(a, "-v") == 0) {
      has_v = 1;
    } else if (strcmp(a, "-e") == 0 || strcmp(a, "-l") == 0 || strcmp(a, "--source-dir") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s: option '%s' needs an argument\n", progname, a);
        usage(stderr);
        return 2;
      }
      if (a[1] == 'e') has_e = 1;
      if (a[1] == '-' && setenv("CUTELUA_SOURCE_DIR", argv[i + 1], 1) != 0) return 2;
      i++;
    } else {
      fprintf(stderr, "%s: unrecognized option '%s'\n", progname, a);
      usage(stderr);
      return 2;
    }
  }

  char why[1024];
  cutelua *cl = cutelua_open_ex(why, sizeof why);
  if (!cl) {
    fprintf(stderr, "%s: cannot set up the Lua state: %s\n", progname, why);
    return 1;
  }
  lua_State *L = cutelua_state(cl);
  create_arg_table(L, argv, argc, script);

  int status = 0;
  if (has_v && !has_i) printf("cutelua %s (%s)\n", CUTELUA_VERSION_STRING, LUAJIT_VERSION);

  /* Second pass: run -e and -l in order. */
  int last = script > 0 ? script : (busted > 0 ? busted - 1 : argc);
  for (int i = 1; i < last && status == 0; i++) {
    if (strcmp(argv[i], "-e") == 0) status = do_string(L, argv[++i], "=(command line)");
    else if (strcmp(argv[i], "-l") == 0) status = do_require(L, argv[++i]);
    else if (strcmp(argv[i], "--source-dir") == 0) i++;
  }
  if (status == 0 && busted > 0) status = run_busted(L, argv, argc, busted);
  else if (status == 0 && script > 0) status = run_script(L, argv, argc, script);

  if (status == 0 && (has_i || (script < 0 && busted < 0 && !has_e && !has_v)))
    status = cl_repl_run(cl, isatty(STDIN_FILENO));

  cutelua_close(cl);
  fflush(stdout);
  return status ? 1 : 0;
}
