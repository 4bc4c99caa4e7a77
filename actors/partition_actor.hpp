// The partition actor (DESIGN.md, "The partition actor"; docs/NODE.md).
//
// Protocol (messages in actors/messages.hpp), one actor per partition:
//   part_read_req    -> part_read_resp   when safe time >= snapshot
//   part_prepare_req -> part_time_resp   once its records are durable
//   part_commit_req  -> part_ack         once the commit record is durable
//   part_abort_req   -> part_ack         at once
//   exit message     -> flushes what is staged, then quits.
//
// The actor is spawned detached (its own thread): an fsync blocks only this
// partition, never a scheduler worker (docs/NODE.md, "Threading and disk").
// Group commit: handlers stage records and send `flush` to themselves, which
// runs after every message already queued, so one append + sync covers all
// the work that arrived meanwhile. In durability `full` each commit is
// appended and synced on its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace caf {
class actor;
class actor_system;
} // namespace caf

namespace tally {

class partition_core;

/// Spawns the partition actor owning `core`: detached (own thread, the
/// default) or on the shared scheduler (kept for measurements only).
/// `board_slot` is where it publishes blocked_from() (node_context::board);
/// the actor shares ownership of it, so the board outlives every partition
/// thread even when the node is torn down after a failed start.
caf::actor spawn_partition(caf::actor_system& sys,
                           std::unique_ptr<partition_core> core,
                           bool detached = true,
                           std::shared_ptr<std::atomic<std::uint64_t>> board_slot = nullptr);

} // namespace tally
