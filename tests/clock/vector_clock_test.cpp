#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "clock/detail/codec.hpp"
#include "clock/vector_clock.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

// Small dc and time ranges, so that random pairs are often comparable
// (before/after/equal), not almost always concurrent.
constexpr dc_id test_dcs = 5;
constexpr std::uint64_t test_max_time = 3;

vector_clock random_clock(test::seeded_rng& rng) {
  vector_clock c;
  for (dc_id dc = 0; dc < test_dcs; ++dc)
    if (rng.chance(0.7))
      c.set(dc, rng.uniform(0, test_max_time)); // 0 exercises normalization
  return c;
}

std::vector<std::uint64_t> dense(const vector_clock& c) {
  std::vector<std::uint64_t> out(test_dcs, 0);
  for (dc_id dc = 0; dc < test_dcs; ++dc)
    out[dc] = c.get(dc);
  return out;
}

// The textbook definition, on dense vectors.
causal_order reference_compare(const vector_clock& a, const vector_clock& b) {
  auto x = dense(a);
  auto y = dense(b);
  bool le = true;
  bool ge = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    le &= x[i] <= y[i];
    ge &= x[i] >= y[i];
  }
  if (le && ge)
    return causal_order::equal;
  if (le)
    return causal_order::before;
  if (ge)
    return causal_order::after;
  return causal_order::concurrent;
}

constexpr int property_rounds = 2000;

} // namespace

// The suite lives in a namespace because BOOST_AUTO_TEST_SUITE(clock) opens
// `namespace clock`, which at global scope collides with ::clock() of <ctime>.
namespace clock_tests {
BOOST_AUTO_TEST_SUITE(clock)

BOOST_AUTO_TEST_CASE(vector_clock_missing_entry_reads_zero) {
  vector_clock c;
  BOOST_TEST(c.get(7) == 0u);
  c.set(7, 42);
  BOOST_TEST(c.get(7) == 42u);
  BOOST_TEST(c.get(6) == 0u);
  BOOST_TEST(c.get(8) == 0u);
}

BOOST_AUTO_TEST_CASE(vector_clock_set_can_lower_and_zero_removes_entry) {
  vector_clock c{{1, 10}, {2, 20}};
  c.set(1, 3);
  BOOST_TEST(c.get(1) == 3u);
  c.set(2, 0);
  BOOST_TEST(c.size() == 1u);
  BOOST_TEST(c.get(2) == 0u);
}

BOOST_AUTO_TEST_CASE(vector_clock_advance_takes_max) {
  vector_clock c;
  c.advance(4, 10);
  c.advance(4, 5);
  BOOST_TEST(c.get(4) == 10u);
  c.advance(4, 11);
  BOOST_TEST(c.get(4) == 11u);
  c.advance(9, 0);
  BOOST_TEST(c.size() == 1u);
}

BOOST_AUTO_TEST_CASE(vector_clock_explicit_zero_equals_empty_clock) {
  vector_clock zero_entry{{1, 0}};
  vector_clock set_to_zero;
  set_to_zero.set(3, 0);
  BOOST_TEST((zero_entry == vector_clock{}));
  BOOST_TEST((set_to_zero == vector_clock{}));
  BOOST_TEST(zero_entry.empty());
  BOOST_TEST((zero_entry.compare(vector_clock{}) == causal_order::equal));
  BOOST_TEST((zero_entry.encode() == vector_clock{}.encode()));
}

BOOST_AUTO_TEST_CASE(vector_clock_entries_stay_sorted_by_dc) {
  vector_clock c{{9, 1}, {2, 1}, {5, 1}, {2, 4}};
  c.set(0, 8);
  c.set(7, 8);
  std::vector<dc_id> dcs;
  for (const auto& e : c.entries())
    dcs.push_back(e.dc);
  BOOST_TEST(dcs == (std::vector<dc_id>{0, 2, 5, 7, 9}),
             boost::test_tools::per_element());
  BOOST_TEST(c.get(2) == 4u); // a dc listed twice keeps the max
}

BOOST_AUTO_TEST_CASE(vector_clock_merge_is_entrywise_max) {
  vector_clock a{{1, 5}, {2, 1}, {4, 9}};
  vector_clock b{{0, 3}, {2, 7}, {4, 2}};
  a.merge(b);
  BOOST_TEST((a == vector_clock{{0, 3}, {1, 5}, {2, 7}, {4, 9}}));
}

BOOST_AUTO_TEST_CASE(vector_clock_merge_is_commutative_associative_idempotent) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < property_rounds; ++round) {
      auto a = random_clock(rng);
      auto b = random_clock(rng);
      auto c = random_clock(rng);
      BOOST_TEST((merged(a, b) == merged(b, a)));
      BOOST_TEST((merged(merged(a, b), c) == merged(a, merged(b, c))));
      BOOST_TEST((merged(a, a) == a));
    }
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_merge_is_least_upper_bound) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < property_rounds; ++round) {
      auto a = random_clock(rng);
      auto b = random_clock(rng);
      auto m = merged(a, b);
      BOOST_TEST((a <= m));
      BOOST_TEST((b <= m));
      // Least: any upper bound of a and b dominates the merge.
      auto u = merged(m, random_clock(rng));
      BOOST_TEST((m <= u));
      auto x = dense(a);
      auto y = dense(b);
      auto z = dense(m);
      for (std::size_t i = 0; i < z.size(); ++i)
        BOOST_TEST(z[i] == std::max(x[i], y[i]));
    }
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_compare_agrees_with_entrywise_definition) {
  test::seeded_rng rng;
  std::map<causal_order, int> seen;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < property_rounds; ++round) {
      auto a = random_clock(rng);
      auto b = random_clock(rng);
      if (rng.chance(0.1)) { // equal clocks are rare between random ones
        b = a;
        b.set(test_dcs, 0);
      }
      auto expected = reference_compare(a, b);
      BOOST_TEST(a.compare(b) == expected);
      ++seen[expected];
      BOOST_TEST((a <= b) == (expected == causal_order::equal
                              || expected == causal_order::before));
      BOOST_TEST((a < b) == (expected == causal_order::before));
      BOOST_TEST((a == b) == (expected == causal_order::equal));
    }
  }
  // The generator must reach every case, or the property proves little.
  BOOST_TEST(seen.size() == 4u);
}

BOOST_AUTO_TEST_CASE(vector_clock_compare_treats_one_sided_entries_as_zero) {
  vector_clock a{{1, 1}};
  vector_clock b{{2, 1}};
  vector_clock ab{{1, 1}, {2, 1}};
  BOOST_TEST(a.compare(b) == causal_order::concurrent);
  BOOST_TEST(a.compare(ab) == causal_order::before);
  BOOST_TEST(ab.compare(b) == causal_order::after);
  BOOST_TEST(vector_clock{}.compare(a) == causal_order::before);
}

BOOST_AUTO_TEST_CASE(commit_order_is_consistent_with_causality) {
  test::seeded_rng rng;
  int causal_pairs = 0;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < property_rounds; ++round) {
      auto a = random_clock(rng);
      auto b = random_clock(rng);
      if (a < b) {
        ++causal_pairs;
        BOOST_TEST(commit_order(a, b) < 0);
        BOOST_TEST(commit_order(b, a) > 0);
      }
    }
  }
  BOOST_TEST(causal_pairs > 0);
}

BOOST_AUTO_TEST_CASE(commit_order_is_total_and_antisymmetric) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < property_rounds; ++round) {
      auto a = random_clock(rng);
      auto b = random_clock(rng);
      int ab = commit_order(a, b);
      int ba = commit_order(b, a);
      // Antisymmetric, and 0 exactly for equal clocks: any two distinct
      // clocks, concurrent ones included, are strictly ordered.
      BOOST_TEST((ab < 0) == (ba > 0));
      BOOST_TEST((ab == 0) == (a == b));
      BOOST_TEST((ba == 0) == (a == b));
    }
  }
}

BOOST_AUTO_TEST_CASE(commit_order_is_transitive) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    std::vector<vector_clock> clocks;
    for (int i = 0; i < 300; ++i)
      clocks.push_back(random_clock(rng));
    std::sort(clocks.begin(), clocks.end(), commit_order_less{});
    // A strict weak order sorted this way has every pair in order, which
    // fails for a comparator that is not transitive.
    for (std::size_t i = 0; i < clocks.size(); ++i)
      for (std::size_t j = i + 1; j < clocks.size(); ++j)
        BOOST_TEST(commit_order(clocks[i], clocks[j]) <= 0);
  }
}

BOOST_AUTO_TEST_CASE(commit_order_breaks_equal_sum_ties_lexicographically) {
  vector_clock a{{1, 2}};
  vector_clock b{{1, 1}, {2, 1}};
  vector_clock c{{2, 2}};
  BOOST_TEST(a.compare(b) == causal_order::concurrent);
  BOOST_TEST(commit_order(b, a) < 0); // dc 1: 1 < 2
  BOOST_TEST(commit_order(c, b) < 0); // dc 1: 0 < 1
  BOOST_TEST(commit_order(c, a) < 0);
}

BOOST_AUTO_TEST_CASE(commit_order_sum_does_not_wrap_at_64_bits) {
  constexpr auto max = std::numeric_limits<std::uint64_t>::max();
  vector_clock a{{1, max}};
  vector_clock b{{1, max}, {2, 1}}; // its 64-bit sum would wrap to 0
  BOOST_TEST(a < b);
  BOOST_TEST(commit_order(a, b) < 0);
}

BOOST_AUTO_TEST_CASE(vector_clock_encoding_round_trips) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 500; ++round) {
      vector_clock c;
      for (int i = 0, n = static_cast<int>(rng.uniform(0, 8)); i < n; ++i)
        c.set(static_cast<dc_id>(rng.uniform(0, 0xffffffffu)),
              rng.uniform(0, std::numeric_limits<std::uint64_t>::max()));
      auto decoded = vector_clock::decode(c.encode());
      BOOST_TEST_REQUIRE(decoded.has_value());
      BOOST_TEST((*decoded == c));
    }
  }
}

// encode()/decode() write and read the Cereal archive's bytes by hand (the
// request path's clock bytes); the Cereal path stays what journal records
// and messages embed. Both must give the same bytes and accept the same.
BOOST_AUTO_TEST_CASE(vector_clock_direct_codec_matches_the_cereal_archive) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 500; ++round) {
      vector_clock c;
      for (int i = 0, n = static_cast<int>(rng.uniform(0, 8)); i < n; ++i)
        c.set(static_cast<dc_id>(rng.uniform(0, 0xffffffffu)),
              rng.uniform(1, std::numeric_limits<std::uint64_t>::max()));
      const auto direct = c.encode();
      BOOST_TEST_REQUIRE((direct == detail::encode_object(c)));
      // Corrupt one byte: both decoders agree on accept or refuse.
      auto bent = direct;
      bent[rng.uniform(0, bent.size() - 1)] ^= static_cast<char>(1u << rng.uniform(0, 7));
      vector_clock via_cereal;
      bool cereal_ok = static_cast<bool>(detail::decode_object(bent, via_cereal, "vector clock"));
      auto via_direct = vector_clock::decode(bent);
      BOOST_TEST(cereal_ok == via_direct.has_value());
      if (cereal_ok && via_direct)
        BOOST_TEST((via_cereal == *via_direct));
    }
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_rejects_empty_bytes) {
  auto d = vector_clock::decode("");
  BOOST_TEST_REQUIRE(!d.has_value());
  BOOST_TEST(d.err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_rejects_every_truncation) {
  auto bytes = vector_clock{{1, 5}, {3, 1u << 20}}.encode();
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    BOOST_TEST_CONTEXT("prefix length " << len) {
      auto d = vector_clock::decode(std::string_view{bytes}.substr(0, len));
      BOOST_TEST_REQUIRE(!d.has_value());
      BOOST_TEST(d.err().code() == errc::corrupt);
    }
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_rejects_trailing_bytes) {
  auto bytes = vector_clock{{1, 5}}.encode() + '\0';
  auto d = vector_clock::decode(bytes);
  BOOST_TEST_REQUIRE(!d.has_value());
  BOOST_TEST(d.err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_rejects_unknown_version) {
  auto bytes = vector_clock{{1, 5}}.encode();
  // Layout: [0] endianness marker, [1..4] version (u32 little-endian).
  BOOST_TEST_REQUIRE(bytes.size() > 5u);
  BOOST_TEST(static_cast<int>(bytes[1]) == 1);
  bytes[1] = 2;
  auto d = vector_clock::decode(bytes);
  BOOST_TEST_REQUIRE(!d.has_value());
  BOOST_TEST(d.err().code() == errc::corrupt);
  BOOST_TEST(d.err().message().find("version 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_rejects_non_canonical_entries) {
  // Encode valid clocks, then swap or zero fields in place:
  // [0] marker, [1..4] version, [5..8] count, then 12 bytes per entry
  // (dc u32, time u64).
  auto bytes = vector_clock{{1, 5}, {2, 6}}.encode();
  BOOST_TEST_REQUIRE(bytes.size() == 9u + 2 * 12);
  auto unsorted = bytes;
  unsorted[9] = 2;
  unsorted[21] = 1;
  auto duplicate = bytes;
  duplicate[21] = 1;
  auto zero_time = bytes;
  zero_time[13] = 0;
  for (const auto& bad : {unsorted, duplicate, zero_time}) {
    auto d = vector_clock::decode(bad);
    BOOST_TEST_REQUIRE(!d.has_value());
    BOOST_TEST(d.err().code() == errc::corrupt);
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_of_random_bytes_never_throws) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 5000; ++round) {
      std::string bytes(rng.uniform(0, 64), '\0');
      for (auto& ch : bytes)
        ch = static_cast<char>(rng.uniform(0, 255));
      if (rng.chance(0.5) && !bytes.empty())
        bytes[0] = 1; // get past the marker byte half of the time
      auto d = vector_clock::decode(bytes);
      // Whatever decodes must be canonical: it re-encodes to the same bytes.
      if (d.has_value())
        BOOST_TEST((d->encode() == bytes));
      else
        BOOST_TEST(d.err().code() == errc::corrupt);
    }
  }
}

BOOST_AUTO_TEST_CASE(vector_clock_decode_of_huge_count_fails_fast) {
  // A count of 2^32-1 entries with no entry bytes must fail on truncation,
  // not try to allocate 48 GiB.
  auto bytes = vector_clock{}.encode();
  BOOST_TEST_REQUIRE(bytes.size() == 9u);
  for (std::size_t i = 5; i < 9; ++i)
    bytes[i] = static_cast<char>(0xff);
  auto d = vector_clock::decode(bytes);
  BOOST_TEST_REQUIRE(!d.has_value());
  BOOST_TEST(d.err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_SUITE_END()
} // namespace clock_tests
