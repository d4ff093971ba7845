// `jvmtrace stat|record [OPTIONS] -- COMMAND [ARGS...]`: start a program,
// hold its JVM at start-up (HotSpot's -XX:+PauseAtStartup) until the tracer
// is attached, then let it go and pass the program's exit status on.
//
// The hold: HotSpot creates ./vm.paused.<PID> in its working directory and
// waits while the file exists.  The JVM is the first process of COMMAND's
// tree (jvmtrace is a child subreaper, so orphans stay in it) with that file
// in its working directory; deleting the file lets it go.  Details and the
// reasons: docs/decisions.md (39-45), docs/stat.md ("Launching a program").
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace jvmtrace {

// The HotSpot flags that hold a JVM at start-up, in the order given.
extern const char* const kHoldFlags[2];

class Launch {
 public:
  // cmd prefixes every message ("jvmtrace record").
  Launch(const char* cmd, bool verbose) : cmd_(cmd), verbose_(verbose) {}
  ~Launch();  // lets a JVM still held go, saying so
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  // Starts argv (argv[0] resolved through PATH, as a shell does) with the
  // hold flags: right after argv[0] when it is a java launcher (an ELF file
  // named java), else appended to JDK_JAVA_OPTIONS.  Its standard streams,
  // process group and signal dispositions are jvmtrace's.  From here on
  // SIGINT, SIGTERM, SIGHUP and SIGQUIT never end jvmtrace: sent to jvmtrace
  // by a process they are passed to COMMAND; from the terminal COMMAND has
  // its own copy.  False after saying why (start_status(): 127 not found,
  // 126 not executable, 1 other).
  bool start(char* const* argv);
  int start_status() const { return start_status_; }

  // Waits until a JVM of COMMAND's tree is held at start-up and returns its
  // PID; 0 after saying why when none is within timeout_s, or COMMAND's tree
  // ended first (wait() then returns its status at once).
  pid_t wait_for_jvm(double timeout_s);

  // Lets the held JVM go (deletes its pause file).  attached: the tracer is
  // attached; otherwise the JVM is said to run untraced.  Once only.
  void release(bool attached);

  // For the tracers' loops: lets any other JVM of COMMAND's tree that is
  // held go, untraced, saying so (they inherit JDK_JAVA_OPTIONS).  Scans at
  // most every 100 ms.
  void tick();

  // Waits for COMMAND to exit, letting JVMs it starts meanwhile go, and
  // returns its status as a shell reports it (128+N: killed by signal N).
  int wait();

  pid_t command_pid() const { return child_; }

 private:
  struct Held {
    pid_t pid;
    std::string name;  // vm.paused.<PID in the JVM's own PID namespace>
  };
  // Every process of COMMAND's tree held at start-up, oldest first.
  std::vector<Held> held() const;
  // Deletes the pause file of h (a directory fd of its working directory:
  // the file goes even if the JVM has died).  False with *error.
  static bool unhold(int dir_fd, const std::string& name, std::string* error);
  void let_go_others();
  bool command_exited();

  std::string cmd_;
  bool verbose_;
  int start_status_ = 1;
  std::string command_;  // argv[0] as given, for messages
  pid_t child_ = 0;
  int pidfd_ = -1;
  bool reaped_ = false;
  int status_ = 0;  // as a shell reports it, once reaped_
  pid_t jvm_ = 0;
  int jvm_dir_ = -1;  // the held JVM's working directory
  std::string jvm_file_;
  bool jvm_held_ = false;
  std::set<pid_t> let_go_;  // other JVMs let go (said once each)
  uint64_t next_scan_ns_ = 0;
};

// The whole form: starts argv, waits (at most timeout_s) for its JVM, calls
// trace(pid, launch), which must call launch.release(true) once attached and
// launch.tick() in its loop, and returns COMMAND's exit status (or
// start_status() if it could not start).  traced: whether trace ran.
int launch_and_trace(const char* cmd, char* const* argv, double timeout_s, bool verbose,
                     const std::function<int(pid_t, Launch&)>& trace, bool* traced = nullptr);

// The form's parsing: argv[optind - 1] is "--" that getopt stopped at (not
// an option's argument: last_optarg), so argv[optind..] is COMMAND.
bool command_follows(int argc, char** argv, int optind, const char* last_optarg);

}  // namespace jvmtrace
