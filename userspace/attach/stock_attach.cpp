#include "attach/stock_attach.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "base/strings.h"
#include "jvmtrace_abi.h"
#include "process/target.h"
#include "hotspot/gc_causes.h"
#include "hotspot/vmstructs.h"

namespace jvmtrace {

namespace {

// BPF program name -> the HotSpot function it traces.
const std::pair<const char*, const char*> kFunctions[] = {
    {"send_allocation_in_new_tlab", "AllocTracer::send_allocation_in_new_tlab"},
    {"send_allocation_outside_tlab", "AllocTracer::send_allocation_outside_tlab"},
    {"report_gc_start", "GCTracer::report_gc_start"},
    {"report_gc_end", "GCTracer::report_gc_end"},
};

}  // namespace

bool StockTarget::prepare(pid_t pid, const TargetFile& libjvm, std::string* error) {
  pid_ = pid;
  libjvm_ = libjvm.path();
  shown_ = printable(libjvm.shown());
  syms_ = shared_elf_symbols(libjvm_, error, true, shown_);
  if (!syms_) return false;
  const uint64_t start = libjvm_map_start(pid);
  if (!start) {
    *error = "cannot find where PID " + std::to_string(pid) + " mapped libjvm.so";
    return false;
  }
  bias_ = syms_->load_bias(start);
  // A JVM that has only just mapped libjvm.so has not relocated or filled
  // the table yet: wait for it a little (bounded), rather than refuse a JVM
  // attached to in its first milliseconds.
  std::map<std::string, uint64_t> fields;
  for (int tries = 0; !read_vmstructs(pid, *syms_, bias_, &fields, error); tries++) {
    if (tries == 100 || !process_alive(pid)) {
      *error += " (is it still starting? tried for 5 s)";
      return false;
    }
    fields.clear();
    usleep(50000);
  }
  for (auto [name, out] : {std::pair<const char*, uint64_t*>{"Klass::_name", &klass_name_off},
                           {"Symbol::_length", &symbol_length_off},
                           {"Symbol::_body", &symbol_body_off}}) {
    auto it = fields.find(name);
    if (it == fields.end()) {
      *error = std::string("this HotSpot exports no ") + name + " in gHotSpotVMStructs";
      return false;
    }
    *out = it->second;
  }
  for (const auto& [prog, fn] : kFunctions) {
    if (syms_->function(fn, error).empty()) return false;
  }
  if (!gc_cause_names(libjvm_, *syms_, &gc_causes_, &cause_error_)) gc_causes_.clear();  // (then by number)
  return true;
}

bool StockTarget::attach(bpf_object* obj, Links* links, std::string* error) const {
  if (!syms_) {
    *error = "libjvm.so's symbols are not loaded (not prepared)";
    return false;
  }
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__autoload(prog)) continue;
    const char* name = bpf_program__name(prog);
    const char* fn = nullptr;
    for (const auto& [p, f] : kFunctions)
      if (!std::strcmp(p, name)) fn = f;
    if (!fn) {
      *error = std::string("no HotSpot function for program ") + name;
      return false;
    }
    const std::string mangled = syms_->function(fn, error);
    if (mangled.empty()) return false;
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = mangled.c_str());
    bpf_link* l = bpf_program__attach_uprobe_opts(prog, pid_, libjvm_.c_str(), 0, &opts);
    if (!l) {
      int err = errno;
      *error = std::string("cannot attach a uprobe to ") + fn + " in " + shown_ + ": " + std::strerror(err);
      if (err == ESRCH || !process_alive(pid_)) *error += " (process " + std::to_string(pid_) + " has exited)";
      return false;
    }
    links->emplace_back(l);
  }
  return true;
}

namespace {
// G1NewTracer -> G1New, G1FullGCTracer -> G1Full: HotSpot's GCName.
std::string collector_of(const std::string& tracer_class) {
  for (const char* suffix : {"GCTracer", "Tracer"}) {
    const size_t n = std::strlen(suffix);
    if (tracer_class.size() > n && tracer_class.compare(tracer_class.size() - n, n, suffix) == 0)
      return tracer_class.substr(0, tracer_class.size() - n);
  }
  return tracer_class;
}

// An object's vtable pointer points past the vtable's offset-to-top and
// typeinfo slots (Itanium C++ ABI, single inheritance).
constexpr uint64_t kVptrOffset = 16;
}  // namespace

std::string StockTarget::gc_name(uint64_t vptr) const {
  if (!syms_) return {};  // (not prepared)
  uint64_t off = 0;
  std::string o = syms_->object_at(vptr - bias_, &off);
  static const std::string kVtable = "vtable for ";
  if (o.compare(0, kVtable.size(), kVtable) != 0) return {};
  return collector_of(o.substr(kVtable.size()));
}

std::vector<std::pair<uint64_t, uint32_t>> StockTarget::tracer_kinds() const {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  if (!syms_) return out;
  for (const auto& [cls, vaddr] : syms_->vtables("Tracer"))
    out.emplace_back(bias_ + vaddr + kVptrOffset, gc_kind_of(collector_of(cls)));
  return out;
}

const char* StockTarget::coverage() {
  return "tlab__refill (no retired_waste_bytes: 0); outside-TLAB allocations as alloc__slow__enter/exit "
         "pairs at one instant (outcome 2; no slow-path latency, no new-TLAB or failed outcomes); "
         "gc__start/end (gc_id counted from attach, not HotSpot's; cause as its GCCause number; "
         "no heap_used/heap_committed); no plab__alloc, plab__retire or promote__direct";
}

uint32_t gc_kind_of(const std::string& name) {
#define JVMTRACE_GC_NAME_IS(n) name == #n ||
  if (JVMTRACE_YOUNG_COLLECTORS(JVMTRACE_GC_NAME_IS) false) return JVMTRACE_GC_YOUNG;
  if (JVMTRACE_FULL_COLLECTORS(JVMTRACE_GC_NAME_IS) false) return JVMTRACE_GC_FULL;
#undef JVMTRACE_GC_NAME_IS
  return JVMTRACE_GC_CONCURRENT;
}

}  // namespace jvmtrace
