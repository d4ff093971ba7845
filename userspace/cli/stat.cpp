// `jvmtrace stat`: attach to a patched JVM, aggregate in the kernel, print
// histograms, counters and the top threads and classes.
#include "cli/commands.h"

#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attach/launch.h"
#include "attach/session.h"
#include "base/clock.h"
#include "base/json.h"
#include "cli/common.h"
#include "cli/histogram.h"
#include "cli/vm_flags.h"
#include "jvmtrace_stat.h"
#include "jvmtrace_stat.skel.h"
#include "jvmtrace_stat_stock.skel.h"
#include "process/target.h"

namespace jvmtrace {

namespace {

// Names parallel to the enums of bpf/jvmtrace_stat.h.
const char* const kCounterNames[] = {
    "tlab_refills",  "tlab_bytes",  "tlab_waste_bytes", "slow_paths",           "slow_failed",
    "slow_after_gc", "outside_allocs", "outside_bytes", "gc_starts",            "gc_ends",
    "plabs",         "plab_bytes",  "plab_waste_bytes", "promoted_direct",      "promoted_direct_bytes",
    "map_full_drops", "names_lost", "gc_inflight_full_drops", "gc_ends_without_start",
    "slow_exits_without_enter", "gc_pauses", "gc_pause_ends_without_start", "plab_batches",
    "plab_records_lost", "alloc_batches", "alloc_records_lost", "alloc_records_outside_window",
    "safepoints", "safepoint_ns", "safepoint_operations_not_kept"};
static_assert(sizeof(kCounterNames) / sizeof(*kCounterNames) == JT_COUNTER_COUNT, "counter names");
// Names parallel to enum jt_live_counter (stat --live).
const char* const kLiveCounterNames[] = {"samples", "kept", "not_kept_map_full", "fate_batches", "died", "thinned",
                                         "untracked", "promoted", "fates_of_unknown_ids", "fates_lost_in_vm",
                                         "fate_records_unreadable"};
static_assert(sizeof(kLiveCounterNames) / sizeof(*kLiveCounterNames) == JT_LIVE_COUNTER_COUNT, "live counter names");
// What jvmtrace_live_heap_samples_lost_total adds up: samples whose fate the
// estimate cannot follow (each stays out, or stays counted alive).
const int kLiveLossCounters[] = {JT_L_MAP_FULL, JT_L_VM_LOST, JT_L_RECORDS_LOST};
// --live: the kept samples' map holds this many ids per entry of the VM's
// table (JvmtraceLiveSamples, default 65,536): room for the ids whose fates
// are on their way, and for those a lost record never names.
constexpr uint32_t kLiveMapPerTableEntry = 2;
constexpr long kVmLiveSamplesDefault = 65536;
// Counted in user space: new-key notices from the kernel too short to read.
const char* const kMalformedName = "malformed_notices";

struct HistInfo {
  const char* name;   // JSON key; nullptr: never shown (an input of another)
  const char* title;  // text heading
  const char* unit;
  uint64_t divisor;
};
const HistInfo kHists[] = {
    {"tlab_size", "TLAB sizes", "bytes", 1},
    {"slow_path_latency", "Allocation slow path, time per slow path", "usecs", 1},
    {"outside_tlab_size", "Objects allocated outside TLABs", "bytes", 1},
    {"gc_pause_young", "GC pauses, young", "usecs", 1},
    {"gc_pause_full", "GC pauses, full", "usecs", 1},
    {"gc_concurrent_cycle", "GC concurrent cycles (not pauses)", "usecs", 1},
    {"plab_size", "PLAB sizes", "bytes", 1},
    {"gc_pause_remark", "GC pauses, remark (G1)", "usecs", 1},
    {"gc_pause_cleanup", "GC pauses, cleanup (G1)", "usecs", 1},
    {nullptr, "", "usecs", 1},  // JT_H_GC_YOUNG_US: the young pauses' stand-in
    {nullptr, "", "usecs", 1},  // JT_H_GC_FULL_US
    {"gc_pause_concurrent", "GC pauses of concurrent collectors (ZGC, Shenandoah)", "usecs", 1},
    {"gc_pause_degenerated", "GC pauses, degenerated (Shenandoah)", "usecs", 1},
    {"safepoint_reach", "Safepoints, time to reach (every stop of the world)", "usecs", 1},
    {"safepoint_at", "Safepoints, time at them", "usecs", 1},
};
// Whether histogram h is part of a report: without pause probes the young
// and full pauses are measured from gc__start to gc__end, and G1's Remark
// and Cleanup pauses are not seen at all (so not shown as empty); without
// the safepoint probes, neither are safepoints nor ZGC's and Shenandoah's
// pauses.
bool shown(int h, bool pauses, bool safepoints) {
  if (!kHists[h].name) return false;
  if (h == JT_H_PAUSE_CONCURRENT_US || h == JT_H_PAUSE_DEGENERATED_US || h == JT_H_SAFEPOINT_REACH_US ||
      h == JT_H_SAFEPOINT_AT_US)
    return safepoints;
  return pauses || (h != JT_H_PAUSE_REMARK_US && h != JT_H_PAUSE_CLEANUP_US);
}
static_assert(sizeof(kHists) / sizeof(*kHists) == JT_HIST_COUNT, "histogram names");

// Prometheus (print_prometheus): the pause histograms as one family by kind.
struct PauseKind {
  int hist;
  const char* kind;
};
const PauseKind kPauseKinds[] = {
    {JT_H_PAUSE_YOUNG_US, "young"},     {JT_H_PAUSE_FULL_US, "full"},
    {JT_H_PAUSE_REMARK_US, "remark"},   {JT_H_PAUSE_CLEANUP_US, "cleanup"},
    {JT_H_PAUSE_CONCURRENT_US, "concurrent"}, {JT_H_PAUSE_DEGENERATED_US, "degenerated"},
};
bool is_pause(int h) {
  for (const PauseKind& p : kPauseKinds)
    if (p.hist == h) return true;
  return false;
}
// The pause buckets' upper bounds, as log2 slots: slot k ends at 2^(k+1) us,
// so 5 -> 64 us, 7 -> 256 us, ... 23 -> 16.8 s.
const std::vector<int> kPauseCuts = {5, 7, 9, 11, 13, 15, 17, 19, 21, 23};
// The counters a fleet gets by default; --prometheus-full adds the rest.
constexpr bool default_counter(int c) {
  return c == JT_C_TLAB_REFILLS || c == JT_C_TLAB_BYTES || c == JT_C_TLAB_WASTE_BYTES || c == JT_C_SLOW_PATHS ||
         c == JT_C_OUTSIDE_ALLOCS || c == JT_C_OUTSIDE_BYTES || c == JT_C_GC_STARTS || c == JT_C_GC_ENDS ||
         c == JT_C_PAUSES || c == JT_C_PLABS || c == JT_C_PLAB_BYTES || c == JT_C_SAFEPOINTS || c == JT_C_SAFEPOINT_NS;
}
// What jvmtrace_losses_total adds up (with malformed_notices): each is a
// figure not taken (docs/stat.md's table).
const int kLossCounters[] = {JT_C_MAP_FULL,          JT_C_NAMES_LOST,         JT_C_GC_INFLIGHT_FULL,
                             JT_C_GC_END_UNPAIRED,   JT_C_SLOW_EXIT_UNPAIRED, JT_C_PAUSE_END_UNPAIRED,
                             JT_C_PLAB_RECORDS_LOST, JT_C_ALLOC_RECORDS_LOST, JT_C_SAFEPOINT_OPS_FULL};

struct SkelDelete {
  void operator()(jvmtrace_stat* s) const { jvmtrace_stat__destroy(s); }
};
struct StockSkelDelete {
  void operator()(jvmtrace_stat_stock* s) const { jvmtrace_stat_stock__destroy(s); }
};

// The maps of bpf/stat_core.bpf.h, from whichever object was loaded.
struct StatMaps {
  bpf_map *counters, *hists, *threads, *classes, *new_keys;
  bpf_map* safepoint_ops = nullptr;  // usdt mode only
  // --live only: the per-CPU counters and the snapshot (the object's .bss,
  // memory-mapped: written by the kernel, read under its sequence count)
  bpf_map* live_counters = nullptr;
  const volatile jt_live_snapshot* live_snapshot = nullptr;
  template <typename Skel>
  static StatMaps of(Skel* s) {
    return {s->maps.counters, s->maps.hists, s->maps.threads, s->maps.classes, s->maps.new_keys};
  }
};

struct Options {
  pid_t pid = 0;
  std::string binary;   // the ELF file with the probes; default: the JVM's libjvm.so
  double interval = 0;  // 0: print once, at the end
  double duration = 0;  // 0: until Ctrl-C or the target exits
  bool json = false;
  bool prometheus = false;  // the text exposition format, each report ending "# EOF"
  bool prometheus_full = false;  // every counter and histogram (else the fleet's default set)
  bool verbose = false;
  bool slow_path = true;
  std::string mode = "auto";
  std::string probe_set = "auto";  // usdt: batched, combined, separate, or auto (the first the JVM has)
  bool live = false;        // --live: alloc__sample and sample__fates, the live-heap estimate
  long live_samples = 0;    // --live-samples N: JvmtraceLiveSamples while attached, the map sized for it
                            // (0: the JVM's own, the map sized for the default)
  int top = 10;
  double launch_timeout = 30;  // -- COMMAND: how long to wait for its JVM
  bool launch_timeout_set = false;
  // Where reports go: stdout; with -- COMMAND stderr (as perf stat), so the
  // program's stdout stays its own.
  FILE* out = stdout;
};

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace stat -p PID [OPTIONS]\n"
               "       jvmtrace stat [OPTIONS] -- COMMAND [ARGS...]\n"
               "OPTIONS: [-i SEC] [-d SEC] [--top N] [--json|--prometheus[-full]] [--mode auto|usdt|stock]\n"
               "         [--probe-set auto|batched|combined|separate] [--no-slow-path] [--launch-timeout S] [-v]\n"
               "         [--live [--live-samples N]]\n"
               "Aggregates a JVM's jvmtrace probes (a stock JVM: uprobes) in the kernel and prints\n"
               "log2 histograms (TLAB sizes, slow-path latency, outside-TLAB sizes, GC pauses by kind,\n"
               "PLAB sizes),\n"
               "counters, and the top threads and classes by allocated bytes.\n"
               "-- COMMAND runs a Java program and aggregates its JVM from its first allocation:\n"
               "the JVM is held at start-up (-XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup\n"
               "after argv[0] of a java launcher, else in JDK_JAVA_OPTIONS, which makes java print a\n"
               "NOTE line on stderr) until the probes are attached.  The program keeps jvmtrace's\n"
               "stdin, stdout, stderr and terminal; Ctrl-C is the program's.  Reports go to stderr\n"
               "(the program's stdout stays its own), the last when its JVM exits; the exit status\n"
               "is COMMAND's (128+N: killed by signal N; 127: not found, 126: not executable).\n"
               "  -p, --pid PID        the JVM\n"
               "  -i, --interval SEC   also print every SEC seconds (figures since attach)\n"
               "  -d, --duration SEC   stop after SEC seconds (default: Ctrl-C or the JVM exits)\n"
               "      --top N          threads and classes to list (default 10)\n"
               "      --json           one JSON object per report, for machines\n"
               "      --prometheus     each report in Prometheus' text format, ending \"# EOF\": the\n"
               "                       default set (GC pauses by kind in 11 buckets, the main counters)\n"
               "      --prometheus-full  the same with every counter and histogram (log2 buckets)\n"
               "      --probe-set SET  usdt: batched, one probe hit per batch of a thread's allocation slow\n"
               "                       paths (alloc__batch, up to 128) and of PLAB events (plab__batch);\n"
               "                       combined, one hit per slow path (alloc__slow); separate, the probes\n"
               "                       of each site (three hits per TLAB refill, two per PLAB); auto\n"
               "                       (default): the first of these the JVM has.  Same figures either way;\n"
               "                       batched figures of -i reports lag by up to 100 ms, and stat's end\n"
               "                       waits (up to 5 s) for the JVM's next safepoint to hand over the rest\n"
               "      --no-slow-path   with the separate probes: leave alloc__slow__enter/exit detached\n"
               "                       (no latency or outside-TLAB figures); no effect with the others,\n"
               "                       which cost nothing more for the slow path\n"
               "      --live           also the live heap: attaches alloc__sample and sample__fates (a patched\n"
               "                       JVM's; an error on a stock one), so the VM samples allocations (its\n"
               "                       JvmtraceSampleRate, default 250/s, each with a stack walk) and tracks\n"
               "                       the sampled objects by weak handles; the kernel keeps each tracked\n"
               "                       sample's weight until its death is reported.  Shows the estimated live\n"
               "                       bytes as of the last collection that reported deaths, of objects\n"
               "                       allocated since the attach (report --live's figure; one gauge per JVM,\n"
               "                       jvmtrace_live_heap_estimated_bytes), the tracked samples, the level\n"
               "                       and the samples whose fate was lost\n"
               "      --live-samples N  --live: the VM tracks at most N samples (JvmtraceLiveSamples, default\n"
               "                       65536; 64 to 1048576) while stat is attached, set through the attach\n"
               "                       mechanism and put back after; the kernel's map is sized for it\n"
               "                       (twice N; without it, for the default: a JVM started with a larger\n"
               "                       -XX:JvmtraceLiveSamples needs it, else samples are counted lost)\n"
               "      --mode MODE      usdt: a patched JVM's jvmtrace probes; stock: uprobes on an unpatched\n"
               "                       HotSpot (no slow-path latency, TLAB waste or PLAB figures);\n"
               "                       auto (default): usdt if the JVM has the probes, else stock\n"
               "  -b, --binary PATH    the ELF file with the probes (default: PID's libjvm.so;\n"
               "                       e.g. the USDT test fixture)\n"
               "      --launch-timeout S  -- COMMAND: wait at most S seconds (default 30) for its JVM\n"
               "  -v, --verbose        libbpf debug output; with -- COMMAND, how it is started and let go\n"
               "EXAMPLES:\n"
               "  jvmtrace stat -- java -Xmx1g -jar app.jar   # from its first allocation to its exit\n"
               "  jvmtrace stat -p 4242               # until Ctrl-C\n"
               "  jvmtrace stat -p 4242 -d 30 --json  # 30 s, JSON\n"
               "  jvmtrace stat -p 4242 -i 5          # a report every 5 s\n"
               "  jvmtrace stat -p 4242 -i 10 --live  # and the live heap's estimate\n");
}

std::string thread_comm(pid_t pid, uint32_t tid) {
  std::string s = thread_name(pid, tid);
  return s.empty() ? "?" : s;
}

// One CPU's copy of a class's figures added to the total.  Only the CPU
// that made the entry holds the name's length (the others hold 0): the
// largest is taken.
void add_class(jt_class_val& total, const jt_class_val& cpu) {
  total.tlab_refills += cpu.tlab_refills;
  total.tlab_bytes += cpu.tlab_bytes;
  total.outside_allocs += cpu.outside_allocs;
  total.outside_bytes += cpu.outside_bytes;
  total.name_len = std::max(total.name_len, cpu.name_len);
}

// One CPU's copy of an operation's safepoint figures added to the total.
void add_safepoint(jt_safepoint_val& total, const jt_safepoint_val& cpu) {
  total.count += cpu.count;
  total.reach_ns += cpu.reach_ns;
  total.at_ns += cpu.at_ns;
  total.total_ns += cpu.total_ns;
  total.reach_max_ns = std::max(total.reach_max_ns, cpu.reach_max_ns);
  total.total_max_ns = std::max(total.total_max_ns, cpu.total_max_ns);
}

struct ThreadRow { uint32_t tid; jt_thread_val v; std::string comm; };
struct SafepointRow { uint64_t key; jt_safepoint_val v; std::string operation; };
struct ClassRow { uint64_t key; jt_class_val v; std::string name; };

class StatSession {
 public:
  // pauses: the pause probes are attached (not stock mode, not a JVM
  // patched before them); probe_set: which allocation probes (usdt mode);
  // slow_path: the slow path is seen (not --no-slow-path on separate ones).
  // safepoints: the safepoint probes are attached (and with them ZGC's and
  // Shenandoah's pauses).
  StatSession(const Options& o, const StatMaps& maps, bool stock, bool pauses, bool safepoints, const char* probe_set,
              bool slow_path)
      : o_(o), maps_(maps), stock_(stock), pauses_(pauses), safepoints_(safepoints), probe_set_(probe_set),
        slow_path_(slow_path) {}

  void report(double seconds) {
    read_maps();
    resolve_names();
    if (o_.prometheus) print_prometheus();
    else if (o_.json) print_json(seconds);
    else print_text(seconds);
    std::fflush(o_.out);
  }

 private:
  // counters, hists and classes are per-CPU maps (bpf/stat_core.bpf.h): each
  // figure is the sum of the CPUs' copies.
  void read_maps() {
    for (int c = 0; c < JT_COUNTER_COUNT; c++) {
      uint32_t k = c;
      counters_[c] = 0;
      for (uint64_t v : lookup_percpu_elem<uint64_t>(maps_.counters, &k, sizeof k)) counters_[c] += v;
    }
    for (int h = 0; h < JT_HIST_COUNT; h++) {
      uint32_t k = h;
      std::memset(&hists_[h], 0, sizeof hists_[h]);
      for (const jt_hist_val& v : lookup_percpu_elem<jt_hist_val>(maps_.hists, &k, sizeof k)) {
        for (int s = 0; s < JT_HIST_SLOTS; s++) hists_[h].slots[s] += v.slots[s];
        hists_[h].sum += v.sum;
      }
    }
    if (maps_.live_counters) {
      for (int c = 0; c < JT_LIVE_COUNTER_COUNT; c++) {
        uint32_t k = c;
        live_counters_[c] = 0;
        for (uint64_t v : lookup_percpu_elem<uint64_t>(maps_.live_counters, &k, sizeof k)) live_counters_[c] += v;
      }
      read_live_snapshot();
    }
    if (!pauses_) {  // the collections stand in for their pauses
      hists_[JT_H_PAUSE_YOUNG_US] = hists_[JT_H_GC_YOUNG_US];
      hists_[JT_H_PAUSE_FULL_US] = hists_[JT_H_GC_FULL_US];
    }
    threads_.clear();
    for (const auto& [tid, v] : read_hash_map<uint32_t, jt_thread_val>(maps_.threads))
      threads_.push_back({tid, v, {}});
    classes_.clear();
    for (const auto& [key, v] : read_percpu_hash_map<uint64_t, jt_class_val>(maps_.classes, add_class))
      classes_.push_back({key, v, {}});
    safepoint_ops_.clear();
    if (maps_.safepoint_ops)
      for (const auto& [key, v] : read_percpu_hash_map<uint64_t, jt_safepoint_val>(maps_.safepoint_ops, add_safepoint)) {
        auto it = op_names_.find(key);
        if (it == op_names_.end()) {  // its notice lost: static text in the VM, read once
          std::string n = read_process_string(o_.pid, key, 128);
          if (!n.empty()) it = op_names_.emplace(key, n).first;
        }
        safepoint_ops_.push_back({key, v, it == op_names_.end() ? "<unreadable>" : it->second});
      }
    std::sort(safepoint_ops_.begin(), safepoint_ops_.end(), [](const SafepointRow& a, const SafepointRow& b) {
      return a.v.total_ns != b.v.total_ns ? a.v.total_ns > b.v.total_ns : a.key < b.key;
    });
    std::sort(threads_.begin(), threads_.end(), [](const ThreadRow& a, const ThreadRow& b) {
      return a.v.tlab_bytes + a.v.outside_bytes > b.v.tlab_bytes + b.v.outside_bytes;
    });
    std::sort(classes_.begin(), classes_.end(), [](const ClassRow& a, const ClassRow& b) {
      return a.v.tlab_bytes + a.v.outside_bytes > b.v.tlab_bytes + b.v.outside_bytes;
    });
  }

  // The kernel's last snapshot, read while its sequence count is even and
  // unmoved (its one writer, the VM's ServiceThread, takes microseconds).
  void read_live_snapshot() {
    const volatile jt_live_snapshot* k = maps_.live_snapshot;
    for (int tries = 0; tries < 1000; tries++) {
      const uint64_t seq = k->seq;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      jt_live_snapshot copy;
      copy.estimate_bytes = k->estimate_bytes;
      copy.alive_bytes = k->alive_bytes;
      copy.young_bytes = k->young_bytes;
      copy.batches = k->batches;
      copy.ts_ns = k->ts_ns;
      copy.level = k->level;
      copy.tracked = k->tracked;
      copy.gc_id = k->gc_id;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (seq % 2 == 0 && k->seq == seq) {
        live_ = copy;
        return;
      }
    }  // (else the last good one stays)
  }
  uint64_t live_losses() const {
    uint64_t n = 0;
    for (int c : kLiveLossCounters) n += live_counters_[c];
    return n;
  }
  // Kept samples whose fate has not come: the kernel map's entries.
  uint64_t live_kept_now() const {
    const uint64_t gone = live_counters_[JT_L_DIED] + live_counters_[JT_L_THINNED] + live_counters_[JT_L_UNTRACKED] -
                          live_counters_[JT_L_FATES_UNKNOWN];
    return live_counters_[JT_L_KEPT] > gone ? live_counters_[JT_L_KEPT] - gone : 0;
  }

  // Names are learnt when the kernel reports a new key (new_keys ring
  // buffer): the thread or class has just been used, so the thread and the
  // JVM exist and the name can be read (a class name from the JVM's memory at
  // the key, the name's address; a thread's from /proc).
 public:
  static int on_new_key(void* ctx, void* data, size_t size) {
    auto* self = static_cast<StatSession*>(ctx);
    if (size < sizeof(jt_new_key)) {  // not a notice: counted, shown as malformed_notices
      self->malformed_notices_++;
      return 0;
    }
    const auto* k = static_cast<const jt_new_key*>(data);
    if (k->kind == JT_KEY_SAFEPOINT_OP) {
      if (size < sizeof(jt_new_op)) {
        self->malformed_notices_++;
        return 0;
      }
      // The name as the kernel copied it at the probe; read here only if it
      // could not (its page not yet touched) or may have been cut, while the
      // JVM that just ended this safepoint still runs.
      const auto* op = static_cast<const jt_new_op*>(data);
      std::string n;
      if (op->name_len > 0 && op->name_len < JT_OP_NAME_MAX - 1)
        n.assign(op->name, strnlen(op->name, op->name_len));
      else
        n = read_process_string(self->o_.pid, op->key, 128);
      // (at most one notice per entry of safepoint_ops: 256)
      if (!n.empty()) self->op_names_.emplace(op->key, n);
    } else if (k->kind == JT_KEY_THREAD) {
      // The name the thread had when it first allocated, read in the kernel
      // by the thread itself; else (a batch's record of another thread) /proc.
      std::string c = k->comm[0] ? std::string(k->comm, strnlen(k->comm, sizeof k->comm))
                                 : thread_comm(self->o_.pid, static_cast<uint32_t>(k->key));
      if (c != "?") self->comm_.emplace(static_cast<uint32_t>(k->key), c);
    } else {
      std::string n = read_process_memory(self->o_.pid, k->key, std::min<uint32_t>(k->name_len, 512));
      if (!n.empty()) self->names_.emplace(k->key, n);
    }
    // A budget, as record's (decision 130): each notice costs a read of the
    // target, and libbpf 1.1 drains for as long as notices keep coming.  A
    // negative result stops the drain; the rest waits in the ring.
    if (self->deadline_ns_ && clock_ns(CLOCK_MONOTONIC) >= self->deadline_ns_) {
      self->budget_spent_ = true;
      return -EAGAIN;
    }
    return 0;
  }
  // Notices are read until deadline_ns (0: no limit); budget_spent() says
  // whether the last poll stopped there (its negative result no error).
  void read_until(uint64_t deadline_ns) {
    deadline_ns_ = deadline_ns;
    budget_spent_ = false;
  }
  bool budget_spent() const { return budget_spent_; }
  uint64_t live_map_full() const { return maps_.live_counters ? live_counters_[JT_L_MAP_FULL] : 0; }

 private:
  // Names for the rows; a key not learnt yet (its notice lost or the read
  // failed) gets one more try now.
  void resolve_names() {
    for (auto& t : threads_) {
      auto it = comm_.find(t.tid);
      if (it == comm_.end()) {
        std::string c = thread_comm(o_.pid, t.tid);
        if (c == "?") {  // the thread (or the JVM) is gone: ask again next time
          t.comm = "<exited>";
          continue;
        }
        it = comm_.emplace(t.tid, c).first;
      }
      t.comm = it->second;
    }
    for (auto& c : classes_) {
      auto it = names_.find(c.key);
      if (it == names_.end()) {
        std::string n = read_process_memory(o_.pid, c.key, std::min<uint32_t>(c.v.name_len, 512));
        if (n.empty()) {  // unreadable now (JVM gone): ask again next time
          c.name = "<unreadable>";
          continue;
        }
        it = names_.emplace(c.key, n).first;
      }
      c.name = it->second;
    }
  }

  void print_text(double seconds) {
    std::fprintf(o_.out, "\njvmtrace stat: PID %d, %.1f s since attach%s\n", o_.pid, seconds,
                stock_ ? " (stock mode: no slow-path, TLAB waste or PLAB figures)"
                : slow_path_ ? "" : " (--no-slow-path: no slow-path latency or outside-TLAB figures)");
    for (int c = 0; c < JT_COUNTER_COUNT; c++)
      std::fprintf(o_.out, "  %-24s %llu\n", kCounterNames[c], (unsigned long long)counters_[c]);
    std::fprintf(o_.out, "  %-24s %llu\n", kMalformedName, (unsigned long long)malformed_notices_);
    if (!pauses_)
      std::fprintf(o_.out, "  (%s: pauses are measured from gc__start to gc__end; G1 Remark and Cleanup are not seen)\n",
                   stock_ ? "stock mode" : "this JVM has no pause probes");
    for (int h = 0; h < JT_HIST_COUNT; h++) {
      if (!shown(h, pauses_, safepoints_)) continue;
      std::fprintf(o_.out, "\n%s:\n", kHists[h].title);
      print_log2_hist(o_.out, hists_[h].slots, JT_HIST_SLOTS, kHists[h].unit, kHists[h].divisor);
    }
    if (safepoints_) {
      std::fprintf(o_.out, "\nSafepoints by operation (every stop of the world):\n");
      std::fprintf(o_.out, "  %-32s %8s %12s %12s %12s %14s\n", "OPERATION", "COUNT", "REACH_MEAN", "REACH_MAX",
                   "TOTAL_MAX", "TOTAL");
      for (size_t i = 0; i < safepoint_ops_.size() && i < static_cast<size_t>(o_.top); i++) {
        const auto& r = safepoint_ops_[i];
        std::fprintf(o_.out, "  %-32s %8llu %9.3f ms %9.3f ms %9.3f ms %11.3f ms\n", printable(r.operation).c_str(),
                     (unsigned long long)r.v.count, r.v.count ? r.v.reach_ns / 1e6 / r.v.count : 0.0,
                     r.v.reach_max_ns / 1e6, r.v.total_max_ns / 1e6, r.v.total_ns / 1e6);
      }
    }
    if (maps_.live_counters) print_live_text();
    std::fprintf(o_.out, "\nTop threads by allocated bytes (TLAB bytes + outside-TLAB bytes):\n");
    std::fprintf(o_.out, "  %-8s %-16s %10s %14s %10s %14s\n", "TID", "COMM", "REFILLS", "TLAB_BYTES", "OUTSIDE", "OUTSIDE_BYTES");
    for (size_t i = 0; i < threads_.size() && i < static_cast<size_t>(o_.top); i++) {
      const auto& t = threads_[i];
      std::fprintf(o_.out, "  %-8u %-16s %10llu %14llu %10llu %14llu\n", t.tid, printable(t.comm).c_str(),
                  (unsigned long long)t.v.tlab_refills, (unsigned long long)t.v.tlab_bytes,
                  (unsigned long long)t.v.outside_allocs, (unsigned long long)t.v.outside_bytes);
    }
    std::fprintf(o_.out, "\nTop classes by allocated bytes (TLAB bytes: a sample weighted by bytes; outside: exact):\n");
    std::fprintf(o_.out, "  %-40s %10s %14s %10s %14s\n", "CLASS", "REFILLS", "TLAB_BYTES", "OUTSIDE", "OUTSIDE_BYTES");
    for (size_t i = 0; i < classes_.size() && i < static_cast<size_t>(o_.top); i++) {
      const auto& c = classes_[i];
      std::fprintf(o_.out, "  %-40s %10llu %14llu %10llu %14llu\n", printable(c.name).c_str(), (unsigned long long)c.v.tlab_refills,
                  (unsigned long long)c.v.tlab_bytes, (unsigned long long)c.v.outside_allocs,
                  (unsigned long long)c.v.outside_bytes);
    }
  }

  void print_live_text() {
    std::fprintf(o_.out, "\nLive heap (--live; objects allocated since the attach, as of the last collection that "
                 "reported deaths):\n");
    if (live_.batches == 0) {
      std::fprintf(o_.out, "  no collection has reported yet (no estimate)\n");
    } else {
      std::fprintf(o_.out, "  %-24s %llu (%.1f MiB), as of GC(%u)\n", "estimated_live_bytes",
                   (unsigned long long)live_.estimate_bytes, live_.estimate_bytes / 1048576.0, live_.gc_id);
      std::fprintf(o_.out, "  %-24s %u (each sample stands for 2^level times its weight)\n", "level", live_.level);
      std::fprintf(o_.out, "  %-24s %u (in the VM's table)\n", "tracked", live_.tracked);
      std::fprintf(o_.out, "  %-24s %llu (sampled since the last collection: too young, left out)\n",
                   "young_bytes_left_out", (unsigned long long)(live_.young_bytes << live_.level));
    }
    std::fprintf(o_.out, "  %-24s %llu%s\n", "samples_lost", (unsigned long long)live_losses(),
                 live_losses() ? " (their objects are missing from the estimate, or counted alive: see docs/stat.md)" : "");
    for (int c = 0; c < JT_LIVE_COUNTER_COUNT; c++)
      std::fprintf(o_.out, "  %-24s %llu\n", kLiveCounterNames[c], (unsigned long long)live_counters_[c]);
  }

  // Prometheus text exposition (docs/daemon.md, "Metrics"): names in base
  // units (seconds, bytes), counters ending _total, every sample labelled
  // with the JVM's pid and the mode; jvmtraced merges these blocks across
  // JVMs and adds the JVM's identity labels.  By default a small set a
  // fleet can afford (14 counters and 13 series per pause kind seen: 27 to
  // 66 per JVM); --prometheus-full adds every counter and histogram with all
  // its log2 buckets.
  void print_prometheus() {
    const std::string labels = "pid=\"" + std::to_string(o_.pid) + "\",mode=\"" + (stock_ ? "stock" : "usdt") + "\"";
    std::string s;
    auto family = [&](const std::string& name, const char* type, const std::string& help) {
      s += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    };
    auto counter = [&](const std::string& name, const std::string& help, const std::string& v) {
      family(name, "counter", help);
      s += name + "{" + labels + "} " + v + "\n";
    };
    uint64_t losses = malformed_notices_;
    for (int c : kLossCounters) losses += counters_[c];
    if (maps_.live_counters) losses += live_losses();
    for (int c = 0; c < JT_COUNTER_COUNT; c++) {
      if (!o_.prometheus_full && !default_counter(c)) continue;
      if (c == JT_C_SAFEPOINT_NS) {  // the base unit: seconds
        char v[48];
        std::snprintf(v, sizeof v, "%.9f", counters_[c] / 1e9);
        counter("jvmtrace_safepoint_seconds_total", "time in safepoints, begin to end (docs/stat.md)", v);
        continue;
      }
      counter(std::string("jvmtrace_") + kCounterNames[c] + "_total",
              std::string("jvmtrace stat counter ") + kCounterNames[c] + " (docs/stat.md)", std::to_string(counters_[c]));
    }
    if (o_.prometheus_full)
      counter(std::string("jvmtrace_") + kMalformedName + "_total",
              "jvmtrace stat: kernel notices too short to read (docs/stat.md)", std::to_string(malformed_notices_));
    counter("jvmtrace_losses_total",
            "figures jvmtrace could not take: the sum of the loss counters (each with --prometheus-full; docs/stat.md)",
            std::to_string(losses));
    // --live: one estimate per JVM (no label of its own: bounded
    // cardinality), shown once a collection has reported.
    if (maps_.live_counters) {
      auto gauge = [&](const std::string& name, const std::string& help, uint64_t v) {
        family(name, "gauge", help);
        s += name + "{" + labels + "} " + std::to_string(v) + "\n";
      };
      if (live_.batches) {
        gauge("jvmtrace_live_heap_estimated_bytes",
              "live bytes of the objects allocated since the attach, as of the last collection that reported "
              "deaths: the sampled survivors' weights x 2^level (stat --live; docs/stat.md)",
              live_.estimate_bytes);
        gauge("jvmtrace_live_heap_tracked_samples", "sampled objects the VM tracks (stat --live)", live_.tracked);
        gauge("jvmtrace_live_heap_sampling_level",
              "thinning level of the VM's table: each tracked sample stands for 2^level (stat --live)", live_.level);
      }
      counter("jvmtrace_live_heap_samples_lost_total",
              "sampled objects whose fate stat --live cannot follow: not kept (its map full), or their fate "
              "records lost (docs/stat.md)",
              std::to_string(live_losses()));
    }
    // Every stop-the-world pause in one family, by kind, in a dozen buckets
    // from 64 us to 16.8 s (x4 apart: cut from the kernel's log2 slots, so
    // exact).  By default a kind other than young is shown once it has
    // paused (a G1 without a concurrent cycle has no remark series).
    family("jvmtrace_gc_pause_seconds", "histogram",
           "stop-the-world GC pauses by kind (without pause probes: young and full collections, start to end)");
    for (const PauseKind& p : kPauseKinds) {
      if (!shown(p.hist, pauses_, safepoints_)) continue;
      const uint64_t n = hist_total(hists_[p.hist].slots, JT_HIST_SLOTS);
      if (!o_.prometheus_full && p.hist != JT_H_PAUSE_YOUNG_US && n == 0) continue;
      s += log2_hist_prometheus("jvmtrace_gc_pause_seconds", labels + ",kind=\"" + p.kind + "\"", hists_[p.hist].slots,
                                JT_HIST_SLOTS, hists_[p.hist].sum, true, kPauseCuts);
    }
    if (!o_.prometheus_full) {
      std::fprintf(o_.out, "%s# EOF\n", s.c_str());
      return;
    }
    for (int h = 0; h < JT_HIST_COUNT; h++) {
      if (!shown(h, pauses_, safepoints_) || is_pause(h)) continue;
      const bool secs = std::strcmp(kHists[h].unit, "usecs") == 0;
      const std::string name = std::string("jvmtrace_") + kHists[h].name + (secs ? "_seconds" : "_bytes");
      family(name, "histogram", std::string(kHists[h].title) + " (log2 buckets)");
      s += log2_hist_prometheus(name, labels, hists_[h].slots, JT_HIST_SLOTS, hists_[h].sum, secs);
    }
    if (safepoints_) {
      const std::string count = "jvmtrace_safepoint_operations_total", secs = "jvmtrace_safepoint_operation_seconds_total";
      family(count, "counter", "jvmtrace stat: safepoints that ended, by VM operation (docs/stat.md)");
      for (const auto& r : safepoint_ops_)
        s += count + "{" + labels + ",operation=\"" + prometheus_label_value(r.operation) + "\"} " +
             std::to_string(r.v.count) + "\n";
      family(secs, "counter", "jvmtrace stat: time in safepoints (begin to end), by VM operation (docs/stat.md)");
      for (const auto& r : safepoint_ops_) {
        char v[48];
        std::snprintf(v, sizeof v, "%.9f", r.v.total_ns / 1e9);
        s += secs + "{" + labels + ",operation=\"" + prometheus_label_value(r.operation) + "\"} " + v + "\n";
      }
    }
    std::fprintf(o_.out, "%s# EOF\n", s.c_str());
  }

  void print_json(double seconds) {
    Json j = {{"pid", o_.pid}, {"seconds", seconds}, {"mode", stock_ ? "stock" : "usdt"},
              {"slow_path_probes", slow_path_ && !stock_}};
    if (!stock_) j["probe_set"] = probe_set_;
    j["pause_probes"] = pauses_;
    Json& counters = j["counters"] = Json::object();
    for (int c = 0; c < JT_COUNTER_COUNT; c++) counters[kCounterNames[c]] = counters_[c];
    counters[kMalformedName] = malformed_notices_;
    Json& hists = j["histograms"] = Json::object();
    for (int h = 0; h < JT_HIST_COUNT; h++)
      if (shown(h, pauses_, safepoints_))
        hists[kHists[h].name] =
            log2_hist_json(hists_[h].slots, JT_HIST_SLOTS, kHists[h].unit, kHists[h].divisor, hists_[h].sum);
    j["safepoint_probes"] = safepoints_;
    if (maps_.live_counters) {
      Json& live = j["live"] = Json::object();
      live["snapshots"] = live_.batches;
      if (live_.batches) {
        live["estimated_live_bytes"] = live_.estimate_bytes;
        live["gc_id"] = live_.gc_id;
        live["level"] = live_.level;
        live["tracked"] = live_.tracked;
        live["alive_bytes"] = live_.alive_bytes << live_.level;
        live["young_bytes"] = live_.young_bytes << live_.level;
      }
      live["kept_now"] = live_kept_now();
      live["lost"] = live_losses();
      Json& lc = live["counters"] = Json::object();
      for (int c = 0; c < JT_LIVE_COUNTER_COUNT; c++) lc[kLiveCounterNames[c]] = live_counters_[c];
    }
    if (safepoints_) {
      Json& ops = j["safepoints_by_operation"] = Json::array();
      for (const auto& r : safepoint_ops_)
        ops.push_back({{"operation", r.operation}, {"count", r.v.count}, {"reaching_ns", r.v.reach_ns},
                       {"at_safepoint_ns", r.v.at_ns}, {"total_ns", r.v.total_ns}, {"reaching_max_ns", r.v.reach_max_ns},
                       {"total_max_ns", r.v.total_max_ns}});
    }
    Json& threads = j["threads"] = Json::array();
    for (const auto& t : threads_)
      threads.push_back({{"tid", t.tid}, {"comm", t.comm}, {"tlab_refills", t.v.tlab_refills},
                         {"tlab_bytes", t.v.tlab_bytes}, {"outside_allocs", t.v.outside_allocs},
                         {"outside_bytes", t.v.outside_bytes}});
    Json& classes = j["classes"] = Json::array();
    for (const auto& c : classes_)
      classes.push_back({{"class", c.name}, {"tlab_refills", c.v.tlab_refills}, {"tlab_bytes", c.v.tlab_bytes},
                         {"outside_allocs", c.v.outside_allocs}, {"outside_bytes", c.v.outside_bytes}});
    std::fprintf(o_.out, "%s\n", json_text(j).c_str());
  }

  const Options& o_;
  StatMaps maps_;
  bool stock_, pauses_, safepoints_;
  const char* probe_set_;
  bool slow_path_;
  uint64_t counters_[JT_COUNTER_COUNT] = {};
  jt_hist_val hists_[JT_HIST_COUNT] = {};
  uint64_t live_counters_[JT_LIVE_COUNTER_COUNT] = {};
  jt_live_snapshot live_ = {};
  std::vector<ThreadRow> threads_;
  std::vector<ClassRow> classes_;
  std::vector<SafepointRow> safepoint_ops_;
  std::unordered_map<uint64_t, std::string> op_names_;
  std::unordered_map<uint32_t, std::string> comm_;
  std::unordered_map<uint64_t, std::string> names_;
  uint64_t malformed_notices_ = 0;  // user space's own count, beside the kernel's counters
  uint64_t deadline_ns_ = 0;
  bool budget_spent_ = false;
};

// Aggregates o.pid until the end and prints the report; with launch, the
// JVM is held at start-up and let go once attached.  Returns stat's status.
int stat_pid(const Options& o, Launch* launch) {
  // One of two BPF objects with the same maps (bpf/stat_core.bpf.h).  Declared
  // before the session: its links are destroyed first (libbpf's USDT links
  // use the object's memory as they detach).
  std::unique_ptr<jvmtrace_stat, SkelDelete> skel;
  std::unique_ptr<jvmtrace_stat_stock, StockSkelDelete> stock_skel;
  BpfSession bpf("jvmtrace stat");
  if (!bpf.prepare({o.pid, o.binary, o.mode, o.probe_set, false,
                    "Aggregate it with --mode stock (or the default --mode auto)."}))
    return 1;
  const bool stock = bpf.stock();
  const ProbeSet probe_set = bpf.probe_set();
  if (o.live) {
    // The VM's own sampler and its weak handles: nothing of the kind in a
    // stock JVM, nor in one patched before issue 34.
    const auto& p = bpf.target().probes;
    if (stock || !p.count("alloc__sample") || !p.count("sample__fates")) {
      std::fprintf(stderr, "jvmtrace stat: --live needs the alloc__sample and sample__fates probes of a patched JVM; "
                   "%s has %s\n", printable(bpf.target().binary.shown()).c_str(),
                   stock && !bpf.target().has_probes ? "no jvmtrace probes (a stock JVM)"
                   : stock ? "them, but --mode stock was asked"
                           : "not (patched before them: rebuild it with scripts/build-patched-jdk.sh)");
      return 1;
    }
  }
  const TargetFile& libjvm = bpf.target().binary;
  set_libbpf_verbose(o.verbose);
  StatMaps maps{};
  bpf_object* obj = nullptr;
  int loaded = -1;
  if (stock) {
    const StockTarget& stock_target = bpf.stock_target();
    stock_skel.reset(jvmtrace_stat_stock__open());
    if (stock_skel) {
      stock_skel->rodata->klass_name_off = stock_target.klass_name_off;
      stock_skel->rodata->symbol_length_off = stock_target.symbol_length_off;
      stock_skel->rodata->symbol_body_off = stock_target.symbol_body_off;
      loaded = jvmtrace_stat_stock__load(stock_skel.get());
      if (loaded == 0) {
        for (const auto& [vptr, kind] : stock_target.tracer_kinds())
          bpf_map__update_elem(stock_skel->maps.tracer_kinds, &vptr, sizeof vptr, &kind, sizeof kind, BPF_ANY);
        maps = StatMaps::of(stock_skel.get());
        obj = stock_skel->obj;
      }
    }
  } else {
    skel.reset(jvmtrace_stat__open());
    if (skel) select_probe_set(skel->obj, probe_set);
    if (skel) {
      bpf_program__set_autoload(skel->progs.alloc__sample, o.live);
      bpf_program__set_autoload(skel->progs.sample__fates, o.live);
      skel->rodata->live_enabled = o.live;
      const uint64_t table = o.live_samples > 0 ? o.live_samples : kVmLiveSamplesDefault;
      bpf_map__set_max_entries(skel->maps.live_samples, o.live ? static_cast<uint32_t>(table * kLiveMapPerTableEntry) : 1);
    }
    if (skel && !o.slow_path && probe_set == ProbeSet::kSeparate) {
      bpf_program__set_autoload(skel->progs.alloc__slow__enter, false);
      bpf_program__set_autoload(skel->progs.alloc__slow__exit, false);
    }
    if (skel && (loaded = jvmtrace_stat__load(skel.get())) == 0) {
      maps = StatMaps::of(skel.get());
      maps.safepoint_ops = skel->maps.safepoint_ops;
      if (o.live) {
        maps.live_counters = skel->maps.live_counters;
        maps.live_snapshot = &skel->bss->live_snapshot;
      }
      obj = skel->obj;
    }
  }
  if (!bpf.loaded(loaded, obj)) return 1;
  // Batched records count from here (those left in the VM from an earlier
  // tracer ended before).
  // --live-samples: set before the probes go in (a JVM held at start-up
  // answers only once let go: then as soon as it does, as record does).
  std::vector<VmFlags::Flag> wanted;
  if (o.live && o.live_samples > 0) wanted.push_back({"JvmtraceLiveSamples", o.live_samples, kVmLiveSamplesDefault});
  VmFlags flags("jvmtrace stat", bpf.target().proc, std::move(wanted));
  if (!launch)
    while (flags.pending() && flags.step(true)) {
    }
  if (skel) skel->bss->window_start_ns = clock_ns(CLOCK_MONOTONIC);
  if (!bpf.attach()) {
    flags.restore();
    return 1;
  }
  const bool slow_path = o.slow_path || probe_set != ProbeSet::kSeparate;
  std::fprintf(stderr, "Attached %zu %s (%s) to PID %d (%s)%s. %s\n", bpf.links(), stock ? "uprobes" : "probes",
               bpf.probe_set_text(), o.pid, printable(libjvm.shown()).c_str(),
               slow_path || stock ? "" : ", slow-path probes left detached",
               launch ? "The report comes when the JVM exits." : "Hit Ctrl-C to end.");

  const bool no_pauses = !stock && !bpf.has_pause_probes();
  if (no_pauses)
    std::fprintf(stderr, "jvmtrace stat: this JVM's patch predates the pause probes (gc__pause__*): pauses are "
                 "measured from gc__start to gc__end and G1 Remark and Cleanup are not seen; rebuild it with "
                 "scripts/build-patched-jdk.sh\n");
  StatSession session(o, maps, stock, !stock && !no_pauses, bpf.has_safepoint_probes(), probe_set_name(probe_set),
                      slow_path);
  RingBuffer names(ring_buffer__new(bpf_map__fd(maps.new_keys), &StatSession::on_new_key, &session, nullptr));
  if (!names) {
    std::fprintf(stderr, "jvmtrace stat: ring buffer: %s\n", std::strerror(errno));
    bpf.detach();
    flags.restore();
    return 1;
  }
  // Let go only now: the new-key notices of the first threads and classes
  // need their reader.
  if (launch) launch->release(true);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next = start + std::chrono::duration<double>(o.interval);
  bool target_gone = false;
  while (!stop_requested()) {
    session.read_until(clock_ns(CLOCK_MONOTONIC) + 40'000'000);
    int polled = ring_buffer__poll(names.get(), 50);  // also the loop's 50 ms tick
    if (polled < 0 && polled != -EINTR && !session.budget_spent()) {
      std::fprintf(stderr, "jvmtrace stat: reading new-key notices: %s\n", std::strerror(-polled));
      break;
    }
    const auto now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (o.duration > 0 && elapsed >= o.duration) break;
    if (!bpf.target().proc.alive()) {  // (the pidfd: not a later process of that number)
      target_gone = true;
      break;
    }
    if (launch) launch->tick();  // JVMs the program starts later are held too: let them go
    if (flags.pending()) {
      flags.step(false);
      if (flags.pending() && flags.expired()) flags.give_up();
    }
    if (o.interval > 0 && now >= next) {
      session.report(elapsed);
      next += std::chrono::duration<double>(o.interval);
    }
  }
  // Batched: the slow paths that ended by now, still in the VM's buffers,
  // are handed over at its next safepoint; later ones are not counted.
  const auto stopped_at = clock::now();  // the figures' end (the drain's wait is not in it)
  std::string drain_problem;
  if (!target_gone) {
    const uint64_t end_ns = clock_ns(CLOCK_MONOTONIC);
    if (skel) skel->bss->window_end_ns = end_ns;
    drain_problem = bpf.drain(skel ? &skel->bss->drained_ns : nullptr, end_ns,
                              [&] {
                                session.read_until(clock_ns(CLOCK_MONOTONIC) + 40'000'000);
                                ring_buffer__poll(names.get(), 0);
                              });
  }
  // Notices that arrived before the stop, for at most a second (a name not
  // learnt is read once more as the report is made, or shown unreadable).
  session.read_until(clock_ns(CLOCK_MONOTONIC) + 1'000'000'000);
  ring_buffer__consume(names.get());
  session.report(std::chrono::duration<double>(stopped_at - start).count());
  if (target_gone && !o.json) std::fprintf(stderr, "jvmtrace stat: PID %d exited\n", o.pid);
  if (!drain_problem.empty()) std::fprintf(stderr, "jvmtrace stat: %s\n", drain_problem.c_str());
  if (session.live_map_full())
    std::fprintf(stderr, "jvmtrace stat: %llu tracked samples found the kernel's map full (%u entries) and are left "
                 "out of the estimate: is the JVM's JvmtraceLiveSamples above %ld? Give it as --live-samples\n",
                 (unsigned long long)session.live_map_full(), bpf_map__max_entries(skel->maps.live_samples),
                 o.live_samples > 0 ? o.live_samples : kVmLiveSamplesDefault);
  bpf.detach();
  if (flags.pending()) flags.give_up();
  flags.restore();
  return 0;
}

}  // namespace

int stat_command(int argc, char** argv) {
  Options o;
  static const option longopts[] = {
      {"pid", required_argument, nullptr, 'p'},      {"interval", required_argument, nullptr, 'i'},
      {"duration", required_argument, nullptr, 'd'}, {"json", no_argument, nullptr, 'j'},
      {"top", required_argument, nullptr, 't'},      {"verbose", no_argument, nullptr, 'v'},
      {"binary", required_argument, nullptr, 'b'},   {"no-slow-path", no_argument, nullptr, 's'},
      {"mode", required_argument, nullptr, 'M'},     {"prometheus", no_argument, nullptr, 'P'},
      {"prometheus-full", no_argument, nullptr, 'F'},
      {"launch-timeout", required_argument, nullptr, 'L'},
      {"probe-set", required_argument, nullptr, 'S'},
      {"live", no_argument, nullptr, 'l'},
      {"live-samples", required_argument, nullptr, 'N'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  const char* last_optarg = nullptr;
  // "+": options end at the first argument that is not one, so COMMAND's
  // own options after -- are never taken for jvmtrace's.
  while ((c = getopt_long(argc, argv, "+p:i:d:b:vh", longopts, nullptr)) != -1) {
    if (optarg) last_optarg = optarg;
    switch (c) {
      case 'p':
        if (!parse_pid(optarg, &o.pid)) {
          std::fprintf(stderr, "jvmtrace stat: PID must be a number from 1 to 4194304, not '%s'\n", optarg);
          usage(stderr);
          return 2;
        }
        break;
      case 'i':
      case 'd':
        if (!parse_seconds(optarg, c == 'i' ? &o.interval : &o.duration)) {
          std::fprintf(stderr, "jvmtrace stat: %s takes a number of seconds above 0, at most 1e7, not '%s'\n",
                       c == 'i' ? "-i/--interval" : "-d/--duration", optarg);
          usage(stderr);
          return 2;
        }
        break;
      case 't': {
        long v;
        if (!parse_long(optarg, 1, 100000, &v)) {
          std::fprintf(stderr, "jvmtrace stat: --top takes a number from 1 to 100000, not '%s'\n", optarg);
          return 2;
        }
        o.top = static_cast<int>(v);
        break;
      }
      case 'j': o.json = true; break;
      case 'P': o.prometheus = true; break;
      case 'F': o.prometheus = o.prometheus_full = true; break;
      case 'b': o.binary = optarg; break;
      case 's': o.slow_path = false; break;
      case 'M':
        if (!parse_mode("jvmtrace stat", optarg, &o.mode)) return 2;
        break;
      case 'S':
        if (!parse_probe_set("jvmtrace stat", optarg, &o.probe_set)) return 2;
        break;
      case 'L':
        if (!parse_seconds(optarg, &o.launch_timeout)) {
          std::fprintf(stderr, "jvmtrace stat: --launch-timeout takes a number of seconds above 0, at most 1e7, not '%s'\n", optarg);
          return 2;
        }
        o.launch_timeout_set = true;
        break;
      case 'l': o.live = true; break;
      case 'N':
        // (record --live-samples' range: what the VM's flag takes)
        if (!parse_long(optarg, 64, 1 << 20, &o.live_samples)) {
          std::fprintf(stderr, "jvmtrace stat: --live-samples takes a number from 64 to 1048576, not '%s'\n", optarg);
          return 2;
        }
        o.live = true;
        break;
      case 'v': o.verbose = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  char** command = nullptr;
  if (!target_arguments("jvmtrace stat", argc, argv, optind, last_optarg, o.pid, o.launch_timeout_set, &command,
                        usage))
    return 2;
  if (!command) {
    // From here on Ctrl-C (or the daemon's detach) ends the command through
    // its cleanup path, even while it is still attaching.
    install_stop_handlers();
    return stat_pid(o, nullptr);
  }
  // Ctrl-C is the program's (launch.h); the report comes when its JVM exits.
  o.out = stderr;
  return launch_and_trace("jvmtrace stat", command, o.launch_timeout, o.verbose, [&](pid_t pid, Launch& launch) {
    o.pid = pid;
    return stat_pid(o, &launch);
  });
}

}  // namespace jvmtrace
