// jvmtraced: the collector daemon.  Finds the JVMs on the host, attaches
// `stat` or `record` to them on request (a Unix socket; `jvmtrace daemon
// ...` is the client), serves the stat figures of every attached JVM to
// Prometheus on localhost, and detaches everything when it stops.  Each
// attachment is a worker process running the jvmtrace binary
// (daemon/worker.h says why).  One thread, one poll loop, which never
// waits for a client (daemon/connection.h) or a worker (daemon/pending.h).
// docs/daemon.md is the manual.
#include <arpa/inet.h>
#include <getopt.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits.h>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/strings.h"
#include "daemon/connection.h"
#include "daemon/jvm_discovery.h"
#include "daemon/metrics.h"
#include "daemon/pending.h"
#include "daemon/request.h"
#include "daemon/trace_dir.h"
#include "daemon/worker.h"
#include "process/target.h"

namespace jvmtrace {
namespace {

struct Config {
  std::string socket_path = "/run/jvmtraced.sock";
  std::string group;  // may also use the socket
  std::string trace_dir = "/var/lib/jvmtraced";
  std::string metrics_address = "127.0.0.1";
  long metrics_port = 9464;  // 0: no metrics endpoint
  bool auto_stat = false;
  double stat_interval = 5;
  std::string segment_mb;       // record workers: rotate each N MiB ("" = not by size)
  std::string segment_seconds;  // ... and/or each N seconds ("" = not by time)
  double max_disk_mb = 0;       // cap on the trace directory (0: none)
  long keep = 0;           // record workers: newest segments kept
  std::string jvmtrace;  // the worker binary
  bool verbose = false;
};

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtraced [--socket PATH] [--group NAME] [--trace-dir DIR] [--metrics-port N]\n"
               "                 [--metrics-address ADDR] [--auto-stat] [--stat-interval SEC]\n"
               "                 [--segment-mb N] [--segment-seconds S] [--keep N] [--max-disk-mb N]\n"
               "                 [--config FILE] [-v]\n"
               "The jvmtrace collector daemon (run as root): finds JVMs, attaches stat or record on\n"
               "request, serves Prometheus metrics, detaches everything on SIGTERM or Ctrl-C.\n"
               "  --socket PATH         control socket (default /run/jvmtraced.sock, mode 0600)\n"
               "  --group NAME          also let this group use the socket (mode 0660): members by\n"
               "                        their primary or a supplementary group\n"
               "  --trace-dir DIR       where recordings go (default /var/lib/jvmtraced; made 0750 if\n"
               "                        missing; must be root's, not a symlink, not group/other-writable)\n"
               "  --metrics-port N      Prometheus endpoint port (default 9464; 0: none)\n"
               "  --metrics-address A   its address (default 127.0.0.1)\n"
               "  --auto-stat           attach stat to every JVM found\n"
               "  --stat-interval SEC   how often stat workers refresh the figures (default 5)\n"
               "  --segment-mb N        recordings rotate into files of N MiB (default: one file)\n"
               "  --segment-seconds S   ... and/or every S seconds\n"
               "  --keep N              with segments: keep each recording's newest N\n"
               "  --max-disk-mb N       cap on the trace directory: oldest finished files go first,\n"
               "                        then the oldest recording is stopped (default: none)\n"
               "  --jvmtrace PATH       the jvmtrace binary (default: next to jvmtraced)\n"
               "  -v, --verbose         log every scan and worker line\n"
               "  --config FILE         options as 'name = value' lines (names as above, without --;\n"
               "                        '#' comments); the command line wins; SIGHUP re-reads it\n"
               "Clients: jvmtrace daemon status|list|attach PID --stat|--record [--duration SEC]|detach PID\n"
               "EXAMPLES:\n"
               "  sudo jvmtraced --auto-stat &  curl -s localhost:9464/metrics\n"
               "  sudo jvmtrace daemon attach 4242 --record --duration 60\n");
}

volatile sig_atomic_t g_stop = 0, g_reload = 0;
void on_stop(int) { g_stop = 1; }
void on_reload(int) { g_reload = 1; }

bool load_config(Config* c, std::string* error);

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void log_line(const char* level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log_line(const char* level, const char* fmt, ...) {
  char when[32];
  std::time_t t = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  std::fprintf(stderr, "%s jvmtraced[%s] ", when, level);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

class Daemon {
 public:
  // How long a worker may take to attach, and to stop after SIGINT before
  // it is killed (detach; the daemon stopping).
  static constexpr double kAttachSeconds = 60, kDetachSeconds = 15, kShutdownSeconds = 20;
  static constexpr size_t kMaxClients = 256;  // connections open at once (each lives 1 s unless it waits on a worker)

  explicit Daemon(const Config& c)
      : c_(c), pending_([this](uint64_t client, const std::string& reply) { send_reply(client, reply); }) {}

  // SIGHUP: the config file again.  What the running sockets depend on
  // needs a restart; the rest applies now (auto-stat also to JVMs already
  // found, intervals and rotation to attachments made from now on).
  void reload() {
    Config n;
    std::string error;
    if (!load_config(&n, &error)) {
      log_line("error", "reload failed, the configuration stays as it was: %s", error.c_str());
      return;
    }
    if (n.socket_path != c_.socket_path || n.group != c_.group || n.trace_dir != c_.trace_dir ||
        n.metrics_address != c_.metrics_address || n.metrics_port != c_.metrics_port || n.jvmtrace != c_.jvmtrace)
      log_line("warn", "reload: socket, group, trace-dir, metrics and jvmtrace changes need a restart; kept as they were");
    const bool newly_auto = n.auto_stat && !c_.auto_stat;
    c_.auto_stat = n.auto_stat;
    c_.stat_interval = n.stat_interval;
    c_.segment_mb = n.segment_mb;
    c_.segment_seconds = n.segment_seconds;
    c_.max_disk_mb = n.max_disk_mb;
    c_.keep = n.keep;
    c_.verbose = n.verbose;
    log_line("info", "reloaded: auto-stat %s, stat-interval %g s, segment-mb %s, keep %ld", c_.auto_stat ? "on" : "off",
             c_.stat_interval, c_.segment_mb.empty() ? "-" : c_.segment_mb.c_str(), c_.keep);
    if (newly_auto)
      for (const auto& [pid, j] : discovery_.jvms()) {
        bool has = false;
        for (auto& w : workers_) has |= w->target() == pid && w->kind() == Worker::kStat;
        if (!has) attach(0, pid, "stat", 0);
      }
    std::string unsafe;
    if (!trace_dir_.still_safe(&unsafe))
      log_line("error", "%s; recordings are refused until it is fixed", unsafe.c_str());
  }

  bool start() {
    std::string error;
    if (!trace_dir_.open(c_.trace_dir, &error)) {
      log_line("error", "%s", error.c_str());
      return false;
    }
    if (!listen_control() || !listen_metrics()) return false;
    log_line("info", "pid %d; control socket %s; metrics %s; traces in %s; workers run %s", getpid(),
             c_.socket_path.c_str(),
             c_.metrics_port ? ("http://" + c_.metrics_address + ":" + std::to_string(c_.metrics_port) + "/metrics").c_str()
                             : "off",
             trace_dir_.path().c_str(), c_.jvmtrace.c_str());
    return true;
  }

  // The event loop.  Nothing in it waits for a client or a worker: requests
  // are read and replies written as the sockets allow (Connection), and an
  // attach or detach is answered when its workers get there (PendingReplies).
  int run() {
    double next_scan = 0;
    while (!g_stop) {
      if (g_reload) {
        g_reload = 0;
        reload();
      }
      if (now_s() >= next_scan) {
        scan();
        next_scan = now_s() + 1.0;
      }
      on_time(now_s());
      std::vector<pollfd> fds;
      std::vector<std::function<void()>> ready;  // what to do for fds[i]
      fds.push_back({control_fd_, POLLIN, 0});
      ready.push_back([this] { accept_clients(control_fd_, true); });
      if (metrics_fd_ >= 0) {
        fds.push_back({metrics_fd_, POLLIN, 0});
        ready.push_back([this] { accept_clients(metrics_fd_, false); });
      }
      for (auto& [id, c] : clients_) {
        if (!c.conn->events()) continue;
        fds.push_back({c.conn->fd(), c.conn->events(), 0});
        ready.push_back([this, id = id] { client_ready(id); });
      }
      for (auto& w : workers_) {
        fds.push_back({w->out_fd(), POLLIN, 0});
        ready.push_back([] {});
        fds.push_back({w->err_fd(), POLLIN, 0});
        ready.push_back([] {});
      }
      int n = poll(fds.data(), fds.size(), 200);
      if (n < 0 && errno != EINTR) {
        log_line("error", "poll: %s", std::strerror(errno));
        break;
      }
      for (size_t i = 0; n > 0 && i < fds.size(); i++)
        if (fds[i].revents) ready[i]();
      read_workers();
      reap();
      close_finished_clients();
    }
    shutdown();
    return 0;
  }

 private:
  bool listen_control() {
    unlink(c_.socket_path.c_str());
    control_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (c_.socket_path.size() >= sizeof a.sun_path) {
      log_line("error", "socket path too long: %s", c_.socket_path.c_str());
      return false;
    }
    std::strcpy(a.sun_path, c_.socket_path.c_str());
    // Created with no access for anyone but root, then opened up as configured.
    const mode_t old = umask(0177);
    const int b = bind(control_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    umask(old);
    if (b != 0 || listen(control_fd_, 16) != 0) {
      log_line("error", "cannot listen on %s: %s", c_.socket_path.c_str(), std::strerror(errno));
      return false;
    }
    if (!c_.group.empty()) {
      group* g = getgrnam(c_.group.c_str());
      if (!g) {
        log_line("error", "no group '%s'", c_.group.c_str());
        return false;
      }
      group_gid_ = g->gr_gid;
      if (chown(c_.socket_path.c_str(), 0, g->gr_gid) != 0 || chmod(c_.socket_path.c_str(), 0660) != 0) {
        log_line("error", "cannot give %s to group %s: %s", c_.socket_path.c_str(), c_.group.c_str(),
                 std::strerror(errno));
        return false;
      }
    }
    return true;
  }

  bool listen_metrics() {
    if (!c_.metrics_port) return true;
    metrics_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(metrics_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(c_.metrics_port));
    if (inet_pton(AF_INET, c_.metrics_address.c_str(), &a.sin_addr) != 1) {
      log_line("error", "--metrics-address must be an IPv4 address, not %s", c_.metrics_address.c_str());
      return false;
    }
    if (bind(metrics_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(metrics_fd_, 16) != 0) {
      log_line("error", "cannot serve metrics on %s:%ld: %s", c_.metrics_address.c_str(), c_.metrics_port,
               std::strerror(errno));
      return false;
    }
    return true;
  }

  // The trace directory's cap: delete the oldest files no recording is
  // writing; if that is not enough, stop the oldest recording.  Returns the
  // bytes left.  Only regular files count and go (TraceDir: no symlink is
  // followed).
  uint64_t enforce_disk_cap() {
    std::vector<TraceDir::Entry> files;
    uint64_t total = 0;
    for (TraceDir::Entry& e : trace_dir_.list()) {
      if (!e.regular) continue;
      total += e.size;
      files.push_back(std::move(e));
    }
    const uint64_t cap = static_cast<uint64_t>(c_.max_disk_mb * (1 << 20));
    if (total <= cap) return total;
    // Oldest first; equal times (file systems keep coarse ones) by name,
    // which orders a recording's zero-padded segment numbers.
    std::sort(files.begin(), files.end(), [](const TraceDir::Entry& a, const TraceDir::Entry& b) {
      if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
      if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
      return a.name < b.name;
    });
    // A recording writes the highest-numbered file of its name's stem.
    std::set<std::string> active;
    for (auto& w : workers_) {
      if (w->kind() != Worker::kRecord) continue;
      const std::string prefix = trace_stem(*w) + ".";  // not "-2": another recording's
      std::string newest;
      for (const TraceDir::Entry& f : files)
        if (f.name.compare(0, prefix.size(), prefix) == 0 && f.name > newest) newest = f.name;
      if (!newest.empty()) active.insert(newest);
    }
    for (const TraceDir::Entry& f : files) {
      if (total <= cap) break;
      if (active.count(f.name)) continue;
      std::string error;
      if (trace_dir_.remove(f.name, &error)) {
        total -= f.size;
        log_line("info", "disk cap %.4g MiB: deleted %s/%s", c_.max_disk_mb, trace_dir_.path().c_str(), f.name.c_str());
      } else {
        log_line("warn", "disk cap %.4g MiB: cannot delete %s: %s", c_.max_disk_mb, f.name.c_str(), error.c_str());
      }
    }
    if (total > cap) {
      Worker* oldest = nullptr;
      for (auto& w : workers_)
        if (w->kind() == Worker::kRecord && !w->stopping && (!oldest || w->started_at < oldest->started_at))
          oldest = w.get();
      if (oldest) {
        log_line("warn", "disk cap %.4g MiB reached by running recordings: stopping the recording of PID %d",
                 c_.max_disk_mb, oldest->target());
        oldest->stop(now_s() + kDetachSeconds);
      }
    }
    return total;
  }

  // A record worker's file name in the trace directory, less ".jvmtrace".
  static std::string trace_stem(const Worker& w) {
    const std::string base = w.trace_path.substr(w.trace_path.rfind('/') + 1);
    return base.substr(0, base.size() - 9);
  }

  void scan() {
    if (c_.max_disk_mb > 0) enforce_disk_cap();
    std::vector<JvmProcess> appeared, exited;
    discovery_.scan(&appeared, &exited);
    for (const JvmProcess& j : appeared) {
      log_line("info", "found JVM %d (%s, pid %d in its namespace, %s)", j.pid, j.comm.c_str(), j.ns_pid,
               j.patched ? "patched: jvmtrace probes" : "stock");
      if (c_.auto_stat) attach(0, j.pid, "stat", 0);
    }
    for (const JvmProcess& j : exited) log_line("info", "JVM %d (%s) exited", j.pid, j.comm.c_str());
  }

  // Only root, or members of the configured group, may talk to the daemon.
  // Membership is the peer's credentials when it connected, as the kernel
  // saw them checking the socket's mode: its gid (SO_PEERCRED) and its
  // supplementary groups (SO_PEERGROUPS, Linux 4.13).  Not the group
  // database: no NSS lookup (LDAP...) can stall the loop, and a process that
  // dropped the group (setgroups) is refused, as the socket's mode refuses it.
  bool authorised(int fd, std::string* who) {
    ucred cr{};
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return false;
    *who = "uid " + std::to_string(cr.uid) + " pid " + std::to_string(cr.pid);
    if (cr.uid == 0) return true;
    if (group_gid_ == static_cast<gid_t>(-1)) return false;
    if (cr.gid == group_gid_) return true;
    std::vector<gid_t> groups(64);
    for (;;) {
      len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
      if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) break;
      if (errno != ERANGE || groups.size() >= 65536) {
        log_line("warn", "SO_PEERGROUPS: %s; only the primary group of %s was checked", std::strerror(errno),
                 who->c_str());
        return false;
      }
      groups.resize(len / sizeof(gid_t) + 1);  // ERANGE: len says how many there are
    }
    groups.resize(len / sizeof(gid_t));
    return std::find(groups.begin(), groups.end(), group_gid_) != groups.end();
  }

  // --- clients -------------------------------------------------------------

  struct Client {
    std::unique_ptr<Connection> conn;
    bool control;      // else metrics
    bool authorised;   // control: root or the group
    std::string who;
  };

  void accept_clients(int listen_fd, bool control) {
    for (int i = 0; i < 64; i++) {  // what is queued, within reason; the rest next round
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      if (clients_.size() >= kMaxClients) {  // the metrics port is open to every local user: no fd exhaustion
        if (c_.verbose) log_line("warn", "%zu clients already: one more closed unanswered", clients_.size());
        close(fd);
        continue;
      }
      Client c;
      c.control = control;
      c.authorised = !control || authorised(fd, &c.who);
      c.conn = std::make_unique<Connection>(fd, control ? kMaxRequest : 8192, control ? "\n" : "\r\n\r\n", now_s());
      const uint64_t id = next_client_++;
      clients_.emplace(id, std::move(c));
      client_ready(id);  // its request may be there already
    }
  }

  void client_ready(uint64_t id) {
    auto it = clients_.find(id);
    if (it == clients_.end()) return;
    it->second.conn->on_ready(now_s());
    if (it->second.conn->state() == Connection::kReady) handle(id, it->second);
  }

  // A complete (or failed) request: answer it, or leave it waiting.
  void handle(uint64_t id, Client& c) {
    Connection& conn = *c.conn;
    if (!c.control) {
      const std::string& req = conn.request();
      std::string body, status = "200 OK";
      if (req.compare(0, 13, "GET /metrics ") == 0 || req.compare(0, 14, "GET /metrics? ") == 0) {
        body = metrics_text();
      } else {
        status = "404 Not Found";
        body = "jvmtraced serves /metrics only\n";
      }
      conn.reply("HTTP/1.0 " + status + "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body,
                 now_s());
      return;
    }
    std::string reply;
    if (!c.authorised) {
      log_line("warn", "refused a client (%s): not root or the configured group", c.who.c_str());
      reply = "error: not authorised (root or the daemon's group only)\n";
    } else if (conn.end() == Connection::kTooLong) {
      reply = "error: request longer than " + std::to_string(kMaxRequest) + " bytes\n";
    } else if (conn.end() != Connection::kTerminated) {
      reply = std::string("error: request not ended by a newline") +
              (conn.end() == Connection::kTimedOut ? " within 1 s\n" : "\n");
    } else {
      std::string line = conn.request(), error;
      line.erase(line.find('\n'));
      if (!line.empty() && line.back() == '\r') line.pop_back();
      Request r;
      if (!parse_request(line, &r, &error)) reply = "error: " + error + "\n";
      else reply = act(id, r);
    }
    if (reply.empty()) {  // answered later (PendingReplies)
      conn.wait();
      return;
    }
    if (reply.compare(0, 6, "error:") == 0 && c_.verbose)
      log_line("info", "request from %s: %s", c.who.c_str(), reply.c_str());
    conn.reply(reply, now_s());
  }

  // PendingReplies' way out: to the client if it is still there, else (auto-stat) to the log.
  void send_reply(uint64_t client, const std::string& reply) {
    auto it = clients_.find(client);
    if (it == clients_.end()) {
      log_line(reply.compare(0, 6, "error:") == 0 ? "warn" : "info", "%.*s", static_cast<int>(reply.size() - 1),
               reply.c_str());
      return;
    }
    it->second.conn->reply(reply, now_s());
  }

  void close_finished_clients() {
    for (auto it = clients_.begin(); it != clients_.end();)
      it = it->second.conn->state() == Connection::kDone ? clients_.erase(it) : std::next(it);
  }

  // Deadlines: clients' reads and writes, attaches that take too long,
  // workers that do not stop after SIGINT.
  void on_time(double now) {
    for (auto& [id, c] : clients_) {
      c.conn->on_time(now);
      if (c.conn->state() == Connection::kReady) handle(id, c);
    }
    for (pid_t late : pending_.expire(now))
      for (auto& w : workers_)
        if (w->pid() == late) {
          log_line("warn", "%s worker %d for PID %d did not attach within %g s: killed", kind_name(*w), late,
                   w->target(), kAttachSeconds);
          w->kill();
        }
    for (auto& w : workers_)
      if (w->stopping && !w->killed && now >= w->kill_at) {
        log_line("warn", "%s worker %d for PID %d did not stop within %g s of SIGINT: killed", kind_name(*w), w->pid(),
                 w->target(), kDetachSeconds);
        w->kill();
      }
  }

  static const char* kind_name(const Worker& w) { return w.kind() == Worker::kStat ? "stat" : "record"; }

  // The reply, or "" when it will come later (pending_).
  std::string act(uint64_t client, const Request& r) {
    std::string out;
    switch (r.verb) {
      case Request::kStatus: {
        int stats = 0, records = 0;
        for (auto& w : workers_)
          if (!pending_.attaching(w->pid())) (w->kind() == Worker::kStat ? stats : records)++;
        out = "jvmtraced pid " + std::to_string(getpid()) + ", up " + std::to_string(static_cast<long>(now_s() - started_)) +
              " s\njvms " + std::to_string(discovery_.jvms().size()) + "\nattached stat " + std::to_string(stats) +
              ", record " + std::to_string(records) +
              (pending_.attaching_count() ? ", attaching " + std::to_string(pending_.attaching_count()) : "") +
              "\ntrace_dir " + trace_dir_.path() + "\nmetrics " +
              (c_.metrics_port ? "http://" + c_.metrics_address + ":" + std::to_string(c_.metrics_port) + "/metrics" : "off") +
              "\n";
        return out;
      }
      case Request::kList: {
        char line[512];
        std::snprintf(line, sizeof line, "%-8s %-8s %-8s %-14s %s\n", "PID", "NS_PID", "PROBES", "ATTACHED", "COMM");
        out = line;
        for (const auto& [pid, j] : discovery_.jvms()) {
          std::string att;
          for (auto& w : workers_)
            if (w->target() == pid && !pending_.attaching(w->pid()))
              att += std::string(att.empty() ? "" : ",") + kind_name(*w);
          std::snprintf(line, sizeof line, "%-8d %-8d %-8s %-14s %s\n", pid, j.ns_pid, j.patched ? "jvmtrace" : "stock",
                        att.empty() ? "-" : att.c_str(), j.comm.c_str());
          out += line;
        }
        return out;
      }
      case Request::kAttach:
        return attach(client, r.pid, r.what, r.seconds);
      case Request::kDetach: {
        std::vector<pid_t> stopped;
        for (auto& w : workers_) {
          if (w->target() != r.pid || w->stopping) continue;
          if (!r.what.empty() && r.what != kind_name(*w)) continue;
          w->stop(now_s() + kDetachSeconds);
          stopped.push_back(w->pid());
        }
        if (stopped.empty())
          return "error: nothing attached to PID " + std::to_string(r.pid) + (r.what.empty() ? "" : " (" + r.what + ")") + "\n";
        // "ok" once the workers have finished their cleanup: then it is detached.
        pending_.add_detach(client, stopped, "ok: detached " + std::to_string(stopped.size()) + " from PID " +
                                                 std::to_string(r.pid));
        return "";
      }
    }
    return "error: ?\n";
  }

  // True if a recording already uses this stem (its file or any segment).
  bool name_taken(const std::string& stem) {
    for (auto& w : workers_)
      if (w->kind() == Worker::kRecord && trace_stem(*w) == stem) return true;
    for (const TraceDir::Entry& e : trace_dir_.list())  // any kind of entry: a symlink too
      if (e.name.compare(0, stem.size() + 1, stem + ".") == 0) return true;
    return false;
  }

  // Starts a worker.  Returns the reply if it is known now (an error), ""
  // if it comes once the worker has attached (pending_).  client 0: nobody
  // waits (auto-stat); the outcome is logged.
  std::string attach(uint64_t client, pid_t pid, const std::string& what, double seconds) {
    auto now_or_log = [&](const std::string& reply) {
      if (client) return reply + "\n";
      log_line("warn", "%s", reply.c_str());
      return std::string();
    };
    auto j = discovery_.jvms().find(pid);
    if (j == discovery_.jvms().end()) {
      scan();  // it may have started since the last scan
      j = discovery_.jvms().find(pid);
      if (j == discovery_.jvms().end())
        return now_or_log("error: PID " + std::to_string(pid) + " is not a JVM this daemon has found");
    }
    const Worker::Kind kind = what == "stat" ? Worker::kStat : Worker::kRecord;
    for (auto& w : workers_)
      if (w->target() == pid && w->kind() == kind && !w->stopping)
        return now_or_log("error: " + what + (pending_.attaching(w->pid()) ? " is being attached to PID " : " is already attached to PID ") +
                          std::to_string(pid));
    std::string error;
    if (kind == Worker::kRecord && !trace_dir_.still_safe(&error)) return now_or_log("error: " + error);
    if (kind == Worker::kRecord && c_.max_disk_mb > 0 && enforce_disk_cap() > c_.max_disk_mb * (1 << 20))
      return now_or_log("error: the trace directory is over its cap of " + std::to_string(c_.max_disk_mb) +
                        " MiB with recordings running; detach one first");
    std::vector<std::string> args;
    auto w = std::make_unique<Worker>(kind, pid);
    if (kind == Worker::kStat) {
      char iv[32];
      std::snprintf(iv, sizeof iv, "%g", c_.stat_interval);
      args = {"stat", "-p", std::to_string(pid), "--prometheus", "-i", iv};
    } else {
      // The daemon names the file: a client never chooses a path.
      char stamp[32];
      std::time_t t = std::time(nullptr);
      std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
      // Unique even for two recordings of one JVM within a second: -2, -3, ...
      std::string stem = "jvm-" + std::to_string(pid) + "-" + stamp;
      for (int n = 2; name_taken(stem); n++) stem = "jvm-" + std::to_string(pid) + "-" + stamp + "-" + std::to_string(n);
      w->trace_path = trace_dir_.path() + "/" + stem + ".jvmtrace";
      args = {"record", "-q", "-p", std::to_string(pid), "-o", w->trace_path};
      if (!c_.segment_mb.empty()) args.insert(args.end(), {"--segment-mb", c_.segment_mb});
      if (!c_.segment_seconds.empty()) args.insert(args.end(), {"--segment-seconds", c_.segment_seconds});
      if (c_.keep) args.insert(args.end(), {"--keep", std::to_string(c_.keep)});
      if (seconds > 0) {
        char s[32];
        std::snprintf(s, sizeof s, "%g", seconds);
        args.push_back("-d");
        args.push_back(s);
      }
    }
    if (!w->start(c_.jvmtrace, args, &error)) return now_or_log("error: cannot start the worker: " + error);
    w->started_at = now_s();
    // "ok" only once the worker has attached; its error otherwise.
    const std::string ok =
        "ok: " + what + " attached to PID " + std::to_string(pid) + " (" +
        (j->second.patched ? "jvmtrace probes" : "stock mode") + ", worker " + std::to_string(w->pid()) + ")" +
        (w->trace_path.empty() ? ""
         : c_.segment_mb.empty() && c_.segment_seconds.empty()
             ? " -> " + w->trace_path
             : " -> " + w->trace_path.substr(0, w->trace_path.size() - 9) + ".NNNNNN.jvmtrace (segments of " +
                   (c_.segment_mb.empty() ? "" : c_.segment_mb + " MiB") +
                   (c_.segment_mb.empty() || c_.segment_seconds.empty() ? "" : " or ") +
                   (c_.segment_seconds.empty() ? "" : c_.segment_seconds + " s") +
                   (c_.keep ? ", newest " + std::to_string(c_.keep) + " kept" : "") + ")");
    pending_.add_attach(client, w->pid(), ok, what + " to PID " + std::to_string(pid), now_s() + kAttachSeconds);
    workers_.push_back(std::move(w));
    return "";
  }

  void read_workers() {
    for (auto& w : workers_) {
      w->read_stdout();
      const pid_t wpid = w->pid(), target = w->target();
      const char* kind = kind_name(*w);
      w->read_stderr([&](const std::string& l) {
        log_line("info", "[%s %d] %s", kind, target, l.c_str());
        pending_.worker_line(wpid, l);
      });
    }
  }

  void reap() {
    for (auto it = workers_.begin(); it != workers_.end();) {
      int status = 0;
      Worker& w = **it;
      const pid_t wpid = w.pid();
      if (!w.reap(&status)) {
        ++it;
        continue;
      }
      w.read_stdout();
      w.read_stderr([&](const std::string& l) {
        log_line("info", "[%s %d] %s", kind_name(w), w.target(), l.c_str());
        pending_.worker_line(wpid, l);
      });
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      log_line(ok ? "info" : "warn", "%s worker %d for PID %d ended (%s%d)", kind_name(w), wpid, w.target(),
               WIFEXITED(status) ? "exit " : "signal ", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      pending_.worker_exited(wpid, status);
      it = workers_.erase(it);
    }
  }

  std::string metrics_text() {
    int patched = 0;
    for (const auto& [pid, j] : discovery_.jvms()) patched += j.patched;
    int stats = 0, records = 0;
    for (auto& w : workers_)
      if (!pending_.attaching(w->pid())) (w->kind() == Worker::kStat ? stats : records)++;
    std::vector<std::string> blocks;
    blocks.push_back(
        "# HELP jvmtraced_jvms JVMs found on the host\n# TYPE jvmtraced_jvms gauge\n"
        "jvmtraced_jvms{probes=\"jvmtrace\"} " + std::to_string(patched) + "\njvmtraced_jvms{probes=\"stock\"} " +
        std::to_string(discovery_.jvms().size() - patched) + "\n"
        "# HELP jvmtraced_attachments attachments (worker processes) by kind\n# TYPE jvmtraced_attachments gauge\n"
        "jvmtraced_attachments{kind=\"stat\"} " + std::to_string(stats) + "\njvmtraced_attachments{kind=\"record\"} " +
        std::to_string(records) + "\n");
    for (auto& w : workers_)
      if (w->kind() == Worker::kStat && !w->metrics().empty()) blocks.push_back(w->metrics());
    return merge_exposition(blocks);
  }

  void shutdown() {
    log_line("info", "stopping: detaching %zu workers", workers_.size());
    const double deadline = now_s() + kShutdownSeconds;
    for (auto& w : workers_) w->stop(deadline);
    while (!workers_.empty() && now_s() < deadline) {
      read_workers();
      reap();  // answers the clients waiting on these workers
      usleep(20000);
    }
    for (auto& w : workers_) {
      log_line("warn", "worker %d for PID %d did not stop in time: killed", w->pid(), w->target());
      w->kill_now();
    }
    workers_.clear();
    pending_.abandon("error: jvmtraced stopped");
    clients_.clear();
    if (control_fd_ >= 0) close(control_fd_);
    if (metrics_fd_ >= 0) close(metrics_fd_);
    unlink(c_.socket_path.c_str());
    log_line("info", "stopped");
  }

  Config c_;
  JvmDiscovery discovery_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int control_fd_ = -1, metrics_fd_ = -1;
  gid_t group_gid_ = static_cast<gid_t>(-1);
  TraceDir trace_dir_;
  PendingReplies pending_;
  std::map<uint64_t, Client> clients_;
  uint64_t next_client_ = 1;  // 0 is "nobody" (PendingReplies)
  double started_ = now_s();
};

std::string default_jvmtrace();
std::string g_config_path;                                 // --config
std::vector<std::pair<std::string, std::string>> g_cli;    // options given on the command line

// One option, from the command line or the config file (the same names).
bool apply_option(Config* c, const std::string& name, const std::string& v, std::string* error) {
  const char* val = v.c_str();
  auto bad = [&](const std::string& why) {
    *error = "--" + name + " " + why + ", not '" + v + "'";
    return false;
  };
  auto boolean = [&](bool* out) {
    if (v.empty() || v == "true" || v == "yes" || v == "1") *out = true;
    else if (v == "false" || v == "no" || v == "0") *out = false;
    else return bad("takes true or false");
    return true;
  };
  if (name == "socket") c->socket_path = v;
  else if (name == "group") c->group = v;
  else if (name == "trace-dir") c->trace_dir = v;
  else if (name == "metrics-address") c->metrics_address = v;
  else if (name == "jvmtrace") c->jvmtrace = v;
  else if (name == "metrics-port") { if (!parse_long(val, 0, 65535, &c->metrics_port)) return bad("takes 0..65535"); }
  else if (name == "auto-stat") return boolean(&c->auto_stat);
  else if (name == "verbose") return boolean(&c->verbose);
  else if (name == "stat-interval") { if (!parse_seconds(val, &c->stat_interval)) return bad("takes a positive number of seconds"); }
  else if (name == "segment-mb") {
    double mb;
    if (!parse_seconds(val, &mb) || mb < 0.0625) return bad("takes a number of MiB from 0.0625");
    c->segment_mb = v;
  } else if (name == "segment-seconds") {
    double sec;
    if (!parse_seconds(val, &sec)) return bad("takes a positive number of seconds");
    c->segment_seconds = v;
  } else if (name == "max-disk-mb") {
    if (!parse_seconds(val, &c->max_disk_mb) || c->max_disk_mb < 0.0625) return bad("takes a number of MiB from 0.0625");
  } else if (name == "keep") { if (!parse_long(val, 1, 1000000, &c->keep)) return bad("takes a positive number"); }
  else {
    *error = "unknown option '" + name + "'";
    return false;
  }
  return true;
}

// Defaults, then the config file (if any), then the command line: what
// start-up and SIGHUP both build.
bool load_config(Config* c, std::string* error) {
  *c = Config();
  c->jvmtrace = default_jvmtrace();
  if (!g_config_path.empty()) {
    std::ifstream f(g_config_path);
    if (!f) {
      *error = "cannot read the config file " + g_config_path + ": " + std::strerror(errno);
      return false;
    }
    std::string line;
    for (int n = 1; std::getline(f, line); n++) {
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      const size_t a = line.find_first_not_of(" \t"), b = line.find_last_not_of(" \t");
      if (a == std::string::npos) continue;
      line = line.substr(a, b - a + 1);
      const size_t eq = line.find('=');
      std::string key = line.substr(0, eq), value = eq == std::string::npos ? "" : line.substr(eq + 1);
      key.erase(key.find_last_not_of(" \t") + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (!apply_option(c, key, value, error)) {
        *error = g_config_path + ":" + std::to_string(n) + ": " + *error;
        return false;
      }
    }
  }
  for (const auto& [name, value] : g_cli)
    if (!apply_option(c, name, value, error)) return false;
  if (c->keep && c->segment_mb.empty() && c->segment_seconds.empty()) {
    *error = "--keep goes with --segment-mb or --segment-seconds";
    return false;
  }
  return true;
}

std::string default_jvmtrace() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "jvmtrace";
  self[n] = 0;
  std::string s(self);
  return s.substr(0, s.rfind('/') + 1) + "jvmtrace";
}

}  // namespace
}  // namespace jvmtrace

int main(int argc, char** argv) {
  using namespace jvmtrace;
  static const option longopts[] = {
      {"socket", required_argument, nullptr, 1},          {"group", required_argument, nullptr, 1},
      {"trace-dir", required_argument, nullptr, 1},       {"metrics-port", required_argument, nullptr, 1},
      {"metrics-address", required_argument, nullptr, 1}, {"auto-stat", no_argument, nullptr, 1},
      {"stat-interval", required_argument, nullptr, 1},   {"jvmtrace", required_argument, nullptr, 1},
      {"segment-mb", required_argument, nullptr, 1},      {"keep", required_argument, nullptr, 1},
      {"segment-seconds", required_argument, nullptr, 1}, {"max-disk-mb", required_argument, nullptr, 1},
      {"verbose", no_argument, nullptr, 1},               {"config", required_argument, nullptr, 1},
      {"help", no_argument, nullptr, 'h'},                {nullptr, 0, nullptr, 0}};
  int opt, index = 0;
  while ((opt = getopt_long(argc, argv, "vh", longopts, &index)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return 0;
    }
    if (opt == 'v') {
      g_cli.emplace_back("verbose", "");
      continue;
    }
    if (opt != 1) {
      usage(stderr);
      return 2;
    }
    const std::string name = longopts[index].name;
    if (name == "config") g_config_path = optarg;
    else g_cli.emplace_back(name, optarg ? optarg : "");
  }
  if (optind < argc) {
    std::fprintf(stderr, "jvmtraced: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  Config c;
  std::string error;
  if (!load_config(&c, &error)) {
    std::fprintf(stderr, "jvmtraced: %s\n", error.c_str());
    return 2;
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "jvmtraced: run as root (it attaches eBPF programs to other users' JVMs)\n");
    return 1;
  }
  if (access(c.jvmtrace.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "jvmtraced: cannot run the worker binary %s: %s (see --jvmtrace)\n", c.jvmtrace.c_str(),
                 std::strerror(errno));
    return 1;
  }
  struct sigaction sa = {};
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_reload;
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  Daemon d(c);
  if (!d.start()) return 1;
  return d.run();
}
