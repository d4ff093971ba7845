// The control protocol of jvmtraced: one request line per connection, one
// or more reply lines, then the daemon closes.  Requests (docs/daemon.md):
//   status | list | attach PID stat|record [SECONDS] | detach PID [stat|record]
// Parsing is strict and separate from acting, so every malformed request
// gets a reason and nothing else happens.
#pragma once
#include <sys/types.h>

#include <string>

namespace jvmtrace {

constexpr size_t kMaxRequest = 1024;  // bytes, newline included

struct Request {
  enum Verb { kStatus, kList, kAttach, kDetach } verb = kStatus;
  pid_t pid = 0;
  std::string what;    // "stat" / "record" (attach: required; detach: "" = both)
  double seconds = 0;  // attach record: stop after; 0 = until detach or the JVM exits
};

// False with *error for anything that is not exactly one of the forms above.
bool parse_request(const std::string& line, Request* r, std::string* error);

}  // namespace jvmtrace
