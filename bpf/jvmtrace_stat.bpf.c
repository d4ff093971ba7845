// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace stat`: aggregate the jvmtrace probes in the kernel -- log2
 * histograms, counters, per-thread and per-class totals.  Nothing per event
 * leaves the kernel.  Argument positions: usdt/jvmtrace.d. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "bits.bpf.h"
#include "maps.bpf.h"
#include "jvmtrace_stat.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_THREADS 16384
#define MAX_CLASSES 16384
#define MAX_INFLIGHT 16384

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JT_HIST_COUNT);
	__type(key, __u32);
	__type(value, struct jt_hist_val);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JT_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct jt_thread_val);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CLASSES);
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
	__type(key, __u32);
	__type(value, struct slow_start);
} slow_inflight SEC(".maps");

/* A collection between gc__start and gc__end, by GC id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
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
}

static __always_inline long arg(struct pt_regs *ctx, int i)
{
	long v = 0;
	bpf_usdt_arg(ctx, i, &v);
	return v;
}

/* Tell user space about a key it has not seen, so it can name it now. */
static __always_inline void announce(__u64 key, __u32 kind, __u32 name_len)
{
	struct jt_new_key k = { .key = key, .kind = kind, .name_len = name_len };
	if (bpf_ringbuf_output(&new_keys, &k, sizeof(k), 0))
		count(JT_C_NAMES_LOST, 1);
}

static __always_inline struct jt_thread_val *thread_val(void)
{
	static const struct jt_thread_val zero;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bool created;
	struct jt_thread_val *t = map_lookup_or_try_init(&threads, &tid, &zero, &created);
	if (!t)
		count(JT_C_MAP_FULL, 1);
	else if (created)
		announce(tid, JT_KEY_THREAD, 0);
	return t;
}

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

/* tlab__refill(tlab_start, tlab_bytes, alloc_bytes, class_name, class_name_len, retired_waste_bytes, tid) */
SEC("usdt")
int tlab__refill(struct pt_regs *ctx)
{
	__u64 bytes = arg(ctx, 1);
	struct jt_thread_val *t;
	struct jt_class_val *c;

	count(JT_C_TLAB_REFILLS, 1);
	count(JT_C_TLAB_BYTES, bytes);
	count(JT_C_TLAB_WASTE_BYTES, arg(ctx, 5));
	hist(JT_H_TLAB_BYTES, bytes);
	if ((t = thread_val())) {
		__sync_fetch_and_add(&t->tlab_refills, 1);
		__sync_fetch_and_add(&t->tlab_bytes, bytes);
	}
	if ((c = class_val(arg(ctx, 3), arg(ctx, 4)))) {
		__sync_fetch_and_add(&c->tlab_refills, 1);
		__sync_fetch_and_add(&c->tlab_bytes, bytes);
	}
	return 0;
}

/* alloc__slow__enter(alloc_bytes, class_name, class_name_len, tid) */
SEC("usdt")
int alloc__slow__enter(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct slow_start s = {
		.ts = bpf_ktime_get_ns(),
		.class_key = arg(ctx, 1),
		.name_len = arg(ctx, 2),
	};

	if (bpf_map_update_elem(&slow_inflight, &tid, &s, BPF_ANY))
		count(JT_C_MAP_FULL, 1);
	return 0;
}

/* alloc__slow__exit(address, alloc_bytes, outcome, gcs, tid) */
SEC("usdt")
int alloc__slow__exit(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct slow_start *s = bpf_map_lookup_elem(&slow_inflight, &tid);
	__u64 bytes = arg(ctx, 1);
	__u32 outcome = arg(ctx, 2);
	struct jt_thread_val *t;
	struct jt_class_val *c;

	count(JT_C_SLOW_PATHS, 1);
	if (outcome == 0)
		count(JT_C_SLOW_FAILED, 1);
	if (outcome == 3 || outcome == 4)
		count(JT_C_SLOW_AFTER_GC, 1);
	if (outcome == 2 || outcome == 4) {
		count(JT_C_OUTSIDE_ALLOCS, 1);
		count(JT_C_OUTSIDE_BYTES, bytes);
		hist(JT_H_OUTSIDE_BYTES, bytes);
		if ((t = thread_val())) {
			__sync_fetch_and_add(&t->outside_allocs, 1);
			__sync_fetch_and_add(&t->outside_bytes, bytes);
		}
		if (s && (c = class_val(s->class_key, s->name_len))) {
			__sync_fetch_and_add(&c->outside_allocs, 1);
			__sync_fetch_and_add(&c->outside_bytes, bytes);
		}
	}
	/* Without its enter (attached mid-slow-path) there is no latency. */
	if (s) {
		hist(JT_H_SLOW_US, (bpf_ktime_get_ns() - s->ts) / 1000);
		bpf_map_delete_elem(&slow_inflight, &tid);
	}
	return 0;
}

/* gc__start(gc_id, name, cause, kind, heap_used, heap_committed) */
SEC("usdt")
int gc__start(struct pt_regs *ctx)
{
	__u32 id = arg(ctx, 0);
	__u64 ts = bpf_ktime_get_ns();

	count(JT_C_GC_STARTS, 1);
	bpf_map_update_elem(&gc_inflight, &id, &ts, BPF_ANY);
	return 0;
}

SEC("usdt")
int gc__end(struct pt_regs *ctx)
{
	__u32 id = arg(ctx, 0), kind = arg(ctx, 3);
	__u64 *start = bpf_map_lookup_elem(&gc_inflight, &id);

	count(JT_C_GC_ENDS, 1);
	if (!start)
		return 0;
	hist(kind == 0 ? JT_H_PAUSE_YOUNG_US : kind == 1 ? JT_H_PAUSE_FULL_US : JT_H_CONCURRENT_US,
	     (bpf_ktime_get_ns() - *start) / 1000);
	bpf_map_delete_elem(&gc_inflight, &id);
	return 0;
}

/* plab__alloc(gc_id, plab_start, plab_bytes, dest, tid) */
SEC("usdt")
int plab__alloc(struct pt_regs *ctx)
{
	__u64 bytes = arg(ctx, 2);

	count(JT_C_PLABS, 1);
	count(JT_C_PLAB_BYTES, bytes);
	hist(JT_H_PLAB_BYTES, bytes);
	return 0;
}

/* plab__retire(gc_id, plab_start, plab_bytes, used_bytes, wasted_bytes, dest, tid) */
SEC("usdt")
int plab__retire(struct pt_regs *ctx)
{
	count(JT_C_PLAB_WASTE_BYTES, arg(ctx, 4));
	return 0;
}

/* promote__direct(gc_id, address, bytes, dest, tid) */
SEC("usdt")
int promote__direct(struct pt_regs *ctx)
{
	count(JT_C_PROMOTED_DIRECT, 1);
	count(JT_C_PROMOTED_DIRECT_BYTES, arg(ctx, 2));
	return 0;
}
