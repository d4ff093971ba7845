#pragma once
namespace jvmtrace {
int record_command(int argc, char** argv);
}
