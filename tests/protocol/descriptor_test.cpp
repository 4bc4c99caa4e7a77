#include <boost/test/unit_test.hpp>

#include <string>

#include "protocol/descriptor.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

std::string bytes(std::initializer_list<int> list) {
  std::string out;
  for (int b : list)
    out.push_back(static_cast<char>(b));
  return out;
}

const std::string ignore_otp25 =
  bytes({0x83, 0x64, 0x00, 0x06, 0x69, 0x67, 0x6e, 0x6f, 0x72, 0x65});
const std::string ignore_otp26 =
  bytes({0x83, 0x77, 0x06, 0x69, 0x67, 0x6e, 0x6f, 0x72, 0x65});

tx_descriptor sample_descriptor() {
  tx_descriptor d;
  d.tx = tx_id{0x1122334455667788ULL, 42};
  d.owner = "tally@127.0.0.1:9100";
  d.owner_incarnation = 1700000000123456ULL;
  d.snapshot = vector_clock{{1, 5000}, {7, 9}};
  d.secret = 0x0123456789abcdefULL;
  return d;
}

} // namespace

BOOST_AUTO_TEST_SUITE(protocol_descriptor)

BOOST_AUTO_TEST_CASE(erlang_ignore_and_empty_bytes_mean_no_snapshot) {
  BOOST_TEST(is_no_snapshot(""));
  BOOST_TEST(is_no_snapshot(ignore_otp25));
  BOOST_TEST(is_no_snapshot(ignore_otp26));
  BOOST_TEST(is_no_snapshot(bytes({0x83, 0x76, 0x00, 0x06, 'i', 'g', 'n', 'o',
                                   'r', 'e'})));
  BOOST_TEST(is_no_snapshot(bytes({0x83, 0x73, 0x06, 'i', 'g', 'n', 'o', 'r',
                                   'e'})));
}

BOOST_AUTO_TEST_CASE(other_erlang_terms_and_clocks_are_snapshots) {
  BOOST_TEST(!is_no_snapshot(ignore_otp25.substr(0, 9)));
  BOOST_TEST(!is_no_snapshot(ignore_otp26 + "x"));
  // term_to_binary(ignorf), term_to_binary(undefined)
  BOOST_TEST(!is_no_snapshot(bytes({0x83, 0x77, 0x06, 'i', 'g', 'n', 'o', 'r',
                                    'f'})));
  BOOST_TEST(!is_no_snapshot(bytes({0x83, 0x77, 0x09, 'u', 'n', 'd', 'e', 'f',
                                    'i', 'n', 'e', 'd'})));
  BOOST_TEST(!is_no_snapshot(encode_clock(vector_clock{})));
  BOOST_TEST(!is_no_snapshot(encode_clock(vector_clock{{1, 2}})));
}

BOOST_AUTO_TEST_CASE(clock_bytes_round_trip) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 200; ++i) {
      vector_clock c;
      for (auto n = rng.uniform(0, 5); n > 0; --n)
        c.set(static_cast<dc_id>(rng.uniform(0, 1000)),
              rng.uniform(0, ~0ULL));
      auto bytes = encode_clock(c);
      BOOST_TEST(static_cast<unsigned char>(bytes[0]) == clock_bytes_tag);
      auto back = decode_clock(bytes);
      BOOST_REQUIRE(back.has_value());
      BOOST_TEST((*back == c));
    }
  }
}

BOOST_AUTO_TEST_CASE(antidote_clock_bytes_are_refused_clearly) {
  // term_to_binary(#{dc1 => 1}) style bytes: an Erlang term.
  auto st = decode_clock(bytes({0x83, 0x74, 0, 0, 0, 1, 0x64, 0, 3, 'd', 'c',
                                '1', 0x61, 1}));
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::invalid_argument);
  BOOST_TEST(st.err().message().find("Erlang") != std::string::npos);
  auto other = decode_clock("hello");
  BOOST_REQUIRE(!other.has_value());
  BOOST_TEST(other.err().code() == errc::invalid_argument);
  BOOST_TEST(other.err().message().find("0x68") != std::string::npos);
  BOOST_TEST(decode_clock("").err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(damaged_tally_clock_bytes_are_corrupt) {
  auto good = encode_clock(vector_clock{{3, 77}});
  for (std::size_t len = 1; len < good.size(); ++len)
    BOOST_TEST(decode_clock(good.substr(0, len)).err().code() == errc::corrupt);
  BOOST_TEST(decode_clock(good + "z").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(tx_descriptor_round_trips) {
  auto d = sample_descriptor();
  auto bytes = encode_tx_descriptor(d);
  BOOST_TEST(static_cast<unsigned char>(bytes[0]) == tx_descriptor_tag);
  BOOST_TEST(static_cast<unsigned char>(bytes[1]) == tx_descriptor::format_version);
  auto back = decode_tx_descriptor(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == d));

  tx_descriptor empty;
  auto back_empty = decode_tx_descriptor(encode_tx_descriptor(empty));
  BOOST_REQUIRE(back_empty.has_value());
  BOOST_TEST((*back_empty == empty));
}

// Version 1 (before stop 33) had no secret: such bytes still decode, with
// secret 0, which names no transaction at any server.
BOOST_AUTO_TEST_CASE(a_version_1_descriptor_still_decodes_without_a_secret) {
  auto d = sample_descriptor();
  auto v2 = encode_tx_descriptor(d);
  // Version 1's layout: version 1, and no secret after the sequence number.
  std::string v1 = v2.substr(0, 1) + std::string(1, '\x01') + v2.substr(2, 16) + v2.substr(26);
  auto back = decode_tx_descriptor(v1);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->secret == 0u);
  d.secret = 0;
  BOOST_TEST((*back == d));
}

BOOST_AUTO_TEST_CASE(truncated_or_trailing_descriptor_is_corrupt) {
  auto bytes = encode_tx_descriptor(sample_descriptor());
  for (std::size_t len = 1; len < bytes.size(); ++len) {
    auto r = decode_tx_descriptor(bytes.substr(0, len));
    BOOST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::corrupt);
  }
  BOOST_TEST(decode_tx_descriptor(bytes + '\0').err().code() == errc::corrupt);
  auto future = bytes;
  future[1] = 3;
  auto r = decode_tx_descriptor(future);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::corrupt);
  BOOST_TEST(r.err().message().find("version 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(foreign_descriptor_is_refused_clearly) {
  auto erlang = decode_tx_descriptor(bytes({0x83, 0x68, 0x02, 0x61, 1, 0x61, 2}));
  BOOST_REQUIRE(!erlang.has_value());
  BOOST_TEST(erlang.err().code() == errc::invalid_argument);
  BOOST_TEST(erlang.err().message().find("Erlang") != std::string::npos);
  BOOST_TEST(decode_tx_descriptor("").err().code() == errc::invalid_argument);
  BOOST_TEST(decode_tx_descriptor("txd-1").err().code()
             == errc::invalid_argument);
  // A clock is not a descriptor.
  BOOST_TEST(decode_tx_descriptor(encode_clock(vector_clock{})).err().code()
             == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(descriptor_length_fields_cannot_overrun) {
  auto bytes = encode_tx_descriptor(sample_descriptor());
  // The owner length sits after tag, version and four u64s.
  auto huge = bytes;
  huge[34] = huge[35] = huge[36] = huge[37] = '\xff';
  BOOST_TEST(decode_tx_descriptor(huge).err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_SUITE_END()
