#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <string>
#include <vector>

#include <lmdb.h>

#include "journal/fault_env.hpp"
#include "journal/journal.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_fault_env;
using tally::test::open_ok;
using tally::test::total;
using tally::test::options;
using tally::test::temp_dir;
using tally::test::update;

namespace {

std::vector<journal_record> tx_batch(std::uint64_t seq, int key_index,
                                     std::int64_t delta) {
  return {update(tx_id{1, seq}, key(key_index), delta),
          commit(tx_id{1, seq}, seq)};
}

void expect_stopped(tally::journal& j, lsn at) {
  BOOST_TEST(j.stopped());
  auto again = j.append(tx_batch(99, 1, 1));
  BOOST_REQUIRE(!again.has_value());
  BOOST_TEST(again.err().code() == errc::io_error);
  BOOST_TEST(again.err().message().find("stopped after a failed")
             != std::string::npos);
  BOOST_TEST(again.err().message().find("at LSN " + std::to_string(at))
             != std::string::npos);
  BOOST_TEST(again.err().message().find("reopen") != std::string::npos);
  BOOST_TEST(j.sync().err().code() == errc::io_error);
}

} // namespace

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(failed_commit_stops_the_journal_and_applies_nothing) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto j = open_ok(options(path), env).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 5)).has_value());
    env->inject(fault_spec{fault_point::commit, 2, EIO, false});
    BOOST_REQUIRE(j->append(tx_batch(2, 1, 6)).has_value());
    auto r = j->append(tx_batch(3, 1, 7)); // the 2nd commit from now
    BOOST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::io_error);
    expect_stopped(*j, 6);
    // Still readable, and the failed batch is not visible.
    BOOST_TEST(total(*j, 1) == 11);
    BOOST_TEST(j->next_lsn() == 5u);
  }
  auto o = open_ok(options(path));
  BOOST_TEST(!o.log->stopped());
  BOOST_TEST(o.recovery.records == 4u);
  BOOST_TEST(total(*o.log, 1) == 11);
}

BOOST_AUTO_TEST_CASE(commit_that_failed_after_writing_is_recovered_whole) {
  // The failing commit did reach the file: the journal cannot know, stops,
  // and a reopen finds the batch complete, never half of it.
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto j = open_ok(options(path), env).log;
    env->inject(fault_spec{fault_point::commit, 1, EIO, true});
    BOOST_REQUIRE(!j->append(tx_batch(1, 1, 5)).has_value());
    expect_stopped(*j, 2);
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.records == 2u);
  BOOST_TEST(total(*o.log, 1) == 5);
}

BOOST_AUTO_TEST_CASE(failed_sync_in_full_mode_stops_the_journal) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto env = open_fault_env(path);
  auto j = open_ok(options(path), env).log;
  BOOST_REQUIRE(j->append(tx_batch(1, 1, 5)).has_value());
  env->inject(fault_spec{fault_point::sync, 1, EIO});
  auto r = j->append(tx_batch(2, 1, 6));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::io_error);
  expect_stopped(*j, 4);
  BOOST_TEST(j->durable_lsn() == 2u);
}

BOOST_AUTO_TEST_CASE(failed_sync_in_batch_mode_stops_the_journal) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto env = open_fault_env(path);
  auto j = open_ok(options(path, durability::batch), env).log;
  BOOST_REQUIRE(j->append(tx_batch(1, 1, 5)).has_value());
  BOOST_REQUIRE(j->sync().has_value());
  BOOST_REQUIRE(j->append(tx_batch(2, 1, 6)).has_value());
  env->inject(fault_spec{fault_point::sync, 1, EIO});
  auto st = j->sync();
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::io_error);
  BOOST_TEST(j->durable_lsn() == 2u); // the failed sync acknowledged nothing
  expect_stopped(*j, 4);
}

BOOST_AUTO_TEST_CASE(crash_drops_unsynced_batches_and_keeps_synced_ones) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto j = open_ok(options(path, durability::batch), env).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 5)).has_value());
    BOOST_REQUIRE(j->append(tx_batch(2, 2, 6)).has_value());
    BOOST_REQUIRE(j->sync().has_value());
    BOOST_TEST(j->durable_lsn() == 4u);
    BOOST_REQUIRE(j->append(tx_batch(3, 1, 100)).has_value());
    BOOST_REQUIRE(j->append(tx_batch(4, 3, 100)).has_value());
    BOOST_TEST(total(*j, 1) == 105); // visible before the crash
    BOOST_REQUIRE(env->crash().has_value());
    BOOST_TEST(j->append(tx_batch(5, 1, 1)).err().code() == errc::unavailable);
  }
  auto o = open_ok(options(path, durability::batch));
  BOOST_TEST(o.recovery.records == 4u);
  BOOST_TEST(o.recovery.next_lsn == 5u);
  BOOST_TEST(total(*o.log, 1) == 5);
  BOOST_TEST(total(*o.log, 2) == 6);
  BOOST_TEST(total(*o.log, 3) == 0);
}

BOOST_AUTO_TEST_CASE(crash_in_full_mode_loses_no_acknowledged_append) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto j = open_ok(options(path), env).log;
    for (std::uint64_t i = 1; i <= 20; ++i)
      BOOST_REQUIRE(j->append(tx_batch(i, 1, 1)).has_value());
    BOOST_REQUIRE(env->crash().has_value());
  }
  auto o = open_ok(options(path));
  BOOST_TEST(o.recovery.records == 40u);
  BOOST_TEST(total(*o.log, 1) == 20);
}

BOOST_AUTO_TEST_CASE(full_map_gives_storage_full_and_stays_readable) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto opts = options(path);
  opts.map_size = 256u << 10; // 256 KiB: a few hundred records
  lsn last_ok = 0;
  std::vector<journal_record> refused;
  {
    auto j = open_ok(opts).log;
    std::optional<error> full;
    for (std::uint64_t i = 1; i < 100000 && !full; ++i) {
      std::vector<journal_record> batch;
      for (std::uint64_t k = 0; k < 8; ++k) {
        auto u = update(tx_id{1, i * 8 + k}, key(static_cast<int>(k)), 1);
        u.key.key += std::string(100, 'p'); // fill pages quickly
        batch.push_back(std::move(u));
        batch.push_back(commit(tx_id{1, i * 8 + k}, i * 8 + k));
      }
      auto r = j->append(batch);
      if (r) {
        last_ok = r->last;
      } else {
        full = r.err();
        refused = batch;
      }
    }
    BOOST_REQUIRE(full.has_value());
    BOOST_TEST(full->code() == errc::storage_full);
    BOOST_TEST(full->message().find("map size") != std::string::npos);
    BOOST_TEST(full->message().find("journal_options::map_size")
               != std::string::npos);
    BOOST_TEST(!j->stopped());
    BOOST_TEST(j->next_lsn() == last_ok + 1);
    int records = 0;
    BOOST_REQUIRE(j->scan(0, ~0ull, [&](lsn, const journal_record&) {
                     ++records;
                     return true;
                   }).has_value());
    BOOST_TEST(records == static_cast<int>(last_ok));
    // The same batch is refused again: the failed one left nothing behind.
    BOOST_TEST(j->append(refused).err().code() == errc::storage_full);
    BOOST_TEST(!j->stopped());
  }
  // Raising the map size, as the message says, makes room.
  opts.map_size = 8u << 20;
  auto o = open_ok(opts);
  BOOST_TEST(o.recovery.records == last_ok);
  BOOST_TEST(o.log->append(refused).has_value());
}

BOOST_AUTO_TEST_CASE(injected_map_full_at_commit_does_not_stop_the_journal) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto env = open_fault_env(path);
  auto j = open_ok(options(path), env).log;
  env->inject(fault_spec{fault_point::commit, 1, MDB_MAP_FULL, false});
  auto r = j->append(tx_batch(1, 1, 5));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::storage_full);
  BOOST_TEST(!j->stopped());
  BOOST_TEST(j->append(tx_batch(1, 1, 5)).has_value());
  BOOST_TEST(total(*j, 1) == 5);
}

BOOST_AUTO_TEST_SUITE_END()
