/* The checks of the C API tests: CHECK counts and reports a failed condition with its line; CHECK_ERROR
 * that a call returns `code` with a last error (of `comm`, or of the thread for NULL) containing `word`.
 * One translation unit per test program includes it. */
#ifndef PSDP_TESTS_C_API_C_CHECKS_H_
#define PSDP_TESTS_C_API_C_CHECKS_H_

#include <psdp/psdp.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_ERROR(call, code, comm, word)                                                                 \
  do {                                                                                                      \
    psdp_status_t s_ = (call);                                                                              \
    CHECK(s_ == (code));                                                                                    \
    if (s_ != (code)) fprintf(stderr, "  got %s: %s\n", psdp_status_string(s_), psdp_get_last_error(comm)); \
    CHECK(strstr(psdp_get_last_error(comm), (word)) != NULL);                                               \
    if (strstr(psdp_get_last_error(comm), (word)) == NULL)                                                  \
      fprintf(stderr, "  message '%s' lacks '%s'\n", psdp_get_last_error(comm), (word));                    \
  } while (0)

/* Prints the tally; the exit status of main. */
static int finish_checks(void) {
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}

#endif /* PSDP_TESTS_C_API_C_CHECKS_H_ */
