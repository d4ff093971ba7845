#include "daemon/log.h"

#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "base/clock.h"

namespace jvmtrace {

double now_s() { return monotonic_s(); }

void log_line(const char* level, const char* fmt, ...) {
  char when[32];
  std::time_t t = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  std::fprintf(stderr, "%s jvmtraced[%s] ", when, level);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

}  // namespace jvmtrace
