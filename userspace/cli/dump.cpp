// `jvmtrace dump`: a trace file's events as text or JSON lines.
#include "cli/trace_input.h"

#include <getopt.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "analysis/java_frames.h"
#include "base/json.h"
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
        Json j = {{"type", "meta"}};
        // A meta key "type" (only a crafted trace has one) must not change the line's type.
        for (const auto& [k, v] : reader.meta_fields()) j[k == "type" ? "meta_type" : k] = v;
        std::printf("%s\n", json_text(j).c_str());
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
    if (r.type < JT_PROBE_COUNT || r.type == trace::kLost || r.type == trace::kEnd || r.type == trace::kFates) {
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
        Json args = Json::object();
        for (int i = 0; i < info.nargs; i++) {
          const uint64_t v = e.a[i];
          switch (info.kinds[i]) {
            case trace::kUnused: break;
            case trace::kClassId: args[info.arg_names[i]] = reader.classes()[v]; break;
            case trace::kStringId: args[info.arg_names[i]] = reader.strings()[v]; break;
            case trace::kJavaStackId: {  // the frames themselves, leaf first
              Json frames = Json::array();
              if (v)
                for (const trace::Frame& f : reader.java_stacks()[v - 1])
                  frames.push_back({{"method", analysis::method_name(reader, f.method)},
                                    {"file", analysis::method_file(reader, f.method)},
                                    {"line", f.line},
                                    {"kind", trace::frame_kind_name(f.kind)}});
              args[info.arg_names[i]] = std::move(frames);
              break;
            }
            default: args[info.arg_names[i]] = v;
          }
        }
        const Json j = {{"type", "event"}, {"offset", r.offset}, {"probe", info.name}, {"ts_ns", e.ts_ns},
                        {"tid", th.tid},   {"thread", th.name}, {"args", std::move(args)}};
        std::printf("%s\n", json_text(j).c_str());
        return;
      }
      std::printf("%14.9f %7u %-16s %-19s", t, th.tid, printable(th.name).c_str(), info.name);
      for (int i = 0; i < info.nargs; i++) {
        const uint64_t v = e.a[i];
        switch (info.kinds[i]) {
          case trace::kUnused: break;
          case trace::kClassId: std::printf(" %s=%s", info.arg_names[i], printable(reader.classes()[v]).c_str()); break;
          case trace::kStringId: std::printf(" %s=%s", info.arg_names[i], printable(reader.strings()[v]).c_str()); break;
          case trace::kHex: std::printf(" %s=0x%" PRIx64, info.arg_names[i], v); break;
          case trace::kJavaStackId: {  // its allocation site (the leaf-most Java frame)
            const trace::Frame* site = v ? analysis::allocation_site(reader.java_stacks()[v - 1]) : nullptr;
            std::printf(" site=%s", site ? printable(analysis::frame_site(reader, *site)).c_str() : "[none]");
            break;
          }
          default: std::printf(" %s=%" PRIu64, info.arg_names[i], v);
        }
      }
      std::printf("\n");
    } else if (r.type == trace::kLost) {
      const uint8_t kind = static_cast<uint8_t>(r.id);
      if (json)
        std::printf("%s\n", json_text({{"type", "lost"}, {"ts_ns", r.ts_ns}, {"count", r.count},
                                       {"kind", trace::lost_kind_name(kind)}}).c_str());
      else
        std::printf("%14.9f # LOST %" PRIu64 " events: %s\n", t, r.count,
                    kind == trace::kLostRingBuffer ? "the ring buffer was full" : trace::lost_kind_text(kind));
    } else if (r.type == trace::kFates) {
      static const char* const kinds[JVMTRACE_FATE_KIND_COUNT] = {"died", "thinned", "untracked", "promoted", "lost"};
      const auto kind_name = [](uint8_t k) { return k < JVMTRACE_FATE_KIND_COUNT ? kinds[k] : "unknown"; };
      if (json) {
        Json recs = Json::array();
        for (const trace::Fate& f : r.fates.records)
          recs.push_back({{"sample_id", f.sample_id}, {"kind", kind_name(f.kind)}, {"gc_id", f.gc_id},
                          {"ambiguous", (f.flags & JVMTRACE_FATE_AMBIGUOUS) != 0}});
        std::printf("%s\n", json_text({{"type", "fates"}, {"ts_ns", r.ts_ns}, {"gc_id", r.fates.gc_id},
                                       {"level", r.fates.level}, {"tracked", r.fates.tracked},
                                       {"records", recs}}).c_str());
      } else {
        uint64_t n[JVMTRACE_FATE_KIND_COUNT] = {};
        for (const trace::Fate& f : r.fates.records)
          if (f.kind < JVMTRACE_FATE_KIND_COUNT) n[f.kind]++;
        std::printf("%14.9f # FATES gc=%" PRIu64 " level=%" PRIu64 " tracked=%" PRIu64 ": %" PRIu64 " died, %" PRIu64
                    " promoted, %" PRIu64 " thinned, %" PRIu64 " untracked\n", t, r.fates.gc_id, r.fates.level,
                    r.fates.tracked, n[JVMTRACE_FATE_DIED], n[JVMTRACE_FATE_PROMOTED], n[JVMTRACE_FATE_THINNED],
                    n[JVMTRACE_FATE_UNTRACKED]);
      }
    } else if (r.type == trace::kEnd) {
      if (json)
        std::printf("%s\n", json_text({{"type", "end"}, {"ts_ns", r.ts_ns}, {"reason", r.text}, {"events", r.count},
                                       {"lost", r.lost}}).c_str());
      else
        std::printf("%14.9f # END: %s; %" PRIu64 " events, %" PRIu64 " lost\n", t, printable(r.text).c_str(), r.count, r.lost);
    }
  });
  if (json) {
    const char* status = st.kind == trace::ReadStatus::kComplete    ? "complete"
                         : st.kind == trace::ReadStatus::kNoEnd     ? "no_end"
                         : st.kind == trace::ReadStatus::kTruncated ? "truncated"
                                                                    : "corrupt";
    std::printf("%s\n", json_text({{"type", "status"}, {"status", status}, {"offset", st.offset},
                                   {"detail", st.describe()}}).c_str());
  }
  std::fflush(stdout);
  return trace_end_status("jvmtrace dump", path, st, nullptr);
}

}  // namespace jvmtrace
