// The names of a HotSpot's GC causes (its GCCause::Cause enum), as that very
// libjvm.so prints them: read from the machine code of its own
// GCCause::to_string(), not from a table of ours (the enum is numbered
// differently in 17, 21 and 25, and may change in any update).
//
// to_string() is one switch over the enum returning a string literal per
// case.  GCC compiles it, in every Debian and Temurin build seen (17, 21,
// 25), to a bounds check and a jump through a table of 32-bit offsets, each
// case being `lea STRING(%rip),%rax; ret`.  That exact shape is decoded, and
// anything else is refused (an error, never a guess): a build compiled
// otherwise shows causes by number.
#pragma once
#include <string>
#include <vector>

#include "hotspot/elf_symbols.h"

namespace jvmtrace {

// The longest cause name accepted (bpftrace's strings hold 63), and its
// characters: what HotSpot's names are made of (e.g. "Full GC for
// -Xshare:dump", "System.gc()"; no quote, backslash or '%').
constexpr size_t kMaxGcCauseName = 63;
bool plain_gc_cause_name(const std::string& s);

// (*names)[n] is the name of cause n, for every n the switch covers.
// path: the checked libjvm.so (a /proc/self/fd path); syms: its symbols.
// False with *error if GCCause::to_string is missing or not of the shape
// above, or a name is not plain_gc_cause_name().
bool gc_cause_names(const std::string& path, const ElfSymbols& syms, std::vector<std::string>* names,
                    std::string* error);

}  // namespace jvmtrace
