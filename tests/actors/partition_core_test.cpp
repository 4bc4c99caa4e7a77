// partition_core: the partition actor's logic, driven directly with a
// controlled clock (no actors, no sleeps).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>
#include <string>

#include "actors/partition_core.hpp"
#include "tests/actors/partition_core_support.hpp"
#include <lmdb.h>

#include "journal/fault_env.hpp"

using namespace tally;
using namespace tally::test;

namespace {

struct fixture {
  std::filesystem::path dir;
  std::uint64_t now = 1'000'000;
  std::int64_t fbf_ms = 0;

  fixture() {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path()
          / ("tally-partition-" + std::to_string(rd()));
    std::filesystem::remove_all(dir);
  }
  ~fixture() { std::filesystem::remove_all(dir); }

  partition_options options(durability mode = durability::batch) {
    partition_options o;
    o.index = 3;
    o.path = dir.string();
    o.mode = mode;
    o.now_us = [this] { return now; };
    o.now_fbf = [this] { return fbf_time{fbf_duration{fbf_ms}}; };
    return o;
  }

  std::unique_ptr<partition_core> open(durability mode = durability::batch) {
    return open_with(options(mode));
  }

  std::unique_ptr<partition_core> open_with(partition_options o) {
    auto c = partition_core::open(std::move(o));
    BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
    return std::move(*c);
  }

  // An FBF so small that it says "member" for almost every id once a few
  // are in: 8 bits, k = 1. Every positive then goes to the exact check.
  std::unique_ptr<partition_core> open_tiny_fbf() {
    auto o = options();
    o.fbf = fbf_config{};
    o.fbf.bits_per_filter = 8;
    o.fbf.hashes = 1;
    return open_with(std::move(o));
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(partition_core_tests, fixture)

BOOST_AUTO_TEST_CASE(single_partition_commit_is_visible_at_its_time_not_before) {
  auto c = open();
  auto t = commit1(*c, {1, 1}, {inc("x", 5), inc("x", 2)});
  BOOST_TEST(t > now - 1);
  BOOST_TEST(value_at(*c, "x", t) == 7);
  BOOST_TEST(value_at(*c, "x", t - 1) == 0);
  BOOST_TEST(c->safe_time() >= t);
}

BOOST_AUTO_TEST_CASE(prepared_transaction_holds_safe_time_below_its_prepare_time) {
  auto c = open();
  auto p = c->stage_prepare({1, 1}, {inc("x", 4)}, now + 10, true);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->prepare_time > now + 10);
  BOOST_REQUIRE(c->flush());
  now += 1000; // the physical clock passes the prepare time
  BOOST_TEST(c->safe_time() == p->prepare_time - 1);
  // Phase two at a larger commit time (another partition prepared later).
  auto commit_time = p->prepare_time + 50;
  BOOST_REQUIRE(c->stage_commit({1, 1}, commit_time));
  BOOST_TEST(c->safe_time() == p->prepare_time - 1); // staged, not durable
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->safe_time() >= commit_time);
  BOOST_TEST(value_at(*c, "x", commit_time) == 4);
  BOOST_TEST(value_at(*c, "x", commit_time - 1) == 0);
  BOOST_TEST(c->prepared_count() == 0u);
}

BOOST_AUTO_TEST_CASE(aborted_prepare_releases_safe_time_and_applies_nothing) {
  auto c = open();
  auto p = c->stage_prepare({1, 1}, {inc("x", 4, op_id{9, 1})}, 0, true);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_abort({1, 1}));
  BOOST_REQUIRE(c->flush());
  now += 100;
  BOOST_TEST(c->safe_time() == now);
  BOOST_TEST(value_at(*c, "x", now) == 0);
  // The aborted op id is not remembered: its retry applies.
  auto t = commit1(*c, {1, 2}, {inc("x", 4, op_id{9, 1})});
  BOOST_TEST(value_at(*c, "x", t) == 4);
}

// A commit of a transaction this partition aborted (a split decision:
// never expected) is refused as such, not as an unknown transaction, so
// that its asker logs it as an error; it applies nothing.
BOOST_AUTO_TEST_CASE(a_commit_of_a_transaction_aborted_here_is_refused_as_a_split_decision) {
  auto c = open();
  auto p = c->stage_prepare({1, 1}, {inc("x", 4)}, 0, true, {0, 1}, "node-a");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_abort({1, 1}));
  BOOST_REQUIRE(c->flush());
  auto late = c->stage_commit({1, 1}, p->prepare_time + 1);
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.err().code() == errc::aborted);
  BOOST_TEST(late.err().message().find("split decision") != std::string::npos);
  auto unknown = c->stage_commit({1, 2}, p->prepare_time + 1);
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(unknown.err().code() == errc::not_found);
  now += 100;
  BOOST_TEST(value_at(*c, "x", now) == 0);
}

BOOST_AUTO_TEST_CASE(duplicate_op_id_is_dismissed_in_flight_and_after_commit) {
  auto c = open();
  // In flight: the same id twice before the first commits. The second
  // waits for the first's outcome (issue 17), then is a duplicate.
  auto p1 = c->stage_prepare({1, 1}, {inc("x", 10, op_id{7, 1})}, 0, true);
  auto w2 = c->stage_prepare({1, 2}, {inc("x", 10, op_id{7, 1})}, 0, false);
  BOOST_REQUIRE(p1 && w2);
  BOOST_TEST(p1->dismissed == 0u);
  BOOST_TEST((w2->blocked_by == tx_id{1, 1}));
  BOOST_REQUIRE(c->stage_commit({1, 1}, p1->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->take_ready().size() == 1u);
  auto p2 = c->resume_prepare({1, 2});
  BOOST_REQUIRE(p2);
  BOOST_TEST(p2->dismissed == 1u);
  BOOST_REQUIRE(c->stage_commit({1, 2}, p2->prepare_time));
  BOOST_REQUIRE(c->flush());
  // After commit: the FBF has it.
  auto p3 = c->stage_prepare({1, 3}, {inc("x", 10, op_id{7, 1}), inc("x", 1)},
                             0, false);
  BOOST_REQUIRE(p3);
  BOOST_TEST(p3->dismissed == 1u);
  BOOST_REQUIRE(c->stage_commit({1, 3}, p3->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", p3->prepare_time) == 11);
  BOOST_TEST(c->duplicates_dismissed() == 2u);
}

BOOST_AUTO_TEST_CASE(reopen_recovers_values_clock_and_dismisses_old_op_ids) {
  std::uint64_t t = 0;
  {
    auto c = open();
    t = commit1(*c, {1, 1}, {inc("x", 3, op_id{5, 1}), inc("y", -2)});
  }
  now -= 500'000; // the physical clock went backwards across the restart
  auto c = open();
  BOOST_TEST(c->clock() >= t);
  BOOST_TEST(value_at(*c, "x", t) == 3);
  BOOST_TEST(value_at(*c, "y", t) == -2);
  auto p = c->stage_prepare({2, 1}, {inc("x", 3, op_id{5, 1})}, 0, false);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->dismissed == 1u);
  BOOST_TEST(p->prepare_time > t);
}

BOOST_AUTO_TEST_CASE(uncached_key_read_as_another_type_is_wrong_type) {
  std::uint64_t t = 0;
  {
    auto c = open();
    t = commit1(*c, {1, 1}, {inc("x", 3)});
  }
  auto c = open(); // cold cache: the read loads the key from the journal
  auto v = c->read(key("x"), crdt_type::fatcounter, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE(!v);
  BOOST_TEST(v.err().code() == errc::wrong_type);
  BOOST_TEST(v.err().message().find("holds a counter") != std::string::npos);
  BOOST_TEST(value_at(*c, "x", t) == 3); // the right type still reads
}

BOOST_AUTO_TEST_CASE(prepared_transaction_survives_reopen_and_can_commit) {
  std::uint64_t prep = 0;
  {
    auto c = open(durability::full);
    auto p = c->stage_prepare({1, 1}, {inc("x", 6, op_id{8, 8})}, 0, true);
    BOOST_REQUIRE(p);
    prep = p->prepare_time;
    BOOST_REQUIRE(c->flush());
  }
  auto c = open(durability::full);
  BOOST_REQUIRE_EQUAL(c->undecided().size(), 1u);
  BOOST_TEST(c->undecided()[0].prepare_time == prep);
  BOOST_TEST(c->safe_time() == prep - 1);
  // Its op id is in flight: a retry meanwhile waits for its outcome.
  auto dup = c->stage_prepare({2, 1}, {inc("x", 6, op_id{8, 8})}, 0, true);
  BOOST_REQUIRE(dup);
  BOOST_TEST((dup->blocked_by == tx_id{1, 1}));
  BOOST_REQUIRE(c->stage_abort({2, 1}));
  BOOST_TEST(c->take_ready().size() == 1u);
  BOOST_TEST(!c->resume_prepare({2, 1}));
  BOOST_REQUIRE(c->stage_commit({1, 1}, prep + 1));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", prep + 1) == 6);
  auto found = c->find_decision({1, 1});
  BOOST_REQUIRE(found);
  BOOST_TEST((found->outcome == tx_outcome::committed));
  BOOST_TEST(found->commit_time == prep + 1);
}

BOOST_AUTO_TEST_CASE(unprepared_transaction_is_aborted_at_reopen) {
  {
    auto c = open();
    auto p = c->stage_prepare({1, 1}, {inc("x", 6)}, 0, false);
    BOOST_REQUIRE(p);
    BOOST_REQUIRE(c->flush()); // updates durable, no commit, no prepare
  }
  auto c = open();
  BOOST_TEST(c->undecided().empty());
  BOOST_TEST(c->safe_time() == now);
  BOOST_REQUIRE(c->flush()); // writes the abort record
  BOOST_TEST(value_at(*c, "x", now) == 0);
}

BOOST_AUTO_TEST_CASE(every_commit_record_carries_a_growing_bloom_timestamp) {
  {
    auto c = open();
    commit1(*c, {1, 1}, {inc("x", 1)});
    commit1(*c, {1, 2}, {inc("y", 1)});
  }
  journal_options jo;
  jo.path = dir.string();
  jo.partition_id = 3;
  auto j = journal::open(jo);
  BOOST_REQUIRE(j);
  std::vector<bloom_clock> stamps;
  auto st = j->log->scan(1, j->log->next_lsn(), [&](lsn, const journal_record& r) {
    if (auto* c = std::get_if<commit_record>(&r)) {
      auto b = bloom_clock::decode(c->bloom_timestamp);
      BOOST_REQUIRE(b);
      stamps.push_back(*b);
    }
    return true;
  });
  BOOST_REQUIRE(st);
  BOOST_REQUIRE_EQUAL(stamps.size(), 2u);
  BOOST_TEST(stamps[0].sum() > 0u);
  BOOST_TEST(stamps[1].sum() > stamps[0].sum());
  BOOST_TEST(*stamps[1].dominates(stamps[0]));
}

// ---- FBF positives are confirmed exactly (journal `opids`) ---------------

BOOST_AUTO_TEST_CASE(fbf_false_positives_are_applied) {
  auto c = open_tiny_fbf();
  const int n = 300;
  std::uint64_t t = 0;
  for (int i = 1; i <= n; ++i) {
    auto p = c->stage_prepare({1, static_cast<std::uint64_t>(i)},
                              {inc("x", 1, op_id{42, static_cast<std::uint64_t>(i)})},
                              0, false);
    BOOST_REQUIRE(p);
    BOOST_TEST(p->dismissed == 0u);
    BOOST_REQUIRE(c->stage_commit({1, static_cast<std::uint64_t>(i)},
                                  p->prepare_time));
    BOOST_REQUIRE(c->flush());
    t = p->prepare_time;
  }
  BOOST_TEST(value_at(*c, "x", t) == n);
  BOOST_TEST(c->duplicates_dismissed() == 0u);
  // 8 bits and k = 1: after the first few ids nearly every check is a
  // positive, and every one of them was refuted.
  BOOST_TEST(c->fbf_false_positives() > static_cast<std::uint64_t>(n / 2));
  BOOST_TEST(c->fbf_confirmed() == 0u);
}

BOOST_AUTO_TEST_CASE(true_duplicates_are_dismissed_committed_and_in_flight) {
  auto c = open_tiny_fbf();
  auto t = commit1(*c, {1, 1}, {inc("x", 5, op_id{7, 1})});
  // Committed: the FBF says member, the journal confirms it.
  auto p = c->stage_prepare({1, 2}, {inc("x", 5, op_id{7, 1})}, 0, false);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->dismissed == 1u);
  BOOST_TEST(c->fbf_confirmed() == 1u);
  BOOST_REQUIRE(c->stage_commit({1, 2}, p->prepare_time));
  BOOST_REQUIRE(c->flush());
  // In flight: staged by a prepared transaction, not committed yet.
  auto p3 = c->stage_prepare({1, 3}, {inc("x", 1, op_id{7, 2})}, 0, true);
  BOOST_REQUIRE(p3);
  BOOST_TEST(p3->dismissed == 0u);
  auto w4 = c->stage_prepare({1, 4}, {inc("x", 1, op_id{7, 2})}, 0, false);
  BOOST_REQUIRE(w4);
  BOOST_TEST((w4->blocked_by == tx_id{1, 3})); // waits for <1,3>'s outcome
  // Twice in one transaction: the second is a duplicate.
  auto p5 = c->stage_prepare({1, 5}, {inc("x", 1, op_id{7, 3}),
                                      inc("x", 1, op_id{7, 3})},
                             0, false);
  BOOST_REQUIRE(p5);
  BOOST_TEST(p5->dismissed == 1u);
  BOOST_REQUIRE(c->stage_commit({1, 3}, p5->prepare_time));
  BOOST_REQUIRE(c->stage_commit({1, 5}, p5->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->take_ready().size() == 1u);
  auto p4 = c->resume_prepare({1, 4});
  BOOST_REQUIRE(p4);
  BOOST_TEST(p4->dismissed == 1u); // <1,3> committed: confirmed exactly
  BOOST_REQUIRE(c->stage_commit({1, 4}, p4->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", t) == 5);
  BOOST_TEST(value_at(*c, "x", p5->prepare_time) == 7); // 5 + <7,2> + <7,3>
  BOOST_TEST(c->duplicates_dismissed() == 3u);
}

// A bound on FBF memory (issue 17): with one filter per partition, a new
// bucket evicts the last one's filter, and the evicted bucket's ids are then
// checked exactly in `opids`, so a retry there is still dismissed; once the
// keep window has passed, the fast path is back.
BOOST_AUTO_TEST_CASE(evicted_bucket_filters_never_let_a_duplicate_in) {
  auto o = options();
  o.max_fbfs = 1;
  auto c = open_with(std::move(o));
  auto in = [](const char* bucket, const char* k, std::uint64_t seq) {
    return tx_update{object_key{bucket, k}, crdt_type::counter, counter_effect{1},
                     op_id{55, seq}};
  };
  commit1(*c, {1, 1}, {in("b1", "x", 1)});
  BOOST_TEST(c->fbf_count() == 1u);
  commit1(*c, {1, 2}, {in("b2", "y", 2)}); // evicts b1's filter
  BOOST_TEST(c->fbf_count() == 1u);
  BOOST_TEST(c->fbf_evictions() == 1u);
  BOOST_TEST(!c->fbf("b1"));
  // The retry of b1's id: b1's new filter says "never seen", the exact
  // check finds the commit.
  auto r = c->stage_prepare({1, 3}, {in("b1", "x", 1)}, 0, false);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->dismissed == 1u);
  BOOST_REQUIRE(c->stage_commit({1, 3}, r->prepare_time));
  BOOST_REQUIRE(c->flush());
  // A new id in b1 still applies (the exact check finds nothing).
  auto t = commit1(*c, {1, 4}, {in("b1", "x", 4)});
  auto v = c->read(object_key{"b1", "x"}, crdt_type::counter,
                   vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE(v);
  BOOST_TEST(std::get<std::int64_t>(*v) == 2);
  BOOST_TEST(c->duplicates_dismissed() == 1u);
}

BOOST_AUTO_TEST_CASE(retry_of_an_aborted_transactions_op_id_is_applied) {
  auto c = open_tiny_fbf();
  // Fill the 8-bit filter: afterwards every check is an FBF positive.
  for (std::uint64_t i = 1; i <= 200; ++i)
    commit1(*c, {1, 1000 + i}, {inc("y", 1, op_id{9, 1000 + i})});
  const auto fp = c->fbf_false_positives();
  auto p = c->stage_prepare({1, 2}, {inc("x", 4, op_id{9, 1})}, 0, true);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->dismissed == 0u);
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_abort({1, 2}));
  BOOST_REQUIRE(c->flush());
  // The retry's check is an FBF positive too; the journal holds no commit
  // of <9,1> (its transaction aborted), so it is applied.
  auto t = commit1(*c, {1, 3}, {inc("x", 4, op_id{9, 1})});
  BOOST_TEST(value_at(*c, "x", t) == 4);
  BOOST_TEST(c->fbf_false_positives() == fp + 2);
  BOOST_TEST(c->duplicates_dismissed() == 0u);
  // And once that retry committed, a further retry is a duplicate.
  auto again = c->stage_prepare({1, 4}, {inc("x", 4, op_id{9, 1})}, 0, false);
  BOOST_REQUIRE(again);
  BOOST_TEST(again->dismissed == 1u);
}

BOOST_AUTO_TEST_CASE(duplicate_after_reopen_is_still_dismissed) {
  std::uint64_t t = 0;
  {
    auto c = open_tiny_fbf();
    for (std::uint64_t i = 1; i <= 20; ++i)
      t = commit1(*c, {1, i}, {inc("x", 1, op_id{11, i})});
  }
  auto c = open_tiny_fbf();
  BOOST_TEST(value_at(*c, "x", t) == 20);
  for (std::uint64_t i = 1; i <= 20; ++i) {
    auto p = c->stage_prepare({2, i}, {inc("x", 1, op_id{11, i})}, 0, false);
    BOOST_REQUIRE(p);
    BOOST_TEST(p->dismissed == 1u);
    BOOST_REQUIRE(c->stage_abort({2, i}));
  }
  // New ids after the reopen still apply.
  auto t2 = commit1(*c, {2, 100}, {inc("x", 1, op_id{11, 21})});
  BOOST_TEST(value_at(*c, "x", t2) == 21);
  BOOST_TEST(c->duplicates_dismissed() == 20u);
}

// The measured failure: sequential +1 updates with distinct ids through the
// paper-sized FBF (6250 bits, k = 5, N = 1) inside one window used to lose
// about 4% of them. Now the sum is exact, also with the tallyd sizing.
BOOST_AUTO_TEST_CASE(sequential_updates_with_distinct_ids_sum_exactly) {
  for (bool paper : {true, false}) {
    fixture f;
    auto o = f.options();
    if (paper)
      o.fbf = fbf_config{}; // 6250 bits, k = 5, N = 1, t = 5 s
    auto c = f.open_with(std::move(o));
    const std::uint64_t n = 2000;
    std::uint64_t t = 0;
    for (std::uint64_t i = 1; i <= n; ++i) {
      f.fbf_ms += 1; // 2 s in all: inside one window
      t = commit1(*c, {1, i}, {inc("x", 1, op_id{77, i})});
    }
    BOOST_TEST(value_at(*c, "x", t) == static_cast<std::int64_t>(n));
    BOOST_TEST(c->duplicates_dismissed() == 0u);
    BOOST_TEST_MESSAGE((paper ? "paper FBF" : "tallyd FBF")
                       << ": " << n << " updates, "
                       << c->fbf_false_positives()
                       << " FBF false positives refuted by the journal");
    if (paper)
      BOOST_TEST(c->fbf_false_positives() > 0u);
  }
}

// ---- Checkpoints and the FBF timer ---------------------------------------
//
// A small FBF (t = 200 ms, N = 2, R = 500 ms, adaptive: t in [100, 400] ms,
// N in [2, 6]) so that its longest id lifetime, (6+2) * 500 ms = 4 s, plus
// the 1 s margin (keep = 5 s) is quick to pass on the test clock; snapshot
// retention 100 ms.

namespace {

partition_options checkpointed(partition_options o) {
  using namespace std::chrono;
  o.fbf = tallyd_fbf_config(milliseconds{200}, 2, milliseconds{500}, 1e-3);
  o.snapshot_retention_us = 100'000;
  return o;
}

// Both clocks move together, as the steady and the system clock do.
void pass(fixture& f, std::uint64_t ms) {
  f.now += ms * 1000;
  f.fbf_ms += static_cast<std::int64_t>(ms);
}

std::uint64_t span(const partition_core& c) {
  return c.log().next_lsn() - c.log().truncation_lsn();
}

journal_stats stats_of(partition_core& c) {
  auto st = c.storage_stats();
  BOOST_REQUIRE(st);
  return *st;
}

partition_checkpoint checkpoint_ok(partition_core& c) {
  auto cp = c.checkpoint();
  BOOST_REQUIRE_MESSAGE(cp, (cp ? "" : cp.err().to_string()));
  return *cp;
}

} // namespace

BOOST_AUTO_TEST_CASE(op_id_keep_covers_the_largest_window_adaptation_allows) {
  auto c = open_with(checkpointed(options()));
  // (N_max + 2) * max(t_max, R) = 8 * 500 ms, plus the 1 s margin.
  BOOST_TEST(c->op_id_keep_us() == 5'000'000u);
  auto cfg = tallyd_fbf_config();
  BOOST_TEST(cfg.adaptive);
  // The largest window the filter can reach, (N_max + 1) * t_max, is inside.
  auto widest = cfg.max_refresh_period
                * static_cast<fbf_duration::rep>(cfg.max_past_filters + 1);
  BOOST_TEST(fbf_max_id_lifetime(cfg).count() >= widest.count());
}

// (a) Under a steady load the journal, its index and `opids` stay bounded
// with checkpoints (about keep + retention + one interval of commits) and
// grow without them.
BOOST_AUTO_TEST_CASE(journal_and_opids_stay_bounded_under_steady_load_with_checkpoints) {
  std::uint64_t spans[2][2] = {};     // [with checkpoints][at 30 s, at 60 s]
  std::uint64_t op_entries[2][2] = {};
  for (int with = 0; with < 2; ++with) {
    fixture f;
    auto c = f.open_with(checkpointed(f.options(durability::none)));
    std::uint64_t seq = 0, t = 0;
    std::int64_t sum = 0;
    for (int step = 1; step <= 600; ++step) { // 60 s in 100 ms steps
      for (int i = 0; i < 5; ++i, ++seq) {     // 50 transactions/s
        const std::string k = "k" + std::to_string(seq % 50);
        t = commit1(*c, {1, seq + 1},
                    {tx_update{object_key{"b", k}, crdt_type::counter,
                               counter_effect{1}, op_id{5, seq + 1}}});
        ++sum;
      }
      pass(f, 100);
      c->advance_filters();
      if (with && step % 10 == 0) // one checkpoint per second
        checkpoint_ok(*c);
      if (step == 300 || step == 600) {
        spans[with][step / 300 - 1] = span(*c);
        op_entries[with][step / 300 - 1] = stats_of(*c).opids.entries;
      }
    }
    std::int64_t read = 0;
    for (int k = 0; k < 50; ++k) {
      auto v = c->read(object_key{"b", "k" + std::to_string(k)},
                       crdt_type::counter, vector_clock{{local_dc, t}}, {});
      BOOST_REQUIRE(v);
      read += std::get<std::int64_t>(*v);
    }
    BOOST_TEST(read == sum);
  }
  BOOST_TEST_MESSAGE("log span at 30 s / 60 s: without checkpoints "
                     << spans[0][0] << " / " << spans[0][1] << ", with "
                     << spans[1][0] << " / " << spans[1][1]);
  // Without: every record stays (2 per transaction).
  BOOST_TEST(spans[0][1] == 6000u);
  BOOST_TEST(spans[0][1] >= 2 * spans[0][0] - 10);
  BOOST_TEST(op_entries[0][1] == 3000u);
  // With: about (keep 5 s + 1 s) * 50 tx/s * 2 records, and flat.
  BOOST_TEST(spans[1][1] <= 700u);
  BOOST_TEST(spans[1][1] <= spans[1][0] + 20);
  BOOST_TEST(op_entries[1][1] <= 350u);
}

// (b) Reads after checkpoints and after a reopen (cold cache, recovery)
// equal the exact sums: keys folded entirely, keys half folded, keys never
// folded; the wrong type is refused for each.
BOOST_AUTO_TEST_CASE(values_after_checkpoint_and_reopen_are_exact_also_for_folded_keys) {
  std::uint64_t t = 0;
  {
    auto c = open_with(checkpointed(options()));
    commit1(*c, {1, 1}, {inc("old", 3, op_id{1, 1}), inc("half", 10)});
    commit1(*c, {1, 2}, {inc("old", -1)});
    BOOST_TEST(value_at(*c, "old", c->safe_time()) == 2); // cached now
    pass(*this, 10'000); // beyond retention and the op-id keep
    auto cp = checkpoint_ok(*c);
    BOOST_TEST(cp.ran);
    BOOST_TEST(cp.report.transactions_folded == 2u);
    BOOST_TEST(span(*c) == 0u); // everything folded and dropped
    commit1(*c, {1, 3}, {inc("half", 5), inc("new", 7)});
    pass(*this, 10'000);
    t = commit1(*c, {1, 4}, {inc("half", 1)});
    checkpoint_ok(*c); // folds {1,3}; {1,4} is younger than the retention
    BOOST_TEST(value_at(*c, "old", t) == 2);  // cached, rebased on C
    BOOST_TEST(value_at(*c, "half", t) == 16); // checkpoint + journal
    BOOST_TEST(value_at(*c, "new", t) == 7);
  }
  auto c = open_with(checkpointed(options()));
  BOOST_TEST(value_at(*c, "old", t) == 2); // only in the checkpoint store
  BOOST_TEST(value_at(*c, "half", t) == 16);
  BOOST_TEST(value_at(*c, "new", t) == 7);
  BOOST_TEST(value_at(*c, "never", t) == 0);
  for (const char* k : {"old", "half", "new"}) {
    c = open_with(checkpointed(options())); // cold cache for each
    auto v = c->read(key(k), crdt_type::fatcounter, vector_clock{{local_dc, t}}, {});
    BOOST_REQUIRE(!v);
    BOOST_TEST(v.err().code() == errc::wrong_type);
    BOOST_TEST(v.err().message().find("holds a counter") != std::string::npos);
  }
}

// (c) Ids committed within the FBF window keep their `opids` entry and log
// records through checkpoints and a reopen, so a retry is still dismissed;
// ids older than the window lose them (opids is bounded).
BOOST_AUTO_TEST_CASE(op_ids_inside_the_window_survive_checkpoint_and_reopen_older_ones_go) {
  auto o = checkpointed(options());
  {
    auto c = open_with(o);
    for (std::uint64_t i = 1; i <= 10; ++i) // batch A
      commit1(*c, {1, i}, {inc("a", 1, op_id{1, i})});
    pass(*this, 6'000); // A is older than keep (5 s)
    c->advance_filters();
    std::uint64_t last_b = 0;
    for (std::uint64_t i = 1; i <= 10; ++i) // batch B
      last_b = commit1(*c, {2, i}, {inc("b", 1, op_id{2, i})});
    pass(*this, 1'000);
    auto cp = checkpoint_ok(*c);
    BOOST_TEST(cp.report.op_ids_dropped == 10u); // A's
    BOOST_TEST(cp.report.limited_by == truncation_limit::fbf_window);
    BOOST_TEST(stats_of(*c).opids.entries == 10u); // B's
    // B is folded (older than the retention) but its records stay.
    BOOST_TEST(c->checkpoint_time() > last_b);
    BOOST_TEST(span(*c) == 20u);
  }
  pass(*this, 3'500); // B is 4.5 s old at the reopen
  auto c = open_with(o);
  BOOST_TEST(value_at(*c, "b", now - 200'000) == 10);
  BOOST_TEST(value_at(*c, "a", now - 200'000) == 10);
  pass(*this, 1'000); // B is 5.5 s old: older than keep, but re-inserted
  c->advance_filters(); // into the FBF at the reopen: kept until that ends
  checkpoint_ok(*c);
  BOOST_TEST(stats_of(*c).opids.entries == 10u);
  for (std::uint64_t i = 1; i <= 10; ++i) {
    auto p = c->stage_prepare({3, i}, {inc("b", 1, op_id{2, i})}, 0, false);
    BOOST_REQUIRE(p);
    BOOST_TEST(p->dismissed == 1u); // a retry: dismissed, not applied
    BOOST_REQUIRE(c->stage_abort({3, i}));
  }
  BOOST_REQUIRE(c->flush());
  // Once the re-inserted ids' window has passed too, their entries go.
  pass(*this, 5'000);
  c->advance_filters();
  checkpoint_ok(*c);
  BOOST_TEST(stats_of(*c).opids.entries == 0u);
  BOOST_TEST(span(*c) <= 20u); // the 10 aborted updates + aborts at most
  BOOST_TEST(value_at(*c, "b", c->safe_time()) == 10);
}

// (d) A snapshot below the checkpoint time gets a clear error, for cached,
// uncached and never-written keys, also after a reopen.
BOOST_AUTO_TEST_CASE(read_below_the_checkpoint_time_is_snapshot_too_old) {
  auto o = checkpointed(options());
  std::uint64_t t = 0, cp_time = 0;
  {
    auto c = open_with(o);
    t = commit1(*c, {1, 1}, {inc("x", 4)});
    BOOST_TEST(value_at(*c, "x", t) == 4);
    pass(*this, 1'000);
    checkpoint_ok(*c);
    cp_time = c->checkpoint_time();
    BOOST_REQUIRE(cp_time > t);
    BOOST_TEST(cp_time == c->safe_time() - 100'000);
    for (const char* k : {"x", "never"}) {
      auto v = c->read(key(k), crdt_type::counter, vector_clock{{local_dc, cp_time - 1}}, {});
      BOOST_REQUIRE(!v);
      BOOST_TEST(v.err().code() == errc::unavailable);
      BOOST_TEST(v.err().message().find("snapshot too old") != std::string::npos);
    }
    BOOST_TEST(value_at(*c, "x", cp_time) == 4);
  }
  auto c = open_with(o);
  BOOST_TEST(c->checkpoint_time() == cp_time);
  auto v = c->read(key("x"), crdt_type::counter, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE(!v);
  BOOST_TEST(v.err().message().find("snapshot too old") != std::string::npos);
  BOOST_TEST(value_at(*c, "x", cp_time) == 4);
}

BOOST_AUTO_TEST_CASE(checkpoint_never_passes_a_prepared_transaction) {
  auto c = open_with(checkpointed(options()));
  auto p = c->stage_prepare({1, 1}, {inc("x", 6, op_id{4, 4})}, 0, true);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  pass(*this, 10'000);
  checkpoint_ok(*c);
  BOOST_TEST(c->checkpoint_time() < p->prepare_time);
  BOOST_TEST(span(*c) == 2u); // its update and prepare stay
  BOOST_REQUIRE(c->stage_commit({1, 1}, p->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", c->safe_time()) == 6);
}

BOOST_AUTO_TEST_CASE(idle_partition_writes_no_checkpoint) {
  auto c = open_with(checkpointed(options()));
  pass(*this, 1'000);
  BOOST_TEST(!checkpoint_ok(*c).ran); // empty log: nothing to do
  BOOST_TEST(c->checkpoint_time() == 0u);
}

// (e) The FBF moves on advance_filters() alone (the actor's timer), and
// adaptation (Algorithm 3) scales an overloaded filter up without a request.
BOOST_AUTO_TEST_CASE(advance_filters_refreshes_and_adapts_without_requests) {
  auto o = checkpointed(options());
  o.fbf.bits_per_filter = 2048; // small: 400 ids push its FPP over 1e-3
  auto c = open_with(o);
  for (std::uint64_t i = 1; i <= 400; ++i)
    commit1(*c, {1, i}, {inc("x", 1, op_id{6, i})});
  const auto* f = c->fbf("b");
  BOOST_REQUIRE(f);
  const auto clock0 = f->clock();
  const auto refreshes0 = f->refresh_count();
  const auto filters0 = f->filter_count();
  const double fpp0 = f->current_fpp();
  BOOST_TEST(fpp0 > 1e-3);
  fbf_ms += 350;
  BOOST_TEST(c->advance_filters() == 1u);
  BOOST_TEST((f->clock() - clock0).count() == 350);
  BOOST_TEST(f->refresh_count() > refreshes0);
  BOOST_TEST(f->filter_count() > filters0); // scaled up
  BOOST_TEST(f->past_filter_count() <= 6u); // within [N, 3N]
  BOOST_TEST(f->window().count() >= 500);   // never below R
}

BOOST_AUTO_TEST_CASE(tallyd_fbf_settings_are_validated) {
  using namespace std::chrono;
  // (N+1)*t below the retry timeout is refused.
  auto bad = forgetful_bloom_filter::make(
    tallyd_fbf_config(milliseconds{1000}, 1, milliseconds{5000}, 1e-3));
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.err().code() == errc::bad_config);
  BOOST_TEST(bad.err().message().find("retry timeout") != std::string::npos);
  // A target FPP outside (0, 1) is refused when adaptive.
  auto bad_fpp = forgetful_bloom_filter::make(
    tallyd_fbf_config(milliseconds{2000}, 2, milliseconds{5000}, 1.5));
  BOOST_REQUIRE(!bad_fpp);
  BOOST_TEST(bad_fpp.err().message().find("target_fpp") != std::string::npos);
  BOOST_TEST(forgetful_bloom_filter::make(tallyd_fbf_config()).has_value());
  // Adaptation bounds stay safe: t_min * (N_min + 1) may be below R, which
  // the FBF clamps (docs/FBF.md, "Scale-up"); the configured window is not.
  auto off = tallyd_fbf_config(milliseconds{2000}, 2, milliseconds{5000}, 0.0);
  BOOST_TEST(!off.adaptive);
  BOOST_TEST(fbf_max_id_lifetime(off).count() == 4 * 5000);
}

// ---- issue 17, defect 1: a request's content never stops a partition -------

BOOST_AUTO_TEST_CASE(too_long_key_fails_its_transaction_only) {
  auto c = open();
  const std::string long_key(600, 'k');
  auto p = c->stage_prepare(
    {1, 1}, {inc("ok", 1), tx_update{object_key{"b", long_key},
                                     crdt_type::counter, counter_effect{1}, {}}},
    0, false);
  BOOST_REQUIRE(!p);
  BOOST_TEST(p.err().code() == errc::invalid_argument);
  BOOST_TEST(p.err().message().find("at most 509") != std::string::npos);
  BOOST_TEST(c->prepared_count() == 0u);
  BOOST_TEST(!c->has_staged());
  // The partition keeps serving.
  auto t = commit1(*c, {1, 2}, {inc("ok", 5)});
  BOOST_TEST(!c->stopped());
  BOOST_TEST(value_at(*c, "ok", t) == 5);
}

BOOST_AUTO_TEST_CASE(full_map_fails_the_batch_and_writes_resume) {
  std::filesystem::create_directories(dir);
  auto env = fault_env::open(lmdb_options{dir.string(), default_map_size});
  BOOST_REQUIRE(env);
  auto o = options();
  o.env = *env;
  auto c = open_with(std::move(o));
  // B prepared (durable) before the map fills.
  auto pb = c->stage_prepare({1, 1}, {inc("b", 7)}, 0, true);
  BOOST_REQUIRE(pb);
  BOOST_REQUIRE(c->flush());
  auto t0 = commit1(*c, {1, 2}, {inc("x", 1)});
  // The next commit finds the map full: B's commit decision and a new
  // one-step transaction C with an op id are in the batch.
  (*env)->inject(fault_spec{fault_point::commit, 1, MDB_MAP_FULL, false});
  BOOST_REQUIRE(c->stage_commit({1, 1}, pb->prepare_time + 5));
  auto pc = c->stage_prepare({1, 3}, {inc("x", 10, op_id{4, 1})}, 0, false);
  BOOST_REQUIRE(pc);
  BOOST_REQUIRE(c->stage_commit({1, 3}, pc->prepare_time));
  auto f = c->flush();
  BOOST_REQUIRE(!f);
  BOOST_TEST(f.err().code() == errc::storage_full);
  BOOST_TEST(!c->stopped());
  BOOST_TEST(c->failed_batches() == 1u);
  // C was dropped (its id released), B's commit stays staged.
  BOOST_TEST(c->prepared_count() == 1u);
  BOOST_TEST(c->has_staged());
  // Reads keep working below B's prepare time.
  BOOST_TEST(value_at(*c, "x", t0) == 1);
  // Space returns (the fault fired once): the decision is written, and a
  // retry of C with the same op id applies exactly once.
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->prepared_count() == 0u);
  auto t1 = commit1(*c, {1, 4}, {inc("x", 10, op_id{4, 1})});
  BOOST_TEST(value_at(*c, "x", t1) == 11);
  BOOST_TEST(value_at(*c, "b", t1) == 7);
  auto t2 = commit1(*c, {1, 5}, {inc("x", 10, op_id{4, 1})});
  BOOST_TEST(value_at(*c, "x", t2) == 11); // the second retry is a duplicate
}

BOOST_AUTO_TEST_CASE(storage_io_error_still_stops_the_partition) {
  std::filesystem::create_directories(dir);
  auto env = fault_env::open(lmdb_options{dir.string(), default_map_size});
  BOOST_REQUIRE(env);
  auto o = options();
  o.env = *env;
  auto c = open_with(std::move(o));
  (*env)->inject(fault_spec{fault_point::commit, 1, EIO, false});
  auto p = c->stage_prepare({1, 1}, {inc("x", 1)}, 0, false);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->stage_commit({1, 1}, p->prepare_time));
  BOOST_REQUIRE(!c->flush());
  BOOST_TEST(c->stopped());
  BOOST_TEST(!c->stage_prepare({1, 2}, {inc("x", 1)}, 0, false));
}

// ---- issue 17, defect 2: a retry of an in-flight op id waits ---------------

BOOST_AUTO_TEST_CASE(retry_of_in_flight_id_waits_then_is_a_duplicate_if_original_commits) {
  auto c = open();
  const op_id id{9, 1};
  auto a = c->stage_prepare({1, 1}, {inc("x", 5, id)}, 0, true);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(c->flush());
  // The retry arrives while the original is prepared: it waits, unstaged.
  auto b = c->stage_prepare({1, 2}, {inc("x", 5, id), inc("y", 1)}, 0, false);
  BOOST_REQUIRE(b);
  BOOST_REQUIRE(b->blocked_by);
  BOOST_TEST((*b->blocked_by == tx_id{1, 1}));
  BOOST_TEST(c->pending_count() == 1u);
  BOOST_TEST(c->prepared_count() == 1u);
  BOOST_TEST(!c->has_staged());
  BOOST_TEST(c->take_ready().empty());
  // Staged but not durable is not an outcome yet.
  BOOST_REQUIRE(c->stage_commit({1, 1}, a->prepare_time + 1));
  BOOST_TEST(c->take_ready().empty());
  BOOST_REQUIRE(c->flush());
  auto ready = c->take_ready();
  BOOST_REQUIRE(ready.size() == 1u);
  BOOST_TEST((ready[0] == tx_id{1, 2}));
  auto r = c->resume_prepare({1, 2});
  BOOST_REQUIRE(r);
  BOOST_TEST(!r->blocked_by);
  BOOST_TEST(r->dismissed == 1u); // the original committed: a duplicate
  BOOST_REQUIRE(c->stage_commit({1, 2}, r->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", r->prepare_time) == 5);
  BOOST_TEST(value_at(*c, "y", r->prepare_time) == 1);
  BOOST_TEST(c->pending_count() == 0u);
}

BOOST_AUTO_TEST_CASE(retry_of_in_flight_id_applies_if_original_aborts) {
  auto c = open();
  const op_id id{9, 1};
  auto a = c->stage_prepare({1, 1}, {inc("x", 5, id)}, 0, true);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(c->flush());
  auto b = c->stage_prepare({1, 2}, {inc("x", 5, id)}, 0, false);
  BOOST_REQUIRE(b && b->blocked_by);
  BOOST_REQUIRE(c->stage_abort({1, 1}));
  auto ready = c->take_ready();
  BOOST_REQUIRE(ready.size() == 1u);
  auto r = c->resume_prepare(ready[0]);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->dismissed == 0u); // the original never applied: this one does
  BOOST_REQUIRE(c->stage_commit({1, 2}, r->prepare_time));
  BOOST_REQUIRE(c->flush());
  now += 10;
  BOOST_TEST(value_at(*c, "x", c->safe_time()) == 5);
  // And a further retry is now a duplicate.
  auto t = commit1(*c, {1, 3}, {inc("x", 5, id)});
  BOOST_TEST(value_at(*c, "x", t) == 5);
}

BOOST_AUTO_TEST_CASE(abort_of_a_waiting_prepare_cancels_it) {
  auto c = open();
  const op_id id{9, 1};
  BOOST_REQUIRE(c->stage_prepare({1, 1}, {inc("x", 5, id)}, 0, true));
  BOOST_REQUIRE(c->flush());
  auto b = c->stage_prepare({1, 2}, {inc("x", 5, id)}, 0, true);
  BOOST_REQUIRE(b && b->blocked_by);
  BOOST_REQUIRE(c->stage_abort({1, 2})); // its coordinator gave up
  auto ready = c->take_ready();
  BOOST_REQUIRE(ready.size() == 1u);
  auto r = c->resume_prepare(ready[0]);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::aborted);
  BOOST_TEST(c->pending_count() == 0u);
  // The original's commit later wakes no one.
  BOOST_REQUIRE(c->stage_commit({1, 1}, c->clock() + 1));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->take_ready().empty());
}

BOOST_AUTO_TEST_CASE(two_phase_retry_waits_only_for_an_older_transaction) {
  // Two copies of one multi-partition transaction can meet in opposite
  // orders at two partitions: each would wait for the other. Wait-die on
  // (snapshot time, tx_id) with a grace period breaks the cycle: the
  // younger waits as needed, the older at most older_wait_us, then fails.
  // Equal snapshots: the tx_id decides.
  auto c = open();
  const op_id id{9, 1};
  BOOST_REQUIRE(c->stage_prepare({1, 5}, {inc("x", 5, id)}, 0, true));
  auto older = c->stage_prepare({1, 4}, {inc("x", 5, id)}, 0, true);
  BOOST_REQUIRE(older);
  BOOST_TEST((older->blocked_by == tx_id{1, 5}));
  BOOST_TEST(older->wait_bound_us == 200'000u); // the older waits, bounded
  BOOST_TEST(c->expire_waits() == 0u);
  now += 200'000;
  BOOST_TEST(c->expire_waits() == 1u);
  auto ready = c->take_ready();
  BOOST_REQUIRE(ready.size() == 1u);
  auto gave_up = c->resume_prepare(ready[0]);
  BOOST_REQUIRE(!gave_up);
  BOOST_TEST(gave_up.err().code() == errc::gave_way);
  BOOST_TEST(c->pending_count() == 0u);
  auto younger = c->stage_prepare({1, 6}, {inc("x", 5, id)}, 0, true);
  BOOST_REQUIRE(younger);
  BOOST_TEST((younger->blocked_by == tx_id{1, 5}));
  BOOST_TEST(younger->wait_bound_us == 0u); // waits as long as needed
  auto one_step = c->stage_prepare({1, 3}, {inc("x", 5, id)}, 0, false);
  BOOST_REQUIRE(one_step); // holds nothing elsewhere: always waits
  BOOST_TEST((one_step->blocked_by == tx_id{1, 5}));
  BOOST_TEST(c->pending_count() == 2u);
  // A later snapshot is younger, whatever its id: it waits.
  const op_id id2{9, 2};
  BOOST_REQUIRE(c->stage_prepare({1, 9}, {inc("y", 1, id2)}, 100, true));
  auto later = c->stage_prepare({1, 1}, {inc("y", 1, id2)}, 200, true);
  BOOST_REQUIRE(later);
  BOOST_TEST((later->blocked_by == tx_id{1, 9}));
  auto earlier = c->stage_prepare({1, 10}, {inc("y", 1, id2)}, 50, true);
  BOOST_REQUIRE(earlier);
  BOOST_TEST(earlier->wait_bound_us != 0u);
}

BOOST_AUTO_TEST_CASE(reuse_of_an_op_id_for_another_operation_is_refused) {
  auto c = open();
  const op_id id{9, 1};
  auto is_conflict = [](const expected<prepare_outcome>& r) {
    return !r && r.err().code() == errc::invalid_argument
           && r.err().message().find("conflicting reuse of op id <9,1>")
                != std::string::npos;
  };
  // In flight: another delta, another key.
  BOOST_REQUIRE(c->stage_prepare({1, 1}, {inc("x", 5, id)}, 0, true));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(is_conflict(c->stage_prepare({1, 2}, {inc("x", 6, id)}, 0, false)));
  BOOST_TEST(is_conflict(c->stage_prepare({1, 3}, {inc("z", 5, id)}, 0, false)));
  BOOST_TEST(c->pending_count() == 0u);
  BOOST_TEST(!c->has_staged());
  // Committed: checked against the digest stored in `opids`.
  BOOST_REQUIRE(c->stage_commit({1, 1}, c->clock() + 1));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(is_conflict(c->stage_prepare({1, 4}, {inc("x", -5, id)}, 0, false)));
  // Within one request.
  const op_id id2{9, 2};
  auto twice = c->stage_prepare({1, 5}, {inc("y", 1, id2), inc("y", 2, id2)},
                                0, false);
  BOOST_TEST(!twice);
  // The same operation again is a plain duplicate, after a restart too.
  auto t = commit1(*c, {1, 6}, {inc("x", 5, id)});
  BOOST_TEST(value_at(*c, "x", t) == 5);
  c.reset();
  auto c2 = open();
  auto again = c2->stage_prepare({2, 1}, {inc("x", 7, id)}, 0, false);
  BOOST_TEST(is_conflict(again));
  auto dup = c2->stage_prepare({2, 2}, {inc("x", 5, id)}, 0, false);
  BOOST_REQUIRE(dup);
  BOOST_TEST(dup->dismissed == 1u);
}

// ---- issue 17, defect 4: counter overflow is refused at prepare ------------

BOOST_AUTO_TEST_CASE(an_update_that_could_overflow_is_refused_and_the_key_stays_readable) {
  auto c = open();
  auto t = commit1(*c, {1, 1}, {inc("x", INT64_MAX)});
  BOOST_TEST(value_at(*c, "x", t) == INT64_MAX);
  // INT64_MAX + INT64_MAX used to be acknowledged and left x unreadable.
  auto p = c->stage_prepare({1, 2}, {inc("x", INT64_MAX)}, 0, false);
  BOOST_REQUIRE(!p);
  BOOST_TEST(p.err().code() == errc::overflow);
  BOOST_TEST(p.err().message().find("64-bit range") != std::string::npos);
  BOOST_TEST(!c->has_staged());
  BOOST_TEST(!c->stage_prepare({1, 3}, {inc("x", 1)}, 0, false));
  // Within one transaction too, whatever the order of its effects.
  BOOST_TEST(!c->stage_prepare({1, 4}, {inc("x", -5), inc("x", 6)}, 0, false));
  // Going down is fine, and the key reads.
  auto t2 = commit1(*c, {1, 5}, {inc("x", -10)});
  BOOST_TEST(value_at(*c, "x", t2) == INT64_MAX - 10);
  auto t3 = commit1(*c, {1, 6}, {inc("x", 10)});
  BOOST_TEST(value_at(*c, "x", t3) == INT64_MAX);
}

BOOST_AUTO_TEST_CASE(concurrent_updates_each_safe_alone_cannot_overflow_together) {
  auto c = open();
  auto t = commit1(*c, {1, 1}, {inc("x", INT64_MAX - 100)});
  // Two undecided transactions, each fine alone: +60 then +60 would reach
  // above INT64_MAX if both commit, so the second is refused.
  auto a = c->stage_prepare({1, 2}, {inc("x", 60)}, 0, true);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(c->flush());
  auto b = c->stage_prepare({1, 3}, {inc("x", 60)}, 0, true);
  BOOST_REQUIRE(!b);
  BOOST_TEST(b.err().code() == errc::overflow);
  // A decrement meanwhile is admitted: every subset stays in range.
  auto d = c->stage_prepare({1, 4}, {inc("x", -50)}, 0, true);
  BOOST_REQUIRE(d);
  BOOST_REQUIRE(c->flush());
  // Commit both in the opposite order of their prepares: every snapshot
  // reads.
  BOOST_REQUIRE(c->stage_commit({1, 4}, d->prepare_time + 1));
  BOOST_REQUIRE(c->stage_commit({1, 2}, d->prepare_time + 2));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", t) == INT64_MAX - 100);
  BOOST_TEST(value_at(*c, "x", d->prepare_time + 1) == INT64_MAX - 150);
  BOOST_TEST(value_at(*c, "x", d->prepare_time + 2) == INT64_MAX - 90);
  // Near INT64_MIN the same holds downwards.
  auto m = commit1(*c, {1, 5}, {inc("y", INT64_MIN + 1)});
  BOOST_TEST(value_at(*c, "y", m) == INT64_MIN + 1);
  BOOST_TEST(!c->stage_prepare({1, 6}, {inc("y", -2)}, 0, false));
}

// ---- every CRDT type (docs/DATATYPES.md): read before write ---------------

namespace {

// Prepares `u` against the object at `snap` plus `own`, as the coordinator
// does (transactions.cpp, prepare_writes).
tx_update prepared(partition_core& c, const char* k, crdt_type type,
                   const crdt_update& u, std::uint64_t snap,
                   downstream_context& ctx, const std::vector<crdt_effect>& own = {}) {
  auto obj = c.read_object(key(k), type, vector_clock{{local_dc, snap}}, own);
  BOOST_REQUIRE_MESSAGE(obj, (obj ? "" : obj.err().to_string()));
  auto eff = obj->prepare(u, ctx);
  BOOST_REQUIRE_MESSAGE(eff, (eff ? "" : eff.err().to_string()));
  return tx_update{key(k), type, std::move(*eff), std::nullopt};
}

crdt_value read_as(partition_core& c, const char* k, crdt_type type, std::uint64_t t) {
  auto v = c.read(key(k), type, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE_MESSAGE(v, (v ? "" : v.err().to_string()));
  return *v;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_CASE(sets_registers_and_flags_commit_read_and_survive_reopen) {
  downstream_context ctx{token_source{42}, 5};
  std::uint64_t t = 0;
  {
    auto c = open();
    auto t1 = commit1(*c, {1, 1},
                      {prepared(*c, "s", crdt_type::orset,
                                set_update{set_add{{"a", "b"}}}, 0, ctx),
                       prepared(*c, "r", crdt_type::lwwreg,
                                register_update{register_assign{"v1", std::nullopt}}, 0, ctx),
                       prepared(*c, "f", crdt_type::flag_ew, flag_update::enable, 0, ctx)});
    BOOST_TEST((read_as(*c, "s", crdt_type::orset, t1) == crdt_value{strings{"a", "b"}}));
    // A remove prepared at the snapshot that saw the add takes it away; an
    // add concurrent with it (prepared at the older snapshot) wins.
    auto rm = prepared(*c, "s", crdt_type::orset, set_update{set_remove{{"a", "b"}}}, t1, ctx);
    auto again = prepared(*c, "s", crdt_type::orset, set_update{set_add{{"b"}}}, t1 - 1, ctx);
    commit1(*c, {1, 2}, {rm}, t1);
    t = commit1(*c, {1, 3}, {again,
                              prepared(*c, "r", crdt_type::lwwreg,
                                       register_update{register_assign{"v2", std::nullopt}}, t1, ctx),
                              prepared(*c, "f", crdt_type::flag_ew, flag_update::disable, t1, ctx)},
                t1);
    BOOST_TEST((read_as(*c, "s", crdt_type::orset, t) == crdt_value{strings{"b"}}));
    BOOST_TEST((read_as(*c, "r", crdt_type::lwwreg, t) == crdt_value{std::string{"v2"}}));
    BOOST_TEST((read_as(*c, "f", crdt_type::flag_ew, t) == crdt_value{false}));
    BOOST_TEST((read_as(*c, "s", crdt_type::orset, t1) == crdt_value{strings{"a", "b"}}));
  }
  auto c = open(); // cold cache: every effect decoded from the journal
  BOOST_TEST((read_as(*c, "s", crdt_type::orset, t) == crdt_value{strings{"b"}}));
  BOOST_TEST((read_as(*c, "r", crdt_type::lwwreg, t) == crdt_value{std::string{"v2"}}));
  BOOST_TEST((read_as(*c, "f", crdt_type::flag_ew, t) == crdt_value{false}));
}

BOOST_AUTO_TEST_CASE(read_object_includes_the_transactions_own_effects) {
  downstream_context ctx{token_source{7}, 5};
  auto c = open();
  auto first = prepared(*c, "m", crdt_type::mvreg,
                        register_update{register_assign{"x", std::nullopt}}, 0, ctx);
  // The second assign, prepared after the first (own), overwrites it.
  auto second = prepared(*c, "m", crdt_type::mvreg,
                         register_update{register_assign{"y", std::nullopt}}, 0, ctx,
                         {first.effect});
  auto t = commit1(*c, {1, 1}, {first, second});
  BOOST_TEST((read_as(*c, "m", crdt_type::mvreg, t) == crdt_value{strings{"y"}}));
}

BOOST_AUTO_TEST_CASE(an_update_of_another_type_than_its_key_is_refused_nothing_staged) {
  downstream_context ctx{token_source{9}, 5};
  auto c = open();
  auto t = commit1(*c, {1, 1}, {inc("n", 1),
                                prepared(*c, "s", crdt_type::orset,
                                         set_update{set_add{{"a"}}}, 0, ctx)});
  // A set operation on a counter, a counter update on a set.
  auto set_on_counter = prepared(*c, "x", crdt_type::orset, set_update{set_add{{"a"}}}, t, ctx);
  set_on_counter.key = key("n");
  auto r = c->stage_prepare({1, 2}, {set_on_counter}, t, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::wrong_type);
  auto r2 = c->stage_prepare({1, 3}, {inc("s", 1)}, t, false);
  BOOST_REQUIRE(!r2);
  BOOST_TEST(r2.err().code() == errc::wrong_type);
  // Two types for one new key in one request, or against an undecided one.
  auto flag = prepared(*c, "new", crdt_type::flag_ew, flag_update::enable, t, ctx);
  auto reg = prepared(*c, "new", crdt_type::lwwreg,
                      register_update{register_assign{"v", std::nullopt}}, t, ctx);
  BOOST_TEST(c->stage_prepare({1, 4}, {flag, reg}, t, false).err().code() == errc::wrong_type);
  BOOST_REQUIRE(c->stage_prepare({1, 5}, {flag}, t, true));
  BOOST_TEST(c->stage_prepare({1, 6}, {reg}, t, true).err().code() == errc::wrong_type);
  BOOST_REQUIRE(c->stage_abort({1, 5}));
  BOOST_REQUIRE(c->flush());
  auto later = c->safe_time();
  BOOST_TEST(value_at(*c, "n", later) == 1);
  BOOST_TEST((read_as(*c, "s", crdt_type::orset, later) == crdt_value{strings{"a"}}));
  // After the abort the key is free again.
  commit1(*c, {1, 7}, {reg}, t);
}

BOOST_AUTO_TEST_CASE(a_set_is_folded_into_the_checkpoint_and_read_from_it) {
  downstream_context ctx{token_source{11}, 5};
  std::uint64_t t = 0;
  {
    auto c = open_with(checkpointed(options()));
    commit1(*c, {1, 1}, {prepared(*c, "s", crdt_type::rwset,
                                  set_update{set_add{{"a", "b", "c"}}}, 0, ctx)});
    pass(*this, 10'000);
    t = commit1(*c, {1, 2}, {prepared(*c, "s", crdt_type::rwset,
                                      set_update{set_remove{{"b"}}}, c->safe_time(), ctx)},
                c->safe_time());
    pass(*this, 10'000);
    auto cp = checkpoint_ok(*c);
    BOOST_TEST(cp.ran);
    t = c->safe_time();
  }
  auto c = open_with(checkpointed(options()));
  BOOST_TEST((read_as(*c, "s", crdt_type::rwset, t) == crdt_value{strings{"a", "c"}}));
  auto v = c->read(key("s"), crdt_type::orset, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE(!v);
  BOOST_TEST(v.err().code() == errc::wrong_type);
}

BOOST_AUTO_TEST_CASE(bcounter_spends_are_checked_against_latest_rights_minus_undecided_ones) {
  downstream_context ctx{token_source{13}, 5};
  auto c = open();
  auto inc = prepared(*c, "bc", crdt_type::bcounter,
                      b_counter_update{b_counter_increment{5, local_dc}}, 0, ctx);
  auto t = commit1(*c, {1, 1}, {inc});
  // Both prepared at the same snapshot, where 5 rights are visible.
  auto spend = [&](std::uint64_t n) {
    return prepared(*c, "bc", crdt_type::bcounter,
                    b_counter_update{b_counter_decrement{n, local_dc}}, t, ctx);
  };
  auto a = spend(4), b = spend(4);
  BOOST_REQUIRE(c->stage_prepare({1, 2}, {a}, t, true)); // undecided
  auto r = c->stage_prepare({1, 3}, {b}, t, true);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::no_permissions);
  BOOST_TEST(r.err().message().find("undecided") != std::string::npos);
  // One right is left, also once the first one commits.
  BOOST_REQUIRE(c->stage_prepare({1, 4}, {spend(1)}, t, true));
  BOOST_REQUIRE(c->stage_commit({1, 2}, now + 100));
  BOOST_REQUIRE(c->stage_abort({1, 4}));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->stage_prepare({1, 5}, {spend(2)}, t, false).err().code() == errc::no_permissions);
  commit1(*c, {1, 6}, {spend(1)}, t);
  BOOST_TEST((read_as(*c, "bc", crdt_type::bcounter, c->safe_time()) == crdt_value{std::int64_t{0}}));
}

// ---- issue 16: op ids for counters nested in maps -------------------------

namespace {

// cart: an rrmap update with a nested increment and a nested set add, as the
// coordinator prepares it (fresh tokens each time), carrying `id`.
tx_update cart_update(partition_core& c, std::uint64_t snap, downstream_context& ctx,
                      std::optional<op_id> id, std::int64_t apples = 3) {
  map_update m;
  m.updates.push_back(keyed_update{map_key{"apples", crdt_type::counter}, counter_update{apples}});
  m.updates.push_back(keyed_update{map_key{"tags", crdt_type::orset}, set_update{set_add{{"red"}}}});
  auto u = prepared(c, "cart", crdt_type::rrmap, m, snap, ctx);
  u.op = id;
  return u;
}

std::int64_t apples_at(partition_core& c, std::uint64_t t) {
  auto v = read_as(c, "cart", crdt_type::rrmap, t);
  for (const auto& e : std::get<map_value>(v).entries)
    if (e.key == map_key{"apples", crdt_type::counter})
      return std::get<std::int64_t>(e.value);
  return 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_resent_map_update_with_nested_increments_applies_once) {
  downstream_context ctx{token_source{17}, 5};
  const op_id id{9, 1};
  std::uint64_t t = 0;
  {
    auto c = open();
    auto first = cart_update(*c, 0, ctx, id);
    t = commit1(*c, {1, 1}, {first});
    BOOST_TEST(apples_at(*c, t) == 3);
    // The resend is prepared again at the newer snapshot: new tokens, same
    // op id. Dismissed as a whole, the nested increment counted once.
    auto resend = cart_update(*c, t, ctx, id);
    BOOST_TEST(!(resend.effect == first.effect));
    auto p = c->stage_prepare({1, 2}, {resend}, t, false);
    BOOST_REQUIRE(p);
    BOOST_TEST(p->dismissed == 1u);
    BOOST_REQUIRE(c->stage_commit({1, 2}, p->prepare_time));
    BOOST_REQUIRE(c->flush());
    t = p->prepare_time;
    BOOST_TEST(apples_at(*c, t) == 3);
    BOOST_TEST(c->duplicates_dismissed() == 1u);
    // A resend while the original is undecided waits for it, then is a
    // duplicate too.
    const op_id id2{9, 2};
    auto a = c->stage_prepare({1, 3}, {cart_update(*c, t, ctx, id2)}, t, true);
    BOOST_REQUIRE(a);
    BOOST_REQUIRE(c->flush());
    auto b = c->stage_prepare({1, 4}, {cart_update(*c, t, ctx, id2)}, t, false);
    BOOST_REQUIRE(b && b->blocked_by);
    BOOST_REQUIRE(c->stage_commit({1, 3}, a->prepare_time));
    BOOST_REQUIRE(c->flush());
    BOOST_REQUIRE(c->take_ready().size() == 1u);
    auto r = c->resume_prepare({1, 4});
    BOOST_REQUIRE(r);
    BOOST_TEST(r->dismissed == 1u);
    BOOST_REQUIRE(c->stage_commit({1, 4}, r->prepare_time));
    BOOST_REQUIRE(c->flush());
    t = r->prepare_time;
    BOOST_TEST(apples_at(*c, t) == 6);
  }
  // After a restart (ids and digests from the journal) it is still one.
  auto c = open();
  auto p = c->stage_prepare({2, 1}, {cart_update(*c, t, ctx, id)}, t, false);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->dismissed == 1u);
}

BOOST_AUTO_TEST_CASE(a_map_update_with_another_op_id_applies_again) {
  downstream_context ctx{token_source{19}, 5};
  auto c = open();
  auto t = commit1(*c, {1, 1}, {cart_update(*c, 0, ctx, op_id{9, 1})});
  t = commit1(*c, {1, 2}, {cart_update(*c, t, ctx, op_id{9, 2})}, t);
  BOOST_TEST(apples_at(*c, t) == 6);
  // Without an op id (an AntidoteDB client) every send applies.
  t = commit1(*c, {1, 3}, {cart_update(*c, t, ctx, std::nullopt)}, t);
  t = commit1(*c, {1, 4}, {cart_update(*c, t, ctx, std::nullopt)}, t);
  BOOST_TEST(apples_at(*c, t) == 12);
  // The same op id for another nested delta is a conflicting reuse.
  auto r = c->stage_prepare({1, 5}, {cart_update(*c, t, ctx, op_id{9, 1}, 4)}, t, false);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().code() == errc::invalid_argument);
  BOOST_TEST(r.err().message().find("conflicting reuse") != std::string::npos);
  BOOST_TEST(apples_at(*c, c->safe_time()) == 12);
}

// ---- Resolution of undecided transactions (issue 13) ----------------------

// A two-phase prepare names every participant (sorted, once each) and its
// coordinator's node in its record: the partition lists them with the
// transaction while it is prepared, and recovery reads them back.
BOOST_AUTO_TEST_CASE(a_prepare_names_its_participants_and_coordinator_through_a_restart) {
  {
    auto c = open();
    BOOST_REQUIRE(c->stage_prepare({1, 1}, {inc("x", 4)}, 0, true, {5, 3, 3}, "tally@h:1"));
    BOOST_REQUIRE(c->flush());
    now += 1000;
    auto stale = c->prepared_before(now);
    BOOST_REQUIRE(stale.size() == 1u);
    BOOST_TEST((stale[0].participants == std::vector<std::uint32_t>{3, 5}));
    BOOST_TEST(stale[0].coordinator == "tally@h:1");
  }
  auto c = open();
  BOOST_REQUIRE(c->undecided().size() == 1u);
  BOOST_TEST((c->undecided()[0].participants == std::vector<std::uint32_t>{3, 5}));
  BOOST_TEST(c->undecided()[0].coordinator == "tally@h:1");
  BOOST_TEST(c->prepared_before(now + 1).at(0).coordinator == "tally@h:1");
}

// "Did tx commit here, and when?" is one lookup in the decision index,
// still answered after a checkpoint folded the commit and truncated its
// records, until decision_keep_us has passed; then the index says from which
// time on its "no decision" is a proof.
BOOST_AUTO_TEST_CASE(a_decision_outlives_the_checkpoint_for_the_keep_time) {
  auto o = checkpointed(options(durability::none));
  o.decision_keep_us = 10'000'000;
  auto c = open_with(o);
  auto p = c->stage_prepare({1, 1}, {inc("x", 4)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  const auto t = p->prepare_time + 7; // another participant prepared later
  BOOST_REQUIRE(c->stage_commit({1, 1}, t));
  BOOST_REQUIRE(c->flush());
  auto aborted = c->stage_prepare({1, 2}, {inc("y", 1)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(aborted);
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_abort({1, 2}));
  BOOST_REQUIRE(c->flush());
  auto d = c->find_decision({1, 1});
  BOOST_REQUIRE(d);
  BOOST_TEST((d->outcome == tx_outcome::committed));
  BOOST_TEST(d->commit_time == t);
  BOOST_TEST(d->kept_from == 0u);
  auto a = c->find_decision({1, 2});
  BOOST_REQUIRE(a);
  BOOST_TEST((a->outcome == tx_outcome::aborted));
  BOOST_TEST(!c->find_decision({9, 9})->outcome);
  pass(*this, 2000);
  auto cp = checkpoint_ok(*c);
  BOOST_REQUIRE(cp.ran);
  BOOST_TEST(span(*c) == 0u); // every record folded and truncated
  d = c->find_decision({1, 1});
  BOOST_REQUIRE(d);
  BOOST_TEST((d->outcome == tx_outcome::committed));
  BOOST_TEST(d->commit_time == t);
  // 20 s later (past the keep) and one more commit to fold: gone.
  pass(*this, 20000);
  commit1(*c, {1, 3}, {inc("z", 1)});
  pass(*this, 1000);
  cp = checkpoint_ok(*c);
  BOOST_REQUIRE(cp.ran);
  BOOST_TEST(cp.report.decisions_dropped == 2u);
  d = c->find_decision({1, 1});
  BOOST_REQUIRE(d);
  BOOST_TEST(!d->outcome);
  BOOST_TEST(d->kept_from > t); // so its absence proves nothing
  BOOST_TEST(d->kept_from <= now - o.decision_keep_us);
}

// A transaction left prepared holds back the safe time of the keys it
// writes only: a read of another key at a later snapshot is exact and
// served (issue 13: reads through the survivors of a pause).
BOOST_AUTO_TEST_CASE(a_transaction_left_prepared_blocks_only_the_keys_it_writes) {
  auto c = open();
  auto p = c->stage_prepare({1, 1}, {inc("x", 4), inc("w", 1)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  now += 5000;
  BOOST_TEST(c->safe_time() == p->prepare_time - 1);
  BOOST_TEST(c->safe_time_for(key("x")) == p->prepare_time - 1);
  BOOST_TEST(c->safe_time_for(key("w")) == p->prepare_time - 1);
  BOOST_TEST(c->safe_time_for(key("y")) >= now);
  // A later one-step commit of y is readable at its time, above the
  // prepare; x still reads 0 below it.
  auto t = commit1(*c, {1, 2}, {inc("y", 2)});
  BOOST_TEST(t > p->prepare_time);
  BOOST_TEST(c->safe_time_for(key("y")) >= t);
  BOOST_TEST(value_at(*c, "y", t) == 2);
  BOOST_TEST(value_at(*c, "x", p->prepare_time - 1) == 0);
  // Decided: x is free again and reads the commit.
  BOOST_REQUIRE(c->stage_commit({1, 1}, t + 1));
  BOOST_TEST(c->safe_time_for(key("x")) == p->prepare_time - 1); // staged only
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->safe_time_for(key("x")) >= t + 1);
  BOOST_TEST(value_at(*c, "x", t + 1) == 4);
  // Aborted ones release their keys too.
  auto q = c->stage_prepare({1, 3}, {inc("v", 1)}, 0, true);
  BOOST_REQUIRE(q);
  BOOST_TEST(c->safe_time_for(key("v")) == q->prepare_time - 1);
  BOOST_REQUIRE(c->stage_abort({1, 3}));
  BOOST_TEST(c->safe_time_for(key("v")) >= q->prepare_time);
}

// Recovery may commit a transaction here from another participant's
// decision before the coordinator's own commit arrives: that commit, at the
// same time, is acknowledged; one at another time is still refused.
BOOST_AUTO_TEST_CASE(a_coordinators_commit_after_recovery_committed_is_acknowledged) {
  auto c = open();
  auto p = c->stage_prepare({1, 1}, {inc("x", 4)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  const auto t = p->prepare_time + 3;
  BOOST_REQUIRE(c->stage_commit({1, 1}, t));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->stage_commit({1, 1}, t).has_value());
  BOOST_TEST(!c->has_staged()); // nothing written twice
  auto other = c->stage_commit({1, 1}, t + 1);
  BOOST_REQUIRE(!other);
  BOOST_TEST(other.err().code() == errc::not_found);
  BOOST_TEST(value_at(*c, "x", t + 5) == 4);
}

// Issue 13, a coordinator's node down for good (n_val 1): transactions it
// left prepared here stay undecided, as they must, but once older than
// set_aside_after_us they no longer hold the checkpoints back: the journal
// stays bounded (their records move to the log's end when it is truncated
// under them), the node's stable time moves on, other keys read at fresh
// snapshots. Their own keys wait for their decision; a late commit (at a
// time the checkpoint has passed) is folded into the checkpoint store, a
// late abort applies nothing; both survive a reopen. Without setting aside
// (before), the log kept every record from the stuck prepare on.
// An idle partition whose log holds only a set-aside transaction (its
// coordinator's node down for good, nothing else written): once the
// checkpoint time has passed it, checkpoints stop moving its records to
// the log's end again (before: a synced write of them at every interval,
// for as long as it stayed undecided). It still waits, and still commits.
BOOST_AUTO_TEST_CASE(an_idle_log_of_set_aside_records_is_not_rewritten_at_every_checkpoint) {
  auto o = checkpointed(options(durability::none));
  o.set_aside_after_us = 1'000'000;
  auto c = open_with(o);
  commit1(*c, {1, 1}, {inc("k", 1)});
  auto x = c->stage_prepare({9, 1}, {inc("x", 4)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(x);
  BOOST_REQUIRE(c->flush());
  std::uint64_t relocated = 0;
  for (int i = 0; i < 3; ++i) { // past the set-aside age: C passes it, its records move
    pass(*this, 1000);
    auto cp = c->checkpoint();
    BOOST_REQUIRE_MESSAGE(cp, (cp ? "" : cp.err().to_string()));
    relocated += cp->report.records_relocated;
  }
  BOOST_REQUIRE(c->checkpoint_time() > x->prepare_time);
  BOOST_TEST(relocated == 2u); // its update and prepare records, moved once
  BOOST_TEST(span(*c) == 2u);  // nothing else is left in the log
  const auto end = c->log_end();
  for (int i = 0; i < 5; ++i) {
    pass(*this, 1000);
    auto cp = c->checkpoint();
    BOOST_REQUIRE_MESSAGE(cp, (cp ? "" : cp.err().to_string()));
    BOOST_TEST(cp->report.records_relocated == 0u);
  }
  BOOST_TEST(c->log_end() == end);
  BOOST_TEST(c->safe_time_for(key("x")) == x->prepare_time - 1);
  BOOST_TEST(c->blocked_from() == UINT64_MAX);
  // Decided late: committed at its prepare time, folded, read back.
  BOOST_REQUIRE(c->stage_commit({9, 1}, x->prepare_time));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->prepared_count() == 0u);
  BOOST_TEST(value_at(*c, "x", now) == 4);
}

// docs/RELIABILITY.md, "The participant fence": a transaction fenced here
// (its coordinator out of reach; the recovery of undecided transactions
// asked) takes no commit from its coordinator and no prepare any more,
// across a reopen too (the fence record is in the journal); only a commit
// recovery proved from another participant's commit record. A fence asked
// of a decided transaction says how it ended and writes nothing.
BOOST_AUTO_TEST_CASE(a_fenced_transaction_takes_only_a_commit_recovery_proved) {
  auto c = open();
  auto p = c->stage_prepare({5, 1}, {inc("x", 4)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  auto f = c->stage_fence({5, 1});
  BOOST_REQUIRE(f);
  BOOST_TEST(f->fenced);
  BOOST_TEST(f->commit_time == 0u);
  BOOST_TEST(!f->aborted);
  BOOST_REQUIRE(c->flush());
  const auto t = p->prepare_time + 2;
  auto refused = c->stage_commit({5, 1}, t);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.err().code() == errc::unavailable);
  BOOST_TEST(refused.err().message().find("fenced") != std::string::npos);
  BOOST_TEST(c->prepared_count() == 1u);
  // Fenced before its prepare came: the prepare is refused.
  auto g = c->stage_fence({5, 2});
  BOOST_REQUIRE(g);
  BOOST_TEST(g->fenced);
  BOOST_REQUIRE(c->flush());
  auto late = c->stage_prepare({5, 2}, {inc("y", 1)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(!late);
  BOOST_TEST(late.err().code() == errc::aborted);

  c.reset();
  c = open(); // the fences come back from the journal
  BOOST_TEST(c->fenced({5, 1}));
  BOOST_TEST(c->fenced({5, 2}));
  BOOST_TEST(!c->stage_commit({5, 1}, t).has_value());
  BOOST_TEST(!c->stage_prepare({5, 2}, {inc("y", 1)}, 0, true, {3, 4}, "tally@h:1"));
  // The commit recovery proved: taken.
  BOOST_REQUIRE(c->stage_commit({5, 1}, t, true));
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(value_at(*c, "x", t + 5) == 4);
  BOOST_TEST(value_at(*c, "y", t + 5) == 0);
  // Asked again: the decision, and nothing written.
  auto again = c->stage_fence({5, 1});
  BOOST_REQUIRE(again);
  BOOST_TEST(again->commit_time == t);
  BOOST_TEST(!again->fenced);
  BOOST_TEST(!c->has_staged());
  // An aborted transaction: "aborted".
  BOOST_REQUIRE(c->stage_prepare({5, 3}, {inc("z", 1)}, 0, true, {3, 4}, "tally@h:1"));
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_abort({5, 3}));
  BOOST_REQUIRE(c->flush());
  auto aborted = c->stage_fence({5, 3});
  BOOST_REQUIRE(aborted);
  BOOST_TEST(aborted->aborted);
  BOOST_TEST(!aborted->fenced);
  BOOST_TEST(!c->has_staged());
  // Fenced and aborted: the coordinator's commit is told so; a proven
  // commit is a split decision, said as such.
  BOOST_REQUIRE(c->stage_prepare({5, 4}, {inc("w", 1)}, 0, true, {3, 4}, "tally@h:1"));
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_fence({5, 4}));
  BOOST_REQUIRE(c->stage_abort({5, 4}));
  BOOST_REQUIRE(c->flush());
  auto told = c->stage_commit({5, 4}, t + 10);
  BOOST_REQUIRE(!told);
  BOOST_TEST(told.err().code() == errc::aborted);
  BOOST_TEST(told.err().message().find("aborted by the recovery") != std::string::npos);
  auto split = c->stage_commit({5, 4}, t + 10, true);
  BOOST_REQUIRE(!split);
  BOOST_TEST(split.err().message().find("split decision") != std::string::npos);
  // A commit under way (staged, not applied) is no proof: asked again.
  BOOST_REQUIRE(c->stage_prepare({5, 5}, {inc("v", 1)}, 0, true, {3, 4}, "tally@h:1"));
  BOOST_REQUIRE(c->flush());
  BOOST_REQUIRE(c->stage_commit({5, 5}, t + 20));
  auto under_way = c->stage_fence({5, 5});
  BOOST_REQUIRE(!under_way);
  BOOST_TEST(under_way.err().code() == errc::unavailable);
  BOOST_REQUIRE(c->flush());
  auto applied = c->stage_fence({5, 5});
  BOOST_REQUIRE(applied);
  BOOST_TEST(applied->commit_time == t + 20);
}

// The participant fence's documented limits (docs/FORMAT.md, "Fence
// records"): a fence is kept in memory for 10 minutes (no coordinator
// sends anything that late; the request timeout is 10 s), and its record
// holds nothing back at a checkpoint, so once a checkpoint has truncated
// it, a reopened partition no longer knows the fence. Pinned so that a
// change of either shows here.
BOOST_AUTO_TEST_CASE(a_fence_is_kept_ten_minutes_and_goes_with_its_record_at_a_checkpoint) {
  {
    auto c = open();
    auto f = c->stage_fence({6, 1});
    BOOST_REQUIRE(f);
    BOOST_TEST(f->fenced);
    BOOST_REQUIRE(c->flush());
    pass(*this, 9 * 60 * 1000); // 9 minutes: still fenced
    for (std::uint64_t s = 2; s <= 32; ++s)
      BOOST_REQUIRE(c->stage_fence({6, s}));
    BOOST_REQUIRE(c->flush());
    BOOST_TEST(c->fenced({6, 1}));
    pass(*this, 2 * 60 * 1000); // 11 minutes: dropped at the next sweep
    for (std::uint64_t s = 33; s <= 64; ++s) // the 64th fence sweeps
      BOOST_REQUIRE(c->stage_fence({6, s}));
    BOOST_REQUIRE(c->flush());
    BOOST_TEST(!c->fenced({6, 1}));
    BOOST_TEST(c->fenced({6, 64}));
  }
  std::filesystem::remove_all(dir);
  auto o = checkpointed(options(durability::none));
  auto c = open_with(o);
  BOOST_REQUIRE(c->stage_fence({7, 1}));
  BOOST_REQUIRE(c->flush());
  const auto fence_at = c->log_end() - 1;
  std::uint64_t seq = 0;
  for (int i = 0; i < 5; ++i) { // commits after it, and checkpoints
    commit1(*c, {1, ++seq}, {inc("x", 1)});
    pass(*this, 1000);
    checkpoint_ok(*c);
  }
  BOOST_TEST(c->log().truncation_lsn() > fence_at); // its record is gone
  BOOST_TEST(c->fenced({7, 1}));                    // still known in memory
  c.reset();
  c = open_with(o);
  BOOST_TEST(!c->fenced({7, 1})); // not after a reopen
  BOOST_TEST(value_at(*c, "x", now) == 5);
}

// A coordinator paused exactly between its commits (issue 14: "prepared
// transactions of a dead coordinator are decided from the replicas'
// evidence"): it committed partition A at T and stopped before B. B's
// holder found A's commit record and committed B at T itself (a commit
// recovery proved). The coordinator wakes and sends its commit of B, at
// T, while B's commit is still under way (its batch waits for its sync):
// "retry", nothing written twice; once applied: acknowledged, not refused,
// and the increment counts once, across a reopen too. Its commit at
// another time is refused (never sent: a coordinator has one commit time).
BOOST_AUTO_TEST_CASE(a_coordinators_late_commit_after_recovery_committed_is_acknowledged_once) {
  auto c = open();
  auto p = c->stage_prepare({8, 1}, {inc("x", 3)}, 0, true, {3, 4}, "tally@h:1");
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  const auto t = p->prepare_time + 5;
  BOOST_REQUIRE(c->stage_commit({8, 1}, t, true)); // recovery: A's record proves it
  auto under_way = c->stage_commit({8, 1}, t);     // the coordinator, before the flush
  BOOST_REQUIRE(!under_way);
  BOOST_TEST(under_way.err().code() == errc::unavailable);
  BOOST_REQUIRE(c->flush());
  BOOST_TEST(c->prepared_count() == 0u);
  BOOST_TEST(c->stage_commit({8, 1}, t).has_value()); // the coordinator's resend
  BOOST_TEST(!c->has_staged());
  BOOST_TEST(!c->stage_commit({8, 1}, t + 1).has_value());
  BOOST_TEST(value_at(*c, "x", t + 10) == 3);
  c.reset();
  c = open();
  BOOST_TEST(c->stage_commit({8, 1}, t).has_value());
  BOOST_TEST(value_at(*c, "x", t + 10) == 3);
}

BOOST_AUTO_TEST_CASE(a_transaction_left_prepared_no_longer_holds_the_journal_back) {
  std::uint64_t spans[2][2] = {};
  for (int with = 0; with < 2; ++with) {
    fixture f;
    auto o = checkpointed(f.options(durability::none));
    o.set_aside_after_us = with ? 3'000'000 : 0;
    std::uint64_t px = 0, py = 0, t = 0, seq = 0;
    std::int64_t sum = 0;
    {
      auto c = f.open_with(o);
      auto x = c->stage_prepare({9, 1}, {inc("x", 4)}, 0, true, {3, 4}, "tally@h:1");
      auto y = c->stage_prepare({9, 2}, {inc("y", 5)}, 0, true, {3, 4}, "tally@h:1");
      BOOST_REQUIRE(x);
      BOOST_REQUIRE(y);
      px = x->prepare_time;
      py = y->prepare_time;
      BOOST_REQUIRE(c->flush());
      std::uint64_t relocated = 0;
      for (int step = 1; step <= 600; ++step) { // 60 s in 100 ms steps
        for (int i = 0; i < 5; ++i, ++seq) {     // 50 transactions/s
          t = commit1(*c, {1, seq + 1},
                      {tx_update{object_key{"b", "k" + std::to_string(seq % 50)},
                                 crdt_type::counter, counter_effect{1}, op_id{5, seq + 1}}});
          ++sum;
        }
        pass(f, 100);
        c->advance_filters();
        if (step % 10 == 0) { // one checkpoint per second
          auto cp = c->checkpoint();
          BOOST_REQUIRE_MESSAGE(cp, (cp ? "" : cp.err().to_string()));
          relocated += cp->report.records_relocated;
        }
        if (step == 300 || step == 600)
          spans[with][step / 300 - 1] = span(*c);
      }
      BOOST_TEST(c->prepared_count() == 2u); // still undecided
      if (!with) {
        BOOST_TEST(c->blocked_from() == px); // the node's stable time stays pinned
        continue;
      }
      BOOST_TEST(relocated >= 4u); // x's and y's update and prepare records, moved
      BOOST_TEST(c->checkpoint_time() > py);
      BOOST_TEST(c->blocked_from() == UINT64_MAX); // no longer pins the stable time
      // Their keys wait for them; every other key reads at a fresh snapshot.
      BOOST_TEST(c->safe_time_for(key("x")) == px - 1);
      BOOST_TEST(c->safe_time_for(key("k7")) >= t);
      std::int64_t read = 0;
      for (int k = 0; k < 50; ++k)
        read += value_at(*c, ("k" + std::to_string(k)).c_str(), t);
      BOOST_TEST(read == sum);
      // Late: x commits at a time the checkpoint has passed, y aborts.
      BOOST_REQUIRE(c->stage_commit({9, 1}, std::max(px, py) + 1));
      BOOST_REQUIRE(c->stage_abort({9, 2}));
      BOOST_REQUIRE_MESSAGE(c->flush(), "a late commit is folded, not refused");
      BOOST_TEST(c->prepared_count() == 0u);
      BOOST_TEST(c->safe_time_for(key("x")) >= t);
      BOOST_TEST(value_at(*c, "x", c->safe_time()) == 4);
      BOOST_TEST(value_at(*c, "y", c->safe_time()) == 0);
      auto d = c->find_decision({9, 1});
      BOOST_REQUIRE(d);
      BOOST_TEST((d->outcome == tx_outcome::committed));
    }
    if (!with)
      continue;
    // After a reopen (recovery, cold cache) the same values; a checkpoint
    // after the late commit keeps them.
    auto c = f.open_with(o);
    BOOST_TEST(c->undecided().empty());
    BOOST_TEST(value_at(*c, "x", c->safe_time()) == 4);
    BOOST_TEST(value_at(*c, "y", c->safe_time()) == 0);
    commit1(*c, {2, 1}, {inc("x", 1)});
    pass(f, 2000);
    BOOST_REQUIRE(c->checkpoint());
    BOOST_TEST(value_at(*c, "x", c->safe_time()) == 5);
    std::int64_t read = 0;
    for (int k = 0; k < 50; ++k)
      read += value_at(*c, ("k" + std::to_string(k)).c_str(), c->safe_time());
    BOOST_TEST(read == sum);
  }
  BOOST_TEST_MESSAGE("log span at 30 s / 60 s with a transaction left prepared: not set "
                     "aside "
                     << spans[0][0] << " / " << spans[0][1] << ", set aside after 3 s "
                     << spans[1][0] << " / " << spans[1][1]);
  BOOST_TEST(spans[0][1] >= 6000u); // every record since the prepare
  BOOST_TEST(spans[1][1] <= 800u);  // as with no prepared transaction (<= 700)
  BOOST_TEST(spans[1][1] <= spans[1][0] + 40);
}

BOOST_AUTO_TEST_SUITE_END()
