// Each chaos checker fails on a hand-made bad history and passes on a good
// one: a checker that cannot fail proves nothing about a real run.
#include <boost/test/unit_test.hpp>

#include "tests/chaos/history.hpp"

using namespace tally::chaos;

namespace {

op_record inc(int session, const std::string& k, std::int64_t d, outcome r) {
  op_record op;
  op.session = session;
  op.kind = op_kind::inc;
  op.keys = {k};
  op.delta = d;
  op.result = r;
  return op;
}

op_record read(int session, std::vector<std::string> keys, std::vector<std::int64_t> values) {
  op_record op;
  op.session = session;
  op.kind = op_kind::read;
  op.keys = std::move(keys);
  op.values = std::move(values);
  op.result = outcome::ok;
  return op;
}

} // namespace

BOOST_AUTO_TEST_SUITE(chaos_checkers)

BOOST_AUTO_TEST_CASE(counter_bounds_catch_a_lost_and_a_doubled_increment) {
  history h{inc(1, "c", 2, outcome::ok), inc(1, "c", 3, outcome::unknown),
            inc(2, "c", 5, outcome::failed)};
  BOOST_TEST(check_counter_bounds(h, {{"c", 2}}).empty()); // unknown not applied
  BOOST_TEST(check_counter_bounds(h, {{"c", 5}}).empty()); // unknown applied
  BOOST_TEST(check_counter_bounds(h, {{"c", 1}}).size() == 1u); // acked +2 lost
  BOOST_TEST(check_counter_bounds(h, {{"c", 7}}).size() == 1u); // a retry doubled
  BOOST_TEST(check_counter_bounds(h, {{"c", 10}}).size() == 1u); // a failed one applied
}

BOOST_AUTO_TEST_CASE(pair_atomicity_catches_a_torn_snapshot) {
  std::vector<std::pair<std::string, std::string>> pairs{{"x", "y"}};
  BOOST_TEST(check_pair_atomicity({read(1, {"x", "y"}, {4, 4})}, pairs).empty());
  BOOST_TEST(check_pair_atomicity({read(1, {"x", "y"}, {4, 3})}, pairs).size() == 1u);
  BOOST_TEST(check_pair_atomicity({read(1, {"x"}, {4})}, pairs).empty()); // one side only
}

BOOST_AUTO_TEST_CASE(session_checker_catches_reads_going_back_and_missing_own_writes) {
  BOOST_TEST(check_sessions({read(1, {"c"}, {3}), read(1, {"c"}, {5})}).empty());
  auto back = check_sessions({read(1, {"c"}, {5}), read(1, {"c"}, {3})});
  BOOST_REQUIRE_EQUAL(back.size(), 1u);
  BOOST_TEST(back[0].checker == "monotonic-reads");
  // Another session may read lower: the guarantee is per session.
  BOOST_TEST(check_sessions({read(1, {"c"}, {5}), read(2, {"c"}, {3})}).empty());
  auto ryw = check_sessions({inc(1, "c", 4, outcome::ok), read(1, {"c"}, {3})});
  BOOST_REQUIRE_EQUAL(ryw.size(), 1u);
  BOOST_TEST(ryw[0].checker == "read-your-writes");
  // An unknown outcome promises nothing to the session.
  BOOST_TEST(check_sessions({inc(1, "c", 4, outcome::unknown), read(1, {"c"}, {0})}).empty());
}

BOOST_AUTO_TEST_CASE(convergence_catches_nodes_that_disagree) {
  BOOST_TEST(check_convergence({{0, {{"c", 3}}}, {1, {{"c", 3}}}}).empty());
  auto apart = check_convergence({{0, {{"c", 3}, {"d", 1}}}, {1, {{"c", 3}, {"d", 2}}}});
  BOOST_REQUIRE_EQUAL(apart.size(), 1u);
  BOOST_TEST(apart[0].checker == "convergence");
  BOOST_TEST(check_convergence({{0, {{"c", 3}}}, {1, {{"d", 3}}}}).size() == 1u); // a key missing
}

BOOST_AUTO_TEST_CASE(availability_classes_attempts_by_the_fault_under_way) {
  const std::uint64_t s = 1'000'000'000; // ns
  // Node 1 down from 10 s to 20 s; nodes 0 and 2 paused together 30-35 s.
  std::vector<fault_record> faults{{"kill", {1}, 10 * s, 20 * s},
                                   {"pause", {0, 2}, 30 * s, 35 * s}};
  auto at = [&](int node, double t, bool ok) {
    return attempt_record{node, std::uint64_t(t * double(s)), std::uint64_t(t * double(s)) + 1, ok, {}};
  };
  std::vector<attempt_record> attempts{
    at(0, 5, true),   at(2, 9.9, false),                  // outside
    at(0, 11, false), at(2, 11.9, true),                  // early (first 2 s)
    at(0, 12.5, true), at(2, 15, false), at(0, 19.9, true), // during
    at(1, 13, false),                                     // the faulted node itself
    at(1, 31, true),                                      // two nodes at once
    at(1, 20, true),                                      // after the end: recovery
    at(2, 26, false)};                                    // 6 s after it: outside
  auto a = measure_availability(attempts, faults, 2 * s, 5 * s);
  BOOST_TEST(a.outside.total == 3u);
  BOOST_TEST(a.outside.failed == 2u);
  BOOST_TEST(a.recovery.total == 1u);
  BOOST_TEST(a.recovery.failed == 0u);
  BOOST_TEST(a.early.total == 2u);
  BOOST_TEST(a.early.failed == 1u);
  BOOST_TEST(a.during.total == 3u);
  BOOST_TEST(a.during.failed == 1u);
  BOOST_TEST(a.during.failed_share() > 0.33);
  BOOST_TEST(a.faulted.total == 1u);
  BOOST_TEST(a.multi.total == 1u);
  // Two single-node faults overlapping count as several at once.
  faults.push_back({"partition", {2}, 18 * s, 25 * s});
  a = measure_availability(attempts, faults, 2 * s, 5 * s);
  BOOST_TEST(a.multi.total == 2u); // 19.9 s and 31 s
  BOOST_TEST(a.during.total == 3u); // 12.5 s, 15 s and, now, 20 s (node 1, node 2 cut off)
}

BOOST_AUTO_TEST_SUITE_END()
