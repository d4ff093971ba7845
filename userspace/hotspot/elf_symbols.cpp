#include "hotspot/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "hotspot/demangle.h"

namespace jvmtrace {

namespace {
// A libjvm.so has 58,000 (Debian's 17) to 70,000 (Temurin 25) symbols whose
// names take 2.7 to 3.3 MB: 15 and 20 times that are read at most, so a
// crafted file costs a worker or the scanner tens of MB, not its size.
constexpr size_t kMaxSymbols = 1 << 20;
constexpr size_t kMaxSymbolNameBytes = 64 << 20;

int open_elf(const std::string& file, const std::string& path, std::string* error) {
  const int fd = open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) *error = "cannot open " + path + ": " + std::strerror(errno);
  return fd;
}
}  // namespace

bool ElfSymbols::load(const std::string& file, std::string* error, bool need_symtab, const std::string& shown) {
  const std::string& path = shown.empty() ? file : shown;
  const int fd = open_elf(file, path, error);
  if (fd < 0) return false;
  const bool ok = load_fd(fd, path, error, need_symtab);
  close(fd);
  return ok;
}

std::shared_ptr<const ElfSymbols> shared_elf_symbols(const std::string& file, std::string* error, bool need_symtab,
                                                     const std::string& shown) {
  using Key = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::weak_ptr<const ElfSymbols>> tables;
  const std::string& path = shown.empty() ? file : shown;
  const int fd = open_elf(file, path, error);
  if (fd < 0) return nullptr;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = "cannot stat " + path + ": " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  const Key key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                st.st_ctim.tv_nsec};
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = tables.begin(); it != tables.end();) it = it->second.expired() ? tables.erase(it) : std::next(it);
  if (auto it = tables.find(key); it != tables.end()) {
    // A table built without .symtab serves only callers that do without.
    if (auto held = it->second.lock(); held && (!need_symtab || held->has_symtab())) {
      close(fd);
      return held;
    }
  }
  auto table = std::make_shared<ElfSymbols>();
  const bool ok = table->load_fd(fd, path, error, need_symtab);
  close(fd);
  if (!ok) return nullptr;
  tables[key] = table;
  return table;
}

bool ElfSymbols::load_fd(int fd, const std::string& path, std::string* error, bool need_symtab) {
  std::vector<Sym> dynamic;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    *error = "libelf is unusable";
    return false;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    *error = path + " is not an ELF file";
    if (elf) elf_end(elf);
    return false;
  }
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) == 0) {
    for (size_t i = 0; i < nph; i++) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0) {
        first_load_vaddr_ = ph.p_vaddr;
        break;
      }
    }
  }
  bool have_symtab = false;
  size_t name_bytes = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) continue;
    have_symtab |= sh.sh_type == SHT_SYMTAB;
    if (sh.sh_entsize == 0) continue;
    const size_t n = sh.sh_size / sh.sh_entsize;
    if (n > kMaxSymbols) {
      *error = path + " has " + std::to_string(n) + " symbols in one table, more than any libjvm.so (" +
               std::to_string(kMaxSymbols) + " at most are read)";
      elf_end(elf);
      return false;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    // libelf checks each name's end from the table's last byte back: a
    // table that does not end in '\0' would cost a scan of it per symbol.
    Elf_Scn* strscn = elf_getscn(elf, sh.sh_link);
    Elf_Data* strs = strscn ? elf_getdata(strscn, nullptr) : nullptr;
    if (!strs || !strs->d_buf || strs->d_size == 0 || static_cast<const char*>(strs->d_buf)[strs->d_size - 1]) {
      *error = path + " has a symbol table whose names are not a string table: not read";
      elf_end(elf);
      return false;
    }
    for (size_t i = 0; i < n; i++) {
      GElf_Sym s;
      if (!gelf_getsym(data, static_cast<int>(i), &s) || s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, s.st_name);
      if (!name || !*name) continue;
      // Names may share the string table's bytes (every symbol can point at
      // one long name): what the copies cost is counted, not the file.
      name_bytes += 2 * strnlen(name, kMaxSymbolNameBytes + 1);
      if (name_bytes > kMaxSymbolNameBytes) {
        *error = path + "'s symbol names take more than " + std::to_string(kMaxSymbolNameBytes >> 20) +
                 " MiB, more than any libjvm.so's: not read";
        elf_end(elf);
        return false;
      }
      values_.emplace(name, s.st_value);
      if (GELF_ST_TYPE(s.st_info) == STT_FUNC && sh.sh_type == SHT_SYMTAB)
        functions_.push_back({name, s.st_value, s.st_size});
      else if (GELF_ST_TYPE(s.st_info) == STT_FUNC)
        dynamic.push_back({name, s.st_value, s.st_size});
      else if (GELF_ST_TYPE(s.st_info) == STT_OBJECT && sh.sh_type == SHT_SYMTAB && std::strncmp(name, "_ZTV", 4) == 0)
        objects_.push_back({name, s.st_value, s.st_size});
    }
  }
  elf_end(elf);
  has_symtab_ = have_symtab;
  if (!have_symtab && !need_symtab) {
    functions_ = std::move(dynamic);  // a stripped library: its exported functions only
  } else if (!have_symtab) {
    *error = path + " has no .symtab (stripped): stock mode needs HotSpot's own symbols";
    return false;
  }
  std::sort(objects_.begin(), objects_.end(), [](const Sym& a, const Sym& b) { return a.value < b.value; });
  std::sort(functions_.begin(), functions_.end(), [](const Sym& a, const Sym& b) { return a.value < b.value; });
  return true;
}

std::string ElfSymbols::function(const std::string& qualified, std::string* error) const {
  // By the mangled form: the name is the target's text, and demangling it
  // has no bound (hotspot/demangle.h).
  std::vector<std::string> found;
  for (const Sym& f : functions_) {
    if (mangled_function_is(f.name, qualified) && std::find(found.begin(), found.end(), f.name) == found.end())
      found.push_back(f.name);
  }
  if (found.size() == 1) return found[0];
  *error = found.empty() ? "no function " + qualified + " (not a HotSpot this jvmtrace knows, or stripped)"
                         : "several overloads of " + qualified + "; stock mode does not know which";
  return {};
}

std::vector<std::pair<std::string, uint64_t>> ElfSymbols::vtables(const std::string& suffix) const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const Sym& o : objects_) {
    const std::string c = vtable_class(o.name);  // (plain classes only, not demangled)
    if (c.size() >= suffix.size() && c.compare(c.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.emplace_back(c, o.value);
  }
  return out;
}

uint64_t ElfSymbols::value(const std::string& mangled) const {
  auto it = values_.find(mangled);
  return it == values_.end() ? 0 : it->second;
}

std::string ElfSymbols::function_at(uint64_t vaddr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), vaddr,
                             [](uint64_t v, const Sym& s) { return v < s.value; });
  if (it == functions_.begin()) return {};
  --it;
  if (vaddr >= it->value + std::max<uint64_t>(it->size, 1)) return {};
  return shown_name(it->name);  // (without its parameters; bounded)
}

std::string ElfSymbols::object_at(uint64_t vaddr, uint64_t* offset) const {
  auto it = std::upper_bound(objects_.begin(), objects_.end(), vaddr,
                             [](uint64_t v, const Sym& s) { return v < s.value; });
  if (it == objects_.begin()) return {};
  --it;
  if (vaddr >= it->value + std::max<uint64_t>(it->size, 1)) return {};
  *offset = vaddr - it->value;
  return shown_name(it->name);
}

}  // namespace jvmtrace
