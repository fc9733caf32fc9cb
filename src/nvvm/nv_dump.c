/* nv_dump: writing stages to files (CUTELUA_KEEP) and SASS through the
 * toolkit's disassemblers.
 *
 * A dump is <dir>/<name>.<arch>.<stage>, e.g. ./saxpy.sm_90a.ptx. A stage the
 * result does not hold (ll after a cache hit, ir when the caller gave none,
 * sass without a disassembler) is skipped with a note, never an error: dumps
 * are for looking, and must not make a working compile fail.
 *
 * nvdisasm and cuobjdump ship with the toolkit on GPU machines but not on the
 * CPU machines; they are run as child processes with their output captured
 * through a pipe (never the terminal: the C core does not print). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nv_internal.h"

extern char **environ;

/* mkdir -p */
int nv_mkdirs(const char *path) {
  char tmp[2048];
  if (strlen(path) >= sizeof tmp) return errno = ENAMETOOLONG, -1;
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* ---- finding and running a disassembler -------------------------------------------- */

/* Appends the candidate directories: the toolkit's bin directories, then $PATH. */
int nv_tool_dirs(char dirs[][512], int cap) {
  int n = 0;
  char dir[512];
  const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
  const char *path = getenv("PATH"), *p = path ? path : "";
  for (int i = 0; n < cap && (i < 3 || *p); i++) {
    if (i < 3) {
      if (!roots[i] || !*roots[i]) continue;
      snprintf(dir, sizeof dir, "%s/bin", roots[i]);
    } else {
      size_t len = strcspn(p, ":");
      snprintf(dir, sizeof dir, "%.*s", (int)(len < sizeof dir ? len : sizeof dir - 1), p);
      p += len;
      if (*p == ':') p++;
      if (!len) continue;
    }
    int seen = 0; /* each directory once, in its first place */
    for (int j = 0; j < n; j++) seen |= strcmp(dirs[j], dir) == 0;
    if (!seen) memcpy(dirs[n++], dir, sizeof dir);
  }
  return n;
}

static int find_tool(char *out, size_t cap, int *which, ClBuf *err) {
  static const char *const tools[] = {"nvdisasm", "cuobjdump"};
  char dirs[64][512];
  int n = nv_tool_dirs(dirs, 64);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < n; i++) {
      if (snprintf(out, cap, "%s/%s", dirs[i], tools[t]) >= (int)cap) continue;
      if (access(out, X_OK) == 0) {
        *which = t;
        return 0;
      }
    }
  cl_buf_puts(err, "SASS needs nvdisasm or cuobjdump (CUDA toolkit), and neither was found; looked in:");
  for (int i = 0; i < n; i++) cl_buf_printf(err, "\n  %s", dirs[i]);
  cl_buf_puts(err, "\n(they come with the full CUDA toolkit on GPU machines; set CUDA_HOME or PATH)");
  return -1;
}

/* Runs argv with stdout and stderr into out; returns the exit status or -1. */
int nv_run_tool(char *const argv[], ClBuf *out, ClBuf *err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    cl_buf_printf(err, "cannot run %s: %s", argv[0], strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (e != 0) {
    close(fds[0]);
    cl_buf_printf(err, "cannot run %s: %s", argv[0], strerror(e));
    return -1;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    cl_buf_add(out, buf, (size_t)n);
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      cl_buf_printf(err, "lost %s: %s", argv[0], strerror(errno));
      return -1;
    }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int nv_sass(const void *cubin, size_t len, ClBuf *out, ClBuf *err) {
  char tool[600];
  int which;
  if (find_tool(tool, sizeof tool, &which, err) != 0) return -1;
  const char *tmpdir = getenv("TMPDIR");
  char file[600];
  snprintf(file, sizeof file, "%s/cutelua-XXXXXX.cubin", tmpdir && *tmpdir ? tmpdir : "/tmp");
  int fd = mkstemps(file, 6);
  if (fd < 0) {
    cl_buf_printf(err, "cannot write a temporary cubin for %s (%s): %s", tool, file, strerror(errno));
    return -1;
  }
  int st = -1;
  const char *p = cubin;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w, left -= (size_t)w;
  }
  close(fd);
  if (left) {
    cl_buf_printf(err, "cannot write %s: %s", file, strerror(errno));
  } else {
    char *argv[] = {tool, which == 0 ? "-c" : "-sass", file, NULL};
    ClBuf got = {0};
    int rc = nv_run_tool(argv, &got, err);
    if (rc == 0) {
      cl_buf_clear(out);
      cl_buf_add(out, got.data ? got.data : "", got.len);
      st = 0;
    } else if (rc > 0) {
      cl_buf_printf(err, "%s failed (exit status %d):\n%s", tool, rc, cl_buf_str(&got));
    }
    cl_buf_free(&got);
  }
  unlink(file);
  return st;
}

/* ---- dumps ------------------------------------------------------------------------------ */

int nv_dump(NvResult *r, const NvOptions *o, const char *name, ClBuf *err) {
  if (!o->keep) return 0;
  const ClTarget *arch = cl_target_at(o->arch);
  const char *dir = o->dump_dir[0] ? o->dump_dir : ".";
  if (nv_mkdirs(dir) != 0) {
    cl_buf_printf(err, "cannot create the dump directory %s: %s", dir, strerror(errno));
    return -1;
  }
  /* The name goes into a file name: keep it to one path component. */
  char base[256];
  snprintf(base, sizeof base, "%s", name && *name ? name : "module");
  for (char *c = base; *c; c++)
    if (*c == '/' || *c == '\\') *c = '_';
  ClBuf *note = &r->part[NV_PART_NOTE];
  for (int s = 0; s < NV_STAGE__COUNT; s++) {
    if (!(o->keep & (1u << s))) continue;
    ClBuf *b = &r->part[s]; /* stage id == part id */
    if (s == NV_STAGE_SASS && !b->len && r->part[NV_PART_CUBIN].len) {
      ClBuf why = {0};
      if (nv_sass(r->part[NV_PART_CUBIN].data, r->part[NV_PART_CUBIN].len, b, &why) != 0) {
        /* A note is one line: the list of places looked at joins it. */
        cl_buf_puts(note, "sass not dumped: ");
        const char *w = cl_buf_str(&why);
        for (const char *p = w; *p; p++) {
          if (*p != '\n') {
            cl_buf_putc(note, *p);
            continue;
          }
          char prev = p > w ? p[-1] : 0;
          while (p[1] == ' ') p++;
          cl_buf_puts(note, p[1] == '(' || prev == ':' ? " " : ", ");
        }
        cl_buf_putc(note, '\n');
      }
      cl_buf_free(&why);
    }
    if (!b->len) {
      if (s != NV_STAGE_SASS) cl_buf_printf(note, "%s not dumped: this compile does not have it\n", nv_stage_name(s));
      continue;
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/%s.%s.%s", dir, base, arch->name, nv_stage_name(s));
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b->data, 1, b->len, f) == b->len;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
      cl_buf_printf(err, "cannot write the dump %s: %s", path, strerror(errno));
      return -1;
    }
    cl_buf_printf(&r->part[NV_PART_DUMPED], "%s\n", path);
  }
  return 0;
}
