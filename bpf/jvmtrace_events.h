/* Kernel/user boundary of the event stream (`jvmtrace record`): one
 * fixed-width record per jvmtrace probe hit, sent through a BPF ring buffer.
 * Shared by bpf/jvmtrace_record.bpf.c and userspace/record_command.cpp; the
 * probe numbering, also used by the raw stream and the trace file, follows
 * usdt/jvmtrace.d's order. */
#ifndef JVMTRACE_EVENTS_H
#define JVMTRACE_EVENTS_H

#ifndef __VMLINUX_H__ /* user space; BPF programs get these from vmlinux.h */
#include <linux/types.h>
#endif

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
	JT_PROBE_COUNT,
};

#define JT_EVENT_MAX_ARGS 6

/* args[] holds the probe's arguments in contract order *without* the
 * trailing tid (the kernel's tid is in `tid`; HotSpot passes the same value).
 * String arguments travel as their addresses: user space reads each distinct
 * class name or GC name once from the JVM's memory, never per event. */
struct jt_event {
	__u64 ts_ns;                    /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tid;                      /* the firing thread's kernel tid */
	__u16 probe;                    /* enum jt_probe */
	__u16 nargs;                    /* valid entries of args[] */
	__u64 args[JT_EVENT_MAX_ARGS + 1]; /* + a stack id, see JT_EVENT_HAS_STACK */
};

/* record --stacks: probe | JT_EVENT_HAS_STACK means args[nargs] holds the
 * user stack's id in the program's stack map (negative: none captured). */
#define JT_EVENT_HAS_STACK 0x8000
/* Frames kept per stack (the innermost ones). */
#define JT_STACK_DEPTH 64

/* gc__pause__start/end carry their name's text, not its address: HotSpot
 * builds G1's young pause title in a stack buffer, so the address names
 * nothing once the probe has returned.  JT_PAUSE_NAME_MAX bytes follow the
 * six arguments, NUL-terminated (cut if longer); args[1] is 0. */
#define JT_PAUSE_NAME_MAX 64

/* Ring buffer bytes one event of n arguments takes (the kernel adds an
 * 8-byte header and rounds to 8). */
#define JT_EVENT_SIZE(n) (16 + 8 * (n))
#define JT_PAUSE_EVENT_SIZE (JT_EVENT_SIZE(6) + JT_PAUSE_NAME_MAX)

#endif /* JVMTRACE_EVENTS_H */
