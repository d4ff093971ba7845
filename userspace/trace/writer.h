// Writing a trace file: records go into a block in memory; a full or old
// block is checksummed and written with one write().  A write error (a full
// disk) cuts the file back to its last complete block and makes the writer
// refuse further records: what was written stays readable.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/new_file.h"
#include "trace/codec.h"

namespace jvmtrace::trace {

class TraceWriter {
 public:
  TraceWriter() = default;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();

  // Creates path and writes the file header.  Never follows a symlink at
  // path nor writes into a file that exists: a new name is created with
  // O_CREAT|O_EXCL|O_NOFOLLOW.  An existing regular file is an error unless
  // replace; then the trace is written to a new temporary file in the same
  // directory, which commit() renames over path (until then the old file is
  // untouched, and discard() removes the temporary).  A symlink or anything
  // but a regular file at path is always an error.
  bool open(const std::string& path, std::string* error, bool replace = false);
  // Puts the file at its name (a no-op unless open() made a temporary).
  bool commit(std::string* error);
  // Closes and removes the file this writer created (an aborted recording).
  void discard();
  // Removes name, a file this writer wrote earlier (an old segment), in the
  // directory it writes into; false with errno.
  bool remove_file(const std::string& path);

  // Table entries: ids are given out in order.  A definition goes into the
  // current block, before any record that uses it.
  uint32_t define_thread(uint32_t tid, const std::string& name);
  uint32_t define_class(const std::string& name);
  uint32_t define_string(const std::string& text);
  void meta(const std::string& lines);
  // A call stack (string ids of its frames, leaf first); ids 0, 1, 2, ...
  uint32_t define_stack(const std::vector<uint64_t>& frames);
  // Renames stack id (its frames named better, e.g. JIT code the perf map
  // named since): readers use the latest frames for every event of the id.
  void redefine_stack(uint32_t id, const std::vector<uint64_t>& frames);
  // The stack of the event just written (stack id, or -1: none captured).
  void event_stack(int64_t stack);
  // Method-table and Java-stack entries (version 3): ids 0, 1, 2, ... each.
  // An allocation sample (an event) names its Java stack by id + 1.
  uint32_t define_method(const Method& m);
  uint32_t define_java_stack(const std::vector<Frame>& frames);

  void event(const Event& e);
  void lost(uint64_t ts_ns, uint64_t count, uint8_t kind = kLostRingBuffer);
  // Sample fates (version 4): a sample__fates batch.
  void fates(const Fates& f);

  // Holding events: from hold() on, event() and event_stack() queue what
  // they are given, and fates() its batches (definitions and losses still go out at once),
  // except inside a Bypass; release() writes the queue in order and stops
  // holding.  The recorder holds what follows a safepoint's begin until the
  // records the safepoint took arrive (alloc__batch), so the file keeps
  // every slow path before the pauses after it.
  void hold() { holding_ = true; }
  void release();
  // While holding: events (in ts_ns order) go among the held records, each
  // before the first held event or fates batch later than it (a stack stays
  // after its event).  A safepoint's PLAB records, handed over after it, go
  // back into their pause this way.
  void hold_in_order(const std::vector<Event>& events);
  bool holding() const { return holding_; }
  size_t held() const { return held_.size(); }
  class Bypass {
   public:
    explicit Bypass(TraceWriter* w) : w_(w), was_(w->holding_) { w_->holding_ = false; }
    ~Bypass() { w_->holding_ = was_; }
    Bypass(const Bypass&) = delete;
    Bypass& operator=(const Bypass&) = delete;
   private:
    TraceWriter* w_;
    bool was_;
  };
  void end(uint64_t ts_ns, uint8_t reason, const std::string& text);

  // Writes the block if it holds at least block_bytes or its first record is
  // older than max_age_ns (monotonic now_ns); flush() writes it regardless.
  // False once writing has failed (see error()).
  bool maybe_flush(uint64_t now_ns);
  bool flush();
  bool close();

  // Ends this file (an end record saying the recording goes on) and goes on
  // in a new one at path, which starts with the meta record and every table
  // entry so far: each segment reads on its own.  False with error() set.
  bool rotate(const std::string& path, uint64_t ts_ns);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t events() const { return events_; }
  uint64_t lost_total() const { return lost_; }
  uint64_t lost_of(uint8_t kind) const { return kind < kLostKindCount ? lost_by_kind_[kind] : 0; }
  uint64_t bytes() const { return offset_ + payload_.size() + (records_ ? kBlockHeaderSize : 0); }
  uint64_t bytes_on_disk() const { return offset_; }  // of the current file
  uint64_t bytes_total() const { return earlier_bytes_ + offset_; }
  uint64_t blocks() const { return seq_; }
  uint64_t sync_ns() const { return sync_ns_ + file_.sync_ns(); }  // spent in fdatasync/fsync so far
  size_t largest_payload() const { return largest_payload_; }

  uint64_t block_bytes = 256 << 10;
  uint64_t max_age_ns = 1000000000;

 private:
  void record_added(uint64_t now_ns);
  // Writes the block first if a record of up to kMaxRecordBytes might not fit
  // into kMaxPayload: no block is ever one the reader refuses.
  void make_room();
  bool open_file(const std::string& path, std::string* error, bool replace);

  NewFile file_;  // the file being written, its directory, the temporary (replace)
  std::string path_, error_, payload_;
  BlockCodec codec_;
  uint32_t seq_ = 0, records_ = 0, threads_ = 0, classes_ = 0, strings_ = 0;
  uint64_t offset_ = 0, events_ = 0, lost_ = 0, block_born_ns_ = 0, earlier_bytes_ = 0, sync_ns_ = 0;
  uint64_t lost_by_kind_[kLostKindCount] = {};
  size_t largest_payload_ = 0;
  // What a new segment must repeat.
  std::string meta_;
  std::vector<std::pair<uint32_t, std::string>> thread_defs_;
  std::vector<std::string> class_defs_, string_defs_;
  std::vector<std::vector<uint64_t>> stack_defs_;
  std::vector<Method> method_defs_;
  std::vector<std::vector<Frame>> java_stack_defs_;
  // Held events, in order: an event, or (is_stack) the stack of the one before.
  // A held record: an event, the stack of the event before it, or a fates
  // batch (fates: its index in held_fates_ + 1).
  struct Held {
    bool is_stack;
    int64_t stack;
    Event event;
    size_t fates = 0;
  };
  bool holding_ = false;
  std::vector<Held> held_;
  std::vector<Fates> held_fates_;
};

}  // namespace jvmtrace::trace
