// The reproduced table cells against the papers' printed values
// (bench/experiments/paper_values.hpp), within the tolerance
// docs/EXPERIMENTS.md claims: 5 points for a percentage (the Bloom clock
// metrics, Fig. 8's reduction) and a factor 2 for a ratio of probabilities
// (Figs. 11 and 12). A cell the doc reports as knowingly off is pinned to
// today's value instead (`knowingly_off` below), with a margin of 6
// standard deviations of this test's reading over seeds; the doc says why each
// is off. So a change that moves a cell away from the paper, or moves a
// knowingly-off cell beyond its sampling noise, fails here.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/experiments/bloom_sim.hpp"
#include "bench/experiments/fbf_sim.hpp"
#include "bench/experiments/paper_values.hpp"
#include "bench/experiments/rng.hpp"
#include "tests/experiments/experiments_test_support.hpp"

using namespace tally;
using namespace tally::experiments;
using namespace std::chrono_literals;
using tally::test::experiment_seed;
using tally::test::value_of;

namespace {

// A cell whose reproduction is knowingly off the paper, or within its 5
// points but too close to the edge for this test's sampling noise: today's
// mean reading and the allowed deviation. Both from 30 seeds of this test
// (TALLY_TEST_SEED=501..530): the mean, and 6 standard deviations of the
// reading over those seeds (at least 0.01). A paper cell is checked against
// the paper only where |mean - paper| + 6 sd <= 5 points.
struct pinned_cell {
  const char* cell;
  double today;
  double margin;
};

// Why each is off (docs/EXPERIMENTS.md): Bloom clock precision is 3-17 points
// below the paper wherever the simulation's causality spread alpha is lower
// than the one the paper's numbers imply (Tables 1-5, worst at n = 50);
// Table 2's pr_i >= 0.9 rows imply an execution far less even than a fair
// one (alpha = 0.025 at pr_i = 1, ten times the fair 1/(2n)); the broadcast
// experiment's numbers fit a clock of m = 0.05n, not 0.1n (section 7.2 gives
// no m).
constexpr pinned_cell knowingly_off[] = {
    // paper, Tally - paper, sd over seeds
    {"table1 n=100 precision", 0.562, 0.021},        // 0.644, -8.2 pts, 0.0033
    {"table1 n=200 precision", 0.720, 0.021},        // 0.781, -6.1 pts, 0.0035
    {"table1 n=300 precision", 0.787, 0.029},        // 0.833, -4.6 pts, 0.0047
    {"table2 pr_i=0.00 precision", 0.746, 0.020},    // 0.807, -6.1 pts, 0.0032
    {"table3 k=2 precision", 0.749, 0.020},          // 0.804, -5.5 pts, 0.0033
    {"table3 k=3 precision", 0.745, 0.020},          // 0.809, -6.4 pts, 0.0032
    {"table3 k=4 precision", 0.742, 0.019},          // 0.808, -6.6 pts, 0.0032
    {"table4 m=0.1n precision", 0.717, 0.021},       // 0.784, -6.7 pts, 0.0034
    {"table4 m=0.2n precision", 0.750, 0.020},       // 0.811, -6.1 pts, 0.0032
    {"table4 m=0.3n precision", 0.771, 0.019},       // 0.827, -5.6 pts, 0.0031
    {"table2 pr_i=0.90 precision", 0.050, 0.010},    // 0.609, -55.9 pts, 0.0016
    {"table2 pr_i=0.90 accuracy", 0.796, 0.010},     // 0.847, -5.1 pts, 0.0013
    {"table2 pr_i=0.95 precision", 0.028, 0.010},    // 0.311, -28.3 pts, 0.0006
    {"table2 pr_i=0.95 accuracy", 0.829, 0.010},     // 0.760, +6.9 pts, 0.0007
    {"table2 pr_i=0.95 fpr", 0.172, 0.010},          // 0.269, -9.7 pts, 0.0008
    {"table2 pr_i=1.00 precision", 0.024, 0.010},    // 0.101, -7.7 pts, 0.0004
    {"table2 pr_i=1.00 accuracy", 0.861, 0.010},     // 0.773, +8.8 pts, 0.0005
    {"table2 pr_i=1.00 fpr", 0.139, 0.010},          // 0.232, -9.3 pts, 0.0005
    {"table5 bloom n=50 precision", 0.347, 0.028},   // 0.492, -14.5 pts, 0.0045
    {"table5 bloom n=50 accuracy", 0.744, 0.012},    // 0.788, -4.4 pts, 0.0019
    {"table5 scalar n=50 precision", 0.270, 0.022},  // 0.434, -16.4 pts, 0.0036
    {"table5 scalar n=50 accuracy", 0.631, 0.011},   // 0.713, -8.2 pts, 0.0018
    {"table5 scalar n=50 fpr", 0.427, 0.010},        // 0.368, +5.9 pts, 0.0012
    {"table5 bloom n=100 precision", 0.562, 0.021},  // 0.644, -8.2 pts, 0.0033
    {"table5 scalar n=100 precision", 0.450, 0.019}, // 0.542, -9.2 pts, 0.0031
    {"table5 scalar n=100 accuracy", 0.723, 0.010},  // 0.769, -4.6 pts, 0.0016
    {"table5 bloom n=200 precision", 0.720, 0.021},  // 0.781, -6.1 pts, 0.0035
    {"table5 scalar n=200 precision", 0.609, 0.023}, // 0.672, -6.3 pts, 0.0038
    // Section 7.2's broadcast with m = 0.1n: the paper's numbers fit m =
    // 0.05n (checked against the paper), not Table 1's m = 0.1n.
    {"broadcast m=0.1n accuracy", 0.779, 0.010},     // 0.661, +11.8 pts, 0.0011
    {"broadcast m=0.1n fpr", 0.223, 0.010},          // 0.341, -11.8 pts, 0.0011
};

const pinned_cell* pin_of(const std::string& cell) {
  for (const pinned_cell& p : knowingly_off)
    if (cell == p.cell)
      return &p;
  return nullptr;
}

// One Bloom clock metric: within 5 points of the paper, or at its pin.
void check_metric(const std::string& cell, double tally, double paper) {
  BOOST_TEST_MESSAGE("cell " << cell << " " << tally << " paper " << paper);
  BOOST_TEST_CONTEXT(cell << ": Tally " << tally << ", paper " << paper) {
    if (const pinned_cell* p = pin_of(cell))
      BOOST_TEST(std::abs(tally - p->today) <= p->margin,
                 "pinned at " << p->today << " +- " << p->margin);
    else
      BOOST_TEST(std::abs(tally - paper) <= 0.05);
  }
}

void check_row(const std::string& row, const slice_metrics& m,
               const paper::metrics& p) {
  check_metric(row + " precision", m.precision, p.precision);
  check_metric(row + " accuracy", m.accuracy, p.accuracy);
  check_metric(row + " fpr", m.fpr, p.fpr);
}

std::uint32_t tenth_of(std::uint32_t tenths, std::uint32_t n) {
  return (tenths * n + 9) / 10; // m = 0.1n ... rounded up, as the paper
}

// Mean metrics of `runs` complete-graph executions per clock (section 5:
// samples from GSN 10n in steps of 100, all ordered pairs, mean over runs).
std::vector<slice_metrics> complete_graph(std::uint32_t n, double pr,
                                          const std::vector<clock_config>& clocks,
                                          unsigned runs) {
  std::vector<std::vector<slice_metrics>> per(clocks.size());
  for (unsigned r = 0; r < runs; ++r) {
    complete_graph_params p;
    p.n = n;
    p.pr_internal = pr;
    p.clocks = clocks;
    p.seed = derive_seed(experiment_seed(),
                         0x7ab1e000000ull + (std::uint64_t{n} << 10)
                             + static_cast<std::uint64_t>(pr * 1000),
                         r);
    const run_metrics m = value_of(complete_graph_run(p, 10ull * n, 100));
    for (std::size_t c = 0; c < clocks.size(); ++c)
      per[c].push_back(m.per_clock[c]);
  }
  std::vector<slice_metrics> out;
  for (const auto& v : per)
    out.push_back(mean_of(v));
  return out;
}

// Runs per execution size: the paper's "at least 3", more where runs are
// cheap, so the readings' spread over seeds stays small.
unsigned runs_for(std::uint32_t n) {
  return n <= 50 ? 160 : n <= 100 ? 40 : n <= 200 ? 8 : 2;
}

// Broadcast executions per reading (section 7.2): 8190 pairs each.
constexpr unsigned broadcast_runs = 40;

} // namespace

BOOST_AUTO_TEST_SUITE(experiments)

BOOST_AUTO_TEST_CASE(bloom_table1_cells_match_the_paper) {
  // Table 1 (pr_i = 0, k = 2, m = 0.1n) for n = 100 to 400; 500-700 take
  // minutes and stay with `tally-bench experiment bloom-table1`.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (const auto& row : paper::table1) {
      if (row.n > 400)
        break;
      const slice_metrics m =
          complete_graph(row.n, 0, {{tenth_of(1, row.n), 2}}, runs_for(row.n)).front();
      check_row("table1 n=" + std::to_string(row.n), m, row.bloom);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_tables_2_3_4_cells_match_the_paper) {
  // n = 200, m = 0.1n, 0.2n, 0.3n x k = 2, 3, 4 on the same executions.
  // Table 2 averages all nine per pr_i; Tables 3 and 4 (pr_i = 0) average
  // over m per k and over k per m.
  constexpr std::uint32_t n = 200;
  std::vector<clock_config> clocks;
  for (std::uint32_t tenths : {1u, 2u, 3u})
    for (std::uint32_t k : {2u, 3u, 4u})
      clocks.push_back({tenth_of(tenths, n), k});
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (const auto& row : paper::table2) {
      const auto per_clock = complete_graph(n, row.pr_internal, clocks, runs_for(n));
      check_row("table2 pr_i=" + std::to_string(row.pr_internal).substr(0, 4),
                mean_of(per_clock), row.bloom);
      if (row.pr_internal != 0)
        continue;
      for (std::size_t ki = 0; ki < 3; ++ki) {
        const auto& paper_row = paper::table3[ki];
        check_row("table3 k=" + std::to_string(paper_row.k),
                  mean_of({per_clock[ki], per_clock[3 + ki], per_clock[6 + ki]}),
                  paper_row.bloom);
      }
      for (std::size_t mi = 0; mi < 3; ++mi) {
        const auto& paper_row = paper::table4[mi];
        check_row("table4 m=0." + std::to_string(paper_row.tenths) + "n",
                  mean_of({per_clock[3 * mi], per_clock[3 * mi + 1],
                           per_clock[3 * mi + 2]}),
                  paper_row.bloom);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_table5_cells_match_the_paper) {
  // Bloom m = 0.1n, k = 2 against scalar m = k = 1 on the same executions.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (const auto& row : paper::table5) {
      const auto m = complete_graph(row.n, 0, {{tenth_of(1, row.n), 2}, {1, 1}},
                                    runs_for(row.n));
      check_row("table5 bloom n=" + std::to_string(row.n), m[0], row.bloom);
      check_row("table5 scalar n=" + std::to_string(row.n), m[1], row.scalar);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_table6_cells_match_the_paper) {
  // The client-server star, every 100th event; both m on one execution.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (std::size_t i = 0; i < 4; ++i) {
      const auto& wide = paper::table6[i];
      const auto& narrow = paper::table6[4 + i];
      star_params p;
      p.clients = wide.n;
      p.clocks = {{wide.m, 2}, {narrow.m, 2}};
      std::vector<slice_metrics> a, b;
      for (unsigned r = 0; r < 2; ++r) {
        p.seed = derive_seed(experiment_seed(), 0x57a6, wide.n * 10 + r);
        const run_metrics m = value_of(star_run(p, 100));
        a.push_back(m.per_clock[0]);
        b.push_back(m.per_clock[1]);
      }
      const std::string n = std::to_string(wide.n);
      check_row("table6 n=" + n + " m=" + std::to_string(wide.m), mean_of(a), wide.bloom);
      check_row("table6 n=" + n + " m=" + std::to_string(narrow.m), mean_of(b),
                narrow.bloom);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_broadcast_cells_match_the_paper) {
  // Section 7.2's broadcast experiment, read as n = 100 (alpha = 0.005 =
  // 1/(2n)) and k = 2 with the paper's two clock sizes on the same
  // executions: m = 0.05n, which the paper's numbers fit, within 5 points;
  // m = 0.1n (Table 1's) pinned for accuracy and fpr (12 points off). alpha
  // within 0.002 of the paper's 0.005 (only two events of one process are
  // ordered in the slice: 1/(2n) +- sampling).
  const auto& paper_row = paper::broadcast;
  const broadcast_params base{paper_row.n, {{tenth_of(1, paper_row.n) / 2, 2},
                                            {tenth_of(1, paper_row.n), 2}}, 0};
  std::vector<slice_metrics> narrow, wide;
  for (unsigned r = 0; r < broadcast_runs; ++r) {
    broadcast_params p = base;
    p.seed = derive_seed(experiment_seed(), 0xb40adca57ull, r);
    const run_metrics m = value_of(broadcast_run(p, 10ull * p.n, 100));
    narrow.push_back(m.per_clock[0]);
    wide.push_back(m.per_clock[1]);
  }
  const slice_metrics a = mean_of(narrow), b = mean_of(wide);
  BOOST_TEST_MESSAGE("cell broadcast alpha " << a.alpha << " paper " << paper_row.alpha);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    check_row("broadcast m=0.05n", a, paper_row.bloom);
    check_row("broadcast m=0.1n", b, paper_row.bloom);
    BOOST_TEST(std::abs(a.alpha - paper_row.alpha) <= 0.002);
  }
}

BOOST_AUTO_TEST_CASE(fbf_fig8_reduction_at_300_matches_the_paper) {
  // Sec. VI-A: at 300 operations the optimized check's FPP is 90% lower than
  // the simple check's. Scenario A of fbf-membership (300 ids over two
  // periods of 5 s, read just before the second refresh), bitwise FPPs of 5
  // FBFs.
  workload w;
  w.arrivals = even_arrivals(300, 10.0);
  w.readings = {{10.0 - 0.001, 300}};
  replay_params p;
  p.fbf = paper_fbf(6250, 5, 1, 5s);
  p.probes = 0;
  p.repetitions = 5;
  p.checks = {true, true, false};
  p.seed = derive_seed(experiment_seed(), 0xf18);
  const fpp_point pt = value_of(replay(w, p)).front();
  const double reduction = 1.0 - pt.optimized.bitwise / pt.simple.bitwise;
  BOOST_TEST_MESSAGE("cell fig8 reduction " << reduction << " paper "
                     << paper::fig8_reduction_at_300);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(std::abs(reduction - paper::fig8_reduction_at_300) <= 0.05);
  }
}

BOOST_AUTO_TEST_CASE(fbf_fig11_ratio_matches_the_paper_within_2x) {
  // Sec. VI-C: at 100 ops/s, FPP(t = 5 s) = 1000 x FPP(t = 1 s). fbf-refresh's
  // exponential ramp (5000 ids, 1 -> 200 ops/s), m = 25k, k = 5, bitwise FPPs
  // averaged over 8 refresh phases.
  ramp r;
  r.kind = ramp::shape::exponential;
  r.r0 = 1;
  r.r1 = 200;
  r.total = 5000;
  workload w;
  w.arrivals = r.arrivals();
  w.readings = {{r.time_at_rate(100), 100}};
  replay_params p;
  p.probes = 0;
  p.repetitions = 8;
  p.random_phase = true;
  p.checks = {true, false, false};
  double fpp[2] = {};
  for (int i = 0; i < 2; ++i) {
    const int seconds = i == 0 ? 5 : 1;
    p.fbf = paper_fbf(25'000, 5, 1, std::chrono::seconds{seconds});
    p.seed = derive_seed(experiment_seed(), 0xf111, static_cast<std::uint64_t>(seconds));
    fpp[i] = value_of(replay(w, p)).front().optimized.bitwise;
  }
  const double ratio = fpp[0] / fpp[1];
  BOOST_TEST_MESSAGE("cell fig11 ratio " << ratio << " paper " << paper::fig11_ratio_5s_to_1s);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(ratio >= paper::fig11_ratio_5s_to_1s / 2);
    BOOST_TEST(ratio <= paper::fig11_ratio_5s_to_1s * 2);
  }
}

BOOST_AUTO_TEST_CASE(fbf_fig12_ratio_matches_the_paper_within_2x_on_a_rising_load) {
  // Sec. VI-C: at 100 ops/s, FPP(3 filters) = 5.5 x FPP(24 filters), t = 5 s.
  // fbf-filters' linear ramp (3000 ids, 0 -> 200 ops/s); the ratio holds only
  // while the load rises (more_filters_lower_fpp_on_a_rising_load_but_not_at_
  // steady_state). The 24-filter bitwise FPP has too many parts to compute,
  // so sampled FPPs: 16 refresh phases x 100k probes.
  ramp r;
  r.kind = ramp::shape::linear;
  r.r0 = 0;
  r.r1 = 200;
  r.total = 3000;
  workload w;
  w.arrivals = r.arrivals();
  w.readings = {{r.time_at_rate(100), 100}};
  replay_params p;
  p.probes = 100'000;
  p.repetitions = 16;
  p.random_phase = true;
  p.checks = {true, false, false};
  p.seed = derive_seed(experiment_seed(), 0xf112);
  p.fbf = paper_fbf(6250, 5, 1, 5s);
  const double three = value_of(replay(w, p)).front().optimized.measured();
  p.fbf = paper_fbf(6250, 5, 22, 5s);
  const double many = value_of(replay(w, p)).front().optimized.measured();
  BOOST_TEST_MESSAGE("cell fig12 ratio " << three / many << " paper "
                     << paper::fig12_ratio_3_to_24);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(three / many >= paper::fig12_ratio_3_to_24 / 2);
    BOOST_TEST(three / many <= paper::fig12_ratio_3_to_24 * 2);
  }
}

BOOST_AUTO_TEST_SUITE_END()
