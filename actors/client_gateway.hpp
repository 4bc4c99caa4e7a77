// The client gateway: how the client server (server/) reaches the node's
// actors (docs/NODE.md, "Actors"; docs/PERFORMANCE.md, "The request path").
// It implements server/request_handler.hpp and runs on the server's I/O
// threads; a request leaves it with at most one anon_send, so the thread
// that read it hops once to the actor that answers, and the answer comes
// back through the server's inbox:
//   - a static read or update whose keys all live on one partition goes
//     straight to that partition actor (part_read_call, part_prepare_call:
//     a one-step commit; actors/partition_calls.hpp), with no coordinator;
//   - a static request over several partitions gets a static coordinator;
//   - interactive transactions run in actors/open_transactions.hpp: start
//     and update are answered on the server thread itself, reads and
//     one-partition commits go straight to the partitions;
//   - admin requests (status, leave, remove) to the membership actor.
#pragma once

#include <memory>

#include <caf/actor.hpp>

#include "server/request_handler.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

struct client_gateway_parts {
  std::shared_ptr<request_handler> handler;
  /// The actor that aborts idle interactive transactions (about every
  /// 250 ms); the node stops it with the others.
  caf::actor sweeper;
};

/// The request handler of a node whose actors are in `sys` and `ctx`.
client_gateway_parts make_client_gateway(caf::actor_system& sys,
                                         std::shared_ptr<const node_context> ctx);

} // namespace tally
