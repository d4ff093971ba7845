/*
 * Semaphores of the jvmtrace USDT probes (see jvmtraceProbes.hpp).  A tracer
 * that attaches increments a probe's semaphore (through the kernel's uprobe
 * reference counter), so HotSpot computes that probe's arguments only then.
 * One per probe in jvmtrace.d, from the ABI header's JVMTRACE_PROBES list: a
 * probe the .d file declares and the list lacks fails the link.
 */
// One source for JDK 17, 21 and 25 (usdt/hotspot/shared/, copied into the
// tree by scripts/build-patched-jdk.sh): where the releases moved a header,
// __has_include picks the one that is there.  No "precompiled.hpp": 25
// passes it with -include and its build fails on a second inclusion, and on
// 17 and 21 it only speeds up the compile; this file includes what it uses.
#include "gc/shared/collectedHeap.hpp"
#include "gc/shared/gcId.hpp"
#include "memory/allocation.hpp"
#include "memory/universe.hpp"
#include "runtime/atomic.hpp"
#include "runtime/mutexLocker.hpp"
#include "runtime/orderAccess.hpp"
#include "runtime/os.hpp"
#include "runtime/safepoint.hpp"
#include "runtime/vmOperations.hpp"
#include "runtime/vmThread.hpp"
#if __has_include("runtime/javaThread.inline.hpp")   // 21+: JavaThread has its own header
#include "runtime/javaThread.inline.hpp"
#else
#include "runtime/thread.inline.hpp"
#endif
#if INCLUDE_G1GC
#include "gc/g1/g1CollectedHeap.hpp"
#endif
#include "utilities/jvmtraceHooks.hpp"
#include "utilities/jvmtraceProbes.hpp"

#define JVMTRACE_SEMAPHORE(probe) \
  unsigned short jvmtrace_##probe##_semaphore __attribute__((used, section(".probes"))) = 0;
JVMTRACE_PROBES(JVMTRACE_SEMAPHORE)

// plab__batch: one batch per thread that ever reported a PLAB event while
// the probe was attached (GC workers and the VM thread), allocated then and
// never freed, on a list the VM thread walks at the end of a collection.
// Only its own thread appends to a batch, during a collection; the VM thread
// empties every batch at the collection's end, after the workers are done.
static const uint32_t JVMTRACE_PLAB_BATCH_RECORDS = 256;
struct JvmtracePlabBatch {
  JvmtracePlabBatch* next;
  uint32_t count;
  JvmtracePlabRecord records[JVMTRACE_PLAB_BATCH_RECORDS];
};
static JvmtracePlabBatch* volatile jvmtrace_plab_batches = nullptr;
static THREAD_LOCAL JvmtracePlabBatch* jvmtrace_own_plab_batch = nullptr;

static void jvmtrace_plab_flush(JvmtracePlabBatch* batch) {
  // Records made while attached but flushed after a detach are dropped.
  if (batch->count != 0 && JVMTRACE_PLAB_BATCH_ENABLED()) {
    JVMTRACE_PLAB_BATCH((uint64_t)p2i(batch->records), batch->count,
                        (uint32_t)sizeof(JvmtracePlabRecord),
                        jvmtrace_tid(Thread::current()));
  }
  batch->count = 0;
}

// Where a batch cannot be had (malloc failed), a record goes out alone from
// the stack: one hit, nothing lost.  malloc is tried again every 256th time.
static const uint32_t JVMTRACE_MALLOC_RETRY = 256;

void jvmtrace_plab_append(JvmtracePlabRecordKind kind, uint64_t address, uint64_t bytes,
                          uint64_t used_bytes, uint32_t dest) {
  assert(SafepointSynchronize::is_at_safepoint(), "PLAB events come from stop-the-world pauses");
  static THREAD_LOCAL uint32_t malloc_failures = 0;
  JvmtracePlabBatch* batch = jvmtrace_own_plab_batch;
  if (batch == nullptr && malloc_failures % JVMTRACE_MALLOC_RETRY == 0) {
    batch = (JvmtracePlabBatch*)os::malloc(sizeof(JvmtracePlabBatch), mtServiceability);
    if (batch != nullptr) {
      batch->count = 0;
      JvmtracePlabBatch* head;
      do {
        head = Atomic::load(&jvmtrace_plab_batches);
        batch->next = head;
      } while (Atomic::cmpxchg(&jvmtrace_plab_batches, head, batch) != head);
      jvmtrace_own_plab_batch = batch;
    }
  }
  JvmtracePlabRecord alone;
  JvmtracePlabRecord* r = batch != nullptr ? &batch->records[batch->count++] : &alone;
  r->ts_ns = (uint64_t)os::javaTimeNanos();
  r->address = address;
  r->bytes = bytes;
  r->used_bytes = used_bytes;
  r->gc_id = (uint32_t)GCId::current_or_undefined();
  r->tid = jvmtrace_tid(Thread::current());
  r->kind = (uint8_t)kind;
  r->dest = (uint8_t)dest;
  memset(r->pad, 0, sizeof(r->pad));
  if (batch == nullptr) {
    malloc_failures++;
    if (JVMTRACE_PLAB_BATCH_ENABLED()) {
      JVMTRACE_PLAB_BATCH((uint64_t)p2i(r), (uint32_t)1, (uint32_t)sizeof(JvmtracePlabRecord),
                          jvmtrace_tid(Thread::current()));
    }
  } else if (batch->count == JVMTRACE_PLAB_BATCH_RECORDS) {
    jvmtrace_plab_flush(batch);
  }
}

void jvmtrace_plab_flush_all() {
  if (Atomic::load(&jvmtrace_plab_batches) == nullptr ||
      !SafepointSynchronize::is_at_safepoint() || !Thread::current()->is_VM_thread()) {
    return;
  }
  for (JvmtracePlabBatch* b = Atomic::load(&jvmtrace_plab_batches); b != nullptr; b = b->next) {
    jvmtrace_plab_flush(b);
  }
}

// alloc__batch: one batch per JavaThread that took a slow path while the
// probe was attached, on a list (newest first) that the VM thread walks at
// every safepoint.  The owner reaches its batch through a thread-local
// pointer; it appends, and flushes when full, when the oldest record is
// older than JVMTRACE_ALLOC_BATCH_AGE_NS, and as it exits.  The VM thread
// flushes every batch at each safepoint, where no owner can be appending
// (appends run in _thread_in_vm, which a safepoint waits out), and is the
// only one to unlink and free batches: those of exited threads, and all of
// them at the first safepoint after the probe is detached, which it marks
// by a new generation so that owners drop their stale pointers.
static const uint32_t JVMTRACE_ALLOC_BATCH_RECORDS = 128;
static const jlong JVMTRACE_ALLOC_BATCH_AGE_NS = 100 * NANOSECS_PER_MILLISEC;
struct JvmtraceAllocBatch {
  JvmtraceAllocBatch* next;
  uint32_t count;
  volatile bool exited;           // its owner is done with it (VM thread frees it)
  jlong first_end_ns;             // end_ns of records[0]
  JvmtraceAllocRecord records[JVMTRACE_ALLOC_BATCH_RECORDS];
};
static JvmtraceAllocBatch* volatile jvmtrace_alloc_batches = nullptr;
static volatile uint64_t jvmtrace_alloc_generation = 1;
static THREAD_LOCAL JvmtraceAllocBatch* jvmtrace_own_alloc_batch = nullptr;
static THREAD_LOCAL uint64_t jvmtrace_own_alloc_generation = 0;

static void jvmtrace_alloc_fire(const JvmtraceAllocRecord* records, uint32_t count) {
  // Records made while attached but flushed after a detach are dropped.
  if (count != 0 && JVMTRACE_ALLOC_BATCH_ENABLED()) {
    JVMTRACE_ALLOC_BATCH((uint64_t)p2i(records), count, (uint32_t)sizeof(JvmtraceAllocRecord),
                         jvmtrace_tid(Thread::current()));
  }
}

// The calling thread's batch, made and put on the list if it has none;
// nullptr if none can be had.
static JvmtraceAllocBatch* jvmtrace_own_alloc() {
  JvmtraceAllocBatch* b = jvmtrace_own_alloc_batch;
  if (b != nullptr && jvmtrace_own_alloc_generation == Atomic::load(&jvmtrace_alloc_generation)) {
    return b;
  }
  static THREAD_LOCAL uint32_t malloc_failures = 0;
  jvmtrace_own_alloc_batch = nullptr;
  if (malloc_failures++ % JVMTRACE_MALLOC_RETRY != 0) {
    return nullptr;
  }
  b = (JvmtraceAllocBatch*)os::malloc(sizeof(JvmtraceAllocBatch), mtServiceability);
  if (b == nullptr) {
    return nullptr;
  }
  malloc_failures = 0;
  b->count = 0;
  b->exited = false;
  b->first_end_ns = 0;
  JvmtraceAllocBatch* head;
  do {
    head = Atomic::load(&jvmtrace_alloc_batches);
    b->next = head;
  } while (Atomic::cmpxchg(&jvmtrace_alloc_batches, head, b) != head);
  jvmtrace_own_alloc_batch = b;
  jvmtrace_own_alloc_generation = Atomic::load(&jvmtrace_alloc_generation);
  return b;
}

void jvmtrace_alloc_append(const JvmtraceAllocRecord& r) {
  assert(JavaThread::current()->thread_state() == _thread_in_vm,
         "a safepoint must not see a half-made batch");
  JvmtraceAllocBatch* b = jvmtrace_own_alloc();
  if (b == nullptr) {
    jvmtrace_alloc_fire(&r, 1);  // no batch: the record goes out alone
    return;
  }
  if (b->count != 0 && (jlong)r.end_ns - b->first_end_ns > JVMTRACE_ALLOC_BATCH_AGE_NS) {
    jvmtrace_alloc_fire(b->records, b->count);
    b->count = 0;
  }
  if (b->count == 0) {
    b->first_end_ns = (jlong)r.end_ns;
  }
  b->records[b->count++] = r;
  // A failed allocation may end the JVM without a safepoint (an
  // OutOfMemoryError with -XX:+ExitOnOutOfMemoryError exits at once): its
  // thread's records go out now.
  if (b->count == JVMTRACE_ALLOC_BATCH_RECORDS || r.outcome == JVMTRACE_SLOW_FAILED) {
    jvmtrace_alloc_fire(b->records, b->count);
    b->count = 0;
  }
}

void jvmtrace_alloc_thread_exit() {
  JvmtraceAllocBatch* b = jvmtrace_own_alloc_batch;
  jvmtrace_own_alloc_batch = nullptr;
  if (b == nullptr || jvmtrace_own_alloc_generation != Atomic::load(&jvmtrace_alloc_generation)) {
    return;  // none, or freed already
  }
  jvmtrace_alloc_fire(b->records, b->count);
  b->count = 0;
  Atomic::release_store(&b->exited, true);
}

bool jvmtrace_alloc_drain_requested() {
  return JVMTRACE_ALLOC_DRAIN_ENABLED() != 0;
}

// Every thread's pending records, several threads' in one batch (one hit
// per JVMTRACE_ALLOC_BATCH_RECORDS records, not one per thread); the
// batches of exited threads are freed.  The VM thread at a safepoint.
static void jvmtrace_alloc_flush_all() {
  static JvmtraceAllocRecord staged[JVMTRACE_ALLOC_BATCH_RECORDS];
  uint32_t n = 0;
  JvmtraceAllocBatch* volatile* link = &jvmtrace_alloc_batches;
  for (JvmtraceAllocBatch* b = *link; b != nullptr; b = *link) {
    for (uint32_t i = 0; i < b->count; i++) {
      staged[n++] = b->records[i];
      if (n == JVMTRACE_ALLOC_BATCH_RECORDS) {
        jvmtrace_alloc_fire(staged, n);
        n = 0;
      }
    }
    b->count = 0;
    if (Atomic::load_acquire(&b->exited)) {
      *link = b->next;
      os::free(b);
    } else {
      link = &b->next;
    }
  }
  jvmtrace_alloc_fire(staged, n);
}

// Detached: what is left is nobody's.  Every batch goes; owners see the new
// generation and start afresh when a tracer attaches again.
static void jvmtrace_alloc_free_all() {
  JvmtraceAllocBatch* b = Atomic::load(&jvmtrace_alloc_batches);
  Atomic::store(&jvmtrace_alloc_batches, (JvmtraceAllocBatch*)nullptr);
  while (b != nullptr) {
    JvmtraceAllocBatch* next = b->next;
    os::free(b);
    b = next;
  }
  Atomic::inc(&jvmtrace_alloc_generation);
}

// The last safepoint whose records went out (VM thread only).
static uint64_t jvmtrace_alloc_flushed_safepoint = 0;

void jvmtrace_alloc_flush_for_gc() {
  if (Atomic::load(&jvmtrace_alloc_batches) == nullptr || !JVMTRACE_ALLOC_BATCH_ENABLED() ||
      !SafepointSynchronize::is_at_safepoint() || !Thread::current()->is_VM_thread()) {
    return;
  }
  const uint64_t id = SafepointSynchronize::safepoint_id();
  if (jvmtrace_alloc_flushed_safepoint == id) {
    return;  // a second collection probe in this safepoint: done already
  }
  jvmtrace_alloc_flushed_safepoint = id;
  jvmtrace_alloc_flush_all();
}

void jvmtrace_alloc_at_safepoint() {
  assert(SafepointSynchronize::is_at_safepoint() && Thread::current()->is_VM_thread(),
         "owners must be stopped");
  if (JVMTRACE_ALLOC_DRAIN_ENABLED()) {
    // A tracer waits: the drain's time, read before the flush.
    const jlong flush_began_ns = os::javaTimeNanos();
    if (Atomic::load(&jvmtrace_alloc_batches) != nullptr) {
      if (JVMTRACE_ALLOC_BATCH_ENABLED()) {
        jvmtrace_alloc_flushed_safepoint = SafepointSynchronize::safepoint_id();
        jvmtrace_alloc_flush_all();
      } else {
        jvmtrace_alloc_free_all();
      }
    }
    JVMTRACE_ALLOC_DRAIN((uint64_t)flush_began_ns);
  } else if (!JVMTRACE_ALLOC_BATCH_ENABLED() && Atomic::load(&jvmtrace_alloc_batches) != nullptr) {
    jvmtrace_alloc_free_all();  // once, after a detach
  }
}

bool jvmtrace_alloc_drain_due() {
  // Not during a safepoint: SafepointTracing::begin() zeroes the end stamp,
  // which would read as a long time since the last one.
  return JVMTRACE_ALLOC_DRAIN_ENABLED() != 0 && !SafepointSynchronize::is_at_safepoint() &&
         SafepointTracing::time_since_last_safepoint_ms() >= 1000;
}

void jvmtrace_force_safepoint() {
  VM_ForceSafepoint op;
  VMThread::execute(&op);
}

// G1's used() walks the mutator allocation regions, which only the holder
// of Heap_lock may read, or the VM thread at a safepoint on that holder's
// behalf (every G1 pause is a VM operation whose prologue took Heap_lock).
// Any other thread -- G1's concurrent mark thread reporting its cycle, even
// while a pause runs -- reads used_unlocked(), as G1's own heap summary
// does.  ZGC's and Shenandoah's used() are atomic loads, safe anywhere.
size_t jvmtrace_heap_used() {
  CollectedHeap* heap = Universe::heap();
#if INCLUDE_G1GC
  if (heap->kind() == CollectedHeap::G1) {
    const bool safe = Heap_lock->owned_by_self() ||
                      (Thread::current()->is_VM_thread() && SafepointSynchronize::is_at_safepoint() &&
                       Heap_lock->owner() != nullptr);
    return safe ? heap->used() : G1CollectedHeap::heap()->used_unlocked();
  }
#endif
  return heap->used();
}

void jvmtrace_pause_start(const char* title, const char* cause, uint32_t kind) {
  jvmtrace_alloc_flush_for_gc();  // the slow paths before this pause, before its start
  if (!JVMTRACE_GC_PAUSE_START_ENABLED()) {
    return;
  }
  JVMTRACE_GC_PAUSE_START((uint32_t)GCId::current_or_undefined(), title, cause, kind,
                          (uint64_t)jvmtrace_heap_used(), (uint64_t)Universe::heap()->capacity());
}

void jvmtrace_pause_end(const char* title, const char* cause, uint32_t kind) {
  jvmtrace_plab_flush_all();  // the pause's PLAB records before its end
  if (!JVMTRACE_GC_PAUSE_END_ENABLED()) {
    return;
  }
  JVMTRACE_GC_PAUSE_END((uint32_t)GCId::current_or_undefined(), title, cause, kind,
                        (uint64_t)jvmtrace_heap_used(), (uint64_t)Universe::heap()->capacity());
}

void jvmtrace_safepoint_begin(const char* operation, uint64_t safepoint_id, jlong begin_ns,
                              jlong since_last_ns) {
  if (JVMTRACE_SAFEPOINT_BEGIN_ENABLED()) {
    JVMTRACE_SAFEPOINT_BEGIN(operation, safepoint_id, (uint64_t)begin_ns, (uint64_t)since_last_ns);
  }
}

void jvmtrace_safepoint_end(const char* operation, jlong reaching_ns, jlong at_safepoint_ns,
                            jlong total_ns, int threads, int running, jlong cleanup_ns,
                            uint64_t safepoint_id) {
  if (JVMTRACE_SAFEPOINT_END_ENABLED()) {
    JVMTRACE_SAFEPOINT_END(operation, (uint64_t)reaching_ns, (uint64_t)at_safepoint_ns, (uint64_t)total_ns,
                           (uint32_t)threads, (uint32_t)running, (uint64_t)cleanup_ns, safepoint_id);
  }
}

// The metadata epoch (alloc__sample's epoch_addr).  Odd values never mean
// anything special; a tracer compares it for equality only.
volatile uint64_t jvmtrace_metadata_epoch = 1;

void jvmtrace_metadata_will_be_freed() {
  Atomic::inc(&jvmtrace_metadata_epoch);  // a full two-way fence
  OrderAccess::fence();
}
