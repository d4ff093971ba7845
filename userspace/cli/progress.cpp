#include "cli/progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace jvmtrace {

Progress::Progress(const char* what, const std::string& path) : what_(what) {
  struct stat st;
  enabled_ = isatty(STDERR_FILENO) && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  total_ = enabled_ ? static_cast<uint64_t>(st.st_size) : 0;
  start_ = std::chrono::steady_clock::now();
  const char* delay = std::getenv("JVMTRACE_PROGRESS_DELAY_MS");
  next_ = start_ + std::chrono::milliseconds(delay ? std::strtoul(delay, nullptr, 10) : 1000);
}

void Progress::draw(uint64_t offset) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + std::chrono::milliseconds(250);
  const double secs = std::chrono::duration<double>(now - start_).count();
  // (a file that grows while it is read would pass 100%)
  const double frac = total_ ? std::min(1.0, static_cast<double>(offset) / total_) : 0;
  const double rate = secs > 0 ? offset / secs / 1e6 : 0;
  const double left = frac > 0 ? secs * (1 - frac) / frac : 0;
  std::fprintf(stderr, "\r%s: %5.1f%% of %.1f MB read, %.1f MB/s, about %.0f s left   ", what_, 100 * frac,
               total_ / 1e6, rate, left);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::done() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");  // the line goes: what follows is the result
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace jvmtrace
