// Names of the frames of a trace's Java stacks (version 3: allocation
// samples), one spelling for every reader: dump, report, the flame graph,
// pprof and Perfetto.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trace/reader.h"

namespace jvmtrace::analysis {

// "java.util.ArrayList.grow" for a Java method (the class's JVM name with
// '/' turned into '.'), the C++ symbol for VM code.
std::string method_name(const trace::TraceReader& reader, uint64_t method);
// "ArrayList.java", or "" when the class has no SourceFile attribute (or
// the frame is VM code).
std::string method_file(const trace::TraceReader& reader, uint64_t method);
// "java.util.ArrayList.grow:233" (no line: the name alone).
std::string frame_site(const trace::TraceReader& reader, const trace::Frame& f);
// The flame graph's frame: the method and async-profiler's suffix for its
// kind ("java.util.ArrayList.grow_[j]").
std::string frame_label(const trace::TraceReader& reader, const trace::Frame& f);
// The leaf-most Java frame of a stack (its allocation site), or nullptr
// when the stack holds only VM code.
const trace::Frame* allocation_site(const std::vector<trace::Frame>& stack);
// A method the recorder could not name (its class was unloaded, or the JVM
// had exited, before it read the name): its frames say so.
bool method_unknown(const trace::TraceReader& reader, uint64_t method);

}  // namespace jvmtrace::analysis
