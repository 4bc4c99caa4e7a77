// The start steps of actors/node_startup.hpp run on their own, before any
// actor: open_held_partitions() recovers the held partitions and decides
// the transactions a crash left prepared. With the partitions on the shard
// threads and durability batch (journal syncs on the sync threads: a
// flushed batch applies only once a sync covers it), the decisions taken
// at the start must be applied before the node serves: nothing else syncs
// a partition that gets no write (docs/NODE.md, "Recovery").
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>

#include "actors/node_startup.hpp"
#include "tests/actors/partition_core_support.hpp"

using namespace tally;
using namespace tally::test;

namespace {

struct startup_fixture {
  std::filesystem::path dir;
  node_config cfg;

  startup_fixture() {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path() / ("tally-startup-" + std::to_string(rd()));
    std::filesystem::remove_all(dir);
    cfg.data_dir = dir.string();
    cfg.partitions = 2;
    cfg.mode = durability::batch;
  }
  ~startup_fixture() { std::filesystem::remove_all(dir); }

  // Partition i's journal as a crash left it: written here with syncs in
  // place (the layout on disk is the same).
  std::unique_ptr<partition_core> open_for_setup(const partition_opener& opener,
                                                 std::uint32_t i) {
    auto po = opener.options(i, false);
    po.sync_elsewhere = false;
    auto c = partition_core::open(std::move(po));
    BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
    return std::move(*c);
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(node_startup_tests, startup_fixture)

// A two-phase transaction over partitions 0 and 1 whose coordinator
// committed it at partition 0 and died before partition 1's commit:
// partition 1 commits it at the start from partition 0's decision, and
// (issue 13, a cluster test's failure: the node's stable time held for
// good and its partition waited on a transaction already decided) no
// longer holds it prepared once the start is over; so does one aborted at
// the start (a lone node: never committed anywhere).
BOOST_AUTO_TEST_CASE(transactions_decided_at_the_start_are_applied_before_serving) {
  partition_opener opener{cfg, false};
  BOOST_REQUIRE(opener.syncer()); // the partitions sync on the sync threads
  const tx_id committed{7, 1};
  const tx_id never{7, 2};
  std::uint64_t commit_time = 0;
  {
    auto p0 = open_for_setup(opener, 0);
    auto p1 = open_for_setup(opener, 1);
    auto a = p0->stage_prepare(committed, {inc("x", 5)}, 0, true, {0, 1}, "gone");
    auto b = p1->stage_prepare(committed, {inc("y", 5)}, 0, true, {0, 1}, "gone");
    auto c = p1->stage_prepare(never, {inc("z", 3)}, 0, true, {0, 1}, "gone");
    BOOST_REQUIRE(a && b && c);
    BOOST_REQUIRE(p0->flush());
    BOOST_REQUIRE(p1->flush());
    commit_time = std::max(a->prepare_time, b->prepare_time);
    BOOST_REQUIRE(p0->stage_commit(committed, commit_time));
    BOOST_REQUIRE(p0->flush());
    BOOST_REQUIRE(p0->sync());
    BOOST_REQUIRE(p1->sync());
    BOOST_REQUIRE_EQUAL(p1->prepared_count(), 2u);
  }
  partition_plan plan;
  plan.held = {0, 1};
  partitions_on_disk disk;
  disk.present = {0, 1};
  disk.listed = {0, 1};
  disk.had_manifest = true;
  auto opened = open_held_partitions(cfg, opener, plan, disk, true);
  BOOST_REQUIRE_MESSAGE(opened, (opened ? "" : opened.err().to_string()));
  BOOST_REQUIRE_EQUAL(opened->cores.size(), 2u);
  auto& p1 = *opened->cores[1];
  BOOST_CHECK(opened->undecided.empty());
  BOOST_CHECK(!p1.has_unsynced());
  BOOST_CHECK_EQUAL(p1.prepared_count(), 0u);
  BOOST_CHECK_EQUAL(p1.blocked_from(), UINT64_MAX);
  BOOST_CHECK_GE(p1.safe_time(), commit_time);
  BOOST_CHECK_EQUAL(value_at(p1, "y", commit_time), 5);
  BOOST_CHECK_EQUAL(value_at(p1, "z", commit_time + 10), 0);
}

BOOST_AUTO_TEST_SUITE_END()
