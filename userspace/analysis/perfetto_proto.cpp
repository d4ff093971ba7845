// Perfetto's native trace format: a Trace message, i.e. a sequence of
// TracePacket fields (field 1, length-delimited), as the tracing service
// writes them.  The field numbers are those of Perfetto's published schema
// (protos/perfetto/trace/: trace_packet.proto, track_event/*.proto,
// interned_data/interned_data.proto); tests/perfetto/perfetto_subset.proto
// declares the fields used here, and the tests decode our files with it.
#include "analysis/perfetto_proto.h"

#include <cstring>
#include <unordered_map>

#include "analysis/protobuf_writer.h"

namespace jvmtrace::analysis {

namespace {

// Field numbers of the published schema, by message.
namespace Trace { constexpr uint32_t kPacket = 1; }
namespace Packet {
constexpr uint32_t kTimestamp = 8, kTrustedSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kTrackDescriptor = 60;
constexpr uint64_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;  // SequenceFlags
}  // namespace Packet
namespace Event {
constexpr uint32_t kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10, kTrackUuid = 11,
                   kCounterValue = 30, kDoubleCounterValue = 44;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;  // TrackEvent.Type
}  // namespace Event
namespace Interned {
constexpr uint32_t kEventCategories = 1, kEventNames = 2, kAnnotationNames = 3, kAnnotationStringValues = 29;
}
// EventName, EventCategory, DebugAnnotationName: iid, name; InternedString:
// iid, str (the same numbers).
namespace InternedString { constexpr uint32_t kIid = 1, kName = 2; }
namespace Annotation {
constexpr uint32_t kNameIid = 1, kBool = 2, kUint = 3, kInt = 4, kDouble = 5, kString = 6, kPointer = 7,
                   kStringIid = 17;
}
namespace Track { constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8; }
namespace ProcessDesc { constexpr uint32_t kPid = 1, kName = 6; }
namespace ThreadDesc { constexpr uint32_t kPid = 1, kTid = 2, kName = 5; }
namespace CounterDesc {
constexpr uint32_t kUnit = 3;
constexpr uint64_t kUnitSizeBytes = 3;  // CounterDescriptor.Unit
}  // namespace CounterDesc

// All packets are one sequence: interned names are valid across it.
constexpr uint32_t kSequenceId = 1;
// Track uuids: the process, its counters, then thread tracks by tid (real
// threads and the pseudo tracks, which stay below 2^32).
constexpr uint64_t kProcessUuid = 1;
constexpr uint64_t kFirstCounterUuid = 2;
constexpr uint64_t kThreadUuidBase = uint64_t(1) << 32;

class PerfettoProto final : public TimelineSink {
 public:
  PerfettoProto(uint64_t origin_ns, std::function<void(const std::string&)> out)
      : origin_(origin_ns), out_(std::move(out)) {}

  void process(uint32_t pid, const std::string& name, const std::string& labels) override {
    (void)labels;  // the command line: no field for it in ProcessDescriptor; the name says the mode
    ProtoMessage proc;
    proc.varint(ProcessDesc::kPid, pid);
    proc.bytes(ProcessDesc::kName, name);
    ProtoMessage track;
    track.varint(Track::kUuid, kProcessUuid);
    track.message(Track::kProcess, proc);
    descriptor(track);
  }

  void thread(uint32_t pid, uint32_t tid, const std::string& name, int sort_index) override {
    (void)sort_index;  // the UI orders tracks itself
    ProtoMessage track;
    track.varint(Track::kUuid, kThreadUuidBase + tid);
    if (tid < kGcPauseTrack) {  // a real thread
      ProtoMessage t;
      t.varint(ThreadDesc::kPid, pid);
      t.varint(ThreadDesc::kTid, tid);
      t.bytes(ThreadDesc::kName, name);
      track.message(Track::kThread, t);
    } else {  // a track of the process that is no thread
      track.varint(Track::kParentUuid, kProcessUuid);
      track.bytes(Track::kName, name);
    }
    descriptor(track);
  }

  void slice(const char* cat, const std::string& name, uint32_t tid, uint64_t from, uint64_t to,
             const Json& args) override {
    // Perfetto has no complete events: a begin and an end on the thread's
    // track (the end never before the begin).
    event(from, Event::kSliceBegin, kThreadUuidBase + tid, cat, &name, &args);
    event(to > from ? to : from, Event::kSliceEnd, kThreadUuidBase + tid, nullptr, nullptr, nullptr);
    written_++;
  }

  void instant(const char* cat, const std::string& name, uint32_t tid, uint64_t ns, const Json& args) override {
    event(ns, Event::kInstant, kThreadUuidBase + tid, cat, &name, &args);
    written_++;
  }

  void process_instant(const std::string& name, uint64_t ns, const Json& args) override {
    event(ns, Event::kInstant, kProcessUuid, "lost", &name, &args);
    written_++;
  }

  void counter(const char* name, const char* series, uint64_t ns, const Json& value) override {
    (void)series;  // a counter track holds one series
    auto it = counters_.find(name);
    if (it == counters_.end()) {
      const uint64_t uuid = kFirstCounterUuid + counters_.size();
      it = counters_.emplace(name, uuid).first;
      ProtoMessage track;
      track.varint(Track::kUuid, uuid);
      track.varint(Track::kParentUuid, kProcessUuid);
      track.bytes(Track::kName, name);
      ProtoMessage desc;
      if (std::strstr(name, "(bytes)")) desc.varint(CounterDesc::kUnit, CounterDesc::kUnitSizeBytes);
      track.message(Track::kCounter, desc);
      descriptor(track);
    }
    ProtoMessage ev;
    ev.varint(Event::kType, Event::kCounter);
    ev.varint(Event::kTrackUuid, it->second);
    if (value.is_number_float())
      ev.float64(Event::kDoubleCounterValue, value.get<double>());
    else
      ev.int64(Event::kCounterValue, value.get<int64_t>());
    packet(ns, ev, false);
    written_++;
  }

  void finish() override {
    if (!started_) process(0, "empty trace", "");
  }

 private:
  // A TracePacket with a TrackEvent at ns (since the origin); interned
  // names the event introduces go into the same packet.
  void event(uint64_t ns, uint64_t type, uint64_t track, const char* cat, const std::string* name,
             const Json* args) {
    ProtoMessage ev;
    ev.varint(Event::kType, type);
    ev.varint(Event::kTrackUuid, track);
    if (cat) ev.varint(Event::kCategoryIids, intern(categories_, cat, Interned::kEventCategories));
    if (name) ev.varint(Event::kNameIid, intern(names_, *name, Interned::kEventNames));
    if (args) {
      for (const auto& [key, v] : args->items()) {
        ProtoMessage a;
        a.varint(Annotation::kNameIid, intern(annotation_names_, key, Interned::kAnnotationNames));
        if (v.is_boolean())
          a.boolean(Annotation::kBool, v.get<bool>());
        else if (v.is_number_unsigned())
          a.varint(Annotation::kUint, v.get<uint64_t>());
        else if (v.is_number_integer())
          a.int64(Annotation::kInt, v.get<int64_t>());
        else if (v.is_number_float())
          a.float64(Annotation::kDouble, v.get<double>());
        else if (v.is_string() && is_address_key(key))
          a.varint(Annotation::kPointer, std::strtoull(v.get_ref<const std::string&>().c_str(), nullptr, 16));
        else if (v.is_string())  // class names, outcomes, causes: a few distinct values, each written once
          a.varint(Annotation::kStringIid,
                   intern(string_values_, v.get_ref<const std::string&>(), Interned::kAnnotationStringValues));
        else
          a.bytes(Annotation::kString, json_text(v));
        ev.message(Event::kDebugAnnotations, a);
      }
    }
    packet(ns, ev, true);
  }

  // The iid of s in table (new ones are added to this packet's interned data).
  uint64_t intern(std::unordered_map<std::string, uint64_t>& table, const std::string& s, uint32_t field) {
    auto it = table.find(s);
    if (it != table.end()) return it->second;
    const uint64_t iid = table.size() + 1;  // 0 means "not interned"
    table.emplace(s, iid);
    ProtoMessage entry;
    entry.varint(InternedString::kIid, iid);
    entry.bytes(InternedString::kName, s);
    interned_.message(field, entry);
    return iid;
  }

  void packet(uint64_t ns, const ProtoMessage& ev, bool interning) {
    ProtoMessage p;
    p.varint(Packet::kTimestamp, ns > origin_ ? ns - origin_ : 0);
    p.varint(Packet::kTrustedSequenceId, kSequenceId);
    p.message(Packet::kTrackEvent, ev);
    if (!interned_.empty()) {
      p.message(Packet::kInternedData, interned_);
      interned_.clear();
    }
    write(p, interning ? Packet::kNeedsIncrementalState : 0);
  }

  void descriptor(const ProtoMessage& track) {
    ProtoMessage p;
    p.varint(Packet::kTrustedSequenceId, kSequenceId);
    p.message(Packet::kTrackDescriptor, track);
    write(p, 0);
  }

  void write(ProtoMessage& p, uint64_t flags) {
    if (!started_) {  // the sequence's first packet starts its interning
      started_ = true;
      flags |= Packet::kIncrementalStateCleared;
    }
    if (flags) p.varint(Packet::kSequenceFlags, flags);
    ProtoMessage trace;
    trace.message(Trace::kPacket, p);
    out_(trace.data());
  }

  uint64_t origin_;
  std::function<void(const std::string&)> out_;
  bool started_ = false;
  std::unordered_map<std::string, uint64_t> categories_, names_, annotation_names_, string_values_;
  std::unordered_map<std::string, uint64_t> counters_;  // name -> track uuid
  ProtoMessage interned_;                               // interned data for the next packet
};

}  // namespace

std::unique_ptr<TimelineSink> perfetto_proto_sink(uint64_t origin_ns, std::function<void(const std::string&)> out) {
  return std::make_unique<PerfettoProto>(origin_ns, std::move(out));
}

}  // namespace jvmtrace::analysis
