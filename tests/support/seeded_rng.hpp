// Randomness under the test's control (STYLE.md, habit 8): every property test
// draws from a seeded_rng whose seed is printed, and can be replayed with
//   TALLY_TEST_SEED=<seed> ./test_<suite> --run_test=<case>
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace tally::test {

/// The seed of this test run: $TALLY_TEST_SEED if set, else a fresh one.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    if (const char* env = std::getenv("TALLY_TEST_SEED"))
      return static_cast<std::uint64_t>(std::strtoull(env, nullptr, 10));
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

struct seeded_rng {
  std::uint64_t seed;
  std::mt19937_64 gen;

  seeded_rng() : seed(run_seed()), gen(seed) {
    BOOST_TEST_MESSAGE("TALLY_TEST_SEED=" << seed);
  }

  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>{lo, hi}(gen);
  }
  std::int64_t uniform_signed(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(gen);
  }
  double unit() { return std::uniform_real_distribution<double>{0.0, 1.0}(gen); }
  bool chance(double p) { return unit() < p; }
};

} // namespace tally::test

/// Wraps the checks of a property test so that a failure names its seed.
#define TALLY_SEED_CONTEXT(rng) BOOST_TEST_CONTEXT("TALLY_TEST_SEED=" << (rng).seed)
