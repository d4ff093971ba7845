// Creating an output file where someone else may have planted the name (the
// recorder's traces, the daemon's segments, report --html, export, flame):
// root must write only what it means to, never through a symbolic link or a
// hard link someone planted at the output name (docs/security.md).
//
// The directory is opened once and every name is taken relative to it, so a
// directory swapped under a running writer cannot redirect it.  A new name is
// created with O_CREAT | O_EXCL | O_NOFOLLOW.  An existing regular file is
// replaced only when asked to, and then never written: a new temporary file
// beside it is renamed over it by commit().  A symbolic link, or anything but
// a regular file, at the name is always refused.
#pragma once
#include <string>

namespace jvmtrace {

class NewFile {
 public:
  NewFile() = default;
  ~NewFile();  // closes (what was not committed stays: discard() removes it)
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;

  // Creates path (mode 0644) as above; false with *error, saying why in
  // words a person can act on.  The directory of an earlier create() is kept
  // when path is in the same one.
  bool create(const std::string& path, bool replace, std::string* error);
  // The descriptor to write to (-1 once closed or released).
  int fd() const { return fd_; }
  // Hands the descriptor over (to fdopen, gzdopen): the caller closes it.
  int release_fd() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the descriptor if still held; false with errno on failure.
  bool close_fd();
  // Puts the file at its name (a no-op unless create() made a temporary)
  // and syncs the directory.
  bool commit(std::string* error);
  // Closes and removes the file this object created (the temporary, or the
  // new name): a failed or aborted output leaves nothing behind.
  void discard();
  // Removes name, a file in the directory this object writes into; false
  // with errno (EXDEV for another directory).
  bool remove(const std::string& path);
  // fsync of the directory (a new name on disk); false with *error.
  bool sync_dir(std::string* error);

  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }
  bool replacing() const { return !temp_name_.empty(); }
  uint64_t sync_ns() const { return sync_ns_; }  // spent in fsync of the directory so far

 private:
  int fd_ = -1, dir_fd_ = -1;
  std::string path_, dir_, name_, temp_name_;
  uint64_t sync_ns_ = 0;
};

}  // namespace jvmtrace
