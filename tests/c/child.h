/* child.h: runs one test case in a forked child, so that a case that
 * crashes (a signal) or hangs fails its check instead of killing or blocking
 * the test program.
 *
 *   ChildResult c = child_run(fn, arg, timeout_ms);
 *   CHECK_AT(child_clean(&c), "case %d: %s", i, child_describe(&c));
 *
 * fn(arg, fd) runs in the child and may write a report to fd (a pipe); the
 * parent collects it in c.out. The child ends with _exit(fn's return value).
 * A child still running after timeout_ms is killed (c.timed_out). */
#ifndef CHILD_H
#define CHILD_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct ChildResult {
  int exited;    /* it returned (see code) */
  int code;      /* fn's return value */
  int signal;    /* the signal that ended it, 0 when none */
  int timed_out; /* killed after the timeout */
  char out[8192];
  size_t len;
  char why[160];
} ChildResult;

static inline long long child_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Writes all of s to fd (for fn's report). */
static inline void child_say(int fd, const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w, n -= (size_t)w;
  }
}

static inline ChildResult child_run(int (*fn)(void *arg, int fd), void *arg, int timeout_ms) {
  ChildResult c;
  memset(&c, 0, sizeof c);
  int p[2];
  if (pipe(p) != 0) {
    snprintf(c.why, sizeof c.why, "pipe: %s", strerror(errno));
    return c;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(c.why, sizeof c.why, "fork: %s", strerror(errno));
    close(p[0]), close(p[1]);
    return c;
  }
  if (pid == 0) {
    close(p[0]);
    int rc = fn(arg, p[1]);
    close(p[1]);
    _exit(rc & 0xff);
  }
  close(p[1]);
  long long deadline = child_now_ms() + timeout_ms;
  int open_ = 1;
  while (open_) {
    long long left = deadline - child_now_ms();
    if (left <= 0) break;
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int n = poll(&pf, 1, (int)left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    char buf[1024];
    ssize_t r = read(p[0], buf, sizeof buf);
    if (r <= 0) {
      open_ = 0;
      break;
    }
    size_t room = sizeof c.out - 1 - c.len;
    size_t take = (size_t)r < room ? (size_t)r : room;
    memcpy(c.out + c.len, buf, take);
    c.len += take;
  }
  c.out[c.len] = 0;
  close(p[0]);
  /* the pipe closed: the child is ending; else wait out the rest of the time */
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (child_now_ms() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      c.timed_out = 1;
      break;
    }
    usleep(2000);
  }
  if (c.timed_out) snprintf(c.why, sizeof c.why, "hung: killed after %d ms", timeout_ms);
  else if (WIFSIGNALED(st)) {
    c.signal = WTERMSIG(st);
    snprintf(c.why, sizeof c.why, "killed by signal %d (%s)", c.signal, strsignal(c.signal));
  } else if (WIFEXITED(st)) {
    c.exited = 1;
    c.code = WEXITSTATUS(st);
    snprintf(c.why, sizeof c.why, "exited %d", c.code);
  }
  return c;
}

/* It returned by itself (whatever its code): no signal, no hang. */
static inline int child_clean(const ChildResult *c) { return c->exited; }

static inline const char *child_describe(const ChildResult *c) { return c->why[0] ? c->why : "?"; }

#endif
