// What every actor of a node shares, read-only after startup: the partition
// actors, the ring size, limits and the node's identity (docs/NODE.md).
// Internal to actors/ (it includes CAF's actor handle).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <caf/actor.hpp>

#include "actors/remote_calls.hpp"
#include "actors/coordinated_txs.hpp"
#include "common/ids.hpp"
#include "protocol/frame.hpp"
#include "protocol/request_limits.hpp"
#include "server/connection.hpp"

namespace tally {

class remote_callers;

struct node_limits {
  /// Largest frame (code byte + body) a client may send.
  std::uint32_t max_frame_size = default_max_request_frame_size;
  /// Interactive transactions open at once; more are refused with an error.
  std::size_t max_open_transactions = 10000;
  /// Client connections at once; more are closed at accept.
  std::size_t max_connections = 1024;
  /// Unanswered requests of one connection before the server stops reading
  /// it (pipelining depth; back-pressure instead of buffering).
  std::size_t max_in_flight = 1024;
  /// Reply bytes a client has not read before the server stops reading it.
  std::size_t max_pending_output = 4u << 20;
  std::size_t max_shard_in_flight = 65536;
  /// Bytes of requests being received or served across all connections
  /// (server/request_memory_budget.hpp).
  std::size_t max_request_memory = default_max_request_memory;
  /// Connections idle this long are closed (0: never).
  std::chrono::milliseconds idle_timeout{300000};
  /// At the connection limit, an idle connection is closed to admit a new
  /// one once idle this long (server_options::evict_idle_after).
  std::chrono::milliseconds evict_idle_after{2000};
  /// Connections stalled inside a request this long are closed (0: never).
  std::chrono::milliseconds request_read_timeout{10000};
  /// Updates one interactive transaction may buffer.
  std::size_t max_tx_updates = 100000;
  /// Reads one partition holds waiting for their snapshot.
  std::size_t max_parked_reads = 10000;
  /// Interactive transactions one connection may hold open at once.
  std::size_t max_tx_per_session = 128;
  /// An interactive transaction idle this long is aborted.
  std::chrono::milliseconds tx_idle_timeout{30000};
  /// How long a coordinator waits for a partition (a read may wait for a
  /// prepared transaction): then the client gets a timeout error.
  std::chrono::milliseconds request_timeout{10000};
  /// Bounds every client request is checked against at the door
  /// (protocol/request_limits.hpp, docs/SECURITY.md).
  request_limits requests;
};

/// Each partition's blocked_from() (partition_core.hpp), published by the
/// partition actor after every message it handles so that coordinators can
/// compute the node's stable time without asking: stable = min(physical
/// clock, min_i blocked_from_i - 1). Rule: slot i is written only by
/// partition i's actor; anyone may read. A stale value only makes a read
/// wait at the partition (which checks its own safe time), never wrong.
struct safe_board {
  explicit safe_board(std::size_t n) : blocked_from(n) {
    for (auto& x : blocked_from)
      x.store(UINT64_MAX, std::memory_order_relaxed);
  }
  std::vector<std::atomic<std::uint64_t>> blocked_from;
};

/// Slot `i` of `board`, sharing the board's ownership (aliasing
/// shared_ptr): a partition thread that outlives the node keeps it alive.
inline std::shared_ptr<std::atomic<std::uint64_t>>
board_slot(const std::shared_ptr<safe_board>& board, std::size_t i) {
  return {board, &board->blocked_from[i]};
}

/// Where requests for one partition go: the actor serving it (local, or a
/// proxy of a remote one), or the reason none can (docs/CLUSTER.md,
/// "Routing").
struct route {
  caf::actor handle;   // null: unavailable, `why` says why
  std::string node;    // the node that serves (or owns) the partition
  std::string why;     // the error message when handle is null
};

/// The routing table, rebuilt by the membership actor after every ring,
/// peer or handoff change and published whole; readers (coordinators, on
/// any thread) take a snapshot with load(). A stale snapshot only sends a
/// request to a partition that forwards it or answers "unavailable".
class routing {
public:
  explicit routing(std::vector<route> parts = {})
      : table_(std::make_shared<const std::vector<route>>(std::move(parts))) {}

  std::shared_ptr<const std::vector<route>> load() const {
    return std::atomic_load(&table_);
  }
  void store(std::vector<route> parts) {
    std::atomic_store(&table_, std::make_shared<const std::vector<route>>(
                                 std::move(parts)));
  }

private:
  std::shared_ptr<const std::vector<route>> table_;
};

/// A routing table whose every partition is the local actor at its index
/// (one node, and the coordinator tests).
inline std::vector<route> local_routes(const std::vector<caf::actor>& parts,
                                       const std::string& node) {
  std::vector<route> out;
  for (const auto& a : parts)
    out.push_back(route{a, node, {}});
  return out;
}

struct node_context {
  std::shared_ptr<routing> routes = std::make_shared<routing>();
  std::uint32_t q = 64;
  std::string owner;             // node name in transaction descriptors
  std::uint64_t incarnation = 0; // start time (us): new on every restart
  node_limits limits;
  caf::actor membership;         // answers admin requests (cluster status, leave)
  std::string admin_socket;      // where admin requests are accepted ("": nowhere)
  std::shared_ptr<safe_board> board;
  std::shared_ptr<coordinated_txs> coordinating = std::make_shared<coordinated_txs>();
  /// How calls reach partitions on other nodes (actors/remote_callers.hpp);
  /// null on a node that never routes away (unit tests).
  std::shared_ptr<const remote_callers> callers;
  /// Calls waiting on other nodes: failed at once when a node's link is
  /// lost (actors/remote_calls.hpp).
  std::shared_ptr<remote_calls> remote = std::make_shared<remote_calls>();
};

} // namespace tally
