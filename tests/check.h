// The C++ tests' one assertion (tests/*_test.cpp): CHECK(cond, printf
// format, ...) counts a failure and prints the first few, so one run shows
// every kind of failure without stopping at the first.  main() returns
// `failures ? 1 : 0`.
#pragma once

#include <cstdio>

namespace jvmtrace_test {
inline int failures = 0;
constexpr int kPrintedFailures = 30;
}  // namespace jvmtrace_test

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      if (jvmtrace_test::failures++ < jvmtrace_test::kPrintedFailures) {          \
        std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                 \
        std::fprintf(stderr, __VA_ARGS__);                                        \
        std::fputc('\n', stderr);                                                 \
      }                                                                           \
    }                                                                             \
  } while (0)
