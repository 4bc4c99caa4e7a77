// The Bloom clock paper's test (seed 002, Proposition 1, Equations 2, 3 and
// 7) where Tally uses it: the replicas' dependency check on replication and
// catch-up (docs/REPLICATION.md, "Dependency check";
// replication/dependency_check.hpp), on real tallyd nodes on 127.0.0.1
// (tallyd_cluster.hpp) under load, with kill -9 cycles so that copies fall
// behind and catch up. The counters are the nodes' own (`cluster status`),
// added up over every node run; the runner and the comparison with the
// paper's predictions are in replication_experiments.cpp and
// docs/EXPERIMENTS.md ("bloom-replication").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/experiments/tallyd_cluster.hpp"
#include "common/expected.hpp"
#include "replication/dependency_check.hpp"

namespace tally::experiments {

struct bloom_replication_params {
  cluster_spec cluster; // n_val > 1, else there is no replica to check
  /// Client threads; worker w writes through node w mod nodes, and through
  /// the next node while that one is down.
  std::uint32_t workers = 4;
  /// Kill -9 cycles: in cycle c node c mod nodes is killed, stays down for
  /// `down` under load, is restarted, and the cluster settles (n_val
  /// current copies of every partition again).
  std::uint32_t kills = 3;
  std::chrono::milliseconds down{10'000};
  /// Load before the first kill and after each settle.
  std::chrono::milliseconds between{3'000};
  /// Share of writes that increment two keys of two partitions in one
  /// static transaction (a two-phase commit: its prepares are batches
  /// without a commit, which tick no Bloom clock); the others increment one.
  double two_partition_share = 0.25;
  std::uint64_t seed = 1;
};

/// What one node run (from a start to its kill, or to the end) counted.
struct node_run_counts {
  std::size_t node = 0;
  std::uint32_t run = 0; // 0: the first start, 1: after the first restart...
  bool killed = false;   // its counters were read just before a kill
  dependency_counts counts;
};

struct bloom_replication_result {
  std::vector<node_run_counts> runs;
  dependency_counts total; // over every run
  std::uint64_t acknowledged = 0; // writes
  std::uint64_t failed = 0;       // attempts that failed (retried through another node)
  /// Per kill: seconds from the restart to 3 current copies of every partition.
  std::vector<double> catch_up_s;
  double load_s = 0;
};

/// Starts the cluster, runs the load and the kill cycles, stops the load,
/// waits for the cluster to settle, and adds up every node run's counters
/// (a node's are read from its `cluster status` just before it is killed,
/// and from every node at the end; the checks of the moments between the
/// read and the kill are not counted). Errors: the cluster does not start
/// or settle, a node's status has no counters line.
expected<bloom_replication_result> run_replication_checks(const bloom_replication_params& p);

} // namespace tally::experiments
