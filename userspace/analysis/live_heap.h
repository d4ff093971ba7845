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
    double median_age_bytes = -1;  // of the dead, bytes allocated since (a log2 bucket's upper bound); -1: none
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

  // The live heap after each collection that reported fates (one point per
  // collection: a collection's later batches update its point), for plots
  // and growth.  kind: the collection's gc__start kind (0 young, 1 full,
  // 2 concurrent cycle), -1 if the trace has no gc__start for it.
  struct Point {
    uint64_t ts_ns = 0, gc_id = 0;
    int kind = -1;
    double live_bytes = 0;
  };
  const std::vector<Point>& points() const { return points_; }
  // An old or full collection: one after which every tracked object's death
  // has been seen (a full pause, a concurrent cycle; docs/analysis.md).
  static bool old_point(const Point& p) { return p.kind == JVMTRACE_GC_FULL || p.kind == JVMTRACE_GC_CONCURRENT; }
  size_t old_points() const;
  // A site's estimate at every point (0 before its first live sample).
  struct Series {
    std::string name;
    std::vector<double> live_bytes;  // by point
  };
  // The sites heaviest at the last point, at most top.
  std::vector<Series> top_series(size_t top) const;
  // Growing sites: least-squares growth of each site's live bytes across the
  // old or full collections (at least two), fastest first; only sites that
  // grew.  Leak suspects.
  struct Growth {
    std::string name;
    double bytes_per_s = 0;        // least-squares slope over the old points
    double first = 0, last = 0;    // live bytes at the first and last old point
    double last_ci90 = 0;          // the last old point's 90% half-width
    uint32_t up = 0, steps = 0;    // old-to-old steps in which it grew, of steps
  };
  std::vector<Growth> growing(size_t top) const;
  // The estimated bytes that died, by age at death in bytes allocated since
  // their birth (log2 buckets: i holds [2^(i-1), 2^i); 0: none), all
  // sites: the survival curve's data (a sample's weight x 2^level).
  std::vector<double> deaths_by_age_bytes() const { return {death_age_w_, death_age_w_ + 65}; }
  // Points whose per-site values were not kept (past kMaxSeriesEntries): the
  // per-site history ends at series_end(); totals are kept for every point.
  size_t series_end() const { return series_cut_ ? series_cut_at_ : points_.size(); }
  // Collections past kMaxPoints: not plotted (the estimate goes on).
  bool points_cut() const { return points_cut_; }
  // Bytes allocated (new TLABs and objects outside them) between a dead
  // sample's birth and the start of the collection that found it dead: the
  // median over a row's dead, as a power of two's bucket (upper bound).

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
    uint64_t born_alloc = 0;  // bytes allocated in the trace before it
    uint32_t site = 0;        // its allocation site (sites_)
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
    uint64_t age_bytes[65] = {};  // log2 buckets: i holds [2^(i-1), 2^i)
  };
  static constexpr size_t kMaxSamples = 1 << 22;
  static constexpr size_t kMaxSeriesEntries = 1 << 22;  // (site, point) values kept: 64 MiB
  static constexpr size_t kMaxPoints = 1 << 18;  // collections plotted: a drawn series is 2 MiB at most
  static constexpr size_t kMaxGcs = 1 << 20;             // collections' allocation marks kept
  void settle(const Sample& s, const Early& fate);
  // A sample enters or leaves the running per-site sums.
  void enter(const Sample& s);
  void leave(const Sample& s);
  uint32_t site_of(uint64_t stack);
  void snapshot(const trace::Fates& f);
  double scale() const;
  // site's estimate now, as of the last collection that started (the young
  // excluded)
  double site_now(uint32_t site) const;
  // Per-site values by name (sites of one name summed), where they change.
  using Sparse = std::vector<std::pair<uint32_t, double>>;  // (point, value from there on)
  std::map<std::string, Sparse> named_series() const;
  static double value_at(const Sparse& v, size_t point);
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

  // Allocation sites, and what is alive at each: weight sums (exact, before
  // the level's scale) of the samples alive, and of those born since the
  // last gc__start (young_epoch_ == gc_seq_), which no collection judged.
  // A site is a (method, line) (the leaf-most Java frame); its name is
  // looked up when printed, as rows() does.
  std::unordered_map<uint64_t, uint32_t> stack_site_;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> site_ids_;
  std::vector<uint64_t> site_stack_;  // a stack (id + 1) of each site, for its name
  std::vector<uint64_t> site_w_, site_young_w_, site_young_epoch_;
  std::vector<uint8_t> dirty_;
  std::vector<uint32_t> dirty_list_;
  uint64_t total_w_ = 0, total_young_w_ = 0, total_young_epoch_ = 0;
  uint64_t scaled_level_ = 0;  // the level of the last snapshot
  std::vector<Point> points_;
  // series_[site]: (point, live bytes) where its value changed
  std::vector<std::vector<std::pair<uint32_t, double>>> series_;
  size_t series_entries_ = 0, series_cut_at_ = 0;
  bool series_cut_ = false, points_cut_ = false;
  // gc__start kinds and the bytes allocated before each collection started
  std::unordered_map<uint64_t, int> gc_kind_;
  std::unordered_map<uint64_t, uint64_t> gc_alloc_;
  uint64_t alloc_total_ = 0;
  double death_age_w_[65] = {};
};

}  // namespace jvmtrace::analysis
