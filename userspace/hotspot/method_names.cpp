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
  pid_ = pid;
  return true;
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
  return true;
}

}  // namespace jvmtrace
