// The client-facing server (DESIGN.md, "The request path"; docs/PERFORMANCE.md
// "The request path"): AntidoteDB's protocol on TCP, served by a few I/O
// threads ("shards") with their own epoll loops instead of CAF brokers.
//
// Each shard owns the connections it was given (the first shard accepts and
// deals connections out in turn) and, per wake-up:
//   - reads every ready socket and parses every complete frame in it;
//   - hands each decoded request to the request_handler (no thread hop of
//     its own: the handler sends it straight to the partition or
//     coordinator that answers it);
//   - takes every reply that arrived since the last wake-up from its inbox
//     in one batch (one eventfd wake-up however many replies), and
//   - writes each connection's ready replies with one send(), in request
//     order.
// Limits and back-pressure: a connection with `max_in_flight` requests
// unanswered, or with more than `max_pending_output` reply bytes its peer
// has not read, is not read from until that drains (the kernel's socket
// buffer then pushes back on the client). At `max_connections`, a new
// connection takes the place of the connection idle longest on the shard it
// goes to, if that one has been idle for `evict_idle_after` and holds no
// open transaction; otherwise the new one is closed at accept. Requests
// being received or served share one memory budget across connections
// (server/request_memory_budget.hpp); idle connections and senders that
// stall inside a request are closed (checked about once a second).
// A client that half-closes (shutdown(SHUT_WR)) still gets every reply.
// Sessions: every connection keeps a session_floor, so a client that sends
// no clock still reads its own writes, monotonically.
// TLS (docs/SECURITY.md, "The client port"): with a TLS port, a second
// listener takes connections whose bytes go through a tls_stream
// (tls/tls_stream.hpp) in the same epoll loop: the handshake is driven by
// the socket's readiness (WANT_READ/WANT_WRITE decide what epoll watches),
// counts as a request being read (so --request-read-timeout-ms bounds it),
// and a connection whose handshake fails (garbage, a plain client, a
// certificate refused) is closed with a logged reason; the others go on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/expected.hpp"
#include "protocol/frame.hpp"
#include "protocol/request_limits.hpp"
#include "server/connection.hpp"
#include "server/request_handler.hpp"
#include "tls/tls_context.hpp"

namespace tally {

struct server_options {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 8087; // 0: a free port
  /// The plain port is served (--no-plain-port: TLS only).
  bool plain = true;
  /// A TLS port on `bind` (0: a free one); none when absent. Needs
  /// tls.cert and tls.key; tls.client_ca requires client certificates.
  std::optional<std::uint16_t> tls_port;
  tls_server_files tls;
  /// Shard threads (tallyd --io-threads; node_config::io_threads decides
  /// the node's default).
  std::size_t threads = 2;
  std::uint32_t max_frame_size = default_max_request_frame_size;
  std::size_t max_connections = 1024;
  /// Requests of one connection answered at most this late before the
  /// server stops reading it (pipelining depth).
  std::size_t max_in_flight = 1024;
  /// Reply bytes a peer has not read before the server stops reading it.
  std::size_t max_pending_output = 4u << 20;
  /// Requests one shard has handed on and not answered (all its
  /// connections together) before it stops reading its sockets: bounds
  /// what waits in its partitions' mailboxes (0: no bound).
  std::size_t max_shard_in_flight = 65536;
  /// The bounds every request is checked against when decoded.
  request_limits requests;
  /// Bytes of requests being received or served across all connections
  /// (one budget, server/request_memory_budget.hpp): a connection whose
  /// next frame would go over it gets an error and is closed. 0: no budget.
  std::size_t max_request_memory = default_max_request_memory;
  /// A connection with nothing in flight and nothing received for this
  /// long is closed (0: never).
  std::chrono::milliseconds idle_timeout{300000};
  /// A connection in the middle of a request for this long (a stalled or
  /// slowloris sender) is closed (0: never).
  std::chrono::milliseconds request_read_timeout{10000};
  /// At the connection limit, a connection idle (nothing in flight, nothing
  /// received, no open transaction) at least this long is closed to admit a
  /// new one (0: never; the new one is refused instead).
  std::chrono::milliseconds evict_idle_after{2000};
  /// A Unix socket path for admin connections (the same protocol; their
  /// session ids carry admin_session_bit), created with mode 0600 so that
  /// file permissions decide who may administer the node. Empty: none.
  std::string admin_socket;
};

class shard;
class shard_inbox;

class client_server {
public:
  /// Starts the shard threads, serving nothing yet: work may be placed on
  /// them (tasks()) before the node serves clients, as the partition
  /// actors are (actors/shard_host.hpp). Errors: errc::bad_config for a
  /// server with no port, errc::io_error for epoll/eventfd failures.
  static expected<std::unique_ptr<client_server>> create(server_options opts);
  /// Listens on bind:port (and bind:tls_port, and the admin socket) and
  /// hands every request to `handler`. Errors: errc::unavailable naming the
  /// address (port in use, address not local), errc::bad_config for TLS
  /// files that cannot be used; nothing is served then.
  status serve(std::shared_ptr<request_handler> handler);
  /// create() then serve().
  static expected<std::unique_ptr<client_server>>
  start(server_options opts, std::shared_ptr<request_handler> handler);
  ~client_server();

  client_server(const client_server&) = delete;
  client_server& operator=(const client_server&) = delete;

  /// The plain port (0 when not served) and the TLS port (0: none).
  std::uint16_t port() const noexcept { return port_; }
  std::uint16_t tls_port() const noexcept { return tls_port_; }

  /// The number of shard threads, and the work queue of shard `i`
  /// (i < shards()): a task posted there runs on that shard's thread.
  std::size_t shards() const noexcept;
  std::shared_ptr<shard_inbox> tasks(std::size_t i) const;

  /// Stops accepting and closes every connection (requests still being
  /// served are answered into the void); the shard threads go on running
  /// posted tasks until stop(). Idempotent. Not from a shard's thread.
  void stop_serving();
  /// stop_serving(), then ends and joins the shard threads: tasks posted
  /// later are dropped. Idempotent. Not from a shard's thread.
  void stop();

private:
  client_server() = default;

  std::vector<std::shared_ptr<shard>> shards_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  int listen_fd_ = -1;
  int tls_fd_ = -1;
  int admin_fd_ = -1;
  std::string admin_path_;
  server_options opts_;
  bool serving_ = false;
  bool serving_stopped_ = false;
  bool stopped_ = false;
};

} // namespace tally
