// SPDX-License-Identifier: GPL-2.0
/* `jvmtrace record`: every jvmtrace probe hit, its arguments as numbers
 * (strings as addresses), into a ring buffer; with --stacks, the user stack
 * of each TLAB refill and slow-path entry (stack_capture.bpf.h).  A hit that finds the buffer
 * full is counted in `dropped`, never lost silently.  Argument positions:
 * usdt/jvmtrace.d; the record layout: jvmtrace_events.h. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include "event_stream.bpf.h"
#include "stack_capture.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* name_arg1/2: arguments holding the address of a name (a class's, a GC's,
 * a cause's), or -1. */
static __always_inline int emit(struct pt_regs *ctx, __u16 probe, const int nargs, const int name_arg1,
				const int name_arg2, const bool stack)
{
	struct jt_event *e = stack ? event_reserve_stacked(ctx, probe, nargs) : event_reserve(probe, nargs);
	bool wake = false;
	long v;

	if (!e)
		return 0;
	for (int i = 0; i < nargs; i++) {
		v = 0;
		bpf_usdt_arg(ctx, i, &v);
		e->args[i] = v;
	}
	/* Wake for a name user space must read now; not for every GC event (a
	 * fixture firing GC events at a quarter of its rate ran 4x slower). */
	if (name_arg1 >= 0 && fresh(e->args[name_arg1 & 7]))
		wake = true;
	if (name_arg2 >= 0 && fresh(e->args[name_arg2 & 7]))
		wake = true;
	event_submit(e, wake);
	return 0;
}

/* gc__pause__start/end(gc_id, name, cause, kind, heap_used, heap_committed):
 * the name's text travels in the record (jvmtrace_events.h), the cause's
 * address as for gc__start. */
static __always_inline int emit_pause(struct pt_regs *ctx, __u16 probe)
{
	struct jt_event *e = event_reserve_bytes(probe, 6, JT_PAUSE_EVENT_SIZE);
	long v, name = 0;

	if (!e)
		return 0;
	for (int i = 0; i < 6; i++) {
		v = 0;
		bpf_usdt_arg(ctx, i, &v);
		e->args[i] = v;
	}
	name = e->args[1];
	e->args[1] = 0;
	char *text = (char *)e + JT_EVENT_SIZE(6);
	text[0] = 0;
	if (name)
		bpf_probe_read_user_str(text, JT_PAUSE_NAME_MAX, (void *)name);
	/* No wake-up of its own (the reader wakes after each safepoint, at its
	 * last alloc__batch below, and takes what waits every 50 ms): a wake-up is an
	 * interrupt raised on this CPU (irq_work), and at gc__pause__start it
	 * falls between the probe's stamp and the log's, inside the pause.  Under
	 * a hypervisor it traps: on Shenandoah's sub-millisecond pauses it read
	 * +0.1 to +2 ms with the VM thread on its CPU (docs/notes.md, session 23). */
	event_submit(e, false);
	return 0;
}

/* Whether a safepoint's last plab__batch wakes the reader: only when
 * alloc__batch is not attached (its own last follows, and wakes it). */
const volatile bool plab_last_wakes = false;

/* A batch of records is copied whole into the ring buffer; it is built
 * here first (too large for the BPF stack), one per CPU. */
#define BATCH_MAX_BYTES (JT_PLAB_BATCH_MAX_BYTES > JT_ALLOC_BATCH_MAX_BYTES ? \
			 JT_PLAB_BATCH_MAX_BYTES : JT_ALLOC_BATCH_MAX_BYTES)
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[JT_EVENT_SIZE(JT_FATES_ARGS) + BATCH_MAX_BYTES]);
} batch_scratch SEC(".maps");

/* plab__batch / alloc__batch / sample__fates(records, count, record_bytes,
 * ...): one ring buffer record holds them all; user space expands it into
 * the events of the probes the records stand for (plab__alloc, plab__retire
 * and promote__direct; alloc__slow; the samples' fates).  nextra arguments
 * from the probe's argument first_extra on follow the first three. */
static __always_inline int emit_batch(struct pt_regs *ctx, __u16 kind, __u64 max_bytes, int nextra,
				      int first_extra)
{
	static const __u32 zero = 0;
	__u8 *buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	struct jt_event *e = (struct jt_event *)buf;
	long records = 0, count = 0, record_bytes = 0;
	__u64 len;

	if (!buf || stopped)
		return 0;
	name_thread_once();
	bpf_usdt_arg(ctx, 0, &records);
	bpf_usdt_arg(ctx, 1, &count);
	bpf_usdt_arg(ctx, 2, &record_bytes);
	len = (__u64)(__u32)count * (__u64)(__u32)record_bytes;
	if (len > max_bytes)
		len = max_bytes;
	if (len > BATCH_MAX_BYTES)
		len = BATCH_MAX_BYTES;
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->probe = kind;
	e->nargs = 3 + nextra;
	e->args[0] = records;
	e->args[1] = (__u32)count;
	e->args[2] = (__u32)record_bytes;
	for (int i = 0; i < 3; i++) {
		long v = 0;

		if (i >= nextra)
			break;
		bpf_usdt_arg(ctx, first_extra + i, &v);
		e->args[3 + i] = v;
	}
	if (len && bpf_probe_read_user(buf + JT_EVENT_SIZE(3 + nextra), len, (void *)records))
		len = 0; /* unreadable: user space counts the records as dropped */
	/* A safepoint's last alloc__batch (its "last" argument; plab__batch's
	 * when alloc__batch is not attached), fired by the VM
	 * thread after the safepoint, outside any pause: the reader wakes once a
	 * safepoint for what the VM thread handed over, other threads' records,
	 * whose names it must read from /proc while those threads live (a
	 * short-lived thread's, read at the 50 ms tick, was "<exited>"). */
	bool wake = (kind == JT_K_ALLOC_BATCH || (kind == JT_K_PLAB_BATCH && plab_last_wakes)) && nextra >= 2 &&
		    e->args[4] != 0;
	if (bpf_ringbuf_output(&events, buf, JT_EVENT_SIZE(3 + nextra) + len,
			       wake || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&dropped, (__u32)count);
	return 0;
}

/* The count is each probe's arguments minus the trailing tid; then where
 * name addresses are. */
SEC("usdt") int tlab__refill(struct pt_regs *ctx) { return emit(ctx, JT_TLAB_REFILL, 6, 3, -1, true); }
SEC("usdt") int alloc__slow__enter(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_ENTER, 3, 1, -1, true); }
SEC("usdt") int alloc__slow__exit(struct pt_regs *ctx) { return emit(ctx, JT_ALLOC_SLOW_EXIT, 4, -1, -1, false); }
SEC("usdt") int gc__start(struct pt_regs *ctx) { return emit(ctx, JT_GC_START, 6, 1, 2, false); }
SEC("usdt") int gc__end(struct pt_regs *ctx) { return emit(ctx, JT_GC_END, 6, 1, 2, false); }
SEC("usdt") int plab__alloc(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_ALLOC, 4, -1, -1, false); }
SEC("usdt") int plab__retire(struct pt_regs *ctx) { return emit(ctx, JT_PLAB_RETIRE, 6, -1, -1, false); }
SEC("usdt") int promote__direct(struct pt_regs *ctx) { return emit(ctx, JT_PROMOTE_DIRECT, 4, -1, -1, false); }
SEC("usdt") int gc__pause__start(struct pt_regs *ctx) { return emit_pause(ctx, JT_GC_PAUSE_START); }
SEC("usdt") int gc__pause__end(struct pt_regs *ctx) { return emit_pause(ctx, JT_GC_PAUSE_END); }
/* One hit per event: record attaches these instead of the probes above when
 * the JVM has them. */
SEC("usdt") int alloc__slow(struct pt_regs *ctx) { return emit(ctx, JT_K_ALLOC_SLOW, 10, 1, -1, true); }
/* (safepoint_id, last: arguments 4 and 5, after the tid) */
SEC("usdt") int plab__batch(struct pt_regs *ctx) { return emit_batch(ctx, JT_K_PLAB_BATCH, JT_PLAB_BATCH_MAX_BYTES, 2, 4); }
SEC("usdt") int alloc__batch(struct pt_regs *ctx) { return emit_batch(ctx, JT_K_ALLOC_BATCH, JT_ALLOC_BATCH_MAX_BYTES, 2, 4); }
/* (gc_id, level, tracked: arguments 3 to 5) */
SEC("usdt") int sample__fates(struct pt_regs *ctx) { return emit_batch(ctx, JT_K_SAMPLE_FATES, JT_FATES_BATCH_MAX_BYTES, 3, 3); }

/* safepoint__begin/end: every argument; the operation's name is static
 * text, read once by user space like a GC's name. */
SEC("usdt") int safepoint__begin(struct pt_regs *ctx) { return emit(ctx, JT_SAFEPOINT_BEGIN, 4, 0, -1, false); }
SEC("usdt") int safepoint__end(struct pt_regs *ctx) { return emit(ctx, JT_SAFEPOINT_END, 8, 0, -1, false); }

/* alloc__sample: the arguments user space needs, the VM's native return
 * addresses (from the probe site out: user space keeps those in the VM's
 * own code), the Java frames the VM walked, and the metadata epoch as it is
 * now (user space trusts the names it reads of those frames' methods only
 * while the epoch still has this value).  Layout: jvmtrace_events.h,
 * JT_K_ALLOC_SAMPLE.
 *
 * What a sample costs the allocating thread is mostly what this program
 * does besides copying (measured on AllocBench, 18.6 us a run): waking the
 * reader at every sample (an interrupt to itself, 7.5 us) and
 * bpf_get_stack's last step, a read through whatever a JIT frame left in
 * rbp, which faulted (7 us).  So the reader is woken only for a stack it
 * has not named whole in this epoch (named_stacks), and the VM's frames
 * are followed by hand, only while they stay in libjvm.so. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[JT_SAMPLE_MAX_BYTES]);
} sample_scratch SEC(".maps");

/* (epoch, frames hash) -> 1: filled by user space as it names a stack's
 * every frame; LRU, so an entry evicted costs one wakeup more. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct jt_named_stack);
	__type(value, __u8);
} named_stacks SEC(".maps");

/* libjvm.so's mapped range in the target, set by user space before attach;
 * 0: unknown (bpf_get_stack walks instead). */
__u64 jvm_lo = 0, jvm_hi = 0;

/* The VM's return addresses from the probe site out, by frame pointers
 * (HotSpot's C++ keeps them), up to and including the first outside
 * libjvm.so (the runtime stub's, in the code cache): what bpf_get_stack
 * gave, without reading through the frame beyond it. */
static __always_inline long vm_frames(struct pt_regs *ctx, __u64 *out)
{
	__u64 fp = PT_REGS_FP(ctx), frame[2];
	long n = 1;

	out[0] = PT_REGS_IP(ctx);
	for (int i = 1; i < JT_SAMPLE_NATIVE_MAX; i++) {
		if ((fp & 7) || bpf_probe_read_user(frame, sizeof frame, (void *)fp))
			break;
		out[i] = frame[1];
		n = i + 1;
		if (frame[1] < jvm_lo || frame[1] >= jvm_hi)
			break;
		fp = frame[0];
	}
	return n;
}

SEC("usdt") int alloc__sample(struct pt_regs *ctx)
{
	static const __u32 zero = 0;
	__u8 *buf = bpf_map_lookup_elem(&sample_scratch, &zero);
	struct jt_event *e = (struct jt_event *)buf;
	long v, frames = 0, depth = 0, frame_bytes = 0, epoch_addr = 0;
	__u64 epoch = 0, len, count = 0, named = 0;
	long native;

	if (!buf || stopped)
		return 0;
	name_thread_once();
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->probe = JT_K_ALLOC_SAMPLE;
	e->nargs = JT_SAMPLE_ARGS;
	/* weight_bytes, class_name, class_name_len, alloc_bytes, outcome */
	for (int i = 0; i < 5; i++) {
		v = 0;
		bpf_usdt_arg(ctx, i + 1, &v);
		e->args[i] = v;
	}
	bpf_usdt_arg(ctx, 6, &frames);
	bpf_usdt_arg(ctx, 7, &depth);
	bpf_usdt_arg(ctx, 8, &frame_bytes);
	v = 0;
	bpf_usdt_arg(ctx, 9, &v);
	e->args[7] = v; /* end_ns */
	bpf_usdt_arg(ctx, 10, &epoch_addr);
	if (!epoch_addr || bpf_probe_read_user(&epoch, sizeof epoch, (void *)epoch_addr))
		epoch = ~0ull; /* unreadable: no name can be trusted */
	e->args[8] = epoch;
	e->args[10] = epoch_addr;
	v = 0;
	bpf_usdt_arg(ctx, 11, &v);
	e->args[11] = v; /* sample_id */
	__u64 *ips = (__u64 *)(buf + JT_EVENT_SIZE(JT_SAMPLE_ARGS));
	if (jvm_hi)
		native = vm_frames(ctx, ips);
	else if ((native = bpf_get_stack(ctx, ips, 8 * JT_SAMPLE_NATIVE_MAX, BPF_F_USER_STACK)) > 0)
		native = (__u64)native / 8;
	len = (__u64)(__u32)depth * (__u64)(__u32)frame_bytes;
	if (len > JVMTRACE_FRAME_BYTES * JVMTRACE_SAMPLE_MAX_FRAMES)
		len = JVMTRACE_FRAME_BYTES * JVMTRACE_SAMPLE_MAX_FRAMES;
	__u8 *java = buf + JT_EVENT_SIZE(JT_SAMPLE_ARGS) + 8 * JT_SAMPLE_NATIVE_MAX;
	if (len && bpf_probe_read_user(java, len, (void *)frames))
		len = 0; /* unreadable: a sample without Java frames */
	count = frame_bytes ? len / (__u32)frame_bytes : 0;
	e->args[5] = count;
	e->args[6] = (__u32)frame_bytes;
	/* Named whole already in this epoch: nothing to read now. */
	if (count && frame_bytes == JVMTRACE_FRAME_BYTES && epoch != ~0ull) {
		struct jt_named_stack key = {.epoch = epoch, .hash = JT_FRAMES_HASH_SEED ^ count};

		for (int i = 0; i < JVMTRACE_SAMPLE_MAX_FRAMES; i++) {
			if (i >= count)
				break;
			key.hash = jt_frames_hash(key.hash, *(__u64 *)(java + i * JVMTRACE_FRAME_BYTES));
		}
		if (bpf_map_lookup_elem(&named_stacks, &key))
			named = JT_SAMPLE_NAMED;
	}
	e->args[9] = (native > 0 ? (__u64)native : 0) | named;
	if (bpf_ringbuf_output(&events, buf, JT_EVENT_SIZE(JT_SAMPLE_ARGS) + 8 * JT_SAMPLE_NATIVE_MAX + len,
			       !named || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&dropped, 1);
	return 0;
}

/* alloc__drain(flushed_ns): attached only while record ends; every
 * alloc__batch record up to drained_ns is in the ring buffer. */
__u64 drained_ns = 0;
SEC("usdt") int alloc__drain(struct pt_regs *ctx)
{
	long t = 0;

	bpf_usdt_arg(ctx, 0, &t);
	if ((__u64)t > drained_ns)
		drained_ns = t;
	return 0;
}
