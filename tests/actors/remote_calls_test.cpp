// actors/remote_calls.hpp: calls waiting on another node fail at once when
// its link is lost, and calls to it fail at once until it is back (issue
// 14's failover stall; the process test is
// cluster_tests/with_three_copies_a_write_in_flight_to_a_killed_primary_fails_at_once).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "actors/remote_calls.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(remote_calls_tests)

BOOST_AUTO_TEST_CASE(a_lost_link_fails_the_calls_waiting_on_that_node_once) {
  remote_calls calls;
  std::vector<std::string> failed;
  auto a1 = calls.add("a", [&] { failed.push_back("a1"); });
  auto a2 = calls.add("a", [&] { failed.push_back("a2"); });
  auto b1 = calls.add("b", [&] { failed.push_back("b1"); });
  BOOST_TEST(a1 != 0u);
  BOOST_TEST(a2 != 0u);
  BOOST_TEST(b1 != 0u);
  BOOST_TEST(a1 != a2);
  calls.finish(a2); // answered before the loss: not failed
  BOOST_TEST(calls.pending() == 2u);
  calls.link_lost("a");
  BOOST_TEST(failed == std::vector<std::string>{"a1"});
  BOOST_TEST(calls.pending() == 1u);
  calls.finish(a1); // the late answer of a failed call changes nothing
  calls.link_lost("a");
  BOOST_TEST(failed.size() == 1u);
  calls.link_lost("b");
  BOOST_TEST((failed == std::vector<std::string>{"a1", "b1"}));
  BOOST_TEST(calls.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(calls_to_a_lost_node_fail_at_once_until_it_is_up_again) {
  remote_calls calls;
  bool ran = false;
  calls.link_lost("a");
  // A route read before the membership moved it still names "a".
  BOOST_TEST(calls.add("a", [&] { ran = true; }) == 0u);
  BOOST_TEST(!ran); // the caller fails it itself
  BOOST_TEST(calls.pending() == 0u);
  BOOST_TEST(calls.add("b", [] {}) != 0u);
  calls.link_up("a");
  auto id = calls.add("a", [&] { ran = true; });
  BOOST_TEST(id != 0u);
  calls.link_lost("a");
  BOOST_TEST(ran);
}

BOOST_AUTO_TEST_SUITE_END()
