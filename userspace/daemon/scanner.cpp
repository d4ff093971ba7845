#include "daemon/scanner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/strings.h"
#include "daemon/log.h"

namespace jvmtrace {

namespace {

// The child's lines, one per event:
//   x PID START                          about to read PID's files
//   + PID START NSPID PATCHED APPSET\tCOMM\tLIBJVM\tAPPLICATION\tCONTAINER
//                                        a JVM (the texts escaped by printable():
//                                        no tab or newline left in them)
//   - PID                                a JVM exited
//   t                                    a scan is complete
bool write_line(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Scanner::~Scanner() { stop_child(); }

void Scanner::stop_child() {
  if (child_ > 0) {
    kill(child_, SIGKILL);
    // A child stuck in the kernel dies once its wait ends (a FUSE request's
    // wait is killable): reaped later, without waiting for it (on_time).
    if (waitpid(child_, nullptr, WNOHANG) != child_) killed_.push_back(child_);
  }
  if (from_child_ >= 0) close(from_child_);
  if (to_child_ >= 0) close(to_child_);
  child_ = -1;
  from_child_ = to_child_ = -1;
  buf_.clear();
  examining_ = 0;
}

bool Scanner::start(std::string* error) {
  if (!spawn(now_s())) {
    *error = std::string("cannot start the discovery process: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool Scanner::spawn(double now) {
  int up[2], down[2];
  if (pipe2(up, O_CLOEXEC) != 0) return false;
  if (pipe2(down, O_CLOEXEC) != 0) {
    close(up[0]);
    close(up[1]);
    return false;
  }
  const pid_t c = fork();
  if (c < 0) {
    for (int fd : {up[0], up[1], down[0], down[1]}) close(fd);
    return false;
  }
  if (c == 0) {
    close(up[0]);
    close(down[1]);
    child_main(up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  child_ = c;
  from_child_ = up[0];
  to_child_ = down[1];
  fcntl(from_child_, F_SETFL, O_NONBLOCK);
  fcntl(to_child_, F_SETFL, O_NONBLOCK);
  last_heard_ = now;
  reported_.clear();
  first_scan_done_ = false;
  return true;
}

void Scanner::child_main(int out, int in) {
  // Dies with the daemon; keeps nothing of it (its sockets, workers' pipes,
  // the trace directory): every descriptor but stderr and its two pipes.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(0);
  prctl(PR_SET_NAME, "jvmtraced-scan");
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
  const int keep_lo = std::min(out, in), keep_hi = std::max(out, in);
  syscall(SYS_close_range, 3u, static_cast<unsigned>(keep_lo - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(keep_lo + 1), static_cast<unsigned>(keep_hi - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(keep_hi + 1), ~0u, 0u);
  JvmDiscovery discovery;
  discovery.skip = skip_;
  discovery.before_check = [out](pid_t pid, unsigned long long start) {
    if (!write_line(out, "x " + std::to_string(pid) + " " + std::to_string(start) + "\n")) _exit(0);
  };
  for (;;) {
    std::vector<JvmProcess> appeared, exited;
    discovery.scan(&appeared, &exited);
    std::string text;
    for (const JvmProcess& j : appeared)
      text += "+ " + std::to_string(j.pid) + " " + std::to_string(j.start_time) + " " + std::to_string(j.ns_pid) +
              " " + (j.patched ? "1" : "0") + " " + (j.application_set ? "1" : "0") + "\t" + printable(j.comm).substr(0, 1024) + "\t" +
              printable(j.libjvm).substr(0, 4096) + "\t" + printable(j.application) + "\t" +
              printable(j.container) + "\n";
    for (const JvmProcess& j : exited) text += "- " + std::to_string(j.pid) + "\n";
    text += "t\n";
    if (!write_line(out, text)) _exit(0);  // the daemon is gone
    // Every second, or at once when poked.
    pollfd p{in, POLLIN, 0};
    if (poll(&p, 1, 1000) > 0) {
      char b[64];
      if (::read(in, b, sizeof b) <= 0) _exit(0);
    }
  }
}

void Scanner::poke() {
  if (to_child_ >= 0) {
    const char c = 's';
    (void)!write(to_child_, &c, 1);  // a full pipe: a scan is asked for already
  }
}

void Scanner::read(double now, std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited) {
  if (from_child_ < 0) return;
  char b[65536];
  for (int i = 0; i < 16; i++) {  // within reason each round
    const ssize_t n = ::read(from_child_, b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN, or the child is gone (on_time sees to it)
    last_heard_ = now;
    buf_.append(b, static_cast<size_t>(n));
  }
  size_t nl;
  while ((nl = buf_.find('\n')) != std::string::npos) {
    const std::string l = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    if (l.compare(0, 2, "x ") != 0) examining_ = 0;
    line(l, appeared, exited);
  }
  if (buf_.size() > kMaxLine) buf_.clear();  // not the child's protocol: drop it
}

void Scanner::line(const std::string& l, std::vector<JvmProcess>* appeared, std::vector<JvmProcess>* exited) {
  if (l.compare(0, 2, "x ") == 0) {
    std::istringstream in(l.substr(2));
    in >> examining_ >> examining_start_;
    examining_since_ = last_heard_;
  } else if (l.compare(0, 2, "+ ") == 0) {
    std::vector<size_t> tab;
    for (size_t t = l.find('\t'); t != std::string::npos && tab.size() < 4; t = l.find('\t', t + 1)) tab.push_back(t);
    if (tab.size() != 4) return;
    const size_t tab1 = tab[0], tab2 = tab[1];
    JvmProcess j;
    int patched = 0, app_set = 0;
    std::istringstream in(l.substr(2, tab1 - 2));
    if (!(in >> j.pid >> j.start_time >> j.ns_pid >> patched >> app_set)) return;
    j.application_set = app_set != 0;
    j.patched = patched != 0;
    j.comm = l.substr(tab1 + 1, tab2 - tab1 - 1);
    j.libjvm = l.substr(tab2 + 1, tab[2] - tab2 - 1);
    j.application = l.substr(tab[2] + 1, tab[3] - tab[2] - 1);
    j.container = l.substr(tab[3] + 1);
    reported_.insert(j.pid);
    auto it = jvms_.find(j.pid);
    if (it != jvms_.end() && it->second.start_time == j.start_time) return;  // known (a new child found it again)
    if (it != jvms_.end()) exited->push_back(it->second);                     // a reused PID
    jvms_[j.pid] = j;
    appeared->push_back(j);
  } else if (l.compare(0, 2, "- ") == 0) {
    const pid_t pid = static_cast<pid_t>(std::atol(l.c_str() + 2));
    auto it = jvms_.find(pid);
    if (it == jvms_.end()) return;
    exited->push_back(it->second);
    jvms_.erase(it);
  } else if (l == "t") {
    scans_++;
    if (!first_scan_done_) {
      // A new child's first scan: what it did not report has exited meanwhile.
      first_scan_done_ = true;
      for (auto it = jvms_.begin(); it != jvms_.end();) {
        if (reported_.count(it->first)) {
          ++it;
          continue;
        }
        exited->push_back(it->second);
        it = jvms_.erase(it);
      }
    }
  }
}

void Scanner::on_time(double now) {
  for (auto it = killed_.begin(); it != killed_.end();) {  // children killed while stuck, once they are gone
    const pid_t r = waitpid(*it, nullptr, WNOHANG);
    it = r == *it || r < 0 ? killed_.erase(it) : std::next(it);
  }
  if (child_ > 0) {
    int status;
    const pid_t r = waitpid(child_, &status, WNOHANG);
    if (r == child_) {
      log_line("warn", "the discovery process ended (status %d); starting another", status);
      child_ = -1;
      stop_child();
      next_spawn_ = now + 1;  // (at most one a second)
    } else if (examining_ > 0 && now - examining_since_ >= kStuckSeconds) {
      log_line("warn",
               "PID %d: reading its /proc files or its libjvm.so did not finish within %g s (a file system that "
               "does not answer?): not looked at again; discovery goes on without it",
               examining_, kStuckSeconds);
      skip_.insert({examining_, examining_start_});
      stop_child();
      next_spawn_ = now;
    } else if (examining_ == 0 && now - last_heard_ >= kSilentSeconds) {
      log_line("warn", "the discovery process said nothing for %g s: starting another", kSilentSeconds);
      stop_child();
      next_spawn_ = now;
    }
  }
  if (child_ <= 0 && now >= next_spawn_ && !spawn(now)) {
    log_line("error", "cannot start the discovery process: %s; trying again in 5 s", std::strerror(errno));
    next_spawn_ = now + 5;
  }
}

}  // namespace jvmtrace
