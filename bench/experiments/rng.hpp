// The experiments' random numbers: xoshiro256** seeded through SplitMix64
// (Blackman and Vigna, 2018). Hand-written rather than std::mt19937_64 plus
// <random> distributions because the standard leaves the distributions'
// algorithms to the library: with this generator an experiment gives the same
// numbers on every compiler and standard library, so a --seed reproduces a
// table anywhere.
#pragma once

#include <cstdint>

#include "common/hash.hpp"

namespace tally::experiments {

class rng {
public:
  explicit rng(std::uint64_t seed) noexcept {
    std::uint64_t x = seed;
    for (std::uint64_t& w : s_) {
      x += 0x9e3779b97f4a7c15ULL; // SplitMix64 step: never all-zero state
      w = mix64(x);
    }
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1), 53 random bits.
  double unit() noexcept {
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
  }

  /// Uniform in [0, n), n >= 1 (Lemire's multiply-shift; the bias is below
  /// n / 2^64, far under anything an experiment can see).
  std::uint64_t below(std::uint64_t n) noexcept { return reduce(next(), n); }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }

  std::uint64_t s_[4];
};

/// An independent seed for a named part of an experiment (run r of
/// configuration c, ...), so parts can be added or reordered without
/// changing the numbers of the others.
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a,
                                    std::uint64_t b = 0) noexcept {
  return hash_pair(hash_pair(seed, a), b);
}

} // namespace tally::experiments
