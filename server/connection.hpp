// One client connection's protocol state, without its socket (the shard in
// client_server.cpp does the I/O): the frame decoder, the reply slots that
// keep replies in request order, the bytes waiting to be written, the
// session floor, and when to stop reading (back-pressure) or close.
// Plain C++ and single-threaded: tests drive it byte by byte.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "server/session_floor.hpp"

namespace tally {

struct connection_limits {
  std::uint32_t max_frame_size = default_max_frame_size;
  std::size_t max_in_flight = 1024;
  std::size_t max_pending_output = 4u << 20;
};

class client_connection {
public:
  explicit client_connection(connection_limits limits);

  /// Bytes read from the socket. A framing error (a zero or oversized
  /// length) is answered with an ErrorResp after the replies to the frames
  /// before it, then the connection closes.
  void feed(std::string_view bytes);
  /// The peer closed its sending side: every request already received is
  /// still answered, then the connection closes.
  void peer_closed();

  /// A request to hand on: `slot` names its reply.
  struct dispatch {
    std::uint64_t slot = 0;
    request req;
  };
  /// The next request to hand on, while in_flight() is below the limit.
  /// Bad bodies are answered here (an ErrorResp in their slot) and
  /// skipped; an unknown code stops the connection (after the replies to
  /// the requests before it), like AntidoteDB.
  std::optional<dispatch> next();

  /// The reply to `slot` (encoded frame bytes) and the commit time or
  /// snapshot it reports (session_floor::clock_of; empty when none).
  void complete(std::uint64_t slot, std::string bytes,
                const vector_clock& seen = {});

  /// Bytes ready to write, in request order, and how many were written.
  std::string_view output() const noexcept {
    return std::string_view{out_}.substr(out_pos_);
  }
  void written(std::size_t n);

  /// Whether the shard should read the socket: not while too many requests
  /// wait or too many reply bytes are unread, nor after the end.
  bool wants_read() const noexcept;
  /// True when the connection is finished: no more requests will come and
  /// every reply has been written.
  bool done() const noexcept;
  std::size_t in_flight() const noexcept { return slots_.size() - filled_; }
  const session_floor& floor() const noexcept { return floor_; }

private:
  void fill(std::uint64_t slot, std::string bytes);
  std::uint64_t open_slot();

  connection_limits limits_;
  frame_decoder decoder_;
  session_floor floor_;
  std::deque<std::optional<std::string>> slots_; // from slot next_write_
  std::size_t filled_ = 0;         // answered slots not yet moved to out_
  std::uint64_t next_slot_ = 0;
  std::uint64_t next_write_ = 0;
  std::string out_;
  std::size_t out_pos_ = 0;
  bool ended_ = false;       // no more requests are taken
  bool peer_closed_ = false; // the peer sends nothing more
  std::optional<error> framing_error_;
};

/// The reply frame bytes of `resp` (no size limit: a client asked for it).
std::string reply_bytes(const response& resp);

} // namespace tally
