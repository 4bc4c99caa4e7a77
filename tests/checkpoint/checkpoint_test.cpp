#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>
#include <vector>

#include "cache/object_cache.hpp"
#include "checkpoint/checkpoint_store.hpp"
#include "journal/fault_env.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

namespace {

constexpr std::uint64_t no_fbf_window = std::numeric_limits<std::uint64_t>::max();

vector_clock at(std::uint64_t t) { return vector_clock{{1, t}}; }

// Bounds that hold nothing back but the checkpoint time itself.
checkpoint_bounds open_bounds(tally::journal& j, std::uint64_t time) {
  checkpoint_bounds b;
  b.checkpoint_time = at(time);
  b.replicated_lsn = j.next_lsn() - 1;
  b.fbf_horizon_us = no_fbf_window;
  return b;
}

// Transaction i (1-based) adds i to key (i % 2) and commits at time i, wall
// time i ms; its update is LSN 2i-1, its commit LSN 2i.
void append_simple(tally::journal& j, std::uint64_t from, std::uint64_t to,
                   bool with_op = false) {
  for (std::uint64_t i = from; i <= to; ++i) {
    std::optional<op_id> op;
    if (with_op)
      op = op_id{5, i};
    BOOST_REQUIRE(j.append({update(tx_id{1, i}, key(static_cast<int>(i % 2)),
                                   static_cast<std::int64_t>(i), op),
                            commit(tx_id{1, i}, i, i * 1000)})
                    .has_value());
  }
}

std::int64_t value_of(checkpoint_store& cs, const object_key& k) {
  auto image = cs.load(k);
  BOOST_REQUIRE_MESSAGE(image.has_value(), test::describe(image));
  std::int64_t v = 0;
  if (image->base)
    v = std::get<std::int64_t>(image->base->object.value());
  return v + test::sum(image->effects);
}

std::int64_t entry_value(checkpoint_store& cs, const object_key& k) {
  auto e = cs.get(k);
  BOOST_REQUIRE(e.has_value());
  BOOST_REQUIRE(e->has_value());
  return std::get<std::int64_t>((*e)->version.object.value());
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(entry_round_trips_and_rejects_damaged_bytes) {
  auto obj = *crdt_object::make(crdt_type::counter);
  BOOST_REQUIRE(obj.apply(counter_effect{-77}).has_value());
  checkpoint_entry e{object_version{obj, vector_clock{{1, 5}, {2, 9}}}, 42};
  auto bytes = encode_checkpoint_entry(e);
  auto back = decode_checkpoint_entry(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((back->version.object == obj));
  BOOST_TEST((back->version.time == e.version.time));
  BOOST_TEST(back->base_commit_lsn == 42u);
  for (std::size_t i = 0; i < bytes.size() * 8; ++i) {
    auto bad = bytes;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    BOOST_TEST(decode_checkpoint_entry(bad).err().code() == errc::corrupt);
  }
}

BOOST_AUTO_TEST_CASE(checkpoint_folds_exactly_the_commits_at_or_below_its_time) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  append_simple(*j, 1, 10);
  auto r = cs.checkpoint(open_bounds(*j, 6));
  BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
  BOOST_TEST(r->sequence == 1u);
  BOOST_TEST(r->transactions_folded == 6u);
  BOOST_TEST(r->effects_folded == 6u);
  BOOST_TEST(r->keys_written == 2u);
  BOOST_TEST(r->truncation_lsn == 13u); // tx 7's update
  BOOST_TEST(r->limited_by == truncation_limit::unfolded_commit);
  BOOST_TEST(r->records_dropped == 12u);
  BOOST_TEST(r->index_entries_dropped == 6u);
  BOOST_TEST(j->truncation_lsn() == 13u);

  BOOST_TEST(entry_value(cs, key(0)) == 2 + 4 + 6);
  BOOST_TEST(entry_value(cs, key(1)) == 1 + 3 + 5);
  auto e0 = *cs.get(key(0));
  BOOST_TEST((e0->version.time == at(6)));
  BOOST_TEST(e0->base_commit_lsn == 12u);
  // The log and its index now hold only what the checkpoint does not.
  BOOST_TEST(test::sum(*j->read_committed(key(0))) == 8 + 10);
  BOOST_TEST(test::sum(*j->scan_committed(key(0))) == 8 + 10);
  BOOST_TEST(value_of(cs, key(0)) == 30);
  BOOST_TEST(value_of(cs, key(1)) == 25);
  auto st = j->stats();
  BOOST_TEST(st->journal.entries == 8u);
  BOOST_TEST(st->index.entries == 4u);
  BOOST_TEST(*cs.size() == 2u);
}

BOOST_AUTO_TEST_CASE(restart_after_checkpoint_serves_checkpoint_plus_suffix) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    append_simple(*j, 1, 10);
    BOOST_REQUIRE(cs.checkpoint(open_bounds(*j, 6)).has_value());
  }
  auto o = open_ok(options(path));
  checkpoint_store cs{*o.log};
  BOOST_TEST(o.recovery.records == 8u);
  BOOST_TEST(o.recovery.truncation_lsn == 13u);
  BOOST_TEST((o.recovery.checkpoint_time == at(6)));
  BOOST_TEST((o.recovery.max_commit_time == at(10)));
  BOOST_TEST(o.recovery.last_bloom_timestamp == "bloom@10");
  BOOST_TEST(test::sum(o.recovery.effects.at(key(0))) == 18);
  BOOST_TEST(value_of(cs, key(0)) == 30);
  BOOST_TEST(value_of(cs, key(1)) == 25);
  BOOST_TEST(o.log->checkpoint().sequence == 1u);
}

BOOST_AUTO_TEST_CASE(undecided_transaction_holds_the_truncation_point) {
  temp_dir dir;
  auto path = dir.sub("p");
  tx_id slow{2, 1};
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    append_simple(*j, 1, 2); // LSNs 1-4
    BOOST_REQUIRE(j->append({update(slow, key(0), 1000), prepare_record{slow, 3}})
                    .has_value()); // LSNs 5-6
    append_simple(*j, 3, 6); // LSNs 7-14
    auto r = cs.checkpoint(open_bounds(*j, 6));
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->limited_by == truncation_limit::undecided);
    BOOST_TEST(r->limited_at == 5u);
    BOOST_TEST(r->truncation_lsn == 5u);
    // Everything committed <= 6 is folded, also what the log keeps.
    BOOST_TEST(r->transactions_folded == 6u);
    BOOST_TEST(entry_value(cs, key(0)) == 12);
    BOOST_TEST(j->read_committed(key(0))->empty());
    BOOST_TEST(j->scan_committed(key(0))->empty());
    BOOST_TEST(value_of(cs, key(0)) == 12);
  }
  {
    auto o = open_ok(options(path));
    checkpoint_store cs{*o.log};
    // Folded commits still in the log are not handed out twice.
    BOOST_TEST(o.recovery.effects.empty());
    BOOST_REQUIRE(o.recovery.undecided.size() == 1u);
    BOOST_TEST(o.recovery.undecided[0].tx == slow);
    BOOST_TEST(value_of(cs, key(0)) == 12);
    // Once it commits (above the checkpoint time), the next checkpoint moves
    // past it.
    BOOST_REQUIRE(o.log->append({commit(slow, 7)}).has_value());
    BOOST_TEST(value_of(cs, key(0)) == 1012);
    auto r = cs.checkpoint(open_bounds(*o.log, 7));
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->limited_by == truncation_limit::log_end);
    BOOST_TEST(r->truncation_lsn == o.log->next_lsn());
    BOOST_TEST(o.log->stats()->journal.entries == 0u);
    BOOST_TEST(value_of(cs, key(0)) == 1012);
  }
}

// A term record (docs/REPLICATION.md, "Terms in the journal") belongs to
// no transaction: a checkpoint folds past it (counted as a transaction
// without a decision, it held the log back for good), and the journal
// still knows the term of the folded records.
BOOST_AUTO_TEST_CASE(a_term_record_does_not_hold_the_truncation_point) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  const copy_term t{1000, "tally@127.0.0.1:1"};
  BOOST_REQUIRE(j->append({term_record{t}}).has_value()); // LSN 1
  append_simple(*j, 1, 3);                                 // LSNs 2-7
  auto r = cs.checkpoint(open_bounds(*j, 3));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->limited_by == truncation_limit::log_end);
  BOOST_TEST(r->truncation_lsn == j->next_lsn());
  BOOST_TEST(j->last_term() == t);
  BOOST_TEST(value_of(cs, key(1)) == 4);
}

BOOST_AUTO_TEST_CASE(records_not_yet_replicated_are_kept) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  append_simple(*j, 1, 5);
  auto b = open_bounds(*j, 5);
  b.replicated_lsn = 4;
  auto r = cs.checkpoint(b);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->limited_by == truncation_limit::replicated);
  BOOST_TEST(r->truncation_lsn == 5u);
  BOOST_TEST(r->transactions_folded == 5u);
  BOOST_TEST(j->stats()->journal.entries == 6u);
  BOOST_TEST(value_of(cs, key(1)) == 1 + 3 + 5);
  // The defaults keep everything: nothing replicated, FBF window open.
  checkpoint_bounds keep_all;
  keep_all.checkpoint_time = at(5);
  auto none = cs.checkpoint(keep_all);
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST(none->truncation_lsn == 5u);
}

BOOST_AUTO_TEST_CASE(commits_inside_the_fbf_window_keep_their_records_and_ids) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    append_simple(*j, 1, 6, true); // wall times 1000..6000 us
    auto b = open_bounds(*j, 6);
    b.fbf_horizon_us = 4000; // ids of commits at >= 4 ms are still needed
    auto r = cs.checkpoint(b);
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->limited_by == truncation_limit::fbf_window);
    BOOST_TEST(r->truncation_lsn == 7u); // tx 4's update
    BOOST_TEST(r->transactions_folded == 6u);
    BOOST_TEST(value_of(cs, key(0)) == 12);
  }
  auto o = open_ok(options(path));
  BOOST_REQUIRE(o.recovery.op_ids.size() == 3u);
  BOOST_TEST((o.recovery.op_ids[0].op == op_id{5, 4}));
  BOOST_TEST(o.recovery.op_ids[0].wall_time_us == 4000u);
  BOOST_TEST(o.recovery.effects.empty()); // all folded
  checkpoint_store cs{*o.log};
  BOOST_TEST(value_of(cs, key(0)) == 12);
  // When the window has passed them, they go.
  auto b = open_bounds(*o.log, 6);
  b.fbf_horizon_us = 7000;
  auto r = cs.checkpoint(b);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->records_dropped == 6u);
  BOOST_TEST(r->transactions_folded == 0u);
  BOOST_TEST(value_of(cs, key(0)) == 12);
}

BOOST_AUTO_TEST_CASE(aborted_transactions_never_hold_the_log) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  BOOST_REQUIRE(j->append({update(tx_id{3, 1}, key(0), 99), abort_record{tx_id{3, 1}}})
                  .has_value());
  append_simple(*j, 1, 2);
  auto r = cs.checkpoint(open_bounds(*j, 2));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->limited_by == truncation_limit::log_end);
  BOOST_TEST(r->records_dropped == 6u);
  BOOST_TEST(value_of(cs, key(0)) == 2);
}

// A checkpoint reads the log only up to its last commit that may be <= C,
// or its last abort (journal::end_of_commits_within, rebuilt at open and
// cut by the checkpoint): a commit <= C written after one above C is still
// folded, an aborted transaction is dropped wherever it is, and what
// follows the last of those is not read. (Reading the whole retained log
// at every checkpoint held a node's shard 2-7 ms per partition:
// docs/PERFORMANCE.md, "Latency at half load".)
BOOST_AUTO_TEST_CASE(checkpoint_reads_up_to_the_last_commit_it_may_fold) {
  temp_dir dir;
  auto path = dir.sub("p");
  // LSN 1-2: tx 5 adds 5 to key 0 and aborts; 3-4: tx 1 adds 1, commits
  // at 2; 5-6: tx 2 adds 10, at 9; 7-8: tx 3 adds 100, at 4 (below the
  // commit before it); 9-10: tx 4 adds 1000, at 12.
  {
    auto j = open_ok(options(path)).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 5}, key(0), 5), abort_record{tx_id{1, 5}}}));
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(0), 1), commit(tx_id{1, 1}, 2)}));
    BOOST_REQUIRE(j->append({update(tx_id{1, 2}, key(0), 10), commit(tx_id{1, 2}, 9)}));
    BOOST_REQUIRE(j->append({update(tx_id{1, 3}, key(0), 100), commit(tx_id{1, 3}, 4)}));
    BOOST_REQUIRE(j->append({update(tx_id{1, 4}, key(0), 1000), commit(tx_id{1, 4}, 12)}));
    BOOST_TEST(j->end_of_commits_within(at(1)) == 3u);  // the abort, LSN 2
    BOOST_TEST(j->end_of_commits_within(at(2)) == 5u);
    BOOST_TEST(j->end_of_commits_within(at(4)) == 9u);  // tx 3's commit, LSN 8
    BOOST_TEST(j->end_of_commits_within(at(11)) == 9u);
    BOOST_TEST(j->end_of_commits_within(at(12)) == 11u); // tx 4's, LSN 10
  }
  auto j = open_ok(options(path)).log; // rebuilt from the log at open
  BOOST_TEST(j->end_of_commits_within(at(4)) == 9u);
  BOOST_TEST(j->end_of_commits_within(at(12)) == 11u);
  checkpoint_store cs{*j};
  auto r = cs.checkpoint(open_bounds(*j, 5));
  BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
  BOOST_TEST(r->transactions_folded == 2u); // tx 1 and tx 3
  BOOST_TEST(r->truncation_lsn == 5u);      // tx 2's update: its commit is above C
  BOOST_TEST(r->limited_by == truncation_limit::unfolded_commit);
  BOOST_TEST(entry_value(cs, key(0)) == 101);
  BOOST_TEST(value_of(cs, key(0)) == 1111); // tx 2 and 4 from the log
  // Cut with the log: what was folded no longer counts.
  BOOST_TEST(j->end_of_commits_within(at(2)) == 5u); // nothing left at or below 2
  BOOST_TEST(j->end_of_commits_within(at(9)) == 9u);
  // An abort after the last commit is read and dropped too.
  BOOST_REQUIRE(j->append({update(tx_id{1, 6}, key(0), 7), abort_record{tx_id{1, 6}}}));
  BOOST_TEST(j->end_of_commits_within(at(9)) == 13u);
  auto r2 = cs.checkpoint(open_bounds(*j, 12));
  BOOST_REQUIRE_MESSAGE(r2.has_value(), test::describe(r2));
  BOOST_TEST(r2->transactions_folded == 2u); // tx 2 and tx 4
  BOOST_TEST(r2->truncation_lsn == 13u);     // all of it
  BOOST_TEST(entry_value(cs, key(0)) == 1111);
  BOOST_TEST(value_of(cs, key(0)) == 1111);
  BOOST_TEST(j->end_of_commits_within(at(100)) == 13u); // the log's start now
}

BOOST_AUTO_TEST_CASE(checkpoint_time_never_goes_back) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  append_simple(*j, 1, 4);
  BOOST_REQUIRE(cs.checkpoint(open_bounds(*j, 3)).has_value());
  auto back = cs.checkpoint(open_bounds(*j, 2));
  BOOST_REQUIRE(!back.has_value());
  BOOST_TEST(back.err().code() == errc::invalid_argument);
  auto concurrent = open_bounds(*j, 3);
  concurrent.checkpoint_time = vector_clock{{2, 100}};
  BOOST_TEST(cs.checkpoint(concurrent).err().code() == errc::invalid_argument);
  // Repeating the same checkpoint changes nothing.
  auto same = cs.checkpoint(open_bounds(*j, 3));
  BOOST_REQUIRE(same.has_value());
  BOOST_TEST(same->sequence == 1u);
  BOOST_TEST(same->transactions_folded == 0u);
}

BOOST_AUTO_TEST_CASE(commit_at_or_below_the_checkpoint_time_is_refused) {
  // It would be invisible (readers take commits <= C from the checkpoint):
  // the owner set C above its safe time, and hears about it.
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  append_simple(*j, 1, 4);
  BOOST_REQUIRE(j->append({update(tx_id{9, 1}, key(0), 1)}).has_value());
  BOOST_REQUIRE(cs.checkpoint(open_bounds(*j, 4)).has_value());
  auto late = j->append({commit(tx_id{9, 1}, 3)});
  BOOST_REQUIRE(!late.has_value());
  BOOST_TEST(late.err().code() == errc::invalid_argument);
  BOOST_TEST(late.err().message().find("safe time") != std::string::npos);
  BOOST_TEST(!j->stopped());
  BOOST_TEST(j->append({commit(tx_id{9, 1}, 5)}).has_value());
  BOOST_TEST(value_of(cs, key(0)) == 2 + 4 + 1);
}

BOOST_AUTO_TEST_CASE(failed_checkpoint_commit_leaves_the_old_state_whole) {
  for (bool applied : {false, true}) {
    BOOST_TEST_CONTEXT("the failed commit " << (applied ? "was" : "was not")
                                            << " written") {
      temp_dir dir;
      auto path = dir.sub("p");
      {
        auto env = fault_env::open(lmdb_options{path, 64u << 20});
        BOOST_REQUIRE(env.has_value());
        auto j = open_ok(options(path), *env).log;
        checkpoint_store cs{*j};
        append_simple(*j, 1, 6);
        (*env)->inject(fault_spec{fault_point::commit, 1, EIO, applied});
        auto r = cs.checkpoint(open_bounds(*j, 6));
        BOOST_REQUIRE(!r.has_value());
        BOOST_TEST(r.err().code() == errc::io_error);
        BOOST_TEST(j->stopped());
        BOOST_TEST(cs.checkpoint(open_bounds(*j, 6)).err().code()
                   == errc::io_error);
      }
      auto o = open_ok(options(path));
      checkpoint_store cs{*o.log};
      if (applied) {
        BOOST_TEST(o.log->checkpoint().sequence == 1u);
        BOOST_TEST(o.recovery.records == 0u);
        BOOST_TEST(*cs.size() == 2u);
      } else {
        BOOST_TEST(o.log->checkpoint().sequence == 0u);
        BOOST_TEST(o.recovery.records == 12u);
        BOOST_TEST(*cs.size() == 0u);
        BOOST_TEST(o.log->stats()->index.entries == 6u);
      }
      BOOST_TEST(value_of(cs, key(0)) == 12);
      BOOST_TEST(value_of(cs, key(1)) == 9);
    }
  }
}

BOOST_AUTO_TEST_CASE(checkpoint_survives_a_crash_right_after_it) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = fault_env::open(lmdb_options{path, 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto j = open_ok(options(path, durability::batch), *env).log;
    checkpoint_store cs{*j};
    append_simple(*j, 1, 6); // lazily committed
    BOOST_REQUIRE(cs.checkpoint(open_bounds(*j, 4)).has_value());
    BOOST_TEST(j->durable_lsn() == 12u); // the checkpoint commit synced
    append_simple(*j, 7, 8); // lost in the crash
    BOOST_REQUIRE((*env)->crash().has_value());
  }
  auto o = open_ok(options(path));
  checkpoint_store cs{*o.log};
  BOOST_TEST(o.log->next_lsn() == 13u);
  BOOST_TEST(value_of(cs, key(0)) == 12);
  BOOST_TEST(value_of(cs, key(1)) == 9);
}

BOOST_AUTO_TEST_CASE(keys_rebuild_exactly_across_random_checkpoints_and_restarts) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir dir;
    auto path = dir.sub("p");
    test::history h{rng, 10, 1};
    std::uint64_t cp_time = 0;
    for (int restart = 0; restart < 3; ++restart) {
      auto o = open_ok(options(path, durability::none));
      checkpoint_store cs{*o.log};
      for (int round = 0; round < 6; ++round) {
        for (int b = 0; b < 5; ++b)
          BOOST_REQUIRE(o.log->append(h.batch(rng.uniform(1, 30))).has_value());
        // The history's clock only grows, so any time it reached is safe
        // (no commit at or below it can come later).
        cp_time = rng.uniform(cp_time, h.clock());
        auto b = open_bounds(*o.log, cp_time);
        b.replicated_lsn = rng.uniform(o.log->truncation_lsn(),
                                       o.log->next_lsn() - 1);
        auto r = cs.checkpoint(b);
        BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
        for (int k = 0; k < h.keys(); ++k)
          BOOST_TEST(value_of(cs, key(k)) == test::sum(h.expected(k)));
      }
    }
    auto o = open_ok(options(path));
    checkpoint_store cs{*o.log};
    for (int k = 0; k < h.keys(); ++k) {
      BOOST_TEST(value_of(cs, key(k)) == test::sum(h.expected(k)));
      auto it = o.recovery.effects.find(key(k));
      auto recovered = it == o.recovery.effects.end() ? 0 : test::sum(it->second);
      auto e = cs.get(key(k));
      std::int64_t base =
        *e ? std::get<std::int64_t>((*e)->version.object.value()) : 0;
      BOOST_TEST(base + recovered == test::sum(h.expected(k)));
    }
  }
}

BOOST_AUTO_TEST_CASE(cache_misses_load_through_the_checkpoint_store) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  checkpoint_store cs{*j};
  append_simple(*j, 1, 10);
  BOOST_REQUIRE(cs.checkpoint(open_bounds(*j, 6)).has_value());
  auto cache = object_cache::make();
  BOOST_REQUIRE(cache.has_value());
  checkpoint_source source{cs};
  auto now = cache->read_or_load(key(0), crdt_type::counter, at(100), {}, source);
  BOOST_REQUIRE_MESSAGE(now.has_value(), test::describe(now));
  BOOST_TEST(std::get<std::int64_t>(*now) == 30);
  auto mid = cache->read(key(0), crdt_type::counter, at(8));
  BOOST_REQUIRE(mid.has_value());
  BOOST_REQUIRE(mid->has_value());
  BOOST_TEST(std::get<std::int64_t>(**mid) == 20);
  // Below the checkpoint the history is gone, and the cache says so.
  auto old = cache->read(key(0), crdt_type::counter, at(3));
  BOOST_REQUIRE(!old.has_value());
  BOOST_TEST(old.err().code() == errc::unavailable);
}

BOOST_AUTO_TEST_CASE(truncation_drops_the_op_ids_of_truncated_commits_only) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(options(path)).log;
    checkpoint_store cs{*j};
    append_simple(*j, 1, 6, true); // op <5,i>, wall time i ms, commit LSN 2i
    auto b = open_bounds(*j, 6);
    b.fbf_horizon_us = 4000; // ids of tx 4..6 are inside the window
    auto r = cs.checkpoint(b);
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->truncation_lsn == 7u);
    BOOST_TEST(r->op_ids_dropped == 3u);
    for (std::uint64_t i = 1; i <= 6; ++i) {
      auto f = j->find_committed_op(op_id{5, i});
      BOOST_REQUIRE(f.has_value());
      if (i <= 3)
        BOOST_TEST(!f->has_value());
      else
        BOOST_TEST(f->value_or(0) == 2 * i);
    }
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.log->stats()->opids.entries == 3u);
  BOOST_TEST(o.log->find_committed_op(op_id{5, 4})->value_or(0) == 8u);
  checkpoint_store cs{*o.log};
  auto b = open_bounds(*o.log, 6);
  b.fbf_horizon_us = 7000; // the window has passed them all
  auto r = cs.checkpoint(b);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->op_ids_dropped == 3u);
  BOOST_TEST(o.log->stats()->opids.entries == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
