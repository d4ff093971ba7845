#include "analysis/java_frames.h"

#include <algorithm>

namespace jvmtrace::analysis {

std::string method_name(const trace::TraceReader& reader, uint64_t method) {
  if (method >= reader.methods().size()) return trace::kUnknownMethodName;
  const trace::Method& m = reader.methods()[method];
  const std::string& name = reader.strings()[m.name];
  if (m.klass == 0) return name;
  std::string klass = reader.classes()[m.klass - 1];
  std::replace(klass.begin(), klass.end(), '/', '.');
  return klass + "." + name;
}

std::string method_file(const trace::TraceReader& reader, uint64_t method) {
  if (method >= reader.methods().size()) return {};
  const trace::Method& m = reader.methods()[method];
  return m.file ? reader.strings()[m.file - 1] : std::string();
}

std::string frame_site(const trace::TraceReader& reader, const trace::Frame& f) {
  std::string s = method_name(reader, f.method);
  if (f.line) s += ":" + std::to_string(f.line);
  return s;
}

std::string frame_label(const trace::TraceReader& reader, const trace::Frame& f) {
  return method_name(reader, f.method) + trace::frame_kind_suffix(f.kind);
}

const trace::Frame* allocation_site(const std::vector<trace::Frame>& stack) {
  for (const trace::Frame& f : stack)
    if (f.kind != trace::kFrameVm) return &f;
  return nullptr;
}

bool method_unknown(const trace::TraceReader& reader, uint64_t method) {
  if (method >= reader.methods().size()) return true;
  const trace::Method& m = reader.methods()[method];
  return m.klass == 0 && reader.strings()[m.name] == trace::kUnknownMethodName;
}

}  // namespace jvmtrace::analysis
