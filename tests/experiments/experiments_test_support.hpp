// Helpers shared by the experiments suites.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "common/expected.hpp"

namespace tally::test {

/// The seed of the statistical tests. They compare noisy quantities with
/// margins chosen for this seed, so the default is fixed (1) rather than
/// fresh per run; TALLY_TEST_SEED=<seed> replays another. Printed by the
/// tests that use it.
inline std::uint64_t experiment_seed() {
  if (const char* env = std::getenv("TALLY_TEST_SEED"))
    return static_cast<std::uint64_t>(std::strtoull(env, nullptr, 10));
  return 1;
}

/// The value of an expected, failing the test (with the error) otherwise.
template <class T>
T value_of(expected<T> e) {
  BOOST_TEST_REQUIRE(e.has_value(), "error: " << (e ? "" : e.err().to_string()));
  return std::move(e).value();
}

} // namespace tally::test
