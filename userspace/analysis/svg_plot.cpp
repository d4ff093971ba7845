#include "analysis/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace jvmtrace::analysis::svg {

namespace {

constexpr int kLeft = 84, kRight = 20, kTop = 12, kBottom = 42;

std::string f(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// About n round tick values in [lo, hi].
std::vector<double> ticks(double lo, double hi, int n) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n, p = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
  return t;
}

std::string tick_label(double v, const std::string& unit) {
  char b[48];
  const double a = std::fabs(v);
  if (unit == "B") return human_bytes(v);
  if (a >= 1e9) std::snprintf(b, sizeof b, "%.3gG", v / 1e9);
  else if (a >= 1e6) std::snprintf(b, sizeof b, "%.3gM", v / 1e6);
  else if (a >= 1e4) std::snprintf(b, sizeof b, "%.3gk", v / 1e3);
  else std::snprintf(b, sizeof b, "%.4g", v);
  return b + (unit.empty() ? "" : " " + unit);
}

struct Frame {
  const Axes& a;
  int w, h;
  double px(double x) const {
    const double span = a.x_max - a.x_min;
    return kLeft + (span > 0 ? (x - a.x_min) / span : 0) * (w - kLeft - kRight);
  }
  double py(double y) const { return kTop + (h - kTop - kBottom) * (1 - (a.y_max > 0 ? y / a.y_max : 0)); }
};

std::string open_svg(const std::string& id, int w, int h) {
  return "<svg id=\"" + escape(id) + "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         std::to_string(w) + "\" height=\"" + std::to_string(h) + "\" viewBox=\"0 0 " + std::to_string(w) + " " +
         std::to_string(h) + "\">\n";
}

std::string axes_svg(const Frame& fr) {
  const Axes& a = fr.a;
  std::string s;
  const double x0 = kLeft, x1 = fr.w - kRight, y0 = fr.h - kBottom, y1 = kTop;
  for (double v : ticks(0, a.y_max, 4)) {
    const double y = fr.py(v);
    s += "<line class=\"grid\" x1=\"" + f(x0) + "\" x2=\"" + f(x1) + "\" y1=\"" + f(y) + "\" y2=\"" + f(y) + "\"/>";
    s += "<text class=\"tick\" x=\"" + f(x0 - 6) + "\" y=\"" + f(y + 4) + "\" text-anchor=\"end\">" +
         escape(tick_label(v, a.y_unit)) + "</text>\n";
  }
  if (a.log2_x) {
    for (double v = std::ceil(a.x_min); v <= a.x_max; v += std::max(1.0, std::ceil((a.x_max - a.x_min) / 10))) {
      s += "<text class=\"tick\" x=\"" + f(fr.px(v)) + "\" y=\"" + f(y0 + 16) + "\" text-anchor=\"middle\">" +
           escape(human_bytes(std::pow(2, v))) + "</text>\n";
    }
  } else {
    for (double v : ticks(a.x_min, a.x_max, 8))
      s += "<text class=\"tick\" x=\"" + f(fr.px(v)) + "\" y=\"" + f(y0 + 16) + "\" text-anchor=\"middle\">" +
           escape(tick_label(v, "")) + "</text>\n";
  }
  s += "<line class=\"axis\" x1=\"" + f(x0) + "\" x2=\"" + f(x1) + "\" y1=\"" + f(y0) + "\" y2=\"" + f(y0) + "\"/>";
  s += "<line class=\"axis\" x1=\"" + f(x0) + "\" x2=\"" + f(x0) + "\" y1=\"" + f(y0) + "\" y2=\"" + f(y1) + "\"/>\n";
  s += "<text class=\"label\" x=\"" + f((x0 + x1) / 2) + "\" y=\"" + f(fr.h - 6.0) + "\" text-anchor=\"middle\">" +
       escape(a.x_label) + "</text>";
  s += "<text class=\"label\" transform=\"translate(14," + f((y0 + y1) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       escape(a.y_label) + "</text>\n";
  return s;
}

std::string bar_svg(const Frame& fr, const Bar& b) {
  const double x = fr.px(b.x0), w = std::max(1.0, fr.px(b.x1) - x), y = fr.py(b.y), h = std::max(1.0, fr.py(0) - y);
  return "<rect class=\"mark " + escape(b.cls) + "\" x=\"" + f(x) + "\" y=\"" + f(std::min(y, fr.py(0) - 1)) +
         "\" width=\"" + f(w) + "\" height=\"" + f(h) + "\"><title>" + escape(b.tooltip) + "</title></rect>\n";
}

}  // namespace

std::string escape(const std::string& text) {
  // Control characters (not allowed in XML 1.0 at all) and bytes that are not
  // UTF-8 (an SVG must be) become \xNN first, as on a terminal.
  const std::string s = printable(text);
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) b /= 1024, u++;
  char s[32];
  std::snprintf(s, sizeof s, b == std::floor(b) ? "%.0f %s" : "%.3g %s", b, units[u]);
  return s;
}

std::string bar_chart(const std::string& id, const Axes& axes, const std::vector<Bar>& bars, int width, int height) {
  Frame fr{axes, width, height};
  std::string s = open_svg(id, width, height) + axes_svg(fr);
  for (const Bar& b : bars) s += bar_svg(fr, b);
  return s + "</svg>\n";
}

std::string line_chart(const std::string& id, const Axes& axes, const std::vector<std::vector<Point>>& lines,
                       const std::vector<std::string>& line_classes, const std::vector<Bar>& markers, int width,
                       int height) {
  Frame fr{axes, width, height};
  std::string s = open_svg(id, width, height) + axes_svg(fr);
  for (const Bar& b : markers) {  // shaded spans behind the lines (e.g. pauses)
    s += "<rect class=\"span " + escape(b.cls) + "\" x=\"" + f(fr.px(b.x0)) + "\" y=\"" + f(kTop) + "\" width=\"" +
         f(std::max(1.0, fr.px(b.x1) - fr.px(b.x0))) + "\" height=\"" + f(height - kTop - kBottom) + "\"><title>" +
         escape(b.tooltip) + "</title></rect>\n";
  }
  for (size_t i = 0; i < lines.size(); i++) {
    if (lines[i].empty()) continue;
    std::string d;
    for (const Point& p : lines[i]) d += (d.empty() ? "M" : " L") + f(fr.px(p.x)) + " " + f(fr.py(p.y));
    s += "<path class=\"mark line " + escape(i < line_classes.size() ? line_classes[i] : "") + "\" d=\"" + d +
         "\"><title>" + escape(i < line_classes.size() ? line_classes[i] : "") + "</title></path>\n";
  }
  return s + "</svg>\n";
}

std::string hbar_chart(const std::string& id, const std::vector<std::pair<std::string, double>>& rows,
                       const std::string& unit, int width) {
  const int row_h = 22, label_w = 330, height = std::max(1, static_cast<int>(rows.size())) * row_h + 8;
  double max = 0;
  for (const auto& r : rows) max = std::max(max, r.second);
  std::string s = open_svg(id, width, height);
  for (size_t i = 0; i < rows.size(); i++) {
    const double y = 4 + i * row_h, w = max > 0 ? (width - label_w - 110) * rows[i].second / max : 0;
    const std::string value = unit == "B" ? human_bytes(rows[i].second) : tick_label(rows[i].second, unit);
    s += "<text class=\"tick\" x=\"" + f(label_w - 8) + "\" y=\"" + f(y + 15) + "\" text-anchor=\"end\">" +
         escape(rows[i].first.size() > 48 ? rows[i].first.substr(0, 47) + "…" : rows[i].first) + "</text>";
    s += "<rect class=\"mark hbar\" x=\"" + f(label_w) + "\" y=\"" + f(y + 2) + "\" width=\"" + f(std::max(1.0, w)) +
         "\" height=\"" + f(row_h - 6) + "\"><title>" + escape(rows[i].first + ": " + value) + "</title></rect>";
    s += "<text class=\"tick\" x=\"" + f(label_w + std::max(1.0, w) + 6) + "\" y=\"" + f(y + 15) + "\">" + escape(value) +
         "</text>\n";
  }
  return s + "</svg>\n";
}

}  // namespace jvmtrace::analysis::svg
