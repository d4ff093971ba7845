#include "daemon/jvm_discovery.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "daemon/identity.h"
#include "process/target.h"
#include "process/target_file.h"

namespace jvmtrace {

namespace {

unsigned long long start_time(pid_t pid) {
  std::string s;
  if (!read_proc_file("/proc/" + std::to_string(pid) + "/stat", &s)) return 0;
  const size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; i++)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

pid_t ns_pid(pid_t pid) {
  std::string status;
  read_proc_file("/proc/" + std::to_string(pid) + "/status", &status, 64 << 10);
  std::istringstream f(status);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, 6, "NSpid:") != 0) continue;
    std::istringstream in(line.substr(6));
    long v = pid, last = pid;
    while (in >> v) last = v;
    return static_cast<pid_t>(last);
  }
  return pid;
}

std::vector<std::string> cmdline(pid_t pid) {
  std::string s;
  std::vector<std::string> argv;
  if (!read_proc_file("/proc/" + std::to_string(pid) + "/cmdline", &s, 256 << 10)) return argv;
  for (size_t a = 0; a < s.size();) {
    size_t z = s.find('\0', a);
    if (z == std::string::npos) z = s.size();
    argv.push_back(s.substr(a, z - a));
    a = z + 1;
  }
  return argv;
}

// Cut to at most n bytes, never inside a UTF-8 sequence.
std::string cut(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) end--;
  return s.substr(0, end);
}

}  // namespace

void JvmDiscovery::scan(std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited) {
  std::set<pid_t> alive;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end || pid <= 0) continue;
      alive.insert(static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  for (auto it = seen_.begin(); it != seen_.end();) {
    const bool gone = !alive.count(it->first) || start_time(it->first) != it->second.start_time;
    if (gone) {
      auto j = jvms_.find(it->first);
      if (j != jvms_.end()) {
        exited->push_back(j->second);
        jvms_.erase(j);
      }
      it = seen_.erase(it);
    } else {
      ++it;
    }
  }
  for (pid_t pid : alive) {
    auto s = seen_.find(pid);
    if (s == seen_.end()) {
      // A process seen for the first time gets looked at for 10 scans: the
      // java launcher maps libjvm.so only after it has started.
      s = seen_.emplace(pid, Seen{start_time(pid), false, 10}).first;
    }
    if (s->second.jvm || s->second.rechecks <= 0) continue;
    s->second.rechecks--;
    if (skip.count({pid, s->second.start_time})) continue;
    if (before_check) before_check(pid, s->second.start_time);
    if (!check(pid, s->second.start_time)) continue;
    s->second.jvm = true;
    appeared->push_back(jvms_[pid]);
  }
}

bool JvmDiscovery::check(pid_t pid, unsigned long long start_time) {
  // The mapped file itself, a regular file (process/target_file.h): no
  // name the target controls is opened, so nothing it plants there (a FIFO,
  // a device, a symlink to a host file) is ever reached.
  TargetFile lib;
  std::string error;
  if (!open_libjvm(pid, &lib, &error)) return false;
  {
    JvmProcess j;
    j.pid = pid;
    j.start_time = start_time;
    j.ns_pid = ns_pid(pid);
    j.comm = thread_name(pid, static_cast<uint32_t>(pid));
    j.libjvm = lib.shown();
    j.application = cut(application_of(cmdline(pid), &j.application_set), kMaxIdentity);
    std::string cgroup;
    read_proc_file("/proc/" + std::to_string(pid) + "/cgroup", &cgroup, 64 << 10);
    j.container = container_of(cgroup);
    j.patched = patched(lib);
    jvms_[pid] = j;
  }
  return true;
}

bool JvmDiscovery::patched(const TargetFile& lib) {
  struct stat st;
  if (fstat(lib.fd(), &st) != 0) return has_usdt_provider(lib.path(), "jvmtrace");  // (not kept)
  const FileKey key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                    st.st_ctim.tv_nsec};
  auto p = patched_.find(key);
  if (p == patched_.end()) {
    if (patched_.size() >= kMaxPatchedEntries) {
      auto oldest = patched_.begin();
      for (auto it = patched_.begin(); it != patched_.end(); ++it)
        if (it->second.used < oldest->second.used) oldest = it;
      patched_.erase(oldest);
    }
    p = patched_.emplace(key, PatchedEntry{has_usdt_provider(lib.path(), "jvmtrace"), 0}).first;
  }
  p->second.used = ++patched_clock_;
  return p->second.patched;
}

}  // namespace jvmtrace
