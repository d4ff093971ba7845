// An allocation profile in pprof's format (github.com/google/pprof,
// proto/profile.proto: what `go tool pprof`, Pyroscope, Grafana and Parca
// read), from a trace recorded with the VM's own stacks: sample types
// alloc_objects/count and alloc_space/bytes, one sample per (Java stack,
// allocated class, in a new TLAB or outside TLABs) with labels "class" and
// "allocation", functions with their source files and lines, a Java
// method inlined into another as a line of its caller's location (pprof's
// own representation of inlining).  The bytes of threads never sampled are
// one sample of their own, so alloc_space adds up to the trace's allocated
// bytes.
#pragma once
#include <string>

#include "analysis/alloc_profile.h"
#include "trace/reader.h"

namespace jvmtrace::analysis {

// The Profile message, not yet compressed.
// live: a recording with sample fates (record --live): the profile has Go's
// four heap types (alloc_objects, alloc_space, inuse_objects, inuse_space;
// in use as of the last collection that reported), else the first two.
class LiveHeap;
std::string pprof_profile(const trace::TraceReader& reader, const AllocationProfile& profile,
                          const LiveHeap* live = nullptr);

}  // namespace jvmtrace::analysis
