/* repl: the terminal side of the cutelua REPL.
 *
 * The logic (compiling an entry, detecting incomplete input, formatting
 * results, completion candidates) is Lua: cli/repl.lua, bundled as
 * "cutelua.repl". This file reads lines (libedit on a terminal, plain reads
 * otherwise), runs each complete chunk and survives every error.
 *
 * Ctrl-C while a chunk runs sets a Lua hook that raises "interrupted!". Hooks
 * do not fire inside JIT-compiled traces, so the REPL compiles nothing of the
 * chunks typed at it (they and the functions they define run interpreted;
 * library code stays compiled). A second Ctrl-C before the first took effect
 * ends the process, as in luajit. Ctrl-C while typing abandons the input.
 *
 * A kernel fault leaves the GPU unusable for the rest of the process (the
 * CUDA driver refuses all further work; see src/rt/rt.h). The REPL then
 * restarts itself (exec of its own binary): history is kept, Lua variables
 * are not, and the GPU works again. Piped input is read without stdio
 * buffering so that the new process continues exactly where this one was. */
#include "cl_repl.h"

#include <editline/readline.h>
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_buf.h"
#include "cl_host.h"
#include "cl_version.h"
#include "rt.h"

#define PROMPT "> "
#define PROMPT_MORE ">> "
#define HISTORY_MAX 1000

static lua_State *exec_L;                 /* the state a running chunk belongs to */
static volatile sig_atomic_t interrupted; /* Ctrl-C while reading input */

/* ---- Signals ------------------------------------------------------------ */

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_sigint_exec(int sig) {
  signal(sig, SIG_DFL); /* a second Ctrl-C ends the process */
  lua_sethook(exec_L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static void on_sigint_read(int sig) {
  (void)sig;
  interrupted = 1;
}

static void set_sigint(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: a blocked read returns EINTR */
  sigaction(SIGINT, &sa, NULL);
}

/* ---- The Lua side -------------------------------------------------------- */

static int repl_ref = LUA_NOREF; /* registry ref of the cutelua.repl module */

static void push_repl_fn(lua_State *L, const char *name) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, repl_ref);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
}

static void print_error(lua_State *L, int status) {
  const char *msg = lua_tostring(L, -1);
  const char *tb = status == LUA_ERRRUN ? cl_host_traceback(L) : NULL;
  const char *text = msg && status == LUA_ERRRUN ? cl_host_render_error(L, msg, tb) : NULL;
  if (text) {
    fprintf(stderr, "%s\n", text);
    lua_pop(L, 1);
  } else {
    fprintf(stderr, "%s\n", msg ? msg : "(error object is nil)");
    if (tb) fprintf(stderr, "%s\n", tb);
  }
  fflush(stderr);
  lua_pop(L, 1);
}

/* Runs the chunk on top of the stack and prints its results. Returns 0 or 1. */
static int exec_chunk(lua_State *L) {
  luaJIT_setmode(L, -1, LUAJIT_MODE_FUNC | LUAJIT_MODE_OFF);
  luaJIT_setmode(L, -1, LUAJIT_MODE_ALLSUBFUNC | LUAJIT_MODE_OFF);
  int base = lua_gettop(L);
  exec_L = L;
  set_sigint(on_sigint_exec);
  if (interrupted) { /* a Ctrl-C after the line was read, before the handler above: it meant this chunk */
    interrupted = 0;
    on_sigint_exec(SIGINT);
  }
  int status = cl_host_pcall(L, 0, LUA_MULTRET);
  signal(SIGINT, SIG_IGN);
  lua_sethook(L, NULL, 0, 0); /* a Ctrl-C that came too late must not hit the next chunk */
  fflush(stdout);
  if (status) {
    print_error(L, status);
    return 1;
  }
  int nres = lua_gettop(L) - base + 1;
  if (nres > 0) {
    push_repl_fn(L, "format_results");
    lua_insert(L, base);
    lua_pushnumber(L, nres);
    lua_insert(L, base + 1);
    status = cl_host_pcall(L, nres + 1, 1);
    if (status) {
      print_error(L, status);
      return 1;
    }
    if (lua_isstring(L, -1)) printf("%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    fflush(stdout);
  }
  return 0;
}

/* Feeds the accumulated input to repl.compile. Returns 1 when more input is
 * needed; otherwise runs or reports it and sets *failed. */
static int feed(lua_State *L, const char *src, int *failed) {
  push_repl_fn(L, "compile");
  lua_pushstring(L, src);
  lua_pushliteral(L, "=stdin");
  int status = cl_host_pcall(L, 2, 2);
  if (status) {
    print_error(L, status);
    *failed = 1;
    return 0;
  }
  if (lua_isfunction(L, -2)) {
    lua_pop(L, 1);
    *failed = exec_chunk(L);
    return 0;
  }
  const char *why = lua_tostring(L, -1);
  if (why && strcmp(why, "incomplete") == 0) {
    lua_pop(L, 2);
    return 1;
  }
  fprintf(stderr, "%s\n", why ? why : "syntax error");
  fflush(stderr);
  lua_pop(L, 2);
  *failed = 1;
  return 0;
}

/* ---- Completion (terminal only) ----------------------------------------- */

static lua_State *comp_L;
static char **cands;
static int ncands;

static void free_cands(void) {
  for (int i = 0; i < ncands; i++) free(cands[i]);
  free(cands);
  cands = NULL;
  ncands = 0;
}

static char *cand_generator(const char *text, int state) {
  static int next;
  (void)text;
  if (state == 0) next = 0;
  return next < ncands ? strdup(cands[next++]) : NULL;
}

static char **attempt_completion(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  free_cands();
  lua_State *L = comp_L;
  int top = lua_gettop(L);
  push_repl_fn(L, "complete");
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
    int n = (int)lua_objlen(L, -1);
    cands = calloc((size_t)n + 1, sizeof *cands);
    for (int i = 1; cands && i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *s = lua_tostring(L, -1);
      if (s) cands[ncands++] = strdup(s);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, top);
  if (ncands == 0) return NULL;
  return rl_completion_matches(text, cand_generator);
}

/* ---- Input ----------------------------------------------------------------- */

/* libedit calls this for every key: a read interrupted by Ctrl-C ends the
 * line (the REPL then discards it, since `interrupted` is set). */
static int getc_interruptible(FILE *f) {
  unsigned char c;
  for (;;) {
    ssize_t n = read(fileno(f), &c, 1);
    if (n == 1) return c;
    if (n == 0) return EOF;
    if (errno == EINTR) {
      if (interrupted) return '\n';
      continue;
    }
    return EOF;
  }
}

static char *history_path(void) {
  const char *p = getenv("CUTELUA_HISTORY");
  if (p) return *p ? strdup(p) : NULL; /* empty: no history file */
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  size_t n = strlen(home) + 32;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/.cutelua_history", home);
  return s;
}

/* Reads one line without the newline; NULL at end of input. Piped input is
 * read a byte at a time (no read-ahead), so that a restarted REPL process
 * (after a GPU fault) finds the rest of the input unread. */
static char *read_line(int tty, int more) {
  if (tty) return readline(more ? PROMPT_MORE : PROMPT);
  ClBuf b = {0};
  for (;;) {
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (b.len == 0) {
        cl_buf_free(&b);
        return NULL;
      }
      break;
    }
    if (c == '\n') break;
    cl_buf_putc(&b, c);
  }
  return b.data ? b.data : strdup(""); /* malloc'ed, NUL-terminated */
}

/* Replaces this process by a fresh cutelua REPL after a GPU fault. Returns
 * only if that fails. */
static void restart_after_fault(int tty, const char *hist, int failed) {
  if (tty && hist) write_history(hist);
  fprintf(stderr, "cutelua: the GPU cannot be used again in this process; restarting the REPL "
                  "(history kept, variables lost)\n");
  fflush(stderr);
  fflush(stdout);
  setenv("CUTELUA_REPL_RESTARTED", failed ? "failed" : "ok", 1);
  char *argv[] = {(char *)"cutelua", NULL};
  execv("/proc/self/exe", argv);
  fprintf(stderr, "cutelua: cannot restart (%s); the GPU stays unusable in this session\n", strerror(errno));
}

int cl_repl_run(cutelua *cl, int tty) {
  lua_State *L = cutelua_state(cl);
  int top = lua_gettop(L);

  lua_getglobal(L, "require");
  lua_pushliteral(L, "cutelua.repl");
  if (cl_host_pcall(L, 1, 1)) {
    print_error(L, LUA_ERRRUN);
    return 1;
  }
  repl_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  /* In the REPL, `cute` is a global. A failure here is reported, not fatal. */
  static const char setup[] = "cute = require 'cute'; help = require('cutelua.repl').help";
  if (cl_host_dobuffer(L, setup, sizeof setup - 1, "=(repl)")) {
    fprintf(stderr, "warning: ");
    print_error(L, LUA_ERRRUN);
  }
  lua_settop(L, top);

  char *hist = NULL;
  if (tty) {
    push_repl_fn(L, "banner");
    lua_pushstring(L, CUTELUA_VERSION_STRING);
    lua_pushstring(L, LUAJIT_VERSION);
    if (lua_pcall(L, 2, 1, 0) == 0) printf("%s\n", lua_tostring(L, -1));
    lua_settop(L, top);
    rl_readline_name = "cutelua";
    rl_initialize();
    using_history();
    stifle_history(HISTORY_MAX);
    hist = history_path();
    if (hist) read_history(hist);
    comp_L = L;
    rl_attempted_completion_function = attempt_completion;
    rl_completer_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^#~[]";
    rl_completion_append_character = '\0';
    rl_getc_function = getc_interruptible;
  }
  signal(SIGINT, SIG_IGN);
  if (tty) set_sigint(on_sigint_read);

  ClBuf chunk = {0};
  int more = 0, any_failed = 0;
  const char *restarted = getenv("CUTELUA_REPL_RESTARTED");
  if (restarted) {
    fprintf(stderr, "cutelua: REPL restarted after a GPU fault\n");
    any_failed = strcmp(restarted, "failed") == 0;
    unsetenv("CUTELUA_REPL_RESTARTED");
  }
  for (;;) {
    interrupted = 0;
    char *line = read_line(tty, more);
    if (tty && interrupted) { /* Ctrl-C: drop what was typed */
      free(line);
      cl_buf_clear(&chunk);
      more = 0;
      printf("^C\n");
      fflush(stdout);
      continue;
    }
    if (!line) break;
    if (more) cl_buf_putc(&chunk, '\n');
    cl_buf_puts(&chunk, line);
    free(line);
    if (!more && chunk.len == strspn(cl_buf_str(&chunk), " \t")) { /* empty line */
      cl_buf_clear(&chunk);
      continue;
    }
    int failed = 0;
    more = feed(L, cl_buf_str(&chunk), &failed);
    if (tty) set_sigint(on_sigint_read);
    if (!more) {
      if (tty) {
        add_history(cl_buf_str(&chunk));
        if (hist) write_history(hist);
      }
      any_failed |= failed;
      cl_buf_clear(&chunk);
      if (failed && rt_device_lost(-1)) restart_after_fault(tty, hist, any_failed);
    }
    lua_settop(L, top);
  }
  if (more && !tty) { /* input ended inside a statement */
    fprintf(stderr, "stdin: unexpected end of input in:\n%s\n", cl_buf_str(&chunk));
    any_failed = 1;
  }
  if (tty) {
    printf("\n");
    if (hist) write_history(hist);
  }
  signal(SIGINT, SIG_DFL);
  free(hist);
  free_cands();
  cl_buf_free(&chunk);
  luaL_unref(L, LUA_REGISTRYINDEX, repl_ref);
  repl_ref = LUA_NOREF;
  lua_settop(L, top);
  return tty ? 0 : any_failed;
}
