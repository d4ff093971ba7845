#include "daemon/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jvmtrace {

Worker::~Worker() {
  if (pid_ > 0) kill_now();
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool Worker::start(const std::string& exe, const std::vector<std::string>& args, std::string* error) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return false;
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return false;
  }
  if (pid_ == 0) {
    // The child: its own process group, so a Ctrl-C at the daemon's
    // terminal reaches the daemon, which then detaches it in order.
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(exe.c_str(), argv.data());
    dprintf(err[1], "cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  return true;
}

bool Worker::read_some(int fd, std::string* out) {
  if (fd < 0) return false;
  char buf[65536];
  bool any = false;
  for (int i = 0; i < 16; i++) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      any = true;
      continue;
    }
    break;  // 0: EOF (the worker is exiting), <0: EAGAIN or an error
  }
  return any;
}

void Worker::read_stdout() {
  std::string chunk;
  if (!read_some(out_fd_, &chunk)) return;
  out_buf_ += chunk;
  static const std::string kEnd = "# EOF\n";
  size_t end;
  while ((end = out_buf_.find(kEnd)) != std::string::npos) {
    metrics_ = out_buf_.substr(0, end);
    out_buf_.erase(0, end + kEnd.size());
  }
  if (out_buf_.size() > (8u << 20)) out_buf_.clear();  // a worker gone wrong: do not grow without bound
}

void Worker::stop(double at) {
  if (stopping) return;
  if (pid_ > 0) ::kill(pid_, SIGINT);
  stopping = true;
  kill_at = at;
}

void Worker::kill() {
  if (pid_ > 0 && !killed) ::kill(pid_, SIGKILL);
  killed = true;
}

void Worker::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool Worker::reap(int* status) {
  if (pid_ <= 0) return true;
  const pid_t r = waitpid(pid_, status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    pid_ = -1;
    return true;
  }
  return false;
}

}  // namespace jvmtrace
