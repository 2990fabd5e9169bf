// What a fuzz target does when a property it checks does not hold: report it and abort, so that libFuzzer
// keeps the input as a crash and the replay program fails.
#pragma once

#include <cstdio>
#include <cstdlib>

#define PSDP_FUZZ_CHECK(condition)                                                            \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
