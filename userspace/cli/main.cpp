// jvmtrace: the command-line entry; one subcommand per file.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"

namespace {
void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace COMMAND [OPTIONS]\n"
               "Observe a live HotSpot JVM's allocation and GC through the jvmtrace USDT probes.\n"
               "COMMANDS:\n"
               "  stat    aggregate in the kernel: histograms, counters, top threads and classes\n"
               "  record  every event into a compact trace file\n"
               "          (both attach with -p PID, or start a program: -- COMMAND [ARGS...])\n"
               "  dump    print a trace file's events (text or JSON lines)\n"
               "  report  summarise a trace file: GCs, TLABs, PLABs, allocation rate, top classes;\n"
               "          --check replays it against HotSpot's invariants, --html draws it\n"
               "  export  a trace file as a Perfetto timeline (--perfetto)\n"
               "  flame   an allocation flame graph of a trace recorded with --stacks\n"
               "  calibrate  JFR's allocation sampling bias per class, against a trace of the same run\n"
               "  daemon  talk to jvmtraced: status, list, attach, detach\n"
               "  target  what the bpftrace tools (jvmtrace-bt) need from a JVM's libjvm.so, checked\n"
               "Run 'jvmtrace COMMAND --help' for a command's options; 'jvmtrace --version' for the version.\n"
               "EXAMPLES:\n"
               "  sudo jvmtrace stat -p 4242\n"
               "  sudo jvmtrace stat -p 4242 -d 30 --json\n"
               "  sudo jvmtrace record -p 4242 -o app.jvmtrace -d 60\n"
               "  sudo jvmtrace record -o app.jvmtrace -- java -jar app.jar   # start it, traced from its start\n"
               "  jvmtrace report app.jvmtrace\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    usage(stdout);
    return 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("jvmtrace %s\n", JVMTRACE_VERSION);
    return 0;
  }
  if (!std::strcmp(argv[1], "stat")) return jvmtrace::stat_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "record")) return jvmtrace::record_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "dump")) return jvmtrace::dump_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "daemon")) return jvmtrace::daemon_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "calibrate")) return jvmtrace::calibrate_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "flame")) return jvmtrace::flame_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "export")) return jvmtrace::export_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "report")) return jvmtrace::report_command(argc - 1, argv + 1);
  if (!std::strcmp(argv[1], "target")) return jvmtrace::target_command(argc - 1, argv + 1);
  std::fprintf(stderr, "jvmtrace: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
