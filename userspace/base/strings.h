// Parsing numbers from the command line and the control socket, and making
// text safe for terminals: what every jvmtrace program shares (JSON: json.h).
#pragma once
#include <sys/types.h>

#include <string>

namespace jvmtrace {

// "1".."4194304"; false otherwise.
bool parse_pid(const char* s, pid_t* out);
// A positive number of seconds, at most 1e7.
bool parse_seconds(const char* s, double* out);
// An integer in [lo, hi].
bool parse_long(const char* s, long lo, long hi, long* out);

// Text the target chose (thread and class names, its command line) made
// safe for a terminal: control characters (C0, DEL and C1, which terminals
// act on: cursor moves, titles, clipboard writes) and bytes that are not
// UTF-8 become \xNN; everything else, UTF-8 included, stays as it is.
std::string printable(const std::string& s);
// A Prometheus label value for the text exposition format: a backslash,
// a double quote and a newline escaped as the format says, the rest made
// printable() (a label value reaches dashboards and terminals).
std::string prometheus_label_value(const std::string& s);
// True if s ends with suffix (output names choose formats: ".gz", ".svg").
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace jvmtrace
