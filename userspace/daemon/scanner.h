// Discovery outside the daemon's loop.  Looking at a process means reading
// its /proc files and its libjvm.so, and any process on the host can make
// such a read wait: a library on a FUSE mount whose server does not answer,
// a file behind a lease.  So a child process (a fork of jvmtraced, with no
// socket or worker of the daemon's) runs JvmDiscovery once a second and
// writes what it finds to a pipe; the loop only reads that pipe, never
// blocking.  A child that says it is examining a process and then falls
// silent for kStuckSeconds is killed and a new one started without that
// process (logged; it is never looked at again); a child silent otherwise
// for kSilentSeconds is replaced too.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/jvm_discovery.h"

namespace jvmtrace {

class Scanner {
 public:
  static constexpr double kStuckSeconds = 3, kSilentSeconds = 10;
  // The longest line a child may write (comm and a path, escaped).
  static constexpr size_t kMaxLine = 16 << 10;

  Scanner() = default;
  ~Scanner();
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  // Forks the first child (which closes every descriptor but its pipes and
  // stderr: the daemon's sockets stay the daemon's); false with *error.
  bool start(std::string* error);
  // What to poll for input (-1 while no child runs).
  int fd() const { return from_child_; }
  // Reads what the child wrote: JVMs that appeared and exited since.
  void read(double now, std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited);
  // A stuck or dead child is replaced (every loop round).
  void on_time(double now);
  // Ask the child to scan now (an attach names a PID not found yet).
  void poke();
  // Complete scans reported so far (a poke is answered by the next one).
  uint64_t scans() const { return scans_; }
  const std::map<pid_t, JvmProcess>& jvms() const { return jvms_; }
  // Processes given up on (pid, start time), and how many.
  size_t skipped() const { return skip_.size(); }

 private:
  bool spawn(double now);
  void stop_child();
  void line(const std::string& l, std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited);
  [[noreturn]] void child_main(int out, int in);

  pid_t child_ = -1;
  std::vector<pid_t> killed_;  // killed, not reaped yet
  int from_child_ = -1, to_child_ = -1;
  std::string buf_;
  double last_heard_ = 0, next_spawn_ = 0;
  // The process the child said it was examining, and since when (pid 0: none).
  pid_t examining_ = 0;
  unsigned long long examining_start_ = 0;
  double examining_since_ = 0;
  std::set<std::pair<pid_t, unsigned long long>> skip_;
  std::map<pid_t, JvmProcess> jvms_;
  // Since the current child started: the JVMs it reported (after a restart,
  // those it did not report by its first complete scan have exited).
  std::set<pid_t> reported_;
  bool first_scan_done_ = false;
  uint64_t scans_ = 0;
};

}  // namespace jvmtrace
