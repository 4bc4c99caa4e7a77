// Which copy of each partition leads, and what every copy is told
// (docs/REPLICATION.md, "Replicas and the primary"). Used by the membership
// actor when the ring's n_val is above 1: it gathers, for each partition,
// the copies of the nodes of its preference list (this node's own, and
// those peers gossip), and plans from them the route clients use and the
// configuration (r_config) of this node's copy.
//
// The rule: the primary is the first copy in preference order that is
// reachable, not stale and not being filled. Every node computes it from the same ring and,
// once gossip has spread, the same view, so they agree; while views differ
// a request may reach a copy that is not primary, which refuses it (the
// client retries).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "actors/node_context.hpp"
#include "actors/partition_replication.hpp"
#include "ring/ring_state.hpp"

namespace tally {

/// One node's copy of a partition as this node sees it.
struct copy_view {
  node_id node;
  caf::actor handle; // null: the node is down, or holds no copy yet
  bool stale = false;
  /// Re-created after a removal and still catching up (docs/CLUSTER.md,
  /// "Removing a dead node"): it follows the primary but may not lead.
  bool filling = false;
};

/// What a copy is told (r_config).
struct copy_config {
  copy_role role = copy_role::replica;
  node_id primary;
  std::vector<node_id> peers;        // the other copies, in preference order
  std::vector<caf::actor> handles;   // null where unreachable or stale
  std::uint32_t w = 1;
  /// This node's copy is being filled (empty or catching up after it was
  /// made or replaced): it follows the primary but neither leads nor
  /// promises a take-over round (docs/REPLICATION.md, "Filling copies").
  bool filling = false;

  /// Equal configurations have equal keys (to send only changes).
  std::string key() const;
};

struct partition_plan {
  route where;                          // the primary's copy, or why none
  std::optional<copy_config> mine;      // for this node's copy, if it has one
};

/// Plans partition `p` from its copies in preference order; `self` is this
/// node. The write quorum is a majority of the copies.
partition_plan plan_partition(std::uint32_t p, const std::vector<copy_view>& copies,
                              const node_id& self);

} // namespace tally
