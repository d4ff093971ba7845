// The jvmtrace subcommands, one file each in this folder.  argv[0] is the
// subcommand's name ("stat"); each returns the process's exit status.
#pragma once

namespace jvmtrace {

int stat_command(int argc, char** argv);       // stat.cpp: in-kernel aggregates
int record_command(int argc, char** argv);     // record.cpp: every event into a trace file
int dump_command(int argc, char** argv);       // dump.cpp: a trace's records as text or JSON
int report_command(int argc, char** argv);     // report.cpp: summary, --check, --html
int export_command(int argc, char** argv);     // export.cpp: --perfetto
int flame_command(int argc, char** argv);      // flame.cpp: allocation flame graphs
int calibrate_command(int argc, char** argv);  // calibrate.cpp: JFR's sampling bias
int daemon_command(int argc, char** argv);     // daemon_client.cpp: jvmtraced's control socket
int target_command(int argc, char** argv);     // target.cpp: what the bpftrace tools need, checked

}  // namespace jvmtrace
