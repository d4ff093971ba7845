#include "process/target_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace jvmtrace {

namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

constexpr uint64_t kNoLinks = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

int open_path(int root_fd, const std::string& rel, uint64_t flags, std::string* error, const std::string& shown) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | flags;
  how.resolve = kNoLinks;
  const int fd = static_cast<int>(syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how));
  if (fd < 0) {
    const int e = errno;
    const std::string name = shown + "/" + rel;
    *error = e == ELOOP || e == EXDEV ? name + " has a symbolic link in its path: not read"
                                      : errno_text("cannot open " + name);
    errno = e;
  }
  return fd;
}

}  // namespace

bool open_checked(int path_fd, const std::string& shown, uint64_t max_bytes, uid_t owner, TargetFile* out,
                  std::string* error) {
  struct stat st;
  std::string why;
  if (fstat(path_fd, &st) != 0) why = errno_text("cannot stat " + shown);
  else if (S_ISLNK(st.st_mode)) why = shown + " is a symbolic link: not read";
  else if (!S_ISREG(st.st_mode)) why = shown + " is not a regular file: not read";
  else if (owner != static_cast<uid_t>(-1) && st.st_uid != owner)
    why = shown + " is not owned by the JVM's uid " + std::to_string(owner) + ": not read";
  else if (static_cast<uint64_t>(st.st_size) > max_bytes)
    why = shown + " is larger than " + std::to_string(max_bytes) + " bytes: not read";
  int fd = -1;
  if (why.empty()) {
    // The same inode, reopened through the O_PATH descriptor (not by name).
    fd = open(("/proc/self/fd/" + std::to_string(path_fd)).c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) why = errno_text("cannot open " + shown);
  }
  close(path_fd);
  if (fd < 0) {
    *error = why;
    errno = EPERM;
    return false;
  }
  *out = TargetFile();
  out->fd_.reset(fd);
  out->shown_ = shown;
  out->size_ = static_cast<uint64_t>(st.st_size);
  out->dev_ = st.st_dev;
  out->ino_ = st.st_ino;
  return true;
}

bool open_mapped_file(pid_t pid, const Mapping& m, uint64_t max_bytes, TargetFile* out, std::string* error) {
  char range[64];
  std::snprintf(range, sizeof range, "%" PRIx64 "-%" PRIx64, m.start, m.end);
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string shown = proc + "/root" + m.path;
  // Following the map_files link gives the mapped file, whatever its name
  // now leads to inside the target's root.
  const int path_fd = open((proc + "/map_files/" + range).c_str(), O_PATH | O_CLOEXEC);
  if (path_fd < 0) {
    *error = errno_text("cannot open the file PID " + std::to_string(pid) + " maps at " + range + " (" + shown + ")");
    return false;
  }
  return open_checked(path_fd, shown, max_bytes, static_cast<uid_t>(-1), out, error);
}

bool open_libjvm(pid_t pid, TargetFile* out, std::string* error) {
  error->clear();
  for (const Mapping& m : process_maps(pid))
    if (is_libjvm_mapping(m)) return open_mapped_file(pid, m, kMaxElfBytes, out, error);
  return false;
}

bool open_given_file(const std::string& path, uint64_t max_bytes, TargetFile* out, std::string* error) {
  const int path_fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (path_fd < 0) {
    *error = errno_text("cannot open " + path);
    return false;
  }
  return open_checked(path_fd, path, max_bytes, static_cast<uid_t>(-1), out, error);
}

int open_target_file(int root_fd, const std::string& rel, uid_t uid, uint64_t max_bytes, std::string* error,
                     const std::string& shown) {
  const int path_fd = open_path(root_fd, rel, 0, error, shown);
  if (path_fd < 0) return -1;
  TargetFile f;
  if (!open_checked(path_fd, shown + "/" + rel, max_bytes, uid, &f, error)) return -1;
  return f.release();
}

bool target_file_fit_to_write(int root_fd, const std::string& rel, uid_t uid, std::string* error,
                              const std::string& shown) {
  std::string problem;
  const int path_fd = open_path(root_fd, rel, 0, &problem, shown);
  if (path_fd < 0) {
    if (errno == ENOENT) return true;  // the JVM creates it
    *error = problem;
    return false;
  }
  struct stat st;
  const int ok = fstat(path_fd, &st);
  close(path_fd);
  const std::string name = shown + "/" + rel;
  if (ok != 0) *error = errno_text("cannot stat " + name);
  else if (S_ISLNK(st.st_mode)) *error = name + " is a symbolic link";
  else if (!S_ISREG(st.st_mode)) *error = name + " is not a regular file";
  else if (st.st_uid != uid) *error = name + " is not owned by the JVM's uid " + std::to_string(uid);
  else return true;
  return false;
}

int open_target_dir(int root_fd, const std::string& rel, std::string* error) {
  return open_path(root_fd, rel, O_DIRECTORY, error, "");
}

}  // namespace jvmtrace
