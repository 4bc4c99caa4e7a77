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

BOOST_AUTO_TEST_CASE(every_known_type_makes_an_object) {
  for (auto t : {crdt_type::counter, crdt_type::orset, crdt_type::lwwreg,
                 crdt_type::mvreg, crdt_type::gmap, crdt_type::rwset,
                 crdt_type::rrmap, crdt_type::fatcounter, crdt_type::flag_ew,
                 crdt_type::flag_dw, crdt_type::bcounter, crdt_type::gset}) {
    auto obj = crdt_object::make(t);
    BOOST_REQUIRE(obj.has_value());
    BOOST_TEST(obj->type() == t);
    auto back = crdt_object::decode(obj->encode());
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST((*back == *obj));
  }
  auto none = crdt_object::make(static_cast<crdt_type>(7));
  BOOST_REQUIRE(!none.has_value());
  BOOST_TEST(none.err().code() == errc::wrong_type);
}

BOOST_AUTO_TEST_CASE(set_register_and_flag_objects_prepare_apply_and_round_trip) {
  downstream_context ctx{token_source{77}, 1000};
  auto set = *crdt_object::make(crdt_type::orset);
  auto add = set.prepare(crdt_update{set_update{set_add{{"b", "a"}}}}, ctx);
  BOOST_REQUIRE(add.has_value());
  BOOST_TEST((effect_type(*add) == crdt_type::orset));
  BOOST_REQUIRE(set.apply(*add).has_value());
  auto rm = set.prepare(crdt_update{set_update{set_remove{{"a"}}}}, ctx);
  BOOST_REQUIRE(set.apply(*rm).has_value());
  BOOST_TEST((set.value() == crdt_value{std::vector<std::string>{"b"}}));

  auto reg = *crdt_object::make(crdt_type::lwwreg);
  auto put = reg.prepare(crdt_update{register_update{register_assign{"v", {}}}}, ctx);
  BOOST_REQUIRE(reg.apply(*put).has_value());
  BOOST_TEST((reg.value() == crdt_value{std::string{"v"}}));

  auto flag = *crdt_object::make(crdt_type::flag_ew);
  auto on = flag.prepare(crdt_update{flag_update::enable}, ctx);
  BOOST_REQUIRE(flag.apply(*on).has_value());
  BOOST_TEST((flag.value() == crdt_value{true}));

  for (const auto* obj : {&set, &reg, &flag}) {
    auto bytes = obj->encode();
    BOOST_TEST(bytes[0] == 2); // format 2 (crdt/crdt_codec.hpp)
    auto back = crdt_object::decode(bytes);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST((*back == *obj));
    for (std::size_t len = 0; len < bytes.size(); ++len)
      BOOST_TEST(!crdt_object::decode(bytes.substr(0, len)).has_value());
  }
  for (const auto& e : {*add, *rm, *put, *on}) {
    auto back = decode_effect(encode_effect(e));
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST((*back == e));
  }
}

BOOST_AUTO_TEST_CASE(wrong_update_or_effect_type_is_refused_unchanged) {
  downstream_context ctx{token_source{1}, 0};
  auto set = *crdt_object::make(crdt_type::orset);
  auto bad = set.prepare(crdt_update{flag_update::enable}, ctx);
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.err().code() == errc::wrong_type);
  BOOST_TEST(bad.err().message().find("orset") != std::string::npos);
  auto before = set;
  BOOST_TEST(set.apply(crdt_effect{counter_effect{1}}).err().code() == errc::wrong_type);
  BOOST_TEST((set == before));
  // Types whose effects draw tokens need a context.
  BOOST_TEST(set.prepare(crdt_update{set_update{set_add{{"x"}}}}).err().code()
             == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(counter_bytes_stay_in_format_one) {
  // Journals and checkpoints written before other types existed hold these
  // exact bytes: counters are still written (and read) so.
  auto obj = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(obj.apply(counter_effect{5}).has_value());
  const std::string object_v1{"\x01\x01\x03\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00", 15};
  BOOST_TEST(obj.encode() == object_v1);
  const std::string effect_v1{"\x01\x01\x00\x00\x00\x00\xfd\xff\xff\xff\xff\xff\xff\xff", 14};
  BOOST_TEST(encode_effect(counter_effect{-3}) == effect_v1);
}

BOOST_AUTO_TEST_CASE(values_round_trip_and_refuse_garbage) {
  map_value m;
  m.entries.push_back({map_key{"a", crdt_type::orset},
                       crdt_value{std::vector<std::string>{"x", "y"}}});
  m.entries.push_back({map_key{"b", crdt_type::flag_dw}, crdt_value{false}});
  for (const auto& v : {crdt_value{std::int64_t{-9}}, crdt_value{true},
                        crdt_value{std::string{"reg"}},
                        crdt_value{std::vector<std::string>{"", "z"}}, crdt_value{m}}) {
    auto bytes = encode_value(v);
    auto back = decode_value(bytes);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST((*back == v));
    BOOST_TEST(!decode_value(bytes + "x").has_value());
    for (std::size_t len = 0; len < bytes.size(); ++len)
      BOOST_TEST(!decode_value(bytes.substr(0, len)).has_value());
  }
  BOOST_TEST(decode_value("\x09").err().code() == errc::corrupt);
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
  BOOST_TEST(is_supported(crdt_type::bcounter));
  BOOST_TEST(!is_supported(crdt_type::gset));
}

BOOST_AUTO_TEST_CASE(op_ids_hash_apart) {
  BOOST_TEST((op_id{1, 2} == op_id{1, 2}));
  BOOST_TEST((op_id{1, 2}.hash() != op_id{2, 1}.hash()));
  BOOST_TEST((op_id{1, 2}.hash() != op_id{1, 3}.hash()));
}

BOOST_AUTO_TEST_SUITE_END()
