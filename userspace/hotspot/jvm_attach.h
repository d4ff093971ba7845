// A client of HotSpot's dynamic attach mechanism (the protocol jcmd speaks),
// safe for root to run against a JVM whose files, container and user it does
// not trust.  docs/security.md states the threat model.
//
// jvmtrace used to run the target's own `jcmd` (found through
// /proc/PID/root) as root: the container's owner chose what root executed.
// It also sent the attach SIGQUIT to JVMs that had not yet installed their
// handler, which kills them.  Here instead:
//  - nothing from the target's filesystem is executed;
//  - the operation runs in a child process confined to the target's root
//    directory, with the target's uid and gids and no capabilities, so it
//    can do nothing the target's own user could not;
//  - SIGQUIT is sent only while /proc/PID/status shows the JVM catches it
//    (SigCgt), through a pidfd (no PID reuse race), and never when the
//    listener socket already exists (a SIGQUIT then prints a thread dump);
//  - the socket must be a socket owned by the JVM's euid, and its listener,
//    by SO_PEERCRED, must be the target process itself.
#pragma once
#include <sys/types.h>

#include <string>

#include "process/target_file.h"

namespace jvmtrace {

// What /proc/PID/status tells about a process, as the attach client needs it.
struct ProcessCreds {
  uid_t ruid = 0, euid = 0;
  gid_t rgid = 0, egid = 0;
  pid_t nspid = 0;           // its PID in its own (innermost) PID namespace
  bool quit_caught = false;  // SigCgt has SIGQUIT: HotSpot's handler is installed
};
bool read_process_creds(pid_t pid, ProcessCreds* out, std::string* error);

enum class AttachStatus {
  kOk = 0,
  kRunning = 1,    // not finished yet
  kNotReady = 2,   // the JVM does not catch SIGQUIT (yet): not signalled
  kUntrusted = 3,  // a file or socket was not what the JVM would have made
  kTimeout = 4,
  kJvmError = 5,  // the JVM answered with an error
  kFailed = 6,    // anything else (the message says what)
  kGone = 7,      // the target exited
};

// One attach operation (for example jcmd "Compiler.perfmap"), run in a
// child process so the caller never blocks; poll() it.
class AttachOperation {
 public:
  AttachOperation() = default;
  ~AttachOperation();  // a child still running is killed and reaped
  AttachOperation(const AttachOperation&) = delete;
  AttachOperation& operator=(const AttachOperation&) = delete;

  // Starts `jcmd <command>` on pid, to finish within timeout_s.  False (and
  // status() says why) if it could not even start.  pidfd: the target's, held
  // since it was first looked at (PinnedPid; duplicated here), so that the
  // operation goes to that process and no later one of its number; -1: one is
  // opened now.
  bool start(pid_t pid, const std::string& command, double timeout_s, int pidfd = -1);
  // Whether it has finished (wait: block until it has).
  bool poll(bool wait);
  bool running() const { return child_ > 0; }

  AttachStatus status() const { return status_; }
  // For kOk, what the JVM printed (at most a few KiB); else why it failed.
  const std::string& message() const { return message_; }

 private:
  void finish_with(AttachStatus s, const std::string& m);
  pid_t child_ = -1;
  int report_fd_ = -1, pidfd_ = -1;
  uint64_t deadline_ns_ = 0;
  AttachStatus status_ = AttachStatus::kFailed;
  std::string message_, report_;
};

// Runs `jcmd <command>` on pid and waits for it.
AttachStatus jcmd(pid_t pid, const std::string& command, double timeout_s, std::string* message);

// The target's own files (its perf map) are opened with process/target_file.h.

}  // namespace jvmtrace
