#include "analysis/html_report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "analysis/java_frames.h"
#include "analysis/svg_plot.h"

namespace jvmtrace::analysis {

namespace {

using svg::escape;
using svg::human_bytes;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 960px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin: 28px 0 6px; }
.sub { color: #666; word-break: break-all; } .note { color: #666; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 2px 10px 2px 0; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.facts td:first-child { color: #666; }
svg.chart { display: block; } .grid { stroke: #eee; } .axis { stroke: #888; }
.tick { font-size: 11px; fill: #555; } .label { font-size: 12px; fill: #333; }
.mark { fill: #4878a8; } .mark.young { fill: #4878a8; } .mark.full { fill: #c8504a; } .mark.concurrent { fill: #9a9a3a; }
.mark.remark { fill: #8a5cb0; } .mark.cleanup { fill: #3aa0a0; } .mark.concurrent_old { fill: #6a8a2a; }
.mark.degenerated { fill: #e08a20; }
.mark.old { fill: #d98b2b; } .mark.hbar { fill: #5a9a68; }
.mark.line { fill: none; stroke: #4878a8; stroke-width: 1.5; } .mark.line.committed { stroke: #aaa; stroke-dasharray: 4 3; }
.span { fill: #c8504a; opacity: .18; }
.mark.line.live { stroke: #222; stroke-width: 2; } .mark.line.s0 { stroke: #c8504a; } .mark.line.s1 { stroke: #4878a8; }
.mark.line.s2 { stroke: #5a9a68; } .mark.line.s3 { stroke: #d98b2b; } .mark.line.s4 { stroke: #8a5cb0; }
.mark.line.s5 { stroke: #3aa0a0; }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
details { margin-top: 6px; }
)";

// A pause as the page draws it: from the pause probes, or (stock mode, a
// JVM patched before them) a young or full collection standing in for it.
struct PauseBar {
  double start_s, end_s;
  uint64_t id, start_ns, end_ns, used_before, used_after, committed_after;
  std::string what, name, cause;  // what: "young", "full", "remark", "cleanup"
};

std::string legend(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "<div class=\"legend note\">";
  for (const auto& [colour, text] : items) s += "<span style=\"background:" + colour + "\"></span>" + escape(text);
  return s + "</div>\n";
}

// log2 histogram bars of values (x in log2 units); offset/width split a bucket between series.
void log2_bars(const std::vector<uint64_t>& values, const std::string& cls, double offset, double width,
               std::vector<svg::Bar>* bars, double* xmin, double* xmax, double* ymax) {
  std::map<int, uint64_t> buckets;
  for (uint64_t v : values) buckets[v ? 63 - __builtin_clzll(v) : 0]++;
  for (const auto& [k, n] : buckets) {
    bars->push_back({k + offset, k + offset + width, static_cast<double>(n), cls,
                     std::to_string(n) + " " + cls + (cls.empty() ? "" : " ") + "of " + human_bytes(std::pow(2, k)) +
                         " to " + human_bytes(std::pow(2, k + 1))});
    *xmin = std::min(*xmin, static_cast<double>(k));
    *xmax = std::max(*xmax, static_cast<double>(k + 1));
    *ymax = std::max(*ymax, static_cast<double>(n));
  }
}

}  // namespace

std::string html_report(TraceSummary& sum, const Derived& d, const trace::ReadStatus& st, int top,
                        const LiveHeap* live) {
  const trace::TraceReader& r = sum.reader;
  const bool stock = r.meta_value("mode") == "stock";
  const double t_end = std::max(d.span_s, sum.events ? static_cast<int64_t>(sum.last_ns - d.origin_ns) / 1e9 : 0.0);
  auto secs = [&](uint64_t ns) { return static_cast<int64_t>(ns - d.origin_ns) / 1e9; };

  std::vector<PauseBar> pauses;
  std::vector<const Gc*> concurrent;
  double pause_total_ms = 0, pause_max_ms = 0;
  const bool pause_probes = sum.pause_probes();
  for (const auto& [id, g] : sum.gcs) {
    if (!g.started || !g.ended) continue;
    if (g.kind == JVMTRACE_GC_CONCURRENT) {
      concurrent.push_back(&g);
      continue;
    }
    if (!pause_probes)
      pauses.push_back({secs(g.start_ns), secs(g.end_ns), g.id, g.start_ns, g.end_ns, g.used_before, g.used_after,
                        g.committed_after, trace::gc_kind_name(g.kind), g.name, g.cause});
  }
  for (const Pause& p : sum.pauses)
    if (p.started && p.ended)
      pauses.push_back({secs(p.start_ns), secs(p.end_ns), p.gc_id, p.start_ns, p.end_ns, p.used_before, p.used_after,
                        p.committed_after, trace::pause_kind_name(p.kind), p.name, p.cause});
  for (const PauseBar& p : pauses) {
    const double ms = (p.end_ns - p.start_ns) / 1e6;
    pause_total_ms += ms;
    pause_max_ms = std::max(pause_max_ms, ms);
  }

  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>jvmtrace report: PID " +
                  escape(r.meta_value("pid")) + "</title>\n<style>" + kStyle + "</style></head><body>\n";
  h += "<h1>jvmtrace report: JVM " + escape(r.meta_value("pid")) + "</h1>\n<div class=\"sub\">" +
       escape(r.meta_value("cmdline")) + "</div>\n";
  h += "<table class=\"facts\" id=\"facts\">\n";
  auto fact = [&](const std::string& k, const std::string& v) {
    h += "<tr><td>" + escape(k) + "</td><td>" + escape(v) + "</td></tr>\n";
  };
  fact("mode", r.meta_value("mode") + (stock ? " (uprobes on an unpatched HotSpot: " + r.meta_value("stock_coverage") + ")" : ""));
  fact("host", r.meta_value("host"));
  fact("events", std::to_string(sum.events) + " over " + fmt("%.3f s", d.span_s) + ", " + std::to_string(sum.lost) + " lost");
  fact("trace", st.describe() + (sum.end_text.empty() ? "" : "; ended: " + sum.end_text) + "; " +
                    std::to_string(r.size()) + " bytes");
  fact("collections", std::to_string(pauses.size()) + " pauses, " + fmt("%.3f ms", pause_total_ms) + " in total, longest " +
                          fmt("%.3f ms", pause_max_ms) + "; " + std::to_string(concurrent.size()) + " concurrent cycles");
  fact("TLABs", std::to_string(d.tlab.n) + " refills, " + human_bytes(d.tlab.sum) + "; median " +
                    human_bytes(d.tlab.p50) + ", p99 " + human_bytes(d.tlab.p99));
  fact("outside TLABs", std::to_string(d.outside.n) + " objects, " + human_bytes(d.outside.sum));
  if (!stock)
    fact("slow path", "median " + fmt("%.1f µs", d.slow.p50 / 1e3) + ", p99 " + fmt("%.1f µs", d.slow.p99 / 1e3) +
                          ", max " + fmt("%.1f µs", d.slow.max / 1e3));
  h += "</table>\n";

  // GC pauses.
  {
    svg::Axes a{"time since the recording started (s)", "pause (ms)", 0, std::max(t_end, 1e-3), 0};
    std::vector<svg::Bar> bars;
    for (const PauseBar& p : pauses) {
      const double ms = (p.end_ns - p.start_ns) / 1e6;
      a.y_max = std::max(a.y_max, ms);
      bars.push_back({p.start_s, p.end_s, ms, p.what,
                      "GC " + std::to_string(p.id) + " " + trace::pause_title(p.name, p.cause) +
                          " at " + fmt("%.3f s", p.start_s) + ": " + fmt("%.3f ms", ms) +
                          (stock ? "" : ", heap " + human_bytes(p.used_before) + " → " + human_bytes(p.used_after))});
    }
    a.y_max = a.y_max > 0 ? a.y_max * 1.1 : 1;
    h += "<h2>GC pauses</h2>\n";
    const std::string unseen = sum.unseen_pauses();
    if (!unseen.empty()) h += "<p class=\"note\">Not every pause is seen: " + escape(unseen) + ".</p>\n";
    std::vector<std::pair<std::string, std::string>> keys = {
        {"#4878a8", "young"}, {"#c8504a", "full"}, {"#8a5cb0", "remark"}, {"#3aa0a0", "cleanup"}};
    if (d.pause_ns[JVMTRACE_PAUSE_CONCURRENT].n) keys.push_back({"#9a9a3a", "concurrent collector's"});
    if (d.pause_ns[JVMTRACE_PAUSE_CONCURRENT_OLD].n) keys.push_back({"#6a8a2a", "concurrent, old generation"});
    if (d.pause_ns[JVMTRACE_PAUSE_DEGENERATED].n) keys.push_back({"#e08a20", "degenerated"});
    h += "<figure id=\"plot-gc-pauses\">" + svg::bar_chart("gc-pauses", a, bars) + legend(keys) + "</figure>\n";
  }

  // Heap used: the probes' figures at pause edges, and in between the last
  // pause's figure plus the traced allocation (report --check verifies it).
  h += "<h2>Heap used</h2>\n<figure id=\"plot-heap\">";
  if (stock) {
    h += "<p class=\"note\">Not known in stock mode: stock HotSpot passes no heap sizes to the functions traced.</p>";
  } else {
    struct Step {
      uint64_t ts;
      int what;  // 0 alloc, 1 pause start, 2 pause end
      uint64_t v, committed;
    };
    std::vector<Step> steps;
    for (const auto& [ts, bytes] : sum.allocs) steps.push_back({ts, 0, bytes, 0});
    for (const PauseBar& p : pauses) {
      steps.push_back({p.start_ns, 1, p.used_before, 0});
      steps.push_back({p.end_ns, 2, p.used_after, p.committed_after});
    }
    std::stable_sort(steps.begin(), steps.end(), [](const Step& x, const Step& y) { return x.ts < y.ts; });
    std::vector<svg::Point> used, committed;
    bool known = false;
    double cur = 0, last_x = -1, ymax = 0;
    const double min_dx = std::max(t_end, 1e-3) / 1500;  // a point per ~0.6 pixel is enough
    for (const Step& s : steps) {
      const double x = secs(s.ts);
      if (s.what == 0) {
        if (!known) continue;
        cur += s.v;
        if (x - last_x >= min_dx) used.push_back({x, cur}), last_x = x;
      } else if (s.what == 1) {
        used.push_back({x, static_cast<double>(s.v)});
        known = false;
      } else {
        used.push_back({x, static_cast<double>(s.v)});
        committed.push_back({x, static_cast<double>(s.committed)});
        cur = s.v;
        known = true;
        last_x = x;
      }
      ymax = std::max({ymax, cur, static_cast<double>(s.committed), used.empty() ? 0.0 : used.back().y});
    }
    svg::Axes a{"time since the recording started (s)", "heap", 0, std::max(t_end, 1e-3), ymax > 0 ? ymax * 1.1 : 1};
    a.y_unit = "B";
    std::vector<svg::Bar> spans;
    for (const PauseBar& p : pauses)
      spans.push_back({p.start_s, p.end_s, 0, "", "pause GC " + std::to_string(p.id) + " " + p.name});
    h += svg::line_chart("heap", a, {used, committed}, {"used", "committed"}, spans) +
         legend({{"#4878a8", "used"}, {"#aaa", "committed (after each pause)"}, {"#f0c8c6", "pauses"}});
  }
  h += "</figure>\n";

  // What stays alive (record --live): the estimate after each collection
  // that reported fates, in total and for the sites heaviest at the end.
  if (live && !live->points().empty()) {
    static const char* kColours[] = {"#c8504a", "#4878a8", "#5a9a68", "#d98b2b", "#8a5cb0", "#3aa0a0"};
    const auto& points = live->points();
    const auto top_sites = live->top_series(6);
    std::vector<std::vector<svg::Point>> lines(1);
    std::vector<std::string> classes{"live"};
    std::vector<std::pair<std::string, std::string>> keys{{"#222", "all sites"}};
    double ymax = 0;
    for (const auto& p : points) lines[0].push_back({secs(p.ts_ns), p.live_bytes}), ymax = std::max(ymax, p.live_bytes);
    for (size_t k = 0; k < top_sites.size(); k++) {
      lines.emplace_back();
      for (size_t i = 0; i < top_sites[k].live_bytes.size(); i++)
        lines.back().push_back({secs(points[i].ts_ns), top_sites[k].live_bytes[i]});
      classes.push_back("s" + std::to_string(k));
      keys.push_back({kColours[k], top_sites[k].name});
    }
    svg::Axes a{"time since the recording started (s)", "live (estimated)", 0, std::max(t_end, 1e-3),
                ymax > 0 ? ymax * 1.1 : 1};
    a.y_unit = "B";
    std::vector<svg::Bar> olds;
    for (const auto& p : points)
      if (LiveHeap::old_point(p))
        olds.push_back({secs(p.ts_ns), secs(p.ts_ns), 0, "", "old or full collection GC " + std::to_string(p.gc_id)});
    h += "<h2>Live heap by allocation site</h2>\n<p class=\"note\">Estimated from the sampled objects the VM "
         "tracked (record --live): the bytes still alive after each collection that reported deaths, in total "
         "and for the " + std::to_string(top_sites.size()) + " sites heaviest at the end. A young collection "
         "sees only young objects' deaths: the old or full collections (marked) are where every death has been "
         "seen.</p>\n<figure id=\"plot-live-heap\">" + svg::line_chart("live-heap", a, lines, classes, olds) +
         legend(keys) + "</figure>\n";
    const auto growth = live->growing(static_cast<size_t>(top));
    h += "<h2>Growing sites</h2>\n<p class=\"note\">Leak suspects: the least-squares growth of each site's live "
         "bytes across the " + std::to_string(live->old_points()) + " old or full collections.</p>\n";
    if (growth.empty()) {
      h += std::string("<p>") + (live->old_points() < 2 ? "Growth needs two old or full collections." : "No site grew.") +
           "</p>\n";
    } else {
      h += "<table id=\"growing-sites\"><tr><th class=\"n\">MiB/min</th><th class=\"n\">first</th>"
           "<th class=\"n\">last</th><th class=\"n\">grew</th><th>site</th></tr>\n";
      for (const auto& g : growth)
        h += "<tr><td class=\"n\">" + fmt("%.2f", g.bytes_per_s * 60 / 1048576.0) + "</td><td class=\"n\">" +
             escape(human_bytes(g.first)) + "</td><td class=\"n\">" + escape(human_bytes(g.last)) +
             "</td><td class=\"n\">" + std::to_string(g.up) + "/" + std::to_string(g.steps) + "</td><td>" +
             escape(g.name) + "</td></tr>\n";
      h += "</table>\n";
    }
  }

  // Allocation rate.
  {
    std::vector<svg::Bar> bars;
    double ymax = 0;
    for (size_t i = 0; i < d.rate.size(); i++) {
      const double x0 = d.rate_from_s + i * d.interval_s, mbs = d.rate[i] / d.interval_s / 1e6;
      ymax = std::max(ymax, mbs);
      bars.push_back({x0, x0 + d.interval_s, mbs, "", fmt("%.3f s: ", x0) + fmt("%.1f MB/s", mbs)});
    }
    svg::Axes a{"time since the recording started (s)", "allocation (MB/s)", 0,
                std::max(t_end, d.rate_from_s + d.rate.size() * d.interval_s), ymax > 0 ? ymax * 1.1 : 1};
    h += "<h2>Allocation rate</h2>\n<p class=\"note\">New TLABs plus objects allocated outside TLABs, per " +
         fmt("%g", d.interval_s) + " s.</p>\n<figure id=\"plot-alloc-rate\">" + svg::bar_chart("alloc-rate", a, bars) +
         "</figure>\n";
  }

  // TLAB and PLAB sizes.
  {
    std::vector<svg::Bar> bars;
    double xmin = 1e9, xmax = 0, ymax = 0;
    log2_bars(sum.tlab_sizes, "", 0, 1, &bars, &xmin, &xmax, &ymax);
    svg::Axes a{"TLAB size (log2 buckets)", "TLABs", bars.empty() ? 0 : xmin, bars.empty() ? 1 : xmax, ymax * 1.1};
    a.log2_x = true;
    h += "<h2>TLAB sizes</h2>\n<figure id=\"plot-tlab-sizes\">" + svg::bar_chart("tlab-sizes", a, bars, 900, 220) +
         "</figure>\n";
  }
  {
    std::vector<svg::Bar> bars;
    double xmin = 1e9, xmax = 0, ymax = 0;
    log2_bars(sum.plab_sizes[0], "young", 0, 0.5, &bars, &xmin, &xmax, &ymax);
    log2_bars(sum.plab_sizes[1], "old", 0.5, 0.5, &bars, &xmin, &xmax, &ymax);
    h += "<h2>PLAB sizes</h2>\n<figure id=\"plot-plab-sizes\">";
    if (bars.empty()) {
      h += "<p class=\"note\">No PLABs in this trace" +
           std::string(stock ? " (stock mode does not see them)." : ".") + "</p>";
    } else {
      svg::Axes a{"PLAB size (log2 buckets)", "PLABs", xmin, xmax, ymax * 1.1};
      a.log2_x = true;
      h += svg::bar_chart("plab-sizes", a, bars, 900, 220) + legend({{"#4878a8", "young/survivor"}, {"#d98b2b", "old"}});
    }
    h += "</figure>\n";
  }

  // Top classes and threads.
  auto total = [](const Totals& t) { return static_cast<double>(t.tlab_bytes + t.outside_bytes); };
  {
    std::vector<std::pair<std::string, double>> rows;
    for (size_t i = 0; i < d.classes.size() && i < static_cast<size_t>(top); i++)
      rows.push_back({r.classes()[d.classes[i].first], total(d.classes[i].second)});
    h += "<h2>Top classes</h2>\n<p class=\"note\">Bytes of new TLABs, attributed to the class of the allocation "
         "that asked for each (a byte-weighted sample), plus outside-TLAB objects (exact).</p>\n"
         "<figure id=\"plot-top-classes\">" +
         svg::hbar_chart("top-classes", rows, "B") + "</figure>\n";
  }
  {
    std::vector<std::pair<std::string, double>> rows;
    for (size_t i = 0; i < d.threads.size() && i < static_cast<size_t>(top); i++) {
      const auto& th = r.threads()[d.threads[i].first];
      rows.push_back({th.name + " (" + std::to_string(th.tid) + ")", total(d.threads[i].second)});
    }
    h += "<h2>Top threads</h2>\n<figure id=\"plot-top-threads\">" + svg::hbar_chart("top-threads", rows, "B") +
         "</figure>\n";
  }

  // Safepoints: every stop of the world, by operation.
  if (r.meta_value("safepoint_probes") == "1") {
    std::vector<std::pair<std::string, double>> rows;
    for (size_t i = 0; i < d.safepoint_ops.size() && i < static_cast<size_t>(top); i++)
      rows.push_back({d.safepoint_ops[i].operation + " (" + std::to_string(d.safepoint_ops[i].total_ns.n) + ")",
                      d.safepoint_ops[i].total_ns.sum / 1e6});
    h += "<h2>Safepoints</h2>\n<p class=\"note\">" + std::to_string(sum.safepoints.size()) +
         " safepoints: every stop of the world, collections or not. Time to reach one: median " +
         fmt("%.3f ms", d.safepoint_reaching_ns.p50 / 1e6) + ", p99 " + fmt("%.3f ms", d.safepoint_reaching_ns.p99 / 1e6) +
         ", max " + fmt("%.3f ms", d.safepoint_reaching_ns.max / 1e6) + "; time at one: median " +
         fmt("%.3f ms", d.safepoint_at_ns.p50 / 1e6) + ", max " + fmt("%.3f ms", d.safepoint_at_ns.max / 1e6) +
         ". Total time by VM operation (count):</p>\n<figure id=\"plot-safepoints\">" +
         svg::hbar_chart("safepoints", rows, "ms") + "</figure>\n";
  }
  // Allocation sites, from the VM's own stacks.
  if (sum.profile.samples()) {
    std::vector<std::pair<std::string, double>> rows;
    const auto sites = sum.profile.sites();
    for (size_t i = 0; i < sites.size() && i < static_cast<size_t>(top); i++)
      rows.push_back({sites[i].method == UINT64_MAX ? "[no Java frame]"
                                                     : frame_site(r, {sites[i].method, sites[i].line, 0}),
                      static_cast<double>(sites[i].weight.bytes)});
    h += "<h2>Allocation sites</h2>\n<p class=\"note\">The leaf-most Java frame (inlined frames included) of " +
         std::to_string(sum.profile.samples()) +
         " allocation samples of the VM's own stacks, each weighing the bytes its thread allocated since its "
         "previous one.</p>\n<figure id=\"plot-allocation-sites\">" +
         svg::hbar_chart("allocation-sites", rows, "B") + "</figure>\n";
  }

  // Every collection, for reference.
  h += "<h2>Collections</h2>\n<details><summary>" + std::to_string(sum.gcs.size()) +
       " collections</summary>\n<table id=\"gc-table\"><tr><th class=\"n\">id</th><th>name</th><th>cause</th><th>kind</th>"
       "<th class=\"n\">start (s)</th><th class=\"n\">ms</th><th class=\"n\">used before</th><th class=\"n\">used after</th>"
       "<th class=\"n\">PLABs</th></tr>\n";
  for (const auto& [id, g] : sum.gcs) {
    h += "<tr><td class=\"n\">" + std::to_string(id) + "</td><td>" + escape(g.name) + "</td><td>" + escape(g.cause) +
         "</td><td>" + trace::gc_kind_name(g.kind) + "</td><td class=\"n\">" +
         (g.started ? fmt("%.3f", secs(g.start_ns)) : "-") + "</td><td class=\"n\">" +
         (g.started && g.ended ? fmt("%.3f", (g.end_ns - g.start_ns) / 1e6) : "-") + "</td><td class=\"n\">" +
         (stock ? "-" : human_bytes(g.used_before)) + "</td><td class=\"n\">" + (stock ? "-" : human_bytes(g.used_after)) +
         "</td><td class=\"n\">" + std::to_string(g.plabs) + "</td></tr>\n";
  }
  h += "</table></details>\n<p class=\"note\">Written by jvmtrace report --html. Hover a mark for its figures.</p>\n"
       "</body></html>\n";
  return h;
}

}  // namespace jvmtrace::analysis
