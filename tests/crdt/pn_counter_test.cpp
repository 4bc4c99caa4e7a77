#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <limits>
#include <vector>

#include "crdt/pn_counter.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {
constexpr auto max64 = std::numeric_limits<std::int64_t>::max();
constexpr auto min64 = std::numeric_limits<std::int64_t>::min();
} // namespace

BOOST_AUTO_TEST_SUITE(crdt)

BOOST_AUTO_TEST_CASE(counter_starts_at_zero_and_sums_effects) {
  pn_counter c;
  BOOST_TEST(c.value() == 0);
  for (std::int64_t d : {5, -2, 10, -13}) {
    auto eff = c.prepare({d});
    BOOST_REQUIRE(eff.has_value());
    BOOST_TEST(eff->delta == d);
    BOOST_REQUIRE(c.apply(*eff).has_value());
  }
  BOOST_TEST(c.value() == 0);
}

BOOST_AUTO_TEST_CASE(default_update_is_plus_one) {
  pn_counter c;
  BOOST_REQUIRE(c.apply(*c.prepare(counter_update{})).has_value());
  BOOST_TEST(c.value() == 1);
}

BOOST_AUTO_TEST_CASE(prepare_refuses_increment_past_int64_max) {
  pn_counter c{max64 - 1};
  BOOST_TEST(c.prepare({1}).has_value());
  auto eff = c.prepare({2});
  BOOST_REQUIRE(!eff.has_value());
  BOOST_TEST(eff.err().code() == errc::overflow);
}

BOOST_AUTO_TEST_CASE(prepare_refuses_decrement_past_int64_min) {
  pn_counter c{min64 + 1};
  BOOST_TEST(c.prepare({-1}).has_value());
  auto eff = c.prepare({-2});
  BOOST_REQUIRE(!eff.has_value());
  BOOST_TEST(eff.err().code() == errc::overflow);
}

BOOST_AUTO_TEST_CASE(overflowing_apply_is_refused_and_leaves_state_unchanged) {
  // Two effects, each valid at its own snapshot, together overflow.
  pn_counter base{max64 - 10};
  auto a = base.prepare({8});
  auto b = base.prepare({8});
  BOOST_REQUIRE(a.has_value());
  BOOST_REQUIRE(b.has_value());
  pn_counter c = base;
  BOOST_REQUIRE(c.apply(*a).has_value());
  auto st = c.apply(*b);
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::overflow);
  BOOST_TEST(c.value() == max64 - 2);
}

BOOST_AUTO_TEST_CASE(effects_commute_in_any_order) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      std::vector<counter_effect> effects;
      std::int64_t expected_sum = 0;
      const auto n = rng.uniform(0, 40);
      for (std::uint64_t i = 0; i < n; ++i) {
        auto d = rng.uniform_signed(-1'000'000, 1'000'000);
        effects.push_back({d});
        expected_sum += d;
      }
      pn_counter in_order;
      for (auto e : effects)
        BOOST_REQUIRE(in_order.apply(e).has_value());
      std::shuffle(effects.begin(), effects.end(), rng.gen);
      pn_counter shuffled;
      for (auto e : effects)
        BOOST_REQUIRE(shuffled.apply(e).has_value());
      BOOST_TEST(in_order.value() == expected_sum);
      BOOST_TEST(shuffled.value() == in_order.value());
    }
  }
}

BOOST_AUTO_TEST_CASE(checked_add_reports_both_directions) {
  BOOST_TEST(checked_add(max64, 0).has_value());
  BOOST_TEST(!checked_add(max64, 1).has_value());
  BOOST_TEST(!checked_add(min64, -1).has_value());
  BOOST_TEST(*checked_add(min64, max64) == -1);
}

BOOST_AUTO_TEST_SUITE_END()
