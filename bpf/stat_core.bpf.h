/* `jvmtrace stat`'s in-kernel aggregation, whatever the events come from:
 * the maps and one function per event.  bpf/jvmtrace_stat.bpf.c calls them
 * from the jvmtrace USDT probes, bpf/jvmtrace_stat_stock.bpf.c from uprobes
 * on a stock HotSpot; user space reads the same maps either way. */
#ifndef JVMTRACE_STAT_CORE_BPF_H
#define JVMTRACE_STAT_CORE_BPF_H

#include "bits.bpf.h"
#include "maps.bpf.h"
#include "jvmtrace_stat.h"
#include "jvmtrace_abi.h"

#define MAX_THREADS 16384
#define MAX_CLASSES 16384
#define MAX_INFLIGHT 16384

/* hists, counters and classes are per-CPU: every probe hit adds to them, and
 * shared values would bounce one cache line between all the CPUs allocating.
 * User space sums the CPUs' copies.  The adds stay atomic: a uprobe program
 * runs with migration disabled but may be preempted, so two threads on one
 * CPU can interleave on the same copy.  threads stays a shared hash: an entry
 * has one writer (its thread), whose line moves only when it migrates. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JT_HIST_COUNT);
	__type(key, __u32);
	__type(value, struct jt_hist_val);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JT_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Not preallocated either (issue 24): preallocated, threads and
 * slow_inflight took 3.2 MB of kernel memory per traced JVM whether used or
 * not (two thirds of a stat worker's maps); a JVM has tens of threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct jt_thread_val);
} threads SEC(".maps");

/* Not preallocated: preallocated per-CPU entries would take
 * MAX_CLASSES x CPUs x 40 bytes (84 MB with 128 CPUs) whether used or not. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_CLASSES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct jt_class_val);
} classes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} new_keys SEC(".maps");

/* A thread inside the allocation slow path: a thread is in at most one. */
struct slow_start {
	__u64 ts;
	__u64 class_key;
	__u32 name_len;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_INFLIGHT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct slow_start);
} slow_inflight SEC(".maps");

/* A collection between gc__start and gc__end, by GC id (patched VM) or
 * tracer object (stock). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} gc_inflight SEC(".maps");

static __always_inline void count(__u32 c, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void hist(__u32 h, __u64 value)
{
	struct jt_hist_val *hv = bpf_map_lookup_elem(&hists, &h);
	__u64 slot = log2_u64(value);

	if (!hv)
		return;
	if (slot >= JT_HIST_SLOTS)
		slot = JT_HIST_SLOTS - 1;
	__sync_fetch_and_add(&hv->slots[slot], 1);
	__sync_fetch_and_add(&hv->sum, value);
}

/* Tell user space about a key it has not seen, so it can name it now. */
static __always_inline void announce(__u64 key, __u32 kind, __u32 name_len)
{
	struct jt_new_key k = { .key = key, .kind = kind, .name_len = name_len };
	if (kind == JT_KEY_THREAD && key == (__u32)bpf_get_current_pid_tgid())
		bpf_get_current_comm(k.comm, sizeof(k.comm));
	if (bpf_ringbuf_output(&new_keys, &k, sizeof(k), 0))
		count(JT_C_NAMES_LOST, 1);
}

/* The firing thread's tid (a batch's records name their own threads). */
static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline struct jt_thread_val *thread_val(__u32 tid)
{
	static const struct jt_thread_val zero;
	bool created;
	struct jt_thread_val *t = map_lookup_or_try_init(&threads, &tid, &zero, &created);
	if (!t)
		count(JT_C_MAP_FULL, 1);
	else if (created)
		announce(tid, JT_KEY_THREAD, 0);
	return t;
}

/* This CPU's copy of the class's entry.  The CPU that creates the entry
 * (BPF_NOEXIST) sets name_len in its copy and the kernel zeroes the other
 * CPUs' copies: user space takes the largest name_len, and the new-key
 * notice carries it too. */
static __always_inline struct jt_class_val *class_val(__u64 key, __u32 name_len)
{
	struct jt_class_val init = { .name_len = name_len };
	bool created;
	struct jt_class_val *c = map_lookup_or_try_init(&classes, &key, &init, &created);
	if (!c)
		count(JT_C_MAP_FULL, 1);
	else if (created)
		announce(key, JT_KEY_CLASS, name_len);
	return c;
}

static __always_inline void stat_tlab_refill(__u32 tid, __u64 bytes, __u64 waste, __u64 class_key, __u32 name_len)
{
	struct jt_thread_val *t;
	struct jt_class_val *c;

	count(JT_C_TLAB_REFILLS, 1);
	count(JT_C_TLAB_BYTES, bytes);
	count(JT_C_TLAB_WASTE_BYTES, waste);
	hist(JT_H_TLAB_BYTES, bytes);
	if ((t = thread_val(tid))) {
		__sync_fetch_and_add(&t->tlab_refills, 1);
		__sync_fetch_and_add(&t->tlab_bytes, bytes);
	}
	if ((c = class_val(class_key, name_len))) {
		__sync_fetch_and_add(&c->tlab_refills, 1);
		__sync_fetch_and_add(&c->tlab_bytes, bytes);
	}
}

/* An object allocated outside any TLAB, of a known class (class_key 0: unknown). */
static __always_inline void stat_outside(__u32 tid, __u64 bytes, __u64 class_key, __u32 name_len)
{
	struct jt_thread_val *t;
	struct jt_class_val *c;

	count(JT_C_OUTSIDE_ALLOCS, 1);
	count(JT_C_OUTSIDE_BYTES, bytes);
	hist(JT_H_OUTSIDE_BYTES, bytes);
	if ((t = thread_val(tid))) {
		__sync_fetch_and_add(&t->outside_allocs, 1);
		__sync_fetch_and_add(&t->outside_bytes, bytes);
	}
	if (class_key && (c = class_val(class_key, name_len))) {
		__sync_fetch_and_add(&c->outside_allocs, 1);
		__sync_fetch_and_add(&c->outside_bytes, bytes);
	}
}

static __always_inline void stat_gc_start(__u64 key)
{
	__u64 ts = bpf_ktime_get_ns();

	count(JT_C_GC_STARTS, 1);
	if (bpf_map_update_elem(&gc_inflight, &key, &ts, BPF_ANY))
		count(JT_C_GC_INFLIGHT_FULL, 1);
}

/* kind: enum jvmtrace_gc_kind (gc__end's argument). */
static __always_inline void stat_gc_end(__u64 key, __u32 kind)
{
	__u64 *start = bpf_map_lookup_elem(&gc_inflight, &key);

	count(JT_C_GC_ENDS, 1);
	if (!start) { /* started before the attach, or not remembered: no pause to measure */
		count(JT_C_GC_END_UNPAIRED, 1);
		return;
	}
	hist(kind == JVMTRACE_GC_YOUNG ? JT_H_GC_YOUNG_US : kind == JVMTRACE_GC_FULL ? JT_H_GC_FULL_US : JT_H_CONCURRENT_US,
	     (bpf_ktime_get_ns() - *start) / 1000);
	bpf_map_delete_elem(&gc_inflight, &key);
}

/* Stop-the-world pauses (gc__pause__start/end), remembered in gc_inflight
 * under keys of their own: several share a GC id (a G1 cycle's Remark and
 * Cleanup), never an id and a kind. */
#define PAUSE_KEY(gc_id, kind) ((1ull << 62) | ((__u64)(gc_id) << 2) | ((kind) & 3))

static __always_inline void stat_pause_start(__u32 gc_id, __u32 kind)
{
	__u64 key = PAUSE_KEY(gc_id, kind), ts = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&gc_inflight, &key, &ts, BPF_ANY))
		count(JT_C_GC_INFLIGHT_FULL, 1);
}

/* kind: enum jvmtrace_pause_kind. */
static __always_inline void stat_pause_end(__u32 gc_id, __u32 kind)
{
	__u64 key = PAUSE_KEY(gc_id, kind);
	__u64 *start = bpf_map_lookup_elem(&gc_inflight, &key);

	count(JT_C_PAUSES, 1);
	if (!start || kind >= JVMTRACE_PAUSE_KIND_COUNT) {
		count(JT_C_PAUSE_END_UNPAIRED, 1);
		return;
	}
	hist(kind == JVMTRACE_PAUSE_YOUNG ? JT_H_PAUSE_YOUNG_US : kind == JVMTRACE_PAUSE_FULL ? JT_H_PAUSE_FULL_US :
	     kind == JVMTRACE_PAUSE_REMARK ? JT_H_PAUSE_REMARK_US : kind == JVMTRACE_PAUSE_CLEANUP ? JT_H_PAUSE_CLEANUP_US :
	     kind == JVMTRACE_PAUSE_DEGENERATED ? JT_H_PAUSE_DEGENERATED_US : JT_H_PAUSE_CONCURRENT_US,
	     (bpf_ktime_get_ns() - *start) / 1000);
	bpf_map_delete_elem(&gc_inflight, &key);
}

#endif /* JVMTRACE_STAT_CORE_BPF_H */
