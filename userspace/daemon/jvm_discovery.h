// Finding the JVMs on this host: every process that maps a libjvm.so, seen
// through /proc (so JVMs in containers count: their libjvm.so is the mapped
// file itself, and their PID inside their namespace is shown).  It reads
// every new process's files: it runs in the scanner's child process
// (daemon/scanner.h), never in the daemon's loop.
#pragma once
#include <sys/types.h>

#include <cstdint>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/identity.h"

namespace jvmtrace {

class TargetFile;

struct JvmProcess {
  pid_t pid = 0;        // in the daemon's (the host's) PID namespace
  pid_t ns_pid = 0;     // in the JVM's own PID namespace (== pid outside containers)
  unsigned long long start_time = 0;  // /proc/PID/stat field 22: tells a reused PID apart
  std::string comm;     // /proc/PID/comm (the target's text: printable() it)
  std::string libjvm;   // how messages name its libjvm.so (the target's text)
  bool patched = false; // libjvm.so declares jvmtrace probes
  // Identity for the metrics (docs/daemon.md, "Metrics"); the target's text,
  // printable() and cut to kMaxIdentity bytes by the scanner.
  std::string application;  // -Djvmtrace.app=NAME, else the main class or the -jar file's name; "" if none
  bool application_set = false;  // application came from -Djvmtrace.app=NAME
  std::string container;    // container_of() its /proc/PID/cgroup: a runtime's, 12 hex digits; "" if none
};

constexpr size_t kMaxIdentity = 128;

class JvmDiscovery {
 public:
  // Rescans /proc.  Maps are read only for processes not seen before, so a
  // scan costs a directory listing plus one maps file per new process.
  void scan(std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited);
  const std::map<pid_t, JvmProcess>& jvms() const { return jvms_; }
  // Called with (pid, start time) before a process's files are read.
  std::function<void(pid_t, unsigned long long)> before_check;
  // Processes never to look at (pid, start time): reading them hung before.
  std::set<std::pair<pid_t, unsigned long long>> skip;

 private:
  bool check(pid_t pid, unsigned long long start_time);  // a JVM now? (adds it to jvms_)

  struct Seen {
    unsigned long long start_time;  // /proc/PID/stat field 22: tells a reused PID apart
    bool jvm;
    int rechecks;                   // a new process may map libjvm.so a moment after exec
  };
  std::map<pid_t, Seen> seen_;
  std::map<pid_t, JvmProcess> jvms_;
  // Whether a libjvm.so declares jvmtrace probes, by the file's identity
  // (device, inode, size, modification and change times): a file rewritten
  // in place, or an inode number reused, is looked at again.  At most
  // kMaxPatchedEntries, the least recently used evicted: any user can make
  // new libjvm.so files (issue 33).
  struct PatchedEntry {
    bool patched;
    uint64_t used;  // scan_clock_ when last asked for
  };
  using FileKey = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t, int64_t, int64_t>;
  static constexpr size_t kMaxPatchedEntries = 256;
  std::map<FileKey, PatchedEntry> patched_;
  uint64_t patched_clock_ = 0;
  bool patched(const TargetFile& lib);
};

}  // namespace jvmtrace
