// Claim: which node owns which partition (docs/RING.md, "Claim").
//
// Pure functions over ownership tables, so that the claimant's ring state
// (ring/ring_state.hpp) and the tests run the same code. No randomness, no
// clock, no hash-order iteration: the same inputs give the same table on
// every node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/expected.hpp"

namespace tally {

/// A node's name, e.g. "tally@127.0.0.1:9100". Never empty.
using node_id = std::string;

/// owners[p] is the node that owns partition p; size() is the ring size Q.
using owner_table = std::vector<node_id>;

/// One partition changing owner: the handoff of its journal and checkpoint
/// data from `from` to `to`.
struct handoff {
  std::uint32_t partition = 0;
  node_id from;
  node_id to;

  friend bool operator==(const handoff& a, const handoff& b) {
    return a.partition == b.partition && a.from == b.from && a.to == b.to;
  }
  friend bool operator!=(const handoff& a, const handoff& b) { return !(a == b); }
};

std::ostream& operator<<(std::ostream& os, const handoff& h);

/// The window size claim enforces: n_val capped at the node count and at the
/// ring size (a window cannot hold more distinct owners than either).
std::uint32_t effective_n_val(std::uint32_t q, std::size_t nodes,
                              std::uint32_t n_val) noexcept;

/// True when claim_ownership guarantees that every window of
/// n = effective_n_val(q, nodes, n_val) consecutive partitions (cyclically)
/// has n distinct owners: exactly when n * ceil(q / nodes) <= q. This is
/// also necessary for any balanced table (docs/RING.md, "Guarantees"), so
/// the guarantee is as wide as balance allows. It covers nodes == n when n
/// divides q, and nodes >= n + 1 with q >= nodes whenever n <= 3 or
/// q >= n^2. Precondition: nodes >= 1.
bool distinctness_guaranteed(std::uint32_t q, std::size_t nodes,
                             std::uint32_t n_val) noexcept;

/// Number of start positions i whose window owners[i .. i+n-1] (mod size)
/// repeats a node. 0 means every window of n partitions is on n distinct
/// nodes. Precondition: 1 <= n <= owners.size().
std::size_t window_violations(const owner_table& owners, std::uint32_t n);

/// The handoffs that turn `before` into `after`, by ascending partition:
/// exactly the partitions whose owner differs. Precondition: equal sizes.
std::vector<handoff> moves(const owner_table& before, const owner_table& after);

/// Incremental claim. Starting from `current` (any owners, including nodes
/// that are no longer members), returns a table over `members` that
///  - is balanced: every member owns floor(Q/N) or ceil(Q/N) partitions
///    (N = number of distinct members), always;
///  - has every window of effective_n_val(Q, N, n_val) consecutive
///    partitions on distinct nodes whenever distinctness_guaranteed(Q, N,
///    n_val), and otherwise keeps such repeats few (best effort);
///  - moves few partitions: partitions of non-members and the surplus of
///    over-full members move, plus a few swaps to restore distinctness
///    (bounds measured in docs/RING.md, "Movement").
/// Deterministic: depends only on the arguments (members in any order).
/// errc::invalid_argument when `current` is not a valid ring size, when
/// `members` is empty or holds an empty id, or when n_val is 0.
expected<owner_table> claim_ownership(const owner_table& current,
                                      const std::vector<node_id>& members,
                                      std::uint32_t n_val);

} // namespace tally
