#include "analysis/live_heap.h"

#include <algorithm>
#include <cmath>

#include "analysis/java_frames.h"

namespace jvmtrace::analysis {

void LiveHeap::add(const trace::Record& r) {
  if (r.type == trace::kFates) {
    batches_++;
    level_ = r.fates.level;
    judged_seq_ = gc_seq_;
    for (const trace::Fate& f : r.fates.records) {
      fate_records_++;
      if (f.kind == JVMTRACE_FATE_LOST) {
        lost_ += f.sample_id;
        continue;
      }
      Early fate;
      if (f.kind == JVMTRACE_FATE_DIED) fate.died_gc = f.gc_id;
      else if (f.kind == JVMTRACE_FATE_PROMOTED) fate.promoted = true;
      else fate.gone = true;  // thinned, untracked: no longer tracked
      auto it = samples_.find(f.sample_id);
      if (it != samples_.end()) {
        if (fate.promoted) {
          it->second.promoted = true;
        } else {
          settle(it->second, fate);
          samples_.erase(it);
        }
        continue;
      }
      // Before its sample: the recorder writes a sample once its slow path's
      // record has come (batched: up to a safepoint later), the VM reports a
      // fate after the first collection.
      auto e = early_.find(f.sample_id);
      if (e == early_.end()) {
        if (early_.size() >= kMaxSamples) {
          dropped_++;
          continue;
        }
        e = early_.emplace(f.sample_id, Early{}).first;
      }
      e->second.promoted |= fate.promoted;
      e->second.gone |= fate.gone;
      if (fate.died_gc >= 0) e->second.died_gc = fate.died_gc;
    }
    return;
  }
  if (r.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = r.event;
  if (e.probe == JT_GC_START) {
    last_gc_ = e.a[0];
    gc_seq_++;
  } else if (e.probe == JT_ALLOC_SAMPLE && e.a[5] != 0) {  // weight, class, alloc_bytes, outcome, stack + 1, id
    Sample s;
    s.weight = e.a[0];
    s.klass = e.a[1];
    s.alloc_bytes = e.a[2];
    s.stack = e.a[4];
    s.born_gc = last_gc_;
    s.born_seq = gc_seq_;
    auto early = early_.find(e.a[5]);
    if (early != early_.end()) {
      const Early fate = early->second;
      early_.erase(early);
      tracked_++;
      s.promoted = fate.promoted;
      if (fate.gone || fate.died_gc >= 0) {
        settle(s, fate);
        return;
      }
    } else if (samples_.size() >= kMaxSamples) {
      dropped_++;
      return;
    } else {
      tracked_++;
    }
    samples_[e.a[5]] = s;
  }
}

// A final fate: a death is counted with its age; a sample no longer
// tracked (thinned, untracked) only leaves.
void LiveHeap::settle(const Sample& s, const Early& fate) {
  if (fate.died_gc < 0) return;
  Dead& d = dead_[{s.stack, s.klass}];
  d.died++;
  if (s.promoted || fate.promoted) d.promoted++;
  const uint64_t died = static_cast<uint64_t>(fate.died_gc);
  d.ages[std::min<uint64_t>(died >= s.born_gc ? died - s.born_gc : 0, 64)]++;
}

uint64_t LiveHeap::too_young() const {
  uint64_t n = 0;
  for (const auto& [id, s] : samples_)
    if (s.born_seq >= judged_seq_) n++;
  return n;
}

std::string LiveHeap::name_of(bool site, uint64_t stack, uint64_t klass) const {
  if (site) {
    const trace::Frame* f = stack ? allocation_site(reader_.java_stacks()[stack - 1]) : nullptr;
    return f ? frame_site(reader_, *f) : "[no Java frame]";
  }
  return klass < reader_.classes().size() ? reader_.classes()[klass] : "[class not kept]";
}

std::vector<LiveHeap::Row> LiveHeap::rows(bool site, size_t top) const {
  struct Acc {
    double live = 0, var = 0;
    uint64_t alive = 0, died = 0, promoted = 0;
    uint64_t ages[65] = {};
  };
  std::map<std::string, Acc> acc;
  const double scale = std::ldexp(1.0, static_cast<int>(std::min<uint64_t>(level_, 60)));
  for (const auto& [id, s] : samples_) {
    if (s.born_seq >= judged_seq_) continue;  // (too young to judge)
    Acc& a = acc[name_of(site, s.stack, s.klass)];
    a.alive++;
    if (s.promoted) a.promoted++;
    const double w = static_cast<double>(s.weight) * scale;
    a.live += w;
    a.var += w * w;
  }
  for (const auto& [key, d] : dead_) {
    Acc& a = acc[name_of(site, key.first, key.second)];
    a.died += d.died;
    a.promoted += d.promoted;
    for (int i = 0; i <= 64; i++) a.ages[i] += d.ages[i];
  }
  std::vector<Row> out;
  for (auto& [name, a] : acc) {
    Row r;
    r.name = name;
    r.live_bytes = a.live;
    r.ci90 = 1.645 * std::sqrt(a.var);
    r.alive = a.alive, r.died = a.died, r.promoted = a.promoted;
    r.tracked = a.alive + a.died;
    for (uint64_t i = 0, seen = 0; a.died && i <= 64; i++) {
      seen += a.ages[i];
      if (2 * seen > a.died) {
        r.median_age_gcs = static_cast<double>(i);
        break;
      }
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const Row& x, const Row& y) {
    return x.live_bytes != y.live_bytes ? x.live_bytes > y.live_bytes : x.name < y.name;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

std::vector<LiveHeap::Row> LiveHeap::by_site(size_t top) const { return rows(true, top); }
std::vector<LiveHeap::Row> LiveHeap::by_class(size_t top) const { return rows(false, top); }

std::map<std::pair<uint64_t, uint64_t>, LiveHeap::Use> LiveHeap::by_stack() const {
  std::map<std::pair<uint64_t, uint64_t>, Use> out;
  const double scale = std::ldexp(1.0, static_cast<int>(std::min<uint64_t>(level_, 60)));
  for (const auto& [id, s] : samples_) {
    if (s.born_seq >= judged_seq_) continue;
    Use& u = out[{s.stack, s.klass}];
    u.bytes += static_cast<double>(s.weight) * scale;
    u.objects += static_cast<double>(trace::sample_objects(s.weight, s.alloc_bytes)) * scale;
  }
  return out;
}

double LiveHeap::live_bytes() const {
  double sum = 0;
  for (const Row& r : rows(false, SIZE_MAX)) sum += r.live_bytes;
  return sum;
}

}  // namespace jvmtrace::analysis
