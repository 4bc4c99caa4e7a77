// The client gateway: how the client server (server/) reaches the node's
// actors (docs/NODE.md, "Actors"; docs/PERFORMANCE.md, "The request path").
// It implements server/request_handler.hpp and runs on the server's I/O
// threads; every request leaves it with one anon_send, so the thread that
// read it hops once to the actor that answers and the answer comes back
// through the server's inbox:
//   - a static read or update whose keys all live on one partition served
//     by this node goes straight to that partition actor (part_read_call,
//     part_prepare_call: a one-step commit), with no coordinator;
//   - any other static request gets a static coordinator;
//   - StartTransaction and the requests of an interactive transaction go to
//     the transaction manager;
//   - admin requests (status, leave) to the membership actor.
#pragma once

#include <memory>

#include "server/request_handler.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

/// The request handler of a node whose actors are in `sys` and `ctx`.
std::shared_ptr<request_handler>
make_client_gateway(caf::actor_system& sys, std::shared_ptr<const node_context> ctx);

} // namespace tally
