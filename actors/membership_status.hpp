// The text of `tally cluster status` (docs/CLUSTER.md, "Admin requests"), as
// the membership actor (actors/membership.cpp) sees the cluster from its state
// (actors/membership_state.hpp): members, what each owns and serves, the
// handoff under way, removals, and with n_val > 1 the primaries and the
// copies. The replication table that follows it is gathered from the
// primaries (actors/replication_status.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/membership_state.hpp"

namespace tally {

/// Sorted partition numbers as ranges, "0-3,7,9-10"; "-" when none.
std::string ranges(const std::vector<std::uint32_t>& ps);

/// This node's view of the cluster, one line a member and a few lines more.
std::string status_text(mem_self self);

} // namespace tally
