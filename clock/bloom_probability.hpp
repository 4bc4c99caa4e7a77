// The Bloom clock's probabilities (seed 002, section 4): the probability of a
// positive pr_p (Equation 7), the outcome probabilities of Equations 2 and 3,
// and the slice metrics of Equation 8. The analysis tools and experiments use
// them; Tally's causality decisions never do (positives are confirmed
// exactly, DESIGN.md "Bloom clocks"). Formulas: docs/CLOCKS.md.
#pragma once

#include <cstdint>

#include "clock/bloom_clock.hpp"
#include "common/expected.hpp"

namespace tally {

/// pr_p(k, m, B_y, B_z) of Equation 7, the probability that B_z >= B_y:
///   prod_{i=1..m} (1 - sum_{l=0}^{B_y[i]-1} b(l, B_z^sum, 1/m)),
/// with the binomial b of Equation 5 replaced by its Poisson approximation of
/// mean λ = B_z^sum / m (good for large B_z^sum and small 1/m), so each factor
/// is Pr(Poisson(λ) >= B_y[i]) = P(B_y[i], λ), the regularized lower
/// incomplete gamma; a factor is 1 where B_y[i] = 0. Evaluated in log space
/// once per distinct count: O(m log m), independent of B_z^sum.
/// errc::invalid_argument when y and z are not compatible (m or k differ).
expected<double> pr_positive(const bloom_clock& y, const bloom_clock& z);

/// ln pr_positive(y, z), finite where pr_p itself underflows a double (large
/// m, z barely past y); -inf when pr_p is exactly 0.
expected<double> log_pr_positive(const bloom_clock& y, const bloom_clock& z);

/// Equation 7 with the exact binomial of Equation 5, for small sums, tests
/// and the analysis tools. O(B_z^sum + m log m) time, O(m) memory.
/// errc::invalid_argument when y and z are not compatible.
expected<double> pr_positive_exact(const bloom_clock& y, const bloom_clock& z);

/// ln pr_positive_exact(y, z).
expected<double> log_pr_positive_exact(const bloom_clock& y,
                                       const bloom_clock& z);

/// The probabilities of a false positive, a true positive and a true negative
/// for the test y -> z.
struct outcome_probabilities {
  double fp;
  double tp;
  double tn;
};

/// Equation 2, where pr_delta(p) (Equation 1) is known exactly: it is 1 when
/// `positive` (B_z >= B_y) and 0 otherwise.
///   pr_fp = (1 - pr_p)·pr_delta,  pr_tp = pr_p·pr_delta,  pr_tn = 1 - pr_delta.
outcome_probabilities outcomes_eq2(double pr_p, bool positive) noexcept;

/// Equation 3, where pr_delta(p) is itself estimated by pr_p.
///   pr_fp = (1 - pr_p)·pr_p,  pr_tp = pr_p^2,  pr_tn = 1 - pr_p.
outcome_probabilities outcomes_eq3(double pr_p) noexcept;

/// Equation 2 for two timestamps: pr_p from pr_positive(y, z), pr_delta from
/// z.dominates(y). errc::invalid_argument when y and z are not compatible.
expected<outcome_probabilities> outcomes_eq2(const bloom_clock& y,
                                             const bloom_clock& z);

/// Equation 3 for two timestamps, pr_p from pr_positive(y, z).
/// errc::invalid_argument when y and z are not compatible.
expected<outcome_probabilities> outcomes_eq3(const bloom_clock& y,
                                             const bloom_clock& z);

/// Counts of the Bloom clock's predictions against the truth over a set of
/// event pairs, and the metrics of Equation 8. A metric whose denominator is 0
/// (no pairs of that kind) is NaN.
struct confusion_counts {
  std::uint64_t tp = 0;
  std::uint64_t fp = 0;
  std::uint64_t tn = 0;
  std::uint64_t fn = 0;

  /// Counts one pair: `actual` is the truth (y -> z, e.g. V_y < V_z),
  /// `predicted` the Bloom clock's answer (B_z >= B_y).
  void record(bool actual, bool predicted) noexcept;

  /// (TP + TN) / (TP + TN + FP + FN)
  double accuracy() const noexcept;
  /// TP / (TP + FP)
  double precision() const noexcept;
  /// TP / (TP + FN); 1 for Bloom clocks, which have no false negatives.
  double recall() const noexcept;
  /// FP / (FP + TN)
  double fpr() const noexcept;
};

} // namespace tally
