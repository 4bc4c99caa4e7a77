// A local cluster of real tallyd processes on 127.0.0.1 for the experiments
// that measure Tally itself rather than a simulation (FBF Figs. 14 and 15,
// docs/EXPERIMENTS.md, "fbf-latency" and "fbf-failover"). Node 0 founds the
// cluster, the others join through its cluster port; every node's log goes
// to <root>/node<i>.log. Every wait is bounded. The data root is removed when
// the cluster is destroyed, and every node still running is killed then.
//
// Not thread-safe: the experiment's main thread starts, kills and stops.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "common/ids.hpp"

namespace tally::experiments {

struct cluster_spec {
  /// The tallyd binary (options::tallyd).
  std::string tallyd;
  /// Parent of the nodes' data dirs; created, and removed at the end.
  std::string root;
  std::uint32_t nodes = 3;
  /// Passed to every node: --n-val (copies per partition), --partitions,
  /// --durability.
  std::uint32_t n_val = 1;
  std::uint32_t partitions = 8;
  std::string durability = "batch";
  /// Plain node links (--insecure-cluster-links) instead of TLS links
  /// authenticated by node 0's secret, which the joiners are given
  /// (--cluster-secret-file <root>/node0/cluster/secret).
  bool insecure_links = false;
  /// More flags for every node (e.g. --fbf-refresh-ms 10000).
  std::vector<std::string> extra;
  /// How long start() may take in all (starting, joining, settling).
  std::chrono::milliseconds start_limit{90'000};
};

/// The path of the tallyd next to the running binary (/proc/self/exe's
/// folder), or "" when there is none.
std::string tallyd_next_to_this_binary();

/// One key per partition of a ring of `partitions`: "<prefix><i>" for the
/// smallest i that lands on each partition.
std::vector<object_key> one_key_per_partition(const std::string& bucket,
                                              const std::string& prefix,
                                              std::uint32_t partitions);

class tallyd_cluster {
public:
  /// Starts the nodes one by one (a joiner that exits at once, its join timed
  /// out, is started again, up to 3 times), then waits until every node's `cluster
  /// status` shows every member up and serving what it owns, no handoff
  /// under way and (n_val > 1) a primary for every copy set and n_val
  /// current copies of every partition, and a write of
  /// one key per partition succeeds through every node. errc::not_found when
  /// spec.tallyd is not an executable file; errc::unavailable (with the
  /// node's log tail) when a node exits or the cluster does not settle
  /// within spec.start_limit.
  static expected<tallyd_cluster> start(const cluster_spec& spec);

  tallyd_cluster(tallyd_cluster&& other) noexcept;
  tallyd_cluster& operator=(tallyd_cluster&&) = delete;
  tallyd_cluster(const tallyd_cluster&) = delete;
  tallyd_cluster& operator=(const tallyd_cluster&) = delete;
  ~tallyd_cluster();

  std::size_t size() const noexcept { return nodes_.size(); }
  /// Node i's client port.
  std::uint16_t port(std::size_t i) const { return nodes_.at(i).port; }
  bool running(std::size_t i) const { return nodes_.at(i).pid > 0; }

  /// SIGKILL to node i (a crash: nothing flushed), then reaps it.
  void kill(std::size_t i);

  /// Starts node i again on its data dir and ports (it finds its cluster
  /// from its ring, no --join) and waits until it accepts connections
  /// (within `limit`). errc::unavailable with its log tail when it exits
  /// or does not accept in time.
  status restart(std::size_t i, std::chrono::milliseconds limit = std::chrono::milliseconds{30'000});

  /// Waits until the cluster has settled again as start() does (every
  /// member up and serving what it owns, n_val current copies of every
  /// partition), within `limit`.
  status settle(std::chrono::milliseconds limit);

  /// Node i's answer to the admin command "status" (`tally cluster
  /// status`), or the error as text.
  std::string status_text(std::size_t i) const;

  /// The last `bytes` of node i's log, for error messages.
  std::string log_tail(std::size_t i, std::size_t bytes = 600) const;

private:
  struct node {
    std::string dir;
    std::string log;
    std::uint16_t port = 0;
    std::uint16_t cluster_port = 0;
    pid_t pid = -1;
  };
  tallyd_cluster() = default;

  // `first`: the node's first start (a joiner joins node 0).
  status spawn(std::size_t i, bool first = true);
  status wait_accepting(std::size_t i, std::chrono::steady_clock::time_point deadline);
  status wait_settled(std::chrono::steady_clock::time_point deadline);
  status wait_writable(std::chrono::steady_clock::time_point deadline);

  cluster_spec spec_;
  std::vector<node> nodes_;
  bool owns_root_ = false;
};

} // namespace tally::experiments
