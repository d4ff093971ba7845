// libFuzzer target: any bytes given to the trace reader must yield records
// and a status, never a crash, an out-of-bounds read (ASan) or undefined
// behaviour (UBSan).  Each input is read twice: as it is, and with every
// block's CRC32C recomputed, so that a mutation inside a payload reaches the
// block decoder (a random change otherwise stops at the checksum).
// Everything a record refers to is looked up, as dump and report do; meta
// escaping must round-trip the input.  Built and run, time-bounded, by
// scripts/fuzz-trace-reader.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fixtures/trace_checksums.h"
#include "trace/reader.h"

namespace {

size_t read_all(const std::string& bytes) {
  using namespace jvmtrace::trace;
  TraceReader r;
  std::string error;
  if (!r.open_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &error)) return 0;
  size_t touched = 0;
  r.read([&](const Record& rec, uint64_t) {
    if (rec.type < JT_PROBE_COUNT) {
      touched += r.threads().at(rec.event.thread).name.size();
      const ProbeInfo& info = probe_info(rec.event.probe);
      for (int i = 0; i < info.nargs; i++) {
        if (info.kinds[i] == kClassId) touched += r.classes().at(rec.event.a[i]).size();
        if (info.kinds[i] == kStringId) touched += r.strings().at(rec.event.a[i]).size();
      }
    }
  });
  r.meta_value("pid");
  for (const auto& kv : r.meta_fields()) touched += kv.first.size() + kv.second.size();
  return touched;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jvmtrace::trace;
  const std::string any(reinterpret_cast<const char*>(data), size);
  size_t touched = read_all(any);
  std::string fixed = any;
  if (testing::fix_block_checksums(&fixed) && fixed != any) touched += read_all(fixed);
  // Meta escaping round-trips any bytes, and an escaped value never ends its line.
  const std::string escaped = meta_escape(any);
  if (meta_unescape(escaped) != any || escaped.find('\n') != std::string::npos) __builtin_trap();
  return touched == SIZE_MAX;  // keep the lookups
}
