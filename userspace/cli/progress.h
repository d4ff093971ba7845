// A progress line on stderr while a command reads a large trace (report,
// export, flame, calibrate): how far through the file, how fast, and how
// long is left.  Only on a terminal, and only once the work has taken a
// second: short runs and pipes see nothing.  (JVMTRACE_PROGRESS_DELAY_MS
// changes the second, for the tests.)
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace jvmtrace {

class Progress {
 public:
  // path: the trace being read (its size is the whole); what: the command
  // ("jvmtrace export").
  Progress(const char* what, const std::string& path);
  ~Progress() { done(); }
  // offset: how far the reader is (a block's offset); cheap when not drawn.
  void at(uint64_t offset) {
    if (enabled_ && ++calls_ % 256 == 0) draw(offset);
  }
  // Clears the line (if one was drawn).
  void done();

 private:
  void draw(uint64_t offset);

  const char* what_;
  bool enabled_ = false, shown_ = false;
  uint64_t total_ = 0, calls_ = 0;
  std::chrono::steady_clock::time_point start_, next_;
};

}  // namespace jvmtrace
