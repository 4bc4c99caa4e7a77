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

BOOST_AUTO_TEST_SUITE_END()
