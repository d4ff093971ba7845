// Names of the VM's Method* pointers, read from outside as the
// Serviceability Agent reads them: through the offsets HotSpot exports in
// gHotSpotVMStructs / gHotSpotVMTypes, with process_vm_readv, never by
// running anything in or from the target.  A Method* comes from an
// alloc__sample probe (usdt/jvmtrace.d); it names a method alive at that
// probe hit.
//
//   Method::_constMethod -> ConstMethod::_constants (ConstantPool*),
//                           ConstMethod::_name_index, _signature_index
//   ConstantPool::_pool_holder -> Klass::_name (Symbol*)
//   ConstantPool::_source_file_name_index
//   a constant-pool slot i: ((intptr_t*)(cp + sizeof(ConstantPool)))[i]
//   Symbol::_length (u2), Symbol::_body (the UTF-8 bytes)
//   the line table: ConstMethod::_flags bit 0 (17: u2 _flags; 21+: u4
//   _flags._flags) says there is one; it follows the bytecodes, at
//   cm + sizeof(ConstMethod) + _code_size, compressed as
//   CompressedLineNumberWriteStream writes it (pairs of bci and line deltas:
//   one byte (bci << 3 | line) or 0xFF and two signed UNSIGNED5 numbers;
//   0 ends it; 21 and later exclude the 0 byte from UNSIGNED5)
//
// Everything read is the target's to choose: every pointer is only ever
// used as an address in the target, every index is checked against the
// pool's _length, every name is cut at a bound.  Whether what was read is
// still what the probe saw is the caller's to check (the metadata epoch).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hotspot/elf_symbols.h"
#include "process/target_file.h"

namespace jvmtrace {

struct MethodInfo {
  std::string klass;      // "java/util/ArrayList"
  std::string name;       // "grow"
  std::string signature;  // "(I)[Ljava/lang/Object;"
  std::string file;       // "ArrayList.java", or "" (no SourceFile attribute)
  // The line table: (bci, line) in the table's order; empty when the method
  // has none (or it could not be read: then its lines are 0, "unknown").
  std::vector<std::pair<int32_t, int32_t>> lines;
};
// The source line of bci as Method::line_number_from_bci finds it: the
// line of bci's own entry, else of the entry with the greatest bci below
// it; 0 when there is none.
int32_t line_of_bci(const std::vector<std::pair<int32_t, int32_t>>& lines, int32_t bci);
// The pairs of a compressed line table (bytes from its start; x: 1 for the
// UNSIGNED5 of 21 and later, which excludes the 0 byte, 0 for 17's).  At
// most max_pairs; a table cut before its terminator yields what it held.
std::vector<std::pair<int32_t, int32_t>> decode_line_table(const uint8_t* bytes, size_t n, int x,
                                                           size_t max_pairs, bool* ended = nullptr);
// The same, fed a table's bytes as they are read: each feed takes the
// bytes from the table's start (the earlier ones unchanged), decodes only
// the entries it has not, and returns true once nothing more can come (the
// terminator, max_pairs, or bytes that are not a table).  Reading a table
// in chunks costs its length once, not once per chunk.
class LineTableDecoder {
 public:
  explicit LineTableDecoder(int x) : x_(x) {}
  bool feed(const uint8_t* bytes, size_t n, std::vector<std::pair<int32_t, int32_t>>* out, size_t max_pairs);
  bool ended() const { return ended_; }

 private:
  int x_;
  size_t pos_ = 0;
  int32_t bci_ = 0, line_ = 0;
  bool ended_ = false, done_ = false;
};

class MethodNamer {
 public:
  // The HotSpot in pid, whose libjvm.so is the file libjvm, opened through
  // the checks of docs/security.md; it must outlive this namer.
  MethodNamer(pid_t pid, const TargetFile& libjvm) : target_(pid), libjvm_(libjvm.path()), shown_(libjvm.shown()) {}
  // Reads the offsets once the JVM has set up its tables (a JVM held at
  // start-up has not yet: asked again at most every 100 ms); false with
  // *error (the last reason) until then, or when a field this needs is
  // missing.
  bool ensure(std::string* error);
  bool ready() const { return pid_ != 0; }

  // The names of the method at address method; false if any part is
  // unreadable (the JVM is gone, or the pointer names no method).
  bool read(uint64_t method, MethodInfo* out);
  // The u64 at addr in the target (the metadata epoch).
  bool read_u64(uint64_t addr, uint64_t* v) const;

  // Forget every cached name: what they were read from may be freed (the
  // metadata epoch moved).
  void forget() {
    symbols_.clear();
    pools_.clear();
    cached_bytes_ = 0;
  }
  uint64_t reads() const { return reads_; }
  uint64_t cache_drops() const { return cache_drops_; }  // caches dropped whole at their cap

 private:
  bool read_bytes(uint64_t addr, void* dst, size_t n) const;
  bool symbol(uint64_t addr, std::string* out);
  bool pool_symbol(uint64_t cp, uint32_t pool_length, uint32_t index, std::string* out);
  struct Pool {
    uint32_t length = 0;
    std::string klass, file;
  };
  bool pool(uint64_t cp, Pool* out);

  bool init(const ElfSymbols& libjvm, uint64_t bias, std::string* error);
  void read_lines(uint64_t cm, MethodInfo* out);

  pid_t target_;
  std::string libjvm_, shown_, error_;
  uint64_t next_try_ns_ = 0;
  pid_t pid_ = 0;  // set once ready
  uint64_t method_const_ = 0, const_constants_ = 0, const_name_ = 0, const_sig_ = 0;
  uint64_t pool_holder_ = 0, pool_length_ = 0, pool_source_ = 0, pool_size_ = 0;
  // The line table (0: not known to this VM's tables: lines stay 0).
  uint64_t const_flags_ = 0, const_code_size_ = 0, const_size_ = 0;
  int flags_bytes_ = 0;   // 2 (17's u2) or 4 (21+'s u4)
  int unsigned5_x_ = 0;   // 1: 21+'s UNSIGNED5 (no 0 byte)
  uint64_t klass_name_ = 0, symbol_length_ = 0, symbol_body_ = 0;
  // Within one epoch: Symbol* -> text, ConstantPool* -> its class and file.
  std::unordered_map<uint64_t, std::string> symbols_;
  std::unordered_map<uint64_t, Pool> pools_;
  size_t cached_bytes_ = 0;  // of the names in both
  // Room for n more bytes of names (else both caches are dropped whole).
  void make_room(size_t n);
  mutable uint64_t reads_ = 0;
  uint64_t cache_drops_ = 0;
};

}  // namespace jvmtrace
