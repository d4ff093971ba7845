/* Kernel/user boundary of the raw probe stream: one record per jvmtrace
 * probe hit, carrying every argument exactly as fired.  Shared by
 * bpf/jvmtrace_raw.bpf.c and userspace/tools/jvmtrace_rawdump.cpp; fixed-width
 * types only.  Probe numbering follows usdt/jvmtrace.d's order. */
#ifndef JVMTRACE_RAW_H
#define JVMTRACE_RAW_H

#include "jvmtrace_events.h" /* enum jt_probe */

#define JT_RAW_MAX_ARGS 12 /* alloc__sample's */

/* One record of a plab__batch, as its own raw event after the batch's:
 * args = ts_ns, address, bytes, used_bytes, gc_id, tid, kind, dest. */
#define JT_RAW_PLAB_RECORD 0x80
/* One record of an alloc__batch, likewise: args = the record's fields in
 * order (start_ns ... outcome), str[0] its class name. */
#define JT_RAW_ALLOC_RECORD 0x81
/* One sample__fates record: sample_id, gc_id, kind, flags. */
#define JT_RAW_FATE_RECORD 0x82
#define JT_RAW_STR_MAX 64 /* bytes kept of a string argument, NUL included */

struct jt_raw_event {
	__u64 ts_ns;                    /* bpf_ktime_get_ns() */
	__u32 probe;                    /* enum jt_probe */
	__u32 tid;                      /* the firing thread, as BPF sees it */
	__s64 args[JT_RAW_MAX_ARGS];    /* bpf_usdt_arg(): sign-extended per the note */
	char str[2][JT_RAW_STR_MAX];    /* string arguments, in argument order */
};

JVMTRACE_ABI_ASSERT(sizeof(struct jt_raw_event) == 16 + 8 * JT_RAW_MAX_ARGS + 2 * JT_RAW_STR_MAX, "jt_raw_event");

#endif /* JVMTRACE_RAW_H */
