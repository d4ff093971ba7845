#include "hotspot/g1_region_size.h"

#include <cstring>

#include "hotspot/elf_symbols.h"
#include "process/target.h"

namespace jvmtrace {
G1RegionSize::G1RegionSize(pid_t pid, const TargetFile& libjvm) : pid_(pid) {
  std::string error;
  const uint64_t start = libjvm_map_start(pid);
  if (!start || !libjvm.valid()) return;
  const auto syms = shared_elf_symbols(libjvm.path(), &error);
  if (!syms) return;
  // JDK 17 names the class HeapRegion; JDK 22 on, G1HeapRegion.
  for (const char* mangled : {"_ZN10HeapRegion10GrainBytesE", "_ZN12G1HeapRegion10GrainBytesE"}) {
    if (const uint64_t v = syms->value(mangled)) {
      address_ = syms->load_bias(start) + v;
      break;
    }
  }
  if (const uint64_t v = syms->value("MinTLABSize")) min_tlab_address_ = syms->load_bias(start) + v;
}

uint64_t G1RegionSize::read() const { return read_at(address_); }

uint64_t G1RegionSize::min_tlab() const { return read_at(min_tlab_address_); }

uint64_t G1RegionSize::read_at(uint64_t address) const {
  if (!address) return 0;
  const std::string bytes = read_process_memory(pid_, address, sizeof(uint64_t));
  if (bytes.size() != sizeof(uint64_t)) return 0;
  uint64_t n;
  std::memcpy(&n, bytes.data(), sizeof n);
  return n;
}
}  // namespace jvmtrace
