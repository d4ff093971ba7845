// Finding the JVMs on this host: every process that maps a libjvm.so, seen
// through /proc (so JVMs in containers count: their libjvm.so is reached
// through /proc/PID/root, and their PID inside their namespace is shown).
#pragma once
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace jvmtrace {

struct JvmProcess {
  pid_t pid = 0;        // in the daemon's (the host's) PID namespace
  pid_t ns_pid = 0;     // in the JVM's own PID namespace (== pid outside containers)
  std::string comm;     // /proc/PID/comm
  std::string libjvm;   // reachable from here
  bool patched = false; // libjvm.so declares jvmtrace probes
};

class JvmDiscovery {
 public:
  // Rescans /proc.  Maps are read only for processes not seen before, so a
  // scan costs a directory listing plus one maps file per new process.
  void scan(std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited);
  const std::map<pid_t, JvmProcess>& jvms() const { return jvms_; }

 private:
  bool check(pid_t pid);  // a JVM now? (adds it to jvms_)

  struct Seen {
    unsigned long long start_time;  // /proc/PID/stat field 22: tells a reused PID apart
    bool jvm;
    int rechecks;                   // a new process may map libjvm.so a moment after exec
  };
  std::map<pid_t, Seen> seen_;
  std::map<pid_t, JvmProcess> jvms_;
  std::map<std::pair<dev_t, ino_t>, bool> patched_;  // by the libjvm.so file
};

}  // namespace jvmtrace
