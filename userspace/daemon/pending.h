// Replies that wait on workers, so that the daemon's event loop never does.
// An attach is answered when its worker prints its banner (attached), when
// it exits first (its last line is the reason) or when its deadline passes
// (the daemon then kills it).  A detach is answered when every worker it
// stopped has exited.  Clients are named by the daemon's connection ids;
// client 0 is nobody (auto-stat): that reply is only logged.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace jvmtrace {

// What a worker prints on stderr once it has attached.
constexpr const char* kAttachedBanner = "Hit Ctrl-C to end.";

class PendingReplies {
 public:
  using Send = std::function<void(uint64_t client, const std::string& reply)>;
  explicit PendingReplies(Send send) : send_(std::move(send)) {}

  // ok: the reply once attached; what: "stat to PID 42", for the errors.
  void add_attach(uint64_t client, pid_t worker, std::string ok, std::string what, double deadline);
  // ok: the reply once every worker has exited.
  void add_detach(uint64_t client, const std::vector<pid_t>& workers, std::string ok);

  bool attaching(pid_t worker) const { return attaches_.count(worker) != 0; }
  size_t attaching_count() const { return attaches_.size(); }

  // A stderr line of the worker.  True if it is the banner: it has attached.
  bool worker_line(pid_t worker, const std::string& line);
  // The worker has exited (status as from waitpid).
  void worker_exited(pid_t worker, int status);
  // Attaches past their deadline are answered; returns their workers, for
  // the daemon to kill.
  std::vector<pid_t> expire(double now);
  // Stopping: every client still waiting gets `reply`.
  void abandon(const std::string& reply);

 private:
  struct Attach {
    uint64_t client;
    std::string ok, what, last_line;
    double deadline;
  };
  struct Detach {
    uint64_t client;
    std::set<pid_t> left;
    std::string ok;
    int killed = 0;
  };
  Send send_;
  std::map<pid_t, Attach> attaches_;  // by worker pid
  std::vector<Detach> detaches_;
};

}  // namespace jvmtrace
