// The jvmtrace trace file (docs/trace-format.md is the full description):
//
//   file   := file_header block*
//   file_header (16 bytes) := "JVMTRACE" u32 version u32 flags     (little endian)
//   block  := block_header payload
//   block_header (28 bytes) := "JTBK" u32 seq u32 payload_len u32 records u64 base_ts u32 crc32c
//   payload := record*           crc32c covers header bytes 4..23 and the payload
//
// A block decodes on its own given the tables (threads, classes, strings)
// defined in it and before it: all delta state restarts at each block, so a
// file cut at any byte reads up to its last complete block.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "jvmtrace_events.h"

namespace jvmtrace::trace {

constexpr char kFileMagic[8] = {'J', 'V', 'M', 'T', 'R', 'A', 'C', 'E'};
// 2: gc__pause__start/end events (version 1 files read the same; a reader of
// version 1 only refuses version 2 files instead of misreading them).
// 3: safepoints, allocation samples with their Java stacks, the method
// table (older files read the same; older readers refuse version 3).
// 4: allocation samples carry their sample id, and the samples' fates
// (sample__fates) have records of their own (older files read the same, their
// samples with id 0; older readers refuse version 4).
constexpr uint32_t kVersion = 4;
constexpr uint32_t kOldestVersion = 1;
constexpr size_t kFileHeaderSize = 16;
constexpr char kBlockMagic[4] = {'J', 'T', 'B', 'K'};
constexpr size_t kBlockHeaderSize = 28;
constexpr uint32_t kMaxPayload = 16u << 20;  // a reader rejects larger blocks as corrupt
constexpr uint64_t kMaxStackFrames = 1024;   // a reader rejects longer stack records as corrupt
// The tables a trace may define, at most (a reader rejects more as corrupt,
// so a crafted file cannot make it grow without bound; the recorder keeps
// far fewer: record/recorder.h): entries per table (threads, classes,
// strings, stacks), the bytes of every name together, and the frames of
// every stack together.
constexpr uint64_t kMaxTableEntries = 1u << 22;
constexpr uint64_t kMaxTableNameBytes = 256u << 20;
constexpr uint64_t kMaxTableFrames = 1u << 24;
// record --block-kb's largest value: a block of that size is still one the
// reader accepts (the writer also never lets a block grow past kMaxPayload).
constexpr long kMaxBlockKb = kMaxPayload >> 10;

// Record types.  On disk a record's tag byte holds its type in the low 4
// bits: 0..7 are events (enum jt_probe 0..7; an event's high 4 bits hold its
// thread index + 1 when the index is below 15, else 0 and the index follows
// as a varint), 8..15 the records below.  gc__pause__start/end (probes 8, 9)
// have no tag of their own: from version 2 on, a gc__start/end record starts
// with a byte that says which of the two it is (kGcRecordCollection or
// kGcRecordPause); version 1 records have no such byte and are collections.
// In memory (Record::type) an event's type is its probe (0..JT_PROBE_COUNT-1)
// and the others are the values below: their tag nibble | 0x10.
constexpr uint8_t kTagEvents = 8;  // tag nibbles 0..7 are events
constexpr uint8_t kGcRecordCollection = 0, kGcRecordPause = 1, kGcRecordSafepoint = 2;
// From version 3 on, the stack tag (14) holds a kind in its high 4 bits:
// a stack of frame names (0, as before), a method-table entry, a Java
// stack, or an allocation sample (an event: JT_ALLOC_SAMPLE).
// Version 4 adds a batch of sample fates.
constexpr uint8_t kStackOfNames = 0, kStackMethod = 1, kStackJava = 2, kStackSample = 3, kStackFates = 4;
static_assert(JT_PROBE_COUNT <= 16, "in-memory record types 0x10.. follow the probes");
enum RecordType : uint8_t {
  kThread = 0x18,   // varint index, varint tid, varint len, name
  kClass = 0x19,    // varint id, varint len, name         (ids 0, 1, 2, ... in order)
  kString = 0x1a,   // varint id, varint len, text         (GC names and causes)
  kLost = 0x1b,     // ts delta, varint count: events lost since the last kLost of its kind
                    // (the kind, enum LostKind, in the tag's high 4 bits)
  kMeta = 0x1c,     // varint len, "key=value\n" lines, values escaped (meta_escape)
  kEnd = 0x1d,      // ts delta, varint reason, varint events, varint lost, varint len, text
  kStack = 0x1e,    // varint id, varint n, n x varint string id: a call stack, leaf first
  kEventStack = 0x1f,  // varint stack id + 1 (0: none captured): the preceding event's stack
  // Version 3, on the stack tag with a kind in its high bits (kStackMethod,
  // kStackJava); ids 0, 1, 2, ... in order, each its own table.
  kMethod = 0x2e,   // varint id, varint class id + 1, varint name string id,
                    // varint signature string id + 1, varint file string id + 1
  kJavaStack = 0x3e,  // varint id, varint n, n x (varint method id, varint line, byte kind)
  // Version 4: ts delta, varint gc id, varint level, varint tracked, varint n,
  // n x (varint sample id, byte kind, byte flags, varint gc id)
  kFates = 0x4e,
};
// The tag nibble of a non-event record type.
constexpr uint8_t tag_of(RecordType t) { return static_cast<uint8_t>(t & 0x0f); }

// A frame of a Java stack (kJavaStack): what ran it.  0..4 are the VM's own
// (enum jvmtrace_frame_kind in jvmtrace_abi.h, checked in codec.cpp); the
// rest are user space's: C++ code of the VM (libjvm.so, named from its
// ELF symbols), and a frame that could not be named.
enum FrameKind : uint8_t {
  kFrameInterpreted = 0,   // async-profiler's _[0]
  kFrameC1 = 1,            // _[1]
  kFrameJit = 2,           // C2 (or another optimizing compiler): _[j]
  kFrameInlined = 3,       // inlined into the frame below it: _[i]
  kFrameNativeMethod = 4,  // a Java native method (JNI)
  kFrameVm = 5,            // the VM's own C++ code
  kFrameKindCount,
};
const char* frame_kind_name(uint8_t kind);  // "interpreted", "c1", "jit", ...
const char* frame_kind_suffix(uint8_t kind);  // "_[0]", "_[1]", "_[j]", "_[i]", "" (flame graphs)
struct Frame {
  uint64_t method = 0;  // method table id
  uint64_t line = 0;    // source line, 0 when unknown
  uint8_t kind = 0;     // enum FrameKind
  bool operator==(const Frame& o) const { return method == o.method && line == o.line && kind == o.kind; }
  bool operator<(const Frame& o) const {
    return method != o.method ? method < o.method : line != o.line ? line < o.line : kind < o.kind;
  }
};
// A method-table entry: where a frame's code comes from.
struct Method {
  uint64_t klass = 0;      // class id + 1 (JVM form, "java/util/ArrayList"); 0: none (VM code)
  uint64_t name = 0;       // string id: "grow"; for VM code the C++ symbol
  uint64_t signature = 0;  // string id + 1: "(I)[Ljava/lang/Object;"; 0: none
  uint64_t file = 0;       // string id + 1: "ArrayList.java"; 0: none
  bool operator==(const Method& o) const {
    return klass == o.klass && name == o.name && signature == o.signature && file == o.file;
  }
};
constexpr uint64_t kMaxJavaFrames = 1024;
// The method-table entry of a frame whose method could not be named (its
// class was unloaded, or the JVM had exited, before the recorder read it):
// no class, this name, kind as the VM said.
constexpr const char* kUnknownMethodName = "[unknown method]";  // a reader rejects longer Java stacks as corrupt

// Why events were lost (a kLost record's tag holds it in its high 4 bits;
// a reader that predates the kinds reads every kind as kernel drops).
enum LostKind : uint8_t {
  kLostRingBuffer = 0,    // the kernel found the ring buffer full
  kLostMalformed = 1,     // a ring-buffer record too short or not a jt_event
  kLostGcEndUnpaired = 2, // stock mode: a GC end whose start was not seen
  kLostNameTableFull = 3, // its thread, class or GC name would have taken the recorder's
                          // name tables past their cap (a JVM that floods new names)
  kLostLeftUnread = 4,    // ring-buffer records still unread when the recording had to end
                          // (a JVM that sends faster than the recorder reads: its budget)
  kLostKindCount,
};
// Machine names ("ring_buffer_full", ...) and words for a person.
const char* lost_kind_name(uint8_t kind);
const char* lost_kind_text(uint8_t kind);
// Whether a text output names this cause also when nothing was lost to it:
// the first three always (a reader of the line need not guess), the rarer
// ones once they happened.
inline bool lost_kind_always_shown(uint8_t kind) { return kind <= kLostGcEndUnpaired; }

// Meta values are escaped (version 2 of the meta record, jvmtrace_version=2
// as its first line): "\\" for a backslash, "\n" for a newline, so a value
// (a target's command line) cannot end its line and forge a later key.
std::string meta_escape(const std::string& value);
std::string meta_unescape(const std::string& value);
// The meta record's (key, value) pairs in order, values unescaped when the
// record is version 2 or later (older traces hold them as written).
std::vector<std::pair<std::string, std::string>> parse_meta(const std::string& text);
constexpr int kMetaVersion = 2;

// Why a recording ended (kEnd).
enum EndReason : uint8_t {
  kEndUser = 0,        // Ctrl-C / SIGTERM
  kEndDuration = 1,    // -d elapsed
  kEndTargetExit = 2,  // the traced process exited
  kEndError = 3,       // e.g. reading the ring buffer failed
  kEndRotated = 4,     // the recording goes on in the next segment file
  kEndReasonCount,
};
const char* end_reason_name(uint8_t reason);

// One probe hit as the trace holds it.  a[] is jt_event.args with strings
// replaced by table ids: tlab__refill a[3] and alloc__slow__enter a[1] are
// class ids, gc__start/end and gc__pause__start/end a[1] and a[2] string ids; the class-name lengths
// (tlab__refill a[4], alloc__slow__enter a[2]) are not stored and read 0.
struct Event {
  uint64_t ts_ns = 0;
  uint32_t thread = 0;  // index into the thread table
  uint16_t probe = 0;   // enum jt_probe
  uint64_t a[JT_EVENT_MAX_ARGS] = {};
};

// What became of tracked samples (sample__fates): a batch.  An allocation
// sample (JT_ALLOC_SAMPLE) holds its sample id in a[5] (0: not tracked).
struct Fate {
  uint64_t sample_id = 0;
  uint32_t gc_id = 0;
  uint8_t kind = 0;   // enum jvmtrace_fate_kind
  uint8_t flags = 0;  // JVMTRACE_FATE_*
};
constexpr uint64_t kMaxFatesPerRecord = 2048;  // a reader rejects more as corrupt
struct Fates {
  uint64_t ts_ns = 0;
  uint64_t gc_id = 0;    // the collection whose weak processing last reported deaths
  uint64_t level = 0;    // the table's thinning level after the batch
  uint64_t tracked = 0;  // entries in the VM's table after the batch
  std::vector<Fate> records;
};

// What each slot of Event::a is, per probe, for printing.
// kJavaStackId: a Java stack id + 1 (0: none).
enum ArgKind : uint8_t { kNum, kHex, kClassId, kStringId, kUnused, kJavaStackId };
struct ProbeInfo {
  const char* name;
  int nargs;
  const char* arg_names[JT_EVENT_MAX_ARGS];
  ArgKind kinds[JT_EVENT_MAX_ARGS];
};
const ProbeInfo& probe_info(uint16_t probe);

// gc__start/end's kind, gc__pause__start/end's kind and alloc__slow__exit's
// outcome, in words.
// The values are usdt/jvmtrace_abi.h's (included through jvmtrace_events.h).
inline const char* gc_kind_name(uint64_t k) {
  switch (k) {
    case JVMTRACE_GC_YOUNG: return "young";
    case JVMTRACE_GC_FULL: return "full";
    case JVMTRACE_GC_CONCURRENT: return "concurrent";
  }
  return "?";
}
inline const char* pause_kind_name(uint64_t k) {
  switch (k) {
    case JVMTRACE_PAUSE_YOUNG: return "young";
    case JVMTRACE_PAUSE_FULL: return "full";
    case JVMTRACE_PAUSE_REMARK: return "remark";
    case JVMTRACE_PAUSE_CLEANUP: return "cleanup";
    case JVMTRACE_PAUSE_CONCURRENT: return "concurrent";
    case JVMTRACE_PAUSE_CONCURRENT_OLD: return "concurrent_old";
    case JVMTRACE_PAUSE_DEGENERATED: return "degenerated";
  }
  return "?";
}
// A pause as -Xlog:gc titles it: HotSpot's title, then its cause in
// parentheses unless the title has it already (G1's young title does from
// JDK 21 on: "Pause Young (Normal) (G1 Evacuation Pause)", where the probe
// still reports the cause on its own).
inline std::string pause_title(const std::string& name, const std::string& cause) {
  if (cause.empty() || name.find(" (" + cause + ")") != std::string::npos) return name;
  return name + " (" + cause + ")";
}
// An allocation sample's weight over its object's size: the objects it
// stands for (at least 1), as pprof's alloc_objects counts them.
inline uint64_t sample_objects(uint64_t weight_bytes, uint64_t alloc_bytes) {
  const uint64_t n = alloc_bytes ? (weight_bytes + alloc_bytes / 2) / alloc_bytes : 1;
  return n ? n : 1;
}
inline const char* slow_outcome_name(uint64_t o) {
  switch (o) {
    case JVMTRACE_SLOW_FAILED: return "failed";
    case JVMTRACE_SLOW_NEW_TLAB: return "new_tlab";
    case JVMTRACE_SLOW_OUTSIDE_TLAB: return "outside_tlab";
    case JVMTRACE_SLOW_NEW_TLAB_AFTER_GC: return "new_tlab_after_gc";
    case JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC: return "outside_tlab_after_gc";
    case JVMTRACE_SLOW_CURRENT_TLAB: return "current_tlab";
  }
  return "unknown";
}

}  // namespace jvmtrace::trace
