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
  /// Two-phase: every partition of the commit and the coordinator's node
  /// id, written in the prepare record (wire version 3).
  std::vector<std::uint32_t> participants = {};
  std::string coordinator = {};
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
  /// Decided by the recovery of undecided transactions from another
  /// participant's commit record: taken by a fenced partition too
  /// (partition_core::stage_commit; wire version 4).
  bool from_recovery = false;
};
/// Abort a prepared transaction; part_ack at once.
struct part_abort_req {
  tx_id tx;
};
struct part_ack {
  std::optional<error> err;
};

/// Recovery (docs/CLUSTER.md): how did `tx` end at this partition (its
/// decision index, journal::find_decision)? `commit_time` 0 and `aborted`
/// false: no decision here. `folded_through`: decisions at or below it may
/// have been dropped (the index's horizon - 1), so "no decision" proves
/// nothing for a transaction prepared at or below it.
struct part_find_resp {
  std::optional<error> err;
  std::uint64_t commit_time = 0;
  std::uint64_t folded_through = 0;
  bool aborted = false; // an abort record here (wire version 3)
  /// The answer to a fence (p_fence, wire version 4): no decision here, and
  /// a fence record on w copies (docs/RELIABILITY.md, "The participant
  /// fence").
  bool fenced = false;
};

/// The prepared transactions of a partition older than a bound (p_stale),
/// each with the participants and coordinator its prepare record names
/// (empty: unknown).
struct part_stale_resp {
  std::optional<error> err;
  std::vector<tx_id> txs;
  std::vector<std::uint64_t> prepare_times; // one per tx
  std::vector<std::vector<std::uint32_t>> participants = {}; // one per tx
  std::vector<std::string> coordinators = {};                // one per tx
};

// ---- between membership actors ---------------------------------------------

/// To the membership of the node that coordinates `tx` (m_txdec): how did
/// (or will) its two-phase commit end? With `force`, a commit still
/// collecting its prepares is aborted now (its coordinator has not decided,
/// so it may: cooperative termination of two-phase commit), so the answer
/// is final unless the coordinator does not know `tx` any more.
struct tx_decide_req {
  tx_id tx;
  bool force = false;
};
struct tx_decide_resp {
  /// 0: still collecting prepares (only without force); 1: committed at
  /// commit_time; 2: aborted; 3: unknown to this run (finished too long
  /// ago, or never coordinated here): only the journals can tell.
  std::uint8_t state = 3;
  std::uint64_t commit_time = 0;
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
