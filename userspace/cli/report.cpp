// `jvmtrace report`: a trace file summarised -- one row per GC, TLAB, slow
// path and PLAB statistics, the allocation rate over time, top classes and
// threads.  Text for people, --json for machines.
#include "cli/commands.h"

#include <getopt.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/consistency_check.h"
#include "analysis/html_report.h"
#include "analysis/java_frames.h"
#include "analysis/live_heap.h"
#include "analysis/output_file.h"
#include "analysis/trace_summary.h"
#include "base/json.h"
#include "base/strings.h"
#include "cli/progress.h"
#include "cli/trace_input.h"
#include "trace/reader.h"

namespace jvmtrace {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace report [--json] [--interval SEC] [--top N] FILE\n"
               "       jvmtrace report --check [--json] [--slack-mb N] FILE\n"
               "       jvmtrace report --live [--json] [--top N] FILE\n"
               "       jvmtrace report --html -o OUT.html [--interval SEC] [--top N] FILE\n"
               "Summarises a trace written by 'jvmtrace record': every GC (cause, kind, duration,\n"
               "heap before and after, PLABs), TLAB and PLAB statistics, the allocation slow path\n"
               "(outcomes, latency), allocation rate over time, and the top classes and threads.\n"
               "      --json           one JSON object\n"
               "      --live           what stays alive (a recording made with record --live): the\n"
               "                       estimated live bytes of each allocation site and class as of the\n"
               "                       last collection that reported deaths, with a 90%% interval, how many\n"
               "                       of its tracked objects died and at what age (in collections and in\n"
               "                       bytes allocated since), how many reached the old generation (Serial,\n"
               "                       Parallel, G1); the live heap after each collection; and the growing\n"
               "                       sites: whose live bytes grow across old or full collections (leak\n"
               "                       suspects, fastest first)\n"
               "      --interval SEC   allocation-rate buckets (default: the recording in ~20 steps)\n"
               "      --top N          classes and threads to list (default 10)\n"
               "      --check          replay the trace (per thread its TLAB and slow path, per GC worker\n"
               "                       its PLABs, the open pause) and check HotSpot's invariants: every\n"
               "                       violation with the offset of its record (docs/analysis.md)\n"
               "      --slack-mb N     --check: heap growth between two pauses may exceed the traced\n"
               "                       allocation by N MiB + 1%% (default: one G1 region, or 1 MiB)\n"
               "      --html           a self-contained HTML page of plots (no network needed) to -o OUT\n"
               "  -o, --output FILE    where --html writes\n"
               "Exit status as for 'jvmtrace dump': 0 complete, 3 incomplete, 1 corrupt, 2 usage;\n"
               "with --check, 4 when a violation was found.\n"
               "EXAMPLES:\n"
               "  jvmtrace report app.jvmtrace\n"
               "  jvmtrace report --json app.jvmtrace | jq '.gcs[] | select(.duration_ms > 10)'\n"
               "  jvmtrace report --check app.jvmtrace\n"
               "  jvmtrace report --live app.jvmtrace          # (recorded with record --stacks --live)\n"
               "  jvmtrace report --html app.jvmtrace -o app.html\n");
}

Json stats_json(const analysis::Stats& s) {
  return {{"count", s.n}, {"sum", s.sum}, {"min", s.min}, {"p50", s.p50}, {"p99", s.p99}, {"max", s.max}};
}

void add_totals(Json* j, const analysis::Totals& t) {
  (*j)["tlab_refills"] = t.refills;
  (*j)["tlab_bytes"] = t.tlab_bytes;
  (*j)["outside_allocs"] = t.outside;
  (*j)["outside_bytes"] = t.outside_bytes;
}

// A meta value that should be a decimal number, as a JSON number (null if it
// is not one: the trace file is input like any other).
Json meta_number(const std::string& v) {
  long n;
  return !v.empty() && parse_long(v.c_str(), 0, LONG_MAX, &n) ? Json(n) : Json(nullptr);
}

// An allocation site for report --json: its method, file, line and weight.
Json site_json(const trace::TraceReader& reader, const analysis::AllocationProfile::Site& st, uint64_t traced) {
  const bool none = st.method == UINT64_MAX;
  return {{"method", none ? Json(nullptr) : Json(analysis::method_name(reader, st.method))},
          {"file", none ? Json(nullptr) : Json(analysis::method_file(reader, st.method))},
          {"line", st.line ? Json(st.line) : Json(nullptr)},
          {"bytes", st.weight.bytes},
          {"share", traced ? static_cast<double>(st.weight.bytes) / traced : 0.0},
          {"objects_estimated", st.weight.objects},
          {"samples", st.weight.samples}};
}

void print_report(analysis::TraceSummary& sum, bool json, double interval, int top, const trace::ReadStatus& st) {
  using analysis::Stats;
  using analysis::Totals;
  const analysis::Derived d = sum.derive(interval);
  const double span_s = d.span_s, interval_s = d.interval_s, rate_from_s = d.rate_from_s;
  const uint64_t origin = d.origin_ns;
  const std::vector<double>& rate = d.rate;
  const Stats &ev_bytes = d.event_bytes, &tlab = d.tlab, &outside = d.outside, &slow = d.slow;
  const Stats* plab = d.plab;
  const auto &classes = d.classes, &threads = d.threads;
  if (json) {
    Json j = {{"pid", meta_number(sum.reader.meta_value("pid"))},
              {"cmdline", sum.reader.meta_value("cmdline")},
              {"mode", sum.reader.meta_value("mode")},
              {"status", st.describe()},
              {"end", sum.end_text},
              {"events", sum.events},
              {"lost", sum.lost}};
    Json& lost = j["lost_by_kind"] = Json::object();
    for (int k = 0; k < trace::kLostKindCount; k++) lost[trace::lost_kind_name(k)] = sum.lost_by_kind[k];
    for (int k = trace::kLostKindCount; k < 16; k++)  // from a newer recorder
      if (sum.lost_by_kind[k]) lost["kind_" + std::to_string(k)] = sum.lost_by_kind[k];
    j["span_s"] = span_s;
    Json& by_probe = j["events_by_probe"] = Json::object();
    for (int p = 0; p < JT_PROBE_COUNT; p++) by_probe[trace::probe_info(p).name] = sum.by_probe[p];
    j["encoded_event_bytes"] = stats_json(ev_bytes);
    Json& bytes_by_probe = j["encoded_bytes_by_probe"] = Json::object();
    for (int p = 0; p < JT_PROBE_COUNT; p++) bytes_by_probe[trace::probe_info(p).name] = sum.probe_bytes[p];
    j["file_bytes"] = sum.reader.size();
    Json& gcs = j["gcs"] = Json::array();
    for (const auto& [id, g] : sum.gcs)
      gcs.push_back({{"id", id},
                     {"name", g.name},
                     {"cause", g.cause},
                     {"kind", trace::gc_kind_name(g.kind)},
                     {"start_s", g.started ? static_cast<int64_t>(g.start_ns - origin) / 1e9 : -1.0},
                     {"duration_ms", g.started && g.ended ? Json((g.end_ns - g.start_ns) / 1e6) : Json(nullptr)},
                     {"heap_used_before", g.used_before},
                     {"heap_used_after", g.used_after},
                     {"heap_committed", g.committed_after},
                     {"plabs", g.plabs},
                     {"plab_bytes", g.plab_bytes},
                     {"plab_waste", g.plab_waste},
                     {"promoted_direct", g.direct},
                     {"promoted_direct_bytes", g.direct_bytes}});
    j["pause_probes"] = sum.pause_probes();
    Json& pauses = j["pauses"] = Json::array();
    for (const analysis::Pause& p : sum.pauses) {
      auto opt = [](bool known, Json v) { return known ? v : Json(nullptr); };
      pauses.push_back({{"gc_id", p.gc_id},
                        {"kind", trace::pause_kind_name(p.kind)},
                        {"start_s", opt(p.started, static_cast<int64_t>(p.start_ns - origin) / 1e9)},
                        {"duration_ms", opt(p.started && p.ended, (p.end_ns - p.start_ns) / 1e6)},
                        {"heap_used_before", opt(p.started, p.used_before)},
                        {"heap_used_after", opt(p.ended, p.used_after)},
                        {"heap_committed", opt(p.ended, p.committed_after)},
                        {"name", p.name},
                        {"cause", p.cause}});
    }
    Json& pause_ns = j["pause_ns_by_kind"] = Json::object();
    for (int k = 0; k < JVMTRACE_PAUSE_KIND_COUNT; k++) pause_ns[trace::pause_kind_name(k)] = stats_json(d.pause_ns[k]);
    const std::string unseen = sum.unseen_pauses();
    j["pauses_not_seen"] = unseen.empty() ? Json(nullptr) : Json(unseen);
    j["safepoint_probes"] = sum.reader.meta_value("safepoint_probes") == "1";
    Json& sps = j["safepoints"] = Json::array();
    for (const analysis::Safepoint& sp : sum.safepoints) {
      auto opt = [](bool known, Json v) { return known ? v : Json(nullptr); };
      sps.push_back({{"safepoint_id", sp.id},
                     {"operation", sp.operation},
                     {"start_s", opt(sp.started, static_cast<int64_t>(sp.start_ns - origin) / 1e9)},
                     {"reaching_ns", opt(sp.ended, sp.reaching_ns)},
                     {"cleanup_ns", opt(sp.ended, sp.cleanup_ns)},
                     {"at_safepoint_ns", opt(sp.ended, sp.at_ns)},
                     {"total_ns", opt(sp.ended, sp.total_ns)},
                     {"threads", opt(sp.ended, sp.threads)},
                     {"running", opt(sp.ended, sp.running)}});
    }
    j["safepoint_reaching_ns"] = stats_json(d.safepoint_reaching_ns);
    j["safepoint_at_ns"] = stats_json(d.safepoint_at_ns);
    Json& ops = j["safepoints_by_operation"] = Json::array();
    for (const auto& op : d.safepoint_ops)
      ops.push_back({{"operation", op.operation}, {"reaching_ns", stats_json(op.reaching_ns)},
                     {"at_safepoint_ns", stats_json(op.at_ns)}, {"total_ns", stats_json(op.total_ns)}});
    const analysis::AllocationProfile& prof = sum.profile;
    Json& sites = j["allocation_sites"] = Json::array();
    const auto site_list = prof.sites();
    for (size_t i = 0; i < site_list.size() && i < static_cast<size_t>(top); i++)
      sites.push_back(site_json(sum.reader, site_list[i], prof.traced_bytes()));
    const auto [untraced, untraced_bytes] = prof.untraced_samples();
    j["allocation_samples"] = {{"samples", prof.samples()},
                               {"traced_bytes", prof.traced_bytes()},
                               {"sampled_bytes", prof.sampled_bytes()},
                               {"unsampled_bytes", prof.unsampled_bytes()},
                               {"java_frames", prof.frames()},
                               {"java_frames_unknown", prof.frames_unknown()},
                               {"untraced_samples", untraced},
                               {"untraced_estimated_bytes", untraced_bytes}};
    j["tlab_size"] = stats_json(tlab);
    j["tlab_waste_bytes"] = sum.tlab_waste;
    j["outside_tlab_size"] = stats_json(outside);
    j["slow_path_ns"] = sum.reader.meta_value("mode") == "stock" ? Json(nullptr) : stats_json(slow);
    Json& outcomes = j["slow_path_outcomes"] = Json::object();
    for (const auto& [o, n] : sum.outcomes) outcomes[trace::slow_outcome_name(o)] = n;
    Json& plabs = j["plab"] = Json::object();
    for (int dest = 0; dest < JVMTRACE_DEST_COUNT; dest++)
      plabs[dest == JVMTRACE_DEST_OLD ? "old" : "young"] = {{"size", stats_json(plab[dest])},
                                                            {"used_bytes", sum.plab_used[dest]},
                                                            {"wasted_bytes", sum.plab_wasted[dest]}};
    Json rate_bytes = Json::array();
    for (double r : rate) rate_bytes.push_back(static_cast<uint64_t>(r));
    j["allocation_rate"] = {{"interval_s", interval_s}, {"from_s", rate_from_s}, {"bytes", std::move(rate_bytes)}};
    Json& cls = j["classes"] = Json::array();
    for (size_t i = 0; i < classes.size() && i < static_cast<size_t>(top); i++) {
      Json c = {{"class", sum.reader.classes()[classes[i].first]}};
      add_totals(&c, classes[i].second);
      cls.push_back(std::move(c));
    }
    Json& ths = j["threads"] = Json::array();
    for (size_t i = 0; i < threads.size() && i < static_cast<size_t>(top); i++) {
      const auto& th = sum.reader.threads()[threads[i].first];
      Json t = {{"tid", th.tid}, {"name", th.name}};
      add_totals(&t, threads[i].second);
      ths.push_back(std::move(t));
    }
    std::printf("%s\n", json_text(j).c_str());
    return;
  }
  std::printf("jvmtrace report: PID %s, %s mode\n  %s\n", printable(trace::meta_escape(sum.reader.meta_value("pid"))).c_str(),
              printable(trace::meta_escape(sum.reader.meta_value("mode"))).c_str(),
              printable(trace::meta_escape(sum.reader.meta_value("cmdline"))).c_str());
  if (!sum.reader.meta_value("stock_coverage").empty())
    std::printf("  stock mode records: %s\n", sum.reader.meta_value("stock_coverage").c_str());
  std::printf("  %" PRIu64 " events over %.3f s, %" PRIu64 " lost; trace %s%s%s\n", sum.events, span_s, sum.lost,
              st.describe().c_str(), sum.end_text.empty() ? "" : "; ended: ", printable(sum.end_text).c_str());
  std::printf("  lost by cause:");
  for (int k = 0; k < 16; k++)
    if (trace::lost_kind_always_shown(static_cast<uint8_t>(k)) || sum.lost_by_kind[k])
      std::printf("%s %s %" PRIu64, k ? "," : "", trace::lost_kind_text(static_cast<uint8_t>(k)), sum.lost_by_kind[k]);
  std::printf("\n");
  std::printf("  trace: %" PRIu64 " bytes, %.2f per event; an event record is %" PRIu64 " bytes at the median, %" PRIu64
              " at p99\n",
              sum.reader.size(), sum.events ? double(sum.reader.size()) / sum.events : 0.0, ev_bytes.p50, ev_bytes.p99);
  std::printf("\nCollections (%zu):\n  %5s %-22s %-26s %-10s %10s %10s %12s %12s %7s %10s\n", sum.gcs.size(), "ID", "NAME",
              "CAUSE", "KIND", "START(s)", "DUR(ms)", "USED_BEFORE", "USED_AFTER", "PLABS", "PLAB_KB");
  for (const auto& [id, g] : sum.gcs) {
    char dur[32] = "-";
    if (g.started && g.ended) std::snprintf(dur, sizeof dur, "%.3f", (g.end_ns - g.start_ns) / 1e6);
    std::printf("  %5" PRIu64 " %-22.22s %-26.26s %-10s %10.3f %10s %12" PRIu64 " %12" PRIu64 " %7" PRIu64 " %10" PRIu64 "\n", id,
                printable(g.name).c_str(), printable(g.cause).c_str(), trace::gc_kind_name(g.kind), g.started ? static_cast<int64_t>(g.start_ns - origin) / 1e9 : -1.0,
                dur, g.used_before, g.used_after, g.plabs, g.plab_bytes / 1024);
  }
  auto row = [](const char* what, const Stats& s, const char* unit) {
    std::printf("  %-26s n=%-9" PRIu64 " total=%-14" PRIu64 " min=%-9" PRIu64 " p50=%-9" PRIu64 " p99=%-9" PRIu64
                " max=%" PRIu64 " %s\n",
                what, s.n, s.sum, s.min, s.p50, s.p99, s.max, unit);
  };
  const std::string unseen = sum.unseen_pauses();
  if (!sum.pause_probes()) {
    std::printf("\nStop-the-world pauses: not recorded: %s.\n", unseen.c_str());
  } else {
    std::printf("\nStop-the-world pauses (%zu):\n", sum.pauses.size());
    if (!unseen.empty()) std::printf("  NOTE: %s.\n", unseen.c_str());
    for (int k = 0; k < JVMTRACE_PAUSE_KIND_COUNT; k++) {
      const Stats& s = d.pause_ns[k];
      if (!s.n && k > JVMTRACE_PAUSE_CLEANUP) continue;  // the concurrent collectors' kinds, when they ran
      std::printf("  %-14s n=%-6" PRIu64 " total=%10.3f ms  p50=%8.3f ms  p99=%8.3f ms  max=%8.3f ms\n",
                  trace::pause_kind_name(k), s.n, s.sum / 1e6, s.p50 / 1e6, s.p99 / 1e6, s.max / 1e6);
    }
    std::printf("  %5s %-14s %-52s %10s %10s %12s %12s %12s\n", "GC_ID", "KIND", "NAME (CAUSE)", "START(s)", "DUR(ms)",
                "USED_BEFORE", "USED_AFTER", "COMMITTED");
    for (const analysis::Pause& p : sum.pauses) {
      char dur[32] = "-", start[32] = "-", before[32] = "-", after[32] = "-", committed[32] = "-";
      if (p.started && p.ended) std::snprintf(dur, sizeof dur, "%.3f", (p.end_ns - p.start_ns) / 1e6);
      if (p.started) {
        std::snprintf(start, sizeof start, "%.3f", static_cast<int64_t>(p.start_ns - origin) / 1e9);
        std::snprintf(before, sizeof before, "%" PRIu64, p.used_before);
      }
      if (p.ended) {
        std::snprintf(after, sizeof after, "%" PRIu64, p.used_after);
        std::snprintf(committed, sizeof committed, "%" PRIu64, p.committed_after);
      }
      const std::string what = trace::pause_title(p.name, p.cause);
      std::printf("  %5" PRIu64 " %-14s %-52.52s %10s %10s %12s %12s %12s\n", p.gc_id, trace::pause_kind_name(p.kind),
                  printable(what).c_str(), start, dur, before, after, committed);
    }
  }
  if (sum.reader.meta_value("safepoint_probes") == "1") {
    std::printf("\nSafepoints (%zu; every stop of the world: collections, deoptimisation, thread dumps, ...):\n",
                sum.safepoints.size());
    std::printf("  %-26s time to reach p50=%9.3f ms p99=%9.3f ms max=%9.3f ms\n", "all", d.safepoint_reaching_ns.p50 / 1e6,
                d.safepoint_reaching_ns.p99 / 1e6, d.safepoint_reaching_ns.max / 1e6);
    std::printf("  %-26s time at it    p50=%9.3f ms p99=%9.3f ms max=%9.3f ms\n", "", d.safepoint_at_ns.p50 / 1e6,
                d.safepoint_at_ns.p99 / 1e6, d.safepoint_at_ns.max / 1e6);
    std::printf("  %-30s %7s %11s %11s %11s %11s %12s\n", "OPERATION", "COUNT", "REACH_P50", "REACH_MAX", "AT_P50",
                "AT_MAX", "TOTAL(ms)");
    for (size_t i = 0; i < d.safepoint_ops.size() && i < static_cast<size_t>(top); i++) {
      const auto& op = d.safepoint_ops[i];
      std::printf("  %-30.30s %7" PRIu64 " %8.3f ms %8.3f ms %8.3f ms %8.3f ms %12.3f\n", printable(op.operation).c_str(),
                  op.total_ns.n, op.reaching_ns.p50 / 1e6, op.reaching_ns.max / 1e6, op.at_ns.p50 / 1e6,
                  op.at_ns.max / 1e6, op.total_ns.sum / 1e6);
    }
  } else if (sum.reader.meta_value("mode") != "stock") {
    std::printf("\nSafepoints: not recorded (this JVM's patch predates the safepoint probes).\n");
  }
  const analysis::AllocationProfile& prof = sum.profile;
  if (prof.samples()) {
    const uint64_t traced = std::max<uint64_t>(prof.traced_bytes(), 1);
    std::printf("\nAllocation sites (%" PRIu64 " samples of the VM's own stacks, each weighing the bytes it stands "
                "for, scaled to its thread's traced bytes; %.1f%% of the bytes in threads never sampled; %" PRIu64
                " of %" PRIu64 " Java frames of methods not named):\n",
                prof.samples(), 100.0 * prof.unsampled_bytes() / traced, prof.frames_unknown(), prof.frames());
    if (const auto [n, bytes] = prof.untraced_samples(); n)
      std::printf("  (%" PRIu64 " samples left out, about %" PRIu64 " bytes: their threads' slow paths are not in the "
                  "trace, lost or still batched when the JVM exited)\n", n, bytes);
    std::printf("  %14s %7s %12s  %s\n", "BYTES", "SHARE", "OBJECTS~", "SITE (the leaf-most Java frame: method:line (file))");
    const auto site_list = prof.sites();
    for (size_t i = 0; i < site_list.size() && i < static_cast<size_t>(top); i++) {
      const auto& st_ = site_list[i];
      std::string where = st_.method == UINT64_MAX ? "[no Java frame]" : analysis::frame_site(sum.reader, {st_.method, st_.line, 0});
      const std::string file = st_.method == UINT64_MAX ? "" : analysis::method_file(sum.reader, st_.method);
      if (!file.empty()) where += " (" + file + ")";
      std::printf("  %14" PRIu64 " %6.2f%% %12" PRIu64 "  %s\n", st_.weight.bytes, 100.0 * st_.weight.bytes / traced,
                  st_.weight.objects, printable(where).c_str());
    }
  }
  std::printf("\nAllocation:\n");
  const bool stock = sum.reader.meta_value("mode") == "stock";
  row("TLAB sizes", tlab, "bytes");
  if (stock) std::printf("  %-26s not known in stock mode\n", "TLAB waste");
  else std::printf("  %-26s %" PRIu64 " bytes retired unused\n", "TLAB waste", sum.tlab_waste);
  row("outside-TLAB objects", outside, "bytes");
  if (stock) std::printf("  %-26s not observable in stock mode\n", "slow path (enter->exit)");
  else row("slow path (enter->exit)", slow, "ns");
  std::printf("  %-26s", "slow path outcomes");
  for (const auto& [o, n] : sum.outcomes) std::printf(" %s=%" PRIu64, trace::slow_outcome_name(o), n);
  std::printf("\n\nPromotion:\n");
  row("PLAB sizes, young", plab[0], "bytes");
  row("PLAB sizes, old", plab[1], "bytes");
  std::printf("  %-26s used=%" PRIu64 " wasted=%" PRIu64 " (young) used=%" PRIu64 " wasted=%" PRIu64 " (old) bytes\n",
              "PLAB retire", sum.plab_used[0], sum.plab_wasted[0], sum.plab_used[1], sum.plab_wasted[1]);
  std::printf("\nAllocation rate (TLAB + outside-TLAB bytes), %.3g s steps:\n", interval_s);
  double peak = 0;
  for (double x : rate) peak = std::max(peak, x);
  for (size_t i = 0; i < rate.size(); i++) {
    const int bar = peak > 0 ? static_cast<int>(40 * rate[i] / peak + 0.5) : 0;
    std::printf("  %9.3f s %10.1f MB/s |%-40s|\n", rate_from_s + i * interval_s, rate[i] / interval_s / 1e6, std::string(bar, '*').c_str());
  }
  std::printf("\nTop classes (TLAB bytes: the refilling allocation's class, a byte-weighted sample; outside: exact):\n");
  std::printf("  %-40s %9s %14s %9s %14s\n", "CLASS", "REFILLS", "TLAB_BYTES", "OUTSIDE", "OUTSIDE_BYTES");
  for (size_t i = 0; i < classes.size() && i < static_cast<size_t>(top); i++) {
    const Totals& t = classes[i].second;
    std::printf("  %-40.40s %9" PRIu64 " %14" PRIu64 " %9" PRIu64 " %14" PRIu64 "\n", printable(sum.reader.classes()[classes[i].first]).c_str(),
                t.refills, t.tlab_bytes, t.outside, t.outside_bytes);
  }
  std::printf("\nTop threads:\n  %-8s %-24s %9s %14s %9s %14s\n", "TID", "NAME", "REFILLS", "TLAB_BYTES", "OUTSIDE",
              "OUTSIDE_BYTES");
  for (size_t i = 0; i < threads.size() && i < static_cast<size_t>(top); i++) {
    const Totals& t = threads[i].second;
    const auto& th = sum.reader.threads()[threads[i].first];
    std::printf("  %-8u %-24.24s %9" PRIu64 " %14" PRIu64 " %9" PRIu64 " %14" PRIu64 "\n", th.tid, printable(th.name).c_str(), t.refills,
                t.tlab_bytes, t.outside, t.outside_bytes);
  }
}


// report --check: the replay's verdict, then each violation with its offset.
int check(const trace::TraceReader& reader, const trace::ReadStatus& st, const analysis::ConsistencyCheck& ck,
          bool json, const char* path) {
  if (json) {
    Json j = {{"status", st.describe()}, {"events", ck.events()}, {"violations", ck.violation_count()}};
    Json& checks = j["checks"] = Json::object();
    for (const auto& [name, n] : ck.checked()) checks[name] = n;
    j["growth_slack_bytes"] = ck.growth_slack_bytes();
    Json& stretches = j["stretches"] = Json::array();
    for (const auto& x : ck.stretches())
      stretches.push_back({{"from_gc", x.from_gc}, {"to_gc", x.to_gc}, {"offset", x.offset}, {"growth", x.growth},
                           {"allocated", x.allocated}, {"filled", x.filled}, {"checked", x.checked}});
    Json& found = j["found"] = Json::array();
    for (const auto& v : ck.violations()) found.push_back({{"offset", v.offset}, {"check", v.check}, {"what", v.what}});
    j["notes"] = ck.notes();
    std::printf("%s\n", json_text(j).c_str());
  } else {
    // The meta values are the trace file's: escaped like every name it holds.
    std::printf("jvmtrace report --check: %s\n  PID %s, %s mode; %" PRIu64 " events; trace %s\n", printable(path).c_str(),
                printable(trace::meta_escape(reader.meta_value("pid"))).c_str(),
                printable(trace::meta_escape(reader.meta_value("mode"))).c_str(), ck.events(), st.describe().c_str());
    std::printf("  checks run:");
    for (const auto& [name, n] : ck.checked()) std::printf(" %s=%" PRIu64, name.c_str(), n);
    uint64_t checked = 0, filled = 0;
    int64_t worst = 0;
    for (const auto& x : ck.stretches())
      if (x.checked) {
        checked++;
        filled += x.filled;
        if (std::llabs(x.slack()) > std::llabs(worst)) worst = x.slack();
      }
    std::printf("\n  heap growth vs traced allocation: %" PRIu64 " stretches between pauses checked, largest "
                "difference %+" PRId64 " bytes (allowed %" PRIu64 " + 1%%)",
                checked, worst, ck.growth_slack_bytes());
    if (filled) std::printf("; %" PRIu64 " bytes of retired G1 regions' tails counted as filled", filled);
    std::printf("\n");
    // Findings and notes quote names the target chose (threads, collectors, pauses).
    for (const auto& n : ck.notes()) std::printf("  note: %s\n", printable(n).c_str());
    if (!ck.violation_count()) {
      std::printf("OK: no violations\n");
    } else {
      std::printf("%" PRIu64 " violation(s):\n  %10s  %-22s %s\n", ck.violation_count(), "OFFSET", "CHECK", "WHAT");
      for (const auto& v : ck.violations())
        std::printf("  %10" PRIu64 "  %-22s %s\n", v.offset, v.check.c_str(), printable(v.what).c_str());
      if (ck.violations().size() < ck.violation_count())
        std::printf("  ... and %" PRIu64 " more\n", ck.violation_count() - ck.violations().size());
    }
  }
  std::fflush(stdout);
  const int status = trace_end_status("jvmtrace report", path, st, "checked the intact part");
  return ck.violation_count() ? 4 : status;
}

}  // namespace

// report --live: the live heap by site and by class.
int live_report(trace::TraceReader& reader, bool json, size_t top, const char* path) {
  analysis::LiveHeap live(reader);
  Progress progress("jvmtrace report --live", path);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    live.add(r);
    progress.at(offset);
  });
  progress.done();
  if (live.tracked() == 0) {
    std::fprintf(stderr, "jvmtrace report: %s has no tracked samples: record it with 'jvmtrace record --live' on a "
                 "patched JVM\n", printable(path).c_str());
    trace_end_status("jvmtrace report", path, st, nullptr);
    return 1;
  }
  const auto site_rows = live.by_site(top), class_rows = live.by_class(top);
  const auto growth = live.growing(top);
  const auto& points = live.points();
  const uint64_t origin = trace_origin_ns(reader);
  const auto secs = [&](uint64_t ns) { return ns > origin ? static_cast<double>(ns - origin) / 1e9 : 0.0; };
  // A point's kind is -1 when its gc__start is missing: "?" as any unknown kind.
  const auto kind_name = [](int k) { return trace::gc_kind_name(static_cast<uint64_t>(k)); };
  if (json) {
    const auto rows = [](const std::vector<analysis::LiveHeap::Row>& v) {
      Json out = Json::array();
      for (const auto& r : v)
        out.push_back({{"name", r.name}, {"live_bytes", std::llround(r.live_bytes)},
                       {"ci90_bytes", std::llround(r.ci90)}, {"tracked", r.tracked}, {"alive", r.alive},
                       {"died", r.died}, {"promoted", r.promoted},
                       {"median_age_gcs", r.median_age_gcs >= 0 ? Json(r.median_age_gcs) : Json(nullptr)},
                       {"median_age_bytes", r.median_age_bytes >= 0 ? Json(r.median_age_bytes) : Json(nullptr)}});
      return out;
    };
    Json collections = Json::array();
    for (const auto& p : points)
      collections.push_back({{"t_s", secs(p.ts_ns)}, {"gc_id", p.gc_id}, {"kind", kind_name(p.kind)},
                             {"old", analysis::LiveHeap::old_point(p)}, {"live_bytes", std::llround(p.live_bytes)}});
    Json growing = Json::array();
    for (const auto& g : growth)
      growing.push_back({{"name", g.name}, {"bytes_per_s", std::llround(g.bytes_per_s)},
                         {"first_bytes", std::llround(g.first)}, {"last_bytes", std::llround(g.last)},
                         {"grew_steps", g.up}, {"steps", g.steps}});
    Json series = Json::array();
    for (const auto& t : live.top_series(std::min<size_t>(top, 16))) {
      Json v = Json::array();
      for (double x : t.live_bytes) v.push_back(std::llround(x));
      series.push_back({{"name", t.name}, {"live_bytes", v}});
    }
    Json j = {{"live_bytes", std::llround(live.live_bytes())}, {"tracked", live.tracked()},
              {"level", live.level()}, {"fate_batches", live.batches()}, {"orphans", live.orphans()},
              {"lost", live.lost()}, {"dropped", live.dropped()}, {"too_young", live.too_young()},
              {"sites", rows(site_rows)}, {"classes", rows(class_rows)}, {"collections", collections},
              {"old_collections", live.old_points()}, {"growing", growing},
              {"site_series", series}, {"site_series_points", live.series_end()},
              {"deaths_by_age_bytes_log2", [&] {
                 Json v = Json::array();
                 for (double w : live.deaths_by_age_bytes()) v.push_back(std::llround(w));
                 return v;
               }()}};
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::printf("Live heap: %.1f MiB estimated from %llu tracked samples, as of the last collection that reported\n"
                "(thinning level %llu, %llu fate batches; %llu samples allocated since are not judged yet)\n",
                live.live_bytes() / 1048576.0, (unsigned long long)live.tracked(), (unsigned long long)live.level(),
                (unsigned long long)live.batches(), (unsigned long long)live.too_young());
    if (!points.empty()) {
      double lo = points[0].live_bytes, hi = lo;
      for (const auto& p : points) lo = std::min(lo, p.live_bytes), hi = std::max(hi, p.live_bytes);
      std::printf("After each of %zu collections that reported (%zu old or full): %.1f to %.1f MiB; the last %zu:\n ",
                  points.size(), live.old_points(), lo / 1048576.0, hi / 1048576.0, std::min<size_t>(points.size(), 8));
      for (size_t i = points.size() > 8 ? points.size() - 8 : 0; i < points.size(); i++)
        std::printf(" %.1fs %s%s %.1f MiB%s", secs(points[i].ts_ns), analysis::LiveHeap::old_point(points[i]) ? "*" : "",
                    kind_name(points[i].kind), points[i].live_bytes / 1048576.0, i + 1 < points.size() ? "," : "\n");
    }
    const auto table = [](const char* title, const std::vector<analysis::LiveHeap::Row>& v) {
      std::printf("\n%s\n  %12s %10s %7s %7s %9s %10s %9s  %s\n", title, "live MiB", "+-90%", "alive", "died",
                  "age(gcs)", "age(MiB)", "promoted", "where");
      for (const auto& r : v) {
        char age[32] = "-", bytes[32] = "-";
        if (r.median_age_gcs >= 0) std::snprintf(age, sizeof age, "%.0f", r.median_age_gcs);
        if (r.median_age_bytes >= 0) std::snprintf(bytes, sizeof bytes, "<%.3g", r.median_age_bytes / 1048576.0);
        std::printf("  %12.2f %10.2f %7llu %7llu %9s %10s %8.0f%%  %s\n", r.live_bytes / 1048576.0, r.ci90 / 1048576.0,
                    (unsigned long long)r.alive, (unsigned long long)r.died, age, bytes,
                    r.tracked ? 100.0 * r.promoted / r.tracked : 0.0, printable(r.name).c_str());
      }
    };
    table("By allocation site (the leaf-most Java frame):", site_rows);
    table("By class:", class_rows);
    std::printf("\nGrowing sites (leak suspects): live bytes across the %zu old or full collections, least-squares growth\n",
                live.old_points());
    if (live.old_points() < 2) {
      std::printf("  (growth needs two old or full collections: this recording saw %zu)\n", live.old_points());
    } else if (growth.empty()) {
      std::printf("  (no site grew)\n");
    } else {
      std::printf("  %12s %10s %10s %8s  %s\n", "MiB/min", "first MiB", "last MiB", "grew", "where");
      for (const auto& g : growth)
        std::printf("  %12.2f %10.2f %10.2f %4u/%-3u  %s\n", g.bytes_per_s * 60 / 1048576.0, g.first / 1048576.0,
                    g.last / 1048576.0, g.up, g.steps, printable(g.name).c_str());
    }
    if (live.points_cut())
      std::printf("  (collections past the first %zu are not plotted: past the cap report keeps; the estimate "
                  "covers them)\n", points.size());
    if (live.series_end() < points.size())
      std::printf("  (per-site history kept for the first %zu collections of %zu: past the cap report keeps)\n",
                  live.series_end(), points.size());
    if (live.orphans() || live.lost())
      std::printf("\n%llu fates of samples from before the recording; %llu fates the VM could not queue\n",
                  (unsigned long long)live.orphans(), (unsigned long long)live.lost());
    if (live.dropped())
      std::printf("%llu samples or fates past what report keeps (a trace no JVM writes): left out\n",
                  (unsigned long long)live.dropped());
  }
  std::fflush(stdout);
  return trace_end_status("jvmtrace report", path, st, nullptr);
}

int report_command(int argc, char** argv) {
  bool json = false, do_check = false, html = false, live = false;
  std::string output;
  analysis::CheckOptions check_options;
  double interval = 0;
  long top = 10;
  static const option longopts[] = {{"json", no_argument, nullptr, 'j'},
                                    {"interval", required_argument, nullptr, 'i'},
                                    {"top", required_argument, nullptr, 't'},
                                    {"check", no_argument, nullptr, 'c'},
                                    {"slack-mb", required_argument, nullptr, 's'},
                                    {"html", no_argument, nullptr, 'H'},
                                    {"live", no_argument, nullptr, 'L'},
                                    {"output", required_argument, nullptr, 'o'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "i:o:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'j': json = true; break;
      case 'i':
        if (!parse_seconds(optarg, &interval)) {
          std::fprintf(stderr, "jvmtrace report: --interval takes a positive number of seconds, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 't':
        if (!parse_long(optarg, 1, 100000, &top)) {
          std::fprintf(stderr, "jvmtrace report: --top takes a number from 1 to 100000, not '%s'\n", optarg);
          return 2;
        }
        break;
      case 'c': do_check = true; break;
      case 's': {
        long mb;
        if (!parse_long(optarg, 0, 1 << 20, &mb)) {
          std::fprintf(stderr, "jvmtrace report: --slack-mb takes a number of MiB, not '%s'\n", optarg);
          return 2;
        }
        check_options.growth_slack_bytes = static_cast<uint64_t>(mb) << 20;
        break;
      }
      case 'H': html = true; break;
      case 'L': live = true; break;
      case 'o': output = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind + 1 != argc) {
    std::fprintf(stderr, "jvmtrace report: give exactly one trace file\n");
    usage(stderr);
    return 2;
  }
  if (live && (do_check || html)) {
    std::fprintf(stderr, "jvmtrace report: --live is a run of its own (not with --check or --html; --html "
                 "draws the live heap of a record --live trace by itself)\n");
    return 2;
  }
  if (do_check && html) {
    std::fprintf(stderr, "jvmtrace report: --check and --html are separate runs\n");
    return 2;
  }
  if (html != !output.empty()) {
    std::fprintf(stderr, "jvmtrace report: %s\n", html ? "--html needs -o OUT.html" : "-o is for --html");
    return 2;
  }
  trace::TraceReader reader;
  std::string error;
  if (!open_trace("jvmtrace report", argv[optind], &reader)) return 1;
  if (do_check) {
    analysis::ConsistencyCheck ck(reader, check_options);
    Progress progress("jvmtrace report --check", argv[optind]);
    const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
      ck.add(r);
      progress.at(offset);
    });
    progress.done();
    ck.finish();
    return check(reader, st, ck, json, argv[optind]);
  }
  if (live) return live_report(reader, json, static_cast<size_t>(top), argv[optind]);
  analysis::TraceSummary summary(reader);
  analysis::LiveHeap live_heap(reader);  // (the HTML page's live heap, for a record --live trace)
  Progress progress("jvmtrace report", argv[optind]);
  const trace::ReadStatus st = reader.read([&](const trace::Record& r, uint64_t offset) {
    summary.add(r);
    if (html) live_heap.add(r);
    progress.at(offset);
  });
  progress.done();
  if (html) {
    const analysis::Derived d = summary.derive(interval);
    analysis::OutputFile out;
    if (!out.open(output, false, &error)) {
      std::fprintf(stderr, "jvmtrace report: %s\n", error.c_str());
      return 1;
    }
    out.write(analysis::html_report(summary, d, st, static_cast<int>(top), &live_heap));
    if (!out.close(&error)) {
      std::fprintf(stderr, "jvmtrace report: %s\n", error.c_str());
      return 1;
    }
    if (output != "-")
      std::fprintf(stderr, "jvmtrace report: wrote %s (%llu bytes)\n", output.c_str(),
                   static_cast<unsigned long long>(out.bytes_in()));
  } else {
    print_report(summary, json, interval, static_cast<int>(top), st);
  }
  std::fflush(stdout);
  return trace_end_status("jvmtrace report", argv[optind], st, nullptr);
}

}  // namespace jvmtrace
