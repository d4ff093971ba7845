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
//
// *stopped_stem is the cap's memory between passes: the stem of the last
// recording it stopped.  While no other recording runs, that recording's
// last file is spared as if still being written, so the trace survives the
// passes after its stop (else the next second's pass deleted it: a cap
// below one recording left nothing).  A pass for a new recording
// (for_new_recording) forgets it first: the new recording's room may come
// from that file too.
uint64_t enforce_disk_cap(TraceDir& dir, double cap_mb, Workers& workers, double stop_deadline,
                          std::string* stopped_stem, bool for_new_recording);

}  // namespace jvmtrace
