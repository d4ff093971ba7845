// jvmtraced's core: one thread, one poll loop, which never waits for a
// client (daemon/connection.h), a worker (daemon/pending.h) or a target's
// file (discovery runs in a child process: daemon/scanner.h).  It learns of
// JVMs from the scanner, answers the control socket's requests
// (daemon/request.h) by starting and stopping worker processes
// (daemon/worker.h), keeps the trace directory's names and cap
// (daemon/trace_store.h) and serves the stat workers' figures to Prometheus
// (daemon/metrics.h).  main.cpp parses the options and runs it.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/connection.h"
#include "daemon/jvm_discovery.h"
#include "daemon/log.h"
#include "daemon/pending.h"
#include "daemon/request.h"
#include "daemon/scanner.h"
#include "daemon/trace_dir.h"
#include "daemon/trace_store.h"
#include "daemon/worker.h"

namespace jvmtrace {

class Daemon {
 public:
  // How long a worker may take to attach, and to stop after SIGINT before
  // it is killed (detach; the daemon stopping).
  static constexpr double kAttachSeconds = 60, kDetachSeconds = 15, kShutdownSeconds = 20;
  // Connections open at once (each lives 1 s unless it waits on a worker),
  // with a budget each: any local user can reach the metrics port, and must
  // not be able to keep root from the control socket.  Root has a reserve
  // beyond the control budget (the group's members cannot fill it either).
  static constexpr size_t kMaxControlClients = 64, kRootReserve = 16, kMaxMetricsClients = 192;

  Daemon(const Config& c, ConfigSource source)
      : c_(c),
        source_(std::move(source)),
        pending_([this](uint64_t client, const std::string& reply) { send_reply(client, reply); }) {}

  // SIGINT and SIGTERM end run(); SIGHUP reloads the configuration.
  static void install_signal_handlers();

  // SIGHUP: the config file again.  What the running sockets depend on
  // needs a restart; the rest applies now (auto-stat also to JVMs already
  // found, intervals and rotation to attachments made from now on).
  void reload();

  bool start();

  // The event loop.  Nothing in it waits for a client or a worker: requests
  // are read and replies written as the sockets allow (Connection), and an
  // attach or detach is answered when its workers get there (PendingReplies).
  int run();

 private:
  // What the scanner found since the last round: logged, auto-stat attached.
  void discovered();
  // Attach requests for a PID the scanner has not reported: answered once
  // it has scanned again (it is asked to at once) or after 3 s.
  struct AwaitingScan {
    uint64_t client;
    pid_t pid;
    std::string what;
    double seconds, deadline;
    uint64_t scans_at;
  };
  void resolve_awaiting(double now);

  // --- clients -------------------------------------------------------------

  struct Client {
    std::unique_ptr<Connection> conn;
    bool control;      // else metrics
    bool authorised;   // control: root or the group
    std::string who;
  };

  void accept_clients(int listen_fd, bool control);

  void client_ready(uint64_t id);

  // A complete (or failed) request: answer it, or leave it waiting.
  void handle(uint64_t id, Client& c);

  // PendingReplies' way out: to the client if it is still there, else (auto-stat) to the log.
  void send_reply(uint64_t client, const std::string& reply);

  void close_finished_clients() {
    for (auto it = clients_.begin(); it != clients_.end();)
      it = it->second.conn->state() == Connection::kDone ? clients_.erase(it) : std::next(it);
  }

  // Deadlines: clients' reads and writes, attaches that take too long,
  // workers that do not stop after SIGINT.
  void on_time(double now);

  static const char* kind_name(const Worker& w) { return w.kind() == Worker::kStat ? "stat" : "record"; }

  // The reply, or "" when it will come later (pending_).
  std::string act(uint64_t client, const Request& r);

  // Starts a worker.  Returns the reply if it is known now (an error), ""
  // if it comes once the worker has attached (pending_).  client 0: nobody
  // waits (auto-stat); the outcome is logged.
  // may_wait: a PID not found yet waits for the next scan (else: an error).
  std::string attach(uint64_t client, pid_t pid, const std::string& what, double seconds, bool may_wait = true);

  void read_workers();

  void reap();

  std::string metrics_text();
  static std::string start_time_line(const Worker& w);  // jvmtrace_jvm_start_time_seconds's sample

  void shutdown();

  static volatile sig_atomic_t stop_requested_, reload_requested_;
  Config c_;
  ConfigSource source_;
  Scanner scanner_;
  std::vector<AwaitingScan> awaiting_scan_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int control_fd_ = -1, metrics_fd_ = -1;
  gid_t group_gid_ = static_cast<gid_t>(-1);
  TraceDir trace_dir_;
  std::string cap_stopped_stem_;  // enforce_disk_cap's memory: the recording it stopped last
  PendingReplies pending_;
  std::map<uint64_t, Client> clients_;
  size_t clients_of(bool control) const {
    size_t n = 0;
    for (const auto& [id, c] : clients_) n += c.control == control;
    return n;
  }
  // The last figures of stat workers whose JVM exited, served until `until`
  // (--metrics-linger; at most max-workers of them): a scrape after the
  // exit still gets the JVM's final counts.
  struct Lingering {
    std::string block, start_time;  // with the identity labels
    double until;
    pid_t target;  // (a live worker for a reused PID replaces it: no duplicate series)
  };
  std::vector<Lingering> lingering_;
  uint64_t attaches_refused_max_workers_ = 0;  // jvmtraced_attaches_refused_total
  double boot_time_ = 0;                      // /proc/stat btime: JVM start times from ticks since boot
  uint64_t next_client_ = 1;  // 0 is "nobody" (PendingReplies)
  double started_ = now_s();
};

}  // namespace jvmtrace
