#include "base/new_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "base/clock.h"

namespace jvmtrace {

NewFile::~NewFile() {
  close_fd();
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

bool NewFile::close_fd() {
  if (fd_ < 0) return true;
  const int r = ::close(fd_);
  fd_ = -1;
  return r == 0;
}

bool NewFile::create(const std::string& path, bool replace, std::string* error) {
  close_fd();
  path_ = path;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name_.empty() || name_ == "." || name_ == "..") {
    *error = "cannot create " + path + ": not a file name";
    return false;
  }
  if (dir_fd_ < 0 || dir != dir_) {
    if (dir_fd_ >= 0) ::close(dir_fd_);
    dir_ = dir;
    dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) {
      *error = "cannot create " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  temp_name_.clear();
  struct stat st;
  if (fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      *error = "refusing to write " + path + ": it is a symbolic link (remove it, or name another file)";
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      *error = "refusing to write " + path + ": it exists and is not a regular file";
      return false;
    }
    if (!replace) {
      *error = "refusing to write " + path + ": it exists (remove it, or name another file)";
      return false;
    }
    // A fresh inode beside it, renamed over it by commit(): the old file (or
    // whatever another hard link of it is) is never written through.
    for (int attempt = 0; attempt < 100 && fd_ < 0; attempt++) {
      char suffix[64];
      std::snprintf(suffix, sizeof suffix, ".%d.%llx.tmp", static_cast<int>(getpid()),
                    static_cast<unsigned long long>(monotonic_ns() ^ (static_cast<uint64_t>(attempt) << 40)));
      temp_name_ = "." + name_ + suffix;
      fd_ = ::openat(dir_fd_, temp_name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd_ < 0 && errno != EEXIST) break;
    }
  } else {
    fd_ = ::openat(dir_fd_, name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  if (fd_ < 0) {
    const int err = errno;
    *error = err == EEXIST ? "refusing to write " + path + ": it appeared while being created (another writer?)"
             : err == ELOOP ? "refusing to write " + path + ": it is a symbolic link"
                            : "cannot create " + (temp_name_.empty() ? path : dir_ + "/" + temp_name_) + ": " +
                                  std::strerror(err);
    temp_name_.clear();
    return false;
  }
  return true;
}

bool NewFile::sync_dir(std::string* error) {
  const uint64_t t0 = monotonic_ns();
  const int r = ::fsync(dir_fd_);
  sync_ns_ += monotonic_ns() - t0;
  if (r != 0 && errno != EINVAL) {  // EINVAL: a file system that cannot sync directories
    *error = "syncing the directory " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool NewFile::commit(std::string* error) {
  if (temp_name_.empty()) return true;
  if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    *error = "cannot replace " + path_ + ": " + std::strerror(errno);
    return false;
  }
  temp_name_.clear();
  return sync_dir(error);
}

void NewFile::discard() {
  close_fd();
  if (dir_fd_ >= 0 && !name_.empty())
    ::unlinkat(dir_fd_, temp_name_.empty() ? name_.c_str() : temp_name_.c_str(), 0);
  temp_name_.clear();
  name_.clear();
}

bool NewFile::remove(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (dir_fd_ < 0 || dir != dir_) {
    errno = EXDEV;  // only files of the directory this object writes into
    return false;
  }
  return ::unlinkat(dir_fd_, path.c_str() + (slash == std::string::npos ? 0 : slash + 1), 0) == 0;
}

}  // namespace jvmtrace
