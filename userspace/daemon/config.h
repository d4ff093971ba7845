// jvmtraced's configuration: defaults, then the config file (--config),
// then the command line; start-up and SIGHUP build it the same way.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace jvmtrace {

struct Config {
  std::string socket_path = "/run/jvmtraced/jvmtraced.sock";  // (its directory: made 0755 if missing)
  std::string group;  // may also use the socket
  std::string trace_dir = "/var/lib/jvmtraced";
  std::string metrics_address = "127.0.0.1";
  long metrics_port = 9464;  // 0: no metrics endpoint
  bool auto_stat = false;
  double stat_interval = 5;
  std::string segment_mb;       // record workers: rotate each N MiB ("" = not by size)
  std::string segment_seconds;  // ... and/or each N seconds ("" = not by time)
  double max_disk_mb = 0;       // cap on the trace directory (0: none)
  long keep = 0;           // record workers: newest segments kept
  long max_workers = 64;   // attachments (worker processes) at once; auto-stat's too
  std::string application;  // the application label of JVMs without -Djvmtrace.app ("": their main class)
  bool metrics_full = false;   // stat workers serve every counter and histogram (--prometheus-full)
  double metrics_linger = 30;  // seconds an exited JVM's last figures stay served (0: none)
  // stat workers of patched JVMs also estimate the live heap (stat --live):
  // off by default, it makes the VM sample and walk a stack at its
  // JvmtraceSampleRate (docs/decisions.md, 160)
  bool stat_live = false;
  std::string jvmtrace;  // the worker binary
  bool verbose = false;
};

// Where a configuration comes from: the config file (may be empty: none)
// and the options given on the command line (name without "--", value).
struct ConfigSource {
  std::string file;
  std::vector<std::pair<std::string, std::string>> cli;

  // Builds *c from the defaults, the file and the command line (which wins);
  // false with *error (file:line: when the file is at fault).
  bool load(Config* c, std::string* error) const;
};

// One option, by its long name without "--" (the file uses the same names).
bool apply_option(Config* c, const std::string& name, const std::string& value, std::string* error);

}  // namespace jvmtrace
