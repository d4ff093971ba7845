// `jvmtrace daemon ...`: the client of jvmtraced's control socket.  Turns
// the verbs into one protocol line (daemon/request.h), prints the reply.
#include "cli/commands.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/strings.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace daemon [--socket PATH] status\n"
               "       jvmtrace daemon [--socket PATH] list\n"
               "       jvmtrace daemon [--socket PATH] attach PID --stat | --record [--duration SEC]\n"
               "       jvmtrace daemon [--socket PATH] detach PID [--stat | --record]\n"
               "Talks to jvmtraced (default socket /run/jvmtraced/jvmtraced.sock): what it sees and runs,\n"
               "attaching stat (figures on its Prometheus endpoint) or record (a trace in its trace\n"
               "directory) to a JVM it found, and detaching.\n"
               "EXAMPLES:\n"
               "  sudo jvmtrace daemon list\n"
               "  sudo jvmtrace daemon attach 4242 --record --duration 60\n"
               "  sudo jvmtrace daemon detach 4242\n");
}

}  // namespace

int daemon_command(int argc, char** argv) {
  std::string socket_path = "/run/jvmtraced/jvmtraced.sock";
  int a = 1;
  if (a < argc && (!std::strcmp(argv[a], "-h") || !std::strcmp(argv[a], "--help"))) {
    usage(stdout);
    return 0;
  }
  if (a + 1 < argc && !std::strcmp(argv[a], "--socket")) {
    socket_path = argv[a + 1];
    a += 2;
  }
  if (a >= argc) {
    usage(stderr);
    return 2;
  }
  const std::string verb = argv[a++];
  std::string line;
  if (verb == "status" || verb == "list") {
    if (a != argc) {
      std::fprintf(stderr, "jvmtrace daemon: %s takes no arguments\n", verb.c_str());
      return 2;
    }
    line = verb;
  } else if (verb == "attach" || verb == "detach") {
    pid_t pid;
    if (a >= argc || !parse_pid(argv[a], &pid)) {
      std::fprintf(stderr, "jvmtrace daemon: %s needs a PID\n", verb.c_str());
      usage(stderr);
      return 2;
    }
    line = verb + " " + std::to_string(pid);
    std::string what, duration;
    for (a++; a < argc; a++) {
      if (!std::strcmp(argv[a], "--stat")) what = "stat";
      else if (!std::strcmp(argv[a], "--record")) what = "record";
      else if (!std::strcmp(argv[a], "--duration") && a + 1 < argc && verb == "attach") {
        double s;
        if (!parse_seconds(argv[++a], &s)) {
          std::fprintf(stderr, "jvmtrace daemon: --duration takes a positive number of seconds\n");
          return 2;
        }
        duration = argv[a];
      } else {
        std::fprintf(stderr, "jvmtrace daemon: unexpected argument '%s'\n", argv[a]);
        usage(stderr);
        return 2;
      }
    }
    if (verb == "attach" && what.empty()) {
      std::fprintf(stderr, "jvmtrace daemon: attach needs --stat or --record\n");
      return 2;
    }
    if (!duration.empty() && what != "record") {
      std::fprintf(stderr, "jvmtrace daemon: --duration goes with --record\n");
      return 2;
    }
    if (!what.empty()) line += " " + what;
    if (!duration.empty()) line += " " + duration;
  } else {
    std::fprintf(stderr, "jvmtrace daemon: unknown verb '%s'\n", verb.c_str());
    usage(stderr);
    return 2;
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "jvmtrace daemon: cannot reach jvmtraced at %s: %s%s\n", socket_path.c_str(),
                 std::strerror(errno),
                 errno == ENOENT || errno == ECONNREFUSED ? " (is it running?)" : errno == EACCES ? " (run as root)" : "");
    close(fd);
    return 1;
  }
  line += "\n";
  if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    std::fprintf(stderr, "jvmtrace daemon: sending the request failed: %s\n", std::strerror(errno));
    close(fd);
    return 1;
  }
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  std::fputs(reply.c_str(), stdout);
  return reply.compare(0, 6, "error:") == 0 || reply.empty() ? 1 : 0;
}

}  // namespace jvmtrace
