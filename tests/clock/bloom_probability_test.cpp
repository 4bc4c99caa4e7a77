#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "clock/bloom_clock.hpp"
#include "clock/bloom_probability.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

using cell = bloom_clock::cell;

bloom_clock clock_of(std::uint32_t k, std::vector<cell> cells) {
  auto c = bloom_clock::from_cells(k, std::move(cells));
  BOOST_REQUIRE(c.has_value());
  return *c;
}

bloom_clock ticked(std::uint32_t m, std::uint32_t k, std::uint64_t process,
                   std::uint64_t events) {
  auto c = bloom_clock::make(m, k);
  BOOST_REQUIRE(c.has_value());
  for (std::uint64_t seq = 0; seq < events; ++seq)
    c->tick(bloom_event(process, seq));
  return *c;
}

double value(const expected<double>& e) {
  BOOST_REQUIRE(e.has_value());
  return *e;
}

double binomial_pmf(std::uint64_t l, std::uint64_t q, double p) {
  return std::exp(std::lgamma(q + 1.0) - std::lgamma(l + 1.0)
                  - std::lgamma(static_cast<double>(q - l) + 1.0)
                  + static_cast<double>(l) * std::log(p)
                  + (q == l ? 0.0 : static_cast<double>(q - l) * std::log1p(-p)));
}

// Equation 7 written out literally: prod_i (1 - Σ_{l<B_y[i]} b(l, q, 1/m)).
double equation_7_literal(const bloom_clock& y, const bloom_clock& z) {
  const std::uint64_t q = z.sum();
  const double p = 1.0 / z.m();
  double pr = 1.0;
  for (cell c : y.cells()) {
    double cdf = 0.0;
    for (std::uint64_t l = 0; l < c && l <= q; ++l)
      cdf += binomial_pmf(l, q, p);
    pr *= 1.0 - cdf;
  }
  return pr;
}

} // namespace

// The suite lives in a namespace because BOOST_AUTO_TEST_SUITE(clock) opens
// `namespace clock`, which at global scope collides with ::clock() of <ctime>.
namespace clock_tests {
BOOST_AUTO_TEST_SUITE(clock)

BOOST_AUTO_TEST_CASE(pr_positive_exact_matches_equation_7_written_out) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      auto m = static_cast<std::uint32_t>(rng.uniform(1, 12));
      std::vector<cell> ys(m);
      std::vector<cell> zs(m);
      for (std::uint32_t i = 0; i < m; ++i) {
        ys[i] = static_cast<cell>(rng.uniform(0, 6));
        zs[i] = static_cast<cell>(rng.uniform(0, 8));
      }
      auto y = clock_of(2, ys);
      auto z = clock_of(2, zs);
      double want = equation_7_literal(y, z);
      double got = value(pr_positive_exact(y, z));
      BOOST_TEST(std::fabs(got - want) <= 1e-12 + 1e-9 * want);
    }
  }
}

BOOST_AUTO_TEST_CASE(pr_positive_exact_with_one_cell_is_a_step) {
  // m = 1: every trial hits the one cell, so B_z[0] = B_z^sum >= c always
  // when c <= B_z^sum, and never otherwise.
  BOOST_TEST(value(pr_positive_exact(clock_of(1, {3}), clock_of(1, {3}))) == 1.0);
  BOOST_TEST(value(pr_positive_exact(clock_of(1, {4}), clock_of(1, {3}))) == 0.0);
}

BOOST_AUTO_TEST_CASE(pr_positive_poisson_approaches_exact_for_large_sum) {
  // Binomial(q, 1/m) -> Poisson(q/m) as 1/m -> 0 (section 4). With m = 1000
  // each factor's error is O(1/m); across the 1000 factors of Equation 7
  // the log pr_p must still agree within a few percent.
  const std::uint32_t m = 1000;
  auto z = ticked(m, 2, 1, 50'000); // B_z^sum = 100000, λ = 100
  auto y = ticked(m, 2, 1, 35'000); // a causal predecessor of z
  double exact = value(log_pr_positive_exact(y, z));
  double poisson = value(log_pr_positive(y, z));
  BOOST_TEST_MESSAGE("log pr_p exact=" << exact << " poisson=" << poisson);
  BOOST_TEST(std::isfinite(exact));
  BOOST_TEST(std::fabs(poisson - exact) <= 0.03 * std::fabs(exact));
  // A single cell: the factors themselves agree closely.
  auto y1 = clock_of(2, std::vector<cell>(m, 0));
  auto cells = y1.cells();
  cells[0] = 90;
  y1 = clock_of(2, cells);
  BOOST_TEST(std::fabs(value(pr_positive(y1, z)) - value(pr_positive_exact(y1, z)))
             < 2e-3);
}

BOOST_AUTO_TEST_CASE(pr_positive_is_a_probability) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 300; ++round) {
      auto m = static_cast<std::uint32_t>(rng.uniform(1, 64));
      std::vector<cell> ys(m);
      std::vector<cell> zs(m);
      for (std::uint32_t i = 0; i < m; ++i) {
        ys[i] = static_cast<cell>(rng.uniform(0, 30));
        zs[i] = static_cast<cell>(rng.uniform(0, 30));
      }
      auto y = clock_of(3, ys);
      auto z = clock_of(3, zs);
      for (double pr : {value(pr_positive(y, z)), value(pr_positive_exact(y, z))}) {
        BOOST_TEST(pr >= 0.0);
        BOOST_TEST(pr <= 1.0);
      }
      BOOST_TEST(value(log_pr_positive(y, z)) <= 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(pr_positive_is_one_when_y_is_all_zeros) {
  auto y = clock_of(2, std::vector<cell>(16, 0));
  for (const auto& z : {clock_of(2, std::vector<cell>(16, 0)),
                        ticked(16, 2, 3, 10), ticked(16, 2, 3, 1000)}) {
    BOOST_TEST(value(pr_positive(y, z)) == 1.0);
    BOOST_TEST(value(pr_positive_exact(y, z)) == 1.0);
  }
}

BOOST_AUTO_TEST_CASE(pr_positive_is_zero_when_z_is_empty_and_y_is_not) {
  auto y = ticked(16, 2, 1, 1);
  auto z = clock_of(2, std::vector<cell>(16, 0));
  BOOST_TEST(value(pr_positive(y, z)) == 0.0);
  BOOST_TEST(value(pr_positive_exact(y, z)) == 0.0);
  BOOST_TEST(value(log_pr_positive(y, z))
             == -std::numeric_limits<double>::infinity());
}

BOOST_AUTO_TEST_CASE(pr_positive_does_not_decrease_as_z_ticks) {
  // Section 4, trend 1: pr_p rises as z moves further into y's future.
  auto y = ticked(32, 2, 1, 40);
  auto z = y;
  double last_poisson = value(pr_positive(y, z));
  double last_exact = value(pr_positive_exact(y, z));
  bool rose = false;
  for (std::uint64_t seq = 0; seq < 400; ++seq) {
    z.tick(bloom_event(2, seq));
    double poisson = value(pr_positive(y, z));
    double exact = value(pr_positive_exact(y, z));
    BOOST_TEST(poisson >= last_poisson * (1 - 1e-12));
    BOOST_TEST(exact >= last_exact * (1 - 1e-12));
    rose |= poisson > last_poisson + 0.01;
    last_poisson = poisson;
    last_exact = exact;
  }
  BOOST_TEST(rose);
  BOOST_TEST(last_poisson > 0.99);
}

BOOST_AUTO_TEST_CASE(pr_positive_matches_hand_computed_poisson_value) {
  // m = 2, B_z^sum = 4 -> λ = 2; B_y = [1, 2]:
  //   P(1, 2) = 1 - e^-2,  P(2, 2) = 1 - 3e^-2.
  auto y = clock_of(1, {1, 2});
  auto z = clock_of(1, {1, 3});
  double e2 = std::exp(-2.0);
  BOOST_TEST(std::fabs(value(pr_positive(y, z)) - (1 - e2) * (1 - 3 * e2)) < 1e-14);
  // Exact binomial, q = 4, p = 1/2: Pr(X >= 1) = 15/16, Pr(X >= 2) = 11/16.
  BOOST_TEST(std::fabs(value(pr_positive_exact(y, z)) - 15.0 / 16 * 11.0 / 16)
             < 1e-14);
}

BOOST_AUTO_TEST_CASE(log_pr_positive_stays_finite_for_large_m) {
  // m = 1000, B_z^sum = 10^6: pr_p is far below the smallest double when y
  // sits just behind z, but its log is finite.
  auto z = ticked(1000, 2, 1, 500'000);
  auto y = ticked(1000, 2, 1, 499'000);
  double log_pr = value(log_pr_positive(y, z));
  BOOST_TEST(std::isfinite(log_pr));
  BOOST_TEST(log_pr < 0.0);
}

BOOST_AUTO_TEST_CASE(pr_positive_rejects_different_m_or_k) {
  auto y = ticked(8, 2, 1, 3);
  for (const auto& z : {ticked(9, 2, 1, 3), ticked(8, 3, 1, 3)}) {
    for (const auto& r : {pr_positive(y, z), pr_positive_exact(y, z),
                          log_pr_positive(y, z), log_pr_positive_exact(y, z)}) {
      BOOST_TEST_REQUIRE(!r.has_value());
      BOOST_TEST(r.err().code() == errc::invalid_argument);
    }
    auto o = outcomes_eq2(y, z);
    BOOST_TEST_REQUIRE(!o.has_value());
    BOOST_TEST(o.err().code() == errc::invalid_argument);
  }
}

BOOST_AUTO_TEST_CASE(outcomes_eq2_uses_exact_delta) {
  auto pos = outcomes_eq2(0.7, true);
  BOOST_TEST(std::fabs(pos.fp - 0.3) < 1e-15);
  BOOST_TEST(std::fabs(pos.tp - 0.7) < 1e-15);
  BOOST_TEST(pos.tn == 0.0);
  auto neg = outcomes_eq2(0.7, false);
  BOOST_TEST(neg.fp == 0.0);
  BOOST_TEST(neg.tp == 0.0);
  BOOST_TEST(neg.tn == 1.0);
}

BOOST_AUTO_TEST_CASE(outcomes_eq3_estimates_delta_by_pr_p) {
  auto o = outcomes_eq3(0.5);
  BOOST_TEST(o.fp == 0.25); // the maximum of (1 - pr_p)·pr_p
  BOOST_TEST(o.tp == 0.25);
  BOOST_TEST(o.tn == 0.5);
  auto o2 = outcomes_eq3(0.9);
  BOOST_TEST(std::fabs(o2.fp - 0.09) < 1e-15);
  BOOST_TEST(std::fabs(o2.tp - 0.81) < 1e-15);
  BOOST_TEST(std::fabs(o2.tn - 0.1) < 1e-15);
}

BOOST_AUTO_TEST_CASE(outcomes_from_clocks_take_delta_from_dominance) {
  auto y = ticked(16, 2, 1, 20);
  auto z = y;
  z.tick(bloom_event(2, 1)); // z dominates y
  double pr_p = value(pr_positive(y, z));
  auto pos = outcomes_eq2(y, z);
  BOOST_TEST_REQUIRE(pos.has_value());
  BOOST_TEST(pos->tp == pr_p);
  BOOST_TEST(pos->tn == 0.0);
  auto neg = outcomes_eq2(z, y); // y does not dominate z
  BOOST_TEST_REQUIRE(neg.has_value());
  BOOST_TEST(neg->tn == 1.0);
  auto est = outcomes_eq3(y, z);
  BOOST_TEST_REQUIRE(est.has_value());
  BOOST_TEST(est->tp == pr_p * pr_p);
}

BOOST_AUTO_TEST_CASE(confusion_counts_compute_equation_8) {
  confusion_counts c;
  for (int i = 0; i < 6; ++i)
    c.record(true, true); // TP
  for (int i = 0; i < 2; ++i)
    c.record(false, true); // FP
  for (int i = 0; i < 12; ++i)
    c.record(false, false); // TN
  BOOST_TEST(c.tp == 6u);
  BOOST_TEST(c.fp == 2u);
  BOOST_TEST(c.tn == 12u);
  BOOST_TEST(c.fn == 0u);
  BOOST_TEST(c.accuracy() == 18.0 / 20);
  BOOST_TEST(c.precision() == 6.0 / 8);
  BOOST_TEST(c.recall() == 1.0);
  BOOST_TEST(c.fpr() == 2.0 / 14);
  c.record(true, false); // FN
  BOOST_TEST(c.fn == 1u);
  BOOST_TEST(c.recall() == 6.0 / 7);
  BOOST_TEST(c.accuracy() == 18.0 / 21);
}

BOOST_AUTO_TEST_CASE(confusion_counts_undefined_metric_is_nan) {
  confusion_counts c;
  BOOST_TEST(std::isnan(c.accuracy()));
  c.record(false, false);
  BOOST_TEST(std::isnan(c.precision()));
  BOOST_TEST(std::isnan(c.recall()));
  BOOST_TEST(c.fpr() == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
} // namespace clock_tests
