// What every jvmtrace subcommand does the same way: parsing numbers,
// checking the target process, JSON strings, Ctrl-C.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <set>
#include <string>

namespace jvmtrace {

// "1".."4194304"; false otherwise.
bool parse_pid(const char* s, pid_t* out);
// A positive number of seconds, at most 1e7.
bool parse_seconds(const char* s, double* out);
// An integer in [lo, hi].
bool parse_long(const char* s, long lo, long hi, long* out);

std::string json_escape(const std::string& s);
// Text the target chose (thread and class names, its command line) made
// safe for a terminal: control characters (C0, DEL and C1, which terminals
// act on: cursor moves, titles, clipboard writes) and bytes that are not
// UTF-8 become \xNN; everything else, UTF-8 included, stays as it is.
std::string printable(const std::string& s);
// True if s ends with suffix (output names choose formats: ".gz", ".svg").
bool ends_with(const std::string& s, const std::string& suffix);

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

// SIGINT and SIGTERM set stop_requested() instead of killing the process.
void install_stop_handlers();
bool stop_requested();

// The message for a BPF load failure (permissions, kernel support).
std::string bpf_load_hint(int err);

}  // namespace jvmtrace
