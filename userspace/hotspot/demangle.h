// C++ symbol names from a target's ELF files, for matching and for showing,
// with a budget (docs/decisions.md 129, docs/security.md).
//
// A symbol name is text the target chooses.  The Itanium ABI's
// back-references let a few hundred characters stand for a name that
// doubles with each one (`S0_I<Sk_><Sk_>E`): libstdc++'s __cxa_demangle
// built 1.1 GB for 320 characters, and would need ~35 GB for 340.  A length
// cap is no budget there, so nothing here calls it:
//  - matching (is this the function stock mode traces?) compares the
//    mangled form itself, and demangles nothing;
//  - showing (VM frames, collector names) demangles only the forms HotSpot's
//    names take (nested and unscoped names, templates of types and integer
//    literals, operators, constructors, vtables and thunks) and stops at a
//    fixed work budget; anything else, or over budget, is shown mangled.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace jvmtrace {

// Longer symbols are not demangled (shown mangled).
constexpr size_t kMaxMangledBytes = 4096;
// No demangled name, nor any part of one, is longer.
constexpr size_t kMaxDemangledBytes = 2048;
// Steps plus bytes built, for one symbol: ~50 us of work at most.
constexpr size_t kDemangleWork = 1 << 17;

// The qualified name `mangled` stands for, without parameter list or return
// type ("AllocTracer::send_allocation_in_new_tlab", "G1CollectedHeap::
// do_collection_pause_at_safepoint", "vtable for G1NewTracer",
// "OopOopIterateDispatch<G1CMOopClosure>::Table::oop_oop_iterate<
// InstanceKlass, narrowOop>").  A local entity ("f(int)::{lambda()#1}::...")
// is named by its function ("f"), a clone (".part.0", ".cold") by what it
// was cloned from.  False, *out untouched, when the symbol is not "_Z...",
// is of a form this does not know, or goes over the budget above.
// Time and memory O(kDemangleWork) whatever the input.
bool demangle_name(std::string_view mangled, std::string* out);

// demangle_name()'s name, else the symbol as it is.
std::string shown_name(std::string_view mangled);

// Whether `mangled` is the symbol of a function whose qualified name is
// `qualified` ("AllocTracer::send_allocation_in_new_tlab": letters, digits,
// '_' and "::"), not a template, by its mangled form:
// _Z<len><name><params> or _ZN[rVK][RO]<len><part>...E<params>, with a
// non-empty parameter list and no clone suffix ('.').  What the old
// demangled "qualified(" test matched, without demangling.
bool mangled_function_is(std::string_view mangled, std::string_view qualified);

// The class of a vtable symbol of a plain (non-template) class,
// "_ZTV11G1NewTracer" -> "G1NewTracer", "_ZTVN2ns1CE" -> "ns::C"; "" for any
// other symbol.  No demangling.
std::string vtable_class(std::string_view mangled);

}  // namespace jvmtrace
