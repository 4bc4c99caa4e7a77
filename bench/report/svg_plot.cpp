#include "bench/report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace tally::report {

namespace {

// Plot geometry in SVG user units.
constexpr double width = 800, height = 480;
constexpr double left = 80, right = 80, top = 40, bottom = 60;
constexpr double plot_w = width - left - right;
constexpr double plot_h = height - top - bottom;

const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                         "#9467bd", "#8c564b", "#e377c2", "#17becf"};

struct axis {
  double lo = 0, hi = 1;
  bool log = false;

  double map(double v) const { // 0..1
    if (log) {
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
};

bool usable(double v, bool log) {
  return std::isfinite(v) && (!log || v > 0);
}

axis fit(const std::vector<const std::vector<double>*>& vals, bool log) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (auto* vs : vals)
    for (double v : *vs)
      if (usable(v, log)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  axis a;
  a.log = log;
  if (!std::isfinite(lo)) {
    lo = log ? 1e-6 : 0;
    hi = 1;
  }
  if (log) {
    lo = std::pow(10, std::floor(std::log10(lo)));
    hi = std::pow(10, std::ceil(std::log10(hi)));
    if (hi <= lo)
      hi = lo * 10;
  } else {
    if (lo > 0 && lo < hi * 0.5)
      lo = 0; // anchor at zero when the data does not hug a narrow band
    if (hi == lo) {
      hi = lo + 1;
    }
    double pad = (hi - lo) * 0.05;
    hi += pad;
    if (lo != 0)
      lo -= pad;
  }
  a.lo = lo;
  a.hi = hi;
  return a;
}

std::vector<double> ticks(const axis& a) {
  std::vector<double> t;
  if (a.log) {
    for (double v = a.lo; v <= a.hi * 1.0001; v *= 10)
      t.push_back(v);
    return t;
  }
  double span = a.hi - a.lo;
  double step = std::pow(10, std::floor(std::log10(span / 5)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (span / (step * m) <= 6) {
      step *= m;
      break;
    }
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string fmt(double v) {
  char buf[32];
  if (v != 0 && (std::abs(v) < 1e-3 || std::abs(v) >= 1e6))
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      default: out += c;
    }
  }
  return out;
}

} // namespace

std::string render_svg(const chart& c) {
  std::vector<const std::vector<double>*> xs, ys, y2s;
  for (auto& s : c.lines) {
    xs.push_back(&s.x);
    (s.secondary_axis ? y2s : ys).push_back(&s.y);
  }
  axis ax = fit(xs, c.log_x);
  axis ay = fit(ys, c.log_y);
  axis ay2 = fit(y2s, false);
  bool has_y2 = !y2s.empty();

  auto px = [&](double v) { return left + ax.map(v) * plot_w; };
  auto py = [&](const axis& a, double v) { return top + (1 - a.map(v)) * plot_h; };

  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width
    << "' height='" << height << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << width / 2 << "' y='22' text-anchor='middle' font-size='15'>"
    << escape(c.title) << "</text>\n";
  // Grid and ticks.
  for (double t : ticks(ax)) {
    double x = px(t);
    o << "<line x1='" << x << "' y1='" << top << "' x2='" << x << "' y2='"
      << top + plot_h << "' stroke='#e5e5e5'/>\n"
      << "<text x='" << x << "' y='" << top + plot_h + 16
      << "' text-anchor='middle'>" << fmt(t) << "</text>\n";
  }
  for (double t : ticks(ay)) {
    double y = py(ay, t);
    o << "<line x1='" << left << "' y1='" << y << "' x2='" << left + plot_w
      << "' y2='" << y << "' stroke='#e5e5e5'/>\n"
      << "<text x='" << left - 6 << "' y='" << y + 4 << "' text-anchor='end'>"
      << fmt(t) << "</text>\n";
  }
  if (has_y2)
    for (double t : ticks(ay2))
      o << "<text x='" << left + plot_w + 6 << "' y='" << py(ay2, t) + 4
        << "' text-anchor='start' fill='#555'>" << fmt(t) << "</text>\n";
  o << "<rect x='" << left << "' y='" << top << "' width='" << plot_w
    << "' height='" << plot_h << "' fill='none' stroke='black'/>\n";
  o << "<text x='" << left + plot_w / 2 << "' y='" << height - 18
    << "' text-anchor='middle'>" << escape(c.x_label) << "</text>\n";
  o << "<text transform='translate(18," << top + plot_h / 2
    << ") rotate(-90)' text-anchor='middle'>" << escape(c.y_label) << "</text>\n";
  if (has_y2)
    o << "<text transform='translate(" << width - 14 << "," << top + plot_h / 2
      << ") rotate(90)' text-anchor='middle'>" << escape(c.y2_label)
      << "</text>\n";
  // Series, then the legend on a translucent box above all of them (drawn
  // interleaved, later series would cross earlier legend entries).
  std::ostringstream legend;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const auto& s = c.lines[i];
    const axis& a = s.secondary_axis ? ay2 : ay;
    const char* color = s.color.empty()
                            ? palette[i % (sizeof palette / sizeof *palette)]
                            : s.color.c_str();
    std::ostringstream pts;
    std::ostringstream dots; // scatter: one zero-length round-capped segment per point
    pts.precision(5);
    dots.precision(5);
    std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t j = 0; j < n; ++j) {
      if (!usable(s.x[j], c.log_x) || !usable(s.y[j], a.log))
        continue;
      pts << px(s.x[j]) << ',' << py(a, s.y[j]) << ' ';
      if (!s.line)
        dots << 'M' << px(s.x[j]) << ',' << py(a, s.y[j]) << "h0";
      else if (s.markers)
        o << "<circle cx='" << px(s.x[j]) << "' cy='" << py(a, s.y[j])
          << "' r='2.5' fill='" << color << "'/>\n";
    }
    if (s.line)
      o << "<polyline fill='none' stroke='" << color << "' stroke-width='1.6'"
        << (s.dashed ? " stroke-dasharray='6,4'" : "") << " points='"
        << pts.str() << "'/>\n";
    else
      o << "<path fill='none' stroke='" << color
        << "' stroke-width='4' stroke-linecap='round' d='" << dots.str()
        << "'/>\n";
    double ly = top + 14 + 16.0 * static_cast<double>(i);
    const std::string label = s.name + (s.secondary_axis ? " (right axis)" : "");
    longest = std::max(longest, label.size());
    legend << "<line x1='" << left + 10 << "' y1='" << ly - 4 << "' x2='"
           << left + 34 << "' y2='" << ly - 4 << "' stroke='" << color
           << "' stroke-width='2'" << (s.dashed ? " stroke-dasharray='6,4'" : "")
           << "/>\n"
           << "<text x='" << left + 40 << "' y='" << ly << "'>" << escape(label)
           << "</text>\n";
  }
  if (!c.lines.empty())
    o << "<rect x='" << left + 4 << "' y='" << top + 2 << "' width='"
      << 44 + 6.6 * static_cast<double>(longest) << "' height='"
      << 16.0 * static_cast<double>(c.lines.size()) + 4
      << "' fill='white' fill-opacity='0.85'/>\n"
      << legend.str();
  o << "</svg>\n";
  return o.str();
}

} // namespace tally::report
