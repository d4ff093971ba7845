/* Map helpers for BPF programs. */
#ifndef JVMTRACE_MAPS_BPF_H
#define JVMTRACE_MAPS_BPF_H

#include <bpf/bpf_helpers.h>

/* The value for key, created from init first if missing.  NULL only when
 * the map is full (the caller counts that as a drop).  *created says whether
 * this call made the entry (not another CPU racing for it). */
static __always_inline void *map_lookup_or_try_init(void *map, const void *key, const void *init,
						    bool *created)
{
	void *val = bpf_map_lookup_elem(map, key);
	*created = false;
	if (val)
		return val;
	*created = bpf_map_update_elem(map, key, init, BPF_NOEXIST) == 0; /* -EEXIST: another CPU won */
	return bpf_map_lookup_elem(map, key);
}

#endif
