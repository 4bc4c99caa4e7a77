// How a node reaches the other nodes' cluster ports (docs/SECURITY.md,
// "Node links"): CAF's node protocol (BASP) inside mutually authenticated
// TLS (CAF's OpenSSL module), with certificates made from the cluster's
// shared secret (--cluster-secret-file, or DATA-DIR/cluster/secret made at
// the first start; actors/link_credentials.hpp) or given by the operator
// (--tls-cert, --tls-key, --tls-ca). Each side must present a certificate
// the cluster's CA signed before any BASP byte is read, so a process
// without the secret cannot join, gossip, or send or receive handoff data,
// and garbage sent to the cluster port ends in a failed TLS handshake
// (logged, actors/link_refusals.hpp) instead of in BASP's decoder (issue
// 18: 32 bytes crashed a node there). Plain BASP only with
// --insecure-cluster-links.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>

#include "common/expected.hpp"

namespace tally {

/// How node links authenticate (node_link_security::mode).
enum class link_auth {
  secret,       // certificates made from the cluster secret (the default)
  certificates, // the operator's --tls-cert, --tls-key, --tls-ca
  none,         // plain BASP (--insecure-cluster-links)
};

struct node_link_security {
  std::string cert; // --tls-cert: PEM certificate of this node (signed by `ca`)
  std::string key;  // --tls-key: its PEM private key
  std::string ca;   // --tls-ca: PEM certificate(s) of the cluster's CA
  std::string secret_file; // --cluster-secret-file
  bool insecure = false;   // --insecure-cluster-links
  /// --refused-link-log-ms: one log line per refused peer address and
  /// this window (actors/link_refusals.hpp).
  std::chrono::milliseconds refusal_log_window{10000};
  /// Set by configure_node_links.
  link_auth mode = link_auth::secret;
  std::string secret;      // the cluster secret's bytes (mode secret)
  std::string secret_path; // where it came from (mode secret)
  bool certificates() const noexcept { return !cert.empty() || !key.empty() || !ca.empty(); }
};

/// Where a data dir keeps its own cluster secret when tallyd makes one
/// (DATA-DIR/cluster/secret).
std::string default_secret_path(const std::string& data_dir);

/// Picks how node links authenticate, reads and checks the secret or the
/// certificate files, and sets up `cfg` (before the actor system is made)
/// to load CAF's OpenSSL module; fills s.mode, s.secret, s.secret_path.
/// - --insecure-cluster-links: plain links, nothing else may be given;
/// - --tls-cert, --tls-key, --tls-ca: all three, readable;
/// - --cluster-secret-file: mode 0600 or stricter, >= 32 bytes;
/// - none of them: DATA-DIR/cluster/secret, made (random, mode 0600) at the
///   first start of a node that does not join; a joining node, or a used
///   data dir without it, must be given --cluster-secret-file.
/// In secret mode the credentials are written by write_node_link_files.
/// errc::bad_config naming the flag and what to do (tallyd exits 2), or
/// errc::io_error when the secret cannot be made.
status configure_node_links(caf::actor_system_config& cfg, node_link_security& s,
                            const std::string& data_dir, bool joining);

/// In secret mode, writes this start's node certificate and key and the
/// cluster CA under DATA-DIR/cluster/tls (the paths configure_node_links
/// gave CAF, which reads them at each new link). Call with the data dir
/// locked (node::start), before the cluster port opens. Nothing to do in
/// the other modes.
status write_node_link_files(const node_link_security& s, const std::string& data_dir);

/// One sentence for the log at start: how this node's links are secured.
std::string describe_node_links(const node_link_security& s);

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
