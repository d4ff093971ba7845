#pragma once
namespace jvmtrace {
int export_command(int argc, char** argv);
}
