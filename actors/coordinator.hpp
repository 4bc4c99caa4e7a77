// Transaction coordinators and the transaction manager (DESIGN.md,
// "Transactions"; docs/NODE.md).
//
// Protocol, all client_request -> client_reply (actors/messages.hpp):
//   static coordinator (spawn_static_coordinator): one per static request
//     (122 StaticUpdateObjects, 123 StaticReadObjects); answers it and quits.
//   tx manager (spawn_tx_manager): one per node; answers 119
//     StartTransaction by spawning an interactive coordinator and returning
//     its descriptor, and delegates 116/118/120/121 to the coordinator the
//     descriptor names (stale or foreign descriptors get an ErrorResp).
//   interactive coordinator: one per open transaction; buffers updates,
//     reads with its own updates, commits or aborts, then quits; aborted
//     when idle longer than node_limits::tx_idle_timeout.
// Commit: one partition -> one-step commit; several -> two-phase (durable
// prepares, commit time = max prepare time, commit records), acknowledged
// once every commit record is durable.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/partition_core.hpp"
#include "common/expected.hpp"
#include "protocol/messages.hpp"

namespace caf {
class actor;
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

/// The node's stable time: the physical clock, lowered below every prepared
/// or staged transaction (node_context::board). Reads at it rarely wait.
std::uint64_t stable_time(const node_context& ctx);

/// Snapshot time of a transaction starting now (Cure): max(the client's
/// clock, the node's stable time); a read at it waits at each partition
/// only until its safe time reaches it. Errors: foreign clock bytes.
expected<std::uint64_t> snapshot_for(const node_context& ctx,
                                     const start_transaction_req& start);

/// `updates` validated (counters only, supported types) and grouped by the
/// partition of their key in a ring of `q`; nothing on an error.
expected<std::map<std::uint32_t, std::vector<tx_update>>>
updates_by_partition(std::uint32_t q, const std::vector<update_op>& updates);

/// A fresh id for a static transaction of this node (distinct from the
/// interactive ones at every partition).
tx_id next_static_tx_id(const node_context& ctx);

/// A commit time or snapshot as the opaque clock bytes clients get.
std::string clock_bytes(std::uint64_t t);

caf::actor spawn_static_coordinator(caf::actor_system& sys,
                                    std::shared_ptr<const node_context> ctx);

caf::actor spawn_tx_manager(caf::actor_system& sys,
                            std::shared_ptr<const node_context> ctx);

} // namespace tally
