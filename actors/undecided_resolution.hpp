// The resolution of undecided transactions (docs/CLUSTER.md, "Recovery of
// undecided transactions"), run by the membership actor
// (actors/membership.cpp) on its state (actors/membership_state.hpp).
//
// A transaction left prepared at a local partition with no decision (its
// coordinator's messages were lost: a crash, a kill, a pause long enough to
// drop the links) is resolved by asking, at once, the other participants
// its prepare record names (their decision index: did it commit, at what
// time, or abort there?) and the node of its coordinator (how did its
// two-phase commit end? coordinated_txs). The first answer that decides it
// is applied at once: a commit anywhere commits it here at that time; an
// abort anywhere, or the coordinator's abort, aborts it; the coordinator's
// commit commits it. With no such answer, it is aborted only when every
// participant answered "no decision" (and can prove it: its decision index
// keeps everything at or after the prepare time) and no coordinator can
// still commit it (its run is over, it says it does not know it, or it is
// older than three request timeouts). Anything else waits for the next
// attempt (every second, and at once when a peer comes up).
#pragma once

#include <cstdint>
#include <vector>

#include "actors/membership_state.hpp"

namespace tally {

/// Whether the holder of a transaction prepared at `prepare_us` asks its
/// coordinator to decide now ("force": a coordinator still collecting
/// prepare answers then aborts): when the prepare is older than a request
/// timeout `limit_us` (every prepare call has answered or timed out by
/// then), was prepared before this run started at `run_started_us`
/// (recovered: its messages lost), or when a node involved in it went down
/// since a request timeout before the prepare (`down_us`: when each was
/// last seen going down, 0 never): a link may have lost its messages. A
/// healthy two-phase commit that is merely slow (a prepare held by a
/// handoff) is never aborted by a holder.
bool decision_forced(std::uint64_t now_us, std::uint64_t prepare_us, std::uint64_t limit_us,
                     std::uint64_t run_started_us, const std::vector<std::uint64_t>& down_us);

/// Starts an attempt for every transaction being resolved that has none out
/// or, with `again`, whose attempt is still out (a peer came up: questions
/// sent while its links were down are lost; the old attempt's answers are
/// ignored from now on).
void resolve_all(mem_self self, bool again = false);

/// A peer went down or came up: look for transactions whose messages may
/// have been lost, 4 times a second for a while (resolve_tick_atom).
void link_changed(mem_self self);

/// Asks every local partition for transactions prepared over `quiet_us` ago
/// (a second: no two-phase commit in progress is this slow; a quarter of a
/// second just after a link changed) and resolves them.
void collect_stale(mem_self self, std::uint64_t quiet_us = 1'000'000);

/// One tick of the fast look after a link changed (resolve_tick_atom):
/// collects and resolves, and schedules the next tick until the link has
/// been quiet for a while.
void resolve_tick(mem_self self);

} // namespace tally
