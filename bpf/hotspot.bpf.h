/* Reading a stock HotSpot's structures from BPF, with field offsets that user
 * space took from the JVM's own gHotSpotVMStructs (userspace/vmstructs.cpp). */
#ifndef JVMTRACE_HOTSPOT_BPF_H
#define JVMTRACE_HOTSPOT_BPF_H

#include <bpf/bpf_helpers.h>

/* A Klass's name: the address of its Symbol's bytes (0 if unreadable) and
 * their length.  Offsets: Klass::_name, Symbol::_length (u16), Symbol::_body. */
static __always_inline void hotspot_class_name(__u64 klass, __u64 klass_name_off, __u64 symbol_length_off,
					       __u64 symbol_body_off, __u64 *body, __u64 *len)
{
	__u64 sym = 0;
	__u16 n = 0;

	bpf_probe_read_user(&sym, sizeof(sym), (void *)(klass + klass_name_off));
	if (sym)
		bpf_probe_read_user(&n, sizeof(n), (void *)(sym + symbol_length_off));
	*body = sym ? sym + symbol_body_off : 0;
	*len = n;
}

#endif
