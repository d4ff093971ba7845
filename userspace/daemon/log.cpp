#include "daemon/log.h"

#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <string>

#include "base/clock.h"

namespace jvmtrace {

double now_s() { return monotonic_s(); }

// One write per line: stderr is unbuffered, and the workers write to the
// same stream, so a line put out in pieces could be split by theirs.
void log_line(const char* level, const char* fmt, ...) {
  char when[32];
  std::time_t t = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  std::string line = std::string(when) + " jvmtraced[" + level + "] ";
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int m = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  if (m > 0) {
    const size_t at = line.size();
    line.resize(at + m + 1);
    std::vsnprintf(line.data() + at, m + 1, fmt, again);
    line.resize(at + m);
  }
  va_end(again);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace jvmtrace
