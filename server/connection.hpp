// One client connection's protocol state, without its socket (the shard in
// client_server.cpp does the I/O): the frame decoder, the reply slots that
// keep replies in request order, the bytes waiting to be written, the
// session floor, and when to stop reading (back-pressure) or close.
// Plain C++ and single-threaded: tests drive it byte by byte.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "protocol/request_limits.hpp"
#include "server/session_floor.hpp"

namespace tally {

struct connection_limits {
  std::uint32_t max_frame_size = default_max_frame_size;
  std::size_t max_in_flight = 1024;
  std::size_t max_pending_output = 4u << 20;
  /// Every decoded request is checked against these at the door
  /// (protocol/request_limits.hpp) before it is handed on.
  request_limits requests;
};

/// Bytes of partly received requests across all connections of a node:
/// one budget, so that many connections each sending part of a large
/// frame cannot together exhaust memory (issue 17: 100 x 15 MiB).
/// Thread-safe.
class partial_frame_budget {
public:
  explicit partial_frame_budget(std::size_t limit) : limit_(limit) {}
  /// Moves a connection's share from `before` to `after` bytes; false
  /// (nothing changed) when the total would exceed the limit.
  bool resize(std::size_t before, std::size_t after) noexcept {
    if (after <= before) {
      used_.fetch_sub(before - after, std::memory_order_relaxed);
      return true;
    }
    auto grow = after - before;
    auto now = used_.load(std::memory_order_relaxed);
    do {
      if (now + grow > limit_)
        return false;
    } while (!used_.compare_exchange_weak(now, now + grow, std::memory_order_relaxed));
    return true;
  }
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_; }

private:
  std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

class client_connection {
public:
  /// `budget` (may be null: no limit) is shared by the node's connections.
  explicit client_connection(connection_limits limits,
                             std::shared_ptr<partial_frame_budget> budget = nullptr);
  ~client_connection();
  client_connection(const client_connection&) = delete;
  client_connection& operator=(const client_connection&) = delete;

  /// Bytes read from the socket. A framing error (a zero or oversized
  /// length), or a partial frame that would take the node's partial-frame
  /// budget over its limit, is answered with an ErrorResp after the
  /// replies to the frames before it, then the connection closes.
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
  /// True while part of a request is buffered (a slow or stalled sender).
  bool mid_request() const noexcept { return decoder_.mid_frame(); }

private:
  void fill(std::uint64_t slot, std::string bytes);
  std::uint64_t open_slot();

  connection_limits limits_;
  std::shared_ptr<partial_frame_budget> budget_;
  std::size_t charged_ = 0; // this connection's share of the budget
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
