#include "daemon/trace_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace jvmtrace {

namespace {

std::string owner_name(uid_t uid) {
  passwd pw, *res = nullptr;
  char buf[4096];
  std::string s = "uid " + std::to_string(uid);
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) s += std::string(" (") + res->pw_name + ")";
  return s;
}

// Why st (the directory `shown`) is not safe for root to write in, or "".
std::string unsafe_reason(const std::string& shown, const struct stat& st) {
  if (S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH))) return "";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  std::string why = "trace directory " + shown + " is ";
  if (!S_ISDIR(st.st_mode)) return why + "not a directory; point --trace-dir at a directory owned by root, mode 0750";
  why += "owned by " + owner_name(st.st_uid) + " with mode " + mode + ": root writes traces there, so it must be " +
         "owned by root and not writable by group or others. Fix it with:";
  if (st.st_uid != 0) why += " chown root " + shown + (st.st_mode & (S_IWGRP | S_IWOTH) ? " &&" : "");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) why += " chmod go-w " + shown;
  return why + " (or choose another --trace-dir)";
}

}  // namespace

std::string unsafe_parents(const std::string& what, const std::string& real_path) {
  // Whoever may rename entries of a directory on the way may swap what is
  // below it (for a symlink to /etc) under a process that goes by the path:
  // every ancestor must be root's and writable by root only, or sticky
  // (then others cannot rename root's entries: /tmp).
  std::string dir = real_path;
  while (dir.size() > 1) {
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0) return what + ": its parent " + dir + ": " + std::strerror(errno);
    const bool others_write = st.st_mode & (S_IWGRP | S_IWOTH);
    if (st.st_uid != 0 || (others_write && !(st.st_mode & S_ISVTX))) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
      return what + " is below " + dir + ", owned by " + owner_name(st.st_uid) + " with mode " + mode +
             ": whoever may write there may swap what is below it; every directory on the way must be root's "
             "and not writable by group or others (or sticky, as /tmp is)";
    }
  }
  return "";
}

TraceDir::~TraceDir() {
  if (fd_ >= 0) close(fd_);
}

bool TraceDir::open(const std::string& path, std::string* error) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      *error = "trace directory " + path + ": " + std::strerror(errno);
      return false;
    }
    const mode_t old = umask(0);
    const int made = mkdir(path.c_str(), 0750);  // by root: root-owned
    umask(old);
    if (made != 0 && errno != EEXIST) {
      *error = "cannot create the trace directory " + path + ": " + std::strerror(errno);
      return false;
    }
    if (lstat(path.c_str(), &st) != 0) {
      *error = "trace directory " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    target[n > 0 ? n : 0] = 0;
    *error = "trace directory " + path + " is a symbolic link (to " + target +
             "), not a directory: give --trace-dir the real directory, owned by root and not writable by group or others";
    return false;
  }
  if (std::string why = unsafe_reason(path, st); !why.empty()) {
    *error = why;
    return false;
  }
  // O_NOFOLLOW: if the path was swapped for a symlink since lstat, this fails.
  fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    *error = "cannot open the trace directory " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat opened;
  if (fstat(fd_, &opened) != 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
    *error = "trace directory " + path + " changed while it was being checked";
    return false;
  }
  // The path of what was opened and checked (parent symlinks resolved).
  char real[PATH_MAX];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd_)).c_str(), real, sizeof real - 1);
  if (n <= 0) {
    *error = "trace directory " + path + ": cannot resolve its path: " + std::strerror(errno);
    return false;
  }
  path_.assign(real, static_cast<size_t>(n));
  // The workers write by this path: its parents must not be someone else's.
  *error = unsafe_parents("trace directory " + path_, path_);
  return error->empty();
}

bool TraceDir::still_safe(std::string* error) const {
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    *error = "trace directory " + path_ + ": " + std::strerror(errno);
    return false;
  }
  *error = unsafe_reason(path_, st);
  if (error->empty()) *error = unsafe_parents("trace directory " + path_, path_);
  return error->empty();
}

std::vector<TraceDir::Entry> TraceDir::list() const {
  std::vector<Entry> out;
  const int fd = openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // its own offset: fdopendir takes it
  if (fd < 0) return out;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(fd_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    out.push_back({e->d_name, S_ISREG(st.st_mode), static_cast<uint64_t>(st.st_size), st.st_mtim});
  }
  closedir(d);
  return out;
}

bool TraceDir::remove(const std::string& name, std::string* error) const {
  struct stat st;
  if (name.find('/') != std::string::npos || fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode)) {
    *error = name + " is not a regular file in " + path_;
    return false;
  }
  if (unlinkat(fd_, name.c_str(), 0) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace jvmtrace
