// The false-positive model of the FBF paper, Sec. IV: Equation 1 for one
// Bloom filter, Equation 3 for an N-FBF checked with Algorithm 2, and its
// generalization to FBFs holding "born-past" filters after a scale-up
// (docs/FBF.md, "Scale-up"). Pure functions of (m, k, element counts).
//
// Both equations assume uniform hashes and independent filters (paper,
// Sec. IV). Adjacent filters of an FBF share the elements of one refresh
// period, so for N >= 2 the pair terms, and with them Equation 3, are
// underestimates; for N = 1 the only pair is implied by the oldest filter's
// own term and the model is accurate (docs/FBF.md, "The model").
#pragma once

#include <cstdint>
#include <vector>

#include "common/expected.hpp"

namespace tally {

/// Equation 1: p(B) = (1 - e^{-k*l/m})^k for a filter of m bits, k hashes and
/// l inserted elements. The paper prints the exact form as
/// (1 - (1 - 1/l)^{mk}), a typo: the probability that a given bit is still 0
/// after k*l uniform bit settings is (1 - 1/m)^{k*l}, so the exact form is
/// (1 - (1 - 1/m)^{k*l})^k, which the exponential approximates.
/// Returns 0 for l == 0. Requires m >= 1 and k >= 1 (returns 1 otherwise: a
/// filter without bits or hashes answers "member" to everything).
double bloom_false_positive_probability(std::uint64_t m, unsigned k,
                                        std::uint64_t l) noexcept;

/// Equation 3 for an N-FBF checked with Algorithm 2: with counts ordered
/// future, present, past_1 (newest) .. past_N (oldest),
///   p = 1 - (1 - p(F)) * (1 - p(P) p(B_1)) * prod_{i=1}^{N-1} (1 - p(B_i) p(B_{i+1}))
///         * (1 - p(B_N)).
/// Errors: errc::invalid_argument if m == 0, k == 0, or counts has fewer than
/// 3 entries (an FBF has at least one past filter).
expected<double> fbf_false_positive_probability(
    std::uint64_t m, unsigned k, const std::vector<std::uint64_t>& counts);

/// One constituent filter as the generalized model sees it.
struct filter_load {
  std::uint64_t elements; // l_i
  bool born_past;         // added empty at the oldest end by a scale-up
};

/// Equation 3 generalized to born-past filters: one factor per check that
/// forgetful_bloom_filter::contains performs, and no other:
///  - the future filter (index 0) alone;
///  - each adjacent pair (i, i+1), i >= 1, of filters that are not born-past;
///  - each filter i >= 1 that is not born-past and whose older neighbour is
///    born-past or absent, alone;
///  - born-past filters are skipped (they never receive inserts).
/// Without born-past filters this is exactly the overload above.
/// Errors: errc::invalid_argument if m == 0, k == 0, filters has fewer than 3
/// entries, or the future or present filter (index 0 or 1) is born-past.
expected<double> fbf_false_positive_probability(
    std::uint64_t m, unsigned k, const std::vector<filter_load>& filters);

/// One constituent filter as the shared-period model sees it.
struct filter_periods {
  std::uint64_t elements; // l_i, every id the filter holds
  /// E_i: the ids inserted while this filter was the future one (its "own"
  /// refresh period). They went into this filter and into the filter then
  /// present, which is its older neighbour (Algorithm 1). The future filter's
  /// own count is its element count.
  std::uint64_t own;
  bool born_past; // as in filter_load
};

/// The shared-period model: Tally's correction of Equation 3 for N >= 2,
/// with the checks of the generalized Equation 3 (one factor per check that
/// contains() performs, combined as 1 - prod(1 - phi), paper Sec. IV).
/// Equation 3 multiplies p(B_i) p(B_i+1) for an adjacent pair, as if the two
/// filters were independent; but filter i holds E_i and E_{i-1} (its future
/// and present periods) and filter i+1 holds E_{i+1} and E_i, so the pair
/// shares the E_i ids. With q(n) = e^{-k n / m}, the probability that a given
/// bit is still 0 after n ids, a bit is set in both filters with probability
///   s = (1 - q(S)) + q(S) (1 - q(A)) (1 - q(B)),
/// S = E_i (shared), A = l_i - S, B = l_{i+1} - S, and the pair check fails
/// for an absent element with probability s^k. Lone checks (the future, the
/// oldest, a filter before born-past ones) are Equation 1 of l_i, as in
/// Equation 3. The pair whose older filter is checked alone is left out:
/// every hit of it is a hit of that lone check (Equation 3 counts it
/// twice). docs/FBF.md, "The model".
/// Errors: as the generalized Equation 3.
expected<double> fbf_shared_period_fpp(std::uint64_t m, unsigned k,
                                       const std::vector<filter_periods>& filters);

} // namespace tally
