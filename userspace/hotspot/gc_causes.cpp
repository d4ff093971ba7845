#include "hotspot/gc_causes.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/unique_fd.h"

namespace jvmtrace {

bool plain_gc_cause_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxGcCauseName) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          std::strchr(" ._():/+-", c)))
      return false;
  return s[0] != ' ' && s.back() != ' ';
}

namespace {

// The file's loadable segments: reads bytes by virtual address.
class Image {
 public:
  bool open(const std::string& path, std::string* error) {
    fd_.reset(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd_.valid()) {
      *error = std::string("cannot open it: ") + std::strerror(errno);
      return false;
    }
    if (elf_version(EV_CURRENT) == EV_NONE) {
      *error = "libelf is unusable";
      return false;
    }
    Elf* elf = elf_begin(fd_.get(), ELF_C_READ, nullptr);
    size_t n = 0;
    if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n) != 0) {
      if (elf) elf_end(elf);
      *error = "not an ELF file";
      return false;
    }
    for (size_t i = 0; i < n; i++) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
        loads_.push_back({ph.p_vaddr, ph.p_filesz, ph.p_offset});
    }
    elf_end(elf);
    return true;
  }
  // n bytes at vaddr, all within one segment's file contents.
  bool read(uint64_t vaddr, void* to, size_t n) const {
    for (const Load& l : loads_)
      if (vaddr >= l.vaddr && vaddr - l.vaddr <= l.filesz && n <= l.filesz - (vaddr - l.vaddr))
        return pread(fd_.get(), to, n, static_cast<off_t>(l.offset + (vaddr - l.vaddr))) == static_cast<ssize_t>(n);
    return false;
  }
  // A NUL-terminated string of at most max characters at vaddr.
  bool string(uint64_t vaddr, size_t max, std::string* out) const {
    out->clear();
    char c;
    while (out->size() <= max && read(vaddr + out->size(), &c, 1)) {
      if (c == '\0') return true;
      out->push_back(c);
    }
    return false;
  }

 private:
  struct Load {
    uint64_t vaddr, filesz, offset;
  };
  UniqueFd fd_;
  std::vector<Load> loads_;
};

int32_t le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return static_cast<int32_t>(v);
}

bool match(const uint8_t* code, size_t* at, std::initializer_list<uint8_t> bytes) {
  if (std::memcmp(code + *at, std::data(bytes), bytes.size()) != 0) return false;
  *at += bytes.size();
  return true;
}

}  // namespace

bool gc_cause_names(const std::string& path, const ElfSymbols& syms, std::vector<std::string>* names,
                    std::string* error) {
  names->clear();
  const std::string mangled = syms.function("GCCause::to_string", error);
  if (mangled.empty()) return false;
  const uint64_t fn = syms.value(mangled);
  Image image;
  if (!image.open(path, error)) return false;
  uint8_t code[48];
  if (!fn || !image.read(fn, code, sizeof code)) {
    *error = "cannot read GCCause::to_string's code";
    return false;
  }
  const std::string shape = "GCCause::to_string is not compiled as a jump table of `lea STRING(%rip),%rax; ret` "
                            "cases (another compiler or build): its names cannot be read";
  // [endbr64] cmp $LAST,%edi; ja DEFAULT; lea TABLE(%rip),%rdx; mov %edi,%edi;
  // movslq (%rdx,%rdi,4),%rax; add %rdx,%rax; [notrack] jmp *%rax
  size_t at = 0;
  match(code, &at, {0xf3, 0x0f, 0x1e, 0xfa});
  uint32_t last;
  if (match(code, &at, {0x83, 0xff})) {
    last = code[at++];
  } else if (match(code, &at, {0x81, 0xff})) {
    last = static_cast<uint32_t>(le32(code + at));
    at += 4;
  } else {
    *error = shape;
    return false;
  }
  if (!match(code, &at, {0x0f, 0x87})) {
    *error = shape;
    return false;
  }
  at += 4;
  if (!match(code, &at, {0x48, 0x8d, 0x15})) {
    *error = shape;
    return false;
  }
  const uint64_t table = fn + at + 4 + static_cast<int64_t>(le32(code + at));
  at += 4;
  if (!match(code, &at, {0x89, 0xff}) || !match(code, &at, {0x48, 0x63, 0x04, 0xba}) ||
      !match(code, &at, {0x48, 0x01, 0xd0})) {
    *error = shape;
    return false;
  }
  match(code, &at, {0x3e});  // notrack
  if (!match(code, &at, {0xff, 0xe0})) {
    *error = shape;
    return false;
  }
  if (last > 255) {
    *error = "GCCause::to_string covers " + std::to_string(last + 1) + " causes: more than HotSpot has";
    return false;
  }
  for (uint32_t n = 0; n <= last; n++) {
    uint8_t entry[4], cas[12];
    if (!image.read(table + 4 * n, entry, 4)) {
      *error = "cannot read GCCause::to_string's jump table";
      return false;
    }
    const uint64_t target = table + static_cast<int64_t>(le32(entry));
    size_t c = 0;
    const bool read = image.read(target, cas, sizeof cas);
    if (read) match(cas, &c, {0xf3, 0x0f, 0x1e, 0xfa});  // (a case may start with endbr64)
    if (!read || !match(cas, &c, {0x48, 0x8d, 0x05}) || cas[c + 4] != 0xc3) {
      *error = shape + " (cause " + std::to_string(n) + ")";
      return false;
    }
    const uint64_t str = target + c + 4 + static_cast<int64_t>(le32(cas + c));
    std::string name;
    if (!image.string(str, kMaxGcCauseName, &name) || !plain_gc_cause_name(name)) {
      *error = "GCCause::to_string's name for cause " + std::to_string(n) +
               " is not a plain name (letters, digits, ' ._():/+-', at most " + std::to_string(kMaxGcCauseName) +
               " characters): refused";
      return false;
    }
    names->push_back(name);
  }
  return true;
}

}  // namespace jvmtrace
