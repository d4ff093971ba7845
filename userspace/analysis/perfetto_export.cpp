#include "analysis/perfetto_export.h"

#include <cinttypes>
#include <cstdio>

#include "analysis/java_frames.h"
#include "base/json.h"
#include "base/strings.h"
#include "jvmtrace_events.h"

namespace jvmtrace::analysis {

namespace {

std::string u(uint64_t v) { return std::to_string(v); }
std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}
// Heap used is emitted at most this often between pauses (a point per refill
// would add nothing a person can see), and always at pause edges.
constexpr uint64_t kHeapCounterStepNs = 1000000;

}  // namespace

bool is_address_key(const std::string& key) {
  return key == "address" || key == "tlab_start" || key == "plab_start";
}

bool is_lines_key(const std::string& key) { return key == "stack"; }

namespace {

class PrintableSink final : public TimelineSink {
 public:
  explicit PrintableSink(TimelineSink& to) : to_(to) {}

  void process(uint32_t pid, const std::string& name, const std::string& labels) override {
    to_.process(pid, printable(name), printable(labels));
  }
  void thread(uint32_t pid, uint32_t tid, const std::string& name, int sort_index) override {
    to_.thread(pid, tid, printable(name), sort_index);
  }
  void slice(const char* cat, const std::string& name, uint32_t tid, uint64_t from_ns, uint64_t to_ns,
             const Json& args) override {
    to_.slice(cat, printable(name), tid, from_ns, to_ns, printable_args(args));
  }
  void instant(const char* cat, const std::string& name, uint32_t tid, uint64_t ns, const Json& args) override {
    to_.instant(cat, printable(name), tid, ns, printable_args(args));
  }
  void process_instant(const std::string& name, uint64_t ns, const Json& args) override {
    to_.process_instant(printable(name), ns, printable_args(args));
  }
  // (a counter's name and series are the export's own words)
  void counter(const char* name, const char* series, uint64_t ns, const Json& value) override {
    to_.counter(name, series, ns, value);
  }
  void finish() override { to_.finish(); }

 private:
  // args is an object of numbers and strings (the keys are the export's).
  static Json printable_args(const Json& args) {
    Json out = Json::object();
    for (const auto& [key, v] : args.items()) {
      if (!v.is_string()) {
        out[key] = v;
        continue;
      }
      const std::string& s = v.get_ref<const std::string&>();
      if (!is_lines_key(key)) {
        out[key] = printable(s);
        continue;
      }
      std::string lines;
      for (size_t at = 0; at <= s.size();) {
        size_t nl = s.find('\n', at);
        if (nl == std::string::npos) nl = s.size();
        lines += (at ? "\n" : "") + printable(s.substr(at, nl - at));
        at = nl + 1;
      }
      out[key] = lines;
    }
    return out;
  }

  TimelineSink& to_;
};

}  // namespace

std::unique_ptr<TimelineSink> printable_sink(TimelineSink& sink) { return std::make_unique<PrintableSink>(sink); }

namespace {

class TraceEventJson final : public TimelineSink {
 public:
  TraceEventJson(uint64_t origin_ns, std::function<void(const std::string&)> out)
      : origin_(origin_ns), out_(std::move(out)) {}

  void process(uint32_t pid, const std::string& name, const std::string& labels) override {
    pid_ = pid;
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid_}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "process_labels"}, {"pid", pid_}, {"args", {{"labels", labels}}}});
  }
  void thread(uint32_t pid, uint32_t tid, const std::string& name, int sort_index) override {
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", sort_index}}}});
  }
  void slice(const char* cat, const std::string& name, uint32_t tid, uint64_t from, uint64_t to,
             const Json& args) override {
    emit({{"ph", "X"},   {"cat", cat},       {"name", name},          {"pid", pid_},
          {"tid", tid}, {"ts", ts(from)}, {"dur", ts(origin_ + (to > from ? to - from : 0))}, {"args", args}});
  }
  void instant(const char* cat, const std::string& name, uint32_t tid, uint64_t ns, const Json& args) override {
    emit({{"ph", "i"}, {"s", "t"}, {"cat", cat}, {"name", name}, {"pid", pid_}, {"tid", tid}, {"ts", ts(ns)},
          {"args", args}});
  }
  void process_instant(const std::string& name, uint64_t ns, const Json& args) override {
    emit({{"ph", "i"}, {"s", "p"}, {"name", name}, {"pid", pid_}, {"tid", 0}, {"ts", ts(ns)}, {"args", args}});
  }
  void counter(const char* name, const char* series, uint64_t ns, const Json& value) override {
    emit({{"ph", "C"}, {"name", name}, {"pid", pid_}, {"tid", 0}, {"ts", ts(ns)}, {"args", {{series, value}}}});
  }
  void finish() override {
    if (!header_) emit({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "empty trace"}}}});
    out_("\n]}\n");
  }

 private:
  // Microseconds since the origin, Trace Event's unit, nanoseconds as the
  // fraction; events before the origin clamp to 0.
  double ts(uint64_t ns) const {
    const uint64_t d = ns > origin_ ? ns - origin_ : 0;
    return static_cast<double>(d / 1000) + static_cast<double>(d % 1000) / 1000;
  }
  void emit(const Json& event) {
    if (!header_) {
      const Json head = {{"displayTimeUnit", "ns"}, {"otherData", {{"producer", "jvmtrace export --perfetto"}}}};
      std::string text = json_text(head);
      text.pop_back();  // the closing brace: the events follow, one per line
      out_(text + ",\"traceEvents\":[\n");
      header_ = true;
      out_(json_text(event));
    } else {
      out_(",\n" + json_text(event));
    }
    written_++;
  }

  uint64_t origin_;
  std::function<void(const std::string&)> out_;
  uint32_t pid_ = 0;
  bool header_ = false;
};

}  // namespace

std::unique_ptr<TimelineSink> trace_event_json_sink(uint64_t origin_ns, std::function<void(const std::string&)> out) {
  return std::make_unique<TraceEventJson>(origin_ns, std::move(out));
}

PerfettoExport::PerfettoExport(const trace::TraceReader& reader, uint64_t origin_ns, TimelineSink& sink,
                               uint64_t rate_interval_ns)
    : reader_(reader), origin_(origin_ns), printable_(printable_sink(sink)), out_(*printable_), interval_(rate_interval_ns ? rate_interval_ns : 10000000), live_(reader) {}

void PerfettoExport::name_thread(uint32_t tid, const std::string& name, int sort_index) {
  out_.thread(pid_, tid, name, sort_index);
}

void PerfettoExport::heap_counter(uint64_t ns, uint64_t used) {
  out_.counter("heap used (bytes)", "used", ns, used);
  heap_last_emit_ = ns;
  heap_pending_ = false;
}

void PerfettoExport::heap_at_pause_start(uint64_t ns, const uint64_t* used) {
  if (heap_known_ && heap_pending_) heap_counter(ns, heap_used_);
  if (used) heap_counter(ns, *used);
  heap_known_ = false;
}

void PerfettoExport::heap_at_pause_end(uint64_t ns, uint64_t used, uint64_t committed) {
  heap_counter(ns, used);
  out_.counter("heap committed (bytes)", "committed", ns, committed);
  heap_known_ = true;
  heap_used_ = used;
}

// Closes every allocation-rate bucket that ends at or before ns.
void PerfettoExport::rate_until(uint64_t ns) {
  if (!rate_started_) {
    rate_started_ = true;
    rate_bucket_ = ns - (ns - origin_) % interval_;
    return;
  }
  while (ns >= rate_bucket_ + interval_) {
    out_.counter("allocation rate (MB/s)", "rate", rate_bucket_, rate_bytes_ * 1e3 / interval_);
    rate_bytes_ = 0;
    rate_bucket_ += interval_;
  }
}

void PerfettoExport::add(const trace::Record& r) {
  live_.add(r);
  if (r.type == trace::kMeta) {
    pid_ = static_cast<uint32_t>(std::strtoul(reader_.meta_value("pid").c_str(), nullptr, 10));
    std::string cmd = reader_.meta_value("cmdline");
    const size_t sp = cmd.rfind(' ');
    const std::string main = sp == std::string::npos ? cmd : cmd.substr(sp + 1);
    out_.process(pid_, "JVM " + u(pid_) + " (" + reader_.meta_value("mode") + " mode)", cmd);
    pause_probes_ = reader_.meta_value("pause_probes") == "1";
    if (reader_.meta_value("safepoint_probes") == "1") {
      pause_track_ = kSafepointTrack;
      name_thread(kSafepointTrack, "Safepoints (stop the world), GC pauses inside", -3);
    } else {
      name_thread(kGcPauseTrack, "GC pauses", -3);
    }
    if (pause_probes_) name_thread(kGcCollectionTrack, "GC collections (young, full)", -2);
    name_thread(kGcConcurrentTrack, "GC concurrent cycles", -1);
    return;
  }
  if (r.type == trace::kLost) {
    out_.process_instant("LOST " + u(r.count) + " events", r.ts_ns, {{"count", r.count}});
    heap_known_ = false;  // an allocation may be among them
    return;
  }
  if (r.type == trace::kEnd) {
    target_exited_ = r.id == trace::kEndTargetExit;
    return;
  }
  if (r.type >= JT_PROBE_COUNT) return;
  const trace::Event& e = r.event;
  const uint64_t* a = e.a;
  last_ns_ = std::max(last_ns_, e.ts_ns);
  if (named_.size() <= e.thread) named_.resize(e.thread + 1);
  if (!named_[e.thread]) {
    named_[e.thread] = true;
    name_thread(tid(e.thread), reader_.threads()[e.thread].name, 0);
  }
  const uint32_t here = tid(e.thread);
  auto allocated = [&](uint64_t bytes) {
    rate_until(e.ts_ns);
    rate_bytes_ += bytes;
    if (heap_known_) {
      heap_used_ += bytes;
      heap_pending_ = true;
      if (e.ts_ns >= heap_last_emit_ + kHeapCounterStepNs) heap_counter(e.ts_ns, heap_used_);
    }
  };
  switch (e.probe) {
    case JT_TLAB_REFILL:
      out_.instant("tlab", "TLAB refill", here, e.ts_ns,
                   {{"class", reader_.classes()[a[3]]}, {"tlab_bytes", a[1]}, {"alloc_bytes", a[2]},
                    {"tlab_start", hex(a[0])}, {"retired_waste_bytes", a[5]}});
      allocated(a[1]);
      break;
    case JT_ALLOC_SLOW_ENTER:
      slow_[e.thread] = {true, e.ts_ns, a[0], a[1]};
      break;
    case JT_ALLOC_SLOW_EXIT: {
      OpenSlow& s = slow_[e.thread];
      const bool outside = jvmtrace_slow_outside_tlab(a[2]);
      const std::string outcome = trace::slow_outcome_name(a[2]);
      Json args = {{"outcome", outcome}, {"alloc_bytes", a[1]}, {"address", hex(a[0])}, {"gcs", a[3]}};
      if (s.open) {
        args["class"] = reader_.classes()[s.klass];
        out_.slice("alloc", "slow path: " + outcome, here, s.ts, e.ts_ns, args);
      } else {
        out_.instant("alloc", "slow path exit: " + outcome, here, e.ts_ns, args);
      }
      s.open = false;
      if (outside) allocated(a[1]);
      break;
    }
    case JT_GC_PAUSE_START:
      pauses_[{a[0], a[3]}] = {e.ts_ns, a[4], a[5], a[3], a[1], a[2]};
      heap_at_pause_start(e.ts_ns, &a[4]);
      break;
    case JT_GC_PAUSE_END: {
      auto it = pauses_.find({a[0], a[3]});
      if (it != pauses_.end()) {
        const OpenGc& p = it->second;
        const std::string cause = reader_.strings()[p.cause];
        const std::string name = "GC " + u(a[0]) + " " + trace::pause_title(reader_.strings()[p.name], cause);
        out_.slice("gc", name, pause_track_, p.ts, e.ts_ns,
                   {{"gc_id", a[0]},
                    {"pause", trace::pause_kind_name(a[3])},
                    {"cause", cause},
                    {"heap_used_before", p.used},
                    {"heap_used_after", a[4]},
                    {"heap_committed_before", p.committed},
                    {"heap_committed_after", a[5]}});
        pauses_.erase(it);
      }
      heap_at_pause_end(e.ts_ns, a[4], a[5]);
      break;
    }
    case JT_SAFEPOINT_BEGIN:  // operation, id, begin_ns, since_last_ns
      safepoint_ = {true, e.ts_ns, a[0], a[1]};
      break;
    case JT_SAFEPOINT_END: {  // operation, reaching, at, total, threads, running, cleanup, id
      const std::string op = reader_.strings()[a[0]];
      const Json args = {{"safepoint_id", a[7]}, {"operation", op},       {"reaching_ns", a[1]},
                         {"cleanup_ns", a[6]},   {"at_safepoint_ns", a[2]}, {"total_ns", a[3]},
                         {"threads", a[4]},      {"running", a[5]}};
      if (safepoint_.open && safepoint_.id == a[7])
        out_.slice("safepoint", "Safepoint " + op, kSafepointTrack, safepoint_.ts, e.ts_ns, args);
      else  // begun before the recording
        out_.instant("safepoint", "Safepoint " + op + " (end)", kSafepointTrack, e.ts_ns, args);
      safepoint_.open = false;
      break;
    }
    case JT_ALLOC_SAMPLE: {  // weight, class, alloc_bytes, outcome, stack + 1
      const trace::Frame* site = a[4] ? allocation_site(reader_.java_stacks()[a[4] - 1]) : nullptr;
      std::string stack;
      if (a[4])
        for (const trace::Frame& f : reader_.java_stacks()[a[4] - 1])
          stack += (stack.empty() ? "" : "\n") + printable(frame_site(reader_, f)) + trace::frame_kind_suffix(f.kind);
      out_.instant("alloc", "allocation sample: " + (site ? frame_site(reader_, *site) : std::string("[no Java frame]")),
                   here, e.ts_ns,
                   {{"weight_bytes", a[0]}, {"class", reader_.classes()[a[1]]}, {"alloc_bytes", a[2]},
                    {"outcome", trace::slow_outcome_name(a[3])}, {"stack", stack}});
      break;
    }
    case JT_GC_START: {
      gcs_[a[0]] = {e.ts_ns, a[4], a[5], a[3], a[1], a[2]};
      if (a[3] != JVMTRACE_GC_CONCURRENT && !pause_probes_)  // with pause probes, the pauses draw the heap
        heap_at_pause_start(e.ts_ns, reader_.meta_value("mode") != "stock" ? &a[4] : nullptr);
      break;
    }
    case JT_GC_END: {
      auto it = gcs_.find(a[0]);
      const bool stock = reader_.meta_value("mode") == "stock";
      if (it != gcs_.end()) {
        const OpenGc& g = it->second;
        const std::string name = "GC " + u(a[0]) + " " + reader_.strings()[g.name] + " (" + trace::gc_kind_name(g.kind) + ")";
        Json args = {{"gc_id", a[0]}, {"cause", reader_.strings()[g.cause]}, {"kind", trace::gc_kind_name(g.kind)}};
        if (!stock) {
          args["heap_used_before"] = g.used;
          args["heap_used_after"] = a[4];
          args["heap_committed_before"] = g.committed;
          args["heap_committed_after"] = a[5];
        }
        out_.slice("gc", name, gc_track(g.kind), g.ts, e.ts_ns, args);
        gcs_.erase(it);
      }
      if (a[3] != JVMTRACE_GC_CONCURRENT && !stock && !pause_probes_) heap_at_pause_end(e.ts_ns, a[4], a[5]);
      break;
    }
    case JT_PLAB_ALLOC:
      plabs_[a[1]] = {e.ts_ns, a[0], a[2], a[3] & 1, here};  // dest: as the summary and the check read it
      break;
    case JT_PLAB_RETIRE: {
      auto it = plabs_.find(a[1]);
      if (it == plabs_.end()) break;  // handed out before the recording
      const OpenPlab& p = it->second;
      uint32_t track = p.tid;
      if (p.dest) {  // old-gen PLABs overlap young ones: a track of their own per worker
        track = kOldPlabTrackBase + p.tid;
        if (!pseudo_named_[track]) {
          pseudo_named_[track] = true;
          std::string owner = u(p.tid);
          for (const auto& t : reader_.threads())
            if (t.tid == p.tid) owner = t.name;
          name_thread(track, owner + " old-gen PLABs", 1);
        }
      }
      out_.slice("plab", std::string("PLAB ") + (p.dest ? "old" : "young"), track, p.ts, e.ts_ns,
                 {{"gc_id", p.gc_id},
                  {"plab_start", hex(a[1])},
                  {"plab_bytes", p.bytes},
                  {"used_bytes", a[3]},
                  {"wasted_bytes", a[4]},
                  {"retired_by_tid", here}});
      plabs_.erase(it);
      break;
    }
    case JT_PROMOTE_DIRECT:
      out_.instant("plab", "promoted outside PLABs", here, e.ts_ns,
                   {{"gc_id", a[0]}, {"address", hex(a[1])}, {"bytes", a[2]},
                    {"dest", a[3] & 1 ? "old" : "young"}});
      break;
  }
}

void PerfettoExport::finish() {
  // A collection still running when the recording ended: a slice to its end, marked.
  for (const auto& [id, g] : gcs_)
    out_.slice("gc", "GC " + u(id) + " " + reader_.strings()[g.name] + " (unfinished)", gc_track(g.kind), g.ts,
               last_ns_, {{"gc_id", id}, {"unfinished", true}});
  for (const auto& [key, p] : pauses_)
    out_.slice("gc", "GC " + u(key.first) + " " + reader_.strings()[p.name] + " (unfinished)", pause_track_, p.ts,
               last_ns_, {{"gc_id", key.first}, {"unfinished", true}});
  // The VM's last safepoint never ends: the VM thread exits inside it
  // (JDK 17 names its operation "None", later ones "Halt"); a trace that
  // ended with the JVM's exit says so rather than show "None".  Any other
  // safepoint open at the end was cut by the recording's end.
  if (safepoint_.open) {
    const std::string op = reader_.strings()[safepoint_.operation];
    out_.slice("safepoint", target_exited_ ? "Safepoint at VM exit" : "Safepoint " + op + " (unfinished)",
               kSafepointTrack, safepoint_.ts, last_ns_,
               {{"safepoint_id", safepoint_.id}, {"operation", op}, {"unfinished", true}, {"vm_exit", target_exited_}});
  }
  if (heap_known_ && heap_pending_) heap_counter(last_ns_, heap_used_);
  if (rate_started_) rate_until(rate_bucket_ + interval_);  // the last, partial bucket
  live_counters();
  out_.finish();
}

// A counter of the estimated live heap, and one for each of the 8 sites
// heaviest at the end (docs/analysis.md), a value after each collection
// that reported fates.
void PerfettoExport::live_counters() {
  const auto& points = live_.points();
  if (points.empty()) return;
  for (const auto& p : points) out_.counter("live heap (bytes, estimated)", "live", p.ts_ns, std::llround(p.live_bytes));
  const auto top = live_.top_series(8);
  live_names_.reserve(top.size());  // (no reallocation: the sink may keep the pointers)
  for (const auto& s : top) {
    live_names_.push_back("live: " + s.name);
    for (size_t i = 0; i < s.live_bytes.size(); i++)
      out_.counter(live_names_.back().c_str(), "live", points[i].ts_ns, std::llround(s.live_bytes[i]));
  }
}

}  // namespace jvmtrace::analysis
