// jvmtrace export --perfetto: a trace as a timeline for ui.perfetto.dev, as
// Perfetto's protobuf trace or as Trace Event JSON.
#include "cli/commands.h"

#include <getopt.h>

#include <memory>

#include <cstdio>
#include <string>

#include "analysis/alloc_profile.h"
#include "analysis/live_heap.h"
#include "analysis/output_file.h"
#include "analysis/perfetto_export.h"
#include "analysis/perfetto_proto.h"
#include "analysis/pprof_export.h"
#include "base/strings.h"
#include "cli/progress.h"
#include "cli/trace_input.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace export --perfetto FILE -o OUT [--format proto|json] [--rate-interval SEC]\n"
               "       jvmtrace export --pprof FILE -o OUT.pb.gz\n"
               "Converts a trace to a timeline for ui.perfetto.dev: GC pauses (cause, heap\n"
               "before/after) and concurrent cycles on VM tracks; TLAB refills and allocation slow\n"
               "paths on each mutator thread; PLABs on each GC worker; counters for heap used\n"
               "(between pauses: the last pause's figure plus the traced allocation since), heap\n"
               "committed and allocation rate.  docs/analysis.md has the mapping.  Nothing leaves\n"
               "the machine: open the file in the UI yourself.\n"
               "Two formats, chosen by OUT's name (or --format):\n"
               "  OUT.pftrace[.gz]        Perfetto's own protobuf trace, its packets deflated as the\n"
               "                          tracing service writes them (smaller than the JSON gzipped),\n"
               "                          and what the UI loads fastest (recommended)\n"
               "  OUT.json[.gz], others   Chrome's Trace Event Format (JSON), which chrome://tracing\n"
               "                          and other tools also read\n"
               "      --perfetto          a timeline for Perfetto\n"
               "      --pprof             an allocation profile for pprof (go tool pprof, Pyroscope,\n"
               "                          Grafana, Parca), gzipped: samples alloc_objects/count and\n"
               "                          alloc_space/bytes by Java stack (inlined frames as pprof's\n"
               "                          inline lines), labels class and allocation (new_tlab or\n"
               "                          outside_tlab); from a trace of 'record --stacks' on a JVM\n"
               "                          that walks its own stacks (alloc__sample)\n"
               "  -o, --output OUT        where to write; a name ending in .gz is gzip-compressed;\n"
               "                          - for stdout (JSON unless --format proto)\n"
               "      --format FMT        proto or json, whatever OUT's name\n"
               "      --rate-interval SEC allocation-rate counter steps (default 0.01)\n"
               "On a terminal, a progress line shows while a large trace is read.\n"
               "Exit status as for 'jvmtrace dump': 0 complete, 3 incomplete (the intact part is\n"
               "exported), 1 corrupt or unwritable, 2 usage.\n"
               "EXAMPLES:\n"
               "  jvmtrace export --perfetto app.jvmtrace -o app.pftrace\n"
               "  jvmtrace export --perfetto app.jvmtrace -o app.json.gz\n"
               "  jvmtrace export --pprof app.jvmtrace -o app.pb.gz && go tool pprof -top app.pb.gz\n");
}

// --pprof: the trace's allocation samples, aggregated, then written whole.
int export_pprof(const char* path, const std::string& output) {
  trace::TraceReader reader;
  std::string error;
  if (!open_trace("jvmtrace export", path, &reader)) return 1;
  analysis::AllocationProfile profile(reader);
  analysis::LiveHeap live(reader);
  Progress progress("jvmtrace export", path);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    profile.add(r);
    live.add(r);
    progress.at(offset);
  });
  progress.done();
  if (reader.meta_value("stacks") != "vm") {
    std::fprintf(stderr, "jvmtrace export: %s has no allocation samples: record it with --stacks on a JVM whose "
                 "patch has alloc__sample (%s)\n", path,
                 reader.meta_value("stacks").empty() ? "it was recorded without --stacks"
                                                     : "its stacks are BPF's, with no line numbers; use jvmtrace flame");
    return 1;
  }
  analysis::OutputFile out;
  if (!out.open(output, true, &error)) {
    std::fprintf(stderr, "jvmtrace export: %s\n", error.c_str());
    return 1;
  }
  out.write(analysis::pprof_profile(reader, profile, &live));
  if (!out.close(&error)) {
    std::fprintf(stderr, "jvmtrace export: %s\n", error.c_str());
    return 1;
  }
  if (output != "-")
    std::fprintf(stderr, "jvmtrace export: %s: %llu samples, %llu bytes allocated (%llu in threads never sampled), "
                 "%llu bytes of pprof before gzip\n", output.c_str(),
                 static_cast<unsigned long long>(profile.samples()),
                 static_cast<unsigned long long>(profile.traced_bytes()),
                 static_cast<unsigned long long>(profile.unsampled_bytes()),
                 static_cast<unsigned long long>(out.bytes_in()));
  return trace_end_status("jvmtrace export", path, st, "exported the intact part");
}

}  // namespace

int export_command(int argc, char** argv) {
  bool perfetto = false, pprof = false;
  std::string output, format;
  double interval = 0.01;
  static const option longopts[] = {{"perfetto", no_argument, nullptr, 'P'},
                                    {"output", required_argument, nullptr, 'o'},
                                    {"pprof", no_argument, nullptr, 'G'},
                                    {"format", required_argument, nullptr, 'f'},
                                    {"rate-interval", required_argument, nullptr, 'r'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'P': perfetto = true; break;
      case 'G': pprof = true; break;
      case 'o': output = optarg; break;
      case 'f':
        format = optarg;
        if (format != "proto" && format != "json") {
          std::fprintf(stderr, "jvmtrace export: --format takes proto or json, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'r':
        if (!parse_seconds(optarg, &interval)) {
          std::fprintf(stderr, "jvmtrace export: --rate-interval takes a positive number of seconds, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (perfetto == pprof || output.empty() || optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace export: give --perfetto or --pprof, -o OUT and exactly one trace file\n");
    usage(stderr);
    return 2;
  }
  if (pprof) return export_pprof(argv[optind], output);
  if (format.empty())
    format = ends_with(output, ".pftrace") || ends_with(output, ".pftrace.gz") ? "proto" : "json";
  const bool proto = format == "proto";
  const char* path = argv[optind];
  trace::TraceReader reader;
  std::string error;
  if (!open_trace("jvmtrace export", path, &reader)) return 1;
  analysis::OutputFile out;
  if (!out.open(output, ends_with(output, ".gz"), &error)) {
    std::fprintf(stderr, "jvmtrace export: %s\n", error.c_str());
    return 1;
  }
  // The origin (time zero) is the recording's start, as in dump and report;
  // it is known once the meta record is read, which comes first.
  std::unique_ptr<analysis::TimelineSink> sink;
  std::unique_ptr<analysis::PerfettoExport> ex;
  auto start = [&](uint64_t origin) {
    auto write = [&](const std::string& s) { out.write(s); };
    // (a .gz output is compressed whole: its packets are not deflated too)
    sink = proto ? analysis::perfetto_proto_sink(origin, write, !ends_with(output, ".gz"))
                 : analysis::trace_event_json_sink(origin, write);
    ex = std::make_unique<analysis::PerfettoExport>(reader, origin, *sink, static_cast<uint64_t>(interval * 1e9));
  };
  Progress progress("jvmtrace export", path);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    if (!ex) {
      uint64_t origin = trace_origin_ns(reader);
      if (!origin && r.type < JT_PROBE_COUNT) origin = r.ts_ns;
      start(origin);
    }
    ex->add(r);
    progress.at(offset);
  });
  progress.done();
  if (!ex) start(0);
  ex->finish();
  if (!out.close(&error)) {
    std::fprintf(stderr, "jvmtrace export: %s\n", error.c_str());
    return 1;
  }
  if (output != "-")
    std::fprintf(stderr, "jvmtrace export: %s: %llu trace events, %llu bytes of %s%s\n", output.c_str(),
                 static_cast<unsigned long long>(sink->events_written()),
                 static_cast<unsigned long long>(out.bytes_in()), proto ? "Perfetto protobuf" : "JSON",
                 ends_with(output, ".gz") ? " before gzip" : proto ? " (packets deflated)" : "");
  return trace_end_status("jvmtrace export", path, st, "exported the intact part");
}

}  // namespace jvmtrace
