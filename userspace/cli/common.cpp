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

}  // namespace jvmtrace
