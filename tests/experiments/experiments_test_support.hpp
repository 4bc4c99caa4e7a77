// Helpers shared by the experiments suites.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <utility>

#include "common/expected.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

/// The seed of the statistical tests: a fresh one per test run (the same for
/// every test of the run), or $TALLY_TEST_SEED to replay one. The run prints
/// it once (runner_test.cpp's global fixture) and every test that uses it
/// names it in its failures. The tests' samples are wide enough that every
/// seed passes: docs/EXPERIMENTS.md, "Tests", has the 100-seed check.
inline std::uint64_t experiment_seed() { return run_seed(); }

/// The value of an expected, failing the test (with the error) otherwise.
template <class T>
T value_of(expected<T> e) {
  BOOST_TEST_REQUIRE(e.has_value(), "error: " << (e ? "" : e.err().to_string()));
  return std::move(e).value();
}

} // namespace tally::test

/// Names the run's seed in every failure of the enclosed checks.
#define TALLY_EXPERIMENT_SEED_CONTEXT \
  BOOST_TEST_CONTEXT("TALLY_TEST_SEED=" << ::tally::test::experiment_seed())
