#include "analysis/consistency_check.h"

#include <algorithm>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "jvmtrace_events.h"

namespace jvmtrace::analysis {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}
std::string num(uint64_t v) { return std::to_string(v); }
bool is_pause(uint64_t kind) { return kind == JVMTRACE_GC_YOUNG || kind == JVMTRACE_GC_FULL; }

}  // namespace

ConsistencyCheck::ConsistencyCheck(const trace::TraceReader& reader, const CheckOptions& options)
    : reader_(reader), options_(options) {}

void ConsistencyCheck::violation(const trace::Record& r, const char* check, const std::string& what) {
  violation_at({r.offset, check, what});
}

void ConsistencyCheck::violation_at(const Violation& v) {
  violation_count_++;
  if (violations_.size() < options_.max_violations) violations_.push_back(v);
}

const ConsistencyCheck::Range* ConsistencyCheck::overlap(const std::map<uint64_t, Range>& set, uint64_t start,
                                                         uint64_t end) {
  // The first range starting at or after start, and the one before it.
  auto it = set.lower_bound(start);
  if (it != set.end() && it->first < end) return &it->second;
  if (it != set.begin() && std::prev(it)->second.end > start) return &std::prev(it)->second;
  return nullptr;
}

bool ConsistencyCheck::inside(const std::map<uint64_t, Range>& set, uint64_t address) {
  return overlap(set, address, address + 1) != nullptr;
}

std::string ConsistencyCheck::thread_name(uint32_t index) const {
  const auto& t = reader_.threads()[index];
  return "thread " + num(t.tid) + " (" + t.name + ")";
}

void ConsistencyCheck::add(const trace::Record& r) {
  if (r.type == trace::kMeta) {
    stock_ = reader_.meta_value("mode") == "stock";
    pause_probes_ = reader_.meta_value("pause_probes") == "1";
    safepoint_probes_ = reader_.meta_value("safepoint_probes") == "1";
    cycle_known_ = pause_probes_;  // the pauses show what a concurrent cycle frees
    const std::string region = reader_.meta_value("heap_region_bytes");
    region_ = region.empty() ? 0 : std::strtoull(region.c_str(), nullptr, 10);
    const std::string min_tlab = reader_.meta_value("min_tlab_bytes");
    if (!min_tlab.empty()) min_tlab_ = std::strtoull(min_tlab.c_str(), nullptr, 10);
    slack_bytes_ = options_.growth_slack_bytes ? options_.growth_slack_bytes : region_ ? region_ : 1u << 20;
    return;
  }
  if (r.type == trace::kLost) return lost(r);
  if (r.type >= JT_PROBE_COUNT) return;
  events_++;
  switch (r.event.probe) {
    case JT_TLAB_REFILL: return tlab_refill(r);
    case JT_ALLOC_SLOW_ENTER: return slow_enter(r);
    case JT_ALLOC_SLOW_EXIT: return slow_exit(r);
    case JT_GC_START: return gc_start(r);
    case JT_GC_END: return gc_end(r);
    case JT_PLAB_ALLOC: return plab_alloc(r);
    case JT_PLAB_RETIRE: return plab_retire(r);
    case JT_PROMOTE_DIRECT: return promote_direct(r);
    case JT_GC_PAUSE_START: return pause_start(r);
    case JT_GC_PAUSE_END: return pause_end(r);
    case JT_SAFEPOINT_BEGIN: return safepoint_begin(r);
    case JT_SAFEPOINT_END: return safepoint_end(r);
  }
}

// Lost events leave every piece of state unknown: start again from nothing
// (only the GC id order survives, since ids only grow).
void ConsistencyCheck::lost(const trace::Record& r) {
  lost_ += r.count;
  mutators_.clear();
  tlabs_.clear();
  g1_current_ = g1_retained_ = 0;  // unknown until the next collection releases them
  g1_top_.clear();
  g1_first_top_.clear();
  g1_pending_.clear();
  g1_filled_.clear();
  plabs_.clear();
  open_.clear();
  cycles_.clear();
  stretch_lost_ = true;
  fresh_pause_lost_ = true;
  pause_open_ = have_pause_ = false;
  safepoint_open_ = have_safepoint_ = false;
}

void ConsistencyCheck::tlab_refill(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t start = a[0], bytes = a[1], alloc = a[2];
  Mutator& m = mutators_[r.event.thread];
  const bool first = !m.seen;  // its slow path may have begun before the recording (or segment)
  m.seen = true;
  ran("tlab.alloc_within");
  if (bytes == 0 || alloc == 0 || alloc > bytes || start % 8 != 0)
    violation(r, "tlab.alloc_within",
              "the refilling allocation (" + num(alloc) + " bytes at " + hex(start) + ") does not lie within its TLAB of " +
                  num(bytes) + " bytes");
  if (!stock_) {
    ran("tlab.in_slow_path");
    if (!m.slow.open) {
      if (!first)
        violation(r, "tlab.in_slow_path", "a TLAB refill outside any slow path of " + thread_name(r.event.thread));
      else
        m.slow = {true, alloc, a[3], r.offset, false};  // entered before the recording: its exit follows
    } else if (m.slow.bytes != alloc || m.slow.klass != a[3]) {
      violation(r, "tlab.in_slow_path",
                "the refill is for " + num(alloc) + " bytes of " + reader_.classes()[a[3]] + ", the open slow path for " +
                    num(m.slow.bytes) + " bytes of " + reader_.classes()[m.slow.klass]);
    }
    m.slow.refilled = true;
  }
  // The old TLAB is retired; the new one must not overlap any live TLAB.
  if (m.tlab.live) tlabs_.erase(m.tlab.start);
  ran("tlab.disjoint");
  if (const Range* o = overlap(tlabs_, start, start + bytes))
    violation(r, "tlab.disjoint",
              "the new TLAB [" + hex(start) + ", " + hex(start + bytes) + ") of " + thread_name(r.event.thread) +
                  " overlaps the live TLAB [" + hex(o->start) + ", " + hex(o->end) + ") of " + thread_name(o->thread));
  m.tlab = {start, start + bytes, r.event.thread, true};
  tlabs_[start] = m.tlab;
  stretch_alloc_ += bytes;
  g1_allocated(r.event.ts_ns, start, bytes);
}

// The smallest dummy object G1 fills a tail with (two words: a header with a
// compressed class pointer).
constexpr uint64_t kMinFillBytes = 16;
constexpr size_t kMaxPendingAllocations = 1 << 20;

uint64_t ConsistencyCheck::g1_free(uint64_t base) const {
  auto it = g1_top_.find(base);
  return it == g1_top_.end() ? region_ : base + region_ - it->second;
}

void ConsistencyCheck::g1_fill(uint64_t base) {
  const uint64_t free = g1_free(base);
  const uint64_t fill = free >= kMinFillBytes && stretch_open_ ? free : 0;  // G1AllocRegion::fill_up_remaining_space
  stretch_filled_ += fill;
  g1_filled_[base] = G1Filled{base + region_ - free, fill, stretch_seq_, stretch_open_};
  g1_top_.erase(base);
}

// G1 retires its current region when the next allocation does not fit
// (MutatorAllocRegion::retire(true)): the region is kept as the retained
// one if it still fits a TLAB and has at least as much free as the retained
// one (which is then filled), else it is filled itself.
bool ConsistencyCheck::g1_should_retain(uint64_t free) const {
  return free >= min_tlab_ && (!g1_retained_ || free >= g1_free(g1_retained_));
}

void ConsistencyCheck::g1_retire_current() {
  if (!g1_current_) return;
  if (g1_should_retain(g1_free(g1_current_))) {
    if (g1_retained_) g1_fill(g1_retained_);
    g1_retained_ = g1_current_;
  } else {
    g1_fill(g1_current_);
  }
  g1_current_ = 0;
}

// An allocation (a new TLAB or a non-humongous object outside TLABs), kept
// until the stretch closes: threads' records reach the trace in batches, so
// the file's order is not the order G1 handed the memory out in; their times
// are (a region's first allocation comes after the last one in the region
// before it: G1 takes a new region under its Heap_lock).
void ConsistencyCheck::g1_allocated(uint64_t ts_ns, uint64_t start, uint64_t bytes) {
  if (!region_ || stock_) return;
  g1_pending_.push_back({ts_ns, start, bytes});
  if (g1_pending_.size() >= kMaxPendingAllocations) g1_replay();  // bounded memory; time order kept within each part
}

// The kept allocations in time order: one in neither the current nor the
// retained region means G1 took a new region, retiring the current one.
void ConsistencyCheck::g1_replay() {
  std::stable_sort(g1_pending_.begin(), g1_pending_.end(),
                   [](const G1Allocation& x, const G1Allocation& y) { return x.ts_ns < y.ts_ns; });
  for (const G1Allocation& x : g1_pending_) {
    const uint64_t base = x.start / region_ * region_;
    const uint64_t end = std::min(x.start + x.bytes, base + region_);  // (a damaged trace: within its region)
    auto filled = g1_filled_.find(base);
    if (filled != g1_filled_.end() && base != g1_current_ && base != g1_retained_) {
      // A region already filled takes no allocation: this one happened
      // before the fill, and its record's time (taken after the
      // allocation, lock-free in the region) came after another thread's
      // in the next region.  Its tail was smaller than counted.
      G1Filled& f = filled->second;
      g1_reordered_++;
      if (end > f.top) {
        f.top = end;
        const uint64_t free = base + region_ - end;
        const uint64_t fill = free >= kMinFillBytes && f.counted ? free : 0;
        if (f.seq == stretch_seq_) stretch_filled_ = stretch_filled_ - f.fill + fill;
        f.fill = fill;
      }
      continue;
    }
    if (base != g1_current_ && base != g1_retained_) {
      g1_retire_current();
      g1_current_ = base;
    }
    uint64_t& top = g1_top_[base];
    if (!top) g1_first_top_[base] = end;
    top = std::max(top, end);
  }
  g1_pending_.clear();
}

// The allocation that failed and asked for this pause retired the current
// region first (G1CollectedHeap::attempt_allocation_slow ->
// attempt_allocation_using_new_region), at a moment the trace does not hold:
// its thread's record is written when the allocation ends, after the pause.
// Until the pause began, other threads could still allocate in that region
// lock-free, and if it had been kept as the retained region (it had room
// for a TLAB when retired) they did so: its tail is then smaller than the
// room it had when G1 decided, and is left unfilled.  Both histories are
// G1's; the replay takes the one its final tail says (filled, below
// MinTLABSize) and returns what the other changes in the fills: the
// current region not filled, the retained one filled instead.  None: no
// other history (the tail fits a TLAB, so G1 kept the region whenever it
// decided; or the region's first allocation left no TLAB's room).
std::optional<int64_t> ConsistencyCheck::g1_retire_at_pause() {
  if (!g1_current_) return std::nullopt;
  const uint64_t free = g1_free(g1_current_);
  std::optional<int64_t> delta;
  auto first = g1_first_top_.find(g1_current_);
  if (stretch_open_ && !g1_should_retain(free) && first != g1_first_top_.end() &&
      g1_should_retain(g1_current_ + region_ - first->second)) {
    const uint64_t retained_free = g1_retained_ ? g1_free(g1_retained_) : 0;
    const auto fill = [](uint64_t tail) { return static_cast<int64_t>(tail >= kMinFillBytes ? tail : 0); };
    delta = fill(retained_free) - fill(free);
  }
  g1_retire_current();
  return delta;
}

void ConsistencyCheck::slow_enter(const trace::Record& r) {
  Mutator& m = mutators_[r.event.thread];
  ran("slow.paired");
  if (m.slow.open)
    violation(r, "slow.paired",
              thread_name(r.event.thread) + " enters the slow path again before leaving it (entered at offset " +
                  num(m.slow.offset) + ")");
  m.seen = true;
  m.slow = {true, r.event.a[0], r.event.a[1], r.offset, false};
}

void ConsistencyCheck::slow_exit(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t address = a[0], bytes = a[1], outcome = a[2];
  Mutator& m = mutators_[r.event.thread];
  ran("slow.paired");
  if (!m.slow.open) {
    // Attached while this thread was inside the slow path: only its first event.
    if (m.seen) violation(r, "slow.paired", "a slow-path exit of " + thread_name(r.event.thread) + " without an enter");
    else exits_unopened_++;
  } else if (m.slow.bytes != bytes) {
    violation(r, "slow.paired",
              "the slow path left with " + num(bytes) + " bytes was entered with " + num(m.slow.bytes));
  }
  m.seen = true;
  const bool new_tlab = jvmtrace_slow_new_tlab(outcome), outside = jvmtrace_slow_outside_tlab(outcome);
  if (m.slow.open && !stock_) {
    ran("slow.outcome");
    if (new_tlab != m.slow.refilled)
      violation(r, "slow.outcome",
                std::string("outcome ") + num(outcome) + (new_tlab ? " (new TLAB) without" : " with") +
                    " a TLAB refill inside the slow path");
  }
  ran("slow.address");
  if (new_tlab && m.tlab.live && address != m.tlab.start) {
    violation(r, "slow.address",
              "a new-TLAB allocation at " + hex(address) + ", not at its TLAB's start " + hex(m.tlab.start));
  } else if (outcome == JVMTRACE_SLOW_CURRENT_TLAB && m.tlab.live && (address < m.tlab.start || address + bytes > m.tlab.end)) {
    violation(r, "slow.address",
              "an allocation in the current TLAB at " + hex(address) + " lies outside it [" + hex(m.tlab.start) + ", " +
                  hex(m.tlab.end) + ")");
  } else if (outside) {
    if (address == 0 || address % 8 != 0) {
      violation(r, "slow.address", "an outside-TLAB allocation at " + hex(address));
    } else if (const Range* o = overlap(tlabs_, address, address + bytes)) {
      violation(r, "slow.address",
                "an outside-TLAB object [" + hex(address) + ", " + hex(address + bytes) + ") lies in the live TLAB of " +
                    thread_name(o->thread));
    }
    // A G1 humongous object (over half a region: G1CollectedHeap::is_humongous)
    // takes whole regions of its own.
    const bool humongous = region_ && bytes > region_ / 2;
    stretch_alloc_ += humongous ? (bytes + region_ - 1) / region_ * region_ : bytes;
    if (!humongous) g1_allocated(r.event.ts_ns, address, bytes);
  } else if (outcome == JVMTRACE_SLOW_FAILED && address != 0) {
    violation(r, "slow.address", "a failed allocation returned " + hex(address));
  }
  m.slow.open = false;
}

void ConsistencyCheck::gc_start(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], kind = a[3];
  // Ids grow in the order pauses start (the VM thread takes them).  A G1
  // concurrent cycle takes its id on its own thread a moment before it
  // reports its start, so a young pause may start in between with the next
  // id: cycles are left out of the order.
  if (is_pause(kind)) {
    ran("gc.id_order");
    if (have_last_start_ && id <= last_start_id_)
      violation(r, "gc.id_order", "GC " + num(id) + " starts after GC " + num(last_start_id_));
    have_last_start_ = true;
    last_start_id_ = id;
  }
  if (!have_first_start_) have_first_start_ = true, first_start_id_ = id;
  if (reader_.strings()[a[1]].compare(0, 2, "G1") == 0) g1_ = true;
  const std::string& collector = reader_.strings()[a[1]];
  if (collector == "Z" || collector.compare(0, 3, "ZGC") == 0 || collector == "Shenandoah")
    concurrent_collector_ = true;
  if (kind == JVMTRACE_GC_CONCURRENT) {  // a concurrent cycle
    if (!cycle_known_) {  // none was running when the recording began
      cycle_known_ = true;
      for (const Violation& v : pending_) violation_at(v);
      pending_.clear();
    }
    cycle_open_ = true;
    if (stretch_open_) stretch_cycle_ = true;
  }
  if (is_pause(kind)) {
    ran("gc.one_pause");
    for (auto it = open_.begin(); it != open_.end();) {
      if (!is_pause(it->second.kind)) {
        ++it;
        continue;
      }
      // HotSpot 17's Serial collector reports the start of a young
      // collection it then gives up (promotion not safe) and no end; the
      // full collection follows in the same safepoint.  The jvmtrace patch
      // with the pause probes reports neither, as JDK 21 does.
      if (reader_.strings()[it->second.name] == "DefNew" && reader_.strings()[a[1]] == "SerialOld") {
        abandoned_young_++;
      } else {
        violation(r, "gc.one_pause",
                  "pause " + num(id) + " starts while pause " + num(it->first) + " (offset " + num(it->second.offset) +
                      ") is open");
      }
      it = open_.erase(it);  // taken as ended unseen: one lost end is one violation
    }
    if (!pause_probes_) close_stretch(r, id, "GC " + num(id), a[4], reader_.strings()[a[2]]);
    plabs_.clear();
    // G1 releases its mutator regions (G1Allocator::release_mutator_alloc_regions).
    g1_pending_.clear();
    g1_filled_.clear();
    g1_current_ = g1_retained_ = 0;
    g1_top_.clear();
    g1_first_top_.clear();
    fresh_pause_lost_ = false;
  }
  // Pauses and concurrent cycles are paired apart: HotSpot's GCId::create()
  // is a plain increment, called by the VM thread for a pause and by G1's
  // concurrent mark thread for a cycle, so the two can take the same id (the
  // VM logs both as GC(N)).  Each id is unique within its kind.
  auto& mine = is_pause(kind) ? open_ : cycles_;
  const auto& other = is_pause(kind) ? cycles_ : open_;
  if (mine.count(id)) violation(r, "gc.paired", "GC " + num(id) + " starts twice");
  if (other.count(id)) shared_ids_++;
  mine[id] = {id, kind, a[1], r.offset};
}

void ConsistencyCheck::gc_end(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], kind = a[3];
  ran("gc.paired");
  auto& mine = is_pause(kind) ? open_ : cycles_;
  auto& other = is_pause(kind) ? cycles_ : open_;
  auto it = mine.find(id);
  const bool started = it != mine.end();
  if (!started) {
    auto o = other.find(id);
    if (o != other.end()) {  // a pause ending a cycle, or the other way round
      violation(r, "gc.paired",
                "GC " + num(id) + " ends as " + reader_.strings()[a[1]] + " kind " + num(kind) + ", started as " +
                    reader_.strings()[o->second.name] + " kind " + num(o->second.kind));
      other.erase(o);
    } else if (started_before(id)) {  // a collection running when the recording began ends without a start
      ended_before_++;
    } else {
      violation(r, "gc.paired", "GC " + num(id) + " ends without having started");
    }
  } else {
    if (it->second.kind != kind || it->second.name != a[1])
      violation(r, "gc.paired",
                "GC " + num(id) + " ends as " + reader_.strings()[a[1]] + " kind " + num(kind) + ", started as " +
                    reader_.strings()[it->second.name] + " kind " + num(it->second.kind));
    mine.erase(it);
  }
  if (is_pause(kind)) {
    // Every PLAB of a pause is retired within it.
    for (const auto& [start, p] : plabs_)
      if (p.live && p.gc_id == id) {
        ran("plab.retired");
        violation(r, "plab.retired",
                  "GC " + num(id) + " ends with the PLAB " + hex(start) + " of " + thread_name(p.thread) + " not retired");
      }
    plabs_.clear();
    if (!pause_probes_) open_stretch(id, "GC " + num(id), a[4]);
  }
  if (kind == JVMTRACE_GC_CONCURRENT) {
    if (!started && !cycle_known_) {
      // A cycle was running when the recording began: the stretches until
      // now may hold its Remark and Cleanup, which free memory unseen.
      cycle_known_ = true;
      undecided_ += pending_.size();
      pending_.clear();
    }
    cycle_open_ = false;
  }
}

void ConsistencyCheck::close_stretch(const trace::Record& r, uint64_t to_gc, const std::string& to_what,
                                     uint64_t heap_used, const std::string& cause) {
  // A G1 young collection for a failed allocation: that allocation first
  // retired the current region (G1CollectedHeap::attempt_allocation_slow ->
  // attempt_allocation_using_new_region) and found no new one.
  if (region_ && !stock_) g1_replay();
  const std::optional<int64_t> other_fill_delta =
      region_ && cause == "G1 Evacuation Pause" ? g1_retire_at_pause() : std::nullopt;
  // Closing the mutator stretch: its allocation against the heap's growth.
  if (stretch_open_ && !stock_) {
    Stretch s{stretch_from_, to_gc, r.offset, heap_used - stretch_used_, stretch_alloc_, stretch_filled_, !stretch_lost_};
    if (heap_used < stretch_used_) s.growth = 0;
    const int64_t other = other_fill_delta.value_or(0);  // (0: the same fills, nothing to tell apart)
    if (other != 0 && heap_used >= stretch_used_ && s.slack() == other) {
      s.filled = static_cast<uint64_t>(static_cast<int64_t>(s.filled) + other);
      g1_retained_at_pause_++;
    }
    if (s.checked && !pause_probes_ && stretch_cycle_) {
      s.checked = false;  // a concurrent cycle's Remark or Cleanup may lie in it
      undecided_++;
    }
    if (s.checked && concurrent_collector_) {
      s.checked = false;  // ZGC and Shenandoah free memory between their pauses
      growth_unchecked_++;
    }
    if (s.checked) {
      ran("gc.heap_growth");
      // G1's dummy objects in retired regions' tails count as allocated.
      const uint64_t traced = s.allocated + s.filled;
      const uint64_t limit = slack_bytes_ + static_cast<uint64_t>(options_.growth_slack_ratio * traced);
      const std::string between = "between " + stretch_from_what_ + " and " + to_what + " the heap grew by ";
      const std::string what = num(s.allocated) + " allocated in TLABs and outside them" +
                               (s.filled ? " (and " + num(s.filled) + " filled in retired G1 regions' tails)" : "");
      if (heap_used < stretch_used_ || s.growth + limit < traced) {
        Violation v{r.offset, "gc.heap_growth",
                    between + (heap_used < stretch_used_ ? "-" + num(stretch_used_ - heap_used) : num(s.growth)) +
                        " bytes, less than the " + what};
        // Without pause probes, a G1 cycle running when the recording
        // began may have freed it: decided once the trace tells.
        if (!cycle_known_ && g1_) pending_.push_back(v);
        else violation_at(v);
      } else if (s.growth > traced + limit) {
        violation(r, "gc.heap_growth",
                  between + num(s.growth) + " bytes, " + num(s.growth - traced) + " more than the " + what +
                      " (allowed: " + num(limit) + ")");
      }
    }
    stretches_.push_back(s);
  }
  stretch_open_ = false;
  // A pause retires every TLAB.
  tlabs_.clear();
  for (auto& [t, m] : mutators_) m.tlab.live = false;
}

void ConsistencyCheck::open_stretch(uint64_t from_gc, const std::string& from_what, uint64_t heap_used) {
  stretch_open_ = true;
  stretch_lost_ = false;
  stretch_cycle_ = cycle_open_;
  stretch_from_ = from_gc;
  stretch_from_what_ = from_what;
  stretch_used_ = heap_used;
  stretch_alloc_ = 0;
  stretch_filled_ = 0;
  stretch_seq_++;
}

// A pause ends with the title it started with, or with that title and a
// suffix HotSpot added in between: G1's young pause, from JDK 21 on, appends
// " (Evacuation Failure)" (25: "... : Allocation)" or "Pinned)") to the
// title buffer both probes read.
bool ConsistencyCheck::same_pause_title(uint64_t start, uint64_t end) const {
  if (start == end) return true;
  const std::string& s = reader_.strings()[start];
  const std::string& e = reader_.strings()[end];
  return e.size() > s.size() + 2 && e.compare(0, s.size(), s) == 0 && e.compare(s.size(), 2, " (") == 0 &&
         e.back() == ')';
}

std::string ConsistencyCheck::pause_what(uint64_t id, uint64_t name) const {
  return "GC " + num(id) + " (" + reader_.strings()[name] + ")";
}

void ConsistencyCheck::pause_start(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], kind = a[3];
  if (kind >= JVMTRACE_PAUSE_CONCURRENT) concurrent_collector_ = true;
  // Every pause runs at a safepoint: within its begin and end.
  if (safepoint_probes_) {
    ran("pause.in_safepoint");
    if (!safepoint_open_) {
      if (!have_safepoint_) pauses_outside_safepoint_++;  // its safepoint began before the recording
      else violation(r, "pause.in_safepoint", "pause " + pause_what(id, a[1]) + " starts outside any safepoint");
    }
  }
  ran("pause.one_at_a_time");
  if (pause_open_)
    violation(r, "pause.one_at_a_time",
              "pause " + pause_what(id, a[1]) + " starts while pause " + pause_what(pause_.id, pause_.name) +
                  " (offset " + num(pause_.offset) + ") is open");
  ran("pause.within_committed");
  if (a[4] > a[5])
    violation(r, "pause.within_committed",
              "pause " + pause_what(id, a[1]) + " starts with " + num(a[4]) + " bytes used of " + num(a[5]) + " committed");
  pause_open_ = have_pause_ = true;
  pause_ = {id, kind, a[1], r.offset};
  close_stretch(r, id, pause_what(id, a[1]), a[4], reader_.strings()[a[2]]);
}

void ConsistencyCheck::pause_end(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], kind = a[3];
  ran("pause.paired");
  if (!pause_open_) {
    if (!have_pause_) pauses_before_++;  // began before the recording
    else violation(r, "pause.paired", "pause " + pause_what(id, a[1]) + " ends without having started");
  } else if (pause_.id != id || pause_.kind != kind || !same_pause_title(pause_.name, a[1])) {
    violation(r, "pause.paired",
              "pause " + pause_what(id, a[1]) + " kind " + num(kind) + " ends the pause that started as " +
                  pause_what(pause_.id, pause_.name) + " kind " + num(pause_.kind));
  }
  ran("pause.within_committed");
  if (a[4] > a[5])
    violation(r, "pause.within_committed",
              "pause " + pause_what(id, a[1]) + " ends with " + num(a[4]) + " bytes used of " + num(a[5]) + " committed");
  pause_open_ = false;
  have_pause_ = true;
  open_stretch(id, pause_what(id, a[1]), a[4]);
}

// Safepoints come one at a time (the VM thread runs them), each begin
// followed by its end with the same id, and their figures add up: the
// time to reach them, the cleanup and the time at them lie within the
// total (the rest is leaving, 21 on).
void ConsistencyCheck::safepoint_begin(const trace::Record& r) {
  const uint64_t* a = r.event.a;  // operation, id, begin_ns, since_last_ns
  ran("safepoint.paired");
  // A safepoint that ends the VM ("Halt", "Exit") has no end: only the last may be open.
  if (safepoint_open_)
    violation(r, "safepoint.paired",
              "safepoint " + num(a[1]) + " (" + reader_.strings()[a[0]] + ") begins while safepoint " +
                  num(safepoint_id_) + " (offset " + num(safepoint_offset_) + ") is open");
  ran("safepoint.id_order");
  if (have_safepoint_ && a[1] <= safepoint_id_)
    violation(r, "safepoint.id_order", "safepoint " + num(a[1]) + " begins after safepoint " + num(safepoint_id_));
  safepoint_open_ = have_safepoint_ = true;
  safepoint_id_ = a[1];
  safepoint_offset_ = r.offset;
}

void ConsistencyCheck::safepoint_end(const trace::Record& r) {
  const uint64_t* a = r.event.a;  // operation, reaching, at, total, threads, running, cleanup, id
  ran("safepoint.paired");
  if (!safepoint_open_) {
    if (!have_safepoint_) safepoints_before_++;
    else violation(r, "safepoint.paired", "safepoint " + num(a[7]) + " ends without having begun");
  } else if (a[7] != safepoint_id_) {
    violation(r, "safepoint.paired",
              "safepoint " + num(a[7]) + " ends the safepoint that began as " + num(safepoint_id_));
  }
  ran("safepoint.figures");
  if (a[1] + a[2] + a[6] > a[3] || a[5] > a[4])
    violation(r, "safepoint.figures",
              "safepoint " + num(a[7]) + ": reaching " + num(a[1]) + " + cleanup " + num(a[6]) + " + at " + num(a[2]) +
                  " ns exceed its total " + num(a[3]) + " ns, or " + num(a[5]) + " of " + num(a[4]) +
                  " threads were running");
  safepoint_open_ = false;
  have_safepoint_ = true;
  safepoint_id_ = a[7];
}

void ConsistencyCheck::plab_alloc(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], start = a[1], bytes = a[2], dest = a[3] & 1;
  ran("plab.in_pause");
  auto g = open_.find(id);
  if (started_before(id)) before_events_++;
  else if (g == open_.end() || !is_pause(g->second.kind))
    violation(r, "plab.in_pause", "a PLAB for GC " + num(id) + ", which is not an open pause");
  ran("plab.disjoint");
  if (bytes == 0 || start % 8 != 0)
    violation(r, "plab.disjoint", "a PLAB of " + num(bytes) + " bytes at " + hex(start));
  else if (const Range* o = overlap(plabs_, start, start + bytes))
    violation(r, "plab.disjoint",
              "the new PLAB [" + hex(start) + ", " + hex(start + bytes) + ") of " + thread_name(r.event.thread) +
                  " overlaps the PLAB [" + hex(o->start) + ", " + hex(o->end) + ") of " + thread_name(o->thread) +
                  " (GC " + num(o->gc_id) + ")");
  plabs_[start] = {start, start + bytes, r.event.thread, true, id, dest};
}

// A PLAB is retired when its worker needs a new one, or at the end of the
// pause when the per-worker states are flushed, by whichever thread does
// that (G1: a GC worker; Parallel: the VM thread): match it by address.
void ConsistencyCheck::plab_retire(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], start = a[1], bytes = a[2], used = a[3], waste = a[4], dest = a[5] & 1;
  ran("plab.used_plus_waste");
  if (used + waste != bytes)
    violation(r, "plab.used_plus_waste",
              "a retired PLAB of " + num(bytes) + " bytes with " + num(used) + " used + " + num(waste) + " wasted");
  ran("plab.retired");
  auto it = plabs_.find(start);
  if (it == plabs_.end() || !it->second.live) {
    // Only a PLAB handed out before the recording (or lost events) may be unknown.
    if (have_first_start_ && id >= first_start_id_ && open_.count(id) && open_.size() == 1 && cycles_.empty() && !fresh_pause_lost_)
      violation(r, "plab.retired", "a PLAB at " + hex(start) + " retired that this pause never handed out");
    return;
  }
  const Range& p = it->second;
  if (p.end - p.start != bytes || p.gc_id != id || p.dest != dest)
    violation(r, "plab.retired",
              "the retired PLAB " + hex(start) + " (" + num(bytes) + " bytes, GC " + num(id) + ", dest " + num(dest) +
                  ") was handed out as " + num(p.end - p.start) + " bytes, GC " + num(p.gc_id) + ", dest " + num(p.dest));
  it->second.live = false;  // stays in plabs_: later PLABs must not overlap it either
}

void ConsistencyCheck::promote_direct(const trace::Record& r) {
  const uint64_t* a = r.event.a;
  const uint64_t id = a[0], address = a[1], bytes = a[2];
  ran("plab.in_pause");
  auto g = open_.find(id);
  if (started_before(id)) before_events_++;
  else if (g == open_.end() || !is_pause(g->second.kind))
    violation(r, "plab.in_pause", "a direct promotion for GC " + num(id) + ", which is not an open pause");
  ran("promote.outside_plabs");
  if (const Range* o = overlap(plabs_, address, address + bytes))
    violation(r, "promote.outside_plabs",
              "an object promoted outside PLABs [" + hex(address) + ", " + hex(address + bytes) + ") lies in the PLAB of " +
                  thread_name(o->thread));
}

void ConsistencyCheck::finish() {
  if (!pending_.empty()) {  // never learnt whether a G1 cycle ran when the recording began
    undecided_ += pending_.size();
    pending_.clear();
  }
  if (undecided_)
    notes_.push_back(num(undecided_) + " stretch(es) between pauses were not checked against the heap's growth: a G1 "
                     "concurrent cycle ran in them (or may have), whose Remark and Cleanup pauses free memory, and "
                     "this trace has no pause probes to show them");
  if (growth_unchecked_)
    notes_.push_back(num(growth_unchecked_) + " stretch(es) between pauses were not checked against the heap's growth: "
                     "ZGC and Shenandoah free memory concurrently, between their pauses; their TLABs are taken as "
                     "retired at every pause, and their PLABs (GCLABs, relocation) are not traced");
  if (pauses_before_)
    notes_.push_back(num(pauses_before_) + " pause(s) had started before the recording (or segment)");
  if (safepoints_before_ || pauses_outside_safepoint_)
    notes_.push_back(num(safepoints_before_) + " safepoint(s) had begun before the recording (or segment); " +
                     num(pauses_outside_safepoint_) + " pause(s) in them were not checked against their safepoint");
  if (safepoint_open_)
    notes_.push_back("safepoint " + num(safepoint_id_) + " had not ended when the recording did (a safepoint that "
                     "ends the VM never does)");
  if (abandoned_young_)
    notes_.push_back(num(abandoned_young_) + " Serial young collection(s) were given up (promotion not safe) and "
                     "reported a start without an end (HotSpot 17); the full collection that followed was checked");
  if (pause_open_)
    notes_.push_back("pause " + pause_what(pause_.id, pause_.name) + " was still running when the recording ended");
  if (lost_) notes_.push_back(num(lost_) + " events were lost: state was reset after each loss, and the heap-growth "
                                           "check skipped the stretches that lost events");
  if (ended_before_ || before_events_)
    notes_.push_back(num(ended_before_) + " collection(s) had started before the recording (or segment); their ends and " +
                     num(before_events_) + " PLAB event(s) in them were not checked");
  if (exits_unopened_)
    notes_.push_back(num(exits_unopened_) + " thread(s) were inside the slow path when the recording began");
  for (const auto* m : {&open_, &cycles_})
    for (const auto& [id, o] : *m) notes_.push_back("GC " + num(id) + " was still running when the recording ended");
  if (g1_reordered_)
    notes_.push_back(num(g1_reordered_) + " allocation(s) reached the trace after their G1 region was filled (their "
                     "threads' records are timed after the allocation): replayed into that region's tail");
  if (g1_retained_at_pause_)
    notes_.push_back(num(g1_retained_at_pause_) + " stretch(es) ended with a pause for a failed allocation whose "
                     "G1 region was kept as the retained one when that allocation retired it, and filled up by "
                     "other threads before the pause: its tail was left unfilled");
  if (shared_ids_)
    notes_.push_back(num(shared_ids_) + " concurrent cycle(s) took the id of a pause that started at the same moment "
                     "(HotSpot's GC ids are not taken atomically; its log shows the same)");
  if (stock_)
    notes_.push_back("stock mode: no heap sizes, slow-path pairing, PLABs or HotSpot GC ids are traced, so "
                     "gc.heap_growth, tlab.in_slow_path, slow.outcome and the PLAB checks do not apply");
  notes_.push_back("not reconstructable: objects allocated inside a TLAB by the fast path (bump pointer) and "
                   "objects copied inside a PLAB are not traced, so their addresses cannot be checked");
}

}  // namespace jvmtrace::analysis
