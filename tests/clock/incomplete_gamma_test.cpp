#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "clock/incomplete_gamma.hpp"

using namespace tally;

namespace {

// The accuracy the header promises.
constexpr double rel_tol = 1e-10;

bool close(double got, double want, double tol = rel_tol) {
  if (want == 0.0)
    return got == 0.0;
  return std::fabs(got - want) <= tol * std::fabs(want);
}

// Q(a, x) for integer a by the finite Poisson sum e^-x Σ_{j<a} x^j / j!,
// in long double. Terms are formed in log space so large x does not overflow.
long double poisson_cdf(int a, double x) {
  long double sum = 0;
  for (int j = 0; j < a; ++j)
    sum += std::exp(static_cast<long double>(j)
                      * std::log(static_cast<long double>(x))
                    - static_cast<long double>(x)
                    - std::lgamma(static_cast<long double>(j) + 1));
  return sum;
}

// ln Σ_{j>=a} e^-x x^j / j! = ln P(a, x) for integer a, summed in log space
// until the terms stop mattering: a reference for tiny P.
double log_poisson_upper_tail(int a, double x) {
  auto log_term = [&](int j) {
    return j * std::log(x) - x - std::lgamma(j + 1.0);
  };
  double top = log_term(a); // terms decrease for j >= a > x
  double sum = 0.0;
  for (int j = a; j < a + 2000; ++j)
    sum += std::exp(log_term(j) - top);
  return top + std::log(sum);
}

} // namespace

// The suite lives in a namespace because BOOST_AUTO_TEST_SUITE(clock) opens
// `namespace clock`, which at global scope collides with ::clock() of <ctime>.
namespace clock_tests {
BOOST_AUTO_TEST_SUITE(clock)

BOOST_AUTO_TEST_CASE(gamma_p_of_one_is_exponential_cdf) {
  for (double x : {1e-8, 0.01, 0.5, 1.0, 1.99, 2.0, 2.01, 5.0, 30.0, 50.0, 200.0}) {
    BOOST_TEST_CONTEXT("x=" << x) {
      BOOST_TEST(close(gamma_p(1.0, x), -std::expm1(-x)));
      BOOST_TEST(close(gamma_q(1.0, x), std::exp(-x)));
      BOOST_TEST(close(log_gamma_p(1.0, x), std::log1p(-std::exp(-x))));
      BOOST_TEST(close(log_gamma_q(1.0, x), -x));
    }
  }
}

BOOST_AUTO_TEST_CASE(gamma_q_matches_finite_poisson_sum_for_integer_a) {
  // Both sides of the series/continued-fraction switch at x = a + 1.
  for (int a : {1, 2, 3, 7, 20, 50, 120}) {
    for (double x : {0.1, 0.5 * a, a - 0.5, a + 0.99, a + 1.0, a + 1.5,
                     1.5 * a + 2, 3.0 * a + 10}) {
      BOOST_TEST_CONTEXT("a=" << a << " x=" << x) {
        double q = static_cast<double>(poisson_cdf(a, x));
        BOOST_TEST(close(gamma_q(a, x), q));
        BOOST_TEST(close(gamma_p(a, x) + gamma_q(a, x), 1.0, 1e-14));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gamma_p_matches_poisson_upper_tail_for_integer_a) {
  // P(a, x) = Pr(Poisson(x) >= a); for x well below a it is tiny, where
  // computing it as 1 - Q would lose every digit.
  for (int a : {5, 30, 200, 1000}) {
    for (double x : {0.5, 0.25 * a, 0.7 * a}) {
      BOOST_TEST_CONTEXT("a=" << a << " x=" << x) {
        double want = log_poisson_upper_tail(a, x);
        BOOST_TEST(close(log_gamma_p(a, x), want, 1e-9));
        BOOST_TEST(close(gamma_p(a, x), std::exp(want), 1e-8));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gamma_q_half_is_complementary_error_function) {
  // Q(1/2, x) = erfc(sqrt(x)): a non-integer a.
  for (double x : {0.01, 0.3, 1.0, 1.6, 4.0, 25.0}) {
    BOOST_TEST_CONTEXT("x=" << x) {
      BOOST_TEST(close(gamma_q(0.5, x), std::erfc(std::sqrt(x)), 1e-9));
      BOOST_TEST(close(gamma_p(0.5, x), std::erf(std::sqrt(x)), 1e-9));
    }
  }
}

BOOST_AUTO_TEST_CASE(log_gamma_stays_finite_where_values_underflow) {
  // Q(1, 800) = e^-800 underflows a double; its log is exactly -800.
  BOOST_TEST(gamma_q(1.0, 800.0) == 0.0);
  BOOST_TEST(close(log_gamma_q(1.0, 800.0), -800.0));
  // P(1000, 1) ~ e^-1 / 1000!: log ~ -5913.
  double log_p = log_gamma_p(1000.0, 1.0);
  BOOST_TEST(std::isfinite(log_p));
  BOOST_TEST(close(log_p, log_poisson_upper_tail(1000, 1.0), 1e-10));
}

BOOST_AUTO_TEST_CASE(gamma_matches_high_precision_reference_values) {
  // Reference values from mpmath (40 digits), rounded to 20. Large a close to
  // x is where forming a·ln x - x - lnΓ(a) directly loses digits.
  struct point {
    double a, x, p, q;
  };
  for (auto [a, x, p, q] : std::vector<point>{
         {1e6, 1e6, 5.0013298076087259124e-1, 4.9986701923912740876e-1},
         {1e6, 999000, 1.5865521357430365246e-1, 8.4134478642569634754e-1},
         {1e6, 1001500, 9.3313889576410223751e-1, 6.6861104235897762491e-2},
         {1000, 950, 5.5054686230738034495e-2, 9.4494531376926196551e-1},
         {1000, 1100, 9.9894067674607002265e-1, 1.0593232539299773489e-3},
         {250.5, 240, 2.572713479978950583e-1, 7.427286520021049417e-1},
         {30000, 31000, 9.9999999443328601933e-1, 5.5667139806665038222e-9}}) {
    BOOST_TEST_CONTEXT("a=" << a << " x=" << x) {
      BOOST_TEST(close(gamma_p(a, x), p));
      BOOST_TEST(close(gamma_q(a, x), q));
      // ln of a value near 1 from its complement, which keeps the digits.
      BOOST_TEST(close(log_gamma_p(a, x), p > 0.5 ? std::log1p(-q) : std::log(p)));
      BOOST_TEST(close(log_gamma_q(a, x), q > 0.5 ? std::log1p(-p) : std::log(q)));
    }
  }
}

BOOST_AUTO_TEST_CASE(gamma_handles_large_arguments_near_the_mean) {
  // The slowest case: a ~ x ~ 1e6, where P ~ 1/2 (Poisson median ~ mean).
  double p = gamma_p(1e6, 1e6);
  BOOST_TEST(p > 0.49);
  BOOST_TEST(p < 0.51);
  BOOST_TEST(close(gamma_p(1e6, 1e6) + gamma_q(1e6, 1e6), 1.0, 1e-9));
  // P(a, x) grows with x.
  BOOST_TEST(gamma_p(1e6, 1e6 + 1000) > gamma_p(1e6, 1e6));
  BOOST_TEST(gamma_p(1e6, 1e6 + 5000) > 0.9999);
}

BOOST_AUTO_TEST_CASE(gamma_edges_are_exact) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  BOOST_TEST(gamma_p(3.0, 0.0) == 0.0);
  BOOST_TEST(gamma_q(3.0, 0.0) == 1.0);
  BOOST_TEST(log_gamma_p(3.0, 0.0) == -inf);
  BOOST_TEST(log_gamma_q(3.0, 0.0) == 0.0);
  BOOST_TEST(gamma_p(3.0, inf) == 1.0);
  BOOST_TEST(log_gamma_q(3.0, inf) == -inf);
}

BOOST_AUTO_TEST_CASE(gamma_outside_domain_is_nan) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto [a, x] : std::vector<std::pair<double, double>>{
         {0.0, 1.0}, {-1.0, 1.0}, {1.0, -1.0}, {nan, 1.0}, {1.0, nan}}) {
    BOOST_TEST(std::isnan(gamma_p(a, x)));
    BOOST_TEST(std::isnan(gamma_q(a, x)));
    BOOST_TEST(std::isnan(log_gamma_p(a, x)));
    BOOST_TEST(std::isnan(log_gamma_q(a, x)));
  }
}

// log_gamma is std::lgamma's value without the write to the global signgam
// (the race ThreadSanitizer found; that part only TSan can check).
BOOST_AUTO_TEST_CASE(log_gamma_is_lgamma_without_its_global_sign) {
  for (double x : {0.5, 1.0, 2.0, 3.5, 10.0, 20.0, 171.5, 1e6, -0.5, -2.5})
    BOOST_TEST(log_gamma(x) == std::lgamma(x));
  BOOST_TEST(close(log_gamma(5.0), std::log(24.0), 1e-15));
  BOOST_TEST(std::isinf(log_gamma(0.0)));
  BOOST_TEST(std::isnan(log_gamma(std::numeric_limits<double>::quiet_NaN())));
}

BOOST_AUTO_TEST_SUITE_END()
} // namespace clock_tests
