// An output file for exports and reports, plain or gzip-compressed, that
// says why it failed (a full disk, a missing directory) and leaves no half
// file behind: on failure the partial output is removed.
#pragma once
#include <zlib.h>

#include <cstdio>
#include <string>

namespace jvmtrace::analysis {

class OutputFile {
 public:
  ~OutputFile();
  // path "-" is stdout (never compressed).
  bool open(const std::string& path, bool gzip, std::string* error);
  void write(const std::string& s);
  // Flushes and closes; false with *error if any write failed.
  bool close(std::string* error);
  uint64_t bytes_in() const { return bytes_; }

 private:
  void fail(const std::string& why);

  std::string path_, error_;
  FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace jvmtrace::analysis
