// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace record`: every jvmtrace probe hit, its arguments as numbers
 * (strings as addresses), into a ring buffer.  A hit that finds the buffer
 * full is counted in `dropped`, never lost silently.  Argument positions:
 * usdt/jvmtrace.d; the record layout: jvmtrace_events.h. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "jvmtrace_events.h"

char LICENSE[] SEC("license") = "GPL";

/* Sized by user space before load (--buffer-mb). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* Wake the reader only once this much is waiting: a wakeup per event would
 * cost more than the event.  The reader also polls on a short timer, so a
 * trickle of events is never stranded.  Set before load. */
const volatile __u64 wakeup_bytes = 1 << 20;

__u64 dropped = 0;

/* Threads and names already sent.  User space names a thread (from
 * /proc) or a class or GC name (from the JVM's memory) when it first sees it, which
 * must happen while both still exist: an event with a key not seen before
 * wakes the reader at once instead of waiting for wakeup_bytes.  An LRU map
 * forgets old keys, which only costs an early wakeup. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} seen SEC(".maps");

#define SEEN_THREAD (1ull << 63) /* thread keys; class keys are user addresses */

static __always_inline bool fresh(__u64 key)
{
	static const __u8 one = 1;

	if (bpf_map_lookup_elem(&seen, &key))
		return false;
	bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
	return true;
}

/* name_arg1/2: arguments holding the address of a name (a class's, a GC's,
 * a cause's), or -1. */
static __always_inline int emit(struct pt_regs *ctx, __u16 probe, const int nargs, const int name_arg1,
				const int name_arg2)
{
	bool wake;
	struct jt_event *e = bpf_ringbuf_reserve(&events, JT_EVENT_SIZE(nargs), 0);
	long v;

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->probe = probe;
	e->nargs = nargs;
	for (int i = 0; i < nargs; i++) {
		v = 0;
		bpf_usdt_arg(ctx, i, &v);
		e->args[i] = v;
	}
	/* Wake for what user space must name now.  A wakeup costs more than the
	 * event (an irq_work per submit: a fixture firing GC events at a
	 * quarter of its rate ran 4x slower when every GC event woke). */
	wake = fresh(SEEN_THREAD | e->tid);
	if (name_arg1 >= 0 && fresh(e->args[name_arg1 & 7]))
		wake = true;
	if (name_arg2 >= 0 && fresh(e->args[name_arg2 & 7]))
		wake = true;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		wake = true;
	bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

/* The count is each probe's arguments minus the trailing tid; then where
 * name addresses are. */
SEC("usdt") int tlab__refill(struct pt_regs *ctx) { return emit(ctx, JT_TLAB_REFILL, 6, 3, -1); }
SEC("usdt") int alloc__slow__enter(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_ENTER, 3, 1, -1); }
SEC("usdt") int alloc__slow__exit(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_EXIT, 4, -1, -1); }
SEC("usdt") int gc__start(struct pt_regs *ctx) { return emit(ctx, JT_GC_START, 6, 1, 2); }
SEC("usdt") int gc__end(struct pt_regs *ctx) { return emit(ctx, JT_GC_END, 6, 1, 2); }
SEC("usdt") int plab__alloc(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_ALLOC, 4, -1, -1); }
SEC("usdt") int plab__retire(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_RETIRE, 6, -1, -1); }
SEC("usdt") int promote__direct(struct pt_regs *ctx) { return emit(ctx, JT_PROMOTE_DIRECT, 4, -1, -1); }
