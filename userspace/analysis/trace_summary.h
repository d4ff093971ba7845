// What report prints, gathered in one pass over a trace: per-GC rows, TLAB,
// outside-TLAB, slow-path and PLAB statistics, the allocation rate over
// time, classes and threads by bytes.  report's text and JSON and the HTML
// report are views of it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/alloc_profile.h"
#include "trace/reader.h"

namespace jvmtrace::analysis {

struct Gc {
  uint64_t id = 0, start_ns = 0, end_ns = 0, kind = 0;
  uint64_t used_before = 0, used_after = 0, committed_after = 0;
  std::string name, cause;
  bool started = false, ended = false;
  uint64_t plabs = 0, plab_bytes = 0, plab_waste = 0, direct = 0, direct_bytes = 0;
};

// A stop-the-world pause (gc__pause__start/end): one "GC(n) Pause ..." line
// of -Xlog:gc.  Several may share a GC id (G1 Remark and Cleanup share
// their concurrent cycle's).
struct Pause {
  uint64_t gc_id = 0, kind = 0, start_ns = 0, end_ns = 0;  // kind: trace::PauseKind
  uint64_t used_before = 0, used_after = 0, committed_after = 0;
  std::string name, cause;
  bool started = false, ended = false;
};

// A safepoint (safepoint__begin/end): one "Safepoint ..." line of
// -Xlog:safepoint, its figures as the VM measured them.
struct Safepoint {
  uint64_t id = 0, start_ns = 0, end_ns = 0;  // start/end: the probes' times
  uint64_t reaching_ns = 0, cleanup_ns = 0, at_ns = 0, total_ns = 0, threads = 0, running = 0;
  std::string operation;
  bool started = false, ended = false;
};

struct Stats {  // order statistics of a list of values
  uint64_t n = 0, sum = 0, min = 0, p50 = 0, p99 = 0, max = 0;
};

// Order statistics of v (sorted in place), and the same from counts[v] = how
// often value v occurred.
Stats stats(std::vector<uint64_t>& v);
Stats stats_of_counts(const uint64_t* counts, size_t n);

struct Totals {
  uint64_t refills = 0, tlab_bytes = 0, outside = 0, outside_bytes = 0;
};

// What print time needs, computed once after the last record.
struct Derived {
  uint64_t origin_ns = 0;    // time zero: the recording's start (or the first event)
  double span_s = 0;         // first to last event
  double interval_s = 0;     // allocation-rate buckets
  double rate_from_s = 0;    // the first bucket's start
  std::vector<double> rate;  // bytes per bucket
  Stats event_bytes, tlab, outside, slow, plab[2];
  Stats pause_ns[JVMTRACE_PAUSE_KIND_COUNT];  // durations of the pauses of each kind that ended
  // Safepoints that ended: time to reach them and time at them, in all and
  // by operation (most total time first).
  Stats safepoint_reaching_ns, safepoint_at_ns, safepoint_total_ns;
  struct OperationStats {
    std::string operation;
    Stats reaching_ns, at_ns, total_ns;
  };
  std::vector<OperationStats> safepoint_ops;
  std::vector<std::pair<uint64_t, Totals>> classes, threads;  // by bytes, most first
};

class TraceSummary {
 public:
  explicit TraceSummary(const trace::TraceReader& r) : reader(r) {}
  void add(const trace::Record& rec);
  // interval_s <= 0: the recording in about 20 steps of 1, 2, .. 10 times a power of ten.
  Derived derive(double interval_s);

  const trace::TraceReader& reader;
  uint64_t events = 0, lost = 0, first_ns = 0, last_ns = 0, end_ns = 0, tlab_waste = 0;
  uint64_t lost_by_kind[16] = {};  // by trace::LostKind (a kLost tag's 4 bits)
  uint64_t by_probe[JT_PROBE_COUNT] = {}, probe_bytes[JT_PROBE_COUNT] = {};
  // Encoded sizes as counts, not a list: report's memory must not grow with
  // the trace (an event record is a few bytes; the last slot holds larger ones).
  static constexpr uint32_t kMaxCounted = 255;
  uint64_t event_bytes[kMaxCounted + 1] = {};
  uint64_t plab_used[2] = {}, plab_wasted[2] = {};
  std::string end_text;
  std::vector<uint64_t> tlab_sizes, outside_sizes, slow_ns, plab_sizes[2];
  std::vector<std::pair<uint64_t, uint64_t>> allocs;
  std::map<uint64_t, Gc> gcs;
  std::vector<Pause> pauses;  // in the order they started (one seen only ending: where it ended)
  std::vector<Safepoint> safepoints;  // in order (one seen only ending: where it ended)
  // Allocation sites (record --stacks on a JVM with alloc__sample).
  AllocationProfile profile{reader};
  // What of this trace's collectors' pauses it could not see, in words
  // ("" when it saw them all): a patch older than the probes of ZGC's and
  // Shenandoah's pauses, or stock mode.
  std::string unseen_pauses() const;
  // Whether the recording had the pause probes (meta pause_probes=1); if not,
  // `pauses` is empty because nothing could see them.
  bool pause_probes() const { return reader.meta_value("pause_probes") == "1"; }
  std::map<uint64_t, uint64_t> outcomes;
  std::unordered_map<uint64_t, Totals> classes;
  std::unordered_map<uint32_t, Totals> threads;

 private:
  struct SlowStart {
    uint64_t ts, klass;
  };
  Gc& gc(uint64_t id) {
    Gc& g = gcs[id];
    g.id = id;
    return g;
  }
  void alloc_at(uint64_t ts, uint64_t bytes) { allocs.emplace_back(ts, bytes); }
  std::unordered_map<uint32_t, SlowStart> slow;
  std::map<std::pair<uint64_t, uint64_t>, size_t> open_pauses_;  // (gc id, kind) -> index in pauses
};

}  // namespace jvmtrace::analysis
