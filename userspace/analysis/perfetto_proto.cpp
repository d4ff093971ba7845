// Perfetto's native trace format: a Trace message, i.e. a sequence of
// TracePacket fields (field 1, length-delimited), as the tracing service
// writes them.  The field numbers are those of Perfetto's published schema
// (protos/perfetto/trace/: trace_packet.proto, track_event/*.proto,
// interned_data/interned_data.proto); tests/perfetto/perfetto_subset.proto
// declares the fields used here, and the tests decode our files with it.
#include "analysis/perfetto_proto.h"

#include <zlib.h>

#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "analysis/protobuf_writer.h"

namespace jvmtrace::analysis {

namespace {

// Field numbers of the published schema, by message.
namespace Trace { constexpr uint32_t kPacket = 1; }
namespace Packet {
constexpr uint32_t kClockSnapshot = 6, kTimestamp = 8, kTrustedSequenceId = 10, kTrackEvent = 11,
                   kInternedData = 12, kSequenceFlags = 13, kCompressedPackets = 50, kTimestampClockId = 58,
                   kDefaults = 59, kTrackDescriptor = 60;
constexpr uint64_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;  // SequenceFlags
}  // namespace Packet
namespace Defaults { constexpr uint32_t kTimestampClockId = 58; }  // TracePacketDefaults
namespace Clocks { constexpr uint32_t kClocks = 1; }                 // ClockSnapshot
namespace Clock { constexpr uint32_t kId = 1, kTimestamp = 2, kIncremental = 3; }  // ClockSnapshot.Clock
// BOOTTIME, the trace's own clock (BuiltinClock), and the sequence's
// incremental clock (a sequence-scoped id, 64 to 127).
constexpr uint64_t kBootTime = 6, kIncrementalClock = 64;
// Packets are compressed (TracePacket.compressed_packets: a Trace of them,
// zlib's deflate, as the tracing service writes them with compression_type
// DEFLATE) in chunks of about this many bytes.
constexpr size_t kChunkBytes = 1 << 20;
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
// Track uuids: the process, its counters, the real threads by the order they
// are named in (small numbers: a varint of one or two bytes in every event),
// then the pseudo tracks by tid (which stay below 2^32).
constexpr uint64_t kProcessUuid = 1;
constexpr uint64_t kFirstCounterUuid = 2;  // up to 15 counters
constexpr uint64_t kFirstThreadUuid = 16;
constexpr uint64_t kThreadUuidBase = uint64_t(1) << 32;

class PerfettoProto final : public TimelineSink {
 public:
  PerfettoProto(uint64_t origin_ns, std::function<void(const std::string&)> out, bool compress)
      : origin_(origin_ns), out_(std::move(out)), compress_(compress) {}

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
    track.varint(Track::kUuid, uuid_of(tid));
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
    event(from, Event::kSliceBegin, uuid_of(tid), cat, &name, &args);
    event(to > from ? to : from, Event::kSliceEnd, uuid_of(tid), nullptr, nullptr, nullptr);
    written_++;
  }

  void instant(const char* cat, const std::string& name, uint32_t tid, uint64_t ns, const Json& args) override {
    event(ns, Event::kInstant, uuid_of(tid), cat, &name, &args);
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
      const uint64_t uuid = counters_.size() < kFirstThreadUuid - kFirstCounterUuid
                                ? kFirstCounterUuid + counters_.size()
                                : kThreadUuidBase - 1 - counters_.size();  // (more counters than expected)
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
    flush();
  }

 private:
  // A real thread's track: the next small uuid the first time it is seen;
  // a pseudo track (a tid from perfetto_export.h): 2^32 + its tid.
  uint64_t uuid_of(uint32_t tid) {
    if (tid >= kGcPauseTrack) return kThreadUuidBase + tid;
    auto it = thread_uuids_.find(tid);
    if (it == thread_uuids_.end()) it = thread_uuids_.emplace(tid, kFirstThreadUuid + thread_uuids_.size()).first;
    return it->second;
  }

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

  // Timestamps are on the sequence's incremental clock (the default the
  // first packet sets): the nanoseconds since the previous timestamped
  // packet, a varint of two or three bytes rather than six.  A packet earlier
  // than that one (a slice's begin, written when it ends, and whatever else
  // the export writes late) gives its time in full, on BOOTTIME, which the
  // first packet's ClockSnapshot sets equal to the incremental clock: what
  // Perfetto's own SDK does with a timestamp that goes back.
  void packet(uint64_t ns, const ProtoMessage& ev, bool interning) {
    ProtoMessage p;
    const uint64_t t = ns > origin_ ? ns - origin_ : 0;
    if (t >= clock_) {
      p.varint(Packet::kTimestamp, t - clock_);
      clock_ = t;
    } else {
      p.varint(Packet::kTimestampClockId, kBootTime);
      p.varint(Packet::kTimestamp, t);
    }
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
    if (!started_) start();
    if (flags) p.varint(Packet::kSequenceFlags, flags);
    ProtoMessage trace;
    trace.message(Trace::kPacket, p);
    if (!compress_) {
      out_(trace.data());
      return;
    }
    chunk_ += trace.data();
    if (chunk_.size() >= kChunkBytes) flush();
  }

  // The sequence's first packet: it clears (starts) its incremental state,
  // makes the incremental clock its packets' default, and ties that clock to
  // BOOTTIME, both at 0 (the origin).
  void start() {
    started_ = true;
    ProtoMessage defaults;
    defaults.varint(Defaults::kTimestampClockId, kIncrementalClock);
    ProtoMessage snapshot;
    for (uint64_t id : {kBootTime, kIncrementalClock}) {
      ProtoMessage c;
      c.varint(Clock::kId, id);
      c.varint(Clock::kTimestamp, 0);
      if (id == kIncrementalClock) c.boolean(Clock::kIncremental, true);
      snapshot.message(Clocks::kClocks, c);
    }
    ProtoMessage p;
    p.varint(Packet::kTrustedSequenceId, kSequenceId);
    p.message(Packet::kDefaults, defaults);
    p.message(Packet::kClockSnapshot, snapshot);
    p.varint(Packet::kSequenceFlags, Packet::kIncrementalStateCleared);
    ProtoMessage trace;
    trace.message(Trace::kPacket, p);
    if (compress_)
      chunk_ += trace.data();
    else
      out_(trace.data());
  }

  // The packets kept so far, deflated into one TracePacket.
  void flush() {
    if (chunk_.empty()) return;
    uLongf size = compressBound(chunk_.size());
    std::string z(size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(chunk_.data()),
                  chunk_.size(), 6) != Z_OK)
      throw std::runtime_error("zlib could not compress the trace's packets");
    z.resize(size);
    ProtoMessage p;
    p.bytes(Packet::kCompressedPackets, z);
    ProtoMessage trace;
    trace.message(Trace::kPacket, p);
    out_(trace.data());
    chunk_.clear();
  }

  uint64_t origin_;
  std::function<void(const std::string&)> out_;
  bool compress_;
  std::string chunk_;   // packets not yet compressed (a serialized Trace)
  uint64_t clock_ = 0;  // the incremental clock's value: the last timestamp given as a delta
  std::unordered_map<uint32_t, uint64_t> thread_uuids_;
  bool started_ = false;
  std::unordered_map<std::string, uint64_t> categories_, names_, annotation_names_, string_values_;
  std::unordered_map<std::string, uint64_t> counters_;  // name -> track uuid
  ProtoMessage interned_;                               // interned data for the next packet
};

}  // namespace

std::unique_ptr<TimelineSink> perfetto_proto_sink(uint64_t origin_ns, std::function<void(const std::string&)> out,
                                                  bool compress) {
  return std::make_unique<PerfettoProto>(origin_ns, std::move(out), compress);
}

}  // namespace jvmtrace::analysis
