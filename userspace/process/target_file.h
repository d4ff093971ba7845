// The one way jvmtrace opens a file its target names (docs/security.md,
// "Nothing the target controls makes root run, read or write").
//
// A target (its container's owner) controls every path below its root: it
// can plant a symbolic link there (root would read a host file), a FIFO (an
// open() that never returns), a device node (an open() with the device's side
// effects), or chroot elsewhere so that the path its maps show leads to a
// file of its choosing.  So nothing here resolves a target's path with a
// plain open():
//  - a file the target has mapped is reached through /proc/PID/map_files/,
//    the mapped inode itself (no path is resolved in the target's root);
//  - a file the target writes (its perf map) through openat2() below its
//    root with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// and either way the name is first opened O_PATH (which opens nothing),
// fstat() must show a regular file within a size limit, and only then is
// the same inode reopened for reading (O_NONBLOCK | O_NOCTTY: a lease or a
// terminal cannot hold the open up).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "process/target.h"

namespace jvmtrace {

// The largest ELF file jvmtrace reads: libelf reads a section it is asked
// for whole, so this bounds what one file costs the scanner and each worker
// (issue 33).  A libjvm.so is 24 MB (Debian's 17) to 30 MB (Temurin 25);
// build-patched-jdk.sh builds every variant, fastdebug too, with
// --with-native-debug-symbols=none, so its debug info is not in the file.
// 256 MiB is 8 times that; a library this refuses (one with its debug info
// inside) leaves stack frames in it unnamed, and stock mode says why.
constexpr uint64_t kMaxElfBytes = 256ull << 20;

// An open, checked file: a regular file of at most the size it was opened
// with.  Owns its descriptor.
class TargetFile {
 public:
  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // "/proc/self/fd/N": this very open file, for code that takes a path
  // (libelf, libbpf, and the kernel's uprobe registration, which resolves
  // it to this inode and no other).  Valid while this object lives.
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }
  // How messages name it: the target's own path for it, prefixed with
  // /proc/PID/root.  The target's text: print it through printable().
  const std::string& shown() const { return shown_; }
  uint64_t size() const { return size_; }
  dev_t dev() const { return dev_; }
  ino_t ino() const { return ino_; }
  // The descriptor, now the caller's to close.
  int release() { return fd_.release(); }

 private:
  friend bool open_checked(int path_fd, const std::string& shown, uint64_t max_bytes, uid_t owner, TargetFile* out,
                           std::string* error);
  UniqueFd fd_;
  std::string shown_;
  uint64_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// The file PID maps at m (one of its maps lines), through
// /proc/PID/map_files/START-END.  False with *error if it is not a regular
// file of at most max_bytes, or cannot be opened (the target unmapped it,
// exited, or this process lacks CAP_SYS_ADMIN, which map_files asks of
// every reader).
bool open_mapped_file(pid_t pid, const Mapping& m, uint64_t max_bytes, TargetFile* out, std::string* error);

// The libjvm.so PID maps (the first mapping of a file whose name ends in
// /libjvm.so), opened as open_mapped_file() does.  False with *error ("" if
// PID maps no libjvm.so: not a JVM, or its maps are unreadable).
bool open_libjvm(pid_t pid, TargetFile* out, std::string* error);

// A file root named itself (a command line's --binary): opened as given,
// symlinks followed, but still only a regular file within max_bytes, and
// without blocking on a FIFO or opening a device.
bool open_given_file(const std::string& path, uint64_t max_bytes, TargetFile* out, std::string* error);

// Reads through path_fd, an O_PATH descriptor (consumed): out gets the same
// inode reopened read-only if fstat shows a regular file of at most
// max_bytes owned by owner (any owner: (uid_t)-1).  shown names it in
// *error.  The building block of the functions above and below.
bool open_checked(int path_fd, const std::string& shown, uint64_t max_bytes, uid_t owner, TargetFile* out,
                  std::string* error);

// The regular file at rel (a relative path) below the directory root_fd
// stands for, resolving every component as if root_fd were "/" and
// following no symbolic link at all, owned by uid (any: (uid_t)-1) and at
// most max_bytes long: a read-only fd, or -1 with *error (errno ENOENT when
// it does not exist).  For files a target writes (its perf map).  shown: how messages
// name root_fd's directory ("" for the target's root).
int open_target_file(int root_fd, const std::string& rel, uid_t uid, uint64_t max_bytes, std::string* error,
                     const std::string& shown = "");

// Whether the target may be asked to write its file at rel below root_fd
// (for example Compiler.perfmap): the file is absent, or a regular file of
// uid reached through no symbolic link.  Something else planted there (a
// FIFO would stall the JVM's writer in the VM, a symlink would redirect its
// write) makes it false with *error; nothing is opened to find out.
bool target_file_fit_to_write(int root_fd, const std::string& rel, uid_t uid, std::string* error,
                              const std::string& shown = "");

// An O_PATH descriptor of the directory rel below root_fd, resolved as
// open_target_file() does (no symbolic link at all).  Held open, it keeps
// the directory reachable after the target has gone: a JVM whose /tmp is a
// mount of its own namespace writes its perf map there at exit, and the
// namespace (with that mount) goes with its last process.  -1 with *error.
int open_target_dir(int root_fd, const std::string& rel, std::string* error);

}  // namespace jvmtrace
