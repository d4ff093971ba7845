// One attachment = one worker process: the jvmtrace binary itself, running
// `stat --prometheus` or `record`.  The daemon never attaches in its own
// process: a failing attachment cannot take it (or the others) down, and
// there is one implementation of attach, detach and trace writing.
// Detach = SIGINT, which runs the worker's normal cleanup (links
// destroyed, trace flushed and ended).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace jvmtrace {

class Worker {
 public:
  enum Kind { kStat, kRecord };
  Worker(Kind kind, pid_t target) : kind_(kind), target_(target) {}
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts exe with args; its stdout and stderr come back through fds the
  // caller polls (read_stdout / read_stderr).  False with *error.
  bool start(const std::string& exe, const std::vector<std::string>& args, std::string* error);

  // Consume what the worker printed (at most 1 MiB per call, so a chatty
  // worker cannot keep the daemon's loop to itself).  Stdout: complete
  // "# EOF"-terminated Prometheus blocks (stat); stderr: lines handed to log.
  void read_stdout();
  template <typename Log>
  void read_stderr(Log log) {
    std::string chunk;
    if (!read_some(err_fd_, &chunk)) return;
    err_buf_ += chunk;
    size_t nl;
    while ((nl = err_buf_.find('\n')) != std::string::npos) {
      log(err_buf_.substr(0, nl));
      err_buf_.erase(0, nl + 1);
    }
  }

  // SIGINT (detach): the worker's own cleanup.  If it has not exited by
  // kill_at (monotonic seconds), the daemon kills it (kill()).  reap() tells
  // when it has exited.
  void stop(double kill_at);
  void kill();             // SIGKILL, without waiting: reap() collects it
  bool reap(int* status);  // true once the process is gone
  void kill_now();         // SIGKILL and wait (shutdown, destructor)

  Kind kind() const { return kind_; }
  pid_t target() const { return target_; }
  pid_t pid() const { return pid_; }
  int out_fd() const { return out_fd_; }
  int err_fd() const { return err_fd_; }
  const std::string& metrics() const { return metrics_; }  // the last complete block
  std::string trace_path;                                  // kRecord
  // kStat: the JVM's identity labels (escaped, without braces) and its start
  // time (seconds since the epoch), for the metrics.
  std::string identity;
  double jvm_start_time = 0;
  bool stopping = false;
  bool killed = false;
  double kill_at = 0;
  double started_at = 0;

 private:
  static bool read_some(int fd, std::string* out);
  Kind kind_;
  pid_t target_;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_buf_, err_buf_, metrics_;
};

}  // namespace jvmtrace
