/*
 * sample__fates (jvmtrace.d): what becomes of sampled objects.  While a
 * tracer has the probe attached, the object of each alloc__sample the VM
 * admits is held by a weak handle in jvmtrace's own weak OopStorage ("jvmtrace
 * Samples Weak", one of OopStorageSet's weak storages, so every collector's
 * weak processing visits it and clears the handles of dead objects: the
 * pattern of JFR's object sampler and of the JVMTI tag map).  Nothing here
 * keeps an object alive: a handle is only ever read by peek()'s load
 * (ON_PHANTOM_OOP_REF | AS_NO_KEEPALIVE), never resolved.
 *
 * Who does what:
 *  - an allocating thread admits a sample (a coin at the table's level, in
 *    jvmtraceStack.cpp) and, once the object is initialized
 *    (notify_allocation), makes its handle and puts it in the table;
 *  - a collection's weak processing reports how many handles are dead
 *    (the num_dead callback, on whatever thread did the processing, in a
 *    pause or not): the callback only notes the GC id and wakes the
 *    ServiceThread, as JvmtiTagMap::gc_notification does;
 *  - the ServiceThread, which a pause holds blocked, scans the table after
 *    it: releases the dead handles and fires their records in batches;
 *    it alone removes or thins entries;
 *  - a periodic task (WatcherThread, 200 ms) wakes it when a tracer waits
 *    for alloc__drain or detached from sample__fates with objects tracked.
 *
 * One source for JDK 17, 21 and 25 (usdt/hotspot/shared/, copied into the
 * tree by scripts/build-patched-jdk.sh).  No "precompiled.hpp".
 */
#include "gc/shared/collectedHeap.hpp"
#include "gc/shared/gcId.hpp"
#include "gc/shared/gc_globals.hpp"
#include "gc/shared/oopStorage.hpp"
#include "gc/shared/oopStorageSet.hpp"
#include "memory/allocation.hpp"
#include "memory/universe.hpp"
#include "oops/access.inline.hpp"
#include "oops/oop.inline.hpp"
#include "runtime/atomic.hpp"
#include "runtime/interfaceSupport.inline.hpp"
#include "runtime/mutexLocker.hpp"
#include "runtime/os.hpp"
#include "runtime/safepoint.hpp"
#include "runtime/safepointVerifiers.hpp"
#include "runtime/task.hpp"
#include "utilities/jvmtraceGlobals.hpp"
#if INCLUDE_G1GC
#include "gc/g1/g1CollectedHeap.inline.hpp"
#endif
#if INCLUDE_PARALLELGC
#include "gc/parallel/parallelScavengeHeap.inline.hpp"
#endif
#if INCLUDE_SERIALGC
#include "gc/serial/serialHeap.hpp"
#endif
#include "utilities/jvmtraceHooks.hpp"
#include "utilities/jvmtraceProbes.hpp"
#include "utilities/jvmtraceSlowPath.inline.hpp"
#include "utilities/jvmtraceSpinLocker.hpp"

typedef struct jvmtrace_fate_record JvmtraceFateRecord;

static OopStorage* jvmtrace_samples_storage = nullptr;

// --- the ServiceThread's work ------------------------------------------------

static const int JVMTRACE_WORK_DRAIN = 1;    // a tracer waits for alloc__drain
static const int JVMTRACE_WORK_SCAN = 2;     // a collection reported dead handles
static const int JVMTRACE_WORK_THIN = 4;     // the table is 7/8 full
static const int JVMTRACE_WORK_FATES = 8;    // allocating threads queued records
static const int JVMTRACE_WORK_CLEANUP = 16; // sample__fates detached, entries left
static int jvmtrace_work = 0;                // under Service_lock
static int jvmtrace_work_taken = 0;          // the ServiceThread's own

static void jvmtrace_service_notify(int work) {
  MonitorLocker ml(Service_lock, Mutex::_no_safepoint_check_flag);
  jvmtrace_work |= work;
  ml.notify_all();
}

bool jvmtrace_service_has_work() {
  assert_lock_strong(Service_lock);
  if (jvmtrace_work == 0) return false;
  jvmtrace_work_taken |= jvmtrace_work;
  jvmtrace_work = 0;
  return true;
}

// --- the table -----------------------------------------------------------------

// An entry: a tracked sample's handle and id.  24 bytes; JvmtraceLiveSamples
// of them, malloc'd (mtServiceability) when tracking starts, freed when it
// stops.
static const uint32_t JVMTRACE_LIVE_OLD = 0x01;  // a PROMOTED record went out
struct JvmtraceLiveEntry {
  oop* slot;
  uint64_t id;
  uint32_t flags;
};

// Allocating threads append (under the lock); only the ServiceThread
// removes, thins, flags and frees, so it reads entries below the count it
// saw without the lock.  The lock is a spin lock held for O(1) by
// allocating threads (in _thread_in_vm, no safepoint while held) and for at
// most a chunk by the ServiceThread; no VM thread, GC thread or callback
// ever takes it, so no safepoint can wait on a holder that waits for it.
static JvmtraceLiveEntry* jvmtrace_table = nullptr;
static uint32_t jvmtrace_table_capacity = 0;
static volatile uint32_t jvmtrace_table_count = 0;
static volatile uint32_t jvmtrace_table_level = 0;  // admission: probability 2^-level
static volatile int jvmtrace_table_lock = 0;
// Records made by allocating threads (a catch-up thinning, no handle to be
// had), fired by the ServiceThread; beyond the buffer, counted as lost.
static const uint32_t JVMTRACE_PENDING_FATES = 256;
static JvmtraceFateRecord jvmtrace_pending[JVMTRACE_PENDING_FATES];
static uint32_t jvmtrace_pending_count = 0;
static uint64_t jvmtrace_pending_lost = 0;
// Sample ids: unique for the JVM's life (a late record of an earlier
// recording never names a sample of this one).
static volatile uint64_t jvmtrace_next_sample_id = 1;
// The collection whose weak processing last reported dead handles, and how
// many reported since the last scan.
static volatile uint32_t jvmtrace_fates_gc_id = 0;
static volatile uint32_t jvmtrace_fates_notifications = 0;

static JvmtraceFateRecord jvmtrace_fate(uint64_t id, uint32_t gc_id, uint8_t kind, uint8_t flags) {
  JvmtraceFateRecord r;
  r.sample_id = id;
  r.gc_id = gc_id;
  r.kind = kind;
  r.flags = flags;
  r.pad[0] = r.pad[1] = 0;
  return r;
}

// Under the lock.
static void jvmtrace_queue_fate(uint64_t id, uint8_t kind) {
  if (jvmtrace_pending_count < JVMTRACE_PENDING_FATES) {
    jvmtrace_pending[jvmtrace_pending_count++] = jvmtrace_fate(id, 0, kind, 0);
  } else {
    jvmtrace_pending_lost++;
  }
}

// As WeakHandle::release, but without the SATB pre-barrier: a live object
// whose handle is dropped (thinning, clean-up) must not be kept alive for a
// G1 or Shenandoah marking cycle.
static void jvmtrace_release_slot(oop* slot) {
  NativeAccess<ON_PHANTOM_OOP_REF | AS_NO_KEEPALIVE>::oop_store(slot, oop(nullptr));
  jvmtrace_samples_storage->release(slot);
}

// The ServiceThread's batch of records: fired when full and at the end of
// a piece of work, never with the table locked.
class JvmtraceFateBatch : public StackObj {
  JvmtraceFateRecord _records[JVMTRACE_FATE_BATCH_RECORDS];
  uint32_t _count;
  uint32_t _gc_id;
 public:
  explicit JvmtraceFateBatch(uint32_t gc_id) : _count(0), _gc_id(gc_id) {}
  bool full() const { return _count == JVMTRACE_FATE_BATCH_RECORDS; }
  void add(const JvmtraceFateRecord& r) {
    if (full()) fire();
    _records[_count++] = r;
  }
  // Out of line: one probe site.  The globals' values in registers: as an
  // operand the compiler would name a global "sym(%rip)", which no USDT
  // reader (libbpf) can follow.
  NOINLINE void fire() {
    if (_count != 0 && JVMTRACE_SAMPLE_FATES_ENABLED()) {
      uint32_t level = Atomic::load(&jvmtrace_table_level), tracked = Atomic::load(&jvmtrace_table_count);
      asm volatile("" : "+r"(level), "+r"(tracked));
      JVMTRACE_SAMPLE_FATES((uint64_t)p2i(_records), _count, (uint32_t)sizeof(JvmtraceFateRecord), _gc_id,
                            level, tracked);
    }
    _count = 0;
  }
};

// JvmtraceLiveSamples, but at most 4,096 under generational ZGC, whose young
// collections mark through the weak OopStorages as if they were strong: a
// tracked object (and what it reaches) survives until an old collection.
static uint32_t jvmtrace_live_capacity() {
  uint32_t capacity = JvmtraceLiveSamples;
#if INCLUDE_ZGC && JVMTRACE_JDK == 21
  if (UseZGC && ZGenerational) capacity = MIN2(capacity, (uint32_t)4096);
#elif INCLUDE_ZGC && JVMTRACE_JDK >= 25
  if (UseZGC) capacity = MIN2(capacity, (uint32_t)4096);
#endif
  return capacity;
}

uint64_t jvmtrace_live_admit(uint64_t random_bits, uint32_t* level) {
  if (!JVMTRACE_SAMPLE_FATES_ENABLED() || jvmtrace_samples_storage == nullptr) {
    return 0;
  }
  const uint32_t l = Atomic::load_acquire(&jvmtrace_table_level);
  if (l >= 64 || (l > 0 && (random_bits & ((UCONST64(1) << l) - 1)) != 0)) {
    return 0;  // not admitted: probability 1 - 2^-level
  }
  *level = l;
  return Atomic::add(&jvmtrace_next_sample_id, (uint64_t)1) - 1;
}

void jvmtrace_sample_track_admitted(JavaThread* jt, oop obj, uint64_t id, uint32_t level) {
  if (!JVMTRACE_SAMPLE_FATES_ENABLED()) {
    return;  // the tracer went away meanwhile
  }
  NoSafepointVerifier nsv;
  // Not WeakHandle's constructor: it ends the VM when no entry can be had.
  oop* slot = jvmtrace_samples_storage->allocate();
  if (slot != nullptr) {
    NativeAccess<ON_PHANTOM_OOP_REF>::oop_store(slot, obj);
  }
  bool thin = false, fates = false;
  // The table, made outside the lock (it may be megabytes), installed under it.
  JvmtraceLiveEntry* made = nullptr;
  uint32_t made_capacity = 0;
  if (jvmtrace_table == nullptr && slot != nullptr) {
    made_capacity = jvmtrace_live_capacity();
    made = (JvmtraceLiveEntry*)os::malloc(sizeof(JvmtraceLiveEntry) * made_capacity, mtServiceability);
  }
  {
    JvmtraceSpinLocker locker(&jvmtrace_table_lock);
    if (jvmtrace_table == nullptr && made != nullptr) {
      jvmtrace_table = made;
      jvmtrace_table_capacity = made_capacity;
      made = nullptr;
    }
    // Thinnings since the admission: the coins it missed, so that every
    // entry was kept with probability 2^-level (now).
    bool kept = slot != nullptr && jvmtrace_table != nullptr;
    const uint32_t now_level = Atomic::load(&jvmtrace_table_level);
    if (level > now_level) {
      kept = false;  // admitted before a clean-up reset the level: of a session that ended
    }
    for (uint32_t l = level; kept && l < now_level; l++) {
      kept = (jvmtrace_random() & 1) != 0;
      if (!kept) jvmtrace_queue_fate(id, JVMTRACE_FATE_THINNED);
    }
    if (kept && jvmtrace_table_count == jvmtrace_table_capacity) {
      kept = false;  // the ServiceThread has not thinned it yet
      jvmtrace_queue_fate(id, JVMTRACE_FATE_UNTRACKED);
    } else if (slot == nullptr || jvmtrace_table == nullptr) {
      jvmtrace_queue_fate(id, JVMTRACE_FATE_UNTRACKED);
    }
    if (kept) {
      JvmtraceLiveEntry& e = jvmtrace_table[jvmtrace_table_count];
      e.slot = slot;
      e.id = id;
      e.flags = 0;
      Atomic::release_store(&jvmtrace_table_count, jvmtrace_table_count + 1);
      slot = nullptr;
      thin = jvmtrace_table_count >= jvmtrace_table_capacity - jvmtrace_table_capacity / 8;
    }
    fates = jvmtrace_pending_count >= JVMTRACE_PENDING_FATES / 2;
  }
  if (slot != nullptr) {
    jvmtrace_release_slot(slot);
  }
  if (made != nullptr) {
    os::free(made);  // another thread's table was installed first
  }
  if (thin || fates) {
    jvmtrace_service_notify((thin ? JVMTRACE_WORK_THIN : 0) | (fates ? JVMTRACE_WORK_FATES : 0));
  }
}

// Every collector's weak processing, with the number of cleared handles in
// the storage (those not yet released included): on the VM thread or a GC
// worker in a pause, on ZGC's or Shenandoah's own threads while mutators
// run.  A store and a notify, nothing else.
// (With no deaths the scan is still wanted while objects are tracked: it
// notes this collection's promotions under its own id.)
static void jvmtrace_samples_num_dead(size_t num_dead) {
  if (num_dead == 0 && Atomic::load(&jvmtrace_table_count) == 0) return;
  Atomic::store(&jvmtrace_fates_gc_id, (uint32_t)GCId::current_or_undefined());
  if (num_dead != 0) Atomic::inc(&jvmtrace_fates_notifications);
  jvmtrace_service_notify(JVMTRACE_WORK_SCAN);
}

void jvmtrace_oopstorage_init() {
  jvmtrace_samples_storage = OopStorageSet::create_weak("jvmtrace Samples Weak", mtServiceability);
  jvmtrace_samples_storage->register_num_dead_callback(&jvmtrace_samples_num_dead);
}

// Whether o is in the young generation, for the collectors that have one
// and move what survives out of it (no PROMOTED records on ZGC, Shenandoah).
static bool jvmtrace_is_in_young(oop o, bool* known) {
  *known = true;
  switch (Universe::heap()->kind()) {
#if INCLUDE_G1GC
    case CollectedHeap::G1: return G1CollectedHeap::heap()->is_in_young(o);
#endif
#if INCLUDE_PARALLELGC
    case CollectedHeap::Parallel:
#if JVMTRACE_JDK >= 21
      return ParallelScavengeHeap::heap()->is_in_young(cast_from_oop<HeapWord*>(o));
#else
      return ParallelScavengeHeap::heap()->is_in_young(o);
#endif
#endif
#if INCLUDE_SERIALGC
    case CollectedHeap::Serial:
#if JVMTRACE_JDK >= 21
      return SerialHeap::heap()->is_in_young(cast_from_oop<HeapWord*>(o));
#else
      return SerialHeap::heap()->is_in_young(o);
#endif
#endif
    default: *known = false; return true;
  }
}

// After a collection reported dead handles: releases them (DIED records)
// and notes first sightings in the old generation (PROMOTED).  Handles are
// read with peek()'s load, outside the lock (only this thread changes the
// entries below the count), in chunks, with a safepoint let in between.
static void jvmtrace_live_scan(JavaThread* jt, JvmtraceFateBatch& batch, uint32_t gc_id, uint8_t flags) {
  const uint32_t CHUNK = 1024;
  uint32_t dead_at[CHUNK];
  JvmtraceLiveEntry dead[CHUNK];
  for (uint32_t i = 0;;) {
    uint32_t n_dead = 0;
    // A collection that reported deaths since the scan began (a safepoint
    // came in between chunks, or a concurrent cycle runs): what is found
    // dead from here on may be of either.
    if (Atomic::load(&jvmtrace_fates_notifications) != 0) {
      Atomic::xchg(&jvmtrace_fates_notifications, (uint32_t)0);
      gc_id = Atomic::load(&jvmtrace_fates_gc_id);
      flags |= JVMTRACE_FATE_AMBIGUOUS;
    }
    {
      NoSafepointVerifier nsv;
      const uint32_t end = MIN2(i + CHUNK, Atomic::load_acquire(&jvmtrace_table_count));
      if (jvmtrace_table == nullptr || i >= end) break;
      for (uint32_t k = i; k < end; k++) {
        JvmtraceLiveEntry& e = jvmtrace_table[k];
        const oop o = NativeAccess<ON_PHANTOM_OOP_REF | AS_NO_KEEPALIVE>::oop_load(e.slot);
        if (o == nullptr) {
          dead_at[n_dead] = k;
          dead[n_dead++] = e;
        } else if ((e.flags & JVMTRACE_LIVE_OLD) == 0) {
          bool known;
          if (!jvmtrace_is_in_young(o, &known) && known) {
            e.flags |= JVMTRACE_LIVE_OLD;
            batch.add(jvmtrace_fate(e.id, gc_id, JVMTRACE_FATE_PROMOTED, 0));
          }
        }
      }
      if (n_dead != 0) {
        // Highest first: what moves into a freed index comes from above it.
        JvmtraceSpinLocker locker(&jvmtrace_table_lock);
        for (uint32_t d = n_dead; d-- > 0;) {
          const uint32_t last = jvmtrace_table_count - 1;
          jvmtrace_table[dead_at[d]] = jvmtrace_table[last];
          Atomic::release_store(&jvmtrace_table_count, last);
        }
      }
      // From the lowest freed index again: what moved in is looked at too
      // (an entry seen twice gives nothing twice).
      i = n_dead != 0 ? dead_at[0] : end;
    }
    for (uint32_t d = 0; d < n_dead; d++) {
      jvmtrace_release_slot(dead[d].slot);
      batch.add(jvmtrace_fate(dead[d].id, gc_id, JVMTRACE_FATE_DIED, flags));
    }
    ThreadBlockInVM tbivm(jt);  // a safepoint may come in between chunks
  }
}

// The table 7/8 full: the level rises by one, and each entry there was is
// kept with probability 1/2 (a coin of this thread's, independent of the
// objects), so every entry stands for 2^level times its weight again.
static void jvmtrace_live_thin(JavaThread* jt, JvmtraceFateBatch& batch) {
  uint32_t top;
  // What is in the batch goes out at the level it was made at.
  if (jvmtrace_table == nullptr ||
      Atomic::load(&jvmtrace_table_count) < jvmtrace_table_capacity - jvmtrace_table_capacity / 8) {
    return;
  }
  batch.fire();
  {
    JvmtraceSpinLocker locker(&jvmtrace_table_lock);
    if (jvmtrace_table == nullptr ||
        jvmtrace_table_count < jvmtrace_table_capacity - jvmtrace_table_capacity / 8) {
      return;
    }
    Atomic::release_store(&jvmtrace_table_level, jvmtrace_table_level + 1);
    top = jvmtrace_table_count;  // entries from here on were admitted at the new level
  }
  const uint32_t CHUNK = 1024;
  JvmtraceLiveEntry dropped[CHUNK];
  // From the top down: an entry moved into a dropped one's index comes
  // from above it, looked at already or admitted at the new level.
  while (top > 0) {
    uint32_t n = 0;
    {
      NoSafepointVerifier nsv;
      JvmtraceSpinLocker locker(&jvmtrace_table_lock);
      const uint32_t bottom = top > CHUNK ? top - CHUNK : 0;
      for (uint32_t k = top; k-- > bottom;) {
        if ((jvmtrace_random() & 1) == 0) {
          dropped[n++] = jvmtrace_table[k];
          const uint32_t last = jvmtrace_table_count - 1;
          jvmtrace_table[k] = jvmtrace_table[last];
          Atomic::release_store(&jvmtrace_table_count, last);
        }
      }
      top = bottom;
    }
    for (uint32_t d = 0; d < n; d++) {
      jvmtrace_release_slot(dropped[d].slot);
      batch.add(jvmtrace_fate(dropped[d].id, 0, JVMTRACE_FATE_THINNED, 0));
    }
    ThreadBlockInVM tbivm(jt);
  }
}

// The records allocating threads queued.
static void jvmtrace_live_pending(JvmtraceFateBatch& batch) {
  JvmtraceFateRecord copy[JVMTRACE_PENDING_FATES];
  uint32_t n;
  uint64_t lost;
  {
    JvmtraceSpinLocker locker(&jvmtrace_table_lock);
    n = jvmtrace_pending_count;
    memcpy(copy, jvmtrace_pending, n * sizeof(JvmtraceFateRecord));
    jvmtrace_pending_count = 0;
    lost = jvmtrace_pending_lost;
    jvmtrace_pending_lost = 0;
  }
  for (uint32_t i = 0; i < n; i++) batch.add(copy[i]);
  if (lost != 0) batch.add(jvmtrace_fate(lost, 0, JVMTRACE_FATE_LOST, 0));
}

// sample__fates detached: every handle released, the table freed, the
// level back to 0.  No records: nobody listens.
static void jvmtrace_live_cleanup(JavaThread* jt) {
  JvmtraceLiveEntry* table;
  uint32_t count;
  {
    JvmtraceSpinLocker locker(&jvmtrace_table_lock);
    table = jvmtrace_table;
    count = jvmtrace_table_count;
    jvmtrace_table = nullptr;
    jvmtrace_table_capacity = 0;
    Atomic::release_store(&jvmtrace_table_count, (uint32_t)0);
    Atomic::release_store(&jvmtrace_table_level, (uint32_t)0);
    jvmtrace_pending_count = 0;
    jvmtrace_pending_lost = 0;
  }
  for (uint32_t k = 0; k < count; k++) {
    jvmtrace_release_slot(table[k].slot);
    if ((k & 1023) == 1023) {
      ThreadBlockInVM tbivm(jt);  // a safepoint may come in between
    }
  }
  os::free(table);
}

void jvmtrace_service_work(JavaThread* jt) {
  const int work = jvmtrace_work_taken;
  jvmtrace_work_taken = 0;
  if ((work & JVMTRACE_WORK_DRAIN) != 0 && jvmtrace_alloc_drain_waiting()) {
    jvmtrace_force_safepoint();
  }
  if (!JVMTRACE_SAMPLE_FATES_ENABLED()) {
    if (jvmtrace_table != nullptr) jvmtrace_live_cleanup(jt);
    Atomic::store(&jvmtrace_fates_notifications, (uint32_t)0);
    return;
  }
  if ((work & (JVMTRACE_WORK_SCAN | JVMTRACE_WORK_THIN | JVMTRACE_WORK_FATES)) == 0) {
    return;
  }
  const uint32_t gc_id = Atomic::load(&jvmtrace_fates_gc_id);
  JvmtraceFateBatch batch(gc_id);
  if ((work & JVMTRACE_WORK_SCAN) != 0) {
    const uint8_t flags =
        Atomic::xchg(&jvmtrace_fates_notifications, (uint32_t)0) > 1 ? JVMTRACE_FATE_AMBIGUOUS : 0;
    jvmtrace_live_scan(jt, batch, gc_id, flags);
  }
  jvmtrace_live_thin(jt, batch);
  jvmtrace_live_pending(batch);
  batch.fire();
}

// --- the periodic task -----------------------------------------------------------

// Every 200 ms on the WatcherThread, under PeriodicTask_lock (Service_lock
// ranks below it): what would otherwise wait for something to wake the
// ServiceThread.  Reads three words while nothing is attached.
class JvmtracePeriodicTask : public PeriodicTask {
 public:
  JvmtracePeriodicTask() : PeriodicTask(200) {}
  virtual void task() {
    int work = 0;
    if (jvmtrace_alloc_drain_waiting()) work |= JVMTRACE_WORK_DRAIN;
    if (jvmtrace_table != nullptr && !JVMTRACE_SAMPLE_FATES_ENABLED()) work |= JVMTRACE_WORK_CLEANUP;
    if (jvmtrace_pending_count != 0) work |= JVMTRACE_WORK_FATES;
    if (work != 0) jvmtrace_service_notify(work);
  }
};

void jvmtrace_service_thread_started() {
  // Here, not at start-up: enrolling takes PeriodicTask_lock, which needs a
  // current thread.  The WatcherThread runs it once it is started.
  (new JvmtracePeriodicTask())->enroll();
}
