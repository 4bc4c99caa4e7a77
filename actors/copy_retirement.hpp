// Copies a node no longer needs (docs/REPLICATION.md, "Retired copies"):
// with n_val > 1, a join, a leave or a removal changes the copy sets, and a
// node can be left holding a copy (<data-dir>/replicas/<p>) of a partition
// whose copy set no longer names it. Run by the membership actor on its
// state (actors/membership_state.hpp).
//
// Such a copy is first **retired**: its membership configures it as a
// replica of nobody, with no peers (r_config), so it takes no batch,
// promises no take-over round and leads nothing. Kept as it was configured
// before, it went on promising the rounds and taking the batches of its
// old copy set, a quorum the partition's new primary does not write to
// (docs/REPLICATION.md, "Not done yet").
//
// It is then **dropped** once
//   - every node of the partition's copy set holds a current copy (up,
//     neither stale nor being filled), so n_val copies exist without it,
//   - it has been retired for `retired_grace` (the views have settled), and
//   - the primary's journal holds this copy's last record at the same LSN
//     with the same transaction and term (r_tail, r_holds): the log matching
//     property of Raft (Ongaro and Ousterhout, 2014, Sec. 5.3), which the
//     prefix checks of every batch keep, makes this copy's journal a prefix
//     of the primary's, so it holds nothing the primary lacks.
// Dropped, its folder is deleted. When the primary holds another record
// there, or ends before it, or has folded it (it cannot tell), the copy may
// hold writes nobody else has: its folder is moved to <data-dir>/stale/
// instead, as a stale copy is, and kept for the operator.
//
// A copy of that kind found on disk at a start (the node stopped before
// dropping it) is opened and goes the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "actors/membership_state.hpp"

namespace tally {

/// How long a copy stays retired before it may be dropped.
constexpr std::chrono::milliseconds retired_grace{5000};

/// Retires every copy this node holds of a partition whose copy set no
/// longer names it, and forgets the retirement of one the set names again
/// (the copy plan then configures it as usual). Run by the membership once
/// the view has settled (copy_plan.hpp, settled()).
void retire_unneeded_copies(mem_self self);

/// Opens the copies on disk (<data-dir>/replicas/<p>) of partitions whose
/// copy set does not name this node, so that they are retired and dropped
/// (a node stopped before it dropped them).
void open_leftover_copies(mem_self self);

/// The periodic step: drops the retired copies that may go (above).
/// `dropped` runs after a copy was dropped (routes and gossip change).
void check_retired(mem_self self, std::function<void()> dropped);

} // namespace tally
