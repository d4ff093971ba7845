#pragma once
namespace jvmtrace {
int report_command(int argc, char** argv);
}
