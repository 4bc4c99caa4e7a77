#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

#include "common/error.hpp"
#include "common/expected.hpp"
#include "common/hash.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(common)

BOOST_AUTO_TEST_CASE(hash_bytes_is_stable_across_runs) {
  // Ring positions and filter bits are persisted and compared between nodes:
  // the hash of a fixed input must never change.
  BOOST_TEST(hash_bytes("") == hash_bytes(""));
  BOOST_TEST(hash_bytes("tally", 1) != hash_bytes("tally", 2));
  BOOST_TEST(hash_bytes("abc") != hash_bytes("abd"));
  BOOST_TEST(hash_bytes("abcdefgh") != hash_bytes("abcdefgi"));
}

BOOST_AUTO_TEST_CASE(hash_bytes_reads_every_tail_byte) {
  std::set<std::uint64_t> seen;
  std::string s;
  for (int len = 0; len < 24; ++len) {
    BOOST_TEST(seen.insert(hash_bytes(s)).second);
    s.push_back('x');
  }
}

BOOST_AUTO_TEST_CASE(reduce_stays_in_range) {
  for (std::uint64_t x : {0ULL, 1ULL, ~0ULL, 0x8000000000000000ULL})
    for (std::uint64_t n : {1ULL, 7ULL, 6250ULL, 1ULL << 20})
      BOOST_TEST(reduce(x, n) < n);
  BOOST_TEST(reduce(~0ULL, 10) == 9u);
}

BOOST_AUTO_TEST_CASE(split_hash_second_half_is_odd) {
  for (std::uint64_t x = 0; x < 1000; ++x)
    BOOST_TEST((split_hash(mix64(x)).h2 & 1u) == 1u);
}

BOOST_AUTO_TEST_CASE(expected_carries_value_or_error) {
  expected<int> ok = 5;
  BOOST_TEST(ok.has_value());
  BOOST_TEST(*ok == 5);
  expected<int> bad = make_error(errc::overflow, "too big");
  BOOST_TEST(!bad.has_value());
  BOOST_TEST(bad.err().code() == errc::overflow);
  BOOST_TEST(bad.err().to_string() == "overflow: too big");
  status s;
  BOOST_TEST(s.has_value());
  status f = make_error(errc::bad_config, "x");
  BOOST_TEST(!f.has_value());
}

BOOST_AUTO_TEST_SUITE_END()
