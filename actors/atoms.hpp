// The CAF atoms of a node's actors (docs/NODE.md and docs/CLUSTER.md list
// each actor's protocol). Internal to actors/ (it pulls in CAF).
#pragma once

#include <caf/atom.hpp>

namespace tally {

// To a partition actor: (atom, encode_wire(part_*_req)) -> bytes of the reply.
using part_read_atom = caf::atom_constant<caf::atom("p_read")>;
using part_prepare_atom = caf::atom_constant<caf::atom("p_prepare")>;
using part_commit_atom = caf::atom_constant<caf::atom("p_commit")>;
using part_abort_atom = caf::atom_constant<caf::atom("p_abort")>;
// (p_fwd, kind, bytes): a request (kind one of the four above) that reached
// a replica of the partition, passed on to the primary it follows; served
// there when that copy leads, held when it is taking over, refused
// otherwise (not passed on again). Answered to the replica, which answers
// its sender.
using part_fwd_atom = caf::atom_constant<caf::atom("p_fwd")>;
// (p_find, encode_wire(tx_id)) -> part_find_resp bytes: the commit time of
// the transaction in this partition's journal, 0 for none.
using part_find_atom = caf::atom_constant<caf::atom("p_find")>;
// (p_fence, encode_wire(tx_id)) -> part_find_resp bytes: the participant
// fence (partition_core::stage_fence): the decision here, or `fenced` once
// a fence record is durable and on w copies.
using part_fence_atom = caf::atom_constant<caf::atom("p_fence")>;
// (p_stale, encode_wire(uint64 before)) -> part_stale_resp bytes: prepared
// transactions with prepare time below `before`.
using part_stale_atom = caf::atom_constant<caf::atom("p_stale")>;
// A call from another node's shard (actors/remote_callers.hpp):
// (p_call, call id, p_read | p_prepare | p_commit, request bytes), answered
// with a message (p_reply, call id, answer bytes) to the sender.
using p_call_atom = caf::atom_constant<caf::atom("p_call")>;
using p_reply_atom = caf::atom_constant<caf::atom("p_reply")>;

// Membership (actors/membership.hpp).
using join_atom = caf::atom_constant<caf::atom("m_join")>;
using gossip_atom = caf::atom_constant<caf::atom("m_gossip")>;
// (m_gask) one way: the sender has heard no gossip from this node for a
// while; it is answered with this node's gossip (actors/membership.cpp,
// `ask_silent_peers`).
using gossip_ask_atom = caf::atom_constant<caf::atom("m_gask")>;
using tick_atom = caf::atom_constant<caf::atom("m_tick")>;
using status_atom = caf::atom_constant<caf::atom("m_status")>;
using leave_atom = caf::atom_constant<caf::atom("m_leave")>;
// (m_remove, node id, force) -> (ok, text): removes a member that is down
// for good (`tally cluster remove`, docs/CLUSTER.md "Removing a dead node").
using remove_atom = caf::atom_constant<caf::atom("m_remove")>;
using connected_atom = caf::atom_constant<caf::atom("m_conn")>;
// (m_txdec, encode_wire(tx_decide_req)) -> tx_decide_resp bytes: how did (or
// will) this node's two-phase commit of the transaction end?
using tx_decide_atom = caf::atom_constant<caf::atom("m_txdec")>;
// The membership's own fast timer while links change (resolution).
using resolve_tick_atom = caf::atom_constant<caf::atom("m_rtick")>;

// Handoff (actors/handoff.hpp).
using drain_atom = caf::atom_constant<caf::atom("h_drain")>;
using drained_atom = caf::atom_constant<caf::atom("h_drained")>;
using forward_atom = caf::atom_constant<caf::atom("h_forward")>;
using reopen_atom = caf::atom_constant<caf::atom("h_reopen")>;
using hoff_begin_atom = caf::atom_constant<caf::atom("h_begin")>;
using hoff_chunk_atom = caf::atom_constant<caf::atom("h_chunk")>;
using hoff_end_atom = caf::atom_constant<caf::atom("h_end")>;
using hoff_query_atom = caf::atom_constant<caf::atom("h_query")>;

} // namespace tally

namespace tally {

// Replication between the copies of one partition
// (actors/partition_replication.hpp, docs/REPLICATION.md).
using r_append_atom = caf::atom_constant<caf::atom("r_append")>;
// A copy's answer to a batch: sent back as a message of its own, not as the
// reply to a request, so that the primary arms no timer per batch
// (partition_replication::tick gives up on a batch unanswered for
// link_timeout).
using r_acked_atom = caf::atom_constant<caf::atom("r_acked")>;
// The primary to a copy that took a batch without syncing it (not one of
// the w - 1 that sync at once): sync now (a write waits on it).
using r_sync_atom = caf::atom_constant<caf::atom("r_sync")>;
using r_fetch_atom = caf::atom_constant<caf::atom("r_fetch")>;
using r_end_atom = caf::atom_constant<caf::atom("r_end")>;
using r_config_atom = caf::atom_constant<caf::atom("r_config")>;
using r_stale_atom = caf::atom_constant<caf::atom("r_stale")>;
// (r_others, removed nodes, nodes, handles): sent with every r_config: the
// members removed from the cluster (`tally cluster remove`), whose copies a
// joint round counts as gone, and the nodes that are up with their copy of
// the partition (owner store or replica copy; null: none), which a joint
// round asks, or counts as gone (partition_replication::previous_set).
using r_others_atom = caf::atom_constant<caf::atom("r_others")>;
// (r_node, node id): sent before every r_others: the node this copy is on.
// A replica learns its own node id from it (a primary's is its r_config's
// primary): a copy that follows saves the set it is in under it
// (docs/REPLICATION.md, "Handoffs whose fence gave up").
using r_node_atom = caf::atom_constant<caf::atom("r_node")>;
using r_seed_atom = caf::atom_constant<caf::atom("r_seed")>;
// A take-over round's question: promise this term, and say your journal end.
using r_fence_atom = caf::atom_constant<caf::atom("r_fence")>;
// What a copy says of itself and its copies (actors/replication_status.hpp).
using r_status_atom = caf::atom_constant<caf::atom("r_status")>;
// A primary's own reminder to send again to copies that refused a batch.
using r_pump_atom = caf::atom_constant<caf::atom("r_pump")>;
// A primary renews its read lease (actors/partition_replication.hpp).
using r_lease_atom = caf::atom_constant<caf::atom("r_lease")>;
// Retiring a copy its node no longer needs (actors/copy_retirement.hpp):
// the copy's last record, and whether the primary holds that record.
using r_tail_atom = caf::atom_constant<caf::atom("r_tail")>;
using r_holds_atom = caf::atom_constant<caf::atom("r_holds")>;

} // namespace tally
