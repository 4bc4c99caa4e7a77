// Node-to-node encoding of the partition messages (actors/messages.hpp;
// docs/CLUSTER.md, "Messages between nodes").
//
// Every message to a partition actor travels as (atom, bytes) and every
// reply as bytes, whether the partition is local or on another node: the
// coordinator code is the same for both (location transparency, DESIGN.md
// "Cluster and ring"). The bytes are one version byte (wire_version) and a
// Cereal portable-binary archive of the struct. Measured by CAF-NOTES.md at
// about 0.3 us per hop more than CAF's own serializer; over the network both
// run at the same speed.
//
// Plain C++: no CAF here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/messages.hpp"
#include "common/expected.hpp"

namespace tally {

/// The version byte of every node-to-node message. A node refuses to join a
/// cluster whose members speak another version (docs/CLUSTER.md).
/// 2: read items ask for the object's state, read replies carry it, and
/// effects and values of every CRDT type travel (actors/wire.cpp).
/// 3 (stop 13): replication batches and full copies carry the primary's
/// term, and a take-over round asks each copy to promise its term (r_fence,
/// replication/copy_fence.hpp); a prepare names its participants and
/// coordinator, find answers say "aborted", stale answers carry the
/// participants, and a coordinator is asked to decide (tx_decide_req/resp).
/// 4 (stop 30): find answers say "fenced", commits "from recovery".
/// 5 (stop 31): a replication batch (r_append) carries its number and is
/// answered by a message of its own (r_acked), not a request's reply.
constexpr std::uint8_t wire_version = 5;

/// Bytes of `msg`. Defined for part_read_req, part_read_resp,
/// part_prepare_req, part_time_resp, part_commit_req, part_abort_req,
/// part_ack, part_find_resp, part_stale_resp, tx_decide_req, tx_decide_resp,
/// tx_id, std::uint64_t.
template <class T>
std::string encode_wire(const T& msg);

/// The message `bytes` hold. errc::corrupt for another version, truncated
/// or trailing bytes, or a field outside its domain. Never throws.
template <class T>
expected<T> decode_wire(std::string_view bytes);

} // namespace tally
