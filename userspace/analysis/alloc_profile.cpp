#include "analysis/alloc_profile.h"

#include <algorithm>

#include "analysis/java_frames.h"
#include "jvmtrace_events.h"

namespace jvmtrace::analysis {

void AllocationProfile::add(const trace::Record& r) {
  if (r.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = r.event;
  const uint64_t* a = e.a;
  switch (e.probe) {
    case JT_TLAB_REFILL:  // a new TLAB: its bytes were handed out
      traced_by_thread_[e.thread] += a[1];
      traced_bytes_ += a[1];
      break;
    case JT_ALLOC_SLOW_EXIT:  // an object outside TLABs
      if (jvmtrace_slow_outside_tlab(a[2])) {
        traced_by_thread_[e.thread] += a[1];
        traced_bytes_ += a[1];
      }
      break;
    case JT_ALLOC_SAMPLE: {  // weight, class, alloc_bytes, outcome, stack + 1
      Weight& w = by_key_[{e.thread, a[4], a[1], jvmtrace_slow_outside_tlab(a[3]) != 0}];
      w.bytes += a[0];
      w.objects += trace::sample_objects(a[0], a[2]);
      w.samples++;
      samples_++;
      sampled_bytes_ += a[0];
      sampled_by_thread_[e.thread] += a[0];
      if (a[4])
        for (const trace::Frame& f : reader_.java_stacks()[a[4] - 1]) {
          if (f.kind == trace::kFrameVm) continue;
          frames_++;
          if (method_unknown(reader_, f.method)) frames_unknown_++;
        }
      break;
    }
  }
}

std::map<AllocationProfile::Key, AllocationProfile::Weight> AllocationProfile::weights(bool by_thread) const {
  std::map<Key, Weight> out;
  for (const auto& [k, w] : by_key_) {
    Weight& o = out[{by_thread ? std::get<0>(k) : 0, std::get<1>(k), std::get<2>(k), std::get<3>(k)}];
    o.bytes += w.bytes;
    o.objects += w.objects;
    o.samples += w.samples;
  }
  return out;
}

std::vector<AllocationProfile::Site> AllocationProfile::sites() const {
  std::map<std::pair<uint64_t, uint64_t>, Weight> by_site;
  for (const auto& [k, w] : by_key_) {
    const uint64_t stack = std::get<1>(k);
    const trace::Frame* site = stack ? allocation_site(reader_.java_stacks()[stack - 1]) : nullptr;
    Weight& o = by_site[site ? std::make_pair(site->method, site->line) : std::make_pair(UINT64_MAX, uint64_t{0})];
    o.bytes += w.bytes;
    o.objects += w.objects;
    o.samples += w.samples;
  }
  std::vector<Site> out;
  for (const auto& [k, w] : by_site) out.push_back({k.first, k.second, w});
  std::sort(out.begin(), out.end(), [](const Site& a, const Site& b) {
    return a.weight.bytes != b.weight.bytes ? a.weight.bytes > b.weight.bytes
                                            : std::tie(a.method, a.line) < std::tie(b.method, b.line);
  });
  return out;
}

std::map<uint32_t, uint64_t> AllocationProfile::unsampled_by_thread() const {
  std::map<uint32_t, uint64_t> out;
  for (const auto& [thread, traced] : traced_by_thread_) {
    auto it = sampled_by_thread_.find(thread);
    const uint64_t sampled = it == sampled_by_thread_.end() ? 0 : it->second;
    if (traced > sampled) out[thread] = traced - sampled;
  }
  return out;
}

uint64_t AllocationProfile::unsampled_bytes() const {
  uint64_t n = 0;
  for (const auto& [thread, bytes] : unsampled_by_thread()) n += bytes;
  return n;
}

}  // namespace jvmtrace::analysis
