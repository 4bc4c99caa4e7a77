#include <boost/test/unit_test.hpp>

#include <string>

#include "common/crc32c.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(crc32c_matches_the_published_check_values) {
  // The CRC catalogue's check value for CRC-32C ("123456789"), and the
  // iSCSI test vectors of RFC 3720, appendix B.4 (printed there as the
  // little-endian bytes of the CRC).
  BOOST_TEST(crc32c("123456789") == 0xE3069283u);
  BOOST_TEST(crc32c("") == 0u);
  BOOST_TEST(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  BOOST_TEST(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up.push_back(static_cast<char>(i));
    down.push_back(static_cast<char>(31 - i));
  }
  BOOST_TEST(crc32c(up) == 0x46DD794Eu);
  BOOST_TEST(crc32c(down) == 0x113FDB5Cu);
}

BOOST_AUTO_TEST_CASE(crc32c_extends_over_any_split) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      std::string s(rng.uniform(0, 300), '\0');
      for (auto& c : s)
        c = static_cast<char>(rng.uniform(0, 255));
      auto cut = rng.uniform(0, s.size());
      auto whole = crc32c(s);
      auto split = crc32c_extend(crc32c(std::string_view{s}.substr(0, cut)),
                                 s.data() + cut, s.size() - cut);
      BOOST_TEST(whole == split);
    }
  }
}

BOOST_AUTO_TEST_CASE(crc32c_detects_every_single_bit_flip) {
  std::string s = "a journal record payload of moderate length, 0123456789";
  auto good = crc32c(s);
  for (std::size_t i = 0; i < s.size() * 8; ++i) {
    auto t = s;
    t[i / 8] = static_cast<char>(t[i / 8] ^ (1 << (i % 8)));
    BOOST_TEST(crc32c(t) != good);
  }
}

BOOST_AUTO_TEST_SUITE_END()
