#include "fbf/fpp_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

namespace tally {

double bloom_false_positive_probability(std::uint64_t m, unsigned k,
                                        std::uint64_t l) noexcept {
  if (m == 0 || k == 0)
    return 1.0;
  if (l == 0)
    return 0.0;
  // Paper Eq. 1 (corrected, see header): (1 - e^{-k l / m})^k. -expm1(-x) is
  // 1 - e^{-x} without cancellation for the small x of a lightly filled
  // filter.
  const double x = static_cast<double>(k) * static_cast<double>(l)
                   / static_cast<double>(m);
  return std::pow(-std::expm1(-x), static_cast<double>(k));
}

namespace {

// Eq. 3 generalized, for arguments the public overloads have validated.
double fbf_fpp(std::uint64_t m, unsigned k,
               const std::vector<filter_load>& filters) noexcept {
  const std::size_t count = filters.size();
  // Paper Eq. 3: p = 1 - prod_i (1 - phi_i), one phi per check. The product
  // is summed in log space (log1p) so that many tiny phi do not round away.
  double log_survive = 0.0;
  auto add_check = [&](double phi) { log_survive += std::log1p(-phi); };
  auto p = [&](std::size_t i) {
    return bloom_false_positive_probability(m, k, filters[i].elements);
  };
  // phi_{n+1}: the future filter alone.
  add_check(p(0));
  for (std::size_t i = 1; i < count; ++i) {
    if (filters[i].born_past)
      continue; // empty, never checked
    const bool has_older = i + 1 < count && !filters[i + 1].born_past;
    if (has_older)
      add_check(p(i) * p(i + 1)); // phi_n (present, B_1) and phi_i (B_i, B_i+1)
    else
      add_check(p(i)); // phi_0: the oldest (non-born-past) filter alone
  }
  return -std::expm1(log_survive);
}

status validate_model_input(std::uint64_t m, unsigned k, std::size_t count,
                            bool future_or_present_born_past) {
  if (m == 0 || k == 0)
    return make_error(errc::invalid_argument,
                      "The FBF model needs m >= 1 bits and k >= 1 hash "
                      "functions per filter; pass the filters' geometry.");
  if (count < 3)
    return make_error(errc::invalid_argument,
                      "The FBF model needs at least 3 filter counts (future, "
                      "present and one past filter), got "
                          + std::to_string(count) + ".");
  if (future_or_present_born_past)
    return make_error(errc::invalid_argument,
                      "Only past filters can be born-past; the future and "
                      "present filters (indexes 0 and 1) receive inserts.");
  return {};
}

// q(n) = e^{-k n / m}: the probability that a given bit is not set by n ids.
double bit_clear(std::uint64_t m, unsigned k, std::uint64_t n) noexcept {
  return std::exp(-static_cast<double>(k) * static_cast<double>(n)
                  / static_cast<double>(m));
}

// The shared-period model (see the header) for validated arguments.
double shared_period_fpp(std::uint64_t m, unsigned k,
                         const std::vector<filter_periods>& filters) noexcept {
  const std::size_t count = filters.size();
  double log_survive = 0.0; // as in fbf_fpp: 1 - prod(1 - phi), paper Eq. 3
  auto add_check = [&](double phi) { log_survive += std::log1p(-phi); };
  auto alone = [&](std::size_t i) {
    return bloom_false_positive_probability(m, k, filters[i].elements);
  };
  add_check(alone(0)); // the future filter alone
  for (std::size_t i = 1; i < count; ++i) {
    if (filters[i].born_past)
      continue;
    const bool has_older = i + 1 < count && !filters[i + 1].born_past;
    if (!has_older) {
      add_check(alone(i)); // the oldest (non-born-past) filter alone
      continue;
    }
    // A pair whose older filter is also checked alone adds no hit: its
    // event is contained in that lone check's. Counting both as
    // independent, as Eq. 3 does, counts those hits twice (about 1.5x the
    // measured FPP on the paper's Fig. 9 set-up).
    const bool older_alone = i + 2 >= count || filters[i + 2].born_past;
    if (older_alone)
      continue;
    // Pair (i, i+1): both hold filter i's own period E_i.
    const std::uint64_t shared =
        std::min({filters[i].own, filters[i].elements, filters[i + 1].elements});
    const double q_s = bit_clear(m, k, shared);
    const double q_a = bit_clear(m, k, filters[i].elements - shared);
    const double q_b = bit_clear(m, k, filters[i + 1].elements - shared);
    const double s = (1.0 - q_s) + q_s * (1.0 - q_a) * (1.0 - q_b);
    add_check(std::pow(s, static_cast<double>(k)));
  }
  return -std::expm1(log_survive);
}

} // namespace

expected<double> fbf_false_positive_probability(
    std::uint64_t m, unsigned k, const std::vector<filter_load>& filters) {
  if (auto ok = validate_model_input(
          m, k, filters.size(),
          filters.size() >= 2 && (filters[0].born_past || filters[1].born_past));
      !ok)
    return ok.err();
  return fbf_fpp(m, k, filters);
}

expected<double> fbf_shared_period_fpp(
    std::uint64_t m, unsigned k, const std::vector<filter_periods>& filters) {
  if (auto ok = validate_model_input(
          m, k, filters.size(),
          filters.size() >= 2 && (filters[0].born_past || filters[1].born_past));
      !ok)
    return ok.err();
  return shared_period_fpp(m, k, filters);
}

expected<double> fbf_false_positive_probability(
    std::uint64_t m, unsigned k, const std::vector<std::uint64_t>& counts) {
  std::vector<filter_load> filters;
  filters.reserve(counts.size());
  for (std::uint64_t l : counts)
    filters.push_back({l, false});
  return fbf_false_positive_probability(m, k, filters);
}

} // namespace tally
