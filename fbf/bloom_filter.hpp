// A plain Bloom filter (Bloom 1970; FBF paper, Sec. II-B): m bits, k hash
// functions derived from one 64-bit element hash by double hashing
// (Kirsch and Mitzenmacher 2006, in its enhanced form, see make_bloom_probe),
// each mapped onto [0, m) by tally::reduce, so m need not be a power of two
// and no modulo is taken.
//
// It is the building block of the Forgetful Bloom Filter
// (fbf/forgetful_bloom_filter.hpp). Pure data structure: no I/O, no clock, no
// threads; one owner at a time (the partition actor that owns the bucket).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/expected.hpp"
#include "common/hash.hpp"

namespace tally {

/// Largest number of hash functions a filter accepts. The optimal k for a
/// target false-positive rate f is log2(1/f); k = 32 already means f ~ 2^-32,
/// beyond which a Bloom filter is the wrong tool. The bound also caps a
/// bloom_probe at 256 bytes of stack.
inline constexpr unsigned bloom_max_hashes = 32;

/// Largest number of bits per filter: 2^36 bits = 8 GiB. One FBF per bucket
/// holds N+2 such filters, so anything near this is a unit mistake; the bound
/// keeps every size computation far from 64-bit overflow.
inline constexpr std::uint64_t bloom_max_bits = std::uint64_t{1} << 36;

/// The k bit positions of one element in filters of one geometry (m, k).
/// Computing them once and testing several filters with them is what keeps the
/// FBF's membership check at one hashing cost for N+2 filters.
struct bloom_probe {
  std::array<std::uint64_t, bloom_max_hashes> bits;
  unsigned count;         // k
  std::uint64_t m;        // geometry the positions were computed for
};

/// Computes the k positions reduce(g_i, m), i = 0..k-1, by enhanced double
/// hashing g_i = h1 + i*h2 + c*(i^3 - i)/6 with (h1, h2) =
/// split_hash(element_hash). Requires 1 <= m <= bloom_max_bits and
/// 1 <= k <= bloom_max_hashes (bloom_filter::make checks them; a probe built
/// with other values is not meaningful). No allocation, no division.
inline bloom_probe make_bloom_probe(std::uint64_t element_hash,
                                    std::uint64_t m, unsigned k) noexcept {
  bloom_probe p;
  p.count = k;
  p.m = m;
  const hash128 h = split_hash(element_hash);
  // Enhanced double hashing (Dillinger and Manolios 2004), adapted to
  // reduce(): g_i = h1 + i*h2 + c*(i^3 - i)/6 (mod 2^64). Plain
  // g_i = h1 + i*h2 makes each element's positions an arithmetic progression
  // in [0, m) (reduce keeps the high bits), so elements with close (h1, h2)
  // share several bits: at m = 6250, k = 5, l = 200 the FPP measured 13%
  // above Eq. 1 and biased Eq. 3. The cubic term breaks the progression
  // (measured within 2% of Eq. 1). Its coefficient c must be large: reduce
  // ignores the low bits, where the textbook (i^3 - i)/6 would land.
  constexpr std::uint64_t c = 0x9e3779b97f4a7c15ULL; // 2^64/golden ratio, odd
  std::uint64_t g = h.h1; // g_i
  std::uint64_t d = h.h2; // g_{i+1} - g_i = h2 + c*i(i+1)/2
  std::uint64_t e = c;    // d_{i+1} - d_i = c*(i+1)
  for (unsigned i = 0; i < k; ++i) {
    p.bits[i] = reduce(g, m);
    g += d;
    d += e;
    e += c;
  }
  return p;
}

class bloom_filter {
public:
  /// An empty filter of m bits and k hash functions.
  /// Errors: errc::invalid_argument if m == 0, m > bloom_max_bits, k == 0 or
  /// k > bloom_max_hashes.
  static expected<bloom_filter> make(std::uint64_t m, unsigned k);

  /// An empty filter with this filter's m and k. Allocates m/64 words.
  bloom_filter empty_like() const;

  /// The positions of an element in this filter (see make_bloom_probe).
  bloom_probe probe(std::uint64_t element_hash) const noexcept {
    return make_bloom_probe(element_hash, m_, k_);
  }

  /// Sets the element's k bits and counts one inserted element. Every call
  /// counts, even when all k bits were already set: the count l is "elements
  /// inserted" as Equation 1 of the FBF paper uses it, and the FBF only calls
  /// insert for elements it did not already hold (Algorithm 1), so l is the
  /// number of distinct elements it accepted.
  /// Requires p to be a probe of this filter's geometry (asserted in debug).
  void insert(const bloom_probe& p) noexcept {
    assert(p.m == m_ && p.count == k_);
    for (unsigned i = 0; i < p.count; ++i) {
      const std::uint64_t b = p.bits[i];
      words_[b >> 6] |= std::uint64_t{1} << (b & 63);
    }
    ++elements_;
  }
  void insert(std::uint64_t element_hash) noexcept { insert(probe(element_hash)); }
  /// Hashes the bytes with tally::hash_bytes (seed 0), then inserts.
  void insert(std::string_view element) noexcept;

  /// True if all k bits of the element are set: always true for an inserted
  /// element, true with the probability of Equation 1 for another one.
  /// Requires p to be a probe of this filter's geometry (asserted in debug).
  bool contains(const bloom_probe& p) const noexcept {
    assert(p.m == m_ && p.count == k_);
    for (unsigned i = 0; i < p.count; ++i) {
      const std::uint64_t b = p.bits[i];
      if (((words_[b >> 6] >> (b & 63)) & 1u) == 0)
        return false;
    }
    return true;
  }
  bool contains(std::uint64_t element_hash) const noexcept {
    return contains(probe(element_hash));
  }
  bool contains(std::string_view element) const noexcept;

  /// Clears every bit and the element count.
  void clear() noexcept;

  /// Number of bits m, number of hash functions k.
  std::uint64_t bit_count() const noexcept { return m_; }
  unsigned hash_count() const noexcept { return k_; }
  /// Number of insert calls since creation or the last clear (l).
  std::uint64_t element_count() const noexcept { return elements_; }
  /// Number of bits currently set (for experiments; O(m/64)).
  std::uint64_t bits_set() const noexcept;
  /// Equation 1 for this filter's m, k and l (see fbf/fpp_model.hpp).
  double false_positive_probability() const noexcept;

private:
  bloom_filter(std::uint64_t m, unsigned k);

  std::vector<std::uint64_t> words_;
  std::uint64_t m_;
  unsigned k_;
  std::uint64_t elements_ = 0;
};

} // namespace tally
