// Bounded counter: rights, transfers, and a value that never goes below 0.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "crdt/b_counter.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

b_counter after(b_counter c, const b_counter_update& u) {
  auto e = c.prepare(u);
  BOOST_REQUIRE(e.has_value());
  BOOST_REQUIRE(c.apply(*e).has_value());
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(bcounter)

BOOST_AUTO_TEST_CASE(decrement_without_rights_is_refused) {
  b_counter c;
  auto e = c.prepare(b_counter_decrement{1, 7});
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST((e.err().code() == errc::no_permissions));
  BOOST_TEST(c.is_bottom());
}

BOOST_AUTO_TEST_CASE(rights_come_from_own_increments_only) {
  auto c = after(b_counter{}, b_counter_increment{5, 1});
  BOOST_TEST(c.value() == 5);
  BOOST_TEST(c.rights(1) == 5);
  BOOST_TEST(c.rights(2) == 0);
  BOOST_TEST((c.prepare(b_counter_decrement{1, 2}).err().code()
              == errc::no_permissions));
  BOOST_TEST((c.prepare(b_counter_decrement{6, 1}).err().code()
              == errc::no_permissions));
  c = after(c, b_counter_decrement{5, 1});
  BOOST_TEST(c.value() == 0);
  BOOST_TEST(c.rights(1) == 0);
}

BOOST_AUTO_TEST_CASE(transfer_moves_rights_not_value) {
  auto c = after(b_counter{}, b_counter_increment{10, 1});
  c = after(c, b_counter_transfer{4, 1, 2});
  BOOST_TEST(c.value() == 10);
  BOOST_TEST(c.rights(1) == 6);
  BOOST_TEST(c.rights(2) == 4);
  c = after(c, b_counter_decrement{4, 2});
  BOOST_TEST(c.value() == 6);
  BOOST_TEST((c.prepare(b_counter_transfer{7, 1, 3}).err().code()
              == errc::no_permissions));
}

BOOST_AUTO_TEST_CASE(zero_amounts_and_self_transfers_are_refused) {
  auto c = after(b_counter{}, b_counter_increment{3, 1});
  BOOST_TEST((c.prepare(b_counter_increment{0, 1}).err().code()
              == errc::invalid_argument));
  BOOST_TEST((c.prepare(b_counter_decrement{0, 1}).err().code()
              == errc::invalid_argument));
  BOOST_TEST((c.prepare(b_counter_transfer{1, 1, 1}).err().code()
              == errc::invalid_argument));
}

BOOST_AUTO_TEST_CASE(increments_past_int64_are_refused) {
  auto c = after(b_counter{}, b_counter_increment{std::uint64_t{1} << 62, 1});
  c = after(c, b_counter_increment{(std::uint64_t{1} << 62) - 1, 2});
  auto e = c.prepare(b_counter_increment{1, 3});
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST((e.err().code() == errc::overflow));
}

BOOST_AUTO_TEST_CASE(replicas_spending_their_own_rights_never_go_negative) {
  // Each replica decrements only what it holds at its own state; effects
  // reach the others in random order. The value stays >= 0 everywhere.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 50; ++round) {
      constexpr std::size_t n = 3;
      std::vector<b_counter> replicas(n);
      std::vector<b_counter_effect> all;
      for (int step = 0; step < 60; ++step) {
        const auto r = rng.uniform(0, n - 1);
        auto& c = replicas[r];
        b_counter_update u = b_counter_increment{rng.uniform(1, 5), r};
        if (rng.chance(0.6))
          u = b_counter_decrement{rng.uniform(1, 8), r};
        auto e = c.prepare(u);
        if (!e) {
          BOOST_TEST_REQUIRE((e.err().code() == errc::no_permissions));
          continue;
        }
        BOOST_REQUIRE(c.apply(*e).has_value());
        all.push_back(*e);
        // Gossip: some other replica learns everything so far, in a random
        // order (increments and own decrements commute).
        const auto o = rng.uniform(0, n - 1);
        if (o != r && rng.chance(0.3)) {
          b_counter fresh;
          auto order = all;
          std::shuffle(order.begin(), order.end(), rng.gen);
          for (const auto& x : order)
            BOOST_REQUIRE(fresh.apply(x).has_value());
          replicas[o] = fresh;
        }
        for (const auto& x : replicas)
          BOOST_TEST_REQUIRE(x.value() >= 0);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
