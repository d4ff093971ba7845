#include "hotspot/method_names.h"

#include <sys/uio.h>

#include <cstring>
#include <map>

#include "base/clock.h"
#include "hotspot/vmstructs.h"
#include "process/target.h"

namespace jvmtrace {

namespace {
// Names are cut here (the trace cuts at 4096 anyway); a Symbol's length is
// a u2, so nothing the target says can make a read larger.
constexpr size_t kMaxSymbol = 4096;
// Caches are dropped whole beyond these (a JVM passing ever new pointers
// must not grow root's memory without bound): entries of each, and bytes of
// names of both (65,536 symbols of 4 KiB would be 256 MiB, as many pools
// with two such names 512 MiB).
constexpr size_t kMaxCached = 1 << 16, kMaxCachedBytes = 16 << 20;
}  // namespace

void MethodNamer::make_room(size_t n) {
  if (symbols_.size() < kMaxCached && pools_.size() < kMaxCached && cached_bytes_ + n <= kMaxCachedBytes) return;
  forget();
  cache_drops_++;
}

bool MethodNamer::ensure(std::string* error) {
  if (ready()) return true;
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  if (now < next_try_ns_) {
    *error = error_;
    return false;
  }
  next_try_ns_ = now + 100'000'000;
  const uint64_t start = libjvm_map_start(target_);
  if (!start) {
    error_ = "libjvm.so is no longer mapped in PID " + std::to_string(target_);
  } else if (const auto syms = shared_elf_symbols(libjvm_, &error_, true, shown_)) {
    init(*syms, syms->load_bias(start), &error_);
  }
  *error = error_;
  return ready();
}

bool MethodNamer::init(const ElfSymbols& libjvm, uint64_t bias, std::string* error) {
  const pid_t pid = target_;
  std::map<std::string, uint64_t> f, t;
  if (!read_vmstructs(pid, libjvm, bias, &f, error) || !read_vmtypes(pid, libjvm, bias, &t, error)) return false;
  struct Need {
    const char* name;
    uint64_t* where;
    const std::map<std::string, uint64_t>* table;
  } need[] = {
      {"Method::_constMethod", &method_const_, &f},     {"ConstMethod::_constants", &const_constants_, &f},
      {"ConstMethod::_name_index", &const_name_, &f},   {"ConstMethod::_signature_index", &const_sig_, &f},
      {"ConstantPool::_pool_holder", &pool_holder_, &f}, {"ConstantPool::_length", &pool_length_, &f},
      {"ConstantPool::_source_file_name_index", &pool_source_, &f},
      {"Klass::_name", &klass_name_, &f},               {"Symbol::_length", &symbol_length_, &f},
      {"Symbol::_body", &symbol_body_, &f},             {"ConstantPool", &pool_size_, &t},
  };
  for (const Need& n : need) {
    auto it = n.table->find(n.name);
    if (it == n.table->end()) {
      *error = std::string("the VM's type tables have no ") + n.name + ": Java frames cannot be named";
      return false;
    }
    *n.where = it->second;
  }
  // The line table's fields (optional: without them lines stay 0).
  const auto fld = [&](const char* name, uint64_t* where) {
    auto it = f.find(name);
    if (it == f.end()) return false;
    *where = it->second;
    return true;
  };
  auto size = t.find("ConstMethod");
  if (size != t.end() && fld("ConstMethod::_code_size", &const_code_size_)) {
    if (fld("ConstMethod::_flags._flags", &const_flags_)) {
      flags_bytes_ = 4, unsigned5_x_ = 1;
    } else if (fld("ConstMethod::_flags", &const_flags_)) {
      flags_bytes_ = 2, unsigned5_x_ = 0;
    }
    if (flags_bytes_) const_size_ = size->second;
  }
  pid_ = pid;
  return true;
}

int32_t line_of_bci(const std::vector<std::pair<int32_t, int32_t>>& lines, int32_t bci) {
  int32_t best_bci = 0, best_line = -1;
  for (const auto& [b, l] : lines) {
    if (b == bci) return l > 0 ? l : 0;
    if (b < bci && b >= best_bci) best_bci = b, best_line = l;
  }
  return best_line > 0 ? best_line : 0;
}

bool LineTableDecoder::feed(const uint8_t* bytes, size_t n, std::vector<std::pair<int32_t, int32_t>>* out,
                            size_t max_pairs) {
  // UNSIGNED5 (HotSpot's unsigned5.hpp, Pack200's): 64 high codes, each
  // adding 6 bits; 192 - x low codes ending a number; at most 5 bytes.
  // An entry cut by the end of the bytes so far is left for the next feed.
  const uint32_t L = 192 - static_cast<uint32_t>(x_);
  size_t p = pos_;
  bool cut = false;
  const auto u5 = [&](uint32_t* v) {
    uint32_t sum = 0;
    int shift = 0;
    for (int i = 0; i < 5; i++) {
      if (p >= n) return cut = true, false;
      const uint32_t b = bytes[p++];
      if (b < static_cast<uint32_t>(x_)) return false;  // an excluded byte: not a table
      sum += (b - x_) << shift;
      if (b < x_ + L) break;
      shift += 6;
    }
    *v = sum;
    return true;
  };
  const auto sign = [](uint32_t v) { return static_cast<int32_t>((v >> 1) ^ (0u - (v & 1))); };
  while (!done_ && pos_ < n && out->size() < max_pairs) {
    p = pos_;
    const uint8_t next = bytes[p++];
    if (next == 0) {
      ended_ = done_ = true;
      break;
    }
    if (next == 0xFF) {
      uint32_t db, dl;
      if (!u5(&db) || !u5(&dl)) {
        done_ = !cut;  // (not a table: nothing more to read)
        break;
      }
      bci_ += sign(db);
      line_ += sign(dl);
    } else {
      bci_ += next >> 3;
      line_ += next & 7;
    }
    pos_ = p;
    out->emplace_back(bci_, line_);
  }
  if (out->size() >= max_pairs) done_ = true;
  return done_;
}

std::vector<std::pair<int32_t, int32_t>> decode_line_table(const uint8_t* bytes, size_t n, int x,
                                                           size_t max_pairs, bool* ended) {
  std::vector<std::pair<int32_t, int32_t>> out;
  LineTableDecoder d(x);
  d.feed(bytes, n, &out, max_pairs);
  if (ended) *ended = d.ended();
  return out;
}

void MethodNamer::read_lines(uint64_t cm, MethodInfo* out) {
  out->lines.clear();
  if (!const_size_) return;
  uint32_t flags = 0;
  uint16_t code_size;
  if (!read_bytes(cm + const_flags_, &flags, static_cast<size_t>(flags_bytes_)) || !(flags & 1) ||
      !read_bytes(cm + const_code_size_, &code_size, sizeof code_size))
    return;
  // A method's table is a few bytes per line; read at most 64 KiB of it
  // (a line a byte or more: lines past that are 0, unknown).
  constexpr size_t kChunk = 512, kMax = 64 << 10;
  std::vector<uint8_t> buf;
  LineTableDecoder dec(unsigned5_x_);
  const uint64_t at = cm + const_size_ + code_size;
  while (buf.size() < kMax) {
    const size_t old = buf.size();
    buf.resize(old + kChunk);
    if (!read_bytes(at + old, buf.data() + old, kChunk)) {
      buf.resize(old);
      break;
    }
    // (each chunk decoded once: a table's entries are read as they come)
    if (dec.feed(buf.data(), buf.size(), &out->lines, 1 << 16)) return;
  }
}

bool MethodNamer::read_bytes(uint64_t addr, void* dst, size_t n) const {
  if (!addr) return false;
  reads_++;
  iovec local{dst, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool MethodNamer::read_u64(uint64_t addr, uint64_t* v) const { return read_bytes(addr, v, sizeof *v); }

bool MethodNamer::symbol(uint64_t addr, std::string* out) {
  auto it = symbols_.find(addr);
  if (it != symbols_.end()) {
    *out = it->second;
    return true;
  }
  uint16_t len;
  if (!read_bytes(addr + symbol_length_, &len, sizeof len)) return false;
  std::string s(len < kMaxSymbol ? len : kMaxSymbol, '\0');
  if (!s.empty() && !read_bytes(addr + symbol_body_, s.data(), s.size())) return false;
  make_room(s.size());
  cached_bytes_ += s.size();
  *out = symbols_.emplace(addr, std::move(s)).first->second;
  return true;
}

bool MethodNamer::pool_symbol(uint64_t cp, uint32_t pool_length, uint32_t index, std::string* out) {
  if (index == 0 || index >= pool_length) return false;  // 0 is no entry in a constant pool
  uint64_t sym;
  return read_u64(cp + pool_size_ + 8ull * index, &sym) && symbol(sym, out);
}

bool MethodNamer::pool(uint64_t cp, Pool* out) {
  auto it = pools_.find(cp);
  if (it != pools_.end()) {
    *out = it->second;
    return true;
  }
  Pool p;
  int32_t length;
  uint16_t source;
  uint64_t holder, name;
  if (!read_bytes(cp + pool_length_, &length, sizeof length) || length <= 0 ||
      !read_bytes(cp + pool_source_, &source, sizeof source) || !read_u64(cp + pool_holder_, &holder) ||
      !read_u64(holder + klass_name_, &name) || !symbol(name, &p.klass))
    return false;
  p.length = static_cast<uint32_t>(length);
  if (source && !pool_symbol(cp, p.length, source, &p.file)) p.file.clear();
  make_room(p.klass.size() + p.file.size());
  cached_bytes_ += p.klass.size() + p.file.size();
  *out = pools_.emplace(cp, std::move(p)).first->second;
  return true;
}

bool MethodNamer::read(uint64_t method, MethodInfo* out) {
  if (!ready()) return false;
  uint64_t cm, cp;
  uint16_t name_index, sig_index;
  Pool p;
  if (!read_u64(method + method_const_, &cm) || !read_u64(cm + const_constants_, &cp) ||
      !read_bytes(cm + const_name_, &name_index, sizeof name_index) ||
      !read_bytes(cm + const_sig_, &sig_index, sizeof sig_index) || !pool(cp, &p) ||
      !pool_symbol(cp, p.length, name_index, &out->name) || !pool_symbol(cp, p.length, sig_index, &out->signature))
    return false;
  out->klass = p.klass;
  out->file = p.file;
  read_lines(cm, out);
  return true;
}

}  // namespace jvmtrace
