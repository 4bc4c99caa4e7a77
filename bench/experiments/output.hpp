// Result tables (CSV file and stdout text), file output and progress lines
// shared by the experiments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bench/experiments/experiments.hpp"
#include "bench/report/svg_plot.hpp"
#include "common/expected.hpp"

namespace tally::experiments {

/// One column of a result table: its CSV header and the printf format of its
/// doubles in the stdout table (CSV always keeps 10 significant digits).
struct column {
  std::string name;
  std::string text_format = "%.4g";
};

using cell_value = std::variant<std::string, double, std::int64_t>;

class result_table {
public:
  explicit result_table(std::vector<column> columns);

  /// Appends a row; it must have one value per column (asserted).
  void add_row(std::vector<cell_value> row);

  std::size_t row_count() const noexcept { return rows_.size(); }
  std::size_t column_count() const noexcept { return columns_.size(); }
  const cell_value& at(std::size_t row, std::size_t col) const;

  /// RFC 4180 CSV with a header line.
  std::string csv() const;
  /// Aligned columns for a terminal.
  std::string text() const;

private:
  std::vector<column> columns_;
  std::vector<std::vector<cell_value>> rows_;
};

/// Writes <out_dir>/<file_name>, creating out_dir. errc::io_error when the
/// folder or the file cannot be written.
status write_output(const options& opts, std::string_view file_name,
                    std::string_view contents);

/// write_output of table.csv() as <stem>.csv.
status write_csv(const options& opts, std::string_view stem,
                 const result_table& table);

/// write_output of the rendered chart as <stem>.svg.
status write_svg(const options& opts, std::string_view stem,
                 const report::chart& chart);

/// Prints "== <title> ==" and the table on stdout.
void print_table(std::string_view title, const result_table& table);

/// A progress line "[<experiment>] <what>" on stderr, if opts.progress.
void progress(const options& opts, std::string_view experiment,
              std::string_view what);

/// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace tally::experiments
