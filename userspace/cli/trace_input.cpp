#include "cli/trace_input.h"

#include <cstdio>
#include <cstdlib>

namespace jvmtrace {

int trace_exit_status(const trace::ReadStatus& st) {
  switch (st.kind) {
    case trace::ReadStatus::kComplete: return 0;
    case trace::ReadStatus::kNoEnd:
    case trace::ReadStatus::kTruncated: return 3;
    case trace::ReadStatus::kCorrupt: return 1;
  }
  return 1;
}

bool open_trace(const char* cmd, const std::string& path, trace::TraceReader* reader) {
  std::string error;
  if (reader->open(path, &error)) return true;
  std::fprintf(stderr, "%s: %s\n", cmd, error.c_str());
  return false;
}

int trace_end_status(const char* cmd, const std::string& path, const trace::ReadStatus& st, const char* used) {
  if (st.kind != trace::ReadStatus::kComplete)
    std::fprintf(stderr, "%s: %s: %s%s%s%s\n", cmd, path.c_str(), st.describe().c_str(), used ? " (" : "",
                 used ? used : "", used ? ")" : "");
  return trace_exit_status(st);
}

uint64_t trace_origin_ns(const trace::TraceReader& r) {
  return std::strtoull(r.meta_value("start_monotonic_ns").c_str(), nullptr, 10);
}

}  // namespace jvmtrace
