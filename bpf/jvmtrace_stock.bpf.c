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
#include "event_stream.bpf.h"
#include "stack_capture.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 klass_name_off = 0;   /* Klass::_name */
const volatile __u64 symbol_length_off = 0; /* Symbol::_length (u16) */
const volatile __u64 symbol_body_off = 0;   /* Symbol::_body */

static __always_inline void class_name(__u64 klass, __u64 *body, __u64 *len)
{
	hotspot_class_name(klass, klass_name_off, symbol_length_off, symbol_body_off, body, len);
}

SEC("uprobe")
int BPF_KPROBE(send_allocation_in_new_tlab, __u64 klass, __u64 obj, __u64 tlab_bytes, __u64 alloc_bytes)
{
	struct jt_event *e = event_reserve_stacked(ctx, JT_TLAB_REFILL, 6);

	if (!e)
		return 0;
	/* The object that needed the TLAB is its first: obj is the TLAB's start. */
	e->args[0] = obj;
	e->args[1] = tlab_bytes;
	e->args[2] = alloc_bytes;
	class_name(klass, &e->args[3], &e->args[4]);
	e->args[5] = 0; /* retired waste: not known here */
	event_submit(e, fresh(e->args[3]));
	return 0;
}

/* An outside-TLAB allocation becomes an enter/exit pair at one instant: the
 * same records a patched VM gives, without the slow path's latency. */
SEC("uprobe")
int BPF_KPROBE(send_allocation_outside_tlab, __u64 klass, __u64 obj, __u64 alloc_bytes)
{
	struct jt_event *e = event_reserve_stacked(ctx, JT_ALLOC_SLOW_ENTER, 3);
	__u64 ts;

	if (!e)
		return 0;
	e->args[0] = alloc_bytes;
	class_name(klass, &e->args[1], &e->args[2]);
	ts = e->ts_ns;
	event_submit(e, fresh(e->args[1]));
	e = event_reserve(JT_ALLOC_SLOW_EXIT, 4);
	if (!e)
		return 0;
	e->ts_ns = ts;
	e->args[0] = obj;
	e->args[1] = alloc_bytes;
	e->args[2] = JVMTRACE_SLOW_OUTSIDE_TLAB; /* whether a GC came first is not known */
	e->args[3] = 0;
	event_submit(e, false);
	return 0;
}

/* gc__start/end as (tracer, vtable, cause): the tracer object (HotSpot
 * reuses one per collector, so user space pairs start and end by it and
 * numbers the collections), its vtable address (user space names the class:
 * G1NewTracer -> G1New) and GCCause's number (start only). */
static __always_inline int gc_event(__u16 probe, __u64 tracer, __u64 cause)
{
	struct jt_event *e = event_reserve(probe, 3);
	__u64 vptr = 0;

	if (!e)
		return 0;
	bpf_probe_read_user(&vptr, sizeof(vptr), (void *)tracer);
	e->args[0] = tracer;
	e->args[1] = vptr;
	e->args[2] = cause;
	event_submit(e, false); /* names come from libjvm's symbols, not the process: no hurry */
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
