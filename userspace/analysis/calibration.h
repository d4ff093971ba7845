// Calibration: for one run, jvmtrace's complete TLAB-refill stream (every
// refill, weighed by its TLAB's bytes, attributed to the class of the
// allocation that asked for it, plus every outside-TLAB object) next to JFR's
// throttled jdk.ObjectAllocationSample weights, per class: how far JFR's
// sampled picture is from the one jvmtrace saw.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "base/json.h"

namespace jvmtrace::analysis {

struct ClassRow {
  std::string klass;
  uint64_t trace_bytes = 0, trace_events = 0;
  double jfr_weight = 0;
  uint64_t jfr_samples = 0;
};

struct CalibrationResult {
  std::vector<ClassRow> rows;  // by trace bytes, most first
  uint64_t trace_bytes = 0, trace_events = 0, jfr_samples = 0, jfr_samples_used = 0;
  double jfr_weight = 0;
  double distance = 0;  // total variation distance of the two class mixes: 0 same, 1 disjoint
  std::vector<std::pair<uint32_t, std::string>> threads;  // compared (kernel tid, name)
  double window_s = 0;  // compared span, summed over threads
};

class Calibration {
 public:
  // jfr: `jfr print --json --events jdk.ObjectAllocationSample` output.
  // Only threads JFR sampled are compared, each over the same window: from
  // its first sample (whose weight covers time before it, so it is left
  // out) to its last.
  bool load_jfr(const nlohmann::json& jfr, std::string* error);
  void add(const trace::TraceReader& reader, const trace::Record& r);
  CalibrationResult finish(const trace::TraceReader& reader) const;

 private:
  struct Window {
    uint64_t from_ns = 0, to_ns = 0;  // realtime
  };
  struct Slow {
    bool open = false;
    uint64_t klass = 0;
  };
  void count(uint32_t tid, uint64_t ts_ns, const std::string& klass, uint64_t bytes);

  std::map<uint32_t, Window> windows_;                            // by kernel tid
  std::map<std::string, std::pair<double, uint64_t>> jfr_;        // class -> (weight, samples)
  std::map<std::string, std::pair<uint64_t, uint64_t>> trace_;    // class -> (bytes, events)
  std::map<uint32_t, Slow> slow_;                                 // by thread index
  uint64_t samples_ = 0, samples_used_ = 0;
  int64_t mono_to_real_ = 0;
  bool have_clock_ = false;
};

// ISO-8601 "2026-11-22T23:15:41.014290019Z" (or +hh:mm) -> ns since the epoch; 0 if not one.
uint64_t parse_iso8601_ns(const std::string& s);

}  // namespace jvmtrace::analysis
