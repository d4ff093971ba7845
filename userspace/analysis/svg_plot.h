// Small SVG charts drawn on the server side, for the HTML report: bars over
// a numeric axis, step lines, labelled horizontal bars.  Every data mark has
// class "mark" and a <title> (the browser's tooltip), so the page needs no
// script and no network, and a test can count what was drawn.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace jvmtrace::analysis::svg {

struct Bar {
  double x0, x1, y;     // data units; a bar spans [x0, x1] up to y
  std::string cls;      // extra CSS class (colour), e.g. "young"
  std::string tooltip;  // its <title>
};

struct Point {
  double x, y;
};

struct Axes {
  Axes(std::string x_label_, std::string y_label_, double x_min_, double x_max_, double y_max_)
      : x_label(std::move(x_label_)), y_label(std::move(y_label_)), x_min(x_min_), x_max(x_max_), y_max(y_max_) {}
  std::string x_label, y_label;
  double x_min, x_max, y_max;  // y starts at 0
  bool log2_x = false;         // x ticks at powers of two (values are log2)
  std::string y_unit;          // appended to y tick labels ("B": bytes, human-readable)
};

// A chart of width x height pixels.
std::string bar_chart(const std::string& id, const Axes& axes, const std::vector<Bar>& bars, int width = 900,
                      int height = 260);
std::string line_chart(const std::string& id, const Axes& axes, const std::vector<std::vector<Point>>& lines,
                       const std::vector<std::string>& line_classes, const std::vector<Bar>& markers = {},
                       int width = 900, int height = 260);
// Horizontal bars, one row per label, value-scaled.
std::string hbar_chart(const std::string& id, const std::vector<std::pair<std::string, double>>& rows,
                       const std::string& unit, int width = 900);

std::string escape(const std::string& s);  // for text and attributes
std::string human_bytes(double b);         // "1.5 MiB"

}  // namespace jvmtrace::analysis::svg
