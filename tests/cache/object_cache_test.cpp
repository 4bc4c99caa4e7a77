#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cache/materializer.hpp"
#include "cache/object_cache.hpp"
#include "tests/cache/cache_test_support.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using test::effect_at;

namespace {

object_key key_of(int i) { return object_key{"b", "k" + std::to_string(i)}; }

object_cache make_cache(std::size_t segments = 2, std::size_t per = 4) {
  auto c = object_cache::make({segments, per});
  BOOST_REQUIRE(c.has_value());
  return std::move(*c);
}

std::int64_t as_counter(const crdt_value& v) { return std::get<std::int64_t>(v); }

// The owner's journal and checkpoint store, in memory: every committed effect
// per key, and one partition-wide checkpoint time below which the journal is
// truncated (the checkpoint holds the versions at that time).
struct model_store final : entry_source {
  std::map<object_key, std::vector<committed_effect>> journal;
  vector_clock checkpoint_time;
  bool has_checkpoint = false;
  int fetches = 0;
  std::optional<error> fail_with;

  expected<entry_image> fetch(const object_key& key, crdt_type type) override {
    ++fetches;
    if (fail_with)
      return *fail_with;
    entry_image image;
    auto& all = journal[key];
    if (has_checkpoint) {
      auto base = *crdt_object::make(type);
      BOOST_REQUIRE(
        base.apply(counter_effect{test::reference_value(all, checkpoint_time)})
          .has_value());
      image.base = object_version{base, checkpoint_time};
      for (const auto& e : all)
        if (!(e.commit_time <= checkpoint_time))
          image.effects.push_back(e);
    } else {
      image.effects = all;
    }
    std::shuffle(image.effects.begin(), image.effects.end(), shuffler);
    return image;
  }

  std::mt19937_64 shuffler{7};
};

std::int64_t read_value(object_cache& c, const object_key& k,
                        const vector_clock& s, model_store& store) {
  auto v = c.read_or_load(k, crdt_type::counter, s, {}, store);
  BOOST_REQUIRE(v.has_value());
  return as_counter(*v);
}

} // namespace

BOOST_AUTO_TEST_SUITE(cache)

BOOST_AUTO_TEST_CASE(object_cache_rejects_a_zero_sized_configuration) {
  BOOST_TEST(object_cache::make({0, 4}).err().code() == errc::bad_config);
  BOOST_TEST(object_cache::make({4, 0}).err().code() == errc::bad_config);
}

BOOST_AUTO_TEST_CASE(read_misses_until_loaded_then_hits) {
  auto c = make_cache();
  model_store store;
  store.journal[key_of(1)] = {effect_at(1, {{1, 1}}, 5)};
  auto miss = c.read(key_of(1), crdt_type::counter, {{1, 1}});
  BOOST_REQUIRE(miss.has_value());
  BOOST_TEST(!miss->has_value());
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter, store).has_value());
  auto hit = c.read(key_of(1), crdt_type::counter, {{1, 1}});
  BOOST_REQUIRE(hit.has_value());
  BOOST_REQUIRE(hit->has_value());
  BOOST_TEST(as_counter(**hit) == 5);
  auto s = c.stats();
  BOOST_TEST(s.misses == 1u);
  BOOST_TEST(s.hits == 1u);
  BOOST_TEST(s.loads == 1u);
  BOOST_TEST(s.latest_reads == 1u);
  BOOST_TEST(s.effects_held == 1u);
}

BOOST_AUTO_TEST_CASE(read_or_load_counts_one_miss_and_loads_once) {
  auto c = make_cache();
  model_store store;
  store.journal[key_of(1)] = {effect_at(1, {{1, 1}}, 5)};
  BOOST_TEST(read_value(c, key_of(1), {{1, 1}}, store) == 5);
  BOOST_TEST(read_value(c, key_of(1), {{1, 1}}, store) == 5);
  BOOST_TEST(store.fetches == 1);
  BOOST_TEST(c.stats().misses == 1u);
  BOOST_TEST(c.stats().hits == 1u);
}

BOOST_AUTO_TEST_CASE(a_never_written_key_cached_as_one_type_reads_as_another) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter, entry_image{}).has_value());
  // Only a bottom entry: a miss for another type, not an error.
  auto r = c.read(key_of(1), crdt_type::orset, {});
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(!r->has_value());
  BOOST_TEST(!c.contains(key_of(1)));
}

BOOST_AUTO_TEST_CASE(reading_a_key_as_another_type_is_wrong_type) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter, entry_image{}).has_value());
  BOOST_REQUIRE(c.on_commit(key_of(1), crdt_type::counter, effect_at(1, {{1, 1}}, 1)));
  auto r = c.read(key_of(1), crdt_type::fatcounter, {});
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::wrong_type);
  BOOST_TEST(r.err().message().find("b/k1") != std::string::npos);
  BOOST_TEST(c.on_commit(key_of(1), crdt_type::fatcounter,
                         effect_at(1, {{1, 1}}, 1))
               .err()
               .code()
             == errc::wrong_type);
  BOOST_TEST(c.peek(key_of(1))->effects().size() == 1u);
}

BOOST_AUTO_TEST_CASE(load_refuses_a_base_of_another_type_and_passes_source_errors) {
  auto c = make_cache();
  entry_image image;
  image.base = object_version{*crdt_object::make(crdt_type::fatcounter), {}};
  BOOST_TEST(c.load(key_of(1), crdt_type::counter, image).err().code()
             == errc::wrong_type);
  BOOST_TEST(c.load(key_of(2), static_cast<crdt_type>(7), entry_image{}).err().code()
             == errc::wrong_type);
  model_store store;
  store.fail_with = make_error(errc::io_error, "disk on fire");
  auto st = c.load(key_of(1), crdt_type::counter, store);
  BOOST_TEST(st.err().code() == errc::io_error);
  BOOST_TEST(!c.contains(key_of(1)));
}

BOOST_AUTO_TEST_CASE(on_commit_updates_a_cached_entry_eagerly) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter, entry_image{}).has_value());
  BOOST_REQUIRE(c.on_commit(key_of(1), crdt_type::counter,
                            effect_at(1, {{1, 1}}, 3))
                  .has_value());
  BOOST_REQUIRE(c.on_commit(key_of(1), crdt_type::counter,
                            effect_at(2, {{1, 2}}, 4))
                  .has_value());
  const object_entry* e = c.peek(key_of(1));
  BOOST_TEST(test::counter_value(e->latest().object) == 7);
  BOOST_TEST((e->latest().time == vector_clock{{1, 2}}));
  auto r = c.read(key_of(1), crdt_type::counter, {{1, 2}});
  BOOST_TEST(as_counter(**r) == 7);
  BOOST_TEST(c.stats().latest_reads == 1u);
  BOOST_TEST(c.stats().replayed_reads == 0u);
  auto older = c.read(key_of(1), crdt_type::counter, {{1, 1}});
  BOOST_TEST(as_counter(**older) == 3);
  BOOST_TEST(c.stats().replayed_reads == 1u);
  BOOST_TEST(c.stats().commits_applied == 2u);
  BOOST_TEST(c.stats().effects_held == 2u);
}

BOOST_AUTO_TEST_CASE(on_commit_for_an_uncached_key_does_nothing) {
  auto c = make_cache();
  BOOST_REQUIRE(c.on_commit(key_of(1), crdt_type::counter,
                            effect_at(1, {{1, 1}}, 3))
                  .has_value());
  BOOST_TEST(!c.contains(key_of(1)));
  BOOST_TEST(c.stats().commits_skipped == 1u);
  BOOST_TEST(c.stats().effects_held == 0u);
}

BOOST_AUTO_TEST_CASE(overflowing_commit_is_reported_and_the_key_forgotten) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter,
                       entry_image{std::nullopt,
                                   {effect_at(1, {{1, 1}},
                                              std::numeric_limits<std::int64_t>::max())}})
                  .has_value());
  BOOST_REQUIRE(c.load(key_of(2), crdt_type::counter, entry_image{}).has_value());
  auto st = c.on_commit(key_of(1), crdt_type::counter, effect_at(2, {{2, 1}}, 1));
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::overflow);
  BOOST_TEST(!c.contains(key_of(1)));
  BOOST_TEST(c.contains(key_of(2)));
  BOOST_TEST(c.stats().effects_held == 0u);
}

BOOST_AUTO_TEST_CASE(interactive_read_includes_the_transactions_own_effects) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter,
                       entry_image{std::nullopt, {effect_at(1, {{1, 1}}, 10)}})
                  .has_value());
  std::vector<crdt_effect> own{counter_effect{2}, counter_effect{5}};
  auto r = c.read_interactive(key_of(1), crdt_type::counter, {{1, 1}}, own);
  BOOST_TEST(as_counter(**r) == 17);
  auto stable = c.read(key_of(1), crdt_type::counter, {{1, 1}});
  BOOST_TEST(as_counter(**stable) == 10);
  auto miss = c.read_interactive(key_of(2), crdt_type::counter, {}, own);
  BOOST_TEST(!miss->has_value());
}

BOOST_AUTO_TEST_CASE(read_below_the_checkpoint_fails_clearly) {
  auto c = make_cache();
  model_store store;
  store.journal[key_of(1)] = {effect_at(1, {{1, 1}}, 1), effect_at(2, {{1, 5}}, 2)};
  BOOST_TEST(read_value(c, key_of(1), {{1, 1}}, store) == 1);
  auto report = c.truncate_below({{1, 3}});
  BOOST_TEST(report.rebased == 1u);
  BOOST_TEST(report.effects_dropped == 1u);
  auto r = c.read(key_of(1), crdt_type::counter, {{1, 2}});
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::unavailable);
  BOOST_TEST(r.err().message().find("snapshot older than the checkpoint")
             != std::string::npos);
  BOOST_TEST(read_value(c, key_of(1), {{1, 3}}, store) == 1);
  BOOST_TEST(read_value(c, key_of(1), {{1, 5}}, store) == 3);
}

BOOST_AUTO_TEST_CASE(rebase_of_one_key_drops_covered_effects) {
  auto c = make_cache();
  BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter,
                       entry_image{std::nullopt,
                                   {effect_at(1, {{1, 1}}, 1),
                                    effect_at(2, {{1, 2}}, 2),
                                    effect_at(3, {{1, 3}}, 4)}})
                  .has_value());
  auto base = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(base.apply(counter_effect{3}).has_value());
  auto dropped = c.rebase(key_of(1), base, {{1, 2}});
  BOOST_REQUIRE(dropped.has_value());
  BOOST_TEST(*dropped == 2u);
  BOOST_TEST(c.stats().effects_held == 1u);
  BOOST_TEST(as_counter(**c.read(key_of(1), crdt_type::counter, {{1, 3}})) == 7);
  auto uncached = c.rebase(key_of(9), base, {{1, 2}});
  BOOST_TEST(*uncached == 0u);
  auto bad = c.rebase(key_of(1), base, {{1, 1}}); // older than the base
  BOOST_TEST(bad.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(eviction_counts_and_releases_the_entries_effects) {
  auto c = make_cache(2, 1);
  for (int k = 0; k < 3; ++k)
    BOOST_REQUIRE(c.load(key_of(k), crdt_type::counter,
                         entry_image{std::nullopt,
                                     {effect_at(1, {{1, 1}}, 1),
                                      effect_at(2, {{1, 2}}, 1)}})
                    .has_value());
  BOOST_TEST(c.size() == 2u);
  BOOST_TEST(!c.contains(key_of(0)));
  BOOST_TEST(c.stats().evictions == 1u);
  BOOST_TEST(c.stats().effects_held == 4u);
  // Reloading a cached key replaces its entry without double counting.
  BOOST_REQUIRE(c.load(key_of(2), crdt_type::counter, entry_image{}).has_value());
  BOOST_TEST(c.stats().effects_held == 2u);
  BOOST_TEST(c.erase(key_of(1)));
  BOOST_TEST(c.stats().effects_held == 0u);
}

BOOST_AUTO_TEST_CASE(cache_with_evictions_reloads_and_checkpoints_matches_brute_force) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 30; ++round) {
      auto dcs = static_cast<std::uint32_t>(rng.uniform(1, 3));
      int keys = static_cast<int>(rng.uniform(1, 12));
      // Small caches force evictions and reloads; a roomy one never evicts.
      auto c = make_cache(rng.uniform(1, 3), rng.uniform(1, 4));
      auto roomy = make_cache(1, 64);
      model_store store;
      std::vector<committed_effect> pending; // committed, not yet delivered
      lsn next_pos = 1;
      for (int step = 0; step < 300; ++step) {
        auto k = key_of(static_cast<int>(rng.uniform(0, keys - 1)));
        double op = rng.unit();
        if (op < 0.35) {
          // A commit; delivery may lag behind others (two-phase commit).
          auto t = test::random_commit_time(rng, dcs, 10, store.checkpoint_time);
          auto e = effect_at(next_pos++, t, rng.uniform_signed(-100, 100));
          store.journal[k].push_back(e);
          pending.push_back(e);
          if (rng.chance(0.7)) {
            std::size_t i = rng.uniform(0, pending.size() - 1);
            // Deliver to the caches: the key of a pending effect is found
            // through the journal.
            for (auto& [key, list] : store.journal)
              for (auto& je : list)
                if (je.position == pending[i].position) {
                  BOOST_REQUIRE(c.on_commit(key, crdt_type::counter, je).has_value());
                  BOOST_REQUIRE(roomy.on_commit(key, crdt_type::counter, je).has_value());
                }
            pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          }
        } else if (op < 0.45) {
          // A load while commits are still in flight: their later delivery
          // reaches an entry that already holds them (kept once, by LSN).
          BOOST_REQUIRE(c.load(k, crdt_type::counter, store).has_value());
        } else if (op < 0.95) {
          // Reads see every committed effect: deliver what is pending first
          // (the partition answers only once its safe time covers s).
          for (const auto& p : pending)
            for (auto& [key, list] : store.journal)
              for (auto& je : list)
                if (je.position == p.position) {
                  BOOST_REQUIRE(c.on_commit(key, crdt_type::counter, je).has_value());
                  BOOST_REQUIRE(roomy.on_commit(key, crdt_type::counter, je).has_value());
                }
          pending.clear();
          auto s = merged(test::random_clock(rng, dcs, 0, 12),
                          rng.chance(0.9) ? store.checkpoint_time : vector_clock{});
          auto got = c.read_or_load(k, crdt_type::counter, s, {}, store);
          auto want_roomy = roomy.read_or_load(k, crdt_type::counter, s, {}, store);
          if (!(store.checkpoint_time <= s)) {
            BOOST_REQUIRE(!got.has_value());
            BOOST_REQUIRE(got.err().code() == errc::unavailable);
            BOOST_REQUIRE(!want_roomy.has_value());
            continue;
          }
          BOOST_REQUIRE(got.has_value());
          BOOST_REQUIRE(want_roomy.has_value());
          auto want = test::reference_value(store.journal[k], s);
          BOOST_REQUIRE_EQUAL(as_counter(*got), want);
          BOOST_REQUIRE_EQUAL(as_counter(*want_roomy), want);
        } else {
          // A partition checkpoint at a time every delivered commit below it
          // has reached; later commits are generated above it.
          if (!pending.empty())
            continue;
          auto t = merged(store.checkpoint_time,
                          test::random_clock(rng, dcs, 0, 8));
          store.checkpoint_time = t;
          store.has_checkpoint = true;
          auto r1 = c.truncate_below(t);
          auto r2 = roomy.truncate_below(t);
          BOOST_REQUIRE_EQUAL(r1.failed, 0u);
          BOOST_REQUIRE_EQUAL(r2.failed, 0u);
          BOOST_REQUIRE_EQUAL(r1.skipped, 0u);
        }
        BOOST_REQUIRE(c.size() <= c.capacity());
        // effects_held equals the effects actually held.
        std::size_t held = 0;
        for (int i = 0; i < keys; ++i)
          if (const object_entry* e = c.peek(key_of(i)))
            held += e->effects().size();
        BOOST_REQUIRE_EQUAL(c.stats().effects_held, held);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(eviction_then_reload_gives_identical_results) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 50; ++round) {
      auto dcs = static_cast<std::uint32_t>(rng.uniform(1, 3));
      model_store store;
      auto c = make_cache(1, 1);
      auto k = key_of(0);
      BOOST_REQUIRE(c.load(k, crdt_type::counter, store).has_value());
      for (int i = 0; i < 20; ++i) {
        auto e = effect_at(static_cast<lsn>(i + 1),
                           test::random_commit_time(rng, dcs, 10, {}),
                           rng.uniform_signed(-9, 9));
        store.journal[k].push_back(e);
        BOOST_REQUIRE(c.on_commit(k, crdt_type::counter, e).has_value());
      }
      std::vector<vector_clock> snapshots;
      std::vector<std::int64_t> before;
      for (int q = 0; q < 20; ++q) {
        snapshots.push_back(test::random_clock(rng, dcs, 0, 12));
        before.push_back(read_value(c, k, snapshots.back(), store));
      }
      BOOST_REQUIRE(c.load(key_of(1), crdt_type::counter, store).has_value());
      BOOST_REQUIRE(!c.contains(k)); // evicted by the other key
      for (std::size_t q = 0; q < snapshots.size(); ++q)
        BOOST_REQUIRE_EQUAL(read_value(c, k, snapshots[q], store), before[q]);
      BOOST_REQUIRE_EQUAL(store.fetches, 3);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
