/* The kernel side of `jvmtrace record`'s event stream, shared by the USDT
 * (jvmtrace_record.bpf.c) and stock (jvmtrace_stock.bpf.c) programs: the
 * ring buffer, the drop counter, and when to wake the reader.  Record layout:
 * jvmtrace_events.h. */
#ifndef JVMTRACE_EVENT_STREAM_BPF_H
#define JVMTRACE_EVENT_STREAM_BPF_H

#include <bpf/bpf_helpers.h>
#include "jvmtrace_events.h"

/* Sized by user space before load (--buffer-mb). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* Wake the reader only once this much is waiting: a wakeup (an irq_work per
 * submit) costs more than the event.  The reader also polls on a short
 * timer, so a trickle of events is never stranded.  Set before load. */
const volatile __u64 wakeup_bytes = 1 << 20;

/* Events that found the ring buffer full: counted, never lost silently. */
__u64 dropped = 0;

/* Set by user space (mmapped .bss) just before it detaches: every program
 * stops at the same moment, so the trace does not end with some probes
 * still firing while others are gone (uprobes detach one at a time, over
 * milliseconds: an exit without its refill, a GC end without its start). */
__u32 stopped = 0;

/* Threads and names already sent.  A thread's name is read here, by the
 * thread itself, before its first record (name_thread_once); user space
 * reads a class or GC name (from the JVM's memory) when it first sees it,
 * which must happen while it still exists: an event with a name not seen
 * before wakes the reader at once.  An LRU map forgets old keys, which only
 * costs an early wakeup or a thread's name sent again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} seen SEC(".maps");

#define SEEN_THREAD (1ull << 63) /* thread keys; name keys are user addresses */

/* True the first time key is seen. */
static __always_inline bool fresh(__u64 key)
{
	static const __u8 one = 1;

	if (bpf_map_lookup_elem(&seen, &key))
		return false;
	bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
	return true;
}

/* The firing thread's name (its comm), the first time it fires: a record
 * ahead of the thread's first one, so user space has it before it needs it.
 * Read by the thread itself, so a thread that has exited by the time the
 * reader gets to its events still has its name; before, user space read
 * /proc at its first event, up to 50 ms later (more under load), and a
 * short-lived thread was "<exited>" for good (stat's decision 114, for
 * record).  A name that finds the ring buffer full is not an event lost:
 * user space falls back to /proc. */
static __always_inline void name_thread_once(void)
{
	__u64 rec[JT_EVENT_SIZE(2) / 8] = {};
	struct jt_event *e = (struct jt_event *)rec;
	__u64 id = bpf_get_current_pid_tgid();

	if (!fresh(SEEN_THREAD | (__u32)id))
		return;
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)id;
	e->probe = JT_K_THREAD_NAME;
	e->nargs = 2;
	bpf_get_current_comm(&rec[2], 16);
	bpf_ringbuf_output(&events, rec, sizeof rec, BPF_RB_NO_WAKEUP);
}

/* A record of size bytes for nargs arguments (and what follows them) with
 * its header filled, or NULL: the ring buffer is full (counted as dropped)
 * or the recording has stopped. */
static __always_inline struct jt_event *event_reserve_bytes(__u16 probe, const int nargs, const __u64 size)
{
	struct jt_event *e;

	if (stopped) /* the recording has ended: not a loss */
		return 0;
	name_thread_once();
	e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->probe = probe;
	e->nargs = nargs;
	return e;
}

/* A record for nargs arguments: see event_reserve_bytes. */
static __always_inline struct jt_event *event_reserve(__u16 probe, const int nargs)
{
	return event_reserve_bytes(probe, nargs, JT_EVENT_SIZE(nargs));
}

/* Sends e; wakes the reader if wake (a name it must read now), or once
 * wakeup_bytes are waiting. */
static __always_inline void event_submit(struct jt_event *e, bool wake)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		wake = true;
	bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

#endif /* JVMTRACE_EVENT_STREAM_BPF_H */
