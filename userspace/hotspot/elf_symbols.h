// A shared library's symbols (libelf: .symtab and .dynsym), looked up the
// ways stock mode needs: a C++ function by its qualified name (the mangled
// name differs between JDK builds), an exported variable by name, and the
// object an address falls in (a vtable, to name a C++ object's class).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace jvmtrace {

class ElfSymbols {
 public:
  // False with *error if path is not a readable ELF file with symbols
  // (with a .symtab, unless need_symtab is false: then a stripped library's
  // exported functions are its functions).  path: a file opened and checked
  // by process/target_file.h (its /proc/self/fd path), or one root named;
  // shown: how messages name it (default: path).
  bool load(const std::string& path, std::string* error, bool need_symtab = true, const std::string& shown = "");

  // The mangled name of the one function whose demangled name would be
  // "qualified(...)", e.g. "AllocTracer::send_allocation_in_new_tlab",
  // found by its mangled form (mangled_function_is(): nothing is
  // demangled).  Compiler clones (".part.0", ".cold") are not candidates.
  // Empty with *error when there is none (stripped, or another HotSpot) or
  // several.
  std::string function(const std::string& qualified, std::string* error) const;

  // A symbol's address in the file (st_value); 0 if there is none.
  uint64_t value(const std::string& mangled) const;

  // The name of the function that contains vaddr, demangled within a
  // budget (shown_name(): without its parameter list, or mangled), or empty.
  std::string function_at(uint64_t vaddr) const;

  // The name of the data object (a vtable) that contains vaddr, as
  // shown_name() gives it, and the offset into it; empty if none does.
  std::string object_at(uint64_t vaddr, uint64_t* offset) const;

  // Every "vtable for C" of a plain class C (vtable_class(): not a template,
  // not demangled) that ends with suffix: (C, file address).
  std::vector<std::pair<std::string, uint64_t>> vtables(const std::string& suffix) const;

  // Add to a file address to get the address in a process that mapped the
  // file's offset 0 at map_start.
  uint64_t load_bias(uint64_t map_start) const { return map_start - first_load_vaddr_; }

  bool has_symtab() const { return has_symtab_; }

 private:
  friend std::shared_ptr<const ElfSymbols> shared_elf_symbols(const std::string&, std::string*, bool,
                                                              const std::string&);
  bool load_fd(int fd, const std::string& path, std::string* error, bool need_symtab);

  struct Sym {
    std::string name;
    uint64_t value, size;
  };
  std::vector<Sym> functions_;  // sorted by value
  std::vector<Sym> objects_;  // sorted by value
  std::unordered_map<std::string, uint64_t> values_;
  uint64_t first_load_vaddr_ = 0;
  bool has_symtab_ = false;
};

// ElfSymbols::load, shared: one table per file while anyone holds it.  A
// recorder attaching to a JVM needs libjvm.so's 58,000 symbols in three
// places (naming the VM's frames, its Java methods, G1's region size), and
// built the table three times, 20-35 ms each.  The file is the key (device,
// inode, size, modification and change times, of the file opened); entries
// go when their last holder does.  That key is the file system's word: a
// FUSE file can forge it and a write through a shared mapping does not move
// the times, so a target can be served a table of an earlier state of its
// own files.  It gains nothing by that (it could map any libjvm.so), and it
// cannot reach another target's table because each jvmtrace process traces
// one JVM (the daemon runs one worker process per JVM): keep it so, or key
// the cache by target too.  Thread-safe (the parse runs under one lock).
// Null with *error as load() would fail.
std::shared_ptr<const ElfSymbols> shared_elf_symbols(const std::string& path, std::string* error,
                                                     bool need_symtab = true, const std::string& shown = "");

}  // namespace jvmtrace
