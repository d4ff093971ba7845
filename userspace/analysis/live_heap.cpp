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
          leave(it->second);
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
    snapshot(r.fates);
    return;
  }
  if (r.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = r.event;
  if (e.probe == JT_TLAB_REFILL) {
    alloc_total_ += e.a[1];
  } else if (e.probe == JT_ALLOC_SLOW_EXIT) {
    if (e.a[2] == 2 || e.a[2] == 4) alloc_total_ += e.a[1];  // outside a TLAB (trace_summary's rule)
  } else if (e.probe == JT_GC_START) {
    last_gc_ = e.a[0];
    gc_seq_++;
    if (gc_kind_.size() < kMaxGcs) {
      gc_kind_[e.a[0]] = static_cast<int>(e.a[3]);
      gc_alloc_[e.a[0]] = alloc_total_;
    }
  } else if (e.probe == JT_ALLOC_SAMPLE && e.a[5] != 0) {  // weight, class, alloc_bytes, outcome, stack + 1, id
    Sample s;
    s.weight = e.a[0];
    s.klass = e.a[1];
    s.alloc_bytes = e.a[2];
    s.stack = e.a[4];
    s.born_gc = last_gc_;
    s.born_seq = gc_seq_;
    s.born_alloc = alloc_total_;
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
    s.site = site_of(s.stack);
    auto [it, fresh] = samples_.emplace(e.a[5], s);
    if (!fresh) {  // an id twice (no VM does this): the later one stands
      leave(it->second);
      it->second = s;
    }
    enter(s);
  }
}

uint32_t LiveHeap::site_of(uint64_t stack) {
  auto it = stack_site_.find(stack);
  if (it != stack_site_.end()) return it->second;
  std::pair<uint64_t, uint64_t> key{UINT64_MAX, 0};  // no Java frame
  if (stack && stack <= reader_.java_stacks().size())
    if (const trace::Frame* f = allocation_site(reader_.java_stacks()[stack - 1])) key = {f->method, f->line};
  auto [s, fresh] = site_ids_.emplace(key, static_cast<uint32_t>(site_stack_.size()));
  if (fresh) {
    site_stack_.push_back(stack);
    site_w_.push_back(0);
    site_young_w_.push_back(0);
    site_young_epoch_.push_back(0);
    dirty_.push_back(0);
    series_.emplace_back();
  }
  stack_site_.emplace(stack, s->second);
  return s->second;
}

// The running sums: what a collection has judged is the sum less what was
// born since the last gc__start (born_seq == gc_seq_).
void LiveHeap::enter(const Sample& s) {
  const uint32_t i = s.site;
  site_w_[i] += s.weight;
  total_w_ += s.weight;
  if (site_young_epoch_[i] != gc_seq_) site_young_epoch_[i] = gc_seq_, site_young_w_[i] = 0;
  site_young_w_[i] += s.weight;
  if (total_young_epoch_ != gc_seq_) total_young_epoch_ = gc_seq_, total_young_w_ = 0;
  total_young_w_ += s.weight;
  if (!dirty_[i]) dirty_[i] = 1, dirty_list_.push_back(i);
}

void LiveHeap::leave(const Sample& s) {
  const uint32_t i = s.site;
  site_w_[i] -= s.weight;
  total_w_ -= s.weight;
  if (s.born_seq == gc_seq_) {
    if (site_young_epoch_[i] == gc_seq_) site_young_w_[i] -= s.weight;
    if (total_young_epoch_ == gc_seq_) total_young_w_ -= s.weight;
  }
  if (!dirty_[i]) dirty_[i] = 1, dirty_list_.push_back(i);
}

double LiveHeap::scale() const { return std::ldexp(1.0, static_cast<int>(std::min<uint64_t>(level_, 60))); }

double LiveHeap::site_now(uint32_t i) const {
  const uint64_t young = site_young_epoch_[i] == gc_seq_ ? site_young_w_[i] : 0;
  return static_cast<double>(site_w_[i] - young) * scale();
}

// A point after each collection's fates; the sites whose value changed get
// an entry.  A collection's later batches (a scan in chunks) update its point.
void LiveHeap::snapshot(const trace::Fates& f) {
  const uint64_t young = total_young_epoch_ == gc_seq_ ? total_young_w_ : 0;
  const double live = static_cast<double>(total_w_ - young) * scale();
  if (points_.empty() || points_.back().gc_id != f.gc_id) {
    if (points_.size() >= kMaxPoints) {  // (the rest are not plotted: said by report)
      points_cut_ = true;
      return;
    }
    Point p;
    p.gc_id = f.gc_id;
    auto k = gc_kind_.find(f.gc_id);
    if (k != gc_kind_.end()) p.kind = k->second;
    points_.push_back(p);
  }
  points_.back().ts_ns = f.ts_ns;
  points_.back().live_bytes = live;
  const uint32_t at = static_cast<uint32_t>(points_.size() - 1);
  if (level_ != scaled_level_) {  // every site's value moved
    scaled_level_ = level_;
    for (uint32_t i = 0; i < site_w_.size(); i++)
      if (site_w_[i] && !dirty_[i]) dirty_[i] = 1, dirty_list_.push_back(i);
  }
  std::vector<uint32_t> still;  // sites with young samples: they change at the next gc__start
  for (uint32_t i : dirty_list_) {
    if (!series_cut_) {
      auto& v = series_[i];
      const double now = site_now(i);
      if (!v.empty() && v.back().first == at) {
        v.back().second = now;
      } else if (v.empty() ? now != 0 : v.back().second != now) {
        if (series_entries_ >= kMaxSeriesEntries) {
          series_cut_ = true;
          series_cut_at_ = at;
        } else {
          v.emplace_back(at, now);
          series_entries_++;
        }
      }
    }
    if (site_young_epoch_[i] == gc_seq_ && site_young_w_[i]) still.push_back(i);
    else dirty_[i] = 0;
  }
  dirty_list_.swap(still);
}

size_t LiveHeap::old_points() const {
  return static_cast<size_t>(std::count_if(points_.begin(), points_.end(), old_point));
}

// Sparse: a name's value changes only where one of its sites' does, so
// this holds at most the sites' entries (kMaxSeriesEntries), whatever the
// number of sites and collections; only the few series drawn are expanded.
std::map<std::string, LiveHeap::Sparse> LiveHeap::named_series() const {
  std::map<std::string, std::vector<uint32_t>> sites;
  for (uint32_t i = 0; i < series_.size(); i++)
    if (!series_[i].empty()) sites[name_of(true, site_stack_[i], 0)].push_back(i);
  std::map<std::string, Sparse> out;
  const uint32_t n = static_cast<uint32_t>(series_end());
  for (const auto& [name, ids] : sites) {
    Sparse& merged = out[name];
    if (ids.size() == 1) {  // (the usual case: one site to a name)
      for (const auto& e : series_[ids[0]])
        if (e.first < n) merged.push_back(e);
      continue;
    }
    // Several sites of one name (a method reloaded): their sum at each
    // point where any of them changes.
    std::vector<size_t> at(ids.size(), 0);
    std::vector<double> now(ids.size(), 0.0);
    for (;;) {
      uint32_t p = n;
      for (size_t k = 0; k < ids.size(); k++)
        if (at[k] < series_[ids[k]].size()) p = std::min(p, series_[ids[k]][at[k]].first);
      if (p >= n) break;
      double sum = 0;
      for (size_t k = 0; k < ids.size(); k++) {
        const auto& v = series_[ids[k]];
        if (at[k] < v.size() && v[at[k]].first == p) now[k] = v[at[k]++].second;
        sum += now[k];
      }
      merged.emplace_back(p, sum);
    }
  }
  return out;
}

double LiveHeap::value_at(const Sparse& v, size_t point) {
  auto it = std::upper_bound(v.begin(), v.end(), point,
                             [](size_t p, const std::pair<uint32_t, double>& e) { return p < e.first; });
  return it == v.begin() ? 0.0 : std::prev(it)->second;
}

std::vector<LiveHeap::Series> LiveHeap::top_series(size_t top) const {
  const size_t n = series_end();
  std::vector<std::pair<std::string, Sparse>> names;
  for (auto& [name, v] : named_series()) names.emplace_back(name, std::move(v));
  const auto last = [&](const Sparse& v) { return n ? value_at(v, n - 1) : 0.0; };
  std::sort(names.begin(), names.end(), [&](const auto& a, const auto& b) {
    const double x = last(a.second), y = last(b.second);
    return x != y ? x > y : a.first < b.first;
  });
  if (names.size() > top) names.resize(top);
  std::vector<Series> out;
  for (const auto& [name, v] : names) {  // only these are expanded: top x points values
    Series s{name, std::vector<double>(n, 0.0)};
    for (size_t j = 0; j < v.size(); j++) {
      const size_t end = j + 1 < v.size() ? v[j + 1].first : n;
      std::fill(s.live_bytes.begin() + v[j].first, s.live_bytes.begin() + end, v[j].second);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LiveHeap::Growth> LiveHeap::growing(size_t top) const {
  std::vector<size_t> old;
  for (size_t i = 0; i < series_end(); i++)
    if (old_point(points_[i])) old.push_back(i);
  std::vector<Growth> out;
  if (old.size() < 2) return out;
  // Least squares of bytes on seconds over the old points: with dt the old
  // points' times less their mean, slope = sum(dt v) / sum(dt^2).  A value
  // holds from its entry to the next, so sum(dt v) is a sum over entries of
  // v times the dt of the old points in its span (a prefix sum): each name
  // costs its entries, not the collections.
  double tm = 0;
  for (size_t i : old) tm += static_cast<double>(points_[i].ts_ns) / 1e9;
  tm /= static_cast<double>(old.size());
  std::vector<double> dt_before(old.size() + 1, 0.0);  // sum of dt over old[0, k)
  double sxx = 0;
  for (size_t k = 0; k < old.size(); k++) {
    const double dt = static_cast<double>(points_[old[k]].ts_ns) / 1e9 - tm;
    dt_before[k + 1] = dt_before[k] + dt;
    sxx += dt * dt;
  }
  if (sxx <= 0) return out;
  const auto first_old_at = [&](size_t point) {  // index in old of the first old point >= point
    return static_cast<size_t>(std::lower_bound(old.begin(), old.end(), point) - old.begin());
  };
  for (const auto& [name, v] : named_series()) {
    Growth g;
    double sxy = 0;
    size_t counted = old.size();  // (the old interval whose change was looked at last)
    for (size_t j = 0; j < v.size(); j++) {
      const size_t a = first_old_at(v[j].first);
      const size_t b = j + 1 < v.size() ? first_old_at(v[j + 1].first) : old.size();
      sxy += v[j].second * (dt_before[b] - dt_before[a]);  // (sum dt = 0, so the mean needs no term)
      // A step between two old points can only rise where an entry lies in it.
      if (a > 0 && a < old.size() && a != counted) {
        counted = a;
        if (value_at(v, old[a]) > value_at(v, old[a - 1])) g.up++;
      }
    }
    g.steps = static_cast<uint32_t>(old.size() - 1);
    g.bytes_per_s = sxy / sxx;
    g.first = value_at(v, old.front());
    g.last = value_at(v, old.back());
    if (g.bytes_per_s <= 0 || g.last <= g.first) continue;
    g.name = name;
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(), [](const Growth& a, const Growth& b) {
    return a.bytes_per_s != b.bytes_per_s ? a.bytes_per_s > b.bytes_per_s : a.name < b.name;
  });
  if (out.size() > top) out.resize(top);
  return out;
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
  auto mark = gc_alloc_.find(died);
  const uint64_t since = mark != gc_alloc_.end() && mark->second > s.born_alloc ? mark->second - s.born_alloc : 0;
  const int bucket = since ? std::min(64, 64 - __builtin_clzll(since)) : 0;
  d.age_bytes[bucket]++;
  death_age_w_[bucket] += static_cast<double>(s.weight) * scale();
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
    uint64_t age_bytes[65] = {};
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
    for (int i = 0; i <= 64; i++) a.ages[i] += d.ages[i], a.age_bytes[i] += d.age_bytes[i];
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
    uint64_t seen = 0;
    for (int i = 0; a.died && i <= 64; i++) {
      seen += a.age_bytes[i];
      if (2 * seen > a.died) {
        r.median_age_bytes = i ? std::ldexp(1.0, i) : 0;
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
