// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace stat` on a stock HotSpot: uprobes on the functions JFR reports
 * through (the same as bpf/jvmtrace_stock.bpf.c) feed the in-kernel
 * aggregation of stat_core.bpf.h.  No slow-path latency, TLAB waste or PLAB
 * figures: stock HotSpot does not show them (docs/stock-mode.md). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hotspot.bpf.h"
#include "stat_core.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 klass_name_off = 0;
const volatile __u64 symbol_length_off = 0;
const volatile __u64 symbol_body_off = 0;

/* A GC tracer object's vtable pointer -> the collection kind (enum
 * jvmtrace_gc_kind), filled by user space from libjvm's vtable symbols. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u32);
} tracer_kinds SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(send_allocation_in_new_tlab, __u64 klass, __u64 obj, __u64 tlab_bytes)
{
	__u64 body, len;

	hotspot_class_name(klass, klass_name_off, symbol_length_off, symbol_body_off, &body, &len);
	stat_tlab_refill(current_tid(), tlab_bytes, 0, body, len);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(send_allocation_outside_tlab, __u64 klass, __u64 obj, __u64 alloc_bytes)
{
	__u64 body, len;

	hotspot_class_name(klass, klass_name_off, symbol_length_off, symbol_body_off, &body, &len);
	stat_outside(current_tid(), alloc_bytes, body, len);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(report_gc_start, __u64 tracer)
{
	stat_gc_start(tracer);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(report_gc_end, __u64 tracer)
{
	__u64 vptr = 0;
	__u32 *kind;

	bpf_probe_read_user(&vptr, sizeof(vptr), (void *)tracer);
	kind = bpf_map_lookup_elem(&tracer_kinds, &vptr);
	stat_gc_end(tracer, kind ? *kind : JVMTRACE_GC_CONCURRENT);
	return 0;
}
