// Regularized incomplete gamma functions, the Poisson CDF behind the Bloom
// clock's probability of a positive (seed 002, section 4: "the cumulative mass
// function of a Poisson distribution is a regularized incomplete gamma
// function"). Pure math, no state.
//
//   P(a, x) = γ(a, x) / Γ(a)     (lower),   Q(a, x) = 1 - P(a, x)   (upper)
//
// For X ~ Poisson(λ) and an integer c >= 1: Pr(X <= c-1) = Q(c, λ) and
// Pr(X >= c) = P(c, λ).
//
// Method (Numerical Recipes, 3rd ed., section 6.2): the power series of
// P for x < a + 1, Lentz's continued fraction of Q otherwise, the other one
// by complement (through log1p/expm1). Both share the prefactor
// x^a e^-x / Γ(a): from lnΓ (log_gamma) for a < 20, and for larger a from
// Stirling's series and Loader's deviance, which avoid the cancellation in
// a·ln x - x - lnΓ(a) when a and x are large and close. Accuracy: about
// 1e-12 relative or better over the tested range (a up to 10^6; 1e-10 is
// the promise the tests hold it to). The log forms stay finite where P or Q
// underflow a double.
//
// Domain: a > 0 and x >= 0 (x may be +inf). Outside it (including NaN
// arguments) every function returns NaN, as the <cmath> functions do.
#pragma once

namespace tally {

/// Regularized lower incomplete gamma P(a, x), in [0, 1].
double gamma_p(double a, double x) noexcept;

/// Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x), in [0, 1].
double gamma_q(double a, double x) noexcept;

/// ln P(a, x), in [-inf, 0]; -inf when x = 0.
double log_gamma_p(double a, double x) noexcept;

/// ln Q(a, x), in [-inf, 0]; -inf when x = +inf.
double log_gamma_q(double a, double x) noexcept;

/// ln|Γ(x)|, the value of std::lgamma, without its side effect: std::lgamma
/// stores the sign of Γ(x) in the global `signgam` (POSIX), so two threads
/// computing it at once race (ThreadSanitizer saw partition actors of one
/// tallyd do so, docs/RELIABILITY.md "TSan"). Uses glibc's lgamma_r, which
/// returns the sign through its argument instead. Thread-safe.
double log_gamma(double x) noexcept;

} // namespace tally
