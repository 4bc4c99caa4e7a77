// One TCP connection to a Tally (or AntidoteDB) node, speaking the framed
// client protocol (docs/PROTOCOL.md, "Framing") over a plain POSIX socket.
// No CAF, no threads: the client library and tally-bench link it.
//
//   auto conn = connection::open("127.0.0.1", 8087, 1000ms);
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
//   (frame_decoder's errors).
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

#include "common/expected.hpp"
#include "protocol/frame.hpp"

namespace tally {

/// The clock every deadline is measured on.
using client_clock = std::chrono::steady_clock;

class connection {
public:
  /// Resolves `host` and connects to the first address that accepts, giving
  /// up after `timeout`. errc::unavailable (refused, unreachable, unknown
  /// host) or errc::timeout; both messages name host:port and ask whether
  /// tallyd is running.
  static expected<connection> open(const std::string& host,
                                    std::uint16_t port,
                                    std::chrono::milliseconds timeout);
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

private:
  connection(int fd, std::string peer);

  /// Reads what the socket holds into decoder_ (at most one read). An error
  /// when the peer closed or the stream is not framed.
  status read_available();

  /// Closes and returns `err` (with the peer named in the message).
  error fail(errc code, const std::string& what);

  int fd_ = -1;
  std::string peer_;
  frame_decoder decoder_;
};

} // namespace tally
