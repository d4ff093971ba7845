/*
 * alloc__sample (jvmtrace.d): the allocating thread's own Java stack at a
 * sampled allocation slow path, walked by the VM itself as JFR's stack
 * recorder walks it (vframes: interpreted, C1, C2 and inlined scopes, with
 * their bytecode index), handed to the probe as an array of
 * frames.  A tracer names the frames' Method*s from outside through
 * gHotSpotVMStructs, and trusts a name only while jvmtrace_metadata_epoch
 * is unchanged since the probe hit (jvmtraceHooks.hpp).
 *
 * One source for JDK 17, 21 and 25 (usdt/hotspot/shared/, copied into the
 * tree by scripts/build-patched-jdk.sh).  No "precompiled.hpp": 25 passes it
 * with -include; this file includes what it uses.
 */
#include "code/codeBlob.hpp"
#include "code/debugInfoRec.hpp"
#include "code/nmethod.hpp"
#include "gc/shared/gc_globals.hpp"
#include "memory/allocation.hpp"
#include "oops/instanceKlass.hpp"
#include "oops/klass.hpp"
#include "oops/method.hpp"
#include "oops/symbol.hpp"
#include "runtime/atomic.hpp"
#include "runtime/handles.inline.hpp"
#include "runtime/os.hpp"
#include "runtime/safepointVerifiers.hpp"
#include "runtime/stackWatermarkSet.hpp"
#include "runtime/vframe.inline.hpp"
#include "utilities/jvmtraceGlobals.hpp"
#include "utilities/jvmtraceRelease.hpp"
#include <math.h>
#include "utilities/jvmtraceProbes.hpp"
#include "utilities/jvmtraceSpinLocker.hpp"

extern volatile uint64_t jvmtrace_metadata_epoch;  // jvmtraceProbes.cpp

// The current thread's vframes from its last Java frame, without updating
// the register map or processing frames for a concurrent collector (the
// walk reads no oop of a frame: return pcs, links, the interpreter's
// Method* and bcp, code blobs and scope data), as JFR walks.  On 21 and 25
// a virtual thread's walk ends at its Continuation.enterSpecial; the
// continuation's entry is read only once this thread's stack processing
// has started (JFR's rule).
class JvmtraceVframeStream : public vframeStreamCommon {
#if JVMTRACE_JDK >= 21  // virtual threads
  static RegisterMap::WalkContinuation walk_continuation(JavaThread* jt) {
    return ((UseZGC || UseShenandoahGC) && !StackWatermarkSet::processing_started(jt))
               ? RegisterMap::WalkContinuation::skip
               : RegisterMap::WalkContinuation::include;
  }
#endif
 public:
  explicit JvmtraceVframeStream(JavaThread* jt)
#if JVMTRACE_JDK == 17
      : vframeStreamCommon(jt, false /* process_frames */)
#elif JVMTRACE_JDK == 21
      : vframeStreamCommon(RegisterMap(jt, RegisterMap::UpdateMap::skip, RegisterMap::ProcessFrames::skip,
                                       walk_continuation(jt)))
#else  // 25
      : vframeStreamCommon(jt, RegisterMap::UpdateMap::skip, RegisterMap::ProcessFrames::skip,
                           walk_continuation(jt))
#endif
  {
    _stop_at_java_call_stub = false;
    if (!jt->has_last_Java_frame()) {
      _mode = at_end_mode;
      return;
    }
    _frame = jt->last_frame();
#if JVMTRACE_JDK >= 21
    _cont_entry = jt->last_continuation();
#endif
    // Past the runtime stub (and any VM frame) to the first Java frame.
    while (!fill_from_frame()) {
      _frame = _frame.sender(&_reg_map);
    }
  }
  // A scope with a caller scope in the same nmethod (JFR: the next vframe
  // has the same frame id).
  bool is_inlined() const {
    return _mode == compiled_mode && _sender_decode_offset != DebugInformationRecorder::serialized_null;
  }
};

// Fills out[0, max) leaf first; the last frame gets JVMTRACE_FRAME_TRUNCATED
// when the stack goes on.  Each Method* has a frame on this very stack.
static int jvmtrace_java_stack(JavaThread* jt, JvmtraceFrame* out, int max) {
  ResetNoHandleMark rnhm;  // 21/25: the register map allocates a Handle inside a continuation
  HandleMark hm(jt);
  NoSafepointVerifier nsv;  // the new object is raw memory still: never a safepoint here
  JvmtraceVframeStream vfs(jt);
  int n = 0;
  for (; !vfs.at_end(); vfs.next()) {
    if (n == max) {
      out[n - 1].flags |= JVMTRACE_FRAME_TRUNCATED;
      break;
    }
    const Method* m = vfs.method();
    JvmtraceFrame& f = out[n++];
    uint8_t kind, flags = 0;
    int bci = 0;
    if (m->is_native()) {
      kind = JVMTRACE_FRAME_NATIVE;
    } else {
      bci = vfs.bci();
      if (vfs.is_interpreted_frame()) {
        kind = JVMTRACE_FRAME_INTERPRETED;
      } else {
        const bool c1 = vfs.nm()->is_compiled_by_c1();
        if (vfs.is_inlined()) {
          kind = JVMTRACE_FRAME_INLINED;
          if (c1) flags |= JVMTRACE_FRAME_IN_C1;
        } else {
          kind = c1 ? JVMTRACE_FRAME_C1 : JVMTRACE_FRAME_JIT;
        }
      }
    }
    if (m->method_holder()->is_hidden()) flags |= JVMTRACE_FRAME_HIDDEN_CLASS;
    if (m->is_hidden()) flags |= JVMTRACE_FRAME_HIDDEN_METHOD;
    // No line: the tracer maps the bci through the method's line table once
    // per method (a scan of the compressed table per frame here, each sample).
    f.method = (uint64_t)p2i(m);
    f.bci = bci;
    f.line = 0;
    f.kind = kind;
    f.flags = flags;
  }
  return n;
}

// "package.Class.method" into buf (NUL-terminated, cut at size - 1), as
// Klass::external_name spells a class ('/' as '.', a hidden class's last
// '+' as '/'), from the two Symbols' bytes: no resource area, no lock.
static void jvmtrace_format_method(const Method* m, char* buf, size_t size) {
  const InstanceKlass* holder = m->method_holder();
  const Symbol* k = holder->name();
  const int klen = k->utf8_length();
  int hidden_plus = -1;
  if (holder->is_hidden()) {
    for (int i = klen - 1; i >= 0; i--) {
      if (k->char_at(i) == '+') {
        hidden_plus = i;
        break;
      }
    }
  }
  size_t pos = 0;
  for (int i = 0; i < klen && pos + 1 < size; i++) {
    const char c = k->char_at(i);
    buf[pos++] = c == '/' ? '.' : (i == hidden_plus ? '/' : c);
  }
  if (pos + 1 < size) buf[pos++] = '.';
  const Symbol* name = m->name();
  for (int i = 0; i < name->utf8_length() && pos + 1 < size; i++) {
    buf[pos++] = name->char_at(i);
  }
  buf[pos] = '\0';
}

// Sampling by bytes, as JEP 331's: each thread counts down a random
// interval (exponential, of mean jvmtrace_sample_interval) in the bytes its
// slow paths hand out (a new TLAB's, an object's outside TLABs), and the
// slow path where it runs out is a candidate.  The countdown forgets its
// past, so a slow path of B bytes is a candidate with probability
// p = 1 - e^(-B/mean) whatever came before it.  A candidate is sampled when
// it takes a token from a bucket (below); one that finds the bucket empty is
// sampled with probability q = 2^-k (k: candidates in a row that found it
// empty; a token resets k), which depends on nothing but the past, so the
// sample's weight B / p / q (Horvitz-Thompson) is still, on average, exactly
// its slow paths' bytes.  No candidate is left out for certain: leaving out
// the ones over a cap would move their bytes onto whatever came next
// (measured on Lucene, its byte buffers' share fell from 24% to 13%).
//
// The rate.  T = JvmtraceSampleRate a second (manageable; a tracer sets it
// for its attach and puts the old value back).
//  - The mean is set from the byte rate: over windows of 100 ms (a window
//    ends at the first sample 100 ms after its start, or at once when the
//    bucket runs empty), R = the sum of the window's samples' weights over
//    its time, an unbiased estimate of the slow paths' byte rate; the new
//    mean is R / T, within [64 KiB, 1 TiB].  A window of fewer than 10
//    samples moves it halfway (in log space), so that noise is not chased.
//    64 KiB is the floor: a program that allocates under T x 64 KiB a
//    second gets fewer samples than T.
//  - The bucket refills at 1.8 T a second and holds 0.2 T (at least 2), and
//    a coin's sample takes it into debt: a second has at most 2 T samples
//    plus the debt at its end (each coin in a run halves the next one's
//    chance, so a few at most).
//  - A sample after more than a second without one starts afresh: a tracer
//    attached again, or a program that was quiet.  The mean goes back to
//    64 KiB and the bucket is full; a program that allocates gigabytes a
//    second (AllocBench: 10 GB/s) empties it in its first 0.2 T samples,
//    which end the window and set the mean.
//  - T = 0: every slow path is sampled, of weight B (for truth runs).
// The controller's state is global, under a spin lock taken only by
// candidates (at most about 2 T + the coins' a second, once the mean is
// set).  A thread picks a new mean up at its next slow path by rescaling
// what is left of its countdown (still exponential, of the new mean), and
// weighs its samples by the mean it drew with.
static const int64_t JVMTRACE_SAMPLE_BASE_BYTES = 64 * 1024;
static const int64_t JVMTRACE_SAMPLE_MAX_BYTES = (int64_t)1 << 40;
static const jlong JVMTRACE_SAMPLE_WINDOW_NS = 100 * NANOSECS_PER_MILLISEC;
static const jlong JVMTRACE_SAMPLE_SESSION_GAP_NS = NANOSECS_PER_SEC;
static volatile int64_t jvmtrace_sample_interval = JVMTRACE_SAMPLE_BASE_BYTES;
static volatile int jvmtrace_sample_lock = 0;
// Under the lock:
static jlong jvmtrace_sample_last_ns = 0;         // the last sample's time; 0: none yet
static jlong jvmtrace_sample_window_start = 0;
static double jvmtrace_sample_window_bytes = 0;   // the window's samples' weights
static int jvmtrace_sample_window_used = 0;
static double jvmtrace_sample_tokens = 0;
static jlong jvmtrace_sample_refilled_ns = 0;
static int jvmtrace_sample_empty_run = 0;          // k
static THREAD_LOCAL int64_t jvmtrace_sample_countdown = 0;
static THREAD_LOCAL int64_t jvmtrace_sample_mean = 0;  // the mean the countdown was drawn with
static THREAD_LOCAL uint64_t jvmtrace_sample_rng = 0;

// splitmix64's finalizer: a seed from values that differ little (threads
// started within a microsecond, at neighbouring addresses) gives unrelated
// streams.
static uint64_t jvmtrace_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UCONST64(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UCONST64(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

uint64_t jvmtrace_random() {
  uint64_t x = jvmtrace_sample_rng;
  if (x == 0) {
    // The time, the thread's kernel id and address, and a count of seeds
    // given out: no two threads start from the same state.
    static volatile uint64_t seeds = 0;
    Thread* t = Thread::current();
    x = jvmtrace_mix64((uint64_t)os::javaTimeNanos() ^ jvmtrace_mix64((uint64_t)p2i(t)) ^
                       jvmtrace_mix64(((uint64_t)(uint32_t)jvmtrace_tid(t) << 32) + Atomic::add(&seeds, (uint64_t)1)));
    if (x == 0) x = 1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  jvmtrace_sample_rng = x;
  return x;
}

static int64_t jvmtrace_next_interval(int64_t mean) {
  const double u = (double)(jvmtrace_random() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return (int64_t)(-log(1.0 - u) * (double)mean) + 1;
}

// A candidate of B bytes, drawn with probability p: whether it is sampled,
// and its weight.  Moves the mean at a window's end.
static bool jvmtrace_sample_decide(double weight_p, uint64_t* weight) {
  const double target = (double)JvmtraceSampleRate;
  const double capacity = MAX2(2.0, 0.2 * target);
  JvmtraceSpinLocker locker(&jvmtrace_sample_lock);
  const jlong now = os::javaTimeNanos();  // (under the lock: time never runs backwards here)
  if (jvmtrace_sample_last_ns == 0 || now - jvmtrace_sample_last_ns > JVMTRACE_SAMPLE_SESSION_GAP_NS) {
    // A new session: back to 64 KiB and a full bucket.
    Atomic::store(&jvmtrace_sample_interval, JVMTRACE_SAMPLE_BASE_BYTES);
    jvmtrace_sample_tokens = capacity;
    jvmtrace_sample_refilled_ns = now;
    jvmtrace_sample_empty_run = 0;
    jvmtrace_sample_window_start = now;
    jvmtrace_sample_window_bytes = 0;
    jvmtrace_sample_window_used = 0;
  }
  jvmtrace_sample_last_ns = now;
  jvmtrace_sample_tokens = MIN2(capacity, jvmtrace_sample_tokens +
      (double)(now - jvmtrace_sample_refilled_ns) * 1.8 * target / (double)NANOSECS_PER_SEC);
  jvmtrace_sample_refilled_ns = now;
  double q = 1.0;
  bool empty = false;
  if (jvmtrace_sample_tokens >= 1.0) {
    jvmtrace_sample_tokens -= 1.0;
    jvmtrace_sample_empty_run = 0;
  } else {
    // k at most 16: q then still depends only on the past (unbiased), and a
    // weight stays within 2^16 of its slow path's.
    empty = true;
    jvmtrace_sample_empty_run = MIN2(jvmtrace_sample_empty_run + 1, 16);
    q = ldexp(1.0, -jvmtrace_sample_empty_run);
    if ((jvmtrace_random() >> 11) * (1.0 / 9007199254740992.0) >= q) {
      return false;  // left out by the coin: no walk, no probe
    }
    // A coin's sample takes the bucket into debt, which later tokens repay:
    // so the coins add to a second's samples only what the debt is at its
    // end (a few: each one halves the next one's chance).
    jvmtrace_sample_tokens -= 1.0;
  }
  const double w = weight_p / q;
  *weight = (uint64_t)(w + 0.5);
  jvmtrace_sample_window_bytes += w;
  jvmtrace_sample_window_used++;
  const jlong elapsed = now - jvmtrace_sample_window_start;
  if (elapsed >= JVMTRACE_SAMPLE_WINDOW_NS || (empty && elapsed > 0)) {
    const double rate = jvmtrace_sample_window_bytes * (double)NANOSECS_PER_SEC / (double)elapsed;
    const double old_mean = (double)Atomic::load(&jvmtrace_sample_interval);
    double mean = rate / MAX2(target, 1.0);
    if (jvmtrace_sample_window_used < 10) mean = sqrt(old_mean * MAX2(mean, 1.0));
    Atomic::store(&jvmtrace_sample_interval,
                  (int64_t)MIN2((double)JVMTRACE_SAMPLE_MAX_BYTES, MAX2((double)JVMTRACE_SAMPLE_BASE_BYTES, mean)));
    jvmtrace_sample_window_start = now;
    jvmtrace_sample_window_bytes = 0;
    jvmtrace_sample_window_used = 0;
  }
  return true;
}

// The frames and the leaf's name on this function's own stack (valid while
// the probe fires), not on the caller's hot path.  The leaf's name is
// formatted for bpftrace (scripts/bpftrace/allocsite.bt reads arg0: it can
// name nothing else), a copy of two Symbols' bytes.
NOINLINE static void jvmtrace_fire_sample(JavaThread* jt, uint64_t weight, const JvmtraceAllocRecord& r,
                                          uint64_t sample_id) {
  JvmtraceFrame frames[JVMTRACE_SAMPLE_MAX_FRAMES];
  char method[256];
  method[0] = '\0';
  int n = 0;
  // Near a stack overflow (whose error allocates too) the walk is left out.
  if (jt->stack_overflow_state()->stack_available(os::current_stack_pointer()) >= 64 * K) {
    n = jvmtrace_java_stack(jt, frames, JVMTRACE_SAMPLE_MAX_FRAMES);
    if (n > 0) {  // the allocation site: the leaf-most Java frame, a native method's too
      jvmtrace_format_method((const Method*)(uintptr_t)frames[0].method, method, sizeof method);
    }
  }
  // In a register: as an operand the compiler would name the global's GOT
  // slot ("sym@GOTPCREL(%rip)"), which no USDT reader (libbpf) can follow.
  uint64_t epoch_addr = (uint64_t)p2i(&jvmtrace_metadata_epoch);
  asm volatile("" : "+r"(epoch_addr));
  JVMTRACE_ALLOC_SAMPLE(method, weight, (const char*)r.class_name, r.class_name_len, r.alloc_bytes,
                        (uint32_t)r.outcome, (uint64_t)p2i(frames), (uint32_t)n,
                        (uint32_t)sizeof(JvmtraceFrame), r.end_ns, epoch_addr, sample_id);
}

uint64_t jvmtrace_alloc_sample(JavaThread* jt, uint64_t bytes, const JvmtraceAllocRecord& r, uint32_t* level) {
  if (bytes == 0) return 0;  // a failed allocation: nothing handed out
  uint64_t weight;
  if (JvmtraceSampleRate == 0) {
    weight = bytes;  // every slow path
  } else {
    const int64_t mean = Atomic::load(&jvmtrace_sample_interval);
    if (jvmtrace_sample_mean != mean) {
      jvmtrace_sample_countdown = jvmtrace_sample_mean == 0
          ? jvmtrace_next_interval(mean)
          : (int64_t)((double)jvmtrace_sample_countdown * ((double)mean / (double)jvmtrace_sample_mean)) + 1;
      jvmtrace_sample_mean = mean;
    }
    jvmtrace_sample_countdown -= (int64_t)MIN2(bytes, (uint64_t)JVMTRACE_SAMPLE_MAX_BYTES);
    if (jvmtrace_sample_countdown > 0) {
      return 0;
    }
    jvmtrace_sample_countdown = jvmtrace_next_interval(mean);
    const double p = -expm1(-(double)bytes / (double)mean);  // this slow path's chance
    if (!jvmtrace_sample_decide((double)bytes / p, &weight)) {
      return 0;
    }
  }
  const uint64_t id = jvmtrace_live_admit(jvmtrace_random(), level);
  jvmtrace_fire_sample(jt, weight, r, id);
  return id;
}
