// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace record --mode stock`: the jvmtrace events an unpatched HotSpot
 * yields, from uprobes on libjvm.so's own functions, in the same `jt_event`
 * records as bpf/jvmtrace_record.bpf.c sends, so the trace file, dump and
 * report need nothing of their own.  What stock mode lacks, and why:
 * docs/stock-mode.md.
 *
 * Functions (HotSpot 17 and 25; resolved by C++ name in user space):
 *   AllocTracer::send_allocation_in_new_tlab(Klass*, HeapWord* obj, size_t tlab_bytes, size_t alloc_bytes, JavaThread*)
 *   AllocTracer::send_allocation_outside_tlab(Klass*, HeapWord* obj, size_t alloc_bytes, JavaThread*)
 *   GCTracer::report_gc_start(GCTracer* this, GCCause::Cause, const Ticks&)
 *   GCTracer::report_gc_end(GCTracer* this, const Ticks&, TimePartitions*)
 * Field offsets come from the JVM's own gHotSpotVMStructs, set before load. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hotspot.bpf.h"
#include "jvmtrace_events.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 klass_name_off = 0;   /* Klass::_name */
const volatile __u64 symbol_length_off = 0; /* Symbol::_length (u16) */
const volatile __u64 symbol_body_off = 0;   /* Symbol::_body */
const volatile __u64 wakeup_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

__u64 dropped = 0;

/* Keys already sent (threads, class names); as in jvmtrace_record.bpf.c. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} seen SEC(".maps");

#define SEEN_THREAD (1ull << 63)

static __always_inline bool fresh(__u64 key)
{
	static const __u8 one = 1;

	if (bpf_map_lookup_elem(&seen, &key))
		return false;
	bpf_map_update_elem(&seen, &key, &one, BPF_ANY);
	return true;
}

static __always_inline struct jt_event *reserve(__u16 probe, const int nargs)
{
	struct jt_event *e = bpf_ringbuf_reserve(&events, JT_EVENT_SIZE(nargs), 0);

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

static __always_inline void submit(struct jt_event *e, bool wake)
{
	if (fresh(SEEN_THREAD | e->tid) || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		wake = true;
	bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void class_name(__u64 klass, __u64 *body, __u64 *len)
{
	hotspot_class_name(klass, klass_name_off, symbol_length_off, symbol_body_off, body, len);
}

SEC("uprobe")
int BPF_KPROBE(send_allocation_in_new_tlab, __u64 klass, __u64 obj, __u64 tlab_bytes, __u64 alloc_bytes)
{
	struct jt_event *e = reserve(JT_TLAB_REFILL, 6);

	if (!e)
		return 0;
	/* The object that needed the TLAB is its first: obj is the TLAB's start. */
	e->args[0] = obj;
	e->args[1] = tlab_bytes;
	e->args[2] = alloc_bytes;
	class_name(klass, &e->args[3], &e->args[4]);
	e->args[5] = 0; /* retired waste: not known here */
	submit(e, fresh(e->args[3]));
	return 0;
}

/* An outside-TLAB allocation becomes an enter/exit pair at one instant: the
 * same records a patched VM gives, without the slow path's latency. */
SEC("uprobe")
int BPF_KPROBE(send_allocation_outside_tlab, __u64 klass, __u64 obj, __u64 alloc_bytes)
{
	struct jt_event *e = reserve(JT_ALLOC_SLOW_ENTER, 3);
	__u64 ts;

	if (!e)
		return 0;
	e->args[0] = alloc_bytes;
	class_name(klass, &e->args[1], &e->args[2]);
	ts = e->ts_ns;
	submit(e, fresh(e->args[1]));
	e = reserve(JT_ALLOC_SLOW_EXIT, 4);
	if (!e)
		return 0;
	e->ts_ns = ts;
	e->args[0] = obj;
	e->args[1] = alloc_bytes;
	e->args[2] = 2; /* outside TLAB (whether a GC came first is not known) */
	e->args[3] = 0;
	submit(e, false);
	return 0;
}

/* gc__start/end as (tracer, vtable, cause): the tracer object (HotSpot
 * reuses one per collector, so user space pairs start and end by it and
 * numbers the collections), its vtable address (user space names the class:
 * G1NewTracer -> G1New) and GCCause's number (start only). */
static __always_inline int gc_event(__u16 probe, __u64 tracer, __u64 cause)
{
	struct jt_event *e = reserve(probe, 3);
	__u64 vptr = 0;

	if (!e)
		return 0;
	bpf_probe_read_user(&vptr, sizeof(vptr), (void *)tracer);
	e->args[0] = tracer;
	e->args[1] = vptr;
	e->args[2] = cause;
	submit(e, false); /* names come from libjvm's symbols, not the process: no hurry */
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(report_gc_start, __u64 tracer, __u32 cause)
{
	return gc_event(JT_GC_START, tracer, cause);
}

SEC("uprobe")
int BPF_KPROBE(report_gc_end, __u64 tracer)
{
	return gc_event(JT_GC_END, tracer, 0);
}
