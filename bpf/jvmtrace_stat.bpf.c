// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace stat` on a patched JVM: the jvmtrace USDT probes feed the
 * in-kernel aggregation of stat_core.bpf.h.  Nothing per event leaves the
 * kernel.  Argument positions: usdt/jvmtrace.d. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "stat_core.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline long arg(struct pt_regs *ctx, int i)
{
	long v = 0;
	bpf_usdt_arg(ctx, i, &v);
	return v;
}

/* tlab__refill(tlab_start, tlab_bytes, alloc_bytes, class_name, class_name_len, retired_waste_bytes, tid) */
SEC("usdt")
int tlab__refill(struct pt_regs *ctx)
{
	stat_tlab_refill(arg(ctx, 1), arg(ctx, 5), arg(ctx, 3), arg(ctx, 4));
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
	__u32 outcome = arg(ctx, 2);

	count(JT_C_SLOW_PATHS, 1);
	if (outcome == 0)
		count(JT_C_SLOW_FAILED, 1);
	if (outcome == 3 || outcome == 4)
		count(JT_C_SLOW_AFTER_GC, 1);
	if (outcome == 2 || outcome == 4)
		stat_outside(arg(ctx, 1), s ? s->class_key : 0, s ? s->name_len : 0);
	/* Without its enter (attached mid-slow-path, or the enter not
	 * remembered) there is no latency: counted. */
	if (s) {
		hist(JT_H_SLOW_US, (bpf_ktime_get_ns() - s->ts) / 1000);
		bpf_map_delete_elem(&slow_inflight, &tid);
	} else {
		count(JT_C_SLOW_EXIT_UNPAIRED, 1);
	}
	return 0;
}

/* gc__start(gc_id, name, cause, kind, heap_used, heap_committed) */
SEC("usdt")
int gc__start(struct pt_regs *ctx)
{
	stat_gc_start((__u32)arg(ctx, 0));
	return 0;
}

SEC("usdt")
int gc__end(struct pt_regs *ctx)
{
	stat_gc_end((__u32)arg(ctx, 0), arg(ctx, 3));
	return 0;
}

/* gc__pause__start/end(gc_id, name, cause, kind, heap_used, heap_committed) */
SEC("usdt")
int gc__pause__start(struct pt_regs *ctx)
{
	stat_pause_start((__u32)arg(ctx, 0), (__u32)arg(ctx, 3));
	return 0;
}

SEC("usdt")
int gc__pause__end(struct pt_regs *ctx)
{
	stat_pause_end((__u32)arg(ctx, 0), (__u32)arg(ctx, 3));
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
