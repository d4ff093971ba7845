// G1's region size, and the minimum TLAB size its region replay needs
// (report --check, decision 122), read from a running HotSpot.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "process/target_file.h"

namespace jvmtrace {
// G1's region size in the HotSpot of pid: HeapRegion::GrainBytes, located
// through libjvm's own symbols when constructed (the slow part: ~0.3 s for
// libjvm's symbol table), read from the process by read().
class G1RegionSize {
 public:
  G1RegionSize(pid_t pid, const TargetFile& libjvm);
  // The size now, or 0: another collector, a heap not sized yet (a JVM held
  // at start-up: HotSpot sets it in universe_init), no symbols, or not
  // readable.
  uint64_t read() const;
  // The flag MinTLABSize (bytes; set before the heap is), or 0 if unknown.
  uint64_t min_tlab() const;

 private:
  uint64_t read_at(uint64_t address) const;
  pid_t pid_;
  uint64_t address_ = 0, min_tlab_address_ = 0;
};
}  // namespace jvmtrace
