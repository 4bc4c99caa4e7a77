// How a node reaches the other nodes' cluster ports (docs/SECURITY.md,
// "Node links"): CAF's node protocol (BASP) over plain TCP, or inside
// mutually authenticated TLS when the node has a certificate, a key and the
// cluster's CA (tallyd --tls-cert, --tls-key, --tls-ca; CAF's OpenSSL
// module). With TLS, each side must present a certificate the cluster's CA
// signed before any BASP byte is read, so a process without one cannot
// join, gossip, or send or receive handoff data, and garbage sent to the
// cluster port ends in a failed TLS handshake instead of in BASP's decoder
// (issue 18: 32 bytes crashed a node there).
#pragma once

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>

#include "common/expected.hpp"

namespace tally {

struct node_link_security {
  std::string cert; // PEM certificate of this node (signed by `ca`)
  std::string key;  // its PEM private key
  std::string ca;   // PEM certificate(s) of the cluster's CA
  bool tls() const noexcept { return !cert.empty() || !key.empty() || !ca.empty(); }
};

/// Checks that all three files are given and readable, and sets up `cfg`
/// to load CAF's OpenSSL module with them (before the actor system is
/// made). Nothing to do without TLS. errc::bad_config naming what is
/// missing.
status configure_node_links(caf::actor_system_config& cfg, const node_link_security& s);

/// True when this actor system's node links use TLS.
bool node_links_use_tls(caf::actor_system& sys);

/// Publishes `whom` on the cluster port (TLS when configured). The port.
expected<std::uint16_t> publish_on_cluster_port(caf::actor_system& sys, const caf::actor& whom,
                                                std::uint16_t port, const std::string& bind);

/// The actor published on host:port's cluster port (TLS when configured).
expected<caf::actor> remote_cluster_actor(caf::actor_system& sys, const std::string& host,
                                          std::uint16_t port);

/// The middleman actor that opens node links (TLS when configured), for
/// asynchronous connect requests.
caf::io::middleman_actor node_link_opener(caf::actor_system& sys);

} // namespace tally
