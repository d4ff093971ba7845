// Where a trace's allocated bytes come from, by the allocation samples of
// a recording with the VM's own stacks (record --stacks on a JVM with
// alloc__sample).  Each sample carries the VM's estimate of the bytes it
// stands for (its slow path's bytes over the chance it had of being
// sampled); a thread's estimates are scaled so that they add up to the bytes
// its slow paths handed out (new TLABs, objects outside TLABs), which the
// trace counts exactly.  So the weights add up to the traced bytes, but for
// the threads never sampled (kept apart as not sampled).  One aggregation
// for the flame graph, pprof, report's allocation sites and the HTML page.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "trace/reader.h"

namespace jvmtrace::analysis {

class AllocationProfile {
 public:
  explicit AllocationProfile(const trace::TraceReader& reader) : reader_(reader) {}
  void add(const trace::Record& r);

  // (thread, Java stack id + 1, allocated class, outside TLABs) -> weight.
  // thread is 0 unless by_thread.
  struct Key {
    uint32_t thread;
    uint64_t stack;  // a Java stack id + 1; 0: the sample carried none
    uint64_t klass;
    bool outside;
    bool operator<(const Key& o) const {
      return std::tie(thread, stack, klass, outside) < std::tie(o.thread, o.stack, o.klass, o.outside);
    }
  };
  struct Weight {
    uint64_t bytes = 0, objects = 0, samples = 0;
  };
  std::map<Key, Weight> weights(bool by_thread) const;

  // An allocation site: the leaf-most Java frame's method and line.
  struct Site {
    uint64_t method = 0, line = 0;
    Weight weight;
  };
  // Heaviest first; a stack with no Java frame is method UINT64_MAX.
  std::vector<Site> sites() const;

  uint64_t samples() const { return samples_; }
  uint64_t traced_bytes() const { return traced_bytes_; }    // new TLABs' and outside objects' bytes
  uint64_t sampled_bytes() const;  // the samples' weights, scaled
  // Per thread never sampled: its traced bytes.
  std::map<uint32_t, uint64_t> unsampled_by_thread() const;
  uint64_t unsampled_bytes() const;
  // Samples of threads whose slow paths are not in the trace, and the
  // bytes the VM estimated they stand for: in no profile (see scaled()).
  std::pair<uint64_t, uint64_t> untraced_samples() const;
  // Java frames in the samples' stacks (each sample counted), and of those
  // the ones whose method the recorder could not name.
  uint64_t frames() const { return frames_; }
  uint64_t frames_unknown() const { return frames_unknown_; }

 private:
  using RawKey = std::tuple<uint32_t, uint64_t, uint64_t, bool>;  // (thread, stack, class, outside)
  // by_key_ with each thread's weights scaled to its traced bytes.  A
  // thread with samples but no traced bytes is left out: its slow paths are
  // not in the trace (lost, or still in the thread's batch when the JVM
  // exited: a compiler thread's one TLAB), so the bytes its samples stand
  // for are not among the traced bytes either (untraced_samples()).
  std::map<RawKey, Weight> scaled() const;

  const trace::TraceReader& reader_;
  std::map<RawKey, Weight> by_key_;  // the VM's estimates
  std::unordered_map<uint32_t, uint64_t> traced_by_thread_, estimated_by_thread_;
  uint64_t samples_ = 0, traced_bytes_ = 0, frames_ = 0, frames_unknown_ = 0;
};

}  // namespace jvmtrace::analysis
