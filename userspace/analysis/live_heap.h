// What stays alive, by allocation site and by class, from a recording with
// sample fates (record --live: alloc__sample ids and sample__fates batches,
// trace format 4).  A tracked sample (id not 0) whose object has not been
// reported dead, thinned or untracked is alive as of the trace's last
// fates batch; it stands for its weight x 2^level bytes (the VM's table
// admits at 2^-level and thins without bias, so the sum is a
// Horvitz-Thompson estimate of the live bytes allocated while tracked).
// Deaths are seen as each collector's weak processing sees them: a young
// collection sees only young objects' (docs/probes.md, sample__fates).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/reader.h"

namespace jvmtrace::analysis {

class LiveHeap {
 public:
  explicit LiveHeap(const trace::TraceReader& reader) : reader_(reader) {}
  void add(const trace::Record& r);

  struct Row {
    std::string name;          // "pkg.Class.method:line", or a class's name
    double live_bytes = 0;     // estimate
    double ci90 = 0;           // half-width of a 90% interval
    uint64_t tracked = 0, alive = 0, died = 0, promoted = 0;
    double median_age_gcs = -1;  // of the dead, in collections; -1: none died
  };
  // Heaviest live first, at most top rows.
  std::vector<Row> by_site(size_t top) const;
  std::vector<Row> by_class(size_t top) const;
  double live_bytes() const;
  // The estimate by (Java stack id + 1, class): live bytes and objects, for
  // pprof's inuse_space and inuse_objects.
  struct Use {
    double bytes = 0, objects = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, Use> by_stack() const;
  uint64_t tracked() const { return tracked_; }
  // Tracked samples allocated after the last collection that reported: not
  // in the estimate (as Go's heap profile counts what the last collection saw).
  uint64_t too_young() const;
  uint64_t fate_records() const { return fate_records_; }
  uint64_t level() const { return level_; }
  uint64_t batches() const { return batches_; }
  uint64_t orphans() const { return early_.size(); }  // fates of ids not in the trace (tracked before it)
  uint64_t dropped() const { return dropped_; }        // samples or fates past kMaxSamples: left out
  uint64_t lost() const { return lost_; }

 private:
  // A tracked sample whose object has no final fate yet (alive, as far as
  // the trace says).  Final fates are folded into per-(stack, class)
  // counts and the sample forgotten, so what is kept is bounded by what is
  // alive (the VM's table: at most JvmtraceLiveSamples); a trace file that
  // names more is cut at kMaxSamples (counted in dropped()).
  struct Sample {
    uint64_t weight = 0, stack = 0, klass = 0, alloc_bytes = 0;
    uint64_t born_gc = 0;     // the last collection's id before it
    uint64_t born_seq = 0;    // collections started before it, in the trace
    bool promoted = false;
  };
  // A fate that came before its sample (see add()).
  struct Early {
    int64_t died_gc = -1;
    bool promoted = false, gone = false;
  };
  // The dead of a (stack, class): how many, how many were promoted first,
  // and their ages in collections (64: 64 or more).
  struct Dead {
    uint64_t died = 0, promoted = 0;
    uint64_t ages[65] = {};
  };
  static constexpr size_t kMaxSamples = 1 << 22;
  void settle(const Sample& s, const Early& fate);
  std::vector<Row> rows(bool by_site, size_t top) const;
  std::string name_of(bool by_site, uint64_t stack, uint64_t klass) const;

  const trace::TraceReader& reader_;
  std::unordered_map<uint64_t, Sample> samples_;
  std::unordered_map<uint64_t, Early> early_;
  std::map<std::pair<uint64_t, uint64_t>, Dead> dead_;
  uint64_t tracked_ = 0, dropped_ = 0;
  uint64_t level_ = 0, batches_ = 0, fate_records_ = 0, lost_ = 0, last_gc_ = 0;
  // Collections started so far, and as of the last fates batch: a sample
  // born after that collection has not been judged by any collection yet.
  uint64_t gc_seq_ = 0, judged_seq_ = 0;
};

}  // namespace jvmtrace::analysis
