// Where a node's partition copies are (docs/REPLICATION.md, "Replicas and
// the primary"; docs/CLUSTER.md, "Removing a dead node"): which copies this
// node opens, which it re-creates after a removal, which are being filled
// (and their marks on disk), who holds a current copy, and, with n_val > 1,
// the routes to each partition's primary. Run by the membership actor
// (actors/membership.cpp) on its state (actors/membership_state.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "actors/membership_state.hpp"

namespace tally {

/// Whether `node` is reachable (or this node) and holds a current copy of
/// partition p: open, not stale, and not being filled after a removal.
bool current_copy_on(mem_self self, std::uint32_t p, const node_id& node);

/// The partitions `who` held a copy of, each with true when no other node
/// that is up holds one (its data goes with it). With n_val 1 only those:
/// a partition it owned that another node still holds (a handoff to it
/// that never finished) is handed off to the next owner as usual.
std::map<std::uint32_t, bool> copies_on(mem_self self, const node_id& who);

/// n_val > 1: this node holds a copy of every partition whose preference
/// list names it; those another node owns are opened as replica copies.
void ensure_copies(mem_self self);

/// docs/CLUSTER.md, "Removing a dead node": the partitions this node owns
/// whose copy was on a removed node get their copy here, since no handoff
/// will bring it: with n_val 1 (the only copy, removed with --force) a new
/// empty partition; with n_val > 1 a copy that the primary fills (a full
/// copy or its log, docs/REPLICATION.md) and that may not lead until it has
/// caught up, or, when no other copy survived (--force), an empty one. The
/// record is then marked re-created (gossiped), so a later owner waits for
/// a handoff as usual. True when the ring changed.
bool recreate_removed(mem_self self);

/// Whether this node's view has settled: all its peers are up, or 3 s have
/// passed since it started (then for good). Copies are configured, and
/// retired (actors/copy_retirement.hpp), only from then on.
bool settled(mem_self self);

/// n_val > 1: routes to each partition's primary copy and configures this
/// node's copies (actors/replica_sets.hpp); configures them only once the
/// view has settled (a starting node waits for its peers, at most 3 s).
void replicated_routes(mem_self self);

/// Marks this node's copy of partition p as being filled (it follows the
/// primary and may not lead until it has caught up), in memory and on disk
/// (<data-dir>/filling/<p>, docs/REPLICATION.md, "Filling copies").
void set_filling(mem_self self, std::uint32_t p);

/// Filling copies marked by an earlier run of this node.
void load_filling(mem_self self);

/// A new copy (made after a removal, or for a node the owner table adds)
/// may lead once its journal has reached the primary's: asked each tick
/// (the primary's end first, then this copy's, so a copy that keeps up with
/// a busy primary passes).
/// `caught_up` runs after a copy has caught up and is no longer filling.
void check_filling(mem_self self, std::function<void()> caught_up);

} // namespace tally
