// The FBF paper's qualitative results (seed 001, section VI) on small
// parameters: what docs/EXPERIMENTS.md reports, as checks that fail when fbf/
// or the experiment code changes the outcome.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/experiments/fbf_sim.hpp"
#include "bench/experiments/rng.hpp"
#include "tests/experiments/experiments_test_support.hpp"

using namespace tally;
using namespace tally::experiments;
using namespace std::chrono_literals;
using tally::test::experiment_seed;
using tally::test::value_of;

namespace {

// The paper's geometry (Sec. VI-A).
constexpr std::uint64_t m = 6250;
constexpr unsigned k = 5;

// `count` ids spread over `periods` refresh periods of 5 s, read just before
// the next refresh (the fbf-membership scenario), on `reps` fresh FBFs.
fpp_point spread(std::uint64_t count, unsigned periods, check_set checks,
                 std::uint64_t probes = 50'000, unsigned reps = 1) {
  workload w;
  w.arrivals = even_arrivals(count, periods * 5.0);
  w.readings = {{periods * 5.0 - 0.001, static_cast<double>(count)}};
  replay_params p;
  p.fbf = paper_fbf(m, k, 1, 5s);
  p.probes = probes;
  p.repetitions = reps;
  p.checks = checks;
  p.seed = derive_seed(experiment_seed(), count, periods);
  return value_of(replay(w, p)).front();
}

// A steady load of `rate` ops/s for `seconds`, read at the end, averaged over
// four refresh phases.
fpp_point steady(const fbf_config& cfg, double rate, double seconds,
                 check_set checks, std::uint64_t probes = 50'000) {
  workload w;
  w.arrivals = even_arrivals(static_cast<std::uint64_t>(rate * seconds), seconds);
  w.readings = {{seconds - 0.001, rate}};
  replay_params p;
  p.fbf = cfg;
  p.probes = probes;
  p.repetitions = 4;
  p.random_phase = true;
  p.checks = checks;
  p.seed = experiment_seed();
  return value_of(replay(w, p)).front();
}

std::string loads_text(const std::vector<std::uint64_t>& loads) {
  std::string out;
  for (std::uint64_t l : loads)
    out += std::to_string(l) + " ";
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiments)

BOOST_AUTO_TEST_CASE(optimized_check_fpp_is_far_below_simple_check_fpp) {
  // Fig. 8: with one refresh in the middle of the inserts, the simple check's
  // extra present filter holds twice the ids of any filter the optimized
  // check tests alone; the paper reports 90% lower at 300 elements.
  TALLY_EXPERIMENT_SEED_CONTEXT {
    const fpp_point p = spread(600, 2, {true, true, false}, 50'000, 4);
    BOOST_TEST_MESSAGE("stat fig8 A_ratio " << p.optimized.bitwise / p.simple.bitwise
                       << " hits " << p.optimized.hits << " " << p.simple.hits);
    BOOST_TEST(p.optimized.measured() < 0.5 * p.simple.measured());
    BOOST_TEST(p.optimized.bitwise < 0.2 * p.simple.bitwise);
    // In the steady state of a basic FBF the gain is only about half.
    const fpp_point q = spread(600, 3, {true, true, false}, 50'000, 4);
    BOOST_TEST_MESSAGE("stat fig8 B_ratio " << q.optimized.bitwise / q.simple.bitwise);
    BOOST_TEST(q.optimized.bitwise > 0.3 * q.simple.bitwise);
  }
}

BOOST_AUTO_TEST_CASE(equation3_tracks_the_measured_fpp_of_a_basic_fbf) {
  // Figs. 9 and 10: Equation 3 against the filters' bits (noise-free) and
  // against sampling, each averaged over 8 FBFs (8 x 100k probes).
  TALLY_EXPERIMENT_SEED_CONTEXT {
    for (std::uint64_t count : {300u, 600u, 1000u}) {
      const fpp_point p = spread(count, 2, {true, false, false}, 100'000, 8);
      BOOST_TEST_MESSAGE("stat eq3 count " << count << " model/bitwise "
                         << p.model / p.optimized.bitwise << " model/measured "
                         << p.model / p.optimized.measured() << " hits "
                         << p.optimized.hits);
      BOOST_TEST_CONTEXT("elements " << count) {
        BOOST_TEST(p.model == p.optimized.bitwise, boost::test_tools::tolerance(0.1));
        // Sampled: the hits are Poisson around probes x FPP. Eq. 3 may be
        // 10% off the filters' exact FPP (above) and the hits 5 sd off
        // their mean. (A fixed 30% on points with >= 50 hits failed seed
        // 13101074637992853020: at 300 ids ~30 hits are expected, so 50
        // hits is itself a 3.7 sd high sample.)
        const double expected_hits =
            p.model * static_cast<double>(p.optimized.probes);
        BOOST_TEST(std::abs(static_cast<double>(p.optimized.hits) - expected_hits)
                   <= 0.1 * expected_hits + 5 * std::sqrt(expected_hits) + 1);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bitwise_fpp_agrees_with_sampling) {
  const fpp_point p = steady(paper_fbf(m, k, 1, 5s), 100, 30, {true, true, false},
                             200'000);
  for (const fpp_reading* r : {&p.optimized, &p.simple}) {
    TALLY_EXPERIMENT_SEED_CONTEXT {
      BOOST_TEST_REQUIRE(r->hits > 100u);
      // Within 4 standard deviations of the binomial count (two checks per
      // seed: 1 in 8000 seeds fails by chance).
      const double expected = r->bitwise * static_cast<double>(r->probes);
      BOOST_TEST_MESSAGE("stat bitwise z " << (static_cast<double>(r->hits) - expected)
                                                  / std::sqrt(expected));
      BOOST_TEST(std::abs(static_cast<double>(r->hits) - expected)
                 < 4 * std::sqrt(expected));
    }
  }
}

BOOST_AUTO_TEST_CASE(shorter_refresh_period_lowers_fpp_by_orders_of_magnitude) {
  // Fig. 11: at a steady 100 ops/s (m = 25k), t = 5 s against t = 1 s.
  const fpp_point slow = steady(paper_fbf(25'000, k, 1, 5s), 100, 30,
                                {true, false, false}, 1000);
  const fpp_point fast = steady(paper_fbf(25'000, k, 1, 1s), 100, 30,
                                {true, false, false}, 1000);
  BOOST_TEST_MESSAGE("stat fig11 bitwise_ratio " << slow.optimized.bitwise / fast.optimized.bitwise
                     << " model_ratio " << slow.model / fast.model);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(slow.optimized.bitwise > 300 * fast.optimized.bitwise);
    BOOST_TEST(slow.model > 300 * fast.model);
  }
}

BOOST_AUTO_TEST_CASE(more_filters_lower_fpp_on_a_rising_load_but_not_at_steady_state) {
  // Fig. 12's reading: on a linear ramp (3000 ids, 0 -> 200 ops/s) the
  // 3-filter FBF has several times the FPP of the 24-filter one at 100 ops/s;
  // at a steady 100 ops/s, once every filter has cycled, it is the other way
  // round.
  ramp r;
  r.kind = ramp::shape::linear;
  r.r0 = 0;
  r.r1 = 200;
  r.total = 3000;
  workload w;
  w.arrivals = r.arrivals();
  w.readings = {{r.time_at_rate(100), 100}};
  replay_params p;
  // 16 refresh phases: the ratio's standard deviation over seeds was 0.29
  // (mean 3.4) with 4, and is ~0.14 with 16.
  p.probes = 100'000;
  p.repetitions = 16;
  p.random_phase = true;
  p.seed = experiment_seed();
  p.fbf = paper_fbf(m, k, 1, 5s);
  const fpp_point three = value_of(replay(w, p)).front();
  p.fbf = paper_fbf(m, k, 22, 5s);
  const fpp_point many = value_of(replay(w, p)).front();
  BOOST_TEST_MESSAGE("stat fig12 ramp_ratio " << three.optimized.measured() / many.optimized.measured());
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(three.optimized.measured() > 2 * many.optimized.measured());
  }

  const fpp_point three_steady =
      steady(paper_fbf(m, k, 1, 5s), 100, 130, {true, false, false});
  const fpp_point many_steady =
      steady(paper_fbf(m, k, 22, 5s), 100, 130, {true, false, false});
  BOOST_TEST_MESSAGE("stat fig12 steady_ratio " << three_steady.optimized.measured() / many_steady.optimized.measured());
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(three_steady.optimized.measured() < many_steady.optimized.measured());
  }
}

BOOST_AUTO_TEST_CASE(equation3_underestimates_the_fpp_of_an_fbf_with_several_past_filters) {
  // Adjacent filters share one refresh period of ids, so a pair check fails
  // like one filter of that period, not like two independent filters.
  const fpp_point p = steady(paper_fbf(m, k, 10, 5s), 100, 80,
                             {true, false, false}, 100'000);
  BOOST_TEST_MESSAGE("stat eq3under bitwise " << p.model / p.optimized.bitwise
                     << " measured " << p.model / p.optimized.measured());
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(p.model < 0.8 * p.optimized.bitwise);
    BOOST_TEST(p.model < 0.8 * p.optimized.measured());
  }
}

BOOST_AUTO_TEST_CASE(printed_algorithm_2_forgets_an_id_the_optimized_check_keeps) {
  // N = 2: an id inserted while filter A was future and B present; after
  // three refreshes B is dropped and A is the oldest filter, which the
  // printed Algorithm 2 never checks alone for N >= 2.
  auto f = value_of(forgetful_bloom_filter::make(paper_fbf(m, k, 2, 5s)));
  const std::uint64_t id = inserted_id(42, 0);
  BOOST_REQUIRE(f.advance(at_seconds(1)).has_value());
  BOOST_TEST((f.insert(id) == insert_outcome::inserted));
  BOOST_REQUIRE(f.advance(at_seconds(15)).has_value()); // 3 refreshes
  BOOST_TEST(f.filter(f.filter_count() - 1).contains(id));
  BOOST_TEST(f.contains(id));
  BOOST_TEST(!prototype_contains(f, id));
}

BOOST_AUTO_TEST_CASE(adaptive_fbf_scales_up_near_the_target_and_down_when_load_subsides) {
  adaptive_params p;
  p.fbf = paper_fbf(m, k, 1, 11s);
  p.fbf.adaptive = true;
  p.fbf.target_fpp = 0.01;
  p.fbf.max_refresh_period = 11s;
  p.profile = {{0, 10}, {16, 60}, {19, 60}, {24, 10}, {60, 10}, {70, 0}};
  p.duration = 140;
  p.sample_every = 1;
  p.probes = 1000;
  p.seed = experiment_seed();
  const auto pts = value_of(run_adaptive(p));
  std::size_t most = 0;
  double shortest = 1e9;
  for (const adaptive_point& pt : pts) {
    most = std::max(most, pt.filters);
    shortest = std::min(shortest, pt.period);
    if (pt.time < 15) // below 90% of the target: no scale-up yet
      BOOST_TEST(pt.filters == 3u);
  }
  BOOST_TEST(most >= 6u);       // multiplicative increase of the filters
  BOOST_TEST(shortest <= 10.0); // additive decrease of t
  // After the load stops the FPP falls to 0 and Algorithm 3's second branch
  // removes filters again and lengthens t back to its bound.
  BOOST_TEST(pts.back().filters < most);
  BOOST_TEST(pts.back().period == 11.0);
}

BOOST_AUTO_TEST_CASE(printed_algorithm_2_is_not_needed_to_stay_under_the_target) {
  // With Eq. 3 and the paper's controller, only the printed Algorithm 2 (no
  // lone check of the oldest filter for N >= 2, which forgets ids early:
  // printed_algorithm_2_forgets_an_id_the_optimized_check_keeps) kept this
  // run under the target. With the shared-period model and the predictive
  // controller (docs/FBF.md, "Adaptation") Tally's check stays under it
  // with t <= 11 s too; the printed check reads no more.
  adaptive_params p;
  p.fbf = paper_fbf(m, k, 1, 11s);
  p.fbf.adaptive = true;
  p.fbf.target_fpp = 0.01;
  p.fbf.max_refresh_period = 11s;
  p.profile = {{0, 10}, {16, 60}, {19, 60}, {24, 10}, {28, 10}, {40, 60}, {60, 60}};
  p.duration = 60;
  p.sample_every = 1;
  p.probes = 20'000;
  p.seed = experiment_seed();
  const auto pts = value_of(run_adaptive(p));
  double worst_printed = 0;
  double worst_tally = 0;
  std::uint64_t forgotten = 0;
  for (const adaptive_point& pt : pts) {
    worst_printed = std::max(worst_printed, pt.prototype.measured());
    worst_tally = std::max(worst_tally, pt.optimized.measured());
    forgotten += pt.prototype_forgotten;
  }
  BOOST_TEST_MESSAGE("printed Algorithm 2 " << worst_printed << ", Tally "
                     << worst_tally << ", forgotten " << forgotten);
  BOOST_TEST(worst_printed <= worst_tally);
  BOOST_TEST(worst_tally < p.fbf.target_fpp);
}

// Fig. 13's claim, with Tally's check and controller (docs/FBF.md,
// "Adaptation"): on the paper's load the FPP never reaches the target.
BOOST_AUTO_TEST_CASE(adaptive_fbf_stays_under_its_target) {
  adaptive_params p;
  p.fbf = paper_fbf(m, k, 1, 11s);
  p.fbf.adaptive = true;
  p.fbf.target_fpp = 0.01;
  p.profile = {{0, 10}, {16, 60}, {19, 60}, {24, 10}, {28, 10}, {40, 60}, {60, 60}};
  p.duration = 60;
  p.sample_every = 1;
  p.probes = 20'000;
  p.seed = experiment_seed();
  double worst = 0;
  for (const adaptive_point& pt : value_of(run_adaptive(p))) {
    BOOST_TEST(pt.optimized.measured() < p.fbf.target_fpp, "at " << pt.time << " s");
    BOOST_TEST_MESSAGE(pt.time << " s: " << pt.rate << " ops/s, measured "
                       << pt.optimized.measured() << ", model " << pt.corrected
                       << ", predicted " << pt.predicted << ", filters "
                       << pt.filters << ", t " << pt.period << ", refreshes "
                       << pt.refreshes << ", loads " << loads_text(pt.loads));
    worst = std::max(worst, pt.optimized.measured());
  }
  BOOST_TEST_MESSAGE("highest measured FPP / target: " << worst / p.fbf.target_fpp);
}

// The same run with Algorithm 3 exactly as printed (curFPP = Eq. 3, t -> t+1
// every quiet second, a shorter t only from the next period, no prediction):
// docs/EXPERIMENTS.md's claim that the paper's version fails, as a check.
// Deterministic but for the probes: the controller reads counts, not bits.
BOOST_AUTO_TEST_CASE(algorithm_3_as_printed_lets_the_fpp_exceed_its_target) {
  adaptive_params p;
  p.fbf = paper_fbf(m, k, 1, 11s);
  p.fbf.adaptive = true;
  p.fbf.target_fpp = 0.01;
  p.fbf.adaptation = fbf_adaptation::paper;
  p.profile = {{0, 10}, {16, 60}, {19, 60}, {24, 10}, {28, 10}, {40, 60}, {60, 60}};
  p.duration = 60;
  p.sample_every = 1;
  p.probes = 20'000;
  p.seed = experiment_seed();
  double worst = 0, above = 0, t_max = 0;
  for (const adaptive_point& pt : value_of(run_adaptive(p))) {
    worst = std::max(worst, pt.optimized.measured());
    above += pt.optimized.measured() > p.fbf.target_fpp ? 1 : 0;
    t_max = std::max(t_max, pt.period);
  }
  BOOST_TEST_MESSAGE("stat printed_alg3 worst " << worst / p.fbf.target_fpp
                     << " above " << above << " t_max " << t_max);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    // tally-bench experiment fbf-adaptive --adapt paper: peak 10.6x target,
    // above it for 35 of 60 s, t drifts up to 27 s while the load rises.
    BOOST_TEST(worst > 5 * p.fbf.target_fpp);
    BOOST_TEST(above >= 25);
    BOOST_TEST(t_max >= 20);
  }
}

BOOST_AUTO_TEST_CASE(fbf_counter_applies_no_retry_inside_its_window) {
  // Fig. 14: every 5th increment retried once with its op id, 0.5-4 s later,
  // well inside the basic FBF's window of 2t to 3t = 10-15 s. The FBF has no
  // false negatives, so no retry is applied; its only error is a distinct
  // increment taken for a retry (a false positive). At ~60 ids per filter
  // the FPP is ~3e-6 per insert, ~0.003 expected over 1200 inserts, so more
  // than 2 happen with probability ~5e-9.
  counter_params p;
  p.operations = 1000;
  p.rate = 10;
  p.retry_every = 5;
  p.fbf = paper_fbf(m, k, 1, 5s);
  p.fbf.retry_timeout = 5s;
  p.seed = experiment_seed();
  const counter_result r = value_of(run_counter(p));
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(r.applied_retries == 0u);
    BOOST_TEST(r.dismissed_distinct <= 2u);
    BOOST_TEST(r.samples.back().with_fbf >= r.samples.back().expected - 2);
  }
}

BOOST_AUTO_TEST_CASE(counter_over_counts_when_retries_outlive_the_window) {
  // The FBF is exact only while its window covers the retry delay. A basic
  // FBF (N = 1, t = 5 s) keeps an id inserted in period [T, T + t) until
  // T + 3t (Algorithm 1 puts it in future and present; the future is dropped
  // two refreshes after the present): between 2t = 10 s and 3t = 15 s after
  // the insert. Retries up to 9.9 s late are all caught; retries 15.1-18 s
  // late are all applied again, but for one that a false positive (FPP
  // ~3e-6 per insert) happens to dismiss.
  counter_params p;
  p.operations = 500;
  p.rate = 10;
  p.retry_every = 10; // 50 retries
  p.fbf = paper_fbf(m, k, 1, 5s);
  p.seed = experiment_seed();
  p.retry_delay_min = 0.5;
  p.retry_delay_max = 9.9;
  const counter_result inside = value_of(run_counter(p));
  p.retry_delay_min = 15.1;
  p.retry_delay_max = 18;
  const counter_result outside = value_of(run_counter(p));
  TALLY_EXPERIMENT_SEED_CONTEXT {
    BOOST_TEST(inside.applied_retries == 0u);
    BOOST_TEST(outside.applied_retries >= 49u);
    BOOST_TEST(outside.samples.back().with_fbf
               >= outside.samples.back().expected + 47);
  }
}

BOOST_AUTO_TEST_CASE(ramps_deliver_their_total_at_the_stated_rates) {
  for (auto shape : {ramp::shape::linear, ramp::shape::exponential}) {
    ramp r;
    r.kind = shape;
    r.r0 = shape == ramp::shape::linear ? 0 : 1;
    r.r1 = 200;
    r.total = 3000;
    const auto a = r.arrivals();
    BOOST_TEST(a.size() == 3000u);
    BOOST_TEST(a.back() == r.duration(), boost::test_tools::tolerance(1e-9));
    BOOST_TEST(r.rate_at(r.time_at_rate(100)) == 100.0,
               boost::test_tools::tolerance(1e-9));
    // Arrivals in the second around the 100 ops/s point: about 100.
    const double t100 = r.time_at_rate(100);
    std::size_t in_window = 0;
    for (double t : a)
      in_window += (t > t100 - 0.5 && t <= t100 + 0.5) ? 1 : 0;
    BOOST_TEST(in_window >= 98u);
    BOOST_TEST(in_window <= 102u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
