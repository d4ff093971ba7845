#pragma once
namespace jvmtrace {
int flame_command(int argc, char** argv);
}
