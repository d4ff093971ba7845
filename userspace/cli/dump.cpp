// `jvmtrace dump`: a trace file's events as text or JSON lines.
#include "cli/trace_input.h"

#include <getopt.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/strings.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace dump [--json] FILE\n"
               "Prints every record of a trace written by 'jvmtrace record': one line per event\n"
               "(time since the recording started, thread, probe, arguments with names resolved),\n"
               "lost-event notes and the end record.\n"
               "      --json   one JSON object per line (\"type\": meta|event|lost|end|status)\n"
               "Exit status: 0 the trace is complete; 3 it is incomplete (cut off, or the recorder\n"
               "was killed) and everything intact was printed; 1 it is corrupt (printed up to the\n"
               "damage, whose offset is reported) or unreadable; 2 bad usage.\n"
               "EXAMPLES:\n"
               "  jvmtrace dump app.jvmtrace | less\n"
               "  jvmtrace dump --json app.jvmtrace | jq 'select(.probe == \"gc__start\")'\n");
}

}  // namespace

int dump_command(int argc, char** argv) {
  bool json = false;
  static const option longopts[] = {{"json", no_argument, nullptr, 'j'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
    if (c == 'j') json = true;
    else if (c == 'h') { usage(stdout); return 0; }
    else { usage(stderr); return 2; }
  }
  if (optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace dump: give exactly one trace file\n");
    usage(stderr);
    return 2;
  }
  const std::string path = argv[optind];
  trace::TraceReader reader;
  if (!open_trace("jvmtrace dump", path, &reader)) return 1;
  uint64_t origin = 0;
  bool have_origin = false;
  bool header = json;  // the text column header, printed after the meta lines
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t) {
    if (r.type == trace::kMeta) {
      origin = trace_origin_ns(reader);
      have_origin = origin != 0;
      if (json) {
        std::printf("{\"type\": \"meta\"");
        for (const auto& [k, v] : reader.meta_fields())
          std::printf(", \"%s\": \"%s\"", json_escape(k).c_str(), json_escape(v).c_str());
        std::printf("}\n");
      } else {
        // Escaped again for the text: a newline in an argument stays on its line.
        std::printf("# PID %s, %s mode, %s\n# cmdline: %s\n",
                    printable(trace::meta_escape(reader.meta_value("pid"))).c_str(),
                    printable(trace::meta_escape(reader.meta_value("mode"))).c_str(),
                    printable(trace::meta_escape(reader.meta_value("binary"))).c_str(),
                    printable(trace::meta_escape(reader.meta_value("cmdline"))).c_str());
      }
      return;
    }
    if (!header) {
      std::printf("%14s %7s %-16s %-19s %s\n", "TIME(s)", "TID", "THREAD", "EVENT", "ARGUMENTS");
      header = true;
    }
    if (r.type < JT_PROBE_COUNT || r.type == trace::kLost || r.type == trace::kEnd) {
      if (!have_origin) {
        origin = r.ts_ns;
        have_origin = true;
      }
    }
    const double t = (static_cast<int64_t>(r.ts_ns - origin)) / 1e9;
    if (r.type < JT_PROBE_COUNT) {
      const trace::Event& e = r.event;
      const trace::ThreadInfo& th = reader.threads()[e.thread];
      const trace::ProbeInfo& info = trace::probe_info(e.probe);
      if (json) {
        std::printf("{\"type\": \"event\", \"offset\": %" PRIu64 ", \"probe\": \"%s\", \"ts_ns\": %" PRIu64
                    ", \"tid\": %u, \"thread\": \"%s\", \"args\": {",
                    r.offset, info.name, e.ts_ns, th.tid, json_escape(th.name).c_str());
      } else {
        std::printf("%14.9f %7u %-16s %-19s", t, th.tid, printable(th.name).c_str(), info.name);
      }
      bool first = true;
      for (int i = 0; i < info.nargs; i++) {
        const uint64_t v = e.a[i];
        const char* name = info.arg_names[i];
        if (info.kinds[i] == trace::kUnused) continue;
        if (json) std::printf("%s\"%s\": ", first ? "" : ", ", name);
        else std::printf(" %s=", name);
        first = false;
        switch (info.kinds[i]) {
          case trace::kClassId:
          case trace::kStringId: {
            const std::string& s = info.kinds[i] == trace::kClassId ? reader.classes()[v] : reader.strings()[v];
            if (json) std::printf("\"%s\"", json_escape(s).c_str());
            else std::printf("%s", printable(s).c_str());
            break;
          }
          case trace::kHex:
            if (json) std::printf("%" PRIu64, v);
            else std::printf("0x%" PRIx64, v);
            break;
          default:
            std::printf("%" PRIu64, v);
        }
      }
      std::printf(json ? "}}\n" : "\n");
    } else if (r.type == trace::kLost) {
      const uint8_t kind = static_cast<uint8_t>(r.id);
      if (json)
        std::printf("{\"type\": \"lost\", \"ts_ns\": %" PRIu64 ", \"count\": %" PRIu64 ", \"kind\": \"%s\"}\n",
                    r.ts_ns, r.count, trace::lost_kind_name(kind));
      else
        std::printf("%14.9f # LOST %" PRIu64 " events: %s\n", t, r.count,
                    kind == trace::kLostRingBuffer ? "the ring buffer was full" : trace::lost_kind_text(kind));
    } else if (r.type == trace::kEnd) {
      if (json)
        std::printf("{\"type\": \"end\", \"ts_ns\": %" PRIu64 ", \"reason\": \"%s\", \"events\": %" PRIu64
                    ", \"lost\": %" PRIu64 "}\n",
                    r.ts_ns, json_escape(r.text).c_str(), r.count, r.lost);
      else
        std::printf("%14.9f # END: %s; %" PRIu64 " events, %" PRIu64 " lost\n", t, printable(r.text).c_str(), r.count, r.lost);
    }
  });
  if (json)
    std::printf("{\"type\": \"status\", \"status\": \"%s\", \"offset\": %" PRIu64 ", \"detail\": \"%s\"}\n",
                st.kind == trace::ReadStatus::kComplete ? "complete"
                : st.kind == trace::ReadStatus::kNoEnd  ? "no_end"
                : st.kind == trace::ReadStatus::kTruncated ? "truncated" : "corrupt",
                st.offset, json_escape(st.describe()).c_str());
  std::fflush(stdout);
  return trace_end_status("jvmtrace dump", path, st, nullptr);
}

}  // namespace jvmtrace
