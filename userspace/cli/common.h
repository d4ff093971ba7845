// What every jvmtrace subcommand does the same way: --mode, -p/--, Ctrl-C
// (and, through base/strings.h, parsing numbers and escaping text).  What an
// attaching command checks of its target is attach/session.h's.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <string>

#include "base/strings.h"

namespace jvmtrace {

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

}  // namespace jvmtrace
