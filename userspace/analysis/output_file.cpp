#include "analysis/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jvmtrace::analysis {

OutputFile::~OutputFile() {
  std::string ignored;
  if (file_ || gz_) {
    fail("not closed");
    close(&ignored);
  }
}

bool OutputFile::open(const std::string& path, bool gzip, std::string* error) {
  path_ = path;
  if (path == "-") {
    file_ = stdout;
    return true;
  }
  // A new file, or a temporary renamed over an existing regular one at
  // close(): never a write through a link planted at the name.
  if (!new_.create(path, true, error)) return false;
  const int fd = new_.release_fd();
  if (gzip) gz_ = gzdopen(fd, "wb6");
  else file_ = fdopen(fd, "w");
  if (!gz_ && !file_) {
    ::close(fd);
    new_.discard();
    *error = "cannot write " + path + ": out of memory";
    return false;
  }
  return true;
}

void OutputFile::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
}

void OutputFile::write(const std::string& s) {
  if (!error_.empty() || s.empty()) return;
  bytes_ += s.size();
  if (gz_) {
    if (gzwrite(gz_, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) {
      int zerr;
      const char* m = gzerror(gz_, &zerr);
      fail(zerr == Z_ERRNO ? std::strerror(errno) : m);
    }
  } else if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) {
    fail(std::strerror(errno));
  }
}

bool OutputFile::close(std::string* error) {
  if (gz_) {
    const int rc = gzclose(gz_);
    if (rc != Z_OK) fail(rc == Z_ERRNO ? std::strerror(errno) : "gzip error " + std::to_string(rc));
    gz_ = nullptr;
  } else if (file_) {
    if (std::fflush(file_) != 0 || std::ferror(file_)) fail(std::strerror(errno));
    if (file_ != stdout && std::fclose(file_) != 0) fail(std::strerror(errno));
    file_ = nullptr;
  }
  if (error_.empty() && path_ != "-") {
    std::string why;
    if (new_.commit(&why)) return true;
    fail(why);
  }
  if (error_.empty()) return true;
  if (path_ != "-") new_.discard();
  *error = "writing " + path_ + " failed: " + error_ + " (the partial file was removed)";
  return false;
}

}  // namespace jvmtrace::analysis
