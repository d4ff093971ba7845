#include "hotspot/jvm_attach.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/clock.h"

namespace jvmtrace {

namespace {

// What the child reports back, at most: a jcmd's first lines are enough.
constexpr size_t kMaxReport = 4096;

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int pidfd_signal(int pidfd, int sig) { return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)); }

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

[[noreturn]] void child_exit(int report, AttachStatus s, const std::string& text) {
  const std::string t = text.substr(0, kMaxReport);
  size_t off = 0;
  while (off < t.size()) {
    const ssize_t n = write(report, t.data() + off, t.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  _exit(static_cast<int>(s));
}

// Becomes the target's user, inside the target's root, with no capabilities
// and no way to gain any: from here on this process can do nothing the
// target's own user could not.
void confine(int report, int pidfd, pid_t pid, const ProcessCreds& c) {
  // Nothing of the recorder's (trace file, BPF maps) stays open here.
  const unsigned lo = static_cast<unsigned>(std::min(report, pidfd)), hi = static_cast<unsigned>(std::max(report, pidfd));
  auto close_between = [](unsigned first, unsigned last) {
    return first > last || syscall(SYS_close_range, first, last, 0u) == 0;
  };
  if (!close_between(3, lo - 1) || !close_between(lo + 1, hi - 1) || !close_between(hi + 1, ~0u))
    child_exit(report, AttachStatus::kFailed, errno_text("close_range"));
  const int root = open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) child_exit(report, AttachStatus::kGone, errno_text("cannot open the target's root directory"));
  // The root we opened is the pidfd's process's, not a successor's.
  if (pidfd_signal(pidfd, 0) != 0) child_exit(report, AttachStatus::kGone, "the target exited");
  if (fchdir(root) != 0 || chroot(".") != 0 || chdir("/") != 0)
    child_exit(report, AttachStatus::kFailed, errno_text("cannot enter the target's root directory"));
  close(root);
  if (setgroups(0, nullptr) != 0 || setresgid(c.egid, c.egid, c.egid) != 0 ||
      setresuid(c.euid, c.euid, c.euid) != 0)
    child_exit(report, AttachStatus::kFailed, errno_text("cannot take the target's uid/gid"));
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, none) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    child_exit(report, AttachStatus::kFailed, errno_text("cannot drop capabilities"));
  // Not ptrace-able by the target's user, although it runs as that user.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

// Waits for the listener socket after SIGQUIT; true once it exists.
bool wait_for_socket(const std::string& sock, int pidfd, uint64_t deadline, struct stat* st) {
  useconds_t delay = 5000;
  while (lstat(sock.c_str(), st) != 0) {
    if (monotonic_ns() >= deadline || pidfd_signal(pidfd, 0) != 0) return false;
    usleep(delay);
    delay = std::min<useconds_t>(delay * 2, 100000);
  }
  return true;
}

[[noreturn]] void run_child(int report, int pidfd, pid_t pid, const ProcessCreds& c, const std::string& command,
                            uint64_t deadline) {
  confine(report, pidfd, pid, c);

  // HotSpot names both files after its own PID (its namespace's) in its
  // temp directory, which on Linux is always /tmp.
  const std::string ns = std::to_string(c.nspid);
  const std::string sock = "/tmp/.java_pid" + ns, trigger = "/tmp/.attach_pid" + ns;
  struct stat st;
  if (lstat(sock.c_str(), &st) != 0) {
    if (errno != ENOENT) child_exit(report, AttachStatus::kFailed, errno_text("cannot look at " + sock));
    // No listener yet: HotSpot starts one when SIGQUIT finds the trigger
    // file.  A JVM that does not catch SIGQUIT yet (still starting, or
    // -Xrs) would die of it: do not send it.
    if (!c.quit_caught)
      child_exit(report, AttachStatus::kNotReady, "the JVM does not handle SIGQUIT yet (still starting, or -Xrs)");
    bool created = false;
    const int fd = open(trigger.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
      created = true;
    } else if (errno != EEXIST) {
      child_exit(report, AttachStatus::kFailed, errno_text("cannot create " + trigger));
    } else if (lstat(trigger.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != c.euid && st.st_uid != 0)) {
      // Another client's trigger would be a file of the JVM's user or root.
      child_exit(report, AttachStatus::kUntrusted, trigger + " exists and is not a file of the JVM's user");
    }
    const bool sent = pidfd_signal(pidfd, SIGQUIT) == 0;
    const int sent_errno = errno;
    const bool up = sent && wait_for_socket(sock, pidfd, deadline, &st);
    if (created) unlink(trigger.c_str());
    if (!sent) {
      errno = sent_errno;
      child_exit(report, errno == ESRCH ? AttachStatus::kGone : AttachStatus::kFailed, errno_text("SIGQUIT"));
    }
    if (!up) {
      if (pidfd_signal(pidfd, 0) != 0) child_exit(report, AttachStatus::kGone, "the target exited");
      child_exit(report, AttachStatus::kTimeout, "the JVM opened no attach listener (" + sock + ") in time");
    }
  }
  if (!S_ISSOCK(st.st_mode) || st.st_uid != c.euid)
    child_exit(report, AttachStatus::kUntrusted,
               sock + " is not a socket of the JVM's uid " + std::to_string(c.euid) + " (owner " +
                   std::to_string(st.st_uid) + ")");

  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) child_exit(report, AttachStatus::kFailed, errno_text("socket"));
  const uint64_t now = monotonic_ns();
  const uint64_t left = deadline > now ? deadline - now : 1000000;
  timeval tv{static_cast<time_t>(left / 1000000000ull), static_cast<suseconds_t>(left % 1000000000ull / 1000)};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    child_exit(report, AttachStatus::kFailed, errno_text("cannot connect to " + sock));
  // The listener must be the target itself, not a process that got the name.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.pid != pid || peer.uid != c.euid)
    child_exit(report, AttachStatus::kUntrusted,
               sock + " is served by PID " + std::to_string(peer.pid) + " (uid " + std::to_string(peer.uid) +
                   "), not by the JVM");

  // Protocol 1: version, operation, three arguments, each NUL-terminated.
  std::string request("1\0jcmd\0", 7);
  request += command;
  request.append("\0\0\0", 3);
  for (size_t off = 0; off < request.size();) {
    const ssize_t n = write(s, request.data() + off, request.size() - off);
    if (n <= 0) child_exit(report, AttachStatus::kFailed, errno_text("cannot send the request"));
    off += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[4096];
  while (reply.size() < kMaxReport) {
    const ssize_t n = read(s, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      child_exit(report, errno == EAGAIN ? AttachStatus::kTimeout : AttachStatus::kFailed,
                 errno_text("reading the JVM's answer"));
    }
    reply.append(buf, static_cast<size_t>(n));
  }
  // The answer: the operation's result code on the first line, then output.
  if (reply.empty()) {
    if (pidfd_signal(pidfd, 0) != 0) child_exit(report, AttachStatus::kGone, "the target exited");
    child_exit(report, AttachStatus::kFailed, "the JVM closed the attach connection without an answer");
  }
  const size_t nl = reply.find('\n');
  const std::string code = reply.substr(0, nl);
  const std::string rest = nl == std::string::npos ? "" : reply.substr(nl + 1);
  if (code != "0")
    child_exit(report, AttachStatus::kJvmError, "the JVM answered " + code + (rest.empty() ? "" : ": " + rest));
  child_exit(report, AttachStatus::kOk, rest);
}

}  // namespace

bool read_process_creds(pid_t pid, ProcessCreds* out, std::string* error) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  bool uid = false, gid = false, nspid = false, sigcgt = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
    if (line.rfind("Uid:", 0) == 0) {
      uid = static_cast<bool>(f >> out->ruid >> out->euid);
    } else if (line.rfind("Gid:", 0) == 0) {
      gid = static_cast<bool>(f >> out->rgid >> out->egid);
    } else if (line.rfind("NSpid:", 0) == 0) {
      pid_t p;
      while (f >> p) out->nspid = p, nspid = true;  // the innermost is last
    } else if (line.rfind("SigCgt:", 0) == 0) {
      std::string hex;
      f >> hex;
      const unsigned long long mask = std::strtoull(hex.c_str(), nullptr, 16);
      out->quit_caught = (mask >> (SIGQUIT - 1)) & 1;
      sigcgt = !hex.empty();
    }
  }
  if (!uid || !gid || !nspid || !sigcgt) {
    *error = path + " lacks Uid, Gid, NSpid or SigCgt";
    return false;
  }
  return true;
}

AttachOperation::~AttachOperation() {
  if (child_ > 0) {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }
  if (report_fd_ >= 0) close(report_fd_);
  if (pidfd_ >= 0) close(pidfd_);
}

void AttachOperation::finish_with(AttachStatus s, const std::string& m) {
  status_ = s;
  message_ = m;
  if (report_fd_ >= 0) close(report_fd_);
  if (pidfd_ >= 0) close(pidfd_);
  report_fd_ = pidfd_ = -1;
}

bool AttachOperation::start(pid_t pid, const std::string& command, double timeout_s, int pidfd) {
  if (child_ > 0) return false;
  report_.clear();
  message_.clear();
  // The pidfd first: the status read next, if the pidfd's process is still
  // alive after it, is that process's and not a successor's.
  pidfd_ = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 0) : pidfd_open(pid);
  if (pidfd_ < 0) {
    finish_with(errno == ESRCH ? AttachStatus::kGone : AttachStatus::kFailed,
                errno == ESRCH ? "the target exited" : errno_text("pidfd_open"));
    return false;
  }
  ProcessCreds creds;
  std::string error;
  if (!read_process_creds(pid, &creds, &error) || pidfd_signal(pidfd_, 0) != 0) {
    finish_with(AttachStatus::kGone, error.empty() ? "the target exited" : error);
    return false;
  }
  if (!creds.quit_caught) {
    // Not a JVM we may signal; a listener started at launch
    // (-XX:+StartAttachListener) would still serve us, so look for one.
    struct stat st;
    const std::string sock =
        "/proc/" + std::to_string(pid) + "/root/tmp/.java_pid" + std::to_string(creds.nspid);
    if (lstat(sock.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      finish_with(AttachStatus::kNotReady, "the JVM does not handle SIGQUIT yet (still starting, or -Xrs)");
      return false;
    }
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    finish_with(AttachStatus::kFailed, errno_text("pipe"));
    return false;
  }
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  const pid_t c = fork();
  if (c < 0) {
    close(fds[0]);
    close(fds[1]);
    finish_with(AttachStatus::kFailed, errno_text("fork"));
    return false;
  }
  if (c == 0) {
    close(fds[0]);
    run_child(fds[1], pidfd_, pid, creds, command, deadline);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  report_fd_ = fds[0];
  child_ = c;
  deadline_ns_ = deadline;
  status_ = AttachStatus::kRunning;
  return true;
}

bool AttachOperation::poll(bool wait) {
  if (child_ <= 0) return true;
  for (;;) {
    char buf[1024];
    ssize_t n;
    while ((n = read(report_fd_, buf, sizeof buf)) > 0)
      if (report_.size() < kMaxReport) report_.append(buf, static_cast<size_t>(n));
    int status = 0;
    const pid_t r = waitpid(child_, &status, WNOHANG);
    if (r == child_) {
      while ((n = read(report_fd_, buf, sizeof buf)) > 0)
        if (report_.size() < kMaxReport) report_.append(buf, static_cast<size_t>(n));
      child_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) != static_cast<int>(AttachStatus::kRunning) &&
          WEXITSTATUS(status) <= static_cast<int>(AttachStatus::kGone))
        finish_with(static_cast<AttachStatus>(WEXITSTATUS(status)), report_);
      else
        finish_with(AttachStatus::kFailed, "the attach process ended abnormally (status " + std::to_string(status) + ")");
      return true;
    }
    // The child keeps its own deadline; this one is for a child stuck in
    // a system call (a hung file system).
    if (monotonic_ns() > deadline_ns_ + 2000000000ull) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
      child_ = -1;
      finish_with(AttachStatus::kTimeout, "the attach process did not finish in time");
      return true;
    }
    if (!wait) return false;
    pollfd p{report_fd_, POLLIN, 0};
    ::poll(&p, 1, 20);
  }
}

AttachStatus jcmd(pid_t pid, const std::string& command, double timeout_s, std::string* message) {
  AttachOperation op;
  if (op.start(pid, command, timeout_s)) op.poll(true);
  *message = op.message();
  return op.status();
}

}  // namespace jvmtrace
