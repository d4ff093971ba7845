// What every jvmtrace subcommand does the same way: checking the target
// process, --mode, Ctrl-C, BPF load errors (and, through base/strings.h,
// parsing numbers and escaping text).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <set>
#include <string>

#include "base/strings.h"

namespace jvmtrace {

// The target of an attaching command: the process exists and maps
// libjvm.so (or binary, when given), readable from here; has_probes tells
// whether that file declares jvmtrace probes (a patched HotSpot).  On failure
// prints "<cmd>: reason" and returns false.
struct Target {
  pid_t pid = 0;
  std::string binary;  // the ELF file the probes are in
  bool has_probes = false;
  std::set<std::string> probes;  // the jvmtrace probes it declares
};
bool check_target(const char* cmd, pid_t pid, const std::string& binary, Target* t);

// The error for a JVM without jvmtrace probes where a command needs them.
void print_no_probes(const char* cmd, const Target& t, const char* alternative);

// --mode's value: auto, usdt or stock; else prints why and returns false.
bool parse_mode(const char* cmd, const char* s, std::string* mode);

// What `stat` and `record` are pointed at, after their options: -p PID or
// the COMMAND after "--" (*command, nullptr when none), not both, and
// --launch-timeout only with a COMMAND.  Otherwise prints why as cmd
// ("jvmtrace stat"), then usage, and returns false (exit status 2).
bool target_arguments(const char* cmd, int argc, char** argv, int optind, const char* last_optarg, pid_t pid,
                      bool launch_timeout_set, char*** command, void (*usage)(FILE*));

// SIGINT and SIGTERM set stop_requested() instead of killing the process.
void install_stop_handlers();
bool stop_requested();

// The message for a BPF load failure (permissions, kernel support).
std::string bpf_load_hint(int err);

}  // namespace jvmtrace
