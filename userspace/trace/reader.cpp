#include "trace/reader.h"

#include <sys/stat.h>

#include <algorithm>
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

// References must point at definitions made before them; no table may grow
// past the format's caps (a crafted file cannot make a reader grow without
// bound).  t: the tables' sizes so far.
bool TraceReader::check_record(const Record& r, const TableSizes& t, std::string* why) const {
  if (r.type < JT_PROBE_COUNT) {
    const Event& e = r.event;
    if (e.thread >= t.threads) {
      *why = "an event of undefined thread index " + std::to_string(e.thread);
      return false;
    }
    const ProbeInfo& info = probe_info(e.probe);
    for (int i = 0; i < info.nargs; i++) {
      if (info.kinds[i] == kClassId && e.a[i] >= t.classes) {
        *why = "an event of undefined class id " + std::to_string(e.a[i]);
        return false;
      }
      if (info.kinds[i] == kStringId && e.a[i] >= t.strings) {
        *why = "an event of undefined string id " + std::to_string(e.a[i]);
        return false;
      }
      if (info.kinds[i] == kJavaStackId && e.a[i] > t.java_stacks) {
        *why = "an event of undefined Java stack id " + std::to_string(e.a[i] - 1);
        return false;
      }
    }
    return true;
  }
  if (r.type == kMethod) {
    const Method& m = r.method;
    if (m.klass > t.classes || m.name >= t.strings || m.signature > t.strings || m.file > t.strings) {
      *why = "a method of an undefined class or string";
      return false;
    }
    if (r.id != t.methods) {
      *why = "a method with id " + std::to_string(r.id) + " where " + std::to_string(t.methods) + " was due";
      return false;
    }
    if (t.methods >= kMaxTableEntries) {
      *why = "more than " + std::to_string(kMaxTableEntries) + " methods (not a trace jvmtrace writes)";
      return false;
    }
    return true;
  }
  if (r.type == kJavaStack) {
    for (const Frame& f : r.java_frames)
      if (f.method >= t.methods) {
        *why = "a Java stack frame of undefined method id " + std::to_string(f.method);
        return false;
      }
    if (r.id != t.java_stacks) {
      *why = "a Java stack with id " + std::to_string(r.id) + " where " + std::to_string(t.java_stacks) + " was due";
      return false;
    }
    if (t.java_stacks >= kMaxTableEntries || t.java_frames + r.java_frames.size() > kMaxTableFrames) {
      *why = "more than " + std::to_string(kMaxTableEntries) + " Java stacks or " + std::to_string(kMaxTableFrames) +
             " of their frames (not a trace jvmtrace writes)";
      return false;
    }
    return true;
  }
  if (r.type == kStack) {
    for (uint64_t f : r.frames)
      if (f >= t.strings) {
        *why = "a stack frame of undefined string id " + std::to_string(f);
        return false;
      }
  }
  if (r.type == kEventStack && r.id > t.stacks) {
    *why = "an event of undefined stack id " + std::to_string(r.id - 1);
    return false;
  }
  const uint64_t expected = r.type == kThread ? t.threads : r.type == kClass ? t.classes
                            : r.type == kString ? t.strings : r.type == kStack ? t.stacks : r.id;
  if (r.type == kStack && r.id < t.stacks) return true;  // a rename
  if (r.id != expected && (r.type == kThread || r.type == kClass || r.type == kString || r.type == kStack)) {
    *why = "a table entry with id " + std::to_string(r.id) + " where " + std::to_string(expected) + " was due";
    return false;
  }
  if ((r.type == kThread || r.type == kClass || r.type == kString || r.type == kStack) &&
      expected >= kMaxTableEntries) {
    *why = "more than " + std::to_string(kMaxTableEntries) + " entries in one table (not a trace jvmtrace writes)";
    return false;
  }
  if ((r.type == kThread || r.type == kClass || r.type == kString) &&
      t.name_bytes + r.text.size() > kMaxTableNameBytes) {
    *why = "more than " + std::to_string(kMaxTableNameBytes >> 20) + " MiB of names (not a trace jvmtrace writes)";
    return false;
  }
  if (r.type == kStack && t.frames + r.frames.size() > kMaxTableFrames) {
    *why = "more than " + std::to_string(kMaxTableFrames) + " stack frames (not a trace jvmtrace writes)";
    return false;
  }
  return true;
}

void TraceReader::TableSizes::add(const Record& r, const std::vector<std::vector<uint64_t>>* stacks) {
  switch (r.type) {
    case kThread: threads++, name_bytes += r.text.size(); break;
    case kClass: classes++, name_bytes += r.text.size(); break;
    case kString: strings++, name_bytes += r.text.size(); break;
    case kStack:
      // A rename replaces the frames it had (those of a stack defined in
      // the same block are not known in the first pass, which then counts
      // more frames than there are: it errs on the safe side).
      if (r.id < this->stacks && stacks && r.id < stacks->size())
        frames -= std::min<uint64_t>(frames, (*stacks)[r.id].size());
      if (r.id >= this->stacks) this->stacks++;
      frames += r.frames.size();
      break;
    case kMethod: methods++; break;
    case kJavaStack: java_stacks++, java_frames += r.java_frames.size(); break;
    default: break;
  }
}

ReadStatus TraceReader::read(const RecordFn& fn) {
  ReadStatus st;
  uint64_t offset = kFileHeaderSize;
  uint32_t seq = 0;
  bool ended = false;
  std::vector<uint8_t> payload;
  Record r;  // one at a time: a block's memory is its payload, whatever its records
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

    // First pass: decode and check the whole block, keeping only the
    // tables' sizes; nothing of a block that fails is handed out or kept.
    // (Decoding each record twice keeps the memory a block costs at its
    // payload: a 16 MiB block of two-byte records once made a reader hold
    // eight million decoded records, 1.5 GiB.)
    const uint8_t* const begin = payload.data();
    const uint8_t* const end = begin + len;
    auto decode = [&](const uint8_t** p, const TableSizes& t, std::string* why) {
      const char* w = nullptr;
      codec.set_threads_defined(t.threads);
      const uint8_t* start = *p;
      if (!codec.get(p, end, &r, &w)) {
        *why = w;
        return false;
      }
      r.bytes = static_cast<uint32_t>(*p - start);
      r.offset = offset + kBlockHeaderSize + static_cast<uint64_t>(start - begin);
      if (check_record(r, t, why)) return true;
      *p = start;  // (the error names the record's first byte)
      return false;
    };
    {
      codec.reset();
      codec.set_base_ts(le64(h + 16));
      TableSizes t = sizes_;
      uint32_t count = 0;
      bool end_seen = false;
      for (const uint8_t* p = begin; p < end;) {
        std::string why;
        if (count == nrecords) why = "more records than the block header says";
        else if (decode(&p, t, &why) && r.type == kEnd && end_seen) why = "a second end record";
        if (!why.empty())
          return {ReadStatus::kCorrupt, offset + kBlockHeaderSize + static_cast<uint64_t>(p - begin), why};
        end_seen |= r.type == kEnd;
        t.add(r, &stacks_);
        count++;
      }
      if (count != nrecords)
        return {ReadStatus::kCorrupt, offset + kBlockHeaderSize + len,
                "the block header says " + std::to_string(nrecords) + " records, the payload holds " +
                    std::to_string(count)};
    }
    // Second pass: the same records again, each handed out as it is
    // decoded, the tables holding every definition up to it.
    codec.reset();
    codec.set_base_ts(le64(h + 16));
    for (const uint8_t* p = begin; p < end;) {
      std::string why;
      decode(&p, sizes_, &why);  // (it passed above; the codec's state is the same)
      sizes_.add(r, &stacks_);
      if (r.type == kThread) threads_.push_back({static_cast<uint32_t>(r.tid), r.text});
      else if (r.type == kClass) classes_.push_back(r.text);
      else if (r.type == kString) strings_.push_back(r.text);
      else if (r.type == kStack && r.id < stacks_.size()) stacks_[r.id] = r.frames;
      else if (r.type == kStack) stacks_.push_back(r.frames);
      else if (r.type == kMethod) methods_.push_back(r.method);
      else if (r.type == kJavaStack) java_stacks_.push_back(r.java_frames);
      else if (r.type == kEnd) ended = true;
      else if (r.type == kMeta) {
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
