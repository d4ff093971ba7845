// Allocation flame graphs from a trace recorded with --stacks, with the
// allocated class as the leaf frame (async-profiler's convention:
// "Class_[i]" in a new TLAB, "Class_[k]" outside TLABs):
//  - the VM's own stacks (alloc__sample): every sample weighs the bytes
//    it stands for (AllocationProfile: scaled to its thread's traced
//    bytes), on its Java stack with inlined frames (frame kinds as
//    async-profiler marks them: _[j] JIT, _[i] inlined, _[0] interpreted,
//    _[1] C1) and the VM's own frames above it; the bytes of threads never
//    sampled stand under "[not sampled]";
//  - BPF stacks (stock mode, or a VM without alloc__sample): every TLAB
//    refill weighs its TLAB's bytes and every outside-TLAB object its own,
//    on the user stack captured at the refill (or the slow path's entry).
// Either way the weights add up to exactly the trace's TLAB and
// outside-TLAB bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/alloc_profile.h"
#include "trace/reader.h"

namespace jvmtrace::analysis {

class FlameGraph {
 public:
  FlameGraph(const trace::TraceReader& reader, bool thread_roots)
      : reader_(reader), thread_roots_(thread_roots), profile_(reader) {}

  void add(const trace::Record& r);
  void finish();  // after the last record: names the stacks (their last names in the trace)

  // "root;...;leaf" -> bytes.
  const std::map<std::string, uint64_t>& collapsed() const { return collapsed_; }
  uint64_t total() const { return total_; }
  uint64_t without_stack() const { return without_stack_; }  // bytes of events with no stack captured
  bool vm_stacks() const { return vm_stacks_; }  // drawn from alloc__sample's stacks

  std::string collapsed_text() const;
  // A self-contained interactive SVG (click a frame to zoom, the title bar to
  // reset; hover for figures).  title heads it.
  std::string svg(const std::string& title) const;

 private:
  struct Pending {
    bool open = false;
    trace::Event event;
  };
  struct SlowEnter {
    int64_t stack = -1;
    uint64_t klass = 0;
    bool open = false;
  };
  void flush_pending(int64_t stack);
  void finish_samples();
  void weigh(uint32_t thread, int64_t stack, const std::string& leaf, uint64_t bytes);

  const trace::TraceReader& reader_;
  bool thread_roots_;
  Pending pending_;
  std::unordered_map<uint32_t, SlowEnter> slow_;
  std::map<std::tuple<uint32_t, int64_t, std::string>, uint64_t> weights_;  // (thread, stack, leaf) until finish()
  std::map<std::string, uint64_t> collapsed_;
  AllocationProfile profile_;
  bool vm_stacks_ = false, decided_ = false;
  uint64_t total_ = 0, without_stack_ = 0;
};

}  // namespace jvmtrace::analysis
