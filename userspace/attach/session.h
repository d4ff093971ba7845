// One tool's attach to one JVM, the same for `stat` and `record` in both
// modes: the target checked, the mode chosen (the jvmtrace USDT probes of a
// patched VM, or stock-mode uprobes on HotSpot's own functions), the probe
// set, the links, and the end (batched slow paths drained, then detached).
// The tool keeps what is its own: which of its two skeletons it opens,
// their settings and maps, and its loop.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attach/stock_attach.h"
#include "attach/usdt_attach.h"

namespace jvmtrace {

// The target of an attaching command: the process exists and maps
// libjvm.so (or binary, when given), opened and checked (process/
// target_file.h: the mapped file itself, a regular file; held open from
// here to the detach, so every later reader and the uprobes get that inode);
// has_probes tells whether that file declares jvmtrace probes (a patched
// HotSpot).  On failure prints "<cmd>: reason" and returns false.
struct Target {
  pid_t pid = 0;
  PinnedPid proc;  // the process itself, from the check to the detach
  TargetFile binary;  // the ELF file the probes are in; binary.shown() names it
  bool has_probes = false;
  std::set<std::string> probes;  // the jvmtrace probes it declares
  std::map<std::string, int> probe_args;  // ...with their argument counts
};
bool check_target(const char* cmd, pid_t pid, const std::string& binary, Target* t);

// The error for a JVM without jvmtrace probes where a command needs them.
void print_no_probes(const char* cmd, const Target& t, const char* alternative);

// The message for a BPF load failure (permissions, kernel support).
std::string bpf_load_hint(int err);

// How long the end of a batched session waits for the JVM to hand over its
// buffered slow paths: its next safepoint, at most two
// GuaranteedSafepointInterval (1 s by default) away.
constexpr double kDrainTimeout = 5.0;

// Declare it after the tool's skeleton (whose object it attaches): its links
// must be destroyed before the object is closed, and locals go in reverse.
class BpfSession {
 public:
  // cmd: the prefix of every message ("jvmtrace record").
  explicit BpfSession(const char* cmd) : cmd_(cmd) {}
  BpfSession(const BpfSession&) = delete;
  BpfSession& operator=(const BpfSession&) = delete;

  struct Choice {
    pid_t pid = 0;
    std::string binary;     // --binary, or "" for the libjvm.so the JVM maps
    std::string mode;       // --mode: auto, usdt or stock
    std::string probe_set;  // --probe-set
    bool per_event = false; // stacks are wanted (record --stacks): the VM's own (alloc__sample)
                            // if it has them, else a BPF stack per slow path
    const char* stock_alternative = "";  // what to say when usdt is asked of an unpatched VM
    bool user_stacks = false;  // per_event: BPF stacks even where the VM has alloc__sample
  };
  // Checks the target and picks the mode (auto: stock when the VM has no
  // jvmtrace probes) and the probe set; stock mode reads the JVM's offsets.
  // Prints why not and returns false.
  bool prepare(const Choice& c);

  bool stock() const { return stock_; }
  // Stacks come from the VM's own walk (alloc__sample): per_event was asked
  // and the JVM has the probe; the probe set stays batched then.
  bool vm_stacks() const { return vm_stacks_; }
  ProbeSet probe_set() const { return probe_set_; }
  const Target& target() const { return target_; }
  const StockTarget& stock_target() const { return stock_target_; }
  // The probe set in words, for the tool's "attached" line.
  const char* probe_set_text() const;

  // After the tool opened and loaded its skeleton (libbpf's result, err =
  // errno when it is not 0): prints a load failure and returns false.
  bool loaded(int result, bpf_object* obj);

  // Attaches every loaded program (USDT or uprobes, as the mode says).
  // Prints why not and returns false (nothing stays attached then).
  bool attach();
  size_t links() const { return links_.size(); }
  // False for a VM patched before the pause probes (gc__pause__*): the tool
  // says so and measures pauses from gc__start to gc__end.
  bool has_pause_probes() const;
  // False for a VM patched before safepoint__begin/end (and the pause probes
  // of ZGC and Shenandoah, which came with them).
  bool has_safepoint_probes() const;
  // True when this JVM fires a safepoint's PLAB records after it (plab__batch
  // with safepoint_id and last) and the probe set attaches plab__batch.
  bool plab_handed_over() const;

  // The end, on a JVM that still runs, with the batched probes: waits until
  // the VM has handed over every slow path that ended by end_ns (see
  // drain_alloc_batches), calling tick while it waits.  Returns what the tool
  // says when that failed, "" when all came (or nothing was to come).
  std::string drain(const volatile __u64* drained_ns, uint64_t end_ns, const std::function<void()>& tick);

  // Detaches every program (the tool stops them first, if it must).
  void detach() { links_.clear(); }

 private:
  const char* cmd_;
  Target target_;
  bool stock_ = false;
  bool vm_stacks_ = false;
  ProbeSet probe_set_ = ProbeSet::kSeparate;
  StockTarget stock_target_;
  bpf_object* obj_ = nullptr;
  Links links_;
  std::vector<std::string> absent_;  // optional probes this JVM lacks
};

}  // namespace jvmtrace
