// One TCP connection to a Tally (or AntidoteDB) node, speaking the framed
// client protocol (docs/PROTOCOL.md, "Framing") over a plain POSIX socket,
// or inside TLS to a node's TLS port (tallyd --client-tls-port; docs/
// SECURITY.md, "The client port"). No CAF, no threads: the client library
// and tally-bench link it.
//
//   auto conn = connection::open("127.0.0.1", 8087, 1000ms);
//   auto tls = connection::open("db.example.org", 8443, 1000ms, &ctx);
//   conn->send(encode_request(req), deadline);    // many may be outstanding
//   auto f = conn->receive(deadline);             // replies in FIFO order
//
// Pipelining: any number of frames may be sent before their replies are
// read; the server answers in request order, so the i-th receive() is the
// reply to the i-th send(). send() keeps reading replies into a buffer while
// it writes, so a long pipeline cannot deadlock on full socket buffers.
//
// Errors (all values, never exceptions):
// - errc::unavailable: the node refused or dropped the connection, with a
//   message such as "cannot connect to 127.0.0.1:8087: connection refused —
//   is tallyd running?";
// - errc::timeout: connect, send or receive did not finish by its deadline;
// - errc::corrupt / errc::invalid_argument: the reply stream is not framed
//   (frame_decoder's errors);
// - errc::bad_config: the TLS session was refused, by this side (the
//   node's certificate is not signed by the CA, or does not name the host)
//   or by the node (it wants a client certificate it trusts), or the port
//   does not speak TLS; the message says which. Not worth a retry.
// After any I/O or framing error the connection is closed (is_open() is
// false; an oversized frame refused by send() is no such error): its stream
// position is unknown, so replies could no longer be matched to requests.
//
// Not thread-safe: one connection per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <optional>

#include "common/expected.hpp"
#include "protocol/frame.hpp"
#include "tls/tls_stream.hpp"

namespace tally {

/// The clock every deadline is measured on.
using client_clock = std::chrono::steady_clock;

class connection {
public:
  /// Resolves `host` and connects to the first address that accepts, giving
  /// up after `timeout`. errc::unavailable (refused, unreachable, unknown
  /// host) or errc::timeout; both messages name host:port and ask whether
  /// tallyd is running. With `tls` (a client context), the TLS handshake
  /// is done within the same `timeout`; its failures are errc::bad_config
  /// (see above) or, when the node closed or did not answer,
  /// errc::unavailable or errc::timeout.
  static expected<connection> open(const std::string& host,
                                    std::uint16_t port,
                                    std::chrono::milliseconds timeout,
                                    const tls_context* tls = nullptr);
  /// Connects to a node's admin socket (a Unix socket path; tallyd
  /// --admin-socket). errc::unavailable naming the path.
  static expected<connection> open_unix(const std::string& path);

  connection(connection&& other) noexcept;
  connection& operator=(connection&& other) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  /// Writes all of `f` (encode_frame(), so frames above the peer's
  /// default_max_frame_size are refused with errc::invalid_argument before
  /// anything is written). Reply bytes that arrive meanwhile are buffered
  /// for receive().
  status send(const frame& f, client_clock::time_point deadline);

  /// Writes bytes that are already a frame (or several).
  status send_bytes(const std::string& bytes,
                    client_clock::time_point deadline);

  /// The next reply frame, in the order the requests were sent.
  expected<frame> receive(client_clock::time_point deadline);

  /// Closes the socket; buffered replies are dropped.
  void close() noexcept;

  bool is_open() const noexcept { return fd_ >= 0; }

  /// "host:port", for messages.
  const std::string& peer() const noexcept { return peer_; }

  /// The TLS protocol and cipher ("TLSv1.3 TLS_AES_256_GCM_SHA384"); empty
  /// on a plain connection.
  std::string tls_description() const;

private:
  connection(int fd, std::string peer);

  /// The TLS handshake on a connected socket, by `deadline`.
  status start_tls(const tls_context& ctx, const std::string& host,
                   client_clock::time_point deadline);
  /// send_bytes and read_available inside TLS.
  status send_tls(const std::string& bytes, client_clock::time_point deadline);
  status read_tls();
  /// Closes and returns the error for a failed TLS call, with a hint.
  error tls_failure(const char* during);

  /// Reads what the socket holds into decoder_ (at most one read). An error
  /// when the peer closed or the stream is not framed.
  status read_available();

  /// Closes and returns `err` (with the peer named in the message).
  error fail(errc code, const std::string& what);

  int fd_ = -1;
  std::string peer_;
  frame_decoder decoder_;
  std::optional<tls_stream> tls_;
  bool tls_read_wants_write_ = false; // the last TLS read waits to write
};

} // namespace tally
