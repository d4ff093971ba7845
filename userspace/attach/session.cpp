#include "attach/session.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/strings.h"
#include "process/target.h"
#include "process/target_file.h"

namespace jvmtrace {

bool check_target(const char* cmd, pid_t pid, const std::string& binary, Target* t) {
  // Pinned first: what is read of it from here on is this process's.
  if (!t->proc.open(pid) || !process_alive(pid)) {
    std::fprintf(stderr, "%s: no process with PID %d\n", cmd, pid);
    return false;
  }
  t->pid = pid;
  std::string error;
  const bool ok = binary.empty() ? open_libjvm(pid, &t->binary, &error)
                                 : open_given_file(binary, kMaxElfBytes, &t->binary, &error);
  if (!ok && error.empty()) {
    std::fprintf(stderr, "%s: PID %d is not a JVM: no libjvm.so mapped%s\n", cmd, pid,
                 geteuid() ? " (or /proc/PID/maps is not readable: run as root)" : "");
    return false;
  }
  if (!ok) {
    std::fprintf(stderr, "%s: libjvm.so of PID %d: %s\n", cmd, pid, printable(error).c_str());
    return false;
  }
  if (!t->proc.alive()) {  // (its maps were read: of this process, not of a successor)
    std::fprintf(stderr, "%s: PID %d exited while it was being looked at\n", cmd, pid);
    return false;
  }
  t->probe_args = usdt_probe_args(t->binary.path(), "jvmtrace");
  t->probes.clear();
  for (const auto& [name, args] : t->probe_args) t->probes.insert(name);
  t->has_probes = !t->probes.empty();
  return true;
}

void print_no_probes(const char* cmd, const Target& t, const char* alternative) {
  std::fprintf(stderr,
               "%s: %s in PID %d has no jvmtrace probes (an unpatched HotSpot).\n"
               "  %s\n"
               "  The bpftrace tools also work on it: scripts/jvmtrace-bt tlabstat_stock %d\n"
               "  (and gcpause_stock, allocslow_stock, plabstat_stock, allocbyclass_stock).\n",
               cmd, printable(t.binary.shown()).c_str(), t.pid, alternative, t.pid);
}

std::string bpf_load_hint(int err) {
  std::string s = std::strerror(err);
  if (geteuid() != 0 || err == EPERM) s += " (run as root, or with CAP_BPF and CAP_PERFMON)";
  return s;
}

bool BpfSession::prepare(const Choice& c) {
  if (!check_target(cmd_, c.pid, c.binary, &target_)) return false;
  stock_ = c.mode == "stock" || (c.mode == "auto" && !target_.has_probes);
  if (!stock_ && !target_.has_probes) {
    print_no_probes(cmd_, target_, c.stock_alternative);
    return false;
  }
  std::string error;
  if (stock_ && !stock_target_.prepare(c.pid, target_.binary, &error)) {
    std::fprintf(stderr, "%s: stock mode cannot trace PID %d: %s\n", cmd_, c.pid, error.c_str());
    return false;
  }
  vm_stacks_ = !stock_ && c.per_event && !c.user_stacks && target_.probes.count("alloc__sample");
  if (!stock_ && !choose_probe_set(c.probe_set, target_.probes, c.per_event && !vm_stacks_, &probe_set_, &error)) {
    std::fprintf(stderr, "%s: %s\n", cmd_, error.c_str());
    return false;
  }
  return true;
}

const char* BpfSession::probe_set_text() const {
  if (stock_) return "stock mode";
  switch (probe_set_) {
    case ProbeSet::kBatched: return "batched: one hit per batch of slow paths and of PLAB events";
    case ProbeSet::kCombined: return "combined: one hit per slow path and per PLAB batch";
    case ProbeSet::kSeparate: return "separate: a hit per probe site";
  }
  return "";
}

bool BpfSession::loaded(int result, bpf_object* obj) {
  if (result != 0 || !obj) {
    std::fprintf(stderr, "%s: loading the BPF programs failed: %s\n", cmd_, bpf_load_hint(errno).c_str());
    return false;
  }
  obj_ = obj;
  return true;
}

bool BpfSession::attach() {
  std::string error;
  const bool ok = stock_ ? stock_target_.attach(obj_, &links_, &error)
                         : attach_jvmtrace_usdt(obj_, target_.pid, target_.binary, &links_, &error, &absent_);
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", cmd_, error.c_str());
    links_.clear();
  }
  return ok;
}

bool BpfSession::has_pause_probes() const {
  return !stock_ && std::find(absent_.begin(), absent_.end(), "gc__pause__end") == absent_.end();
}

bool BpfSession::has_safepoint_probes() const {
  return !stock_ && target_.probes.count("safepoint__end") &&
         std::find(absent_.begin(), absent_.end(), "safepoint__end") == absent_.end();
}

bool BpfSession::plab_handed_over() const {
  const auto it = target_.probe_args.find("plab__batch");
  return !stock_ && probe_set_ != ProbeSet::kSeparate && it != target_.probe_args.end() && it->second >= 6;
}

std::string BpfSession::drain(const volatile __u64* drained_ns, uint64_t end_ns,
                              const std::function<void()>& tick) {
  if (stock_ || probe_set_ != ProbeSet::kBatched || !target_.proc.alive()) return "";
  std::string error;
  const Drain d = drain_alloc_batches(obj_, target_.proc, target_.binary, drained_ns, end_ns, kDrainTimeout, tick,
                                      &error);
  return drain_note(d, error);
}

}  // namespace jvmtrace
