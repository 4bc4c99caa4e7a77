#include <boost/test/unit_test.hpp>

#include <string>

#include "crdt/crdt_object.hpp"
#include "crdt/op_id.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(crdt)

BOOST_AUTO_TEST_CASE(counter_and_fatcounter_are_supported) {
  for (auto t : {crdt_type::counter, crdt_type::fatcounter}) {
    auto obj = crdt_object::make(t);
    BOOST_REQUIRE(obj.has_value());
    BOOST_TEST(obj->type() == t);
    BOOST_TEST(std::get<std::int64_t>(obj->value()) == 0);
  }
}

BOOST_AUTO_TEST_CASE(unsupported_type_is_refused_with_its_name) {
  auto obj = crdt_object::make(crdt_type::orset);
  BOOST_REQUIRE(!obj.has_value());
  BOOST_TEST(obj.err().code() == errc::wrong_type);
  BOOST_TEST(obj.err().message().find("orset") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(object_applies_prepared_effects) {
  auto obj = *crdt_object::make(crdt_type::counter);
  auto eff = obj.prepare(counter_update{7});
  BOOST_REQUIRE(eff.has_value());
  BOOST_REQUIRE(obj.apply(*eff).has_value());
  BOOST_REQUIRE(obj.apply(crdt_effect{counter_effect{-3}}).has_value());
  BOOST_TEST(std::get<std::int64_t>(obj.value()) == 4);
}

BOOST_AUTO_TEST_CASE(object_round_trips_through_encoding) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 100; ++i) {
      auto obj = *crdt_object::make(rng.chance(0.5) ? crdt_type::counter
                                                    : crdt_type::fatcounter);
      BOOST_REQUIRE(obj.apply(counter_effect{rng.uniform_signed(
                                -(1LL << 62), 1LL << 62)})
                      .has_value());
      auto back = crdt_object::decode(obj.encode());
      BOOST_REQUIRE(back.has_value());
      BOOST_TEST((*back == obj));
    }
  }
}

BOOST_AUTO_TEST_CASE(truncated_object_bytes_are_corrupt) {
  auto obj = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(obj.apply(counter_effect{123456789}).has_value());
  auto bytes = obj.encode();
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    auto back = crdt_object::decode(std::string_view{bytes}.substr(0, len));
    BOOST_REQUIRE(!back.has_value());
    BOOST_TEST(back.err().code() == errc::corrupt);
  }
}

BOOST_AUTO_TEST_CASE(trailing_or_foreign_object_bytes_are_corrupt) {
  auto bytes = crdt_object::make(crdt_type::counter)->encode();
  BOOST_TEST(crdt_object::decode(bytes + "x").err().code() == errc::corrupt);
  auto wrong_version = bytes;
  wrong_version[1] = 99; // byte 0 is the portable archive's endianness flag
  BOOST_TEST(crdt_object::decode(wrong_version).err().code() == errc::corrupt);
  auto wrong_type = bytes;
  wrong_type[2] = 4; // orset: not stored by Tally
  BOOST_TEST(crdt_object::decode(wrong_type).err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(effect_round_trips_and_rejects_garbage) {
  crdt_effect e = counter_effect{-42};
  auto bytes = encode_effect(e);
  auto back = decode_effect(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(std::get<counter_effect>(*back).delta == -42);
  BOOST_TEST(decode_effect("").err().code() == errc::corrupt);
  BOOST_TEST(decode_effect(bytes.substr(0, bytes.size() - 1)).err().code()
             == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(wire_type_numbers_match_antidotedb) {
  crdt_type t;
  BOOST_TEST(crdt_type_from_wire(3, t));
  BOOST_TEST((t == crdt_type::counter));
  BOOST_TEST(crdt_type_from_wire(12, t));
  BOOST_TEST((t == crdt_type::fatcounter));
  BOOST_TEST(!crdt_type_from_wire(7, t));
  BOOST_TEST(!crdt_type_from_wire(0, t));
  BOOST_TEST(!is_supported(crdt_type::bcounter));
}

BOOST_AUTO_TEST_CASE(op_ids_hash_apart) {
  BOOST_TEST((op_id{1, 2} == op_id{1, 2}));
  BOOST_TEST((op_id{1, 2}.hash() != op_id{2, 1}.hash()));
  BOOST_TEST((op_id{1, 2}.hash() != op_id{1, 3}.hash()));
}

BOOST_AUTO_TEST_SUITE_END()
