// The journal's write-ahead tail (journal.hpp; docs/STORAGE.md, "The
// write-ahead tail"): appends go to tail.log and move into LMDB in bulk;
// readers see one log; a process crash keeps every appended record, a power
// loss every record a tail sync covered; a torn last entry is cut.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "journal/codec.hpp"
#include "journal/fault_env.hpp"
#include "journal/journal.hpp"
#include "journal/lmdb_env.hpp"
#include "journal/write_ahead_tail.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::commit;
using tally::test::key;
using tally::test::open_fault_env;
using tally::test::open_ok;
using tally::test::total;
using tally::test::temp_dir;
using tally::test::update;

namespace {

journal_options tail_options(const std::string& path, durability mode = durability::batch,
                             std::uint64_t drain_records = 1024) {
  auto o = test::options(path, mode);
  o.write_ahead_tail = true;
  o.tail_drain_records = drain_records;
  return o;
}

std::vector<journal_record> tx_batch(std::uint64_t seq, int key_index, std::int64_t delta) {
  return {update(tx_id{1, seq}, key(key_index), delta, op_id{5, seq}),
          commit(tx_id{1, seq}, seq)};
}

std::uint64_t file_size(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(write_ahead_tail)

// The file grows by zeros written ahead of its entries, a chunk at a time,
// so that a sync after an append rewrites blocks the file has (no inode
// write: docs/STORAGE.md); a reader takes the zeros for a clean end.
BOOST_AUTO_TEST_CASE(the_file_keeps_zeros_ahead_of_its_entries_and_they_read_as_its_end) {
  temp_dir dir;
  auto path = dir.sub("p");
  std::uint64_t entries = 0;
  {
    auto j = open_ok(tail_options(path)).log;
    for (std::uint64_t i = 1; i <= 3; ++i)
      BOOST_REQUIRE(j->append(tx_batch(i, 1, static_cast<std::int64_t>(i))).has_value());
    BOOST_REQUIRE(j->sync().has_value());
    BOOST_TEST(file_size(path + "/tail.log") == tail_prealloc_bytes);
    auto parsed = parse_tail(read_file(path + "/tail.log"));
    BOOST_TEST(parsed.records.size() == 6u);
    BOOST_TEST(parsed.stop_reason == "");
    entries = parsed.valid_bytes;
    BOOST_TEST(entries > 0u);
    BOOST_TEST(entries < tail_prealloc_bytes);
  }
  auto o = open_ok(tail_options(path));
  BOOST_TEST(o.recovery.tail_replayed == 6u);
  BOOST_TEST(o.recovery.tail_stop_reason == "");
  BOOST_TEST(total(*o.log, 1) == 6);
  // Cut to its entries at open; the next append writes zeros ahead again,
  // after them.
  BOOST_TEST(file_size(path + "/tail.log") == entries);
  BOOST_REQUIRE(o.log->append(tx_batch(4, 1, 4)).has_value());
  BOOST_TEST(file_size(path + "/tail.log") == tail_prealloc_bytes);
  BOOST_TEST(parse_tail(read_file(path + "/tail.log")).records.size() == 8u);
}

BOOST_AUTO_TEST_CASE(appends_go_to_the_tail_and_every_reader_sees_them) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto j = open_ok(tail_options(path)).log;
  for (std::uint64_t i = 1; i <= 3; ++i)
    BOOST_REQUIRE(j->append(tx_batch(i, 1, static_cast<std::int64_t>(i))).has_value());
  BOOST_TEST(j->tail_records() == 6u);
  BOOST_TEST(file_size(path + "/tail.log") > 0u);
  // In memory, without a drain: the log, op ids and the end.
  std::vector<lsn> seen;
  BOOST_REQUIRE(j->scan(1, 7, [&](lsn at, const journal_record&) {
                    seen.push_back(at);
                    return true;
                  })
                  .has_value());
  BOOST_TEST((seen == std::vector<lsn>{1, 2, 3, 4, 5, 6}));
  auto found = j->find_committed_op(op_id{5, 2});
  BOOST_REQUIRE(found.has_value());
  BOOST_REQUIRE(found->has_value());
  BOOST_TEST(**found == 4u);
  BOOST_TEST(j->tail_records() == 6u);
  // Through the index: the tail keeps its own in memory (no drain).
  BOOST_TEST(total(*j, 1) == 6);
  BOOST_TEST(j->tail_records() == 6u);
  // Across the boundary of LMDB and the tail: an update in LMDB, its
  // commit in the tail; a scan over both.
  BOOST_REQUIRE(j->append({update(tx_id{1, 4}, key(1), 4)}).has_value());
  BOOST_REQUIRE(j->drain_tail().has_value());
  BOOST_TEST(j->tail_records() == 0u);
  BOOST_REQUIRE(j->append({commit(tx_id{1, 4}, 4)}).has_value());
  BOOST_TEST(total(*j, 1) == 10);
  seen.clear();
  BOOST_REQUIRE(j->scan(5, 9, [&](lsn at, const journal_record&) {
                    seen.push_back(at);
                    return true;
                  })
                  .has_value());
  BOOST_TEST((seen == std::vector<lsn>{5, 6, 7, 8}));
  auto after = j->read_committed(key(1), 6);
  BOOST_REQUIRE(after.has_value());
  BOOST_TEST(test::sum(*after) == 4);
}

BOOST_AUTO_TEST_CASE(the_tail_drains_into_lmdb_in_bulk) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto env = open_fault_env(path);
  auto j = open_ok(tail_options(path, durability::batch, 8), env).log;
  const auto commits_before = env->count(fault_point::commit);
  for (std::uint64_t i = 1; i <= 20; ++i)
    BOOST_REQUIRE(j->append(tx_batch(i, 1, 1)).has_value());
  // 40 records, 8 to a drain: 5 LMDB commits, not 20.
  BOOST_TEST(env->count(fault_point::commit) - commits_before == 5u);
  BOOST_TEST(j->tail_records() == 0u);
  BOOST_TEST(total(*j, 1) == 20);
}

BOOST_AUTO_TEST_CASE(a_process_crash_keeps_every_appended_record) {
  // The journal is dropped with records only in the tail file, as kill -9
  // would leave them (the page cache keeps what write(2) was given).
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(tail_options(path, durability::none)).log;
    for (std::uint64_t i = 1; i <= 5; ++i)
      BOOST_REQUIRE(j->append(tx_batch(i, 1, 10)).has_value());
    BOOST_REQUIRE(j->append({update(tx_id{1, 9}, key(2), 7), prepare_record{tx_id{1, 9}, 99}})
                    .has_value());
    BOOST_TEST(j->tail_records() == 12u);
  }
  auto o = open_ok(tail_options(path, durability::none));
  BOOST_TEST(o.recovery.tail_replayed == 12u);
  BOOST_TEST(o.recovery.tail_stop_reason == "");
  BOOST_TEST(o.recovery.next_lsn == 13u);
  BOOST_TEST(o.recovery.records == 12u);
  BOOST_TEST(o.recovery.op_ids.size() == 5u);
  BOOST_REQUIRE(o.recovery.undecided.size() == 1u);
  BOOST_TEST(o.recovery.undecided[0].prepare.has_value());
  BOOST_TEST(total(*o.log, 1) == 50);
  // Taken in as the tail, not written at open: the next drain moves them.
  BOOST_TEST(o.log->tail_records() == 12u);
  // Committed after the restart: the update written before it is indexed.
  BOOST_REQUIRE(o.log->append({commit(tx_id{1, 9}, 100)}).has_value());
  BOOST_TEST(total(*o.log, 2) == 7);
}

BOOST_AUTO_TEST_CASE(a_store_left_with_a_tail_opens_with_the_tail_off) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(tail_options(path)).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 3)).has_value());
  }
  auto o = open_ok(test::options(path, durability::batch));
  BOOST_TEST(o.recovery.tail_replayed == 2u);
  BOOST_TEST(total(*o.log, 1) == 3);
}

BOOST_AUTO_TEST_CASE(a_power_loss_keeps_what_a_tail_sync_covered) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto j = open_ok(tail_options(path, durability::batch, 4), env).log;
    // Drains happen (lazy LMDB commits, never synced), the tail is synced.
    for (std::uint64_t i = 1; i <= 6; ++i)
      BOOST_REQUIRE(j->append(tx_batch(i, 1, 1)).has_value());
    BOOST_REQUIRE(j->sync().has_value());
    BOOST_TEST(j->durable_lsn() == 12u);
    // Not synced: lost by the power loss, never acknowledged in mode batch.
    BOOST_REQUIRE(j->append(tx_batch(7, 1, 100)).has_value());
    BOOST_REQUIRE(env->crash().has_value());
  }
  auto o = open_ok(tail_options(path));
  BOOST_TEST(o.recovery.next_lsn == 13u);
  BOOST_TEST(total(*o.log, 1) == 6);
}

BOOST_AUTO_TEST_CASE(entries_a_power_loss_brings_back_after_a_reset_are_skipped) {
  // A file limit of one byte: every drain syncs LMDB and empties the tail
  // file. fault_env does not count a reset as synced, so the crash puts the
  // old entries back; LMDB holds them already and replay skips them.
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto env = open_fault_env(path);
    auto opts = tail_options(path, durability::batch, 2);
    opts.tail_file_limit = 1;
    auto j = open_ok(opts, env).log;
    BOOST_REQUIRE(j->append({update(tx_id{1, 1}, key(1), 1)}).has_value());
    BOOST_REQUIRE(j->sync().has_value()); // the tail holds LSN 1, synced
    BOOST_REQUIRE(j->append({commit(tx_id{1, 1}, 1)}).has_value()); // drain, reset
    BOOST_TEST(file_size(path + "/tail.log") == 0u);
    BOOST_REQUIRE(j->append(tx_batch(2, 1, 10)).has_value());
    BOOST_REQUIRE(env->crash().has_value());
  }
  auto o = open_ok(tail_options(path));
  BOOST_TEST(o.recovery.tail_replayed == 0u);
  BOOST_TEST(o.recovery.next_lsn == 5u);
  BOOST_TEST(total(*o.log, 1) == 11);
}

BOOST_AUTO_TEST_CASE(a_torn_last_entry_is_cut_and_the_rest_replayed) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(tail_options(path)).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 4)).has_value());
  }
  // Half of an entry after the last whole one, over the zeros written
  // ahead, as a crash in the middle of a write leaves it.
  std::string entry;
  append_tail_entry(entry, 3, encode_record(journal_record{update(tx_id{1, 2}, key(1), 9)}));
  const auto end = parse_tail(read_file(path + "/tail.log")).valid_bytes;
  BOOST_REQUIRE(end > 0u);
  {
    std::fstream out{path + "/tail.log", std::ios::binary | std::ios::in | std::ios::out};
    out.seekp(static_cast<std::streamoff>(end));
    out.write(entry.data(), static_cast<std::streamsize>(entry.size() / 2));
  }
  auto o = open_ok(tail_options(path));
  BOOST_TEST(o.recovery.tail_replayed == 2u);
  // (A bad entry there: its length field is whole, its CRC fails.)
  BOOST_TEST(o.recovery.tail_stop_reason.find("at byte " + std::to_string(end))
               != std::string::npos,
             o.recovery.tail_stop_reason);
  BOOST_TEST(o.recovery.next_lsn == 3u);
  BOOST_TEST(total(*o.log, 1) == 4);
  // The torn bytes are cut at open: what is appended now follows whole
  // entries and survives the next crash.
  BOOST_REQUIRE(o.log->append(tx_batch(2, 1, 9)).has_value());
  o.log.reset();
  auto again = open_ok(tail_options(path));
  BOOST_TEST(again.recovery.tail_replayed == 4u);
  BOOST_TEST(again.recovery.tail_stop_reason == "");
  BOOST_TEST(total(*again.log, 1) == 13);
}

BOOST_AUTO_TEST_CASE(opening_with_a_crashs_tail_writes_nothing) {
  // A node with no room left must still open and serve reads (issue 18):
  // every LMDB write and commit fails here, and open and reads succeed.
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(tail_options(path)).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 4)).has_value());
    BOOST_REQUIRE(j->append({update(tx_id{1, 2}, key(2), 1), prepare_record{tx_id{1, 2}, 50}})
                    .has_value());
  }
  auto env = open_fault_env(path);
  env->inject(fault_spec{fault_point::write, 1, EFBIG});
  env->inject(fault_spec{fault_point::commit, 1, EFBIG});
  const auto writes = env->count(fault_point::write);
  const auto commits = env->count(fault_point::commit);
  auto o = open_ok(tail_options(path), env);
  BOOST_TEST(env->count(fault_point::write) == writes);
  BOOST_TEST(env->count(fault_point::commit) == commits);
  BOOST_TEST(o.recovery.tail_replayed == 4u);
  BOOST_TEST(total(*o.log, 1) == 4);
  BOOST_TEST(o.log->undecided().size() == 1u);
  // The first write needs room: refused, the journal usable.
  auto r = o.log->drain_tail();
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::storage_full);
  BOOST_TEST(!o.log->stopped());
  BOOST_TEST(total(*o.log, 1) == 4);
}

BOOST_AUTO_TEST_CASE(a_tail_that_skips_records_is_refused_as_corrupt) {
  temp_dir dir;
  auto path = dir.sub("p");
  {
    auto j = open_ok(test::options(path)).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 4)).has_value());
  }
  std::string entry;
  append_tail_entry(entry, 10, encode_record(journal_record{update(tx_id{1, 2}, key(1), 9)}));
  {
    std::ofstream out{path + "/tail.log", std::ios::binary};
    out.write(entry.data(), static_cast<std::streamsize>(entry.size()));
  }
  auto r = journal::open(tail_options(path));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::corrupt);
  BOOST_TEST(r.err().message().find("resumes at LSN 10") != std::string::npos);
  // Nothing changed: the journal still ends at 3, with its records.
  std::filesystem::remove(path + "/tail.log");
  auto o = open_ok(test::options(path));
  BOOST_TEST(o.recovery.next_lsn == 3u);
}

BOOST_AUTO_TEST_CASE(a_full_disk_at_a_tail_append_applies_nothing) {
  temp_dir dir;
  auto path = dir.sub("p");
  auto env = open_fault_env(path);
  auto j = open_ok(tail_options(path), env).log;
  BOOST_REQUIRE(j->append(tx_batch(1, 1, 1)).has_value());
  env->inject(fault_spec{fault_point::write, 1, ENOSPC});
  auto r = j->append(tx_batch(2, 1, 5));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::storage_full);
  BOOST_TEST(!j->stopped());
  BOOST_TEST(j->next_lsn() == 3u);
  BOOST_TEST(j->undecided().empty());
  BOOST_REQUIRE(j->append(tx_batch(3, 1, 7)).has_value());
  BOOST_TEST(total(*j, 1) == 8);
}

BOOST_AUTO_TEST_CASE(a_failed_tail_write_or_sync_stops_the_journal) {
  temp_dir dir;
  {
    auto path = dir.sub("w");
    auto env = open_fault_env(path);
    auto j = open_ok(tail_options(path), env).log;
    env->inject(fault_spec{fault_point::write, 1, EIO});
    auto r = j->append(tx_batch(1, 1, 1));
    BOOST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::io_error);
    BOOST_TEST(j->stopped());
    BOOST_TEST(j->next_lsn() == 1u);
  }
  {
    auto path = dir.sub("s");
    auto env = open_fault_env(path);
    auto j = open_ok(tail_options(path), env).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 1)).has_value());
    env->inject(fault_spec{fault_point::sync, 1, EIO});
    auto st = j->sync();
    BOOST_REQUIRE(!st.has_value());
    BOOST_TEST(st.err().code() == errc::io_error);
    BOOST_TEST(j->durable_lsn() == 0u);
    BOOST_TEST(j->stopped());
  }
  {
    // Mode full: the append syncs the tail before it returns.
    auto path = dir.sub("f");
    auto env = open_fault_env(path);
    auto j = open_ok(tail_options(path, durability::full), env).log;
    BOOST_REQUIRE(j->append(tx_batch(1, 1, 1)).has_value());
    BOOST_TEST(j->durable_lsn() == 2u);
    env->inject(fault_spec{fault_point::sync, 1, EIO});
    BOOST_TEST(j->append(tx_batch(2, 1, 1)).err().code() == errc::io_error);
    BOOST_TEST(j->stopped());
  }
}

BOOST_AUTO_TEST_CASE(random_histories_read_the_same_with_and_without_the_tail) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 3; ++round) {
      temp_dir dir;
      auto opts = tail_options(dir.sub("p"), durability::none,
                               static_cast<std::uint64_t>(rng.uniform(1, 64)));
      auto j = open_ok(opts).log;
      test::history h{rng, 10, j->next_lsn()};
      for (int b = 0; b < 40; ++b) {
        BOOST_REQUIRE(j->append(h.batch(rng.uniform(1, 30))).has_value());
        if (rng.uniform(0, 9) == 0) { // a read in the middle drains
          auto k = static_cast<int>(rng.uniform(0, 9));
          BOOST_REQUIRE(j->read_committed(key(k)).has_value());
        }
      }
      auto check = [&](tally::journal& log) {
        for (int k = 0; k < h.keys(); ++k) {
          auto scanned = log.scan_committed(key(k));
          BOOST_REQUIRE(scanned.has_value());
          BOOST_TEST(test::same_effects(*scanned, h.expected(k)));
          auto indexed = log.read_committed(key(k));
          BOOST_REQUIRE(indexed.has_value());
          BOOST_TEST(test::same_effects(*indexed, h.expected(k)));
        }
        BOOST_TEST(log.undecided().size() == h.open_transactions());
      };
      const lsn end = j->next_lsn();
      // Reopened with records still in the tail: replay gives the same log.
      for (auto i = 0; i < 3; ++i)
        BOOST_REQUIRE(j->append(h.batch(5)).has_value());
      const lsn end2 = j->next_lsn();
      j.reset();
      auto o = open_ok(opts);
      BOOST_TEST(o.recovery.next_lsn == end2);
      BOOST_TEST(end2 > end);
      check(*o.log);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
