// SPDX-License-Identifier: GPL-2.0
/* Every jvmtrace probe hit, with all its arguments, into a ring buffer.
 * Drops (ring buffer full) are counted in `dropped`, never silent. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "jvmtrace_raw.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

__u64 dropped = 0;

/* A string argument: NUL-terminated (len_arg < 0) or pointer + length. */
static __always_inline void read_str(struct pt_regs *ctx, char *dst, int ptr_arg, int len_arg)
{
	long ptr = 0, len = 0;

	if (bpf_usdt_arg(ctx, ptr_arg, &ptr) || !ptr)
		return;
	if (len_arg < 0) {
		bpf_probe_read_user_str(dst, JT_RAW_STR_MAX, (void *)ptr);
		return;
	}
	if (bpf_usdt_arg(ctx, len_arg, &len))
		return;
	if (len > JT_RAW_STR_MAX - 1)
		len = JT_RAW_STR_MAX - 1;
	if (len > 0)
		bpf_probe_read_user(dst, len & (JT_RAW_STR_MAX - 1), (void *)ptr);
}

static __always_inline int emit(struct pt_regs *ctx, __u32 probe, int s0, int s0_len, int s1)
{
	struct jt_raw_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->probe = probe;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	int n = bpf_usdt_arg_cnt(ctx);
	for (int i = 0; i < JT_RAW_MAX_ARGS; i++) {
		long v = 0;
		if (i < n && bpf_usdt_arg(ctx, i, &v) == 0)
			e->args[i] = v;
	}
	if (s0 >= 0)
		read_str(ctx, e->str[0], s0, s0_len);
	if (s1 >= 0)
		read_str(ctx, e->str[1], s1, -1);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Argument positions of strings per probe: see usdt/jvmtrace.d. */
SEC("usdt") int tlab__refill(struct pt_regs *ctx) { return emit(ctx, JT_TLAB_REFILL, 3, 4, -1); }
SEC("usdt") int alloc__slow__enter(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_ENTER, 1, 2, -1); }
SEC("usdt") int alloc__slow__exit(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_EXIT, -1, -1, -1); }
SEC("usdt") int gc__start(struct pt_regs *ctx) { return emit(ctx, JT_GC_START, 1, -1, 2); }
SEC("usdt") int gc__end(struct pt_regs *ctx) { return emit(ctx, JT_GC_END, 1, -1, 2); }
SEC("usdt") int plab__alloc(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_ALLOC, -1, -1, -1); }
SEC("usdt") int plab__retire(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_RETIRE, -1, -1, -1); }
SEC("usdt") int promote__direct(struct pt_regs *ctx) { return emit(ctx, JT_PROMOTE_DIRECT, -1, -1, -1); }
SEC("usdt") int gc__pause__start(struct pt_regs *ctx) { return emit(ctx, JT_GC_PAUSE_START, 1, -1, 2); }
SEC("usdt") int gc__pause__end(struct pt_regs *ctx) { return emit(ctx, JT_GC_PAUSE_END, 1, -1, 2); }
SEC("usdt") int alloc__slow(struct pt_regs *ctx) { return emit(ctx, JT_K_ALLOC_SLOW, 1, 2, -1); }
SEC("usdt") int safepoint__begin(struct pt_regs *ctx) { return emit(ctx, JT_SAFEPOINT_BEGIN, 0, -1, -1); }
SEC("usdt") int safepoint__end(struct pt_regs *ctx) { return emit(ctx, JT_SAFEPOINT_END, 0, -1, -1); }
/* (the frames are not shown: their address is args[6], valid during the hit only) */
SEC("usdt") int alloc__sample(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SAMPLE, 2, 3, 0); }

struct batch_walk {
	__u64 records;
	__u64 step;
	__u32 tid;
};

/* A zeroed event for one batch record, or NULL (the ring buffer is full:
 * counted in dropped). */
static __always_inline struct jt_raw_event *record_event(__u32 probe, __u32 tid)
{
	struct jt_raw_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->probe = probe;
	e->tid = tid;
	return e;
}

static long raw_plab_record(__u32 i, void *ctx)
{
	struct batch_walk *w = ctx;
	struct jvmtrace_plab_record r;
	struct jt_raw_event *e;

	if (bpf_probe_read_user(&r, sizeof(r), (void *)(w->records + (__u64)i * w->step)))
		return 1;
	if (!(e = record_event(JT_RAW_PLAB_RECORD, w->tid)))
		return 0;
	e->args[0] = r.ts_ns;
	e->args[1] = r.address;
	e->args[2] = r.bytes;
	e->args[3] = r.used_bytes;
	e->args[4] = r.gc_id;
	e->args[5] = r.tid;
	e->args[6] = r.kind;
	e->args[7] = r.dest;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A batch hit (records, count, record_bytes, tid): the batch's own line
 * (probe kind), then one line per record through walk. */
static __always_inline int raw_batch(struct pt_regs *ctx, __u32 kind, __u64 record_size,
				     long (*walk)(__u32 i, void *ctx))
{
	long records = 0, count = 0, step = 0;
	struct batch_walk w;

	emit(ctx, kind, -1, -1, -1);
	bpf_usdt_arg(ctx, 0, &records);
	bpf_usdt_arg(ctx, 1, &count);
	bpf_usdt_arg(ctx, 2, &step);
	if ((__u64)step < record_size || (__u64)count > 65536)
		return 0;
	w.records = records;
	w.step = step;
	w.tid = (__u32)bpf_get_current_pid_tgid();
	bpf_loop((__u32)count, walk, &w, 0);
	return 0;
}

SEC("usdt") int plab__batch(struct pt_regs *ctx)
{
	return raw_batch(ctx, JT_K_PLAB_BATCH, sizeof(struct jvmtrace_plab_record), raw_plab_record);
}

static long raw_alloc_record(__u32 i, void *ctx)
{
	struct batch_walk *w = ctx;
	struct jvmtrace_alloc_record r;
	struct jt_raw_event *e;
	__u32 len;

	if (bpf_probe_read_user(&r, sizeof(r), (void *)(w->records + (__u64)i * w->step)))
		return 1;
	if (!(e = record_event(JT_RAW_ALLOC_RECORD, w->tid)))
		return 0;
	e->args[0] = r.start_ns;
	e->args[1] = r.end_ns;
	e->args[2] = r.address;
	e->args[3] = r.alloc_bytes;
	e->args[4] = r.tlab_bytes;
	e->args[5] = r.retired_waste_bytes;
	e->args[6] = r.class_name;
	e->args[7] = r.gcs;
	e->args[8] = r.tid;
	e->args[9] = r.class_name_len;
	e->args[10] = r.outcome;
	len = r.class_name_len;
	if (len > JT_RAW_STR_MAX - 1)
		len = JT_RAW_STR_MAX - 1;
	if (r.class_name && len)
		bpf_probe_read_user(e->str[0], len & (JT_RAW_STR_MAX - 1), (void *)r.class_name);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("usdt") int alloc__batch(struct pt_regs *ctx)
{
	return raw_batch(ctx, JT_K_ALLOC_BATCH, sizeof(struct jvmtrace_alloc_record), raw_alloc_record);
}

static long raw_fate_record(__u32 i, void *ctx)
{
	struct batch_walk *w = ctx;
	struct jvmtrace_fate_record r;
	struct jt_raw_event *e;

	if (bpf_probe_read_user(&r, sizeof(r), (void *)(w->records + (__u64)i * w->step)))
		return 1;
	if (!(e = record_event(JT_RAW_FATE_RECORD, w->tid)))
		return 0;
	e->args[0] = r.sample_id;
	e->args[1] = r.gc_id;
	e->args[2] = r.kind;
	e->args[3] = r.flags;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("usdt") int sample__fates(struct pt_regs *ctx)
{
	return raw_batch(ctx, JT_K_SAMPLE_FATES, sizeof(struct jvmtrace_fate_record), raw_fate_record);
}
