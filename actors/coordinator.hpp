// Transaction coordinators (DESIGN.md, "Transactions"; docs/NODE.md) and
// the transaction helpers the client gateway shares with them.
//
// Coordinators are short-lived actors for the requests that touch several
// partitions (a single-partition request goes straight to its partition,
// actors/client_gateway.hpp; interactive transactions live in
// actors/open_transactions.hpp):
//   static coordinator (spawn_static_coordinator): one per static request
//     (122 StaticUpdateObjects, 123 StaticReadObjects) over several
//     partitions; client_request -> client_reply (through the request's
//     sink when it has one), then quits;
//   committer (commit_two_phase): the two-phase commit of an interactive
//     transaction that wrote to several partitions.
// Commit: one partition -> one-step commit; several -> two-phase (durable
// prepares, commit time = max prepare time, commit records), acknowledged
// once every commit record is durable.
#pragma once

#include <cstdint>
#include <functional>
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

/// Commits an interactive transaction's writes on several partitions
/// (two-phase) from a short-lived coordinator actor; `done` gets the commit
/// time or the error, on that actor's thread.
void commit_two_phase(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                      tx_id tx, std::uint64_t snapshot_time,
                      std::map<std::uint32_t, std::vector<tx_update>> writes,
                      std::function<void(expected<std::uint64_t>)> done);

} // namespace tally
