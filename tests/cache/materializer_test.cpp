#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cache/materializer.hpp"
#include "cache/object_entry.hpp"
#include "tests/cache/cache_test_support.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using test::counter_value;
using test::effect_at;

namespace {

object_entry bottom_counter() {
  auto e = object_entry::make(crdt_type::counter);
  BOOST_REQUIRE(e.has_value());
  return std::move(*e);
}

std::int64_t stable_value(const object_entry& entry, const vector_clock& s) {
  auto obj = materialize_stable(entry, s);
  BOOST_REQUIRE(obj.has_value());
  return counter_value(*obj);
}

std::vector<lsn> positions(const object_entry& entry) {
  std::vector<lsn> out;
  for (const auto& e : entry.effects())
    out.push_back(e.position);
  return out;
}

// A random history: n effects over 1..3 DCs; some transactions update the
// key twice (one commit time, two positions).
std::vector<committed_effect> random_history(test::seeded_rng& rng,
                                             std::uint32_t dcs, int n,
                                             const vector_clock& floor = {}) {
  std::vector<committed_effect> out;
  lsn pos = 1;
  while (static_cast<int>(out.size()) < n) {
    auto t = test::random_commit_time(rng, dcs, 12, floor);
    int updates = rng.chance(0.2) ? 2 : 1;
    for (int u = 0; u < updates; ++u)
      out.push_back(effect_at(pos++, t, rng.uniform_signed(-50, 50)));
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cache)

BOOST_AUTO_TEST_CASE(bottom_entry_reads_zero_at_every_snapshot) {
  auto entry = bottom_counter();
  BOOST_TEST(stable_value(entry, {}) == 0);
  BOOST_TEST(stable_value(entry, {{1, 5}, {2, 9}}) == 0);
  BOOST_TEST(entry.latest().time.empty());
  // Every type has a bottom entry; a number that is no type has none.
  auto set = object_entry::make(crdt_type::orset);
  BOOST_REQUIRE(set.has_value());
  BOOST_TEST((set->latest().object.value() == crdt_value{std::vector<std::string>{}}));
  BOOST_TEST(object_entry::make(static_cast<crdt_type>(7)).err().code()
             == errc::wrong_type);
}

BOOST_AUTO_TEST_CASE(stable_read_applies_exactly_the_effects_at_or_below_the_snapshot) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(1, {{1, 1}}, 1)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(2, {{1, 2}}, 10)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(3, {{2, 1}}, 100)).has_value()); // concurrent
  BOOST_REQUIRE(entry.add(effect_at(4, {{1, 2}, {2, 2}}, 1000)).has_value());
  BOOST_TEST(stable_value(entry, {}) == 0);
  BOOST_TEST(stable_value(entry, {{1, 1}}) == 1);
  BOOST_TEST(stable_value(entry, {{1, 2}}) == 11);
  BOOST_TEST(stable_value(entry, {{2, 1}}) == 100);
  BOOST_TEST(stable_value(entry, {{1, 1}, {2, 1}}) == 101);
  BOOST_TEST(stable_value(entry, {{1, 2}, {2, 1}}) == 111);
  BOOST_TEST(stable_value(entry, {{1, 2}, {2, 2}}) == 1111);
  BOOST_TEST(stable_value(entry, {{1, 9}, {2, 9}}) == 1111);
}

BOOST_AUTO_TEST_CASE(snapshot_at_or_after_latest_is_served_without_replay) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(1, {{1, 3}}, 5)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(2, {{2, 4}}, 7)).has_value());
  BOOST_TEST((entry.latest().time == vector_clock{{1, 3}, {2, 4}}));
  BOOST_TEST(counter_value(entry.latest().object) == 12);
  BOOST_TEST(is_latest(entry, {{1, 3}, {2, 4}}));
  BOOST_TEST(is_latest(entry, {{1, 8}, {2, 4}, {3, 1}}));
  BOOST_TEST(!is_latest(entry, {{1, 3}}));
  BOOST_TEST(stable_value(entry, {{1, 3}, {2, 4}}) == 12);
}

BOOST_AUTO_TEST_CASE(effects_are_kept_in_commit_order_with_lsn_breaking_ties) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(7, {{1, 5}}, 1)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(3, {{1, 2}}, 1)).has_value()); // late arrival
  BOOST_REQUIRE(entry.add(effect_at(9, {{1, 2}}, 1)).has_value()); // same tx, later update
  BOOST_REQUIRE(entry.add(effect_at(2, {{1, 2}}, 1)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(4, {{2, 3}}, 1)).has_value()); // sum 3
  BOOST_TEST(positions(entry) == (std::vector<lsn>{2, 3, 9, 4, 7}));
}

BOOST_AUTO_TEST_CASE(redelivered_effect_is_applied_once) {
  auto entry = bottom_counter();
  auto e = effect_at(1, {{1, 1}}, 5);
  BOOST_REQUIRE(entry.add(e).has_value());
  BOOST_REQUIRE(entry.add(effect_at(2, {{1, 2}}, 1)).has_value());
  BOOST_REQUIRE(entry.add(e).has_value());
  BOOST_TEST(entry.effects().size() == 2u);
  BOOST_TEST(counter_value(entry.latest().object) == 6);
  auto built = object_entry::make(*crdt_object::make(crdt_type::counter), {},
                                  {e, e, effect_at(2, {{1, 2}}, 1)});
  BOOST_REQUIRE(built.has_value());
  BOOST_TEST(built->effects().size() == 2u);
}

BOOST_AUTO_TEST_CASE(effect_with_zero_commit_time_is_rejected) {
  auto entry = bottom_counter();
  BOOST_TEST(entry.add(effect_at(1, {}, 5)).err().code()
             == errc::invalid_argument);
  BOOST_TEST(entry.effects().empty());
  BOOST_TEST(object_entry::make(*crdt_object::make(crdt_type::counter), {},
                                {effect_at(1, {}, 5)})
               .err()
               .code()
             == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(interactive_read_adds_own_effects_in_issue_order) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(1, {{1, 1}}, 10)).has_value());
  BOOST_REQUIRE(entry.add(effect_at(2, {{1, 5}}, 1000)).has_value());
  std::vector<crdt_effect> own{counter_effect{3}, counter_effect{-1}};
  auto obj = materialize_interactive(entry, {{1, 2}}, own);
  BOOST_REQUIRE(obj.has_value());
  BOOST_TEST(counter_value(*obj) == 12); // committed <= {1:2} is 10, own +2
  auto latest = materialize_interactive(entry, {{1, 5}}, own);
  BOOST_TEST(counter_value(*latest) == 1012);
  // Own effects never leak into the entry.
  BOOST_TEST(stable_value(entry, {{1, 5}}) == 1010);
}

BOOST_AUTO_TEST_CASE(interactive_read_reports_own_effect_overflow) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(1, {{1, 1}}, std::numeric_limits<std::int64_t>::max())).has_value());
  auto obj = materialize_interactive(entry, {{1, 1}}, {counter_effect{1}});
  BOOST_REQUIRE(!obj.has_value());
  BOOST_TEST(obj.err().code() == errc::overflow);
}

BOOST_AUTO_TEST_CASE(read_below_the_base_fails_as_unavailable) {
  auto base = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(base.apply(counter_effect{42}).has_value());
  auto entry = object_entry::make(base, {{1, 10}, {2, 4}}, {});
  BOOST_REQUIRE(entry.has_value());
  for (const vector_clock& s : {vector_clock{{1, 9}, {2, 4}},
                                vector_clock{{1, 20}}, // concurrent
                                vector_clock{}}) {
    auto obj = materialize_stable(*entry, s);
    BOOST_REQUIRE(!obj.has_value());
    BOOST_TEST(obj.err().code() == errc::unavailable);
    BOOST_TEST(obj.err().message().find("snapshot older than the checkpoint")
               != std::string::npos);
  }
  BOOST_TEST(stable_value(*entry, {{1, 10}, {2, 4}}) == 42);
}

BOOST_AUTO_TEST_CASE(effects_covered_by_the_base_are_ignored) {
  auto base = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(base.apply(counter_effect{5}).has_value());
  auto entry = object_entry::make(base, {{1, 10}},
                                  {effect_at(1, {{1, 3}}, 5),
                                   effect_at(2, {{1, 11}}, 1)});
  BOOST_REQUIRE(entry.has_value());
  BOOST_TEST(entry->effects().size() == 1u);
  BOOST_REQUIRE(entry->add(effect_at(1, {{1, 3}}, 5)).has_value());
  BOOST_TEST(entry->effects().size() == 1u);
  BOOST_TEST(stable_value(*entry, {{1, 11}}) == 6);
}

BOOST_AUTO_TEST_CASE(overflowing_commit_leaves_the_entry_unchanged) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  for (bool in_order : {true, false}) {
    auto entry = bottom_counter();
    BOOST_REQUIRE(entry.add(effect_at(1, {{1, 5}}, max - 1)).has_value());
    auto before_effects = positions(entry);
    auto before_latest = entry.latest();
    // In order: appended after {1:5}; out of order: inserted before it.
    auto bad = effect_at(2, {{1, in_order ? 6u : 2u}}, 2);
    auto st = entry.add(bad);
    BOOST_REQUIRE(!st.has_value());
    BOOST_TEST(st.err().code() == errc::overflow);
    BOOST_TEST(positions(entry) == before_effects);
    BOOST_TEST((entry.latest().object == before_latest.object));
    BOOST_TEST((entry.latest().time == before_latest.time));
  }
}

BOOST_AUTO_TEST_CASE(materializer_matches_brute_force_reference_on_random_histories) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 300; ++round) {
      auto dcs = static_cast<std::uint32_t>(rng.uniform(1, 3));
      auto history = random_history(rng, dcs, static_cast<int>(rng.uniform(0, 40)));
      auto entry = bottom_counter();
      for (const auto& e : history)
        BOOST_REQUIRE(entry.add(e).has_value());
      BOOST_REQUIRE(std::is_sorted(entry.effects().begin(),
                                   entry.effects().end(), effect_order_less));
      for (int q = 0; q < 30; ++q) {
        auto s = test::random_clock(rng, dcs, 0, 14);
        BOOST_TEST_CONTEXT("snapshot " << s) {
          BOOST_REQUIRE_EQUAL(stable_value(entry, s),
                              test::reference_value(history, s));
          // The replay path alone agrees too (no fast path).
          auto slow = materialize_stable(entry.base(), entry.effects(), s);
          BOOST_REQUIRE_EQUAL(counter_value(*slow),
                              test::reference_value(history, s));
        }
      }
      BOOST_REQUIRE_EQUAL(counter_value(entry.latest().object),
                          test::reference_value(history, entry.latest().time));
    }
  }
}

BOOST_AUTO_TEST_CASE(out_of_order_commit_arrival_gives_the_same_entry) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      auto dcs = static_cast<std::uint32_t>(rng.uniform(1, 3));
      auto history = random_history(rng, dcs, static_cast<int>(rng.uniform(1, 30)));
      auto sorted = history;
      std::sort(sorted.begin(), sorted.end(), effect_order_less);
      auto shuffled = history;
      std::shuffle(shuffled.begin(), shuffled.end(), rng.gen);
      auto in_order = bottom_counter();
      auto out_of_order = bottom_counter();
      for (const auto& e : sorted)
        BOOST_REQUIRE(in_order.add(e).has_value());
      for (const auto& e : shuffled)
        BOOST_REQUIRE(out_of_order.add(e).has_value());
      auto bulk = object_entry::make(*crdt_object::make(crdt_type::counter),
                                     {}, shuffled);
      BOOST_REQUIRE(bulk.has_value());
      BOOST_REQUIRE(positions(in_order) == positions(out_of_order));
      BOOST_REQUIRE(positions(in_order) == positions(*bulk));
      BOOST_REQUIRE((in_order.latest().object == out_of_order.latest().object));
      BOOST_REQUIRE((in_order.latest().time == out_of_order.latest().time));
      for (int q = 0; q < 10; ++q) {
        auto s = test::random_clock(rng, dcs, 0, 14);
        BOOST_REQUIRE_EQUAL(stable_value(in_order, s),
                            stable_value(out_of_order, s));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(rebase_keeps_every_snapshot_at_or_above_the_new_base_identical) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      auto dcs = static_cast<std::uint32_t>(rng.uniform(1, 3));
      auto history = random_history(rng, dcs, static_cast<int>(rng.uniform(0, 30)));
      auto entry = bottom_counter();
      for (const auto& e : history)
        BOOST_REQUIRE(entry.add(e).has_value());
      auto t = test::random_clock(rng, dcs, 0, 12);
      auto original = entry.effects();
      auto rebased = bottom_counter();
      for (const auto& e : history)
        BOOST_REQUIRE(rebased.add(e).has_value());
      // Alternate the two entry points: the owner's checkpoint object, or
      // the entry's own version at t.
      expected<std::size_t> dropped = std::size_t{0};
      if (round % 2) {
        auto checkpoint = materialize_stable(entry, t);
        BOOST_REQUIRE(checkpoint.has_value());
        dropped = rebased.rebase(*checkpoint, t);
      } else {
        dropped = rebased.rebase_to(t);
      }
      BOOST_REQUIRE(dropped.has_value());
      auto covered = static_cast<std::size_t>(std::count_if(
        original.begin(), original.end(),
        [&](const committed_effect& e) { return e.commit_time <= t; }));
      BOOST_REQUIRE_EQUAL(*dropped, covered);
      BOOST_REQUIRE_EQUAL(rebased.effects().size(), original.size() - covered);
      BOOST_REQUIRE((rebased.base().time == t));
      for (int q = 0; q < 20; ++q) {
        auto s = merged(test::random_clock(rng, dcs, 0, 14), t); // s >= t
        BOOST_REQUIRE_EQUAL(stable_value(rebased, s), stable_value(entry, s));
        BOOST_REQUIRE_EQUAL(stable_value(rebased, s),
                            test::reference_value(history, s));
      }
      // Later commits land on the new base as before.
      auto next = effect_at(1000, test::random_commit_time(rng, dcs, 5, t), 7);
      BOOST_REQUIRE(entry.add(next).has_value());
      BOOST_REQUIRE(rebased.add(next).has_value());
      BOOST_REQUIRE((entry.latest().object == rebased.latest().object));
    }
  }
}

BOOST_AUTO_TEST_CASE(rebase_refuses_an_older_time_a_wrong_type_or_a_disagreeing_base) {
  auto entry = bottom_counter();
  BOOST_REQUIRE(entry.add(effect_at(1, {{1, 2}}, 4)).has_value());
  BOOST_REQUIRE(entry.rebase_to({{1, 2}}).has_value());
  BOOST_TEST(entry.rebase_to({{1, 1}}).err().code() == errc::invalid_argument);
  BOOST_TEST(entry.rebase_to({{2, 5}}).err().code() == errc::invalid_argument);
  auto wrong = *crdt_object::make(crdt_type::fatcounter);
  BOOST_TEST(entry.rebase(wrong, {{1, 3}}).err().code() == errc::wrong_type);
  auto disagreeing = *crdt_object::make(crdt_type::counter); // 0, not 4
  BOOST_TEST(entry.rebase(disagreeing, {{1, 3}}).err().code()
             == errc::invalid_argument);
  BOOST_TEST((entry.base().time == vector_clock{{1, 2}}));
  BOOST_TEST(counter_value(entry.base().object) == 4);
}

BOOST_AUTO_TEST_SUITE_END()
