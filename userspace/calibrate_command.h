#pragma once
namespace jvmtrace {
int calibrate_command(int argc, char** argv);
}
