// coordinated_txs (actors/coordinated_txs.hpp): what a coordinator answers
// a node that holds one of its transactions prepared (issue 13).
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include "actors/coordinated_txs.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(coordinated_txs_tests)

BOOST_AUTO_TEST_CASE(a_coordinator_answers_how_its_two_phase_commit_ended) {
  coordinated_txs reg;
  tx_id a{1, 1}, b{1, 2}, c{1, 3};
  BOOST_TEST((reg.decide(a, false).state == coordinator_state::unknown));
  reg.begin(a);
  reg.begin(b);
  reg.begin(c);
  // Collecting prepares: "collecting" without force.
  BOOST_TEST((reg.decide(a, false).state == coordinator_state::collecting));
  // Decided commit: the holders may commit at its time, force or not.
  BOOST_REQUIRE(reg.commit(a, 42));
  auto ans = reg.decide(a, true);
  BOOST_TEST((ans.state == coordinator_state::committed));
  BOOST_TEST(ans.commit_time == 42u);
  // Forced while collecting: aborted, and the coordinator may not commit.
  BOOST_TEST((reg.decide(b, true).state == coordinator_state::aborted));
  BOOST_TEST(!reg.commit(b, 50));
  BOOST_TEST((reg.decide(b, false).state == coordinator_state::aborted));
  // Ended without committing (a failed prepare): aborted.
  reg.end(c);
  BOOST_TEST((reg.decide(c, true).state == coordinator_state::aborted));
  // Ended after committing: still committed at its time.
  reg.end(a);
  BOOST_TEST(reg.decide(a, false).commit_time == 42u);
  BOOST_TEST(reg.size() == 3u);
  // Committed and acknowledged by every participant: forgotten at once (no
  // holder can miss its decision); an abort is kept even so.
  tx_id d{1, 4}, e{1, 5};
  reg.begin(d);
  reg.begin(e);
  BOOST_REQUIRE(reg.commit(d, 43));
  reg.end(d, true);
  reg.end(e, true);
  BOOST_TEST((reg.decide(d, false).state == coordinator_state::unknown));
  BOOST_TEST((reg.decide(e, false).state == coordinator_state::aborted));
  BOOST_TEST(reg.size() == 4u);
}

BOOST_AUTO_TEST_CASE(outcomes_are_forgotten_after_the_keep_time_only) {
  coordinated_txs reg{std::chrono::milliseconds{50}};
  tx_id a{1, 1}, b{1, 2};
  reg.begin(a);
  reg.begin(b);
  BOOST_REQUIRE(reg.commit(a, 7));
  reg.end(a);
  // Bounded wait: past the keep time, a is forgotten ("unknown": only the
  // journals can tell); b, still running, is never forgotten.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (reg.decide(a, false).state != coordinator_state::unknown
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  BOOST_TEST((reg.decide(a, false).state == coordinator_state::unknown));
  BOOST_TEST((reg.decide(b, false).state == coordinator_state::collecting));
  BOOST_TEST(reg.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
