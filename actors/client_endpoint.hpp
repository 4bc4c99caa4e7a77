// The client endpoint (DESIGN.md, "Client protocol"; docs/NODE.md): a CAF
// broker accepting AntidoteDB protocol connections, and one broker per
// connection.
//
// Per connection: a frame_decoder; each decoded request goes to a static
// coordinator (122, 123) or to the transaction manager (116, 118-121) as a
// client_request; replies are written in request order even when requests
// are pipelined (a slot per request, written when all earlier ones are).
// Bad input: an undecodable body or a bad argument -> ErrorResp; an unknown
// code -> the connection is closed (like AntidoteDB) after the replies to
// the earlier requests; an oversized or zero-length frame -> ErrorResp, then
// close (the stream has no boundary left to trust).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor.hpp>

#include "common/expected.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace tally {

struct node_context;

/// Listens on `bind`:`port` (0 picks a free port) and spawns the acceptor.
/// Returns the acceptor and the port it listens on. Errors:
/// errc::unavailable naming the address when it cannot listen (port in use,
/// bad address).
expected<std::pair<caf::actor, std::uint16_t>>
start_client_endpoint(caf::actor_system& sys,
                      std::shared_ptr<const node_context> ctx,
                      const std::string& bind, std::uint16_t port);

} // namespace tally
