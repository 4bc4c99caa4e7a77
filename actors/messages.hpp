// The messages between a node's actors (docs/NODE.md, "Actors"): plain
// structs. Those to a partition cross node boundaries as wire bytes
// (actors/wire.hpp); the direct calls from the client server carry a
// function and stay on the node (whitelisted as local-only CAF message
// types in actors/caf_types.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "actors/partition_core.hpp"
#include "clock/vector_clock.hpp"
#include "common/error.hpp"
#include "crdt/crdt_object.hpp"
#include "journal/record.hpp"
#include "protocol/messages.hpp"

namespace tally {

// ---- to a partition actor -------------------------------------------------

/// One object to read, with the reading transaction's own effects on it.
/// `want_state`: the object itself is wanted too (read before write: the
/// coordinator prepares an update against it, docs/DATATYPES.md).
struct read_item {
  object_key key;
  crdt_type type = crdt_type::counter;
  std::vector<crdt_effect> own;
  bool want_state = false;
};

/// Read `items` at `snapshot`; answered with part_read_resp once the
/// partition's safe time reaches the snapshot.
struct part_read_req {
  vector_clock snapshot;
  std::vector<read_item> items;
};
struct part_read_resp {
  std::optional<error> err;
  std::vector<crdt_value> values; // one per item, in order
  /// One per item: crdt_object::encode() of the object read for an item
  /// with want_state, empty for the others.
  std::vector<std::string> states = {};
};

/// Phase one (`two_phase`), or a one-step commit of a transaction that
/// touches only this partition. Answered with part_time_resp once durable:
/// the prepare time, or for a one-step commit the commit time.
struct part_prepare_req {
  tx_id tx;
  std::vector<tx_update> updates;
  std::uint64_t snapshot_time = 0;
  bool two_phase = false;
};
struct part_time_resp {
  std::optional<error> err;
  std::uint64_t time = 0;
  std::uint64_t dismissed = 0; // duplicate op ids acknowledged, not applied
};

/// Phase two: commit at `commit_time`; part_ack once the record is durable.
struct part_commit_req {
  tx_id tx;
  std::uint64_t commit_time = 0;
};
/// Abort a prepared transaction; part_ack at once.
struct part_abort_req {
  tx_id tx;
};
struct part_ack {
  std::optional<error> err;
};

/// Recovery (docs/CLUSTER.md): does this partition's journal hold the commit
/// of `tx`? `commit_time` 0: not in the journal; `folded_through` is the
/// partition's checkpoint time: a commit at or below it may have been
/// folded and truncated, so "not found" proves nothing for a transaction
/// prepared at or below it.
struct part_find_resp {
  std::optional<error> err;
  std::uint64_t commit_time = 0;
  std::uint64_t folded_through = 0;
};

/// The prepared transactions of a partition older than a bound (p_stale).
struct part_stale_resp {
  std::optional<error> err;
  std::vector<tx_id> txs;
  std::vector<std::uint64_t> prepare_times; // one per tx
};

// ---- the client server's direct calls ------------------------------------

/// A read, prepare or commit sent to a local partition with anon_send
/// instead of request() (actors/partition_calls.hpp): the partition calls
/// `reply` (on its thread) with what it would have answered. No promise,
/// no timer, no encoding.
struct part_read_call {
  part_read_req req;
  std::function<void(part_read_resp)> reply;
};
struct part_prepare_call {
  part_prepare_req req;
  std::function<void(part_time_resp)> reply;
};
struct part_commit_call {
  part_commit_req req;
  std::function<void(part_ack)> reply;
};

} // namespace tally
