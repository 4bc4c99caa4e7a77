// Helpers shared by the FBF suites: simulated time and a factory that fails
// the test (with the error's message) instead of returning an expected.
#pragma once

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <utility>

#include "common/hash.hpp"
#include "fbf/forgetful_bloom_filter.hpp"

namespace tally::test {

/// Simulated FBF time: `ms` milliseconds after the epoch.
inline fbf_time at_ms(std::int64_t ms) { return fbf_time{fbf_duration{ms}}; }
inline fbf_time at_s(std::int64_t s) { return at_ms(s * 1000); }

inline forgetful_bloom_filter make_fbf(const fbf_config& cfg) {
  auto f = forgetful_bloom_filter::make(cfg);
  BOOST_TEST_REQUIRE(f.has_value(),
                     "make() refused: " << (f ? "" : f.err().to_string()));
  return std::move(f).value();
}

inline void advance_ok(forgetful_bloom_filter& f, fbf_time now) {
  const status s = f.advance(now);
  BOOST_TEST_REQUIRE(s.has_value(),
                     "advance() refused: " << (s ? "" : s.err().to_string()));
}

/// Distinct element hashes for the i-th inserted id and the i-th absent probe:
/// two disjoint families, so a probe is never an inserted element.
inline std::uint64_t element(std::uint64_t salt, std::uint64_t i) {
  return hash_pair(salt, 2 * i);
}
inline std::uint64_t absent(std::uint64_t salt, std::uint64_t i) {
  return hash_pair(salt, 2 * i + 1);
}

/// The documented check rule, written independently of the implementation
/// from the per-filter answers: future alone; adjacent pairs of non-born-past
/// filters; a non-born-past filter with a born-past or no older neighbour
/// alone; born-past filters skipped.
inline bool reference_contains(const forgetful_bloom_filter& f,
                               std::uint64_t h) {
  const std::size_t n = f.filter_count();
  if (f.filter(0).contains(h))
    return true;
  for (std::size_t i = 1; i < n; ++i) {
    if (f.is_born_past(i))
      continue;
    const bool older_exists = i + 1 < n && !f.is_born_past(i + 1);
    if (older_exists) {
      if (f.filter(i).contains(h) && f.filter(i + 1).contains(h))
        return true;
    } else if (f.filter(i).contains(h)) {
      return true;
    }
  }
  return false;
}

} // namespace tally::test
