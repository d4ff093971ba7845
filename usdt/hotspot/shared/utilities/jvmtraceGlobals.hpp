/*
 * jvmtrace's own VM flags, a list of their own beside TLAB_FLAGS (each line's
 * runtime/flags/allFlags.hpp appends JVMTRACE_FLAGS to ALL_FLAGS), so that
 * adding one recompiles the few files that include allFlags.hpp, not every
 * file the precompiled header's globals.hpp reaches.  Both are manageable:
 * a tracer sets them through the attach mechanism (jcmd VM.set_flag) for
 * the time it is attached, and puts back the value it found.
 */
#ifndef SHARE_UTILITIES_JVMTRACEGLOBALS_HPP
#define SHARE_UTILITIES_JVMTRACEGLOBALS_HPP

#include "runtime/globals_shared.hpp"
#include "utilities/jvmtraceRelease.hpp"  // JVMTRACE_JDK, written by the build

#define JVMTRACE_FLAG_LIST(product, range)                                   \
  product(uint, JvmtraceSampleRate, 250, MANAGEABLE,                         \
          "Allocation samples (jvmtrace alloc__sample) a second the VM "    \
          "aims at while a tracer is attached, about twice as many at most "\
          "in any second; 0 samples every allocation slow path")            \
          range(0, 100000)                                                  \
                                                                            \
  product(uint, JvmtraceLiveSamples, 65536, MANAGEABLE,                     \
          "Sampled objects jvmtrace tracks by weak handle at most while a " \
          "tracer is attached to sample__fates; read when tracking starts") \
          range(64, 1048576)

// ALL_FLAGS's parameters: 25 has no notproduct flags any more.
#if JVMTRACE_JDK >= 25
#define JVMTRACE_FLAGS(develop, develop_pd, product, product_pd, range, constraint) \
  JVMTRACE_FLAG_LIST(product, range)
#else
#define JVMTRACE_FLAGS(develop, develop_pd, product, product_pd, notproduct, range, constraint) \
  JVMTRACE_FLAG_LIST(product, range)
#endif

DECLARE_FLAGS(JVMTRACE_FLAGS)

#endif // SHARE_UTILITIES_JVMTRACEGLOBALS_HPP
