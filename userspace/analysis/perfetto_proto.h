// Perfetto's native protobuf trace (what `perfetto` itself records, and what
// ui.perfetto.dev and trace_processor read best): the same timeline as the
// Trace Event JSON, as TrackDescriptor and TrackEvent packets with interned
// names, at a fraction of the size.  docs/analysis.md has the mapping.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "analysis/perfetto_export.h"

namespace jvmtrace::analysis {

// out receives the bytes in pieces; origin_ns is time zero (timestamps are
// nanoseconds since it).  compress: the packets go in deflated chunks
// (TracePacket.compressed_packets, which ui.perfetto.dev and trace_processor
// expand); false for an output that is gzipped whole.
std::unique_ptr<TimelineSink> perfetto_proto_sink(uint64_t origin_ns, std::function<void(const std::string&)> out,
                                                  bool compress = true);

}  // namespace jvmtrace::analysis
