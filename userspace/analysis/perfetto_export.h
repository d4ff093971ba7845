// A trace as a timeline for ui.perfetto.dev: GC pauses as slices on a VM
// track, TLAB refills and slow-path allocations on each mutator thread,
// PLABs on each GC worker, counters for heap used and allocation rate.
// docs/analysis.md has the mapping, event by event.  PerfettoExport decides
// what is drawn; a TimelineSink writes it, as Chrome's Trace Event Format
// (JSON, which chrome://tracing opens too) or as Perfetto's own protobuf
// trace (perfetto_proto.h: a fraction of the size).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/live_heap.h"
#include "base/json.h"
#include "trace/reader.h"

namespace jvmtrace::analysis {

// Pseudo thread ids for tracks that are not one real thread (real Linux
// tids stay below 2^22 by default, pid_max's limit).
constexpr uint32_t kGcPauseTrack = 1000000000;
constexpr uint32_t kGcConcurrentTrack = 1000000001;
// With the pause probes, the young and full collections (gc__start/end, what
// JFR calls a GarbageCollection) get a track of their own beside the pauses.
constexpr uint32_t kGcCollectionTrack = 1000000002;
constexpr uint32_t kOldPlabTrackBase = 1100000000;  // + the worker's tid
// With the safepoint probes, every safepoint on a track of its own, the GC
// pauses on the same track, inside the safepoint that ran them.
constexpr uint32_t kSafepointTrack = 1000000003;

// What the timeline is made of.  Times are nanoseconds on the trace's clock;
// tid is a real thread's or one of the pseudo tracks above; args are the
// event's fields (numbers and strings; addresses as "0x..." strings under a
// key that is_address_key() names).
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void process(uint32_t pid, const std::string& name, const std::string& labels) = 0;
  virtual void thread(uint32_t pid, uint32_t tid, const std::string& name, int sort_index) = 0;
  virtual void slice(const char* cat, const std::string& name, uint32_t tid, uint64_t from_ns, uint64_t to_ns,
                     const Json& args) = 0;
  virtual void instant(const char* cat, const std::string& name, uint32_t tid, uint64_t ns, const Json& args) = 0;
  // An instant of the whole process (events lost).
  virtual void process_instant(const std::string& name, uint64_t ns, const Json& args) = 0;
  // A counter's value (a JSON number: integers stay integers) at ns; series
  // names the value within the counter (Trace Event's args key).
  virtual void counter(const char* name, const char* series, uint64_t ns, const Json& value) = 0;
  // Ends the output (empty: nothing was given).
  virtual void finish() = 0;
  uint64_t events_written() const { return written_; }

 protected:
  uint64_t written_ = 0;
};

// The args keys whose "0x..." values are addresses.
bool is_address_key(const std::string& key);
// The args keys whose values are lines (a stack's frames, leaf first).
bool is_lines_key(const std::string& key);

// sink, given only printable text (base/strings.h) in names and string
// arguments: the target's text (thread, class, method and GC names, its
// command line) reaches no viewer with a control character or bytes that
// are not UTF-8, and both forms of the timeline carry the same names.  A
// lines value (is_lines_key) is made printable line by line.
std::unique_ptr<TimelineSink> printable_sink(TimelineSink& sink);

// Chrome's Trace Event Format: one JSON document, an event per line.
// out receives the text in pieces; origin_ns is time zero.
std::unique_ptr<TimelineSink> trace_event_json_sink(uint64_t origin_ns, std::function<void(const std::string&)> out);

class PerfettoExport {
 public:
  // origin_ns is time zero.
  PerfettoExport(const trace::TraceReader& reader, uint64_t origin_ns, TimelineSink& sink, uint64_t rate_interval_ns);

  void add(const trace::Record& r);
  void finish();  // closes what is open at the end of the trace, ends the output

 private:
  struct OpenSlow {
    bool open = false;
    uint64_t ts = 0, bytes = 0, klass = 0;
  };
  struct OpenPlab {
    uint64_t ts = 0, gc_id = 0, bytes = 0, dest = 0;
    uint32_t tid = 0;
  };
  struct OpenGc {
    uint64_t ts = 0, used = 0, committed = 0, kind = 0, name = 0, cause = 0;
  };

  uint32_t gc_track(uint64_t kind) const {
    return kind == JVMTRACE_GC_CONCURRENT ? kGcConcurrentTrack : pause_probes_ ? kGcCollectionTrack : kGcPauseTrack;
  }
  uint32_t tid(uint32_t thread_index) const { return reader_.threads()[thread_index].tid; }
  void name_thread(uint32_t tid, const std::string& name, int sort_index);
  void heap_counter(uint64_t ns, uint64_t used);
  // The heap counters at a pause's edges: its start (used, if known: stock
  // traces have no heap sizes) and its end (used and committed); in between
  // the used line is not drawn from allocation.
  void heap_at_pause_start(uint64_t ns, const uint64_t* used);
  void heap_at_pause_end(uint64_t ns, uint64_t used, uint64_t committed);
  void rate_until(uint64_t ns);

  const trace::TraceReader& reader_;
  uint64_t origin_;
  // The sink the export writes to: the given one behind printable_sink(),
  // so every name and string argument reaches it printable().
  std::unique_ptr<TimelineSink> printable_;
  TimelineSink& out_;
  uint64_t interval_;
  uint32_t pid_ = 0;
  uint64_t last_ns_ = 0;
  std::vector<bool> named_;  // thread index -> thread_name metadata written
  std::map<uint32_t, bool> pseudo_named_;
  std::unordered_map<uint32_t, OpenSlow> slow_;
  std::map<uint64_t, OpenPlab> plabs_;  // by start address
  std::map<uint64_t, OpenGc> gcs_;      // by id
  std::map<std::pair<uint64_t, uint64_t>, OpenGc> pauses_;  // by (id, pause kind)
  bool pause_probes_ = false;
  uint32_t pause_track_ = kGcPauseTrack;  // kSafepointTrack when the trace has safepoints
  struct OpenSafepoint {
    bool open = false;
    uint64_t ts = 0, operation = 0, id = 0;
  } safepoint_;
  bool target_exited_ = false;  // the trace's end record says the JVM exited
  // Heap used, reconstructed between pauses: the last pause's end plus
  // what was allocated since (report --check verifies the sum).
  bool heap_known_ = false;
  uint64_t heap_used_ = 0, heap_last_emit_ = 0;
  bool heap_pending_ = false;
  // Allocation rate: bytes per interval.
  bool rate_started_ = false;
  uint64_t rate_bucket_ = 0, rate_bytes_ = 0;
  // What stays alive (a record --live trace): the live heap after each
  // collection that reported, in total and for the top sites, drawn at the
  // end (counters need not come in time order).
  LiveHeap live_;
  std::vector<std::string> live_names_;  // (counter names outlive their calls)
  void live_counters();
};

}  // namespace jvmtrace::analysis
