#include "analysis/flame_graph.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "jvmtrace_events.h"
#include "analysis/java_frames.h"
#include "analysis/svg_plot.h"
#include "base/strings.h"

namespace jvmtrace::analysis {

void FlameGraph::add(const trace::Record& r) {
  if (!decided_ && r.type != trace::kMeta) {  // the meta record comes first: it says which stacks
    decided_ = true;
    vm_stacks_ = reader_.meta_value("stacks") == "vm";
  }
  if (vm_stacks_) {
    profile_.add(r);
    return;
  }
  if (r.type == trace::kEventStack) {
    flush_pending(static_cast<int64_t>(r.id) - 1);
    return;
  }
  if (r.type >= JT_PROBE_COUNT) return;
  flush_pending(-1);  // the previous event had no stack record
  if (r.event.probe == JT_TLAB_REFILL || r.event.probe == JT_ALLOC_SLOW_ENTER) {
    pending_ = {true, r.event};
    return;
  }
  if (r.event.probe == JT_ALLOC_SLOW_EXIT) {
    const uint64_t* a = r.event.a;
    SlowEnter& s = slow_[r.event.thread];
    if ((a[2] == 2 || a[2] == 4)) {
      const std::string klass = s.open ? reader_.classes()[s.klass] : "[class not traced]";
      weigh(r.event.thread, s.open ? s.stack : -1, klass + "_[k]", a[1]);
    }
    s.open = false;
  }
}

void FlameGraph::flush_pending(int64_t stack) {
  if (!pending_.open) return;
  pending_.open = false;
  const trace::Event& e = pending_.event;
  if (e.probe == JT_TLAB_REFILL) weigh(e.thread, stack, reader_.classes()[e.a[3]] + "_[i]", e.a[1]);
  else slow_[e.thread] = {stack, e.a[1], true};
}

// Stacks are named when the whole trace has been read: a stack may be
// renamed later in the trace (the recorder learned its JIT code's names),
// and the last names hold for all its events.
namespace {
// Frame names must not contain the separator, nor (they are the target's
// text, read on a terminal or by other tools) control characters: \xNN.
std::string clean(const std::string& name) {
  std::string s = printable(name);
  std::replace(s.begin(), s.end(), ';', ':');
  return s;
}
}  // namespace

void FlameGraph::finish_samples() {
  for (const auto& [k, w] : profile_.weights(thread_roots_)) {
    std::string line;
    if (thread_roots_) line = clean(reader_.threads()[k.thread].name) + ";";
    if (k.stack == 0) {
      line += "[no stack];";
      without_stack_ += w.bytes;
    } else {
      const auto& frames = reader_.java_stacks()[k.stack - 1];  // leaf first
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) line += clean(frame_label(reader_, *it)) + ";";
    }
    line += clean(reader_.classes()[k.klass]) + (k.outside ? "_[k]" : "_[i]");
    collapsed_[line] += w.bytes;
    total_ += w.bytes;
  }
  for (const auto& [thread, bytes] : profile_.unsampled_by_thread()) {
    std::string line;
    if (thread_roots_) line = clean(reader_.threads()[thread].name) + ";";
    collapsed_[line + "[not sampled: a thread with no sample]"] += bytes;
    total_ += bytes;
  }
}

void FlameGraph::finish() {
  if (vm_stacks_) return finish_samples();
  flush_pending(-1);
  for (const auto& [key, bytes] : weights_) {
    const auto& [thread, stack, leaf] = key;
    std::string line;
    if (thread_roots_) line = clean(reader_.threads()[thread].name) + ";";
    if (stack < 0 || static_cast<size_t>(stack) >= reader_.stacks().size()) {
      line += "[no stack];";
      without_stack_ += bytes;
    } else {
      const auto& frames = reader_.stacks()[stack];  // leaf first
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) line += clean(reader_.strings()[*it]) + ";";
    }
    line += clean(leaf);
    collapsed_[line] += bytes;
    total_ += bytes;
  }
  weights_.clear();
}

void FlameGraph::weigh(uint32_t thread, int64_t stack, const std::string& leaf, uint64_t bytes) {
  weights_[{thread_roots_ ? thread : 0, stack, leaf}] += bytes;
}

std::string FlameGraph::collapsed_text() const {
  std::string s;
  for (const auto& [line, bytes] : collapsed_) s += line + " " + std::to_string(bytes) + "\n";
  return s;
}

namespace {

struct Node {
  std::string name;
  uint64_t value = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
};

// A frame's colour by what it is: Java JIT-compiled green (C1's a paler
// green, interpreted ones teal), inlined frames and the allocated class in
// a new TLAB blue, the class outside TLABs purple, HotSpot C++ yellow,
// other native code red, unknown grey; the name varies the shade a little.
std::string colour(const std::string& name) {
  const uint32_t h = static_cast<uint32_t>(std::hash<std::string>{}(name));
  const int v = static_cast<int>(h % 40);
  char b[32];
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (ends("_[j]")) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 60 + v, 180 + v / 2, 70 + v);
  else if (ends("_[1]")) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 130 + v, 210 + v / 2, 120 + v);
  else if (ends("_[0]")) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 60 + v, 190 + v / 2, 180 + v);
  else if (ends("_[i]")) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 70 + v, 140 + v, 220);
  else if (ends("_[k]")) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 170 + v, 100 + v, 220);
  else if (name[0] == '[') std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 170 + v / 2, 170 + v / 2, 170 + v / 2);
  else if (name.find('`') != std::string::npos) std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 220, 90 + v, 70 + v / 2);
  else std::snprintf(b, sizeof b, "rgb(%d,%d,%d)", 225, 170 + v, 50 + v);
  return b;
}

}  // namespace

std::string FlameGraph::svg(const std::string& title) const {
  Node root;
  root.name = "all";
  for (const auto& [line, bytes] : collapsed_) {
    Node* n = &root;
    n->value += bytes;
    size_t pos = 0;
    while (pos <= line.size()) {
      size_t semi = line.find(';', pos);
      if (semi == std::string::npos) semi = line.size();
      const std::string name = line.substr(pos, semi - pos);
      auto& child = n->children[name];
      if (!child) {
        child = std::make_unique<Node>();
        child->name = name;
      }
      n = child.get();
      n->value += bytes;
      pos = semi + 1;
    }
  }
  const int width = 1200, frame_h = 17, top = 40;
  const double total = std::max<uint64_t>(root.value, 1);
  // The frames wide enough to see, and how deep they go.
  struct Visible {
    const Node* n;
    double x;
    int depth;
  };
  std::vector<Visible> visible;
  std::function<void(const Node&, double, int)> collect = [&](const Node& n, double x, int depth) {
    if (n.value / total * width < 0.3) return;
    visible.push_back({&n, x, depth});
    double cx = x;
    for (const auto& [name, c] : n.children) {
      collect(*c, cx, depth + 1);
      cx += c->value / total;
    }
  };
  collect(root, 0, 0);
  int depth_max = 0;
  for (const Visible& v : visible) depth_max = std::max(depth_max, v.depth);
  const int height = top + (depth_max + 1) * frame_h + 24;
  std::string frames;
  const uint64_t drawn = visible.size();
  // Root at the bottom; x and widths as fractions of the total, for zooming.
  for (const Visible& v : visible) {
    const Node& n = *v.n;
    const double x = v.x, w = n.value / total;
    const int depth = v.depth;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f%%", 100.0 * n.value / total);
    const double y = height - 24 - (depth + 1) * frame_h;
    frames += "<g class=\"f\" data-x=\"" + std::to_string(x) + "\" data-w=\"" + std::to_string(w) + "\" data-d=\"" +
              std::to_string(depth) + "\"><title>" + svg::escape(n.name) + " — " + std::to_string(n.value) + " bytes (" +
              svg::human_bytes(n.value) + ", " + pct + ")</title><rect x=\"" + std::to_string(x * width) + "\" y=\"" +
              std::to_string(y) + "\" width=\"" + std::to_string(w * width) + "\" height=\"" +
              std::to_string(frame_h - 1) + "\" fill=\"" + colour(n.name) + "\"/><text x=\"" +
              std::to_string(x * width + 3) + "\" y=\"" + std::to_string(y + 12) + "\"></text></g>\n";
  }
  // The script sizes labels and zooms: click a frame to fill the width
  // with it, click the title to go back.  Everything is in this file.
  static const char* kScript = R"(
var W = 1200;
function frames() { return document.querySelectorAll('g.f'); }
function label(g, px) {
  var t = g.querySelector('text'), name = g.querySelector('title').textContent.split(' — ')[0];
  var fit = Math.floor((px - 6) / 7);
  t.textContent = fit < 3 ? '' : (name.length <= fit ? name : name.substr(0, fit - 2) + '..');
}
function zoom(z) {
  var zx = z ? +z.dataset.x : 0, zw = z ? +z.dataset.w : 1, zd = z ? +z.dataset.d : 0;
  frames().forEach(function (g) {
    var x = +g.dataset.x, w = +g.dataset.w, d = +g.dataset.d, r = g.querySelector('rect'), t = g.querySelector('text');
    var inside = x >= zx - 1e-12 && x + w <= zx + zw + 1e-9;
    var above = d < zd && x <= zx + 1e-12 && x + w >= zx + zw - 1e-9;
    if (!(inside || above)) { g.style.display = 'none'; return; }
    g.style.display = '';
    var nx = above ? 0 : (x - zx) / zw * W, nw = above ? W : w / zw * W;
    r.setAttribute('x', nx); r.setAttribute('width', nw); t.setAttribute('x', nx + 3);
    g.style.opacity = above ? 0.6 : 1;
    label(g, nw);
  });
}
frames().forEach(function (g) { g.addEventListener('click', function () { zoom(g); }); });
document.getElementById('reset').addEventListener('click', function () { zoom(null); });
zoom(null);
)";
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"flame\" width=\"" + std::to_string(width) +
                  "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
                  std::to_string(height) + "\" data-total=\"" + std::to_string(root.value) + "\" data-frames=\"" +
                  std::to_string(drawn) + "\">\n<style>text { font: 11px monospace; fill: #000; pointer-events: none; } "
                  "g.f { cursor: pointer; } #reset { font: 15px sans-serif; cursor: pointer; }</style>\n"
                  "<rect width=\"100%\" height=\"100%\" fill=\"#fbfbf6\"/>\n<text id=\"reset\" x=\"8\" y=\"24\">" +
                  svg::escape(title) + " (click a frame to zoom; here to reset)</text>\n" + frames + "<script><![CDATA[" +
                  kScript + "]]></script>\n</svg>\n";
  return s;
}

}  // namespace jvmtrace::analysis
