// End to end: tally-bench's load generator against a real tallyd launched
// on a free loopback port with a fresh data directory. Compiled when CMake
// defines TALLYD_PATH (tests/CMakeLists.txt).
#ifdef TALLYD_PATH

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/load/runner.hpp"
#include "client/connection.hpp"
#include "tests/cluster/cluster_support.hpp"
#include "tests/support/tallyd_process.hpp"

using namespace tally::load;

namespace {

/// A tallyd child process (tests/support/tallyd_process.hpp) with its own
/// data directory; stopped, and the directory removed, at the end.
class tallyd_process {
public:
  tallyd_process() : node_(dir_.path + "/data", "batch") {
    BOOST_REQUIRE_MESSAGE(node_.start(),
                          "tallyd did not start and accept connections");
  }

  target url() const {
    target t;
    BOOST_REQUIRE(parse_target("antidote://127.0.0.1:" + std::to_string(node_.port),
                               t)
                  == "");
    return t;
  }

private:
  tally::test::temp_dir dir_; // declared first: outlives the process
  tally::test::server node_;
};

boost::test_tools::assertion_result tallyd_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result ok{::access(TALLYD_PATH, X_OK) == 0};
  if (!ok)
    ok.message() << TALLYD_PATH << " is not built (build target tallyd)";
  return ok;
}

/// A few hundred operations; the keys spread over 64 buckets keep every
/// node-side FBF far from its false-positive regime (docs/CLIENT.md), so a
/// wrong sum means a bug.
workload small(std::uint64_t ops) {
  workload w;
  w.ops = ops;
  w.connections = 4;
  w.outstanding = 4;
  w.keys = 200;
  w.buckets = 64;
  w.progress = false;
  w.timeout_ms = 10000;
  return w;
}

void report(const result& r) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  print_table(f, r);
  std::fclose(f);
  BOOST_TEST_MESSAGE(std::string(buf, len));
  std::free(buf);
}

} // namespace

BOOST_AUTO_TEST_SUITE(e2e, *boost::unit_test::precondition(tallyd_built))

BOOST_AUTO_TEST_CASE(static_load_with_resends_is_exactly_once_with_op_ids) {
  tallyd_process node;
  workload w = small(600);
  w.read_weight = 50;
  w.write_weight = 50;
  w.retry_rate = 0.2;
  result r = run(node.url(), w);
  report(r);
  BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
  BOOST_TEST(r.total_ops() == 600u);
  BOOST_TEST(r.ops[0] > 0u);
  BOOST_TEST(r.ops[1] > 0u);
  BOOST_TEST(r.errors.empty());
  BOOST_TEST(r.resent > 0u);
  BOOST_REQUIRE(r.verified);
  BOOST_TEST(r.expected_sum == 300);
  BOOST_TEST(r.actual_sum == r.expected_sum);
  BOOST_TEST(r.keys_off == 0u);
  BOOST_TEST(r.relative_error() == 0.0);
  BOOST_TEST(!r.timeline.empty());
  BOOST_TEST(csv_text(r).rfind("second,read_ops,read_p50_ms", 0) == 0u);
}

// --rate holds the load at the asked rate (the server could go faster):
// 300 operations at 200/s take about 1.5 s, not the fraction of a second an
// unpaced run needs.
BOOST_AUTO_TEST_CASE(a_fixed_rate_paces_the_load) {
  tallyd_process node;
  workload w = small(300);
  w.rate = 200;
  result r = run(node.url(), w);
  report(r);
  BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
  BOOST_TEST(r.total_ops() == 300u);
  BOOST_TEST(r.seconds > 1.2);
  BOOST_TEST(r.seconds < 3.0);
}

// Issue 16: set and register workloads against tallyd, with resends: no
// errors, and every key read back is a state the run can have left
// (bench/load/readback.hpp), with most keys written.
BOOST_AUTO_TEST_CASE(set_and_register_workloads_run_without_errors_and_read_back) {
  tallyd_process node;
  for (auto type : {data_kind::set, data_kind::reg}) {
    workload w = small(800);
    w.type = type;
    w.bucket = std::string("bench-") + to_string(type); // a key keeps its type
    w.keys = 50;
    w.buckets = 8;
    w.elements = 8;
    w.read_weight = 1;
    w.write_weight = 3;
    w.retry_rate = 0.1;
    result r = run(node.url(), w);
    report(r);
    BOOST_TEST_CONTEXT(to_string(type)) {
      BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
      BOOST_TEST(r.total_ops() == 800u);
      BOOST_TEST(r.ops[0] == 200u); // reads
      BOOST_TEST(r.ops[1] == 600u); // updates
      BOOST_TEST(r.errors.empty());
      BOOST_TEST(r.resent > 0u);
      BOOST_REQUIRE(r.verified);
      BOOST_TEST(!r.counters);
      BOOST_TEST(r.keys_off == 0u, r.first_off);
      // 600 updates over 50 keys: every key written (a set may be empty
      // again after its removes, most are not).
      BOOST_TEST(r.keys_nonempty >= (type == data_kind::reg ? 50u : 25u));
      if (type == data_kind::set)
        BOOST_TEST(r.items_after <= 50u * 8u);
    }
  }
  // Redis has no set or register workload: refused, nothing run.
  target redis;
  BOOST_REQUIRE(parse_target("redis://127.0.0.1:6379", redis) == "");
  workload w = small(10);
  w.type = data_kind::set;
  result r = run(redis, w);
  BOOST_TEST(r.failed);
  BOOST_TEST(r.failure.find("counter only") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(without_op_ids_the_resends_apply_twice) {
  tallyd_process node;
  workload w = small(400);
  w.read_weight = 0;
  w.write_weight = 1;
  w.retry_rate = 0.2;
  w.op_ids = false;
  result r = run(node.url(), w);
  report(r);
  BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
  BOOST_TEST(r.errors.empty());
  BOOST_REQUIRE(r.verified);
  BOOST_TEST(r.expected_sum == 400);
  BOOST_TEST(r.actual_sum == 400 + static_cast<std::int64_t>(r.resent));
}

BOOST_AUTO_TEST_CASE(interactive_transactions_for_a_bounded_time) {
  tallyd_process node;
  workload w = small(1);
  w.ops.reset();
  w.duration_s = 1.5;
  w.mode = mode_kind::interactive;
  w.mode_reads = 2;
  w.mode_writes = 2;
  w.retry_rate = 0.2;
  w.inc = 3;
  result r = run(node.url(), w);
  report(r);
  BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
  BOOST_TEST(r.ops[2] > 0u);
  BOOST_TEST(r.errors.empty());
  BOOST_REQUIRE(r.verified);
  BOOST_TEST(r.expected_sum == static_cast<std::int64_t>(r.ops[2]) * 2 * 3);
  BOOST_TEST(r.actual_sum == r.expected_sum);
}

/// Connections spread over the three nodes of a real local cluster: every
/// node routes keys to their owners, multi-key updates commit with 2PC
/// across nodes; the read-back through node 0 must see every increment once.
BOOST_AUTO_TEST_CASE(load_spread_over_a_three_node_cluster_is_exactly_once) {
  tally::test::local_cluster c;
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE_MESSAGE(c.add(), "node " << i << " did not start");
  BOOST_REQUIRE_MESSAGE(c.wait_serving({0, 1, 2}), "the cluster does not serve");
  std::string list = "antidote://127.0.0.1:" + std::to_string(c.nodes[0]->port);
  for (int i = 1; i < 3; ++i)
    list += ",127.0.0.1:" + std::to_string(c.nodes[i]->port);
  std::vector<target> nodes;
  BOOST_REQUIRE(parse_targets(list, nodes) == "");
  BOOST_REQUIRE(nodes.size() == 3u);

  workload w = small(600);
  w.connections = 6; // two per node
  w.read_weight = 50;
  w.write_weight = 50;
  w.mode = mode_kind::static_multi;
  w.mode_reads = 2;
  w.mode_writes = 3;
  w.retry_rate = 0.2;
  result r = run(nodes, w);
  report(r);
  BOOST_REQUIRE_MESSAGE(!r.failed, r.failure);
  BOOST_TEST(r.target == targets_text(nodes));
  // retry_rate sends two copies of one multi-partition update at once. They
  // can each hold an op id the other needs at two partitions; since issue
  // 17 a retry waits for its original's outcome instead of being
  // acknowledged unapplied. Wait-die breaks such a cycle by making one copy
  // give way (errc::gave_way), and its coordinator runs it again, so that
  // it waits for the other copy's outcome: no client sees an error, and the
  // sums below prove exactly-once.
  for (const auto& [kind, n] : r.errors)
    BOOST_TEST(n == 0u, kind << ": " << n);
  BOOST_TEST(r.total_ops() == 600u);
  BOOST_REQUIRE(r.verified);
  BOOST_TEST(r.expected_sum == 300 * 3);
  BOOST_TEST(r.actual_sum == r.expected_sum);
  BOOST_TEST(r.keys_off == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

#endif // TALLYD_PATH
