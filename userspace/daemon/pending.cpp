#include "daemon/pending.h"

#include <signal.h>
#include <sys/wait.h>

namespace jvmtrace {

void PendingReplies::add_attach(uint64_t client, pid_t worker, std::string ok, std::string what, double deadline) {
  attaches_[worker] = {client, std::move(ok), std::move(what), "", deadline};
}

void PendingReplies::add_detach(uint64_t client, const std::vector<pid_t>& workers, std::string ok) {
  detaches_.push_back({client, std::set<pid_t>(workers.begin(), workers.end()), std::move(ok)});
}

bool PendingReplies::worker_line(pid_t worker, const std::string& line) {
  auto a = attaches_.find(worker);
  if (a == attaches_.end()) return false;
  if (line.find(kAttachedBanner) == std::string::npos) {
    a->second.last_line = line;
    return false;
  }
  send_(a->second.client, a->second.ok + "\n");
  attaches_.erase(a);
  return true;
}

void PendingReplies::worker_exited(pid_t worker, int status) {
  if (auto a = attaches_.find(worker); a != attaches_.end()) {
    const std::string& last = a->second.last_line;
    send_(a->second.client, "error: " + a->second.what + " could not attach: " +
                                (last.empty() ? "the worker exited (status " + std::to_string(status) + ")" : last) +
                                "\n");
    attaches_.erase(a);
  }
  for (auto d = detaches_.begin(); d != detaches_.end();) {
    if (d->left.erase(worker) && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) d->killed++;
    if (!d->left.empty()) {
      ++d;
      continue;
    }
    send_(d->client, d->ok +
                         (d->killed ? " (" + std::to_string(d->killed) + " did not stop in time and was killed)" : "") +
                         "\n");
    d = detaches_.erase(d);
  }
}

std::vector<pid_t> PendingReplies::expire(double now) {
  std::vector<pid_t> late;
  for (auto a = attaches_.begin(); a != attaches_.end();) {
    if (now < a->second.deadline) {
      ++a;
      continue;
    }
    send_(a->second.client, "error: " + a->second.what + " could not attach: the worker did not attach in time" +
                                (a->second.last_line.empty() ? "" : " (last said: " + a->second.last_line + ")") +
                                "; it was killed\n");
    late.push_back(a->first);
    a = attaches_.erase(a);
  }
  return late;
}

void PendingReplies::abandon(const std::string& reply) {
  for (auto& [worker, a] : attaches_) send_(a.client, reply + "\n");
  for (auto& d : detaches_) send_(d.client, reply + "\n");
  attaches_.clear();
  detaches_.clear();
}

}  // namespace jvmtrace
