// Names for the return addresses of a JVM's user stacks (record --stacks):
// JIT-compiled Java methods from the JVM's perf map (jcmd PID
// Compiler.perfmap writes /tmp/perf-PID.map; JIT code moves, so the map is
// re-read whenever it is refreshed), HotSpot's C++ frames from libjvm.so's
// symbols, other libraries from theirs.  Files are reached through
// /proc/PID/root.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "elf_symbols.h"

namespace jvmtrace {

class StackSymbolizer {
 public:
  explicit StackSymbolizer(pid_t pid);

  // A frame's name: "AllocWorker.work_[j]" (JIT-compiled Java),
  // "Interpreter_[j]", "MemAllocator::allocate" (libjvm.so),
  // "libc.so.6`malloc", or "[unknown]" / "[libfoo.so+0x1234]".
  std::string frame(uint64_t ip);

  // Re-reads the perf map; true if its contents changed (names given out
  // before may be stale: JIT code moved).
  bool load_perf_map();
  size_t perf_map_entries() const { return perf_.size(); }
  uint64_t unresolved_jit() const { return unresolved_jit_; }  // anonymous-code frames no perf map entry named

 private:
  struct Mapping {
    uint64_t start, end, offset;
    std::string path;  // empty: anonymous (the code cache)
  };
  struct PerfSym {
    uint64_t start, size;
    std::string name;
  };
  const Mapping* mapping(uint64_t ip);
  void read_maps();

  pid_t pid_;
  // The perf map, through the target's root; and where it is once the
  // target is gone, if it shares our root (else empty).
  std::string perf_path_, perf_path_after_exit_;
  std::vector<Mapping> maps_;  // sorted by start
  uint64_t maps_read_ns_ = 0;
  std::map<std::string, std::unique_ptr<ElfSymbols>> elves_;  // nullptr: unreadable
  std::vector<PerfSym> perf_;                                 // sorted by start
  uint64_t perf_size_ = 0, perf_mtime_ns_ = 0;
  uint64_t unresolved_jit_ = 0;
};

// Runs `jcmd PID Compiler.perfmap` (the target JDK's own jcmd) now and then,
// in the background, so the perf map follows the JIT.
class PerfMapRefresher {
 public:
  PerfMapRefresher(pid_t pid, double interval_s);
  ~PerfMapRefresher();
  // Empty if the target's JDK has a jcmd, else why not.
  const std::string& problem() const { return problem_; }
  // Starts jcmd if none runs and the interval has passed (soon: 0.25 s, for
  // code the map did not name); true when a run finished successfully since
  // the last call (re-read the map then).
  bool poll(uint64_t now_ns, bool soon = false);
  // Runs jcmd and waits for it (at most timeout_s).
  bool run_now(double timeout_s);
  // At the end of a recording: waits for a jcmd still running, then runs one
  // more if timeout_s > 0 (the target still alive).
  void finish(double timeout_s);

 private:
  bool start();
  bool reap(bool wait);

  pid_t pid_, child_ = -1;
  std::string jcmd_, problem_;
  uint64_t interval_ns_, last_start_ns_ = 0;
  bool soon_ = false;  // asked for an early run
};

}  // namespace jvmtrace
