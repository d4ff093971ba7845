// The clocks: CLOCK_MONOTONIC is bpf_ktime_get_ns()'s clock, the one every
// event, deadline and trace time uses (CLOCK_REALTIME only to anchor a trace
// to the wall clock).
#pragma once
#include <time.h>

#include <cstdint>

namespace jvmtrace {

// Clock c in nanoseconds.
inline uint64_t clock_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline double monotonic_s() { return static_cast<double>(monotonic_ns()) / 1e9; }

}  // namespace jvmtrace
