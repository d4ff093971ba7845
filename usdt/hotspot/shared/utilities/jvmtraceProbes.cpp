/*
 * Semaphores of the jvmtrace USDT probes (see jvmtraceProbes.hpp).  A tracer
 * that attaches increments a probe's semaphore (through the kernel's uprobe
 * reference counter), so HotSpot computes that probe's arguments only then.
 * One per probe in jvmtrace.d, from the ABI header's JVMTRACE_PROBES list: a
 * probe the .d file declares and the list lacks fails the link.
 */
// One source for JDK 17, 21 and 25 (usdt/hotspot/shared/, copied into the
// tree by scripts/build-patched-jdk.sh): where the releases moved a header,
// JVMTRACE_JDK (utilities/jvmtraceRelease.hpp, written by the build script)
// picks the one that is there.  No "precompiled.hpp": 25
// passes it with -include and its build fails on a second inclusion, and on
// 17 and 21 it only speeds up the compile; this file includes what it uses.
#include "gc/shared/collectedHeap.hpp"
#include "gc/shared/gcId.hpp"
#include "memory/allocation.hpp"
#include "memory/universe.hpp"
#include "oops/klass.hpp"
#include "oops/symbol.hpp"
#include "runtime/atomic.hpp"
#include "runtime/mutexLocker.hpp"
#include "runtime/orderAccess.hpp"
#include "runtime/os.hpp"
#include "runtime/safepoint.hpp"
#include "runtime/vmOperations.hpp"
#include "runtime/vmThread.hpp"
#include "utilities/jvmtraceRelease.hpp"
#if JVMTRACE_JDK >= 21   // JavaThread has its own header
#include "runtime/javaThread.inline.hpp"
#else
#include "runtime/thread.inline.hpp"
#endif
#if INCLUDE_G1GC
#include "gc/g1/g1CollectedHeap.hpp"
#endif
#include "utilities/jvmtraceHooks.hpp"
#include "utilities/jvmtraceProbes.hpp"
#include "utilities/jvmtraceSlowPath.inline.hpp"
#include "utilities/jvmtraceSpinLocker.hpp"

#define JVMTRACE_SEMAPHORE(probe) \
  unsigned short jvmtrace_##probe##_semaphore __attribute__((used, section(".probes"))) = 0;
JVMTRACE_PROBES(JVMTRACE_SEMAPHORE)

// plab__batch: a GC thread's PLAB events (GC workers and the VM thread), in
// batches of 256 records.  Each thread appends to its own batch during a
// pause; a full batch stays on the list and the thread takes a new one, so
// nothing is fired while the world is stopped.  After the safepoint (before
// its alloc__batch records) the VM thread fires every batch with records,
// frees the full ones and empties each thread's own for the next pause.
// A thread's own batch is made on its first PLAB event while attached and
// kept: GC threads live as long as the VM.  Only GC threads in a pause
// append, and the next pause cannot start before the VM thread is done with
// the last one's batches (it runs both), so nothing else guards a batch.
static const uint32_t JVMTRACE_PLAB_BATCH_RECORDS = 256;
struct JvmtracePlabBatch {
  JvmtracePlabBatch* next;
  uint32_t count;
  bool full;                      // no longer its thread's own: freed once fired
  JvmtracePlabRecord records[JVMTRACE_PLAB_BATCH_RECORDS];
};
static JvmtracePlabBatch* volatile jvmtrace_plab_batches = nullptr;
static THREAD_LOCAL JvmtracePlabBatch* jvmtrace_own_plab_batch = nullptr;
static volatile bool jvmtrace_plab_pending = false;  // a record waits for after the safepoint
// Batches started in a pause beyond each thread's own are capped: past the
// cap a full batch is fired at once, in the pause, as before (a pause that
// promotes gigabytes in small PLABs would otherwise malloc without bound).
static const uint32_t JVMTRACE_PLAB_MAX_EXTRA = 256;  // 3 MiB, 65,536 records a safepoint
static volatile uint32_t jvmtrace_plab_extra = 0;

// Where a batch cannot be had (malloc failed), a record goes out alone from
// the stack: one hit, nothing lost.  malloc is tried again every 256th time.
static const uint32_t JVMTRACE_MALLOC_RETRY = 256;

// Out of line, its arguments in registers (as jvmtrace_alloc_fire).
NOINLINE static void jvmtrace_plab_fire(const JvmtracePlabRecord* records, uint32_t count, uint64_t safepoint_id,
                                        bool last) {
  asm volatile("" : "+r"(safepoint_id));
  // Records made while attached but fired after a detach are dropped.
  if (JVMTRACE_PLAB_BATCH_ENABLED()) {
    JVMTRACE_PLAB_BATCH((uint64_t)p2i(records), count, (uint32_t)sizeof(JvmtracePlabRecord),
                        jvmtrace_tid(Thread::current()), safepoint_id, (uint32_t)(last ? 1 : 0));
  }
}

static JvmtracePlabBatch* jvmtrace_new_plab_batch() {
  JvmtracePlabBatch* batch = (JvmtracePlabBatch*)os::malloc(sizeof(JvmtracePlabBatch), mtServiceability);
  if (batch != nullptr) {
    batch->count = 0;
    batch->full = false;
    JvmtracePlabBatch* head;
    do {
      head = Atomic::load(&jvmtrace_plab_batches);
      batch->next = head;
    } while (Atomic::cmpxchg(&jvmtrace_plab_batches, head, batch) != head);
  }
  return batch;
}

void jvmtrace_plab_append(JvmtracePlabRecordKind kind, uint64_t address, uint64_t bytes,
                          uint64_t used_bytes, uint32_t dest) {
  assert(SafepointSynchronize::is_at_safepoint(), "PLAB events come from stop-the-world pauses");
  static THREAD_LOCAL uint32_t malloc_failures = 0;
  // Only at a safepoint may a batch be touched (the VM thread fires and
  // frees them after it): anywhere else (no collector does it today) a
  // record goes out alone.
  const bool at_safepoint = SafepointSynchronize::is_at_safepoint();
  JvmtracePlabBatch* batch = at_safepoint ? jvmtrace_own_plab_batch : nullptr;
  if (batch != nullptr && batch->count == JVMTRACE_PLAB_BATCH_RECORDS) {
    if (Atomic::add(&jvmtrace_plab_extra, (uint32_t)1) <= JVMTRACE_PLAB_MAX_EXTRA) {
      batch->full = true;  // kept for after the safepoint; a new one for this thread
      batch = jvmtrace_own_plab_batch = nullptr;
    } else {
      jvmtrace_plab_fire(batch->records, batch->count, 0, false);  // past the cap: now
      batch->count = 0;
    }
  }
  if (batch == nullptr && at_safepoint && malloc_failures % JVMTRACE_MALLOC_RETRY == 0) {
    batch = jvmtrace_own_plab_batch = jvmtrace_new_plab_batch();
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
    if (at_safepoint) malloc_failures++;
    jvmtrace_plab_fire(r, 1, 0, false);
  } else if (!jvmtrace_plab_pending) {
    jvmtrace_plab_pending = true;
  }
}

// The VM thread after a safepoint: every batch's records, the full batches
// freed.  With last, the final hit says so (an empty one if nothing waited):
// a tracer learns there that the safepoint's PLAB records are all in.
static void jvmtrace_plab_fire_all(uint64_t safepoint_id, bool last) {
  uint32_t n = 0;
  jvmtrace_plab_extra = 0;
  if (jvmtrace_plab_pending) {
    jvmtrace_plab_pending = false;
    for (JvmtracePlabBatch* b = jvmtrace_plab_batches; b != nullptr; b = b->next) {
      if (b->count != 0) n++;
    }
    uint32_t i = 0;
    for (JvmtracePlabBatch* b = jvmtrace_plab_batches; b != nullptr; b = b->next) {
      if (b->count != 0) {
        jvmtrace_plab_fire(b->records, b->count, safepoint_id, last && ++i == n);
        b->count = 0;
      }
    }
    JvmtracePlabBatch* volatile* link = &jvmtrace_plab_batches;
    for (JvmtracePlabBatch* b = *link; b != nullptr; b = *link) {
      if (b->full) {
        *link = b->next;
        os::free(b);
      } else {
        link = &b->next;
      }
    }
  }
  if (n == 0 && last) {
    jvmtrace_plab_fire(nullptr, 0, safepoint_id, true);
  }
}

// alloc__batch: one batch per JavaThread that took a slow path while the
// probe was attached, on a list (newest first).  The owner reaches its batch
// through a thread-local pointer; it appends, and flushes when full, when
// the oldest record is older than JVMTRACE_ALLOC_BATCH_AGE_NS, and as it
// exits.  At every safepoint the VM thread takes the whole list (one swap,
// while the owners are stopped: appends run in _thread_in_vm, which a
// safepoint waits out) and moves to a new generation, so owners drop their
// stale pointers and start a new batch at their next slow path; once the
// safepoint has ended it fires what the batches held, in end_ns order, and
// keeps them for reuse (as many as the last two safepoints took; the rest
// are freed).  So nothing per thread runs while the world is stopped, and
// an allocating thread mallocs nothing after each safepoint.
static const uint32_t JVMTRACE_ALLOC_BATCH_RECORDS = 128;
static const jlong JVMTRACE_ALLOC_BATCH_AGE_NS = 100 * NANOSECS_PER_MILLISEC;
struct JvmtraceAllocBatch {
  JvmtraceAllocBatch* next;
  uint32_t count;
  jlong first_end_ns;             // end_ns of records[0]
  JvmtraceAllocRecord records[JVMTRACE_ALLOC_BATCH_RECORDS];
};
static JvmtraceAllocBatch* volatile jvmtrace_alloc_batches = nullptr;
static volatile uint64_t jvmtrace_alloc_generation = 1;
static THREAD_LOCAL JvmtraceAllocBatch* jvmtrace_own_alloc_batch = nullptr;
static THREAD_LOCAL uint64_t jvmtrace_own_alloc_generation = 0;
// What the current safepoint took (VM thread only).
static JvmtraceAllocBatch* jvmtrace_alloc_taken = nullptr;
static jlong jvmtrace_alloc_taken_ns = 0;
static bool jvmtrace_alloc_taking = false;  // a safepoint took (possibly nothing) while attached
static bool jvmtrace_plab_taking = false;   // plab__batch was attached at the safepoint
static uint64_t jvmtrace_handover_safepoint = 0;

// Batches fired and kept for reuse (under jvmtrace_alloc_spare_lock: the
// owners take, the VM thread gives back).
static JvmtraceAllocBatch* jvmtrace_alloc_spare = nullptr;
static uint32_t jvmtrace_alloc_spare_count = 0;
static volatile int jvmtrace_alloc_spare_lock = 0;
static uint32_t jvmtrace_alloc_taken_before = 0;  // batches the safepoint before took (VM thread)

// Out of line, its arguments in registers (a global's would be "sym(%rip)",
// which no USDT reader can follow).
NOINLINE static void jvmtrace_alloc_fire(const JvmtraceAllocRecord* records, uint32_t count,
                                         uint64_t safepoint_id, bool last) {
  asm volatile("" : "+r"(safepoint_id));
  // Records made while attached but fired after a detach are dropped.
  if ((count != 0 || last) && JVMTRACE_ALLOC_BATCH_ENABLED()) {
    JVMTRACE_ALLOC_BATCH((uint64_t)p2i(records), count, (uint32_t)sizeof(JvmtraceAllocRecord),
                         jvmtrace_tid(Thread::current()), safepoint_id, (uint32_t)(last ? 1 : 0));
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
  if (malloc_failures % JVMTRACE_MALLOC_RETRY != 0) {
    malloc_failures++;
    return nullptr;
  }
  {
    JvmtraceSpinLocker locker(&jvmtrace_alloc_spare_lock);
    b = jvmtrace_alloc_spare;
    if (b != nullptr) {
      jvmtrace_alloc_spare = b->next;
      jvmtrace_alloc_spare_count--;
    }
  }
  if (b == nullptr) {
    b = (JvmtraceAllocBatch*)os::malloc(sizeof(JvmtraceAllocBatch), mtServiceability);
  }
  if (b == nullptr) {
    malloc_failures++;
    return nullptr;
  }
  malloc_failures = 0;
  b->count = 0;
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
    jvmtrace_alloc_fire(&r, 1, 0, false);  // no batch: the record goes out alone
    return;
  }
  if (b->count != 0 && (jlong)r.end_ns - b->first_end_ns > JVMTRACE_ALLOC_BATCH_AGE_NS) {
    jvmtrace_alloc_fire(b->records, b->count, 0, false);
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
    jvmtrace_alloc_fire(b->records, b->count, 0, false);
    b->count = 0;
  }
}

void jvmtrace_alloc_thread_exit() {
  JvmtraceAllocBatch* b = jvmtrace_own_alloc_batch;
  jvmtrace_own_alloc_batch = nullptr;
  if (b == nullptr || jvmtrace_own_alloc_generation != Atomic::load(&jvmtrace_alloc_generation)) {
    return;  // none, or taken by a safepoint already
  }
  jvmtrace_alloc_fire(b->records, b->count, 0, false);
  b->count = 0;  // the next safepoint takes it (kept for reuse, or freed)
}

// Frees a list of batches.
static void jvmtrace_alloc_free(JvmtraceAllocBatch* list) {
  while (list != nullptr) {
    JvmtraceAllocBatch* next = list->next;
    os::free(list);
    list = next;
  }
}

// The batches a safepoint took, fired: kept for the owners' next batches,
// up to as many as either of the last two safepoints took (a steady program
// mallocs nothing; one that stopped allocating gives its memory back within
// two safepoints).
static void jvmtrace_alloc_keep(JvmtraceAllocBatch* taken) {
  uint32_t n = 0;
  for (JvmtraceAllocBatch* b = taken; b != nullptr; b = b->next) n++;
  const uint32_t keep = MAX2(n, jvmtrace_alloc_taken_before);
  jvmtrace_alloc_taken_before = n;
  JvmtraceAllocBatch* spill = nullptr;
  {
    JvmtraceSpinLocker locker(&jvmtrace_alloc_spare_lock);
    while (taken != nullptr) {
      JvmtraceAllocBatch* next = taken->next;
      if (jvmtrace_alloc_spare_count < keep) {
        taken->next = jvmtrace_alloc_spare;
        jvmtrace_alloc_spare = taken;
        jvmtrace_alloc_spare_count++;
      } else {
        taken->next = spill;
        spill = taken;
      }
      taken = next;
    }
    while (jvmtrace_alloc_spare_count > keep) {
      JvmtraceAllocBatch* b = jvmtrace_alloc_spare;
      jvmtrace_alloc_spare = b->next;
      jvmtrace_alloc_spare_count--;
      b->next = spill;
      spill = b;
    }
  }
  jvmtrace_alloc_free(spill);  // (outside the lock)
}

// The taken batches' records, merged in end_ns order (each batch is in
// order: one thread's), fired JVMTRACE_ALLOC_BATCH_RECORDS at a time; the
// last batch (possibly empty) says so.  Then the batches are kept for reuse.
static void jvmtrace_alloc_fire_taken(JvmtraceAllocBatch* taken, uint64_t safepoint_id) {
  static JvmtraceAllocRecord staged[JVMTRACE_ALLOC_BATCH_RECORDS];
  // A binary heap of the batches with records left, by their next end_ns.
  struct Head { JvmtraceAllocBatch* b; uint32_t at; };
  uint32_t n = 0;
  for (JvmtraceAllocBatch* b = taken; b != nullptr; b = b->next) {
    if (b->count != 0) n++;
  }
  Head* heap = n > 0 ? (Head*)os::malloc(sizeof(Head) * n, mtServiceability) : nullptr;
  uint32_t staged_n = 0;
  if (heap == nullptr) {
    // (no memory for the merge: each batch in turn, in order per thread)
    for (JvmtraceAllocBatch* b = taken; b != nullptr; b = b->next) {
      for (uint32_t i = 0; i < b->count; i++) {
        staged[staged_n++] = b->records[i];
        if (staged_n == JVMTRACE_ALLOC_BATCH_RECORDS) {
          jvmtrace_alloc_fire(staged, staged_n, safepoint_id, false);
          staged_n = 0;
        }
      }
    }
  } else {
    auto key = [&](uint32_t i) { return heap[i].b->records[heap[i].at].end_ns; };
    auto sift_down = [&](uint32_t i, uint32_t size) {
      for (;;) {
        uint32_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < size && key(l) < key(least)) least = l;
        if (r < size && key(r) < key(least)) least = r;
        if (least == i) return;
        Head t = heap[i]; heap[i] = heap[least]; heap[least] = t;
        i = least;
      }
    };
    uint32_t size = 0;
    for (JvmtraceAllocBatch* b = taken; b != nullptr; b = b->next) {
      if (b->count != 0) heap[size++] = Head{b, 0};
    }
    for (uint32_t i = size / 2; i-- > 0;) sift_down(i, size);
    while (size > 0) {
      staged[staged_n++] = heap[0].b->records[heap[0].at++];
      if (staged_n == JVMTRACE_ALLOC_BATCH_RECORDS) {
        jvmtrace_alloc_fire(staged, staged_n, safepoint_id, false);
        staged_n = 0;
      }
      if (heap[0].at == heap[0].b->count) heap[0] = heap[--size];
      sift_down(0, size);
    }
    os::free(heap);
  }
  jvmtrace_alloc_fire(staged, staged_n, safepoint_id, true);
  jvmtrace_alloc_keep(taken);
}

bool jvmtrace_alloc_drain_waiting() {
  return JVMTRACE_ALLOC_DRAIN_ENABLED() != 0;
}

void jvmtrace_alloc_at_safepoint() {
  assert(SafepointSynchronize::is_at_safepoint() && Thread::current()->is_VM_thread(),
         "owners must be stopped");
  const bool attached = JVMTRACE_ALLOC_BATCH_ENABLED() != 0;
  const bool plab_attached = JVMTRACE_PLAB_BATCH_ENABLED() != 0;
  // (before any return: a tracer attaching during this safepoint gets its id)
  jvmtrace_handover_safepoint = SafepointSynchronize::safepoint_id();
  if (!attached && !plab_attached && Atomic::load(&jvmtrace_alloc_batches) == nullptr &&
      jvmtrace_alloc_spare == nullptr && !jvmtrace_plab_pending) {
    return;  // detached, nothing left: nothing at all
  }
  // Several safepoints before an after (a nested begin cannot happen; a
  // safepoint not run through VMThread::inner_execute could): what an
  // earlier one took goes out first.
  if (jvmtrace_alloc_taken != nullptr || jvmtrace_alloc_taking || jvmtrace_plab_taking ||
      jvmtrace_plab_pending) {
    jvmtrace_after_safepoint();
  }
  jvmtrace_alloc_taken = Atomic::load(&jvmtrace_alloc_batches);
  Atomic::store(&jvmtrace_alloc_batches, (JvmtraceAllocBatch*)nullptr);
  Atomic::inc(&jvmtrace_alloc_generation);
  jvmtrace_alloc_taken_ns = os::javaTimeNanos();
  jvmtrace_alloc_taking = attached;
  jvmtrace_plab_taking = plab_attached;
  // Detached: the batches kept for reuse go too (the owners are stopped).
  if (!attached && jvmtrace_alloc_spare != nullptr) {
    jvmtrace_alloc_free(jvmtrace_alloc_spare);
    jvmtrace_alloc_spare = nullptr;
    jvmtrace_alloc_spare_count = 0;
    jvmtrace_alloc_taken_before = 0;
  }
  // The safepoints that end the VM have no after: their records now.
  const VM_Operation* op = VMThread::vm_operation();
  if (VMThread::should_terminate() || (op != nullptr && op->type() == VM_Operation::VMOp_Exit)) {
    jvmtrace_after_safepoint();
  }
}

void jvmtrace_after_safepoint() {
  assert(Thread::current()->is_VM_thread(), "the VM thread's");
  // The pauses' PLAB records first: a tracer that holds what followed the
  // safepoint's begin until its last alloc__batch has them by then.
  if (jvmtrace_plab_taking || jvmtrace_plab_pending) {
    jvmtrace_plab_fire_all(jvmtrace_handover_safepoint,
                           jvmtrace_plab_taking || JVMTRACE_PLAB_BATCH_ENABLED());
    jvmtrace_plab_taking = false;
  }
  if (jvmtrace_alloc_taken == nullptr && !jvmtrace_alloc_taking) {
    return;
  }
  JvmtraceAllocBatch* taken = jvmtrace_alloc_taken;
  jvmtrace_alloc_taken = nullptr;
  const bool attached = jvmtrace_alloc_taking;
  jvmtrace_alloc_taking = false;
  if (attached) {
    jvmtrace_alloc_fire_taken(taken, jvmtrace_handover_safepoint);
    if (JVMTRACE_ALLOC_DRAIN_ENABLED()) {
      uint64_t flushed_ns = (uint64_t)jvmtrace_alloc_taken_ns;
      asm volatile("" : "+r"(flushed_ns));  // (a register, not "sym(%rip)")
      JVMTRACE_ALLOC_DRAIN(flushed_ns);
    }
  } else {
    jvmtrace_alloc_free(taken);  // detached: what is left is nobody's
  }
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
  if (!JVMTRACE_GC_PAUSE_START_ENABLED()) {
    return;
  }
  JVMTRACE_GC_PAUSE_START((uint32_t)GCId::current_or_undefined(), title, cause, kind,
                          (uint64_t)jvmtrace_heap_used(), (uint64_t)Universe::heap()->capacity());
}

void jvmtrace_pause_end(const char* title, const char* cause, uint32_t kind) {
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

// --- the allocation slow path (MemAllocator::mem_allocate_slow, every line) ---

static const char* jvmtrace_klass_name(const Klass* k, uint32_t* len) {
  const Symbol* name = k->name();
  *len = name != nullptr ? (uint32_t)name->utf8_length() : 0;
  return name != nullptr ? (const char*)name->base() : nullptr;
}

void jvmtrace_slow_path_begin_probed(JavaThread* thread, const Klass* klass, size_t word_size,
                                     JvmtraceSlowPathStart* s) {
  if (JVMTRACE_ALLOC_SLOW_ENTER_ENABLED()) {
    uint32_t len;
    const char* name = jvmtrace_klass_name(klass, &len);
    JVMTRACE_ALLOC_SLOW_ENTER((uint64_t)(word_size * HeapWordSize), name, len, jvmtrace_tid(thread));
  }
  // os::javaTimeNanos() is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
  // Read only while alloc__slow or alloc__batch is attached: 0 says "not
  // measured".
  s->start_ns = JVMTRACE_ALLOC_SLOW_ENABLED() || JVMTRACE_ALLOC_BATCH_ENABLED() ? os::javaTimeNanos() : 0;
}

void jvmtrace_tlab_refilled_probed(JavaThread* thread, const Klass* klass, HeapWord* mem, size_t tlab_words,
                                   size_t word_size, uint64_t retired_waste_bytes) {
  if (JVMTRACE_TLAB_REFILL_ENABLED()) {
    uint32_t len;
    const char* name = jvmtrace_klass_name(klass, &len);
    JVMTRACE_TLAB_REFILL((uint64_t)p2i(mem), (uint64_t)(tlab_words * HeapWordSize),
                         (uint64_t)(word_size * HeapWordSize), name, len, retired_waste_bytes,
                         jvmtrace_tid(thread));
  }
}

uint64_t jvmtrace_slow_path_end_probed(JavaThread* thread, const Klass* klass, size_t word_size, HeapWord* mem,
                                       bool outside_tlab, size_t tlab_words, uint64_t retired_waste_bytes,
                                       const JvmtraceSlowPathStart& start, uint32_t* level) {
  const bool exit_on = JVMTRACE_ALLOC_SLOW_EXIT_ENABLED() != 0;
  const bool slow_on = JVMTRACE_ALLOC_SLOW_ENABLED() != 0;
  const bool batch_on = JVMTRACE_ALLOC_BATCH_ENABLED() != 0;
  const bool sample_on = JVMTRACE_ALLOC_SAMPLE_ENABLED() != 0;
  if (!(exit_on || slow_on || batch_on || sample_on)) {
    return 0;
  }
  // The end is read before any probe here fires, so alloc__slow,
  // alloc__batch and alloc__sample report the same end and no probe's hit
  // is in the duration (tlab__refill's is, when a tracer has that probe
  // attached too).
  const jlong end_ns = slow_on || batch_on || sample_on ? os::javaTimeNanos() : 0;
  const uint32_t gcs = Universe::heap()->total_collections() - start.gcs_before;
  uint32_t outcome;
  if (mem == nullptr) {
    outcome = JVMTRACE_SLOW_FAILED;
  } else if (outside_tlab) {
    outcome = gcs > 0 ? JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC : JVMTRACE_SLOW_OUTSIDE_TLAB;
  } else if (tlab_words != 0) {
    outcome = gcs > 0 ? JVMTRACE_SLOW_NEW_TLAB_AFTER_GC : JVMTRACE_SLOW_NEW_TLAB;
  } else {
    outcome = JVMTRACE_SLOW_CURRENT_TLAB;
  }
  if (exit_on) {
    JVMTRACE_ALLOC_SLOW_EXIT((uint64_t)p2i(mem), (uint64_t)(word_size * HeapWordSize), outcome, gcs,
                             jvmtrace_tid(thread));
  }
  if (!(slow_on || batch_on || sample_on)) {
    return 0;
  }
  const bool new_tlab = jvmtrace_slow_new_tlab(outcome);
  uint32_t len;
  const char* name = jvmtrace_klass_name(klass, &len);
  JvmtraceAllocRecord r;
  r.start_ns = (uint64_t)start.start_ns;
  r.end_ns = (uint64_t)end_ns;
  r.address = (uint64_t)p2i(mem);
  r.alloc_bytes = (uint64_t)(word_size * HeapWordSize);
  r.tlab_bytes = new_tlab ? (uint64_t)(tlab_words * HeapWordSize) : 0;
  r.retired_waste_bytes = new_tlab ? retired_waste_bytes : 0;
  r.class_name = (uint64_t)p2i(name);
  r.gcs = gcs;
  r.tid = jvmtrace_tid(thread);
  r.class_name_len = len;
  r.outcome = (uint8_t)outcome;
  memset(r.pad, 0, sizeof(r.pad));
  // The sample (if this slow path is one) comes before its record is
  // reported, so a tracer can pair the two (by end_ns, or as the thread's
  // next alloc__slow).  Only what a slow path hands out counts: a failed
  // one or the current TLAB's (JVMTI's sampler) not.
  const uint64_t sample_bytes = new_tlab ? r.tlab_bytes : jvmtrace_slow_outside_tlab(outcome) ? r.alloc_bytes : 0;
  uint64_t sample_id = 0;
  if (sample_on && sample_bytes != 0) {
    sample_id = jvmtrace_alloc_sample(thread, sample_bytes, r, level);
  }
  if (slow_on) {
    JVMTRACE_ALLOC_SLOW(r.alloc_bytes, name, r.class_name_len, outcome, r.tlab_bytes,
                        start.start_ns != 0 ? r.end_ns - r.start_ns : 0, r.address, r.retired_waste_bytes,
                        gcs, r.start_ns, r.tid);
  }
  if (batch_on) {
    jvmtrace_alloc_append(r);
  }
  return sample_id;
}

void jvmtrace_direct_copy_undone(HeapWord* obj, size_t word_size, uint32_t dest) {
  jvmtrace_plab_event(JVMTRACE_PLAB_REC_UNDO, (uint64_t)p2i(obj), (uint64_t)(word_size * HeapWordSize), 0,
                      dest);
}

void jvmtrace_promote_direct(HeapWord* obj, size_t word_size, uint32_t dest) {
  const uint64_t address = (uint64_t)p2i(obj);
  const uint64_t bytes = (uint64_t)(word_size * HeapWordSize);
  if (JVMTRACE_PROMOTE_DIRECT_ENABLED()) {
    JVMTRACE_PROMOTE_DIRECT((uint32_t)GCId::current_or_undefined(), address, bytes, dest,
                            jvmtrace_tid(Thread::current()));
  }
  jvmtrace_plab_event(JVMTRACE_PLAB_REC_DIRECT, address, bytes, bytes, dest);
}

void jvmtrace_plab_allocated(HeapWord* bottom, size_t bytes, uint32_t dest) {
  if (JVMTRACE_PLAB_ALLOC_ENABLED()) {
    JVMTRACE_PLAB_ALLOC((uint32_t)GCId::current_or_undefined(), (uint64_t)p2i(bottom), (uint64_t)bytes, dest,
                        jvmtrace_tid(Thread::current()));
  }
  jvmtrace_plab_event(JVMTRACE_PLAB_REC_ALLOC, (uint64_t)p2i(bottom), (uint64_t)bytes, 0, dest);
}

void jvmtrace_plab_retired(HeapWord* bottom, size_t bytes, size_t used_bytes, uint32_t dest) {
  if (JVMTRACE_PLAB_RETIRE_ENABLED()) {
    JVMTRACE_PLAB_RETIRE((uint32_t)GCId::current_or_undefined(), (uint64_t)p2i(bottom), (uint64_t)bytes,
                         (uint64_t)used_bytes, (uint64_t)(bytes - used_bytes), dest,
                         jvmtrace_tid(Thread::current()));
  }
  jvmtrace_plab_event(JVMTRACE_PLAB_REC_RETIRE, (uint64_t)p2i(bottom), (uint64_t)bytes, (uint64_t)used_bytes,
                      dest);
}
