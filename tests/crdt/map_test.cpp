// Grow-only and remove-resets maps: nested updates, removal, nested values.
#include <boost/test/unit_test.hpp>

#include "crdt/crdt_codec.hpp"
#include "crdt/map_op_shape.hpp"
#include "tests/crdt/causal_simulation.hpp"

using namespace tally;

namespace {

using strings = std::vector<std::string>;

keyed_update nested(std::string key, crdt_type type, any_update u) {
  return {{std::move(key), type}, std::move(u)};
}

map_update updates(std::vector<keyed_update> u) {
  map_update m;
  m.updates = std::move(u);
  return m;
}

map_update removes(std::vector<map_key> keys) {
  map_update m;
  m.removes = std::move(keys);
  return m;
}

any_state after(crdt_type type, any_state s, const any_update& u,
                std::uint64_t origin) {
  downstream_context ctx{token_source{origin}, 1};
  auto e = prepare(type, s, u, ctx);
  TALLY_REQUIRE_OK(e);
  auto st = apply(type, s, *e);
  TALLY_REQUIRE_OK(st);
  return s;
}

const map_value& entries(const any_value& v) { return std::get<map_value>(v); }

} // namespace

BOOST_AUTO_TEST_SUITE(maps)

BOOST_AUTO_TEST_CASE(gmap_reads_nested_values_by_key_and_type) {
  auto m = after(crdt_type::gmap, make_state(crdt_type::gmap),
                 updates({nested("x", crdt_type::counter, counter_update{5}),
                          nested("x", crdt_type::orset,
                                 set_update{set_add{{"b", "a"}}}),
                          nested("f", crdt_type::flag_ew, flag_update::enable)}),
                 1);
  const auto v = value_of(m);
  const auto& e = entries(v).entries;
  BOOST_REQUIRE(e.size() == 3u);
  BOOST_TEST((e[0].key == map_key{"f", crdt_type::flag_ew}));
  BOOST_TEST(std::get<bool>(e[0].value));
  BOOST_TEST((e[1].key == map_key{"x", crdt_type::counter}));
  BOOST_TEST(std::get<std::int64_t>(e[1].value) == 5);
  BOOST_TEST((std::get<strings>(e[2].value) == strings{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(gmap_refuses_remove_reset_and_repeated_keys) {
  const auto m = make_state(crdt_type::gmap);
  downstream_context ctx{token_source{1}, 1};
  auto rm = prepare(crdt_type::gmap, m, removes({{"x", crdt_type::orset}}), ctx);
  BOOST_REQUIRE(!rm.has_value());
  BOOST_TEST((rm.err().code() == errc::wrong_type));
  auto twice = prepare(crdt_type::gmap, m,
                       updates({nested("x", crdt_type::counter, counter_update{1}),
                                nested("x", crdt_type::counter, counter_update{2})}),
                       ctx);
  BOOST_REQUIRE(!twice.has_value());
  BOOST_TEST((twice.err().code() == errc::invalid_argument));
  auto wrong = prepare(crdt_type::gmap, m,
                       updates({nested("x", crdt_type::orset, counter_update{1})}),
                       ctx);
  BOOST_REQUIRE(!wrong.has_value());
  BOOST_TEST((wrong.err().code() == errc::wrong_type));
}

BOOST_AUTO_TEST_CASE(rrmap_remove_resets_the_entry_and_hides_it) {
  auto m = after(crdt_type::rrmap, make_state(crdt_type::rrmap),
                 updates({nested("s", crdt_type::orset, set_update{set_add{{"a"}}}),
                          nested("c", crdt_type::counter, counter_update{3})}),
                 1);
  m = after(crdt_type::rrmap, m,
            removes({{"s", crdt_type::orset}, {"c", crdt_type::counter}}), 2);
  const auto v = value_of(m);
  const auto& e = entries(v).entries;
  // A counter has no reset: AntidoteDB leaves it in place.
  BOOST_REQUIRE(e.size() == 1u);
  BOOST_TEST((e[0].key == map_key{"c", crdt_type::counter}));
  BOOST_TEST(std::get<std::int64_t>(e[0].value) == 3);
}

BOOST_AUTO_TEST_CASE(rrmap_update_concurrent_with_remove_keeps_only_the_update) {
  const auto base = after(crdt_type::rrmap, make_state(crdt_type::rrmap),
                          updates({nested("s", crdt_type::orset,
                                          set_update{set_add{{"old"}}})}),
                          1);
  downstream_context c1{token_source{10}, 1}, c2{token_source{20}, 1};
  auto rm = prepare(crdt_type::rrmap, base, removes({{"s", crdt_type::orset}}), c1);
  auto add = prepare(crdt_type::rrmap, base,
                     updates({nested("s", crdt_type::orset,
                                     set_update{set_add{{"new"}}})}),
                     c2);
  TALLY_REQUIRE_OK(rm);
  TALLY_REQUIRE_OK(add);
  auto x = base, y = base;
  BOOST_REQUIRE(apply(crdt_type::rrmap, x, *rm).has_value());
  BOOST_REQUIRE(apply(crdt_type::rrmap, x, *add).has_value());
  BOOST_REQUIRE(apply(crdt_type::rrmap, y, *add).has_value());
  BOOST_REQUIRE(apply(crdt_type::rrmap, y, *rm).has_value());
  BOOST_TEST((x == y));
  const auto v = value_of(x);
  const auto& e = entries(v).entries;
  BOOST_REQUIRE(e.size() == 1u);
  BOOST_TEST((std::get<strings>(e[0].value) == strings{"new"}));
}

BOOST_AUTO_TEST_CASE(rrmap_reset_removes_every_resettable_entry) {
  auto m = after(crdt_type::rrmap, make_state(crdt_type::rrmap),
                 updates({nested("a", crdt_type::flag_dw, flag_update::enable),
                          nested("b", crdt_type::mvreg,
                                 register_update{register_assign{"v", {}}}),
                          nested("n", crdt_type::rrmap,
                                 updates({nested("z", crdt_type::rwset,
                                                 set_update{set_add{{"q"}}})}))}),
                 1);
  BOOST_TEST(entries(value_of(m)).entries.size() == 3u);
  map_update reset;
  reset.reset = true;
  m = after(crdt_type::rrmap, m, reset, 2);
  BOOST_TEST(entries(value_of(m)).entries.empty());
  BOOST_TEST(is_bottom(m));
}

BOOST_AUTO_TEST_CASE(rrmap_reset_with_other_operations_is_refused) {
  map_update u = removes({{"a", crdt_type::orset}});
  u.reset = true;
  downstream_context ctx{token_source{1}, 1};
  auto e = prepare(crdt_type::rrmap, make_state(crdt_type::rrmap), u, ctx);
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST((e.err().code() == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(failed_nested_effect_leaves_the_map_unchanged) {
  auto m = after(crdt_type::gmap, make_state(crdt_type::gmap),
                 updates({nested("big", crdt_type::counter,
                                 counter_update{INT64_MAX - 1})}),
                 1);
  const auto before = m;
  g_map_effect e;
  e.updates.push_back({{"a", crdt_type::counter}, counter_effect{1}});
  e.updates.push_back({{"big", crdt_type::counter}, counter_effect{5}});
  auto st = apply(crdt_type::gmap, m, e);
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST((st.err().code() == errc::overflow));
  BOOST_TEST((m == before));
}

BOOST_AUTO_TEST_CASE(maps_nest_at_most_max_depth_levels) {
  // `levels` maps, each holding the next under "k", a counter innermost.
  auto nested_update = [](int levels) {
    any_update u = counter_update{1};
    crdt_type inner = crdt_type::counter;
    for (int i = 1; i < levels; ++i) {
      u = updates({nested("k", inner, u)});
      inner = crdt_type::gmap;
    }
    return updates({nested("k", inner, u)});
  };
  constexpr int limit = byte_reader::max_depth;
  for (auto type : {crdt_type::gmap, crdt_type::rrmap}) {
    auto ok = after(type, make_state(type), nested_update(limit), 1);
    auto back = decode_typed_state(encode_typed_state(type, ok));
    TALLY_REQUIRE_OK(back);
    BOOST_TEST((back->state == ok));
    downstream_context ctx{token_source{2}, 1};
    auto deep = prepare(type, make_state(type), nested_update(limit + 1), ctx);
    BOOST_REQUIRE(!deep.has_value());
    BOOST_TEST((deep.err().code() == errc::invalid_argument));
  }
}

BOOST_AUTO_TEST_CASE(bytes_nesting_deeper_than_the_limit_are_refused) {
  // Hand-made: version 2, gmap, then per level one entry "k" of type gmap.
  auto bytes = [](int levels) {
    std::string b{"\x02\x08"};
    for (int i = 1; i < levels; ++i)
      b += std::string{"\x01\x01k\x08"};
    return b + '\0';
  };
  BOOST_TEST(decode_typed_state(bytes(byte_reader::max_depth)).has_value());
  auto deep = decode_typed_state(bytes(byte_reader::max_depth + 1));
  BOOST_REQUIRE(!deep.has_value());
  BOOST_TEST((deep.err().code() == errc::corrupt));
  BOOST_TEST(deep.err().message().find("nesting") != std::string::npos);
  // Far deeper input is refused just as well, without exhausting the stack.
  BOOST_TEST(!decode_typed_state(bytes(100000)).has_value());
}

// The exactly-once gate compares a map update's shape: a resend prepared at
// a later state (fresh tokens, the original's remove applied) has the same
// shape; another delta, entry or nested map content does not.
BOOST_AUTO_TEST_CASE(a_map_update_prepared_again_later_keeps_its_shape) {
  auto update = [](std::int64_t apples) {
    map_update u = updates({nested("apples", crdt_type::counter, counter_update{apples}),
                            nested("tags", crdt_type::orset, set_update{set_add{{"red"}}}),
                            nested("inner", crdt_type::gmap,
                                   updates({nested("n", crdt_type::counter, counter_update{2})}))});
    u.removes = {map_key{"old", crdt_type::orset}};
    return u;
  };
  auto start = after(crdt_type::rrmap, make_state(crdt_type::rrmap),
                     updates({nested("old", crdt_type::orset, set_update{set_add{{"x"}}})}), 1);
  downstream_context first_ctx{token_source{2}, 1};
  auto first = prepare(crdt_type::rrmap, start, update(3), first_ctx);
  TALLY_REQUIRE_OK(first);
  auto later = start;
  TALLY_REQUIRE_OK(apply(crdt_type::rrmap, later, *first));
  downstream_context again_ctx{token_source{3}, 2};
  auto again = prepare(crdt_type::rrmap, later, update(3), again_ctx);
  TALLY_REQUIRE_OK(again);
  BOOST_TEST(!(*first == *again)); // fresh tokens, nothing left to remove
  BOOST_REQUIRE(map_op_shape(*first).has_value());
  BOOST_TEST((map_op_shape(*first) == map_op_shape(*again)));
  downstream_context other_ctx{token_source{4}, 3};
  auto other = prepare(crdt_type::rrmap, later, update(4), other_ctx);
  TALLY_REQUIRE_OK(other);
  BOOST_TEST((map_op_shape(*first) != map_op_shape(*other)));
  auto fewer = prepare(crdt_type::rrmap, later,
                       updates({nested("apples", crdt_type::counter, counter_update{3})}),
                       other_ctx);
  TALLY_REQUIRE_OK(fewer);
  BOOST_TEST((map_op_shape(*first) != map_op_shape(*fewer)));
  BOOST_TEST(!map_op_shape(any_effect{counter_effect{3}}).has_value());
  BOOST_TEST(has_nested_counter(update(3)));
  BOOST_TEST(!has_nested_counter(updates({nested("t", crdt_type::orset, set_update{set_add{{"a"}}})})));
  BOOST_TEST(has_nested_counter(
    updates({nested("i", crdt_type::gmap,
                    updates({nested("n", crdt_type::fatcounter, counter_update{1})}))})));
}

BOOST_AUTO_TEST_SUITE_END()
