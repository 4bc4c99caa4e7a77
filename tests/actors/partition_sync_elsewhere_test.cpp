// partition_core with options.sync_elsewhere (the partitions on the shard
// threads: journal syncs run on the node's sync threads,
// journal/background_syncer.hpp). Durability batch: an appended batch is
// invisible and unapplied until a sync covering it is reported; batches
// appended meanwhile wait for the next sync; a failed sync stops the
// partition and applies nothing. Periodic: flush applies at once and the
// sync only moves the durable LSN. The syncs run on a real sync thread.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <future>
#include <random>

#include "actors/partition_core.hpp"
#include "tests/actors/partition_core_support.hpp"
#include "journal/background_syncer.hpp"

using namespace tally;
using namespace tally::test;

namespace {

struct fixture {
  std::filesystem::path dir;
  std::uint64_t now = 1'000'000;
  background_syncer syncer{2};

  fixture() {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path()
          / ("tally-sync-elsewhere-" + std::to_string(rd()));
    std::filesystem::remove_all(dir);
  }
  ~fixture() { std::filesystem::remove_all(dir); }

  std::unique_ptr<partition_core> open(durability mode) {
    partition_options o;
    o.index = 1;
    o.path = dir.string();
    o.mode = mode;
    o.sync_elsewhere = true;
    o.now_us = [this] { return now; };
    auto c = partition_core::open(std::move(o));
    BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
    return std::move(*c);
  }

  // Runs `job` on the sync threads and waits for its outcome.
  status run(const journal::sync_job& job) {
    std::promise<status> done;
    auto f = done.get_future();
    syncer.run([job] { return job.run(); }, [&done](status s) { done.set_value(std::move(s)); });
    return f.get();
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(partition_sync_elsewhere_tests, fixture)

BOOST_AUTO_TEST_CASE(batch_commits_stay_invisible_until_the_sync_that_covers_them) {
  auto c = open(durability::batch);
  auto t = commit1(*c, {1, 1}, {inc("x", 5, op_id{7, 1})});
  now += 1000;
  // Appended, not durable: still prepared, the safe time below it.
  BOOST_CHECK(c->has_unsynced());
  BOOST_CHECK_EQUAL(c->prepared_count(), 1u);
  BOOST_CHECK_LT(c->safe_time(), t);
  BOOST_CHECK_EQUAL(c->durable_end(), 1u);
  // A retry of its op id meanwhile waits for it (in flight), never applies.
  auto retry = c->stage_prepare({1, 2}, {inc("x", 5, op_id{7, 1})}, 0, false);
  BOOST_REQUIRE(retry);
  BOOST_CHECK(retry->blocked_by.has_value());
  auto job = c->sync_job();
  BOOST_REQUIRE(job);
  BOOST_CHECK_EQUAL(job->upto, c->log_end() - 1);
  BOOST_REQUIRE(c->synced(job->upto, run(*job)));
  BOOST_CHECK(!c->has_unsynced());
  BOOST_CHECK_EQUAL(c->prepared_count(), 0u);
  BOOST_CHECK_GE(c->safe_time(), t);
  BOOST_CHECK_EQUAL(value_at(*c, "x", t), 5);
  BOOST_CHECK_EQUAL(c->durable_end(), c->log_end());
  BOOST_CHECK(!c->sync_job()); // nothing left to sync
  // The waiting retry is ready now, and a duplicate.
  auto ready = c->take_ready();
  BOOST_REQUIRE_EQUAL(ready.size(), 1u);
  auto resumed = c->resume_prepare(ready[0]);
  BOOST_REQUIRE(resumed);
  BOOST_CHECK_EQUAL(resumed->dismissed, 1u);
}

BOOST_AUTO_TEST_CASE(batches_appended_during_a_sync_wait_for_the_next_one) {
  auto c = open(durability::batch);
  auto t1 = commit1(*c, {1, 1}, {inc("x", 1)});
  auto job1 = c->sync_job();
  BOOST_REQUIRE(job1);
  now += 10;
  auto t2 = commit1(*c, {1, 2}, {inc("x", 2)}); // while job1 would run
  now += 1000;
  BOOST_REQUIRE(c->synced(job1->upto, run(*job1)));
  BOOST_CHECK(c->has_unsynced()); // the second batch
  BOOST_CHECK_EQUAL(value_at(*c, "x", t1), 1);
  BOOST_CHECK_LT(c->safe_time(), t2);
  auto job2 = c->sync_job();
  BOOST_REQUIRE(job2);
  BOOST_CHECK_GT(job2->upto, job1->upto);
  BOOST_REQUIRE(c->synced(job2->upto, run(*job2)));
  BOOST_CHECK(!c->has_unsynced());
  BOOST_CHECK_EQUAL(value_at(*c, "x", t2), 3);
}

BOOST_AUTO_TEST_CASE(a_failed_sync_stops_the_partition_and_applies_nothing) {
  auto c = open(durability::batch);
  auto t = commit1(*c, {1, 1}, {inc("x", 4)});
  auto job = c->sync_job();
  BOOST_REQUIRE(job);
  auto st = c->synced(job->upto, make_error(errc::io_error, "fdatasync: EIO"));
  BOOST_CHECK(!st);
  BOOST_CHECK(c->stopped());
  BOOST_CHECK_EQUAL(c->prepared_count(), 1u); // never applied
  BOOST_CHECK_LT(c->safe_time(), t);
  BOOST_CHECK(!c->sync_job());
  // Every later write is refused (fail-stop).
  auto p = c->stage_prepare({1, 2}, {inc("y", 1)}, 0, false);
  bool refused = !p || !c->stage_commit({1, 2}, p->prepare_time) || !c->flush();
  BOOST_CHECK(refused);
}

// Chaos finding (5 nodes, kill -9): a resolution whose decision timed out
// (the commit waited for a write quorum of copies that were down) decided
// again, and the primary journaled a second commit of the transaction;
// every copy then refused the journal ("a second commit") and was replaced
// again and again, and the commit never reached a quorum. A commit already
// under way is now refused with "retry", an abort of it too, and the same
// commit once applied is acknowledged without a record.
BOOST_AUTO_TEST_CASE(a_commit_already_under_way_is_not_journaled_twice) {
  auto c = open(durability::batch);
  const tx_id tx{1, 1};
  auto p = c->stage_prepare(tx, {inc("x", 5)}, 0, true);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(c->flush());
  const auto t = p->prepare_time + 1;
  BOOST_REQUIRE(c->stage_commit(tx, t));
  BOOST_REQUIRE(c->flush());
  const auto end = c->log_end();
  BOOST_CHECK(c->has_unsynced()); // the commit waits for its sync
  auto again = c->stage_commit(tx, t);
  BOOST_REQUIRE(!again);
  BOOST_CHECK(again.err().code() == errc::unavailable);
  BOOST_CHECK(!c->stage_commit(tx, t + 1)); // another decision: refused
  BOOST_CHECK(!c->stage_abort(tx));
  BOOST_CHECK(!c->has_staged());
  BOOST_REQUIRE(c->flush());
  BOOST_CHECK_EQUAL(c->log_end(), end);
  auto job = c->sync_job();
  BOOST_REQUIRE(job);
  BOOST_REQUIRE(c->synced(job->upto, run(*job)));
  BOOST_CHECK_EQUAL(c->prepared_count(), 0u);
  // Applied: the same decision is acknowledged (the journal's decision),
  // with nothing staged.
  BOOST_CHECK(c->stage_commit(tx, t));
  BOOST_CHECK(!c->has_staged());
  now += 1000;
  BOOST_CHECK_EQUAL(value_at(*c, "x", t), 5);
}

BOOST_AUTO_TEST_CASE(a_sync_on_the_partitions_own_thread_applies_what_waits) {
  // The shutdown path (and a partition without sync threads): sync() here.
  auto c = open(durability::batch);
  auto t = commit1(*c, {1, 1}, {inc("x", 6)});
  BOOST_REQUIRE(c->sync());
  BOOST_CHECK(!c->has_unsynced());
  now += 1000;
  BOOST_CHECK_EQUAL(value_at(*c, "x", t), 6);
}

BOOST_AUTO_TEST_CASE(periodic_commits_apply_at_once_and_the_sync_moves_the_durable_end) {
  auto c = open(durability::periodic);
  auto t = commit1(*c, {1, 1}, {inc("x", 3)});
  now += 1000;
  BOOST_CHECK(!c->has_unsynced());
  BOOST_CHECK_EQUAL(value_at(*c, "x", t), 3);
  BOOST_CHECK_LT(c->durable_end(), c->log_end());
  auto job = c->sync_job();
  BOOST_REQUIRE(job);
  BOOST_REQUIRE(c->synced(job->upto, run(*job)));
  BOOST_CHECK_EQUAL(c->durable_end(), c->log_end());
}

BOOST_AUTO_TEST_CASE(a_reopened_journal_holds_every_synced_commit) {
  std::uint64_t t = 0;
  {
    auto c = open(durability::batch);
    t = commit1(*c, {1, 1}, {inc("x", 9)});
    auto job = c->sync_job();
    BOOST_REQUIRE(job);
    BOOST_REQUIRE(c->synced(job->upto, run(*job)));
  }
  auto c = open(durability::batch);
  now += 1000;
  BOOST_CHECK_EQUAL(value_at(*c, "x", t), 9);
}

// A replica's batch (apply_replicated) is not synced on the thread that
// applies it when syncs run elsewhere: its durable end stays below the
// batch until a sync job covers it, and the copy answers its primary only
// then (partition_replication::on_needs_sync; docs/REPLICATION.md,
// "Acknowledgement and visibility"). Before, it synced on that thread, the
// shard every other partition of the node's shard waited on.
BOOST_AUTO_TEST_CASE(a_replicas_batch_is_durable_once_a_sync_job_covers_it) {
  partition_options po;
  po.index = 1;
  po.path = (dir / "primary").string();
  po.mode = durability::batch;
  po.keep_flushed = true; // what it flushes is taken for the replica
  po.now_us = [this] { return now; };
  auto primary = partition_core::open(std::move(po));
  BOOST_REQUIRE(primary);
  commit1(**primary, {1, 1}, {inc("k", 5)});
  auto batches = (*primary)->take_flushed();
  BOOST_REQUIRE(batches.size() == 1u);

  auto replica = open(durability::batch);
  const auto before = replica->durable_end();
  auto end = replica->apply_replicated(batches[0]);
  BOOST_REQUIRE_MESSAGE(end, (end ? "" : end.err().to_string()));
  BOOST_TEST(*end > before);
  BOOST_TEST(replica->durable_end() == before); // appended, not synced here
  auto job = replica->sync_job();
  BOOST_REQUIRE(job.has_value());
  BOOST_REQUIRE(replica->synced(job->upto, run(*job)));
  BOOST_TEST(replica->durable_end() == *end);
  BOOST_TEST(value_at(*replica, "k", now + 1000) == 5);
}

BOOST_AUTO_TEST_SUITE_END()
