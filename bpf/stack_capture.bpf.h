/* record --stacks, shared by the USDT and stock record programs: the user
 * stack at an allocation event, kept once per distinct stack in a hash map
 * keyed by a 64-bit hash of its return addresses, the event carrying the
 * hash (JT_EVENT_HAS_STACK).
 *
 * Not BPF_MAP_TYPE_STACK_TRACE: that map's id is a bucket index, and a
 * second stack hashing to a taken bucket is refused (-EEXIST) for as long
 * as the first one lives, so a hot stack could go uncaptured for a whole
 * recording (seen: 1,922 stacks lost in one run).  A 64-bit key makes such
 * collisions negligible. */
#ifndef JVMTRACE_STACK_CAPTURE_BPF_H
#define JVMTRACE_STACK_CAPTURE_BPF_H

#include <bpf/bpf_helpers.h>
#include "event_stream.bpf.h"

struct jt_stack {
	__u64 ips[JT_STACK_DEPTH]; /* innermost first; unused slots 0 */
};

/* Set before load; the map is sized by user space then (1 entry when off). */
const volatile bool capture_stacks = false;
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct jt_stack);
} stacks SEC(".maps");

/* Room to take a stack in before it is hashed (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jt_stack);
} stack_scratch SEC(".maps");

/* The firing thread's user stack, stored once; its key (>= 0), or a
 * negative errno when none could be taken. */
static __always_inline __s64 capture_stack(void *ctx)
{
	const __u32 zero = 0;
	struct jt_stack *s = bpf_map_lookup_elem(&stack_scratch, &zero);
	__u64 h = 14695981039346656037ULL; /* FNV-1a, a u64 at a time */
	long n;

	if (!s)
		return -2; /* -ENOENT */
	n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
	if (n <= 0)
		return n < 0 ? n : -61; /* -ENODATA: no frames */
	for (int i = 0; i < JT_STACK_DEPTH; i++) {
		if (i * 8 >= n) {
			s->ips[i] = 0;
			continue;
		}
		h = (h ^ s->ips[i]) * 1099511628211ULL;
	}
	h &= ~(1ULL << 63); /* a non-negative id, whatever the hash */
	bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST); /* already there: fine; full: user space says so */
	return h;
}

/* event_reserve(), plus the firing thread's user stack after the nargs
 * arguments when --stacks is on. */
static __always_inline struct jt_event *event_reserve_stacked(void *ctx, __u16 probe, const int nargs)
{
	struct jt_event *e;

	if (!capture_stacks)
		return event_reserve(probe, nargs);
	e = event_reserve(probe | JT_EVENT_HAS_STACK, nargs + 1);
	if (!e)
		return 0;
	e->nargs = nargs;
	e->args[nargs] = capture_stack(ctx);
	return e;
}

#endif /* JVMTRACE_STACK_CAPTURE_BPF_H */
