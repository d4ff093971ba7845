/*
 * What HotSpot's runtime and collectors call into jvmtrace (bodies in
 * jvmtraceProbes.cpp).  A header of its own, without sdt.h: including
 * jvmtraceProbes.hpp would turn HotSpot's own probe sites expanded after it
 * into 5-byte nops with jvmtrace's semaphore routing.  So any HotSpot file
 * may include this one.
 */
#ifndef SHARE_UTILITIES_JVMTRACEHOOKS_HPP
#define SHARE_UTILITIES_JVMTRACEHOOKS_HPP

#include "gc/shared/gcCause.hpp"
#include "oops/oopsHierarchy.hpp"
#include "utilities/globalDefinitions.hpp"
// The contract's values (JVMTRACE_PAUSE_*): plain C.
#include "utilities/jvmtraceAbi.h"

class JavaThread;
class Klass;

// --- start-up and the threads that work for jvmtrace -------------------------

// Universe::oopstorage_init(), with the VM's other weak storages: creates
// "jvmtrace Samples Weak" (sample__fates' weak handles).  Before any thread
// exists but the main one, before anything can collect.
void jvmtrace_oopstorage_init();

// The ServiceThread, as it starts (service_thread_entry): enrolls
// jvmtrace's periodic task (every 200 ms on the WatcherThread: it notices a
// tracer waiting for alloc__drain, or a detached sample__fates with objects
// still tracked, and wakes the ServiceThread).
void jvmtrace_service_thread_started();
// The ServiceThread's wait predicate, under Service_lock: work of jvmtrace's
// is pending (taken and cleared).
bool jvmtrace_service_has_work();
// ...and that work, on the ServiceThread, outside Service_lock, in
// _thread_in_vm: a safepoint for alloc__drain, sample__fates' scan of the
// tracked objects after a collection, thinning, clean-up after a detach.
void jvmtrace_service_work(JavaThread* jt);

// --- alloc__batch -----------------------------------------------------------

// The VM thread in SafepointSynchronize::begin(), once every thread is
// stopped: takes every thread's buffer of pending records (a swap of one
// list: nothing per thread while the world is stopped).  A safepoint that
// ends the VM fires them here: it has no after.
void jvmtrace_alloc_at_safepoint();

// The VM thread once the safepoint has ended (VMThread::wait_for_operation,
// once the operation's requester is released): fires the safepoint's PLAB
// records (plab__batch), then the alloc__batch records it took, in end_ns
// order, and alloc__drain; keeps the buffers for reuse.
void jvmtrace_after_safepoint();

// A JavaThread in JavaThread::exit (or a failed JNI attach), in
// _thread_in_vm, before its TLAB is retired: reports its pending records.
void jvmtrace_alloc_thread_exit();

// --- the allocation slow path: jvmtraceSlowPath.inline.hpp ----------------------

// --- PLABs ----------------------------------------------------------------------

// A GC worker's new PLAB (plab__alloc) and its retirement (plab__retire:
// used_bytes of bytes used, the rest filled), with their plab__batch
// records (fired after the safepoint); in a pause.  dest: enum jvmtrace_plab_dest.
void jvmtrace_plab_allocated(HeapWord* bottom, size_t bytes, uint32_t dest);
void jvmtrace_plab_retired(HeapWord* bottom, size_t bytes, size_t used_bytes, uint32_t dest);
// An object copied outside any PLAB (promote__direct and its plab__batch
// record), by a GC worker in a pause.  dest: enum jvmtrace_plab_dest.
void jvmtrace_promote_direct(HeapWord* obj, size_t word_size, uint32_t dest);
// A copy outside any PLAB lost the race to forward its object and was
// filled: its promote__direct bytes hold no object (plab__batch kind 3).
void jvmtrace_direct_copy_undone(HeapWord* obj, size_t word_size, uint32_t dest);

// --- gc__pause__start/end -----------------------------------------------------

// A stop-the-world pause, one call each per "Pause ..." line of -Xlog:gc*:
// the VM thread at the safepoint, in the pause's GCIdMark.  Neither flushes
// anything: the safepoint took every alloc__batch record at its start, and
// the pause's PLAB records go out after the safepoint, before its
// alloc__batch records.  title: the log's text; cause: "" for none.
void jvmtrace_pause_start(const char* title, const char* cause, uint32_t kind);
void jvmtrace_pause_end(const char* title, const char* cause, uint32_t kind);
inline const char* jvmtrace_cause_text(GCCause::Cause c) {
  return c == GCCause::_no_gc ? "" : GCCause::to_string(c);
}
// The two around a scope (Shenandoah's ShenandoahPausePhase holds one).
class JvmtracePauseScope {
  const char* const _title;
  const char* const _cause;
  const uint32_t _kind;
 public:
  JvmtracePauseScope(const char* title, const char* cause, uint32_t kind)
      : _title(title), _cause(cause), _kind(kind) {
    jvmtrace_pause_start(title, cause, kind);
  }
  ~JvmtracePauseScope() { jvmtrace_pause_end(_title, _cause, _kind); }
  JvmtracePauseScope(const JvmtracePauseScope&) = delete;
  JvmtracePauseScope& operator=(const JvmtracePauseScope&) = delete;
};

// --- safepoint__begin/end -----------------------------------------------------

// SafepointTracing::begin() and end(), with the figures -Xlog:safepoint
// prints (the caller computes them as the log line does on its release).
void jvmtrace_safepoint_begin(const char* operation, uint64_t safepoint_id, jlong begin_ns,
                              jlong since_last_ns);
void jvmtrace_safepoint_end(const char* operation, jlong reaching_ns, jlong at_safepoint_ns,
                            jlong total_ns, int threads, int running, jlong cleanup_ns,
                            uint64_t safepoint_id);

// --- alloc__sample: the metadata epoch ------------------------------------------

// Before anything a Java frame's Method* reaches (its Method, ConstMethod,
// ConstantPool, holder class, their Symbols) may be freed: the epoch moves
// (a full fence), so a tracer that reads a method's names and then finds
// the epoch unchanged since its probe hit knows they were that method's.
void jvmtrace_metadata_will_be_freed();

#endif // SHARE_UTILITIES_JVMTRACEHOOKS_HPP
