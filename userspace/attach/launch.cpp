#include "attach/launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "base/clock.h"
#include "process/target.h"

extern char** environ;

namespace jvmtrace {

const char* const kHoldFlags[2] = {"-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup"};

namespace {

// The signals a user stops a program with.  Sent to jvmtrace by a process
// (kill: si_code <= 0) they are passed to COMMAND, as if jvmtrace were not
// there; from the terminal (the kernel: SI_KERNEL) the whole foreground
// process group, COMMAND included, has its own copy.  Either way jvmtrace
// goes on until the JVM exits, so the trace or report is complete.
const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
volatile sig_atomic_t g_forward_to = 0;

void on_forwarded(int sig, siginfo_t* si, void*) {
  const int saved = errno;
  if (si->si_code <= 0 && g_forward_to > 0) kill(g_forward_to, sig);
  errno = saved;
}

// A signal jvmtrace was started with ignored stays ignored (for COMMAND
// too, as without jvmtrace: a handler would be reset to the default at exec).
void install_forwarding() {
  for (int sig : kForwarded) {
    struct sigaction old = {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;
    struct sigaction sa = {};
    sa.sa_sigaction = on_forwarded;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

// argv[0] as a shell finds it: a name with a slash as it is, else the first
// executable regular file of that name in PATH.  "" with *err set if none.
std::string resolve(const std::string& name, int* err) {
  auto usable = [](const std::string& p, int* e) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      *e = errno;
      return false;
    }
    if (!S_ISREG(st.st_mode) || access(p.c_str(), X_OK) != 0) {
      *e = EACCES;
      return false;
    }
    return true;
  };
  *err = ENOENT;
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return usable(name, err) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  bool denied = false;
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    int e = 0;
    if (usable(p, &e)) return p;
    denied |= e == EACCES;
  }
  *err = denied ? EACCES : ENOENT;
  return {};
}

// A java launcher: an ELF file named java, once symlinks are resolved
// (/usr/bin/java -> /etc/alternatives/java -> .../bin/java).  A script
// named java is a wrapper.
bool is_java_launcher(const std::string& path) {
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real)) return false;
  const char* base = std::strrchr(real, '/');
  if (std::strcmp(base ? base + 1 : real, "java") != 0) return false;
  std::ifstream f(real, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  return f.gcount() == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

// pid as its own PID namespace numbers it (what HotSpot names its pause
// file after), from /proc/PID/status; false if it is gone.
bool innermost_pid(pid_t pid, pid_t* nspid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream f(line.substr(6));
    pid_t p;
    while (f >> p) *nspid = p, found = true;  // the innermost is last
  }
  return found;
}

// Every process's parent, from /proc/N/stat (the field after the command,
// which is in parentheses and may hold anything).
std::map<pid_t, pid_t> parents() {
  std::map<pid_t, pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* close_paren = std::strrchr(buf, ')');
    char state;
    int ppid;
    if (close_paren && std::sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2)
      out[static_cast<pid_t>(pid)] = ppid;
  }
  closedir(d);
  return out;
}

int status_as_shell(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe_status(int shell_status) {
  if (shell_status > 128) {
    const char* name = sigabbrev_np(shell_status - 128);
    return "was killed by signal " + std::to_string(shell_status - 128) + (name ? std::string(" (SIG") + name + ")" : "") +
           ": status " + std::to_string(shell_status);
  }
  return "exited with status " + std::to_string(shell_status);
}

}  // namespace

bool command_follows(int argc, char** argv, int optind, const char* last_optarg) {
  return optind >= 2 && optind <= argc && argv[optind - 1] != last_optarg && std::strcmp(argv[optind - 1], "--") == 0;
}

Launch::~Launch() {
  if (jvm_held_) release(false);
  if (jvm_dir_ >= 0) close(jvm_dir_);
  if (pidfd_ >= 0) close(pidfd_);
}

bool Launch::start(char* const* argv) {
  command_ = argv[0];
  int err = 0;
  const std::string path = resolve(command_, &err);
  if (path.empty()) {
    std::fprintf(stderr, "%s: %s: %s\n", cmd_.c_str(), command_.c_str(),
                 err == ENOENT && command_.find('/') == std::string::npos ? "command not found" : std::strerror(err));
    start_status_ = err == ENOENT ? 127 : 126;
    return false;
  }
  // HotSpot creates its pause file in its working directory and, if it
  // cannot, prints so and runs on at once: untraced start-up, and a trace
  // that would miss what this form is for.  (A wrapper may change
  // directory; then its JVM's directory is the one that counts.)
  if (access(".", W_OK) != 0) {
    std::fprintf(stderr, "%s: the working directory is not writable (%s): a JVM started here cannot be held "
                 "at start-up (HotSpot creates vm.paused.PID in it); run from a writable directory, or attach "
                 "with -p PID\n", cmd_.c_str(), std::strerror(errno));
    start_status_ = 1;
    return false;
  }
  const bool java = is_java_launcher(path);
  // Everything the child needs is built before fork: it only execs.
  std::vector<char*> args{argv[0]};
  if (java)
    for (const char* f : kHoldFlags) args.push_back(const_cast<char*>(f));
  for (char* const* a = argv + 1; *a; a++) args.push_back(*a);
  args.push_back(nullptr);
  // An executable file without a #! line is a shell script to a shell (and
  // to execvp): run it with /bin/sh if the kernel refuses it (ENOEXEC).
  std::vector<char*> sh_args{const_cast<char*>("/bin/sh"), const_cast<char*>(path.c_str())};
  sh_args.insert(sh_args.end(), args.begin() + 1, args.end());
  std::vector<std::string> env_store;
  std::vector<char*> env;
  std::string options;
  if (!java) {
    const char* old = std::getenv("JDK_JAVA_OPTIONS");
    options = old && *old ? std::string(old) + " " : std::string();
    options += std::string(kHoldFlags[0]) + " " + kHoldFlags[1];
    env_store.push_back("JDK_JAVA_OPTIONS=" + options);
  }
  for (char** e = environ; *e; e++)
    if (java || std::strncmp(*e, "JDK_JAVA_OPTIONS=", 17) != 0) env.push_back(*e);
  for (auto& s : env_store) env.push_back(s.data());
  env.push_back(nullptr);
  if (verbose_) {
    if (java)
      std::fprintf(stderr, "%s: %s is a java launcher: starting it with %s %s after argv[0]\n", cmd_.c_str(),
                   path.c_str(), kHoldFlags[0], kHoldFlags[1]);
    else
      std::fprintf(stderr, "%s: %s is not a java launcher: starting it with JDK_JAVA_OPTIONS='%s'\n", cmd_.c_str(),
                   path.c_str(), options.c_str());
  }

  // Orphans of COMMAND's tree (a wrapper that runs `java ... &` and exits)
  // become jvmtrace's children, so a JVM they hold is still found and let go.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  install_forwarding();
  // The signals wait until g_forward_to names the child.
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "%s: pipe: %s\n", cmd_.c_str(), std::strerror(errno));
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return false;
  }
  const pid_t c = fork();
  if (c == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close(report[0]);
    execve(path.c_str(), args.data(), env.data());
    if (errno == ENOEXEC) execve(sh_args[0], sh_args.data(), env.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  const int fork_errno = errno;
  if (c > 0) g_forward_to = c;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(report[1]);
  if (c < 0) {
    close(report[0]);
    std::fprintf(stderr, "%s: fork: %s\n", cmd_.c_str(), std::strerror(fork_errno));
    return false;
  }
  child_ = c;
  // The write end closes at exec: an errno arrives only if exec failed.
  int exec_errno = 0;
  ssize_t n;
  while ((n = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == sizeof exec_errno) {
    int status;
    while (waitpid(c, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    g_forward_to = 0;
    std::fprintf(stderr, "%s: cannot run %s: %s\n", cmd_.c_str(), path.c_str(), std::strerror(exec_errno));
    start_status_ = exec_errno == ENOENT ? 127 : 126;
    return false;
  }
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, c, 0));
  return true;
}

std::vector<Launch::Held> Launch::held() const {
  std::vector<std::pair<unsigned long long, Held>> found;  // (start time, held)
  const std::map<pid_t, pid_t> parent = parents();
  const pid_t self = getpid();
  for (const auto& [pid, ppid] : parent) {
    // A descendant of jvmtrace: COMMAND's tree (its orphans are
    // jvmtrace's children: a subreaper).  jvmtrace's own helpers (attach
    // processes) hold no pause file.
    bool ours = false;
    for (pid_t p = ppid, hops = 0; p > 0 && hops < 4096; hops++) {
      if (p == self) {
        ours = true;
        break;
      }
      auto it = parent.find(p);
      p = it == parent.end() ? 0 : it->second;
    }
    if (!ours) continue;
    pid_t nspid = 0;
    if (!innermost_pid(pid, &nspid)) continue;
    const std::string name = "vm.paused." + std::to_string(nspid);
    struct stat st;
    if (fstatat(AT_FDCWD, ("/proc/" + std::to_string(pid) + "/cwd/" + name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    // Oldest first: a wrapper's JVMs in the order they started.
    unsigned long long start = 0;
    std::string s;
    if (!read_proc_file("/proc/" + std::to_string(pid) + "/stat", &s)) continue;  // gone meanwhile
    const size_t close_paren = s.rfind(')');
    if (close_paren != std::string::npos) {
      std::istringstream f(s.substr(close_paren + 2));
      std::string field;
      for (int i = 3; i <= 22 && f >> field; i++)  // field 22: starttime
        if (i == 22) start = std::strtoull(field.c_str(), nullptr, 10);
    }
    found.push_back({start, Held{pid, name}});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.pid < b.second.pid;
  });
  std::vector<Held> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

bool Launch::unhold(int dir_fd, const std::string& name, std::string* error) {
  if (unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  *error = std::strerror(errno);
  return false;
}

bool Launch::command_exited() {
  if (reaped_) return true;
  siginfo_t si = {};
  return waitid(P_PID, static_cast<id_t>(child_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child_;
}

pid_t Launch::wait_for_jvm(double timeout_s) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  for (;;) {
    const std::vector<Held> h = held();
    if (!h.empty()) {
      jvm_ = h.front().pid;
      jvm_file_ = h.front().name;
      jvm_dir_ = open(("/proc/" + std::to_string(jvm_) + "/cwd").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (jvm_dir_ < 0) {  // it died (its file stays: HotSpot never deletes it)
        jvm_ = 0;
        continue;
      }
      jvm_held_ = true;
      if (verbose_)
        std::fprintf(stderr, "%s: PID %d is held at start-up (%s in its working directory)\n", cmd_.c_str(), jvm_,
                     jvm_file_.c_str());
      let_go_others();  // started at the same moment: only the first is traced
      return jvm_;
    }
    const bool exited = command_exited();
    if (exited) {
      // Orphans of its tree may still start a JVM; when none is left, no
      // JVM will come.
      bool tree_left = false;
      const pid_t self = getpid();
      for (const auto& [pid, ppid] : parents()) tree_left |= ppid == self && pid != child_;
      if (!tree_left) {
        const int s = wait();
        std::fprintf(stderr, "%s: %s %s before any JVM was held at start-up: not a Java program, or its JVM "
                     "did not take %s %s (from %s)\n", cmd_.c_str(), command_.c_str(), describe_status(s).c_str(),
                     kHoldFlags[0], kHoldFlags[1], "its command line or JDK_JAVA_OPTIONS");
        return 0;
      }
    }
    if (monotonic_ns() >= deadline) {
      std::fprintf(stderr, "%s: no JVM of %s (PID %d) was held at start-up within %g s: not a Java program, "
                   "or one that started java without its environment (JDK_JAVA_OPTIONS); tracing nothing, "
                   "waiting for it to exit (a JVM it starts later is let go untraced)\n",
                   cmd_.c_str(), command_.c_str(), child_, timeout_s);
      return 0;
    }
    // Wakes at once when COMMAND exits; HotSpot checks its file every
    // 100 ms, so 20 ms here adds little to the hold.
    struct pollfd p = {pidfd_, POLLIN, 0};
    if (exited || pidfd_ < 0) poll(nullptr, 0, 20);
    else poll(&p, 1, 20);
  }
}

void Launch::release(bool attached) {
  if (!jvm_held_) return;
  jvm_held_ = false;
  std::string error;
  if (!unhold(jvm_dir_, jvm_file_, &error)) {
    std::fprintf(stderr, "%s: cannot delete %s of PID %d (%s): the JVM stays held at start-up until it is deleted\n",
                 cmd_.c_str(), jvm_file_.c_str(), jvm_, error.c_str());
    return;
  }
  if (!attached)
    std::fprintf(stderr, "%s: let PID %d go untraced: it runs on as it would without jvmtrace\n", cmd_.c_str(), jvm_);
  else if (verbose_)
    std::fprintf(stderr, "%s: attached; let PID %d go\n", cmd_.c_str(), jvm_);
}

void Launch::let_go_others() {
  for (const Held& h : held()) {
    if (h.pid == jvm_ && jvm_held_) continue;
    const int dir = open(("/proc/" + std::to_string(h.pid) + "/cwd").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    std::string error = dir < 0 ? std::strerror(errno) : "";
    const bool ok = dir >= 0 && unhold(dir, h.name, &error);
    if (dir >= 0) close(dir);
    if (let_go_.insert(h.pid).second || !ok)
      std::fprintf(stderr, "%s: PID %d, another JVM of %s, was held at start-up: %s\n", cmd_.c_str(), h.pid,
                   command_.c_str(),
                   ok ? "let go untraced (only the first JVM is traced)"
                      : ("cannot delete its " + h.name + ": " + error).c_str());
  }
}

void Launch::tick() {
  const uint64_t now = monotonic_ns();
  if (now < next_scan_ns_) return;
  next_scan_ns_ = now + 100000000;
  let_go_others();
}

int Launch::wait() {
  while (!reaped_) {
    let_go_others();
    int status;
    const pid_t r = waitpid(child_, &status, WNOHANG);
    if (r == child_) {
      reaped_ = true;
      status_ = status_as_shell(status);
      g_forward_to = 0;
      break;
    }
    if (r < 0 && errno != EINTR) {  // not ours any more: cannot happen
      reaped_ = true;
      status_ = 1;
      break;
    }
    struct pollfd p = {pidfd_, POLLIN, 0};
    if (pidfd_ < 0) poll(nullptr, 0, 100);
    else poll(&p, 1, 100);
  }
  // An orphan of its tree may be held this very moment: never leave it so.
  let_go_others();
  return status_;
}

int launch_and_trace(const char* cmd, char* const* argv, double timeout_s, bool verbose,
                     const std::function<int(pid_t, Launch&)>& trace, bool* traced) {
  if (traced) *traced = false;
  Launch launch(cmd, verbose);
  if (!launch.start(argv)) return launch.start_status();
  const pid_t jvm = launch.wait_for_jvm(timeout_s);
  if (jvm) {
    if (traced) *traced = true;
    trace(jvm, launch);
    launch.release(false);  // a no-op once the tracer let it go
  }
  return launch.wait();
}

}  // namespace jvmtrace
