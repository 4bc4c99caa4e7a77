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

BOOST_AUTO_TEST_CASE(counter_with_op_ids_is_exact_through_a_kill_9_and_retries) {
  // Sec. VI-D: one node of three (n_val 3) crashes (SIGKILL) a third of the
  // way into the load; every failed attempt is retried with the same bytes
  // through the next node, and every 10th acknowledged operation is resent
  // (a lost acknowledgement). Bounded: 3 x 120 operations, each retried for
  // at most 20 s; the whole test takes 10-30 s.
  counter_failover_params p;
  p.cluster = three_copies("failover");
  p.cluster.insecure_links = true; // TLS links after a kill -9: docs/REPLICATION.md
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

BOOST_AUTO_TEST_CASE(fbf_gate_slows_a_50_update_batch_by_less_than_35_percent) {
  // Fig. 15: "counter with FBF for a batch counter updates of 50 operations
  // is only slower by 10%". 3 rounds of 60 alternating pairs through node 0
  // of 3 (n_val 3); the median over rounds of the median-latency ratio must
  // stay under the paper's 1.10 plus the 0.25 this shared machine's noise
  // needs: medians of 1.06-1.20 were read, single rounds up to 1.25
  // (docs/EXPERIMENTS.md, "fbf-latency"). A gate that made the batch a third
  // slower fails.
  batch_latency_params p;
  p.cluster = three_copies("latency");
  p.batch = paper::fig15_batch;
  p.rounds = 3;
  p.pairs_per_round = 60;
  p.warmup_pairs = 10;
  const auto rounds = value_of(run_batch_latency(p));
  std::vector<double> ratios;
  for (const auto& r : rounds) {
    BOOST_TEST_REQUIRE(r.with_ids_ms.size() == p.pairs_per_round);
    BOOST_TEST_REQUIRE(r.without_ids_ms.size() == p.pairs_per_round);
    ratios.push_back(median(r.with_ids_ms) / median(r.without_ids_ms));
    BOOST_TEST_MESSAGE("stat fig15 p50 with " << median(r.with_ids_ms) << " ms, without "
                                             << median(r.without_ids_ms) << " ms");
  }
  const double ratio = median(ratios);
  BOOST_TEST_MESSAGE("cell fig15 ratio " << ratio << " paper " << paper::fig15_slowdown);
  BOOST_TEST(ratio <= paper::fig15_slowdown + 0.25);
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
