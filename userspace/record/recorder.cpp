#include "record/recorder.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/clock.h"
#include "process/target.h"

namespace jvmtrace {

int Recorder::on_event(void* ctx, void* data, size_t size) {
  auto* self = static_cast<Recorder*>(ctx);
  if (self->counting_only_) {
    self->left_unread_++;
    return 0;
  }
  if (self->before_first_) {
    self->before_first_();
    self->before_first_ = nullptr;
  }
  if (size < JT_EVENT_SIZE(0)) {  // not even a header: an event lost, counted
    self->malformed_++;
    return 0;
  }
  self->add(*static_cast<const jt_event*>(data), size);
  // The clock every 16 small records (each costs at most a few reads of the
  // target) and after every large one (a batch or a sample: up to hundreds).
  if (self->deadline_ns_ && (++self->since_clock_ >= 16 || size > 512)) {
    self->since_clock_ = 0;
    if (clock_ns(CLOCK_MONOTONIC) >= self->deadline_ns_) {
      self->budget_spent_ = true;
      self->budget_stops_++;
      return kBudgetSpent;
    }
  }
  return 0;
}

void Recorder::add(const jt_event& k, size_t size) {
  const bool has_stack = k.probe & JT_EVENT_HAS_STACK;
  const uint16_t probe = k.probe & ~JT_EVENT_HAS_STACK;
  if (probe == JT_K_THREAD_NAME) return add_thread_name(k, size, has_stack);
  if (probe == JT_K_PLAB_BATCH) return add_plab_batch(k, size, has_stack);
  if (probe == JT_K_SAMPLE_FATES) return add_sample_fates(k, size, has_stack);
  flush_plab_events();
  if (w_->holding() && (k.ts_ns > hold_start_ns_ + kMaxHoldNs || w_->held() >= kMaxHeldEvents)) {
    hold_counts_.cut_short++;  // the safepoint's last batch is late, or lost: no longer held
    release_held();
  }
  if (probe == JT_K_ALLOC_SLOW) return add_alloc_slow(k, size, has_stack);
  if (probe == JT_K_ALLOC_BATCH) return add_alloc_batch(k, size, has_stack);
  if (probe == JT_K_ALLOC_SAMPLE && !has_stack) return add_alloc_sample(k, size);
  const bool pause = probe == JT_GC_PAUSE_START || probe == JT_GC_PAUSE_END;
  if (probe >= JT_PROBE_COUNT || k.nargs > JT_EVENT_MAX_ARGS ||
      size < static_cast<size_t>(JT_EVENT_SIZE(k.nargs + (has_stack ? 1 : 0))) ||
      (pause && (k.nargs != 6 || has_stack || size < JT_PAUSE_EVENT_SIZE))) {
    malformed_++;
    return;
  }
  trace::Event e;
  e.ts_ns = k.ts_ns;
  e.probe = probe;
  const uint64_t thread_id = thread(k.tid);
  for (int i = 0; i < k.nargs; i++) e.a[i] = k.args[i];
  bool named = thread_id != kNotKept;  // every name it needs is in the tables
  switch (probe) {
    case JT_TLAB_REFILL:  // class name pointer, length at 3, 4
      e.a[3] = klass(k.args[3], k.args[4]);
      e.a[4] = 0;
      named &= e.a[3] != kNotKept;
      break;
    case JT_ALLOC_SLOW_ENTER:  // at 1, 2
      e.a[1] = klass(k.args[1], k.args[2]);
      e.a[2] = 0;
      named &= e.a[1] != kNotKept;
      break;
    case JT_GC_START:
    case JT_GC_END:
      if (stock_) {
        if (!stock_gc(k, &e)) {  // an end whose start was before the attach (or lost): counted
          gc_end_unpaired_++;
          return;
        }
      } else {  // name, cause: NUL-terminated
        e.a[1] = string(k.args[1]);
        e.a[2] = string(k.args[2]);
      }
      named &= e.a[1] != kNotKept && e.a[2] != kNotKept;
      break;
    case JT_GC_PAUSE_START:
    case JT_GC_PAUSE_END: {  // the name's text follows the arguments
      const char* name = reinterpret_cast<const char*>(&k) + JT_EVENT_SIZE(6);
      e.a[1] = text(std::string(name, strnlen(name, JT_PAUSE_NAME_MAX)));
      e.a[2] = string(k.args[2]);
      named &= e.a[1] != kNotKept && e.a[2] != kNotKept;
      break;
    }
    case JT_SAFEPOINT_BEGIN:
    case JT_SAFEPOINT_END:  // the operation's name: static text
      e.a[0] = string(k.args[0]);
      break;
    case JT_ALLOC_SAMPLE:  // only ever as JT_K_ALLOC_SAMPLE
      malformed_++;
      return;
  }
  if (!named) {
    names_full_++;
    return;
  }
  e.thread = static_cast<uint32_t>(thread_id);
  if (probe == JT_SAFEPOINT_BEGIN && hold_safepoints_) {
    if (w_->holding()) {  // the last one's last batch never came
      hold_counts_.cut_short++;
      release_held();
    }
    w_->hold();
    hold_id_ = k.args[1];
    hold_start_ns_ = k.ts_ns;
    hold_counts_.holds++;
  }
  w_->event(e);
  if (has_stack) w_->event_stack(stack(static_cast<int64_t>(k.args[k.nargs])));
}

void Recorder::release_held() {
  hold_counts_.max_held = std::max<uint64_t>(hold_counts_.max_held, w_->held());
  w_->release();
}

void Recorder::add_sample_fates(const jt_event& k, size_t size, bool has_stack) {
  const size_t head = JT_EVENT_SIZE(JT_FATES_ARGS);
  if (has_stack || k.nargs != JT_FATES_ARGS || size < head) {
    malformed_++;
    return;
  }
  const uint64_t count = k.args[1], step = k.args[2];
  if (step < JVMTRACE_FATE_RECORD_BYTES || count > JVMTRACE_FATE_BATCH_RECORDS) {
    malformed_ += std::min<uint64_t>(count, JVMTRACE_FATE_BATCH_RECORDS);
    return;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&k) + head;
  const uint64_t n = std::min<uint64_t>(count, (size - head) / step);
  trace::Fates f;
  f.ts_ns = k.ts_ns;
  f.gc_id = k.args[3];
  f.level = k.args[4];
  f.tracked = k.args[5];
  f.records.reserve(n);
  for (uint64_t i = 0; i < n; i++) {
    jvmtrace_fate_record r;
    std::memcpy(&r, p + i * step, sizeof r);
    if (r.kind >= JVMTRACE_FATE_KIND_COUNT) {  // not a kind of the contract's: that record lost
      malformed_++;
      continue;
    }
    fate_counts_.records[r.kind]++;
    f.records.push_back(trace::Fate{r.sample_id, r.gc_id, r.kind, r.flags});
  }
  malformed_ += count - n;
  fate_counts_.batches++;
  w_->fates(f);
}

void Recorder::add_alloc_slow(const jt_event& k, size_t size, bool has_stack) {
  // (an outcome the record's byte cannot hold is no outcome of the contract's)
  if (k.nargs != 10 || size < static_cast<size_t>(JT_EVENT_SIZE(k.nargs + (has_stack ? 1 : 0))) ||
      k.args[3] > UINT8_MAX || k.args[2] > UINT32_MAX) {
    malformed_++;
    return;
  }
  jvmtrace_alloc_record p{};  // the same slow path as an alloc__batch record
  p.tid = static_cast<int32_t>(k.tid);
  p.alloc_bytes = k.args[0];
  p.class_name = k.args[1];
  p.class_name_len = static_cast<uint32_t>(k.args[2]);
  p.outcome = static_cast<uint8_t>(k.args[3]);
  p.tlab_bytes = k.args[4];
  p.address = k.args[6];
  p.retired_waste_bytes = k.args[7];
  p.gcs = static_cast<uint32_t>(k.args[8]);
  p.start_ns = k.args[9];
  p.end_ns = k.ts_ns;
  write_slow_path(p, has_stack ? stack(static_cast<int64_t>(k.args[10])) : -2);
}

void Recorder::add_alloc_batch(const jt_event& k, size_t size, bool has_stack) {
  // (3 arguments: a VM that fires every batch at once; JT_ALLOC_BATCH_ARGS:
  // one that hands a safepoint's over after it)
  const size_t head = JT_EVENT_SIZE(k.nargs);
  if (has_stack || (k.nargs != 3 && k.nargs != JT_ALLOC_BATCH_ARGS) || size < head) {
    malformed_++;
    return;
  }
  const uint64_t safepoint_id = k.nargs == JT_ALLOC_BATCH_ARGS ? k.args[3] : 0;
  const bool last = k.nargs == JT_ALLOC_BATCH_ARGS && k.args[4] != 0;
  // A safepoint's records come before what followed its begin (a thread's
  // own flush comes after, held with the rest).
  // (whether the hold is on is read before the bypass turns it off)
  const bool releases = last && w_->holding() && safepoint_id == hold_id_;
  std::optional<trace::TraceWriter::Bypass> bypass;
  if (safepoint_id != 0) bypass.emplace(w_);
  const uint64_t count = k.args[1], step = k.args[2];
  if (step < JVMTRACE_ALLOC_RECORD_BYTES) {  // not the contract's layout: every record lost
    malformed_ += count;
    return;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&k) + head;
  const uint64_t n = std::min<uint64_t>(count, (size - head) / step);
  for (uint64_t i = 0; i < n; i++) {
    jvmtrace_alloc_record r;
    std::memcpy(&r, p + i * step, sizeof r);
    if (r.end_ns < window_start_ns_ || (window_end_ns_ && r.end_ns > window_end_ns_)) {
      outside_window_++;
      continue;
    }
    write_slow_path(r, -2);
  }
  malformed_ += count - n;  // cut in the kernel, or unreadable there: lost, counted
  if (releases) {
    bypass.reset();
    release_held();
  }
}

void Recorder::write_slow_path(const jvmtrace_alloc_record& p, int64_t stack_id) {
  const uint64_t cls = klass(p.class_name, p.class_name_len);
  const uint64_t thread_id = thread(static_cast<uint32_t>(p.tid));
  if (cls == kNotKept || thread_id == kNotKept) {  // the events it would have been: lost, counted
    names_full_ += (p.start_ns ? 1 : 0) + (jvmtrace_slow_new_tlab(p.outcome) ? 1 : 0) + 1;
    return;
  }
  trace::Event e;
  e.thread = static_cast<uint32_t>(thread_id);
  if (p.start_ns) {
    e.ts_ns = p.start_ns;
    e.probe = JT_ALLOC_SLOW_ENTER;
    e.a[0] = p.alloc_bytes;
    e.a[1] = cls;
    w_->event(e);
    if (stack_id != -2) w_->event_stack(stack_id);
  }
  e = trace::Event{};
  e.thread = static_cast<uint32_t>(thread_id);
  e.ts_ns = p.end_ns;
  if (jvmtrace_slow_new_tlab(p.outcome)) {
    e.probe = JT_TLAB_REFILL;
    e.a[0] = p.address;
    e.a[1] = p.tlab_bytes;
    e.a[2] = p.alloc_bytes;
    e.a[3] = cls;
    e.a[5] = p.retired_waste_bytes;
    w_->event(e);
    if (stack_id != -2) w_->event_stack(stack_id);
    e.a[1] = e.a[3] = e.a[5] = 0;
  }
  e.probe = JT_ALLOC_SLOW_EXIT;
  e.a[0] = p.address;
  e.a[1] = p.alloc_bytes;
  e.a[2] = p.outcome;
  e.a[3] = p.gcs;
  w_->event(e);
  if (namer_) slow_path_written(static_cast<uint32_t>(p.tid), p);
}

namespace {
// Bounds against a JVM that sends ever new stacks or never reports the slow
// paths its samples name: beyond them a sample goes without its stack, or
// out at once without its slow path (both counted).
constexpr size_t kMaxPendingSamples = 1024;
// And of every thread's together: 88 bytes a sample, ~6 MiB (without it,
// kMaxThreads x kMaxPendingSamples: 12 GiB).  A real JVM's samples wait
// for their slow path's batch, at most 128 slow paths of each thread.
constexpr size_t kMaxPendingTotal = 1 << 16;
}  // namespace

void Recorder::add_alloc_sample(const jt_event& k, size_t size) {
  const size_t frames_at = JT_EVENT_SIZE(JT_SAMPLE_ARGS) + 8 * JT_SAMPLE_NATIVE_MAX;
  const uint64_t depth = k.args[5], step = k.args[6];
  if (k.nargs != JT_SAMPLE_ARGS || size < frames_at || k.args[4] > UINT8_MAX || k.args[2] > UINT32_MAX ||
      depth > JVMTRACE_SAMPLE_MAX_FRAMES || (depth && (step < JVMTRACE_FRAME_BYTES || frames_at + depth * step > size))) {
    malformed_++;
    return;
  }
  const uint64_t end_ns = k.args[7];
  if (end_ns < window_start_ns_ || (window_end_ns_ && end_ns > window_end_ns_)) {
    outside_window_++;  // its slow path is left out too
    return;
  }
  const uint8_t* base = reinterpret_cast<const uint8_t*>(&k);
  std::vector<trace::Frame> frames;
  // The VM's own code, from the probe site out, until the stack leaves the
  // mapped files (the code cache: a runtime stub, then the Java frames,
  // which come from the VM's own walk below).
  const bool quiet = (k.args[9] & JT_SAMPLE_NAMED) != 0;
  if (quiet) sample_counts_.quiet++;
  const uint64_t native = std::min<uint64_t>(k.args[9] & UINT32_MAX, JT_SAMPLE_NATIVE_MAX);
  for (uint64_t i = 0; symbolizer_ && i < native; i++) {
    uint64_t ip;
    std::memcpy(&ip, base + JT_EVENT_SIZE(JT_SAMPLE_ARGS) + 8 * i, sizeof ip);
    const uint64_t at = i == 0 ? ip : ip - 1;  // a return address is past its call
    // Each address of libjvm.so named once (its symbols do not move): the
    // same few dozen come back in every sample.
    auto c = vm_frames_.find(at);
    if (c == vm_frames_.end()) {
      bool in_file;
      std::string name = symbolizer_->native_frame(at, &in_file);
      if (!in_file) break;
      // (a name read of a JVM gone since is not kept: its maps may be another's)
      if (!target_.alive()) break;
      if (vm_frames_.size() >= kMaxVmFrameAddresses || vm_frame_bytes_ + name.size() > kMaxVmFrameBytes) {
        vm_frames_.clear();
        vm_frame_bytes_ = 0;
      }
      vm_frame_bytes_ += name.size();
      c = vm_frames_.emplace(at, VmFrame{std::move(name), kMethodNotKept}).first;
    }
    VmFrame& v = c->second;
    // The probe's own frames (the VM's sampler around the probe site) are
    // jvmtrace's, not the program's.
    if (frames.empty() && v.name.rfind("jvmtrace_", 0) == 0) continue;
    if (v.id == kMethodNotKept) v.id = vm_method(v.name);
    else if (v.id == not_kept_method_) frames_not_kept_++;  // (counted per frame, as vm_method counts)
    frames.push_back({v.id, 0, trace::kFrameVm});
  }
  // The Java frames: named once per Method* while the metadata epoch stays
  // what it was at the probe hit (docs/probes.md, alloc__sample).
  const uint64_t epoch = k.args[8], epoch_addr = k.args[10];
  if (epoch != epoch_) {
    method_ids_.clear();
    line_tables_.clear();
    line_pairs_ = 0;
    namer_->forget();
    epoch_ = epoch;
  }
  struct Fresh {
    size_t frame;
    uint64_t method;
    int32_t bci;
    MethodInfo info;
  };
  std::vector<Fresh> fresh;
  bool truncated = false;
  const bool namer_ready = namer_->ensure(&sample_counts_.namer_problem);
  // A test seam (tests/test_allocation_sites.py): names read only once the
  // sample is this old, so that the classes of its frames may be unloaded
  // and their memory reused first, as on a recorder that falls behind.
  if (name_delay_ns_) {
    const uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now < k.ts_ns + name_delay_ns_) usleep(static_cast<useconds_t>((k.ts_ns + name_delay_ns_ - now) / 1000));
  }
  const size_t java0 = frames.size();
  uint64_t hash = JT_FRAMES_HASH_SEED ^ depth;  // as the kernel's (jt_named_stack)
  for (uint64_t i = 0; i < depth; i++) {
    jvmtrace_frame f;
    std::memcpy(&f, base + frames_at + i * step, sizeof f);
    hash = jt_frames_hash(hash, f.method);
    if (i + 1 == depth && (f.flags & JVMTRACE_FRAME_TRUNCATED)) truncated = true;
    // (a kind not the contract's: the frame still counts)
    const uint8_t kind = f.kind < JVMTRACE_FRAME_KIND_COUNT ? f.kind : +trace::kFrameJit;
    trace::Frame t{0, f.line, kind};
    auto it = method_ids_.find(f.method);
    if (it != method_ids_.end()) {
      t.method = it->second;
      // (a VM that walks bci only: the line from the method's table)
      if (!f.line && kind != trace::kFrameNativeMethod) {
        auto lt = line_tables_.find(f.method);
        if (lt != line_tables_.end()) t.line = static_cast<uint64_t>(line_of_bci(lt->second, f.bci));
      }
    } else {
      Fresh n{frames.size(), f.method, f.bci, {}};
      if (namer_ready && epoch != ~0ull && namer_->read(f.method, &n.info)) fresh.push_back(std::move(n));
      else t.method = unknown_method();
    }
    frames.push_back(t);
  }
  if (!fresh.empty()) {
    // Still the epoch of the hit: nothing was freed since, so what was read
    // is those methods' own names.  Else none of them can be trusted.  And
    // still the target, pinned: else the reads, by PID number, may have been
    // of another process that has that number now.
    uint64_t now;
    bool valid = namer_->read_u64(epoch_addr, &now) && now == epoch;
    if (valid && !target_.alive()) {
      valid = false;
      sample_counts_.names_dropped += fresh.size();
    }
    for (Fresh& n : fresh) {
      uint32_t id = unknown_method();
      if (valid) {
        // (names the target chose: each kept within the tables' caps, else
        // the frame is "[frame name not kept]", counted)
        const uint64_t klass = klass_id_by_name(n.info.klass), name = text(n.info.name),
                       sig = text(n.info.signature), file = n.info.file.empty() ? 0 : text(n.info.file);
        trace::Method m;
        m.klass = klass + 1;
        m.name = name;
        m.signature = sig + 1;
        m.file = n.info.file.empty() ? 0 : file + 1;
        id = klass == kNotKept || name == kNotKept || sig == kNotKept || file == kNotKept ? kMethodNotKept : method_id(m);
        if (id == kMethodNotKept) {
          frames_not_kept_++;
          id = not_kept_method();
        } else {
          if (method_ids_.size() >= kMaxMethodIds) {
            method_ids_.clear();
            sample_counts_.method_cache_drops++;
          }
          method_ids_[n.method] = id;
        }
        if (!frames[n.frame].line && frames[n.frame].kind != trace::kFrameNativeMethod)
          frames[n.frame].line = static_cast<uint64_t>(line_of_bci(n.info.lines, n.bci));
        if (line_tables_.size() >= kMaxMethodIds || line_pairs_ + n.info.lines.size() > kMaxLinePairs) {
          line_tables_.clear();
          line_pairs_ = 0;
        }
        line_pairs_ += n.info.lines.size();
        line_tables_[n.method] = std::move(n.info.lines);
      }
      frames[n.frame].method = id;
    }
  }
  sample_counts_.name_reads = namer_->reads();
  bool all_named = depth > 0;
  for (size_t i = java0; i < frames.size(); i++) {
    sample_counts_.frames++;
    if (frames[i].method == unknown_method_) sample_counts_.frames_unknown++;
    if (frames[i].method == unknown_method_ || frames[i].method == not_kept_method_) all_named = false;
  }
  // Every frame has its name for this epoch: the kernel need not wake us
  // for this stack again until the epoch moves.
  if (!quiet && all_named && step == JVMTRACE_FRAME_BYTES && epoch != ~0ull && stack_named_) {
    stack_named_(jt_named_stack{epoch, hash});
    sample_counts_.stacks_named++;
  }
  if (truncated) {
    frames.push_back({vm_method("[deeper frames not captured]"), 0, trace::kFrameVm});
    sample_counts_.truncated++;
  }
  uint64_t stack_plus_one = 0;
  auto st = java_stacks_.find(frames);
  if (st != java_stacks_.end()) {
    stack_plus_one = st->second + 1;
  } else if (java_stacks_.size() < kMaxJavaStacks && java_frames_ + frames.size() <= kMaxJavaFrames) {
    java_frames_ += frames.size();
    const uint32_t id = w_->define_java_stack(frames);
    java_stacks_.emplace(std::move(frames), id);
    stack_plus_one = id + 1;
  } else {
    sample_counts_.stacks_capped++;
  }
  const uint64_t thread_id = thread(k.tid), klass_id = klass(k.args[1], k.args[2]);
  if (thread_id == kNotKept || klass_id == kNotKept) {
    names_full_++;
    return;
  }
  trace::Event e;
  e.probe = JT_ALLOC_SAMPLE;
  e.thread = static_cast<uint32_t>(thread_id);
  e.ts_ns = end_ns;  // its slow path's end, on the VM's clock like that slow path's record
  e.a[0] = k.args[0];
  e.a[1] = klass_id;
  e.a[2] = k.args[3];
  e.a[3] = k.args[4];
  e.a[4] = stack_plus_one;
  e.a[5] = k.args[11];  // the sample's id (0: its object is not tracked)
  PendingSample s{e, samples_by_end_ ? end_ns : 0};
  if (pending_total_ >= kMaxPendingTotal) {  // (every thread's together: written now, without its slow path)
    write_sample(&s, false);
    sample_counts_.pending_capped++;
    return;
  }
  ThreadSamples& t = samples_[k.tid];
  if (t.pending.size() >= kMaxPendingSamples) {
    write_sample(&t.pending.front(), false);
    t.pending.pop_front();
    pending_total_--;
  }
  t.pending.push_back(s);
  pending_total_++;
}

void Recorder::slow_path_written(uint32_t tid, const jvmtrace_alloc_record& p) {
  auto it = samples_.find(tid);
  if (it == samples_.end()) return;
  ThreadSamples& t = it->second;
  while (!t.pending.empty()) {
    PendingSample& s = t.pending.front();
    if (s.end_ns != 0 && s.end_ns > p.end_ns) break;  // an earlier slow path of the thread
    // Its own slow path (combined: the thread's next one), or one after it
    // (its own record never came).
    const bool own = s.end_ns == p.end_ns;
    write_sample(&s, s.end_ns == 0 || own);
    t.pending.pop_front();
    pending_total_--;
    if (own) break;
  }
  if (t.pending.empty()) samples_.erase(it);  // (an empty deque still holds a 512-byte block)
}

void Recorder::write_sample(PendingSample* s, bool matched) {
  // The weight is the VM's (the bytes the sample stands for): analysis
  // scales each thread's to the bytes its slow paths handed out.
  w_->event(s->event);
  sample_counts_.samples++;
  if (!matched) sample_counts_.unmatched++;
}

void Recorder::flush_samples() {
  for (auto& [tid, t] : samples_) {
    while (!t.pending.empty()) {
      write_sample(&t.pending.front(), false);
      t.pending.pop_front();
    }
  }
  samples_.clear();
  pending_total_ = 0;
}

uint32_t Recorder::method_id(const trace::Method& m) {
  const auto key = std::make_tuple(m.klass, m.name, m.signature, m.file);
  auto it = methods_.find(key);
  if (it != methods_.end()) return it->second;
  if (methods_.size() >= kMaxMethods) return kMethodNotKept;
  return methods_.emplace(key, w_->define_method(m)).first->second;
}

uint32_t Recorder::not_kept_method() {
  if (not_kept_method_ == kMethodNotKept) {
    if (frame_not_kept_ == kNotKept) frame_not_kept_ = w_->define_string("[frame name not kept]");
    trace::Method m;
    m.name = frame_not_kept_;
    not_kept_method_ = w_->define_method(m);  // (one entry past the cap, once)
  }
  return not_kept_method_;
}

uint32_t Recorder::unknown_method() {
  if (unknown_method_ == kMethodNotKept) unknown_method_ = vm_method(trace::kUnknownMethodName);
  return unknown_method_;
}

uint64_t Recorder::klass_id_by_name(const std::string& name) {
  auto it = class_by_name_.find(name);
  if (it != class_by_name_.end()) return it->second;
  // (the class table is klass()'s too: one cap for both)
  if (!room_for(classes_.size() + class_by_name_.size(), kMaxClasses, name.size())) return kNotKept;
  name_bytes_ += name.size();
  return class_by_name_.emplace(name, w_->define_class(name)).first->second;
}

uint32_t Recorder::vm_method(const std::string& symbol) {
  trace::Method m;
  m.name = text(symbol);
  const uint32_t id = m.name == kNotKept ? kMethodNotKept : method_id(m);
  if (id != kMethodNotKept) return id;
  frames_not_kept_++;
  return not_kept_method();
}

void Recorder::add_plab_batch(const jt_event& k, size_t size, bool has_stack) {
  // (3 arguments: a VM that fires a pause's batches in it; JT_PLAB_BATCH_ARGS:
  // one that hands a safepoint's over after it)
  const size_t head = JT_EVENT_SIZE(k.nargs);
  if (has_stack || (k.nargs != 3 && k.nargs != JT_PLAB_BATCH_ARGS) || size < head) {
    malformed_++;
    return;
  }
  const uint64_t safepoint_id = k.nargs == JT_PLAB_BATCH_ARGS ? k.args[3] : 0;
  const bool releases = release_on_plab_last_ && k.nargs == JT_PLAB_BATCH_ARGS && k.args[4] != 0 &&
                        w_->holding() && safepoint_id == hold_id_;
  const uint64_t count = k.args[1], step = k.args[2];
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&k) + head;
  const size_t avail = size - head;
  if (step < JVMTRACE_PLAB_RECORD_BYTES) {  // not the contract's layout: every record lost
    malformed_ += count;
    return;
  }
  const uint64_t n = std::min<uint64_t>(count, avail / step);
  for (uint64_t i = 0; i < n; i++) {
    jvmtrace_plab_record r;
    std::memcpy(&r, p + i * step, sizeof r);
    const uint64_t thread_id = thread(static_cast<uint32_t>(r.tid));
    if (thread_id == kNotKept) {
      names_full_++;
      continue;
    }
    trace::Event e;
    e.ts_ns = r.ts_ns;
    e.thread = static_cast<uint32_t>(thread_id);
    e.a[0] = r.gc_id;
    e.a[1] = r.address;
    e.a[2] = r.bytes;
    switch (r.kind) {
      case JVMTRACE_PLAB_REC_ALLOC:
        e.probe = JT_PLAB_ALLOC;
        e.a[3] = r.dest;
        break;
      case JVMTRACE_PLAB_REC_RETIRE:
        e.probe = JT_PLAB_RETIRE;
        e.a[3] = r.used_bytes;
        e.a[4] = r.bytes - r.used_bytes;
        e.a[5] = r.dest;
        break;
      case JVMTRACE_PLAB_REC_DIRECT:
        e.probe = JT_PROMOTE_DIRECT;
        e.a[3] = r.dest;
        break;
      case JVMTRACE_PLAB_REC_UNDO: {
        // A direct copy that lost its race: its promote__direct (still
        // waiting, its thread's, just before) is no promotion.
        bool found = false;
        for (auto it = pending_plab_.rbegin(); it != pending_plab_.rend(); ++it) {
          if (it->probe == JT_PROMOTE_DIRECT && it->thread == e.thread && it->a[1] == r.address &&
              it->a[2] == r.bytes && it->a[0] == r.gc_id) {
            pending_plab_.erase(std::next(it).base());
            found = true;
            break;
          }
        }
        plab_undone_++;
        if (!found) plab_undo_unmatched_++;
        continue;
      }
      default:
        malformed_++;
        continue;
    }
    pending_plab_.push_back(e);
  }
  // A JVM that sends nothing but PLAB batches would grow the waiting events
  // without bound: written now, in time order among themselves.
  if (pending_plab_.size() >= kMaxPendingPlab) flush_plab_events();
  malformed_ += count - n;  // cut in the kernel, or unreadable there: lost, counted
  if (releases) {
    flush_plab_events();
    release_held();
  }
}

int64_t Recorder::stack(int64_t kid) {
  if (kid < 0 || stack_map_fd_ < 0) {
    stacks_missing_++;
    if (kid < 0) stack_errors_[static_cast<int>(-kid)]++;
    return -1;
  }
  auto it = stack_ids_.find(kid);
  if (it != stack_ids_.end()) return it->second.id;
  // (perf-map changes make a long recording define stacks anew: bounded too)
  if (stacks_defined_ >= kMaxStacks || stack_frames_ + JT_STACK_DEPTH + 1 > kMaxStackFrames) {
    stacks_missing_++;
    return -1;
  }
  CachedStack c;
  const uint64_t key = static_cast<uint64_t>(kid);
  if (bpf_map_lookup_elem(stack_map_fd_, &key, c.ips) != 0) {
    stacks_missing_++;
    return -1;
  }
  std::vector<uint64_t> frames = name_stack(&c);
  stack_frames_ += frames.size();
  c.id = w_->define_stack(frames);
  stacks_defined_++;
  // Code the perf map does not know yet: have the map written again soon,
  // and again while such a stack is in use (a refresh can come before the
  // JIT finishes, or fail); see perf_map_changed().
  if (c.unnamed) unnamed_stacks_++;
  return stack_ids_.emplace(kid, c).first->second.id;
}

std::vector<uint64_t> Recorder::name_stack(CachedStack* c) {
  std::vector<uint64_t> frames;
  const uint64_t unnamed = symbolizer_->unresolved_jit();
  auto frame_text = [&](const std::string& name) {
    uint64_t id = text(name);
    if (id != kNotKept) return id;
    frames_not_kept_++;
    if (frame_not_kept_ == kNotKept) frame_not_kept_ = w_->define_string("[frame name not kept]");
    return frame_not_kept_;
  };
  for (int i = 0; i < JT_STACK_DEPTH && c->ips[i]; i++)  // a return address is past its call: -1
    frames.push_back(frame_text(symbolizer_->frame(i == 0 ? c->ips[i] : c->ips[i] - 1)));
  if (frames.size() == JT_STACK_DEPTH) frames.push_back(frame_text("[deeper frames not captured]"));
  c->unnamed = symbolizer_->unresolved_jit() != unnamed;
  return frames;
}

bool Recorder::stock_gc(const jt_event& k, trace::Event* e) {
  const uint64_t tracer = k.args[0];
  uint64_t id, cause;
  if (k.probe == JT_GC_START) {
    id = next_gc_id_++;
    cause = k.args[2];
    // (keyed by the tracer object's address, the target's word: a JVM has a
    // handful of tracers, a flood of starts without ends is not kept)
    if (gc_open_.size() < 4096 || gc_open_.count(tracer)) gc_open_[tracer] = {id, cause};
  } else {
    auto it = gc_open_.find(tracer);
    if (it == gc_open_.end()) return false;
    id = it->second.first;
    cause = it->second.second;
    gc_open_.erase(it);
  }
  auto name = gc_names_.find(k.args[1]);
  if (name == gc_names_.end()) {
    std::string n = stock_->gc_name(k.args[1]);
    if (n.empty()) n = "<unknown collector>";
    if (gc_names_.size() >= 4096) gc_names_.clear();  // (by vtable address, the target's word: a cache, kept small)
    name = gc_names_.emplace(k.args[1], n).first;
  }
  e->a[0] = id;
  e->a[1] = text(name->second);
  // The cause's name as this libjvm.so prints it (its GCCause::to_string's
  // table, read by StockTarget), else its number in this build's enum.
  const std::string cause_name = stock_->gc_cause(cause);
  e->a[2] = text(cause_name.empty() ? "GCCause #" + std::to_string(cause) : cause_name);
  e->a[3] = gc_kind_of(name->second);
  e->a[4] = e->a[5] = 0;
  return true;
}

uint64_t Recorder::text(const std::string& s) {
  auto it = texts_.find(s);
  if (it != texts_.end()) return it->second;
  if (!room_for(texts_.size(), kMaxTexts, s.size())) return kNotKept;
  name_bytes_ += s.size();
  return texts_.emplace(s, w_->define_string(s)).first->second;
}

void Recorder::add_thread_name(const jt_event& k, size_t size, bool has_stack) {
  if (has_stack || k.nargs != 2 || size < JT_EVENT_SIZE(2)) {
    malformed_++;
    return;
  }
  // Kept until the thread's first event (the next record of that thread, as
  // a rule); bounded like the thread table itself.
  if (threads_.count(k.tid) || kernel_thread_names_.size() >= kMaxThreads) return;
  const char* comm = reinterpret_cast<const char*>(&k.args[0]);
  kernel_thread_names_[k.tid] = std::string(comm, strnlen(comm, 16));
}

uint64_t Recorder::thread(uint32_t tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second;
  if (!room_for(threads_.size(), kMaxThreads, 16)) return kNotKept;  // (a thread's name: 15 bytes at most)
  std::string name;
  auto kernel = kernel_thread_names_.find(tid);
  if (kernel != kernel_thread_names_.end()) {  // read by the thread itself as it fired
    name = std::move(kernel->second);
    kernel_thread_names_.erase(kernel);
    thread_counts_.by_kernel++;
  } else {  // a thread seen first in another's batch, or whose name record was lost
    name = thread_name(pid_, tid);
    if (!target_.alive()) name.clear();  // (the number may be another process's now)
    thread_counts_.from_proc++;
  }
  if (name.empty()) thread_counts_.unnamed++;
  name_bytes_ += name.size();
  return threads_.emplace(tid, w_->define_thread(tid, name.empty() ? "<exited>" : name)).first->second;
}

uint64_t Recorder::klass(uint64_t addr, uint64_t len) {
  auto key = std::make_pair(addr, len);
  auto it = classes_.find(key);
  if (it != classes_.end()) return it->second;
  const size_t n = len < 1024 ? len : 1024;
  if (!room_for(classes_.size() + class_by_name_.size(), kMaxClasses, n)) return kNotKept;
  std::string name = len ? read_process_memory(pid_, addr, n) : "";
  if (!target_.alive()) name.clear();
  if (name.empty()) name = addr ? "<unreadable>" : "<none>";
  name_bytes_ += name.size();
  return classes_.emplace(key, w_->define_class(name)).first->second;
}

uint64_t Recorder::string(uint64_t addr) {
  auto it = strings_.find(addr);
  if (it != strings_.end()) return it->second;
  if (strings_.size() >= kMaxStrings) return kNotKept;
  bool terminated = false;  // an empty string (G1 Remark's cause) is not an unreadable one
  std::string s = addr ? read_process_string(pid_, addr, 256, &terminated) : "";
  if (!target_.alive()) s.clear(), terminated = false;
  if (s.empty() && !terminated) s = addr ? "<unreadable>" : "<none>";
  const uint64_t id = text(s);
  if (id == kNotKept) return kNotKept;
  return strings_.emplace(addr, id).first->second;
}

void Recorder::flush_plab_events() {
  if (pending_plab_.empty()) return;
  std::stable_sort(pending_plab_.begin(), pending_plab_.end(),
                   [](const trace::Event& a, const trace::Event& b) { return a.ts_ns < b.ts_ns; });
  if (w_->holding()) {
    w_->hold_in_order(pending_plab_);
  } else {
    for (const trace::Event& e : pending_plab_) w_->event(e);
  }
  pending_plab_.clear();
}

void Recorder::perf_map_changed() {
  unnamed_stacks_ = 0;
  for (auto it = stack_ids_.begin(); it != stack_ids_.end();) {
    CachedStack& c = it->second;
    if (!c.unnamed) {
      it = stack_ids_.erase(it);
      continue;
    }
    w_->redefine_stack(static_cast<uint32_t>(c.id), name_stack(&c));
    stacks_renamed_++;
    if (c.unnamed) unnamed_stacks_++;
    ++it;
  }
}

}  // namespace jvmtrace
