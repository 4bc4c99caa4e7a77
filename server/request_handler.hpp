// The seam between the client-facing server (server/) and the node that
// answers its requests (actors/client_gateway.hpp over the node's actors).
// No CAF here: the server is plain C++ with its own threads.
#pragma once

#include <cstdint>
#include <functional>

#include "protocol/messages.hpp"

namespace tally {

/// Delivers the response to one request. Called exactly once, from any
/// thread (a partition's, a coordinator's, or the server's own).
using reply_fn = std::function<void(response)>;

/// A client connection, as the node sees it: unique among the node's
/// connections for the server's lifetime.
using session_id = std::uint64_t;

/// What a node does with a client's decoded request.
class request_handler {
public:
  virtual ~request_handler() = default;
  /// Called on a server thread for every decoded request of connection
  /// `session`, in the order the connection sent them. Must not block: it
  /// hands the work on and returns; `reply` answers later (or at once).
  /// Replies may come in any order; the server writes them back in request
  /// order.
  virtual void handle(session_id session, request req, reply_fn reply) = 0;
  /// Called on a server thread once connection `session` is closed (what
  /// it left open, such as interactive transactions, can go).
  virtual void closed(session_id session) = 0;
  /// True while closing connection `session` would destroy something its
  /// client still holds (open interactive transactions): the server then
  /// never closes it to admit another at the connection limit. Called on a
  /// server thread, only when the node is at that limit.
  virtual bool holds_state(session_id /*session*/) { return false; }
};

} // namespace tally
