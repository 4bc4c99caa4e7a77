#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "common/hash.hpp"
#include "fbf/bloom_filter.hpp"
#include "fbf/fpp_model.hpp"
#include "tests/fbf/fbf_test_support.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using tally::test::absent;
using tally::test::element;

namespace {

bloom_filter make_filter(std::uint64_t m, unsigned k) {
  auto f = bloom_filter::make(m, k);
  BOOST_TEST_REQUIRE(f.has_value());
  return std::move(f).value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(fbf)

BOOST_AUTO_TEST_CASE(bloom_make_refuses_zero_or_too_many_bits) {
  for (std::uint64_t m : {std::uint64_t{0}, bloom_max_bits + 1}) {
    BOOST_TEST_CONTEXT("m = " << m) {
      auto f = bloom_filter::make(m, 3);
      BOOST_TEST_REQUIRE(!f.has_value());
      BOOST_TEST(f.err().code() == errc::invalid_argument);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_make_refuses_zero_or_too_many_hashes) {
  for (unsigned k : {0u, bloom_max_hashes + 1}) {
    BOOST_TEST_CONTEXT("k = " << k) {
      auto f = bloom_filter::make(64, k);
      BOOST_TEST_REQUIRE(!f.has_value());
      BOOST_TEST(f.err().code() == errc::invalid_argument);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_has_no_false_negatives_for_any_size) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (std::uint64_t m : {1ULL, 63ULL, 64ULL, 65ULL, 6250ULL, 1ULL << 20}) {
      const auto k = static_cast<unsigned>(rng.uniform(1, bloom_max_hashes));
      BOOST_TEST_CONTEXT("m = " << m << ", k = " << k) {
        bloom_filter f = make_filter(m, k);
        std::vector<std::uint64_t> in;
        for (int i = 0; i < 2000; ++i) {
          in.push_back(rng.uniform(0, ~0ULL));
          f.insert(in.back());
        }
        std::size_t missing = 0;
        for (std::uint64_t h : in)
          missing += f.contains(h) ? 0 : 1;
        BOOST_TEST(missing == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_positions_never_reach_past_m_for_odd_sizes) {
  // Saturating a filter whose m is not a multiple of 64 must set exactly its
  // m bits: a position >= m would set a padding bit of the last word (or
  // worse, write past it).
  for (std::uint64_t m : {1ULL, 7ULL, 65ULL, 127ULL, 6250ULL}) {
    BOOST_TEST_CONTEXT("m = " << m) {
      bloom_filter f = make_filter(m, 4);
      for (std::uint64_t i = 0; i < 200 * m; ++i)
        f.insert(mix64(i));
      BOOST_TEST(f.bits_set() == m);
    }
  }
}

BOOST_AUTO_TEST_CASE(bloom_counts_every_insert_call_as_an_element) {
  // l counts insert calls, duplicates included (the FBF only inserts ids it
  // does not already hold, so there l is the number of distinct ids).
  bloom_filter f = make_filter(1024, 3);
  f.insert(element(1, 0));
  f.insert(element(1, 0));
  f.insert(element(1, 1));
  BOOST_TEST(f.element_count() == 3u);
}

BOOST_AUTO_TEST_CASE(bloom_clear_forgets_every_element_and_the_count) {
  bloom_filter f = make_filter(4096, 5);
  for (std::uint64_t i = 0; i < 100; ++i)
    f.insert(element(2, i));
  f.clear();
  BOOST_TEST(f.element_count() == 0u);
  BOOST_TEST(f.bits_set() == 0u);
  std::size_t hits = 0;
  for (std::uint64_t i = 0; i < 100; ++i)
    hits += f.contains(element(2, i)) ? 1 : 0;
  BOOST_TEST(hits == 0u);
}

BOOST_AUTO_TEST_CASE(bloom_string_overloads_hash_the_bytes) {
  bloom_filter f = make_filter(4096, 5);
  f.insert(std::string_view{"client-7:42"});
  BOOST_TEST(f.contains(hash_bytes("client-7:42")));
  BOOST_TEST(f.contains(std::string_view{"client-7:42"}));
}

BOOST_AUTO_TEST_CASE(bloom_measured_fpp_matches_equation_1_within_15_percent) {
  // m = 2^16 keeps the fill fluctuation of one filter near 2.5% and 200k
  // probes at FPP ~8e-3 give ~1600 hits (2.5% noise): 15% is > 4 sigma.
  tally::test::seeded_rng rng;
  const std::uint64_t salt = rng.uniform(0, ~0ULL);
  TALLY_SEED_CONTEXT(rng) {
    bloom_filter f = make_filter(1 << 16, 5);
    for (std::uint64_t i = 0; i < 6290; ++i) // k*l/m = 0.48, as 600 in 6250
      f.insert(element(salt, i));
    constexpr int probes = 200'000;
    int hits = 0;
    for (int i = 0; i < probes; ++i)
      hits += f.contains(absent(salt, static_cast<std::uint64_t>(i))) ? 1 : 0;
    const double measured = static_cast<double>(hits) / probes;
    const double model = f.false_positive_probability();
    BOOST_TEST_MESSAGE("Eq. 1 model " << model << ", measured " << measured);
    BOOST_TEST(measured == model, boost::test_tools::tolerance(0.15));
  }
}

BOOST_AUTO_TEST_SUITE_END()
