#include "trace/reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "trace/crc32c.h"

namespace jvmtrace::trace {

namespace {

uint32_t le32(const uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint64_t le64(const uint8_t* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }

bool check_file_header(const uint8_t* h, size_t n, std::string* error, uint32_t* version) {
  if (n < kFileHeaderSize) {
    *error = "not a jvmtrace trace: " + std::to_string(n) + " bytes, shorter than the 16-byte file header";
    return false;
  }
  if (std::memcmp(h, kFileMagic, 8) != 0) {
    *error = "not a jvmtrace trace: the file does not start with \"JVMTRACE\"";
    return false;
  }
  if (le32(h + 8) < kOldestVersion || le32(h + 8) > kVersion) {
    *error = "trace format version " + std::to_string(le32(h + 8)) + " is not supported (this jvmtrace reads " +
             std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")";
    return false;
  }
  *version = le32(h + 8);
  return true;
}

}  // namespace

std::string ReadStatus::describe() const {
  switch (kind) {
    case kComplete:
      return "complete";
    case kNoEnd:
      return "no end record: the recording did not stop cleanly (killed?); every block is intact";
    case kTruncated:
      return "cut off at offset " + std::to_string(offset) + ": " + what +
             "; everything before that offset is intact";
    case kCorrupt:
      return "corrupt at offset " + std::to_string(offset) + ": " + what + "; reading stopped there";
  }
  return "?";
}

TraceReader::~TraceReader() {
  if (file_) std::fclose(file_);
}

bool TraceReader::open(const std::string& path, std::string* error) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fileno(file_), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      *error = path + " is a directory";
      return false;
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  uint8_t h[kFileHeaderSize];
  const size_t n = fetch(h, sizeof h);
  if (!check_file_header(h, n, error, &version_)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool TraceReader::open_memory(const uint8_t* data, size_t size, std::string* error) {
  mem_ = data;
  mem_size_ = size_ = size;
  mem_pos_ = 0;
  uint8_t h[kFileHeaderSize];
  return check_file_header(h, fetch(h, sizeof h), error, &version_);
}

size_t TraceReader::fetch(uint8_t* dst, size_t n) {
  if (file_) return std::fread(dst, 1, n, file_);
  const size_t k = n < mem_size_ - mem_pos_ ? n : mem_size_ - mem_pos_;
  if (k) std::memcpy(dst, mem_ + mem_pos_, k);  // dst may be null when k == 0
  mem_pos_ += k;
  return k;
}

std::string TraceReader::meta_value(const std::string& key) const {
  for (const auto& [k, v] : meta_fields_)
    if (k == key) return v;  // the first: a later line with the same key is not the recorder's
  return {};
}

// References must point at definitions made before them.
bool TraceReader::check_record(const Record& r, std::string* why) const {
  if (r.type < JT_PROBE_COUNT) {
    const Event& e = r.event;
    if (e.thread >= threads_.size()) {
      *why = "an event of undefined thread index " + std::to_string(e.thread);
      return false;
    }
    const ProbeInfo& info = probe_info(e.probe);
    for (int i = 0; i < info.nargs; i++) {
      if (info.kinds[i] == kClassId && e.a[i] >= classes_.size()) {
        *why = "an event of undefined class id " + std::to_string(e.a[i]);
        return false;
      }
      if (info.kinds[i] == kStringId && e.a[i] >= strings_.size()) {
        *why = "an event of undefined string id " + std::to_string(e.a[i]);
        return false;
      }
      if (info.kinds[i] == kJavaStackId && e.a[i] > java_stacks_.size()) {
        *why = "an event of undefined Java stack id " + std::to_string(e.a[i] - 1);
        return false;
      }
    }
    return true;
  }
  if (r.type == kMethod) {
    const Method& m = r.method;
    if (m.klass > classes_.size() || m.name >= strings_.size() || m.signature > strings_.size() ||
        m.file > strings_.size()) {
      *why = "a method of an undefined class or string";
      return false;
    }
    if (r.id != methods_.size()) {
      *why = "a method with id " + std::to_string(r.id) + " where " + std::to_string(methods_.size()) + " was due";
      return false;
    }
    return true;
  }
  if (r.type == kJavaStack) {
    for (const Frame& f : r.java_frames)
      if (f.method >= methods_.size()) {
        *why = "a Java stack frame of undefined method id " + std::to_string(f.method);
        return false;
      }
    if (r.id != java_stacks_.size()) {
      *why = "a Java stack with id " + std::to_string(r.id) + " where " + std::to_string(java_stacks_.size()) +
             " was due";
      return false;
    }
    return true;
  }
  if (r.type == kStack) {
    for (uint64_t f : r.frames)
      if (f >= strings_.size()) {
        *why = "a stack frame of undefined string id " + std::to_string(f);
        return false;
      }
  }
  if (r.type == kEventStack && r.id > stacks_.size()) {
    *why = "an event of undefined stack id " + std::to_string(r.id - 1);
    return false;
  }
  const size_t expected = r.type == kThread ? threads_.size() : r.type == kClass ? classes_.size()
                          : r.type == kString ? strings_.size() : r.type == kStack ? stacks_.size() : r.id;
  if (r.type == kStack && r.id < stacks_.size()) return true;  // a rename
  if (r.id != expected && (r.type == kThread || r.type == kClass || r.type == kString || r.type == kStack)) {
    *why = "a table entry with id " + std::to_string(r.id) + " where " + std::to_string(expected) + " was due";
    return false;
  }
  return true;
}

ReadStatus TraceReader::read(const RecordFn& fn) {
  ReadStatus st;
  uint64_t offset = kFileHeaderSize;
  uint32_t seq = 0;
  bool ended = false;
  std::vector<uint8_t> payload;
  std::vector<Record> records;
  BlockCodec codec;
  codec.set_version(version_);
  for (;;) {
    uint8_t h[kBlockHeaderSize];
    const size_t n = fetch(h, sizeof h);
    if (n == 0) break;
    if (n < sizeof h) {
      st = {ReadStatus::kTruncated, offset, "a block header is cut off (" + std::to_string(n) + " of 28 bytes)"};
      return st;
    }
    if (std::memcmp(h, kBlockMagic, 4) != 0) return {ReadStatus::kCorrupt, offset, "no block magic \"JTBK\""};
    if (ended) return {ReadStatus::kCorrupt, offset, "a block after the end record"};
    if (le32(h + 4) != seq)
      return {ReadStatus::kCorrupt, offset,
              "block sequence number " + std::to_string(le32(h + 4)) + ", expected " + std::to_string(seq) +
                  " (a block is missing or out of place)"};
    const uint32_t len = le32(h + 8), nrecords = le32(h + 12);
    if (len > kMaxPayload)
      return {ReadStatus::kCorrupt, offset, "block length " + std::to_string(len) + " exceeds the format's limit"};
    if (nrecords > len) return {ReadStatus::kCorrupt, offset, "more records than payload bytes"};
    payload.resize(len);
    const size_t got = fetch(payload.data(), len);
    if (got < len)
      return {ReadStatus::kTruncated, offset,
              "block " + std::to_string(seq) + " is cut off (" + std::to_string(got) + " of " + std::to_string(len) +
                  " payload bytes)"};
    uint32_t crc = crc32c(0, h + 4, 20);
    crc = crc32c(crc, payload.data(), len);
    if (crc != le32(h + 24)) return {ReadStatus::kCorrupt, offset, "block " + std::to_string(seq) + " fails its CRC32C"};

    // Decode the whole block before handing out any of it.
    codec.reset();
    codec.set_base_ts(le64(h + 16));
    records.clear();
    const uint8_t* p = payload.data();
    const uint8_t* end = p + len;
    const size_t threads0 = threads_.size(), classes0 = classes_.size(), strings0 = strings_.size(),
                 stacks0 = stacks_.size(), methods0 = methods_.size(), java_stacks0 = java_stacks_.size();
    std::vector<std::pair<uint64_t, std::vector<uint64_t>>> renamed;  // (id, frames before) of this block's renames
    auto bad = [&](const std::string& why) {
      threads_.resize(threads0);  // definitions of a rejected block do not count
      classes_.resize(classes0);
      strings_.resize(strings0);
      stacks_.resize(stacks0);
      methods_.resize(methods0);
      java_stacks_.resize(java_stacks0);
      for (auto it = renamed.rbegin(); it != renamed.rend(); ++it) stacks_[it->first] = it->second;  // undo renames
      return ReadStatus{ReadStatus::kCorrupt,
                        offset + kBlockHeaderSize + static_cast<uint64_t>(p - payload.data()), why};
    };
    while (p < end) {
      Record r;
      const char* why = nullptr;
      if (records.size() == nrecords) return bad("more records than the block header says");
      const uint8_t* start = p;
      codec.set_threads_defined(threads_.size());
      if (!codec.get(&p, end, &r, &why)) return bad(why);
      r.bytes = static_cast<uint32_t>(p - start);
      r.offset = offset + kBlockHeaderSize + static_cast<uint64_t>(start - payload.data());
      std::string bad_ref;
      if (!check_record(r, &bad_ref)) return bad(bad_ref);
      if (r.type == kThread) threads_.push_back({static_cast<uint32_t>(r.tid), r.text});
      else if (r.type == kClass) classes_.push_back(r.text);
      else if (r.type == kString) strings_.push_back(r.text);
      else if (r.type == kStack && r.id < stacks_.size()) {
        if (r.id < stacks0) renamed.emplace_back(r.id, stacks_[r.id]);
        stacks_[r.id] = r.frames;
      } else if (r.type == kStack) {
        stacks_.push_back(r.frames);
      } else if (r.type == kMethod) {
        methods_.push_back(r.method);
      } else if (r.type == kJavaStack) {
        java_stacks_.push_back(r.java_frames);
      }
      else if (r.type == kEnd) {
        if (ended) return bad("a second end record");
        ended = true;
      }
      records.push_back(std::move(r));
    }
    if (records.size() != nrecords)
      return bad("the block header says " + std::to_string(nrecords) + " records, the payload holds " +
                 std::to_string(records.size()));
    // Tables are complete for the whole block now; a record's callback may
    // see definitions that follow it in the same block, which is harmless.
    for (const Record& r : records) {
      if (r.type == kMeta) {
        meta_ = r.text;
        meta_fields_ = parse_meta(r.text);
      }
      fn(r, offset);
    }
    blocks_++;
    seq++;
    offset += kBlockHeaderSize + len;
  }
  if (!ended) return {ReadStatus::kNoEnd, offset, ""};
  return st;
}

}  // namespace jvmtrace::trace
