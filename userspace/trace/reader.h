// Reading a trace file, block by block.  Every block is checked (magic,
// sequence number, length, CRC32C, records) before any of its records is
// handed out, so a cut or damaged file yields exactly its intact prefix and
// a status that says where and why it stopped.  Never reads out of bounds.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "trace/codec.h"

namespace jvmtrace::trace {

struct ReadStatus {
  enum Kind {
    kComplete,   // ends with an end record and nothing after it
    kNoEnd,      // every block intact but no end record: the recorder was killed
    kTruncated,  // the last block is cut off (offset: where it starts)
    kCorrupt,    // a block fails its checks (offset: the block, or the bad record)
  } kind = kComplete;
  uint64_t offset = 0;
  std::string what;
  std::string describe() const;  // one line for a person
};

struct ThreadInfo {
  uint32_t tid;
  std::string name;
};

class TraceReader {
 public:
  ~TraceReader();

  // Opens path and checks the file header; false with *error otherwise.
  bool open(const std::string& path, std::string* error);
  // The same over bytes in memory (tests, the fuzzer); data must outlive reads.
  bool open_memory(const uint8_t* data, size_t size, std::string* error);

  // Calls fn for every record of every intact block, in file order, the
  // tables (threads(), classes(), strings(), meta()) holding every
  // definition up to and including that record.  block_offset is the
  // record's block.  A block is checked whole before any of its records is
  // handed out, and its records are decoded one at a time (twice), so what
  // a block costs in memory is its payload (at most kMaxPayload), and what
  // the tables cost is bounded by the format's caps (kMaxTableEntries ...).
  using RecordFn = std::function<void(const Record& r, uint64_t block_offset)>;
  ReadStatus read(const RecordFn& fn);

  const std::vector<ThreadInfo>& threads() const { return threads_; }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<std::vector<uint64_t>>& stacks() const { return stacks_; }  // string ids, leaf first
  const std::vector<Method>& methods() const { return methods_; }
  const std::vector<std::vector<Frame>>& java_stacks() const { return java_stacks_; }  // leaf first
  uint32_t version() const { return version_; }
  const std::string& meta() const { return meta_; }
  // The value of key in the meta record ("" if absent), unescaped.
  std::string meta_value(const std::string& key) const;
  // Every (key, value) of the meta record in order, values unescaped.
  const std::vector<std::pair<std::string, std::string>>& meta_fields() const { return meta_fields_; }
  uint64_t blocks() const { return blocks_; }
  uint64_t size() const { return size_; }

 private:
  // Up to n bytes at the current position; fewer only at the end of input.
  size_t fetch(uint8_t* dst, size_t n);
  // The tables' sizes (entries, name bytes, stack frames), checked against
  // the format's caps before anything is added to them.
  struct TableSizes {
    uint64_t threads = 0, classes = 0, strings = 0, stacks = 0, name_bytes = 0, frames = 0;
    uint64_t methods = 0, java_stacks = 0, java_frames = 0;
    void add(const Record& r, const std::vector<std::vector<uint64_t>>* stacks);
  };
  bool check_record(const Record& r, const TableSizes& t, std::string* why) const;
  TableSizes sizes_;

  FILE* file_ = nullptr;
  const uint8_t* mem_ = nullptr;
  size_t mem_size_ = 0, mem_pos_ = 0;
  uint64_t size_ = 0, blocks_ = 0;
  uint32_t version_ = kVersion;  // the file's format version
  std::vector<ThreadInfo> threads_;
  std::vector<std::string> classes_, strings_;
  std::vector<std::vector<uint64_t>> stacks_;
  std::vector<Method> methods_;
  std::vector<std::vector<Frame>> java_stacks_;
  std::string meta_;
  std::vector<std::pair<std::string, std::string>> meta_fields_;
};

}  // namespace jvmtrace::trace
