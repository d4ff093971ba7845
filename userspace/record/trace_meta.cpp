#include "record/trace_meta.h"

#include <time.h>
#include <unistd.h>

#include "attach/stock_attach.h"
#include "base/clock.h"
#include "process/target.h"
#include "trace/format.h"

namespace jvmtrace {

namespace {
// The command line is cut at this many bytes (its escaped form at most
// twice that, within trace::kMaxMetaLen with the other keys).
constexpr size_t kMaxCmdline = 16 << 10;
}  // namespace

TraceMeta::TraceMeta(pid_t pid, const TargetFile& binary, bool stock, uint64_t ring_bytes, const std::string& stacks)
    : stock_(stock), region_size_(pid, binary) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const uint64_t mono0 = clock_ns(CLOCK_MONOTONIC), real0 = clock_ns(CLOCK_REALTIME);
  std::string cmdline = process_cmdline(pid);
  const size_t cmdline_bytes = cmdline.size();
  if (cmdline.size() > kMaxCmdline) cmdline.resize(kMaxCmdline);
  head_ = "jvmtrace_version=" + std::to_string(trace::kMetaVersion) + "\nmode=" + (stock ? "stock" : "usdt") +
          "\npid=" + std::to_string(pid) + "\nbinary=" + trace::meta_escape(binary.shown()) +
          "\nhost=" + trace::meta_escape(host) + "\ncmdline=" + trace::meta_escape(cmdline) +
          (cmdline_bytes > kMaxCmdline ? "\ncmdline_bytes=" + std::to_string(cmdline_bytes) : std::string()) +
          "\nstart_monotonic_ns=" + std::to_string(mono0) + "\nstart_realtime_ns=" + std::to_string(real0) +
          "\nring_buffer_bytes=" + std::to_string(ring_bytes);
  tail_ = std::string(stacks.empty() ? "" : "\nstacks=" + stacks) +
          (stock ? std::string("\nstock_coverage=") + StockTarget::coverage() : std::string()) + "\n";
}

void TraceMeta::write_once(trace::TraceWriter& w) {
  if (written_) return;
  poll_region_size();
  written_ = true;  // from here on the size is not needed again
  w.meta(head_ + (region_bytes_ ? "\nheap_region_bytes=" + std::to_string(region_bytes_) : std::string()) +
         (min_tlab_bytes_ ? "\nmin_tlab_bytes=" + std::to_string(min_tlab_bytes_) : std::string()) +
         (stock_ ? "" : pause_probes_ ? "\npause_probes=1" : "\npause_probes=0") +
         (stock_ ? "" : safepoint_probes_ ? "\nsafepoint_probes=1" : "\nsafepoint_probes=0") +
         (stock_ ? "" : std::string("\nprobe_set=") + probe_set_) + tail_);
}

}  // namespace jvmtrace
