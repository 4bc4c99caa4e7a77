// Where a partition's copies live and which one leads (docs/REPLICATION.md,
// "Replicas and the primary"): pure functions of the ring's preference list
// and of which nodes are up.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ring/ring_state.hpp"

namespace tally {

/// The nodes that hold a copy of partition `p`: walking the ring from p,
/// the first min(n_val, distinct owners) distinct owners, in that order
/// (the preference order: the first is the partition's owner). Unlike
/// ring_state::preference_list, a node that owns two neighbouring
/// partitions is counted once, so the copies are on distinct nodes.
std::vector<node_id> copy_nodes(const ring_state& ring, std::uint32_t p);

/// Whether copy_nodes(ring, p) names `node`.
bool in_copy_set(const ring_state& ring, std::uint32_t p, const node_id& node);

/// n_val when the operator gives none: min(3, nodes), at least 1.
std::uint32_t default_n_val_for(std::size_t nodes) noexcept;

/// The write quorum when the operator gives none: a majority of n_val.
std::uint32_t majority_of(std::uint32_t n_val) noexcept;

/// The acting primary of a partition: the first node of its preference
/// list that `up` says is up; nullopt when none is.
std::optional<node_id> acting_primary(const std::vector<replica>& preference,
                                      const std::function<bool(const node_id&)>& up);

/// True when the nodes `up` says are up hold at least w copies of the
/// partition: only then may its primary acknowledge writes. A side of a
/// network partition without them refuses writes (no split brain).
bool has_write_quorum(const std::vector<replica>& preference, std::uint32_t w,
                      const std::function<bool(const node_id&)>& up);

/// The distinct nodes of a preference list other than `self`, in order:
/// whom a primary ships to.
std::vector<node_id> other_replicas(const std::vector<replica>& preference,
                                    const node_id& self);

} // namespace tally
