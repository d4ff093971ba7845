#include "daemon/daemon.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>

#include "base/strings.h"
#include "daemon/listen.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "process/target.h"

namespace jvmtrace {

volatile sig_atomic_t Daemon::stop_requested_ = 0, Daemon::reload_requested_ = 0;

void Daemon::install_signal_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = [](int) { stop_requested_ = 1; };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = [](int) { reload_requested_ = 1; };
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void Daemon::reload() {
  Config n;
  std::string error;
  if (!source_.load(&n, &error)) {
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
  c_.application = n.application;
  c_.metrics_full = n.metrics_full;
  c_.stat_live = n.stat_live;  // (stat workers attached from now on)
  c_.metrics_linger = n.metrics_linger;
  log_line("info", "reloaded: auto-stat %s, stat-interval %g s, segment-mb %s, keep %ld", c_.auto_stat ? "on" : "off",
           c_.stat_interval, c_.segment_mb.empty() ? "-" : c_.segment_mb.c_str(), c_.keep);
  if (newly_auto)
    for (const auto& [pid, j] : scanner_.jvms()) {
      bool has = false;
      for (auto& w : workers_) has |= w->target() == pid && w->kind() == Worker::kStat;
      if (!has) attach(0, pid, "stat", 0);
    }
  std::string unsafe;
  if (!trace_dir_.still_safe(&unsafe))
    log_line("error", "%s; recordings are refused until it is fixed", unsafe.c_str());
}

bool Daemon::start() {
  std::string error, stat;
  if (read_proc_file("/proc/stat", &stat)) {
    const size_t at = stat.find("\nbtime ");
    if (at != std::string::npos) boot_time_ = std::strtod(stat.c_str() + at + 7, nullptr);
  }
  if (!trace_dir_.open(c_.trace_dir, &error)) {
    log_line("error", "%s", error.c_str());
    return false;
  }
  if (!scanner_.start(&error)) {
    log_line("error", "%s", error.c_str());
    return false;
  }
  control_fd_ = listen_control_socket(c_.socket_path, c_.group, &group_gid_, &error);
  if (control_fd_ >= 0 && c_.metrics_port)
    metrics_fd_ = listen_metrics_socket(c_.metrics_address, c_.metrics_port, &error);
  if (control_fd_ < 0 || (c_.metrics_port && metrics_fd_ < 0)) {
    log_line("error", "%s", error.c_str());
    return false;
  }
  log_line("info", "pid %d; control socket %s; metrics %s; traces in %s; workers run %s", getpid(),
           c_.socket_path.c_str(),
           c_.metrics_port ? ("http://" + c_.metrics_address + ":" + std::to_string(c_.metrics_port) + "/metrics").c_str()
                           : "off",
           trace_dir_.path().c_str(), c_.jvmtrace.c_str());
  return true;
}

int Daemon::run() {
  double next_scan = 0;
  while (!stop_requested_) {
    if (reload_requested_) {
      reload_requested_ = 0;
      reload();
    }
    if (now_s() >= next_scan) {
      if (c_.max_disk_mb > 0)
        enforce_disk_cap(trace_dir_, c_.max_disk_mb, workers_, now_s() + kDetachSeconds, &cap_stopped_stem_, false);
      next_scan = now_s() + 1.0;
    }
    scanner_.on_time(now_s());
    on_time(now_s());
    std::vector<pollfd> fds;
    std::vector<std::function<void()>> ready;  // what to do for fds[i]
    fds.push_back({control_fd_, POLLIN, 0});
    ready.push_back([this] { accept_clients(control_fd_, true); });
    if (metrics_fd_ >= 0) {
      fds.push_back({metrics_fd_, POLLIN, 0});
      ready.push_back([this] { accept_clients(metrics_fd_, false); });
    }
    if (scanner_.fd() >= 0) {
      fds.push_back({scanner_.fd(), POLLIN, 0});
      ready.push_back([this] { discovered(); });
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

void Daemon::discovered() {
  std::vector<JvmProcess> appeared, exited;
  scanner_.read(now_s(), &appeared, &exited);
  // (comm arrives escaped: the scanner printable()s what the target chose)
  for (const JvmProcess& j : exited) log_line("info", "JVM %d (%s) exited", j.pid, j.comm.c_str());
  for (const JvmProcess& j : appeared) {
    log_line("info", "found JVM %d (%s, pid %d in its namespace, %s)", j.pid, j.comm.c_str(), j.ns_pid,
             j.patched ? "patched: jvmtrace probes" : "stock");
    if (c_.auto_stat) attach(0, j.pid, "stat", 0, false);
  }
  resolve_awaiting(now_s());
}

void Daemon::resolve_awaiting(double now) {
  std::vector<AwaitingScan> due;
  for (auto it = awaiting_scan_.begin(); it != awaiting_scan_.end();) {
    // Two reports after the ask: a scan begun after it has completed.
    if (scanner_.jvms().count(it->pid) || scanner_.scans() >= it->scans_at + 2 || now >= it->deadline) {
      due.push_back(*it);
      it = awaiting_scan_.erase(it);
    } else {
      ++it;
    }
  }
  for (const AwaitingScan& a : due) {
    const std::string reply = attach(a.client, a.pid, a.what, a.seconds, false);
    if (!reply.empty()) send_reply(a.client, reply);
  }
}

void Daemon::accept_clients(int listen_fd, bool control) {
  for (int i = 0; i < 64; i++) {  // what is queued, within reason; the rest next round
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    // Each socket its own budget (no fd exhaustion; a flood of one does not
    // close the other); root beyond the control budget, within its reserve.
    const size_t open = clients_of(control);
    const bool over = open >= (control ? kMaxControlClients : kMaxMetricsClients);
    if (over && !(control && open < kMaxControlClients + kRootReserve && peer_uid(fd) == 0)) {
      if (c_.verbose)
        log_line("warn", "%zu %s clients already: one more closed unanswered", open, control ? "control" : "metrics");
      close(fd);
      continue;
    }
    Client c;
    c.control = control;
    c.authorised = !control || peer_authorised(fd, group_gid_, &c.who);
    c.conn = std::make_unique<Connection>(fd, control ? kMaxRequest : 8192, control ? "\n" : "\r\n\r\n", now_s());
    const uint64_t id = next_client_++;
    clients_.emplace(id, std::move(c));
    client_ready(id);  // its request may be there already
  }
}

void Daemon::client_ready(uint64_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  it->second.conn->on_ready(now_s());
  if (it->second.conn->state() == Connection::kReady) handle(id, it->second);
}

void Daemon::handle(uint64_t id, Client& c) {
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

void Daemon::send_reply(uint64_t client, const std::string& reply) {
  auto it = clients_.find(client);
  if (it == clients_.end()) {
    log_line(reply.compare(0, 6, "error:") == 0 ? "warn" : "info", "%.*s", static_cast<int>(reply.size() - 1),
             reply.c_str());
    return;
  }
  it->second.conn->reply(reply, now_s());
}

void Daemon::on_time(double now) {
  for (auto& [id, c] : clients_) {
    c.conn->on_time(now);
    if (c.conn->state() == Connection::kReady) handle(id, c);
  }
  resolve_awaiting(now);
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

std::string Daemon::act(uint64_t client, const Request& r) {
  std::string out;
  switch (r.verb) {
    case Request::kStatus: {
      int stats = 0, records = 0;
      for (auto& w : workers_)
        if (!pending_.attaching(w->pid())) (w->kind() == Worker::kStat ? stats : records)++;
      out = "jvmtraced pid " + std::to_string(getpid()) + ", up " + std::to_string(static_cast<long>(now_s() - started_)) +
            " s\njvms " + std::to_string(scanner_.jvms().size()) + "\nattached stat " + std::to_string(stats) +
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
      for (const auto& [pid, j] : scanner_.jvms()) {
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

std::string Daemon::attach(uint64_t client, pid_t pid, const std::string& what, double seconds, bool may_wait) {
  auto now_or_log = [&](const std::string& reply) {
    if (client) return reply + "\n";
    log_line("warn", "auto-stat of PID %d: %s", pid, reply.c_str());
    return std::string();
  };
  auto j = scanner_.jvms().find(pid);
  if (j == scanner_.jvms().end()) {
    if (may_wait && client) {  // it may have started since the last scan: ask for one
      awaiting_scan_.push_back({client, pid, what, seconds, now_s() + 3, scanner_.scans()});
      scanner_.poke();
      return "";
    }
    return now_or_log("error: PID " + std::to_string(pid) + " is not a JVM this daemon has found");
  }
  const Worker::Kind kind = what == "stat" ? Worker::kStat : Worker::kRecord;
  if (workers_.size() >= static_cast<size_t>(c_.max_workers)) {
    attaches_refused_max_workers_++;
    return now_or_log("error: " + std::to_string(workers_.size()) + " attachments already (max-workers " +
                      std::to_string(c_.max_workers) + "): detach one first");
  }
  for (auto& w : workers_)
    if (w->target() == pid && w->kind() == kind && !w->stopping)
      return now_or_log("error: " + what + (pending_.attaching(w->pid()) ? " is being attached to PID " : " is already attached to PID ") +
                        std::to_string(pid));
  std::string error;
  if (kind == Worker::kRecord && !trace_dir_.still_safe(&error)) return now_or_log("error: " + error);
  if (kind == Worker::kRecord && c_.max_disk_mb > 0 &&
      enforce_disk_cap(trace_dir_, c_.max_disk_mb, workers_, now_s() + kDetachSeconds, &cap_stopped_stem_, true) >
          c_.max_disk_mb * (1 << 20))
    return now_or_log("error: the trace directory is over its cap of " + std::to_string(c_.max_disk_mb) +
                      " MiB with recordings running; detach one first");
  std::vector<std::string> args;
  auto w = std::make_unique<Worker>(kind, pid);
  if (kind == Worker::kStat) {
    char iv[32];
    std::snprintf(iv, sizeof iv, "%g", c_.stat_interval);
    args = {"stat", "-p", std::to_string(pid), c_.metrics_full ? "--prometheus-full" : "--prometheus", "-i", iv};
    // The live heap's gauge: only a patched JVM has the probes (a stock
    // one keeps its other metrics; stat --live would refuse it).
    if (c_.stat_live && j->second.patched) args.push_back("--live");
    // The JVM's identity, fixed for its life: the target's text, escaped
    // for the exposition format (the scanner made it printable()).
    const JvmProcess& jp = j->second;
    // -Djvmtrace.app=NAME, else --application, else the main class.
    const std::string& app =
        jp.application_set || c_.application.empty() ? jp.application : c_.application;
    w->identity = "application=\"" + prometheus_label_value(app) + "\",container=\"" +
                  prometheus_label_value(jp.container) + "\"";
    w->jvm_start_time = boot_time_ + static_cast<double>(jp.start_time) / static_cast<double>(sysconf(_SC_CLK_TCK));
  } else {
    w->trace_path = trace_dir_.path() + "/" + new_trace_stem(trace_dir_, workers_, pid) + ".jvmtrace";
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

void Daemon::read_workers() {
  for (auto& w : workers_) {
    w->read_stdout();
    const pid_t wpid = w->pid(), target = w->target();
    const char* kind = kind_name(*w);
    w->read_stderr([&](const std::string& line) {
      // The worker's words quote the target's (paths, names): escaped for the log and the client.
      const std::string l = printable(line);
      log_line("info", "[%s %d] %s", kind, target, l.c_str());
      pending_.worker_line(wpid, l);
    });
  }
}

void Daemon::reap() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    int status = 0;
    Worker& w = **it;
    const pid_t wpid = w.pid();
    if (!w.reap(&status)) {
      ++it;
      continue;
    }
    w.read_stdout();
    w.read_stderr([&](const std::string& line) {
      const std::string l = printable(line);
      log_line("info", "[%s %d] %s", kind_name(w), w.target(), l.c_str());
      pending_.worker_line(wpid, l);
    });
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    log_line(ok ? "info" : "warn", "%s worker %d for PID %d ended (%s%d)", kind_name(w), wpid, w.target(),
             WIFEXITED(status) ? "exit " : "signal ", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    pending_.worker_exited(wpid, status);
    // A stat worker that ended by itself (its JVM exited; not detached) has
    // printed its final figures: they stay served a while.
    if (w.kind() == Worker::kStat && ok && !w.stopping && !w.metrics().empty() && c_.metrics_linger > 0) {
      const pid_t target = w.target();  // (an earlier JVM of this PID lingering: replaced)
      lingering_.erase(std::remove_if(lingering_.begin(), lingering_.end(),
                                      [&](const Lingering& l) { return l.target == target; }),
                       lingering_.end());
      lingering_.push_back({with_labels(w.metrics(), w.identity), start_time_line(w), now_s() + c_.metrics_linger, w.target()});
      if (lingering_.size() > static_cast<size_t>(c_.max_workers)) lingering_.erase(lingering_.begin());
    }
    it = workers_.erase(it);
  }
}

std::string Daemon::start_time_line(const Worker& w) {
  char v[64];
  std::snprintf(v, sizeof v, "%.2f", w.jvm_start_time);
  return "jvmtrace_jvm_start_time_seconds{" + w.identity + ",pid=\"" + std::to_string(w.target()) + "\"} " + v + "\n";
}

std::string Daemon::metrics_text() {
  int patched = 0;
  for (const auto& [pid, j] : scanner_.jvms()) patched += j.patched;
  int stats = 0, records = 0;
  for (auto& w : workers_)
    if (!pending_.attaching(w->pid())) (w->kind() == Worker::kStat ? stats : records)++;
  std::vector<std::string> blocks;
  blocks.push_back(
      "# HELP jvmtraced_jvms JVMs found on the host\n# TYPE jvmtraced_jvms gauge\n"
      "jvmtraced_jvms{probes=\"jvmtrace\"} " + std::to_string(patched) + "\njvmtraced_jvms{probes=\"stock\"} " +
      std::to_string(scanner_.jvms().size() - patched) + "\n"
      "# HELP jvmtraced_attachments attachments (worker processes) by kind\n# TYPE jvmtraced_attachments gauge\n"
      "jvmtraced_attachments{kind=\"stat\"} " + std::to_string(stats) + "\njvmtraced_attachments{kind=\"record\"} " +
      std::to_string(records) + "\n"
      "# HELP jvmtraced_attaches_refused_total attaches refused because max-workers were running (JVMs not served)\n"
      "# TYPE jvmtraced_attaches_refused_total counter\n"
      "jvmtraced_attaches_refused_total{reason=\"max_workers\"} " + std::to_string(attaches_refused_max_workers_) +
      "\n");
  std::string starts =
      "# HELP jvmtrace_jvm_start_time_seconds when the JVM started, seconds since the epoch\n"
      "# TYPE jvmtrace_jvm_start_time_seconds gauge\n";
  for (auto& w : workers_) {
    if (w->kind() != Worker::kStat || w->metrics().empty()) continue;
    blocks.push_back(with_labels(w->metrics(), w->identity));
    starts += start_time_line(*w);
  }
  const double now = now_s();
  lingering_.erase(std::remove_if(lingering_.begin(), lingering_.end(), [&](const Lingering& l) { return now >= l.until; }),
                   lingering_.end());
  for (const Lingering& l : lingering_) {
    bool live = false;
    for (auto& w : workers_) live |= w->kind() == Worker::kStat && w->target() == l.target && !w->metrics().empty();
    if (live) continue;
    blocks.push_back(l.block);
    starts += l.start_time;
  }
  blocks.push_back(starts);
  return merge_exposition(blocks);
}

void Daemon::shutdown() {
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

}  // namespace jvmtrace
