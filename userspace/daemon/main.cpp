// jvmtraced: the collector daemon.  Finds the JVMs on the host, attaches
// `stat` or `record` to them on request (a Unix socket; `jvmtrace daemon
// ...` is the client), serves the stat figures of every attached JVM to
// Prometheus on localhost, and detaches everything when it stops.  Each
// attachment is a worker process running the jvmtrace binary
// (daemon/worker.h says why).  This file: the options; daemon/daemon.h is
// the event loop, daemon/config.h the configuration.  docs/daemon.md is the
// manual.
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "daemon/config.h"
#include "daemon/daemon.h"

namespace jvmtrace {
namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtraced [--socket PATH] [--group NAME] [--trace-dir DIR] [--metrics-port N]\n"
               "                 [--metrics-address ADDR] [--auto-stat] [--stat-interval SEC]\n"
               "                 [--segment-mb N] [--segment-seconds S] [--keep N] [--max-disk-mb N]\n"
               "                 [--max-workers N] [--application NAME] [--metrics-full] [--metrics-linger SEC]\n"
               "                 [--stat-live] [--config FILE] [-v]\n"
               "The jvmtrace collector daemon (run as root): finds JVMs, attaches stat or record on\n"
               "request, serves Prometheus metrics, detaches everything on SIGTERM or Ctrl-C.\n"
               "  --socket PATH         control socket (default /run/jvmtraced/jvmtraced.sock, mode 0600;\n"
               "                        its directory is made, 0755, if missing; it and every directory\n"
               "                        above must be root's, not writable by group or others)\n"
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
               "  --max-workers N       attachments at once, auto-stat's included (default 64): a\n"
               "                        root worker per JVM must not be had by starting JVMs\n"
               "  --application NAME    the application label of JVMs without -Djvmtrace.app=NAME\n"
               "                        (default: each JVM's main class or -jar file's name)\n"
               "  --metrics-full        serve every counter and histogram (about 410 series per JVM;\n"
               "                        default: 28 to 67, GC pauses by kind in 11 buckets)\n"
               "  --metrics-linger SEC  an exited JVM's last figures stay served SEC seconds, so a\n"
               "                        scrape gets them (default 30; 0: gone at once)\n"
               "  --stat-live           stat workers of patched JVMs also estimate the live heap (stat\n"
               "                        --live): one gauge per JVM, jvmtrace_live_heap_estimated_bytes,\n"
               "                        and 3 series more; it makes each such VM sample allocations with\n"
               "                        a stack walk (JvmtraceSampleRate, 250/s) and track them by weak\n"
               "                        handles (default: off)\n"
               "  --jvmtrace PATH       the jvmtrace binary (default: next to jvmtraced)\n"
               "  -v, --verbose         log every scan and worker line\n"
               "  --version             print the version and exit\n"
               "  --config FILE         options as 'name = value' lines (names as above, without --;\n"
               "                        '#' comments); the command line wins; SIGHUP re-reads it\n"
               "Clients: jvmtrace daemon status|list|attach PID --stat|--record [--duration SEC]|detach PID\n"
               "EXAMPLES:\n"
               "  sudo jvmtraced --auto-stat &  curl -s localhost:9464/metrics\n"
               "  sudo jvmtrace daemon attach 4242 --record --duration 60\n");
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
      {"max-workers", required_argument, nullptr, 1},     {"application", required_argument, nullptr, 1},
      {"metrics-full", no_argument, nullptr, 1},         {"metrics-linger", required_argument, nullptr, 1},
      {"verbose", no_argument, nullptr, 1},               {"config", required_argument, nullptr, 1},
      {"stat-live", no_argument, nullptr, 1},
      {"help", no_argument, nullptr, 'h'},                {"version", no_argument, nullptr, 'V'},
      {nullptr, 0, nullptr, 0}};
  ConfigSource source;
  int opt, index = 0;
  while ((opt = getopt_long(argc, argv, "vh", longopts, &index)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return 0;
    }
    if (opt == 'V') {
      std::printf("jvmtraced %s\n", JVMTRACE_VERSION);
      return 0;
    }
    if (opt == 'v') {
      source.cli.emplace_back("verbose", "");
      continue;
    }
    if (opt != 1) {
      usage(stderr);
      return 2;
    }
    const std::string name = longopts[index].name;
    if (name == "config") source.file = optarg;
    else source.cli.emplace_back(name, optarg ? optarg : "");
  }
  if (optind < argc) {
    std::fprintf(stderr, "jvmtraced: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  Config c;
  std::string error;
  if (!source.load(&c, &error)) {
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
  Daemon::install_signal_handlers();
  Daemon d(c, std::move(source));
  if (!d.start()) return 1;
  return d.run();
}
