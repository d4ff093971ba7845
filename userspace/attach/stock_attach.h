// Stock mode: the jvmtrace events of an unpatched HotSpot, from uprobes on
// libjvm.so's own functions (bpf/jvmtrace_stock.bpf.c).  Everything specific
// to a JDK build is looked up in that build: function symbols by C++ name,
// field offsets in the JVM's gHotSpotVMStructs, GC names from the tracer
// object's vtable symbol.  What it cannot see: docs/stock-mode.md.
#pragma once
#include <bpf/libbpf.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "hotspot/elf_symbols.h"
#include "attach/usdt_attach.h"

namespace jvmtrace {

class StockTarget {
 public:
  // Reads libjvm's symbols and the JVM's field offsets; false with *error.
  // libjvm: opened and checked (process/target_file.h); it must outlive this.
  bool prepare(pid_t pid, const TargetFile& libjvm, std::string* error);

  uint64_t klass_name_off = 0, symbol_length_off = 0, symbol_body_off = 0;

  // Attaches every loaded program of obj (named after the function it
  // traces) as a uprobe; links go to *links even on failure.
  bool attach(bpf_object* obj, Links* links, std::string* error) const;

  // The collector behind a GC tracer object, from its vtable pointer
  // (G1NewTracer -> "G1New"); "" if the address is no known vtable.
  std::string gc_name(uint64_t vptr) const;

  // The name of GC cause n, as this libjvm.so's own GCCause::to_string
  // returns it (hotspot/gc_causes.h); "" if n is beyond its table or the
  // function is of a shape jvmtrace does not read (cause_error() says why).
  std::string gc_cause(uint64_t n) const { return n < gc_causes_.size() ? gc_causes_[n] : std::string(); }
  const std::string& cause_error() const { return cause_error_; }

  // Every GC tracer class's vtable pointer as objects of it hold it in this
  // process (vtable + 16), with its collection kind (gc_kind_of).
  std::vector<std::pair<uint64_t, uint32_t>> tracer_kinds() const;

  // Which probes stock mode gives, and how completely, for the trace's meta.
  static const char* coverage();

 private:
  pid_t pid_ = 0;
  std::string libjvm_, shown_;  // the checked file's /proc/self/fd path; how messages name it
  std::shared_ptr<const ElfSymbols> syms_;
  uint64_t bias_ = 0;
  std::vector<std::string> gc_causes_;
  std::string cause_error_;
};

// HotSpot's kind of a collection by collector name (enum jvmtrace_gc_kind,
// by usdt/jvmtrace_abi.h's lists, as the patch's jvmtrace_gc_kind_of).
uint32_t gc_kind_of(const std::string& name);

}  // namespace jvmtrace
