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
#include "utilities/globalDefinitions.hpp"
// The contract's values (JVMTRACE_PAUSE_*): plain C.
#include "utilities/jvmtraceAbi.h"

// --- alloc__batch -----------------------------------------------------------

// The VM thread, in SafepointSynchronize::begin() once every thread is
// stopped.  Does nothing unless a tracer waits for alloc__drain (then it
// reports every thread's pending records and fires alloc__drain) or one
// detached and left batches behind (then it frees them, once).
void jvmtrace_alloc_at_safepoint();

// The VM thread at a safepoint, before the first collection probe of that
// safepoint (a pause's start, a collection's start): every thread's
// pending records, at most once per safepoint.  Elsewhere it does nothing.
// So a slow path's record arrives before every later gc__pause__start, and
// non-GC safepoints pay nothing.
void jvmtrace_alloc_flush_for_gc();

// A JavaThread in JavaThread::exit (or a failed JNI attach), in
// _thread_in_vm, before its TLAB is retired: reports its pending records.
void jvmtrace_alloc_thread_exit();

// True while a tracer waits for alloc__drain: on 17 and 21 the VM thread
// then takes a periodic cleanup safepoint (is_cleanup_needed()).
bool jvmtrace_alloc_drain_requested();

// 25, whose VM thread sleeps until an operation comes: the ServiceThread
// (which wakes every second anyway) asks whether a tracer waits for
// alloc__drain and no safepoint came for a second, and then forces one.
bool jvmtrace_alloc_drain_due();
void jvmtrace_force_safepoint();

// --- gc__pause__start/end -----------------------------------------------------

// A stop-the-world pause, one call each per "Pause ..." line of -Xlog:gc*:
// the VM thread at the safepoint, in the pause's GCIdMark.  The start first
// flushes the alloc__batch records (jvmtrace_alloc_flush_for_gc), the end
// the PLAB records.  title: the log's text; cause: "" for none.
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
