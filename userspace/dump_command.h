#pragma once
#include <cstdint>

namespace jvmtrace {
namespace trace {
struct ReadStatus;
class TraceReader;
}  // namespace trace

int dump_command(int argc, char** argv);

// Shared by the commands that read traces: exit status for a read's outcome
// (0 complete, 3 incomplete, 1 corrupt) and the recording's start, the
// origin of printed times (0 if the trace does not say).
int trace_exit_status(const trace::ReadStatus& st);
uint64_t trace_origin_ns(const trace::TraceReader& r);
}  // namespace jvmtrace
