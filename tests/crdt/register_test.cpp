// Last-writer-wins and multi-value registers: how concurrent assigns resolve.
#include <boost/test/unit_test.hpp>

#include "crdt/lww_register.hpp"
#include "crdt/mv_register.hpp"

using namespace tally;

namespace {

register_update assign(std::string v, std::optional<std::uint64_t> ts = {}) {
  return register_assign{std::move(v), ts};
}

template <class Reg, class Effect>
Reg applied(Reg r, const std::vector<Effect>& effects) {
  for (const auto& e : effects)
    BOOST_REQUIRE(r.apply(e).has_value());
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(registers)

BOOST_AUTO_TEST_CASE(lww_reads_the_last_assign_and_starts_empty) {
  lww_register r;
  BOOST_TEST(r.value() == "");
  BOOST_TEST(r.is_bottom());
  downstream_context ctx{token_source{1}, 50};
  auto e = r.prepare(assign("a"), ctx);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->timestamp == 50u);
  BOOST_REQUIRE(r.apply(*e).has_value());
  BOOST_TEST(r.value() == "a");
}

BOOST_AUTO_TEST_CASE(lww_later_local_assign_wins_even_with_a_clock_behind) {
  lww_register r;
  downstream_context ctx{token_source{1}, 100};
  BOOST_REQUIRE(r.apply(*r.prepare(assign("first"), ctx)).has_value());
  ctx.now_us = 10; // the clock went back
  auto e = r.prepare(assign("second"), ctx);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->timestamp == 101u);
  BOOST_REQUIRE(r.apply(*e).has_value());
  BOOST_TEST(r.value() == "second");
}

BOOST_AUTO_TEST_CASE(lww_concurrent_assigns_resolve_to_the_larger_timestamp) {
  lww_register base;
  downstream_context ctx{token_source{1}, 1};
  auto older = *base.prepare(assign("zzz", 5), ctx);
  auto newer = *base.prepare(assign("aaa", 7), ctx);
  BOOST_TEST(applied(base, std::vector{older, newer}).value() == "aaa");
  BOOST_TEST(applied(base, std::vector{newer, older}).value() == "aaa");
}

BOOST_AUTO_TEST_CASE(lww_timestamp_ties_break_by_value_on_every_replica) {
  lww_register base;
  downstream_context ctx{token_source{1}, 1};
  auto a = *base.prepare(assign("apple", 9), ctx);
  auto b = *base.prepare(assign("banana", 9), ctx);
  auto x = applied(base, std::vector{a, b});
  auto y = applied(base, std::vector{b, a});
  BOOST_TEST(x.value() == "banana");
  BOOST_TEST((x == y));
}

BOOST_AUTO_TEST_CASE(lww_reset_assigns_the_empty_value_after_what_it_saw) {
  lww_register r;
  downstream_context ctx{token_source{1}, 20};
  BOOST_REQUIRE(r.apply(*r.prepare(assign("v"), ctx)).has_value());
  ctx.now_us = 5;
  auto e = r.prepare(register_reset{}, ctx);
  BOOST_REQUIRE(e.has_value());
  BOOST_REQUIRE(r.apply(*e).has_value());
  BOOST_TEST(r.value() == "");
  BOOST_TEST(r.timestamp() == 21u);
  BOOST_TEST(!r.is_bottom()); // a reset register still orders later writes
}

BOOST_AUTO_TEST_CASE(mv_keeps_every_concurrent_value) {
  mv_register base;
  downstream_context c1{token_source{1}, 1}, c2{token_source{2}, 1};
  auto x = *base.prepare(assign("x"), c1);
  auto y = *base.prepare(assign("y"), c2);
  auto r1 = applied(base, std::vector{x, y});
  auto r2 = applied(base, std::vector{y, x});
  BOOST_TEST((r1 == r2));
  BOOST_TEST((r1.value() == std::vector<std::string>{"x", "y"}));
  // An assign that saw both replaces both.
  downstream_context c3{token_source{3}, 1};
  auto z = *r1.prepare(assign("z"), c3);
  BOOST_TEST((applied(r1, std::vector{z}).value() == std::vector<std::string>{"z"}));
}

BOOST_AUTO_TEST_CASE(mv_same_value_assigned_concurrently_reads_twice) {
  mv_register base;
  downstream_context c1{token_source{1}, 1}, c2{token_source{2}, 1};
  auto a = *base.prepare(assign("v"), c1);
  auto b = *base.prepare(assign("v"), c2);
  BOOST_TEST((applied(base, std::vector{a, b}).value()
              == std::vector<std::string>{"v", "v"}));
}

BOOST_AUTO_TEST_CASE(mv_reset_clears_what_it_saw_but_not_a_concurrent_assign) {
  mv_register base;
  downstream_context c1{token_source{1}, 1}, c2{token_source{2}, 1};
  base = applied(base, std::vector{*base.prepare(assign("old"), c1)});
  auto reset = *base.prepare(register_reset{}, c1);
  auto fresh = *base.prepare(assign("new"), c2);
  auto x = applied(base, std::vector{reset, fresh});
  auto y = applied(base, std::vector{fresh, reset});
  BOOST_TEST((x == y));
  BOOST_TEST((x.value() == std::vector<std::string>{"new"}));
  BOOST_TEST(applied(base, std::vector{reset}).is_bottom());
}

BOOST_AUTO_TEST_CASE(mv_refuses_an_assign_with_a_timestamp) {
  mv_register r;
  downstream_context ctx{token_source{1}, 1};
  auto e = r.prepare(assign("v", 3), ctx);
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST((e.err().code() == errc::invalid_argument));
}

BOOST_AUTO_TEST_SUITE_END()
