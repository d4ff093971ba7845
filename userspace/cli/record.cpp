// `jvmtrace record`: every jvmtrace probe hit of a live JVM, through a BPF
// ring buffer, into a trace file (trace/format.h,
// docs/trace-format.md).  Class and GC names are read from the JVM once per
// distinct name, when first seen (record/recorder.h turns the kernel's
// records into trace events); drops are counted in the kernel and stored.
#include "cli/commands.h"

#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <bpf/bpf.h>

#include "attach/launch.h"
#include "attach/session.h"
#include "base/clock.h"
#include "base/strings.h"
#include "cli/common.h"
#include "cli/vm_flags.h"
#include "hotspot/jvm_attach.h"
#include "hotspot/method_names.h"
#include "hotspot/stack_symbolizer.h"
#include "jvmtrace_events.h"
#include "jvmtrace_record.skel.h"
#include "jvmtrace_stock.skel.h"
#include "process/target.h"
#include "record/recorder.h"
#include "record/segments.h"
#include "record/trace_meta.h"
#include "trace/writer.h"

namespace jvmtrace {

namespace {

struct Options {
  pid_t pid = 0;
  std::string output;
  std::string binary;
  double duration = 0;
  long buffer_mb = 16;
  long block_kb = 256;
  std::string mode = "auto";
  std::string probe_set = "auto";  // usdt: batched, combined, separate, or auto (the first the JVM has)
  double segment_mb = 0;       // rotate at this size; 0: not by size
  double segment_seconds = 0;  // rotate at this age; 0: not by time
  long keep = 0;        // segments kept (oldest deleted); 0: all
  bool verbose = false;
  int progress = -1;  // -1: when stderr is a terminal
  bool stacks = false;
  bool user_stacks = false;  // --stacks-from user
  double perfmap_seconds = 2;
  double launch_timeout = 30;  // -- COMMAND: how long to wait for its JVM
  bool launch_timeout_set = false;
  bool live = false;       // --live: sample__fates too
  long sample_rate = -1;   // --sample-rate N: JvmtraceSampleRate while attached; -1: the JVM's own
  long live_samples = 0;   // --live-samples N: JvmtraceLiveSamples; 0: the JVM's own
};

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace record -p PID -o FILE [OPTIONS]\n"
               "       jvmtrace record -o FILE [OPTIONS] -- COMMAND [ARGS...]\n"
               "OPTIONS: [-d SEC] [--mode auto|usdt|stock] [--buffer-mb N] [--segment-mb N]\n"
               "         [--segment-seconds S] [--keep N] [--block-kb N] [--stacks [--stacks-from vm|user] [--perfmap-seconds S]]\n"
               "         [-q|--progress] [--probe-set auto|combined|separate] [--launch-timeout S] [-v]\n"
               "         [--live [--live-samples N]] [--sample-rate N]\n"
               "Records every jvmtrace probe hit of a JVM (TLAB refills, slow-path\n"
               "allocations, GCs, PLABs, direct promotions) into a compact trace file, until\n"
               "Ctrl-C, -d, or the JVM's exit.  Events the kernel could not queue are counted,\n"
               "shown and stored in the trace.  Read it with 'jvmtrace dump' or 'jvmtrace report'.\n"
               "-- COMMAND runs a Java program and records its JVM from its first allocation: the\n"
               "JVM is held at start-up (-XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup after\n"
               "argv[0] of a java launcher, else in JDK_JAVA_OPTIONS, which makes java print a\n"
               "NOTE line on stderr) until the probes are attached.  The program keeps jvmtrace's\n"
               "stdin, stdout, stderr and terminal; Ctrl-C is the program's, and the recording\n"
               "ends when its JVM exits.  The exit status is then COMMAND's (128+N: killed by\n"
               "signal N); COMMAND runs on even if recording fails.\n"
               "  -p, --pid PID         the JVM\n"
               "  -o, --output FILE     the trace file to create; a regular file there is replaced (a new\n"
               "                        file renamed over it), a symbolic link is refused\n"
               "  -d, --duration SEC    stop after SEC seconds\n"
               "      --buffer-mb N     kernel ring buffer size in MiB, a power of two up to 2048 (default 16)\n"
               "      --segment-mb N    rotate: a new file each N MiB, named FILE with .000000, .000001, ...\n"
               "                        before its .jvmtrace; each segment reads on its own.  Segment\n"
               "                        files are never written over: an earlier recording's are an error\n"
               "      --segment-seconds S  rotate also (or only) when a segment is S seconds old\n"
               "      --keep N          with segments: keep only the newest N\n"
               "      --block-kb N      trace block size in KiB, 1 to 16384 (default 256); a block is also written\n"
               "                        once a second, so a killed recorder loses at most ~1 s\n"
               "  -q, --quiet           no progress line\n"
               "      --progress        a progress line even when stderr is not a terminal\n"
               "      --mode MODE       usdt: the jvmtrace probes of a patched JVM; stock: uprobes on an\n"
               "                        unpatched HotSpot's own functions (fewer events: docs/stock-mode.md);\n"
               "                        auto (default): usdt if the JVM has the probes, else stock\n"
               "      --probe-set SET   usdt: batched, one probe hit per batch of a thread's allocation slow\n"
               "                        paths (alloc__batch, up to 128) and of PLAB events (plab__batch);\n"
               "                        combined, one hit per slow path (alloc__slow); separate, the probes of\n"
               "                        each site (three hits per TLAB refill, two per PLAB); auto (default):\n"
               "                        the first of these the JVM has (combined with --stacks).  The trace\n"
               "                        holds the same events either way; batched, the recording's end waits\n"
               "                        (up to 5 s) for the JVM's next safepoint to hand over the rest\n"
               "      --stacks          also where the allocations come from, for 'jvmtrace flame', 'report'\n"
               "                        and 'export --pprof'.  On a JVM with the alloc__sample probe (the\n"
               "                        patched 17, 21, 25): the Java stacks the VM walks itself at sampled\n"
               "                        slow paths (one per 64 KiB on average, or about 250 a second where\n"
               "                        that would be over 1,000; each weighed by the bytes it stands for;\n"
               "                        inlined, interpreted and compiled frames with their lines; no JVM\n"
               "                        flag needed).  Otherwise\n"
               "                        (stock JVMs): the user stack of each TLAB refill and slow-path entry,\n"
               "                        whose Java frames need -XX:+PreserveFramePointer and are named from\n"
               "                        the JVM's perf map (the recorder has its jcmd write it)\n"
               "      --sample-rate N   --stacks on a patched JVM: the samples a second the VM aims at (default\n"
               "                        the JVM's JvmtraceSampleRate, 250), never more than 2N in any second;\n"
               "                        0: every slow path.  Set through the attach mechanism for the\n"
               "                        recording (and put back after), or on the command line with -- COMMAND\n"
               "      --live            --stacks, and what becomes of the sampled objects: the VM keeps each\n"
               "                        sampled object by a weak handle and reports when it dies or is\n"
               "                        promoted (sample__fates), for 'report --live': the live heap by site\n"
               "      --live-samples N  --live: objects the VM tracks at most (JvmtraceLiveSamples, default\n"
               "                        65,536; 64 to 1,048,576); when full, it keeps half at random\n"
               "      --stacks-from vm|user  --stacks from the VM's walk (the default where the JVM has\n"
               "                        alloc__sample) or from the kernel's user stack walk (every refill\n"
               "                        and slow path, native frames below the JVM; needs frame pointers)\n"
               "      --perfmap-seconds S  user stacks: refresh the perf map every S seconds (default 2): JIT\n"
               "                        code moves.  For a JVM that lives only seconds, also start it with\n"
               "                        -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit\n"
               "  -b, --binary PATH     the ELF file with the probes (default: PID's libjvm.so)\n"
               "      --launch-timeout S  -- COMMAND: wait at most S seconds (default 30) for its JVM\n"
               "  -v, --verbose         libbpf debug output; with -- COMMAND, how it is started and let go\n"
               "Exit status: 0 recorded and ended cleanly; 1 error (the trace, if any, keeps what\n"
               "was written before it); 2 bad usage.  With -- COMMAND: COMMAND's status once it has\n"
               "started (127: not found, 126: not executable).\n"
               "EXAMPLES:\n"
               "  jvmtrace record -o app.jvmtrace -- java -Xmx1g -jar app.jar   # from its first allocation\n"
               "  jvmtrace record -p 4242 -o app.jvmtrace          # until Ctrl-C\n"
               "  jvmtrace record -p 4242 -o app.jvmtrace -d 60\n"
               "  jvmtrace record -p 4242 -o app.jvmtrace --mode stock   # an unpatched JVM\n"
               "  jvmtrace record -p 4242 -o app.jvmtrace --stacks && jvmtrace flame app.jvmtrace -o app.svg\n"
               "  jvmtrace report app.jvmtrace\n");
}

// --buffer-mb's largest value: the ring buffer's size (bytes) is a map's u32
// max_entries and a power of two.
constexpr long kMaxBufferMb = 2048;
static_assert((static_cast<uint64_t>(kMaxBufferMb) << 20) <= UINT32_MAX, "the ring buffer size fits max_entries");

// How long one poll may read before the loop's checks run (the -d timer,
// signals, the disk cap, rotation, the target's exit), and how long the end
// may read what is still queued after the detach (decision 130).
constexpr uint64_t kReadBudgetNs = 40'000'000, kEndReadBudgetNs = 1'000'000'000;

// Distinct user stacks the kernel keeps for --stacks (64 frames each: 8 MiB);
// a stack first seen with the map full is not captured (and counted).
constexpr uint32_t kStackMapEntries = 16384;

struct SkelDelete {
  void operator()(jvmtrace_record* s) const { jvmtrace_record__destroy(s); }
};
struct StockSkelDelete {
  void operator()(jvmtrace_stock* s) const { jvmtrace_stock__destroy(s); }
};

void print_progress(FILE* out, double secs, const trace::TraceWriter& w, bool final) {
  const double mb = w.bytes() / 1e6;
  std::fprintf(out, "%s%7.1f s  %12llu events  %9.2f MB  %5.2f B/event  lost %llu%s", final ? "" : "\r", secs,
               (unsigned long long)w.events(), mb, w.events() ? double(w.bytes()) / w.events() : 0.0,
               (unsigned long long)w.lost_total(), final ? "\n" : "   ");
  std::fflush(out);
}

// The last lines of a recording: what it holds, what it lost and why, and
// (verbose) what it left out.
void print_summary(const Options& o, const trace::TraceWriter& writer, const Recorder& recorder,
                   const StackSymbolizer* symbolizer, const MethodNamer* namer, bool batched, const std::string& reason_text, double secs,
                   const std::string& file) {
  std::string lost_detail;  // every common cause, 0 or not: a reader of the line need not guess
  for (uint8_t k = 0; k < trace::kLostKindCount; k++)
    if (trace::lost_kind_always_shown(k) || writer.lost_of(k))
      lost_detail += std::string(k ? ", " : "") + trace::lost_kind_text(k) + " " + std::to_string(writer.lost_of(k));
  std::fprintf(stderr, "jvmtrace record: %s after %.1f s: %llu events, %llu bytes (%.2f B/event), %llu lost (%s)%s -> %s\n",
               reason_text.c_str(), secs, (unsigned long long)writer.events(),
               (unsigned long long)writer.bytes_total(),
               writer.events() ? double(writer.bytes_total()) / writer.events() : 0.0,
               (unsigned long long)writer.lost_total(), lost_detail.c_str(),
               writer.lost_of(trace::kLostRingBuffer) ? " (ring buffer full: try a larger --buffer-mb)" : "",
               file.c_str());
  if (o.verbose && batched)
    std::fprintf(stderr, "jvmtrace record: %llu batched slow paths ended outside the recording (before its attach "
                 "or after its end): not recorded\n", (unsigned long long)recorder.outside_window_);
  if (o.verbose && recorder.hold_counts_.holds)
    std::fprintf(stderr, "jvmtrace record: %llu safepoints' records put in place, slow paths before their pauses "
                 "and PLAB events in them (%llu cut short: the last batch late or lost; at most %llu events "
                 "held)\n",
                 (unsigned long long)recorder.hold_counts_.holds, (unsigned long long)recorder.hold_counts_.cut_short,
                 (unsigned long long)recorder.hold_counts_.max_held);
  if (recorder.plab_undone_)
    std::fprintf(stderr, "jvmtrace record: %llu direct copies lost their race to another GC thread (filled by the "
                 "VM): not recorded as promotions%s\n", (unsigned long long)recorder.plab_undone_,
                 recorder.plab_undo_unmatched_ ? " (some written already: counted as promotions)" : "");
  if (recorder.fate_counts_.batches) {
    const auto& f = recorder.fate_counts_;
    std::fprintf(stderr, "jvmtrace record: sampled objects: %llu died, %llu promoted, %llu thinned, %llu untracked "
                 "(%llu batches)\n", (unsigned long long)f.records[JVMTRACE_FATE_DIED],
                 (unsigned long long)f.records[JVMTRACE_FATE_PROMOTED], (unsigned long long)f.records[JVMTRACE_FATE_THINNED],
                 (unsigned long long)f.records[JVMTRACE_FATE_UNTRACKED], (unsigned long long)f.batches);
  }
  if (o.verbose)
    std::fprintf(stderr, "jvmtrace record: %llu blocks in the last file; the largest block payload %zu bytes "
                 "(the limit: %u); %.1f ms in fsync/fdatasync\n", (unsigned long long)writer.blocks(),
                 writer.largest_payload(), trace::kMaxPayload, writer.sync_ns() / 1e6);
  if (o.verbose) {
    const Recorder::ThreadCounts& t = recorder.thread_counts_;
    std::fprintf(stderr, "jvmtrace record: threads: %llu named by the kernel as they first fired, %llu from /proc; "
                 "%llu without a name (gone before /proc was read)\n", (unsigned long long)t.by_kernel,
                 (unsigned long long)t.from_proc, (unsigned long long)t.unnamed);
  }
  if (namer) {
    const Recorder::SampleCounts& c = recorder.sample_counts_;
    std::fprintf(stderr, "jvmtrace record: %llu allocation samples with the VM's own stacks (%llu Java frames, "
                 "%llu of them of a method not named: unloaded or gone before it was read); %llu without their "
                 "slow path; %llu stacks deeper than %d frames\n",
                 (unsigned long long)c.samples, (unsigned long long)c.frames, (unsigned long long)c.frames_unknown,
                 (unsigned long long)c.unmatched, (unsigned long long)c.truncated, JVMTRACE_SAMPLE_MAX_FRAMES);
    if (o.verbose)
      std::fprintf(stderr, "jvmtrace record: %llu of the samples were of a stack already named (no wakeup); %llu "
                   "stacks named, %llu reads of the JVM's memory\n", (unsigned long long)c.quiet,
                   (unsigned long long)c.stacks_named, (unsigned long long)c.name_reads);
    if (!c.namer_problem.empty() && c.frames_unknown)
      std::fprintf(stderr, "jvmtrace record: Java frames could not be named: %s\n", printable(c.namer_problem).c_str());
    if (c.stacks_capped)
      std::fprintf(stderr, "jvmtrace record: %llu samples stored without their stack (more than the trace's "
                   "limit of distinct stacks)\n", (unsigned long long)c.stacks_capped);
  } else if (symbolizer)
    std::fprintf(stderr, "jvmtrace record: %llu distinct stacks (%llu renamed once the perf map named their JIT "
                 "code); %llu stack(s) not captured; %llu unnamed JIT frame(s) seen\n",
                 (unsigned long long)recorder.stacks_defined_, (unsigned long long)recorder.stacks_renamed_,
                 (unsigned long long)recorder.stacks_missing_, (unsigned long long)symbolizer->unresolved_jit());
  if (recorder.budget_stops_ || recorder.left_unread_)
    std::fprintf(stderr, "jvmtrace record: could not read what the JVM sent in time: %llu reads of the ring buffer "
                 "cut short at their %llu ms budget; %llu records left unread at the end (counted as lost: records "
                 "left unread)\n", (unsigned long long)recorder.budget_stops_,
                 (unsigned long long)(kReadBudgetNs / 1000000), (unsigned long long)recorder.left_unread_);
  if (namer && o.verbose)
    std::fprintf(stderr, "jvmtrace record: method names: the Method* cache dropped %llu times, the namer's %llu times "
                 "(at their caps); %llu samples written at once (too many waiting); %llu names read after the JVM "
                 "was gone, not kept\n", (unsigned long long)recorder.sample_counts_.method_cache_drops,
                 (unsigned long long)namer->cache_drops(), (unsigned long long)recorder.sample_counts_.pending_capped,
                 (unsigned long long)recorder.sample_counts_.names_dropped);
  if (recorder.frames_not_kept_)
    std::fprintf(stderr, "jvmtrace record: %llu frame name(s) not kept (the name table was full): shown as "
                 "[frame name not kept]\n", (unsigned long long)recorder.frames_not_kept_);
  for (const auto& [err, n] : recorder.stack_errors_)
    std::fprintf(stderr, "jvmtrace record: %llu stack(s) not captured: %s\n", (unsigned long long)n, std::strerror(err));
}

// Records o.pid into writer (open, not yet committed) until the end; with
// launch, the JVM is held at start-up and let go once attached.  Returns
// record's exit status; a failure discards the trace.
int record_pid(Options& o, trace::TraceWriter& writer, Segments& segments, Launch* launch) {
  // One of two BPF objects, the same ring-buffer records: jvmtrace USDT
  // probes, or uprobes on a stock HotSpot's functions.  Declared before the
  // session: its links are destroyed first (libbpf's USDT links use the
  // object's memory as they detach).
  std::unique_ptr<jvmtrace_record, SkelDelete> usdt_skel;
  std::unique_ptr<jvmtrace_stock, StockSkelDelete> stock_skel;
  BpfSession bpf("jvmtrace record");
  if (!bpf.prepare({o.pid, o.binary, o.mode, o.probe_set, o.stacks,
                    "Record it with --mode stock (or the default --mode auto).", o.user_stacks})) {
    writer.discard();
    return 1;
  }
  const bool stock = bpf.stock();
  const TargetFile& libjvm = bpf.target().binary;
  set_libbpf_verbose(o.verbose);
  const uint64_t ring_bytes = static_cast<uint64_t>(o.buffer_mb) << 20;
  bpf_object* obj = nullptr;
  bpf_map* events = nullptr;
  bpf_map* stacks = nullptr;  // --stacks: the stack map
  const volatile __u64* dropped = nullptr;  // the BPF side's drop count (mmapped .bss)
  volatile __u32* stopped = nullptr;        // set: every program stops emitting at once
  int loaded = -1;
  if (stock) {
    const StockTarget& stock_target = bpf.stock_target();
    if (!stock_target.cause_error().empty())  // (the trace then names causes "GCCause #N")
      std::fprintf(stderr, "jvmtrace record: GC causes by number: %s\n", printable(stock_target.cause_error()).c_str());
    stock_skel.reset(jvmtrace_stock__open());
    if (stock_skel) {
      bpf_map__set_max_entries(stock_skel->maps.events, static_cast<uint32_t>(ring_bytes));
      stock_skel->rodata->wakeup_bytes = ring_bytes / 8;
      stock_skel->rodata->klass_name_off = stock_target.klass_name_off;
      stock_skel->rodata->symbol_length_off = stock_target.symbol_length_off;
      stock_skel->rodata->symbol_body_off = stock_target.symbol_body_off;
      stock_skel->rodata->capture_stacks = o.stacks;
      if (o.stacks) bpf_map__set_max_entries(stock_skel->maps.stacks, kStackMapEntries);
      loaded = jvmtrace_stock__load(stock_skel.get());
      obj = stock_skel->obj;
      events = stock_skel->maps.events;
      dropped = &stock_skel->bss->dropped;
      stopped = &stock_skel->bss->stopped;
      stacks = stock_skel->maps.stacks;
    }
  } else {
    usdt_skel.reset(jvmtrace_record__open());
    if (usdt_skel) {
      select_probe_set(usdt_skel->obj, bpf.probe_set());
      bpf_map__set_max_entries(usdt_skel->maps.events, static_cast<uint32_t>(ring_bytes));
      usdt_skel->rodata->wakeup_bytes = ring_bytes / 8;
      usdt_skel->rodata->plab_last_wakes = bpf.probe_set() != ProbeSet::kBatched;
      // --stacks: the VM's own Java stacks when it has alloc__sample, else a
      // BPF user stack per slow path (which needs frame pointers and the
      // perf map to name Java frames).
      const bool bpf_stacks = o.stacks && !bpf.vm_stacks();
      usdt_skel->rodata->capture_stacks = bpf_stacks;
      if (bpf_stacks) bpf_map__set_max_entries(usdt_skel->maps.stacks, kStackMapEntries);
      bpf_program__set_autoload(usdt_skel->progs.alloc__sample, bpf.vm_stacks());
      bpf_program__set_autoload(usdt_skel->progs.sample__fates, bpf.vm_stacks() && o.live);
      loaded = jvmtrace_record__load(usdt_skel.get());
      obj = usdt_skel->obj;
      events = usdt_skel->maps.events;
      dropped = &usdt_skel->bss->dropped;
      stopped = &usdt_skel->bss->stopped;
      stacks = usdt_skel->maps.stacks;
    }
  }
  if (!bpf.loaded(loaded, obj)) {
    writer.discard();
    return 1;
  }

  Recorder recorder(bpf.target().proc, &writer, stock ? &bpf.stock_target() : nullptr);
  // A VM that hands a safepoint's slow paths and PLAB events over after it:
  // the trace keeps them before that safepoint's pauses, and in them.
  {
    const bool batched = !stock && bpf.probe_set() == ProbeSet::kBatched;
    recorder.hold_safepoints(bpf.has_safepoint_probes() && (batched || bpf.plab_handed_over()),
                             !batched);
  }
  // --stacks: the perf map first (the attach operation takes ~0.1-0.5 s),
  // so that the first stacks already have their Java frames' names.  A
  // refresh that fails says why itself (stack_symbolizer.cpp).
  std::unique_ptr<StackSymbolizer> symbolizer;
  std::unique_ptr<PerfMapRefresher> refresher;
  std::unique_ptr<MethodNamer> namer;
  if (bpf.vm_stacks()) {
    // The VM walks its own stack: its Java frames' methods are named from
    // its memory, its own C++ frames from libjvm.so's symbols.  No perf
    // map, no frame pointers.
    symbolizer = std::make_unique<StackSymbolizer>(o.pid);
    namer = std::make_unique<MethodNamer>(o.pid, libjvm);
    // Both read libjvm.so's symbols (tens of MB): now, before the probes
    // fire, not at the first sample.  A sample's names are trusted only if
    // the VM freed no metadata between the hit and the read (docs/probes.md,
    // alloc__sample): a recorder busy loading symbols while a JVM starts up
    // refused every name for its first second.  (The symbolizer knows only
    // executable mappings: an address in libjvm.so's code, not its first
    // mapping, which is read-only.  Named from there, the load fell on the
    // JVM's first sample, 30-50 ms of this process's CPU beside a JVM
    // starting to run.)  The symbolizer first: it keeps the table, which the
    // namer and the meta's G1 region size then share (shared_elf_symbols).
    uint64_t lo, hi;
    const bool text = libjvm_text_range(o.pid, &lo, &hi);
    if (text) symbolizer->frame(lo);
    std::string not_yet;
    namer->ensure(&not_yet);  // (a JVM still starting may not be ready: tried again at the first sample)
    recorder.capture_samples(namer.get(), symbolizer.get(), bpf.probe_set() == ProbeSet::kBatched);
    // The kernel follows the VM's frames only within libjvm.so's code (else
    // bpf_get_stack), and stops waking us for stacks named whole.
    if (text) {
      usdt_skel->bss->jvm_lo = lo;
      usdt_skel->bss->jvm_hi = hi;
    }
    const int named_fd = bpf_map__fd(usdt_skel->maps.named_stacks);
    recorder.on_stack_named([named_fd](const jt_named_stack& key) {
      const __u8 one = 1;
      bpf_map_update_elem(named_fd, &key, &one, BPF_ANY);  // (a failure costs wakeups, nothing else)
    });
  } else if (o.stacks) {
    symbolizer = std::make_unique<StackSymbolizer>(o.pid);
    refresher = std::make_unique<PerfMapRefresher>(bpf.target().proc, o.perfmap_seconds, *symbolizer);
    refresher->run_now(10);
    symbolizer->load_perf_map();
    if (process_cmdline(o.pid).find("-XX:+PreserveFramePointer") == std::string::npos)
      std::fprintf(stderr, "jvmtrace record: PID %d may run without -XX:+PreserveFramePointer: stacks will stop at "
                   "the first JIT-compiled frame\n", o.pid);
    recorder.capture_stacks(symbolizer.get(), bpf_map__fd(stacks));
  }
  RingBuffer rb(ring_buffer__new(bpf_map__fd(events), &Recorder::on_event, &recorder, nullptr));
  if (!rb) {
    std::fprintf(stderr, "jvmtrace record: ring buffer: %s\n", std::strerror(errno));
    writer.discard();
    return 1;
  }
  TraceMeta meta(o.pid, libjvm, stock, ring_bytes, !o.stacks ? "" : bpf.vm_stacks() ? "vm" : "user");
  auto write_meta = [&] { meta.write_once(writer); };
  recorder.before_first_record(write_meta);

  // --sample-rate, --live-samples: set before the probes go in; a JVM held
  // at start-up cannot be attached to, so its are set as soon as it answers
  // (until then, for its first moments, it samples at its own rate).
  std::vector<VmFlags::Flag> wanted;
  if (!stock && bpf.vm_stacks()) {
    if (o.sample_rate >= 0) wanted.push_back({"JvmtraceSampleRate", o.sample_rate, 250});
    if (o.live_samples > 0) wanted.push_back({"JvmtraceLiveSamples", o.live_samples, 65536});
  }
  VmFlags flags("jvmtrace record", bpf.target().proc, std::move(wanted));
  if (!launch)
    while (flags.pending() && flags.step(true)) {
    }
  // Batched records count from here (those left in the VM from an earlier
  // tracer ended before).
  recorder.set_window(clock_ns(CLOCK_MONOTONIC), 0);
  if (!bpf.attach()) {
    flags.restore();
    writer.discard();
    return 1;
  }
  meta.set_probes(bpf.has_pause_probes(), bpf.has_safepoint_probes(), probe_set_name(bpf.probe_set()));
  if (!stock && !bpf.has_pause_probes())
    std::fprintf(stderr, "jvmtrace record: this JVM's patch predates the pause probes (gc__pause__*): G1 Remark "
                 "and Cleanup pauses are not recorded; rebuild it with scripts/build-patched-jdk.sh\n");
  else if (!stock && !bpf.has_safepoint_probes())
    std::fprintf(stderr, "jvmtrace record: this JVM's patch predates the safepoint probes: neither safepoints nor "
                 "ZGC's and Shenandoah's pauses are recorded; rebuild it with scripts/build-patched-jdk.sh\n");
  std::string error;
  if (!writer.commit(&error)) {
    std::fprintf(stderr, "jvmtrace record: %s\n", error.c_str());
    bpf.detach();
    writer.discard();
    return 1;
  }
  std::fprintf(stderr, "Recording PID %d (%zu %s in %s%s%s) to %s. %s\n", o.pid, bpf.links(),
               stock ? "uprobes, stock mode" : "probes", printable(libjvm.shown()).c_str(), stock ? "" : "; ",
               stock ? "" : bpf.probe_set_text(), segments.current().c_str(),
               launch ? "It ends when the JVM exits." : "Hit Ctrl-C to end.");
  if (launch) launch->release(true);  // from its first allocation on, every event is recorded

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next_progress = start;
  uint64_t dropped_seen = 0;
  auto last_warning = start - std::chrono::seconds(10);
  uint64_t malformed_seen = 0, unpaired_seen = 0, names_full_seen = 0;
  auto note_drops = [&] {
    const uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
    if (recorder.malformed_ > malformed_seen || recorder.gc_end_unpaired_ > unpaired_seen || *dropped > dropped_seen ||
        recorder.names_full_ > names_full_seen)
      write_meta();
    writer.lost(now_ns, recorder.malformed_ - malformed_seen, trace::kLostMalformed);
    malformed_seen = recorder.malformed_;
    writer.lost(now_ns, recorder.gc_end_unpaired_ - unpaired_seen, trace::kLostGcEndUnpaired);
    unpaired_seen = recorder.gc_end_unpaired_;
    if (recorder.names_full_ > names_full_seen && names_full_seen == 0)
      std::fprintf(stderr, "jvmtrace record: the JVM named more threads, classes or GC strings than the recorder "
                   "keeps (%zu threads, %zu classes, %zu MiB of names): events that need a new name are lost from "
                   "now on (counted: name tables full)\n", kMaxThreads, kMaxClasses, kMaxNameBytes >> 20);
    writer.lost(now_ns, recorder.names_full_ - names_full_seen, trace::kLostNameTableFull);
    names_full_seen = recorder.names_full_;
    const uint64_t d = *dropped;
    if (d > dropped_seen) {
      writer.lost(now_ns, d - dropped_seen, trace::kLostRingBuffer);
      dropped_seen = d;
      // Live, also without the progress line (which shows it anyway).
      if (!o.progress && clock::now() - last_warning >= std::chrono::seconds(5)) {
        std::fprintf(stderr, "jvmtrace record: the ring buffer overflowed: %llu events lost so far "
                     "(stored in the trace; a larger --buffer-mb helps)\n", (unsigned long long)d);
        last_warning = clock::now();
      }
    }
  };
  uint8_t reason = trace::kEndUser;
  std::string reason_text;
  auto next_housekeeping = start;
  segments.start(start);
  for (;;) {
    // Events arrive without wakeups until wakeup_bytes are waiting: this
    // timeout is also how often a trickle of events is collected.  Reading
    // stops at the budget, whatever the JVM sends (a sample can cost
    // hundreds of reads of its memory): the checks below run at least every
    // 100 ms (decision 130).
    recorder.read_until(clock_ns(CLOCK_MONOTONIC) + kReadBudgetNs);
    int n = ring_buffer__poll(rb.get(), 50);
    // (a poll that timed out read nothing: libbpf reads a ring only when
    // its fd was woken, and the BPF side wakes it only for a new name or a
    // full wakeup_bytes.  The trickle is taken here, every 50 ms: before
    // a short-lived thread's batch, flushed by the VM thread, waited for
    // the next wake-up and its name for /proc, gone by then.)
    if (n == 0) n = ring_buffer__consume(rb.get());
    const bool behind = recorder.budget_spent();  // (n is then kBudgetSpent, no error)
    if (n < 0 && n != -EINTR && !behind) {
      reason = trace::kEndError;
      reason_text = std::string("reading the ring buffer: ") + std::strerror(-n);
      break;
    }
    // Under a steady stream the ring buffer's fd is always ready, so poll
    // returns with a handful of events at a time: wait a little for a
    // bigger batch (the buffer holds seconds of events at this rate).
    if (!behind && n > 0 && n < 4096 && !stop_requested()) usleep(2000);
    const auto now = clock::now();
    if (now < next_housekeeping && !stop_requested()) continue;
    next_housekeeping = now + std::chrono::milliseconds(50);
    meta.poll_region_size();
    note_drops();
    const double secs = std::chrono::duration<double>(now - start).count();
    writer.maybe_flush(clock_ns(CLOCK_MONOTONIC));
    if (refresher && refresher->poll(clock_ns(CLOCK_MONOTONIC), recorder.unnamed_jit())) {
      const bool changed = symbolizer->load_perf_map();
      if (changed) recorder.perf_map_changed();
      if (o.verbose)
        std::fprintf(stderr, "jvmtrace record: %.2f s: perf map re-read, %zu entries%s\n", secs,
                     symbolizer->perf_map_entries(), changed ? ", changed" : ", unchanged");
    }
    if (segments.due(writer, now)) {
      recorder.flush_plab_events();  // a segment ends with every event it was given
      write_meta();  // the next segment repeats it
      segments.rotate(writer, now, clock_ns(CLOCK_MONOTONIC));
    }
    if (writer.failed()) {
      reason = trace::kEndError;
      reason_text = "writing the trace failed";
      break;
    }
    if (o.progress && now >= next_progress) {
      print_progress(stderr, secs, writer, false);
      next_progress = now + std::chrono::milliseconds(500);
    }
    if (launch) launch->tick();  // JVMs the program starts later are held too: let them go
    if (flags.pending()) {  // a JVM held at start-up: once it answers
      flags.step(false);
      if (flags.pending() && flags.expired()) flags.give_up();
    }
    if (stop_requested()) { reason = trace::kEndUser; break; }
    if (o.duration > 0 && secs >= o.duration) { reason = trace::kEndDuration; break; }
    if (!bpf.target().proc.alive()) { reason = trace::kEndTargetExit; break; }  // (the pidfd, not the number)
  }
  // Batched, on a live JVM: the slow paths that ended by now, still in the
  // VM's buffers, are handed over at its next safepoint; later ones are left
  // out.  (A JVM that exits hands over everything at its last safepoint.)
  std::string drain_problem;
  const uint64_t end_t0 = clock_ns(CLOCK_MONOTONIC);
  if (reason == trace::kEndUser || reason == trace::kEndDuration) {
    const uint64_t end_ns = clock_ns(CLOCK_MONOTONIC);
    recorder.set_window(recorder.window_start_ns(), end_ns);
    drain_problem = bpf.drain(usdt_skel ? &usdt_skel->bss->drained_ns : nullptr, end_ns, [&] {
      recorder.read_until(clock_ns(CLOCK_MONOTONIC) + kReadBudgetNs);
      ring_buffer__poll(rb.get(), 0);
    });
  }
  // Stop every program at one moment, then detach (uprobes go one at a
  // time, over milliseconds: events of the probes still attached would end
  // the trace inconsistently), then take what is still queued: for at most
  // kEndReadBudgetNs (a flooded reader may be far behind); the rest is
  // counted, not read (lost: left unread).
  const uint64_t end_t1 = clock_ns(CLOCK_MONOTONIC);
  __atomic_store_n(stopped, 1u, __ATOMIC_SEQ_CST);
  bpf.detach();
  if (flags.pending()) flags.give_up();
  flags.restore();
  const uint64_t end_t2 = clock_ns(CLOCK_MONOTONIC);
  recorder.read_until(end_t2 + kEndReadBudgetNs);
  ring_buffer__consume(rb.get());
  if (recorder.budget_spent()) {
    recorder.stop_reading();
    ring_buffer__consume(rb.get());  // (counting only: memory speed)
  }
  recorder.flush_plab_events();
  recorder.release_held();
  recorder.flush_samples();
  note_drops();
  writer.lost(clock_ns(CLOCK_MONOTONIC), recorder.left_unread_, trace::kLostLeftUnread);
  if (o.verbose)
    std::fprintf(stderr, "jvmtrace record: the end: %.0f ms collecting the JVM's buffers, %.0f ms detaching, %.0f ms "
                 "reading what was queued\n", (end_t1 - end_t0) / 1e6, (end_t2 - end_t1) / 1e6,
                 (clock_ns(CLOCK_MONOTONIC) - end_t2) / 1e6);
  // Stacks still holding unnamed JIT code get one last chance: a perf map
  // written now (the target alive) or at its exit (-XX:+DumpPerfMapAtExit,
  // or the last refresh, still in its /tmp).
  if (symbolizer && recorder.unnamed_jit()) {
    refresher->finish(bpf.target().proc.alive() ? 5.0 : 0.0);
    if (symbolizer->load_perf_map()) recorder.perf_map_changed();
  }
  const double secs = std::chrono::duration<double>(clock::now() - start).count();
  if (reason_text.empty()) reason_text = trace::end_reason_name(reason);
  write_meta();
  writer.end(clock_ns(CLOCK_MONOTONIC), reason, reason_text);
  const bool ok = writer.close();
  if (o.progress) std::fputc('\n', stderr);
  print_summary(o, writer, recorder, symbolizer.get(), namer.get(), !stock && bpf.probe_set() == ProbeSet::kBatched, reason_text,
                secs, segments.current());
  if (!drain_problem.empty()) std::fprintf(stderr, "jvmtrace record: %s\n", drain_problem.c_str());
  if (!ok) {
    std::fprintf(stderr, "jvmtrace record: %s\n", writer.error().c_str());
    return 1;
  }
  return reason == trace::kEndError ? 1 : 0;
}

}  // namespace

int record_command(int argc, char** argv) {
  Options o;
  static const option longopts[] = {
      {"pid", required_argument, nullptr, 'p'},       {"output", required_argument, nullptr, 'o'},
      {"duration", required_argument, nullptr, 'd'},  {"buffer-mb", required_argument, nullptr, 'm'},
      {"quiet", no_argument, nullptr, 'q'},           {"progress", no_argument, nullptr, 'P'},
      {"binary", required_argument, nullptr, 'b'},    {"verbose", no_argument, nullptr, 'v'},
      {"block-kb", required_argument, nullptr, 'k'},  {"mode", required_argument, nullptr, 'M'},
      {"probe-set", required_argument, nullptr, 'R'},
      {"segment-mb", required_argument, nullptr, 'S'}, {"keep", required_argument, nullptr, 'K'},
      {"segment-seconds", required_argument, nullptr, 'T'},
      {"stacks", no_argument, nullptr, 's'},          {"perfmap-seconds", required_argument, nullptr, 'F'},
      {"stacks-from", required_argument, nullptr, 'U'},
      {"launch-timeout", required_argument, nullptr, 'L'},
      {"live", no_argument, nullptr, 'l'},            {"live-samples", required_argument, nullptr, 'N'},
      {"sample-rate", required_argument, nullptr, 'r'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  const char* last_optarg = nullptr;
  // "+": options end at the first argument that is not one, so COMMAND's
  // own options after -- are never taken for jvmtrace's.
  while ((c = getopt_long(argc, argv, "+p:o:d:b:qvh", longopts, nullptr)) != -1) {
    if (optarg) last_optarg = optarg;
    switch (c) {
      case 'p':
        if (!parse_pid(optarg, &o.pid)) {
          std::fprintf(stderr, "jvmtrace record: PID must be a number from 1 to 4194304, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'o': o.output = optarg; break;
      case 'd':
        if (!parse_seconds(optarg, &o.duration)) {
          std::fprintf(stderr, "jvmtrace record: -d takes a number of seconds above 0, at most 1e7, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'm':
        // The ring buffer's size is a u32 power of two: 2048 MiB is the largest.
        if (!parse_long(optarg, 1, kMaxBufferMb, &o.buffer_mb) || (o.buffer_mb & (o.buffer_mb - 1))) {
          std::fprintf(stderr, "jvmtrace record: --buffer-mb takes a power of two from 1 to %ld, not '%s'\n",
                       kMaxBufferMb, optarg);
          return 2;
        }
        break;
      case 'k':
        if (!parse_long(optarg, 1, trace::kMaxBlockKb, &o.block_kb)) {
          std::fprintf(stderr, "jvmtrace record: --block-kb takes a number from 1 to %ld, not '%s'\n",
                       trace::kMaxBlockKb, optarg);
          return 2;
        }
        break;
      case 'M':
        if (!parse_mode("jvmtrace record", optarg, &o.mode)) return 2;
        break;
      case 'R':
        if (!parse_probe_set("jvmtrace record", optarg, &o.probe_set)) return 2;
        break;
      case 'S':
        if (!parse_seconds(optarg, &o.segment_mb) || o.segment_mb < 0.0625) {  // a positive number, at most 1e7
          std::fprintf(stderr, "jvmtrace record: --segment-mb takes a number of MiB from 0.0625 to 1e7, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'T':
        if (!parse_seconds(optarg, &o.segment_seconds)) {
          std::fprintf(stderr, "jvmtrace record: --segment-seconds takes a number of seconds above 0, at most 1e7, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'K':
        if (!parse_long(optarg, 1, 1000000, &o.keep)) {
          std::fprintf(stderr, "jvmtrace record: --keep takes a number from 1 to 1000000, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 's': o.stacks = true; break;
      case 'U':
        if (std::strcmp(optarg, "vm") != 0 && std::strcmp(optarg, "user") != 0) {
          std::fprintf(stderr, "jvmtrace record: --stacks-from takes vm or user, not '%s'\n", printable(optarg).c_str());
          return 2;
        }
        o.stacks = true;
        o.user_stacks = std::strcmp(optarg, "user") == 0;
        break;
      case 'F':
        if (!parse_seconds(optarg, &o.perfmap_seconds) || o.perfmap_seconds < 0.2) {
          std::fprintf(stderr, "jvmtrace record: --perfmap-seconds takes a number of seconds from 0.2 to 1e7, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'L':
        if (!parse_seconds(optarg, &o.launch_timeout)) {
          std::fprintf(stderr, "jvmtrace record: --launch-timeout takes a number of seconds above 0, at most 1e7, not '%s'\n", optarg);
          return 2;
        }
        o.launch_timeout_set = true;
        break;
      case 'l': o.live = o.stacks = true; break;
      case 'N':
        if (!parse_long(optarg, 64, 1 << 20, &o.live_samples)) {
          std::fprintf(stderr, "jvmtrace record: --live-samples takes a number from 64 to 1048576, not '%s'\n", optarg);
          return 2;
        }
        o.live = o.stacks = true;
        break;
      case 'r':
        if (!parse_long(optarg, 0, 100000, &o.sample_rate)) {
          std::fprintf(stderr, "jvmtrace record: --sample-rate takes a number from 0 to 100000, not '%s'\n", optarg);
          return 2;
        }
        o.stacks = true;
        break;
      case 'q': o.progress = 0; break;
      case 'P': o.progress = 1; break;
      case 'b': o.binary = optarg; break;
      case 'v': o.verbose = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  char** command = nullptr;
  if (!target_arguments("jvmtrace record", argc, argv, optind, last_optarg, o.pid, o.launch_timeout_set, &command,
                        usage))
    return 2;
  if (o.output.empty()) {
    std::fprintf(stderr, "jvmtrace record: -o FILE is required\n");
    usage(stderr);
    return 2;
  }
  // A progress line would mix with the program's own output on the terminal.
  if (o.progress < 0) o.progress = !command && isatty(STDERR_FILENO);
  const bool segmented = o.segment_mb > 0 || o.segment_seconds > 0;
  if (o.keep && !segmented) {
    std::fprintf(stderr, "jvmtrace record: --keep goes with --segment-mb or --segment-seconds\n");
    return 2;
  }
  Segments segments(o.output, o.segment_mb, o.segment_seconds, o.keep);

  // The output before anything runs or attaches: an unwritable path fails
  // first.  -o FILE replaces a regular file that is there (as perf record -o
  // and a shell's > do), through a new file renamed over it once attached; a
  // segment name that exists is an error (an earlier recording's, or planted).
  // From here on Ctrl-C (or the daemon's detach) ends a -p recording through
  // its cleanup path, even while it is still attaching; with -- COMMAND it
  // goes to the program (launch.h) and the recording ends with the JVM.
  if (!command) install_stop_handlers();
  std::string error;
  if (!segments.check_none_exist(&error)) {
    std::fprintf(stderr, "jvmtrace record: %s\n", error.c_str());
    return 1;
  }
  trace::TraceWriter writer;
  writer.block_bytes = static_cast<uint64_t>(o.block_kb) << 10;
  if (!writer.open(segments.current(), &error, !segmented)) {
    std::fprintf(stderr, "jvmtrace record: %s\n", error.c_str());
    return 1;
  }
  if (!command) return record_pid(o, writer, segments, nullptr);
  bool traced = false;
  const int status = launch_and_trace("jvmtrace record", command, o.launch_timeout, o.verbose,
                                      [&](pid_t pid, Launch& launch) {
                                        o.pid = pid;
                                        return record_pid(o, writer, segments, &launch);
                                      }, &traced);
  if (!traced) writer.discard();  // no JVM: no trace (record_pid discards its own failures)
  return status;
}

}  // namespace jvmtrace
