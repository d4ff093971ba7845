// report --html: one self-contained page (inline CSS and SVG, no script, no
// network) with the GC pause timeline, heap used over time, allocation rate,
// TLAB and PLAB size histograms, and the top classes and threads; with a
// record --live trace's LiveHeap, the live heap by top site after each
// collection and the growing sites.
#pragma once
#include <string>

#include "analysis/live_heap.h"
#include "analysis/trace_summary.h"

namespace jvmtrace::analysis {

std::string html_report(TraceSummary& sum, const Derived& d, const trace::ReadStatus& st, int top,
                        const LiveHeap* live = nullptr);

}  // namespace jvmtrace::analysis
