/*
 * The allocation slow path's hooks (MemAllocator, every line).  The tests of
 * the probes' semaphores are inline, so a slow path with no tracer attached
 * calls nothing of jvmtrace's, and an allocation whose sample is not tracked
 * neither; the work is out of line (jvmtraceProbes.cpp, jvmtraceLive.cpp).
 * Without sdt.h, like jvmtraceHooks.hpp: HotSpot's memAllocator.cpp includes
 * it (and jvmtrace's own files, for the out-of-line bodies' declarations).
 */
#ifndef SHARE_UTILITIES_JVMTRACESLOWPATH_INLINE_HPP
#define SHARE_UTILITIES_JVMTRACESLOWPATH_INLINE_HPP

#include "gc/shared/collectedHeap.hpp"
#include "memory/universe.hpp"
#include "oops/oopsHierarchy.hpp"
#include "utilities/globalDefinitions.hpp"

class JavaThread;
class Klass;

// The semaphores the kernel counts a probe's tracers in (defined in
// jvmtraceProbes.cpp), declared exactly as dtrace -h declares them.
#define JVMTRACE_SLOW_PATH_SEMAPHORE(probe) \
  __extension__ extern unsigned short jvmtrace_##probe##_semaphore __attribute__((unused)) \
      __attribute__((section(".probes")));
JVMTRACE_SLOW_PATH_SEMAPHORE(tlab__refill)
JVMTRACE_SLOW_PATH_SEMAPHORE(alloc__slow__enter)
JVMTRACE_SLOW_PATH_SEMAPHORE(alloc__slow__exit)
JVMTRACE_SLOW_PATH_SEMAPHORE(alloc__slow)
JVMTRACE_SLOW_PATH_SEMAPHORE(alloc__batch)
JVMTRACE_SLOW_PATH_SEMAPHORE(alloc__sample)
#undef JVMTRACE_SLOW_PATH_SEMAPHORE

// Whether a tracer has any probe of the slow path's ending attached.
inline bool jvmtrace_slow_path_probed() {
  return (jvmtrace_alloc__slow__enter_semaphore | jvmtrace_alloc__slow__exit_semaphore |
          jvmtrace_alloc__slow_semaphore | jvmtrace_alloc__batch_semaphore | jvmtrace_alloc__sample_semaphore) != 0;
}

// What mem_allocate_slow knows at its start.  The collection count is
// always read (one load), so a slow path that a tracer attaches during still
// gets its outcome right.
struct JvmtraceSlowPathStart {
  jlong start_ns;              // 0: not measured
  unsigned int gcs_before;
};
void jvmtrace_slow_path_begin_probed(JavaThread* thread, const Klass* klass, size_t word_size,
                                     JvmtraceSlowPathStart* start);
inline JvmtraceSlowPathStart jvmtrace_slow_path_begin(JavaThread* thread, const Klass* klass, size_t word_size) {
  JvmtraceSlowPathStart s;
  s.start_ns = 0;
  s.gcs_before = Universe::heap()->total_collections();
  if (jvmtrace_slow_path_probed()) {
    jvmtrace_slow_path_begin_probed(thread, klass, word_size, &s);
  }
  return s;
}

// A new TLAB was filled for this slow path (tlab__refill).
void jvmtrace_tlab_refilled_probed(JavaThread* thread, const Klass* klass, HeapWord* mem, size_t tlab_words,
                                   size_t word_size, uint64_t retired_waste_bytes);
inline void jvmtrace_tlab_refilled(JavaThread* thread, const Klass* klass, HeapWord* mem, size_t tlab_words,
                                   size_t word_size, uint64_t retired_waste_bytes) {
  if (jvmtrace_tlab__refill_semaphore != 0) {
    jvmtrace_tlab_refilled_probed(thread, klass, mem, tlab_words, word_size, retired_waste_bytes);
  }
}

// The slow path's end: alloc__slow__exit, alloc__slow, alloc__sample and
// the alloc__batch record, whichever a tracer attached.  Returns the
// sample's id when its object is to be tracked for sample__fates (0: not),
// with the table's level at admission in *level.
uint64_t jvmtrace_slow_path_end_probed(JavaThread* thread, const Klass* klass, size_t word_size, HeapWord* mem,
                                       bool outside_tlab, size_t tlab_words, uint64_t retired_waste_bytes,
                                       const JvmtraceSlowPathStart& start, uint32_t* level);
inline uint64_t jvmtrace_slow_path_end(JavaThread* thread, const Klass* klass, size_t word_size, HeapWord* mem,
                                       bool outside_tlab, size_t tlab_words, uint64_t retired_waste_bytes,
                                       const JvmtraceSlowPathStart& start, uint32_t* level) {
  if (!jvmtrace_slow_path_probed()) {
    return 0;
  }
  return jvmtrace_slow_path_end_probed(thread, klass, word_size, mem, outside_tlab, tlab_words,
                                       retired_waste_bytes, start, level);
}

// MemAllocator::Allocation::notify_allocation(), first: the object of an
// admitted sample (sample_id != 0), initialized now, gets its weak handle.
void jvmtrace_sample_track_admitted(JavaThread* thread, oop obj, uint64_t sample_id, uint32_t level);
inline void jvmtrace_sample_track(JavaThread* thread, oop obj, uint64_t sample_id, uint32_t level) {
  if (sample_id != 0) {
    jvmtrace_sample_track_admitted(thread, obj, sample_id, level);
  }
}

#endif // SHARE_UTILITIES_JVMTRACESLOWPATH_INLINE_HPP
