// replication/unreplicated_commits.hpp: what a primary's reads wait for.
// The front is the smallest commit time of every batch not yet on w
// copies, also when a later batch commits below an earlier one (before
// stop 30 the front kept the larger, and a read at a snapshot between the
// two saw the later batch's commit before w copies had it).
#include <boost/test/unit_test.hpp>

#include <cstdint>

#include "replication/unreplicated_commits.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(unreplicated_commits_tests)

BOOST_AUTO_TEST_CASE(reads_wait_below_the_smallest_unreplicated_commit) {
  unreplicated_commits u;
  BOOST_TEST(u.visible_below() == UINT64_MAX);
  u.add(10, 110); // records below 10: a commit at 110
  BOOST_TEST(u.visible_below() == 110u);
  u.add(20, 102); // a later batch commits below it
  BOOST_TEST(u.visible_below() == 102u);
  u.add(30, 120);
  BOOST_TEST(u.visible_below() == 102u);
  // The first batch reaches w copies: the second still holds 102.
  BOOST_TEST(u.acknowledged(10));
  BOOST_TEST(u.visible_below() == 102u);
  BOOST_TEST(!u.acknowledged(15)); // nothing ends at or below 15 any more
  BOOST_TEST(u.acknowledged(20));
  BOOST_TEST(u.visible_below() == 120u);
  BOOST_TEST(u.acknowledged(35));
  BOOST_TEST(u.empty());
  BOOST_TEST(u.visible_below() == UINT64_MAX);
}

BOOST_AUTO_TEST_CASE(a_zero_entry_holds_every_snapshot_until_acknowledged) {
  unreplicated_commits u;
  u.add(5, 300);
  u.clear();
  u.add(8, 0); // a new primary's term record: every snapshot waits
  BOOST_TEST(u.visible_below() == 0u);
  u.add(12, 400);
  BOOST_TEST(u.visible_below() == 0u);
  BOOST_TEST(u.acknowledged(8));
  BOOST_TEST(u.visible_below() == 400u);
}

BOOST_AUTO_TEST_SUITE_END()
