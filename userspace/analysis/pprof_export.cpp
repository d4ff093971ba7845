#include "analysis/pprof_export.h"

#include <cmath>

#include <cstdlib>
#include <map>
#include <unordered_map>
#include <vector>

#include "analysis/java_frames.h"
#include "analysis/live_heap.h"
#include "analysis/protobuf_writer.h"
#include "base/strings.h"

namespace jvmtrace::analysis {

namespace {

// profile.proto's field numbers.
namespace field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
                   kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12, kComment = 13,
                   kDefaultSampleType = 14;
constexpr uint32_t kValueTypeType = 1, kValueTypeUnit = 2;
constexpr uint32_t kSampleLocation = 1, kSampleValue = 2, kSampleLabel = 3;
constexpr uint32_t kLabelKey = 1, kLabelStr = 2;
constexpr uint32_t kMappingId = 1, kMappingFilename = 5, kMappingHasFunctions = 7, kMappingHasFilenames = 8,
                   kMappingHasLineNumbers = 9, kMappingHasInlineFrames = 10;
constexpr uint32_t kLocationId = 1, kLocationMapping = 2, kLocationLine = 4;
constexpr uint32_t kLineFunction = 1, kLineLine = 2;
constexpr uint32_t kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3, kFunctionFilename = 4;
}  // namespace field

class Builder {
 public:
  explicit Builder(const trace::TraceReader& reader) : reader_(reader) { str(""); }

  // Every string of the profile goes through here, printable(): function
  // and file names are the target's text, and pprof prints them as they are
  // (go tool pprof -top on a terminal).
  int64_t str(const std::string& raw) {
    const std::string s = printable(raw);
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    table_.push_back(s);
    return strings_.emplace(s, static_cast<int64_t>(table_.size() - 1)).first->second;
  }

  // A function per trace method (and one per made-up frame name).
  uint64_t function(uint64_t method) {
    auto it = functions_.find(method);
    if (it != functions_.end()) return it->second;
    const uint64_t id = ++function_ids_;
    ProtoMessage f;
    f.varint(field::kFunctionId, id);
    const std::string name = method_name(reader_, method);
    f.int64(field::kFunctionName, str(name));
    std::string system = name;
    if (method < reader_.methods().size() && reader_.methods()[method].signature)
      system += reader_.strings()[reader_.methods()[method].signature - 1];
    f.int64(field::kFunctionSystemName, str(system));
    f.int64(field::kFunctionFilename, str(source_path(method)));
    out_.message(field::kFunction, f);
    return functions_.emplace(method, id).first->second;
  }
  uint64_t named_function(const std::string& name) {
    auto it = named_.find(name);
    if (it != named_.end()) return it->second;
    const uint64_t id = ++function_ids_;
    ProtoMessage f;
    f.varint(field::kFunctionId, id);
    f.int64(field::kFunctionName, str(name));
    f.int64(field::kFunctionSystemName, str(name));
    out_.message(field::kFunction, f);
    return named_.emplace(name, id).first->second;
  }

  // A location: a physical frame, its inlined scopes first (pprof: "the
  // last entry is the caller into which the preceding entries were
  // inlined").
  uint64_t location(const std::vector<std::pair<uint64_t, int64_t>>& lines) {
    auto it = locations_.find(lines);
    if (it != locations_.end()) return it->second;
    const uint64_t id = locations_.size() + 1;
    ProtoMessage l;
    l.varint(field::kLocationId, id);
    l.varint(field::kLocationMapping, 1);
    for (const auto& [fn, line] : lines) {
      ProtoMessage ln;
      ln.varint(field::kLineFunction, fn);
      if (line) ln.int64(field::kLineLine, line);
      l.message(field::kLocationLine, ln);
    }
    out_.message(field::kLocation, l);
    return locations_.emplace(lines, id).first->second;
  }

  // A Java stack (leaf first) as location ids, leaf first.  The VM's own
  // frames above the Java ones (the allocation path in libjvm.so) are left
  // out: a profile's leaf is the program's allocating method, as in
  // async-profiler's and JFR's allocation profiles (the flame graph keeps
  // them).
  std::vector<uint64_t> stack_locations(const std::vector<trace::Frame>& frames) {
    std::vector<uint64_t> locs;
    std::vector<std::pair<uint64_t, int64_t>> lines;
    for (const trace::Frame& f : frames) {
      if (f.kind == trace::kFrameVm && locs.empty() && lines.empty()) continue;
      lines.emplace_back(function(f.method), static_cast<int64_t>(f.line));
      if (f.kind == trace::kFrameInlined) continue;  // its caller's location holds it
      locs.push_back(location(lines));
      lines.clear();
    }
    if (!lines.empty()) locs.push_back(location(lines));  // inlined into a frame not captured
    return locs;
  }

  void sample(const std::vector<uint64_t>& locs, uint64_t objects, uint64_t bytes,
              const std::vector<std::pair<std::string, std::string>>& labels, const int64_t* inuse = nullptr) {
    ProtoMessage s;
    for (uint64_t l : locs) s.varint(field::kSampleLocation, l);
    s.int64(field::kSampleValue, static_cast<int64_t>(objects));
    s.int64(field::kSampleValue, static_cast<int64_t>(bytes));
    if (heap_) {
      s.int64(field::kSampleValue, inuse ? inuse[0] : 0);
      s.int64(field::kSampleValue, inuse ? inuse[1] : 0);
    }
    for (const auto& [k, v] : labels) {
      ProtoMessage lb;
      lb.int64(field::kLabelKey, str(k));
      lb.int64(field::kLabelStr, str(v));
      s.message(field::kSampleLabel, lb);
    }
    out_.message(field::kSample, s);
  }

  std::string finish(int64_t time_nanos, int64_t duration_nanos, const std::string& comment) {
    ProtoMessage p;
    std::vector<std::pair<const char*, const char*>> types{{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    if (heap_) types.insert(types.end(), {{"inuse_objects", "count"}, {"inuse_space", "bytes"}});
    for (auto [type, unit] : types) {
      ProtoMessage vt;
      vt.int64(field::kValueTypeType, str(type));
      vt.int64(field::kValueTypeUnit, str(unit));
      p.message(field::kSampleType, vt);
    }
    ProtoMessage m;
    m.varint(field::kMappingId, 1);
    m.int64(field::kMappingFilename, str("[java]"));
    m.boolean(field::kMappingHasFunctions, true);
    m.boolean(field::kMappingHasFilenames, true);
    m.boolean(field::kMappingHasLineNumbers, true);
    m.boolean(field::kMappingHasInlineFrames, true);
    p.message(field::kMapping, m);
    ProtoMessage period_type;
    period_type.int64(field::kValueTypeType, str("space"));
    period_type.int64(field::kValueTypeUnit, str("bytes"));
    const int64_t comment_id = str(comment), default_type = str("alloc_space");
    std::string body = p.data() + out_.data();
    ProtoMessage tail;
    for (const std::string& s : table_) tail.bytes(field::kStringTable, s);
    if (time_nanos) tail.int64(field::kTimeNanos, time_nanos);
    if (duration_nanos) tail.int64(field::kDurationNanos, duration_nanos);
    tail.message(field::kPeriodType, period_type);
    tail.int64(field::kPeriod, 64 * 1024);  // the VM's mean sampling interval
    tail.int64(field::kComment, comment_id);
    tail.int64(field::kDefaultSampleType, default_type);
    return body + tail.data();
  }

 private:
  // "java/util/ArrayList.java": the package's path and the SourceFile.
  std::string source_path(uint64_t method) const {
    if (method >= reader_.methods().size()) return "";
    const trace::Method& m = reader_.methods()[method];
    if (!m.klass || !m.file) return "";
    const std::string& klass = reader_.classes()[m.klass - 1];
    const size_t slash = klass.rfind('/');
    return (slash == std::string::npos ? "" : klass.substr(0, slash + 1)) + reader_.strings()[m.file - 1];
  }

  const trace::TraceReader& reader_;
 public:
  bool heap_ = false;  // Go's four heap types
 private:
  ProtoMessage out_;  // functions, locations, samples as they come
  std::vector<std::string> table_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, uint64_t> functions_;
  std::unordered_map<std::string, uint64_t> named_;  // made-up frames ("[no stack]")
  uint64_t function_ids_ = 0;
  std::map<std::vector<std::pair<uint64_t, int64_t>>, uint64_t> locations_;
};

}  // namespace

std::string pprof_profile(const trace::TraceReader& reader, const AllocationProfile& profile, const LiveHeap* live) {
  Builder b(reader);
  b.heap_ = live && live->tracked() > 0;
  // In use by (stack, class), put on the first sample of that stack and
  // class (the allocation profile splits new TLABs from outside ones).
  std::map<std::pair<uint64_t, uint64_t>, LiveHeap::Use> inuse;
  if (b.heap_) inuse = live->by_stack();
  const auto locations = [&](uint64_t stack) {
    return stack ? b.stack_locations(reader.java_stacks()[stack - 1])
                 : std::vector<uint64_t>{b.location({{b.named_function("[no stack]"), 0}})};
  };
  for (const auto& [k, w] : profile.weights(false)) {
    int64_t use[2] = {0, 0};
    auto it = inuse.find({k.stack, k.klass});
    if (it != inuse.end()) {
      use[0] = std::llround(it->second.objects);
      use[1] = std::llround(it->second.bytes);
      inuse.erase(it);
    }
    b.sample(locations(k.stack), w.objects, w.bytes,
             {{"class", reader.classes()[k.klass]}, {"allocation", k.outside ? "outside_tlab" : "new_tlab"}}, use);
  }
  for (const auto& [k, u] : inuse) {  // (in use, but of no allocation the profile holds: a thread not traced)
    const int64_t use[2] = {std::llround(u.objects), std::llround(u.bytes)};
    b.sample(locations(k.first), 0, 0, {{"class", reader.classes()[k.second]}}, use);
  }
  if (const uint64_t rest = profile.unsampled_bytes())
    b.sample({b.location({{b.named_function("[not sampled: a thread with no sample]"), 0}})}, 0, rest,
             {});
  const uint64_t start_real = std::strtoull(reader.meta_value("start_realtime_ns").c_str(), nullptr, 10);
  return b.finish(static_cast<int64_t>(start_real), 0,
                  "jvmtrace allocation profile of PID " + reader.meta_value("pid") + ": " +
                      std::to_string(profile.samples()) + " samples of the VM's own stacks");
}

}  // namespace jvmtrace::analysis
