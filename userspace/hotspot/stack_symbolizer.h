// Names for the return addresses of a JVM's user stacks (record --stacks):
// JIT-compiled Java methods from the JVM's perf map (the attach operation
// jcmd Compiler.perfmap makes it write /tmp/perf-NSPID.map; JIT code moves,
// so the map is re-read whenever it is refreshed), HotSpot's C++ frames from
// libjvm.so's symbols, other libraries from theirs.
//
// Every file is reached inside the target's root directory, which the
// target (or its container's owner) controls: symlinks are resolved inside
// that root, and the perf map is read only if no symlink leads to it and it
// is a regular file of the JVM's own user (docs/security.md).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hotspot/elf_symbols.h"
#include "hotspot/jvm_attach.h"

namespace jvmtrace {

// The perf map is read up to these limits, whatever its size (its entries:
// the JVM's compiled methods, tens of thousands in a large program).
constexpr size_t kMaxPerfMapEntries = 1 << 19, kMaxPerfMapLine = 4096;
constexpr uint64_t kMaxPerfMapBytes = 64ull << 20;

class StackSymbolizer {
 public:
  explicit StackSymbolizer(pid_t pid);
  ~StackSymbolizer();
  StackSymbolizer(const StackSymbolizer&) = delete;
  StackSymbolizer& operator=(const StackSymbolizer&) = delete;

  // A frame's name: "AllocWorker.work_[j]" (JIT-compiled Java),
  // "Interpreter_[j]", "MemAllocator::allocate" (libjvm.so),
  // "libc.so.6`malloc", or "[unknown]" / "[libfoo.so+0x1234]".
  std::string frame(uint64_t ip);
  // A frame in a mapped file (the VM's own code, a library): its name as
  // frame() gives it, *in_file true; else (the code cache: stubs and Java
  // code, or nothing) "" and *in_file false.
  std::string native_frame(uint64_t ip, bool* in_file);

  // Re-reads the perf map; true if its contents changed (names given out
  // before may be stale: JIT code moved).
  bool load_perf_map();
  // Why the perf map was last not read (empty: it was, or does not exist).
  const std::string& perf_map_problem() const { return perf_problem_; }
  // Whether the JVM may be asked to write its perf map now (absent, or a
  // regular file of its user); why not in *why.
  bool perf_map_fit_to_write(std::string* why) const;
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
  // The target's root directory (an O_PATH fd: it stays valid after the
  // target exits), its user, and the perf map's path inside that root.
  int root_fd_ = -1;
  int tmp_fd_ = -1;  // the target's /tmp, where its perf map is (see the constructor)
  int perf_dir_fd() const { return tmp_fd_ >= 0 ? tmp_fd_ : root_fd_; }
  const char* perf_dir_shown() const { return tmp_fd_ >= 0 ? "/tmp" : ""; }
  uid_t uid_ = 0;
  std::string perf_rel_, perf_problem_;
  std::vector<Mapping> maps_;  // sorted by start
  uint64_t maps_read_ns_ = 0;
  std::map<std::string, std::shared_ptr<const ElfSymbols>> elves_;  // nullptr: unreadable
  std::vector<PerfSym> perf_;                                 // sorted by start
  uint64_t perf_size_ = 0, perf_mtime_ns_ = 0;
  uint64_t unresolved_jit_ = 0;
  bool perf_cut_told_ = false;
};

// Has the JVM write its perf map now and then (the attach operation
// `jcmd Compiler.perfmap`, through our own attach client: jvm_attach.h), in
// the background, so the perf map follows the JIT.  A JVM still starting
// (not yet catching SIGQUIT) is asked again later, never signalled.
class PerfMapRefresher {
 public:
  // where: the symbolizer reading the map, which knows where it is; the
  // JVM is only asked to write it while that file is fit for it.
  // target: pinned since the attach; every refresh goes to it, not to a later
  // process of its number.
  PerfMapRefresher(const PinnedPid& target, double interval_s, const StackSymbolizer& where)
      : target_(target), where_(where), interval_ns_(static_cast<uint64_t>(interval_s * 1e9)) {}
  // Why the last refresh failed; empty if it worked (or none finished yet).
  const std::string& problem() const { return problem_; }
  // Starts a refresh if none runs and the interval has passed (soon: 0.25 s,
  // for code the map did not name); true when one finished successfully
  // since the last call (re-read the map then).
  bool poll(uint64_t now_ns, bool soon = false);
  // Refreshes and waits (at most timeout_s).
  bool run_now(double timeout_s);
  // At the end of a recording: waits for a refresh still running, then runs
  // one more if timeout_s > 0 (the target still alive).
  void finish(double timeout_s);

 private:
  bool start(double timeout_s);
  bool finished();  // the running refresh has ended; true if it worked

  const PinnedPid& target_;
  const StackSymbolizer& where_;
  AttachOperation op_;
  std::string problem_;
  uint64_t interval_ns_, last_start_ns_ = 0;
  uint64_t backoff_until_ns_ = 0;  // after a failure: no early run before this
  bool soon_ = false;              // asked for an early run
  bool told_not_ready_ = false;
};

}  // namespace jvmtrace
