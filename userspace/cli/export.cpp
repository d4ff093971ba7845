// jvmtrace export --perfetto: a trace as a timeline for ui.perfetto.dev.
#include "cli/commands.h"

#include <getopt.h>

#include <memory>

#include <cstdio>
#include <string>

#include "analysis/output_file.h"
#include "analysis/perfetto_export.h"
#include "base/strings.h"
#include "cli/trace_input.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace export --perfetto FILE -o OUT.json[.gz] [--rate-interval SEC]\n"
               "Converts a trace to Chrome's Trace Event Format (JSON), which ui.perfetto.dev and\n"
               "chrome://tracing open: GC pauses (cause, heap before/after) and concurrent cycles on\n"
               "VM tracks; TLAB refills and allocation slow paths on each mutator thread; PLABs on\n"
               "each GC worker; counters for heap used (between pauses: the last pause's figure plus\n"
               "the traced allocation since), heap committed and allocation rate.  docs/analysis.md\n"
               "has the mapping.  Nothing leaves the machine: open the file in the UI yourself.\n"
               "      --perfetto          the output format (the only one so far)\n"
               "  -o, --output OUT        where to write; a name ending in .gz is gzip-compressed;\n"
               "                          - for stdout\n"
               "      --rate-interval SEC allocation-rate counter steps (default 0.01)\n"
               "Exit status as for 'jvmtrace dump': 0 complete, 3 incomplete (the intact part is\n"
               "exported), 1 corrupt or unwritable, 2 usage.\n"
               "EXAMPLES:\n"
               "  jvmtrace export --perfetto app.jvmtrace -o app.json.gz\n");
}

}  // namespace

int export_command(int argc, char** argv) {
  bool perfetto = false;
  std::string output;
  double interval = 0.01;
  static const option longopts[] = {{"perfetto", no_argument, nullptr, 'P'},
                                    {"output", required_argument, nullptr, 'o'},
                                    {"rate-interval", required_argument, nullptr, 'r'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'P': perfetto = true; break;
      case 'o': output = optarg; break;
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
  if (!perfetto || output.empty() || optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace export: give --perfetto, -o OUT and exactly one trace file\n");
    usage(stderr);
    return 2;
  }
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
  std::unique_ptr<analysis::PerfettoExport> ex;
  auto sink = [&](const std::string& s) { out.write(s); };
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t) {
    if (!ex) {
      uint64_t origin = trace_origin_ns(reader);
      if (!origin && r.type < JT_PROBE_COUNT) origin = r.ts_ns;
      ex = std::make_unique<analysis::PerfettoExport>(reader, origin, sink, static_cast<uint64_t>(interval * 1e9));
    }
    ex->add(r);
  });
  if (!ex) ex = std::make_unique<analysis::PerfettoExport>(reader, 0, sink, static_cast<uint64_t>(interval * 1e9));
  ex->finish();
  if (!out.close(&error)) {
    std::fprintf(stderr, "jvmtrace export: %s\n", error.c_str());
    return 1;
  }
  if (output != "-")
    std::fprintf(stderr, "jvmtrace export: %s: %llu trace events, %llu bytes of JSON%s\n", output.c_str(),
                 static_cast<unsigned long long>(ex->events_written()), static_cast<unsigned long long>(out.bytes_in()),
                 ends_with(output, ".gz") ? " before gzip" : "");
  return trace_end_status("jvmtrace export", path, st, "exported the intact part");
}

}  // namespace jvmtrace
