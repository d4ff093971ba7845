/*
 * alloc__sample (jvmtrace.d): the allocating thread's own Java stack at a
 * sampled allocation slow path, walked by the VM itself as JFR's stack
 * recorder walks it (vframes: interpreted, C1, C2 and inlined scopes, with
 * their bytecode index and line), handed to the probe as an array of
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
#if __has_include("runtime/continuationEntry.inline.hpp")  // 21+: virtual threads
#define JVMTRACE_LOOM 1
#endif
#if __has_include("code/compiledMethod.hpp")  // 17, 21 (25 merged it into nmethod)
#define JVMTRACE_COMPILED_METHOD 1
#endif
#include <math.h>
#include "utilities/jvmtraceProbes.hpp"

extern volatile uint64_t jvmtrace_metadata_epoch;  // jvmtraceProbes.cpp

// The current thread's vframes from its last Java frame, without updating
// the register map or processing frames for a concurrent collector (the
// walk reads no oop of a frame: return pcs, links, the interpreter's
// Method* and bcp, code blobs and scope data), as JFR walks.  On 21 and 25
// a virtual thread's walk ends at its Continuation.enterSpecial; the
// continuation's entry is read only once this thread's stack processing
// has started (JFR's rule).
class JvmtraceVframeStream : public vframeStreamCommon {
#ifdef JVMTRACE_LOOM
  static RegisterMap::WalkContinuation walk_continuation(JavaThread* jt) {
    return ((UseZGC || UseShenandoahGC) && !StackWatermarkSet::processing_started(jt))
               ? RegisterMap::WalkContinuation::skip
               : RegisterMap::WalkContinuation::include;
  }
#endif
 public:
  explicit JvmtraceVframeStream(JavaThread* jt)
#if !defined(JVMTRACE_LOOM)  // 17
      : vframeStreamCommon(jt, false /* process_frames */)
#elif defined(JVMTRACE_COMPILED_METHOD)  // 21
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
#ifdef JVMTRACE_LOOM
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
    const int line = m->is_native() ? -1 : m->line_number_from_bci(bci);
    f.method = (uint64_t)p2i(m);
    f.bci = bci;
    f.line = (uint16_t)(line > 0 && line <= 0xffff ? line : 0);
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
// slow path where it runs out is sampled.  The countdown forgets its past,
// so a slow path of B bytes is sampled with probability p = 1 - e^(-B/mean)
// whatever came before it; the sample weighs B / p bytes (Horvitz-Thompson:
// what it stands for, on average exactly its slow paths' bytes), which a
// tracer may scale to the bytes it counted exactly.
//
// The mean starts at 64 KiB, not JEP 331's 512: a program that allocates
// little (tens of MB/s) still gets hundreds of samples a second, enough for
// its sites' shares to be right within a few per cent.  A program that
// allocates a lot would get more than it should pay for, so the VM holds
// the rate near JVMTRACE_SAMPLE_TARGET a second (250) by moving the mean in
// proportion to the rate it measures, over windows that start at a sample
// and end at the first of:
//  - JVMTRACE_SAMPLE_WINDOW_SAMPLES (500), sooner than a second: a rate
//    over JVMTRACE_SAMPLE_TOP (1,000 a second) scales the mean by the rate
//    over the target; a rate under the top leaves it alone, so a short
//    program at up to 1,000 slow paths a second (Rhino's, Saxon's, H2's)
//    keeps every one sampled, which the agreement of its near ties with JFR
//    needs.  A program that allocates gigabytes a second (AllocBench:
//    10 GB/s, where 64 KiB is 150,000 samples a second) reaches its mean in
//    its first window, a few milliseconds, and again within two windows
//    when its compiled code takes over from the interpreter and allocates
//    twenty times as fast.  The window is twice the target so that a burst
//    of a few hundred slow paths does not raise the mean; if it did, the
//    slow paths after it would be sampled at a quarter of their rate or
//    less for the rest of a short run, each weighing four times as much,
//    and the sites that allocate there would be ranked by a few samples
//    (ecj on 25 under Parallel, whose TLAB refills after each collection
//    come at over 1,000 a second for a few hundred ms: with windows of 375
//    its mean rose at its fourth second, 1,690 of 2,974 slow paths were
//    sampled, and 8 of JFR's top 10 were in its top 10; with 500, 1,956 and
//    10, by bench/replay_sampler.py on that run's own slow paths);
//  - a sample past the second: a rate under a quarter of the target scales
//    the mean down by the rate over the target (never under 64 KiB).
// So the rate settles between a quarter of the target and the top, and a
// rate moved from outside that band lands on the target (decision 121:
// 250, half of decision 118's 500, which cost AllocBench 1.3% of its CPU;
// the top stayed at 1,000, so only programs that allocate faster than that
// take fewer samples).
// A second, not less: a program that allocates in bursts keeps every slow
// path of a burst sampled as long as it takes fewer than 1,000 in a
// second (Saxon: 1,600 slow paths of 500 KB TLABs in 3 s, whose sites are
// near ties that only the whole set ranks right).  The rate is held by the
// mean, never by leaving out a slow path that ran out (that would move its
// bytes onto whatever slow path came next: measured on Lucene, its byte
// buffers' share fell from 24% to 13%).  A thread picks a new mean up at
// its next slow path by rescaling what is left of its countdown (still
// exponential, of the new mean), and weighs its samples by the mean it
// drew with.
static const int64_t JVMTRACE_SAMPLE_BASE_BYTES = 64 * 1024;
static const int64_t JVMTRACE_SAMPLE_MAX_BYTES = (int64_t)1 << 40;
static const jlong JVMTRACE_SAMPLE_WINDOW_NS = NANOSECS_PER_SEC;
static const double JVMTRACE_SAMPLE_TARGET = 250.0;       // a second, where a moved rate lands
static const double JVMTRACE_SAMPLE_TOP = 1000.0;         // a second: the band's top
static const int JVMTRACE_SAMPLE_WINDOW_SAMPLES = 500;    // a window's end, if sooner than a second
static volatile int64_t jvmtrace_sample_interval = JVMTRACE_SAMPLE_BASE_BYTES;
static volatile jlong jvmtrace_sample_window_start = 0;  // javaTimeNanos; 0: none yet
static volatile int jvmtrace_sample_window_used = 0;
static THREAD_LOCAL int64_t jvmtrace_sample_countdown = 0;
static THREAD_LOCAL int64_t jvmtrace_sample_mean = 0;  // the mean the countdown was drawn with
static THREAD_LOCAL uint64_t jvmtrace_sample_rng = 0;

static int64_t jvmtrace_next_interval(int64_t mean) {
  uint64_t x = jvmtrace_sample_rng != 0 ? jvmtrace_sample_rng : ((uint64_t)os::javaTimeNanos() | 1);
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  jvmtrace_sample_rng = x;
  const double u = (double)(x >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return (int64_t)(-log(1.0 - u) * (double)mean) + 1;
}

// A sample was taken: count it in its window, and at the window's end move
// the mean by the rate measured over it.  Races between threads lose a
// count or an update at most (one thread ends a window: the one whose
// compare-and-swap of its start wins); every sample's weight uses the mean
// its own thread drew with, so none is ever weighed wrongly.  The first
// sample after a while without any (a tracer attached again, a program
// quiet for a time) ends a long window of a low rate: the mean goes back
// toward 64 KiB.
static void jvmtrace_sample_taken() {
  const jlong now = os::javaTimeNanos();
  const jlong start = Atomic::load(&jvmtrace_sample_window_start);
  const int used = Atomic::add(&jvmtrace_sample_window_used, 1);
  const double target = JVMTRACE_SAMPLE_TARGET;
  const double rate = (double)used * (double)JVMTRACE_SAMPLE_WINDOW_NS / (double)MAX2(now - start, (jlong)1);  // a second
  const bool ended = start == 0 || now - start >= JVMTRACE_SAMPLE_WINDOW_NS || used >= JVMTRACE_SAMPLE_WINDOW_SAMPLES;
  if (!ended || Atomic::cmpxchg(&jvmtrace_sample_window_start, start, now) != start) {
    return;
  }
  Atomic::store(&jvmtrace_sample_window_used, 0);
  if (start == 0 || (rate <= JVMTRACE_SAMPLE_TOP && rate >= target / 4)) {
    return;  // the first window, or a rate within the band
  }
  const double mean = (double)Atomic::load(&jvmtrace_sample_interval) * (rate / target);
  Atomic::store(&jvmtrace_sample_interval,
                (int64_t)MIN2((double)JVMTRACE_SAMPLE_MAX_BYTES, MAX2((double)JVMTRACE_SAMPLE_BASE_BYTES, mean)));
}

// The frames and the leaf's name on this function's own stack (valid while
// the probe fires), not on the caller's hot path.
NOINLINE static void jvmtrace_fire_sample(JavaThread* jt, uint64_t weight, const JvmtraceAllocRecord& r) {
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
                        (uint32_t)sizeof(JvmtraceFrame), r.end_ns, epoch_addr, jvmtrace_tid(jt));
}

void jvmtrace_alloc_sample(JavaThread* jt, uint64_t bytes, const JvmtraceAllocRecord& r) {
  if (bytes == 0) return;  // a failed allocation: nothing handed out
  const int64_t mean = Atomic::load(&jvmtrace_sample_interval);
  if (jvmtrace_sample_mean != mean) {
    jvmtrace_sample_countdown = jvmtrace_sample_mean == 0
        ? jvmtrace_next_interval(mean)
        : (int64_t)((double)jvmtrace_sample_countdown * ((double)mean / (double)jvmtrace_sample_mean)) + 1;
    jvmtrace_sample_mean = mean;
  }
  jvmtrace_sample_countdown -= (int64_t)MIN2(bytes, (uint64_t)JVMTRACE_SAMPLE_MAX_BYTES);
  if (jvmtrace_sample_countdown > 0) {
    return;
  }
  jvmtrace_sample_countdown = jvmtrace_next_interval(mean);
  const double p = -expm1(-(double)bytes / (double)mean);  // this slow path's chance
  const uint64_t weight = (uint64_t)((double)bytes / p + 0.5);
  jvmtrace_sample_taken();
  jvmtrace_fire_sample(jt, weight, r);
}
