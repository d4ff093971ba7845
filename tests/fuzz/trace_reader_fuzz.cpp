// libFuzzer target: any bytes given to the trace reader must yield records
// and a status, never a crash, an out-of-bounds read (ASan) or undefined
// behaviour (UBSan).  Everything a record refers to is looked up, as dump
// and report do; meta escaping must round-trip the input.  Built and run, time-bounded, by scripts/fuzz-trace-reader.sh.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jvmtrace::trace;
  TraceReader r;
  std::string error;
  if (!r.open_memory(data, size, &error)) return 0;
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
  // Meta escaping round-trips any bytes, and an escaped value never ends its line.
  const std::string any(reinterpret_cast<const char*>(data), size);
  const std::string escaped = meta_escape(any);
  if (meta_unescape(escaped) != any || escaped.find('\n') != std::string::npos) __builtin_trap();
  return touched == SIZE_MAX;  // keep the lookups
}
