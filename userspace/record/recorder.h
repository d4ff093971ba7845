// The recorder's heart: kernel records from the ring buffer (bpf/
// jvmtrace_events.h) become trace events (trace/writer.h).  It keeps the
// thread, class and GC-name tables (each name read from the JVM once, when
// first seen), expands the batch and combined probes into the events of the
// probes they stand for, names --stacks stacks, and counts what it could
// not store.  `jvmtrace record` (cli/record.cpp) owns the BPF side and the
// poll loop and hands every record to on_event().
#pragma once
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <deque>
#include <tuple>
#include <set>

#include "attach/stock_attach.h"
#include "hotspot/method_names.h"
#include "hotspot/stack_symbolizer.h"
#include "jvmtrace_events.h"
#include "trace/writer.h"

namespace jvmtrace {

// What the recorder keeps of the names the JVM chooses, at most.  Each new
// thread, class, GC string or frame name is read from the target, kept, and
// written into the trace's tables, which every rotation repeats; a JVM that
// fires its probes with ever new class-name pointers or thread ids would
// otherwise grow root's memory (and every segment) without bound.  An event
// whose thread, class or GC name finds its table full is not recorded, and
// counted (trace::kLostNameTableFull); a frame name that finds it full is
// "[frame name not kept]", a stack past kMaxStacks is not captured.  A real
// JVM stays far below: tens of thousands of classes, hundreds of threads.
constexpr size_t kMaxThreads = 1 << 17, kMaxClasses = 1 << 18, kMaxStrings = 1 << 16, kMaxTexts = 1 << 20,
                 kMaxStacks = 1 << 20;
// alloc__sample's tables (record --stacks on a JVM that walks its own
// stack): methods named, and the Java stacks of samples (past the cap a
// sample goes without its stack, counted).
constexpr size_t kMaxMethods = 1 << 20, kMaxJavaStacks = 1 << 18, kMaxJavaFrames = 8 << 20;
constexpr size_t kMaxNameBytes = 64 << 20;  // of every name kept, together
constexpr size_t kMaxStackFrames = 8 << 20;  // of every stack kept, together
static_assert(kMaxTexts + kMaxStrings + 1 <= trace::kMaxTableEntries && kMaxClasses <= trace::kMaxTableEntries &&
                  kMaxThreads <= trace::kMaxTableEntries && kMaxStacks <= trace::kMaxTableEntries &&
                  kMaxMethods + 1 <= trace::kMaxTableEntries && kMaxJavaStacks <= trace::kMaxTableEntries,
              "a reader takes every table the recorder writes");
static_assert(kMaxNameBytes <= trace::kMaxTableNameBytes && kMaxStackFrames <= trace::kMaxTableFrames &&
                  kMaxJavaFrames <= trace::kMaxTableFrames,
              "a reader takes every name and stack the recorder keeps");

// Turns kernel events into trace events: thread, class and GC-name tables.
class Recorder {
 public:
  // target: pinned since the attach (a name read of it counts only if it was
  // still alive after the read: else the number may be another process's).
  Recorder(const PinnedPid& target, trace::TraceWriter* w, const StockTarget* stock)
      : target_(target), pid_(target.pid()), w_(w), stock_(stock) {}

  // libbpf's ring-buffer callback.  Returns kBudgetSpent (negative: libbpf
  // 1.1's drain stops there, the record itself consumed) once the deadline
  // of read_until() has passed, so that ring_buffer__poll returns to the
  // caller's checks whatever the JVM sends (docs/decisions.md 130); after
  // stop_reading(), only counts the records it is handed.
  static int on_event(void* ctx, void* data, size_t size);
  static constexpr int kBudgetSpent = -EAGAIN;
  // Records are handled until deadline_ns (CLOCK_MONOTONIC; 0: no limit).
  void read_until(uint64_t deadline_ns) {
    deadline_ns_ = deadline_ns;
    budget_spent_ = false;
  }
  // Whether the last poll stopped at the deadline (its negative result is
  // then no error); records are left in the ring.
  bool budget_spent() const { return budget_spent_; }
  uint64_t budget_stops_ = 0;  // polls cut short by the budget
  // The recording must end: from now on records are counted, not read.
  void stop_reading() { counting_only_ = true; }
  uint64_t left_unread_ = 0;  // records counted after stop_reading (trace::kLostLeftUnread)

  // Writes the PLAB events of batches still waiting, in time order; while
  // a safepoint is held, among the held events by time (into their pause).
  void flush_plab_events();
  // A VM that hands a safepoint's records over after it (alloc__batch and
  // plab__batch carry the safepoint's id): what follows a safepoint's
  // begin is held until that safepoint's last batch has come, so the trace
  // keeps every slow path before the pauses after it and every PLAB event
  // inside its pause.  The last batch is alloc__batch's, or plab__batch's
  // when alloc__batch is not attached (plab_last).  At most kMaxHoldNs of
  // event time or kMaxHeldEvents events (else written as it came, counted).
  void hold_safepoints(bool on, bool plab_last = false) {
    hold_safepoints_ = on;
    release_on_plab_last_ = plab_last;
  }
  // Writes what is held (the recording ends).
  void release_held();
  struct HoldCounts {
    uint64_t holds = 0;          // safepoints held for
    uint64_t cut_short = 0;      // released before their last batch came (time, size, next safepoint)
    uint64_t max_held = 0;       // most events held at once
  } hold_counts_;
  // (1 << 18 held events: about 25 MiB; a safepoint's own take a few thousand)
  static constexpr uint64_t kMaxHoldNs = 1000000000, kMaxHeldEvents = 1 << 18;
  // Direct copies that lost their race (plab__batch's undo records): their
  // promote__direct left out; unmatched: it had been written already.
  uint64_t plab_undone_ = 0, plab_undo_unmatched_ = 0;
  // sample__fates batches written, and their records by kind.
  struct FateCounts {
    uint64_t batches = 0;
    uint64_t records[JVMTRACE_FATE_KIND_COUNT] = {};
  } fate_counts_;
  // alloc__batch records count from start_ns (set before the attach) to
  // end_ns (set as the recording ends; 0: open).
  void set_window(uint64_t start_ns, uint64_t end_ns) {
    window_start_ns_ = start_ns;
    window_end_ns_ = end_ns;
  }
  uint64_t window_start_ns() const { return window_start_ns_; }
  uint64_t outside_window_ = 0;  // alloc__batch records outside it: not recorded, not lost
  // Called once, before the first event's records are written.
  void before_first_record(std::function<void()> f) { before_first_ = std::move(f); }
  void capture_stacks(StackSymbolizer* s, int map_fd) {
    symbolizer_ = s;
    stack_map_fd_ = map_fd;
  }
  // The perf map changed: JIT code was added, moved or freed.  A stack named
  // in full is forgotten (its addresses may mean other methods from now on:
  // its next use is named afresh, as a new stack).  A stack that had unnamed
  // frames keeps its id and is renamed in the trace: its events happened
  // just before the code they ran was in the map, so the new names are theirs.
  void perf_map_changed();
  bool unnamed_jit() const { return unnamed_stacks_ > 0; }
  // alloc__sample (record --stacks on a JVM that has it): the VM's own
  // Java frames, named through namer; the VM's native frames through
  // symbolizer.  by_end: the probe set reports slow paths as batch records
  // with the VM's end_ns (batched), so a sample is matched to its own slow
  // path by that; else (combined) to the thread's next slow path.
  void capture_samples(MethodNamer* namer, StackSymbolizer* symbolizer, bool by_end) {
    namer_ = namer;
    symbolizer_ = symbolizer;
    samples_by_end_ = by_end;
    // (a test seam: JVMTRACE_TEST_NAME_DELAY_MS, see add_alloc_sample)
    if (const char* d = std::getenv("JVMTRACE_TEST_NAME_DELAY_MS")) name_delay_ns_ = std::strtoull(d, nullptr, 10) * 1000000;
  }
  // Called with each (epoch, frames hash) whose Java frames were all named
  // in that epoch and that the kernel did not yet know (record puts it in
  // its named_stacks map: samples of that stack no longer wake the reader).
  void on_stack_named(std::function<void(const jt_named_stack&)> fn) { stack_named_ = std::move(fn); }
  // Writes the samples still waiting for their slow path (its record was
  // lost, or the recording ended first): as the recording ends.
  void flush_samples();
  struct SampleCounts {
    uint64_t samples = 0;          // written
    uint64_t unmatched = 0;        // written without their slow path (lost, or after the end)
    uint64_t frames = 0;           // Java frames written
    uint64_t frames_unknown = 0;   // of those, of a method not named (unloaded, or the JVM gone)
    uint64_t truncated = 0;        // samples whose stack went deeper than the VM hands over
    uint64_t stacks_capped = 0;    // samples whose stack was new after the table's cap: written without it
    uint64_t name_reads = 0;       // reads of the target's memory to name methods
    uint64_t quiet = 0;            // samples of a stack named whole already: the reader was not woken
    uint64_t stacks_named = 0;     // (epoch, stack)s handed to on_stack_named
    uint64_t method_cache_drops = 0;  // the Method* -> id cache dropped whole (kMaxMethodIds)
    uint64_t pending_capped = 0;   // samples written at once, unmatched: kMaxPendingTotal were waiting
    uint64_t names_dropped = 0;    // names read after the JVM was gone (its PID maybe another's): not kept
    std::string namer_problem;     // why methods could not be named at all (the VM's tables), if so
  } sample_counts_;
  struct ThreadCounts {
    uint64_t by_kernel = 0;  // named by the kernel, read by the thread itself at its first record
    uint64_t from_proc = 0;  // named from /proc when first seen (in another thread's batch, as a rule)
    uint64_t unnamed = 0;    // of all, without a name: gone before /proc was read ("<exited>")
  } thread_counts_;
  // Events not stored, by cause (trace::LostKind): written as lost records.
  uint64_t malformed_ = 0, gc_end_unpaired_ = 0;
  uint64_t names_full_ = 0;  // events not recorded: a name table was full
  uint64_t frames_not_kept_ = 0;  // frame names not kept: the table was full
  uint64_t stacks_defined_ = 0, stacks_missing_ = 0, stacks_renamed_ = 0;
  std::map<int, uint64_t> stack_errors_;  // bpf_get_stackid's errno -> how often

 private:
  void add(const jt_event& k, size_t size);

  // alloc__slow (usdt/jvmtrace.d): the events of the three probes it stands
  // for, as they would have been recorded (write_slow_path()); the one
  // stack goes with the enter and the refill.
  void add_alloc_slow(const jt_event& k, size_t size, bool has_stack);

  // alloc__batch: each record is one slow path, as alloc__slow reports it,
  // of the thread it names, ending at its end_ns (the VM's clock).  Records
  // of slow paths that ended outside the recording's window (before the
  // attach: left in the VM by an earlier tracer; after its end, while the
  // VM's buffers are drained) are left out, as stat leaves them out.
  void add_alloc_batch(const jt_event& k, size_t size, bool has_stack);
  // sample__fates: a batch of fate records, written as it came.
  void add_sample_fates(const jt_event& k, size_t size, bool has_stack);
  // The hold around a safepoint (hold_safepoints).
  bool hold_safepoints_ = false;
  bool release_on_plab_last_ = false;
  uint64_t hold_id_ = 0, hold_start_ns_ = 0;

  // One slow path as the separate probes would have recorded it: the enter
  // at its start (the VM's clock is the kernel's CLOCK_MONOTONIC; none if
  // it was not measured, as when an attach comes mid-slow-path), the refill
  // (new-TLAB outcomes) and the exit at its end.  stack_id: the trace's
  // stack for the enter and the refill, -2 for none taken.
  void write_slow_path(const jvmtrace_alloc_record& p, int64_t stack_id);

  uint64_t window_start_ns_ = 0, window_end_ns_ = 0;

  // plab__batch: each record becomes the plab__alloc, plab__retire or
  // promote__direct event it stands for, at its own time and thread.  The
  // events wait until the next record that is not a batch (the
  // collection's gc__end or gc__pause__end at the latest: the VM flushes
  // every batch before those) and are then written in time order: a PLAB is
  // often retired by another thread than the one it was handed out to, and
  // the two threads' batches arrive in either order.
  void add_plab_batch(const jt_event& k, size_t size, bool has_stack);

  std::vector<trace::Event> pending_plab_;  // from batches, not yet written
  static constexpr size_t kMaxPendingPlab = 1 << 16;  // (a G1 collection hands out thousands)

  // The trace's id for the kernel's stack id kid (reading and naming the
  // stack the first time), or -1 when none was captured.
  int64_t stack(int64_t kid);

  struct CachedStack {
    uint64_t ips[JT_STACK_DEPTH] = {};
    int64_t id = -1;
    bool unnamed = false;  // has a frame in JIT code the perf map did not name
  };

  // The frames' names (string ids), leaf first.
  std::vector<uint64_t> name_stack(CachedStack* c);

  // Stock GC events arrive as (tracer object, its vtable, cause number):
  // number the collections, pair end with start by tracer, name the
  // collector from the vtable.  False for an end whose start came before
  // the attach.
  bool stock_gc(const jt_event& k, trace::Event* e);

  // alloc__sample: a kernel record of one sample (JT_K_ALLOC_SAMPLE).
  void add_alloc_sample(const jt_event& k, size_t size);
  // A sample waiting for its slow path's record: its event and the slow
  // path's end_ns.
  struct PendingSample {
    trace::Event event;
    uint64_t end_ns;
  };
  struct ThreadSamples {
    std::deque<PendingSample> pending;
  };
  // A slow path of tid has just been written: a sample waiting for it is
  // written after it.
  void slow_path_written(uint32_t tid, const jvmtrace_alloc_record& p);
  void write_sample(PendingSample* s, bool matched);
  // The trace's method id for a method (by its names), or for an unnamed one.
  uint32_t method_id(const trace::Method& m);
  static constexpr uint32_t kMethodNotKept = UINT32_MAX;  // the method table was full
  uint32_t unknown_method();
  uint32_t unknown_method_ = kMethodNotKept;
  // "[frame name not kept]": a frame whose names found a table full.
  uint32_t not_kept_method();
  uint32_t not_kept_method_ = kMethodNotKept;
  uint64_t java_frames_ = 0;  // of every Java stack kept
  uint32_t vm_method(const std::string& symbol);
  // alloc__sample's native frames: a libjvm.so address -> its symbol and
  // method id (kMethodNotKept until first written).
  struct VmFrame {
    std::string name;
    uint32_t id;
  };
  std::unordered_map<uint64_t, VmFrame> vm_frames_;
  size_t vm_frame_bytes_ = 0;  // of their names
  static constexpr size_t kMaxVmFrameAddresses = 1 << 16, kMaxVmFrameBytes = 8 << 20;
  // A class-table id for a class named by its text (a frame's holder).
  uint64_t klass_id_by_name(const std::string& name);
  std::unordered_map<std::string, uint32_t> class_by_name_;
  // The frames' trace ids: Method* -> method id, valid while the metadata
  // epoch is the one they were read in (epoch_).  A cache: the target chooses
  // the Method*s (any aligned word of a region can be made a valid one), so
  // past kMaxMethodIds it is dropped whole, and its methods named again.
  std::unordered_map<uint64_t, uint32_t> method_ids_;
  // Their line tables (bci -> line), read with their names, in the same epoch.
  // At most kMaxLinePairs pairs together (a target chooses its tables'
  // lengths): past that the cache is dropped whole, as method_ids_.
  std::unordered_map<uint64_t, std::vector<std::pair<int32_t, int32_t>>> line_tables_;
  size_t line_pairs_ = 0;
  static constexpr size_t kMaxLinePairs = 1 << 22;
  static constexpr size_t kMaxMethodIds = 1 << 18;
  uint64_t epoch_ = ~0ull;
  std::map<std::vector<trace::Frame>, uint32_t> java_stacks_;  // interned (capped)
  std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>, uint32_t> methods_;  // interned by names
  std::unordered_map<uint32_t, ThreadSamples> samples_;  // (a thread with none waiting: erased)
  size_t pending_total_ = 0;  // samples waiting, of every thread
  MethodNamer* namer_ = nullptr;
  std::function<void(const jt_named_stack&)> stack_named_;
  uint64_t name_delay_ns_ = 0;
  bool samples_by_end_ = true;

  // A name's table id, or kNotKept when its table is full (see kMaxThreads).
  static constexpr uint64_t kNotKept = UINT64_MAX;
  bool room_for(size_t entries, size_t max_entries, size_t bytes) const {
    return entries < max_entries && name_bytes_ + bytes <= kMaxNameBytes;
  }

  uint64_t text(const std::string& s);

  uint64_t thread(uint32_t tid);
  void add_thread_name(const jt_event& k, size_t size, bool has_stack);

  // A class is its name's address and length (a HotSpot Symbol's bytes: a
  // different length at the same address is a different, later Symbol).
  uint64_t klass(uint64_t addr, uint64_t len);

  uint64_t string(uint64_t addr);

  StackSymbolizer* symbolizer_ = nullptr;
  int stack_map_fd_ = -1;
  std::unordered_map<int64_t, CachedStack> stack_ids_;  // by the kernel's stack key (a hash of it)
  uint64_t unnamed_stacks_ = 0;  // cached stacks with a frame in JIT code the perf map did not name
  const PinnedPid& target_;
  pid_t pid_;
  trace::TraceWriter* w_;
  std::unordered_map<uint32_t, uint32_t> threads_;
  std::unordered_map<uint32_t, std::string> kernel_thread_names_;  // tid -> comm, until its first event
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> classes_;
  std::unordered_map<uint64_t, uint32_t> strings_;
  const StockTarget* stock_;
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> gc_open_;  // tracer -> (id, cause)
  std::unordered_map<uint64_t, std::string> gc_names_;                   // vtable -> collector
  std::unordered_map<std::string, uint32_t> texts_;
  uint64_t next_gc_id_ = 0;
  size_t name_bytes_ = 0;                // of every name kept
  size_t stack_frames_ = 0;              // of every stack defined
  uint64_t frame_not_kept_ = kNotKept;  // the string "[frame name not kept]", once needed
  std::function<void()> before_first_;
  uint64_t deadline_ns_ = 0;
  uint32_t since_clock_ = 0;  // records since the deadline was last looked at
  bool budget_spent_ = false, counting_only_ = false;
};

}  // namespace jvmtrace
