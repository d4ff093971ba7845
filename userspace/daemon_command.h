#pragma once
namespace jvmtrace {
int daemon_command(int argc, char** argv);
}
