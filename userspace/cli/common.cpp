#include "cli/common.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "attach/launch.h"
#include "process/target.h"

namespace jvmtrace {

namespace {
volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

bool check_target(const char* cmd, pid_t pid, const std::string& binary, Target* t) {
  if (!process_alive(pid)) {
    std::fprintf(stderr, "%s: no process with PID %d\n", cmd, pid);
    return false;
  }
  t->pid = pid;
  t->binary = binary.empty() ? find_libjvm(pid) : binary;
  if (t->binary.empty()) {
    std::fprintf(stderr, "%s: PID %d is not a JVM: no libjvm.so mapped%s\n", cmd, pid,
                 geteuid() ? " (or /proc/PID/maps is not readable: run as root)" : "");
    return false;
  }
  if (access(t->binary.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "%s: cannot read %s: %s\n", cmd, t->binary.c_str(), std::strerror(errno));
    return false;
  }
  t->probes = usdt_probe_names(t->binary, "jvmtrace");
  t->has_probes = !t->probes.empty();
  return true;
}

void print_no_probes(const char* cmd, const Target& t, const char* alternative) {
  std::fprintf(stderr,
               "%s: %s in PID %d has no jvmtrace probes (an unpatched HotSpot).\n"
               "  %s\n"
               "  The bpftrace tools also work on it: scripts/jvmtrace-bt tlabstat_stock %d\n"
               "  (and gcpause_stock, allocslow_stock, plabstat_stock, allocbyclass_stock).\n",
               cmd, t.binary.c_str(), t.pid, alternative, t.pid);
}

bool parse_mode(const char* cmd, const char* s, std::string* mode) {
  if (std::strcmp(s, "auto") && std::strcmp(s, "usdt") && std::strcmp(s, "stock")) {
    std::fprintf(stderr, "%s: --mode takes auto, usdt or stock, not '%s'\n", cmd, s);
    return false;
  }
  *mode = s;
  return true;
}

bool target_arguments(const char* cmd, int argc, char** argv, int optind, const char* last_optarg, pid_t pid,
                      bool launch_timeout_set, char*** command, void (*usage)(FILE*)) {
  *command = command_follows(argc, argv, optind, last_optarg) ? argv + optind : nullptr;
  const char* why = nullptr;
  std::string unexpected;
  if (!*command && optind < argc) {
    unexpected = std::string("unexpected argument '") + argv[optind] + "' (a command to run goes after --)";
    why = unexpected.c_str();
  } else if (*command && !**command) {
    why = "no COMMAND after --";
  } else if (*command && pid) {
    why = "-p PID and -- COMMAND exclude each other: attach to a running JVM, or start one";
  } else if (!pid && !*command) {
    why = "-p PID or -- COMMAND is required";
  } else if (launch_timeout_set && !*command) {
    std::fprintf(stderr, "%s: --launch-timeout goes with -- COMMAND\n", cmd);
    return false;
  }
  if (!why) return true;
  std::fprintf(stderr, "%s: %s\n", cmd, why);
  usage(stderr);
  return false;
}

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop != 0; }

std::string bpf_load_hint(int err) {
  std::string s = std::strerror(err);
  if (geteuid() != 0 || err == EPERM) s += " (run as root, or with CAP_BPF and CAP_PERFMON)";
  return s;
}

}  // namespace jvmtrace
