#include "stack_symbolizer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace jvmtrace {

namespace {

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// "long AllocWorker.work(int)" -> "AllocWorker.work"; "Interpreter" stays.
std::string java_name(const std::string& s) {
  const size_t paren = s.find('(');
  if (paren == std::string::npos) return s;
  std::string head = s.substr(0, paren);
  while (!head.empty() && head.back() == ' ') head.pop_back();
  const size_t sp = head.rfind(' ');
  return sp == std::string::npos ? head : head.substr(sp + 1);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

StackSymbolizer::StackSymbolizer(pid_t pid) : pid_(pid) {
  const std::string name = "/tmp/perf-" + std::to_string(pid) + ".map";
  perf_path_ = "/proc/" + std::to_string(pid) + "/root" + name;
  struct stat theirs, ours;
  if (stat(("/proc/" + std::to_string(pid) + "/root/").c_str(), &theirs) == 0 && stat("/", &ours) == 0 &&
      theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)
    perf_path_after_exit_ = name;
}

void StackSymbolizer::read_maps() {
  maps_.clear();
  std::ifstream in("/proc/" + std::to_string(pid_) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    uint64_t start, end, offset;
    char perms[8];
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end, perms, &offset,
                    &path_at) < 4 || perms[2] != 'x')
      continue;
    std::string path = path_at > 0 && static_cast<size_t>(path_at) < line.size() ? line.substr(path_at) : "";
    if (!path.empty() && path[0] != '/') path.clear();  // [vdso], [stack]: no file
    maps_.push_back({start, end, offset, path});
  }
  std::sort(maps_.begin(), maps_.end(), [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  maps_read_ns_ = mono_ns();
}

const StackSymbolizer::Mapping* StackSymbolizer::mapping(uint64_t ip) {
  for (int attempt = 0; attempt < 2; attempt++) {
    auto it = std::upper_bound(maps_.begin(), maps_.end(), ip, [](uint64_t v, const Mapping& m) { return v < m.start; });
    if (it != maps_.begin() && ip < std::prev(it)->end) return &*std::prev(it);
    // New code (a library loaded, the code cache grown): re-read, at most
    // ten times a second.
    if (attempt == 0 && mono_ns() - maps_read_ns_ > 100000000) read_maps();
    else break;
  }
  return nullptr;
}

std::string StackSymbolizer::frame(uint64_t ip) {
  if (maps_.empty()) read_maps();
  const Mapping* m = mapping(ip);
  // The JIT's code: the perf map names it.
  // The entry starting last at or before ip; a few before it too, in case a
  // small blob sits inside a larger one.
  auto perf = std::upper_bound(perf_.begin(), perf_.end(), ip, [](uint64_t v, const PerfSym& s) { return v < s.start; });
  for (int back = 0; back < 8 && perf != perf_.begin(); back++) {
    --perf;
    if (ip < perf->start + perf->size) return perf->name + "_[j]";
  }
  if (!m) return "[unknown]";
  if (m->path.empty()) {
    unresolved_jit_++;
    return "[unknown JIT code]";
  }
  auto& elf = elves_[m->path];
  if (!elf) {
    auto e = std::make_unique<ElfSymbols>();
    std::string error;
    if (e->load("/proc/" + std::to_string(pid_) + "/root" + m->path, &error, false)) elf = std::move(e);
  }
  char off[48];
  const uint64_t file_off = ip - m->start + m->offset;
  if (elf) {
    // Shared objects map file offset o at vaddr o + (first PT_LOAD's vaddr).
    const uint64_t vaddr = ip - elf->load_bias(m->start - m->offset);
    std::string name = elf->function_at(vaddr);
    if (!name.empty()) {
      const std::string lib = base_name(m->path);
      return lib.rfind("libjvm.so", 0) == 0 ? name : lib + "`" + name;
    }
  }
  std::snprintf(off, sizeof off, "+0x%" PRIx64 "]", file_off);
  return "[" + base_name(m->path) + off;
}

bool StackSymbolizer::load_perf_map() {
  std::string path = perf_path_;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    path = perf_path_after_exit_;  // the target is gone: its /tmp was ours
    if (path.empty() || stat(path.c_str(), &st) != 0) return false;
  }
  const uint64_t mtime = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  if (mtime == perf_mtime_ns_ && static_cast<uint64_t>(st.st_size) == perf_size_) return false;
  std::ifstream in(path);
  std::vector<PerfSym> syms;
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const uint64_t start = std::strtoull(line.c_str(), &end, 16);
    if (!end || *end != ' ') continue;
    char* end2 = nullptr;
    const uint64_t size = std::strtoull(end + 1, &end2, 16);
    if (!end2 || *end2 != ' ' || !size) continue;
    syms.push_back({start, size, java_name(end2 + 1)});
  }
  std::sort(syms.begin(), syms.end(), [](const PerfSym& a, const PerfSym& b) { return a.start < b.start; });
  perf_mtime_ns_ = mtime;
  perf_size_ = static_cast<uint64_t>(st.st_size);
  const bool changed = syms.size() != perf_.size() ||
                       !std::equal(syms.begin(), syms.end(), perf_.begin(), [](const PerfSym& a, const PerfSym& b) {
                         return a.start == b.start && a.size == b.size && a.name == b.name;
                       });
  perf_ = std::move(syms);
  return changed;
}

PerfMapRefresher::PerfMapRefresher(pid_t pid, double interval_s)
    : pid_(pid), interval_ns_(static_cast<uint64_t>(interval_s * 1e9)) {
  // The target's own JDK: .../bin/java -> .../bin/jcmd, seen from its root.
  char exe[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = readlink(link.c_str(), exe, sizeof exe - 1);
  if (n <= 0) {
    problem_ = "cannot read " + link;
    return;
  }
  exe[n] = 0;
  std::string bin(exe);
  bin = bin.substr(0, bin.rfind('/') + 1);
  jcmd_ = "/proc/" + std::to_string(pid) + "/root" + bin + "jcmd";
  if (access(jcmd_.c_str(), X_OK) != 0) {
    problem_ = "no jcmd next to the target's java (" + bin + "jcmd)";
    jcmd_.clear();
  }
}

PerfMapRefresher::~PerfMapRefresher() {
  if (child_ > 0) {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }
}

bool PerfMapRefresher::start() {
  if (jcmd_.empty() || child_ > 0) return false;
  const pid_t c = fork();
  if (c < 0) return false;
  if (c == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    const std::string pid = std::to_string(pid_);
    execl(jcmd_.c_str(), "jcmd", pid.c_str(), "Compiler.perfmap", static_cast<char*>(nullptr));
    _exit(127);
  }
  child_ = c;
  last_start_ns_ = mono_ns();
  return true;
}

bool PerfMapRefresher::reap(bool wait) {
  if (child_ <= 0) return false;
  int status = 0;
  if (waitpid(child_, &status, wait ? 0 : WNOHANG) != child_) return false;
  child_ = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool PerfMapRefresher::poll(uint64_t now_ns, bool soon) {
  const bool done = reap(false);
  soon_ |= soon;
  const uint64_t wait = soon_ ? std::min<uint64_t>(interval_ns_, 250000000) : interval_ns_;
  if (child_ <= 0 && now_ns - last_start_ns_ >= wait && start()) soon_ = false;
  return done;
}

void PerfMapRefresher::finish(double timeout_s) {
  const uint64_t deadline = mono_ns() + 3000000000ull;
  while (child_ > 0 && mono_ns() < deadline && !reap(false)) usleep(20000);
  if (timeout_s > 0) run_now(timeout_s);
}

bool PerfMapRefresher::run_now(double timeout_s) {
  if (!start()) return false;
  const uint64_t deadline = mono_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  while (mono_ns() < deadline) {
    if (child_ <= 0) return false;
    int status = 0;
    const pid_t r = waitpid(child_, &status, WNOHANG);
    if (r == child_) {
      child_ = -1;
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    usleep(20000);
  }
  return false;  // still running: poll() reaps it later
}

}  // namespace jvmtrace
