/*
 * jvmtrace USDT probes (provider "jvmtrace").  The contract -- names,
 * argument types, when each fires -- is jvmtrace.d beside hotspot.d; the
 * jvmtrace project's docs/probes.md describes it for users.
 *
 * Include this header last in a .cpp (or .inline.hpp) that fires a probe.
 */
#ifndef SHARE_UTILITIES_JVMTRACEPROBES_HPP
#define SHARE_UTILITIES_JVMTRACEPROBES_HPP

#if !defined(DTRACE_ENABLED) || !defined(LINUX)
#error "the jvmtrace probes need a Linux build configured with --enable-dtrace"
#endif

#include "gc/shared/gcName.hpp"
#include "runtime/osThread.hpp"
#include "utilities/jvmtraceRelease.hpp"
#if JVMTRACE_JDK >= 21
#include "runtime/javaThread.hpp"
#else
#include "runtime/thread.hpp"
#endif
// HotSpot's own probes come first: dtrace.hpp includes <sys/sdt.h> before
// the headers dtrace -h generated, so sdt.h is set up without semaphores.
#include "utilities/dtrace.hpp"
#include "dtracefiles/jvmtrace.h"

// sdt.h fixed at its first inclusion that probe notes carry no semaphore
// address.  HotSpot's probes define no semaphore variables, ours do: choose
// per provider, so jvmtrace probes record theirs and HotSpot's stay at 0.
#undef _SDT_SEMAPHORE
#define _SDT_SEMAPHORE(p, n) _JVMTRACE_SDT_SEMAPHORE_##p(p, n)
#define _JVMTRACE_SDT_SEMAPHORE_jvmtrace(p, n) _SDT_ASM_1(_SDT_ASM_ADDR p##_##n##_semaphore)
#define _JVMTRACE_SDT_SEMAPHORE_hotspot(p, n) _SDT_ASM_1(_SDT_ASM_ADDR 0)
#define _JVMTRACE_SDT_SEMAPHORE_hotspot_jni(p, n) _SDT_ASM_1(_SDT_ASM_ADDR 0)
#define _JVMTRACE_SDT_SEMAPHORE_hs_private(p, n) _SDT_ASM_1(_SDT_ASM_ADDR 0)

// A 5-byte nop (0f 1f 44 00 00) instead of sdt.h's 1-byte one: Linux (6.x)
// can replace a 5-byte nop with a call into a uprobe trampoline instead of
// an int3 trap, about 4x cheaper per hit.  {disp8} keeps gas from dropping
// the zero displacement (which would give the 4-byte 0f 1f 04 00).
// This applies to every probe expanded after this header in the same file.
// x86-64 only: elsewhere sdt.h's own nop.
#if defined(__x86_64__)
#undef _SDT_NOP
#define _SDT_NOP %{disp8%} nopl 0(%%rax,%%rax,1)
#endif

// The contract's values and record layouts (usdt/jvmtrace_abi.h in the
// jvmtrace project, installed here by its build script): one declaration
// for the VM, the BPF programs and user space; HotSpot-style names for
// the types the VM code uses.
#include "utilities/jvmtraceAbi.h"
// plab__batch (see jvmtrace.d): a GC thread's PLAB events, kept while the
// probe is attached and reported in batches, one probe hit per batch.
typedef enum jvmtrace_plab_record_kind JvmtracePlabRecordKind;
typedef struct jvmtrace_plab_record JvmtracePlabRecord;
// alloc__batch (see jvmtrace.d): a mutator thread's slow paths, one record
// each, kept while the probe is attached and reported in batches.
typedef struct jvmtrace_alloc_record JvmtraceAllocRecord;

// Appends r to the calling JavaThread's batch, in _thread_in_vm (out of
// line: jvmtraceProbes.cpp).  Only while alloc__batch is attached.
void jvmtrace_alloc_append(const JvmtraceAllocRecord& r);

// Appends a record to this thread's batch (out of line: jvmtraceProbes.cpp).
void jvmtrace_plab_append(JvmtracePlabRecordKind kind, uint64_t address, uint64_t bytes,
                          uint64_t used_bytes, uint32_t dest);
inline void jvmtrace_plab_event(JvmtracePlabRecordKind kind, uint64_t address, uint64_t bytes,
                                uint64_t used_bytes, uint32_t dest) {
  if (JVMTRACE_PLAB_BATCH_ENABLED()) {
    jvmtrace_plab_append(kind, address, bytes, used_bytes, dest);
  }
}

// The whole heap's used bytes, safe to read from any thread a probe fires
// on (jvmtraceProbes.cpp).
size_t jvmtrace_heap_used();

// alloc__sample (jvmtraceStack.cpp): a successful slow path of jt, while
// the probe is attached.  bytes: what it handed out (the new TLAB's size,
// or the object's outside TLABs); r: its alloc__batch record (complete
// whether or not alloc__batch is attached).  Samples by bytes (a random
// interval per thread, of a mean the VM sets for JvmtraceSampleRate samples
// a second) and fires the probe with the thread's own Java stack, before
// the record is appended to the thread's batch.  Returns the sample's id if
// its object is to be tracked for sample__fates (0: not), its admission
// level in *level.
typedef struct jvmtrace_frame JvmtraceFrame;
uint64_t jvmtrace_alloc_sample(JavaThread* jt, uint64_t bytes, const JvmtraceAllocRecord& r, uint32_t* level);
// 64 random bits from the calling thread's generator (jvmtraceStack.cpp).
uint64_t jvmtrace_random();

// sample__fates (jvmtraceLive.cpp): a sample to be taken; whether its
// object is to be tracked (a coin at the table's level, random_bits' low
// bits): its new id, or 0.
uint64_t jvmtrace_live_admit(uint64_t random_bits, uint32_t* level);

// alloc__drain (jvmtraceProbes.cpp): whether a tracer waits for it, and the
// safepoint the ServiceThread then asks for.
bool jvmtrace_alloc_drain_waiting();
void jvmtrace_force_safepoint();

// The kernel tid of t, cached by HotSpot at thread start (no syscall).
inline int32_t jvmtrace_tid(const Thread* t) {
  const OSThread* os = t->osthread();
  return os != nullptr ? (int32_t)os->thread_id() : 0;
}

#define JVMTRACE_GC_NAME_CASE(n) case n:
inline uint32_t jvmtrace_gc_kind_of(GCName name) {
  switch (name) {
    JVMTRACE_YOUNG_COLLECTORS(JVMTRACE_GC_NAME_CASE) return JVMTRACE_GC_YOUNG;
    JVMTRACE_FULL_COLLECTORS(JVMTRACE_GC_NAME_CASE)  return JVMTRACE_GC_FULL;
    default:                                         return JVMTRACE_GC_CONCURRENT;
  }
}
#undef JVMTRACE_GC_NAME_CASE

#endif // SHARE_UTILITIES_JVMTRACEPROBES_HPP
