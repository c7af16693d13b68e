/* check.h - the tiny assertion kit of the C unit tests: each CHECK prints
 * both sides on failure, main() returns the failure count via CHECK_DONE. */
#ifndef DDX_TEST_CHECK_H
#define DDX_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures_;
static int check_count_;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    check_count_++;                                                                                \
    if (!(cond)) {                                                                                 \
      check_failures_++;                                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
  do {                                                                                             \
    long long va_ = (long long)(a), vb_ = (long long)(b);                                          \
    check_count_++;                                                                                \
    if (va_ != vb_) {                                                                              \
      check_failures_++;                                                                           \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b, va_,   \
              vb_);                                                                                \
    }                                                                                              \
  } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
  do {                                                                                             \
    const char *sa_ = (a), *sb_ = (b);                                                             \
    check_count_++;                                                                                \
    if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                                   \
      check_failures_++;                                                                           \
      fprintf(stderr,                                                                              \
              "%s:%d: %s == %s failed:\n  got:    \"%s\"\n"                                        \
              "  wanted: \"%s\"\n",                                                                \
              __FILE__, __LINE__, #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");             \
    }                                                                                              \
  } while (0)

#define CHECK_DONE()                                                                               \
  do {                                                                                             \
    printf("%d passed, %d failed\n", check_count_ - check_failures_, check_failures_);             \
    return check_failures_ ? 1 : 0;                                                                \
  } while (0)

#endif
