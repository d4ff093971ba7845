// jvmtrace flame: allocation flame graphs from a trace recorded with --stacks.
#include "cli/commands.h"

#include <getopt.h>

#include <cstdio>
#include <string>

#include "analysis/flame_graph.h"
#include "analysis/output_file.h"
#include "analysis/svg_plot.h"
#include "base/strings.h"
#include "cli/progress.h"
#include "cli/trace_input.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace flame FILE -o OUT.svg|OUT.html|OUT.folded [--collapsed] [--threads] [--title T]\n"
               "Allocation flame graph of a trace recorded with 'jvmtrace record --stacks': the bytes of\n"
               "new TLABs and of objects outside TLABs, by the stack that allocated them, with the class\n"
               "as the leaf frame (Class_[i]: in a new TLAB, Class_[k]: outside TLABs).  On a JVM that\n"
               "walks its own stacks (the patched 17, 21, 25): its sampled stacks, each weighing the\n"
               "bytes it stands for, Java frames by kind as async-profiler names them (_[j] JIT-compiled,\n"
               "_[i] inlined, _[1] C1, _[0] interpreted); threads never sampled are '[not sampled]'.\n"
               "Otherwise (user stacks): every refill and outside object, JIT frames _[j].  Either way\n"
               "the widths add up to the trace's TLAB and outside-TLAB bytes exactly.\n"
               "  -o, --output OUT   .svg: an interactive SVG (click to zoom); .html: the same in a page;\n"
               "                     anything else (or --collapsed): collapsed stacks, one 'a;b;c BYTES'\n"
               "                     line per stack, for flamegraph.pl, speedscope and others; - for stdout\n"
               "      --collapsed    collapsed stacks whatever the name\n"
               "      --threads      each thread as a root frame\n"
               "      --title T      the graph's title\n"
               "Exit status as for 'jvmtrace dump': 0 complete, 3 incomplete (the intact part is\n"
               "drawn), 1 corrupt or unwritable, 2 usage.\n"
               "EXAMPLES:\n"
               "  jvmtrace flame app.jvmtrace -o app-alloc.svg\n"
               "  jvmtrace flame app.jvmtrace -o - --collapsed | sort -k2 -n | tail\n");
}

}  // namespace

int flame_command(int argc, char** argv) {
  std::string output, title;
  bool collapsed = false, threads = false;
  static const option longopts[] = {{"output", required_argument, nullptr, 'o'},
                                    {"collapsed", no_argument, nullptr, 'c'},
                                    {"threads", no_argument, nullptr, 't'},
                                    {"title", required_argument, nullptr, 'T'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'o': output = optarg; break;
      case 'c': collapsed = true; break;
      case 't': threads = true; break;
      case 'T': title = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (output.empty() || optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace flame: give -o OUT and exactly one trace file\n");
    usage(stderr);
    return 2;
  }
  const char* path = argv[optind];
  trace::TraceReader reader;
  std::string error;
  if (!open_trace("jvmtrace flame", path, &reader)) return 1;
  analysis::FlameGraph flame(reader, threads);
  Progress progress("jvmtrace flame", path);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    flame.add(r);
    progress.at(offset);
  });
  progress.done();
  flame.finish();
  if (reader.meta_value("stacks").empty())
    std::fprintf(stderr, "jvmtrace flame: %s was recorded without --stacks: every allocation is under [no stack]\n", path);
  const bool svg = !collapsed && ends_with(output, ".svg"), html = !collapsed && ends_with(output, ".html");
  if (title.empty()) title = "Allocation flame graph: PID " + reader.meta_value("pid") + ", " +
                             analysis::svg::human_bytes(static_cast<double>(flame.total()));
  analysis::OutputFile out;
  if (!out.open(output, false, &error)) {
    std::fprintf(stderr, "jvmtrace flame: %s\n", error.c_str());
    return 1;
  }
  if (svg) {
    out.write("<?xml version=\"1.0\" standalone=\"no\"?>\n" + flame.svg(title));
  } else if (html) {
    out.write("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + analysis::svg::escape(title) +
              "</title></head><body style=\"margin:8px\">\n" + flame.svg(title) + "</body></html>\n");
  } else {
    out.write(flame.collapsed_text());
  }
  if (!out.close(&error)) {
    std::fprintf(stderr, "jvmtrace flame: %s\n", error.c_str());
    return 1;
  }
  if (output != "-")
    std::fprintf(stderr, "jvmtrace flame: %s: %zu stacks, %llu bytes allocated (%llu without a stack)\n",
                 output.c_str(), flame.collapsed().size(), static_cast<unsigned long long>(flame.total()),
                 static_cast<unsigned long long>(flame.without_stack()));
  return trace_end_status("jvmtrace flame", path, st, "drew the intact part");
}

}  // namespace jvmtrace
