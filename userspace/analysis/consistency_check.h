// Replaying a trace and checking it against what HotSpot's memory manager
// guarantees (report --check).  The replay keeps, as AntTracks does, the
// mutator and GC phases apart: per mutator thread its current TLAB and its
// open slow path; per pause its PLABs; the open pauses.  Each event is checked against that state, and each stretch of
// mutator time between two pauses against the heap growth the pauses report.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/reader.h"

namespace jvmtrace::analysis {

struct Violation {
  uint64_t offset;    // the offending record's first byte in the file
  std::string check;  // e.g. "plab.used_plus_waste"
  std::string what;   // one line for a person
};

// The heap-growth check, one row per stretch between a pause's end and the
// next pause's start (with the pause probes every stop-the-world pause, G1
// Remark and Cleanup too; without them, young and full collections).
struct Stretch {
  uint64_t from_gc = 0, to_gc = 0;     // the pauses around it (HotSpot ids)
  uint64_t offset = 0;                 // the closing pause-start record
  uint64_t growth = 0;                 // heap used at to_gc's start - at from_gc's end
  uint64_t allocated = 0;              // new TLABs + outside-TLAB objects in between
  uint64_t filled = 0;                 // G1: region tails filled with a dummy object when retired
  bool checked = false;                // false: events were lost in it, or it cannot be decided
  int64_t slack() const { return static_cast<int64_t>(growth) - static_cast<int64_t>(allocated + filled); }
};

struct CheckOptions {
  // Heap growth and traced allocation (G1 humongous objects rounded up to
  // whole regions) agreed to the byte in every stretch measured
  // (docs/analysis.md); the slack is for what the trace cannot see.
  uint64_t growth_slack_bytes = 0;    // 0: one G1 region (meta heap_region_bytes), else 1 MiB
  double growth_slack_ratio = 0.01;   // plus this share of the allocation
  size_t max_violations = 1000;       // kept (all are counted)
};

class ConsistencyCheck {
 public:
  ConsistencyCheck(const trace::TraceReader& reader, const CheckOptions& options);

  void add(const trace::Record& r);
  void finish();  // after the last record: what is still open

  uint64_t events() const { return events_; }
  uint64_t violation_count() const { return violation_count_; }
  const std::vector<Violation>& violations() const { return violations_; }
  const std::vector<Stretch>& stretches() const { return stretches_; }
  const std::map<std::string, uint64_t>& checked() const { return checked_; }  // per check: how often it ran
  const std::vector<std::string>& notes() const { return notes_; }            // what was not checked, and why
  uint64_t growth_slack_bytes() const { return slack_bytes_; }

 private:
  struct Range {
    uint64_t start = 0, end = 0;  // [start, end)
    uint32_t thread = 0;
    bool live = false;
    uint64_t gc_id = 0, dest = 0;  // PLABs
  };
  struct SlowPath {
    bool open = false;
    uint64_t bytes = 0, klass = 0, offset = 0;
    bool refilled = false;  // a refill came while it was open
  };
  struct Mutator {
    Range tlab;
    SlowPath slow;
    bool seen = false;
  };
  struct OpenGc {
    uint64_t id = 0, kind = 0, name = 0, offset = 0;
  };

  void violation(const trace::Record& r, const char* check, const std::string& what);
  void violation_at(const Violation& v);
  std::string pause_what(uint64_t id, uint64_t name) const;
  bool same_pause_title(uint64_t start, uint64_t end) const;  // "GC 24 (Pause Remark)"
  void ran(const char* check) { checked_[check]++; }
  // Another live range in set overlapping [start, end), or nullptr.
  static const Range* overlap(const std::map<uint64_t, Range>& set, uint64_t start, uint64_t end);
  static bool inside(const std::map<uint64_t, Range>& set, uint64_t address);
  std::string thread_name(uint32_t index) const;
  // A collection that began before the first start this trace saw (the
  // recording or segment began during it).
  bool started_before(uint64_t id) const {
    return !open_.count(id) && !cycles_.count(id) && (!have_first_start_ || id < first_start_id_);
  }

  void tlab_refill(const trace::Record& r);
  void slow_enter(const trace::Record& r);
  void slow_exit(const trace::Record& r);
  void gc_start(const trace::Record& r);
  void gc_end(const trace::Record& r);
  void pause_start(const trace::Record& r);
  void pause_end(const trace::Record& r);
  // A pause begins: close the mutator stretch against heap_used (a pause's
  // start figure), then retire what a pause retires.
  void close_stretch(const trace::Record& r, uint64_t to_gc, const std::string& to_what, uint64_t heap_used,
                     const std::string& cause);
  void open_stretch(uint64_t from_gc, const std::string& from_what, uint64_t heap_used);
  void plab_alloc(const trace::Record& r);
  void plab_retire(const trace::Record& r);
  void promote_direct(const trace::Record& r);
  void lost(const trace::Record& r);

  const trace::TraceReader& reader_;
  CheckOptions options_;
  bool stock_ = false;
  // The trace has gc__pause__start/end: stretches run between them.  Without
  // them (stock mode, a JVM patched before them) between young and full
  // collections, and a stretch that a G1 concurrent cycle overlaps cannot be
  // decided: its Remark and Cleanup pauses free memory unseen.
  bool pause_probes_ = false;
  struct OpenPause {
    uint64_t id = 0, kind = 0, name = 0, offset = 0;
  };
  bool pause_open_ = false, have_pause_ = false;
  OpenPause pause_;
  uint64_t pauses_before_ = 0;        // pause ends whose start came before the recording
  // Without pause probes: whether a concurrent cycle is (or may be) open, and
  // was at any time in the current stretch; "may be" until the trace shows
  // whether one was running when it began.
  bool cycle_open_ = false, cycle_known_ = false, stretch_cycle_ = false;
  uint64_t undecided_ = 0;            // stretches a concurrent cycle overlapped
  std::vector<Violation> pending_;    // "grew less" findings waiting for cycle_known_
  uint64_t abandoned_young_ = 0;
  // ZGC or Shenandoah: they free memory concurrently, between their pauses.
  bool concurrent_collector_ = false;
  uint64_t growth_unchecked_ = 0;  // stretches left unchecked for that
  // Safepoints (safepoint__begin/end): the open one, if any.
  bool safepoint_probes_ = false, safepoint_open_ = false, have_safepoint_ = false;
  uint64_t safepoint_id_ = 0, safepoint_offset_ = 0, safepoints_before_ = 0, pauses_outside_safepoint_ = 0;
  void safepoint_begin(const trace::Record& r);
  void safepoint_end(const trace::Record& r);
  bool g1_ = false;                   // a G1 collection was seen      // Serial (JDK 17): a young collection given up, no gc__end
  uint64_t region_ = 0;  // G1's region size, 0 if not G1 or not known
  uint64_t min_tlab_ = 2048;  // MinTLABSize (meta min_tlab_bytes; HotSpot's default if absent)
  // G1's mutator allocation regions, replayed from the traced allocations'
  // addresses (MutatorAllocRegion: a current region, and a retained one that
  // still fits a TLAB).  When G1 retires a region mid-stretch it fills the
  // tail it leaves with a dummy object that no slow path allocated; the heap
  // grows by it.  Young and full collections release both regions.
  uint64_t g1_current_ = 0, g1_retained_ = 0;       // region bases, 0: none
  std::unordered_map<uint64_t, uint64_t> g1_top_;   // region base -> end of its last allocation
  std::unordered_map<uint64_t, uint64_t> g1_first_top_;  // region base -> end of its first allocation
  uint64_t stretch_filled_ = 0;
  struct G1Allocation {
    uint64_t ts_ns, start, bytes;
  };
  std::vector<G1Allocation> g1_pending_;  // this stretch's, not yet replayed
  struct G1Filled {
    uint64_t top = 0, fill = 0;  // the region's top when filled, and the bytes counted for it
    uint64_t seq = 0;            // in which stretch
    bool counted = true;         // (fill >= kMinFillBytes at the time, or 0 outside a stretch)
  };
  std::unordered_map<uint64_t, G1Filled> g1_filled_;  // retired and filled since the last release
  uint64_t g1_reordered_ = 0;  // allocations replayed after their region's fill (records out of time order)
  uint64_t g1_retained_at_pause_ = 0;  // stretches G1's other history at the pause explained
  std::optional<int64_t> g1_retire_at_pause();
  bool g1_should_retain(uint64_t free) const;  // MutatorAllocRegion::should_retain
  uint64_t stretch_seq_ = 0;
  void g1_allocated(uint64_t ts_ns, uint64_t start, uint64_t bytes);
  void g1_replay();
  void g1_retire_current();  // MutatorAllocRegion::retire(true)
  uint64_t g1_free(uint64_t base) const;
  void g1_fill(uint64_t base);
  uint64_t slack_bytes_ = 0;
  uint64_t events_ = 0, violation_count_ = 0;
  std::vector<Violation> violations_;
  std::map<std::string, uint64_t> checked_;
  std::vector<std::string> notes_;
  std::vector<Stretch> stretches_;

  std::unordered_map<uint32_t, Mutator> mutators_;
  std::map<uint64_t, Range> tlabs_;  // live TLABs by start: retired all at once by a pause
  std::map<uint64_t, Range> plabs_;  // this pause's PLABs by start, retired ones too
  bool fresh_pause_lost_ = false;    // events were lost since the open pause began
  std::map<uint64_t, OpenGc> open_;    // pauses (young, full) started, not ended, by id
  std::map<uint64_t, OpenGc> cycles_;  // concurrent cycles likewise
  uint64_t shared_ids_ = 0;            // a cycle and a pause with one id (GCId::create's race)
  bool have_last_start_ = false;
  uint64_t last_start_id_ = 0, first_start_id_ = 0;
  bool have_first_start_ = false;
  // The stretch being measured: from the last pause end (if seen) on.
  bool stretch_open_ = false, stretch_lost_ = false;
  uint64_t stretch_from_ = 0, stretch_used_ = 0, stretch_alloc_ = 0;
  std::string stretch_from_what_;
  uint64_t lost_ = 0, ended_before_ = 0, before_events_ = 0, exits_unopened_ = 0;
};

}  // namespace jvmtrace::analysis
