// What the commands that read a trace file (dump, report, export, flame,
// calibrate) share: opening it, the origin of printed times, and the exit
// status for how the read ended.
#pragma once
#include <cstdint>
#include <string>

#include "trace/reader.h"

namespace jvmtrace {

// Exit status for a read's outcome: 0 complete, 3 incomplete, 1 corrupt.
int trace_exit_status(const trace::ReadStatus& st);
// The recording's start, the origin of printed times (0 if the trace does
// not say).
uint64_t trace_origin_ns(const trace::TraceReader& r);
// Opens path, or says why not on stderr as command cmd ("jvmtrace flame").
bool open_trace(const char* cmd, const std::string& path, trace::TraceReader* reader);
// After reading: says on stderr where and why an incomplete trace stopped
// (and what was done with the intact part: used), and returns the exit status.
int trace_end_status(const char* cmd, const std::string& path, const trace::ReadStatus& st, const char* used);

}  // namespace jvmtrace
