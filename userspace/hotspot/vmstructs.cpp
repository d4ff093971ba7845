#include "hotspot/vmstructs.h"

#include <cstring>

#include "process/target.h"

namespace jvmtrace {

namespace {

bool read_u64(pid_t pid, uint64_t addr, uint64_t* v) {
  std::string b = read_process_memory(pid, addr, 8);
  if (b.size() != 8) return false;
  std::memcpy(v, b.data(), 8);
  return true;
}

// The globals libjvm.so exports to describe one of its tables (the table's
// address first, its entries' stride second, then the fields' offsets in an
// entry), read from the target; false with *error if one is missing or
// unreadable, or the table is not set up yet.
template <size_t N>
bool read_table_globals(pid_t pid, const ElfSymbols& libjvm, uint64_t bias, const char* const (&names)[N],
                        uint64_t (&out)[N], std::string* error) {
  for (size_t i = 0; i < N; i++) {
    const uint64_t addr = libjvm.value(names[i]);
    if (!addr) {
      *error = std::string("libjvm.so exports no ") + names[i] + ": not a HotSpot";
      return false;
    }
    if (!read_u64(pid, bias + addr, &out[i])) {
      *error = std::string("cannot read ") + names[i] + " in PID " + std::to_string(pid);
      return false;
    }
  }
  if (!out[0] || !out[1] || out[1] > 4096) {
    *error = std::string(names[0]) + " is not set up yet in PID " + std::to_string(pid) + " (JVM still starting?)";
    return false;
  }
  return true;
}
}  // namespace

bool read_vmstructs(pid_t pid, const ElfSymbols& libjvm, uint64_t bias, std::map<std::string, uint64_t>* fields,
                    std::string* error) {
  static const char* const kNeed[] = {
      "gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", "gHotSpotVMStructEntryTypeNameOffset",
      "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryIsStaticOffset",
      "gHotSpotVMStructEntryOffsetOffset"};
  uint64_t g[6];
  if (!read_table_globals(pid, libjvm, bias, kNeed, g, error)) return false;
  const uint64_t table = g[0], stride = g[1];
  for (uint64_t i = 0; i < 100000; i++) {
    const uint64_t e = table + i * stride;
    uint64_t tname_ptr, fname_ptr, offset;
    if (!read_u64(pid, e + g[2], &tname_ptr)) break;
    if (!tname_ptr) return true;  // the table's end
    if (!read_u64(pid, e + g[3], &fname_ptr) || !read_u64(pid, e + g[5], &offset)) break;
    std::string is_static = read_process_memory(pid, e + g[4], 4);
    if (is_static.size() != 4) break;
    int32_t st;
    std::memcpy(&st, is_static.data(), 4);
    if (st) continue;
    (*fields)[read_process_string(pid, tname_ptr, 128) + "::" + read_process_string(pid, fname_ptr, 128)] = offset;
  }
  *error = "reading gHotSpotVMStructs in PID " + std::to_string(pid) + " failed part way";
  return false;
}

bool read_vmtypes(pid_t pid, const ElfSymbols& libjvm, uint64_t bias, std::map<std::string, uint64_t>* sizes,
                  std::string* error) {
  static const char* const kNeed[] = {"gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride",
                                      "gHotSpotVMTypeEntryTypeNameOffset", "gHotSpotVMTypeEntrySizeOffset"};
  uint64_t g[4];
  if (!read_table_globals(pid, libjvm, bias, kNeed, g, error)) return false;
  const uint64_t table = g[0], stride = g[1];
  for (uint64_t i = 0; i < 100000; i++) {
    const uint64_t e = table + i * stride;
    uint64_t tname_ptr, size;
    if (!read_u64(pid, e + g[2], &tname_ptr)) break;
    if (!tname_ptr) return true;  // the table's end
    if (!read_u64(pid, e + g[3], &size)) break;
    (*sizes)[read_process_string(pid, tname_ptr, 128)] = size;
  }
  *error = "reading gHotSpotVMTypes in PID " + std::to_string(pid) + " failed part way";
  return false;
}

}  // namespace jvmtrace
