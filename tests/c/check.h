/* check.h: the assertions of the C unit tests.
 *
 *   CHECK(expr)               fails (and continues) when expr is false
 *   CHECK_EQ_INT(a, b)        prints both values on failure
 *   CHECK_STR(a, b)           string equality
 *   CHECK_CONTAINS(hay, sub)  substring
 *   return check_report();    at the end of main: prints "N passed, N failed" */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK_AT(cond, ...)                                         \
  do {                                                              \
    if (cond) {                                                     \
      check_passed++;                                               \
    } else {                                                        \
      check_failed++;                                               \
      fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fprintf(stderr, "\n");                                        \
    }                                                               \
  } while (0)

#define CHECK(e) CHECK_AT((e), "%s", #e)
#define CHECK_EQ_INT(a, b)                                                                    \
  do {                                                                                        \
    long long a_ = (long long)(a), b_ = (long long)(b);                                       \
    CHECK_AT(a_ == b_, "%s == %s (%lld vs %lld)", #a, #b, a_, b_);                            \
  } while (0)
#define CHECK_STR(a, b)                                                                       \
  do {                                                                                        \
    const char *a_ = (a), *b_ = (b);                                                          \
    CHECK_AT(a_ && b_ && strcmp(a_, b_) == 0, "%s == %s (\"%s\" vs \"%s\")", #a, #b,          \
             a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                        \
  } while (0)
#define CHECK_CONTAINS(h, s)                                                                  \
  do {                                                                                        \
    const char *h_ = (h), *s_ = (s);                                                          \
    CHECK_AT(h_ && strstr(h_, s_), "%s contains \"%s\" (got \"%s\")", #h, s_, h_ ? h_ : "(null)"); \
  } while (0)

static inline int check_report(void) {
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
