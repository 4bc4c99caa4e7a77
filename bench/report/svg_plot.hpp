// A small SVG line-chart writer, so every experiment can draw its figure
// without an outside plotting tool. Pure: builds a string; the caller writes
// it to a file.
#pragma once

#include <string>
#include <vector>

namespace tally::report {

struct series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  bool secondary_axis = false; // drawn against the right-hand y axis
  bool dashed = false;
  bool markers = true;
  bool line = true; // false: points only (a scatter plot)
  std::string color; // an SVG colour; empty: the palette's, by series index
};

struct chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string y2_label; // used when some series is on the secondary axis
  bool log_y = false;   // primary axis logarithmic (non-positive values skipped)
  bool log_x = false;
  std::vector<series> lines;
};

/// The chart as a standalone SVG document (800x480).
std::string render_svg(const chart& c);

} // namespace tally::report
