#pragma once
namespace jvmtrace {
// `jvmtrace stat ...`; argv[0] is "stat".  Returns the exit code.
int stat_command(int argc, char** argv);
}
