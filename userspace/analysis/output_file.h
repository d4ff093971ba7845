// An output file for exports and reports, plain or gzip-compressed, that
// says why it failed (a full disk, a missing directory) and leaves no half
// file behind: on failure the partial output is removed.  Created as the
// recorder creates its traces (base/new_file.h): a symbolic link at the name
// is refused, an existing file is replaced by a new one renamed over it.
#pragma once
#include <zlib.h>

#include <cstdio>
#include <string>

#include "base/new_file.h"

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
  NewFile new_;
  FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace jvmtrace::analysis
