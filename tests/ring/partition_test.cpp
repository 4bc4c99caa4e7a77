#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ring/partition.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(ring)

BOOST_AUTO_TEST_CASE(ring_size_accepts_every_power_of_two_up_to_65536) {
  for (std::uint32_t q = 1; q <= max_partition_count; q *= 2)
    BOOST_TEST(check_partition_count(q).has_value(), "q = " << q);
  BOOST_TEST(default_partition_count == 64u);
  BOOST_TEST(check_partition_count(default_partition_count).has_value());
}

BOOST_AUTO_TEST_CASE(ring_size_rejects_zero_non_powers_and_sizes_above_65536) {
  for (std::uint32_t q : {0u, 3u, 6u, 12u, 100u, 65535u, 65537u, 131072u, 1u << 31,
                          0xffffffffu}) {
    auto st = check_partition_count(q);
    BOOST_TEST_REQUIRE(!st.has_value(), "q = " << q);
    BOOST_TEST(st.err().code() == errc::invalid_argument);
    BOOST_TEST(st.err().message().find(std::to_string(q)) != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(partition_index_is_the_top_log2_q_bits) {
  BOOST_TEST(partition_bits(1) == 0u);
  BOOST_TEST(partition_bits(64) == 6u);
  BOOST_TEST(partition_bits(65536) == 16u);
  for (std::uint32_t q = 1; q <= max_partition_count; q *= 2) {
    BOOST_TEST(partition_index(0, q) == 0u);
    BOOST_TEST(partition_index(~std::uint64_t{0}, q) == q - 1);
    // The last position of partition i and the first of partition i+1.
    const std::uint64_t arc = q == 1 ? 0 : (std::uint64_t{1} << (64 - partition_bits(q)));
    if (q > 1) {
      BOOST_TEST(partition_index(arc - 1, q) == 0u);
      BOOST_TEST(partition_index(arc, q) == 1u);
      BOOST_TEST(partition_index(std::uint64_t{1} << 63, q) == q / 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(key_positions_are_fixed_forever) {
  // Stored data lives where these say: a change here strands every journal.
  struct vector_case {
    const char* bucket;
    const char* key;
    std::uint64_t position;
    std::uint32_t p64;
    std::uint32_t p1024;
  };
  const vector_case cases[] = {
    {"counters", "alice", 0x3971714b1548db70ULL, 14, 229},
    {"counters", "bob", 0x9f79db9f25c58502ULL, 39, 637},
    {"", "", 0x0000000000000000ULL, 0, 0},
    {"b", "k", 0xb73694f4e324b0ebULL, 45, 732},
    {"bucket-with-a-long-name", "key/with/slashes", 0x3e03a7395af35cc3ULL, 15, 248},
  };
  for (const auto& c : cases) {
    BOOST_TEST(ring_position(c.bucket, c.key) == c.position, c.bucket << "/" << c.key);
    BOOST_TEST(*partition_for(c.bucket, c.key, 64) == c.p64);
    BOOST_TEST(*partition_for(c.bucket, c.key, 1024) == c.p1024);
  }
}

BOOST_AUTO_TEST_CASE(bucket_and_key_are_hashed_unambiguously) {
  BOOST_TEST(ring_position("ab", "c") != ring_position("a", "bc"));
  BOOST_TEST(ring_position("abc", "") != ring_position("", "abc"));
  BOOST_TEST(ring_position("a", "b") != ring_position("b", "a"));
  BOOST_TEST(ring_position("bucket", "key") != ring_position("bucket2", "key"));
}

BOOST_AUTO_TEST_CASE(partition_for_rejects_an_invalid_ring_size) {
  auto p = partition_for("b", "k", 48);
  BOOST_TEST_REQUIRE(!p.has_value());
  BOOST_TEST(p.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(keys_spread_evenly_over_partitions) {
  // 64 partitions, 1000 keys each on average: a uniform hash stays within
  // +-15% (about 5 standard deviations); a biased one does not.
  constexpr std::uint32_t q = 64;
  constexpr int per_partition = 1000;
  std::vector<int> hits(q, 0);
  for (int i = 0; i < static_cast<int>(q) * per_partition; ++i)
    ++hits[*partition_for("counters", "user:" + std::to_string(i), q)];
  for (std::uint32_t p = 0; p < q; ++p) {
    BOOST_TEST(hits[p] > per_partition * 85 / 100, "partition " << p);
    BOOST_TEST(hits[p] < per_partition * 115 / 100, "partition " << p);
  }
}

BOOST_AUTO_TEST_SUITE_END()
