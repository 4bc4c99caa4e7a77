// replica_progress and placement: the quorum point, held writes released in
// order, the acting primary and the write quorum of a side.
#include <boost/test/unit_test.hpp>

#include <set>

#include "replication/placement.hpp"
#include "replication/replica_progress.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(replica_progress_tests)

BOOST_AUTO_TEST_CASE(quorum_end_is_the_wth_largest_copy) {
  auto p = replica_progress::make({"b", "c"}, 2);
  BOOST_REQUIRE(p);
  BOOST_TEST(p->quorum_end() == 0u);
  p->local_durable(10);
  BOOST_TEST(p->quorum_end() == 0u); // only the primary has it
  p->acked("c", 7);
  BOOST_TEST(p->quorum_end() == 7u);
  p->acked("b", 12); // a replica ahead of the primary's durable point
  BOOST_TEST(p->quorum_end() == 10u);
  BOOST_TEST(p->all_end() == 7u);
  p->acked("c", 3); // an old ack arriving late changes nothing
  BOOST_TEST(p->end_of("c") == 7u);
  p->rewound("c", 2); // it lost its tail: sent from 2 again
  BOOST_TEST(p->end_of("c") == 2u);
  BOOST_TEST(p->all_end() == 2u);
  BOOST_TEST(p->quorum_end() == 10u);
  p->acked("zz", 100); // unknown: ignored
  BOOST_TEST(p->quorum_end() == 10u);
}

BOOST_AUTO_TEST_CASE(w_of_one_acknowledges_on_the_primary_alone_and_w_all_waits_for_all) {
  auto one = replica_progress::make({"b", "c"}, 1);
  BOOST_REQUIRE(one);
  one->local_durable(5);
  BOOST_TEST(one->quorum_end() == 5u);
  auto all = replica_progress::make({"b", "c"}, 3);
  BOOST_REQUIRE(all);
  all->local_durable(5);
  all->acked("b", 5);
  BOOST_TEST(all->quorum_end() == 0u);
  all->acked("c", 4);
  BOOST_TEST(all->quorum_end() == 4u);
}

BOOST_AUTO_TEST_CASE(bad_quorums_and_repeated_replicas_are_refused) {
  BOOST_TEST(!replica_progress::make({"b"}, 0));
  BOOST_TEST(!replica_progress::make({"b"}, 3));
  BOOST_TEST(!replica_progress::make({"b", "b"}, 2));
  BOOST_TEST(replica_progress::make({}, 1).has_value());
}

BOOST_AUTO_TEST_CASE(held_writes_are_released_in_order_once_on_w_copies) {
  quorum_queue<int> q;
  q.push(3, 1);
  q.push(3, 2);
  q.push(8, 3);
  BOOST_TEST(q.take_ready(2).empty());
  auto first = q.take_ready(5);
  BOOST_TEST((first == std::vector<int>{1, 2}));
  BOOST_TEST(q.size() == 1u);
  BOOST_TEST((q.take_all() == std::vector<int>{3}));
  BOOST_TEST(q.empty());
}

BOOST_AUTO_TEST_CASE(the_primary_is_the_first_live_node_of_the_preference_list) {
  std::vector<replica> pref{{4, "a"}, {5, "b"}, {6, "c"}};
  std::set<node_id> up{"a", "b", "c"};
  auto is_up = [&](const node_id& n) { return up.count(n) != 0; };
  BOOST_TEST(*acting_primary(pref, is_up) == "a");
  BOOST_TEST(has_write_quorum(pref, 2, is_up));
  up.erase("a");
  BOOST_TEST(*acting_primary(pref, is_up) == "b");
  BOOST_TEST(has_write_quorum(pref, 2, is_up));
  up.erase("b");
  BOOST_TEST(*acting_primary(pref, is_up) == "c");
  BOOST_TEST(!has_write_quorum(pref, 2, is_up)); // a minority side refuses writes
  up.clear();
  BOOST_TEST(!acting_primary(pref, is_up));
  BOOST_TEST((other_replicas(pref, "b") == std::vector<node_id>{"a", "c"}));
}

BOOST_AUTO_TEST_CASE(defaults_follow_the_cluster_size) {
  BOOST_TEST(default_n_val_for(0) == 1u);
  BOOST_TEST(default_n_val_for(1) == 1u);
  BOOST_TEST(default_n_val_for(2) == 2u);
  BOOST_TEST(default_n_val_for(5) == 3u);
  BOOST_TEST(majority_of(1) == 1u);
  BOOST_TEST(majority_of(2) == 2u);
  BOOST_TEST(majority_of(3) == 2u);
  BOOST_TEST(majority_of(5) == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
