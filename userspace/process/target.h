// The traced process: where its libjvm.so is, whether it still runs, and
// reading its memory.
#pragma once
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace jvmtrace {

// One line of /proc/PID/maps.  path: the file as the target's mount
// namespace names it ("" for anonymous memory, "[vdso]" and the like kept).
struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;
  std::string path;
};
// PID's mappings in address order (at most kMaxMapsBytes of its maps file:
// a process cannot make a reader take without bound); empty if its maps
// cannot be read.
std::vector<Mapping> process_maps(pid_t pid);
constexpr size_t kMaxMapsBytes = 16 << 20;

// Whether m maps a file named .../libjvm.so (a JVM's; process/target_file.h
// opens it: open_libjvm()).
bool is_libjvm_mapping(const Mapping& m);

// Where PID mapped offset 0 of its libjvm.so (the base for symbol
// addresses); 0 if it maps none.
uint64_t libjvm_map_start(pid_t pid);

// The addresses of PID's libjvm.so code: from its lowest executable
// mapping's start to its highest one's end; false if it maps none.
bool libjvm_text_range(pid_t pid, uint64_t* lo, uint64_t* hi);

// A /proc file whole (at most max bytes), read with read(2): a process that
// exits while it is read makes an error (false), never an exception (a
// std::istreambuf_iterator over an ifstream throws from libstdc++ when read
// fails with ESRCH, and that ended stat and jvmtraced with an abort).
bool read_proc_file(const std::string& path, std::string* out, size_t max = 1 << 20);

// True while PID exists (a zombie counts as gone).  By number: for a target
// held from attach to detach, PinnedPid.
bool process_alive(pid_t pid);

// The target pinned by a pidfd, opened once when it is first looked at and
// held to the detach: alive() asks the pidfd, not the PID number, which
// another process may get once the target has exited; whatever was read of
// /proc/PID or the process's memory before alive() said true was the
// target's own.
class PinnedPid {
 public:
  bool open(pid_t pid);  // false with errno (ESRCH: no such process)
  pid_t pid() const { return pid_; }
  int fd() const { return fd_.get(); }
  bool alive() const;  // false once the process has exited (a zombie too)

 private:
  pid_t pid_ = 0;
  UniqueFd fd_;
};

// Up to len bytes at addr in PID's memory; empty on failure.
std::string read_process_memory(pid_t pid, uint64_t addr, size_t len);

// A NUL-terminated string at addr in PID's memory, at most max bytes; empty
// on failure.  Reads in small steps so a string near the end of a mapping works.
// *terminated (if given): its NUL was read, so "" is an empty string, not a failure.
std::string read_process_string(pid_t pid, uint64_t addr, size_t max, bool* terminated = nullptr);

// A thread's name (/proc/PID/task/TID/comm); empty if it is gone.
std::string thread_name(pid_t pid, uint32_t tid);

// The command line, arguments separated by spaces; empty if unreadable.
std::string process_cmdline(pid_t pid);

// The largest .note.stapsdt read: HotSpot's own probes and jvmtrace's take
// 53 KiB (Debian's 17, Temurin 25); a larger section is taken for none.
constexpr uint64_t kMaxUsdtNoteBytes = 1 << 20;

// True if the ELF file declares USDT probes of this provider (.note.stapsdt).
bool has_usdt_provider(const std::string& elf_path, const std::string& provider);
// The names of provider's probes in elf_path's .note.stapsdt (empty if none,
// or the file cannot be read).
std::set<std::string> usdt_probe_names(const std::string& elf_path, const std::string& provider);
// The same probes with their argument counts (a probe at several sites: the
// most any site has).
std::map<std::string, int> usdt_probe_args(const std::string& elf_path, const std::string& provider);

}  // namespace jvmtrace
