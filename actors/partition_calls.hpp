// Calls from the client server's threads to a partition, local or remote
// (docs/PERFORMANCE.md, "The request path"): a local partition actor gets a
// part_*_call by anon_send and answers through its function (one thread
// hop, no promise, no timer); a partition on another node is asked through
// the shard's remote caller (actors/remote_callers.hpp), which fails the call
// once the request timeout has passed without an answer, since a remote
// node can die without answering (CAF-NOTES.md, "Multi-node"), and at once
// when the membership reports that node's link lost (actors/remote_calls.hpp).
// Either way `done` is called exactly once, on some actor's thread.
#pragma once

#include <cstdint>
#include <functional>

#include "actors/messages.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

/// Reads at partition `p`. Errors come back in part_read_resp::err
/// (errc::unavailable when no node serves `p`, errc::timeout when a remote
/// one does not answer in time).
void call_read(caf::actor_system& sys, const node_context& ctx, std::uint32_t p,
               part_read_req req, std::function<void(part_read_resp)> done);

/// A prepare (or a one-step commit when !req.two_phase) at partition `p`.
void call_prepare(caf::actor_system& sys, const node_context& ctx,
                  std::uint32_t p, part_prepare_req req,
                  std::function<void(part_time_resp)> done);

/// Phase two at partition `p`: answered once the commit record is durable.
void call_commit(caf::actor_system& sys, const node_context& ctx,
                 std::uint32_t p, part_commit_req req,
                 std::function<void(part_ack)> done);

/// Aborts a transaction prepared at partition `p`; nobody waits for it (a
/// lost abort leaves a prepare that recovery resolves, docs/CLUSTER.md).
void send_abort(const node_context& ctx, std::uint32_t p, const tx_id& tx);

} // namespace tally
