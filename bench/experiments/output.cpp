#include "bench/experiments/output.hpp"

#include <cassert>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace tally::experiments {

namespace {

std::string cell_text(const cell_value& v, const std::string& double_format) {
  if (const auto* s = std::get_if<std::string>(&v))
    return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v))
    return std::to_string(*i);
  const double d = std::get<double>(v);
  if (std::isnan(d))
    return "nan";
  char buf[64];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  std::snprintf(buf, sizeof buf, double_format.c_str(), d);
#pragma GCC diagnostic pop
  return buf;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

} // namespace

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

result_table::result_table(std::vector<column> columns)
    : columns_(std::move(columns)) {}

void result_table::add_row(std::vector<cell_value> row) {
  assert(row.size() == columns_.size());
  rows_.push_back(std::move(row));
}

const cell_value& result_table::at(std::size_t row, std::size_t col) const {
  assert(row < rows_.size() && col < columns_.size());
  return rows_[row][col];
}

std::string result_table::csv() const {
  std::string out;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    out += (c ? "," : "") + csv_escape(columns_[c].name);
  out += '\n';
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c)
      out += (c ? "," : "") + csv_escape(cell_text(row[c], "%.10g"));
    out += '\n';
  }
  return out;
}

std::string result_table::text() const {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c)
    width[c] = columns_[c].name.size();
  for (const auto& row : rows_) {
    std::vector<std::string> line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line.push_back(cell_text(row[c], columns_[c].text_format));
      width[c] = std::max(width[c], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  auto emit = [&](std::string& out, const std::vector<std::string>& line) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      if (c)
        out += "  ";
      out += std::string(width[c] - line[c].size(), ' ') + line[c];
    }
    out += '\n';
  };
  std::string out;
  std::vector<std::string> header;
  for (const auto& col : columns_)
    header.push_back(col.name);
  emit(out, header);
  for (const auto& line : cells)
    emit(out, line);
  return out;
}

status write_output(const options& opts, std::string_view file_name,
                    std::string_view contents) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(opts.out_dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create the output folder '"
                                          + opts.out_dir + "': " + ec.message()
                                          + "; pass a writable --out DIR.");
  const fs::path path = fs::path(opts.out_dir) / std::string(file_name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  f.close();
  if (!f)
    return make_error(errc::io_error, "cannot write '" + path.string()
                                          + "'; check the --out folder.");
  return {};
}

status write_csv(const options& opts, std::string_view stem,
                 const result_table& table) {
  return write_output(opts, std::string(stem) + ".csv", table.csv());
}

status write_svg(const options& opts, std::string_view stem,
                 const report::chart& chart) {
  return write_output(opts, std::string(stem) + ".svg",
                      report::render_svg(chart));
}

void print_table(std::string_view title, const result_table& table) {
  std::printf("== %.*s ==\n%s", static_cast<int>(title.size()), title.data(),
              table.text().c_str());
  std::fflush(stdout);
}

void progress(const options& opts, std::string_view experiment,
              std::string_view what) {
  if (!opts.progress)
    return;
  std::fprintf(stderr, "[%.*s] %.*s\n", static_cast<int>(experiment.size()),
               experiment.data(), static_cast<int>(what.size()), what.data());
}

} // namespace tally::experiments
