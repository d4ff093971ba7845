/* Kernel/user boundary of the event stream (`jvmtrace record`): one
 * fixed-width record per jvmtrace probe hit, sent through a BPF ring buffer.
 * Shared by bpf/jvmtrace_record.bpf.c and userspace/cli/record.cpp; the
 * probe numbering, also used by the raw stream and the trace file, follows
 * usdt/jvmtrace.d's order. */
#ifndef JVMTRACE_EVENTS_H
#define JVMTRACE_EVENTS_H

#ifndef __VMLINUX_H__ /* user space; BPF programs get these from vmlinux.h */
#include <linux/types.h>
#endif
/* The contract's values (slow-path outcome, GC, pause and PLAB kinds) and
 * the batch records' layouts: usdt/jvmtrace_abi.h, shared with the VM. */
#include "jvmtrace_abi.h"

enum jt_probe {
	JT_TLAB_REFILL = 0,
	JT_ALLOC_SLOW_ENTER,
	JT_ALLOC_SLOW_EXIT,
	JT_GC_START,
	JT_GC_END,
	JT_PLAB_ALLOC,
	JT_PLAB_RETIRE,
	JT_PROMOTE_DIRECT,
	JT_GC_PAUSE_START,
	JT_GC_PAUSE_END,
	JT_SAFEPOINT_BEGIN,
	JT_SAFEPOINT_END,
	JT_ALLOC_SAMPLE,
	JT_PROBE_COUNT,
	/* Kernel-only records of the probes that report several of the above
	 * at once (usdt/jvmtrace.d): user space turns each into the trace events
	 * of the probes it stands for, so these never reach a trace file. */
	JT_K_ALLOC_SLOW = 0x40,  /* alloc__slow: 10 arguments, stack id after */
	JT_K_PLAB_BATCH = 0x41,  /* plab__batch: 3 arguments, then the records */
	JT_K_ALLOC_BATCH = 0x42, /* alloc__batch: 3 arguments, then the records */
	JT_K_ALLOC_SAMPLE = 0x43, /* alloc__sample: JT_SAMPLE_ARGS arguments, then the
				   * VM's native frames, then the Java frames */
	JT_K_THREAD_NAME = 0x44,  /* the firing thread's name (comm, 16 bytes in args[0..1],
				   * NUL-padded), before its first record */
	JT_K_SAMPLE_FATES = 0x45, /* sample__fates: 6 arguments, then the records */
};

/* Arguments of a trace event (the trace format's probes): safepoint__end
 * has 8. */
#define JT_EVENT_MAX_ARGS 8
/* Arguments of a kernel record: alloc__slow has 10 besides its tid
 * (alloc__sample's record 12: JT_SAMPLE_ARGS). */
#define JT_KEVENT_MAX_ARGS 11

/* args[] holds the probe's arguments in contract order *without* the
 * trailing tid (the kernel's tid is in `tid`; HotSpot passes the same value).
 * String arguments travel as their addresses: user space reads each distinct
 * class name or GC name once from the JVM's memory, never per event. */
struct jt_event {
	__u64 ts_ns;                    /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tid;                      /* the firing thread's kernel tid */
	__u16 probe;                    /* enum jt_probe */
	__u16 nargs;                    /* valid entries of args[] */
	__u64 args[JT_KEVENT_MAX_ARGS + 1]; /* + a stack id, see JT_EVENT_HAS_STACK */
};

/* record --stacks: probe | JT_EVENT_HAS_STACK means args[nargs] holds the
 * user stack's id in the program's stack map (negative: none captured). */
#define JT_EVENT_HAS_STACK 0x8000
/* Frames kept per stack (the innermost ones). */
#define JT_STACK_DEPTH 64

/* gc__pause__start/end carry their name's text, not its address: HotSpot
 * builds G1's young pause title in a stack buffer, so the address names
 * nothing once the probe has returned.  JT_PAUSE_NAME_MAX bytes follow the
 * six arguments, NUL-terminated (cut if longer); args[1] is 0.  128: G1's
 * young title buffer (MaxYoungGCNameLength in 21 and 25), which from 21 on
 * holds the cause and an evacuation failure too ("Pause Young (Concurrent
 * Start) (G1 Evacuation Pause) (Evacuation Failure)", 75 bytes: 64 cut it). */
#define JT_PAUSE_NAME_MAX 128

/* Ring buffer bytes one event of n arguments takes (the kernel adds an
 * 8-byte header and rounds to 8). */
#define JT_EVENT_SIZE(n) (16 + 8 * (n))
#define JT_PAUSE_EVENT_SIZE (JT_EVENT_SIZE(6) + JT_PAUSE_NAME_MAX)

/* plab__batch: args[] = records' address, count, record_bytes; then the
 * records' bytes (struct jvmtrace_plab_record each), up to
 * JT_PLAB_BATCH_MAX_BYTES (a batch larger than that is cut, and the records
 * cut are counted as dropped).  A reader steps by record_bytes (fields are
 * only ever appended). */
#define JT_PLAB_BATCH_MAX_BYTES (16 << 10)
/* args[3] the safepoint that handed them over (0: fired in the pause, by an
 * older VM or where the VM had no buffer), args[4] 1 on that safepoint's
 * last plab__batch. */
#define JT_PLAB_BATCH_ARGS 5
#define JT_PLAB_BATCH_EVENT_SIZE (JT_EVENT_SIZE(JT_PLAB_BATCH_ARGS) + JT_PLAB_BATCH_MAX_BYTES)

/* alloc__batch: as plab__batch, with struct jvmtrace_alloc_record records,
 * and two arguments more: args[3] the safepoint that took them (0: their own
 * thread sent them), args[4] 1 on that safepoint's last batch; the VM sends
 * at most 128 a batch. */
#define JT_ALLOC_BATCH_ARGS 5
#define JT_ALLOC_BATCH_MAX_BYTES (16 << 10)
#define JT_ALLOC_BATCH_EVENT_SIZE (JT_EVENT_SIZE(JT_ALLOC_BATCH_ARGS) + JT_ALLOC_BATCH_MAX_BYTES)

/* sample__fates: args[] = records' address, count, record_bytes, gc_id,
 * level, tracked; then the records (struct jvmtrace_fate_record each), at
 * most 256. */
#define JT_FATES_ARGS 6
#define JT_FATES_BATCH_MAX_BYTES (JVMTRACE_FATE_BATCH_RECORDS * JVMTRACE_FATE_RECORD_BYTES)

/* alloc__sample: args[] = weight_bytes, class_name, class_name_len,
 * alloc_bytes, outcome, depth (Java frames that follow), frame_bytes,
 * end_ns, the metadata epoch read at the hit, native frames (count, and
 * JT_SAMPLE_NAMED), the epoch's address, the sample's id (0: not tracked);
 * then
 * that many native return addresses (u64, innermost first: the VM's own
 * code from the probe site outwards, cut by user space where it leaves
 * libjvm.so), then depth Java frames of frame_bytes each (struct
 * jvmtrace_frame, leaf first). */
#define JT_SAMPLE_ARGS 12
#define JT_SAMPLE_NATIVE_MAX 32
/* args[9]'s bit 32: the kernel found this sample's Java frames among the
 * stacks user space has named whole in this epoch (jt_named_stack), so it
 * did not wake the reader; the native count is args[9]'s low 32 bits. */
#define JT_SAMPLE_NAMED (1ull << 32)

/* A stack of Java frames user space has named whole in one metadata epoch:
 * the key of record's named_stacks map.  hash: jt_frames_hash over the
 * frames' Method*s, leaf first, from JT_FRAMES_HASH_SEED ^ depth.  A
 * collision costs a late read of a name (the reader is not woken), never a
 * wrong one: names are still checked against the epoch when read. */
struct jt_named_stack {
	__u64 epoch;
	__u64 hash;
};
#define JT_FRAMES_HASH_SEED 0x6a09e667f3bcc908ull
static inline __u64 jt_frames_hash(__u64 h, __u64 method)
{
	h = (h ^ method) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}
#define JT_SAMPLE_MAX_BYTES (JT_EVENT_SIZE(JT_SAMPLE_ARGS) + 8 * JT_SAMPLE_NATIVE_MAX + \
			     JVMTRACE_FRAME_BYTES * JVMTRACE_SAMPLE_MAX_FRAMES)

JVMTRACE_ABI_ASSERT(sizeof(struct jt_event) == 16 + 8 * (JT_KEVENT_MAX_ARGS + 1), "jt_event");
JVMTRACE_ABI_ASSERT(sizeof(struct jt_named_stack) == 16, "jt_named_stack");
JVMTRACE_ABI_ASSERT(JVMTRACE_ABI_OFFSET(jt_event, args) == 16, "jt_event: args");

#endif /* JVMTRACE_EVENTS_H */
