#include "analysis/trace_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "jvmtrace_events.h"

namespace jvmtrace::analysis {

Stats stats(std::vector<uint64_t>& v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  for (uint64_t x : v) s.sum += x;
  s.min = v.front();
  s.max = v.back();
  s.p50 = v[(v.size() - 1) / 2];
  s.p99 = v[static_cast<size_t>(std::ceil(0.99 * v.size())) - 1];
  return s;
}
// The same from counts[v] = how often value v occurred.
Stats stats_of_counts(const uint64_t* counts, size_t n) {
  Stats s;
  for (size_t v = 0; v < n; v++) {
    if (!counts[v]) continue;
    if (!s.n) s.min = v;
    s.max = v;
    s.n += counts[v];
    s.sum += counts[v] * v;
  }
  if (!s.n) return s;
  const uint64_t i50 = (s.n - 1) / 2, i99 = static_cast<uint64_t>(std::ceil(0.99 * s.n)) - 1;
  uint64_t seen = 0;
  bool have50 = false;
  for (size_t v = 0; v < n; v++) {
    seen += counts[v];
    if (!have50 && seen > i50) s.p50 = v, have50 = true;
    if (seen > i99) {
      s.p99 = v;
      break;
    }
  }
  return s;
}

void TraceSummary::add(const trace::Record& rec) {
  if (rec.type == trace::kLost) {
    lost += rec.count;
    lost_by_kind[rec.id & 15] += rec.count;
    return;
  }
  if (rec.type == trace::kEnd) {
    end_text = rec.text;
    end_ns = rec.ts_ns;
    return;
  }
  profile.add(rec);
  if (rec.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = rec.event;
  if (!events++) first_ns = e.ts_ns;
  last_ns = std::max(last_ns, e.ts_ns);
  by_probe[e.probe]++;
  event_bytes[rec.bytes < kMaxCounted ? rec.bytes : kMaxCounted]++;
  probe_bytes[e.probe] += rec.bytes;
  const uint64_t* a = e.a;
  switch (e.probe) {
    case JT_TLAB_REFILL: {
      tlab_sizes.push_back(a[1]);
      tlab_waste += a[5];
      Totals& t = threads[e.thread];
      t.refills++;
      t.tlab_bytes += a[1];
      Totals& c = classes[a[3]];
      c.refills++;
      c.tlab_bytes += a[1];
      alloc_at(e.ts_ns, a[1]);
      break;
    }
    case JT_ALLOC_SLOW_ENTER:
      slow[e.thread] = {e.ts_ns, a[1]};
      break;
    case JT_ALLOC_SLOW_EXIT: {
      outcomes[a[2]]++;
      auto it = slow.find(e.thread);
      const bool outside = a[2] == 2 || a[2] == 4;
      if (outside) {
        outside_sizes.push_back(a[1]);
        Totals& t = threads[e.thread];
        t.outside++;
        t.outside_bytes += a[1];
        if (it != slow.end()) {
          Totals& c = classes[it->second.klass];
          c.outside++;
          c.outside_bytes += a[1];
        }
        alloc_at(e.ts_ns, a[1]);
      }
      if (it != slow.end()) {
        // combined probes: a VM-clock start, a BPF-clock end; the two may
        // disagree by the skew bound (docs/trace-format.md): never wrap.
        slow_ns.push_back(e.ts_ns > it->second.ts ? e.ts_ns - it->second.ts : 0);
        slow.erase(it);
      }
      break;
    }
    case JT_GC_START: {
      Gc& g = gc(a[0]);
      g.started = true;
      g.start_ns = e.ts_ns;
      g.name = reader.strings()[a[1]];
      g.cause = reader.strings()[a[2]];
      g.kind = a[3];
      g.used_before = a[4];
      break;
    }
    case JT_GC_END: {
      Gc& g = gc(a[0]);
      g.ended = true;
      g.end_ns = e.ts_ns;
      if (g.name.empty()) g.name = reader.strings()[a[1]], g.cause = reader.strings()[a[2]], g.kind = a[3];
      g.used_after = a[4];
      g.committed_after = a[5];
      break;
    }
    case JT_GC_PAUSE_START: {
      open_pauses_[{a[0], a[3]}] = pauses.size();
      Pause p;
      p.gc_id = a[0];
      p.kind = a[3];
      p.started = true;
      p.start_ns = e.ts_ns;
      p.name = reader.strings()[a[1]];
      p.cause = reader.strings()[a[2]];
      p.used_before = a[4];
      pauses.push_back(std::move(p));
      break;
    }
    case JT_GC_PAUSE_END: {
      auto it = open_pauses_.find({a[0], a[3]});
      if (it == open_pauses_.end()) {  // started before the recording
        Pause p;
        p.gc_id = a[0];
        p.kind = a[3];
        p.name = reader.strings()[a[1]];
        p.cause = reader.strings()[a[2]];
        it = open_pauses_.emplace(std::make_pair(a[0], a[3]), pauses.size()).first;
        pauses.push_back(std::move(p));
      }
      Pause& p = pauses[it->second];
      p.ended = true;
      p.end_ns = e.ts_ns;
      p.used_after = a[4];
      p.committed_after = a[5];
      open_pauses_.erase(it);
      break;
    }
    case JT_SAFEPOINT_BEGIN: {  // operation, id, begin_ns, since_last_ns
      Safepoint sp;
      sp.operation = reader.strings()[a[0]];
      sp.id = a[1];
      sp.started = true;
      sp.start_ns = e.ts_ns;
      safepoints.push_back(std::move(sp));
      break;
    }
    case JT_SAFEPOINT_END: {  // operation, reaching, at, total, threads, running, cleanup, id
      // Safepoints never overlap: the open one is the last begun (none: it
      // began before the recording, or was lost).
      if (safepoints.empty() || safepoints.back().ended || safepoints.back().id != a[7]) {
        Safepoint sp;
        sp.operation = reader.strings()[a[0]];
        sp.id = a[7];
        safepoints.push_back(std::move(sp));
      }
      Safepoint& sp = safepoints.back();
      sp.ended = true;
      sp.end_ns = e.ts_ns;
      sp.reaching_ns = a[1];
      sp.at_ns = a[2];
      sp.total_ns = a[3];
      sp.threads = a[4];
      sp.running = a[5];
      sp.cleanup_ns = a[6];
      break;
    }
    case JT_PLAB_ALLOC: {
      plab_sizes[a[3] & 1].push_back(a[2]);
      Gc& g = gc(a[0]);
      g.plabs++;
      g.plab_bytes += a[2];
      break;
    }
    case JT_PLAB_RETIRE:
      plab_used[a[5] & 1] += a[3];
      plab_wasted[a[5] & 1] += a[4];
      gc(a[0]).plab_waste += a[4];
      break;
    case JT_PROMOTE_DIRECT: {
      Gc& g = gc(a[0]);
      g.direct++;
      g.direct_bytes += a[2];
      break;
    }
  }
}

}  // namespace jvmtrace::analysis

namespace jvmtrace::analysis {

Derived TraceSummary::derive(double interval_s) {
  Derived d;
  d.span_s = events ? (last_ns - first_ns) / 1e9 : 0;
  // Times are since the recording started, as in dump (or since the first
  // event if the trace does not say when that was).
  const uint64_t start = std::strtoull(reader.meta_value("start_monotonic_ns").c_str(), nullptr, 10);
  d.origin_ns = start ? start : first_ns;
  if (!(interval_s > 0)) {
    interval_s = d.span_s > 0 ? d.span_s / 20 : 1;
    const double p = std::pow(10, std::floor(std::log10(interval_s)));
    interval_s = std::ceil(interval_s / p) * p;  // 1, 2, .. 10 times a power of ten
  }
  d.interval_s = interval_s;
  // Buckets on the recording's clock, from the one holding the first event
  // (a recording attached long before the program allocates starts quietly).
  const double first_s = events ? static_cast<int64_t>(first_ns - d.origin_ns) / 1e9 : 0;
  d.rate_from_s = first_s > 0 ? std::floor(first_s / interval_s) * interval_s : 0;
  for (const auto& [ts, bytes] : allocs) {
    const double t = static_cast<int64_t>(ts - d.origin_ns) / 1e9 - d.rate_from_s;
    const size_t b = t > 0 ? static_cast<size_t>(t / interval_s) : 0;
    if (b >= d.rate.size()) d.rate.resize(b + 1);
    d.rate[b] += bytes;
  }
  d.event_bytes = stats_of_counts(event_bytes, kMaxCounted + 1);
  d.tlab = stats(tlab_sizes);
  d.outside = stats(outside_sizes);
  d.slow = stats(slow_ns);
  d.plab[0] = stats(plab_sizes[0]);
  d.plab[1] = stats(plab_sizes[1]);
  std::vector<uint64_t> pause_ns[JVMTRACE_PAUSE_KIND_COUNT];
  for (const Pause& p : pauses)
    if (p.started && p.ended && p.kind < JVMTRACE_PAUSE_KIND_COUNT) pause_ns[p.kind].push_back(p.end_ns - p.start_ns);
  for (int k = 0; k < JVMTRACE_PAUSE_KIND_COUNT; k++) d.pause_ns[k] = stats(pause_ns[k]);
  std::vector<uint64_t> reach, at, total;
  std::map<std::string, std::vector<uint64_t>[3]> by_op;
  for (const Safepoint& sp : safepoints) {
    if (!sp.ended) continue;
    reach.push_back(sp.reaching_ns);
    at.push_back(sp.at_ns);
    total.push_back(sp.total_ns);
    auto& v = by_op[sp.operation];
    v[0].push_back(sp.reaching_ns);
    v[1].push_back(sp.at_ns);
    v[2].push_back(sp.total_ns);
  }
  d.safepoint_reaching_ns = stats(reach);
  d.safepoint_at_ns = stats(at);
  d.safepoint_total_ns = stats(total);
  for (auto& [op, v] : by_op) d.safepoint_ops.push_back({op, stats(v[0]), stats(v[1]), stats(v[2])});
  std::sort(d.safepoint_ops.begin(), d.safepoint_ops.end(), [](const auto& x, const auto& y) {
    return x.total_ns.sum != y.total_ns.sum ? x.total_ns.sum > y.total_ns.sum : x.operation < y.operation;
  });
  d.classes.assign(classes.begin(), classes.end());
  d.threads.assign(threads.begin(), threads.end());
  auto by_bytes = [](const auto& x, const auto& y) {
    const uint64_t bx = x.second.tlab_bytes + x.second.outside_bytes, by = y.second.tlab_bytes + y.second.outside_bytes;
    return bx != by ? bx > by : x.first < y.first;
  };
  std::sort(d.classes.begin(), d.classes.end(), by_bytes);
  std::sort(d.threads.begin(), d.threads.end(), by_bytes);
  return d;
}

}  // namespace jvmtrace::analysis

namespace jvmtrace::analysis {

std::string TraceSummary::unseen_pauses() const {
  // The collectors whose pauses only the probes of ZGC's and Shenandoah's
  // own (the safepoint probes came with them) can see.
  bool concurrent_collector = false;
  for (const auto& [id, g] : gcs)
    if (g.name == "Z" || g.name.rfind("ZGC", 0) == 0 || g.name == "Shenandoah") concurrent_collector = true;
  if (reader.meta_value("mode") == "stock")
    return concurrent_collector ? "stock mode sees no pause of ZGC or Shenandoah, only their collections (concurrent)"
                                : "stock mode sees no pause, only collections: their young and full ones stand for "
                                  "the pauses, G1 Remark and Cleanup are not seen";
  if (!pause_probes()) return "this JVM's patch predates the pause probes (gc__pause__*): G1 Remark and Cleanup are "
                              "not seen, nor any pause of ZGC or Shenandoah";
  if (concurrent_collector && reader.meta_value("safepoint_probes") != "1")
    return "this JVM's patch predates the probes of ZGC's and Shenandoah's pauses: none of their pauses is seen";
  return "";
}

}  // namespace jvmtrace::analysis
