// The FBF paper's two experiments on a running store (seed 001, Sec. VI-D),
// run against real tallyd nodes on 127.0.0.1 (tallyd_cluster.hpp) through
// AntidoteDB's protocol: Fig. 15's write latency of batch counter updates
// with and without the FBF gate, and Fig. 14's failover (a node crashes while
// clients retry). Tally's FBF gate is the op id: a counter update that carries
// one passes the partition's FBF (applied once however often it is resent),
// one without is applied as it comes (docs/DATATYPES.md, "op ids"). The
// runners that print and plot these are in node_experiments.cpp; the
// comparison with the paper in docs/EXPERIMENTS.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/experiments/tallyd_cluster.hpp"
#include "common/expected.hpp"

namespace tally::experiments {

// --- Fig. 15 ----------------------------------------------------------------

struct batch_latency_params {
  cluster_spec cluster;
  /// Counter updates per batch (one static update request); the paper: 50.
  std::uint32_t batch = 50;
  /// Rounds, and pairs of batches (one with op ids, one without) per round.
  std::uint32_t rounds = 3;
  std::uint32_t pairs_per_round = 200;
  /// Unmeasured pairs before each round.
  std::uint32_t warmup_pairs = 20;
  /// Reply deadline of a batch.
  std::chrono::milliseconds timeout{10'000};
};

struct batch_latency_round {
  std::vector<double> with_ids_ms;    // per batch, send to reply
  std::vector<double> without_ids_ms;
};

/// Starts the cluster, then per round sends `pairs_per_round` pairs of
/// batches through node 0 on one connection, one batch at a time: the same
/// `batch` counters incremented by 1, once with an op id on every update and
/// once without, the order within a pair alternating (A B, B A, ...). Every
/// batch must commit: a failed one fails the run (errc of the node's
/// answer).
expected<std::vector<batch_latency_round>> run_batch_latency(const batch_latency_params& p);

// --- Fig. 14, failover ------------------------------------------------------

struct counter_failover_params {
  cluster_spec cluster; // n_val > 1 for the counters to survive the crash
  /// Client threads; worker w starts on node w mod nodes.
  std::uint32_t workers = 3;
  std::uint32_t ops_per_worker = 300;
  /// Every resend_every-th acknowledged operation is sent again with the same
  /// bytes (a lost acknowledgement: the paper's "a subset of these counter
  /// operations are retried periodically"); 0: none.
  std::uint32_t resend_every = 10;
  /// The node killed with SIGKILL once `kill_after` operations are acknowledged.
  std::size_t kill_node = 2;
  std::uint32_t kill_after = 300;
  /// How long an attempt waits for its reply before the client gives up on
  /// that node and retries, same bytes, through the next node.
  std::chrono::milliseconds attempt_timeout{3000};
  /// How long an operation is retried in all; must stay inside the nodes' FBF
  /// retry timeout (--fbf-retry-timeout-ms) for exactly-once.
  std::chrono::milliseconds retry_limit{20'000};
  std::uint64_t seed = 1;
};

struct counter_failover_result {
  /// Distinct increments (operations): each adds 1 to a counter with op ids
  /// and 1 to a counter without, in one static update.
  std::uint64_t operations = 0;
  std::uint64_t acknowledged = 0; // operations acknowledged at least once
  /// Requests written to a node (first sends, retries, lost-ack resends).
  std::uint64_t sent = 0;
  std::uint64_t sent_acknowledged = 0; // of those, answered with a commit
  /// Of those, failed without knowing whether they were applied: every
  /// failure but a copy's refusal of a write it does not lead ("this copy is
  /// a replica").
  std::uint64_t sent_unknown = 0;
  /// Retries after a timeout, an error or a dropped connection, through the
  /// next node (written or not).
  std::uint64_t failover_retries = 0;
  std::uint64_t lost_ack_resends = 0; // resends of acknowledged operations
  std::int64_t with_op_ids = 0;    // the counters' sums read back at the end
  std::int64_t without_op_ids = 0;
  double kill_at_s = 0; // seconds from the start of the load
  double load_s = 0;
  std::uint64_t acknowledged_before_kill = 0;
  std::string first_failure; // the first failed attempt's reason, if any
  /// Seconds from the start of the load at which each operation was first
  /// acknowledged, and at which each request was acknowledged (sorted).
  std::vector<double> operation_acks_s;
  std::vector<double> request_acks_s;
};

/// Starts the cluster; `workers` threads send `ops_per_worker` operations
/// each (a random partition's pair of counters, +1 each), retrying every
/// failed attempt through the next node until acknowledged or retry_limit;
/// kills `kill_node` once `kill_after` operations are acknowledged; reads
/// both counters' sums back through a survivor at a snapshot that includes
/// every acknowledged commit (bounded wait for the failover). Expected:
/// with_op_ids == acknowledged (every acknowledged operation once, nothing
/// doubled), and sent_acknowledged <= without_op_ids <= sent_acknowledged +
/// sent_unknown (every acknowledged request applied, a refused one not, an
/// unknown one maybe).
expected<counter_failover_result> run_counter_failover(const counter_failover_params& p);

} // namespace tally::experiments
