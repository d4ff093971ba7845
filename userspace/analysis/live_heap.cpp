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
      auto it = samples_.find(f.sample_id);
      apply(it != samples_.end() ? &it->second : &early_[f.sample_id], f);
    }
    return;
  }
  if (r.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = r.event;
  if (e.probe == JT_GC_START) {
    last_gc_ = e.a[0];
    gc_seq_++;
  } else if (e.probe == JT_ALLOC_SAMPLE && e.a[5] != 0) {  // weight, class, alloc_bytes, outcome, stack + 1, id
    Sample& s = samples_[e.a[5]];
    auto early = early_.find(e.a[5]);
    if (early != early_.end()) {
      s = early->second;
      early_.erase(early);
    }
    s.weight = e.a[0];
    s.klass = e.a[1];
    s.alloc_bytes = e.a[2];
    s.stack = e.a[4];
    s.born_gc = last_gc_;
    s.born_seq = gc_seq_;
  }
}

uint64_t LiveHeap::too_young() const {
  uint64_t n = 0;
  for (const auto& [id, s] : samples_)
    if (!s.gone && s.died_gc < 0 && s.born_seq >= judged_seq_) n++;
  return n;
}

void LiveHeap::apply(Sample* s, const trace::Fate& f) {
  switch (f.kind) {
    case JVMTRACE_FATE_DIED: s->died_gc = f.gc_id; break;
    case JVMTRACE_FATE_PROMOTED: s->promoted = true; break;
    case JVMTRACE_FATE_THINNED:
    case JVMTRACE_FATE_UNTRACKED: s->gone = true; break;
  }
}

std::vector<LiveHeap::Row> LiveHeap::rows(bool site, size_t top) const {
  struct Acc {
    double live = 0, var = 0;
    uint64_t tracked = 0, alive = 0, died = 0, promoted = 0;
    std::vector<uint64_t> ages;
  };
  std::map<std::string, Acc> acc;
  const double scale = std::ldexp(1.0, static_cast<int>(std::min<uint64_t>(level_, 60)));
  for (const auto& [id, s] : samples_) {
    if (s.gone || (s.died_gc < 0 && s.born_seq >= judged_seq_)) continue;  // (too young to judge)
    std::string name;
    if (site) {
      const trace::Frame* f = s.stack ? allocation_site(reader_.java_stacks()[s.stack - 1]) : nullptr;
      name = f ? frame_site(reader_, *f) : "[no Java frame]";
    } else {
      name = s.klass < reader_.classes().size() ? reader_.classes()[s.klass] : "[class not kept]";
    }
    Acc& a = acc[name];
    a.tracked++;
    if (s.promoted) a.promoted++;
    if (s.died_gc >= 0) {
      a.died++;
      a.ages.push_back(static_cast<uint64_t>(s.died_gc) >= s.born_gc ? static_cast<uint64_t>(s.died_gc) - s.born_gc : 0);
    } else {
      a.alive++;
      const double w = static_cast<double>(s.weight) * scale;
      a.live += w;
      a.var += w * w;
    }
  }
  std::vector<Row> out;
  for (auto& [name, a] : acc) {
    Row r;
    r.name = name;
    r.live_bytes = a.live;
    r.ci90 = 1.645 * std::sqrt(a.var);
    r.tracked = a.tracked, r.alive = a.alive, r.died = a.died, r.promoted = a.promoted;
    if (!a.ages.empty()) {
      std::nth_element(a.ages.begin(), a.ages.begin() + a.ages.size() / 2, a.ages.end());
      r.median_age_gcs = static_cast<double>(a.ages[a.ages.size() / 2]);
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
    if (s.gone || s.died_gc >= 0 || s.born_seq >= judged_seq_) continue;
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
