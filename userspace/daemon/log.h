// jvmtraced's log (stderr: the journal under systemd) and its clock.
#pragma once

namespace jvmtrace {

// CLOCK_MONOTONIC in seconds: every deadline of the daemon.
double now_s();

// "TIME jvmtraced[LEVEL] message", one line.
void log_line(const char* level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace jvmtrace
