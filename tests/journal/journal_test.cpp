#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "journal/fault_env.hpp"
#include "journal/journal.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(appended_records_read_back_in_lsn_order) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  tx_id t{1, 1};
  auto r = j->append({update(t, key(1), 5), prepare_record{t, 9},
                      commit(t, 10, 1000)});
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->first == 1u);
  BOOST_TEST(r->last == 3u);
  BOOST_TEST(j->next_lsn() == 4u);
  std::vector<std::pair<lsn, std::string>> seen;
  BOOST_REQUIRE(j->scan(1, 100, [&](lsn at, const journal_record& rec) {
                   seen.emplace_back(at, record_kind_name(rec));
                   return true;
                 }).has_value());
  BOOST_REQUIRE(seen.size() == 3u);
  BOOST_TEST(seen[0].second == "update");
  BOOST_TEST(seen[1].second == "prepare");
  BOOST_TEST(seen[2].second == "commit");
  BOOST_TEST(seen[2].first == 3u);
}

BOOST_AUTO_TEST_CASE(a_batch_is_one_transaction_and_one_sync) {
  temp_dir dir;
  auto env = fault_env::open(lmdb_options{dir.sub("p"), 64u << 20});
  BOOST_REQUIRE(env.has_value());
  auto j = open_ok(options(dir.sub("p")), *env).log;
  auto commits = (*env)->count(fault_point::commit);
  auto syncs = (*env)->count(fault_point::sync);
  std::vector<journal_record> batch;
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    batch.push_back(update(tx_id{1, i}, key(static_cast<int>(i % 10)), 1));
    batch.push_back(commit(tx_id{1, i}, i));
  }
  auto r = j->append(batch);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->size() == 2000u);
  BOOST_TEST((*env)->count(fault_point::commit) == commits + 1);
  BOOST_TEST((*env)->count(fault_point::sync) == syncs + 1);
  BOOST_TEST(j->durable_lsn() == 2000u);
}

BOOST_AUTO_TEST_CASE(a_failed_batch_applies_none_of_its_records) {
  temp_dir dir;
  auto env = fault_env::open(lmdb_options{dir.sub("p"), 64u << 20});
  BOOST_REQUIRE(env.has_value());
  auto j = open_ok(options(dir.sub("p")), *env).log;
  BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1)}).has_value());
  (*env)->inject(fault_spec{fault_point::write, 3, EIO});
  std::vector<journal_record> batch;
  for (std::uint64_t i = 2; i < 10; ++i)
    batch.push_back(update(tx_id{1, i}, key(1), 1));
  auto r = j->append(batch);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::io_error);
  BOOST_TEST(!j->stopped()); // nothing was committed: the log is known
  BOOST_TEST(j->next_lsn() == 2u);
  BOOST_TEST(j->undecided().size() == 1u);
  int records = 0;
  BOOST_REQUIRE(j->scan(0, 100, [&](lsn, const journal_record&) {
                   ++records;
                   return true;
                 }).has_value());
  BOOST_TEST(records == 1);
  BOOST_TEST(j->append(batch).has_value());
}

BOOST_AUTO_TEST_CASE(batch_mode_acknowledges_durability_only_after_sync) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"), durability::batch)).log;
  BOOST_TEST(j->durable_lsn() == 0u);
  BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1)}).has_value());
  BOOST_REQUIRE(j->append({commit(tx_id{1, 1}, 1)}).has_value());
  BOOST_TEST(j->durable_lsn() == 0u);
  BOOST_TEST(j->next_lsn() == 3u);
  BOOST_REQUIRE(j->sync().has_value());
  BOOST_TEST(j->durable_lsn() == 2u);
}

BOOST_AUTO_TEST_CASE(none_mode_never_syncs) {
  temp_dir dir;
  auto env = fault_env::open(lmdb_options{dir.sub("p"), 64u << 20});
  BOOST_REQUIRE(env.has_value());
  auto j = open_ok(options(dir.sub("p"), durability::none), *env).log;
  auto syncs = (*env)->count(fault_point::sync);
  BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1)}).has_value());
  BOOST_REQUIRE(j->sync().has_value());
  BOOST_TEST((*env)->count(fault_point::sync) == syncs);
  BOOST_TEST(j->durable_lsn() == 0u);
}

BOOST_AUTO_TEST_CASE(commit_indexes_its_updates_and_abort_never_does) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  tx_id a{1, 1}, b{1, 2}, c{1, 3};
  BOOST_REQUIRE(j->append({update(a, key(1), 5), update(b, key(1), 100),
                           update(a, key(2), 7), update(a, key(1), 6),
                           update(c, key(1), 1000)})
                  .has_value());
  BOOST_REQUIRE(j->append({abort_record{b}, commit(a, 3)}).has_value());
  auto k1 = j->read_committed(key(1));
  BOOST_REQUIRE(k1.has_value());
  BOOST_REQUIRE(k1->size() == 2u);
  BOOST_TEST((*k1)[0].position == 1u);
  BOOST_TEST((*k1)[1].position == 4u);
  BOOST_TEST((*k1)[0].commit_position == 7u);
  BOOST_TEST(((*k1)[0].commit_time == vector_clock{{1, 3}}));
  BOOST_TEST(test::sum(*k1) == 11);
  BOOST_TEST(test::sum(*j->read_committed(key(2))) == 7);
  BOOST_TEST(j->read_committed(key(3))->empty());
  // c is still undecided: not indexed, but known.
  BOOST_TEST(j->undecided().size() == 1u);
  BOOST_TEST(j->undecided().count(c) == 1u);
  auto st = j->stats();
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->index.entries == 3u);
}

BOOST_AUTO_TEST_CASE(read_committed_skips_commits_up_to_after_lsn) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  for (std::uint64_t i = 1; i <= 5; ++i)
    BOOST_REQUIRE(
      j->append({update(tx_id{1, i}, key(1), 1), commit(tx_id{1, i}, i)})
        .has_value());
  // Commits sit at LSNs 2, 4, 6, 8, 10.
  BOOST_TEST(j->read_committed(key(1), 0)->size() == 5u);
  BOOST_TEST(j->read_committed(key(1), 4)->size() == 3u);
  BOOST_TEST(j->read_committed(key(1), 5)->size() == 3u);
  BOOST_TEST(j->read_committed(key(1), 10)->empty());
  BOOST_TEST(j->scan_committed(key(1), 5)->size() == 3u);
}

BOOST_AUTO_TEST_CASE(index_reads_equal_journal_scans_over_random_histories) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 4; ++round) {
      temp_dir dir;
      auto j = open_ok(options(dir.sub("p"), durability::none)).log;
      test::history h{rng, 12, j->next_lsn()};
      for (int b = 0; b < 40; ++b) {
        auto batch = h.batch(rng.uniform(1, 40));
        BOOST_REQUIRE(j->append(batch).has_value());
      }
      for (int k = 0; k < h.keys(); ++k) {
        auto indexed = j->read_committed(key(k));
        auto scanned = j->scan_committed(key(k));
        BOOST_REQUIRE(indexed.has_value());
        BOOST_REQUIRE(scanned.has_value());
        BOOST_TEST(test::same_effects(*indexed, h.expected(k)));
        BOOST_TEST(test::same_effects(*scanned, h.expected(k)));
        auto after = rng.uniform(0, j->next_lsn());
        auto i2 = j->read_committed(key(k), after);
        auto s2 = j->scan_committed(key(k), after);
        BOOST_TEST(test::same_effects(*i2, *s2));
      }
      BOOST_TEST(j->undecided().size() == h.open_transactions());
    }
  }
}

BOOST_AUTO_TEST_CASE(reopen_rebuilds_the_state_recovery_promises) {
  temp_dir dir;
  auto opts = options(dir.sub("p"));
  tx_id done{1, 1}, prepared{1, 2}, in_flight{1, 3}, aborted{1, 4};
  {
    auto j = open_ok(opts).log;
    BOOST_REQUIRE(j->append({update(done, key(1), 5, op_id{9, 1}),
                             update(prepared, key(1), 50, op_id{9, 2}),
                             update(aborted, key(2), 500, op_id{9, 3}),
                             update(done, key(2), 6)})
                    .has_value());
    BOOST_REQUIRE(j->append({prepare_record{prepared, 11},
                             commit(done, 12, 777), abort_record{aborted},
                             update(in_flight, key(3), 1)})
                    .has_value());
  }
  auto o = open_ok(opts);
  const auto& r = o.recovery;
  BOOST_TEST(r.records == 8u);
  BOOST_TEST(r.next_lsn == 9u);
  BOOST_TEST(o.log->next_lsn() == 9u);
  BOOST_TEST(r.cut_records == 0u);
  BOOST_TEST((r.max_commit_time == vector_clock{{1, 12}}));
  BOOST_TEST(r.last_bloom_timestamp == "bloom@12");
  BOOST_REQUIRE(r.effects.size() == 2u);
  BOOST_TEST(test::sum(r.effects.at(key(1))) == 5);
  BOOST_TEST(test::sum(r.effects.at(key(2))) == 6);
  BOOST_REQUIRE(r.op_ids.size() == 1u);
  BOOST_TEST((r.op_ids[0].op == op_id{9, 1}));
  BOOST_TEST(r.op_ids[0].wall_time_us == 777u);
  BOOST_TEST(r.op_ids[0].bucket == "b");
  BOOST_REQUIRE(r.undecided.size() == 2u);
  BOOST_TEST(r.undecided[0].tx == prepared);
  BOOST_TEST(r.undecided[0].prepare.has_value());
  BOOST_TEST(r.undecided[0].prepare_lsn == 5u);
  BOOST_REQUIRE(r.undecided[0].updates.size() == 1u);
  BOOST_TEST(r.undecided[0].updates[0].first == 2u);
  BOOST_TEST(r.undecided[1].tx == in_flight);
  BOOST_TEST(!r.undecided[1].prepare.has_value());
  BOOST_TEST(o.log->undecided().size() == 2u);
  BOOST_TEST(o.log->durable_lsn() == 8u);

  // A commit after the restart indexes the update written before it.
  BOOST_REQUIRE(o.log->append({commit(prepared, 13)}).has_value());
  BOOST_TEST(test::sum(*o.log->read_committed(key(1))) == 55);
}

BOOST_AUTO_TEST_CASE(recovery_without_effect_collection_keeps_the_rest) {
  temp_dir dir;
  auto opts = options(dir.sub("p"));
  {
    auto j = open_ok(opts).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 5, op_id{1, 1}),
                             commit(tx_id{1, 1}, 3)})
                    .has_value());
  }
  opts.collect_effects = false;
  auto o = open_ok(opts);
  BOOST_TEST(o.recovery.effects.empty());
  BOOST_TEST(o.recovery.op_ids.size() == 1u);
  BOOST_TEST(test::sum(*o.log->read_committed(key(1))) == 5);
}

BOOST_AUTO_TEST_CASE(store_of_another_partition_is_refused) {
  temp_dir dir;
  { open_ok(options(dir.sub("p"), durability::full, 7)); }
  auto r = tally::journal::open(options(dir.sub("p"), durability::full, 8));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::bad_config);
  BOOST_TEST(r.err().message().find("partition 7, not 8") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(store_with_another_format_version_is_refused) {
  temp_dir dir;
  { open_ok(options(dir.sub("p"))); }
  {
    auto env = lmdb_env::open(lmdb_options{dir.sub("p"), 64u << 20});
    BOOST_REQUIRE(env.has_value());
    auto txn = (*env)->begin(true);
    BOOST_REQUIRE(txn.has_value());
    BOOST_REQUIRE(
      (*txn)->put(store_db::meta, "format_version", encode_u64(2)).has_value());
    BOOST_REQUIRE((*txn)->commit(commit_mode::durable).has_value());
  }
  auto r = tally::journal::open(options(dir.sub("p")));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::corrupt);
  BOOST_TEST(r.err().message().find("format version 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(over_long_object_key_is_refused_before_writing) {
  temp_dir dir;
  auto j = open_ok(options(dir.sub("p"))).log;
  auto r = j->append({update(tx_id{1, 1}, key(1), 1),
                      update(tx_id{1, 1}, object_key{"b", std::string(600, 'x')},
                             1)});
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::invalid_argument);
  BOOST_TEST(j->next_lsn() == 1u);
  BOOST_TEST(j->undecided().empty());
}

BOOST_AUTO_TEST_SUITE_END()
