// FBF paper Figs. 14 (failover) and 15 on real tallyd nodes on 127.0.0.1
// (bench/experiments/node_runs.hpp): the counter with op ids stays exact
// while a node is killed and clients retry through the others, the one
// without op ids over-counts by the retries applied twice; and the FBF gate
// slows a batch of 50 counter updates by about the paper's 10%
// (docs/EXPERIMENTS.md, "fbf-failover" and "fbf-latency").
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/experiments/node_runs.hpp"
#include "bench/experiments/paper_values.hpp"
#include "bench/experiments/replication_runs.hpp"
#include "tests/experiments/experiments_test_support.hpp"

#ifndef TALLYD_PATH
#error "TALLYD_PATH must name the tallyd binary (tests/CMakeLists.txt)"
#endif

using namespace tally;
using namespace tally::experiments;
using tally::test::experiment_seed;
using tally::test::value_of;

namespace {

cluster_spec three_copies(const std::string& name) {
  cluster_spec c;
  c.tallyd = TALLYD_PATH;
  c.root = (std::filesystem::temp_directory_path()
            / ("tally-test-" + name + "-" + std::to_string(::getpid())))
               .string();
  c.nodes = 3;
  c.n_val = 3;
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiments_on_nodes)

// It was disabled in the default run while the replication failover stall
// of issue 14 made it fail (2 of 10 runs: a partition not served again
// through the survivors, the final read timed out): the kill could come
// before the copies the joins had opened empty were filled, leaving a
// partition whose only current copy was on the killed node. The cluster
// now starts only once every partition has n_val current copies
// (tallyd_cluster::start; docs/REPLICATION.md, "Failover").
BOOST_AUTO_TEST_CASE(counter_with_op_ids_is_exact_through_a_kill_9_and_retries) {
  // Sec. VI-D: one node of three (n_val 3) crashes (SIGKILL) a third of the
  // way into the load; every failed attempt is retried with the same bytes
  // through the next node, and every 10th acknowledged operation is resent
  // (a lost acknowledgement). Bounded: 3 x 120 operations, each retried for
  // at most 20 s; the whole test takes 10-30 s.
  counter_failover_params p;
  p.cluster = three_copies("failover");
  p.cluster.extra = {"--fbf-refresh-ms", "10000", "--fbf-past-filters", "2",
                     "--fbf-retry-timeout-ms", "30000", "--request-timeout-ms", "2000"};
  p.workers = 3;
  p.ops_per_worker = 120;
  p.kill_after = 120;
  p.seed = experiment_seed();
  const counter_failover_result r = value_of(run_counter_failover(p));
  BOOST_TEST_MESSAGE("failover: " << r.operations << " operations, " << r.sent
                                  << " requests sent, " << r.sent_acknowledged
                                  << " acknowledged, " << r.sent_unknown << " unknown, " << r.failover_retries
                                  << " retried through another node; with op ids "
                                  << r.with_op_ids << ", without " << r.without_op_ids
                                  << "; first failure: " << r.first_failure);
  TALLY_EXPERIMENT_SEED_CONTEXT {
    // The kill happened under load, and the load had to go around it: the
    // worker on node 2 lost its node at least once.
    BOOST_TEST(r.acknowledged_before_kill >= p.kill_after);
    BOOST_TEST(r.acknowledged_before_kill < r.operations);
    BOOST_TEST(r.failover_retries >= 1u);
    // Every operation acknowledged, and the counter with op ids counts each
    // exactly once: nothing acknowledged lost, no retry applied twice.
    BOOST_TEST(r.acknowledged == r.operations);
    BOOST_TEST(r.with_op_ids == static_cast<std::int64_t>(r.operations));
    // The counter without op ids counts every acknowledged request (resends
    // included), none that a node refused, and some of those of unknown
    // outcome: over by at least the resends of acknowledged operations.
    BOOST_TEST(r.lost_ack_resends == r.operations / 10);
    BOOST_TEST(r.without_op_ids >= static_cast<std::int64_t>(r.sent_acknowledged));
    BOOST_TEST(r.without_op_ids
               <= static_cast<std::int64_t>(r.sent_acknowledged + r.sent_unknown));
    BOOST_TEST(r.without_op_ids - static_cast<std::int64_t>(r.operations)
               >= static_cast<std::int64_t>(r.lost_ack_resends));
  }
}

// Fig. 15's figure itself (the gate's slowdown, paper 1.10) is a benchmark:
// `tally-bench experiment fbf-latency` measures it (docs/EXPERIMENTS.md,
// "fbf-latency"); a timed assertion here would fail with the machine's
// load, not with the code. This checks that the experiment measures what it
// says: every batch pair of every round timed, both with and without op
// ids, on three real nodes, and every batch committed (run_batch_latency
// fails the run on a batch that does not).
BOOST_AUTO_TEST_CASE(the_fig15_experiment_times_every_batch_pair_on_real_nodes) {
  batch_latency_params p;
  p.cluster = three_copies("latency");
  p.batch = paper::fig15_batch;
  p.rounds = 2;
  p.pairs_per_round = 20;
  p.warmup_pairs = 2;
  const auto rounds = value_of(run_batch_latency(p));
  BOOST_TEST_REQUIRE(rounds.size() == p.rounds);
  for (const auto& r : rounds) {
    BOOST_TEST_REQUIRE(r.with_ids_ms.size() == p.pairs_per_round);
    BOOST_TEST_REQUIRE(r.without_ids_ms.size() == p.pairs_per_round);
    for (double ms : r.with_ids_ms)
      BOOST_TEST(ms > 0.0);
    for (double ms : r.without_ids_ms)
      BOOST_TEST(ms > 0.0);
    BOOST_TEST_MESSAGE("stat fig15 p50 with " << median(r.with_ids_ms) << " ms, without "
                                             << median(r.without_ids_ms) << " ms");
  }
}

// `bloom-replication` (docs/EXPERIMENTS.md): the replicas' dependency
// checks counted on real nodes through a kill -9 and a catch-up. The node
// that comes back has copies behind their primaries: they are probed at
// the primaries' ends and refuse on the Bloom clock alone; every batch in
// order is a positive the exact check confirms; one history, so no false
// positive of a missing commit and no negative contradicted.
BOOST_AUTO_TEST_CASE(the_replicas_dependency_checks_count_on_real_nodes) {
  bloom_replication_params p;
  p.cluster = three_copies("bloom-replication");
  p.workers = 2;
  p.kills = 1;
  p.down = std::chrono::milliseconds{2000};
  p.between = std::chrono::milliseconds{1000};
  p.seed = experiment_seed();
  const auto r = value_of(run_replication_checks(p));
  BOOST_TEST_REQUIRE(r.runs.size() == 4u); // node 0 before its kill, then all three
  BOOST_TEST(r.runs[0].killed);
  BOOST_TEST(r.acknowledged > 0u);
  const auto& t = r.total;
  BOOST_TEST(t.checks > 0u);
  BOOST_TEST(t.m == 64u);
  BOOST_TEST(t.k == 3u);
  BOOST_TEST(t.confirmed > 0u);
  BOOST_TEST(r.runs[1].counts.saved > 0u, describe(r.runs[1].counts)); // node 0, back
  BOOST_TEST(t.contradicted == 0u);
  BOOST_TEST(t.fp_commit_missing == 0u);
  BOOST_TEST(t.checks == t.negatives + t.confirmed + t.false_positives);
  BOOST_TEST_MESSAGE("bloom-replication: " << describe(t));
}

BOOST_AUTO_TEST_CASE(a_missing_tallyd_binary_is_reported_not_skipped) {
  cluster_spec c = three_copies("missing");
  c.tallyd = c.root + "/no-such-tallyd";
  const auto cl = tallyd_cluster::start(c);
  BOOST_TEST_REQUIRE(!cl.has_value());
  BOOST_TEST((cl.err().code() == errc::not_found));
  BOOST_TEST(cl.err().message().find("--tallyd") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
