/*
 * A spin lock around a few loads and stores of jvmtrace's own tables (the
 * table of tracked samples, the spare alloc__batch buffers): its holders
 * never block, allocate or reach a safepoint poll while holding it, so a
 * safepoint waits them out like any other _thread_in_vm stretch.
 */
#ifndef SHARE_UTILITIES_JVMTRACESPINLOCKER_HPP
#define SHARE_UTILITIES_JVMTRACESPINLOCKER_HPP

#include "memory/allocation.hpp"
#include "runtime/atomic.hpp"
#include "utilities/spinYield.hpp"

class JvmtraceSpinLocker : public StackObj {
  volatile int* const _lock;
 public:
  explicit JvmtraceSpinLocker(volatile int* lock) : _lock(lock) {
    SpinYield spin;
    while (Atomic::cmpxchg(_lock, 0, 1) != 0) {
      spin.wait();
    }
  }
  ~JvmtraceSpinLocker() { Atomic::release_store(_lock, 0); }
  JvmtraceSpinLocker(const JvmtraceSpinLocker&) = delete;
  JvmtraceSpinLocker& operator=(const JvmtraceSpinLocker&) = delete;
};

#endif // SHARE_UTILITIES_JVMTRACESPINLOCKER_HPP
