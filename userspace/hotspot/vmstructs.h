// HotSpot's field offsets as the JVM itself exports them: the
// gHotSpotVMStructs table the serviceability agent reads.  Stock mode takes
// every offset it uses from here, none hard-coded per JDK build.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "hotspot/elf_symbols.h"

namespace jvmtrace {

// Every non-static "Type::field" -> offset of the HotSpot in pid, whose
// libjvm.so symbols are libjvm and is loaded with the given bias.  False
// with *error if the table cannot be read (not HotSpot, not started yet).
bool read_vmstructs(pid_t pid, const ElfSymbols& libjvm, uint64_t bias, std::map<std::string, uint64_t>* fields,
                    std::string* error);

// Every "Type" -> its size (sizeof) from the gHotSpotVMTypes table, as
// read_vmstructs reads fields.
bool read_vmtypes(pid_t pid, const ElfSymbols& libjvm, uint64_t bias, std::map<std::string, uint64_t>* sizes,
                  std::string* error);

}  // namespace jvmtrace
