// Encoding and decoding of the records inside one trace block: the delta
// state both sides keep, in one place so the two cannot drift apart.
// Framing (block headers, checksums, files) is trace_writer / trace_reader.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trace/format.h"

namespace jvmtrace::trace {

// Any one record of a payload, decoded.
struct Record {
  uint8_t type = 0;       // 0..7: an event (probe); else RecordType
  Event event;            // events
  uint64_t ts_ns = 0;     // events, kLost, kEnd
  uint64_t id = 0;        // kThread index, kClass / kString id, kEnd reason, kLost kind
  uint64_t tid = 0;       // kThread
  uint64_t count = 0;     // kLost count, kEnd events
  uint64_t lost = 0;      // kEnd
  std::string text;       // names, kMeta lines, kEnd text
  std::vector<uint64_t> frames;  // kStack: string ids, leaf first
  Method method;                 // kMethod (id: its id)
  std::vector<Frame> java_frames;  // kJavaStack (id: its id), leaf first
  Fates fates;                     // kFates (ts_ns too)
  uint32_t bytes = 0;     // its encoded size (set by TraceReader)
  uint64_t offset = 0;    // its first byte in the file (set by TraceReader)
};

// The state of one block; reset() at every block start on both sides.
class BlockCodec {
 public:
  void reset();

  // Appends a record to out.
  void put_event(std::string* out, const Event& e);
  void put_lost(std::string* out, uint64_t ts_ns, uint64_t count, uint8_t kind = kLostRingBuffer);
  void put_end(std::string* out, uint64_t ts_ns, uint8_t reason, uint64_t events, uint64_t lost,
               const std::string& text);
  static void put_thread(std::string* out, uint32_t index, uint32_t tid, const std::string& name);
  static void put_name(std::string* out, RecordType type, uint64_t id, const std::string& name);
  static void put_meta(std::string* out, const std::string& lines);
  static void put_stack(std::string* out, uint64_t id, const std::vector<uint64_t>& frames);
  static void put_event_stack(std::string* out, uint64_t stack_plus_one);
  static void put_method(std::string* out, uint64_t id, const Method& m);
  static void put_java_stack(std::string* out, uint64_t id, const std::vector<Frame>& frames);
  void put_fates(std::string* out, const Fates& f);

  // Decodes the record at *p (advanced past it).  On malformed input returns
  // false with *why set; *p then points at the record's first byte.
  bool get(const uint8_t** p, const uint8_t* end, Record* r, const char** why);

  // The first timestamp of the block (0 until a timed record is put or got).
  uint64_t base_ts() const { return base_ts_; }
  // The file format version being read or written (kVersion unless a
  // reader says otherwise): version 1 GC records lack the collection/pause byte.
  void set_version(uint32_t v) { version_ = v; }
  void set_base_ts(uint64_t ts) { base_ts_ = prev_ts_ = ts; have_ts_ = true; }
  // Reading: how many threads the trace has defined so far.  An event of a
  // later index is rejected before any per-thread state exists for it (a
  // hostile index must not make the decoder allocate for four billion).
  void set_threads_defined(uint64_t n) { threads_defined_ = n; }

 private:
  uint32_t version_ = kVersion;
  struct ThreadState {
    uint32_t gen = 0;
    uint64_t tlab_bytes = 0, refill_start = 0, enter_bytes = 0, enter_class = 0;
    uint64_t plab_start[2] = {}, plab_end[2] = {}, plab_bytes[2] = {};
  };
  ThreadState& thread(uint32_t index);
  void put_ts(std::string* out, uint64_t ts);
  void put_gc_dest(std::string* out, uint64_t gc_id, uint64_t dest);
  bool get_gc_dest(const uint8_t** p, const uint8_t* end, uint64_t* gc_id, uint64_t* dest);

  uint32_t gen_ = 1;
  bool have_ts_ = false;
  uint64_t base_ts_ = 0, prev_ts_ = 0;
  uint64_t tlab_end_ = 0, gc_id_ = 0, heap_used_ = 0, heap_committed_ = 0, promote_end_ = 0, safepoint_id_ = 0;
  std::vector<ThreadState> threads_;
  uint64_t threads_defined_ = UINT64_MAX;  // writing: its own indices
};

// Names longer than this are cut when written and rejected when read.
constexpr uint64_t kMaxNameLen = 4096;
constexpr uint64_t kMaxMetaLen = 1 << 16;
// The largest record the writer can put (a meta record of kMaxMetaLen): a
// block is written before a record could take it past kMaxPayload.
constexpr size_t kMaxRecordBytes = 1 + 10 + kMaxMetaLen;
static_assert(1 + 10 + 10 + 10 * kMaxStackFrames <= kMaxRecordBytes, "a stack record fits the margin");
static_assert(1 + 10 + 10 + 21 * kMaxJavaFrames <= kMaxRecordBytes, "a Java stack record fits the margin");
static_assert(1 + 4 * 10 + 10 + kMaxNameLen <= kMaxRecordBytes, "a name or end record fits the margin");
static_assert(1 + 10 + 40 + 22 * kMaxFatesPerRecord <= kMaxRecordBytes, "a fates record fits the margin");
static_assert(kMaxRecordBytes * 4 < kMaxPayload, "a block holds several of the largest records");

}  // namespace jvmtrace::trace
