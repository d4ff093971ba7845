// A recording in segments (record --segment-mb / --segment-seconds /
// --keep): FILE.jvmtrace is written as FILE.000000.jvmtrace,
// FILE.000001.jvmtrace, ..., each a whole trace; a segment ends at a size or
// an age, and the oldest go once more than --keep exist.  Segment names are
// never written over.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "trace/writer.h"

namespace jvmtrace {

// FILE.jvmtrace -> FILE.000007.jvmtrace (other names: NAME.000007).
std::string segment_path(const std::string& base, uint64_t n);

class Segments {
 public:
  using Clock = std::chrono::steady_clock;
  // max_mb, max_seconds: 0 for no limit of that kind; keep: 0 for all.
  Segments(const std::string& base, double max_mb, double max_seconds, long keep);

  bool enabled() const { return max_mb_ > 0 || max_seconds_ > 0; }
  // The file being written: base itself when not segmented.
  const std::string& current() const { return files_.back(); }
  // False (with *error) if a segment of base exists (an earlier recording's,
  // or planted): they must go first.  True when not segmented.
  bool check_none_exist(std::string* error) const;

  // From now on the current segment ages.
  void start(Clock::time_point now) { started_ = now; }
  // Whether the current segment is full or old enough to end.
  bool due(const trace::TraceWriter& w, Clock::time_point now) const;
  // Ends the current segment and starts the next (w.rotate), then removes
  // the oldest beyond --keep (each after rotate() synced the newer data).
  // Says on stderr what it could not remove.  False if the rotation failed
  // (w.failed() tells why).
  bool rotate(trace::TraceWriter& w, Clock::time_point now, uint64_t now_ns);

 private:
  std::string base_;
  double max_mb_, max_seconds_;
  long keep_;
  uint64_t index_ = 0;
  std::deque<std::string> files_;  // written, oldest first
  Clock::time_point started_;
};

}  // namespace jvmtrace
