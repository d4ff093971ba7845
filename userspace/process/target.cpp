#include "process/target.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cerrno>
#include <cstdio>
#include <cstring>


namespace jvmtrace {

std::vector<Mapping> process_maps(pid_t pid) {
  std::vector<Mapping> out;
  std::string text;
  read_proc_file("/proc/" + std::to_string(pid) + "/maps", &text, kMaxMapsBytes);
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();  // (cut at the cap: the line may be partial)
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    // start-end perms offset dev inode [path]; the path may hold spaces.
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8];
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4)
      continue;
    Mapping m{start, end, offset, perms, {}};
    if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) m.path = line.substr(path_at);
    out.push_back(std::move(m));
  }
  return out;
}

bool is_libjvm_mapping(const Mapping& m) {
  static const std::string kLib = "/libjvm.so";
  return m.path.size() >= kLib.size() && m.path[0] == '/' &&
         m.path.compare(m.path.size() - kLib.size(), kLib.size(), kLib) == 0;
}

uint64_t libjvm_map_start(pid_t pid) {
  for (const Mapping& m : process_maps(pid))
    if (is_libjvm_mapping(m) && m.offset == 0) return m.start;
  return 0;
}

bool libjvm_text_range(pid_t pid, uint64_t* lo, uint64_t* hi) {
  *lo = UINT64_MAX;
  *hi = 0;
  for (const Mapping& m : process_maps(pid)) {
    if (!is_libjvm_mapping(m) || m.perms.find('x') == std::string::npos) continue;
    *lo = std::min<uint64_t>(*lo, m.start);
    *hi = std::max<uint64_t>(*hi, m.end);
  }
  return *hi > *lo;
}

bool read_proc_file(const std::string& path, std::string* out, size_t max) {
  out->clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  bool ok = true;
  while (out->size() < max) {
    const ssize_t n = read(fd, buf, std::min(sizeof buf, max - out->size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ok;
}

bool process_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::string s;
  if (!read_proc_file("/proc/" + std::to_string(pid) + "/stat", &s)) return kill(pid, 0) == 0 || errno != ESRCH;
  auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

bool PinnedPid::open(pid_t pid) {
  pid_ = pid;
  fd_.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  return fd_.valid();
}

bool PinnedPid::alive() const {
  if (!fd_.valid()) return false;
  // A pidfd is readable once its process has exited (zombie or reaped).
  pollfd p{fd_.get(), POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

std::string read_process_memory(pid_t pid, uint64_t addr, size_t len) {
  std::string buf(len, '\0');
  iovec local{buf.data(), len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n <= 0) return {};
  buf.resize(static_cast<size_t>(n));
  return buf;
}

std::string read_process_string(pid_t pid, uint64_t addr, size_t max, bool* terminated) {
  std::string out;
  if (terminated) *terminated = false;
  while (out.size() < max) {
    const size_t step = std::min<size_t>(64, max - out.size());
    std::string chunk = read_process_memory(pid, addr + out.size(), step);
    if (chunk.empty()) break;
    const size_t nul = chunk.find('\0');
    if (nul != std::string::npos) {
      if (terminated) *terminated = true;
      return out + chunk.substr(0, nul);
    }
    out += chunk;
  }
  return out;
}

std::string thread_name(pid_t pid, uint32_t tid) {
  std::string s;
  read_proc_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm", &s, 64);
  const size_t nl = s.rfind('\n');  // the kernel's line end (a name may hold newlines of its own)
  if (nl != std::string::npos && nl + 1 == s.size()) s.pop_back();
  return s;
}

std::string process_cmdline(pid_t pid) {
  std::string s;
  if (!read_proc_file("/proc/" + std::to_string(pid) + "/cmdline", &s)) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  return s;
}

std::map<std::string, int> usdt_probe_args(const std::string& elf_path, const std::string& provider) {
  std::map<std::string, int> probes;
  if (elf_version(EV_CURRENT) == EV_NONE) return probes;
  int fd = open(elf_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return probes;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t shstrndx = 0;
  if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
      const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
      // A patched libjvm.so's notes are ~10 KiB: a larger section is not read.
      if (!name || std::strcmp(name, ".note.stapsdt") != 0 || sh.sh_size > kMaxUsdtNoteBytes) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      GElf_Nhdr nh;
      size_t off = 0, name_off, desc_off;
      while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        // desc: pc, base, semaphore (3 addresses of 8 bytes), then "provider\0name\0args\0"
        if (nh.n_type != 3 || nh.n_descsz <= 24) continue;
        const char* desc = static_cast<const char*>(data->d_buf) + desc_off + 24;
        const size_t left = nh.n_descsz - 24;
        const size_t plen = strnlen(desc, left);
        if (plen != provider.size() || provider.compare(0, plen, desc, plen) != 0 || plen + 1 >= left) continue;
        const char* probe = desc + plen + 1;
        const size_t nlen = strnlen(probe, left - plen - 1);
        // The arguments: "size@location" each, separated by spaces.
        int args = 0;
        if (plen + 1 + nlen + 1 < left) {
          const char* a = probe + nlen + 1;
          const size_t alen = strnlen(a, left - plen - 1 - nlen - 1);
          bool in = false;
          for (size_t i = 0; i < alen; i++) {
            if (a[i] != ' ' && !in) args++;
            in = a[i] != ' ';
          }
        }
        int& kept = probes[std::string(probe, nlen)];
        kept = std::max(kept, args);
      }
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return probes;
}

std::set<std::string> usdt_probe_names(const std::string& elf_path, const std::string& provider) {
  std::set<std::string> names;
  for (const auto& [name, args] : usdt_probe_args(elf_path, provider)) names.insert(name);
  return names;
}

bool has_usdt_provider(const std::string& elf_path, const std::string& provider) {
  return !usdt_probe_names(elf_path, provider).empty();
}

}  // namespace jvmtrace
