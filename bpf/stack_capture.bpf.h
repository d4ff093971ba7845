/* record --stacks, shared by the USDT and stock record programs: the user
 * stack at an allocation event, kept once per distinct stack in a stack map
 * and referred to by id from the event (JT_EVENT_HAS_STACK). */
#ifndef JVMTRACE_STACK_CAPTURE_BPF_H
#define JVMTRACE_STACK_CAPTURE_BPF_H

#include <bpf/bpf_helpers.h>
#include "event_stream.bpf.h"

/* Set before load; the map is sized by user space then (1 entry when off). */
const volatile bool capture_stacks = false;
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, JT_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* event_reserve(), plus the firing thread's user stack after the nargs
 * arguments when --stacks is on (a negative id: not captured, e.g. the map
 * is full). */
static __always_inline struct jt_event *event_reserve_stacked(void *ctx, __u16 probe, const int nargs)
{
	struct jt_event *e;

	if (!capture_stacks)
		return event_reserve(probe, nargs);
	e = event_reserve(probe | JT_EVENT_HAS_STACK, nargs + 1);
	if (!e)
		return 0;
	e->nargs = nargs;
	e->args[nargs] = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	return e;
}

#endif /* JVMTRACE_STACK_CAPTURE_BPF_H */
