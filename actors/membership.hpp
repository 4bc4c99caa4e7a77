// The membership actor of a node (DESIGN.md, "Cluster and ring";
// docs/CLUSTER.md): one per node, published on the cluster port.
//
// It owns the node's copy of the ring state (ring/ring_state.hpp), persisted
// in <data-dir>/cluster/ring, and knows every peer's membership actor and
// the partition actors each peer serves. From them it builds the routing
// table the coordinators read (node_context's `routes`), and it moves
// partitions when ownership changes (handoff, actors/handoff.hpp).
//
// Protocol (atoms in actors/atoms.hpp):
//   from a joining node:  (m_join, wire version, Q, node id)
//                         -> (true, ring bytes) | (false, why)
//   between members:      (m_gossip, ring bytes, node id, incarnation,
//                          membership actor, partition actors[Q]) one way,
//                          every second and
//                          on every change; a new or restarted peer is
//                          answered with this node's own gossip
//                         (m_gask) one way: asked of a peer counted up that
//                          sent no gossip for 3 s; answered with gossip
//                         (m_txdec, tx_decide_req bytes) -> tx_decide_resp
//                          bytes: how a two-phase commit this node
//                          coordinates ended (coordinated_txs::decide)
//   admin (admin socket): (m_status) -> text
//                         (m_leave, node id) -> (ok, text)
//                         (m_remove, node id, force) -> (ok, text)
//   handoff receiver:     (h_begin, p, from) -> true
//                         (h_chunk, p, file, offset, bytes) -> true
//                         (h_end, p) -> the new partition actor
//                         (h_query, p) -> does this node hold p?
// It runs detached (own thread): it writes files (ring, handoff data).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/expected.hpp"
#include "actors/node_context.hpp"
#include "common/ids.hpp"
#include "replication/dependency_check.hpp"
#include "ring/ring_state.hpp"

namespace caf {
class actor;
class actor_system;
} // namespace caf

namespace tally {

class routing;

/// A transaction left prepared at local partition `p` (by a crash, or by a
/// coordinator that went silent) with no decision on this node: resolved
/// with the cluster. `participants` and `coordinator` come from its prepare
/// record (empty: not named, every partition is asked).
struct undecided_tx {
  std::uint32_t p = 0;
  tx_id tx;
  std::uint64_t prepare_time = 0;
  std::vector<std::uint32_t> participants = {};
  node_id coordinator = {};
};

struct membership_config {
  node_id self;
  std::string root; // the data dir
  std::uint32_t q = 64;
  /// How long a coordinator waits for a partition; requests held during a
  /// handoff longer than this are answered with a timeout, not forwarded.
  std::chrono::milliseconds request_timeout{10000};
  /// Opens <root>/partitions/<p> (creating nothing) and spawns its actor.
  std::function<expected<caf::actor>(std::uint32_t)> open_partition;
  /// n_val > 1 (docs/REPLICATION.md): opens (creating it when missing) this
  /// node's copy of a partition another node owns, <root>/replicas/<p>,
  /// and spawns its actor as a replica.
  std::function<expected<caf::actor>(std::uint32_t)> open_copy;
  /// n_val > 1: true when <root>/replicas/<p> exists (a copy this node
  /// holds of a partition it now owns, reopened at a restart).
  std::function<bool(std::uint32_t)> has_copy;
  /// Creates <root>/partitions/<p> empty (listed in the manifest) and
  /// spawns its actor: the owner's copy of a partition whose only copy was
  /// on a node removed with --force (docs/CLUSTER.md, "Removing a dead
  /// node").
  std::function<expected<caf::actor>(std::uint32_t)> create_partition;
  /// Moves a stale copy's folder aside (<root>/stale/) and opens an empty
  /// one in its place; `owned`: the owner's copy (partitions/<p>) rather
  /// than a replica's.
  std::function<expected<caf::actor>(std::uint32_t, bool owned)> replace_copy;
  /// Deletes <root>/replicas/<p>, a retired copy whose every record the
  /// primary holds, or, with `keep_aside`, moves it to <root>/stale/
  /// (actors/copy_retirement.hpp); its actor has been told to stop. Returns
  /// where it went ("deleted" or the stale folder).
  std::function<expected<std::string>(std::uint32_t, bool keep_aside)> drop_copy;
  /// Deletes the copies kept in <root>/stale/ longer than --stale-keep-hours
  /// (actors/copy_leftovers.hpp, expire_stale_copies): run at the first
  /// tick and then once an hour. Unset: never.
  std::function<void()> expire_stale;
  /// The two-phase commits this node coordinates (tx_decide_atom answers).
  std::shared_ptr<coordinated_txs> coordinating;
  /// Calls to other nodes' partitions: failed at once when a member's link
  /// is lost (not when it leaves: actors/remote_calls.hpp).
  std::shared_ptr<remote_calls> remote;
  /// n_val > 1: the dependency checks of this node's copies, added up
  /// (shown by `cluster status`; docs/REPLICATION.md, "Dependency check").
  std::shared_ptr<const dependency_tally> dependency_checks;
  /// Called once this node has left the cluster and handed off everything.
  std::function<void()> request_shutdown;
  /// This run's incarnation (the origin of the transaction ids its
  /// coordinators issue), gossiped so peers know which coordinators live.
  std::uint64_t incarnation = 0;
  std::vector<undecided_tx> undecided;
  /// Partitions on disk that another node owns (a handoff was under way at
  /// a crash): never served here; shipped to the owner or deleted once it
  /// serves them.
  std::vector<std::uint32_t> unopened;
};

/// "tally@host:port" for a cluster address.
node_id make_node_id(const std::string& host, std::uint16_t port);

/// The host and port of a node id; errc::invalid_argument when it is not
/// "name@host:port".
expected<std::pair<std::string, std::uint16_t>> node_address(const node_id& id);

/// "host:port" -> (host, port); errc::invalid_argument otherwise.
expected<std::pair<std::string, std::uint16_t>> parse_host_port(const std::string& s);

/// Writes the ring state to <root>/cluster/ring atomically (temp file, sync,
/// rename, sync of the folder).
status save_ring(const std::string& root, const ring_state& ring);
/// The ring state saved in <root>/cluster/ring, nullopt when there is none.
expected<std::optional<ring_state>> load_ring(const std::string& root);

/// Asks the member at `host`:`port` (its cluster port) to add `self` to its
/// cluster and returns the cluster's ring state. Blocking: for startup only.
/// Errors with a message for the user: the address cannot be reached or is
/// not a Tally cluster port, the ring size or node protocol version
/// differs, no answer within `timeout`.
expected<ring_state> join_cluster(caf::actor_system& sys, const std::string& host,
                                  std::uint16_t port, const node_id& self,
                                  std::uint32_t q, std::chrono::milliseconds timeout);

/// Spawns the membership actor with the node's ring state and the actors of
/// the partitions it holds (`local`, size Q, null where it holds none), and
/// publishes routes into `routes`.
caf::actor spawn_membership(caf::actor_system& sys, membership_config cfg,
                            ring_state ring, std::vector<caf::actor> local,
                            std::shared_ptr<routing> routes);

} // namespace tally
