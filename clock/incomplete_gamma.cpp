#include "clock/incomplete_gamma.hpp"

#include <math.h> // lgamma_r (glibc; not in <cmath>)

#include <cmath>
#include <limits>

namespace tally {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

// Stop adding terms once they no longer change the double result.
constexpr double epsilon = std::numeric_limits<double>::epsilon();

// Lentz's guard: a denominator that cancels to 0 is replaced by this, near
// the smallest normal double, as in Numerical Recipes' FPMIN.
constexpr double tiny = 1e-300;

// Both expansions converge in O(sqrt(a)) steps when x is near a (the worst
// case) and faster elsewhere; 50·sqrt(a) is ample headroom over the ~9·sqrt(a)
// terms the series needs there, and the constant covers small a.
long max_iterations(double a) {
  return 1000 + static_cast<long>(50.0 * std::sqrt(a));
}

bool in_domain(double a, double x) {
  return a > 0 && std::isfinite(a) && x >= 0; // false for NaNs
}

// Below this a, a·ln x - x - lnΓ(a) is formed directly: its terms are small
// enough that their rounding stays under 1e-14. From it on, the Stirling
// series below has converged to full double precision (its first omitted
// term is under 1e-17 at a = 20).
constexpr double stirling_threshold = 20.0;

// Error of Stirling's approximation, lnΓ(a+1) - ((a+1/2)·ln a - a +
// ln(2π)/2), by its asymptotic series (Loader, "Fast and accurate computation
// of binomial probabilities", 2000), for a >= stirling_threshold.
double stirling_error(double a) {
  constexpr double s0 = 1.0 / 12;
  constexpr double s1 = 1.0 / 360;
  constexpr double s2 = 1.0 / 1260;
  constexpr double s3 = 1.0 / 1680;
  constexpr double s4 = 1.0 / 1188;
  const double a2 = a * a;
  return (s0 - (s1 - (s2 - (s3 - s4 / a2) / a2) / a2) / a2) / a;
}

// a·ln(a/x) + x - a >= 0 without the cancellation of the naive form when x is
// near a (Loader's bd0): for |a - x| small relative to a + x, the series
// (a-x)·v + 2a·Σ_{j>=1} v^(2j+1)/(2j+1) with v = (a-x)/(a+x).
double deviance(double a, double x) {
  if (std::fabs(a - x) < 0.1 * (a + x)) {
    const double v = (a - x) / (a + x);
    const double v2 = v * v;
    double sum = (a - x) * v;
    double term = 2.0 * a * v;
    for (int j = 1; j < 1000; ++j) { // |v| < 0.1: ~16 terms reach epsilon
      term *= v2;
      double next = sum + term / (2 * j + 1);
      if (next == sum)
        break;
      sum = next;
    }
    return sum;
  }
  return a * std::log(a / x) + x - a;
}

// ln(x^a e^-x / Γ(a)), the common prefactor of both expansions. For large a
// the direct form loses digits: a·ln x, x and lnΓ(a) are each ~a·ln a while
// their difference is small, so it is rebuilt from Stirling's series and the
// deviance, whose terms carry no such cancellation:
//   ln(x^a e^-x / Γ(a+1)) = -stirling_error(a) - deviance(a, x) - ln(2πa)/2.
double log_prefactor(double a, double x) {
  if (a < stirling_threshold)
    return a * std::log(x) - x - log_gamma(a);
  constexpr double log_two_pi = 1.8378770664093454836; // ln(2π)
  return std::log(a) - stirling_error(a) - deviance(a, x)
         - 0.5 * (log_two_pi + std::log(a));
}

// ln P(a, x) by the series (NR 6.2.5), for 0 < x < a + 1:
//   P(a, x) = x^a e^-x / Γ(a) · Σ_{n>=0} x^n / (a (a+1) ... (a+n)).
double log_p_series(double a, double x) {
  double term = 1.0 / a;
  double sum = term;
  for (long n = 1, limit = max_iterations(a); n < limit; ++n) {
    term *= x / (a + static_cast<double>(n));
    sum += term;
    if (term < sum * epsilon)
      break;
  }
  return log_prefactor(a, x) + std::log(sum);
}

// ln Q(a, x) by the continued fraction (NR 6.2.7) evaluated with the modified
// Lentz method, for x >= a + 1:
//   Q(a, x) = x^a e^-x / Γ(a) · 1/(x+1-a- 1·(1-a)/(x+3-a- 2·(2-a)/(x+5-a- ...))).
double log_q_fraction(double a, double x) {
  double b = x + 1.0 - a;
  double c = 1.0 / tiny;
  double d = 1.0 / b;
  double h = d;
  for (long i = 1, limit = max_iterations(a); i < limit; ++i) {
    double an = -static_cast<double>(i) * (static_cast<double>(i) - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny)
      d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny)
      c = tiny;
    d = 1.0 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < epsilon)
      break;
  }
  return log_prefactor(a, x) + std::log(h);
}

bool use_series(double a, double x) {
  return x < a + 1.0;
}

} // namespace

double log_gamma_p(double a, double x) noexcept {
  if (!in_domain(a, x))
    return nan;
  if (x == 0)
    return -inf;
  if (x == inf)
    return 0.0;
  if (use_series(a, x))
    return log_p_series(a, x);
  return std::log1p(-std::exp(log_q_fraction(a, x)));
}

double log_gamma_q(double a, double x) noexcept {
  if (!in_domain(a, x))
    return nan;
  if (x == 0)
    return 0.0;
  if (x == inf)
    return -inf;
  if (use_series(a, x))
    return std::log1p(-std::exp(log_p_series(a, x)));
  return log_q_fraction(a, x);
}

double gamma_p(double a, double x) noexcept {
  if (!in_domain(a, x))
    return nan;
  if (x == 0)
    return 0.0;
  if (x == inf)
    return 1.0;
  if (use_series(a, x))
    return std::exp(log_p_series(a, x));
  return -std::expm1(log_q_fraction(a, x));
}

double gamma_q(double a, double x) noexcept {
  if (!in_domain(a, x))
    return nan;
  if (x == 0)
    return 1.0;
  if (x == inf)
    return 0.0;
  if (use_series(a, x))
    return -std::expm1(log_p_series(a, x));
  return std::exp(log_q_fraction(a, x));
}

double log_gamma(double x) noexcept {
  int sign = 0; // Γ(x)'s sign, unused: only the magnitude is wanted
  return ::lgamma_r(x, &sign);
}

} // namespace tally
