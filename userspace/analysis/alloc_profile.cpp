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
      estimated_by_thread_[e.thread] += a[0];
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

std::map<AllocationProfile::RawKey, AllocationProfile::Weight> AllocationProfile::scaled() const {
  // Per thread, exact shares of its traced bytes, rounded so that they add
  // up: each key gets the floor of its share, and the bytes left over go
  // one each to the largest remainders.
  std::map<RawKey, Weight> out;
  std::unordered_map<uint32_t, std::vector<std::pair<double, RawKey>>> remainders;
  std::unordered_map<uint32_t, uint64_t> given;
  for (const auto& [k, w] : by_key_) {
    const uint32_t thread = std::get<0>(k);
    auto traced = traced_by_thread_.find(thread);
    const uint64_t estimated = estimated_by_thread_.at(thread);
    if (traced == traced_by_thread_.end() || traced->second == 0) continue;  // untraced_samples()
    Weight& o = out[k];
    o.samples = w.samples;
    if (estimated == 0) {  // (every sample weighs at least its own slow path's bytes: not from the VM)
      o.bytes = w.bytes;
      o.objects = w.objects;
      continue;
    }
    const double f = static_cast<double>(traced->second) / static_cast<double>(estimated);
    const double exact = static_cast<double>(w.bytes) * f;
    o.bytes = static_cast<uint64_t>(exact);
    o.objects = static_cast<uint64_t>(static_cast<double>(w.objects) * f + 0.5);
    given[thread] += o.bytes;
    remainders[thread].push_back({exact - static_cast<double>(o.bytes), k});
  }
  for (auto& [thread, rest] : remainders) {
    const uint64_t traced = traced_by_thread_.at(thread);
    uint64_t left = traced > given[thread] ? traced - given[thread] : 0;
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t i = 0; left > 0 && !rest.empty(); i = (i + 1) % rest.size(), left--) out[rest[i].second].bytes++;
  }
  return out;
}

std::pair<uint64_t, uint64_t> AllocationProfile::untraced_samples() const {
  uint64_t samples = 0, bytes = 0;
  for (const auto& [k, w] : by_key_) {
    auto traced = traced_by_thread_.find(std::get<0>(k));
    if (traced != traced_by_thread_.end() && traced->second > 0) continue;
    samples += w.samples;
    bytes += w.bytes;
  }
  return {samples, bytes};
}

uint64_t AllocationProfile::sampled_bytes() const {
  uint64_t n = 0;
  for (const auto& [k, w] : scaled()) n += w.bytes;
  return n;
}

std::map<AllocationProfile::Key, AllocationProfile::Weight> AllocationProfile::weights(bool by_thread) const {
  std::map<Key, Weight> out;
  for (const auto& [k, w] : scaled()) {
    Weight& o = out[{by_thread ? std::get<0>(k) : 0, std::get<1>(k), std::get<2>(k), std::get<3>(k)}];
    o.bytes += w.bytes;
    o.objects += w.objects;
    o.samples += w.samples;
  }
  return out;
}

std::vector<AllocationProfile::Site> AllocationProfile::sites() const {
  std::map<std::pair<uint64_t, uint64_t>, Weight> by_site;
  for (const auto& [k, w] : scaled()) {
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
    if (traced > 0 && !estimated_by_thread_.count(thread)) out[thread] = traced;
  }
  return out;
}

uint64_t AllocationProfile::unsampled_bytes() const {
  uint64_t n = 0;
  for (const auto& [thread, bytes] : unsampled_by_thread()) n += bytes;
  return n;
}

}  // namespace jvmtrace::analysis
