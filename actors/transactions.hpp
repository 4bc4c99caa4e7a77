// Transactions over partitions, as plain functions on the client server's
// threads (DESIGN.md, "Transactions"; Cure): the snapshot a transaction
// reads at, reads of several partitions at one snapshot, and commits (one
// step on one partition, two-phase over several). Each partition is reached
// with one call (actors/partition_calls.hpp: a local partition by
// anon_send, a remote one by a short-lived requester); the answers are
// gathered here under a mutex, since they come from several partitions'
// threads. No coordinator actor, no per-request timer for local partitions.
//
// Commit: nothing written -> commits at its snapshot; one partition -> a
// one-step commit (update records + commit record in one batch); several ->
// every participant is routed first (an unavailable one fails the commit
// with nothing prepared anywhere), then each prepares (durable prepare
// record, prepare time above its clock and the snapshot), commit time = the
// largest prepare time, then each commits; `done` runs once every commit
// record is durable. A failed prepare aborts the prepared participants.
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
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

/// The node's stable time: the physical clock, lowered below every prepared
/// or staged transaction (node_context::board). Reads at it rarely wait.
std::uint64_t stable_time(const node_context& ctx);

/// Snapshot time of a transaction starting now: max(the client's clock, the
/// node's stable time); a read at it waits at each partition only until its
/// safe time reaches it. Errors: foreign clock bytes.
expected<std::uint64_t> snapshot_for(const node_context& ctx,
                                     const start_transaction_req& start);

/// The reading transaction's own updates of a key (empty for a static read).
using own_effects = std::function<std::vector<crdt_effect>(const object_key&)>;

/// A transaction's updates, as effects, by partition.
using writes_by_partition = std::map<std::uint32_t, std::vector<tx_update>>;

/// `updates` validated (counter updates only, supported types) and grouped
/// by the partition of their key in a ring of `q`; nothing on an error.
expected<writes_by_partition>
updates_by_partition(std::uint32_t q, const std::vector<update_op>& updates);

/// 64 random bits from the kernel's CSPRNG, drawn 32 values at a time per
/// thread, each handed out once (aborts without a CSPRNG).
std::uint64_t random_u64();

/// Fresh unique tokens for one prepared request: a random origin per
/// process and a block of 2^32 sequence numbers per call.
token_source next_token_source();

/// Read before write (docs/DATATYPES.md): turns `updates` into effects by
/// partition. A counter update's effect is its delta, as ever (its op id
/// kept); every other update is prepared (AntidoteDB's downstream) against
/// its object read at `snapshot` plus `own` (the transaction's earlier
/// effects), each after the earlier ones of the request, with fresh tokens
/// and the local clock. One read call per partition touched, none when
/// only counters are updated. Errors, nothing prepared: unserved types,
/// a key updated as two types, the read's errors (errc::wrong_type for an
/// object stored as another type), the CRDT's prepare errors.
void prepare_writes(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                    std::uint64_t snapshot, std::vector<update_op> updates,
                    const own_effects& own,
                    std::function<void(expected<writes_by_partition>)> done);

/// A fresh id for a static transaction of this node (distinct from the
/// interactive ones at every partition: they count down from 2^64).
tx_id next_static_tx_id(const node_context& ctx);

/// A commit time or snapshot as the opaque clock bytes clients get.
std::string clock_bytes(std::uint64_t t);


/// Reads `objects` at `snapshot`, one call per partition touched; `done`
/// gets one value per object, in order, or the first error.
void read_at(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
             std::uint64_t snapshot, const std::vector<bound_object>& objects,
             const own_effects& own,
             std::function<void(expected<std::vector<crdt_value>>)> done);

/// Commits `writes` (by partition) of transaction `tx` read at `snapshot`;
/// `done` gets the commit time or the error. A two-phase commit whose
/// prepare gave way to another transaction holding one of its op ids
/// (errc::gave_way: two copies of one multi-partition transaction, sent at
/// once, waiting for each other) is aborted and run again under a new
/// transaction id, up to max_gave_way_retries times: the retry then waits
/// for the other copy's outcome (a duplicate once it commits, applied if
/// it aborts) instead of failing its client.
void commit_writes(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                   tx_id tx, std::uint64_t snapshot,
                   std::map<std::uint32_t, std::vector<tx_update>> writes,
                   std::function<void(expected<std::uint64_t>)> done);

/// How often commit_writes runs a two-phase commit again after errc::gave_way
/// (each attempt waits at most partition_options::older_wait_us, 200 ms, for
/// the transaction it gives way to) before its client gets `aborted`.
constexpr int max_gave_way_retries = 10;

} // namespace tally
