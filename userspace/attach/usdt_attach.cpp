#include "attach/usdt_attach.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <string>

#include <unistd.h>

#include "base/clock.h"
#include "base/strings.h"
#include "process/target.h"

namespace jvmtrace {

namespace {
bool g_verbose = false;
int print_libbpf(enum libbpf_print_level level, const char* fmt, va_list ap) {
  if (level == LIBBPF_DEBUG && !g_verbose) return 0;
  return std::vfprintf(stderr, fmt, ap);
}
}  // namespace

void set_libbpf_verbose(bool verbose) {
  g_verbose = verbose;
  libbpf_set_print(print_libbpf);
}

bool is_optional_probe(const std::string& probe) {
  return probe == "gc__pause__start" || probe == "gc__pause__end" || probe == "alloc__slow" ||
         probe == "plab__batch" || probe == "alloc__batch" || probe == "alloc__drain" ||
         probe == "safepoint__begin" || probe == "safepoint__end" || probe == "alloc__sample" ||
         probe == "sample__fates";
}

namespace {
const char* const kBatchedProbes[] = {"alloc__batch", "plab__batch", "alloc__drain"};
const char* const kCombinedProbes[] = {"alloc__slow", "plab__batch"};
const char* const kSeparateProbes[] = {"tlab__refill", "alloc__slow__enter", "alloc__slow__exit",
                                       "plab__alloc",  "plab__retire",       "promote__direct"};
constexpr const char* kDrainProbe = "alloc__drain";

// Where a probe goes in attach_jvmtrace_usdt's order: 0, what happens
// inside a GC, pause or safepoint; 1, the probes that end one; 2, those that
// begin one.
int attach_rank(const char* probe) {
  for (const char* begins : {"gc__start", "gc__pause__start", "safepoint__begin"})
    if (!std::strcmp(probe, begins)) return 2;
  for (const char* ends : {"gc__end", "gc__pause__end", "safepoint__end"})
    if (!std::strcmp(probe, ends)) return 1;
  return 0;
}

template <size_t N>
bool has_all(const std::set<std::string>& available, const char* const (&probes)[N]) {
  for (const char* p : probes)
    if (!available.count(p)) return false;
  return true;
}
}  // namespace

const char* probe_set_name(ProbeSet set) {
  return set == ProbeSet::kBatched ? "batched" : set == ProbeSet::kCombined ? "combined" : "separate";
}

bool parse_probe_set(const char* cmd, const char* s, std::string* out) {
  const std::string v = s;
  if (v != "auto" && v != "batched" && v != "combined" && v != "separate") {
    std::fprintf(stderr, "%s: --probe-set takes auto, batched, combined or separate, not '%s'\n", cmd, s);
    return false;
  }
  *out = v;
  return true;
}

bool choose_probe_set(const std::string& wanted, const std::set<std::string>& available, bool per_event,
                      ProbeSet* set, std::string* error) {
  const bool batched = has_all(available, kBatchedProbes), combined = has_all(available, kCombinedProbes);
  if (wanted == "batched" && per_event) {
    *error = "--probe-set batched reports slow paths in batches, without a stack each: --stacks needs "
             "--probe-set combined (or auto)";
    return false;
  }
  if (wanted == "batched" && !batched) {
    *error = "--probe-set batched: this JVM's patch predates alloc__batch and alloc__drain; rebuild it with "
             "scripts/build-patched-jdk.sh, or use --probe-set combined or separate";
    return false;
  }
  if (wanted == "combined" && !combined) {
    *error = "--probe-set combined: this JVM's patch predates alloc__slow and plab__batch; rebuild it with "
             "scripts/build-patched-jdk.sh, or use --probe-set separate";
    return false;
  }
  if (wanted == "batched") *set = ProbeSet::kBatched;
  else if (wanted == "combined") *set = ProbeSet::kCombined;
  else if (wanted == "separate") *set = ProbeSet::kSeparate;
  else *set = batched && !per_event ? ProbeSet::kBatched : combined ? ProbeSet::kCombined : ProbeSet::kSeparate;
  return true;
}

void select_probe_set(bpf_object* obj, ProbeSet set) {
  std::set<std::string> sets, keep;
  const auto add = [](std::set<std::string>* to, const auto& probes) { to->insert(std::begin(probes), std::end(probes)); };
  add(&sets, kBatchedProbes), add(&sets, kCombinedProbes), add(&sets, kSeparateProbes);
  if (set == ProbeSet::kBatched) add(&keep, kBatchedProbes);
  else if (set == ProbeSet::kCombined) add(&keep, kCombinedProbes);
  else add(&keep, kSeparateProbes);
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    const char* name = bpf_program__name(prog);
    if (sets.count(name) && !keep.count(name)) bpf_program__set_autoload(prog, false);
  }
}

bool attach_jvmtrace_usdt(bpf_object* obj, pid_t pid, const TargetFile& binary, Links* links,
                          std::string* error, std::vector<std::string>* absent) {
  std::vector<bpf_program*> progs;
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__autoload(prog)) continue;  // left out on purpose (not loaded)
    if (std::strcmp(bpf_program__name(prog), kDrainProbe) == 0) continue;  // at the end only: drain_alloc_batches()
    progs.push_back(prog);
  }
  std::stable_sort(progs.begin(), progs.end(), [](bpf_program* a, bpf_program* b) {
    return attach_rank(bpf_program__name(a)) < attach_rank(bpf_program__name(b));
  });
  for (bpf_program* prog : progs) {
    const char* probe = bpf_program__name(prog);
    // The checked file's /proc/self/fd path: libbpf reads that file, and the
    // kernel registers the uprobes on its inode (no name is looked up again).
    bpf_link* l = bpf_program__attach_usdt(prog, pid, binary.path().c_str(), "jvmtrace", probe, nullptr);
    if (!l) {
      int err = errno;
      if (err == ENOENT && is_optional_probe(probe) && ::kill(pid, 0) == 0) {
        if (absent) absent->push_back(probe);
        continue;
      }
      *error = std::string("cannot attach to jvmtrace:") + probe + " in " + printable(binary.shown()) + ": " +
               std::strerror(err);
      if (err == ESRCH || (err == ENOENT && pid > 0 && !process_alive(pid))) {
        // The target ended while the probes went in (a zombie, unreaped,
        // still answers kill(pid, 0) but has no memory to probe).
        *error += " (process " + std::to_string(pid) + " has exited)";
      } else if (err == ENOENT) {
        *error += " (no such probe: not a patched JVM?)";
      }
      return false;
    }
    links->emplace_back(l);
  }
  return true;
}

Drain drain_alloc_batches(bpf_object* obj, const PinnedPid& target, const TargetFile& binary,
                          const volatile __u64* drained_ns, uint64_t end_ns, double timeout_s,
                          const std::function<void()>& tick, std::string* error) {
  bpf_program* prog = bpf_object__find_program_by_name(obj, kDrainProbe);
  if (!prog || !bpf_program__autoload(prog)) {
    *error = "no alloc__drain program loaded";
    return Drain::kAttachFailed;
  }
  Links drain;
  bpf_link* l = bpf_program__attach_usdt(prog, target.pid(), binary.path().c_str(), "jvmtrace", kDrainProbe, nullptr);
  if (!l) {
    const int err = errno;
    if (!target.alive()) return Drain::kTargetExited;
    *error = std::string("cannot attach to jvmtrace:alloc__drain: ") + std::strerror(err);
    return Drain::kAttachFailed;
  }
  drain.emplace_back(l);
  const uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + static_cast<uint64_t>(timeout_s * 1e9);
  for (;;) {
    if (__atomic_load_n(drained_ns, __ATOMIC_ACQUIRE) >= end_ns) return Drain::kDone;
    // A JVM that exits flushes every buffer at its last safepoint.
    if (!target.alive()) return Drain::kTargetExited;
    if (clock_ns(CLOCK_MONOTONIC) >= deadline) return Drain::kTimedOut;
    if (tick) tick();
    usleep(10000);
  }
}

std::string drain_note(Drain d, const std::string& error) {
  switch (d) {
    case Drain::kDone:
    case Drain::kTargetExited:
      return "";
    case Drain::kTimedOut:
      return "the JVM reached no safepoint in time to hand over its buffered slow paths: those of the last "
             "moments before the end (up to 100 ms of each busy thread, more of a quiet one) are missing";
    case Drain::kAttachFailed:
      return "the JVM's buffered slow paths could not be collected (" + error +
             "): those of the last moments before the end are missing";
  }
  return "";
}

}  // namespace jvmtrace
