/*
 * What HotSpot's runtime calls into jvmtrace's alloc__batch (see
 * jvmtraceProbes.cpp).  A header of its own, without sdt.h: including
 * jvmtraceProbes.hpp would turn HotSpot's own probe sites expanded after it
 * into 5-byte nops with jvmtrace's semaphore routing.
 */
#ifndef SHARE_UTILITIES_JVMTRACEHOOKS_HPP
#define SHARE_UTILITIES_JVMTRACEHOOKS_HPP

// The VM thread, in SafepointSynchronize::begin() once every thread is
// stopped: reports every thread's pending alloc__batch records (or frees
// the batches once no tracer is attached), then fires alloc__drain.
void jvmtrace_alloc_at_safepoint();

// A JavaThread in JavaThread::exit (or a failed JNI attach), in
// _thread_in_vm, before its TLAB is retired: reports its pending records.
void jvmtrace_alloc_thread_exit();

// True while a tracer waits for alloc__drain: the VM thread then takes a
// periodic cleanup safepoint (SafepointSynchronize::is_cleanup_needed()).
bool jvmtrace_alloc_drain_requested();

#endif // SHARE_UTILITIES_JVMTRACEHOOKS_HPP
