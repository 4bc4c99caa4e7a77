// The Bloom clock paper's qualitative results (seed 002, sections 5-7) on
// small executions, and the simulation's own invariants.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "bench/experiments/bloom_sim.hpp"
#include "clock/bloom_probability.hpp"
#include "clock/vector_clock.hpp"
#include "tests/experiments/experiments_test_support.hpp"

using namespace tally;
using namespace tally::experiments;
using tally::test::experiment_seed;
using tally::test::value_of;

namespace {

// Mean metrics of `runs` complete-graph executions, per clock.
std::vector<slice_metrics> complete_graph(std::uint32_t n, double pr,
                                          std::vector<clock_config> clocks,
                                          unsigned runs = 2) {
  std::vector<std::vector<slice_metrics>> per(clocks.size());
  for (unsigned r = 0; r < runs; ++r) {
    complete_graph_params p;
    p.n = n;
    p.pr_internal = pr;
    p.clocks = clocks;
    p.seed = experiment_seed() * 1000 + r;
    const run_metrics m = value_of(complete_graph_run(p, 10ull * n, 100));
    for (std::size_t c = 0; c < clocks.size(); ++c)
      per[c].push_back(m.per_clock[c]);
  }
  std::vector<slice_metrics> out;
  for (const auto& v : per)
    out.push_back(mean_of(v));
  return out;
}

vector_clock dense_to_clock(const std::vector<std::uint32_t>& v) {
  vector_clock c;
  for (std::size_t i = 0; i < v.size(); ++i)
    c.set(static_cast<dc_id>(i), v[i]);
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiments)

BOOST_AUTO_TEST_CASE(complete_graph_runs_n_squared_events_deterministically) {
  complete_graph_params p;
  p.n = 20;
  p.clocks = {{2, 2}};
  p.seed = experiment_seed();
  std::vector<std::uint32_t> first, again;
  auto record = [](std::vector<std::uint32_t>& into) {
    return [&into](const event_view& e) { into.push_back(e.process); };
  };
  BOOST_TEST(value_of(simulate_complete_graph(p, record(first))) == 400u);
  BOOST_TEST(value_of(simulate_complete_graph(p, record(again))) == 400u);
  BOOST_TEST(first == again);
  p.seed += 1;
  std::vector<std::uint32_t> other;
  (void)value_of(simulate_complete_graph(p, record(other)));
  BOOST_TEST(first != other);
}

BOOST_AUTO_TEST_CASE(o1_causality_test_agrees_with_vector_clock_order) {
  // happened_before's V_z[proc(y)] >= V_y[proc(y)] against the full
  // vector_clock comparison, on every ordered pair of a small execution.
  complete_graph_params p;
  p.n = 12;
  p.pr_internal = 0.3;
  p.clocks = {{3, 2}};
  p.seed = experiment_seed();
  event_sampler every(p.n, 1, 1);
  (void)value_of(simulate_complete_graph(p, [&](const event_view& e) { every(e); }));
  const auto& s = every.samples();
  BOOST_TEST_REQUIRE(s.size() == 144u);
  std::vector<vector_clock> vc;
  for (const auto& e : s)
    vc.push_back(dense_to_clock(e.vc));
  std::size_t positives = 0;
  for (std::size_t a = 0; a < s.size(); ++a)
    for (std::size_t b = 0; b < s.size(); ++b) {
      if (a == b)
        continue;
      const bool fast = happened_before(s[a], s[b]);
      BOOST_TEST(fast == (vc[a] < vc[b]), "pair " << a << ", " << b);
      positives += fast ? 1 : 0;
    }
  BOOST_TEST(positives > 0u);
}

BOOST_AUTO_TEST_CASE(bloom_clock_has_no_false_negatives) {
  for (auto [n, m] : {std::pair<std::uint32_t, std::uint32_t>{30, 3}, {30, 1}}) {
    complete_graph_params p;
    p.n = n;
    p.clocks = {{m, 2}};
    p.seed = experiment_seed();
    event_sampler sampler(n, 10, 7);
    (void)value_of(simulate_complete_graph(p, [&](const event_view& e) { sampler(e); }));
    const confusion_counts c = value_of(classify_pairs(sampler.samples(), 0));
    BOOST_TEST(c.fn == 0u);
    BOOST_TEST(c.tp > 0u);
    BOOST_TEST(c.fp > 0u); // a small clock does make false positives
  }
}

BOOST_AUTO_TEST_CASE(bloom_clock_improves_with_the_number_of_processes) {
  // Table 1: precision and accuracy rise and fpr falls as n grows.
  const slice_metrics small = complete_graph(50, 0, {{5, 2}}).front();
  const slice_metrics large = complete_graph(150, 0, {{15, 2}}).front();
  BOOST_TEST(large.precision > small.precision + 0.1);
  BOOST_TEST(large.accuracy > small.accuracy + 0.03);
  BOOST_TEST(large.fpr < small.fpr - 0.03);
  BOOST_TEST(large.alpha > small.alpha); // the causality spread grows with n
}

BOOST_AUTO_TEST_CASE(internal_events_degrade_the_bloom_clock) {
  // Table 2: pr_i = 0.9 against pr_i = 0.
  const slice_metrics none = complete_graph(80, 0, {{8, 2}}).front();
  const slice_metrics most = complete_graph(80, 0.9, {{8, 2}}).front();
  BOOST_TEST(most.precision < none.precision - 0.2);
  BOOST_TEST(most.accuracy < none.accuracy);
  BOOST_TEST(most.alpha < none.alpha);
}

BOOST_AUTO_TEST_CASE(larger_bloom_clocks_are_better_and_k_matters_little) {
  // Tables 3 and 4 on the same executions: m = 0.1n vs 0.3n, k = 2 vs 4.
  const auto m = complete_graph(100, 0, {{10, 2}, {30, 2}, {10, 4}, {30, 4}});
  BOOST_TEST(m[1].precision > m[0].precision);
  BOOST_TEST(m[1].fpr < m[0].fpr);
  BOOST_TEST(m[3].precision > m[2].precision);
  BOOST_TEST(std::abs(m[2].precision - m[0].precision) < 0.05);
  BOOST_TEST(std::abs(m[3].precision - m[1].precision) < 0.05);
}

BOOST_AUTO_TEST_CASE(bloom_clock_beats_the_scalar_clock) {
  // Table 5: m = 0.1n, k = 2 against m = k = 1, same executions.
  const auto m = complete_graph(100, 0, {{10, 2}, {1, 1}});
  BOOST_TEST(m[0].precision > m[1].precision + 0.05);
  BOOST_TEST(m[0].accuracy > m[1].accuracy + 0.03);
  BOOST_TEST(m[0].fpr < m[1].fpr - 0.05);
  BOOST_TEST(m[0].alpha == m[1].alpha); // the same pairs, the same truth
}

BOOST_AUTO_TEST_CASE(client_server_star_is_almost_always_right) {
  // Table 6: the server spreads every client's clock.
  star_params p;
  p.clients = 40;
  p.clocks = {{4, 2}, {2, 2}};
  p.seed = experiment_seed();
  const run_metrics r = value_of(star_run(p, 100));
  BOOST_TEST(r.events == 4u * 40 * 40);
  for (const slice_metrics& m : r.per_clock) {
    BOOST_TEST(m.precision > 0.95);
    BOOST_TEST(m.fpr < 0.05);
    BOOST_TEST(m.alpha > 0.4); // near 0.5: almost a chain (section 7.2)
  }
}

BOOST_AUTO_TEST_CASE(pr_p_rises_along_the_gsn_and_equation_3_caps_pr_fp_at_a_quarter) {
  // Figures 2-4 on n = 40: y at GSN 400, z after it.
  complete_graph_params p;
  p.n = 40;
  p.clocks = {{4, 2}};
  p.events = 1200;
  p.seed = experiment_seed();
  std::vector<bloom_clock> y;
  std::vector<std::pair<bloom_clock, bool>> zs; // clock, y -> z
  std::uint32_t y_proc = 0;
  std::uint64_t y_own = 0;
  (void)value_of(simulate_complete_graph(p, [&](const event_view& e) {
    if (e.gsn == 400) {
      y = e.bloom;
      y_proc = e.process;
      y_own = e.vc.get(y_proc);
    } else if (e.gsn > 400) {
      zs.push_back({e.bloom.front(), e.vc.get(y_proc) >= y_own});
    }
  }));
  BOOST_TEST_REQUIRE(zs.size() == 800u);
  double early = 0, late = 0;
  for (std::size_t i = 0; i < zs.size(); ++i) {
    const double pr = value_of(pr_positive(y.front(), zs[i].first));
    const bool positive = value_of(zs[i].first.dominates(y.front()));
    const outcome_probabilities eq2 = outcomes_eq2(pr, positive);
    const outcome_probabilities eq3 = outcomes_eq3(pr);
    BOOST_TEST(eq3.fp <= 0.25 + 1e-12);
    if (!positive)
      BOOST_TEST(eq2.fp == 0.0); // a negative is always right (Fig. 3)
    if (zs[i].second)
      BOOST_TEST(positive); // no false negative
    if (i < 50)
      early += pr / 50;
    if (i >= zs.size() - 50)
      late += pr / 50;
  }
  BOOST_TEST(early < 0.2);
  BOOST_TEST(late > 0.9);
}

BOOST_AUTO_TEST_SUITE_END()
