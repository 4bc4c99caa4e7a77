#include "clock/bloom_probability.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "clock/incomplete_gamma.hpp"

namespace tally {

namespace {

using cell = bloom_clock::cell;

constexpr double inf = std::numeric_limits<double>::infinity();

error incompatible(const bloom_clock& y, const bloom_clock& z) {
  return make_error(errc::invalid_argument,
                    "Cannot compute Bloom clock probabilities between a clock"
                    " with m=" + std::to_string(y.m()) + ", k="
                      + std::to_string(y.k()) + " and one with m="
                      + std::to_string(z.m()) + ", k=" + std::to_string(z.k())
                      + "; both must use the same m and k.");
}

// A count value of B_y and how many cells hold it.
struct count_run {
  cell count;
  std::uint64_t cells;
};

// The distinct non-zero counts of `y`, in the order `cmp` sorts them. Many
// cells share a count, so Equation 7's product needs one factor per run, each
// raised to its multiplicity (the per-count cache).
template <class Compare>
std::vector<count_run> nonzero_runs(const bloom_clock& y, Compare cmp) {
  std::vector<cell> counts;
  counts.reserve(y.m());
  for (cell c : y.cells())
    if (c != 0) // a factor is 1 where B_y[i] = 0: the sum in Eq. 6 is empty
      counts.push_back(c);
  std::sort(counts.begin(), counts.end(), cmp);
  std::vector<count_run> runs;
  for (cell c : counts) {
    if (runs.empty() || runs.back().count != c)
      runs.push_back({c, 0});
    ++runs.back().cells;
  }
  return runs;
}

double safe_exp(double log_value) {
  return log_value == -inf ? 0.0 : std::exp(log_value);
}

} // namespace

expected<double> log_pr_positive(const bloom_clock& y, const bloom_clock& z) {
  if (!y.compatible(z))
    return incompatible(y, z);
  // Poisson approximation of b(l, B_z^sum, 1/m) (section 4): mean B_z^sum/m.
  const double lambda =
    static_cast<double>(z.sum()) / static_cast<double>(z.m());
  double log_pr = 0.0;
  for (const auto& run : nonzero_runs(y, std::less<cell>{})) {
    // Factor of Eq. 7: 1 - Pr(Poisson(λ) <= c-1) = 1 - Q(c, λ) = P(c, λ).
    double log_factor = log_gamma_p(static_cast<double>(run.count), lambda);
    if (log_factor == -inf)
      return -inf;
    log_pr += log_factor * static_cast<double>(run.cells);
  }
  return log_pr;
}

expected<double> pr_positive(const bloom_clock& y, const bloom_clock& z) {
  auto log_pr = log_pr_positive(y, z);
  if (!log_pr)
    return log_pr.err();
  return safe_exp(*log_pr);
}

expected<double> log_pr_positive_exact(const bloom_clock& y,
                                       const bloom_clock& z) {
  if (!y.compatible(z))
    return incompatible(y, z);
  // q = B_z^sum trials, success probability 1/m (Equations 4 and 5).
  const std::uint64_t q = z.sum();
  const double p = 1.0 / static_cast<double>(z.m());
  const double log_p = std::log(p);
  const double log_not_p = std::log1p(-p); // -inf when m = 1
  const double log_q_factorial = log_gamma(static_cast<double>(q) + 1.0);
  // ln b(l, q, p) of Equation 5.
  auto log_pmf = [&](std::uint64_t l) {
    double fails = static_cast<double>(q - l);
    double log_choose = log_q_factorial
                        - log_gamma(static_cast<double>(l) + 1.0)
                        - log_gamma(fails + 1.0);
    return log_choose + static_cast<double>(l) * log_p
           + (q == l ? 0.0 : fails * log_not_p);
  };
  // Each factor 1 - Σ_{l<c} b(l) (Equations 6 and 7) is the upper tail
  // Σ_{l=c..q} b(l). Summing it directly, from l = q down past each distinct
  // count c in descending order, keeps small tails accurate (1 - cdf would
  // cancel) and costs one pass over l for all counts together.
  double log_pr = 0.0;
  double tail = 0.0;
  std::uint64_t l = q + 1; // tail = Σ_{l'=l..q} b(l')
  for (const auto& run : nonzero_runs(y, std::greater<cell>{})) {
    if (run.count > q)
      return -inf; // fewer trials than the count threshold: factor 0
    for (; l > run.count; --l)
      tail += std::exp(log_pmf(l - 1));
    double factor = std::min(tail, 1.0); // rounding may exceed 1 slightly
    if (factor <= 0.0)
      return -inf;
    log_pr += std::log(factor) * static_cast<double>(run.cells);
  }
  return log_pr;
}

expected<double> pr_positive_exact(const bloom_clock& y, const bloom_clock& z) {
  auto log_pr = log_pr_positive_exact(y, z);
  if (!log_pr)
    return log_pr.err();
  return safe_exp(*log_pr);
}

outcome_probabilities outcomes_eq2(double pr_p, bool positive) noexcept {
  const double delta = positive ? 1.0 : 0.0; // pr_delta(p), Equation 1
  return {(1.0 - pr_p) * delta, pr_p * delta, 1.0 - delta};
}

outcome_probabilities outcomes_eq3(double pr_p) noexcept {
  return {(1.0 - pr_p) * pr_p, pr_p * pr_p, 1.0 - pr_p};
}

expected<outcome_probabilities> outcomes_eq2(const bloom_clock& y,
                                             const bloom_clock& z) {
  auto pr_p = pr_positive(y, z);
  if (!pr_p)
    return pr_p.err();
  return outcomes_eq2(*pr_p, *z.dominates(y));
}

expected<outcome_probabilities> outcomes_eq3(const bloom_clock& y,
                                             const bloom_clock& z) {
  auto pr_p = pr_positive(y, z);
  if (!pr_p)
    return pr_p.err();
  return outcomes_eq3(*pr_p);
}

namespace {

double ratio(std::uint64_t num, std::uint64_t den) {
  if (den == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(num) / static_cast<double>(den);
}

} // namespace

void confusion_counts::record(bool actual, bool predicted) noexcept {
  if (actual)
    ++(predicted ? tp : fn);
  else
    ++(predicted ? fp : tn);
}

double confusion_counts::accuracy() const noexcept {
  return ratio(tp + tn, tp + tn + fp + fn);
}

double confusion_counts::precision() const noexcept {
  return ratio(tp, tp + fp);
}

double confusion_counts::recall() const noexcept {
  return ratio(tp, tp + fn);
}

double confusion_counts::fpr() const noexcept {
  return ratio(fp, fp + tn);
}

} // namespace tally
