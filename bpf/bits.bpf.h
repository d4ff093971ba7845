/* Bit helpers for BPF programs. */
#ifndef JVMTRACE_BITS_BPF_H
#define JVMTRACE_BITS_BPF_H

/* floor(log2(v)) for v > 0, 0 for v == 0: branch-free, like libbpf-tools'. */
static __always_inline __u64 log2_u64(__u64 v)
{
	__u64 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

#endif
