#include "trace/writer.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "trace/crc32c.h"

namespace jvmtrace::trace {

namespace {

void put_le32(char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<char>(v >> (8 * i));
}
void put_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<char>(v >> (8 * i));
}

// Writes all of buf; false with errno on failure.
bool write_all(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

TraceWriter::~TraceWriter() { close(); }

bool TraceWriter::open(const std::string& path, std::string* error, bool replace) {
  return open_file(path, error, replace);
}

// base/new_file.h creates the file: relative to its directory, opened once
// (segments, the temporary, the rename and old segments' removal all go
// through it), never through a name someone planted.
bool TraceWriter::open_file(const std::string& path, std::string* error, bool replace) {
  path_ = path;
  if (!file_.create(path, replace, error)) return false;
  char h[kFileHeaderSize];
  std::memcpy(h, kFileMagic, 8);
  put_le32(h + 8, kVersion);
  put_le32(h + 12, 0);
  if (!write_all(file_.fd(), h, sizeof h)) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    discard();
    return false;
  }
  offset_ = kFileHeaderSize;
  codec_.reset();
  // The new name on disk before anything relies on it (an older segment's removal).
  if (!file_.replacing() && !file_.sync_dir(error)) {
    discard();
    return false;
  }
  return true;
}

bool TraceWriter::commit(std::string* error) { return file_.commit(error); }

void TraceWriter::discard() {
  file_.discard();
  if (error_.empty()) error_ = "discarded";
}

bool TraceWriter::remove_file(const std::string& path) { return file_.remove(path); }

void TraceWriter::make_room() {
  if (records_ && payload_.size() + kMaxRecordBytes > kMaxPayload) flush();
}

void TraceWriter::record_added(uint64_t now_ns) {
  if (records_++ == 0) block_born_ns_ = now_ns ? now_ns : monotonic_ns();
}

uint32_t TraceWriter::define_thread(uint32_t tid, const std::string& name) {
  make_room();
  thread_defs_.emplace_back(tid, name);
  BlockCodec::put_thread(&payload_, threads_, tid, name);
  record_added(0);
  return threads_++;
}

uint32_t TraceWriter::define_class(const std::string& name) {
  make_room();
  class_defs_.push_back(name);
  BlockCodec::put_name(&payload_, kClass, classes_, name);
  record_added(0);
  return classes_++;
}

uint32_t TraceWriter::define_string(const std::string& text) {
  make_room();
  string_defs_.push_back(text);
  BlockCodec::put_name(&payload_, kString, strings_, text);
  record_added(0);
  return strings_++;
}

uint32_t TraceWriter::define_stack(const std::vector<uint64_t>& frames) {
  make_room();
  stack_defs_.push_back(frames);
  if (stack_defs_.back().size() > kMaxStackFrames) stack_defs_.back().resize(kMaxStackFrames);  // never more than a reader takes
  BlockCodec::put_stack(&payload_, stack_defs_.size() - 1, stack_defs_.back());
  record_added(0);
  return static_cast<uint32_t>(stack_defs_.size() - 1);
}

void TraceWriter::redefine_stack(uint32_t id, const std::vector<uint64_t>& frames) {
  if (failed() || id >= stack_defs_.size()) return;
  make_room();
  stack_defs_[id] = frames;
  if (stack_defs_[id].size() > kMaxStackFrames) stack_defs_[id].resize(kMaxStackFrames);
  BlockCodec::put_stack(&payload_, id, stack_defs_[id]);
  record_added(0);
}

void TraceWriter::event_stack(int64_t stack) {
  if (failed()) return;
  if (holding_) {
    held_.push_back(Held{true, stack, Event{}});
    return;
  }
  make_room();
  BlockCodec::put_event_stack(&payload_, static_cast<uint64_t>(stack + 1));
  record_added(0);
}

uint32_t TraceWriter::define_method(const Method& m) {
  make_room();
  method_defs_.push_back(m);
  BlockCodec::put_method(&payload_, method_defs_.size() - 1, m);
  record_added(0);
  return static_cast<uint32_t>(method_defs_.size() - 1);
}

uint32_t TraceWriter::define_java_stack(const std::vector<Frame>& frames) {
  make_room();
  java_stack_defs_.push_back(frames);
  if (java_stack_defs_.back().size() > kMaxJavaFrames) java_stack_defs_.back().resize(kMaxJavaFrames);
  BlockCodec::put_java_stack(&payload_, java_stack_defs_.size() - 1, java_stack_defs_.back());
  record_added(0);
  return static_cast<uint32_t>(java_stack_defs_.size() - 1);
}

void TraceWriter::meta(const std::string& lines) {
  make_room();
  meta_ = lines;
  BlockCodec::put_meta(&payload_, lines);
  record_added(0);
}

void TraceWriter::event(const Event& e) {
  if (failed()) return;
  if (holding_) {
    held_.push_back(Held{false, 0, e});
    return;
  }
  make_room();
  codec_.put_event(&payload_, e);
  record_added(e.ts_ns);
  events_++;
  if (payload_.size() >= block_bytes) flush();
}

void TraceWriter::release() {
  holding_ = false;
  std::vector<Held> held;
  std::vector<Fates> held_fates;
  held.swap(held_);
  held_fates.swap(held_fates_);
  for (const Held& h : held) {
    if (h.fates) fates(held_fates[h.fates - 1]);
    else if (h.is_stack) event_stack(h.stack);
    else event(h.event);
  }
}

void TraceWriter::hold_in_order(const std::vector<Event>& events) {
  if (failed() || events.empty()) return;
  std::vector<Held> merged;
  merged.reserve(held_.size() + events.size());
  size_t j = 0;
  for (const Held& h : held_) {
    if (!h.is_stack) {
      const uint64_t ts = h.fates ? held_fates_[h.fates - 1].ts_ns : h.event.ts_ns;
      while (j < events.size() && events[j].ts_ns < ts) merged.push_back(Held{false, 0, events[j++]});
    }
    merged.push_back(h);
  }
  while (j < events.size()) merged.push_back(Held{false, 0, events[j++]});
  held_.swap(merged);
}

void TraceWriter::fates(const Fates& f) {
  if (failed()) return;
  if (holding_) {  // (a collection's fates after its held gc__start)
    held_fates_.push_back(f);
    held_.push_back(Held{false, 0, Event{}, held_fates_.size()});
    return;
  }
  make_room();
  codec_.put_fates(&payload_, f);
  record_added(f.ts_ns);
  if (payload_.size() >= block_bytes) flush();
}

void TraceWriter::lost(uint64_t ts_ns, uint64_t count, uint8_t kind) {
  if (failed() || count == 0) return;
  make_room();
  codec_.put_lost(&payload_, ts_ns, count, kind);
  record_added(ts_ns);
  lost_ += count;
  if (kind < kLostKindCount) lost_by_kind_[kind] += count;
}

void TraceWriter::end(uint64_t ts_ns, uint8_t reason, const std::string& text) {
  if (failed()) return;
  make_room();
  codec_.put_end(&payload_, ts_ns, reason, events_, lost_, text);
  record_added(ts_ns);
}

bool TraceWriter::maybe_flush(uint64_t now_ns) {
  if (failed()) return false;
  if (records_ && (payload_.size() >= block_bytes || now_ns - block_born_ns_ >= max_age_ns)) return flush();
  return true;
}

bool TraceWriter::flush() {
  if (failed() || file_.fd() < 0) return false;
  if (records_ == 0) return true;
  char h[kBlockHeaderSize];
  std::memcpy(h, kBlockMagic, 4);
  put_le32(h + 4, seq_);
  put_le32(h + 8, static_cast<uint32_t>(payload_.size()));
  put_le32(h + 12, records_);
  put_le64(h + 16, codec_.base_ts());
  uint32_t crc = crc32c(0, h + 4, 20);
  crc = crc32c(crc, payload_.data(), payload_.size());
  put_le32(h + 24, crc);
  // Header and payload in one write: the common case leaves no half block.
  std::string block(h, sizeof h);
  block += payload_;
  if (!write_all(file_.fd(), block.data(), block.size())) {
    const int err = errno;
    error_ = "writing " + path_ + " failed at offset " + std::to_string(offset_) + ": " + std::strerror(err) +
             "; the trace keeps its " + std::to_string(seq_) + " complete blocks (" + std::to_string(offset_) +
             " bytes)";
    if (ftruncate(file_.fd(), static_cast<off_t>(offset_)) != 0) error_ += " (and cutting off the partial block failed)";
    return false;
  }
  offset_ += block.size();
  if (payload_.size() > largest_payload_) largest_payload_ = payload_.size();
  seq_++;
  records_ = 0;
  payload_.clear();
  codec_.reset();
  return true;
}

bool TraceWriter::rotate(const std::string& path, uint64_t ts_ns) {
  if (failed()) return false;
  make_room();
  codec_.put_end(&payload_, ts_ns, kEndRotated, events_, lost_, std::string(end_reason_name(kEndRotated)) + ": " + path);
  record_added(ts_ns);
  if (!flush()) return false;
  // On disk before the caller deletes an older segment (--keep): a crash
  // must not leave neither.  The new file's name is synced by open_file().
  const uint64_t t0 = monotonic_ns();
  const int synced = ::fdatasync(file_.fd());
  sync_ns_ += monotonic_ns() - t0;
  if (synced != 0 && errno != EINVAL) {
    error_ = "syncing " + path_ + ": " + std::strerror(errno);
    return false;
  }
  if (!file_.close_fd()) {
    error_ = "closing " + path_ + ": " + std::strerror(errno);
    return false;
  }
  earlier_bytes_ += offset_;
  seq_ = 0;
  std::string error;
  if (!open_file(path, &error, false)) {
    error_ = error;
    return false;
  }
  // The new segment's first block: meta and every table entry, same ids.
  BlockCodec::put_meta(&payload_, meta_ + "segment_file=" + meta_escape(path) + "\n");
  record_added(0);
  // As many blocks as the tables need (make_room).
  for (uint32_t i = 0; i < thread_defs_.size(); i++) {
    make_room();
    BlockCodec::put_thread(&payload_, i, thread_defs_[i].first, thread_defs_[i].second);
    record_added(0);
  }
  for (uint32_t i = 0; i < class_defs_.size(); i++) {
    make_room();
    BlockCodec::put_name(&payload_, kClass, i, class_defs_[i]);
    record_added(0);
  }
  for (uint32_t i = 0; i < string_defs_.size(); i++) {
    make_room();
    BlockCodec::put_name(&payload_, kString, i, string_defs_[i]);
    record_added(0);
  }
  for (uint32_t i = 0; i < stack_defs_.size(); i++) {
    make_room();
    BlockCodec::put_stack(&payload_, i, stack_defs_[i]);
    record_added(0);
  }
  for (uint32_t i = 0; i < method_defs_.size(); i++) {
    make_room();
    BlockCodec::put_method(&payload_, i, method_defs_[i]);
    record_added(0);
  }
  for (uint32_t i = 0; i < java_stack_defs_.size(); i++) {
    make_room();
    BlockCodec::put_java_stack(&payload_, i, java_stack_defs_[i]);
    record_added(0);
  }
  return true;
}

bool TraceWriter::close() {
  if (file_.fd() < 0) return !failed();
  bool ok = flush();
  if (!file_.close_fd() && ok) {
    error_ = "closing " + path_ + ": " + std::strerror(errno);
    ok = false;
  }
  return ok && !failed();
}

}  // namespace jvmtrace::trace
