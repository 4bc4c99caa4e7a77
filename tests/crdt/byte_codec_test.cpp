// The bounds-checked reader under the CRDT encodings.
#include <boost/test/unit_test.hpp>

#include <limits>

#include "crdt/byte_codec.hpp"
#include "crdt/crdt_type.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(byte_codec)

BOOST_AUTO_TEST_CASE(integers_round_trip) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    std::vector<std::uint64_t> u{0, 1, 127, 128, 16383, 16384,
                                 std::numeric_limits<std::uint64_t>::max()};
    std::vector<std::int64_t> s{0, -1, 1, std::numeric_limits<std::int64_t>::min(),
                                std::numeric_limits<std::int64_t>::max()};
    for (int i = 0; i < 200; ++i) {
      u.push_back(rng.gen() >> rng.uniform(0, 63));
      s.push_back(static_cast<std::int64_t>(rng.gen() >> rng.uniform(0, 63))
                  * (rng.chance(0.5) ? 1 : -1));
    }
    byte_writer out;
    for (auto v : u)
      out.varint(v);
    for (auto v : s)
      out.svarint(v);
    const auto bytes = std::move(out).take();
    byte_reader in{bytes};
    for (auto v : u)
      BOOST_TEST_REQUIRE(in.varint() == v);
    for (auto v : s)
      BOOST_TEST_REQUIRE(in.svarint() == v);
    BOOST_TEST(in.finish().has_value());
  }
}

BOOST_AUTO_TEST_CASE(overlong_and_oversized_varints_are_refused) {
  for (std::string bad : {std::string{"\x80\x00", 2},
                          std::string(10, '\xff') + '\x01',
                          std::string(9, '\xff') + '\x02',
                          std::string{"\x80"}}) {
    byte_reader in{bad};
    (void)in.varint();
    auto st = in.finish();
    BOOST_REQUIRE(!st.has_value());
    BOOST_TEST((st.err().code() == errc::corrupt));
  }
}

BOOST_AUTO_TEST_CASE(lengths_and_counts_beyond_the_input_are_refused) {
  byte_writer w;
  w.varint(1'000'000'000); // claims a gigabyte
  w.u8('x');
  const auto bytes = std::move(w).take();
  byte_reader a{bytes};
  BOOST_TEST(a.bytes().empty());
  BOOST_TEST(!a.finish().has_value());
  byte_reader b{bytes};
  BOOST_TEST(b.count(1) == 0u);
  BOOST_TEST(!b.finish().has_value());
}

BOOST_AUTO_TEST_CASE(first_failure_sticks_and_trailing_bytes_fail) {
  byte_reader in{std::string_view{"\x05", 1}};
  (void)in.boolean(); // 5 is not a boolean
  (void)in.u8();      // nothing left; the first message stays
  auto st = in.finish();
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().message().find("boolean") != std::string::npos);
  byte_reader extra{std::string_view{"\x01\x02", 2}};
  (void)extra.u8();
  BOOST_TEST(!extra.finish().has_value());
}

BOOST_AUTO_TEST_CASE(gset_type_number_never_comes_from_the_wire) {
  crdt_type t;
  BOOST_TEST(!crdt_type_from_wire(static_cast<std::uint32_t>(crdt_type::gset), t));
  BOOST_TEST(to_string(crdt_type::gset) == "gset");
  BOOST_TEST(!is_supported(crdt_type::gset));
}

BOOST_AUTO_TEST_SUITE_END()
