// jvmtrace calibrate: how biased is JFR's allocation sampling, per class,
// against every TLAB refill of the same run?
#include "cli/commands.h"

#include <getopt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/calibration.h"
#include "base/json.h"
#include "base/strings.h"
#include "cli/progress.h"
#include "cli/trace_input.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace calibrate TRACE --jfr RECORDING.jfr [--jfr-tool PATH] [--top N] [--json]\n"
               "For one run recorded both ways, compares jvmtrace's complete TLAB-refill stream (every\n"
               "refill, weighed by its TLAB's bytes, plus every outside-TLAB object) with JFR's throttled\n"
               "jdk.ObjectAllocationSample weights, class by class: each side's share of the bytes and\n"
               "JFR's bias (its share / jvmtrace's).  Only threads JFR sampled are compared, each over\n"
               "the same window (its first to its last sample).  docs/analysis.md explains the method\n"
               "and how to do the same with async-profiler's output.\n"
               "      --jfr FILE       the JFR recording of the same run (with jdk.ObjectAllocationSample)\n"
               "      --jfr-tool PATH  the jfr tool (default: $JAVA_HOME/bin/jfr, else jfr on PATH)\n"
               "      --top N          classes to list (default 15)\n"
               "      --json           one JSON object\n"
               "Exit status: 0 done; 3 the trace is incomplete (its intact part was compared); 1 a\n"
               "file could not be read; 2 usage.\n"
               "EXAMPLES:\n"
               "  java -XX:StartFlightRecording=filename=app.jfr ... &   jvmtrace record -p $! -o app.jvmtrace\n"
               "  jvmtrace calibrate app.jvmtrace --jfr app.jfr\n");
}

// stdout of argv, or false with *error.
bool run_capture(const std::vector<std::string>& args, std::string* out, std::string* error) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t c = fork();
  if (c < 0) return false;
  if (c == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> av;
    for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    execvp(av[0], av.data());
    std::fprintf(stderr, "cannot run %s\n", av[0]);
    _exit(127);
  }
  close(fds[1]);
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(c, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = args[0] + " failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
    return false;
  }
  return true;
}

// The jfr tool the user's environment names: $JAVA_HOME/bin/jfr, else jfr
// on PATH.  Never a path taken from the trace: a trace file is input, and
// what it says must not choose what we execute (docs/security.md).
std::string default_jfr_tool() {
  const char* home = std::getenv("JAVA_HOME");
  if (home && *home) {
    const std::string jfr = std::string(home) + "/bin/jfr";
    if (access(jfr.c_str(), X_OK) == 0) return jfr;
  }
  return "jfr";
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100 * x);
  return b;
}

}  // namespace

int calibrate_command(int argc, char** argv) {
  std::string jfr_file, jfr_tool;
  long top = 15;
  bool json = false;
  static const option longopts[] = {{"jfr", required_argument, nullptr, 'J'},
                                    {"jfr-tool", required_argument, nullptr, 'T'},
                                    {"top", required_argument, nullptr, 't'},
                                    {"json", no_argument, nullptr, 'j'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'J': jfr_file = optarg; break;
      case 'T': jfr_tool = optarg; break;
      case 't':
        if (!parse_long(optarg, 1, 100000, &top)) {
          std::fprintf(stderr, "jvmtrace calibrate: --top takes a positive number, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'j': json = true; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (jfr_file.empty() || optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace calibrate: give one trace file and --jfr RECORDING.jfr\n");
    usage(stderr);
    return 2;
  }
  const char* path = argv[optind];
  trace::TraceReader reader;
  std::string error;
  if (!open_trace("jvmtrace calibrate", path, &reader)) return 1;
  if (access(jfr_file.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "jvmtrace calibrate: cannot read %s\n", jfr_file.c_str());
    return 1;
  }
  // The JFR side first; then the trace streams through in one pass.
  analysis::Calibration cal;
  auto load_jfr = [&]() {
    if (jfr_tool.empty()) jfr_tool = default_jfr_tool();
    std::string text;
    if (!run_capture({jfr_tool, "print", "--json", "--events", "jdk.ObjectAllocationSample", jfr_file}, &text,
                     &error)) {
      error = "reading " + jfr_file + " with " + jfr_tool + ": " + error;
      return false;
    }
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) error = "not JSON (jfr print --json's output was cut or changed?)";
    if (doc.is_discarded() || !cal.load_jfr(doc, &error)) {
      error = jfr_file + ": " + error;
      return false;
    }
    return true;
  };
  if (!load_jfr()) {
    std::fprintf(stderr, "jvmtrace calibrate: %s\n", error.c_str());
    return 1;
  }
  Progress progress("jvmtrace calibrate", argv[optind]);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    cal.add(reader, r);
    progress.at(offset);
  });
  progress.done();
  const analysis::CalibrationResult res = cal.finish(reader);
  auto share = [](double x, double total) { return total > 0 ? x / total : 0.0; };
  if (json) {
    Json j = {{"trace", path},
              {"jfr", jfr_file},
              {"trace_bytes", res.trace_bytes},
              {"trace_events", res.trace_events},
              {"jfr_weight", res.jfr_weight},
              {"jfr_samples", res.jfr_samples},
              {"jfr_samples_compared", res.jfr_samples_used},
              {"window_s", res.window_s},
              {"distance", res.distance}};
    Json& threads = j["threads"] = Json::array();
    for (const auto& [tid, name] : res.threads) threads.push_back({{"tid", tid}, {"name", name}});
    Json& classes = j["classes"] = Json::array();
    for (const auto& r : res.rows) {
      const double a = share(r.trace_bytes, res.trace_bytes), b = share(r.jfr_weight, res.jfr_weight);
      classes.push_back({{"class", r.klass},
                         {"trace_bytes", r.trace_bytes},
                         {"trace_events", r.trace_events},
                         {"trace_share", a},
                         {"jfr_weight", r.jfr_weight},
                         {"jfr_samples", r.jfr_samples},
                         {"jfr_share", b},
                         {"bias", a > 0 ? Json(b / a) : Json(nullptr)}});
    }
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::printf("jvmtrace calibrate: %s against %s\n", path, jfr_file.c_str());
    std::printf("  threads compared:");
    for (const auto& [tid, name] : res.threads) std::printf(" %s (%u)", printable(name).c_str(), tid);
    std::printf("\n  window: %.3f s (each thread from its first to its last JFR sample)\n", res.window_s);
    std::printf("  jvmtrace: %" PRIu64 " refills and outside-TLAB objects, %" PRIu64 " bytes\n", res.trace_events,
                res.trace_bytes);
    std::printf("  JFR:      %" PRIu64 " jdk.ObjectAllocationSample events (%" PRIu64 " compared), weight %.0f bytes "
                "(%.3fx jvmtrace's)\n",
                res.jfr_samples, res.jfr_samples_used, res.jfr_weight,
                res.trace_bytes ? res.jfr_weight / res.trace_bytes : 0.0);
    std::printf("  distance between the two class mixes (total variation): %s\n\n", pct(res.distance).c_str());
    std::printf("  %-44s %14s %8s %8s %14s %8s %8s\n", "CLASS", "JVMTRACE_B", "SHARE", "REFILLS", "JFR_WEIGHT",
                "SHARE", "BIAS");
    for (size_t i = 0; i < res.rows.size() && i < static_cast<size_t>(top); i++) {
      const auto& r = res.rows[i];
      const double a = share(r.trace_bytes, res.trace_bytes), b = share(r.jfr_weight, res.jfr_weight);
      char bias[32] = "-";
      if (a > 0) std::snprintf(bias, sizeof bias, "%.3f", b / a);
      std::printf("  %-44.44s %14" PRIu64 " %8s %8" PRIu64 " %14.0f %8s %8s\n", printable(r.klass).c_str(), r.trace_bytes,
                  pct(a).c_str(), r.trace_events, r.jfr_weight, pct(b).c_str(), bias);
    }
    std::printf("\n  BIAS = JFR's share / jvmtrace's: 1 unbiased, < 1 JFR under-represents the class.\n");
  }
  return trace_end_status("jvmtrace calibrate", path, st, "compared the intact part");
}

}  // namespace jvmtrace
