// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace stat` on a patched JVM: the jvmtrace USDT probes feed the
 * in-kernel aggregation of stat_core.bpf.h.  Nothing per event leaves the
 * kernel.  Argument positions: usdt/jvmtrace.d. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "stat_core.bpf.h"
#include "jvmtrace_events.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline long arg(struct pt_regs *ctx, int i)
{
	long v = 0;
	bpf_usdt_arg(ctx, i, &v);
	return v;
}

/* A slow path ended with this outcome (enum jvmtrace_slow_outcome). */
static __always_inline void count_slow_path(__u32 outcome)
{
	count(JT_C_SLOW_PATHS, 1);
	if (outcome == JVMTRACE_SLOW_FAILED)
		count(JT_C_SLOW_FAILED, 1);
	if (jvmtrace_slow_after_gc(outcome))
		count(JT_C_SLOW_AFTER_GC, 1);
}

/* tlab__refill(tlab_start, tlab_bytes, alloc_bytes, class_name, class_name_len, retired_waste_bytes, tid) */
SEC("usdt")
int tlab__refill(struct pt_regs *ctx)
{
	stat_tlab_refill(current_tid(), arg(ctx, 1), arg(ctx, 5), arg(ctx, 3), arg(ctx, 4));
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

	count_slow_path(outcome);
	if (jvmtrace_slow_outside_tlab(outcome))
		stat_outside(current_tid(), arg(ctx, 1), s ? s->class_key : 0, s ? s->name_len : 0);
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

/* --live: the live-heap estimate (docs/stat.md, "The live heap").  Set by
 * user space before the load. */
const volatile bool live_enabled = false;

/* gc__start hits since the attach: a sample's birth in collections. */
__u64 live_gc_seq = 0;
/* The weights of the kept samples whose fate is not known yet ... */
__u64 live_alive_bytes = 0;
/* ... and of those born in each of the last four collection sequences (slot
 * seq & 3, zeroed as gc__start moves into it): the current one's are the
 * "too young" of report --live, left out of the estimate.  A ring, so that
 * a sample that read the sequence just before a gc__start moved it adds to
 * its own slot, not to the next one's. */
__s64 live_young_bytes[4] = {};

/* gc__start(gc_id, name, cause, kind, heap_used, heap_committed) */
SEC("usdt")
int gc__start(struct pt_regs *ctx)
{
	stat_gc_start((__u32)arg(ctx, 0));
	if (live_enabled) {
		__u64 next = live_gc_seq + 1;

		live_young_bytes[next & 3] = 0;
		__sync_fetch_and_add(&live_gc_seq, 1);
	}
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

/* Safepoints by operation (the address of its static name). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct jt_safepoint_val);
} safepoint_ops SEC(".maps");

/* A new operation: its name to user space with the notice, copied now
 * while the JVM surely has it. */
static __always_inline void announce_op(__u64 op)
{
	struct jt_new_op k = { .key = op, .kind = JT_KEY_SAFEPOINT_OP };
	long n = bpf_probe_read_user_str(k.name, sizeof(k.name), (const void *)op);

	k.name_len = n > 1 ? n - 1 : 0;
	if (bpf_ringbuf_output(&new_keys, &k, sizeof(k), 0))
		count(JT_C_NAMES_LOST, 1);
}

/* safepoint__end(operation, reaching_ns, at_safepoint_ns, total_ns, threads,
 * running, cleanup_ns, safepoint_id): the VM's own figures. */
SEC("usdt")
int safepoint__end(struct pt_regs *ctx)
{
	__u64 op = arg(ctx, 0), reach = arg(ctx, 1), at = arg(ctx, 2), total = arg(ctx, 3);
	struct jt_safepoint_val *v = bpf_map_lookup_elem(&safepoint_ops, &op);

	count(JT_C_SAFEPOINTS, 1);
	count(JT_C_SAFEPOINT_NS, total);
	hist(JT_H_SAFEPOINT_REACH_US, reach / 1000);
	hist(JT_H_SAFEPOINT_AT_US, at / 1000);
	if (!v) {
		struct jt_safepoint_val zero = {};

		/* (0 only for the CPU that made the entry: one notice each) */
		if (!bpf_map_update_elem(&safepoint_ops, &op, &zero, BPF_NOEXIST))
			announce_op(op);
		v = bpf_map_lookup_elem(&safepoint_ops, &op);
		if (!v) {
			count(JT_C_SAFEPOINT_OPS_FULL, 1);
			return 0;
		}
	}
	v->count++;
	v->reach_ns += reach;
	v->at_ns += at;
	v->total_ns += total;
	if (reach > v->reach_max_ns)
		v->reach_max_ns = reach;
	if (total > v->total_max_ns)
		v->total_max_ns = total;
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

/* One hit per event: stat attaches these two instead of the five probes
 * they stand for when the JVM has them (userspace/stat_command.cpp). */

/* One slow path of tid, as alloc__slow and each alloc__batch record report
 * it.  start_ns 0: attached while it ran, its time not taken. */
static __always_inline void stat_slow_path(__u32 tid, __u32 outcome, __u64 alloc_bytes, __u64 class_key,
					   __u32 name_len, __u64 tlab_bytes, __u64 waste, __u64 start_ns,
					   __u64 duration_ns)
{
	count_slow_path(outcome);
	if (jvmtrace_slow_new_tlab(outcome))
		stat_tlab_refill(tid, tlab_bytes, waste, class_key, name_len);
	else if (jvmtrace_slow_outside_tlab(outcome))
		stat_outside(tid, alloc_bytes, class_key, name_len);
	if (start_ns)
		hist(JT_H_SLOW_US, duration_ns / 1000);
	else
		count(JT_C_SLOW_EXIT_UNPAIRED, 1);
}

/* alloc__slow(alloc_bytes, class_name, class_name_len, outcome, tlab_bytes,
 *             duration_ns, address, retired_waste_bytes, gcs, start_ns, tid) */
SEC("usdt")
int alloc__slow(struct pt_regs *ctx)
{
	stat_slow_path(current_tid(), arg(ctx, 3), arg(ctx, 0), arg(ctx, 1), arg(ctx, 2), arg(ctx, 4), arg(ctx, 7),
		       arg(ctx, 9), arg(ctx, 5));
	return 0;
}

#define JT_BATCH_COPY_BYTES (JT_PLAB_BATCH_MAX_BYTES > JT_ALLOC_BATCH_MAX_BYTES ? \
			     JT_PLAB_BATCH_MAX_BYTES : JT_ALLOC_BATCH_MAX_BYTES)

/* A batch is copied out of the JVM with one read (one fault-safe copy
 * instead of one per record) into this CPU's buffer, then walked. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[JT_BATCH_COPY_BYTES]);
} batch_copy SEC(".maps");

struct batch_walk {
	__u8 *buf;
	__u64 step;
};

/* Record i of a copied batch (size bytes of it inside the buffer), or NULL. */
static __always_inline void *batch_record(void *ctx, __u32 i, __u64 size)
{
	struct batch_walk *w = ctx;
	__u64 off = (__u64)i * w->step;

	if (off > JT_BATCH_COPY_BYTES - size)
		return NULL;
	return w->buf + off;
}

static long plab_record(__u32 i, void *ctx)
{
	struct jvmtrace_plab_record *r = batch_record(ctx, i, sizeof(*r));

	if (!r)
		return 1;
	switch (r->kind) {
	case JVMTRACE_PLAB_REC_ALLOC:
		count(JT_C_PLABS, 1);
		count(JT_C_PLAB_BYTES, r->bytes);
		hist(JT_H_PLAB_BYTES, r->bytes);
		break;
	case JVMTRACE_PLAB_REC_RETIRE:
		count(JT_C_PLAB_WASTE_BYTES, r->bytes - r->used_bytes);
		break;
	case JVMTRACE_PLAB_REC_DIRECT:
		count(JT_C_PROMOTED_DIRECT, 1);
		count(JT_C_PROMOTED_DIRECT_BYTES, r->bytes);
		break;
	case JVMTRACE_PLAB_REC_UNDO: /* a direct copy that lost its race: no promotion after all */
		count(JT_C_PROMOTED_DIRECT, -1);
		count(JT_C_PROMOTED_DIRECT_BYTES, -r->bytes);
		break;
	}
	return 0;
}

/* A batch hit (records, count, record_bytes, tid): copies the records into
 * this CPU's buffer for w and returns how many to walk; records that cannot
 * be (a size below the contract's, more than fit, unreadable) are counted in
 * lost.  batches counts the hit. */
static __always_inline __u32 copy_batch(struct pt_regs *ctx, struct batch_walk *w, __u64 record_size,
					__u32 batches, __u32 lost)
{
	static const __u32 zero = 0;
	__u32 n = arg(ctx, 1), fit;
	__u64 len;

	w->buf = bpf_map_lookup_elem(&batch_copy, &zero);
	w->step = (__u32)arg(ctx, 2);
	count(batches, 1);
	if (!w->buf || w->step < record_size) { /* not the contract's layout */
		count(lost, n);
		return 0;
	}
	fit = JT_BATCH_COPY_BYTES / w->step;
	if (n > fit) { /* the VM flushes at 256 (PLABs) or 128 (slow paths): more is not a batch */
		count(lost, n - fit);
		n = fit;
	}
	len = (__u64)n * w->step;
	if (len > JT_BATCH_COPY_BYTES)
		return 0;
	if (len && bpf_probe_read_user(w->buf, len, (void *)arg(ctx, 0))) {
		count(lost, n);
		return 0;
	}
	return n;
}

/* plab__batch(records, count, record_bytes, tid, safepoint_id, last): the
 * records counted whenever they come (a safepoint's, after it) */
SEC("usdt")
int plab__batch(struct pt_regs *ctx)
{
	struct batch_walk w;
	__u32 n = copy_batch(ctx, &w, sizeof(struct jvmtrace_plab_record), JT_C_PLAB_BATCHES, JT_C_PLAB_RECORDS_LOST);

	bpf_loop(n, plab_record, &w, 0);
	return 0;
}

/* stat's window on alloc__batch records, by their end: [window_start_ns,
 * window_end_ns], set by user space (0: open).  Records of slow paths that
 * ended before the attach (left from an earlier tracer) or after stat's end
 * (while it waits for alloc__drain) are not counted, so that every tool
 * attached over the same time counts the same slow paths. */
__u64 window_start_ns = 0;
__u64 window_end_ns = 0;
/* alloc__drain's latest flushed_ns: every record up to it has been seen. */
__u64 drained_ns = 0;

static long alloc_record(__u32 i, void *ctx)
{
	struct jvmtrace_alloc_record *r = batch_record(ctx, i, sizeof(*r));

	if (!r)
		return 1;
	if (r->end_ns < window_start_ns || (window_end_ns && r->end_ns > window_end_ns)) {
		count(JT_C_ALLOC_RECORDS_OUTSIDE, 1);
		return 0;
	}
	stat_slow_path((__u32)r->tid, r->outcome, r->alloc_bytes, r->class_name, r->class_name_len, r->tlab_bytes,
		       r->retired_waste_bytes, r->start_ns, r->end_ns - r->start_ns);
	return 0;
}

/* alloc__batch(records, count, record_bytes, tid) */
SEC("usdt")
int alloc__batch(struct pt_regs *ctx)
{
	struct batch_walk w;
	__u32 n = copy_batch(ctx, &w, sizeof(struct jvmtrace_alloc_record), JT_C_ALLOC_BATCHES, JT_C_ALLOC_RECORDS_LOST);

	bpf_loop(n, alloc_record, &w, 0);
	return 0;
}

/* alloc__drain(flushed_ns): attached only while stat ends. */
SEC("usdt")
int alloc__drain(struct pt_regs *ctx)
{
	__u64 t = arg(ctx, 0);

	if (t > drained_ns)
		drained_ns = t;
	return 0;
}

/* --- stat --live: alloc__sample and sample__fates ----------------------
 * Per tracked sample (sample_id not 0) its weight and its birth in
 * collections, until its fate comes; a running sum of the weights still
 * alive; at each fates batch a snapshot: the live bytes as of the
 * collection that last reported deaths, by report --live's definition
 * (userspace/analysis/live_heap.cpp: samples born since the last gc__start
 * are too young to have been judged, and left out). */

/* The VM's table holds at most JvmtraceLiveSamples (default 65,536) ids;
 * user space sets max_entries (twice that by default: ids whose fates are
 * on their way, and those a lost record never names).  Not preallocated: an
 * entry is 16 bytes of value in a kernel allocation of about 80. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 17);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct jt_live_sample);
} live_samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JT_LIVE_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} live_counters SEC(".maps");

struct jt_live_snapshot live_snapshot = {};

static __always_inline void live_count(__u32 c, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&live_counters, &c);
	if (v)
		__sync_fetch_and_add(v, n);
}

/* alloc__sample(method, weight_bytes, class_name, class_name_len, alloc_bytes,
 * outcome, frames, depth, frame_bytes, end_ns, epoch_addr, sample_id) */
SEC("usdt")
int alloc__sample(struct pt_regs *ctx)
{
	__u64 id = arg(ctx, 11);
	struct jt_live_sample s;

	live_count(JT_L_SAMPLES, 1);
	if (!id) /* not tracked by the VM: its object's fate will never come */
		return 0;
	s.weight = arg(ctx, 1);
	s.born_seq = live_gc_seq;
	if (bpf_map_update_elem(&live_samples, &id, &s, BPF_NOEXIST)) {
		live_count(JT_L_MAP_FULL, 1);
		return 0;
	}
	live_count(JT_L_KEPT, 1);
	__sync_fetch_and_add(&live_alive_bytes, s.weight);
	__sync_fetch_and_add(&live_young_bytes[s.born_seq & 3], (__s64)s.weight);
	return 0;
}

/* A batch's records, copied out of the JVM at once: the probe's only
 * caller is the ServiceThread, so this buffer has one user at a time.
 * Room for 256 records of up to 32 bytes (the contract's are 16; fields
 * are only ever appended). */
#define JT_FATES_COPY_BYTES (2 * JVMTRACE_FATE_BATCH_RECORDS * JVMTRACE_FATE_RECORD_BYTES)
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[JT_FATES_COPY_BYTES]);
} fates_copy SEC(".maps");

struct fates_walk {
	__u8 *buf;
	__u64 step;
	__u64 seq;  /* live_gc_seq as the batch came */
};

static long fate_record(__u32 i, void *ctx)
{
	struct fates_walk *w = ctx;
	__u64 off = (__u64)i * w->step, id, weight, born;
	struct jvmtrace_fate_record *r;
	struct jt_live_sample *s;

	if (off > JT_FATES_COPY_BYTES - sizeof(*r))
		return 1;
	r = (struct jvmtrace_fate_record *)(w->buf + off);
	switch (r->kind) {
	case JVMTRACE_FATE_LOST:
		live_count(JT_L_VM_LOST, r->sample_id);
		return 0;
	case JVMTRACE_FATE_PROMOTED: /* still alive: stays */
		live_count(JT_L_PROMOTED, 1);
		return 0;
	case JVMTRACE_FATE_DIED:
		live_count(JT_L_DIED, 1);
		break;
	case JVMTRACE_FATE_THINNED:
		live_count(JT_L_THINNED, 1);
		break;
	case JVMTRACE_FATE_UNTRACKED:
		live_count(JT_L_UNTRACKED, 1);
		break;
	default: /* a kind of a later contract: nothing known of it */
		return 0;
	}
	id = r->sample_id;
	s = bpf_map_lookup_elem(&live_samples, &id);
	if (!s) {
		live_count(JT_L_FATES_UNKNOWN, 1);
		return 0;
	}
	weight = s->weight;
	born = s->born_seq;
	if (bpf_map_delete_elem(&live_samples, &id)) /* (gone meanwhile: counted out by whoever removed it) */
		return 0;
	__sync_fetch_and_add(&live_alive_bytes, -weight);
	if (w->seq - born < 4) /* its slot not reused since */
		__sync_fetch_and_add(&live_young_bytes[born & 3], -(__s64)weight);
	return 0;
}

/* sample__fates(records, count, record_bytes, gc_id, level, tracked) */
SEC("usdt")
int sample__fates(struct pt_regs *ctx)
{
	static const __u32 zero = 0;
	struct fates_walk w = { .seq = live_gc_seq };
	__u32 n = arg(ctx, 1), fit, level = arg(ctx, 4);
	__u64 len, alive, live;
	__s64 young;

	live_count(JT_L_FATE_BATCHES, 1);
	w.buf = bpf_map_lookup_elem(&fates_copy, &zero);
	w.step = (__u32)arg(ctx, 2);
	if (!w.buf || w.step < sizeof(struct jvmtrace_fate_record)) {
		live_count(JT_L_RECORDS_LOST, n);
		n = 0;
	} else {
		fit = JT_FATES_COPY_BYTES / w.step;
		if (n > fit) {
			live_count(JT_L_RECORDS_LOST, n - fit);
			n = fit;
		}
		len = (__u64)n * w.step;
		if (len > JT_FATES_COPY_BYTES)
			return 0;
		if (len && bpf_probe_read_user(w.buf, len, (void *)arg(ctx, 0))) {
			live_count(JT_L_RECORDS_LOST, n);
			n = 0;
		}
	}
	bpf_loop(n, fate_record, &w, 0);

	/* The snapshot: what was alive as of this batch, less what no
	 * collection has judged yet, each sample standing for 2^level. */
	alive = live_alive_bytes;
	young = live_young_bytes[w.seq & 3];
	live = young <= 0 ? alive : (__u64)young < alive ? alive - (__u64)young : 0;
	if (level > 40) /* (the VM's table has 2^16 entries: never) */
		level = 40;
	__sync_fetch_and_add(&live_snapshot.seq, 1);
	live_snapshot.estimate_bytes = live << level;
	live_snapshot.alive_bytes = alive;
	live_snapshot.young_bytes = young > 0 ? young : 0;
	live_snapshot.batches++;
	live_snapshot.ts_ns = bpf_ktime_get_ns();
	live_snapshot.level = level;
	live_snapshot.tracked = arg(ctx, 5);
	live_snapshot.gc_id = arg(ctx, 3);
	__sync_fetch_and_add(&live_snapshot.seq, 1);
	return 0;
}
