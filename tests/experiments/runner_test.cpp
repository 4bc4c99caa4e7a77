// The experiment registry, the result tables and one quick experiment end to
// end (files written, deterministic for a seed).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "bench/experiments/experiments.hpp"
#include "bench/experiments/output.hpp"
#include "bench/report/svg_plot.hpp"
#include "tests/experiments/experiments_test_support.hpp"

using namespace tally;
using namespace tally::experiments;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path()
             / ("tally-experiments-test-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// Prints the run's seed once, before any test: the statistical tests draw a
// fresh one per run (experiments_test_support.hpp) and it replays with
// TALLY_TEST_SEED=<seed>.
struct print_seed {
  print_seed() {
    std::cerr << "test_experiments: TALLY_TEST_SEED="
              << tally::test::experiment_seed() << "\n";
  }
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(print_seed);

BOOST_AUTO_TEST_SUITE(experiments)

BOOST_AUTO_TEST_CASE(registry_names_every_experiment_of_the_issue_once) {
  std::set<std::string> names;
  for (const experiment& e : registry()) {
    BOOST_TEST(names.insert(std::string(e.name)).second, e.name);
    BOOST_TEST(!e.summary.empty());
    BOOST_TEST(find_experiment(e.name) == &e);
  }
  for (const char* n :
       {"fbf-membership", "fbf-model", "fbf-refresh", "fbf-filters",
        "fbf-adaptive", "fbf-counter", "bloom-table1", "bloom-table2",
        "bloom-table3", "bloom-table4", "bloom-table5", "bloom-table6",
        "bloom-figures", "bloom-figure5", "bloom-model", "bloom-broadcast",
        "fbf-failover", "fbf-latency"})
    BOOST_TEST(names.count(n) == 1u, n);
  BOOST_TEST(find_experiment("all") == nullptr);
  BOOST_TEST(find_experiment("nope") == nullptr);
}

BOOST_AUTO_TEST_CASE(result_table_writes_csv_and_aligned_text) {
  result_table t({{"name"}, {"value", "%.2f"}, {"count"}});
  t.add_row({std::string("a,b"), 0.125, std::int64_t{7}});
  t.add_row({std::string("c"), std::nan(""), std::int64_t{-1}});
  BOOST_TEST(t.csv() == "name,value,count\n\"a,b\",0.125,7\nc,nan,-1\n");
  BOOST_TEST(t.text() == "name  value  count\n"
                         " a,b   0.12      7\n"
                         "   c    nan     -1\n");
}

BOOST_AUTO_TEST_CASE(scatter_series_render_as_points_without_a_line) {
  report::chart c;
  report::series s;
  s.name = "dots";
  s.x = {1, 2, 3};
  s.y = {1, 4, 9};
  s.line = false;
  c.lines.push_back(s);
  const std::string svg = report::render_svg(c);
  BOOST_TEST(svg.find("<polyline") == std::string::npos);
  BOOST_TEST(svg.find("stroke-linecap='round'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(quick_experiment_writes_csv_and_svg_deterministically) {
  options opts;
  opts.quick = true;
  opts.progress = false;
  opts.seed = tally::test::experiment_seed();
  const auto dir = fresh_dir("counter");
  opts.out_dir = dir.string();
  const experiment* e = find_experiment("fbf-counter");
  BOOST_TEST_REQUIRE(e != nullptr);
  BOOST_TEST_REQUIRE(e->run(opts).has_value());
  const std::string csv = slurp(dir / "fbf-counter.csv");
  const std::string svg = slurp(dir / "fbf-counter.svg");
  BOOST_TEST(csv.rfind("retry_every,", 0) == 0u);
  BOOST_TEST(svg.find("<svg") != std::string::npos);
  BOOST_TEST_REQUIRE(e->run(opts).has_value());
  BOOST_TEST(slurp(dir / "fbf-counter.csv") == csv);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(unwritable_output_folder_is_an_io_error) {
  options opts;
  opts.quick = true;
  opts.progress = false;
  const auto dir = fresh_dir("blocked");
  std::ofstream(dir.string()) << "a file where the folder should be";
  opts.out_dir = (dir / "sub").string();
  const status st = write_output(opts, "x.csv", "a\n");
  BOOST_TEST_REQUIRE(!st.has_value());
  BOOST_TEST((st.err().code() == errc::io_error));
  std::filesystem::remove(dir);
}

BOOST_AUTO_TEST_SUITE_END()
