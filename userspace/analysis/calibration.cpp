#include "analysis/calibration.h"

#include <algorithm>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "jvmtrace_events.h"

namespace jvmtrace::analysis {

uint64_t parse_iso8601_ns(const std::string& s) {
  int y, mo, d, h, mi, sec, used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6) return 0;
  tm t{};
  t.tm_year = y - 1900;
  t.tm_mon = mo - 1;
  t.tm_mday = d;
  t.tm_hour = h;
  t.tm_min = mi;
  t.tm_sec = sec;
  int64_t ns = static_cast<int64_t>(timegm(&t)) * 1000000000;
  size_t p = static_cast<size_t>(used);
  if (p < s.size() && s[p] == '.') {
    int64_t frac = 0, scale = 1000000000;
    for (p++; p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])); p++)
      if (scale > 1) frac = frac * 10 + (s[p] - '0'), scale /= 10;
    ns += frac * scale;
  }
  if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int oh = 0, om = 0;
    std::sscanf(s.c_str() + p + 1, "%2d:%2d", &oh, &om);
    const int64_t off = (oh * 3600 + om * 60) * 1000000000ll;
    ns += s[p] == '+' ? -off : off;
  }
  return ns > 0 ? static_cast<uint64_t>(ns) : 0;
}

bool Calibration::load_jfr(const nlohmann::json& jfr, std::string* error) {
  const nlohmann::json& events = json_field(json_field(jfr, "recording"), "events");
  if (!events.is_array()) {
    *error = "not the output of 'jfr print --json' (no recording.events)";
    return false;
  }
  struct Sample {
    uint64_t ts;
    std::string klass;
    double weight;
  };
  auto text = [](const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : std::string(); };
  auto u64 = [](const nlohmann::json& j) { return j.is_number_unsigned() ? j.get<uint64_t>() : uint64_t{0}; };
  std::map<uint32_t, std::vector<Sample>> by_thread;
  for (const nlohmann::json& e : events) {
    if (text(json_field(e, "type")) != "jdk.ObjectAllocationSample") continue;
    const nlohmann::json& v = json_field(e, "values");
    const uint64_t tid = u64(json_field(json_field(v, "eventThread"), "osThreadId"));
    const uint64_t ts = parse_iso8601_ns(text(json_field(v, "startTime")));
    const nlohmann::json& weight = json_field(v, "weight");
    if (!tid || !ts || tid > UINT32_MAX) continue;
    by_thread[static_cast<uint32_t>(tid)].push_back(
        {ts, text(json_field(json_field(v, "objectClass"), "name")), weight.is_number() ? weight.get<double>() : 0.0});
    samples_++;
  }
  if (!samples_) {
    *error = "the recording has no jdk.ObjectAllocationSample events (enabled? JDK 16 or later?)";
    return false;
  }
  for (auto& [tid, samples] : by_thread) {
    std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.ts < b.ts; });
    if (samples.size() < 2) continue;  // no window: the first sample's weight reaches back to before it
    windows_[tid] = {samples.front().ts, samples.back().ts};
    for (size_t i = 1; i < samples.size(); i++) {
      auto& j = jfr_[samples[i].klass];
      j.first += samples[i].weight;
      j.second++;
      samples_used_++;
    }
  }
  return true;
}

void Calibration::count(uint32_t tid, uint64_t ts_ns, const std::string& klass, uint64_t bytes) {
  auto w = windows_.find(tid);
  if (w == windows_.end()) return;
  const uint64_t real = static_cast<uint64_t>(static_cast<int64_t>(ts_ns) + mono_to_real_);
  // (first sample, last sample]: what the samples after the first weigh.
  if (real <= w->second.from_ns || real > w->second.to_ns) return;
  auto& t = trace_[klass];
  t.first += bytes;
  t.second++;
}

void Calibration::add(const trace::TraceReader& reader, const trace::Record& r) {
  if (r.type == trace::kMeta) {
    const int64_t mono = std::strtoll(reader.meta_value("start_monotonic_ns").c_str(), nullptr, 10);
    const int64_t real = std::strtoll(reader.meta_value("start_realtime_ns").c_str(), nullptr, 10);
    mono_to_real_ = real - mono;
    have_clock_ = mono && real;
    return;
  }
  if (r.type >= JT_PROBE_COUNT || !have_clock_) return;
  const trace::Event& e = r.event;
  const uint32_t tid = reader.threads()[e.thread].tid;
  switch (e.probe) {
    case JT_TLAB_REFILL:
      count(tid, e.ts_ns, reader.classes()[e.a[3]], e.a[1]);
      break;
    case JT_ALLOC_SLOW_ENTER:
      slow_[e.thread] = {true, e.a[1]};
      break;
    case JT_ALLOC_SLOW_EXIT: {
      Slow& s = slow_[e.thread];
      if (s.open && (e.a[2] == 2 || e.a[2] == 4)) count(tid, e.ts_ns, reader.classes()[s.klass], e.a[1]);
      s.open = false;
      break;
    }
  }
}

CalibrationResult Calibration::finish(const trace::TraceReader& reader) const {
  CalibrationResult res;
  res.jfr_samples = samples_;
  res.jfr_samples_used = samples_used_;
  std::map<std::string, ClassRow> rows;
  auto row = [&](const std::string& k) -> ClassRow& {
    ClassRow& r = rows[k];
    r.klass = k;
    return r;
  };
  for (const auto& [k, t] : trace_) {
    row(k).trace_bytes = t.first;
    row(k).trace_events = t.second;
    res.trace_bytes += t.first;
    res.trace_events += t.second;
  }
  for (const auto& [k, j] : jfr_) {
    row(k).jfr_weight = j.first;
    row(k).jfr_samples = j.second;
    res.jfr_weight += j.first;
  }
  for (const auto& [k, r] : rows) {
    res.rows.push_back(r);
    const double a = res.trace_bytes ? double(r.trace_bytes) / res.trace_bytes : 0;
    const double b = res.jfr_weight > 0 ? r.jfr_weight / res.jfr_weight : 0;
    res.distance += std::fabs(a - b) / 2;
  }
  std::sort(res.rows.begin(), res.rows.end(), [](const ClassRow& a, const ClassRow& b) {
    return a.trace_bytes != b.trace_bytes ? a.trace_bytes > b.trace_bytes : a.jfr_weight > b.jfr_weight;
  });
  for (const auto& [tid, w] : windows_) {
    std::string name;
    for (const auto& t : reader.threads())
      if (t.tid == tid) name = t.name;
    if (name.empty()) continue;  // JFR sampled a thread this trace never saw allocate
    res.threads.emplace_back(tid, name);
    res.window_s += (w.to_ns - w.from_ns) / 1e9;
  }
  return res;
}

}  // namespace jvmtrace::analysis
