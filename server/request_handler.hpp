// The seam between the client-facing server (server/) and the node that
// answers its requests (actors/client_gateway.hpp over the node's actors).
// No CAF here: the server is plain C++ with its own threads.
#pragma once

#include <functional>

#include "protocol/messages.hpp"

namespace tally {

/// Delivers the response to one request. Called exactly once, from any
/// thread (a partition's, a coordinator's, or the server's own).
using reply_fn = std::function<void(response)>;

/// What a node does with a client's decoded request.
class request_handler {
public:
  virtual ~request_handler() = default;
  /// Called on a server thread for every decoded request, in the order the
  /// connection sent them. Must not block: it hands the work on and
  /// returns; `reply` answers later (or at once). Replies may come in any
  /// order; the server writes them back in request order.
  virtual void handle(request req, reply_fn reply) = 0;
};

} // namespace tally
