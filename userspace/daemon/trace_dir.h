// The daemon's trace directory: checked before use and then held open.
// Root writes here, so nobody else may be able to: it must be a real
// directory (not a symlink), owned by root, not writable by group or
// others.  Everything the daemon itself lists or deletes here goes through
// the directory's descriptor and never follows a symlink.  (The trace files
// are written by the record workers, by path; the writer opens them
// O_NOFOLLOW | O_EXCL.)
#pragma once
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace jvmtrace {

// Why a path root works by (its real path, symlinks resolved) is not safe:
// an ancestor directory that is not root's, or is writable by group or
// others without the sticky bit.  "" when every one is safe.  what names the
// path in the message.
std::string unsafe_parents(const std::string& what, const std::string& real_path);

class TraceDir {
 public:
  TraceDir() = default;
  ~TraceDir();
  TraceDir(const TraceDir&) = delete;
  TraceDir& operator=(const TraceDir&) = delete;

  // Creates `path` (mode 0750, owned by root) if it is missing, opens it and
  // checks it.  False with *error naming the directory, its owner and mode,
  // and how to fix it.
  bool open(const std::string& path, std::string* error);
  // The same checks again, on the open directory (its owner or mode may have
  // been changed since).  False with *error.
  bool still_safe(std::string* error) const;

  // The directory's absolute path (what workers are given).
  const std::string& path() const { return path_; }

  struct Entry {
    std::string name;
    bool regular;  // a regular file (lstat: a symlink is not one)
    uint64_t size;
    timespec mtime;
  };
  // Every entry but . and .., stat'ed without following symlinks.
  std::vector<Entry> list() const;
  // Deletes the regular file `name` (unlinkat on the directory: a symlink put
  // in its place would be removed itself, never what it points to).
  bool remove(const std::string& name, std::string* error) const;

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace jvmtrace
