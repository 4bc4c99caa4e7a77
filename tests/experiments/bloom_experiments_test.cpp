// The Bloom clock paper's qualitative results (seed 002, sections 5-7) on
// small executions, and the simulation's own invariants.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "bench/experiments/bloom_sim.hpp"
#include "bench/experiments/paper_values.hpp"
#include "bench/experiments/rng.hpp"
#include "clock/bloom_probability.hpp"
#include "clock/vector_clock.hpp"
#include "tests/experiments/experiments_test_support.hpp"

using namespace tally;
using namespace tally::experiments;
using tally::test::experiment_seed;
using tally::test::value_of;

namespace {

// Mean metrics of `runs` complete-graph executions, per clock (section 5's
// slice: samples from GSN 10n in steps of 100).
std::vector<slice_metrics> complete_graph(std::uint32_t n, double pr,
                                          std::vector<clock_config> clocks,
                                          unsigned runs) {
  std::vector<std::vector<slice_metrics>> per(clocks.size());
  for (unsigned r = 0; r < runs; ++r) {
    complete_graph_params p;
    p.n = n;
    p.pr_internal = pr;
    p.clocks = clocks;
    p.seed = derive_seed(experiment_seed(), (std::uint64_t{n} << 20)
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
  // Table 1: precision and accuracy rise and fpr falls as n grows. A run of
  // n = 50 has only 21 samples, so 8 runs; n = 150 has 211.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    const slice_metrics small = complete_graph(50, 0, {{5, 2}}, 8).front();
    const slice_metrics large = complete_graph(150, 0, {{15, 2}}, 3).front();
    BOOST_TEST_MESSAGE("stat improves_n d_precision " << large.precision - small.precision
                       << " d_accuracy " << large.accuracy - small.accuracy
                       << " d_fpr " << small.fpr - large.fpr
                       << " d_alpha " << large.alpha - small.alpha);
    BOOST_TEST(large.precision > small.precision + 0.1);
    BOOST_TEST(large.accuracy > small.accuracy + 0.03);
    BOOST_TEST(large.fpr < small.fpr - 0.03);
    BOOST_TEST(large.alpha > small.alpha); // the causality spread grows with n
  }
}

BOOST_AUTO_TEST_CASE(internal_events_degrade_the_bloom_clock) {
  // Table 2: pr_i = 0.9 against pr_i = 0.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    const slice_metrics none = complete_graph(80, 0, {{8, 2}}, 3).front();
    const slice_metrics most = complete_graph(80, 0.9, {{8, 2}}, 3).front();
    BOOST_TEST_MESSAGE("stat internal d_precision " << none.precision - most.precision
                       << " d_accuracy " << none.accuracy - most.accuracy
                       << " d_alpha " << none.alpha - most.alpha);
    BOOST_TEST(most.precision < none.precision - 0.2);
    BOOST_TEST(most.accuracy < none.accuracy);
    BOOST_TEST(most.alpha < none.alpha);
  }
}

BOOST_AUTO_TEST_CASE(larger_bloom_clocks_are_better_and_k_matters_little) {
  // Tables 3 and 4 on the same executions: m = 0.1n vs 0.3n, k = 2 vs 4.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    const auto m = complete_graph(100, 0, {{10, 2}, {30, 2}, {10, 4}, {30, 4}}, 3);
    BOOST_TEST_MESSAGE("stat larger_m d_precision_k2 " << m[1].precision - m[0].precision
                       << " d_precision_k4 " << m[3].precision - m[2].precision
                       << " d_fpr_k2 " << m[0].fpr - m[1].fpr
                       << " k_effect_m10 " << m[2].precision - m[0].precision
                       << " k_effect_m30 " << m[3].precision - m[1].precision);
    BOOST_TEST(m[1].precision > m[0].precision);
    BOOST_TEST(m[1].fpr < m[0].fpr);
    BOOST_TEST(m[3].precision > m[2].precision);
    BOOST_TEST(std::abs(m[2].precision - m[0].precision) < 0.05);
    BOOST_TEST(std::abs(m[3].precision - m[1].precision) < 0.05);
  }
}

BOOST_AUTO_TEST_CASE(bloom_clock_beats_the_scalar_clock) {
  // Table 5: m = 0.1n, k = 2 against m = k = 1, same executions.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    const auto m = complete_graph(100, 0, {{10, 2}, {1, 1}}, 3);
    BOOST_TEST_MESSAGE("stat scalar d_precision " << m[0].precision - m[1].precision
                       << " d_accuracy " << m[0].accuracy - m[1].accuracy
                       << " d_fpr " << m[1].fpr - m[0].fpr);
    BOOST_TEST(m[0].precision > m[1].precision + 0.05);
    BOOST_TEST(m[0].accuracy > m[1].accuracy + 0.03);
    BOOST_TEST(m[0].fpr < m[1].fpr - 0.05);
  }
}

BOOST_AUTO_TEST_CASE(client_server_star_is_almost_always_right) {
  // Table 6: the server spreads every client's clock.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    star_params p;
    p.clients = 40;
    p.clocks = {{4, 2}, {2, 2}};
    p.seed = experiment_seed();
    const run_metrics r = value_of(star_run(p, 100));
    BOOST_TEST(r.events == 4u * 40 * 40);
    for (const slice_metrics& m : r.per_clock) {
      BOOST_TEST_MESSAGE("stat star precision " << m.precision << " fpr " << m.fpr
                         << " alpha " << m.alpha);
      BOOST_TEST(m.precision > 0.95);
      BOOST_TEST(m.fpr < 0.05);
      BOOST_TEST(m.alpha > 0.4); // near 0.5: almost a chain (section 7.2)
    }
  }
}

BOOST_AUTO_TEST_CASE(pr_p_rises_along_the_gsn_and_eq3_puts_pr_fp_where_the_false_positives_are) {
  // Figures 2-4 in the paper's setting (section 5.5): n = 100, pr_i = 0,
  // m = 10, k = 2, y the event with GSN 1000, z every later event up to GSN
  // 4500. One execution's pr_p depends on which process y falls on, so the
  // readings are pooled over 24 executions (0.1 s; over 60 seeds of 8
  // executions the ratios below had a standard deviation of 12-13% of their
  // mean, which 24 executions bring to ~7%).
  constexpr std::uint64_t y_gsn = 1000, last = 4500;
  constexpr unsigned runs = 24;
  double early = 0, late = 0; // mean pr_p (Eq. 7) over GSN 1001-1500, 4001-4500
  std::uint64_t early_count = 0, late_count = 0;
  // Per class (0 TN, 1 FP, 2 TP): count, sum of Eq. 2's and Eq. 3's pr_fp.
  double count[3] = {}, fp2[3] = {}, fp3[3] = {};
  std::uint64_t false_negatives = 0;
  for (unsigned r = 0; r < runs; ++r) {
    complete_graph_params p;
    p.n = 100;
    p.clocks.push_back({10, 2}); // (not = {{10, 2}}: GCC 12 -Wnonnull false positive)
    p.events = last;
    p.seed = derive_seed(experiment_seed(), 0xf16, r);
    std::vector<bloom_clock> y; // y's clock, once GSN 1000 has run
    std::uint32_t y_proc = 0;
    std::uint64_t y_own = 0;
    (void)value_of(simulate_complete_graph(p, [&](const event_view& e) {
      if (e.gsn == y_gsn) {
        y = e.bloom;
        y_proc = e.process;
        y_own = e.vc.get(y_proc);
        return;
      }
      if (e.gsn < y_gsn)
        return;
      const bool actual = e.vc.get(y_proc) >= y_own; // y -> z
      const double pr = value_of(pr_positive(y.front(), e.bloom.front()));
      const bool positive = value_of(e.bloom.front().dominates(y.front()));
      false_negatives += actual && !positive ? 1 : 0;
      const int cls = !positive ? 0 : (actual ? 2 : 1);
      count[cls] += 1;
      fp2[cls] += outcomes_eq2(pr, positive).fp;
      fp3[cls] += outcomes_eq3(pr).fp;
      if (e.gsn <= y_gsn + 500) {
        early += pr;
        ++early_count;
      } else if (e.gsn > last - 500) {
        late += pr;
        ++late_count;
      }
    }));
  }
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST_REQUIRE(early_count == runs * 500u);
    BOOST_TEST_REQUIRE(late_count == runs * 500u);
    early /= static_cast<double>(early_count);
    late /= static_cast<double>(late_count);
    for (int c = 0; c < 3; ++c)
      BOOST_TEST_REQUIRE(count[c] > 0);
    const double mean2[3] = {fp2[0] / count[0], fp2[1] / count[1], fp2[2] / count[2]};
    const double mean3[3] = {fp3[0] / count[0], fp3[1] / count[1], fp3[2] / count[2]};
    BOOST_TEST_MESSAGE("stat figs early " << early << " late " << late
                       << " eq3_TN " << mean3[0] << " eq3_FP " << mean3[1] << " eq3_TP " << mean3[2]
                       << " eq2_FP " << mean2[1] << " eq2_TP " << mean2[2]);
    BOOST_TEST(false_negatives == 0u);
    // Fig. 2: pr_p starts near 0 and flattens near 1 by GSN 3500-4000.
    BOOST_TEST(early < 0.2);
    BOOST_TEST(late > 0.9);
    // Fig. 3: Eq. 2's pr_fp is high at the first positives (the false ones,
    // in the middle of the run) and decays as pr_p reaches 1 (the true ones
    // after them). 8-execution samples: FP/TP = 4.7 (sd 0.6).
    BOOST_TEST(mean2[1] > 2 * mean2[2]);
    // Fig. 4: Eq. 3's pr_fp is highest in the middle, where the false
    // positives are: above the true negatives before them (8-execution
    // samples: FP/TN = 1.8, sd 0.21) and the true positives after them
    // (FP/TP = 3.7, sd 0.48).
    BOOST_TEST(mean3[1] > mean3[0]);
    BOOST_TEST(mean3[1] > 2 * mean3[2]);
  }
}

BOOST_AUTO_TEST_CASE(the_papers_causality_spread_lies_between_a_waiting_and_a_non_waiting_queue) {
  // bloom-model: the precision gap of Tables 1-5 follows alpha, and alpha
  // follows how long messages wait in the local queues, which section 5
  // leaves open. At n = 100 (Table 1) the paper's implied alpha (0.269) is
  // above the model's (one oldest message per receive step: 0.224) and
  // below the variants whose receives never take a stale message first
  // (newest first: 0.33, drain the queue: 0.36). 10 executions each (the
  // 10-execution mean varies by ~0.003 over seeds).
  const paper::metrics& row = paper::table1[0].bloom; // n = 100
  const double paper_alpha = row.precision * row.fpr
                             / (1.0 - row.precision + row.precision * row.fpr);
  auto alpha_of = [](bool lifo, bool drain) {
    std::vector<slice_metrics> runs;
    for (unsigned r = 0; r < 10; ++r) {
      complete_graph_params p;
      p.n = 100;
      p.clocks.push_back({10, 2});
      p.lifo = lifo;
      p.drain_queue = drain;
      p.seed = derive_seed(experiment_seed(), 0xa1fa, r);
      runs.push_back(value_of(complete_graph_run(p, 1000, 100)).per_clock[0]);
    }
    return mean_of(runs).alpha;
  };
  const double fifo = alpha_of(false, false);
  const double lifo = alpha_of(true, false);
  const double drain = alpha_of(false, true);
  BOOST_TEST_MESSAGE("stat model alpha fifo " << fifo << " lifo " << lifo
                     << " drain " << drain << " paper " << paper_alpha);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(paper_alpha == 0.269, boost::test_tools::tolerance(0.01));
    BOOST_TEST(fifo < paper_alpha - 0.02);
    BOOST_TEST(lifo > paper_alpha + 0.03);
    BOOST_TEST(drain > paper_alpha + 0.03);
  }
}

BOOST_AUTO_TEST_CASE(rank_correlation_is_spearmans_rho_with_mean_ranks_for_ties) {
  BOOST_TEST(rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}) == 1.0);
  BOOST_TEST(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}) == -1.0);
  // Ranks (1, 2, 3) and (1.5, 1.5, 3): rho = 1.5 / sqrt(2 * 1.5).
  BOOST_TEST(rank_correlation({1, 2, 3}, {5, 5, 7})
                 == 1.5 / std::sqrt(3.0),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(rank_correlation({1, 1, 1}, {1, 2, 3})));
}

BOOST_AUTO_TEST_CASE(precision_rises_with_the_causality_spread) {
  // Fig. 5 (section 7.2, the causality spread hypothesis) on 7
  // configurations from alpha ~0.01 (pr_i = 0.9) to ~0.5 (the star).
  // bloom-figure5 shows precision ranked exactly like alpha over 20
  // configurations; accuracy and fpr follow alpha only where alpha >= 0.1.
  std::vector<double> alpha, precision;
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (std::uint32_t n : {50u, 100u})
      for (double pr : {0.0, 0.5, 0.9}) {
        const slice_metrics m = complete_graph(n, pr, {{n / 10, 2}}, 4).front();
        alpha.push_back(m.alpha);
        precision.push_back(m.precision);
      }
    star_params p;
    p.clients = 30;
    p.clocks = {{3, 2}};
    p.seed = experiment_seed();
    const slice_metrics star = value_of(star_run(p, 100)).per_clock[0];
    alpha.push_back(star.alpha);
    precision.push_back(star.precision);
    const double rho = rank_correlation(alpha, precision);
    BOOST_TEST_MESSAGE("stat fig5 rho " << rho);
    BOOST_TEST(rho >= 0.9);
  }
}

BOOST_AUTO_TEST_SUITE_END()
