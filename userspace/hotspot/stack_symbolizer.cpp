#include "hotspot/stack_symbolizer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "base/strings.h"
#include "process/target.h"
#include "process/target_file.h"

namespace jvmtrace {

namespace {

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
  root_fd_ = open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ProcessCreds creds;
  std::string error;
  if (root_fd_ >= 0 && read_process_creds(pid, &creds, &error)) {
    uid_ = creds.euid;
    // The perf map's directory, held from now on: the map HotSpot writes at
    // exit (-XX:+DumpPerfMapAtExit) stays readable when /tmp was a mount of
    // the JVM's own namespace, which goes with the JVM.
    tmp_fd_ = open_target_dir(root_fd_, "tmp", &error);
    perf_rel_ = (tmp_fd_ >= 0 ? "" : "tmp/") + std::string("perf-") + std::to_string(creds.nspid) + ".map";
  }
}

StackSymbolizer::~StackSymbolizer() {
  if (root_fd_ >= 0) close(root_fd_);
  if (tmp_fd_ >= 0) close(tmp_fd_);
}

void StackSymbolizer::read_maps() {
  maps_.clear();
  for (const jvmtrace::Mapping& m : process_maps(pid_)) {
    if (m.perms.size() < 3 || m.perms[2] != 'x') continue;
    maps_.push_back({m.start, m.end, m.offset, m.path.empty() || m.path[0] != '/' ? std::string() : m.path});
  }  // [vdso], [stack]: no file
  std::sort(maps_.begin(), maps_.end(), [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  maps_read_ns_ = monotonic_ns();
}

const StackSymbolizer::Mapping* StackSymbolizer::mapping(uint64_t ip) {
  for (int attempt = 0; attempt < 2; attempt++) {
    auto it = std::upper_bound(maps_.begin(), maps_.end(), ip, [](uint64_t v, const Mapping& m) { return v < m.start; });
    if (it != maps_.begin() && ip < std::prev(it)->end) return &*std::prev(it);
    // New code (a library loaded, the code cache grown): re-read, at most
    // ten times a second.
    if (attempt == 0 && monotonic_ns() - maps_read_ns_ > 100000000) read_maps();
    else break;
  }
  return nullptr;
}

std::string StackSymbolizer::native_frame(uint64_t ip, bool* in_file) {
  if (maps_.empty()) read_maps();
  const Mapping* m = mapping(ip);
  *in_file = m && !m->path.empty();
  return *in_file ? frame(ip) : std::string();
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
  auto found = elves_.find(m->path);
  if (found == elves_.end()) {
    // The mapped file itself (map_files), checked to be a regular file:
    // whatever the target's root now holds at that name is not looked at.
    std::shared_ptr<const ElfSymbols> e;
    std::string error;
    TargetFile f;
    if (open_mapped_file(pid_, jvmtrace::Mapping{m->start, m->end, m->offset, "", m->path}, kMaxElfBytes, &f,
                         &error))
      e = shared_elf_symbols(f.path(), &error, false);
    found = elves_.emplace(m->path, std::move(e)).first;
  }
  const auto& elf = found->second;
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
  if (perf_rel_.empty()) return false;
  // No symlink, a file of the JVM's user: whatever the target plants at
  // this name cannot make root read a file it could not read itself.
  struct stat st;
  std::string problem;
  const int fd = open_target_file(perf_dir_fd(), perf_rel_, uid_, UINT64_MAX, &problem, perf_dir_shown());
  if (fd < 0) {
    if (errno == ENOENT) return false;  // not written (yet)
    if (problem != perf_problem_)
      std::fprintf(stderr, "jvmtrace record: perf map: %s; JIT-compiled Java frames stay unnamed\n", printable(problem).c_str());
    perf_problem_ = problem;
    return false;
  }
  perf_problem_.clear();
  if (fstat(fd, &st) != 0) {
    close(fd);
    return false;
  }
  const uint64_t mtime = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  if (mtime == perf_mtime_ns_ && static_cast<uint64_t>(st.st_size) == perf_size_) {
    close(fd);
    return false;
  }
  // Read with read(2) up to hard limits, whatever the file's size said: the
  // JVM's user writes this file, may grow it while it is read, and a line
  // costs this process more than its bytes.  What is past a limit is not
  // read (said once).
  std::vector<PerfSym> syms;
  std::string chunk(64 << 10, '\0'), line;
  uint64_t bytes = 0;
  bool cut = false;
  auto take = [&](const std::string& l) {
    char* end = nullptr;
    const uint64_t start = std::strtoull(l.c_str(), &end, 16);
    if (!end || *end != ' ') return;
    char* end2 = nullptr;
    const uint64_t size = std::strtoull(end + 1, &end2, 16);
    if (!end2 || *end2 != ' ' || !size) return;
    syms.push_back({start, size, java_name(end2 + 1)});
  };
  for (;;) {
    const ssize_t n = read(fd, chunk.data(), std::min<uint64_t>(chunk.size(), kMaxPerfMapBytes - bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes += static_cast<uint64_t>(n);
    for (ssize_t i = 0; i < n; i++) {
      const char c = chunk[static_cast<size_t>(i)];
      if (c != '\n') {
        if (line.size() < kMaxPerfMapLine) line += c;
        continue;
      }
      take(line);
      line.clear();
    }
    if (syms.size() >= kMaxPerfMapEntries || bytes >= kMaxPerfMapBytes) {
      cut = true;
      break;
    }
  }
  if (!line.empty() && !cut) take(line);
  close(fd);
  if (syms.size() > kMaxPerfMapEntries) syms.resize(kMaxPerfMapEntries);
  if (cut && !perf_cut_told_) {
    std::fprintf(stderr, "jvmtrace record: perf map: more than %zu entries or %llu MiB: the rest is not read (its JIT "
                 "code stays unnamed)\n", kMaxPerfMapEntries, (unsigned long long)(kMaxPerfMapBytes >> 20));
    perf_cut_told_ = true;
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

bool StackSymbolizer::perf_map_fit_to_write(std::string* why) const {
  if (perf_rel_.empty()) {
    *why = "cannot find the target's root directory or user";
    return false;
  }
  return target_file_fit_to_write(perf_dir_fd(), perf_rel_, uid_, why, perf_dir_shown());
}

bool PerfMapRefresher::start(double timeout_s) {
  if (op_.running()) return false;
  last_start_ns_ = monotonic_ns();
  // HotSpot opens the file with fopen("w") from VM code: a FIFO planted
  // there would stall its attach listener (and, at exit, the whole VM at
  // its last safepoint); a symlink would redirect the JVM's write.
  std::string why;
  if (!where_.perf_map_fit_to_write(&why)) {
    why += ": the JVM is not asked to write its perf map";
    if (problem_ != why) std::fprintf(stderr, "jvmtrace record: perf map: %s\n", printable(why).c_str());
    problem_ = why;
    backoff_until_ns_ = monotonic_ns() + interval_ns_;
    return false;
  }
  if (op_.start(target_.pid(), "Compiler.perfmap", timeout_s, target_.fd())) return true;
  finished();
  return false;
}

bool PerfMapRefresher::finished() {
  switch (op_.status()) {
    case AttachStatus::kOk:
      problem_.clear();
      return true;
    case AttachStatus::kNotReady:
      // Asked again soon; said once.
      soon_ = true;
      if (!told_not_ready_)
        std::fprintf(stderr, "jvmtrace record: perf map: %s; asking again until it does\n",
                     printable(op_.message()).c_str());
      told_not_ready_ = true;
      problem_ = op_.message();
      return false;
    default:
      // Not retried early: a refusal or a failure would only repeat.
      if (problem_ != op_.message())
        // (the JVM's own answer, up to 4 KiB of its text)
        std::fprintf(stderr, "jvmtrace record: perf map: %s\n", printable(op_.message()).c_str());
      problem_ = op_.message();
      backoff_until_ns_ = monotonic_ns() + interval_ns_;
      return false;
  }
}

bool PerfMapRefresher::poll(uint64_t now_ns, bool soon) {
  const bool done = op_.running() && op_.poll(false) && finished();
  soon_ |= soon;
  const uint64_t wait = soon_ ? std::min<uint64_t>(interval_ns_, 250000000) : interval_ns_;
  if (!op_.running() && now_ns - last_start_ns_ >= wait && now_ns >= backoff_until_ns_) {
    soon_ = false;
    start(10);
  }
  return done;
}

void PerfMapRefresher::finish(double timeout_s) {
  if (op_.running()) {
    op_.poll(true);
    finished();
  }
  if (timeout_s > 0) run_now(timeout_s);
}

bool PerfMapRefresher::run_now(double timeout_s) {
  if (op_.running()) {
    op_.poll(true);
    finished();
  }
  if (!start(timeout_s)) return false;
  op_.poll(true);
  return finished();
}

}  // namespace jvmtrace
