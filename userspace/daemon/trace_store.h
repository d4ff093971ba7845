// What the daemon decides about the traces its record workers write: their
// names in the trace directory, and its disk cap.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/trace_dir.h"
#include "daemon/worker.h"

namespace jvmtrace {

using Workers = std::vector<std::unique_ptr<Worker>>;

// A record worker's file name in the trace directory, less ".jvmtrace".
std::string trace_stem(const Worker& w);

// A stem for a new recording of pid: "jvm-PID-YYYYmmdd-HHMMSS", with -2,
// -3, ... when a running recording or any entry of the directory (a
// symlink too) already uses it.  The daemon names the file: a client never
// chooses a path.
std::string new_trace_stem(const TraceDir& dir, const Workers& workers, pid_t pid);

// The trace directory's cap of cap_mb MiB: delete the oldest files no
// recording is writing; if that is not enough, stop the oldest recording
// (its worker gets until stop_deadline).  Returns the bytes left.  Only
// regular files count and go (TraceDir: no symlink is followed).
uint64_t enforce_disk_cap(TraceDir& dir, double cap_mb, Workers& workers, double stop_deadline);

}  // namespace jvmtrace
